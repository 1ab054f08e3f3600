//! What a front end calls: one function per step of a command, each deciding everything its
//! step decides and returning data for the caller to print. The `agentv` binary is parsing,
//! printing and exit codes on top of these; every rule (which files, which cases, which target,
//! how many workers, what a finished run amounts to) lives here or below.
//!
//! - `agentv eval`: [`load()`] → [`plan()`] → [`run()`] → [`report()`]
//! - `agentv validate`: [`validate`]
//!
//! Nothing here prints. Problems come back as [`Diagnostic`]s and errors with their own
//! `Display`; secrets registered in the caller's [`Secrets`] are redacted by whoever prints.

mod batch;
mod check;
mod invalid;
mod merge;
mod select;
mod selection;
mod shard;
mod workers;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use batch::{BatchJobsError, JobError, JobLine, JobsAction, batch_jobs};
pub use check::{CheckedFile, ValidateOptions, Validation, validate};
pub use invalid::Invalid;
pub use merge::{MergeError, MergeOptions, Merged, merge};
pub use select::IdPatternError;
pub(crate) use select::id_filter;
pub use shard::{MAX_SHARDS, Shard, ShardError};

use crate::context::{PromptDumps, RunContext};
use crate::load::{
    Diagnostic, DiscoverError, FileKind, LoadedSuite, Purpose, Secrets, Workspace, discover, load_eval_file_filtered,
};
use crate::providers::{CacheStats, ResponseCache};
use crate::report::{
    JsonlWriter, Prior, Repair, Row, RunMetadata, RunStats, Sink, StatsReport, Summary, SummaryContext, SummaryStyle,
    default_results_path, summary_path, write_summary,
};
use crate::resolve::{ResolveOptions, resolve};
pub use crate::run::RunOptions;
use crate::run::{Budget, Expansion, Interrupt, Outcome, RunObserver, RunReport, RunSetup};

// ---------------------------------------------------------------------------------------------
// load

/// What to load: the eval paths (files, directories, globs) and `--eval-id` patterns.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub paths: Vec<String>,
    pub eval_ids: Vec<String>,
    /// `--strict`: every problem in the files is an error and stops the run.
    pub strict: bool,
}

/// The suites that have cases to run, and every problem loading found.
#[derive(Debug)]
pub struct Loaded {
    /// Suites with at least one case to run, in argument order.
    pub suites: Vec<LoadedSuite>,
    /// Every file's problems, file by file.
    pub diagnostics: Vec<Diagnostic>,
    /// Cases left out because they are invalid (they make the run incomplete:
    /// `docs/architecture.md#exit-codes`).
    pub skipped: usize,
    /// Those cases, each with its errors: the run records them.
    pub invalid: Vec<Invalid>,
    /// Eval files with errors and no case at all (unreadable, not YAML, empty): whatever they
    /// held did not run, so they too make the run incomplete.
    pub unread: usize,
    /// What the caller should say about the paths given (a sidecar named for its dataset).
    pub notes: Vec<String>,
}

/// Why nothing can run.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Paths that name no eval file: every one of them.
    #[error("{}", join_lines(.0))]
    Paths(Vec<DiscoverError>),
    #[error(transparent)]
    IdPattern(#[from] IdPatternError),
    /// Files were read, but no valid case is left.
    #[error("nothing to run: no valid eval cases ({skipped} skipped because of errors)")]
    NothingToRun {
        diagnostics: Vec<Diagnostic>,
        skipped: usize,
    },
    /// `--strict` (or a suite's `strict: true`) and the files have problems.
    #[error("nothing ran: {count} problem(s) in the eval files, which --strict (or `strict: true`) makes errors")]
    Strict { diagnostics: Vec<Diagnostic>, count: usize },
    /// No valid case matches `--eval-id`.
    #[error("no eval case matches --eval-id {}", .patterns.join(", "))]
    NoMatchingCase {
        diagnostics: Vec<Diagnostic>,
        patterns: Vec<String>,
    },
}

impl LoadError {
    /// Problems in the files that were read, to show before the error: they often explain it.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Self::NothingToRun { diagnostics, .. }
            | Self::NoMatchingCase { diagnostics, .. }
            | Self::Strict { diagnostics, .. } => diagnostics,
            Self::Paths(_) | Self::IdPattern(_) => &[],
        }
    }

    /// One message per problem, for callers that print each as its own error.
    pub fn messages(&self) -> Vec<String> {
        match self {
            Self::Paths(problems) => problems.iter().map(ToString::to_string).collect(),
            other => vec![other.to_string()],
        }
    }
}

