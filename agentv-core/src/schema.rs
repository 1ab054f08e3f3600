//! The JSON Schemas of eval files and targets files, generated from the key tables, the grader
//! table and the provider table (`agentv schema eval|targets`; committed under `schema/`).
//! See `docs/architecture.md#schemas`.

use serde_json::{Map, Value, json};

use crate::config::Key;
use crate::config::schema::{Spelling, table_schema, table_schema_of};
use crate::evaluators::GRADER_KEYS;
use crate::load::TARGETS_FILE;
use crate::load::keys::SUITE;
use crate::providers::TARGET_KEYS;

const DRAFT: &str = "http://json-schema.org/draft-07/schema#";

/// Which file a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaKind {
    Eval,
    Targets,
}

impl SchemaKind {
    /// Where the schema is committed, relative to the repository root.
    pub fn path(self) -> &'static str {
        match self {
            Self::Eval => "schema/eval.schema.json",
            Self::Targets => "schema/targets.schema.json",
        }
    }

    /// The schema document.
    pub fn schema(self) -> Value {
        match self {
            Self::Eval => eval(),
            Self::Targets => targets(),
        }
    }

    /// The schema as committed: pretty JSON with a final newline.
    pub fn render(self) -> String {
        let mut text = serde_json::to_string_pretty(&self.schema()).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// The schema of YAML eval files.
pub fn eval() -> Value {
    let mut doc = table_schema(&SUITE, Spelling::default());
    add_header(&mut doc, "agentv eval file", "schema/eval.schema.json");
    doc["definitions"] = json!({ "graders": graders(), "tool": tool() });
    doc
}

/// The schema of targets files.
pub fn targets() -> Value {
    let mut doc = table_schema(&TARGETS_FILE, Spelling::default());
    add_header(&mut doc, "agentv targets file", "schema/targets.schema.json");
    doc["definitions"] = json!({ "target": target(), "tool": tool() });
    doc
}

fn add_header(doc: &mut Value, title: &str, id: &str) {
    if let Value::Object(map) = doc {
        let mut head = Map::new();
        head.insert("$schema".into(), json!(DRAFT));
        head.insert("$id".into(), json!(format!("https://agentv.invalid/{id}")));
        head.insert("title".into(), json!(title));
        head.append(map);
        *map = head;
    }
}

/// One tool an LLM target may call (`docs/tools.md`), in any of the shapes it may be written.
fn tool() -> Value {
    table_schema(&crate::tools::keys::TOOL, Spelling::default())
}

/// A list of graders: each entry's `type` picks the keys it may have.
fn graders() -> Value {
    // promptfoo's spellings belong to promptfoo configs, which this schema does not describe.
    let agentv: Vec<_> = crate::evaluators::entries()
        .filter(|e| !e.names.v2.is_empty() || !e.names.v4.is_empty())
        .collect();
    let names: Vec<&str> = agentv.iter().flat_map(|e| e.agentv_names()).collect();
    let branches: Vec<Value> = agentv
        .iter()
        .map(|entry| {
            let keys: Vec<&Key> = GRADER_KEYS.keys().chain(entry.keys.keys()).collect();
            let mut names: Vec<String> = entry.agentv_names().iter().map(|n| (*n).to_owned()).collect();
            for name in entry.agentv_names() {
                let snake = name.replace('-', "_");
                if !names.contains(&snake) {
                    names.push(snake);
                }
            }
            json!({
                "if": {"properties": {"type": {"enum": names}}, "required": ["type"]},
                "then": table_schema_of(keys, entry.doc, entry.keys.open, Spelling::default()),
            })
        })
        .collect();
    // A 4.x file may write a type in snake_case where the table lists it in kebab-case.
    let mut spellings: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    for name in &names {
        let snake = name.replace('-', "_");
        if !spellings.contains(&snake) {
            spellings.push(snake);
        }
    }
    json!({
        "type": "array",
        "description": "Graders; a case's score is their weighted mean. An entry may also be a bare string \
                        (a rubric) or `{include: NAME}` (an assertion template) in AgentV 4.x files.",
        "items": {
            "anyOf": [
                {"type": "string", "description": "A rubric (AgentV 4.x): the list's strings form one `rubrics` grader."},
                {
                    "type": "object",
                    "description": "The `assertions` of template NAME (.agentv/templates/NAME.yaml, or a path).",
                    "properties": {"include": {"type": "string"}},
                    "required": ["include"],
                    "additionalProperties": false,
                },
                {
                    "type": "object",
                    "required": ["type"],
                    "properties": {"type": {"enum": spellings, "description": "Which grader."}},
                    "allOf": branches,
                },
            ],
        },
    })
}

/// One target: its `provider` picks the keys it may have. Keys are also accepted in camelCase.
fn target() -> Value {
    let camel = Spelling { camel_case: true };
    let names: Vec<&str> = crate::providers::entries().flat_map(|e| e.names()).collect();
    let branches: Vec<Value> = crate::providers::entries()
        .map(|entry| {
            let keys: Vec<&Key> = TARGET_KEYS.keys().chain(entry.keys.keys()).collect();
            let pattern = crate::config::schema::case_insensitive_pattern(entry.names());
            json!({
                "if": {"properties": {"provider": {"pattern": pattern}}, "required": ["provider"]},
                "then": table_schema_of(keys, entry.doc, entry.keys.open, camel),
            })
        })
        .collect();
    // The common keys, with the provider's own keys left to the branches.
    let mut schema = table_schema(&TARGET_KEYS.open(), camel);
    schema["properties"]["provider"] = json!({
        "description": "Which provider answers (names are matched ignoring letter case).",
        "anyOf": [{"enum": names}, {"type": "string", "pattern": crate::providers::name_pattern()}],
    });
    schema["allOf"] = Value::Array(branches);
    // A target names its provider, or the target it stands for (`use_target`).
    schema["anyOf"] = json!([{"required": ["provider"]}, {"required": ["use_target"]}, {"required": ["useTarget"]}]);
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grader_and_provider_name_is_in_the_schemas() {
        let eval = eval().to_string();
        // Graders only promptfoo configs name (`assert-set`) are not in the eval schema.
        let agentv = crate::evaluators::entries().filter(|e| !e.names.v2.is_empty() || !e.names.v4.is_empty());
        for name in agentv.flat_map(|e| e.agentv_names()) {
            assert!(eval.contains(&format!("\"{name}\"")), "{name}");
        }
        let targets = targets().to_string();
        for entry in crate::providers::entries() {
            assert!(targets.contains(&format!("\"{}\"", entry.name)), "{}", entry.name);
        }
    }
}
