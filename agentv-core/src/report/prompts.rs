//! `--dump-prompts`: each provider request written to `.agentv/prompts/` (D16).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::load::{Secrets, file_name_safe as safe};
use crate::providers::{Provider, ProviderRequest};

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
    match crate::redact::write_file(&path, text.as_bytes(), secrets) {
        Ok(()) => Some(path),
        Err(e) => {
            tracing::warn!("cannot write prompt dump {}: {e}", path.display());
            None
        }
    }
}
