//! The output-message model providers return and judges receive.
//!
//! Keys are snake_case on the wire. Only our own keys are named by us: message content, tool
//! inputs and outputs, metadata and tool names are user data and pass through untouched.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One message produced by the target (assistant turns, tool turns).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
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
}

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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool's name, exactly as the agent spelled it.
    #[serde(alias = "name")]
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Wall time of this call, when the agent reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
}

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
    fn last_assistant_text_skips_tool_only_turns() {
        let mut tool_turn = OutputMessage::assistant("");
        tool_turn.content = None;
        let msgs = vec![OutputMessage::assistant("first"), tool_turn];
        assert_eq!(last_assistant_text(&msgs).as_deref(), Some("first"));
    }
}
