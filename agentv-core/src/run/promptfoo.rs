//! What a promptfoo row does between its provider and its assertions
//! (`docs/promptfoo.md#test-options`): the test's `options.transform` rewrites the answer
//! (JavaScript, in the warm node workers of script providers, held for the whole run), and
//! `evaluateOptions.delay` pauses after the call. Both are row keys the loader puts in the
//! case's metadata; other cases pass through untouched.

use std::time::Duration;

use serde_json::{Value, json};

use crate::context::RunContext;
use crate::model::{EvalCase, OutputMessage};
use crate::providers::script::{self, JsCall, JsForm};
use crate::providers::{ProviderError, ProviderResponse};

/// The answer as the assertions see it: `result` transformed, after the configured pause.
pub(super) async fn after_call(
    case: &EvalCase,
    result: Result<ProviderResponse, ProviderError>,
    context: &RunContext,
) -> Result<ProviderResponse, ProviderError> {
    let Some(keys) = case.metadata.as_ref().and_then(|m| m.get("promptfoo")) else {
        return result;
    };
    if let Some(ms) = keys.get("delay_ms").and_then(Value::as_u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    match (result, keys.get("transform").and_then(Value::as_str)) {
        (Ok(response), Some(code)) => transformed(case, response, code, keys, context).await,
        (result, _) => result,
    }
}

/// `response` with its answer replaced by what `code` returns for it: text as it is, anything
/// else as its JSON. A transform that throws makes the row an error, as in promptfoo.
async fn transformed(
    case: &EvalCase,
    mut response: ProviderResponse,
    code: &str,
    keys: &Value,
    context: &RunContext,
) -> Result<ProviderResponse, ProviderError> {
    let output = agentv_eval_sdk::last_assistant_text(&response.output_messages).unwrap_or_default();
    let prompt = json!({
        "raw": keys.get("prompt_rendered"),
        "label": keys.get("prompt"),
    });
    let vars = keys.get("vars").cloned().unwrap_or_else(|| json!({}));
    let call = JsCall {
        code,
        dir: case.eval_dir(),
        params: &["output", "context"],
        args: vec![json!(output), json!({"vars": vars, "prompt": prompt})],
        form: JsForm::Output,
    };
    let pool = script::node_pool(case.eval_dir());
    context.held_pools.hold(&pool);
    let value = script::run_js(&pool, call, &context.child_env, &context.secrets)
        .await
        .map_err(|e| ProviderError::Transform(format!("Error in output transform: {e}")))?;
    let text = match value {
        Value::String(text) => text,
        Value::Null => String::new(),
        other => other.to_string(),
    };
    response.output_messages = vec![OutputMessage::assistant(text)];
    Ok(response)
}