fn join_lines(items: &[DiscoverError]) -> String {
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

/// Finds the eval files `options.paths` name (as `validate` does) and loads their cases that
/// match `--eval-id`. Invalid cases are left out and counted; the rest still run
/// (`docs/architecture.md#unknown-keys`).
pub fn load(ws: &Workspace, options: &LoadOptions) -> Result<Loaded, LoadError> {
    let files = discover(&options.paths, ws, Purpose::Run).map_err(LoadError::Paths)?;
    let filter = id_filter(&options.eval_ids)?;
    let mut suites: Vec<LoadedSuite> = files
        .iter()
        .filter(|(_, kind)| *kind == FileKind::Eval)
        .map(|(file, _)| load_eval_file_filtered(file, ws, filter.clone()))
        .collect();
    let mut diagnostics: Vec<Diagnostic> = suites.iter().flat_map(|s| s.diagnostics.iter().cloned()).collect();
    if let Some(count) = strict_problems(&suites, options.strict) {
        crate::config::promote_warnings(&mut diagnostics);
        return Err(LoadError::Strict { diagnostics, count });
    }
    let skipped = suites.iter().map(|s| s.skipped).sum();
    let unread = suites
        .iter()
        .filter(|s| s.has_errors() && s.case_count == 0 && s.skipped == 0)
        .count();
    if suites.iter().all(|s| s.case_count == 0) {
        return Err(if filter.is_some() {
            LoadError::NoMatchingCase {
                diagnostics,
                patterns: options.eval_ids.clone(),
            }
        } else {
            LoadError::NothingToRun { diagnostics, skipped }
        });
    }
    let invalid = invalid::collect(&suites);
    let notes = sidecar_notes(&options.paths, &suites, ws);
    suites.retain(|s| s.case_count > 0);
    Ok(Loaded {
        suites,
        diagnostics,
        skipped,
        invalid,
        unread,
        notes,
    })
}

/// A note for each path that names a dataset's sidecar: the dataset runs in its stead.
fn sidecar_notes(paths: &[String], suites: &[LoadedSuite], ws: &Workspace) -> Vec<String> {
    paths
        .iter()
        .filter(|arg| crate::load::is_sidecar(Path::new(arg), ws))
        .map(|arg| {
            let dataset = Path::new(arg).with_extension("jsonl");
            let name = suites
                .iter()
                .find(|s| s.file == dataset)
                .map_or_else(String::new, |s| format!(" `{}`", s.dataset));
            format!(
                "{arg} is the sidecar of the dataset {}{name} (it holds the dataset's suite keys): running the dataset",
                dataset.display()
            )
        })
        .collect()
}

/// Under `--strict`, the number of problems in every file; else that of the files that say
/// `strict: true` (their warnings are errors already). `None` when there are none.
fn strict_problems(suites: &[LoadedSuite], strict: bool) -> Option<usize> {
    let count: usize = suites
        .iter()
        .filter(|s| strict || s.strict)
        .map(|s| s.diagnostics.len())
        .sum();
    (count > 0).then_some(count)
}

// ---------------------------------------------------------------------------------------------
// plan

/// How the loaded suites are to run.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// `--target`, repeatable: every suite runs against each (a matrix); none keeps each eval
    /// file's target, `default` too when no target is named `default`
    /// (`docs/architecture.md#targets-files`).
    pub targets: Vec<String>,
    /// `--targets`: a targets file or a directory holding one.
    pub targets_path: Option<PathBuf>,
    /// `--dry-run`: every target answers with a mock.
    pub dry_run: bool,
    /// `--cache`: answers are read from and written to `.agentv/cache/`.
    pub cache: bool,
    /// `--workers`.
    pub workers: Option<usize>,
    /// `--out`; default `.agentv/results/eval_<time>.jsonl`.
    pub out: Option<PathBuf>,
    /// Where resolved `${{ VAR }}` values are registered; the caller's output redacts them.
    pub secrets: Secrets,
    /// `--repeat`: runs of each case against each target (0 and 1 both mean once).
    pub repeat: u32,
    /// `--shard K/N`: only this part of the selected cases.
    pub shard: Option<Shard>,
    /// `--resume`: the results file to complete; its complete records are kept, the rest of
    /// the run is appended to it.
    pub resume: Option<PathBuf>,
    /// `--rerun-failed`: only the cases that did not pass in this results file.
    pub rerun_failed: Option<PathBuf>,
    /// `--budget-usd`: no new case starts once the targets' reported cost reaches it.
    pub budget_usd: Option<f64>,
    /// The command line, for the run summary (redacted when written).
    pub command_line: Vec<String>,
    /// `--strict`: a warning about the targets (an unknown setting) stops the run.
    pub strict: bool,
}

