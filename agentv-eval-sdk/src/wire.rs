//! Reading wire objects by hand, so errors name the key's path and say what was expected.
//!
//! Every SDK reads the payload the same way (sdk/conformance pins it): JSON `null` counts as
//! absent, absent keys read as empty values, a key of the wrong type is an error naming its
//! path (``output_messages[1].tool_calls[0].tool``), and the keys a type does not know are
//! kept in its `extra` map. serde's derived `Deserialize` can do none of the three, so the
//! types that appear in the payload deserialize through [`Reader`].

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

/// Where a value sits inside the object being read, built without allocating.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Root => Ok(()),
            Self::Key(Self::Root, key) => f.write_str(key),
            Self::Key(parent, key) => write!(f, "{parent}.{key}"),
            Self::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// A value of the wrong shape at `path` (empty at the top).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct WireError {
    /// Keys and indexes from the object being read, e.g. `output_messages[1].role`.
    pub path: String,
    /// What was wrong, e.g. `expected a string, got a number`.
    pub message: String,
}

impl WireError {
    pub(crate) fn at(path: Path<'_>, message: impl Into<String>) -> Self {
        Self {
            path: path.to_string(),
            message: message.into(),
        }
    }

    fn render(&self) -> String {
        if self.path.is_empty() {
            self.message.clone()
        } else {
            format!("`{}`: {}", self.path, self.message)
        }
    }
}

pub(crate) type Wire<T> = Result<T, WireError>;

/// How a JSON value is named in messages: `a string`, `an array`, `null`.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn expected(path: Path<'_>, want: &str, got: &Value) -> WireError {
    WireError::at(path, format!("expected {want}, got {}", kind(got)))
}

