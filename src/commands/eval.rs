//! `agentv eval`: load → plan → run → report, each step decided by the core.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentv_core::report::{ReportFormat, RunDirectory, RunInfo, Sink};
use agentv_core::{Interrupt, LoadOptions, PlanOptions, RunOptions, Workspace};

use crate::cli::EvalArgs;
use crate::commands::report::{ReportError, check_distinct, default_report_path, open_sinks};
use crate::exit::ExitStatus;
use crate::printer::{self, Printer, Progress};
use crate::signals;

/// How long in-flight cases may finish after Ctrl-C or SIGTERM.
const INTERRUPT_GRACE: Duration = Duration::from_secs(10);

pub fn run(mut args: EvalArgs, ws: &Workspace, printer: Printer) -> ExitStatus {
    if let Some(note) = args.drop_run_word() {
        printer.note(&note);
    }
    if let Some(dir) = args.output.as_ref().filter(|d| d.exists() && !d.is_dir()) {
        printer.error(&format!(
            "--output {}: a file is there; --output names a directory",
            dir.display()
        ));
        return ExitStatus::Config;
    }
    let Some(loaded) = load(&args, ws, &printer) else {
        return ExitStatus::Config;
    };
    let eval_file = loaded
        .suites
        .first()
        .map(|s| s.file.display().to_string())
        .unwrap_or_default();
    let options = plan_options(&args);
    let out = options.results_path(ws);
    let reports = report_paths(&args, &out);
    let summary = agentv_core::report::summary_path(&out);
    let read_back: Vec<&PathBuf> = args.rerun_failed.iter().collect();
    if let Err(e) = check_distinct(&[out.as_path(), summary.as_path()], &reports)
        .map_err(OutputError::from)
        .and_then(|()| check_not_replaced(&out, &read_back))
        .and_then(|()| check_not_the_index(&[out.as_path(), summary.as_path()], args.output.as_deref()))
    {
        printer.error(&e.to_string());
        return ExitStatus::Config;
    }
    let mut report_sinks = match report_sinks(&args, &out, &reports) {
        Ok(sinks) => sinks,
        Err(e) => {
            e.print(printer);
            return ExitStatus::Config;
        }
    };
    let plan = match agentv_core::plan(ws, loaded, &options) {
        Ok(plan) => plan,
        Err(e) => {
            printer.diagnostics(&e.warnings);
            for problem in &e.errors {
                printer.error(&problem.to_string());
            }
            return ExitStatus::Config;
        }
    };
    printer.diagnostics(&plan.warnings);
    crate::memory::release_freed();
    match run_directory(args.output.as_deref(), eval_file, plan.planned) {
        Ok(sink) => report_sinks.extend(sink),
        Err(e) => {
            printer.error(&e.to_string());
            return ExitStatus::Config;
        }
    }
    printer.plan(&plan);
    execute(&args, ws, plan, report_sinks, &reports, printer)
}

/// The suites of the paths given, their diagnostics and notes printed; `None` when they cannot
/// run (the errors printed).
fn load(args: &EvalArgs, ws: &Workspace, printer: &Printer) -> Option<agentv_core::Loaded> {
    let load = LoadOptions {
        paths: args.paths.clone(),
        eval_ids: args.eval_id.clone(),
        strict: args.strict,
    };
    let loaded = match agentv_core::load(ws, &load) {
        Ok(loaded) => loaded,
        Err(e) => {
            printer.diagnostics(e.diagnostics());
            for message in e.messages() {
                printer.error(&message);
            }
            return None;
        }
    };
    printer.diagnostics(&loaded.diagnostics);
    for note in &loaded.notes {
        printer.note(note);
    }
    Some(loaded)
}

/// Each `--report`'s format and path, the path beside the results file when none is given.
fn report_paths(args: &EvalArgs, out: &Path) -> Vec<(ReportFormat, PathBuf)> {
    args.reports
        .iter()
        .map(|spec| {
            let path = spec
                .path
                .clone()
                .unwrap_or_else(|| default_report_path(out, spec.format));
            (spec.format, path)
        })
        .collect()
}