/// A run ready to start: targets resolved, credentials checked, workers decided, the results
/// file open.
pub struct Plan {
    resolved: crate::resolve::Resolved,
    writer: JsonlWriter,
    cache: Option<Arc<ResponseCache>>,
    /// Cases run at once (`docs/architecture.md#running`).
    pub workers: usize,
    /// Jobs to run (cases × targets × repeats, less what a shard, a rerun or a resume leaves
    /// out).
    pub total: usize,
    /// Records the results file holds once the selection has run (with a resume, `total` plus
    /// the complete records it already holds).
    pub planned: usize,
    /// Runs of each case against each target.
    pub repeat: u32,
    /// `--shard`.
    pub shard: Option<Shard>,
    /// `--resume`: complete records kept from the file, and what its end needed.
    pub resumed: Option<(usize, Repair)>,
    /// `--rerun-failed`: cases (with their target) that did not pass there.
    pub rerun_failed: Option<usize>,
    /// Cases sharing a dataset and an id with another case: reruns, resumes and merges cannot
    /// tell them apart.
    pub ambiguous: Vec<(String, String)>,
    /// `--budget-usd`.
    pub budget_usd: Option<f64>,
    /// The first eval file's 4.x `execution.threshold`, the exit-code gate without
    /// `--threshold`.
    pub suite_threshold: Option<f64>,
    /// A promptfoo config runs: a failed row fails the quality gate, as promptfoo's exit code
    /// says (`docs/promptfoo.md#exit-codes`).
    pub gate_on_verdicts: bool,
    /// `<results>.summary.json`.
    pub summary_path: PathBuf,
    expansion: Expansion,
    resume: Option<Arc<Prior>>,
    metadata: RunMetadata,
    /// Cases left out at load as invalid, recorded by this run (with `--shard`, those of this
    /// shard).
    pub skipped: usize,
    invalid: Vec<crate::model::EvaluationRecord>,
    /// Eval files that could not be read at all.
    pub unread: usize,
    /// Each distinct target, in first-use order.
    pub targets: Vec<TargetInfo>,
    /// Warnings found while resolving (`.env` files, targets files, settings).
    pub warnings: Vec<Diagnostic>,
}

/// A target as the user knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetInfo {
    pub name: String,
    /// Its provider (`openai`, `claude-code`, `mock`, ...).
    pub provider: &'static str,
    /// The target that judges its answers (itself unless `judge_target` names another).
    pub judge: String,
}

impl PlanOptions {
    /// The results file: the one to resume, else `out`, else
    /// `.agentv/results/eval_<time>.jsonl` under the working directory.
    pub fn results_path(&self, ws: &Workspace) -> PathBuf {
        self.resume
            .clone()
            .or_else(|| self.out.clone())
            .unwrap_or_else(|| default_results_path(&ws.cwd))
    }
}

impl Plan {
    /// The results file.
    pub fn results_path(&self) -> &Path {
        self.writer.path()
    }
}

/// Why the run cannot start: nothing has been called.
#[derive(Debug)]
pub struct PlanError {
    /// Warnings found on the way, which often explain the errors (a skipped `.env` line behind
    /// a missing variable): shown first.
    pub warnings: Vec<Diagnostic>,
    /// Every problem, each with the file (and line) or flag it comes from.
    pub errors: Vec<PlanProblem>,
}

impl PlanError {
    fn new(warnings: Vec<Diagnostic>, errors: Vec<PlanProblem>) -> Self {
        Self { warnings, errors }
    }

    fn one(problem: PlanProblem) -> Self {
        Self::new(Vec::new(), vec![problem])
    }
}

/// One reason the run cannot start.
#[derive(Debug, thiserror::Error)]
pub enum PlanProblem {
    #[error("--cache cannot be used with --repeat: every repeat would get the same cached answer")]
    CacheWithRepeat,
    /// `--resume` names a results file another program wrote.
    #[error(
        "--resume {}: the file holds lines agentv did not write (AgentV 2.x or 4.x results); resume only agentv's own results files",
        .0.display()
    )]
    ResumeForeign(PathBuf),
    /// The results file of `--resume` or `--rerun-failed` (`flag`) cannot be read: the error
    /// names its line and column.
    #[error("{flag}: {source}")]
    Prior {
        flag: &'static str,
        source: crate::report::ReadError,
    },
    /// A suite's target (or the targets file) cannot be used; the problem names the file.
    #[error("{0}")]
    Target(crate::resolve::TargetProblem),
    /// `--strict` (or a suite's `strict: true`) and the targets have problems (the warnings).
    #[error("nothing ran: {count} problem(s) with the targets, which --strict (or `strict: true`) makes errors")]
    StrictTargets { count: usize },
    /// `--budget-usd` and a target (or judge target) whose cost cannot be known: the message
    /// names it and says why (`docs/running.md#cost`).
    #[error("{0}")]
    Uncountable(String),
    /// A case's workspace cannot be prepared (`docs/workspaces.md`): the message names it.
    #[error("{0}")]
    Workspace(String),
    #[error("cannot open results file {}: {source}", path.display())]
    OpenResults { path: PathBuf, source: std::io::Error },
    #[error("cannot write the run summary {}: {source}", path.display())]
    WriteSummary { path: PathBuf, source: std::io::Error },
}

