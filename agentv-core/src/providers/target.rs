//! A target as a targets file declares it: the input of the provider table.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{Diagnostic, IntRange, Key, KeyTable, Kind, Node, Pos, Severity};

const COMMON_KEYS: &[Key] = &[
    Key::new(
        "name",
        Kind::Text,
        "The target's name, used by `--target` and `execution.target`.",
    )
    .required(),
    Key::new(
        "provider",
        Kind::Text,
        "Which provider answers (see the provider table).",
    )
    .required(),
    Key::new(
        "judge_target",
        Kind::Text,
        "The target that answers this target's LLM judges (default: the target itself); 4.x spells it `grader_target`.",
    )
    .aliases(&["grader_target"]),
    Key::new(
        "workers",
        Kind::Int(IntRange::at_least(1)),
        "Cases run at once when `--workers` is not given.",
    ),
    Key::new(
        "provider_batching",
        Kind::Bool,
        "Send all cases in one call when the provider can batch.",
    ),
];

/// The keys every target has, whatever its provider.
pub const TARGET_KEYS: KeyTable = KeyTable::new("a target", "One target.", &[COMMON_KEYS]);

/// One `targets:` entry, before its settings are resolved against the environment.
#[derive(Debug, Clone)]
pub struct TargetDef {
    pub name: String,
    /// The provider as written; the table is consulted when the target is built.
    pub provider: String,
    /// Where `provider:` is written.
    pub provider_pos: Pos,
    pub judge_target: Option<String>,
    pub workers: Option<usize>,
    pub provider_batching: bool,
    /// The whole entry with keys converted to snake_case; provider settings are read from it.
    pub settings: Node,
    pub pos: Pos,
    pub file: Arc<Path>,
    /// The targets file's text, so problems found when the target is built quote their line.
    pub source: Option<Arc<str>>,
}

impl TargetDef {
    /// Directory of the file that declares the target: relative paths in its settings resolve
    /// against it (`docs/architecture.md#relative-paths`).
    pub fn base_dir(&self) -> &Path {
        match self.file.parent() {
            // `targets.yaml` named without a directory lives in the working directory.
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        }
    }
}

/// A parsed targets file: its targets, and the problems found reading it.
#[derive(Debug, Clone)]
pub struct TargetsFile {
    pub path: PathBuf,
    pub targets: Vec<TargetDef>,
    pub diagnostics: Vec<Diagnostic>,
}

impl TargetsFile {
    pub fn get(&self, name: &str) -> Option<&TargetDef> {
        self.targets.iter().find(|t| t.name == name)
    }

    /// Every declared target name, in file order.
    pub fn names(&self) -> Vec<String> {
        self.targets.iter().map(|t| t.name.clone()).collect()
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }
}
