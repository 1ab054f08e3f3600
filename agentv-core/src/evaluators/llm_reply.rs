//! Reading a 4.x LLM grader's reply (reference §4.5): the text to JSON, the free-form schema,
//! and the three attempts plus one structure-repair call before a grader gives up.

use std::sync::LazyLock;

use agentv_eval_sdk::Assertion;
use regex::Regex;
use serde_json::{Map, Value};

use crate::providers::{Provider, ProviderRequest};

/// Assertions kept from a free-form reply.
pub const MAX_ASSERTIONS: usize = 8;

static FENCE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"```json\n?|```").expect("static regex"));
static BLOB: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?s)\{.*\}").expect("static regex"));
static PASSED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)("passed"\s*:\s*)(?:"([^"]+)"|([A-Za-z_][A-Za-z0-9_-]*))"#).expect("static regex")
});

/// The JSON value in a grader's reply, read as AgentV 4.x reads it: every ```` ```json ```` and
/// ```` ``` ```` removed, the text from the first `{` to the last `}` (else all of it), and
/// `"passed": "true"` or a bare word coerced to a boolean (words other than true are false).
pub fn parse_json_from_text(text: &str) -> Result<Value, String> {
    let cleaned = FENCE.replace_all(text, "");
    let cleaned = cleaned.trim();
    let blob = BLOB.find(cleaned).map_or(cleaned, |m| m.as_str());
    let repaired = PASSED.replace_all(blob, |cap: &regex::Captures<'_>| {
        let word = cap.get(2).or_else(|| cap.get(3)).map_or("", |m| m.as_str());
        let value = if word.trim().eq_ignore_ascii_case("true") {
            "true"
        } else {
            "false"
        };
        format!("{}{value}", &cap[1])
    });
    serde_json::from_str(&repaired).map_err(|e| format!("the reply is not valid JSON: {e}"))
}

/// The JSON type of `value`, for messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The reply as an object.
pub fn object(value: &Value) -> Result<&Map<String, Value>, String> {
    value
        .as_object()
        .ok_or_else(|| format!("expected a JSON object, got {}", kind(value)))
}

/// A free-form reply (reference §4.2): `{score, assertions?, details?}`, other keys ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct FreeformReply {
    pub score: f64,
    /// The first [`MAX_ASSERTIONS`].
    pub assertions: Vec<Assertion>,
    pub details: Option<Map<String, Value>>,
}

/// Checks `value` against the free-form schema: a score in [0, 1] (out of range is an error,
/// not clamped), assertions `{text: string, passed: boolean, evidence?: string}`, details an
/// object. A key that is present must have its type (`null` included).
pub fn freeform(value: &Value) -> Result<FreeformReply, String> {
    let obj = object(value)?;
    let score = match obj.get("score") {
        None => return Err("`score` is missing".to_owned()),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(other) => return Err(format!("`score` must be a number, got {}", kind(other))),
    };
    if !(0.0..=1.0).contains(&score) {
        return Err(format!("`score` must be between 0 and 1, got {score}"));
    }
    let assertions = match obj.get("assertions") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| assertion(item).map_err(|e| format!("`assertions[{i}]`: {e}")))
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => return Err(format!("`assertions` must be a list, got {}", kind(other))),
    };
    let details = match obj.get("details") {
        None => None,
        Some(Value::Object(d)) => Some(d.clone()),
        Some(other) => return Err(format!("`details` must be an object, got {}", kind(other))),
    };
    Ok(FreeformReply {
        score,
        assertions: assertions.into_iter().take(MAX_ASSERTIONS).collect(),
        details,
    })
}

fn assertion(item: &Value) -> Result<Assertion, String> {
    let obj = object(item)?;
    let text = match obj.get("text") {
        Some(Value::String(t)) => t.clone(),
        Some(other) => return Err(format!("`text` must be a string, got {}", kind(other))),
        None => return Err("`text` is missing".to_owned()),
    };
    let passed = match obj.get("passed") {
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("`passed` must be a boolean, got {}", kind(other))),
        None => return Err("`passed` is missing".to_owned()),
    };
    let evidence = match obj.get("evidence") {
        None => None,
        Some(Value::String(e)) => Some(e.clone()),
        Some(other) => return Err(format!("`evidence` must be a string, got {}", kind(other))),
    };
    Ok(Assertion { text, passed, evidence })
}

/// The user prompt of the structure-repair call (reference §4.5), byte for byte.
pub fn repair_prompt(error: &str, invalid: &str) -> String {
    format!(
        "The following evaluation response has useful grading content but invalid JSON structure.\n\
         Repair it to satisfy the schema in the system prompt.\n\
         Preserve the evaluation meaning, do not re-grade the answer, and return only a single JSON object.\n\n\
         Validation error:\n{error}\n\nInvalid response:\n{invalid}"
    )
}

/// Attempts at a parsable reply before the structure-repair call.
pub const ATTEMPTS: usize = 3;