/// Resolves each suite's targets (`docs/architecture.md#targets-files`), checks every
/// credential before any call, decides the workers (`docs/architecture.md#running`), chooses
/// the jobs (`docs/running.md`) and opens the results file (`docs/architecture.md#outputs`: an
/// existing one is replaced, unless it is resumed), writing the run summary's first version.
pub fn plan(ws: &Workspace, loaded: Loaded, options: &PlanOptions) -> Result<Plan, PlanError> {
    let repeat = repeat_of(&loaded, options);
    if repeat > 1 && options.cache {
        return Err(PlanError::one(PlanProblem::CacheWithRepeat));
    }
    let (resume, rerun) = priors(options)?;
    let cache = options.cache.then(|| {
        Arc::new(ResponseCache::new(
            ws.cwd.join(".agentv").join("cache"),
            options.secrets.clone(),
        ))
    });
    let strict = options.strict || loaded.suites.iter().any(|s| s.strict);
    let (resolved, mut warnings) = resolve_checked(ws, loaded.suites, options, cache.clone(), strict)?;
    let chosen = selection::select(
        &resolved.suites,
        &selection::Choice {
            repeat,
            shard: options.shard,
            rerun: rerun.clone(),
            resume: resume.clone(),
        },
    );
    let out = options.results_path(ws);
    let (writer, repair) = open_results(&out, resume.is_some())
        .map_err(|problem| PlanError::new(std::mem::take(&mut warnings), vec![problem]))?;
    let resumed = resume.as_ref().zip(repair).map(|(p, repair)| (p.complete(), repair));
    // Invalid cases are records too: `merge` counts them among what the run planned.
    let invalid = invalid::records(loaded.invalid, options.shard, &options.targets);
    let planned = chosen.planned + invalid.len();
    let metadata = RunMetadata {
        planned,
        shard: chosen.shard.clone(),
        resumed_records: resumed.map(|(n, _)| n),
        ..metadata(ws, options, &resolved, &out, repeat)
    };
    let summary_path = summary_path(&out);
    // The first version: what the run sets out to do, for a run killed before its end.
    if let Err(source) = write_summary(
        &summary_path,
        &metadata,
        &RunStats::default().compute(),
        &resolved.secrets,
    ) {
        let problem = PlanProblem::WriteSummary {
            path: summary_path,
            source,
        };
        return Err(PlanError::new(warnings, vec![problem]));
    }
    Ok(Plan {
        workers: workers::decide(options.workers, &target_workers(&resolved)),
        total: chosen.to_run,
        planned,
        repeat: repeat.max(1),
        shard: options.shard,
        resumed,
        rerun_failed: rerun.as_ref().map(|p| p.failed_cases().len()),
        ambiguous: chosen.ambiguous,
        budget_usd: options.budget_usd,
        suite_threshold: resolved.suites.first().and_then(|(suite, _)| suite.threshold),
        gate_on_verdicts: resolved
            .suites
            .iter()
            .any(|(suite, _)| suite.generation == crate::model::Generation::Promptfoo),
        summary_path,
        expansion: chosen.expansion,
        resume,
        metadata,
        skipped: invalid.len(),
        invalid,
        unread: loaded.unread,
        targets: target_infos(&resolved),
        warnings,
        resolved,
        writer,
        cache,
    })
}

/// `--repeat`, else a promptfoo config's `evaluateOptions.repeat`.
fn repeat_of(loaded: &Loaded, options: &PlanOptions) -> u32 {
    match options.repeat {
        0 | 1 => loaded
            .suites
            .iter()
            .filter_map(|s| s.repeat)
            .max()
            .unwrap_or(options.repeat),
        n => n,
    }
}

/// The results files of `--resume` and `--rerun-failed`, read.
type Priors = (Option<Arc<Prior>>, Option<Arc<Prior>>);

