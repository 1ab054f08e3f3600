//! Resolve: picks each suite's target, loads `.env` files and checks every credential and
//! executable, building each target through the provider table. Nothing here calls a provider,
//! and nothing here knows how the run uses what it resolved.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{Diagnostic, Diagnostics, Pos, Severity};
use crate::env::Env;
use crate::load::{LoadedSuite, TARGET_FILE_NAMES, find_targets_file, load_targets_file};
use crate::paths::Workspace;
use crate::providers::mock::{Delay, MockProvider};
use crate::providers::{
    MissingVar, ResolveError, ResolvedTarget, ResponseCache, TargetRegistry, TargetsFile, known_providers,
};
use crate::redact::Secrets;

/// The answer of dry-run mocks.
pub const DRY_RUN_RESPONSE: &str = r#"{"answer":"Mock dry-run response"}"#;

/// The dry-run judge's answer: valid judge JSON, so `llm_judge` grades instead of failing.
pub const DRY_RUN_JUDGE_RESPONSE: &str =
    r#"{"score": 1, "hits": [], "misses": [], "reasoning": "dry run: no judge was called"}"#;

/// How targets are chosen.
#[derive(Debug, Clone, Default)]
pub struct ResolveOptions {
    /// `--target`, in order: every suite runs against each (a matrix). None keeps the eval
    /// file's target; `default` does too when no target is named `default`.
    pub targets: Vec<String>,
    /// `--targets`: a targets file or a directory holding one.
    pub targets_path: Option<PathBuf>,
    /// Replace every target by a mock.
    pub dry_run: bool,
    /// `--cache`: the response cache every target of the run shares.
    pub cache: Option<Arc<ResponseCache>>,
    /// Where resolved `${{ VAR }}` values are registered; the caller's outputs (console, logs)
    /// redact through the same registry.
    pub secrets: Secrets,
}

/// Suites with their targets resolved, and what running them needs besides: what
/// [`crate::facade::Plan`] is built on (which adds the jobs, the workers and the results file).
pub struct Resolved {
    /// Each suite with the targets that answer it (one, or several for a matrix); cases are
    /// read as the run consumes them.
    pub suites: Vec<(LoadedSuite, Vec<Arc<ResolvedTarget>>)>,
    /// Distinct targets, in first-use order.
    pub targets: Vec<Arc<ResolvedTarget>>,
    pub secrets: Secrets,
    /// Variables from `.env` files, for child processes.
    pub child_env: Arc<[(String, String)]>,
    pub warnings: Vec<Diagnostic>,
}

/// Why a suite has no usable target. `eval` stops on it; `validate` reports it against the
/// eval file. Both get it from [`TargetResolver`], so they always agree.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetProblem {
    /// No targets file where `eval` looks for one (`docs/architecture.md#targets-files`).
    NoTargetsFile { tried: Vec<PathBuf> },
    /// The targets file cannot be read or parsed: its errors.
    TargetsFile(Vec<Diagnostic>),
    /// The target or its judge cannot be used.
    Target { file: PathBuf, errors: Vec<ResolveError> },
    /// Variables the targets of several suites need, all of them, once
    /// ([`TargetProblem::merge`]).
    MissingCredentials(Vec<MissingVar>),
}

impl std::fmt::Display for TargetProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoTargetsFile { tried } => {
                write!(
                    f,
                    "no targets file found; {}\ncreate targets.yaml (e.g. `targets: [{{name: default, provider: mock}}]`) or pass --targets",
                    describe_search(tried)
                )
            }
            Self::TargetsFile(errors) => {
                let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
                write!(f, "{}", text.join("\n"))
            }
            Self::Target { file, errors } => {
                let text: Vec<String> = errors.iter().map(|e| placed(e, file)).collect();
                write!(f, "{}", text.join("\n"))
            }
            Self::MissingCredentials(vars) => write!(f, "{}", ResolveError::MissingCredentials(vars.clone())),
        }
    }
}

