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
//! - in any grader list: a type that the grader table spells only for 4.x (`contains`,
//!   `regex`, `rubrics`, `llm-grader`, `tool-trajectory`, … also in snake_case; see
//!   [`crate::evaluators::rules::spelled_only_in_v4`]), a bare string, an `{include: NAME}`
//!   entry, or a code grader with `command`. A type no grader spells decides nothing, and a
//!   spelling added to a 2.x grader never moves a 2.x file.
//!
//! A promptfoo config is told apart before any of this, by its keys or its name
//! ([`is_promptfoo_config`]).

use std::path::Path;

use crate::config::Node;
use crate::evaluators::{GRADERS, GraderEntry, rules};
use crate::model::Generation;

/// The grader table the rules read: the real one, or a test's.
type Table<'t> = &'t [&'t [&'static GraderEntry]];

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

/// Top-level keys only a promptfoo config has: with none of AgentV's case lists beside them,
/// they make the file a promptfoo config (`docs/promptfoo.md#running-a-config`).
const PROMPTFOO_KEYS: &[&str] = &["prompts", "providers", "defaultTest", "scenarios", "evaluateOptions"];

/// Whether the YAML tree `root` of the file at `path` is a promptfoo config: its file name is
/// `promptfooconfig.*`, or it has `prompts` or `providers` (or another key only promptfoo
/// configs have) and no `evalcases`. An AgentV 4.x suite's `tests` alone never makes one.
pub fn is_promptfoo_config(path: &Path, root: &Node) -> bool {
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("promptfooconfig."));
    let Some(entries) = root.as_map() else {
        return named;
    };
    let keyed = entries
        .iter()
        .any(|(k, _)| k.as_str().is_some_and(|k| PROMPTFOO_KEYS.contains(&k)));
    named || (keyed && root.get("evalcases").is_none())
}

/// The generation of a YAML eval file's tree.
pub fn of_suite(root: &Node) -> Generation {
    of_suite_in(root, GRADERS)
}

/// [`of_suite`] against grader table `table`.
fn of_suite_in(root: &Node, table: Table<'_>) -> Generation {
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
    if rules::has_v4_grader(root, table) {
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
    if v4_key || node.get("execution").is_some_and(execution_is_v4) || rules::has_v4_grader(node, GRADERS) {
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

#[cfg(test)]
mod pinned {
    //! The generation of every shipped eval file, pinned: a grader name added to the table
    //! that moved any of them to other scoring rules fails here.

    use std::path::{Path, PathBuf};

    use super::*;
    use crate::config::node::parse_yaml;
    use crate::evaluators::Names;
    use crate::load::{FileKind, Purpose, Workspace, discover, load_eval_file};

    /// `<path> <generation>` for every eval file under the shipped directories.
    fn classified() -> String {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let repo = crate::paths::normalize(&repo);
        let ws = Workspace::from_cwd(repo.clone());
        let dirs = ["examples".to_owned(), "compat/suites".to_owned()];
        let files = discover(&dirs, &ws, Purpose::Run).expect("the shipped directories exist");
        let mut lines: Vec<String> = files
            .into_iter()
            .filter(|(_, kind)| *kind == FileKind::Eval)
            .map(|(path, _)| {
                let suite = load_eval_file(&path, &ws);
                let shown: PathBuf = path.strip_prefix(&repo).map_or(path.clone(), Path::to_path_buf);
                format!("{} {}", shown.display(), suite.generation.as_str())
            })
            .collect();
        lines.sort();
        lines.join("\n") + "\n"
    }

    #[test]
    fn every_shipped_eval_file_keeps_its_generation() {
        let want = include_str!("generation_pins.txt");
        let got = classified();
        if got != want {
            let changed: Vec<String> = got
                .lines()
                .filter(|l| !want.lines().any(|w| w == *l))
                .map(|l| format!("  now: {l}"))
                .chain(
                    want.lines()
                        .filter(|w| !got.lines().any(|l| l == *w))
                        .map(|w| format!("  was: {w}")),
                )
                .collect();
            panic!(
                "the generation of shipped eval files changed (a grader name moved them, or the files changed):\n{}\n\
                 if the files changed on purpose, write the new list to agentv-core/src/load/generation_pins.txt:\n{got}",
                changed.join("\n")
            );
        }
    }

    static SHORT_ANSWER: GraderEntry = GraderEntry {
        name: "short_answer",
        names: Names {
            v2: &["short_answer", "short-answer"],
            v4: &["short-answer"],
            promptfoo: &[],
        },
        doc: "A throwaway 2.x grader with a kebab-case alias.",
        keys: &crate::evaluators::GRADER_KEYS,
        parse: |_, _| None,
    };

    static SHORT_ANSWER_V4_ONLY: GraderEntry = GraderEntry {
        names: Names {
            v2: &["short_answer"],
            v4: &["short-answer"],
            promptfoo: &[],
        },
        ..SHORT_ANSWER
    };

    #[test]
    fn a_kebab_case_alias_of_a_2x_grader_leaves_2x_files_alone() {
        let suite = "evalcases:\n  - id: a\n    input: hello\n    evaluators: [{type: short-answer, max: 5}]\n";
        let root = parse_yaml(suite).expect("yaml");
        let with = |entry: &'static GraderEntry| {
            let mut table: Vec<&[&'static GraderEntry]> = GRADERS.to_vec();
            let extra: &'static [&'static GraderEntry] = Box::leak(Box::new([entry]));
            table.push(extra);
            of_suite_in(&root, &table)
        };
        assert_eq!(
            of_suite_in(&root, GRADERS),
            Generation::V2,
            "an unknown type decides nothing"
        );
        assert_eq!(with(&SHORT_ANSWER), Generation::V2, "a 2.x spelling never moves a file");
        assert_eq!(
            with(&SHORT_ANSWER_V4_ONLY),
            Generation::V4,
            "a spelling only 4.x has makes the file 4.x"
        );
    }

    #[test]
    fn a_promptfoo_config_is_told_by_its_keys_or_its_name() {
        for (name, yaml, want) in [
            ("suite.yaml", "prompts: [hi]\ntests: []\n", true),
            ("suite.yaml", "providers: [echo]\n", true),
            ("promptfooconfig.yaml", "tests: []\n", true),
            ("promptfooconfig.yml", "description: x\n", true),
            ("suite.yaml", "tests: []\n", false),
            ("suite.yaml", "evalcases: []\nprompts: x\n", false),
            ("suite.yaml", "description: d\n", false),
        ] {
            let root = parse_yaml(yaml).expect("yaml");
            assert_eq!(is_promptfoo_config(Path::new(name), &root), want, "{name}: {yaml}");
        }
    }
}
