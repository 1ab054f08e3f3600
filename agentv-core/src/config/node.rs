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
            // JSON has no infinity: a number beyond f64 (`1e400`) reaches judges as "inf",
            // which their languages parse back (Python's float("inf")).
            NodeValue::Float(f) => serde_json::Number::from_f64(*f)
                .map_or_else(|| Value::String(non_finite_text(*f).to_owned()), Value::Number),
            NodeValue::Str(s) => Value::String(s.clone()),
            NodeValue::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            NodeValue::Map(entries) => {
                Value::Object(entries.iter().map(|(k, v)| (k.key_text(), v.to_json())).collect())
            }
        }
    }

    /// A key rendered as text.
    pub fn key_text(&self) -> String {
        self.scalar_text().unwrap_or_else(|| self.to_json().to_string())
    }

    /// A scalar as text (`3`, `0.5`, `true`, `inf`); `None` for null, lists and mappings.
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            NodeValue::Str(s) => Some(s.clone()),
            NodeValue::Bool(b) => Some(b.to_string()),
            NodeValue::Int(i) => Some(i.to_string()),
            NodeValue::Float(f) if !f.is_finite() => Some(non_finite_text(*f).to_owned()),
            NodeValue::Float(_) => Some(self.to_json().to_string()),
            NodeValue::Null | NodeValue::Seq(_) | NodeValue::Map(_) => None,
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

fn non_finite_text(f: f64) -> &'static str {
    if f.is_nan() {
        "nan"
    } else if f > 0.0 {
        "inf"
    } else {
        "-inf"
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

/// Why YAML text could not be read, worded for the person who wrote the file.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlError {
    pub pos: Pos,
    pub message: String,
    pub help: Option<String>,
}

/// Parses YAML text into a tree. Booleans are YAML 1.2 (`true`/`false` only), so keys and
/// values such as `y`, `no` or `on` stay strings. A number too large for a 64-bit float (`1e400`)
/// is read as infinity, so the field that holds it can say what range it accepts. Duplicate keys
/// are reported together, each with the position of its first occurrence.
pub fn parse_yaml(text: &str) -> Result<Node, Vec<YamlError>> {
    let options = serde_saphyr::options! {
        strict_booleans: true,
        with_snippet: false,
        // Repeated keys reach the tree, which reports them with both positions.
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::PassThrough,
        non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::PassThrough,
    };
    let root =
        serde_saphyr::from_str_with_options::<Node>(text, options).map_err(|e| vec![yaml_error::describe(&e, text)])?;
    let mut duplicates = Vec::new();
    yaml_error::find_duplicate_keys(&root, &mut duplicates);
    if duplicates.is_empty() {
        Ok(root)
    } else {
        Err(duplicates)
    }
}

/// Parses one JSON text (a JSONL line) into a value, with every object's keys checked: serde_json
/// keeps the last of repeated keys silently, while a YAML file reports them, and a dataset line
/// `{"id": "a", ..., "id": "b"}` is as much a mistake. The error names the key and its position.
pub fn parse_json_strict(text: &str) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = StrictJson::deserialize(&mut de)?.0;
    de.end()?;
    Ok(value)
}

/// The start of the message of a repeated key in [`parse_json_strict`]'s error.
pub const REPEATED_KEY: &str = "key `";

/// A JSON value whose objects have no repeated key.
struct StrictJson(Value);

impl<'de> Deserialize<'de> for StrictJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictJsonVisitor).map(StrictJson)
    }
}

struct StrictJsonVisitor;

