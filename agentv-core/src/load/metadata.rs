//! A 4.x suite's `metadata` merged into each case's (`agentv-4.md` §1.9): lists concatenate
//! suite first without duplicates, mappings merge recursively, and for anything else the case's
//! value wins while the suite fills missing keys.

use serde_json::{Map, Value};

/// `case` merged over `suite`.
pub fn merge(suite: &Map<String, Value>, case: &Map<String, Value>) -> Map<String, Value> {
    let mut out = suite.clone();
    for (key, value) in case {
        let merged = match (out.get(key), value) {
            (Some(Value::Object(s)), Value::Object(c)) => Value::Object(merge(s, c)),
            (Some(Value::Array(s)), Value::Array(c)) => Value::Array(concat_unique(s, c)),
            _ => value.clone(),
        };
        out.insert(key.clone(), merged);
    }
    out
}

/// `suite` then `case`, each item once (strings by value, others by their JSON text).
fn concat_unique(suite: &[Value], case: &[Value]) -> Vec<Value> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for item in suite.iter().chain(case) {
        let key = match item {
            Value::String(s) => format!("s:{s}"),
            other => format!("j:{other}"),
        };
        if !seen.contains(&key) {
            seen.push(key);
            out.push(item.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn case_metadata_merges_over_the_suites() {
        let suite = map(json!({
            "suite_tag": "compat", "tags": ["suite", "shared"], "level": 1,
            "owner": {"team": "a", "ids": [1]}
        }));
        let case = map(json!({
            "tags": ["case", "shared"], "level": 2, "topic": "geo",
            "owner": {"ids": [1, 2], "lead": "b"}
        }));
        assert_eq!(
            Value::Object(merge(&suite, &case)),
            json!({
                "suite_tag": "compat", "tags": ["suite", "shared", "case"], "level": 2,
                "owner": {"team": "a", "ids": [1, 2], "lead": "b"}, "topic": "geo"
            })
        );
    }
}