/// Asks `provider` until `parse` accepts the reply (reference §4.5): up to [`ATTEMPTS`]
/// attempts (a provider error counts as one), then, when a non-empty reply failed to parse, one
/// call asking the grader to repair it. `Err` holds the message AgentV 4.x records.
pub async fn ask<T>(
    provider: &dyn Provider,
    request: &ProviderRequest,
    parse: impl Fn(&Value) -> Result<T, String>,
) -> Result<T, String> {
    let read = |text: &str| parse_json_from_text(text).and_then(|v| parse(&v));
    let mut last_error = String::new();
    let mut last_invalid: Option<String> = None;
    let mut repairable = false;
    for _ in 0..ATTEMPTS {
        match provider.invoke(request).await {
            Err(e) => last_error = e.to_string(),
            Ok(response) => {
                let text = agentv_eval_sdk::last_assistant_text(&response.output_messages).unwrap_or_default();
                let can_repair = !text.trim().is_empty();
                match read(&text) {
                    Ok(parsed) => return Ok(parsed),
                    Err(e) => {
                        last_error = e;
                        repairable = can_repair;
                    }
                }
                last_invalid = can_repair.then_some(text);
            }
        }
    }
    if let (true, Some(invalid)) = (repairable, &last_invalid) {
        let repair = ProviderRequest {
            question: repair_prompt(&last_error, invalid),
            ..request.clone()
        };
        match provider.invoke(&repair).await {
            Err(e) => last_error = e.to_string(),
            Ok(response) => {
                let text = agentv_eval_sdk::last_assistant_text(&response.output_messages).unwrap_or_default();
                match read(&text) {
                    Ok(parsed) => return Ok(parsed),
                    Err(e) => last_error = e,
                }
            }
        }
    }
    Err(format!(
        "Failed to parse evaluator response after {ATTEMPTS} attempts and 1 structure-fix attempt: {last_error}"
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn replies_are_read_as_agentv_4_reads_them() {
        let cases: &[(&str, Result<Value, &str>)] = &[
            (r#"{"score": 0.5}"#, Ok(json!({"score": 0.5}))),
            (
                "Sure:\n```json\n{\"score\": 1, \"details\": {\"a\": {}}}\n```\nDone.",
                Ok(json!({"score": 1, "details": {"a": {}}})),
            ),
            // first `{` to last `}`: prose between two objects breaks the blob
            ("{\"a\": 1} and {\"b\": 2}", Err("the reply is not valid JSON")),
            (
                r#"{"assertions": [{"text": "t", "passed": "true"}, {"text": "u", "PASSED": "yes"}, {"text": "v", "passed": maybe}]}"#,
                Ok(
                    json!({"assertions": [{"text": "t", "passed": true}, {"text": "u", "PASSED": false}, {"text": "v", "passed": false}]}),
                ),
            ),
            (r#"{"passed": True}"#, Ok(json!({"passed": true}))),
            ("no json at all", Err("the reply is not valid JSON")),
            ("", Err("the reply is not valid JSON")),
            ("[1, 2]", Ok(json!([1, 2]))),
        ];
        for (text, want) in cases {
            let got = parse_json_from_text(text);
            match (want, &got) {
                (Ok(v), Ok(g)) => assert_eq!(g, v, "{text}"),
                (Err(prefix), Err(e)) => assert!(e.starts_with(prefix), "{text}: {e}"),
                _ => panic!("{text}: got {got:?}"),
            }
        }
    }

    #[test]
    fn the_freeform_schema_is_checked_not_clamped() {
        let ok = freeform(&json!({
            "score": 0.75,
            "assertions": (0..10).map(|i| json!({"text": format!("a{i}"), "passed": i % 2 == 0})).collect::<Vec<_>>(),
            "details": {"k": 1},
            "hits": ["ignored"],
        }))
        .expect("valid");
        assert_eq!(ok.score, 0.75);
        assert_eq!(ok.assertions.len(), MAX_ASSERTIONS, "only the first 8");
        assert_eq!(ok.details, json!({"k": 1}).as_object().cloned());
        let rejected = [
            (json!({"score": 1.5}), "`score` must be between 0 and 1, got 1.5"),
            (json!({"score": -0.1}), "`score` must be between 0 and 1, got -0.1"),
            (json!({"score": "0.5"}), "`score` must be a number, got a string"),
            (json!({"hits": []}), "`score` is missing"),
            (
                json!({"score": 1, "details": null}),
                "`details` must be an object, got null",
            ),
            (
                json!({"score": 1, "assertions": [{"text": "t"}]}),
                "`assertions[0]`: `passed` is missing",
            ),
            (
                json!({"score": 1, "assertions": [{"text": "t", "passed": true, "evidence": 3}]}),
                "`assertions[0]`: `evidence` must be a string, got a number",
            ),
            (json!([1]), "expected a JSON object, got an array"),
        ];
        for (value, want) in rejected {
            assert_eq!(freeform(&value).map(|_| ()), Err(want.to_owned()), "{value}");
        }
    }

    #[test]
    fn the_repair_prompt_is_4x_byte_for_byte() {
        assert_eq!(
            repair_prompt("E", "I"),
            "The following evaluation response has useful grading content but invalid JSON structure.\nRepair it to satisfy the schema in the system prompt.\nPreserve the evaluation meaning, do not re-grade the answer, and return only a single JSON object.\n\nValidation error:\nE\n\nInvalid response:\nI"
        );
    }
}
