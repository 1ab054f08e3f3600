//! The JSON object a code judge reads on stdin, in both generations' keys
//! (`docs/architecture.md#code-judge-contract`).

use serde::Serialize;
use serde_json::{Map, Value};

use crate::trace4::{Trace, TraceStep, TraceTool};
use crate::wire::{Path, Reader, WireError};
use crate::{
    ExecutionMetrics, OutputMessage, TokenCounts, TraceEvent, TraceEventKind, TraceSummary, last_assistant_text,
};

/// 4.x moves an answer whose JSON encoding is longer than this to the file at `output_path`.
pub const MAX_INLINE_OUTPUT_CHARS: usize = 50_000;

/// Why a payload could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error("could not read the payload from stdin: {0}")]
    Io(#[from] std::io::Error),
    #[error("the payload is not valid UTF-8 (byte {0})")]
    NotUtf8(usize),
    #[error("the payload is not valid JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("the payload: expected a JSON object, got {0}")]
    NotObject(&'static str),
    /// A key of the wrong type, with its path (``output_messages[1].tool_calls[0].tool``).
    #[error("payload key `{}`: {}", .0.path, .0.message)]
    Key(WireError),
    /// `output_path` names a file that cannot be read as a JSON string.
    #[error("cannot read the answer from {path}: {message}")]
    OutputPath { path: String, message: String },
}

/// Everything a code judge knows about one graded case.
///
/// agentv sends both key generations (`docs/architecture.md#code-judge-contract`): the 2.x keys
/// (`eval_id` … `execution_metrics`) and the 4.x keys (`criteria` … `workspace_path`); another
/// runtime may send only one set. Absent and `null` keys read as `""`, empty lists, empty objects
/// or `None`; keys this type does not know are kept in [`extra`](Self::extra). User data (message
/// content, tool inputs and outputs, `config`, `metadata`, tool names) is exactly as sent.
///
/// Prefer [`answer_text`](Self::answer_text) and [`criteria_text`](Self::criteria_text) to
/// reading `candidate_answer` or `output` directly: they work whichever generation sent the
/// payload.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CodeJudgePayload {
    // 2.x keys
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
    /// Absolute paths of the other attached files (a key of both generations).
    pub input_files: Vec<String>,
    /// Input messages as written in the eval file (file segments unresolved).
    pub input_messages: Vec<Value>,
    /// Counts over the trace; both generations' fields (see [`TraceSummary`]).
    pub trace_summary: Option<TraceSummary>,
    pub candidate_trace: Vec<TraceEvent>,
    pub execution_metrics: Option<ExecutionMetrics>,
    /// The evaluator's extra YAML keys, untouched (a key of both generations).
    pub config: Map<String, Value>,

    // 4.x keys
    /// The case criteria (`""` if none).
    pub criteria: String,
    /// Expected messages; file segments `{type: file, path, text, resolved_path}`.
    pub expected_output: Vec<Value>,
    /// The candidate's answer; `None` when it was moved to [`output_path`](Self::output_path).
    pub output: Option<String>,
    /// A file holding the answer as a JSON string, for answers over 50 000 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_path: Option<String>,
    /// The whole transcript: the prompt as sent, then the target's messages.
    pub messages: Vec<OutputMessage>,
    /// The resolved input messages.
    pub input: Vec<Value>,
    /// The case's metadata, untouched.
    pub metadata: Map<String, Value>,
    pub trace: Option<Trace>,
    pub token_usage: Option<TokenCounts>,
    pub cost_usd: Option<f64>,
    pub duration_ms: Option<f64>,
    pub start_time: Option<String>,
    pub end_time: Option<String>,
    /// Unified diff of the workspace.
    pub file_changes: Option<String>,
    pub workspace_path: Option<String>,

    /// Keys this type does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CodeJudgePayload {
    /// Reads a payload from a parsed JSON value.
    pub fn from_value(value: Value) -> Result<Self, PayloadError> {
        if !value.is_object() {
            return Err(PayloadError::NotObject(crate::wire::kind(&value)));
        }
        Self::from_wire(value).map_err(PayloadError::Key)
    }

    fn from_wire(value: Value) -> Result<Self, WireError> {
        let mut r = Reader::new(value, Path::Root)?;
        Ok(Self {
            eval_id: r.string("eval_id")?,
            question: r.string("question")?,
            expected_outcome: r.string("expected_outcome")?,
            expected_messages: r.array("expected_messages")?,
            reference_answer: r.string("reference_answer")?,
            candidate_answer: r.string("candidate_answer")?,
            output_messages: r.list("output_messages", OutputMessage::from_wire)?,
            guideline_files: r.strings("guideline_files")?,
            input_files: r.strings("input_files")?,
            input_messages: r.array("input_messages")?,
            trace_summary: r.nested("trace_summary", TraceSummary::from_wire)?,
            candidate_trace: r.list("candidate_trace", TraceEvent::from_wire)?,
            execution_metrics: r.nested("execution_metrics", ExecutionMetrics::from_wire)?,
            config: r.object("config")?,
            criteria: r.string("criteria")?,
            expected_output: r.array("expected_output")?,
            output: r.opt_string("output")?,
            output_path: r.opt_string("output_path")?,
            messages: r.list("messages", OutputMessage::from_wire)?,
            input: r.array("input")?,
            metadata: r.object("metadata")?,
            trace: r.nested("trace", Trace::from_wire)?,
            token_usage: r.nested("token_usage", TokenCounts::from_wire)?,
            cost_usd: r.opt_number("cost_usd")?,
            duration_ms: r.opt_number("duration_ms")?,
            start_time: r.opt_string("start_time")?,
            end_time: r.opt_string("end_time")?,
            file_changes: r.opt_string("file_changes")?,
            workspace_path: r.opt_string("workspace_path")?,
            extra: r.extra(),
        })
    }

    /// The candidate's answer, whichever generation sent it: `candidate_answer`, else
    /// `output`, else the JSON string stored at `output_path` (4.x moves answers over 50 000
    /// characters there), else the last assistant message.
    pub fn answer_text(&self) -> Result<String, PayloadError> {
        if !self.candidate_answer.is_empty() {
            return Ok(self.candidate_answer.clone());
        }
        if let Some(output) = &self.output {
            return Ok(output.clone());
        }
        if let Some(path) = self.output_path.as_deref().filter(|p| !p.is_empty()) {
            return read_output_file(path);
        }
        let messages = if self.output_messages.is_empty() {
            &self.messages
        } else {
            &self.output_messages
        };
        Ok(last_assistant_text(messages).unwrap_or_default())
    }

    /// What a good answer achieves: `expected_outcome` (2.x), else `criteria` (4.x).
    pub fn criteria_text(&self) -> &str {
        if self.expected_outcome.is_empty() {
            &self.criteria
        } else {
            &self.expected_outcome
        }
    }

    /// Sets the 4.x keys from the 2.x ones, so one payload serves judges written for either
    /// generation (`docs/architecture.md#code-judge-contract`): same values, 4.x names and shapes.
    ///
    /// `input` (the resolved input messages) is kept when already set, else copied from
    /// `input_messages`; `messages` is `input` followed by `output_messages`; `trace` is built
    /// from `candidate_trace`, the summary and the metrics; `trace_summary` gains its 4.x
    /// fields. What the 2.x keys do not know (`metadata`, `start_time`, `end_time`,
    /// `file_changes`, `workspace_path`) is left as it is. An answer too long to send inline
    /// stays in `output` here: moving it to a file is the runtime's (see
    /// [`MAX_INLINE_OUTPUT_CHARS`]).
    pub fn fill_v4_keys(&mut self) {
        self.criteria.clone_from(&self.expected_outcome);
        self.expected_output.clone_from(&self.expected_messages);
        if self.input.is_empty() {
            self.input.clone_from(&self.input_messages);
        }
        self.output = Some(self.candidate_answer.clone());

        let metrics = self.execution_metrics.as_ref();
        let durations = metrics.and_then(|m| m.tool_durations.clone()).unwrap_or_default();
        let llm_calls = self.output_messages.iter().filter(|m| m.role == "assistant").count();
        let summary = self
            .trace_summary
            .get_or_insert_with(|| TraceSummary::from_events(&self.candidate_trace));
        summary.tool_calls = Some(summary.tool_calls_by_name.clone());
        summary.tool_durations = Some(durations.clone());
        summary.llm_call_count = Some(llm_calls);
        self.token_usage = metrics.and_then(|m| m.token_usage).map(TokenCounts::from);
        self.cost_usd = metrics.and_then(|m| m.cost_usd);
        self.duration_ms = metrics.and_then(|m| m.duration_ms);

        self.messages = self
            .input
            .iter()
            .filter_map(input_as_message)
            .chain(self.output_messages.iter().cloned())
            .collect();
        let mut metadata = Map::new();
        metadata.insert("eval_case_id".to_owned(), Value::String(self.eval_id.clone()));
        self.trace = Some(Trace {
            event_count: Some(self.candidate_trace.len()),
            tool_calls: summary.tool_calls_by_name.clone(),
            error_count: Some(summary.error_count),
            llm_call_count: Some(llm_calls),
            tool_durations: durations,
            messages: self.messages.clone(),
            events: self.candidate_trace.iter().enumerate().map(step).collect(),
            token_usage: self.token_usage.clone(),
            cost_usd: self.cost_usd,
            duration_ms: self.duration_ms,
            start_time: self.start_time.clone(),
            end_time: self.end_time.clone(),
            metadata,
            extra: Map::new(),
        });
    }
}

