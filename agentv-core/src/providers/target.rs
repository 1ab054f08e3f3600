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
        "Which provider answers (see the provider table); not needed with `use_target`.",
    ),
    Key::new(
        "use_target",
        Kind::Text,
        "AgentV 4.x delegation: this target is the one named here, often `${{ VAR }}` so one variable picks the target a suite runs on.",
    ),
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
    Key::new(
        "batch",
        Kind::Bool,
        "Answer this target's cases through the provider's batch API, at its batch price (`docs/batch.md`).",
    ),
];

/// Settings AgentV (2.1 and 4.42.4, `providers/targets.ts`) reads on some target. One that a
/// provider here does not read is a warning saying so, never taken for a typo of one it does.
pub const AGENTV_TARGET_KEYS: &[&str] = &[
    "api_format",
    "api_key",
    "api_version",
    "args",
    "arguments",
    "attachments_format",
    "base_url",
    "bearer_token",
    "binary",
    "binary_path",
    "bypass_permissions",
    "byok",
    "cli_path",
    "cli_url",
    "cli_verbose",
    "command",
    "command_template",
    "cwd",
    "deployment",
    "deployment_name",
    "discover",
    "dry_run",
    "endpoint",
    "eval_path",
    "executable",
    "execution_traces",
    "fallback_targets",
    "files_format",
    "fixtures",
    "github_token",
    "grader_target",
    "healthcheck",
    "judge_target",
    "keep_output_files",
    "keep_temp_files",
    "llm_provider",
    "log_dir",
    "log_directory",
    "log_format",
    "log_output_format",
    "max_budget_usd",
    "max_output_tokens",
    "max_retries",
    "max_tokens",
    "max_turns",
    "model",
    "model_reasoning_effort",
    "pi_model",
    "pi_provider",
    "pi_thinking",
    "pi_tools",
    "provider_batching",
    "resource",
    "resource_name",
    "response",
    "retry_backoff_factor",
    "retry_initial_delay_ms",
    "retry_max_delay_ms",
    "retry_status_codes",
    "session_dir",
    "session_id",
    "session_state_dir",
    "source_target",
    "stream_log",
    "subagent_mode_allowed",
    "subagent_root",
    "subprovider",
    "suite",
    "system_prompt",
    "temperature",
    "thinking",
    "thinking_budget",
    "timeout_ms",
    "timeout_seconds",
    "tools",
    "type",
    "url",
    "use_target",
    "variant",
    "verbose",
    "version",
    "vscode_cmd",
    "wait",
    "workers",
    "workspace_template",
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
    /// `use_target`: the target this one stands for, as written (a name or `${{ VAR }}`), and
    /// where; `provider` is empty then.
    pub use_target: Option<(String, Pos)>,
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
    /// Every variable the file names with `${{ VAR }}`, in any target: all of them are secrets,
    /// whether or not their target runs (`docs/architecture.md#secrets`).
    pub referenced_vars: Vec<String>,
    /// Targets that only grade (a promptfoo config's grading providers,
    /// `docs/promptfoo.md#grading-provider`): never run as eval targets.
    pub grading_only: Vec<String>,
    /// Other names `--target` may give a target, with the target each stands for: a promptfoo
    /// provider is chosen by its id or its label (`docs/promptfoo.md#providers`).
    pub aliases: Vec<(String, String)>,
}

impl TargetsFile {
    /// Whether target `name` is the one `wanted` names: by its name or one of its aliases.
    pub fn answers_to(&self, name: &str, wanted: &str) -> bool {
        name == wanted
            || self
                .aliases
                .iter()
                .any(|(alias, target)| alias == wanted && target == name)
    }

    /// The targets `wanted` names (each by name or alias), in file order and each once;
    /// `default`, when no target answers to it, stands for all of them. Errors: a name no
    /// target answers to, with the names that are there.
    pub fn select(&self, wanted: &[String]) -> Result<Vec<String>, super::ResolveError> {
        let mut chosen: Vec<&str> = Vec::new();
        for w in wanted {
            let found: Vec<&str> = self
                .targets
                .iter()
                .map(|t| t.name.as_str())
                .filter(|n| self.answers_to(n, w))
                .collect();
            if found.is_empty() && w != "default" {
                return Err(super::ResolveError::Unknown {
                    name: w.clone(),
                    available: self.names(),
                });
            }
            let found = if found.is_empty() {
                self.targets.iter().map(|t| t.name.as_str()).collect()
            } else {
                found
            };
            for name in found {
                if !chosen.contains(&name) {
                    chosen.push(name);
                }
            }
        }
        Ok(self
            .targets
            .iter()
            .map(|t| t.name.clone())
            .filter(|n| chosen.contains(&n.as_str()))
            .collect())
    }

    pub fn get(&self, name: &str) -> Option<&TargetDef> {
        self.targets.iter().find(|t| t.name == name)
    }

    /// Every declared target name an eval runs on, in file order.
    pub fn names(&self) -> Vec<String> {
        self.targets
            .iter()
            .filter(|t| !self.grading_only.contains(&t.name))
            .map(|t| t.name.clone())
            .collect()
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }
}
