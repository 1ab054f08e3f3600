//! Load: files → typed, validated model. Every problem is reported with file:line:col.

mod diagnostics;
mod eval_file;
mod evaluators;
pub mod node;
mod paths;
pub mod source;

pub use diagnostics::{Diagnostic, Diagnostics, Fields, Severity, describe, did_you_mean};
pub use eval_file::{CaseFilter, LoadedSuite, load_eval_file, load_eval_file_filtered};
pub use paths::{DEFAULT_GUIDELINE_PATTERNS, GuidelineMatcher, Workspace, file_name_safe, normalize};
mod env;
mod targets;

pub use env::{Env, Secrets, env_reference};
pub use targets::{
    KNOWN_PROVIDERS, ProviderKind, TARGET_FILE_NAMES, TargetDef, TargetsFile, UnsupportedTarget, find_targets_file,
    is_targets_file_name, load_targets_file, to_snake_case,
};
mod discover;

pub use discover::{DiscoverError, EVAL_EXTENSIONS, FileKind, classify, expand_paths, is_sidecar, walk};