impl<'de> serde::Deserialize<'de> for CodeJudgePayload {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = <Value as serde::Deserialize>::deserialize(deserializer)?;
        Self::from_value(value).map_err(serde::de::Error::custom)
    }
}

fn read_output_file(path: &str) -> Result<String, PayloadError> {
    let failed = |message: String| PayloadError::OutputPath {
        path: path.to_owned(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
    match serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')) {
        Ok(Value::String(answer)) => Ok(answer),
        Ok(other) => Ok(other.to_string()),
        Err(e) => Err(failed(format!("not valid JSON: {e}"))),
    }
}

/// An input message (`{role, name?, content?}`) as a transcript message.
fn input_as_message(message: &Value) -> Option<OutputMessage> {
    let role = message.get("role")?.as_str()?;
    Some(OutputMessage {
        role: role.to_owned(),
        name: message.get("name").and_then(Value::as_str).map(str::to_owned),
        content: message.get("content").filter(|c| !c.is_null()).cloned(),
        ..OutputMessage::default()
    })
}

/// A 2.x trace event as a 4.x trace event.
fn step((ordinal, event): (usize, &TraceEvent)) -> TraceStep {
    let tool = matches!(event.kind, TraceEventKind::ToolCall | TraceEventKind::ToolResult).then(|| TraceTool {
        name: event.name.clone(),
        call_id: event.id.clone(),
        input: event.input.clone(),
        output: event.output.clone(),
        ..TraceTool::default()
    });
    let message = event.text.as_ref().map(|text| {
        let role = if event.kind == TraceEventKind::Error {
            "system"
        } else {
            "assistant"
        };
        serde_json::json!({"role": role, "content": text})
    });
    let kind = match event.kind {
        TraceEventKind::ModelStep => "message",
        other => other.as_str(),
    };
    TraceStep {
        kind: kind.to_owned(),
        event_id: Some(format!("e{ordinal}")),
        ordinal: Some(ordinal as u64),
        timestamp: event.timestamp.clone(),
        message,
        tool,
        metadata: event.metadata.clone().unwrap_or_default(),
        ..TraceStep::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<CodeJudgePayload, PayloadError> {
        CodeJudgePayload::from_value(value)
    }

    #[test]
    fn reads_both_generations_and_keeps_unknown_keys() {
        let p = parse(json!({
            "eval_id": "c1", "candidate_answer": "old", "criteria": "new criteria", "output": "new",
            "metadata": null, "trace": null, "future_key": [1]
        }))
        .expect("valid");
        assert_eq!((p.eval_id.as_str(), p.criteria.as_str()), ("c1", "new criteria"));
        assert_eq!(p.answer_text().expect("answer"), "old");
        assert_eq!(p.criteria_text(), "new criteria");
        assert!(p.metadata.is_empty() && p.trace.is_none());
        assert_eq!(p.extra["future_key"], json!([1]));
    }

    #[test]
    fn errors_name_the_wire_path() {
        let cases = [
            (
                json!({"question": 42}),
                "payload key `question`: expected a string, got a number",
            ),
            (
                json!({"output_messages": [{"role": "assistant"}, {"role": "assistant", "tool_calls": [{"tool": 7}]}]}),
                "payload key `output_messages[1].tool_calls[0].tool`: expected a string, got a number",
            ),
            (
                json!({"output_messages": [{"content": "x"}]}),
                "payload key `output_messages[0].role`: required string is missing",
            ),
            (json!([1]), "the payload: expected a JSON object, got an array"),
        ];
        for (value, want) in cases {
            let error = parse(value.clone()).expect_err("invalid");
            assert_eq!(error.to_string(), want, "{value}");
        }
    }

    #[test]
    fn answer_text_falls_back_through_the_generations() {
        let dir = std::env::temp_dir().join(format!("agentv-sdk-answer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("answer.json");
        std::fs::write(&file, "\"from the file\"").expect("write");
        let from_file = parse(json!({"output": null, "output_path": file.display().to_string()})).expect("valid");
        assert_eq!(from_file.answer_text().expect("file"), "from the file");
        let missing = parse(json!({"output_path": dir.join("nope.json").display().to_string()})).expect("valid");
        assert!(
            missing
                .answer_text()
                .expect_err("no file")
                .to_string()
                .contains("cannot read the answer")
        );
        let from_messages =
            parse(json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}))
                .expect("valid");
        assert_eq!(from_messages.answer_text().expect("messages"), "a");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn fill_v4_keys_mirrors_the_2x_values() {
        let mut p = parse(json!({
            "eval_id": "c1",
            "expected_outcome": "Names Paris.",
            "expected_messages": [{"role": "assistant", "content": "Paris"}],
            "candidate_answer": "It is Paris.",
            "input_messages": [{"role": "user", "content": "Capital?"}],
            "output_messages": [
                {"role": "assistant", "tool_calls": [{"tool": "Read", "id": "c1", "duration_ms": 4}]},
                {"role": "assistant", "content": "It is Paris."}
            ],
            "candidate_trace": [{"type": "tool_call", "name": "Read", "id": "c1", "input": {"file_path": "/x"}}],
            "trace_summary": {"event_count": 1, "tool_names": ["Read"], "tool_calls_by_name": {"Read": 1}, "error_count": 0},
            "execution_metrics": {"token_usage": {"input": 10, "output": 5}, "cost_usd": 0.5, "duration_ms": 1200, "tool_durations": {"Read": [4]}}
        }))
        .expect("valid");
        p.fill_v4_keys();
        let wire = serde_json::to_value(&p).expect("serializes");
        assert_eq!(wire["criteria"], "Names Paris.");
        assert_eq!(wire["expected_output"], wire["expected_messages"]);
        assert_eq!(wire["output"], "It is Paris.");
        assert_eq!(wire["input"], json!([{"role": "user", "content": "Capital?"}]));
        assert_eq!(wire["messages"][0], json!({"role": "user", "content": "Capital?"}));
        assert_eq!(wire["messages"][2]["content"], "It is Paris.");
        assert_eq!(wire["trace_summary"]["tool_calls"], json!({"Read": 1}));
        assert_eq!(wire["trace_summary"]["tool_calls_by_name"], json!({"Read": 1}));
        assert_eq!(wire["trace_summary"]["llm_call_count"], 2);
        assert_eq!(wire["trace"]["tool_calls"], json!({"Read": 1}));
        assert_eq!(wire["trace"]["tool_durations"], json!({"Read": [4.0]}));
        assert_eq!(
            wire["trace"]["events"][0],
            json!({"type": "tool_call", "event_id": "e0", "ordinal": 0, "metadata": {},
                   "tool": {"name": "Read", "call_id": "c1", "input": {"file_path": "/x"}}})
        );
        assert_eq!(wire["trace"]["metadata"], json!({"eval_case_id": "c1"}));
        assert_eq!(wire["token_usage"], json!({"input": 10, "output": 5}));
        assert_eq!(
            (wire["cost_usd"].as_f64(), wire["duration_ms"].as_f64()),
            (Some(0.5), Some(1200.0))
        );
        for unknown in ["start_time", "end_time", "file_changes", "workspace_path"] {
            assert_eq!(wire[unknown], Value::Null, "{unknown} is sent as null");
        }
        assert!(wire.get("output_path").is_none());
        let again = parse(wire).expect("what agentv writes reads back");
        assert_eq!(again, p);
    }
}
