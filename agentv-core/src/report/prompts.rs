//! `--dump-prompts`: each provider request written to `.agentv/prompts/`
//! (`docs/architecture.md#outputs`).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::context::PromptDumps;
use crate::paths::file_name_safe as safe;
use crate::providers::{Provider, ProviderRequest};
use crate::redact::Secrets;

/// Who a dump is written for: the case (by its eval file and id) and, for a judge's request,
/// which grader of the case.
#[derive(Debug, Clone, Copy)]
pub struct DumpFor<'a> {
    pub eval_file: &'a Path,
    /// `None` for the target's request; a grader's identity for a judge's.
    pub grader: Option<&'a str>,
    /// Added to the file name: `judge-<judge target>`.
    pub suffix: Option<&'a str>,
}

/// Writes `request` to `<dir>/<eval_id>-<attempt>[-<suffix>].json` (with `.2`, `.3`, ... before
/// `.json` when that name went to another case or grader in this run) with the eval file and
/// the provider's public settings, secrets redacted. Failures are logged, never fatal.
pub fn dump_prompt(
    dumps: &PromptDumps,
    dump_for: DumpFor<'_>,
    provider: &dyn Provider,
    request: &ProviderRequest,
    secrets: &Secrets,
) -> Option<PathBuf> {
    let mut name = format!("{}-{}", safe(&request.eval_id), request.attempt);
    if let Some(s) = dump_for.suffix {
        name.push('-');
        name.push_str(&safe(s));
    }
    let owner = format!(
        "{}\n{}\n{}",
        dump_for.eval_file.display(),
        request.eval_id,
        dump_for.grader.unwrap_or_default()
    );
    let name = dumps.claim(&name, &owner);
    let path = dumps.dir.join(format!("{name}.json"));
    let mut record = json!({
        "eval_id": request.eval_id,
        "eval_file": dump_for.eval_file.display().to_string(),
        "attempt": request.attempt,
        "target": provider.target_name(),
        "provider": provider.kind().as_str(),
        "settings": provider.public_settings(),
        "request": {
            "question": request.question,
            "guidelines": request.guidelines,
            "chat_prompt": request.chat_prompt,
            "system_prompt": request.system_prompt,
            "guideline_files": request.guideline_files,
            "input_files": request.input_files,
        },
    });
    if let Some(tools) = &request.tools {
        record["request"]["tools"] = tools.cache_value();
    }
    let text = serde_json::to_string_pretty(&record).unwrap_or_default();
    match crate::redact::write_json_file(&path, text.as_bytes(), secrets) {
        Ok(()) => Some(path),
        Err(e) => {
            tracing::warn!("cannot write prompt dump {}: {e}", path.display());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::mock::{Delay, MockProvider};

    fn case_dump(eval_file: &Path) -> DumpFor<'_> {
        DumpFor {
            eval_file,
            grader: None,
            suffix: None,
        }
    }

    #[test]
    fn prompt_dumps_of_the_same_id_in_two_files_or_two_judges_do_not_overwrite() {
        let dir = tempfile::tempdir().expect("tmp");
        let dumps = PromptDumps::new(dir.path().to_path_buf());
        let secrets = Secrets::default();
        let provider = MockProvider::new("m", Some("a".into()), Delay::None);
        let request = ProviderRequest {
            eval_id: "same".into(),
            attempt: 1,
            question: "q".into(),
            ..ProviderRequest::default()
        };
        let judge = |file, grader| DumpFor {
            eval_file: file,
            grader: Some(grader),
            suffix: Some("judge-j"),
        };
        let (x, y) = (Path::new("x/s.yaml"), Path::new("y/s.yaml"));
        let written: Vec<PathBuf> = [
            case_dump(x),
            case_dump(y),
            judge(x, "one"),
            judge(x, "two"),
            case_dump(x),
        ]
        .into_iter()
        .map(|dump_for| dump_prompt(&dumps, dump_for, &provider, &request, &secrets).expect("written"))
        .collect();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "same-1.json",
                "same-1.2.json",
                "same-1-judge-j.json",
                "same-1-judge-j.2.json",
                "same-1.json"
            ]
        );
        let second: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&written[1]).expect("read")).expect("json");
        assert_eq!(second["eval_file"], "y/s.yaml");
    }

    #[test]
    fn prompt_dumps_redact_secrets_with_quotes_and_backslashes() {
        let dir = tempfile::tempdir().expect("tmp");
        let secrets = Secrets::default();
        let secret = r#"tok "en"\ é"#;
        secrets.add(secret);
        let provider = MockProvider::new("m", Some(format!("answer {secret}")), Delay::None);
        let request = ProviderRequest {
            eval_id: "c".into(),
            attempt: 1,
            question: "q".into(),
            ..ProviderRequest::default()
        };
        let dumps = PromptDumps::new(dir.path().to_path_buf());
        let path = dump_prompt(&dumps, case_dump(Path::new("e.yaml")), &provider, &request, &secrets).expect("written");
        let text = std::fs::read_to_string(path).expect("read");
        assert!(!text.contains("en\\\""), "{text}");
        assert!(text.contains("\"answer ***\""), "{text}");
    }
}
