//! Turns target definitions into providers through the provider table: settings validated,
//! `${{ VAR }}` resolved, credentials and executables checked before any call.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::agent::find_executable;
use super::cache::{CachedProvider, ResponseCache};
use super::settings::TargetSettings;
use super::target::{TargetDef, TargetsFile};
use super::{BuildContext, Provider, ProviderEntry};
use crate::config::interpolate::{env_reference, env_references};
use crate::config::{Diagnostic, Diagnostics, Pos, Severity};
use crate::env::Env;
use crate::redact::Secrets;

/// A `${{ VAR }}` a target needs but the environment lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingVar {
    pub var: String,
    pub target: String,
    pub setting: String,
}

/// Why a target cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResolveError {
    #[error("unknown target `{name}`; available targets: {}", list_or_none(available))]
    Unknown { name: String, available: Vec<String> },
    #[error("target `{name}` has unknown provider `{provider}` ({}:{pos}); use {}", file.display(), super::known_providers())]
    UnsupportedProvider {
        name: String,
        provider: String,
        /// Where its `provider:` is written.
        file: PathBuf,
        pos: Pos,
    },
    #[error("{}", missing_message(.0))]
    MissingCredentials(Vec<MissingVar>),
    #[error("target `{name}` is misconfigured:\n{}", join_lines(problems))]
    Invalid { name: String, problems: Vec<Diagnostic> },
    #[error(
        "target `{name}`: {what} executable {executable} not found on PATH; install it or set `executable` to its path"
    )]
    MissingExecutable {
        name: String,
        what: &'static str,
        /// The name in backquotes, or the variable it came from (a secret is never shown).
        executable: String,
    },
}