/// The reports' sinks, opened (created) before anything runs, and the promptfoo JSON output
/// when asked for.
fn report_sinks(
    args: &EvalArgs,
    out: &Path,
    reports: &[(ReportFormat, PathBuf)],
) -> Result<Vec<Box<dyn Sink>>, ReportError> {
    let title = format!(
        "agentv results: {}",
        out.file_name()
            .map_or_else(|| out.display().to_string(), |n| n.to_string_lossy().into_owned())
    );
    let mut sinks = open_sinks(reports, &title, &printer::secrets())?;
    if let Some(path) = promptfoo_json(args) {
        sinks.push(Box::new(agentv_core::report::PromptfooJson::new(&path)));
    }
    Ok(sinks)
}

/// Runs the plan on a new runtime, with the interrupt listener, and prints what happened.
fn execute(
    args: &EvalArgs,
    ws: &Workspace,
    plan: agentv_core::Plan,
    mut report_sinks: Vec<Box<dyn Sink>>,
    reports: &[(ReportFormat, PathBuf)],
    printer: Printer,
) -> ExitStatus {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            printer.error(&format!("cannot start the async runtime: {e}"));
            return ExitStatus::Config;
        }
    };
    let workspaces = match workspace_options(args, ws) {
        Ok(w) => w,
        Err(e) => {
            printer.error(&e.to_string());
            return ExitStatus::Config;
        }
    };
    let options = RunOptions {
        workspaces,
        max_retries: args.max_retries,
        timeout: args.timeout,
        grace: INTERRUPT_GRACE,
        exploration_tools: args.exploration_tools.clone(),
        dump_prompts: args.dump_prompts,
        threshold: args.threshold,
        strict: args.strict,
        batch: match args.batch {
            None => agentv_core::BatchMode::Targets,
            Some(crate::cli::BatchFlag::On) => agentv_core::BatchMode::All,
            Some(crate::cli::BatchFlag::Strict) => agentv_core::BatchMode::Strict,
        },
    };
    runtime.block_on(async {
        let interrupt = Interrupt::default();
        let listener = signals::Listener::start(interrupt.clone(), printer);
        let mut progress = Progress::new(printer, printer::secrets(), plan.total, plan.targets.len());
        let mut sinks: Vec<&mut dyn Sink> = report_sinks.iter_mut().map(|s| s.as_mut() as &mut dyn Sink).collect();
        let finished = agentv_core::run(ws, plan, &options, &mut progress, &mut sinks, &interrupt).await;
        progress.finish();
        let signal = listener.finish();
        let report = agentv_core::report(&finished, args.threshold);
        printer.report(&report, signal);
        printer.run_stats(&report);
        if !finished.kept_workspaces.is_empty() {
            let lines: Vec<String> = finished
                .kept_workspaces
                .iter()
                .map(|k| format!("  {} -> {}", k.label, k.path.display()))
                .collect();
            printer.note(&format!("Preserved workspaces:\n{}", lines.join("\n")));
        }
        for (format, path) in reports {
            if path.exists() {
                printer.note(&format!("{} report written to {}", format.name(), path.display()));
            }
        }
        if let Some(dir) = &args.output {
            printer.note(&format!("AgentV 4.x run directory written to {}", dir.display()));
        }
        if let Some(path) = promptfoo_json(args).filter(|p| p.exists()) {
            printer.note(&format!("promptfoo JSON output written to {}", path.display()));
        }
        ExitStatus::of_run(report.outcome, signal)
    })
}

/// `--out x.json`: promptfoo's JSON output goes there (`docs/promptfoo.md#results`).
fn promptfoo_json(args: &EvalArgs) -> Option<PathBuf> {
    args.out
        .clone()
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")))
}

/// How the loaded suites are to run, as the flags say.
fn plan_options(args: &EvalArgs) -> PlanOptions {
    PlanOptions {
        targets: args.target.clone(),
        targets_path: args.targets.clone(),
        dry_run: args.dry_run,
        cache: args.cache,
        workers: args.workers.map(|w| w as usize),
        // With --output, agentv's own results go in the run directory too; beside promptfoo's
        // JSON output (`--out x.json`) as x.jsonl.
        out: match promptfoo_json(args) {
            Some(json) => Some(json.with_extension("jsonl")),
            None => args.out.clone(),
        }
        .or_else(|| {
            let dir = args.output.as_ref()?;
            args.resume.is_none().then(|| dir.join("results.jsonl"))
        }),
        secrets: printer::secrets(),
        repeat: args.repeat,
        shard: args.shard,
        resume: args.resume.clone(),
        rerun_failed: args.rerun_failed.clone(),
        budget_usd: args.budget_usd,
        command_line: command_line(),
        strict: args.strict,
    }
}

