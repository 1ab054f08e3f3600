//! Write agentv code judges in Rust.
//!
//! A code judge is any program that reads one JSON object (the [`CodeJudgePayload`]) on stdin
//! and prints one JSON object (a [`JudgeResult`]) on stdout; docs/judges.md is the contract.
//! This crate holds those wire types, shared with the agentv runtime, plus what a judge author
//! needs:
//!
//! - [`run_judge`] runs your function one-shot or in persistent mode and returns the exit
//!   code; [`judge`] calls it on one payload without any I/O, for tests;
//! - [`CodeJudgePayload`] reads both payload generations (2.x and 4.x keys);
//!   [`answer_text`](CodeJudgePayload::answer_text) and
//!   [`criteria_text`](CodeJudgePayload::criteria_text) work with either;
//! - [`JudgeResult`] is always valid: a score that is not a finite number in [0, 1] is an
//!   error where you set it, never clamped;
//! - [`TargetClient`] calls the eval's model target through agentv's loopback proxy (enable it
//!   with `target: true` or `target: {max_calls: N}` on the evaluator), so the judge needs no
//!   provider credential of its own; [`extract_json_object`] reads the model's JSON reply the
//!   way agentv reads its own judge replies.
//!
//! # Example
//!
//! A judge that checks the answer for the evaluator's `keywords` and, when the evaluator has
//! `target: true`, also asks the judge model; the score is the mean of the two:
//!
//! ```no_run
//! use std::process::ExitCode;
//!
//! use agentv_eval_sdk::{InvokeRequest, JudgeResult, extract_json_object, run_judge};
//! use serde_json::Value;
//!
//! fn main() -> ExitCode {
//!     run_judge(|payload, target| {
//!         let answer = payload.answer_text()?;
//!         let keywords: Vec<&str> = payload
//!             .config
//!             .get("keywords")
//!             .and_then(Value::as_array)
//!             .map(|words| words.iter().filter_map(Value::as_str).collect())
//!             .unwrap_or_default();
//!         let mut result = JudgeResult::default();
//!         for word in &keywords {
//!             result.check(answer.to_lowercase().contains(&word.to_lowercase()), format!("mentions {word}"));
//!         }
//!         let mut scores = Vec::new();
//!         if !keywords.is_empty() {
//!             scores.push(result.hits().len() as f64 / keywords.len() as f64);
//!         }
//!         if let Some(target) = target {
//!             let question = format!(
//!                 "Criteria: {}\n\nAnswer: {answer}\n\nDoes the answer meet the criteria? \
//!                  Reply with JSON: {{\"score\": <0 to 1>, \"reason\": \"<why>\"}}",
//!                 payload.criteria_text()
//!             );
//!             let reply = target.invoke(&InvokeRequest::new(question).system_prompt("You are a strict grader."))?;
//!             let verdict = extract_json_object(&reply.text()).unwrap_or_default();
//!             match verdict.get("score").and_then(Value::as_f64) {
//!                 Some(score) if (0.0..=1.0).contains(&score) => {
//!                     scores.push(score);
//!                     result = result.detail("model_reason", verdict.get("reason").cloned().unwrap_or(Value::Null));
//!                 }
//!                 _ => {
//!                     scores.push(0.0);
//!                     result = result.miss("the judge model gave no usable score");
//!                 }
//!             }
//!         }
//!         let score = if scores.is_empty() { 0.0 } else { scores.iter().sum::<f64>() / scores.len() as f64 };
//!         let checks = result.hits().len() + result.misses().len();
//!         let reasoning = format!("{} of {checks} checks passed", result.hits().len());
//!         Ok(result.with_score(score)?.with_reasoning(reasoning))
//!     })
//! }
//! ```
//!
//! Feed it a payload to try it: `echo '{"candidate_answer": "Paris", "config": {"keywords":
//! ["Paris"]}}' | cargo run`.
//!
//! # Features
//!
//! `client` (on by default) provides [`TargetClient`], [`run_judge`] and [`judge`]; the
//! runtime turns it off and uses only the wire types, the result contract and
//! [`extract_json_object`].