fn priors(options: &PlanOptions) -> Result<Priors, PlanError> {
    let resume = match &options.resume {
        None => None,
        Some(path) => match read_prior(path, "--resume")? {
            p if p.ours => Some(Arc::new(p)),
            _ => return Err(PlanError::one(PlanProblem::ResumeForeign(path.clone()))),
        },
    };
    let rerun = match &options.rerun_failed {
        None => None,
        Some(path) => Some(Arc::new(read_prior(path, "--rerun-failed")?)),
    };
    Ok((resume, rerun))
}

/// The suites' targets resolved, and every check that must pass before any call: the
/// targets' warnings under `--strict`, a budget that can count every target
/// (`docs/running.md#cost`), the cases' workspaces. Returns the warnings too.
fn resolve_checked(
    ws: &Workspace,
    suites: Vec<LoadedSuite>,
    options: &PlanOptions,
    cache: Option<Arc<ResponseCache>>,
    strict: bool,
) -> Result<(crate::resolve::Resolved, Vec<Diagnostic>), PlanError> {
    let resolve_options = ResolveOptions {
        targets: options.targets.clone(),
        targets_path: options.targets_path.clone(),
        dry_run: options.dry_run,
        cache,
        secrets: options.secrets.clone(),
    };
    let resolved = resolve(suites, ws, &resolve_options).map_err(|failure| {
        PlanError::new(
            failure.warnings,
            failure.errors.into_iter().map(PlanProblem::Target).collect(),
        )
    })?;
    let mut warnings = resolved.warnings.clone();
    if strict && !warnings.is_empty() {
        let count = crate::config::promote_warnings(&mut warnings);
        return Err(PlanError::new(warnings, vec![PlanProblem::StrictTargets { count }]));
    }
    if options.budget_usd.is_some() {
        let uncountable = crate::run::uncountable(&resolved.targets);
        if !uncountable.is_empty() {
            let problems = uncountable.into_iter().map(PlanProblem::Uncountable).collect();
            return Err(PlanError::new(warnings, problems));
        }
    }
    let cases = resolved.suites.iter().flat_map(|(s, _)| &s.cases).map(|c| &c.case);
    if let Some(missing) = crate::workspace::preflight_cases(cases) {
        return Err(PlanError::new(warnings, vec![PlanProblem::Workspace(missing)]));
    }
    Ok((resolved, warnings))
}

/// The results file, opened to append (a resume, with what its end needed) or created.
fn open_results(out: &Path, resuming: bool) -> Result<(JsonlWriter, Option<Repair>), PlanProblem> {
    let opened = if resuming {
        JsonlWriter::append(out).map(|(w, repair)| (w, Some(repair)))
    } else {
        JsonlWriter::create(out).map(|w| (w, None))
    };
    opened.map_err(|source| PlanProblem::OpenResults {
        path: out.to_path_buf(),
        source,
    })
}

/// Each target's `workers` setting and its provider's cap, for [`workers::decide`].
fn target_workers(resolved: &crate::resolve::Resolved) -> Vec<workers::TargetWorkers> {
    resolved
        .targets
        .iter()
        .map(|t| workers::TargetWorkers {
            setting: t.workers,
            cap: t.provider.max_workers(),
        })
        .collect()
}

fn target_infos(resolved: &crate::resolve::Resolved) -> Vec<TargetInfo> {
    resolved
        .targets
        .iter()
        .map(|t| TargetInfo {
            name: t.name.clone(),
            provider: t.provider.kind().as_str(),
            judge: t.judge_name.clone(),
        })
        .collect()
}

/// What the run summary says the run set out to do, but for what the selection decides
/// (`planned`, `shard`, `resumed_records`).
fn metadata(
    ws: &Workspace,
    options: &PlanOptions,
    resolved: &crate::resolve::Resolved,
    out: &Path,
    repeat: u32,
) -> RunMetadata {
    RunMetadata {
        agentv_version: env!("CARGO_PKG_VERSION").to_owned(),
        command: options.command_line.clone(),
        started_at: jiff::Timestamp::now().to_string(),
        finished_at: None,
        git_commit: crate::report::git_commit(&ws.repo_root),
        results_file: out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        targets: resolved.targets.iter().map(|t| t.name.clone()).collect(),
        repeat: repeat.max(1),
        planned: 0,
        shard: None,
        budget_usd: options.budget_usd,
        resumed_records: None,
        rerun_failed_from: options.rerun_failed.as_ref().map(|p| {
            p.file_name()
                .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
        }),
        merged_from: Vec::new(),
    }
}

/// A previous results file (`flag` names it in messages), or every problem reading it.
fn read_prior(path: &Path, flag: &'static str) -> Result<Prior, PlanError> {
    Prior::read(path).map_err(|errors| {
        let problems = errors
            .into_iter()
            .map(|source| PlanProblem::Prior { flag, source })
            .collect();
        PlanError::new(Vec::new(), problems)
    })
}

