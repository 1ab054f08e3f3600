//! Traces from provider answers, and the execution metrics derived from them.

use std::collections::BTreeMap;

use crate::model::{ExecutionMetrics, OutputMessage, ToolCall, TraceEvent, TraceEventKind, TraceSummary};
use crate::providers::ProviderResponse;

/// Tools counted as exploration when none are configured.
pub const DEFAULT_EXPLORATION_TOOLS: &[&str] = &["read", "grep", "glob", "search", "list"];

/// Largest trace file `trace_ref` may name. A trace is a list of events; a file larger than
/// this is not one worth holding in memory (and `/dev/zero` must not fill it).
pub const MAX_TRACE_FILE: u64 = 32 * 1024 * 1024;

/// The trace of an answer: the explicit `trace` (deprecated, preferred when present), else the
/// file named by `trace_ref`, else the tool calls of the output messages in order.
///
/// The file is whatever the target wrote, so it is read defensively: regular files only (a FIFO
/// would block, a device never ends), at most [`MAX_TRACE_FILE`] bytes, on a blocking thread so
/// the run's other cases and its timers go on. A file that cannot be used is a warning.
pub async fn resolve(response: &ProviderResponse, warnings: &mut Vec<String>) -> Vec<TraceEvent> {
    if let Some(trace) = &response.trace {
        return trace.clone();
    }
    if let Some(path) = &response.trace_ref {
        let owned = path.clone();
        let read = tokio::task::spawn_blocking(move || read_trace_file(&owned))
            .await
            .unwrap_or_else(|e| Err(TraceFileError::Join(e)));
        match read {
            Ok(events) => return events,
            Err(e) => warnings.push(format!("ignored trace_ref {}: {e}", path.display())),
        }
    }
    extract(&response.output_messages)
}

/// Why a trace file named by `trace_ref` was ignored (a warning on the case, after "ignored
/// trace_ref PATH: "): the path is in the warning, so the variants say only what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum TraceFileError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a regular file")]
    NotAFile,
    #[error("larger than {} MiB", MAX_TRACE_FILE / (1024 * 1024))]
    TooLarge,
    #[error("{0}")]
    NotATrace(#[from] serde_json::Error),
    #[error("the read failed: {0}")]
    Join(tokio::task::JoinError),
}

/// Reads and parses a trace file named by `trace_ref` (see [`resolve`]).
fn read_trace_file(path: &std::path::Path) -> Result<Vec<TraceEvent>, TraceFileError> {
    use std::io::Read as _;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // Opening a FIFO for reading blocks until a writer appears; non-blocking, it returns at
    // once and the type check below rejects it.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    // The opened file's own type: the path may have changed since anyone looked at it.
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(TraceFileError::NotAFile);
    }
    if meta.len() > MAX_TRACE_FILE {
        return Err(TraceFileError::TooLarge);
    }
    let mut bytes = Vec::new();
    file.take(MAX_TRACE_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_TRACE_FILE {
        return Err(TraceFileError::TooLarge);
    }
    Ok(serde_json::from_slice(&bytes)?)
}

/// One `tool_call` event per tool call, in order, with its input, output and duration; the
/// timestamp is the call's (or its start), else the message's. How the call ended (`status`)
/// and its end time go in `metadata`.
pub fn extract(messages: &[OutputMessage]) -> Vec<TraceEvent> {
    messages
        .iter()
        .flat_map(|m| {
            m.tool_calls.iter().map(move |call| TraceEvent {
                kind: TraceEventKind::ToolCall,
                timestamp: call
                    .timestamp
                    .clone()
                    .or_else(|| call.start_time.clone())
                    .or_else(|| m.timestamp.clone()),
                id: call.id.clone(),
                name: Some(call.tool.clone()),
                input: call.input.clone(),
                output: call.output.clone(),
                text: None,
                metadata: call_metadata(call),
                duration_ms: call.duration_ms.filter(|d| d.is_finite() && *d >= 0.0),
                extra: Default::default(),
            })
        })
        .collect()
}

fn call_metadata(call: &ToolCall) -> Option<serde_json::Map<String, serde_json::Value>> {
    let mut out = serde_json::Map::new();
    if let Some(status) = &call.status {
        out.insert("status".into(), status.clone().into());
    }
    if let Some(end) = &call.end_time {
        out.insert("end_time".into(), end.clone().into());
    }
    (!out.is_empty()).then_some(out)
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
    use crate::model::TokenUsage;
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

    #[tokio::test]
    async fn summary_from_output_messages_matches_the_spec() {
        let r = answer(vec![call("searchDocs", None), call("verify", None)]);
        let events = resolve(&r, &mut Vec::new()).await;
        let summary = TraceSummary::from_events(&events);
        assert_eq!(
            serde_json::to_value(&summary).expect("json"),
            json!({"event_count": 2, "tool_names": ["searchDocs", "verify"], "tool_calls_by_name": {"searchDocs": 1, "verify": 1}, "error_count": 0})
        );
        assert_eq!(events[0].input, Some(json!({"q": "searchDocs"})));
        assert_eq!(events[0].timestamp.as_deref(), Some("2025-01-01T00:00:00Z"));
    }

    #[tokio::test]
    async fn explicit_trace_takes_precedence() {
        let mut r = answer(vec![call("a", None)]);
        r.trace = Some(vec![TraceEvent::new(TraceEventKind::Error)]);
        let events = resolve(&r, &mut Vec::new()).await;
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kind, TraceEventKind::Error);
    }

    #[tokio::test]
    async fn messages_without_tool_calls_give_an_empty_trace() {
        assert!(resolve(&ProviderResponse::text("hi"), &mut Vec::new()).await.is_empty());
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

    #[tokio::test]
    async fn trace_ref_names_a_trace_file_and_camel_case_is_accepted() {
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
        let events = resolve(&r, &mut Vec::new()).await;
        let summary = TraceSummary::from_events(&events);
        assert_eq!(
            (summary.event_count, summary.error_count, summary.tool_names.clone()),
            (2, 1, vec!["search".to_owned()])
        );
    }

    /// An answer whose only trace is the file at `path`.
    fn with_trace_ref(path: &std::path::Path) -> ProviderResponse {
        ProviderResponse {
            trace_ref: Some(path.to_path_buf()),
            ..answer(vec![call("fallback", None)])
        }
    }

    #[tokio::test]
    async fn trace_ref_to_a_device_or_a_fifo_is_ignored_without_blocking() {
        let dir = tempfile::tempdir().expect("tmp");
        let fifo = dir.path().join("trace.fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        for path in [std::path::Path::new("/dev/zero"), fifo.as_path()] {
            let mut warnings = Vec::new();
            // A guard against a hang, not a speed assertion.
            let events = tokio::time::timeout(
                std::time::Duration::from_secs(30),
                resolve(&with_trace_ref(path), &mut warnings),
            )
            .await
            .expect("the read returned");
            assert_eq!(events.len(), 1, "fell back to the tool calls");
            assert!(warnings[0].contains("not a regular file"), "{warnings:?}");
        }
    }

    #[tokio::test]
    async fn trace_ref_to_a_huge_file_is_ignored() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("huge.json");
        let file = std::fs::File::create(&path).expect("create");
        file.set_len(MAX_TRACE_FILE + 1).expect("sparse file");
        let mut warnings = Vec::new();
        let events = resolve(&with_trace_ref(&path), &mut warnings).await;
        assert_eq!(events.len(), 1, "fell back to the tool calls");
        assert!(warnings[0].contains("larger than 32 MiB"), "{warnings:?}");
    }
}