pub mod compare;
mod extract;
mod judge_output;
mod judge_result;
mod messages;
mod metrics;
mod payload;
pub mod persistent;
pub mod proxy;
mod results;
mod trace;
mod trace4;
mod wire;

#[cfg(feature = "client")]
mod client;
#[cfg(feature = "client")]
mod runner;
#[cfg(feature = "client")]
mod stdio;

pub use extract::extract_json_object;
pub use judge_output::{Assertion, JudgeOutput, OutputError};
pub use judge_result::{JudgeResult, ResultError, check_score};
pub use messages::{OutputMessage, ToolCall, content_text, last_assistant_text};
pub use metrics::{ExecutionMetrics, TokenCounts, TokenUsage};
pub use payload::{CodeJudgePayload, MAX_INLINE_OUTPUT_CHARS, PayloadError};
pub use proxy::{BatchRequest, BatchResponse, ErrorBody, InvokeRequest, InvokeResponse, ProxyInfo};
pub use results::{
    EvaluationRecord, EvaluatorResult, ExecutionStatus, GraderScore, NOT_RUN_BUDGET, Truncation, V4Fields, Verdict,
    WorkspaceRecord, assertions_of, failure_miss,
};
pub use trace::{TraceEvent, TraceEventKind, TraceSummary};
pub use trace4::{Trace, TraceStep, TraceTool};
pub use wire::WireError;

#[cfg(feature = "client")]
pub use client::{DEFAULT_TIMEOUT, TargetClient, TargetError, TargetErrorKind};
#[cfg(feature = "client")]
pub use runner::{JudgeError, JudgeOutcome, SDK_NAME, judge, run_judge};

/// Clamps a score to [0, 1] (NaN becomes 0). For the LLM judge, whose reply the spec clamps;
/// a code judge's score is checked instead ([`check_score`], `docs/architecture.md#scoring`).
pub fn clamp_score(score: f64) -> f64 {
    // `+ 0.0` turns -0.0 into 0.0, which would otherwise print as "-0.000".
    if score.is_nan() {
        0.0
    } else {
        score.clamp(0.0, 1.0) + 0.0
    }
}

/// Parses a payload from its JSON text (UTF-8; a leading BOM is ignored).
pub fn parse_payload(text: impl AsRef<[u8]>) -> Result<CodeJudgePayload, PayloadError> {
    let bytes = text.as_ref();
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| PayloadError::NotUtf8(e.valid_up_to()))?;
    let value: serde_json::Value = serde_json::from_str(text).map_err(PayloadError::NotJson)?;
    CodeJudgePayload::from_value(value)
}

/// Reads the whole of stdin and parses it as the payload.
pub fn read_payload() -> Result<CodeJudgePayload, PayloadError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes)?;
    parse_payload(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_text_with_bom_and_crlf_parses_and_garbage_does_not() {
        let p = parse_payload("\u{feff}{\r\n  \"eval_id\": \"bom\"\r\n}\r\n").expect("valid");
        assert_eq!(p.eval_id, "bom");
        for (text, want) in [
            (&b"not json"[..], "the payload is not valid JSON"),
            (b"", "the payload is not valid JSON"),
            (b"{\"a\": 1}\n{\"b\": 2}", "the payload is not valid JSON"),
            (b"{\"cost_usd\": NaN}", "the payload is not valid JSON"),
            (b"{\"cost_usd\": 1e400}", "the payload is not valid JSON"),
            (b"{\"eval_id\": \"\xff\"}", "the payload is not valid UTF-8 (byte 13)"),
        ] {
            let error = parse_payload(text).expect_err("invalid").to_string();
            assert!(error.starts_with(want), "{text:?}: {error}");
        }
    }

    #[test]
    fn clamp_is_only_for_llm_replies() {
        for (raw, want) in [(f64::NAN, 0.0), (-0.5, 0.0), (0.25, 0.25), (f64::INFINITY, 1.0)] {
            assert_eq!(clamp_score(raw), want);
        }
        assert!(clamp_score(-0.0).is_sign_positive(), "-0.0 prints as -0.000");
    }
}