// ---------------------------------------------------------------------------------------------
// run

/// A finished run, ready for [`report`].
#[derive(Debug)]
pub struct Finished {
    pub run: RunReport,
    pub results_path: PathBuf,
    /// Cases left out at load as invalid.
    pub skipped: usize,
    /// Eval files that could not be read at all.
    pub unread: usize,
    /// Lookups of this run's targets and judges, with `--cache`.
    pub cache: Option<CacheStats>,
    /// The run's wall time, from the first healthcheck to the last record.
    pub elapsed: Duration,
    /// The working directory, which the summary shows paths relative to.
    cwd: PathBuf,
    /// The run's statistics (with a resume, over the whole results file).
    pub stats: StatsReport,
    /// `<results>.summary.json`, when it could be written.
    pub summary_path: Option<PathBuf>,
    /// The exit-code gate of the first eval file, when `--threshold` is not given.
    pub suite_threshold: Option<f64>,
    /// [`Plan::gate_on_verdicts`].
    pub gate_on_verdicts: bool,
    /// Workspaces kept after the run (failed cases', or all with `--keep-workspaces`).
    pub kept_workspaces: Vec<crate::workspace::Kept>,
    secrets: Secrets,
}

/// Runs every case of `plan`. Each record goes to the results file, then to each of `sinks`
/// (reports), as soon as it is complete; `observer` hears of progress. Never fails: a case that
/// cannot run or be graded becomes an error record, a sink that fails is reported to `observer`
/// and counted. `interrupt` stops scheduling, then running cases.
pub async fn run(
    ws: &Workspace,
    plan: Plan,
    options: &RunOptions,
    observer: &mut dyn RunObserver,
    sinks: &mut [&mut dyn Sink],
    interrupt: &Interrupt,
) -> Finished {
    let Plan {
        resolved,
        mut writer,
        cache,
        workers,
        skipped,
        unread,
        total,
        expansion,
        resume,
        mut metadata,
        summary_path,
        budget_usd,
        suite_threshold,
        gate_on_verdicts,
        invalid,
        ..
    } = plan;
    let secrets = resolved.secrets.clone();
    let state = batch_state(writer.path(), resume.is_some());
    let setup = run_setup(ws, options, &resolved, workers, budget_usd, state);
    let started = std::time::Instant::now();
    let mut stats = RunStats::default();
    if let Some(prior) = &resume {
        carry_over(prior, &mut stats, sinks, observer, &secrets);
    }
    let unwritten_invalid = write_invalid(&invalid, &mut writer, &mut stats, sinks, observer, &secrets);
    let mut report = {
        let mut all: Vec<&mut dyn Sink> = Vec::with_capacity(sinks.len() + 2);
        all.push(&mut writer);
        for sink in sinks.iter_mut() {
            let sink: &mut dyn Sink = &mut **sink;
            all.push(sink);
        }
        all.push(&mut stats);
        let jobs = resolved.into_jobs(expansion, total);
        crate::run::run(jobs, &setup, &mut all, observer, interrupt).await
    };
    if let Some(prior) = &resume {
        // The outcome covers the whole file: what an uninterrupted run would have decided.
        if let Ok(records) = prior.carried() {
            records.for_each(|r| report.summary.add(&r));
        }
    }
    invalid.iter().for_each(|r| report.summary.add(r));
    report.unwritten += unwritten_invalid;
    let kept_workspaces = match &setup.workspaces {
        Some(workspaces) => workspaces.finish().await,
        None => Vec::new(),
    };
    let stats = stats.compute();
    metadata.finished_at = Some(jiff::Timestamp::now().to_string());
    let summary_path = write_final_summary(summary_path, &metadata, &stats, &secrets, observer);
    report.unfinished += usize::from(summary_path.is_none());
    Finished {
        run: report,
        results_path: writer.path().to_path_buf(),
        skipped,
        unread,
        cache: cache.map(|c| c.stats()),
        elapsed: started.elapsed(),
        cwd: ws.cwd.clone(),
        stats,
        summary_path,
        suite_threshold,
        gate_on_verdicts,
        kept_workspaces,
        secrets,
    }
}

/// The run summary's last version; `None` (and a warning) when it cannot be written.
fn write_final_summary(
    path: PathBuf,
    metadata: &RunMetadata,
    stats: &StatsReport,
    secrets: &Secrets,
    observer: &mut dyn RunObserver,
) -> Option<PathBuf> {
    match write_summary(&path, metadata, stats, secrets) {
        Ok(()) => Some(path),
        Err(e) => {
            observer.warning(&format!("cannot write the run summary {}: {e}", path.display()));
            None
        }
    }
}

