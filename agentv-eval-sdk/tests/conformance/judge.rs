//! The Rust SDK's conformance judge: it does what the payload's `config.conformance` says
//! (steps, then the result; sdk/conformance/README.md). The runner starts this same binary in
//! the judge role.

use std::io::Read;
use std::process::{Command, ExitCode};

use agentv_eval_sdk::{
    CodeJudgePayload, InvokeRequest, JudgeOutcome, JudgeResult, TargetClient, TargetError, run_judge,
};
use serde_json::{Map, Value, json};

use crate::matchers::special_number;

pub fn main() -> ExitCode {
    run_judge(judge)
}

fn judge(payload: &CodeJudgePayload, target: Option<&TargetClient>) -> JudgeOutcome {
    let spec = payload.config.get("conformance").cloned().unwrap_or_default();
    let mut details = Map::new();
    for step in spec.get("steps").and_then(Value::as_array).into_iter().flatten() {
        run_step(step, target, &mut details)?;
    }
    let mut result = spec.get("result").cloned().unwrap_or_else(|| json!({"score": 1}));
    if !details.is_empty()
        && let Value::Object(fields) = &mut result
    {
        let merged = fields.entry("details").or_insert_with(|| json!({}));
        if merged.is_null() {
            *merged = json!({});
        }
        if let Value::Object(merged) = merged {
            merged.extend(details);
        }
    }
    Ok(to_result(result)?)
}

/// What a Rust judge computing the returned value would build: a score that is NaN or
/// infinite reaches `set_score`, which refuses it.
pub fn to_result(mut value: Value) -> Result<JudgeResult, agentv_eval_sdk::ResultError> {
    let special = match &mut value {
        Value::Object(fields) => fields.get_mut("score").and_then(|score| {
            let n = special_number(score)?;
            *score = json!(0);
            Some(n)
        }),
        _ => None,
    };
    let mut result = JudgeResult::from_value(value)?;
    if let Some(score) = special {
        result.set_score(score)?;
    }
    Ok(result)
}

/// The client the runner passed (every persistent case has its own), else the one the
/// environment describes (one-shot judges).
fn client(target: Option<&TargetClient>) -> Result<TargetClient, Box<dyn std::error::Error>> {
    match target {
        Some(client) => Ok(client.clone()),
        None => TargetClient::from_env()?.ok_or_else(|| "this step needs a target proxy".into()),
    }
}

fn error_record(error: &TargetError) -> Value {
    json!({
        "kind": error.kind().as_str(),
        "status": error.status(),
        "message": error.message(),
        "budget_exhausted": error.is_budget_exhausted(),
    })
}

fn push(details: &mut Map<String, Value>, key: &str, item: Value) {
    if let Value::Array(items) = details.entry(key).or_insert_with(|| json!([])) {
        items.push(item);
    }
}

fn request(wire: &Value) -> Result<InvokeRequest, Box<dyn std::error::Error>> {
    Ok(serde_json::from_value(wire.clone())?)
}

fn run_step(
    step: &Value,
    target: Option<&TargetClient>,
    details: &mut Map<String, Value>,
) -> Result<(), Box<dyn std::error::Error>> {
    let text = |key: &str| step.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    if step.get("print").is_some() {
        println!("{}", text("print"));
    } else if step.get("stderr").is_some() {
        eprintln!("{}", text("stderr"));
    } else if step.get("child_print").is_some() {
        Command::new("sh")
            .args(["-c", "printf '%s\\n' \"$0\"", &text("child_print")])
            .status()?;
    } else if step.get("raise").is_some() {
        return Err(text("raise").into());
    } else if step.get("panic").is_some() {
        panic!("{}", text("panic"));
    } else if step.get("target").is_some() {
        let from_env = matches!(TargetClient::from_env(), Ok(Some(_)));
        details.insert(
            "target".into(),
            json!({"from_env": from_env, "argument": target.is_some()}),
        );
    } else if step.get("info").is_some() {
        let info = client(target)?.get_info()?;
        details.insert(
            "info".into(),
            json!({"target_name": info.target_name, "max_calls": info.max_calls,
                   "call_count": info.call_count, "available_targets": info.available_targets}),
        );
    } else if let Some(wire) = step.get("invoke") {
        let record = match client(target)?.invoke(&request(wire)?) {
            Ok(answer) => json!({"text": answer.text()}),
            Err(e) if step.get("catch") == Some(&Value::Bool(true)) => json!({"error": error_record(&e)}),
            Err(e) => return Err(e.into()),
        };
        push(details, "invocations", record);
    } else if let Some(Value::Array(wires)) = step.get("invoke_batch") {
        let requests = wires.iter().map(request).collect::<Result<Vec<_>, _>>()?;
        let answers = client(target)?.invoke_batch(&requests)?;
        let items = answers
            .iter()
            .map(|a| match a {
                Ok(answer) => json!({"text": answer.text()}),
                Err(e) => json!({"error": e.message()}),
            })
            .collect();
        push(details, "batches", Value::Array(items));
    } else if step.get("env_proxy").is_some() {
        details.insert("env_proxy".into(), json!(std::env::var("AGENTV_TARGET_PROXY_URL").ok()));
    } else if step.get("read_stdin").is_some() {
        let mut seen = String::new();
        std::io::stdin().read_to_string(&mut seen)?;
        details.insert("stdin".into(), json!(seen));
    } else {
        return Err(format!("unknown conformance step {step}").into());
    }
    Ok(())
}
