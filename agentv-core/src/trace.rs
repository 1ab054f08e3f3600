//! Traces from provider answers, and the execution metrics derived from them.

use std::collections::BTreeMap;

use crate::model::{ExecutionMetrics, OutputMessage, TraceEvent, TraceEventKind, TraceSummary};
use crate::providers::ProviderResponse;

/// Tools counted as exploration when none are configured.
pub const DEFAULT_EXPLORATION_TOOLS: &[&str] = &["read", "grep", "glob", "search", "list"];

/// The trace of an answer: the explicit `trace` (deprecated, preferred when present), else the
/// file named by `trace_ref`, else the tool calls of the output messages in order.
pub fn resolve(response: &ProviderResponse, warnings: &mut Vec<String>) -> Vec<TraceEvent> {
    if let Some(trace) = &response.trace {
        return trace.clone();
    }
    if let Some(path) = &response.trace_ref {
        match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(events) => return events,
            Err(e) => warnings.push(format!("ignored trace_ref {}: {e}", path.display())),
        }
    }
    extract(&response.output_messages)
}

/// One `tool_call` event per tool call, in order; the timestamp falls back to the message's.
pub fn extract(messages: &[OutputMessage]) -> Vec<TraceEvent> {
    messages
        .iter()
        .flat_map(|m| {
            m.tool_calls.iter().map(move |call| TraceEvent {
                kind: TraceEventKind::ToolCall,
                timestamp: call.timestamp.clone().or_else(|| m.timestamp.clone()),
                id: call.id.clone(),
                name: Some(call.tool.clone()),
                input: call.input.clone(),
                output: call.output.clone(),
                text: None,
                metadata: None,
                extra: Default::default(),
            })
        })
        .collect()
}

/// Execution metrics of an answer, with the derived ratios.
pub fn metrics(response: &ProviderResponse, summary: &TraceSummary, exploration_tools: &[String]) -> ExecutionMetrics {
    let mut durations: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for call in response.output_messages.iter().flat_map(|m| &m.tool_calls) {
        if let Some(ms) = call.duration_ms.filter(|d| d.is_finite() && *d >= 0.0) {
            durations.entry(call.tool.clone()).or_default().push(ms);
        }
    }
    let calls = summary.tool_call_count();
    let exploration = summary
        .tool_calls_by_name
        .iter()
        .filter(|(name, _)| exploration_tools.iter().any(|t| t.eq_ignore_ascii_case(name)))
        .map(|(_, n)| n)
        .sum::<usize>();
    ExecutionMetrics {
        token_usage: response.token_usage,
        cost_usd: response.cost_usd,
        duration_ms: response.duration_ms,
        tool_durations: (!durations.is_empty()).then_some(durations),
        tool_call_count: (calls > 0).then_some(calls),
        exploration_ratio: (calls > 0).then(|| exploration as f64 / calls as f64),
        tokens_per_tool: match (response.token_usage, calls) {
            (Some(usage), n) if n > 0 => Some(usage.output as f64 / n as f64),
            _ => None,
        },
        ..ExecutionMetrics::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{TokenUsage, ToolCall};
    use serde_json::json;

    fn call(tool: &str, ms: Option<f64>) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            input: Some(json!({"q": tool})),
            duration_ms: ms,
            ..ToolCall::default()
        }
    }

    fn answer(calls: Vec<ToolCall>) -> ProviderResponse {
        let mut m = OutputMessage::assistant("done");
        m.timestamp = Some("2025-01-01T00:00:00Z".into());
        m.tool_calls = calls;
        ProviderResponse {
            output_messages: vec![m],
            token_usage: Some(TokenUsage {
                input: 100,
                output: 40,
                cached: None,
            }),
            ..ProviderResponse::default()
        }
    }

    #[test]
    fn summary_from_output_messages_matches_the_spec() {
        let r = answer(vec![call("searchDocs", None), call("verify", None)]);
        let events = resolve(&r, &mut Vec::new());
        let summary = TraceSummary::from_events(&events);
        assert_eq!(
            serde_json::to_value(&summary).expect("json"),
            json!({"event_count": 2, "tool_names": ["searchDocs", "verify"], "tool_calls_by_name": {"searchDocs": 1, "verify": 1}, "error_count": 0})
        );
        assert_eq!(events[0].input, Some(json!({"q": "searchDocs"})));
        assert_eq!(events[0].timestamp.as_deref(), Some("2025-01-01T00:00:00Z"));
    }

    #[test]
    fn explicit_trace_takes_precedence() {
        let mut r = answer(vec![call("a", None)]);
        r.trace = Some(vec![TraceEvent::new(TraceEventKind::Error)]);
        let events = resolve(&r, &mut Vec::new());
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kind, TraceEventKind::Error);
    }

    #[test]
    fn messages_without_tool_calls_give_an_empty_trace() {
        assert!(resolve(&ProviderResponse::text("hi"), &mut Vec::new()).is_empty());
    }

    #[test]
    fn derived_metrics() {
        let r = answer(vec![
            call("Read", Some(5.0)),
            call("grep", Some(7.0)),
            call("Edit", None),
            call("Read", Some(3.0)),
        ]);
        let summary = TraceSummary::from_events(&extract(&r.output_messages));
        let tools: Vec<String> = DEFAULT_EXPLORATION_TOOLS.iter().map(|s| (*s).to_owned()).collect();
        let m = metrics(&r, &summary, &tools);
        assert_eq!(m.exploration_ratio, Some(0.75));
        assert_eq!(m.tokens_per_tool, Some(10.0));
        assert_eq!(m.tool_call_count, Some(4));
        assert_eq!(
            m.tool_durations.as_ref().and_then(|d| d.get("Read")),
            Some(&vec![5.0, 3.0])
        );
        let none = metrics(&ProviderResponse::text("x"), &TraceSummary::default(), &tools);
        assert_eq!((none.tokens_per_tool, none.exploration_ratio), (None, None));
    }

    #[test]
    fn trace_ref_names_a_trace_file_and_camel_case_is_accepted() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("trace.json");
        std::fs::write(
            &path,
            r#"[{"type": "tool_call", "name": "search"}, {"type": "error", "text": "boom"}]"#,
        )
        .expect("write");
        // No snake_case key at all: the camelCase ones alone make the answer structured.
        let text = format!(
            r#"{{"outputMessages": [{{"role": "assistant", "content": "ok"}}], "traceRef": "{}", "costUsd": 0.5}}"#,
            path.display()
        );
        let r = crate::providers::parse_answer(&text);
        assert_eq!(r.cost_usd, Some(0.5));
        assert_eq!(r.output_messages[0].text().as_deref(), Some("ok"));
        let events = resolve(&r, &mut Vec::new());
        let summary = TraceSummary::from_events(&events);
        assert_eq!(
            (summary.event_count, summary.error_count, summary.tool_names.clone()),
            (2, 1, vec!["search".to_owned()])
        );
    }
}