/// Where a targets file was looked for, by directory: "looked in a, b for targets.yaml, ...".
fn describe_search(tried: &[PathBuf]) -> String {
    let mut dirs: Vec<&Path> = Vec::new();
    for path in tried {
        // Longest name first: `.agentv/targets.yaml` also ends with `targets.yaml`.
        let dir = [2, 1].iter().find_map(|&depth| {
            TARGET_FILE_NAMES
                .iter()
                .map(Path::new)
                .find(|name| name.components().count() == depth && path.ends_with(name))
                .and_then(|_| path.ancestors().nth(depth))
        });
        match dir {
            Some(dir) if !dirs.contains(&dir) => dirs.push(dir),
            Some(_) => {}
            // An explicit `--targets` file that does not exist.
            None => return format!("{} does not exist", path.display()),
        }
    }
    let stop = dirs.first().map(|d| Workspace::search_end(d)).unwrap_or_default();
    let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    format!(
        "looked in {} for {}; {stop}",
        dirs.join(", "),
        TARGET_FILE_NAMES.join(", ")
    )
}

impl TargetProblem {
    /// Every distinct problem once, each target error on its own, and the variables every
    /// suite's targets miss in one trailing problem (through [`ResolveError::merge`]).
    pub fn merge(problems: impl IntoIterator<Item = TargetProblem>) -> Vec<TargetProblem> {
        let mut out: Vec<TargetProblem> = Vec::new();
        let mut missing: Vec<ResolveError> = Vec::new();
        let push = |out: &mut Vec<TargetProblem>, p: TargetProblem| {
            if !out.contains(&p) {
                out.push(p);
            }
        };
        for problem in problems {
            match problem {
                Self::Target { file, errors } => {
                    for error in ResolveError::merge(errors) {
                        match error {
                            ResolveError::MissingCredentials(_) => missing.push(error),
                            other => push(
                                &mut out,
                                Self::Target {
                                    file: file.clone(),
                                    errors: vec![other],
                                },
                            ),
                        }
                    }
                }
                Self::MissingCredentials(vars) => missing.push(ResolveError::MissingCredentials(vars)),
                other => push(&mut out, other),
            }
        }
        for error in ResolveError::merge(missing) {
            if let ResolveError::MissingCredentials(vars) = error {
                out.push(Self::MissingCredentials(vars));
            }
        }
        out
    }

    /// The problem as diagnostics of the suite in `eval_file` (for `agentv validate`). Problems
    /// in files are errors; problems of the machine (no targets file found, an unset variable,
    /// an agent CLI not installed) are of severity `machine`: `validate` checks files, not the
    /// machine it runs on, unless `--strict` (`docs/running.md#agentv-validate-paths`). Problems inside the
    /// targets file point there, by a path relative to the working directory when it is below
    /// it.
    pub fn diagnostics(&self, eval_file: &Path, ws: &Workspace, machine: Severity) -> Vec<Diagnostic> {
        let mut items = self.diagnostics_at(eval_file, ws, machine);
        for d in &mut items {
            d.file = shown(&d.file, ws);
        }
        items
    }

    fn diagnostics_at(&self, eval_file: &Path, ws: &Workspace, machine: Severity) -> Vec<Diagnostic> {
        match self {
            Self::NoTargetsFile { .. } => {
                let mut d = Diagnostics::new(eval_file);
                let text = self.to_string();
                let (message, help) = text
                    .split_once("\ncreate")
                    .map_or((text.as_str(), None), |(m, h)| (m, Some(format!("create{h}"))));
                match machine {
                    Severity::Error => d.error(Pos::default(), message, help),
                    Severity::Warning => d.warn(Pos::default(), message, help),
                }
                d.into_vec()
            }
            Self::TargetsFile(errors) => errors.clone(),
            Self::Target { file, errors } => errors
                .iter()
                .flat_map(|e| resolve_error_diagnostics(e, &shown(file, ws), eval_file, machine))
                .collect(),
            Self::MissingCredentials(vars) => resolve_error_diagnostics(
                &ResolveError::MissingCredentials(vars.clone()),
                eval_file,
                eval_file,
                machine,
            ),
        }
    }
}

/// A target's problem with the targets file it is in, unless the message already names it.
fn placed(error: &ResolveError, file: &Path) -> String {
    match error {
        ResolveError::UnsupportedProvider { .. } => error.to_string(),
        other => format!("{other} (in {})", file.display()),
    }
}

/// `path` relative to the working directory when it is below it, as the user would write it.
fn shown(path: &Path, ws: &Workspace) -> PathBuf {
    path.strip_prefix(&ws.cwd)
        .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}

