//! The normalized trace model and its summary.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::TokenUsage;
use crate::wire::{Path, Reader, Wire, WireError, deserialize_from_wire};

/// What a trace event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceEventKind {
    ModelStep,
    ToolCall,
    ToolResult,
    Message,
    Error,
}

impl TraceEventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ModelStep => "model_step",
            Self::ToolCall => "tool_call",
            Self::ToolResult => "tool_result",
            Self::Message => "message",
            Self::Error => "error",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [
            Self::ModelStep,
            Self::ToolCall,
            Self::ToolResult,
            Self::Message,
            Self::Error,
        ]
        .into_iter()
        .find(|k| k.as_str() == text)
    }
}

/// One step of an agent's execution (the 2.x `candidate_trace`). Ordering is array position;
/// `timestamp` is optional.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceEvent {
    #[serde(rename = "type")]
    pub kind: TraceEventKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Wall time of the step in milliseconds (a tool call's, when the agent reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// Keys this type does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TraceEvent {
    /// An event of `kind` with every optional field empty.
    pub fn new(kind: TraceEventKind) -> Self {
        Self {
            kind,
            timestamp: None,
            id: None,
            name: None,
            input: None,
            output: None,
            text: None,
            metadata: None,
            duration_ms: None,
            extra: Map::new(),
        }
    }

    pub(crate) fn from_wire(value: Value, path: Path<'_>) -> Wire<Self> {
        let mut r = Reader::new(value, path)?;
        let kind_text = r.required_string("type", None)?;
        let kind = TraceEventKind::parse(&kind_text).ok_or_else(|| {
            WireError::at(
                Path::Key(&path, "type"),
                format!("expected one of model_step, tool_call, tool_result, message, error, got `{kind_text}`"),
            )
        })?;
        Ok(Self {
            kind,
            timestamp: r.opt_string("timestamp")?,
            id: r.opt_string("id")?,
            name: r.opt_string("name")?,
            input: r.value("input"),
            output: r.value("output"),
            text: r.opt_string("text")?,
            metadata: r.opt_object("metadata")?,
            duration_ms: r.opt_number("duration_ms")?,
            extra: r.extra(),
        })
    }
}

deserialize_from_wire!(TraceEvent);

/// Counts over a trace that graders and judges read instead of walking every event.
///
/// The payload's `trace_summary` key is shared by both generations: 2.x fills `tool_names`
/// and `tool_calls_by_name`, 4.x `tool_calls`, `tool_durations` and `llm_call_count`; agentv
/// sends both. The runtime's own summary (results files) has only the 2.x fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TraceSummary {
    pub event_count: usize,
    /// Distinct tool names, sorted.
    pub tool_names: Vec<String>,
    /// Calls per tool name; keys are the tool names exactly as called.
    pub tool_calls_by_name: BTreeMap<String, usize>,
    pub error_count: usize,
    /// Calls per tool name (the 4.x name of `tool_calls_by_name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<BTreeMap<String, usize>>,
    /// Duration of each call in ms, per tool name (4.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_durations: Option<BTreeMap<String, Vec<f64>>>,
    /// Number of model turns (4.x: assistant messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_call_count: Option<usize>,
    /// The provider's token counts: 2.x judges read them here (AgentV 2.1 puts them in the
    /// summary), as well as in `execution_metrics`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<TokenUsage>,
    /// The provider's cost in USD (2.x place, as `token_usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The provider call's duration in ms (2.x place, as `token_usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// Keys this type does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TraceSummary {
    /// Summarizes `events`: every event counts, `tool_call` events count per name, `error`
    /// events count as errors.
    pub fn from_events(events: &[TraceEvent]) -> Self {
        let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
        let mut error_count = 0;
        for event in events {
            match event.kind {
                TraceEventKind::ToolCall => {
                    if let Some(name) = &event.name {
                        *by_name.entry(name.clone()).or_default() += 1;
                    }
                }
                TraceEventKind::Error => error_count += 1,
                _ => {}
            }
        }
        Self {
            event_count: events.len(),
            tool_names: by_name.keys().cloned().collect(),
            tool_calls_by_name: by_name,
            error_count,
            ..Self::default()
        }
    }

    /// Total number of tool calls.
    pub fn tool_call_count(&self) -> usize {
        self.calls_per_tool().values().sum()
    }

    /// Calls per tool name, whichever generation filled the summary.
    pub fn calls_per_tool(&self) -> &BTreeMap<String, usize> {
        match &self.tool_calls {
            Some(v4) if self.tool_calls_by_name.is_empty() => v4,
            _ => &self.tool_calls_by_name,
        }
    }

    pub(crate) fn from_wire(value: Value, path: Path<'_>) -> Wire<Self> {
        let mut r = Reader::new(value, path)?;
        Ok(Self {
            event_count: r.usize("event_count")?,
            tool_names: r.strings("tool_names")?,
            tool_calls_by_name: r.counts("tool_calls_by_name")?,
            error_count: r.usize("error_count")?,
            tool_calls: r.opt_counts("tool_calls")?,
            tool_durations: r.opt_durations("tool_durations")?,
            llm_call_count: r.opt_usize("llm_call_count")?,
            token_usage: r.nested("token_usage", TokenUsage::from_wire)?,
            cost_usd: r.opt_number("cost_usd")?,
            duration_ms: r.opt_number("duration_ms")?,
            extra: r.extra(),
        })
    }
}