/// The sink of AgentV 4.x's run directory `--output` asks for (`docs/results.md`), its stub
/// `benchmark.json` written.
fn run_directory(
    dir: Option<&std::path::Path>,
    eval_file: String,
    planned: usize,
) -> Result<Option<Box<dyn Sink>>, OutputError> {
    let Some(dir) = dir else { return Ok(None) };
    let info = RunInfo {
        eval_file,
        planned,
        experiment: "default".to_owned(),
    };
    match RunDirectory::create(dir, info, printer::secrets()) {
        Ok(sink) => Ok(Some(Box::new(sink))),
        Err(source) => Err(OutputError::RunDirectory {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// A bad `--workspace-path` (`docs/workspaces.md#flags`); nothing has run.
#[derive(Debug, thiserror::Error)]
enum WorkspaceFlagError {
    #[error("--workspace-path does not exist: {}", .0.display())]
    Missing(PathBuf),
    #[error("--workspace-path is not a directory: {}", .0.display())]
    NotADirectory(PathBuf),
    #[error("--workspace-path requires --workspace-mode static (or omit --workspace-mode)")]
    NotStatic,
}

/// `--workspace-mode`, `--workspace-path` and `--keep-workspaces`, checked before anything
/// runs (`docs/workspaces.md#flags`).
fn workspace_options(args: &EvalArgs, ws: &Workspace) -> Result<agentv_core::WorkspaceOptions, WorkspaceFlagError> {
    use agentv_core::model::workspace::Mode;
    let mode = args.workspace_mode.as_deref().and_then(Mode::parse);
    let path = match &args.workspace_path {
        None => None,
        Some(p) => {
            let abs = agentv_core::load::normalize(&ws.cwd.join(p));
            if !abs.exists() {
                return Err(WorkspaceFlagError::Missing(abs));
            }
            if !abs.is_dir() {
                return Err(WorkspaceFlagError::NotADirectory(abs));
            }
            if mode.is_some_and(|m| m != Mode::Static) {
                return Err(WorkspaceFlagError::NotStatic);
            }
            Some(abs)
        }
    };
    Ok(agentv_core::WorkspaceOptions {
        mode,
        path,
        keep: args.keep_workspaces,
        data_dir: None,
    })
}

/// The command line as given, for the run summary (the core redacts it when writing).
pub fn command_line() -> Vec<String> {
    std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect()
}

/// Where `eval` would write is not usable; nothing has run.
#[derive(Debug, thiserror::Error)]
enum OutputError {
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error("{} is the run directory's index; write agentv's results elsewhere with --out", .0.display())]
    IsTheIndex(PathBuf),
    #[error("the results file {} is the one --rerun-failed reads; write the rerun elsewhere with --out", .0.display())]
    ReadByRerun(PathBuf),
    #[error("cannot write the run directory {}: {source}", path.display())]
    RunDirectory { path: PathBuf, source: std::io::Error },
}

/// agentv's own outputs must not be the run directory's `index.jsonl`.
fn check_not_the_index(outputs: &[&std::path::Path], run_dir: Option<&std::path::Path>) -> Result<(), OutputError> {
    let Some(index) = run_dir.map(|d| d.join(agentv_core::report::RUN_DIR_INDEX)) else {
        return Ok(());
    };
    match outputs.iter().find(|o| **o == index) {
        Some(o) => Err(OutputError::IsTheIndex(o.to_path_buf())),
        None => Ok(()),
    }
}

/// `--out` must not replace the file `--rerun-failed` reads: its passing cases would be lost.
fn check_not_replaced(out: &std::path::Path, read: &[&PathBuf]) -> Result<(), OutputError> {
    let same = |a: &std::path::Path, b: &std::path::Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    match read.iter().find(|r| same(out, r)) {
        Some(r) => Err(OutputError::ReadByRerun(r.to_path_buf())),
        None => Ok(()),
    }
}