/// One target's problem as diagnostics. A problem of the machine rather than the file (an
/// unset variable, an agent CLI not installed) gets `machine`: an error for a suite that uses
/// the target, a warning for a targets file checked on its own.
fn resolve_error_diagnostics(
    error: &ResolveError,
    targets_file: &Path,
    eval_file: &Path,
    machine: Severity,
) -> Vec<Diagnostic> {
    let mut d = Diagnostics::new(targets_file);
    let push = |d: &mut Diagnostics, message: String, help: Option<String>| match machine {
        Severity::Error => d.error(Pos::default(), message, help),
        Severity::Warning => d.warn(Pos::default(), message, help),
    };
    match error {
        ResolveError::Invalid { problems, .. } if !problems.is_empty() => return problems.clone(),
        ResolveError::MissingCredentials(vars) => {
            for v in vars {
                push(
                    &mut d,
                    format!(
                        "environment variable {} is not set (target `{}`, setting `{}`)",
                        v.var, v.target, v.setting
                    ),
                    Some("set it in the environment or in a .env file next to the eval file".to_owned()),
                );
            }
        }
        ResolveError::MissingExecutable { .. } => push(&mut d, error.to_string(), None),
        ResolveError::UnsupportedProvider {
            name, provider, pos, ..
        } => {
            let mut d = Diagnostics::new(eval_file);
            d.error(
                Pos::default(),
                format!(
                    "target `{name}` has unknown provider `{provider}` ({}:{pos})",
                    targets_file.display()
                ),
                Some(format!(
                    "use {}, or pick another target with --target",
                    known_providers()
                )),
            );
            return d.into_vec();
        }
        ResolveError::Unknown { .. } | ResolveError::Invalid { .. } => {
            let mut d = Diagnostics::new(eval_file);
            d.error(Pos::default(), format!("{error} (in {})", targets_file.display()), None);
            return d.into_vec();
        }
    }
    d.into_vec()
}

/// Checks a targets file on its own (`agentv validate targets.yaml`): every target is built
/// as a run that used it would, calling nothing. Mistakes in the file are errors; what depends
/// on the machine (an unset variable, an agent CLI not installed) is a warning, because the
/// file may be used where those are present; a suite that uses the target reports them as
/// errors.
pub fn check_targets_file(path: &Path, ws: &Workspace, secrets: &Secrets) -> Vec<Diagnostic> {
    let file = load_targets_file(path);
    let mut diagnostics = file.diagnostics.clone();
    if file.has_errors() {
        return diagnostics;
    }
    let (env, warnings) = Env::load(&[eval_dir(path, ws)], ws);
    diagnostics.extend(warnings);
    let registry = TargetRegistry::new(Some(file), Arc::new(env), secrets.clone());
    for problem in registry.check_all() {
        diagnostics.extend(resolve_error_diagnostics(&problem, path, path, Severity::Warning));
    }
    diagnostics.extend(registry.take_warnings());
    diagnostics
}

/// Finds and resolves each suite's target exactly as `agentv eval` does: the targets file
/// searched from the eval file's directory (or `--targets`), the target chosen by `--target`,
/// the suite, or `default`, every setting, variable and agent executable checked, nothing
/// called. Outcomes are cached per targets file and target name.
pub struct TargetResolver<'a> {
    ws: &'a Workspace,
    options: &'a ResolveOptions,
    env: Arc<Env>,
    secrets: Secrets,
    registries: HashMap<PathBuf, Result<Arc<TargetRegistry>, Vec<Diagnostic>>>,
    resolved: HashMap<(PathBuf, String), Result<Arc<ResolvedTarget>, TargetProblem>>,
    dry_run: HashMap<String, Arc<ResolvedTarget>>,
    warnings: Vec<Diagnostic>,
}

impl<'a> TargetResolver<'a> {
    /// Loads the `.env` files that serve `eval_files` (`docs/architecture.md#environment`).
    pub fn new(eval_files: &[PathBuf], ws: &'a Workspace, options: &'a ResolveOptions) -> Self {
        let eval_dirs: Vec<PathBuf> = eval_files.iter().map(|f| eval_dir(f, ws)).collect();
        let (env, warnings) = Env::load_with(&eval_dirs, options.targets_path.as_deref(), ws);
        Self {
            ws,
            options,
            env: Arc::new(env),
            secrets: options.secrets.clone(),
            registries: HashMap::new(),
            resolved: HashMap::new(),
            dry_run: HashMap::new(),
            warnings,
        }
    }