impl<'de> Visitor<'de> for StrictJsonVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
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
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictJson(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "{REPEATED_KEY}{}` appears twice",
                    yaml_error::clean(&yaml_error::shorten(&key))
                )));
            }
            let StrictJson(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// The parser's errors in the user's words: no parser internals ("set DuplicateKeyPolicy",
/// "use from_str_multiple", Rust type names) reach the terminal.
mod yaml_error {
    use std::borrow::Cow;
    use std::collections::HashMap;

    use serde_saphyr::budget::BudgetBreach;
    use serde_saphyr::{Error, MessageFormatter, UserMessageFormatter};

    use super::super::source::end_of;
    use super::{Node, NodeValue, Pos, YamlError};

    const SYNTAX_HELP: &str = "check indentation, quoting and brackets near this position";

    pub(super) fn describe(error: &Error, text: &str) -> YamlError {
        let error = innermost(error);
        let pos = error
            .location()
            .map(|l| Pos::new(l.line(), l.column()))
            .filter(|p| p.line > 0)
            .unwrap_or_else(|| end_of(text));
        let (message, help) = wording(error);
        YamlError {
            pos,
            message: clean(&message),
            help: help.map(str::to_owned),
        }
    }

    /// The error itself, without the snippet and alias wrappers.
    fn innermost(error: &Error) -> &Error {
        match error.without_snippet() {
            Error::AliasError { error, .. } => innermost(error),
            other => other,
        }
    }

    fn wording(error: &Error) -> (Cow<'_, str>, Option<&'static str>) {
        match error {
            Error::MultipleDocuments { .. } => (
                "the file holds several YAML documents; it must hold exactly one".into(),
                Some("remove the `---` line that starts the second document, or move it to its own file"),
            ),
            Error::DuplicateMappingKey { key, .. } => (
                match key {
                    Some(k) => format!("key `{k}` appears twice in one mapping").into(),
                    None => "a key appears twice in one mapping".into(),
                },
                Some("keep one of them"),
            ),
            Error::Eof { .. } => (
                "the file ends in the middle of a value".into(),
                Some("check for an unclosed quote or bracket"),
            ),
            Error::UnknownAnchor { .. } => (
                "an alias (`*name`) refers to an anchor (`&name`) that is not defined before it".into(),
                Some("define the anchor first, or quote the value if `*` is meant literally"),
            ),
            Error::MergeValueNotMapOrSeqOfMaps { .. } => (
                "a merge key (`<<`) must be followed by a mapping or a list of mappings".into(),
                None,
            ),
            Error::InvalidBinaryBase64 { .. } => ("a `!!binary` value is not valid base64".into(), None),
            Error::BinaryNotUtf8 { .. } => ("a `!!binary` value is not UTF-8 text".into(), None),
            Error::InvalidScalar { ty, .. } => (
                format!("this value cannot be read as {}", type_words(ty)).into(),
                Some("remove the `!!` tag or fix the value"),
            ),
            Error::NonFiniteFloat { .. } => ("this number is out of range".into(), None),
            Error::Budget { breach, .. } => (
                budget_words(breach).into(),
                Some("split the file, or use a JSONL dataset"),
            ),
            Error::AliasReplayCounterOverflow { .. }
            | Error::AliasReplayLimitExceeded { .. }
            | Error::AliasExpansionLimitExceeded { .. }
            | Error::AliasReplayStackDepthExceeded { .. } => (
                "anchors and aliases (`&name`, `*name`) expand to too much data".into(),
                Some("use fewer nested aliases"),
            ),
            Error::IOError { .. } => ("the file could not be read".into(), None),
            other => (UserMessageFormatter.format_message(other), Some(SYNTAX_HELP)),
        }
    }

    fn type_words(ty: &str) -> &'static str {
        match ty {
            "bool" | "boolean" => "true or false",
            t if t.starts_with('u') || t.starts_with('i') || t.contains("int") => "a whole number",
            t if t.starts_with('f') || t.contains("float") => "a number",
            _ => "the type its tag names",
        }
    }

    fn budget_words(breach: &BudgetBreach) -> String {
        match breach {
            BudgetBreach::Depth { depth } => format!("values are nested too deeply (more than {} levels)", depth - 1),
            BudgetBreach::Nodes { nodes } => format!("the file holds too many values (more than {})", nodes - 1),
            BudgetBreach::Documents { .. } => "the file holds too many YAML documents".to_owned(),
            BudgetBreach::ScalarBytes { .. } => "the file holds too much text".to_owned(),
            BudgetBreach::Aliases { .. } | BudgetBreach::Anchors { .. } | BudgetBreach::AliasAnchorRatio { .. } => {
                "the file uses too many anchors and aliases (`&name`, `*name`)".to_owned()
            }
            BudgetBreach::MergeKeys { .. } => "the file uses too many merge keys (`<<`)".to_owned(),
            _ => "the file is too large or too complex to read safely".to_owned(),
        }
    }

    /// One line, control characters escaped (parser messages may quote the offending character),
    /// and at most 200 characters.
    pub(super) fn clean(message: &str) -> String {
        let mut out = String::new();
        for c in message.chars().take(200) {
            if c.is_control() {
                out.extend(c.escape_debug());
            } else {
                out.push(c);
            }
        }
        out
    }

    /// Every key that appears twice in one mapping, at its second position.
    pub(super) fn find_duplicate_keys(node: &Node, out: &mut Vec<YamlError>) {
        match &node.value {
            NodeValue::Seq(items) => items.iter().for_each(|i| find_duplicate_keys(i, out)),
            NodeValue::Map(entries) => {
                let mut first: HashMap<String, Pos> = HashMap::new();
                for (key, value) in entries {
                    // Tagged by type, so the string "1" and the number 1 stay different keys.
                    let id = key.to_json().to_string();
                    match first.get(&id) {
                        Some(at) => out.push(YamlError {
                            pos: key.pos,
                            message: format!(
                                "key `{}` appears twice (first at line {})",
                                clean(&shorten(&key.key_text())),
                                at.line
                            ),
                            help: Some("keep one of them: keys of a mapping must be unique".to_owned()),
                        }),
                        None => {
                            first.insert(id, key.pos);
                        }
                    }
                    find_duplicate_keys(value, out);
                }
            }
            _ => {}
        }
    }

    pub(super) fn shorten(text: &str) -> String {
        if text.chars().count() <= 60 {
            text.to_owned()
        } else {
            format!("{}…", text.chars().take(60).collect::<String>())
        }
    }
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
