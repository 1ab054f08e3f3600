//! The size cap on a record's trace: `trace` and `output_messages` together take at most
//! [`MAX_TRACE_BYTES`] of JSON, so one runaway agent (a tool that printed a whole repository)
//! cannot bloat the results file. What was cut is said in the record's `truncated`
//! (`docs/results.md#the-record-keys-trace-and-output_messages`).
//!
//! Cutting goes from least to most lost, stopping as soon as the two fit: long strings inside
//! them are cut (to 8 KiB, then 2 KiB, 512 and 128 bytes), then `output_messages` is left out
//! (the trace keeps the tool calls, `candidate_answer` the answer), then trace events are left
//! out from the end. The rest of the record (the answer, the graders' evidence) is never cut.

use std::io;

use serde::Serialize;
use serde_json::Value;

use crate::model::{EvaluationRecord, OutputMessage, TraceEvent};
use crate::redact::Secrets;

/// 256 KiB: room for hundreds of tool calls with their inputs and outputs.
pub const MAX_TRACE_BYTES: usize = 256 * 1024;

/// The string lengths tried, longest first.
const STRING_CUTS: [usize; 4] = [8 * 1024, 2 * 1024, 512, 128];

/// Cuts `record.trace` and `record.output_messages` until their JSON fits in `max_bytes`, and
/// says what was cut in `record.truncated`. A cut string is redacted before it is cut, so no
/// part of a secret survives the cut unrecognised.
pub fn cap_trace(record: &mut EvaluationRecord, max_bytes: usize, secrets: &Secrets) {
    let original = traced_bytes(record);
    if original <= max_bytes {
        return;
    }
    let mut marker = agentv_eval_sdk::Truncation {
        max_bytes: max_bytes as u64,
        original_bytes: original as u64,
        ..Default::default()
    };
    let mut trace = record.trace.take().map(|t| to_value(&t));
    let mut messages = record.output_messages.take().map(|m| to_value(&m));
    let fits = |trace: &Option<Value>, messages: &Option<Value>| json_len(trace) + json_len(messages) <= max_bytes;
    for limit in STRING_CUTS {
        for value in trace.iter_mut().chain(messages.iter_mut()) {
            cut_strings(value, limit, secrets);
        }
        marker.strings_cut_to = Some(limit as u64);
        if fits(&trace, &messages) {
            break;
        }
    }
    if !fits(&trace, &messages) && messages.is_some() {
        messages = None;
        marker.output_messages_dropped = true;
    }
    if let Some(Value::Array(events)) = &mut trace {
        // The array's brackets and commas: one byte per event, two for the brackets.
        let mut size = 2 + events.iter().map(|e| json_len_of(e) + 1).sum::<usize>();
        while size > max_bytes
            && let Some(last) = events.pop()
        {
            size -= json_len_of(&last) + 1;
            marker.trace_events_dropped += 1;
        }
    }
    record.trace = trace.and_then(|t| serde_json::from_value::<Vec<TraceEvent>>(t).ok());
    record.output_messages = messages.and_then(|m| serde_json::from_value::<Vec<OutputMessage>>(m).ok());
    record.truncated = Some(marker);
}

/// Bytes of JSON `trace` and `output_messages` take in `record`.
pub fn traced_bytes(record: &EvaluationRecord) -> usize {
    json_len_of(&record.trace) + json_len_of(&record.output_messages)
}

fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn json_len(value: &Option<Value>) -> usize {
    value.as_ref().map_or(0, json_len_of)
}

/// The length of `value` as compact JSON, counted without building the text.
fn json_len_of<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

