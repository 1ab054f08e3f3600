//! Finding the JSON object in a model's reply.

use serde_json::{Map, Value};

/// The first JSON object in a model reply: the whole reply when it is an object, else the
/// first `{` from which a complete object parses — so objects in prose or in ```` ```json ````
/// fences are found, and a `{` that starts nothing valid is skipped. `None` when there is
/// none. (NaN, infinities and overflowing numbers are not JSON.)
///
/// agentv reads LLM judge replies with this function; the Python and TypeScript SDKs mirror
/// it, and sdk/conformance/cases/extract_json.json pins what they all agree on.
///
/// ```
/// use agentv_eval_sdk::extract_json_object;
///
/// let reply = "Sure!\n```json\n{\"score\": 0.9, \"reason\": \"names Paris\"}\n```";
/// let verdict = extract_json_object(reply).expect("an object");
/// assert_eq!(verdict["score"], 0.9);
/// assert!(extract_json_object("no json here").is_none());
/// ```
pub fn extract_json_object(text: &str) -> Option<Map<String, Value>> {
    let trimmed = text.trim();
    if let Ok(Value::Object(whole)) = serde_json::from_str(trimmed) {
        return Some(whole);
    }
    trimmed.match_indices('{').find_map(|(start, _)| {
        let mut values = serde_json::Deserializer::from_str(&trimmed[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(Value::Object(found))) => Some(found),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_first_complete_object() {
        let cases = [
            ("{\"score\": 0.5}", Some(json!({"score": 0.5}))),
            ("first {not json} then {\"score\": 0.2}", Some(json!({"score": 0.2}))),
            ("{\"a\": {\"b\": 1}", Some(json!({"b": 1}))),
            ("[{\"a\": 1}, {\"a\": 2}]", Some(json!({"a": 1}))),
            ("{\"score\": NaN} {\"score\": 0.1}", Some(json!({"score": 0.1}))),
            ("{\"score\": 1e400}", None),
            ("{\"score\": 1", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(extract_json_object(text).map(Value::Object), want, "{text}");
        }
    }

    #[test]
    fn deep_nesting_is_not_a_crash() {
        let deep = format!("{}{}", "{\"a\":".repeat(2_000), "1");
        assert_eq!(extract_json_object(&deep), None);
    }
}