impl ResolveError {
    /// Every distinct error once, with all missing variables in one trailing error: the one
    /// place errors of several targets (a target and its judge, several suites) are combined.
    pub fn merge(errors: impl IntoIterator<Item = ResolveError>) -> Vec<ResolveError> {
        let mut missing: Vec<MissingVar> = Vec::new();
        let mut others: Vec<ResolveError> = Vec::new();
        for e in errors {
            match e {
                ResolveError::MissingCredentials(vars) => {
                    for v in vars {
                        if !missing.contains(&v) {
                            missing.push(v);
                        }
                    }
                }
                other => {
                    if !others.contains(&other) {
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
}

/// The variable of setting `names` (first present) when its value is a `${{ VAR }}`.
fn setting_variable<'n>(def: &TargetDef, mut names: impl Iterator<Item = &'n str>) -> Option<String> {
    let entries = def.settings.as_map()?;
    names.find_map(|name| {
        entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(name))
            .and_then(|(_, v)| v.as_str())
            .map(|text| {
                let vars: Vec<&str> = env_references(text).collect();
                (!vars.is_empty()).then(|| vars.join(", "))
            })
    })?
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

/// All targets of one targets file, built on first use.
pub struct TargetRegistry {
    file: Option<TargetsFile>,
    env: Arc<Env>,
    secrets: Secrets,
    child_env: Arc<[(String, String)]>,
    /// Providers built so far, by target name.
    built: Mutex<HashMap<String, Arc<dyn Provider>>>,
    warnings: Mutex<Vec<Diagnostic>>,
    /// `--cache`: answers of cacheable providers are looked up here first.
    responses: Option<Arc<ResponseCache>>,
}

impl TargetRegistry {
    /// A registry over `file`'s targets. A target whose provider this version does not know is
    /// a warning here (the file stays usable); only using that target fails.
    pub fn new(file: Option<TargetsFile>, env: Arc<Env>, secrets: Secrets) -> Self {
        let mut warnings = Vec::new();
        for def in file.iter().flat_map(|f| &f.targets) {
            if def.use_target.is_none() && super::find(&def.provider).is_none() {
                let mut d = Diagnostics::new(&def.file);
                if let Some(text) = &def.source {
                    d.set_source(text.clone());
                }
                d.warn(
                    def.provider_pos,
                    format!(
                        "target `{}` has unknown provider `{}`; runs that use it will fail",
                        def.name, def.provider
                    ),
                    Some(format!("use {}", super::known_providers())),
                );
                warnings.extend(d.into_vec());
            }
        }
        Self {
            file,
            child_env: env.child_env(),
            env,
            secrets,
            built: Mutex::new(HashMap::new()),
            warnings: Mutex::new(warnings),
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
        locked(&registry.built).insert(provider.target_name().to_owned(), provider);
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
        for name in locked(&self.built).keys() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// Warnings found while resolving (unknown settings, unknown providers); drained by the
    /// caller.
    pub fn take_warnings(&self) -> Vec<Diagnostic> {
        std::mem::take(&mut *locked(&self.warnings))
    }

    /// The provider of target `name` (of the target it delegates to, through `use_target`),
    /// built on first use.
    pub fn resolve(&self, name: &str) -> Result<Arc<dyn Provider>, ResolveError> {
        if let Some(p) = locked(&self.built).get(name).cloned() {
            return Ok(p);
        }
        let followed = self.follow(name)?;
        if followed != name {
            return self.resolve(&followed);
        }
        let (file, def) = self
            .file
            .as_ref()
            .and_then(|f| Some((f, f.get(name)?)))
            .ok_or_else(|| ResolveError::Unknown {
                name: name.to_owned(),
                available: self.names(),
            })?;
        let entry = super::find(&def.provider).ok_or_else(|| ResolveError::UnsupportedProvider {
            name: def.name.clone(),
            provider: def.provider.clone(),
            file: file.path.clone(),
            pos: def.provider_pos,
        })?;
        let provider = self.build(def, entry)?;
        locked(&self.built).insert(name.to_owned(), provider.clone());
        Ok(provider)
    }

    /// Whether target `name` asks for batch mode (`batch: true`, `docs/batch.md`).
    pub fn batches(&self, name: &str) -> bool {
        self.definition(name).is_some_and(|d| d.provider_batching)
    }

    fn definition(&self, name: &str) -> Option<&TargetDef> {
        self.file.as_ref().and_then(|f| f.get(name))
    }

    /// The target `name` stands for: itself, or the end of its `use_target` chain (AgentV 4.x
    /// delegation; a `${{ VAR }}` names the target, so an unset variable is reported as
    /// missing, like a credential). At most ten links, and no loops.
    fn follow(&self, name: &str) -> Result<String, ResolveError> {
        let mut chain = vec![name.to_owned()];
        let mut current = name.to_owned();
        for _ in 0..10 {
            let Some(def) = self.definition(&current) else {
                return Ok(current);
            };
            let Some((written, pos)) = &def.use_target else {
                return Ok(current);
            };
            let next = match env_reference(written) {
                Some(var) => self.env.get(var).map(|v| v.trim().to_owned()).ok_or_else(|| {
                    ResolveError::MissingCredentials(vec![MissingVar {
                        var: var.to_owned(),
                        target: def.name.clone(),
                        setting: "use_target".to_owned(),
                    }])
                })?,
                None => written.clone(),
            };
            let problem = if self.definition(&next).is_none() {
                Some(format!(
                    "`use_target` of target `{}` names unknown target `{next}`; available targets: {}",
                    def.name,
                    list_or_none(&self.names())
                ))
            } else if chain.contains(&next) {
                Some(format!("`use_target` loops: {} -> {next}", chain.join(" -> ")))
            } else {
                None
            };
            if let Some(message) = problem {
                let mut d = Diagnostics::new(&def.file);
                if let Some(text) = &def.source {
                    d.set_source(text.clone());
                }
                d.error(*pos, message, None);
                return Err(ResolveError::Invalid {
                    name: def.name.clone(),
                    problems: d.into_vec(),
                });
            }
            chain.push(next.clone());
            current = next;
        }
        let mut d = Diagnostics::new(self.targets_path().unwrap_or(Path::new("targets.yaml")));
        d.error(
            Pos::default(),
            format!(
                "`use_target` of target `{name}` goes through more than ten targets: {}",
                chain.join(" -> ")
            ),
            None,
        );
        Err(ResolveError::Invalid {
            name: name.to_owned(),
            problems: d.into_vec(),
        })
    }

    /// Resolves `name` and its judge target together, so one error lists every missing
    /// variable of both.
    pub fn resolve_target(self: &Arc<Self>, name: &str) -> Result<ResolvedTarget, Vec<ResolveError>> {
        let followed = self.follow(name).map_err(|e| vec![e])?;
        let name = followed.as_str();
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
            (p, j) => return Err(ResolveError::merge([p.err(), j.err()].into_iter().flatten())),
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

    /// Builds every target as a run that uses it would, calling nothing (for `agentv
    /// validate`), and checks that each `judge_target` names a target of the file. Targets with
    /// an unknown provider are left out: [`TargetRegistry::new`] warned about them.
    pub fn check_all(&self) -> Vec<ResolveError> {
        let Some(file) = &self.file else {
            return Vec::new();
        };
        let mut errors = Vec::new();
        for def in &file.targets {
            if def.use_target.is_none() && super::find(&def.provider).is_none() {
                continue;
            }
            errors.extend(self.resolve(&def.name).err());
            if let Some(judge) = &def.judge_target
                && !file.names().contains(judge)
            {
                let mut diags = Diagnostics::new(&def.file);
                if let Some(text) = &def.source {
                    diags.set_source(text.clone());
                }
                let pos = def
                    .settings
                    .get("judge_target")
                    .or_else(|| def.settings.get("grader_target"))
                    .map_or(def.pos, |n| n.pos);
                diags.error(
                    pos,
                    format!("`judge_target` of target `{}` names unknown target `{judge}`", def.name),
                    Some(format!("available targets: {}", list_or_none(&file.names()))),
                );
                errors.push(ResolveError::Invalid {
                    name: def.name.clone(),
                    problems: diags.into_vec(),
                });
            }
        }
        errors
    }

    /// Builds `def`'s provider with its table entry.
    fn build(&self, def: &TargetDef, entry: &'static ProviderEntry) -> Result<Arc<dyn Provider>, ResolveError> {
        let invalid = |problems| ResolveError::Invalid {
            name: def.name.clone(),
            problems,
        };
        let mut settings = TargetSettings::new(def, entry.keys, &self.env, &self.secrets).map_err(invalid)?;
        let ctx = BuildContext {
            target: &def.name,
            pos: def.pos,
            provider: &def.provider,
            child_env: self.child_env.clone(),
        };
        let provider = (entry.build)(&mut settings, &ctx);
        // LLM APIs report tokens, not cost: their answers are priced (`docs/running.md#cost`).
        let provider = super::priced::wrap(provider, entry, &mut settings);
        let found = settings.finish();
        let (errors, warnings): (Vec<_>, Vec<_>) = found
            .diagnostics
            .into_iter()
            .partition(|d| d.severity == Severity::Error);
        locked(&self.warnings).extend(warnings);
        if !errors.is_empty() {
            return Err(invalid(errors));
        }
        if !found.missing.is_empty() {
            return Err(ResolveError::MissingCredentials(found.missing));
        }
        let provider = provider.ok_or_else(|| invalid(Vec::new()))?;
        check_executable(def, entry, provider.as_ref())?;
        Ok(match &self.responses {
            Some(cache) if entry.cacheable => Arc::new(CachedProvider::new(provider, cache.clone())),
            _ => provider,
        })
    }
}

/// The program `provider` runs must be installed (when its entry needs one).
fn check_executable(def: &TargetDef, entry: &ProviderEntry, provider: &dyn Provider) -> Result<(), ResolveError> {
    let (Some(need), Some(executable)) = (entry.executable, provider.executable()) else {
        return Ok(());
    };
    if find_executable(executable).is_some() {
        return Ok(());
    }
    let spellings = entry.keys.find(need.setting).map(|k| k.names());
    Err(ResolveError::MissingExecutable {
        name: def.name.clone(),
        what: need.display,
        executable: match spellings.and_then(|names| setting_variable(def, names)) {
            Some(var) => format!("(the value of {var})"),
            None => format!("`{executable}`"),
        },
    })
}

/// The registry's caches, whatever happened to another thread holding them. A thread that
/// panicked while holding one (a provider's constructor, a caller's bug) left it whole: every
/// change under these locks is a single insert, extend or take. Ignoring the poison instead, as
/// `if let Ok(..)` would, drops warnings and rebuilds targets without a word.
fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::load_targets_file;

    #[test]
    fn a_poisoned_registry_keeps_its_targets_and_warnings() {
        let (reg, _d) = registry("targets:\n  - {name: a, provider: mock, typo_key: 1}\n", &[]);
        let first = reg.resolve("a").expect("resolves");
        for lock in [0, 1] {
            let reg = reg.clone();
            let poisoned = std::thread::spawn(move || {
                let _built = (lock == 0).then(|| reg.built.lock());
                let _warnings = (lock == 1).then(|| reg.warnings.lock());
                panic!("a thread dies holding the lock");
            })
            .join();
            assert!(poisoned.is_err());
        }
        assert!(reg.built.is_poisoned() && reg.warnings.is_poisoned());
        let again = reg.resolve("a").expect("still resolves");
        assert!(Arc::ptr_eq(&first, &again), "built once, not rebuilt");
        assert_eq!(reg.names(), ["a"]);
        let warnings: Vec<String> = reg.take_warnings().iter().map(ToString::to_string).collect();
        assert!(warnings.iter().any(|w| w.contains("typo_key")), "{warnings:?}");
    }

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

    /// AgentV 4.x spellings (`agentv-4.md` §5.2, §5.5): `command` for `command_template`,
    /// `grader_target` for `judge_target`, a healthcheck whose key says its kind.
    #[tokio::test]
    async fn agentv_4_target_keys_are_read() {
        let yaml = "targets:\n  - name: agent\n    provider: cli\n    command: 'echo hi > {OUTPUT_FILE}'\n    grader_target: judge\n    healthcheck: {command: 'exit 3'}\n  - {name: judge, provider: mock}\n";
        let (reg, dir) = registry(yaml, &[]);
        let target = reg.resolve_target("agent").expect("resolves");
        assert_eq!(target.judge_name, "judge");
        let probe = target.provider.healthcheck(dir.path()).await;
        assert!(probe.is_err(), "the command healthcheck ran: {probe:?}");

        let yaml =
            "targets:\n  - {name: a, provider: cli, command: 'x {OUTPUT_FILE}', healthcheck: {timeout_seconds: 3}}\n";
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("targets.yaml");
        std::fs::write(&path, yaml).expect("write");
        let reg = Arc::new(TargetRegistry::new(
            Some(load_targets_file(&path)),
            Arc::new(Env::default()),
            Secrets::default(),
        ));
        let errs = reg.resolve_target("a").expect_err("a healthcheck needs url or command");
        assert!(
            errs[0].to_string().contains("healthcheck needs `url` or `command`"),
            "{errs:?}"
        );
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
    fn typo_in_a_target_setting_is_an_error_naming_both_keys() {
        let yaml = "targets:\n  - name: o\n    provider: openai\n    model: m\n    api_key: sk-typo-check-key\n    base_ulr: http://127.0.0.1:9/v1\n    stream_log: raw\n    frobnicate: 1\n";
        let (reg, _d) = registry(yaml, &[]);
        let err = reg
            .resolve("o")
            .expect_err("a typo of base_url must not fall back to the public endpoint");
        let text = err.to_string();
        assert!(
            text.contains(":6:5: error: unknown key `base_ulr` in target `o`")
                && text.contains("did you mean `base_url`?"),
            "{text}"
        );
        let warnings: Vec<String> = reg.take_warnings().iter().map(ToString::to_string).collect();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains(":7:5: warning: `stream_log` in target `o` is an AgentV setting that agentv's `openai` provider does not implement; it is ignored"),
            "{warnings:?}"
        );
        assert!(
            warnings[1].contains(":8:5: warning: unknown key `frobnicate` in target `o`; it is ignored"),
            "{warnings:?}"
        );
    }

    #[test]
    fn huge_durations_are_errors_with_the_allowed_range_on_every_provider() {
        let secs = "must be a number of seconds greater than 0 and at most 604800 (7 days)";
        let ms = "must be a number of milliseconds from 0 to 604800000 (7 days)";
        let cases = [
            ("provider: mock\n    delay_ms: 7e30", "4:15", "delay_ms", ms),
            (
                "provider: mock\n    delay_min_ms: 1\n    delay_max_ms: 7e30",
                "5:19",
                "delay_max_ms",
                ms,
            ),
            (
                "provider: mock\n    delay_min_ms: 7e30\n    delay_max_ms: 1",
                "4:19",
                "delay_min_ms",
                ms,
            ),
            (
                "provider: cli\n    command_template: x {OUTPUT_FILE}\n    timeout_seconds: 7e30",
                "5:22",
                "timeout_seconds",
                secs,
            ),
            (
                "provider: cli\n    command_template: x {OUTPUT_FILE}\n    healthcheck: {type: command, command_template: 'true', timeout_seconds: 18446744073709551615}",
                "5:77",
                "healthcheck.timeout_seconds",
                secs,
            ),
            (
                "provider: openai\n    model: m\n    base_url: http://127.0.0.1:9\n    timeout_seconds: 7e30",
                "6:22",
                "timeout_seconds",
                secs,
            ),
            (
                "provider: openai\n    model: m\n    base_url: http://127.0.0.1:9\n    initial_delay_ms: 7e30",
                "6:23",
                "initial_delay_ms",
                ms,
            ),
            (
                "provider: openai\n    model: m\n    base_url: http://127.0.0.1:9\n    max_delay_ms: 7e30",
                "6:19",
                "max_delay_ms",
                ms,
            ),
            (
                "provider: anthropic\n    model: m\n    api_key: k\n    timeout_seconds: 7e30",
                "6:22",
                "timeout_seconds",
                secs,
            ),
            (
                "provider: gemini\n    api_key: k\n    retry_max_delay_ms: 7e30",
                "5:25",
                "retry_max_delay_ms",
                ms,
            ),
            (
                "provider: claude-code\n    executable: /bin/sh\n    timeout_seconds: 7e30",
                "5:22",
                "timeout_seconds",
                secs,
            ),
            (
                "provider: vscode\n    timeout_seconds: 7e30",
                "4:22",
                "timeout_seconds",
                secs,
            ),
        ];
        for (settings, at, name, range) in cases {
            let yaml = format!("targets:\n  - name: t\n    {settings}\n");
            let (reg, _d) = registry(&yaml, &[]);
            let err = reg.resolve("t").expect_err(settings).to_string();
            let want = format!("targets.yaml:{at}: error: `{name}` {range}, found");
            assert!(err.contains(&want), "{settings}\nwant {want}\ngot {err}");
        }
    }

    #[test]
    fn a_mock_delay_minimum_above_its_maximum_is_an_error() {
        let yaml = "targets:\n  - name: t\n    provider: mock\n    delay_min_ms: 50\n    delay_max_ms: 10\n";
        let (reg, _d) = registry(yaml, &[]);
        let err = reg.resolve("t").expect_err("min above max").to_string();
        assert!(
            err.contains("targets.yaml:4:19: error: `delay_min_ms` (50) is larger than `delay_max_ms` (10)"),
            "{err}"
        );
        let (reg, _d) = registry(&yaml.replace("50", "10"), &[]);
        assert!(reg.resolve("t").is_ok(), "equal bounds are a fixed delay");
    }

    #[test]
    fn variables_resolve_in_maps_lists_and_nested_objects() {
        let yaml = "targets:\n  - name: m\n    provider: mock\n    responses:\n      c1: ${{ AGENTV_T_ANSWER }}\n      c2: {text: '${{ AGENTV_T_ANSWER }}'}\n  - name: a\n    provider: anthropic\n    model: m\n    api_key: k\n    thinking: {type: '${{ AGENTV_T_THINKING }}', budget_tokens: 1024}\n  - name: c\n    provider: claude-code\n    executable: /bin/sh\n    args: [--flag, '${{ AGENTV_T_ARG }}']\n";
        let vars = [
            ("AGENTV_T_ANSWER", "forty-two"),
            ("AGENTV_T_THINKING", "enabled"),
            ("AGENTV_T_ARG", "from-env"),
        ];
        let (reg, _d) = registry(yaml, &vars);
        let mock = reg.resolve("m").expect("mock").public_settings();
        assert_eq!(mock["responses"]["c1"], "forty-two");
        assert_eq!(mock["responses"]["c2"], r#"{"text":"forty-two"}"#);
        let anthropic = reg.resolve("a").expect("anthropic").public_settings();
        assert_eq!(
            anthropic["thinking"],
            serde_json::json!({"type": "enabled", "budget_tokens": 1024})
        );
        let claude = reg.resolve("c").expect("claude-code").public_settings();
        assert_eq!(claude["args"], serde_json::json!(["--flag", "from-env"]));
    }

    #[test]
    fn unset_variables_deep_in_settings_are_missing_with_their_path() {
        let yaml = "targets:\n  - name: m\n    provider: mock\n    responses:\n      c1: ${{ AGENTV_T_UNSET_ANSWER }}\n  - name: c\n    provider: cli\n    command_template: x {OUTPUT_FILE}\n    healthcheck:\n      type: command\n      command_template: ${{ AGENTV_T_UNSET_CMD }}\n      cwd: ${{ AGENTV_T_UNSET_DIR }}\n";
        let (reg, _d) = registry(yaml, &[]);
        for (name, want) in [
            ("m", "AGENTV_T_UNSET_ANSWER (target `m`, setting `responses.c1`)"),
            (
                "c",
                "AGENTV_T_UNSET_CMD (target `c`, setting `healthcheck.command_template`)",
            ),
        ] {
            let errs = reg.resolve_target(name).expect_err(name);
            let text = errs[0].to_string();
            assert!(text.contains(want), "{text}");
        }
        // `cwd` is optional: left unset, with a warning naming it.
        let warnings: Vec<String> = reg.take_warnings().iter().map(ToString::to_string).collect();
        assert!(
            warnings.iter().any(|w| w.contains(
                ":12:12: warning: environment variable AGENTV_T_UNSET_DIR is not set, so optional setting `healthcheck.cwd` of target `c` is left unset"
            )),
            "{warnings:?}"
        );
    }

    #[test]
    fn healthcheck_cwd_resolves_variables_like_every_other_setting() {
        let dir = tempfile::tempdir().expect("tmp");
        let check = dir.path().join("checks");
        std::fs::create_dir(&check).expect("dir");
        let yaml = "targets:\n  - name: c\n    provider: cli\n    command_template: x {OUTPUT_FILE}\n    healthcheck:\n      type: command\n      command_template: 'true'\n      cwd: ${{ AGENTV_T_CHECK_DIR }}\n";
        let check_dir = check.display().to_string();
        let (reg, _d) = registry(yaml, &[("AGENTV_T_CHECK_DIR", &check_dir)]);
        assert!(reg.resolve("c").is_ok(), "the directory from the variable exists");
        let (reg, _d) = registry(yaml, &[("AGENTV_T_CHECK_DIR", "/nonexistent/agentv")]);
        let err = reg.resolve("c").expect_err("missing dir").to_string();
        // The value is a secret: the error names its variable (docs/architecture.md#secrets).
        assert!(
            err.contains("`healthcheck.cwd` directory does not exist: the value of AGENTV_T_CHECK_DIR"),
            "{err}"
        );
    }

    #[test]
    fn unknown_provider_fails_only_the_target_that_has_it() {
        let (reg, _d) = registry(
            "targets:\n  - {name: good, provider: mock}\n  - {name: odd, provider: warp-drive}\n  - {name: judged, provider: mock, judge_target: odd}\n",
            &[],
        );
        assert!(reg.resolve_target("good").is_ok());
        let errs = reg.resolve_target("odd").expect_err("unsupported");
        let text = errs[0].to_string();
        assert!(
            text.starts_with("target `odd` has unknown provider `warp-drive` (")
                && text.contains("targets.yaml:3:27); use openai"),
            "{text}"
        );
        assert!(reg.resolve_target("judged").is_err(), "its judge cannot be used");
    }

    #[test]
    fn check_all_reports_a_judge_target_that_does_not_exist() {
        let (reg, _d) = registry("targets:\n  - {name: a, provider: mock, judge_target: nope}\n", &[]);
        let text: Vec<String> = reg.check_all().iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(
            text[0].contains(":2:45: error: `judge_target` of target `a` names unknown target `nope`"),
            "{}",
            text[0]
        );
    }

    #[test]
    fn missing_cwd_error_names_the_variable_not_the_value() {
        let yaml = "targets:\n  - name: c\n    provider: cli\n    command_template: run {PROMPT}\n    cwd: ${{ AGENTV_T_DIR }}\n";
        let (reg, _d) = registry(yaml, &[("AGENTV_T_DIR", "/no/such/secret-dir")]);
        let err = reg.resolve("c").expect_err("invalid").to_string();
        assert!(
            err.contains("`cwd` directory does not exist: the value of AGENTV_T_DIR"),
            "{err}"
        );
        assert!(!err.contains("secret-dir"), "{err}");
    }

    #[test]
    fn missing_executable_error_names_the_variable_not_the_value() {
        let yaml = "targets:\n  - name: a\n    provider: claude-code\n    executable: ${{ AGENTV_T_EXE }}\n";
        let (reg, _d) = registry(yaml, &[("AGENTV_T_EXE", "no-such-secret-claude")]);
        let errs = reg.resolve_target("a").expect_err("missing");
        let text = errs[0].to_string();
        assert!(
            text.contains("Claude Code executable (the value of AGENTV_T_EXE) not found on PATH"),
            "{text}"
        );
        assert!(!text.contains("no-such-secret"), "{text}");
    }

    #[test]
    fn short_secret_warns_naming_the_variable() {
        let yaml = "targets:\n  - {name: m, provider: mock, response: '${{ AGENTV_T_SHORT }}'}\n";
        let (reg, _d) = registry(yaml, &[("AGENTV_T_SHORT", "q7z")]);
        reg.resolve("m").expect("resolves");
        let warnings: Vec<String> = reg.take_warnings().iter().map(ToString::to_string).collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("the value of AGENTV_T_SHORT (setting `response`) is shorter than 4 characters"),
            "{warnings:?}"
        );
        assert!(!warnings[0].contains("q7z"), "{warnings:?}");
    }

    #[test]
    fn env_reference_inside_a_longer_value_is_substituted_and_secret() {
        let yaml = "targets:\n  - {name: m, provider: mock, response: 'token ${{ AGENTV_T_PART }} and ${{AGENTV_T_TAIL}}!'}\n  - {name: u, provider: mock, response: 'x ${{ AGENTV_T_NOPE }} y'}\n";
        let (reg, _d) = registry(
            yaml,
            &[("AGENTV_T_PART", "part-secret-value"), ("AGENTV_T_TAIL", "tail-value")],
        );
        let provider = reg.resolve("m").expect("resolves");
        assert!(reg.take_warnings().is_empty());
        let shown = format!("{provider:?}");
        assert!(shown.contains("token part-secret-value and tail-value!"), "{shown}");
        let secrets = reg.secrets();
        assert_eq!(secrets.redact("token part-secret-value and tail-value!"), "***");
        assert_eq!(secrets.redact("just tail-value"), "just ***");
        let err = reg.resolve("u").expect_err("unset variable inside a value");
        assert!(
            matches!(&err, ResolveError::MissingCredentials(v) if v[0].var == "AGENTV_T_NOPE" && v[0].setting == "response"),
            "{err:?}"
        );
    }

    /// AgentV 4.x delegation: `use_target` names another target, directly or through a variable.
    #[test]
    fn use_target_delegates_to_the_target_it_names() {
        let yaml = "targets:\n  - name: default\n    use_target: ${{ AGENTV_T_PICK }}\n  - {name: fixed, use_target: real}\n  - {name: real, provider: mock, judge_target: judge}\n  - {name: judge, provider: mock}\n  - {name: loop, use_target: loop2}\n  - {name: loop2, use_target: loop}\n  - {name: lost, use_target: nowhere}\n";
        let (reg, _d) = registry(yaml, &[("AGENTV_T_PICK", "real")]);
        let target = reg.resolve_target("default").expect("delegates");
        assert_eq!((target.name.as_str(), target.judge_name.as_str()), ("real", "judge"));
        assert_eq!(reg.resolve_target("fixed").expect("delegates").name, "real");
        let text = |name: &str| reg.resolve_target(name).expect_err(name)[0].to_string();
        assert!(
            text("loop").contains("`use_target` loops: loop -> loop2 -> loop"),
            "{}",
            text("loop")
        );
        assert!(
            text("lost").contains("names unknown target `nowhere`"),
            "{}",
            text("lost")
        );
        let (reg, _d) = registry(yaml, &[]);
        let errors = reg.resolve_target("default").expect_err("unset");
        assert!(
            matches!(&errors[0], ResolveError::MissingCredentials(v) if v[0].var == "AGENTV_T_PICK" && v[0].setting == "use_target"),
            "{errors:?}"
        );
        assert!(reg.take_warnings().is_empty(), "an alias has no provider to warn about");
    }

    #[test]
    fn provider_debug_never_shows_the_api_key() {
        let yaml = "targets:\n  - {name: o, provider: openai, model: m, api_key: '${{ AGENTV_T_KEY }}'}\n  - {name: z, provider: azure, endpoint: 'http://127.0.0.1:9', deployment_name: d, api_key: '${{ AGENTV_T_KEY }}'}\n  - {name: a, provider: anthropic, model: m, api_key: '${{ AGENTV_T_KEY }}'}\n  - {name: g, provider: gemini, api_key: '${{ AGENTV_T_KEY }}'}\n";
        let (reg, _d) = registry(yaml, &[("AGENTV_T_KEY", "sk-debug-leak-check")]);
        for name in ["o", "z", "a", "g"] {
            let provider = reg.resolve(name).expect("resolves");
            let shown = format!("{provider:?}");
            assert!(!shown.contains("sk-debug"), "{name}: {shown}");
        }
    }

    #[test]
    fn unknown_provider_is_a_warning_that_keeps_the_other_targets_usable() {
        let (reg, _d) = registry(
            "targets:\n  - name: a\n    provider: mock\n  - name: b\n    provider: warp-drive\n",
            &[],
        );
        assert_eq!(reg.names(), ["a", "b"]);
        assert!(reg.check_all().is_empty(), "the unknown provider is not an error");
        let warnings: Vec<String> = reg.take_warnings().iter().map(ToString::to_string).collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains(":5:15: warning: target `b` has unknown provider `warp-drive`"),
            "{}",
            warnings[0]
        );
        assert!(reg.resolve("a").is_ok());
    }

    #[test]
    fn cacheable_providers_are_wrapped_and_mocks_are_not() {
        let dir = tempfile::tempdir().expect("tmp");
        let yaml = "targets:\n  - {name: m, provider: mock}\n  - {name: c, provider: cli, command_template: 'x {OUTPUT_FILE}'}\n";
        let path = dir.path().join("targets.yaml");
        std::fs::write(&path, yaml).expect("write");
        let cache = Arc::new(ResponseCache::new(dir.path().join("cache"), Secrets::default()));
        let reg = TargetRegistry::new(
            Some(load_targets_file(&path)),
            Arc::new(Env::default()),
            Secrets::default(),
        )
        .with_response_cache(Some(cache));
        let shown = |name: &str| format!("{:?}", reg.resolve(name).expect("resolves"));
        assert!(shown("c").starts_with("CachedProvider"), "{}", shown("c"));
        assert!(shown("m").starts_with("MockProvider"), "{}", shown("m"));
    }
}