/// Cuts every string in `value` longer than `limit` bytes to at most `limit` bytes (on a
/// character boundary) followed by `…`, redacting it first.
fn cut_strings(value: &mut Value, limit: usize, secrets: &Secrets) {
    match value {
        Value::String(text) if text.len() > limit => {
            let clean = secrets.redact(text).into_owned();
            let mut end = limit.min(clean.len());
            while !clean.is_char_boundary(end) {
                end -= 1;
            }
            *text = format!("{}…", &clean[..end]);
        }
        Value::Array(items) => items.iter_mut().for_each(|v| cut_strings(v, limit, secrets)),
        Value::Object(map) => map.values_mut().for_each(|v| cut_strings(v, limit, secrets)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ToolCall, TraceEventKind};
    use serde_json::json;

    fn record(events: usize, output_bytes: usize) -> EvaluationRecord {
        let mut r: EvaluationRecord = serde_json::from_value(json!({
            "timestamp": "t", "eval_id": "a", "dataset": "d", "target": "t", "attempt": 1,
            "execution_status": "ok", "score": 1.0, "verdict": "pass", "hits": [], "misses": [],
            "candidate_answer": "done", "evaluator_results": []
        }))
        .expect("record");
        let trace: Vec<TraceEvent> = (0..events)
            .map(|i| {
                let mut e = TraceEvent::new(TraceEventKind::ToolCall);
                e.name = Some(format!("tool{i}"));
                e.input = Some(json!({"path": format!("f{i}")}));
                e.output = Some(Value::String("x".repeat(output_bytes)));
                e
            })
            .collect();
        let mut message = OutputMessage::assistant("done");
        message.tool_calls = vec![ToolCall {
            tool: "tool0".into(),
            output: Some(Value::String("y".repeat(output_bytes))),
            ..ToolCall::default()
        }];
        r.trace = Some(trace);
        r.output_messages = Some(vec![message]);
        r
    }

    #[test]
    fn a_trace_within_the_cap_is_left_alone() {
        let mut r = record(3, 100);
        let before = r.clone();
        cap_trace(&mut r, MAX_TRACE_BYTES, &Secrets::default());
        assert_eq!(r, before);
        assert!(r.truncated.is_none());
    }

    #[test]
    fn long_outputs_are_cut_first_and_the_marker_says_so() {
        let mut r = record(10, 100_000);
        cap_trace(&mut r, MAX_TRACE_BYTES, &Secrets::default());
        assert!(traced_bytes(&r) <= MAX_TRACE_BYTES);
        let t = r.truncated.clone().expect("marked");
        assert_eq!(t.strings_cut_to, Some(8 * 1024));
        assert!(!t.output_messages_dropped);
        assert_eq!(t.trace_events_dropped, 0);
        assert!(t.original_bytes > 1_000_000);
        let trace = r.trace.expect("kept");
        assert_eq!(trace.len(), 10, "every call is still there");
        let output = trace[0].output.as_ref().and_then(Value::as_str).expect("text");
        assert!(
            output.ends_with('…') && output.len() <= 8 * 1024 + 3,
            "{}",
            output.len()
        );
        assert_eq!(trace[9].input, Some(json!({"path": "f9"})));
    }

    #[test]
    fn too_many_events_drop_messages_then_the_last_events() {
        let mut r = record(5_000, 200);
        cap_trace(&mut r, 64 * 1024, &Secrets::default());
        assert!(traced_bytes(&r) <= 64 * 1024, "{}", traced_bytes(&r));
        let t = r.truncated.expect("marked");
        assert!(t.output_messages_dropped);
        assert!(t.trace_events_dropped > 0);
        let kept = r.trace.expect("kept").len() as u64;
        assert_eq!(kept + t.trace_events_dropped, 5_000);
        assert!(r.output_messages.is_none());
    }

    #[test]
    fn a_secret_is_redacted_before_it_is_cut() {
        let secrets = Secrets::default();
        let secret = "sk-live-0123456789abcdef";
        secrets.add(secret);
        let mut r = record(1, 10);
        // The secret straddles the cut: its first half alone would not be recognised.
        let text = format!("{}{secret}{}", "a".repeat(8 * 1024 - 6), "b".repeat(300_000));
        r.trace.as_mut().expect("trace")[0].output = Some(Value::String(text));
        cap_trace(&mut r, MAX_TRACE_BYTES, &secrets);
        let json = serde_json::to_string(&r).expect("json");
        assert!(!json.contains("sk-live"), "a prefix of the secret survived");
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        let mut v = Value::String("é".repeat(10));
        cut_strings(&mut v, 5, &Secrets::default());
        assert_eq!(v, Value::String("éé…".into()));
    }
}
