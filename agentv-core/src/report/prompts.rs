//! `--dump-prompts`: each provider request written to `.agentv/prompts/`
//! (`docs/architecture.md#outputs`).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::paths::file_name_safe as safe;
use crate::providers::{Provider, ProviderRequest};
use crate::redact::Secrets;

/// Writes `request` to `<dir>/<eval_id>-<attempt>[-<suffix>].json` with the provider's public
/// settings, secrets redacted. Failures are logged, never fatal.
pub fn dump_prompt(
    dir: &Path,
    suffix: Option<&str>,
    provider: &dyn Provider,
    request: &ProviderRequest,
    secrets: &Secrets,
) -> Option<PathBuf> {
    let mut name = format!("{}-{}", safe(&request.eval_id), request.attempt);
    if let Some(s) = suffix {
        name.push('-');
        name.push_str(&safe(s));
    }
    let path = dir.join(format!("{name}.json"));
    let record = json!({
        "eval_id": request.eval_id,
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
        let path = dump_prompt(dir.path(), None, &provider, &request, &secrets).expect("written");
        let text = std::fs::read_to_string(path).expect("read");
        assert!(!text.contains("en\\\""), "{text}");
        assert!(text.contains("\"answer ***\""), "{text}");
    }
}
