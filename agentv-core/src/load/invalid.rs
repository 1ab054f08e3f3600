//! A case left out of a run because its definition has errors. It does not run, but it is not
//! forgotten either: the run records it (`execution_status: invalid`, with its errors) in the
//! results file and every report, and counts it (`docs/results.md#invalid-cases`).

use std::path::{Path, PathBuf};

use crate::config::{Diagnostic, Node, Severity};

/// An invalid case: where it is, its id when it has a usable one, and its errors.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidCase {
    /// The case's id, when it has one that no other case of the file uses.
    pub id: Option<String>,
    /// The file that holds the case (a 4.x suite's cases may come from other files).
    pub file: PathBuf,
    /// The line the case starts on.
    pub line: u64,
    /// Its errors, as printed (`file:line:col: error: message`, then the help).
    pub errors: Vec<String>,
    /// What its record carries as `metadata` (a promptfoo row's keys, so the row is listed
    /// where promptfoo lists an errored row: `docs/promptfoo.md#results`).
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// The targets whose row it is not (`EvalCase::excluded_targets`).
    pub excluded_targets: Option<std::sync::Arc<Vec<String>>>,
}

impl InvalidCase {
    /// The invalid case at `line` of `file`, from the problems reported for it.
    pub(super) fn new(id: Option<String>, file: &Path, line: u64, reported: &[Diagnostic]) -> Self {
        let mut errors: Vec<String> = reported
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(ToString::to_string)
            .collect();
        if errors.is_empty() {
            errors.push(format!("{}:{line}: the case has errors", file.display()));
        }
        Self {
            id,
            file: file.to_path_buf(),
            line,
            errors,
            metadata: None,
            excluded_targets: None,
        }
    }

    /// The id its record carries: its own, else `<file name>:<line>` (a case without an id, or
    /// whose id another case already uses, is still one record, told apart by where it is).
    pub fn record_id(&self) -> String {
        match &self.id {
            Some(id) => id.clone(),
            None => {
                let name = self
                    .file
                    .file_name()
                    .map_or_else(|| self.file.display().to_string(), |n| n.to_string_lossy().into_owned());
                format!("{name}:{}", self.line)
            }
        }
    }
}

/// The `id` a YAML case node gives, when it is text.
pub(super) fn id_of_node(node: &Node) -> Option<String> {
    node.get("id")
        .and_then(Node::scalar_text)
        .filter(|id| !id.trim().is_empty())
}

/// The `id` a JSONL line gives, when it is JSON with a text id (other keys are skipped unread).
pub(super) fn id_of_line(line: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        id: Option<serde_json::Value>,
    }
    match serde_json::from_str::<Probe>(line).ok()?.id? {
        serde_json::Value::String(id) if !id.trim().is_empty() => Some(id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_case_is_named_by_its_id_else_by_where_it_is() {
        let with_id = InvalidCase::new(Some("a".into()), Path::new("evals/d.jsonl"), 3, &[]);
        assert_eq!(with_id.record_id(), "a");
        assert_eq!(with_id.errors, ["evals/d.jsonl:3: the case has errors"]);
        let without = InvalidCase::new(None, Path::new("evals/d.jsonl"), 7, &[]);
        assert_eq!(without.record_id(), "d.jsonl:7");
        assert_eq!(id_of_line(r#"{"id": "x", "input": [1, 2]}"#), Some("x".into()));
        for line in [r#"{"id": 5}"#, r#"{"id": " "}"#, "{not json", "[1]"] {
            assert_eq!(id_of_line(line), None, "{line}");
        }
    }
}
