//! Which AgentV generation an eval file is written in (`docs/architecture.md#generations`).
//!
//! A file is 4.x when it uses any spelling only AgentV 4.x has; otherwise it is 2.x. The
//! spellings are keys and grader types, never values, so the rule is decided on the file as
//! written, before `${{ VAR }}` or `vars` substitution:
//!
//! - top-level keys `tests`, `cases`, `eval_cases`, `name`, `assertions`, `assert`, `input`,
//!   `input_files`, `metadata`, `governance`, `version`, `author`, `license`, `tags`,
//!   `requires`, `category`, `preprocessors`;
//! - case keys `criteria`, `assertions`, `assert`, `vars`, `input_files`, `metadata`, `mode`,
//!   `turns`, `depends_on`, and `execution.threshold` / `execution.skip_defaults`;
//!   `input` and `expected_output` count too, in a YAML file without `evalcases` (2.x files may
//!   use them as short forms of `input_messages` and `expected_messages`);
//! - in any grader list: a kebab-case type other than 2.x's own `llm-judge` and `code-judge`, a
//!   type only 4.x has (`contains`, `regex`, `rubrics`, `llm-grader`, … in either case style), a
//!   bare string, an `{include: NAME}` entry, or a code grader with `command`.

use crate::config::{Node, NodeValue};
use crate::model::Generation;

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
];

/// Short forms a 2.x YAML suite may use too: 4.x spellings only in a file without `evalcases`.
const SHARED_CASE_KEYS: &[&str] = &["input", "expected_output"];

const V4_EXECUTION_KEYS: &[&str] = &["threshold", "skip_defaults", "assertions", "assert"];

/// Keys holding grader lists, at any depth.
const LIST_KEYS: &[&str] = &["assertions", "assert", "evaluators"];

/// 2.x type names that contain a dash.
const V2_DASHED_TYPES: &[&str] = &["llm-judge", "code-judge"];

/// Grader types only AgentV 4.x has (in kebab-case; a file may write them in snake_case).
const V4_TYPES: &[&str] = &[
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
];

/// The generation of a YAML eval file's tree.
pub fn of_suite(root: &Node) -> Generation {
    let Some(entries) = root.as_map() else {
        return Generation::V2;
    };
    let has_v2_cases = root.get("evalcases").is_some();
    if entries
        .iter()
        .any(|(k, _)| k.as_str().is_some_and(|k| V4_SUITE_KEYS.contains(&k)))
    {
        return Generation::V4;
    }
    if root.get("execution").is_some_and(execution_is_v4) {
        return Generation::V4;
    }
    let cases = root.get("evalcases").and_then(Node::as_seq).unwrap_or_default();
    if cases.iter().any(|case| case_is_v4(case, !has_v2_cases)) {
        return Generation::V4;
    }
    if has_v4_grader(root) {
        return Generation::V4;
    }
    Generation::V2
}

/// The generation of one JSONL line (a case) or a sidecar: `input` and `expected_output` are
/// the 2.x dataset short forms there.
pub fn of_dataset_part(node: &Node) -> Generation {
    let Some(entries) = node.as_map() else {
        return Generation::V2;
    };
    let v4_key = entries.iter().any(|(k, _)| {
        k.as_str()
            .is_some_and(|k| V4_CASE_KEYS.contains(&k) || k == "name" || k == "tests" || k == "eval_cases")
    });
    if v4_key || node.get("execution").is_some_and(execution_is_v4) || has_v4_grader(node) {
        Generation::V4
    } else {
        Generation::V2
    }
}

fn case_is_v4(case: &Node, shared_count: bool) -> bool {
    let Some(entries) = case.as_map() else {
        return false;
    };
    entries.iter().any(|(k, _)| {
        k.as_str()
            .is_some_and(|k| V4_CASE_KEYS.contains(&k) || (shared_count && SHARED_CASE_KEYS.contains(&k)))
    }) || case.get("execution").is_some_and(execution_is_v4)
}

fn execution_is_v4(execution: &Node) -> bool {
    execution.as_map().is_some_and(|entries| {
        entries
            .iter()
            .any(|(k, _)| k.as_str().is_some_and(|k| V4_EXECUTION_KEYS.contains(&k)))
    })
}