    /// The target a suite runs against: the first of [`TargetResolver::target_names`].
    pub fn target_name(&self, suite_target: Option<&str>, targets: Option<&TargetRegistry>) -> String {
        let own: Vec<&str> = suite_target.into_iter().collect();
        self.target_names(&own, targets).swap_remove(0)
    }

    /// The targets a suite runs against, in order and each once: every `--target`, else the
    /// suite's own targets (`suite_targets`), else `default`. `--target default` names the
    /// target called `default` when `targets` has one; without one it stands for the suite's
    /// own targets, as AgentV's `--target default` does. Never empty.
    pub fn target_names(&self, suite_targets: &[&str], targets: Option<&TargetRegistry>) -> Vec<String> {
        let has_default = targets.is_some_and(|r| r.names().iter().any(|n| n == "default"));
        let own: Vec<&str> = if suite_targets.is_empty() {
            vec!["default"]
        } else {
            suite_targets.to_vec()
        };
        let wanted: Vec<&str> = if self.options.targets.is_empty() {
            own.clone()
        } else {
            self.options
                .targets
                .iter()
                .flat_map(|t| {
                    if t == "default" && !has_default {
                        own.clone()
                    } else {
                        vec![t.as_str()]
                    }
                })
                .collect()
        };
        let mut names: Vec<String> = Vec::with_capacity(wanted.len());
        for name in wanted {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
        }
        names
    }

    /// Every target the suite in `eval_file` runs against ([`TargetResolver::target_names`]),
    /// resolved; the problems of every target that cannot be used.
    pub fn resolve_all(
        &mut self,
        eval_file: &Path,
        suite_targets: &[&str],
    ) -> Result<Vec<Arc<ResolvedTarget>>, Vec<TargetProblem>> {
        let names = if self.options.dry_run {
            self.target_names(suite_targets, None)
        } else {
            let registry = self.registry_for(&eval_dir(eval_file, self.ws)).map_err(|p| vec![p])?;
            self.target_names(suite_targets, Some(&registry))
        };
        let mut targets = Vec::new();
        let mut problems = Vec::new();
        for name in names {
            match self.resolve_named(eval_file, &name) {
                Ok(target) => targets.push(target),
                Err(problem) => problems.push(problem),
            }
        }
        if problems.is_empty() {
            Ok(targets)
        } else {
            Err(problems)
        }
    }

    /// Every target a file declares itself (a promptfoo config's `providers`), or those
    /// `--target` names, resolved with the run's variables, secrets and cache; the problems of
    /// every one that cannot be used.
    pub fn resolve_inline(&mut self, file: &TargetsFile) -> Result<Vec<Arc<ResolvedTarget>>, Vec<TargetProblem>> {
        let registry = Arc::new(
            TargetRegistry::new(Some(file.clone()), self.env.clone(), self.secrets.clone())
                .with_response_cache(self.options.cache.clone()),
        );
        let mut targets = Vec::new();
        let mut problems = Vec::new();
        // `--target` chooses among them, by name or alias (a promptfoo provider's id or label).
        let names = file.select(&self.options.targets).map_err(|unknown| {
            vec![TargetProblem::Target {
                file: file.path.clone(),
                errors: vec![unknown],
            }]
        })?;
        let names = if self.options.targets.is_empty() {
            file.names()
        } else {
            names
        };
        for name in names {
            match registry.resolve_target(&name) {
                Ok(target) => targets.push(Arc::new(target)),
                Err(errors) => problems.push(TargetProblem::Target {
                    file: file.path.clone(),
                    errors,
                }),
            }
        }
        // The grading targets are checked now too, so a missing key stops the run before it starts.
        for name in &file.grading_only {
            if let Err(error) = registry.resolve(name) {
                problems.push(TargetProblem::Target {
                    file: file.path.clone(),
                    errors: vec![error],
                });
            }
        }
        self.warnings.extend(registry.take_warnings());
        if problems.is_empty() {
            Ok(targets)
        } else {
            Err(problems)
        }
    }