deserialize_from_wire!(TraceSummary);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summary_matches_the_spec_example() {
        let events: Vec<TraceEvent> = serde_json::from_value(json!([
            { "type": "tool_call", "name": "searchDocs" },
            { "type": "tool_result" },
            { "type": "tool_call", "name": "searchDocs" },
            { "type": "tool_result" },
            { "type": "tool_call", "name": "verify" },
            { "type": "tool_result" }
        ]))
        .expect("valid events");
        let summary = TraceSummary::from_events(&events);
        assert_eq!(
            serde_json::to_value(&summary).expect("serializes"),
            json!({
                "event_count": 6,
                "tool_names": ["searchDocs", "verify"],
                "tool_calls_by_name": { "searchDocs": 2, "verify": 1 },
                "error_count": 0
            })
        );
    }

    #[test]
    fn tool_names_are_sorted_and_errors_counted() {
        let mut events = vec![TraceEvent::new(TraceEventKind::ToolCall); 2];
        events[0].name = Some("zeta".into());
        events[1].name = Some("alpha".into());
        events.push(TraceEvent::new(TraceEventKind::Error));
        let summary = TraceSummary::from_events(&events);
        assert_eq!(summary.tool_names, ["alpha", "zeta"]);
        assert_eq!(summary.error_count, 1);
        assert_eq!(summary.tool_call_count(), 2);
    }

    #[test]
    fn timestamp_is_optional() {
        let event: TraceEvent = serde_json::from_value(json!({"type": "message", "text": "hi"})).expect("valid");
        assert!(event.timestamp.is_none());
        let error = serde_json::from_value::<TraceEvent>(json!({"type": "bogus"})).expect_err("unknown type");
        assert_eq!(
            error.to_string(),
            "`type`: expected one of model_step, tool_call, tool_result, message, error, got `bogus`"
        );
    }

    #[test]
    fn a_4x_summary_reads_beside_the_2x_fields() {
        let summary: TraceSummary = serde_json::from_value(json!({
            "event_count": 1, "tool_calls": {"Read": 2}, "error_count": 0,
            "tool_durations": {"Read": [5, 7.5]}, "llm_call_count": 1, "future": true
        }))
        .expect("valid");
        assert_eq!(summary.tool_call_count(), 2);
        assert_eq!(summary.llm_call_count, Some(1));
        assert_eq!(summary.extra["future"], true);
        assert!(summary.tool_calls_by_name.is_empty());
        let runtime = serde_json::to_value(TraceSummary::default()).expect("serializes");
        assert_eq!(
            runtime,
            json!({"event_count": 0, "tool_names": [], "tool_calls_by_name": {}, "error_count": 0}),
            "the runtime's summary keeps its 2.x shape"
        );
    }
}
