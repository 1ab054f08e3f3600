//! Resolve: picks each suite's target, loads `.env` files, checks every credential, and turns
//! loaded cases into jobs. Nothing here calls a provider.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::load::{Diagnostic, Env, LoadedSuite, Secrets, Workspace, find_targets_file, load_targets_file};
use crate::providers::mock::{Delay, MockProvider};
use crate::providers::{MissingVar, ResolveError, ResolvedTarget, TargetRegistry};
use crate::run::{Job, Jobs};

/// The answer of dry-run mocks.
pub const DRY_RUN_RESPONSE: &str = r#"{"answer":"Mock dry-run response"}"#;

/// The dry-run judge's answer: valid judge JSON, so `llm_judge` grades instead of failing.
pub const DRY_RUN_JUDGE_RESPONSE: &str =
    r#"{"score": 1, "hits": [], "misses": [], "reasoning": "dry run: no judge was called"}"#;

/// How targets are chosen.
#[derive(Debug, Clone, Default)]
pub struct ResolveOptions {
    /// `--target`; `default` (or none) keeps the eval file's target.
    pub target: Option<String>,
    /// `--targets`: a targets file or a directory holding one.
    pub targets_path: Option<PathBuf>,
    /// Replace every target by a mock.
    pub dry_run: bool,
    /// `--cache`: directory of the response cache.
    pub cache_dir: Option<PathBuf>,
}

/// Jobs ready to run, and what the run needs besides.
pub struct Plan {
    /// Each suite with the target that answers it; cases are read as the run consumes them.
    pub suites: Vec<(LoadedSuite, Arc<ResolvedTarget>)>,
    /// Number of cases the suites hold.
    pub total: usize,
    /// Distinct targets, in first-use order.
    pub targets: Vec<Arc<ResolvedTarget>>,
    pub secrets: Secrets,
    /// Variables from `.env` files, for child processes.
    pub child_env: Arc<[(String, String)]>,
    pub warnings: Vec<Diagnostic>,
}

/// Resolves the targets of `suites`. On failure returns every problem (unknown targets,
/// missing variables, invalid target settings), before anything runs.
pub fn resolve(suites: Vec<LoadedSuite>, ws: &Workspace, options: &ResolveOptions) -> Result<Plan, Vec<String>> {
    let eval_dirs: Vec<PathBuf> = suites
        .iter()
        .map(|s| {
            ws.cwd
                .join(&s.file)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| ws.cwd.clone())
        })
        .collect();
    let (env, mut warnings) = Env::load(&eval_dirs, ws);
    let env = Arc::new(env);
    let secrets = Secrets::default();
    let mut registries: HashMap<PathBuf, Arc<TargetRegistry>> = HashMap::new();
    let mut resolved: HashMap<(PathBuf, String), Arc<ResolvedTarget>> = HashMap::new();
    let mut targets: Vec<Arc<ResolvedTarget>> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let mut missing = Vec::new();
    let mut planned = Vec::new();
    let override_name = options.target.as_deref().filter(|t| *t != "default");

    for (suite, eval_dir) in suites.into_iter().zip(&eval_dirs) {
        let name = override_name
            .map(str::to_owned)
            .or_else(|| suite.target.as_deref().map(str::to_owned))
            .unwrap_or_else(|| "default".to_owned());
        let target = if options.dry_run {
            dry_run_target(&name, &mut resolved, &env)
        } else {
            let registry = match registry_for(eval_dir, ws, options, &env, &secrets, &mut registries, &mut warnings) {
                Ok(r) => r,
                Err(e) => {
                    push_unique(&mut errors, e);
                    continue;
                }
            };
            let key = (
                registry.targets_path().map(Path::to_path_buf).unwrap_or_default(),
                name.clone(),
            );
            match resolved.get(&key) {
                Some(t) => t.clone(),
                None => match registry.resolve_target(&name) {
                    Ok(t) => {
                        warnings.extend(registry.take_warnings());
                        let t = Arc::new(t);
                        resolved.insert(key, t.clone());
                        t
                    }
                    Err(problems) => {
                        note_problems(problems, registry.targets_path(), &mut missing, &mut errors);
                        continue;
                    }
                },
            }
        };
        if !targets.iter().any(|t| Arc::ptr_eq(t, &target)) {
            targets.push(target.clone());
        }
        planned.push((suite, target));
    }
    if !missing.is_empty() {
        errors.push(ResolveError::MissingCredentials(missing).to_string());
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let total = planned.iter().map(|(s, _)| s.case_count).sum();
    Ok(Plan {
        suites: planned,
        total,
        targets,
        secrets,
        child_env: env.child_env(),
        warnings,
    })
}

