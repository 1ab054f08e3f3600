//! `code_judge`: runs an external program that reads the payload on stdin and prints a score.

use std::sync::Arc;

use agentv_eval_sdk::CodeJudgePayload;
use agentv_eval_sdk::proxy::{JUDGE_PROXY_TOKEN_ENV, JUDGE_PROXY_URL_ENV, PROXY_TOKEN_ENV, PROXY_URL_ENV};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{EvalContext, Evaluator, Grade};
use crate::model::{CodeJudgeSpec, Message};
use crate::process::{self, ProcessError, ProcessSpec};
use crate::run::proxy_invoker::ProviderInvoker;

impl Evaluator for CodeJudgeSpec {
    fn evaluate<'a>(&'a self, ctx: &'a EvalContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(run(self, ctx))
    }
}

/// The stdin payload for this case (D10).
pub fn payload(spec: &CodeJudgeSpec, ctx: &EvalContext<'_>) -> CodeJudgePayload {
    let case = ctx.case;
    CodeJudgePayload {
        eval_id: case.id.clone(),
        question: case.question.clone(),
        expected_outcome: case.expected_outcome.clone(),
        expected_messages: case.expected_messages.iter().map(Message::to_json).collect(),
        reference_answer: case.reference_answer.clone(),
        candidate_answer: ctx.candidate_answer.to_owned(),
        output_messages: ctx.output_messages.to_vec(),
        guideline_files: case.guidelines.iter().map(|g| g.path.display().to_string()).collect(),
        input_files: case.input_files.iter().map(|p| p.display().to_string()).collect(),
        input_messages: case.raw_input_messages.clone(),
        trace_summary: ctx.trace_summary.clone(),
        candidate_trace: ctx.trace.to_vec(),
        execution_metrics: ctx.metrics.clone(),
        config: spec.config.clone(),
    }
}

async fn run(spec: &CodeJudgeSpec, ctx: &EvalContext<'_>) -> Grade {
    let stdin = match serde_json::to_vec(&payload(spec, ctx)) {
        Ok(bytes) => bytes,
        Err(e) => return Grade::crashed(format!("cannot encode the judge payload: {e}")),
    };
    let mut env: Vec<(String, String)> = ctx.settings.child_env.to_vec();
    let proxy = match spec.proxy {
        None => None,
        Some(budget) => {
            let invoker = Arc::new(ProviderInvoker::new(ctx.target, ctx.case.id.clone(), ctx.attempt));
            let config = agentv_proxy::ProxyConfig {
                max_calls: budget.max_calls,
            };
            match agentv_proxy::TargetProxy::start(config, invoker.clone()).await {
                Ok(handle) => {
                    for (name, value) in [
                        (PROXY_URL_ENV, handle.url()),
                        (PROXY_TOKEN_ENV, handle.token()),
                        (JUDGE_PROXY_URL_ENV, handle.url()),
                        (JUDGE_PROXY_TOKEN_ENV, handle.token()),
                    ] {
                        env.push((name.to_owned(), value.to_owned()));
                    }
                    Some((handle, invoker))
                }
                Err(e) => return Grade::crashed(format!("cannot start the target proxy: {e}")),
            }
        }
    };
    let timeout = spec.timeout.unwrap_or(ctx.settings.timeout);
    let outcome = process::run(ProcessSpec {
        argv: &spec.script,
        cwd: &spec.cwd,
        env: &env,
        env_remove: &[],
        stdin: Some(&stdin),
        timeout,
        tee: None,
        keep_children: false,
    })
    .await;
    let proxy_stats = match proxy {
        Some((handle, invoker)) => Some((handle.shutdown().await, invoker.usage())),
        None => None,
    };
    let mut grade = match outcome {
        Err(ProcessError::TimedOut(d)) => Grade::crashed(format!("code judge timed out after {}s", d.as_secs_f64())),
        Err(e) => Grade::crashed(e.to_string()),
        Ok(done) if !done.status.success() => Grade::crashed(format!(
            "code judge exited with code {}: {}",
            done.code_text(),
            done.output_tail(2000)
        )),
        Ok(done) => parse_output(&String::from_utf8_lossy(&done.stdout)),
    };
    let mut request = json!({ "script": spec.script, "cwd": spec.cwd.display().to_string() });
    if let Some((stats, usage)) = proxy_stats {
        let mut target = json!({
            "target_name": ctx.target.judge_name,
            "call_count": stats.call_count,
            "max_calls": stats.max_calls,
            "batch_used": stats.batch_used,
        });
        if let Some(tokens) = usage.token_usage {
            target["token_usage"] = json!(tokens);
        }
        if let Some(cost) = usage.cost_usd {
            target["cost_usd"] = json!(cost);
        }
        request["target_proxy"] = target.clone();
        grade
            .details
            .get_or_insert_with(Map::new)
            .insert("target_proxy".to_owned(), target);
    }
    grade.request = Some(request);
    grade
}

