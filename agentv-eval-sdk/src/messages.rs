//! The output-message model providers return and judges receive.
//!
//! Keys are snake_case on the wire. Only our own keys are named by us: message content, tool
//! inputs and outputs, metadata and tool names are user data and pass through untouched.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::TokenCounts;
use crate::wire::{Path, Reader, Wire, deserialize_from_wire};

/// One message of a transcript: what the target produced (assistant turns, tool turns), or in
/// the 4.x `messages` key the whole conversation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OutputMessage {
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A string, or any JSON value the provider produced (content parts, objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// When the turn started and ended (4.x agents report them), ISO 8601.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Tokens of this turn, when the provider reports them per message (4.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<TokenCounts>,
    /// Keys this type does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OutputMessage {
    /// An assistant message holding plain text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: "assistant".to_owned(),
            content: Some(Value::String(text.into())),
            ..Self::default()
        }
    }

    /// The message content as text: strings as-is, content-part arrays by their `text` parts,
    /// anything else as compact JSON. `None` when the message has no content.
    pub fn text(&self) -> Option<String> {
        self.content.as_ref().map(content_text)
    }

    pub(crate) fn from_wire(value: Value, path: Path<'_>) -> Wire<Self> {
        let mut r = Reader::new(value, path)?;
        Ok(Self {
            role: r.required_string("role", None)?,
            name: r.opt_string("name")?,
            content: r.value("content"),
            tool_calls: r.list("tool_calls", ToolCall::from_wire)?,
            id: r.opt_string("id")?,
            timestamp: r.opt_string("timestamp")?,
            start_time: r.opt_string("start_time")?,
            end_time: r.opt_string("end_time")?,
            duration_ms: r.opt_number("duration_ms")?,
            metadata: r.opt_object("metadata")?,
            token_usage: r.nested("token_usage", TokenCounts::from_wire)?,
            extra: r.extra(),
        })
    }
}

deserialize_from_wire!(OutputMessage);

/// Renders message content as text (see [`OutputMessage::text`]).
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) if parts.iter().all(|p| p.get("text").is_some_and(Value::is_string)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// One tool invocation inside an output message.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolCall {
    /// The tool's name, exactly as the agent spelled it (`name` is accepted on the wire).
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    /// Wall time of this call, when the agent reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// How the call ended, as the agent reports it (`ok`, `error`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Keys this type does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolCall {
    pub(crate) fn from_wire(value: Value, path: Path<'_>) -> Wire<Self> {
        let mut r = Reader::new(value, path)?;
        Ok(Self {
            tool: r.required_string("tool", Some("name"))?,
            input: r.value("input"),
            output: r.value("output"),
            id: r.opt_string("id")?,
            timestamp: r.opt_string("timestamp")?,
            start_time: r.opt_string("start_time")?,
            end_time: r.opt_string("end_time")?,
            duration_ms: r.opt_number("duration_ms")?,
            status: r.opt_string("status")?,
            extra: r.extra(),
        })
    }
}

deserialize_from_wire!(ToolCall);

/// Returns the text of the last assistant message, the candidate answer graders see.
pub fn last_assistant_text(messages: &[OutputMessage]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find(|m| m.role == "assistant" && m.content.is_some())
        .and_then(OutputMessage::text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_text_renders_each_shape() {
        let cases = [
            (json!("plain"), "plain"),
            (
                json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
                "a\nb",
            ),
            (json!({"answer": 4}), r#"{"answer":4}"#),
        ];
        for (content, want) in cases {
            assert_eq!(content_text(&content), want, "{content}");
        }
    }

    #[test]
    fn wire_keys_are_snake_case_and_user_keys_untouched() {
        let msg: OutputMessage = serde_json::from_value(json!({
            "role": "assistant",
            "tool_calls": [{"tool": "searchDocs", "input": {"queryText": "x"}, "id": "call_1",
                            "timestamp": "2025-01-01T00:00:00Z"}],
            "metadata": {"latencyMs": 150}
        }))
        .expect("valid message");
        assert_eq!(msg.tool_calls[0].tool, "searchDocs");
        assert_eq!(msg.tool_calls[0].id.as_deref(), Some("call_1"));
        let back = serde_json::to_value(&msg).expect("serializes");
        assert_eq!(back["tool_calls"][0]["input"]["queryText"], "x");
        assert_eq!(back["metadata"]["latencyMs"], 150);
        assert!(back.get("content").is_none(), "absent values are omitted");
    }

    #[test]
    fn unknown_keys_survive_a_round_trip() {
        let wire = json!({
            "role": "assistant",
            "content": "a",
            "reasoning_content": "r",
            "tool_calls": [{"name": "t", "new_field": 1, "status": "ok"}],
            "token_usage": {"input": 1, "output": 2, "reasoning": 3}
        });
        let msg: OutputMessage = serde_json::from_value(wire).expect("valid message");
        assert_eq!(msg.extra["reasoning_content"], "r");
        assert_eq!(msg.tool_calls[0].tool, "t", "`name` is read as `tool`");
        assert_eq!(msg.tool_calls[0].extra["new_field"], 1);
        assert_eq!(msg.token_usage.as_ref().and_then(|u| u.reasoning), Some(3));
        let back = serde_json::to_value(&msg).expect("serializes");
        assert_eq!(back["reasoning_content"], "r");
        assert_eq!(
            back["tool_calls"][0],
            json!({"tool": "t", "status": "ok", "new_field": 1})
        );
    }

    #[test]
    fn null_optional_keys_read_as_absent() {
        let msg: OutputMessage = serde_json::from_value(json!({
            "role": "assistant", "name": null, "content": null, "tool_calls": null, "metadata": null
        }))
        .expect("nulls are absent");
        assert_eq!(
            msg,
            OutputMessage {
                role: "assistant".into(),
                ..OutputMessage::default()
            }
        );
    }

    #[test]
    fn last_assistant_text_skips_tool_only_turns() {
        let mut tool_turn = OutputMessage::assistant("");
        tool_turn.content = None;
        let msgs = vec![OutputMessage::assistant("first"), tool_turn];
        assert_eq!(last_assistant_text(&msgs).as_deref(), Some("first"));
    }
}