impl Plan {
    /// The jobs, lazily: JSONL datasets are read as the run goes.
    pub fn into_jobs(self) -> Jobs {
        let batching = self.targets.iter().any(|t| t.batching);
        let probes = crate::run::health_probes(&self.suites);
        let iter = self.suites.into_iter().flat_map(|(suite, target)| {
            suite.into_cases().map(move |case| Job {
                case,
                target: target.clone(),
            })
        });
        Jobs {
            probes,
            iter: Box::new(iter),
            total: self.total,
            batching,
        }
    }
}

/// Adds a target's problems: missing variables go to one list (reported together at the end),
/// the rest become messages naming the targets file.
fn note_problems(
    problems: Vec<ResolveError>,
    file: Option<&Path>,
    missing: &mut Vec<MissingVar>,
    errors: &mut Vec<String>,
) {
    for problem in problems {
        match problem {
            ResolveError::MissingCredentials(vars) => {
                for v in vars {
                    if !missing.contains(&v) {
                        missing.push(v);
                    }
                }
            }
            other => {
                let place = file.map(|p| format!(" (in {})", p.display())).unwrap_or_default();
                push_unique(errors, format!("{other}{place}"));
            }
        }
    }
}

fn push_unique(errors: &mut Vec<String>, message: String) {
    if !errors.contains(&message) {
        errors.push(message);
    }
}

fn dry_run_target(
    name: &str,
    resolved: &mut HashMap<(PathBuf, String), Arc<ResolvedTarget>>,
    env: &Arc<Env>,
) -> Arc<ResolvedTarget> {
    let key = (PathBuf::from("<dry-run>"), name.to_owned());
    resolved
        .entry(key)
        .or_insert_with(|| {
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
            let registry = Arc::new(TargetRegistry::with_provider(provider.clone(), env.clone()));
            Arc::new(ResolvedTarget {
                name: mock_name,
                provider,
                judge_name,
                judge,
                workers: None,
                batching: false,
                registry,
            })
        })
        .clone()
}

fn registry_for(
    eval_dir: &Path,
    ws: &Workspace,
    options: &ResolveOptions,
    env: &Arc<Env>,
    secrets: &Secrets,
    registries: &mut HashMap<PathBuf, Arc<TargetRegistry>>,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Arc<TargetRegistry>, String> {
    let path = find_targets_file(options.targets_path.as_deref(), eval_dir, ws).map_err(|tried| {
        let list: Vec<String> = tried.iter().map(|p| format!("  {}", p.display())).collect();
        format!(
            "no targets file found; looked for:\n{}\ncreate targets.yaml (e.g. `targets: [{{name: default, provider: mock}}]`) or pass --targets",
            list.join("\n")
        )
    })?;
    if let Some(r) = registries.get(&path) {
        return Ok(r.clone());
    }
    let file = load_targets_file(&path);
    let (errors, warns): (Vec<Diagnostic>, Vec<Diagnostic>) = file
        .diagnostics
        .iter()
        .cloned()
        .partition(|d| d.severity == crate::load::Severity::Error);
    warnings.extend(warns);
    if !errors.is_empty() {
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        return Err(text.join("\n"));
    }
    let cache = options
        .cache_dir
        .as_ref()
        .map(|d| Arc::new(crate::providers::ResponseCache::new(d)));
    let registry = Arc::new(TargetRegistry::new(Some(file), env.clone(), secrets.clone()).with_response_cache(cache));
    registries.insert(path, registry.clone());
    Ok(registry)
}
