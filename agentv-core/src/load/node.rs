//! A YAML/JSON value tree in which every node knows where it was written.
//!
//! Eval and targets files are first read into this tree, then validated by hand. Typed serde
//! structs would stop at the first error and lose positions inside tagged enums; the tree lets
//! the loader report every problem with its exact line and column, keep the good cases of a
//! file with a bad one, and warn about unknown keys instead of rejecting them.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_saphyr::Spanned;

/// A 1-based line and column; 0 means unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: u64,
    pub column: u64,
}

impl Pos {
    pub const fn new(line: u64, column: u64) -> Self {
        Self { line, column }
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// One value and the position it starts at.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: NodeValue,
    pub pos: Pos,
}

/// The shape of a [`Node`].
#[derive(Debug, Clone, PartialEq)]
pub enum NodeValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in file order; keys are nodes so that they carry positions too.
    Map(Vec<(Node, Node)>),
}

impl Node {
    pub fn new(value: NodeValue, pos: Pos) -> Self {
        Self { value, pos }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            NodeValue::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            NodeValue::Seq(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            NodeValue::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self.value {
            NodeValue::Int(i) => Some(i as f64),
            NodeValue::Float(f) => Some(f),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.value {
            NodeValue::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, NodeValue::Null)
    }

    /// A short name of the node's type, for error messages ("expected a string, found a list").
    pub fn type_name(&self) -> &'static str {
        match self.value {
            NodeValue::Null => "null",
            NodeValue::Bool(_) => "a boolean",
            NodeValue::Int(_) | NodeValue::Float(_) => "a number",
            NodeValue::Str(_) => "a string",
            NodeValue::Seq(_) => "a list",
            NodeValue::Map(_) => "a mapping",
        }
    }

    /// The value of key `name` in a mapping node.
    pub fn get(&self, name: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(name))
            .map(|(_, v)| v)
    }

    /// Converts to JSON, dropping positions. Non-string keys become their text.
    pub fn to_json(&self) -> Value {
        match &self.value {
            NodeValue::Null => Value::Null,
            NodeValue::Bool(b) => Value::Bool(*b),
            NodeValue::Int(i) => Value::from(*i),
            NodeValue::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            NodeValue::Str(s) => Value::String(s.clone()),
            NodeValue::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            NodeValue::Map(entries) => {
                Value::Object(entries.iter().map(|(k, v)| (k.key_text(), v.to_json())).collect())
            }
        }
    }

    /// A key rendered as text.
    pub fn key_text(&self) -> String {
        match &self.value {
            NodeValue::Str(s) => s.clone(),
            _ => self.to_json().to_string(),
        }
    }

    /// Builds a tree from JSON; every node gets `pos` (JSON lines carry only a line number).
    pub fn from_json(value: &Value, pos: Pos) -> Self {
        let v = match value {
            Value::Null => NodeValue::Null,
            Value::Bool(b) => NodeValue::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => NodeValue::Int(i),
                None => NodeValue::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => NodeValue::Str(s.clone()),
            Value::Array(items) => NodeValue::Seq(items.iter().map(|i| Node::from_json(i, pos)).collect()),
            Value::Object(map) => NodeValue::Map(
                map.iter()
                    .map(|(k, v)| (Node::new(NodeValue::Str(k.clone()), pos), Node::from_json(v, pos)))
                    .collect(),
            ),
        };
        Node::new(v, pos)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<NodeValue>::deserialize(deserializer)?;
        let pos = Pos::new(spanned.referenced.line(), spanned.referenced.column());
        Ok(Node::new(spanned.value, pos))
    }
}

impl<'de> Deserialize<'de> for NodeValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = NodeValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<NodeValue, E> {
        Ok(NodeValue::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<NodeValue, E> {
        Ok(NodeValue::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<NodeValue, D::Error> {
        NodeValue::deserialize(d)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<NodeValue, E> {
        Ok(NodeValue::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<NodeValue, E> {
        Ok(NodeValue::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<NodeValue, E> {
        Ok(i64::try_from(v).map_or(NodeValue::Float(v as f64), NodeValue::Int))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<NodeValue, E> {
        Ok(NodeValue::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<NodeValue, E> {
        Ok(NodeValue::Str(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<NodeValue, E> {
        Ok(NodeValue::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NodeValue, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(NodeValue::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NodeValue, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Node>()? {
            let value = map.next_value::<Node>()?;
            entries.push((key, value));
        }
        Ok(NodeValue::Map(entries))
    }
}

/// Parses YAML text into a tree. Booleans are YAML 1.2 (`true`/`false` only), so keys and
/// values such as `y`, `no` or `on` stay strings.
pub fn parse_yaml(text: &str) -> Result<Node, serde_saphyr::Error> {
    let options = serde_saphyr::options! { strict_booleans: true, with_snippet: false };
    serde_saphyr::from_str_with_options::<Node>(text, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Node {
        parse_yaml(text).expect("valid YAML")
    }

    #[test]
    fn every_node_knows_its_position() {
        let root = parse("a: 1\nlist:\n  - x\n  - key: y\n");
        assert_eq!(root.get("a").map(|n| n.pos), Some(Pos::new(1, 4)));
        let list = root.get("list").and_then(Node::as_seq).expect("list");
        assert_eq!(list[0].pos, Pos::new(3, 5));
        assert_eq!(list[1].get("key").map(|n| n.pos), Some(Pos::new(4, 10)));
        let (key, _) = &root.as_map().expect("map")[1];
        assert_eq!(key.pos, Pos::new(2, 1));
    }

    #[test]
    fn anchors_and_merge_keys_resolve() {
        let root = parse("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n");
        let other = root.get("other").expect("other").to_json();
        assert_eq!(other, serde_json::json!({"x": 1, "y": 2}));
    }

    #[test]
    fn scalars_keep_their_types() {
        let root = parse("i: 3\nf: 0.5\nb: true\ns: hello\nn: ~\n");
        let json = root.to_json();
        assert_eq!(
            json,
            serde_json::json!({"i": 3, "f": 0.5, "b": true, "s": "hello", "n": null})
        );
    }
}
