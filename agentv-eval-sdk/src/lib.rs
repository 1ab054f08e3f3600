//! Write agentv code judges in Rust.
//!
//! A code judge is any program that reads one JSON object (the [`CodeJudgePayload`]) on stdin
//! and prints one JSON object (a [`JudgeResult`]) on stdout. This crate holds those wire types,
//! shared with the agentv runtime, plus helpers for judge authors:
//!
//! - [`read_payload`] / [`parse_payload`] read the payload;
//! - [`JudgeResult`] builds the answer and [`JudgeResult::emit`] prints it;
//! - [`run_judge`] does both around your closure and turns errors into a score-0 result;
//! - [`TargetClient`] calls the eval's model target through the runtime's loopback proxy
//!   (enable it with `target: true` or `target: {max_calls: N}` on the evaluator), so the judge
//!   needs no provider credential of its own.
//!
//! # Example
//!
//! A judge that asks the target whether the answer is polite, then checks a keyword itself:
//!
//! ```no_run
//! use agentv_eval_sdk::{run_judge, InvokeRequest, JudgeResult};
//!
//! fn main() {
//!     run_judge(|payload, target| {
//!         let mut result = JudgeResult::new(0.0);
//!         let mut score = 0.0;
//!         if payload.candidate_answer.contains("42") {
//!             score += 0.5;
//!             result = result.hit("mentions 42");
//!         } else {
//!             result = result.miss("does not mention 42");
//!         }
//!         if let Some(target) = target {
//!             let question = format!(
//!                 "Answer yes or no: is this reply polite?\n\n{}",
//!                 payload.candidate_answer
//!             );
//!             let answer = target.invoke(&InvokeRequest::new(question))?;
//!             if answer.raw_text.unwrap_or_default().to_lowercase().starts_with("yes") {
//!                 score += 0.5;
//!                 result = result.hit("polite");
//!             }
//!         }
//!         result.score = score;
//!         Ok(result.reasoning(format!("{} of 2 checks passed", score * 2.0)))
//!     })
//! }
//! ```
//!
//! The `client` feature (on by default) provides [`TargetClient`] and [`run_judge`]; the
//! runtime turns it off and uses only the wire types.

mod judge_result;
mod messages;
mod metrics;
mod payload;
pub mod proxy;
mod results;
mod trace;

#[cfg(feature = "client")]
mod client;

pub use judge_result::{JudgeResult, clamp_score};
pub use messages::{OutputMessage, ToolCall, content_text, last_assistant_text};
pub use metrics::{ExecutionMetrics, TokenUsage};
pub use payload::CodeJudgePayload;
pub use proxy::{BatchRequest, BatchResponse, ErrorBody, InvokeRequest, InvokeResponse, ProxyInfo};
pub use results::{EvaluationRecord, EvaluatorResult, ExecutionStatus, Verdict};
pub use trace::{TraceEvent, TraceEventKind, TraceSummary};

#[cfg(feature = "client")]
pub use client::{TargetClient, TargetError};

/// Why the payload could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error("could not read the payload from stdin: {0}")]
    Io(#[from] std::io::Error),
    #[error("the payload is not a valid code-judge JSON object: {0}")]
    Json(#[from] serde_json::Error),
}

/// Parses a payload from its JSON text.
pub fn parse_payload(text: &str) -> Result<CodeJudgePayload, PayloadError> {
    Ok(serde_json::from_str(text)?)
}

/// Reads the whole of stdin and parses it as the payload.
pub fn read_payload() -> Result<CodeJudgePayload, PayloadError> {
    use std::io::Read;
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    parse_payload(&text)
}

/// Runs a judge: reads the payload, builds a [`TargetClient`] when a proxy is configured, calls
/// `judge`, and prints its result.
///
/// On any error it prints a score-0 result whose miss and reasoning carry the message, and exits
/// with status 1, so the runtime records the evaluator as failed rather than graded.
#[cfg(feature = "client")]
pub fn run_judge<F>(judge: F) -> !
where
    F: FnOnce(&CodeJudgePayload, Option<&TargetClient>) -> Result<JudgeResult, Box<dyn std::error::Error>>,
{
    let outcome = (|| -> Result<JudgeResult, Box<dyn std::error::Error>> {
        let payload = read_payload()?;
        let target = TargetClient::from_env()?;
        judge(&payload, target.as_ref())
    })();
    match outcome {
        Ok(mut result) => {
            result.score = clamp_score(result.score);
            let code = if result.emit().is_ok() { 0 } else { 1 };
            std::process::exit(code)
        }
        Err(error) => {
            let message = error.to_string();
            eprintln!("judge failed: {message}");
            let failed = JudgeResult::new(0.0)
                .miss(message.clone())
                .reasoning(format!("Evaluation failed: {message}"));
            let _ = failed.emit();
            std::process::exit(1)
        }
    }
}
