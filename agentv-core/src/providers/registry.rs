//! Turns target definitions into providers: settings validated, `${{ VAR }}` resolved,
//! credentials checked before any call.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::agent::find_executable;
use super::anthropic::AnthropicProvider;
use super::cache::{CachedProvider, ResponseCache};
use super::claude_code::ClaudeCodeProvider;
use super::codex::CodexProvider;
use super::gemini::GeminiProvider;
use super::openai::OpenAiProvider;
use super::settings::{COMMON_KEYS, Settings};
use super::vscode::VsCodeProvider;
use super::{Provider, ProviderKind};
use crate::load::{Diagnostic, Diagnostics, Env, Fields, Secrets, TargetDef, TargetsFile};

/// A `${{ VAR }}` a target needs but the environment lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingVar {
    pub var: String,
    pub target: String,
    pub setting: String,
}

/// Why a target cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ResolveError {
    #[error("unknown target `{name}`; available targets: {}", list_or_none(available))]
    Unknown { name: String, available: Vec<String> },
    #[error("{}", missing_message(.0))]
    MissingCredentials(Vec<MissingVar>),
    #[error("target `{name}` is misconfigured:\n{}", join_lines(problems))]
    Invalid { name: String, problems: Vec<Diagnostic> },
    #[error(
        "target `{name}`: {what} executable `{executable}` not found on PATH; install it or set `executable` to its path"
    )]
    MissingExecutable {
        name: String,
        what: &'static str,
        executable: String,
    },
}

/// Every distinct problem once; all missing variables in one error.
fn merge_errors(errors: impl Iterator<Item = ResolveError>) -> Vec<ResolveError> {
    let mut missing: Vec<MissingVar> = Vec::new();
    let mut others: Vec<ResolveError> = Vec::new();
    for e in errors {
        match e {
            ResolveError::MissingCredentials(vars) => {
                missing.extend(vars.into_iter().filter(|v| !missing.contains(v)).collect::<Vec<_>>())
            }
            other => {
                if !others.iter().any(|o| o.to_string() == other.to_string()) {
                    others.push(other);
                }
            }
        }
    }
    if !missing.is_empty() {
        others.push(ResolveError::MissingCredentials(missing));
    }
    others
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_owned()
    } else {
        names.join(", ")
    }
}

fn join_lines(problems: &[Diagnostic]) -> String {
    problems.iter().map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n")
}

fn missing_message(missing: &[MissingVar]) -> String {
    let lines: Vec<String> = missing
        .iter()
        .map(|m| format!("  {} (target `{}`, setting `{}`)", m.var, m.target, m.setting))
        .collect();
    format!(
        "missing environment variables:\n{}\nset them in the environment or in a .env file next to the eval file",
        lines.join("\n")
    )
}

/// A target ready to run cases: its provider, the judge provider, and run settings.
#[derive(Clone)]
pub struct ResolvedTarget {
    pub name: String,
    pub provider: Arc<dyn Provider>,
    pub judge_name: String,
    pub judge: Arc<dyn Provider>,
    pub workers: Option<usize>,
    pub batching: bool,
    /// Resolves other targets lazily (code judges may name one through the proxy).
    pub registry: Arc<TargetRegistry>,
}

impl fmt::Debug for ResolvedTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolvedTarget")
            .field("name", &self.name)
            .field("provider", &self.provider.kind())
            .field("judge", &self.judge_name)
            .finish()
    }
}

/// All targets of one targets file, resolved on first use.
pub struct TargetRegistry {
    file: Option<TargetsFile>,
    env: Arc<Env>,
    secrets: Secrets,
    child_env: Arc<[(String, String)]>,
    cache: Mutex<HashMap<String, Arc<dyn Provider>>>,
    warnings: Mutex<Vec<Diagnostic>>,
    /// `--cache`: answers of every provider but the mock are looked up here first.
    responses: Option<Arc<ResponseCache>>,
}

impl TargetRegistry {
    pub fn new(file: Option<TargetsFile>, env: Arc<Env>, secrets: Secrets) -> Self {
        Self {
            file,
            child_env: env.child_env(),
            env,
            secrets,
            cache: Mutex::new(HashMap::new()),
            warnings: Mutex::new(Vec::new()),
            responses: None,
        }
    }

    /// Caches the answers of this registry's providers in `cache`.
    pub fn with_response_cache(mut self, cache: Option<Arc<ResponseCache>>) -> Self {
        self.responses = cache;
        self
    }

    /// A registry whose only target is `provider` (dry runs, tests).
    pub fn with_provider(provider: Arc<dyn Provider>, env: Arc<Env>) -> Self {
        let registry = Self::new(None, env, Secrets::default());
        if let Ok(mut cache) = registry.cache.lock() {
            cache.insert(provider.target_name().to_owned(), provider);
        }
        registry
    }