/// Takes the known keys out of one object; what is left over is the type's `extra`.
pub(crate) struct Reader<'a> {
    rest: Map<String, Value>,
    path: Path<'a>,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(value: Value, path: Path<'a>) -> Wire<Self> {
        match value {
            Value::Object(rest) => Ok(Self { rest, path }),
            other => Err(expected(path, "an object", &other)),
        }
    }

    /// The value of `key`; `None` when it is absent or null.
    pub(crate) fn value(&mut self, key: &str) -> Option<Value> {
        self.rest.remove(key).filter(|v| !v.is_null())
    }

    pub(crate) fn opt_string(&mut self, key: &str) -> Wire<Option<String>> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(expected(Path::Key(&self.path, key), "a string", &other)),
        }
    }

    /// A string, `""` when absent.
    pub(crate) fn string(&mut self, key: &str) -> Wire<String> {
        Ok(self.opt_string(key)?.unwrap_or_default())
    }

    /// A string that must be there (under `key`, else under `alias`).
    pub(crate) fn required_string(&mut self, key: &str, alias: Option<&str>) -> Wire<String> {
        if let Some(found) = self.opt_string(key)? {
            return Ok(found);
        }
        if let Some(found) = alias.map(|a| self.opt_string(a)).transpose()?.flatten() {
            return Ok(found);
        }
        Err(WireError::at(Path::Key(&self.path, key), "required string is missing"))
    }

    pub(crate) fn opt_count(&mut self, key: &str) -> Wire<Option<u64>> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => count(&v, Path::Key(&self.path, key)).map(Some),
        }
    }

    /// A non-negative integer, 0 when absent.
    pub(crate) fn count(&mut self, key: &str) -> Wire<u64> {
        Ok(self.opt_count(key)?.unwrap_or(0))
    }

    pub(crate) fn opt_usize(&mut self, key: &str) -> Wire<Option<usize>> {
        let parent = self.path;
        let path = Path::Key(&parent, key);
        self.opt_count(key)?
            .map(|n| usize::try_from(n).map_err(|_| WireError::at(path, format!("{n} is too large"))))
            .transpose()
    }

    pub(crate) fn usize(&mut self, key: &str) -> Wire<usize> {
        Ok(self.opt_usize(key)?.unwrap_or(0))
    }

    pub(crate) fn opt_number(&mut self, key: &str) -> Wire<Option<f64>> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => number(&v, Path::Key(&self.path, key)).map(Some),
        }
    }

    /// An array, empty when absent.
    pub(crate) fn array(&mut self, key: &str) -> Wire<Vec<Value>> {
        match self.value(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(expected(Path::Key(&self.path, key), "an array", &other)),
        }
    }

    pub(crate) fn strings(&mut self, key: &str) -> Wire<Vec<String>> {
        self.list(key, |value, path| match value {
            Value::String(s) => Ok(s),
            other => Err(expected(path, "a string", &other)),
        })
    }

    pub(crate) fn opt_object(&mut self, key: &str) -> Wire<Option<Map<String, Value>>> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(other) => Err(expected(Path::Key(&self.path, key), "an object", &other)),
        }
    }

    /// An object, empty when absent.
    pub(crate) fn object(&mut self, key: &str) -> Wire<Map<String, Value>> {
        Ok(self.opt_object(key)?.unwrap_or_default())
    }

    /// `{name: count}`, e.g. calls per tool; absent when the key is.
    pub(crate) fn opt_counts(&mut self, key: &str) -> Wire<Option<BTreeMap<String, usize>>> {
        let parent = self.path;
        let path = Path::Key(&parent, key);
        let Some(map) = self.opt_object(key)? else {
            return Ok(None);
        };
        map.into_iter()
            .map(|(name, v)| {
                let at = Path::Key(&path, &name);
                let n = count(&v, at)?;
                let n = usize::try_from(n).map_err(|_| WireError::at(at, format!("{n} is too large")))?;
                Ok((name, n))
            })
            .collect::<Wire<_>>()
            .map(Some)
    }

    pub(crate) fn counts(&mut self, key: &str) -> Wire<BTreeMap<String, usize>> {
        Ok(self.opt_counts(key)?.unwrap_or_default())
    }

    /// `{name: [ms, …]}`, e.g. durations per tool; absent when the key is.
    pub(crate) fn opt_durations(&mut self, key: &str) -> Wire<Option<BTreeMap<String, Vec<f64>>>> {
        let parent = self.path;
        let path = Path::Key(&parent, key);
        let Some(map) = self.opt_object(key)? else {
            return Ok(None);
        };
        map.into_iter()
            .map(|(name, v)| {
                let at = Path::Key(&path, &name);
                let Value::Array(items) = v else {
                    return Err(expected(at, "an array", &v));
                };
                let numbers = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| number(item, Path::Index(&at, i)))
                    .collect::<Wire<Vec<f64>>>()?;
                Ok((name, numbers))
            })
            .collect::<Wire<_>>()
            .map(Some)
    }

    /// A nested object read by `read`; `None` when absent.
    pub(crate) fn nested<T>(&mut self, key: &str, read: fn(Value, Path<'_>) -> Wire<T>) -> Wire<Option<T>> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => read(v, Path::Key(&self.path, key)).map(Some),
        }
    }

    /// An array whose items are read by `read`; empty when absent.
    pub(crate) fn list<T>(&mut self, key: &str, read: impl Fn(Value, Path<'_>) -> Wire<T>) -> Wire<Vec<T>> {
        let items = self.array(key)?;
        let path = Path::Key(&self.path, key);
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| read(item, Path::Index(&path, i)))
            .collect()
    }

    /// The keys nobody took.
    pub(crate) fn extra(self) -> Map<String, Value> {
        self.rest
    }
}

fn count(value: &Value, path: Path<'_>) -> Wire<u64> {
    match value {
        Value::Number(n) => match n.as_u64() {
            Some(found) => Ok(found),
            None if n.is_i64() => Err(WireError::at(path, format!("expected a non-negative integer, got {n}"))),
            None => Err(WireError::at(path, "expected an integer, got a number")),
        },
        other => Err(expected(path, "an integer", other)),
    }
}