/// What the runner works with: `options` as asked (blank exploration tools dropped) and what
/// the plan decided.
fn run_setup(
    ws: &Workspace,
    options: &RunOptions,
    resolved: &crate::resolve::Resolved,
    workers: usize,
    budget_usd: Option<f64>,
    batch_state: PathBuf,
) -> RunSetup {
    let secrets = &resolved.secrets;
    let mut asked = options.clone();
    asked.exploration_tools = options
        .exploration_tools
        .iter()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    RunSetup {
        workers,
        context: RunContext {
            timeout: options.timeout,
            child_env: resolved.child_env.clone(),
            secrets: secrets.clone(),
            dump_prompts: options
                .dump_prompts
                .then(|| Arc::new(PromptDumps::new(ws.cwd.join(".agentv").join("prompts")))),
            strict: options.strict,
            cwd: None,
            held_pools: Default::default(),
        },
        budget: budget_usd.map(|limit_usd| Budget { limit_usd }),
        workspaces: crate::workspace::runtime_for(
            resolved.suites.iter().flat_map(|(s, _)| &s.cases).map(|c| &c.case),
            &options.workspaces,
            &resolved.child_env,
            secrets,
        ),
        batch_state: Some(batch_state),
        options: asked,
    }
}

/// Writes the records of the invalid cases to the results file, the reports and the
/// statistics; returns how many could not be written everywhere.
fn write_invalid(
    records: &[crate::model::EvaluationRecord],
    writer: &mut JsonlWriter,
    stats: &mut RunStats,
    sinks: &mut [&mut dyn Sink],
    observer: &mut dyn RunObserver,
    secrets: &Secrets,
) -> usize {
    let mut unwritten = 0;
    for record in records {
        stats.add(record);
        let mut failed = false;
        let row = Row::redact(record, secrets);
        let all = std::iter::once(&mut *writer as &mut dyn Sink).chain(sinks.iter_mut().map(|s| &mut **s));
        for sink in all {
            if let Err(e) = sink.write(&row) {
                observer.warning(&format!("cannot write to the {}: {e}", sink.describe()));
                failed = true;
            }
        }
        unwritten += usize::from(failed);
    }
    unwritten
}