    pub fn targets_path(&self) -> Option<&Path> {
        self.file.as_ref().map(|f| f.path.as_path())
    }

    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Variables from `.env` files, for child processes.
    pub fn child_env(&self) -> Arc<[(String, String)]> {
        self.child_env.clone()
    }

    /// Target names a caller may pick from.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.file.as_ref().map(TargetsFile::names).unwrap_or_default();
        if let Ok(cache) = self.cache.lock() {
            for name in cache.keys() {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
        names
    }

    /// Warnings found while resolving (unknown settings); drained by the caller.
    pub fn take_warnings(&self) -> Vec<Diagnostic> {
        self.warnings
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }

    /// The provider of target `name`, built on first use.
    pub fn resolve(&self, name: &str) -> Result<Arc<dyn Provider>, ResolveError> {
        if let Some(p) = self.cache.lock().ok().and_then(|c| c.get(name).cloned()) {
            return Ok(p);
        }
        let def = self
            .file
            .as_ref()
            .and_then(|f| f.get(name))
            .ok_or_else(|| ResolveError::Unknown {
                name: name.to_owned(),
                available: self.names(),
            })?;
        let provider = self.build(def)?;
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(name.to_owned(), provider.clone());
        }
        Ok(provider)
    }

    fn definition(&self, name: &str) -> Option<&TargetDef> {
        self.file.as_ref().and_then(|f| f.get(name))
    }

    /// Resolves `name` and its judge target together, so one error lists every missing
    /// variable of both.
    pub fn resolve_target(self: &Arc<Self>, name: &str) -> Result<ResolvedTarget, Vec<ResolveError>> {
        let def = self.definition(name);
        let judge_name = def
            .and_then(|d| d.judge_target.clone())
            .unwrap_or_else(|| name.to_owned());
        let provider = self.resolve(name);
        let judge = if judge_name == name {
            provider.clone()
        } else {
            self.resolve(&judge_name)
        };
        let (provider, judge) = match (provider, judge) {
            (Ok(p), Ok(j)) => (p, j),
            (p, j) => return Err(merge_errors([p.err(), j.err()].into_iter().flatten())),
        };
        Ok(ResolvedTarget {
            name: name.to_owned(),
            provider,
            judge_name,
            judge,
            workers: def.and_then(|d| d.workers),
            batching: def.is_some_and(|d| d.provider_batching),
            registry: self.clone(),
        })
    }

    /// Checks every target's settings without needing its variables (for `agentv validate`).
    pub fn check_all(&self) -> Vec<ResolveError> {
        let Some(file) = &self.file else {
            return Vec::new();
        };
        file.targets
            .iter()
            .filter_map(|def| match self.build(def) {
                Err(e @ ResolveError::Invalid { .. }) => Some(e),
                _ => None,
            })
            .collect()
    }