fn number(value: &Value, path: Path<'_>) -> Wire<f64> {
    value.as_f64().ok_or_else(|| expected(path, "a number", value))
}

/// Implements `Deserialize` for a type with `fn from_wire(Value, Path) -> Wire<Self>`: the
/// input becomes a `serde_json::Value` first, so any serde format works, with the SDK's
/// null handling, `extra` and messages.
macro_rules! deserialize_from_wire {
    ($ty:ty) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = <serde_json::Value as serde::Deserialize>::deserialize(deserializer)?;
                <$ty>::from_wire(value, $crate::wire::Path::Root).map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use deserialize_from_wire;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reader(value: Value) -> Reader<'static> {
        Reader::new(value, Path::Root).expect("an object")
    }

    #[test]
    fn paths_render_like_the_other_sdks() {
        let root = Path::Root;
        let list = Path::Key(&root, "output_messages");
        let item = Path::Index(&list, 1);
        let calls = Path::Key(&item, "tool_calls");
        let call = Path::Index(&calls, 0);
        assert_eq!(
            Path::Key(&call, "tool").to_string(),
            "output_messages[1].tool_calls[0].tool"
        );
        assert_eq!(root.to_string(), "");
    }

    #[test]
    fn null_reads_as_absent_and_leftovers_are_extra() {
        let mut r = reader(json!({"a": null, "b": [], "c": {"k": 1}, "unknown": true}));
        assert_eq!(r.opt_string("a").expect("null is fine"), None);
        assert_eq!(r.string("missing").expect("absent is fine"), "");
        assert!(r.array("b").expect("array").is_empty());
        assert_eq!(r.object("c").expect("object")["k"], 1);
        assert_eq!(r.extra(), json!({"unknown": true}).as_object().cloned().expect("map"));
    }

    #[test]
    fn wrong_types_name_the_path_and_both_kinds() {
        type Read = fn(&mut Reader<'static>) -> Option<WireError>;
        let cases: Vec<(Value, Read, &str)> = vec![
            (
                json!({"k": 42}),
                |r| r.opt_string("k").err(),
                "`k`: expected a string, got a number",
            ),
            (
                json!({"k": 1.5}),
                |r| r.opt_count("k").err(),
                "`k`: expected an integer, got a number",
            ),
            (
                json!({"k": "2"}),
                |r| r.opt_count("k").err(),
                "`k`: expected an integer, got a string",
            ),
            (
                json!({"k": -1}),
                |r| r.opt_count("k").err(),
                "`k`: expected a non-negative integer, got -1",
            ),
            (
                json!({"k": true}),
                |r| r.opt_number("k").err(),
                "`k`: expected a number, got a boolean",
            ),
            (
                json!({"k": {}}),
                |r| r.array("k").err(),
                "`k`: expected an array, got an object",
            ),
            (
                json!({"k": ["a", 3]}),
                |r| r.strings("k").err(),
                "`k[1]`: expected a string, got a number",
            ),
            (
                json!({"k": {"Read": "two"}}),
                |r| r.opt_counts("k").err(),
                "`k.Read`: expected an integer, got a string",
            ),
            (
                json!({"k": {"Read": [1, "x"]}}),
                |r| r.opt_durations("k").err(),
                "`k.Read[1]`: expected a number, got a string",
            ),
            (
                json!({}),
                |r| r.required_string("role", None).err(),
                "`role`: required string is missing",
            ),
        ];
        for (value, read, want) in cases {
            let mut r = reader(value.clone());
            let error = read(&mut r).unwrap_or_else(|| panic!("{value} should fail"));
            assert_eq!(error.to_string(), want, "{value}");
        }
    }

    #[test]
    fn required_string_falls_back_to_its_alias() {
        let mut r = reader(json!({"name": "Read"}));
        assert_eq!(r.required_string("tool", Some("name")).expect("alias"), "Read");
    }
}
