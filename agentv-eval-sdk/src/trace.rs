//! The normalized trace model and its summary.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

/// One step of an agent's execution. Ordering is array position; `timestamp` is optional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
        }
    }
}

/// Counts over a trace that graders and judges read instead of walking every event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceSummary {
    pub event_count: usize,
    /// Distinct tool names, sorted.
    pub tool_names: Vec<String>,
    /// Calls per tool name; keys are the tool names exactly as called.
    pub tool_calls_by_name: BTreeMap<String, usize>,
    pub error_count: usize,
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
        }
    }

    /// Total number of tool calls.
    pub fn tool_call_count(&self) -> usize {
        self.tool_calls_by_name.values().sum()
    }
}

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
        assert!(serde_json::from_value::<TraceEvent>(json!({"type": "bogus"})).is_err());
    }
}
