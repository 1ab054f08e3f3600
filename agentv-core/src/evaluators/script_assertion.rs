//! What promptfoo's `javascript` and `python` assertions share (`docs/promptfoo.md#javascript`):
//! their keys, reading `value` (inline code or `file://path[:function]`), the `context` the
//! code receives, and one exchange with a warm worker of the judge pool.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

use super::judge_pool::{CaseRequest, JudgePool, PoolError};
use super::promptfoo_check;
use super::{GradeContext, ParseContext};
use crate::config::{Fields, Key, Kind};

/// The keys of both assertion types.
pub const KEYS: &[Key] = &[
    Key::new(
        "value",
        Kind::Str,
        "The code: an expression, a function body, or `file://path[:function]`.",
    ),
    promptfoo_check::THRESHOLD,
    Key::new("config", Kind::Any, "Passed to the code as `context.config`."),
];

/// A script assertion as written.
#[derive(Debug, Clone)]
pub struct Script {
    /// `value` as written: promptfoo adds it to a failing reason.
    pub value: String,
    pub threshold: Option<f64>,
    pub config: Value,
    /// `file://path[:function]`: the file (relative to the config's folder) and function.
    pub file: Option<(PathBuf, Option<String>)>,
    pub inverse: bool,
}

/// Reads `value`, `threshold` and `config`; a missing file or empty code is reported.
pub fn read(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Script> {
    let what = f.what().to_owned();
    let value = promptfoo_check::value_text(f, cx)?;
    let threshold = promptfoo_check::threshold(f, cx).ok()?;
    let config = f.take("config").map(|n| n.to_json()).unwrap_or(Value::Null);
    let file = match value.strip_prefix("file://") {
        Some(spec) => {
            let (path, function) = match spec.rsplit_once(':') {
                Some((path, name)) if !name.contains(['/', '\\']) && !name.is_empty() => (path, Some(name.to_owned())),
                _ => (spec, None),
            };
            let path = cx.eval_dir.join(path);
            if !path.is_file() {
                cx.drop_grader(
                    f.pos,
                    format!("{what}: `{}` is not a file", path.display()),
                    Some("check the path; it is relative to the config's folder".to_owned()),
                );
                return None;
            }
            Some((path, function))
        }
        None if super::js::trim(&value).is_empty() => {
            cx.drop_grader(f.pos, format!("{what}: `value` is empty"), None);
            return None;
        }
        None => None,
    };
    Some(Script {
        value,
        threshold,
        config,
        file,
        inverse: promptfoo_check::inverse(cx),
    })
}

/// promptfoo's `context` for script assertions: the prompt, the test's `vars` (kept with the
/// row's keys in the case metadata, `promptfoo.vars`, by the promptfoo loader:
/// `docs/promptfoo.md#results`), the assertion's `config`, and what the provider said.
pub fn context(ctx: &GradeContext<'_>, output: &str, config: &Value) -> Value {
    let vars = ctx
        .case
        .metadata
        .as_ref()
        .and_then(|m| m.get("promptfoo"))
        .and_then(|keys| keys.get("vars"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    json!({
        "prompt": ctx.case.question,
        "vars": vars,
        "test": {"vars": vars},
        "config": config,
        "logProbs": ctx.logprobs,
        "providerResponse": {
            "output": output,
            "finishReason": ctx.finish_reason,
            "cost": ctx.metrics.cost_usd,
        },
    })
}

/// Sends `{code, output, context}` to a warm worker of `pool` and returns its result.
pub async fn run(
    pool: &Arc<JudgePool>,
    ctx: &GradeContext<'_>,
    code: Value,
    output: &str,
    config: &Value,
) -> Result<Value, PoolError> {
    let payload = json!({"code": code, "output": output, "context": context(ctx, output, config)});
    send(pool, ctx, payload).await
}

/// Sends `payload` (`{code, output, context}`) to a warm worker of `pool` and returns its result.
pub async fn send(pool: &Arc<JudgePool>, ctx: &GradeContext<'_>, payload: Value) -> Result<Value, PoolError> {
    let request = CaseRequest {
        env: &ctx.run.child_env,
        payload,
        proxy: None,
        timeout: ctx.run.timeout,
        secrets: &ctx.run.secrets,
    };
    pool.grade(request).await
}