/// Whether a grader list anywhere under `node` has a 4.x-only entry.
fn has_v4_grader(node: &Node) -> bool {
    match &node.value {
        NodeValue::Map(entries) => entries.iter().any(|(k, v)| {
            let in_list = k.as_str().is_some_and(|k| LIST_KEYS.contains(&k))
                && v.as_seq().is_some_and(|items| items.iter().any(entry_is_v4));
            in_list || has_v4_grader(v)
        }),
        NodeValue::Seq(items) => items.iter().any(has_v4_grader),
        _ => false,
    }
}

fn entry_is_v4(entry: &Node) -> bool {
    match &entry.value {
        NodeValue::Str(_) => true,
        NodeValue::Map(entries) => {
            if entries.len() == 1 && entry.get("include").is_some() {
                return true;
            }
            let Some(kind) = entry.get("type").and_then(Node::as_str) else {
                return false;
            };
            let kebab = (kind.contains('-') && !V2_DASHED_TYPES.contains(&kind))
                || V4_TYPES.contains(&kind.replace('_', "-").as_str());
            let code_command =
                matches!(kind, "code_judge" | "code-judge" | "code" | "code_grader") && entry.get("command").is_some();
            kebab || code_command
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::node::parse_yaml;

    #[test]
    fn a_file_is_4x_when_it_uses_any_4x_spelling() {
        let cases = [
            (
                "evalcases: [{id: a, expected_outcome: x, input_messages: []}]",
                Generation::V2,
            ),
            (
                "evalcases: [{id: a, expected_outcome: x, input: q, expected_output: y}]",
                Generation::V2,
            ),
            (
                "evalcases: [{id: a, evaluators: [{type: llm-judge}, {type: code-judge, script: x}]}]",
                Generation::V2,
            ),
            (
                "execution: {evaluators: [{type: tool-trajectory}]}\nevalcases: []",
                Generation::V4,
            ),
            ("tests: []", Generation::V4),
            ("eval_cases: []", Generation::V4),
            ("cases: []", Generation::V4),
            ("name: s\nevalcases: []", Generation::V4),
            ("assertions: []\nevalcases: []", Generation::V4),
            ("evalcases: [{id: a, criteria: x}]", Generation::V4),
            ("evalcases: [{id: a, vars: {}}]", Generation::V4),
            ("evalcases: [{id: a, execution: {threshold: 0.5}}]", Generation::V4),
            (
                "evalcases: [{id: a, evaluators: [{type: contains, value: x}]}]",
                Generation::V4,
            ),
            ("evalcases: [{id: a, evaluators: [Names Paris]}]", Generation::V4),
            ("evalcases: [{id: a, evaluators: [{include: base}]}]", Generation::V4),
            (
                "evalcases: [{id: a, evaluators: [{type: code_judge, command: [x]}]}]",
                Generation::V4,
            ),
            (
                "evalcases: [{id: a, evaluators: [{type: composite, evaluators: [{type: field-accuracy}]}]}]",
                Generation::V4,
            ),
            ("description: d\nexecution: {target: t}\n", Generation::V2),
        ];
        for (yaml, want) in cases {
            let root = parse_yaml(yaml).expect("yaml");
            assert_eq!(of_suite(&root), want, "{yaml}");
        }
    }

    #[test]
    fn dataset_lines_keep_their_short_forms_in_2x() {
        for (json, want) in [
            (
                r#"{"id": "a", "input": "q", "expected_output": "x", "expected_outcome": "y"}"#,
                Generation::V2,
            ),
            (r#"{"id": "a", "input": "q", "criteria": "y"}"#, Generation::V4),
            (
                r#"{"id": "a", "input": "q", "assert": [{"type": "contains", "value": "x"}]}"#,
                Generation::V4,
            ),
            (r#"{"name": "suite"}"#, Generation::V4),
        ] {
            let value: serde_json::Value = serde_json::from_str(json).expect("json");
            let node = Node::from_json(&value, crate::config::Pos::new(1, 1));
            assert_eq!(of_dataset_part(&node), want, "{json}");
        }
    }
}
