//! The JSON object a code judge reads on stdin.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{ExecutionMetrics, OutputMessage, TraceEvent, TraceSummary};

/// Everything a code judge knows about one graded case.
///
/// Every key is always written by the runtime, so judges never need to tell "absent" from
/// "empty"; readers still accept missing keys for forward and backward compatibility.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CodeJudgePayload {
    pub eval_id: String,
    /// All input text joined by single spaces.
    pub question: String,
    pub expected_outcome: String,
    /// Expected messages as written in the eval file (file segments resolved).
    pub expected_messages: Vec<Value>,
    /// Content of the last expected message.
    pub reference_answer: String,
    /// The text of the target's last assistant message.
    pub candidate_answer: String,
    pub output_messages: Vec<OutputMessage>,
    /// Absolute paths of guideline files.
    pub guideline_files: Vec<String>,
    /// Absolute paths of the other attached files.
    pub input_files: Vec<String>,
    /// Input messages as written in the eval file (file segments unresolved).
    pub input_messages: Vec<Value>,
    pub trace_summary: TraceSummary,
    pub candidate_trace: Vec<TraceEvent>,
    pub execution_metrics: ExecutionMetrics,
    /// The evaluator's extra YAML keys, untouched.
    pub config: Map<String, Value>,
}
