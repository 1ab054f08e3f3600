//! JSON Schema (draft-07) from key tables, for editors (`yaml-language-server`) and `agentv
//! schema`. The schema accepts what the readers accept (aliases, text written as a number,
//! `null` for an optional text) and rejects what they reject or warn about (an unknown key, a
//! value of the wrong kind), so an editor shows the same mistakes the loader reports.

use serde_json::{Map, Value, json};

use super::keys::{Key, KeyTable, Kind, to_camel_case};

/// How a section's keys may be spelled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spelling {
    /// Every key is also accepted in camelCase (targets files convert keys to snake_case).
    pub camel_case: bool,
}

/// The schema of a mapping read with `table`.
pub fn table_schema(table: &KeyTable, spelling: Spelling) -> Value {
    table_schema_of(table.keys(), table.doc, table.open, spelling)
}

/// The schema of a mapping with `keys`; `open` keeps keys it does not declare.
pub fn table_schema_of<'k>(
    keys: impl IntoIterator<Item = &'k Key>,
    doc: &str,
    open: bool,
    spelling: Spelling,
) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for key in keys {
        let spellings = spellings(key, spelling);
        let schema = key_schema(key, spelling);
        for name in &spellings {
            properties.insert(name.clone(), schema.clone());
        }
        if key.required {
            required.push(spellings);
        }
    }
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    if !doc.is_empty() {
        out.insert("description".into(), json!(doc));
    }
    out.insert("properties".into(), Value::Object(properties));
    out.insert("additionalProperties".into(), json!(open));
    let (single, several): (Vec<_>, Vec<_>) = required.into_iter().partition(|names| names.len() == 1);
    if !single.is_empty() {
        out.insert("required".into(), json!(single.concat()));
    }
    if !several.is_empty() {
        // One of the spellings must be present.
        let all: Vec<Value> = several
            .iter()
            .map(|names| json!({"anyOf": names.iter().map(|n| json!({"required": [n]})).collect::<Vec<_>>()}))
            .collect();
        out.insert("allOf".into(), Value::Array(all));
    }
    Value::Object(out)
}

/// Every spelling of `key` the reader accepts.
fn spellings(key: &Key, spelling: Spelling) -> Vec<String> {
    let mut names: Vec<String> = key.names().map(str::to_owned).collect();
    if spelling.camel_case {
        for name in key.names() {
            let camel = to_camel_case(name);
            if !names.contains(&camel) {
                names.push(camel);
            }
        }
    }
    names
}

fn key_schema(key: &Key, spelling: Spelling) -> Value {
    let mut schema = kind_schema(&key.kind, spelling);
    if let (Kind::Text, false) = (&key.kind, key.required) {
        // An optional text written as `~` is read as absent.
        schema = json!({"type": ["string", "number", "boolean", "null"]});
    }
    if let Value::Object(map) = &mut schema
        && !key.doc.is_empty()
    {
        let doc = match map.get("description").and_then(Value::as_str) {
            Some(range) => format!("{} Accepts {range}.", key.doc),
            None => key.doc.to_owned(),
        };
        map.insert("description".into(), json!(doc));
    }
    schema
}

/// The schema of one value kind.
pub fn kind_schema(kind: &Kind, spelling: Spelling) -> Value {
    match kind {
        Kind::Text => json!({"type": ["string", "number", "boolean"]}),
        Kind::Str => json!({"type": "string"}),
        Kind::Url => json!({"type": "string", "pattern": "^(https?://|\\$\\{\\{)"}),
        Kind::Bool => json!({"type": "boolean"}),
        Kind::Number(range) => {
            let mut s = json!({"type": "number", "minimum": range.min});
            if range.max.is_finite() {
                s["maximum"] = json!(range.max);
            }
            s
        }
        Kind::Int(range) => {
            let mut s = json!({"type": "integer", "minimum": range.min});
            if range.max != i64::MAX {
                s["maximum"] = json!(range.max);
            }
            s
        }
        Kind::Duration(range) => {
            let mut s = json!({
                "type": "number",
                "maximum": range.unit.show(range.max),
                "description": range.describe(),
            });
            let min = if range.min_exclusive {
                "exclusiveMinimum"
            } else {
                "minimum"
            };
            s[min] = json!(range.unit.show(range.min));
            s
        }
        Kind::Enum(values) => json!({"enum": values}),
        Kind::List(item) => json!({"type": "array", "items": kind_schema(item, spelling)}),
        Kind::Map(value) => json!({"type": "object", "additionalProperties": kind_schema(value, spelling)}),
        Kind::Object(table) => table_schema(table, spelling),
        Kind::OneOf(kinds) => json!({"anyOf": kinds.iter().map(|k| kind_schema(k, spelling)).collect::<Vec<_>>()}),
        Kind::Ref(name) => json!({"$ref": format!("#/definitions/{name}")}),
        Kind::Any => json!({}),
    }
}

/// A pattern matching `names` whatever their letter case (`[mM][oO][cC][kK]`): provider names
/// are read case-insensitively, and JSON Schema patterns have no flag for it.
pub fn case_insensitive_pattern<'n>(names: impl IntoIterator<Item = &'n str>) -> String {
    let alternatives: Vec<String> = names
        .into_iter()
        .map(|name| {
            name.chars()
                .map(|c| {
                    if c.is_ascii_alphabetic() {
                        format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                    } else if c.is_ascii_alphanumeric() || c == '_' {
                        c.to_string()
                    } else {
                        format!("\\{c}")
                    }
                })
                .collect()
        })
        .collect();
    format!("^(?:{})$", alternatives.join("|"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::keys::{DurationRange, NumberRange};

    const KEYS: &[Key] = &[
        Key::new("id", Kind::Text, "The case id.").required(),
        Key::new("timeout_seconds", Kind::Duration(DurationRange::TIMEOUT_SECONDS), "").aliases(&["timeout"]),
        Key::new("weight", Kind::Number(NumberRange::NON_NEGATIVE), ""),
        Key::new("command_template", Kind::Text, "")
            .required()
            .aliases(&["command"]),
    ];
    const TABLE: KeyTable = KeyTable::new("thing", "A thing.", &[KEYS]);

    #[test]
    fn tables_become_objects_with_every_spelling() {
        let s = table_schema(&TABLE, Spelling { camel_case: true });
        let props = s["properties"].as_object().expect("properties");
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        for want in [
            "id",
            "timeout_seconds",
            "timeout",
            "timeoutSeconds",
            "weight",
            "commandTemplate",
            "command",
        ] {
            assert!(names.contains(&want), "{want} in {names:?}");
        }
        assert_eq!(s["required"], json!(["id"]));
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(
            s["allOf"][0]["anyOf"],
            json!([{"required": ["command_template"]}, {"required": ["command"]}, {"required": ["commandTemplate"]}])
        );
        assert_eq!(props["timeout"]["exclusiveMinimum"], json!(0.0));
        assert_eq!(props["id"]["description"], json!("The case id."));
    }

    #[test]
    fn provider_names_match_in_any_case() {
        let pattern = case_insensitive_pattern(["claude-code", "mock"]);
        assert_eq!(
            pattern,
            "^(?:[cC][lL][aA][uU][dD][eE]\\-[cC][oO][dD][eE]|[mM][oO][cC][kK])$"
        );
        let re = regex::Regex::new(&pattern).expect("valid");
        assert!(re.is_match("Claude-Code") && re.is_match("MOCK") && !re.is_match("mocks"));
    }
}
