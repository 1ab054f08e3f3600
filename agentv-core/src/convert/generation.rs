//! Which generation a file is written for, by the rule of `docs/architecture.md#generations`:
//! a file is 4.x when it uses any spelling only AgentV 4.x has, else 2.x. The converter
//! decides the direction with it and checks its output against it.

use super::Generation;
use crate::config::{Node, NodeValue};

const V4_SUITE_KEYS: &[&str] = &[
    "tests",
    "cases",
    "eval_cases",
    "name",
    "assertions",
    "assert",
    "input",
    "input_files",
    "metadata",
    "governance",
    "version",
    "author",
    "license",
    "tags",
    "requires",
    "category",
    "workspace",
    "preprocessors",
];

const V4_CASE_KEYS: &[&str] = &[
    "criteria",
    "assertions",
    "assert",
    "vars",
    "input_files",
    "metadata",
    "mode",
    "turns",
    "depends_on",
    "workspace",
];

const V4_EXECUTION_KEYS: &[&str] = &["threshold", "skip_defaults", "assertions", "assert"];

/// Grader types only AgentV 4.x has, in kebab-case.
pub(super) const V4_TYPES: &[&str] = &[
    "code-grader",
    "llm-grader",
    "rubrics",
    "skill-trigger",
    "contains",
    "contains-any",
    "contains-all",
    "icontains",
    "icontains-any",
    "icontains-all",
    "starts-with",
    "ends-with",
    "regex",
    "is-json",
    "equals",
    "inline-assert",
    "json-schema",
    "word-count",
];

fn has_key(node: &Node, keys: &[&str]) -> bool {
    node.as_map()
        .is_some_and(|m| m.iter().any(|(k, _)| k.as_str().is_some_and(|k| keys.contains(&k))))
}

/// The generation of a suite or sidecar tree.
pub fn detect(root: &Node) -> Generation {
    let has_v2_cases = root.get("evalcases").is_some();
    let v4 = has_key(root, V4_SUITE_KEYS)
        || root.get("execution").is_some_and(|e| has_key(e, V4_EXECUTION_KEYS))
        || root
            .get("evalcases")
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .any(|case| {
                has_key(case, V4_CASE_KEYS)
                    || (!has_v2_cases && has_key(case, &["input", "expected_output"]))
                    || case.get("execution").is_some_and(|e| has_key(e, V4_EXECUTION_KEYS))
            })
        || has_v4_grader(root);
    if v4 { Generation::V4 } else { Generation::V2 }
}

/// Whether any grader list in the tree has a 4.x-only entry.
fn has_v4_grader(node: &Node) -> bool {
    match &node.value {
        NodeValue::Map(entries) => entries.iter().any(|(k, v)| {
            let list_key = matches!(k.as_str(), Some("assertions" | "assert" | "evaluators"));
            (list_key && v.as_seq().is_some_and(|items| items.iter().any(is_v4_entry))) || has_v4_grader(v)
        }),
        NodeValue::Seq(items) => items.iter().any(has_v4_grader),
        _ => false,
    }
}

fn is_v4_entry(entry: &Node) -> bool {
    if entry.as_str().is_some() {
        return true;
    }
    if entry.get("include").is_some() {
        return true;
    }
    let Some(t) = entry.get("type").and_then(Node::as_str) else {
        return false;
    };
    let kebab = t.replace('_', "-");
    (t.contains('-') && !matches!(t, "llm-judge" | "code-judge"))
        || V4_TYPES.contains(&kebab.as_str())
        || (entry.get("command").is_some() && matches!(t, "code_judge" | "code"))
}