    fn build(&self, def: &TargetDef) -> Result<Arc<dyn Provider>, ResolveError> {
        let mut diags = Diagnostics::new(&def.file);
        let mut s = Settings {
            fields: Fields::of(&def.settings, "a target", &mut diags).ok_or_else(|| ResolveError::Invalid {
                name: def.name.clone(),
                problems: Vec::new(),
            })?,
            env: &self.env,
            secrets: &self.secrets,
            target: &def.name,
            base_dir: def.base_dir().to_path_buf(),
            diags,
            missing: Vec::new(),
        };
        for key in COMMON_KEYS {
            let _ = s.fields.take(&[key]);
        }
        let provider: Option<Arc<dyn Provider>> = match def.provider {
            ProviderKind::Mock => super::mock::from_settings(def, &mut s).map(|p| Arc::new(p) as Arc<dyn Provider>),
            ProviderKind::Cli => {
                super::cli::from_settings(def, &mut s, self.child_env.clone()).map(|p| Arc::new(p) as Arc<dyn Provider>)
            }
            ProviderKind::OpenAi | ProviderKind::Azure => super::openai::from_settings(def, &mut s)
                .map(|p| Arc::new(OpenAiProvider::new(def.name.clone(), p)) as Arc<dyn Provider>),
            ProviderKind::Anthropic => super::anthropic::from_settings(def, &mut s)
                .map(|p| Arc::new(AnthropicProvider::new(def.name.clone(), p)) as Arc<dyn Provider>),
            ProviderKind::Gemini => super::gemini::from_settings(&mut s)
                .map(|p| Arc::new(GeminiProvider::new(def.name.clone(), p)) as Arc<dyn Provider>),
            ProviderKind::ClaudeCode => super::agent::from_settings(&mut s, self.child_env.clone(), "claude", &[])
                .map(|c| Arc::new(ClaudeCodeProvider::new(def.name.clone(), c)) as Arc<dyn Provider>),
            ProviderKind::Codex => {
                let policy = s
                    .string(&["approval_policy", "ask_for_approval"], false)
                    .unwrap_or_else(|| "never".to_owned());
                super::agent::from_settings(
                    &mut s,
                    self.child_env.clone(),
                    "codex",
                    &["approval_policy", "ask_for_approval"],
                )
                .map(|c| Arc::new(CodexProvider::new(def.name.clone(), c, policy)) as Arc<dyn Provider>)
            }
            ProviderKind::VsCode | ProviderKind::VsCodeInsiders => {
                super::vscode::from_settings(def, &mut s, self.child_env.clone())
                    .map(|c| Arc::new(VsCodeProvider::new(def.name.clone(), def.provider, c)) as Arc<dyn Provider>)
            }
        };
        let Settings { diags, missing, .. } = s;
        let all = diags.into_vec();
        let (errors, warnings): (Vec<_>, Vec<_>) = all
            .into_iter()
            .partition(|d| d.severity == crate::load::Severity::Error);
        if let Ok(mut w) = self.warnings.lock() {
            w.extend(warnings);
        }
        if !errors.is_empty() {
            return Err(ResolveError::Invalid {
                name: def.name.clone(),
                problems: errors,
            });
        }
        if !missing.is_empty() {
            return Err(ResolveError::MissingCredentials(missing));
        }
        let provider = provider.ok_or_else(|| ResolveError::Invalid {
            name: def.name.clone(),
            problems: Vec::new(),
        })?;
        if let Some(executable) = provider
            .public_settings()
            .get("executable")
            .and_then(serde_json::Value::as_str)
            && find_executable(executable).is_none()
        {
            return Err(ResolveError::MissingExecutable {
                name: def.name.clone(),
                what: if def.provider == ProviderKind::Codex {
                    "Codex"
                } else {
                    "Claude Code"
                },
                executable: executable.to_owned(),
            });
        }
        Ok(match &self.responses {
            Some(cache) if def.provider != ProviderKind::Mock => Arc::new(CachedProvider::new(provider, cache.clone())),
            _ => provider,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::load_targets_file;

    fn registry(yaml: &str, vars: &[(&str, &str)]) -> (Arc<TargetRegistry>, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("targets.yaml");
        std::fs::write(&path, yaml).expect("write");
        let file = load_targets_file(&path);
        assert!(!file.has_errors(), "{:?}", file.diagnostics);
        let env = Env::from_pairs(vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        (
            Arc::new(TargetRegistry::new(Some(file), Arc::new(env), Secrets::default())),
            dir,
        )
    }

    #[test]
    fn unknown_target_lists_the_available_ones() {
        let (reg, _d) = registry(
            "targets:\n  - {name: a, provider: mock}\n  - {name: b, provider: mock}\n",
            &[],
        );
        let errs = reg.resolve_target("c").expect_err("unknown");
        assert_eq!(errs[0].to_string(), "unknown target `c`; available targets: a, b");
    }

    #[test]
    fn every_missing_variable_of_target_and_judge_is_listed() {
        let yaml = "targets:\n  - name: agent\n    provider: cli\n    judge_target: judge\n    command_template: ${{ AGENTV_T_CMD }}\n  - name: judge\n    provider: mock\n    response: ${{ AGENTV_T_JUDGE }}\n";
        let (reg, _d) = registry(yaml, &[]);
        let errs = reg.resolve_target("agent").expect_err("missing");
        assert_eq!(errs.len(), 1, "one error for every missing variable");
        assert_eq!(
            errs[0].to_string(),
            "missing environment variables:\n  AGENTV_T_CMD (target `agent`, setting `command_template`)\n  AGENTV_T_JUDGE (target `judge`, setting `response`)\nset them in the environment or in a .env file next to the eval file"
        );
    }

    #[test]
    fn resolved_values_are_registered_as_secrets() {
        let yaml = "targets:\n  - {name: m, provider: mock, response: '${{ AGENTV_T_SECRET }}'}\n";
        let (reg, _d) = registry(yaml, &[("AGENTV_T_SECRET", "hunter2-secret")]);
        reg.resolve("m").expect("resolves");
        assert_eq!(reg.secrets().redact("x hunter2-secret y"), "x *** y");
    }

    #[test]
    fn unsupported_placeholder_is_a_configuration_error() {
        let (reg, _d) = registry(
            "targets:\n  - name: c\n    provider: cli\n    commandTemplate: run {PROMPT} {MODEL}\n",
            &[],
        );
        let err = reg.resolve("c").expect_err("invalid");
        let text = err.to_string();
        assert!(
            text.contains("targets.yaml:4:22: error: unsupported placeholder {MODEL} in `command_template`"),
            "{text}"
        );
    }

    #[test]
    fn unknown_settings_warn_with_position() {
        let (reg, _d) = registry("targets:\n  - name: m\n    provider: mock\n    respones: hi\n", &[]);
        reg.resolve("m").expect("resolves");
        let warnings = reg.take_warnings();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0]
                .to_string()
                .contains(":4:5: warning: unknown key `respones` in target `m`"),
            "{}",
            warnings[0]
        );
    }
}