    /// The target of the suite in `eval_file` whose own target is `suite_target`.
    pub fn resolve(
        &mut self,
        eval_file: &Path,
        suite_target: Option<&str>,
    ) -> Result<Arc<ResolvedTarget>, TargetProblem> {
        let name = if self.options.dry_run {
            self.target_name(suite_target, None)
        } else {
            let registry = self.registry_for(&eval_dir(eval_file, self.ws))?;
            self.target_name(suite_target, Some(&registry))
        };
        self.resolve_named(eval_file, &name)
    }

    /// Target `name` as the suite in `eval_file` sees it (its targets file).
    fn resolve_named(&mut self, eval_file: &Path, name: &str) -> Result<Arc<ResolvedTarget>, TargetProblem> {
        let name = name.to_owned();
        if self.options.dry_run {
            let env = self.env.clone();
            return Ok(self
                .dry_run
                .entry(name.clone())
                .or_insert_with(|| dry_run_target(&name, env))
                .clone());
        }
        let registry = self.registry_for(&eval_dir(eval_file, self.ws))?;
        let file = registry.targets_path().map(Path::to_path_buf).unwrap_or_default();
        let key = (file.clone(), name.clone());
        if let Some(done) = self.resolved.get(&key) {
            return done.clone();
        }
        let outcome = registry
            .resolve_target(&name)
            .map(Arc::new)
            .map_err(|errors| TargetProblem::Target { file, errors });
        self.warnings.extend(registry.take_warnings());
        self.resolved.insert(key, outcome.clone());
        outcome
    }

    /// The registry of the targets file that serves `eval_dir`, loaded once per file.
    fn registry_for(&mut self, eval_dir: &Path) -> Result<Arc<TargetRegistry>, TargetProblem> {
        let path = find_targets_file(self.options.targets_path.as_deref(), eval_dir, self.ws)
            .map_err(|tried| TargetProblem::NoTargetsFile { tried })?;
        if let Some(r) = self.registries.get(&path) {
            return r.clone().map_err(TargetProblem::TargetsFile);
        }
        let file = load_targets_file(&path);
        self.withhold_every_reference(&file.referenced_vars);
        let (errors, warns): (Vec<Diagnostic>, Vec<Diagnostic>) = file
            .diagnostics
            .iter()
            .cloned()
            .partition(|d| d.severity == Severity::Error);
        self.warnings.extend(warns);
        let registry = if errors.is_empty() {
            Ok(Arc::new(
                TargetRegistry::new(Some(file), self.env.clone(), self.secrets.clone())
                    .with_response_cache(self.options.cache.clone()),
            ))
        } else {
            Err(errors)
        };
        self.registries.insert(path, registry.clone());
        registry.map_err(TargetProblem::TargetsFile)
    }

    /// Registers as secrets the values of every `${{ VAR }}` a targets file names (`vars`),
    /// whether or not its target runs: a key written for another target is still a key, so it is
    /// redacted and withheld from tool commands and hooks (`docs/architecture.md#secrets`).
    fn withhold_every_reference(&self, vars: &[String]) {
        for value in vars.iter().filter_map(|n| Env::get(&self.env, n.as_str())) {
            let _ = self.secrets.add(&value);
        }
    }

    /// Warnings found since the last call (`.env` files, targets files, target settings).
    pub fn take_warnings(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.warnings)
    }

    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Variables from `.env` files, for child processes.
    pub fn child_env(&self) -> Arc<[(String, String)]> {
        self.env.child_env()
    }
}

/// The directory of an eval file, resolved against the working directory.
fn eval_dir(file: &Path, ws: &Workspace) -> PathBuf {
    ws.cwd
        .join(file)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| ws.cwd.clone())
}

/// Why nothing can run: every problem, and the warnings found on the way, which often explain
/// them (a skipped `.env` line behind a missing variable) and so are printed first. Each
/// problem renders as one message (`Display`).
#[derive(Debug)]
pub struct ResolveFailure {
    pub warnings: Vec<Diagnostic>,
    pub errors: Vec<TargetProblem>,
}

