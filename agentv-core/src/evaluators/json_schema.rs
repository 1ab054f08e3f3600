//! `json-schema` (agentv; not in AgentV 4.x): passes when the answer is JSON (the whole
//! answer, as `is-json` reads it) that validates against a JSON Schema, given inline
//! (`schema:`) or by file (`schema_file:`, or `schema: file://<path>`; JSON or YAML, found
//! like every file an eval names). The schema is compiled at load; `$ref`s to the network
//! are not fetched.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::string_check::candidate;
use super::{Grade, GradeContext, GradeVerdict, Grader, GraderEntry, Names, ParseContext};
use crate::model::Assertion;
use crate::config::{Fields, Key, KeyTable, Kind, Node, Pos};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "json-schema",
    names: Names {
        v2: &["json_schema"],
        v4: &["json-schema"],
        promptfoo: &[],
    },
    doc: "Passes when the answer is JSON that validates against a JSON Schema (inline or from a file).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("schema", Kind::Any, "The JSON Schema, inline, or `file://<path>`."),
    Key::new("schema_file", Kind::Str, "A file holding the JSON Schema (JSON or YAML)."),
];
const KEYS: KeyTable = KeyTable::new("json-schema", "A JSON Schema check (`schema` or `schema_file`).", &[OWN]);

/// How many validation errors a failed grade lists.
const SHOWN_ERRORS: usize = 5;

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let what = f.what().to_owned();
    let (schema, pos) = match (f.take("schema").filter(|n| !n.is_null()), f.take("schema_file").filter(|n| !n.is_null())) {
        (Some(_), Some(file)) => {
            cx.diags.error(
                file.pos,
                format!("{what} has both `schema` and `schema_file`"),
                Some("keep one of them".to_owned()),
            );
            return None;
        }
        (None, None) => {
            cx.diags.error(
                f.pos,
                format!("{what} needs `schema` (inline or file://<path>) or `schema_file`"),
                Some("add `schema: {type: object, required: [answer]}`".to_owned()),
            );
            return None;
        }
        (Some(node), None) => match node.as_str().and_then(|s| s.strip_prefix("file://")) {
            Some(path) => (load(path, node.pos, cx)?, node.pos),
            None => (node.to_json(), node.pos),
        },
        (None, Some(node)) => match node.as_str() {
            Some(path) => (load(path.strip_prefix("file://").unwrap_or(path), node.pos, cx)?, node.pos),
            None => {
                cx.diags.error(
                    node.pos,
                    format!("`schema_file` of {what} must be a path, found {}", node.type_name()),
                    None,
                );
                return None;
            }
        },
    };
    match jsonschema::validator_for(&schema) {
        Ok(validator) => Some(Arc::new(JsonSchema { validator })),
        Err(e) => {
            cx.diags.error(pos, format!("invalid JSON Schema: {e}"), None);
            None
        }
    }
}

/// Reads a schema file (JSON, else YAML), found through the search roots.
pub(super) fn load(path: &str, pos: Pos, cx: &mut ParseContext<'_>) -> Option<Value> {
    let file = match cx.ws.resolve_file(path, cx.eval_dir) {
        Ok(file) => file,
        Err(tried) => {
            let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
            cx.diags.error(
                pos,
                format!("JSON Schema file `{path}` not found"),
                Some(format!("looked in: {}", tried.join(", "))),
            );
            return None;
        }
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) => {
            cx.diags.error(pos, format!("cannot read JSON Schema file {}: {e}", file.display()), None);
            return None;
        }
    };
    if let Ok(value) = serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')) {
        return Some(value);
    }
    match crate::config::node::parse_yaml(&text) {
        Ok(node) => Some(Node::to_json(&node)),
        Err(errors) => {
            let first = errors.first().map(|e| format!("line {}: {}", e.pos.line, e.message)).unwrap_or_default();
            cx.diags.error(
                pos,
                format!("JSON Schema file {} is neither JSON nor YAML: {first}", file.display()),
                None,
            );
            None
        }
    }
}

/// A `json-schema` check with its compiled schema.
#[derive(Debug)]
pub struct JsonSchema {
    pub validator: jsonschema::Validator,
}

impl Grader for JsonSchema {
    fn default_name(&self) -> Option<String> {
        Some("json-schema".to_owned())
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(&self.validator, &candidate(ctx)) })
    }
}

