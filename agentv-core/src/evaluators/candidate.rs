//! What 4.x graders grade: the candidate text (reference §2.4) and, for graders that read it
//! as data, the candidate parsed leniently as JSON (§4.5).

use serde_json::Value;

use crate::model::OutputMessage;

/// The candidate: the content of the last assistant message that has content, as 4.x renders
/// it (`extractLastAssistantContent`): a string as it is; a list of content blocks (every item
/// an object whose `type` is `text`, `image` or `file`) as its text blocks joined by newlines;
/// anything else as JSON. Empty when no assistant message has content.
pub fn text(messages: &[OutputMessage]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m.role == "assistant" && m.content.is_some())
        .and_then(|m| m.content.as_ref())
        .map(content_text)
        .unwrap_or_default()
}

/// One message content as 4.x renders it for graders.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) if !blocks.is_empty() && blocks.iter().all(is_content_block) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .map(|b| b.get("text").map(super::js::string_of).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n"),
        other => super::js::stringify(other),
    }
}

fn is_content_block(v: &Value) -> bool {
    matches!(v.get("type").and_then(Value::as_str), Some("text" | "image" | "file"))
}

/// `parseJsonFromText` (reference §4.5): every ```` ```json ```` (with its newline) and
/// ```` ``` ```` removed, trimmed, then the text from the first `{` to the last `}` (the whole
/// text when there is none), `"passed": "true"` and bare words after `"passed":` made booleans
/// (unknown words `false`), parsed as JSON. Any JSON value, not only objects; `None` when it
/// does not parse.
///
/// This is not the SDK's `extract_json_object` (which finds the first complete object and
/// is shared with the Python and TypeScript SDKs): `{"a": {"b": 1}` is an error here, as in
/// 4.x, where that function finds `{"b": 1}`.
pub fn parse_lenient(text: &str) -> Option<Value> {
    let cleaned = text.replace("```json\n", "").replace("```json", "").replace("```", "");
    let cleaned = super::js::trim(&cleaned);
    let blob = match (cleaned.find('{'), cleaned.rfind('}')) {
        (Some(start), Some(end)) if start < end => &cleaned[start..=end],
        _ => cleaned,
    };
    serde_json::from_str(&repair_passed(blob)).ok()
}

/// `"passed": "TRUE"` → `"passed": true`, `"passed": maybe` → `"passed": false`: 4.x mends
/// judges that quote booleans. (Keys are matched ignoring case, as 4.x does.)
fn repair_passed(text: &str) -> std::borrow::Cow<'_, str> {
    static PASSED: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(?i)("passed"\s*:\s*)(?:"([^"]+)"|([A-Za-z_][A-Za-z0-9_-]*))"#).ok()
    });
    let Some(re) = PASSED.as_ref() else {
        return text.into();
    };
    re.replace_all(text, |c: &regex::Captures<'_>| {
        let word = c.get(2).or_else(|| c.get(3)).map_or("", |m| m.as_str());
        let value = if super::js::trim(word).eq_ignore_ascii_case("true") {
            "true"
        } else {
            "false"
        };
        format!("{}{value}", &c[1])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(role: &str, content: Option<Value>) -> OutputMessage {
        OutputMessage {
            role: role.into(),
            content,
            ..OutputMessage::default()
        }
    }

    #[test]
    fn candidate_is_the_last_assistant_content_rendered_as_4x_does() {
        let cases: Vec<(Vec<OutputMessage>, &str)> = vec![
            (vec![], ""),
            (vec![msg("user", Some(json!("q")))], ""),
            (
                vec![
                    msg("assistant", Some(json!("first"))),
                    msg("assistant", None),
                    msg("tool", Some(json!("t"))),
                ],
                "first",
            ),
            (vec![msg("assistant", Some(json!("")))], ""),
            (
                vec![msg(
                    "assistant",
                    Some(
                        json!([{"type": "text", "text": "a"}, {"type": "image", "source": "x"}, {"type": "text", "text": "b"}]),
                    ),
                )],
                "a\nb",
            ),
            // Not content blocks (no `type`): JSON.
            (
                vec![msg("assistant", Some(json!([{"text": "a"}])))],
                r#"[{"text":"a"}]"#,
            ),
            (vec![msg("assistant", Some(json!({"total": 5.0})))], r#"{"total":5}"#),
        ];
        for (messages, want) in cases {
            assert_eq!(text(&messages), want, "{messages:?}");
        }
    }

    #[test]
    fn lenient_json_strips_fences_and_takes_the_outermost_braces() {
        let cases = [
            ("```json\n{\"a\": 1}\n```", Some(json!({"a": 1}))),
            (
                "Here:\n```\n{\"a\": {\"b\": 2}}\n```\nDone.",
                Some(json!({"a": {"b": 2}})),
            ),
            ("The result is {\"a\": 1} and {\"b\": 2}", None),
            ("{\"a\": {\"b\": 1}", None),
            ("42", Some(json!(42))),
            ("  [1, 2] ", Some(json!([1, 2]))),
            (
                "{\"passed\": \"TRUE\", \"x\": \"passed\"}",
                Some(json!({"passed": true, "x": "passed"})),
            ),
            ("{\"passed\": maybe}", Some(json!({"passed": false}))),
            ("no json", None),
            ("", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_lenient(input), want, "{input:?}");
        }
    }
}
