//! Reads an answer written by a command or configured for a mock.
//!
//! The text is either a JSON object `{text?, output_messages?, token_usage?, cost_usd?,
//! duration_ms?, trace?, trace_ref?}` (AgentV 4.x writes `output` for `output_messages`) or
//! anything else, which becomes one assistant message.

use serde::Deserialize;
use serde_json::Value;

use super::ProviderResponse;
use crate::model::{OutputMessage, TokenUsage, TraceEvent};

/// Keys are snake_case; the camelCase spellings some agents write are accepted too.
#[derive(Deserialize)]
struct Structured {
    #[serde(default)]
    text: Option<Value>,
    #[serde(default, alias = "outputMessages", alias = "output")]
    output_messages: Option<Vec<OutputMessage>>,
    #[serde(default, alias = "tokenUsage")]
    token_usage: Option<Value>,
    #[serde(default, alias = "costUsd")]
    cost_usd: Option<Value>,
    #[serde(default, alias = "durationMs")]
    duration_ms: Option<Value>,
    #[serde(default)]
    trace: Option<Vec<TraceEvent>>,
    #[serde(default, alias = "traceRef")]
    trace_ref: Option<String>,
}

const STRUCTURED_KEYS: &[&str] = &[
    "text",
    "output_messages",
    "outputMessages",
    "output",
    "token_usage",
    "tokenUsage",
    "cost_usd",
    "costUsd",
    "duration_ms",
    "durationMs",
    "trace",
    "trace_ref",
    "traceRef",
];

/// Parses an answer. Malformed metrics are dropped with a warning, never a failure.
pub fn parse_answer(text: &str) -> ProviderResponse {
    let trimmed = text.trim();
    let value: Option<Value> = if trimmed.starts_with('{') {
        serde_json::from_str(trimmed).ok()
    } else {
        None
    };
    let is_structured = value
        .as_ref()
        .and_then(Value::as_object)
        .is_some_and(|o| STRUCTURED_KEYS.iter().any(|k| o.contains_key(*k)));
    let Some(value) = value.filter(|_| is_structured) else {
        return ProviderResponse::text(text.trim_end_matches('\n'));
    };
    match serde_json::from_value::<Structured>(value.clone()) {
        Ok(s) => from_structured(s, value),
        Err(e) => {
            let mut response = ProviderResponse::text(trimmed);
            response.warnings.push(format!(
                "answer looks structured but is not valid: {e}; used as plain text"
            ));
            response
        }
    }
}

fn from_structured(s: Structured, raw: Value) -> ProviderResponse {
    let mut warnings = Vec::new();
    let output_messages = match (s.output_messages, s.text) {
        (Some(messages), _) if !messages.is_empty() => messages,
        (_, Some(Value::String(t))) => vec![OutputMessage::assistant(t)],
        (_, Some(other)) => vec![OutputMessage::assistant(other.to_string())],
        (_, None) => Vec::new(),
    };
    let token_usage = s.token_usage.and_then(|v| token_usage(&v, &mut warnings));
    ProviderResponse {
        output_messages,
        trace: s.trace,
        trace_ref: s.trace_ref.map(Into::into),
        token_usage,
        cost_usd: s.cost_usd.and_then(|v| non_negative("cost_usd", &v, &mut warnings)),
        duration_ms: s
            .duration_ms
            .and_then(|v| non_negative("duration_ms", &v, &mut warnings)),
        raw: Some(raw),
        metadata: None,
        warnings,
        ..ProviderResponse::default()
    }
}

/// A metric value if it is a finite number ≥ 0; otherwise a warning.
pub(crate) fn non_negative(name: &str, value: &Value, warnings: &mut Vec<String>) -> Option<f64> {
    match value.as_f64() {
        Some(v) if v.is_finite() && v >= 0.0 => Some(v),
        _ => {
            warnings.push(format!("ignored invalid {name} {value}: metrics must be numbers ≥ 0"));
            None
        }
    }
}

fn token_usage(value: &Value, warnings: &mut Vec<String>) -> Option<TokenUsage> {
    let count = |key: &str, warnings: &mut Vec<String>| -> Option<Option<u64>> {
        match value.get(key) {
            None | Some(Value::Null) => Some(None),
            Some(v) => match v.as_u64() {
                Some(n) => Some(Some(n)),
                None => {
                    warnings.push(format!(
                        "ignored invalid token_usage.{key} {v}: token counts must be whole numbers ≥ 0"
                    ));
                    None
                }
            },
        }
    };
    let input = count("input", warnings)?;
    let output = count("output", warnings)?;
    let cached = count("cached", warnings)?;
    match (input, output) {
        (Some(input), Some(output)) => Some(TokenUsage { input, output, cached }),
        _ => {
            warnings.push("ignored token_usage: `input` and `output` are required".to_owned());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_and_unrelated_json_are_one_message() {
        for text in ["hello\n", r#"{"answer": 42}"#, "[1, 2]"] {
            let r = parse_answer(text);
            assert_eq!(r.output_messages.len(), 1, "{text}");
            assert_eq!(
                r.output_messages[0].text().as_deref(),
                Some(text.trim_end_matches('\n'))
            );
            assert!(r.token_usage.is_none());
        }
    }

    #[test]
    fn structured_answer_keeps_messages_and_metrics() {
        let r = parse_answer(
            r#"{"output_messages": [{"role": "assistant", "content": "done",
                 "tool_calls": [{"tool": "Read", "input": {"path": "a"}}]}],
                "token_usage": {"input": 10, "output": 5, "cached": 2}, "cost_usd": 0.01, "duration_ms": 1200}"#,
        );
        assert_eq!(r.output_messages[0].tool_calls[0].tool, "Read");
        assert_eq!(
            r.token_usage,
            Some(TokenUsage {
                input: 10,
                output: 5,
                cached: Some(2)
            })
        );
        assert_eq!(r.cost_usd, Some(0.01));
        assert_eq!(r.duration_ms, Some(1200.0));
        assert!(r.warnings.is_empty());
    }

    /// AgentV 4.x's CLI output file (`agentv-4.md` §5.5) names the messages `output`.
    #[test]
    fn agentv_4_output_key_holds_the_messages() {
        let r = parse_answer(
            r#"{"output": [{"role": "assistant", "tool_calls": [{"tool": "Read", "input": {"path": "a"}}]},
                           {"role": "assistant", "content": "done"}], "duration_ms": 5}"#,
        );
        assert_eq!(r.output_messages.len(), 2);
        assert_eq!(r.output_messages[0].tool_calls[0].tool, "Read");
        assert_eq!(r.output_messages[1].text().as_deref(), Some("done"));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn negative_or_malformed_metrics_are_dropped_with_warnings() {
        let r = parse_answer(
            r#"{"text": "ok", "cost_usd": -1, "duration_ms": "fast", "token_usage": {"input": -3, "output": 1}}"#,
        );
        assert_eq!(r.output_messages[0].text().as_deref(), Some("ok"));
        assert_eq!((r.cost_usd, r.duration_ms, r.token_usage), (None, None, None));
        assert_eq!(r.warnings.len(), 3, "{:?}", r.warnings);
    }
}