/// Parses a judge's stdout: exactly one JSON object `{score, hits?, misses?, reasoning?,
/// details?}`. A missing or non-numeric score, a score outside [0, 1] (D21: a judge answering 2
/// has a bug, and clamping it would turn the bug into a pass), or non-object `details` fails
/// the evaluator, with empty hits and misses.
pub fn parse_output(stdout: &str) -> Grade {
    let text = stdout.trim();
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => {
            return Grade::failed(format!(
                "code judge printed no valid JSON object on stdout (got: {:?})",
                crate::process::tail(text, 200)
            ));
        }
    };
    let Some(obj) = value.as_object() else {
        return Grade::failed(format!("code judge output must be a JSON object, got {}", kind(&value)));
    };
    let Some(score) = obj.get("score").and_then(Value::as_f64) else {
        return Grade::failed("code judge output has no numeric `score`".to_owned());
    };
    if !(0.0..=1.0).contains(&score) {
        return Grade::failed(format!(
            "code judge score {} is out of range: scores must be between 0 and 1",
            obj.get("score").map(Value::to_string).unwrap_or_default()
        ));
    }
    let details = match obj.get("details") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map.clone()),
        Some(other) => {
            return Grade::failed(format!(
                "code judge `details` must be a JSON object, got {}; wrap the value, e.g. {{\"details\": {{\"value\": ...}}}}",
                kind(other)
            ));
        }
    };
    let strings = |key: &str| -> Vec<String> {
        obj.get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    Grade {
        score,
        hits: strings("hits"),
        misses: strings("misses"),
        reasoning: obj.get("reasoning").and_then(Value::as_str).map(str::to_owned),
        details,
        ..Grade::default()
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_valid_output() {
        let g = parse_output(
            r#" {"score": 0.75, "hits": ["a", " ", 3], "misses": [], "reasoning": "r", "details": {"k": [1]}} "#,
        );
        assert_eq!(g.score, 0.75);
        assert_eq!(g.hits, ["a"]);
        assert_eq!(g.reasoning.as_deref(), Some("r"));
        assert_eq!(g.details.expect("details")["k"], json!([1]));
        assert!(g.error.is_none());
    }

    #[test]
    fn rejects_what_is_not_a_result() {
        let cases = [
            (
                "not json at all",
                "code judge printed no valid JSON object on stdout (got: \"not json at all\")",
            ),
            (
                "{\"score\": 1}\n{\"score\": 0}",
                "code judge printed no valid JSON object on stdout",
            ),
            ("[1, 2]", "code judge output must be a JSON object, got an array"),
            (r#"{"hits": []}"#, "code judge output has no numeric `score`"),
            (r#"{"score": "high"}"#, "code judge output has no numeric `score`"),
            (
                r#"{"score": 1, "details": [1]}"#,
                "code judge `details` must be a JSON object, got an array",
            ),
        ];
        for (stdout, want) in cases {
            let g = parse_output(stdout);
            let error = g.error.expect("error");
            assert!(error.starts_with(want), "{stdout}: {error}");
            assert_eq!(g.score, 0.0);
            assert!(!g.error_is_miss, "invalid output is not listed as a miss: {stdout}");
        }
    }

    #[test]
    fn code_judge_score_out_of_range_is_a_grader_error() {
        for (stdout, shown) in [
            (r#"{"score": 2, "hits": ["all good"]}"#, "2"),
            (r#"{"score": 1.0000001}"#, "1.0000001"),
            (r#"{"score": -0.5}"#, "-0.5"),
            (r#"{"score": 1e308}"#, "1e+308"),
            (r#"{"score": -1e-9}"#, "-1e-9"),
        ] {
            let g = parse_output(stdout);
            assert_eq!(
                g.error.as_deref(),
                Some(format!("code judge score {shown} is out of range: scores must be between 0 and 1").as_str()),
                "{stdout}"
            );
            assert_eq!((g.score, g.hits.len()), (0.0, 0), "{stdout}");
        }
        for edge in [r#"{"score": 0}"#, r#"{"score": 1}"#, r#"{"score": 1.0}"#] {
            assert!(parse_output(edge).error.is_none(), "{edge}");
        }
    }
}
