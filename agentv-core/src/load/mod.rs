//! Load: files → typed, validated model. Every problem is reported with file:line:col.
//!
//! Eval files, targets files, `.agentv.yaml` and `.env` are read here; each section is read
//! through its key table (`load::keys` for eval files, the provider and grader tables for
//! their entries), so every key is declared once. The neutral pieces (the position-keeping
//! tree, diagnostics, the key-table reader, paths, the environment) live in `config`, `paths`
//! and `env`, and are re-exported here for callers that knew them from this module.

mod case;
mod cases_source;
mod dependencies;
mod discover;
mod eval_file;
pub mod generation;
mod guidelines;
mod invalid;
pub mod keys;
mod metadata;
pub mod promptfoo;
#[cfg(test)]
#[allow(
    clippy::too_many_lines,
    reason = "a table-driven test keeps its rows and checks in one place"
)]
mod shapes_tests;
mod targets;
#[cfg(test)]
mod test_project;
pub mod workspace;

pub use crate::config::keys::to_snake_case;
pub use crate::config::{Diagnostic, Diagnostics, Fields, Severity, describe, did_you_mean, node, source};
pub use crate::env::{Env, env_reference};
pub use crate::paths::{Workspace, file_name_safe, normalize};
pub use crate::providers::{TargetDef, TargetsFile};
pub use crate::redact::Secrets;
pub use discover::{
    DiscoverError, EVAL_EXTENSIONS, FileKind, Purpose, classify, discover, expand_paths, is_sidecar, walk,
};
pub use eval_file::{CaseFilter, LoadedCase, LoadedSuite, SuiteInfo, load_eval_file, load_eval_file_filtered};
pub use guidelines::{CONFIG_FILE, DEFAULT_GUIDELINE_PATTERNS, GuidelineMatcher};
pub use invalid::InvalidCase;
pub use targets::{TARGET_FILE_NAMES, TARGETS_FILE, find_targets_file, is_targets_file_name, load_targets_file};