/// Feeds the complete records of a resumed file to the statistics and the reports, as if they
/// had just run (the results file has them already).
fn carry_over(
    prior: &Prior,
    stats: &mut RunStats,
    sinks: &mut [&mut dyn Sink],
    observer: &mut dyn RunObserver,
    secrets: &Secrets,
) {
    let records = match prior.carried() {
        Ok(records) => records,
        Err(e) => {
            observer.warning(&format!("cannot read the resumed results again: {e}"));
            return;
        }
    };
    let mut failed = vec![false; sinks.len()];
    for record in records {
        stats.add(&record);
        let row = Row::redact(&record, secrets);
        for (sink, failed) in sinks.iter_mut().zip(failed.iter_mut()) {
            if let Err(e) = sink.write(&row)
                && !*failed
            {
                observer.warning(&format!("cannot write to the {}: {e}", sink.describe()));
                *failed = true;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// report

/// What a finished run amounts to.
#[derive(Debug, Clone)]
pub struct Report {
    /// The one decision behind the exit code (`docs/architecture.md#exit-codes`).
    pub outcome: Outcome,
    /// The statistics, drawn by [`Report::summary`].
    pub statistics: Summary,
    /// What the summary shows around the cases: results path, wall time, cache lookups.
    pub context: SummaryContext,
    /// The summary on one line, for `--quiet`.
    pub summary_line: String,
    /// Cache hits and misses, with `--cache`.
    pub cache: Option<CacheStats>,
    /// The counts behind the outcome, to explain it.
    pub counts: ProblemCounts,
    /// Targets the provider pushed back on: how often, and where their concurrency settled.
    pub throttling: Vec<crate::run::TargetThrottling>,
    /// What the cases answered in batch cost, against the online price.
    pub batch_savings: crate::run::BatchSavings,
    secrets: Secrets,
    /// Statistics per target, per grader and across repeats (also in the run summary file).
    pub stats: StatsReport,
    /// The repeats (`--repeat`), ready to print after the summary; empty otherwise. Redacted and
    /// escaped. (Targets side by side are part of the summary.)
    pub stats_text: String,
    /// `<results>.summary.json`, when it was written.
    pub summary_file: Option<PathBuf>,
}

impl Report {
    /// The summary as printed at the end of a run: failures, verdicts, statistics, time, tokens,
    /// cost, cache, histogram, targets side by side, best and worst cases, results path; every
    /// line within `style.width` columns. Ids and messages in it are redacted and escaped.
    pub fn summary(&self, style: SummaryStyle) -> String {
        self.statistics.render(&self.context, style, &self.secrets)
    }
}

/// Cases by what kept them from a clean run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProblemCounts {
    /// Cases whose target could not answer.
    pub execution_errors: usize,
    /// Cases an evaluator could not grade.
    pub grader_errors: usize,
    /// Cases left out at load as invalid.
    pub skipped: usize,
    /// Eval files that could not be read at all.
    pub unread: usize,
    /// Cases whose record could not be written to the results file or a report, and reports
    /// that could not be finished.
    pub unwritten: usize,
    /// Cases never started, or cancelled.
    pub not_run: usize,
    /// Cases recorded as not run because the run's cost reached `--budget-usd` (not counted
    /// in `execution_errors`).
    pub over_budget: usize,
    /// Graded cases below `--threshold` (0 without one).
    pub below_threshold: usize,
    pub threshold: Option<f64>,
}

/// The outcome (`docs/architecture.md#exit-codes`) of `finished` against `threshold`, with its summary.
pub fn report(finished: &Finished, threshold: Option<f64>) -> Report {
    // A 4.x suite's own `execution.threshold` gates the exit code as `--threshold` would.
    let threshold = threshold.or(finished.suite_threshold);
    let run = &finished.run;
    let summary = &run.summary;
    // An unread file counts as a case left out: what it held did not run.
    let outcome = match run.outcome(finished.skipped + finished.unread, threshold) {
        Outcome::Complete if finished.gate_on_verdicts && summary.verdicts[2] > 0 => Outcome::BelowThreshold,
        outcome => outcome,
    };
    Report {
        outcome,
        statistics: summary.clone(),
        context: SummaryContext {
            results: Some(finished.results_path.clone()),
            cwd: Some(finished.cwd.clone()),
            elapsed: Some(finished.elapsed),
            cache: finished.cache,
            targets: finished.stats.targets.clone(),
        },
        summary_line: summary_line(summary, &finished.results_path, &finished.secrets),
        cache: finished.cache,
        secrets: finished.secrets.clone(),
        stats: finished.stats.clone(),
        stats_text: finished.stats.render_repeats(&finished.secrets),
        summary_file: finished.summary_path.clone(),
        throttling: run.throttling.iter().filter(|t| t.throttled()).cloned().collect(),
        batch_savings: run.batch_savings,
        counts: ProblemCounts {
            execution_errors: summary.execution_errors().saturating_sub(run.over_budget),
            over_budget: run.over_budget,
            grader_errors: summary.grader_errors(),
            skipped: finished.skipped,
            unread: finished.unread,
            unwritten: run.unwritten + run.unfinished,
            not_run: run.not_run,
            below_threshold: threshold.map_or(0, |t| summary.below(t)),
            threshold,
        },
    }
}

/// `3 cases: 2 pass, 0 borderline, 1 fail, 0 errors; mean 0.733; results in r.jsonl`, with
/// `, 2 invalid` and `, 1 not run` after the errors when there are any.
fn summary_line(summary: &Summary, results: &Path, secrets: &Secrets) -> String {
    let [pass, borderline, fail] = summary.verdicts;
    let errors = summary.execution_errors() - summary.not_run() + summary.grader_errors();
    let mut apart = String::new();
    for (n, what) in [(summary.invalid(), "invalid"), (summary.not_run(), "not run")] {
        if n > 0 {
            apart.push_str(&format!(", {n} {what}"));
        }
    }
    let mean = summary
        .stats()
        .map_or_else(|| "no graded cases".to_owned(), |s| format!("mean {:.3}", s.mean));
    let path = results.display().to_string();
    format!(
        "{} case(s): {pass} pass, {borderline} borderline, {fail} fail, {errors} error(s){apart}; {mean}; results in {}",
        summary.total,
        crate::report::escape_line(&secrets.redact(&path))
    )
}

/// The batch state file beside the results (`docs/batch.md`, "Interruptions"). Only `--resume`
/// reattaches to the jobs it names: a new run writing the same results file starts afresh, so
/// that answers to prompts that may have changed since are never taken.
fn batch_state(results: &std::path::Path, resuming: bool) -> std::path::PathBuf {
    let path = crate::run::state_path(results);
    if !resuming {
        // Absent is the usual case; any other failure shows when the run writes the state.
        let _ = std::fs::remove_file(&path);
    }
    path
}