/// Resolves the targets of `suites`. On failure returns every problem (unknown targets,
/// missing variables, invalid target settings), before anything runs.
pub fn resolve(suites: Vec<LoadedSuite>, ws: &Workspace, options: &ResolveOptions) -> Result<Resolved, ResolveFailure> {
    let files: Vec<PathBuf> = suites.iter().map(|s| s.file.clone()).collect();
    let mut resolver = TargetResolver::new(&files, ws, options);
    let mut targets: Vec<Arc<ResolvedTarget>> = Vec::new();
    let mut problems = Vec::new();
    let mut planned = Vec::new();
    for suite in suites {
        // A 4.x matrix (`execution.targets`) would be the suite's list here.
        let inline_names = suite.inline_targets.as_ref().map(|t| t.names()).unwrap_or_default();
        let own: Vec<&str> = match &suite.inline_targets {
            Some(_) => inline_names.iter().map(String::as_str).collect(),
            None => suite.target.as_deref().into_iter().collect(),
        };
        let found = match &suite.inline_targets {
            Some(file) if !options.dry_run => resolver.resolve_inline(file),
            _ => resolver.resolve_all(&suite.file, &own),
        };
        let suite_targets = match found {
            Ok(t) => t,
            Err(found) => {
                problems.extend(found);
                continue;
            }
        };
        for target in &suite_targets {
            if !targets.iter().any(|t| Arc::ptr_eq(t, target)) {
                targets.push(target.clone());
            }
        }
        planned.push((suite, suite_targets));
    }
    if !problems.is_empty() {
        return Err(ResolveFailure {
            warnings: resolver.take_warnings(),
            errors: TargetProblem::merge(problems),
        });
    }
    Ok(Resolved {
        suites: planned,
        targets,
        secrets: resolver.secrets().clone(),
        child_env: resolver.child_env(),
        warnings: resolver.take_warnings(),
    })
}

/// A mock standing in for target `name` (`--dry-run`), with a mock judge that answers valid
/// judge JSON.
fn dry_run_target(name: &str, env: Arc<Env>) -> Arc<ResolvedTarget> {
    let mock_name = format!("{name}-dry-run");
    let provider: Arc<dyn crate::providers::Provider> = Arc::new(MockProvider::new(
        mock_name.clone(),
        Some(DRY_RUN_RESPONSE.to_owned()),
        Delay::None,
    ));
    let judge_name = format!("{mock_name}-judge");
    let judge: Arc<dyn crate::providers::Provider> = Arc::new(MockProvider::new(
        judge_name.clone(),
        Some(DRY_RUN_JUDGE_RESPONSE.to_owned()),
        Delay::None,
    ));
    let registry = Arc::new(TargetRegistry::with_provider(provider.clone(), env));
    Arc::new(ResolvedTarget {
        name: mock_name,
        provider,
        judge_name,
        judge,
        workers: None,
        batching: false,
        registry,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing(var: &str, target: &str) -> MissingVar {
        MissingVar {
            var: var.to_owned(),
            target: target.to_owned(),
            setting: "api_key".to_owned(),
        }
    }

    #[test]
    fn problems_of_several_suites_are_merged_once() {
        let file = PathBuf::from("targets.yaml");
        let unknown = ResolveError::Unknown {
            name: "nope".to_owned(),
            available: vec!["a".to_owned()],
        };
        let problems = [
            TargetProblem::Target {
                file: file.clone(),
                errors: vec![
                    ResolveError::MissingCredentials(vec![missing("A_KEY", "a")]),
                    unknown.clone(),
                ],
            },
            TargetProblem::Target {
                file: file.clone(),
                errors: vec![ResolveError::MissingCredentials(vec![
                    missing("A_KEY", "a"),
                    missing("B_KEY", "b"),
                ])],
            },
            TargetProblem::Target {
                file: file.clone(),
                errors: vec![unknown.clone()],
            },
            TargetProblem::NoTargetsFile { tried: Vec::new() },
            TargetProblem::NoTargetsFile { tried: Vec::new() },
        ];
        let merged = TargetProblem::merge(problems);
        assert_eq!(
            merged,
            [
                TargetProblem::Target {
                    file,
                    errors: vec![unknown]
                },
                TargetProblem::NoTargetsFile { tried: Vec::new() },
                TargetProblem::MissingCredentials(vec![missing("A_KEY", "a"), missing("B_KEY", "b")]),
            ]
        );
        let text = merged[2].to_string();
        assert!(
            text.starts_with("missing environment variables:\n  A_KEY (target `a`, setting `api_key`)\n  B_KEY"),
            "{text}"
        );
    }
}
