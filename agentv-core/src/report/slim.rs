//! A record's figures without its text: the keys that identify, score and count a record,
//! parsed straight from the stream while every other value is skipped unread. `compare`,
//! `merge`, `--resume` and the last-record rule need no more, so they read a line of any size
//! in a few hundred bytes (`docs/results.md#memory`).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Which parts of a JSON value to keep.
#[derive(Debug, Clone, Copy)]
pub enum Keep {
    /// The whole value.
    All,
    /// A scalar; a string is cut to [`SHORT`] bytes (enough to tell that it is there).
    Short,
    /// An object's listed keys, each as its own `Keep` says; anything else is left out.
    Keys(&'static [(&'static str, Keep)]),
    /// Each item of an array, as the `Keep` says.
    Each(&'static Keep),
}

/// The longest string [`Keep::Short`] keeps.
pub const SHORT: usize = 1024;

/// A grader's figures, in both spellings (`evaluator_results[]`, 4.x `scores[]`).
const GRADER: Keep = Keep::Keys(&[
    ("name", Keep::Short),
    ("type", Keep::Short),
    ("score", Keep::All),
    ("weight", Keep::All),
    ("verdict", Keep::Short),
    ("error", Keep::Short),
]);

/// What every slim reader needs of a record, in every generation.
pub const RECORD: Keep = Keep::Keys(&[
    ("timestamp", Keep::Short),
    ("end_time", Keep::Short),
    ("eval_id", Keep::All),
    ("test_id", Keep::All),
    ("dataset", Keep::All),
    ("suite", Keep::All),
    ("conversation_id", Keep::Short),
    ("target", Keep::All),
    ("attempt", Keep::All),
    ("trial", Keep::All),
    ("execution_status", Keep::Short),
    ("failure_stage", Keep::Short),
    ("failure_reason_code", Keep::Short),
    ("score", Keep::All),
    ("verdict", Keep::Short),
    ("error", Keep::Short),
    ("execution_metrics", Keep::All),
    ("trace_summary", Keep::All),
    ("token_usage", Keep::All),
    ("cost_usd", Keep::All),
    ("duration_ms", Keep::All),
    ("evaluator_results", Keep::Each(&GRADER)),
    ("scores", Keep::Each(&GRADER)),
]);

/// A JSON value read as `keep` says.
#[derive(Debug, Clone, Copy)]
pub struct Pruned(pub &'static Keep);

/// What a line held at its top level: an object (pruned), or the kind of value it was.
#[derive(Debug)]
pub enum Top {
    Object(Map<String, Value>),
    Other(&'static str),
}

impl<'de> DeserializeSeed<'de> for Pruned {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        match self.0 {
            Keep::All => serde::Deserialize::deserialize(deserializer),
            Keep::Short => deserializer.deserialize_any(ShortVisitor),
            keep => deserializer
                .deserialize_any(PrunedVisitor(keep))
                .map(|kept| kept.unwrap_or(Value::Null)),
        }
    }
}

/// The top of a line: an object pruned by `keep`, or what else it was.
pub struct TopSeed(pub &'static Keep);

impl<'de> DeserializeSeed<'de> for TopSeed {
    type Value = Top;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Top, D::Error> {
        Ok(match deserializer.deserialize_any(PrunedVisitor(self.0))? {
            Ok(Value::Object(map)) => Top::Object(map),
            Ok(_) => Top::Other("an array"),
            Err(kind) => Top::Other(kind),
        })
    }
}

/// Builds a pruned object (or array, for [`Keep::Each`]); any other value is consumed and
/// named (`Err`).
struct PrunedVisitor(&'static Keep);

type Kept = Result<Value, &'static str>;

impl<'de> Visitor<'de> for PrunedVisitor {
    type Value = Kept;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kept, A::Error> {
        let Keep::Keys(keys) = self.0 else {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(Err("an object"));
        };
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match keys.iter().find(|(name, _)| *name == key) {
                Some((_, keep)) => {
                    let value = map.next_value_seed(Pruned(keep))?;
                    out.insert(key, value);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Ok(Value::Object(out)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kept, A::Error> {
        let Keep::Each(item) = self.0 else {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(Err("an array"));
        };
        let mut items = Vec::new();
        while let Some(value) = seq.next_element_seed(Pruned(item))? {
            items.push(value);
        }
        Ok(Ok(Value::Array(items)))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Kept, E> {
        Ok(Err("a boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Kept, E> {
        Ok(Err("a number"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Kept, E> {
        Ok(Err("a number"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Kept, E> {
        Ok(Err("a number"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Kept, E> {
        Ok(Err("a string"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Kept, E> {
        Ok(Err("null"))
    }
}

/// A scalar, with a string cut to [`SHORT`] bytes; anything else is skipped (null).
struct ShortVisitor;

impl<'de> Visitor<'de> for ShortVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        let mut end = v.len().min(SHORT);
        while !v.is_char_boundary(end) {
            end -= 1;
        }
        Ok(Value::String(v[..end].to_owned()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slim(text: &str) -> Top {
        let mut de = serde_json::Deserializer::from_str(text);
        TopSeed(&RECORD).deserialize(&mut de).expect("parses")
    }

    #[test]
    fn only_the_figures_are_kept_and_long_text_is_cut() {
        let long = "é".repeat(SHORT);
        let text = serde_json::json!({
            "eval_id": "a", "score": 0.5, "hits": ["x", "y", "z"], "candidate_answer": "answer",
            "error": long, "trace": [{"type": "message"}],
            "evaluator_results": [{"name": "kw", "score": 1, "hits": ["y"], "details": {"a": 1}}],
            "scores": "not a list",
        })
        .to_string();
        let Top::Object(map) = slim(&text) else {
            panic!("an object")
        };
        let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["error", "eval_id", "evaluator_results", "score", "scores"]);
        assert_eq!(
            map["evaluator_results"],
            serde_json::json!([{"name": "kw", "score": 1}])
        );
        assert!(map["error"].as_str().expect("text").len() <= SHORT);
        assert_eq!(map["scores"], Value::Null, "a list of the wrong type is dropped");
    }

    #[test]
    fn a_line_that_is_not_an_object_is_named() {
        for (text, kind) in [
            ("[1, 2]", "an array"),
            ("3", "a number"),
            ("\"x\"", "a string"),
            ("null", "null"),
        ] {
            assert!(matches!(slim(text), Top::Other(k) if k == kind), "{text}");
        }
    }
}
