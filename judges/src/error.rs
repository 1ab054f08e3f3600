//! Why a judge could not grade a case. Each of these becomes a grader error in agentv (score 0
//! with the message), never a grade: a misconfigured judge must not look like a bad answer.

use agentv_eval_sdk::{PayloadError, ResultError, TargetError};

/// Why a judge could not grade a case.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A config key has the wrong type or value, or is unknown.
    #[error("config `{key}`: {message}")]
    Config { key: String, message: String },
    /// The case lacks what the metric needs (context, reference answer, question, expected JSON).
    #[error("{0}")]
    Input(String),
    /// The evaluator has no `target:`, so there is no judge model to ask.
    #[error("{metric} asks the judge model: set `target: true` (or `target: {{max_calls: N}}`) on the evaluator")]
    NoTarget { metric: &'static str },
    /// The proxy's `max_calls` budget cannot cover the calls the metric needs.
    #[error(
        "{metric} needs {needed} more model call(s) ({what}) but the proxy allows {remaining} more \
         (max_calls {max_calls}); set `target: {{max_calls: {suggest}}}` or more on the evaluator{hint}"
    )]
    Budget {
        metric: &'static str,
        needed: u32,
        what: String,
        remaining: u32,
        max_calls: u32,
        suggest: u32,
        hint: &'static str,
    },
    /// A proxy call failed as a whole.
    #[error("{metric}: the {stage} call failed: {source}")]
    Model {
        metric: &'static str,
        stage: &'static str,
        #[source]
        source: TargetError,
    },
    /// The model's reply cannot be used (no JSON object, wrong shape, wrong number of items).
    #[error("{metric}: {message}")]
    Reply { metric: &'static str, message: String },
    /// One item's verdict failed and `on_item_error` is `fail`.
    #[error(
        "{metric}: the verdict on {noun} {index} failed: {message} (set `on_item_error: skip` to leave such items out)"
    )]
    ItemFailed {
        metric: &'static str,
        noun: &'static str,
        index: usize,
        message: String,
    },
    /// Every item's verdict failed (`on_item_error: skip` leaves nothing to score).
    #[error("{metric}: every {noun} verdict failed; the first: {message}")]
    AllItemsFailed {
        metric: &'static str,
        noun: &'static str,
        message: String,
    },
    #[error(transparent)]
    Payload(#[from] PayloadError),
    #[error(transparent)]
    Result(#[from] ResultError),
}