/// Score 1 when the answer is JSON that the schema accepts; else 0 with one failed assertion
/// per validation error (the first few), each naming the JSON pointer of the offending value.
pub fn grade(validator: &jsonschema::Validator, output: &str) -> Grade {
    let Ok(instance) = serde_json::from_str::<Value>(output) else {
        return Grade::check(false, "Output is not valid JSON");
    };
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("{}: {e}", if at.is_empty() { "/" } else { at.as_str() })
        })
        .collect();
    if errors.is_empty() {
        return Grade::check(true, "Output matches the JSON schema");
    }
    let mut assertions: Vec<_> = errors.iter().take(SHOWN_ERRORS).map(|e| Assertion::new(e.clone(), false)).collect();
    if errors.len() > SHOWN_ERRORS {
        assertions.push(Assertion::new(format!("… and {} more validation errors", errors.len() - SHOWN_ERRORS), false));
    }
    assertions.insert(
        0,
        Assertion::new("Output does not match the JSON schema", false)
            .with_evidence(format!("{} validation error(s)", errors.len())),
    );
    Grade::assessed(0.0, assertions).with_verdict(GradeVerdict::Fail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::negate;
    use crate::evaluators::string_check::testing::{parse_in, parse_one, problems};
    use serde_json::json;

    fn validator() -> jsonschema::Validator {
        jsonschema::validator_for(&json!({
            "type": "object",
            "required": ["city", "population"],
            "properties": {"city": {"type": "string"}, "population": {"type": "integer", "minimum": 0}}
        }))
        .expect("valid schema")
    }

    #[test]
    fn validation_errors_are_listed_with_their_pointer() {
        let v = validator();
        let g = grade(&v, r#"{"city": "Paris", "population": 2102650}"#);
        assert_eq!((g.score, g.hits.as_slice()), (1.0, &["Output matches the JSON schema".to_owned()][..]));
        let g = grade(&v, r#"{"city": 5, "population": -1}"#);
        let texts: Vec<&str> = g.assertions.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(g.score, 0.0);
        assert_eq!(texts[0], "Output does not match the JSON schema");
        assert_eq!(g.assertions[0].evidence.as_deref(), Some("2 validation error(s)"));
        assert!(texts.contains(&"/city: 5 is not of type \"string\""), "{texts:?}");
        assert!(texts.iter().any(|t| t.starts_with("/population: -1 is less than the minimum")), "{texts:?}");
        let g = grade(&v, r#"{"city": "Paris"}"#);
        assert_eq!(g.misses[1], "/: \"population\" is a required property");
        let g = grade(&v, "```json\n{}\n```");
        assert_eq!(g.misses, ["Output is not valid JSON"]);
        let n = negate(g);
        assert_eq!((n.score, n.hits.as_slice()), (1.0, &["Output is not valid JSON".to_owned()][..]));
    }

    #[test]
    fn many_errors_are_capped() {
        let v = jsonschema::validator_for(&json!({"type": "array", "items": {"type": "string"}})).expect("schema");
        let g = grade(&v, "[1, 2, 3, 4, 5, 6, 7]");
        assert_eq!(g.assertions.len(), 1 + SHOWN_ERRORS + 1);
        assert_eq!(g.misses.last().map(String::as_str), Some("… and 2 more validation errors"));
    }

    #[test]
    fn schemas_come_inline_or_from_files_and_are_checked_at_load() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("answer.schema.yaml"), "type: object\nrequired: [answer]\n").expect("write");
        for entry in [
            "{type: json-schema, schema: {type: object}}",
            "{type: json_schema, schema_file: answer.schema.yaml}",
            "{type: json-schema, schema: 'file://answer.schema.yaml'}",
        ] {
            let (grader, shown) = parse_in(entry, dir.path());
            assert!(shown.is_empty(), "{entry}: {shown:?}");
            assert_eq!(grader.map(|g| g.name), Some("json-schema".to_owned()), "{entry}");
        }
        assert_eq!(
            problems("{type: json-schema}")[0],
            "e.yaml:1:3: error: json-schema needs `schema` (inline or file://<path>) or `schema_file`"
        );
        let bad = problems("{type: json-schema, schema: {type: 12}}");
        assert!(bad[0].starts_with("e.yaml:1:31: error: invalid JSON Schema: "), "{bad:?}");
        assert_eq!(
            problems("{type: json-schema, schema_file: missing.json}")[0],
            "e.yaml:1:36: error: JSON Schema file `missing.json` not found"
        );
        let (_, shown) = parse_one("{type: json-schema, schema: {type: object}, schema_file: x.json}");
        assert!(shown[0].contains("has both `schema` and `schema_file`"), "{shown:?}");
    }
}
