//! `agentv eval`: load → resolve → run → report.

use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use agentv_core::load::{CaseFilter, LoadedSuite, Workspace, expand_paths, load_eval_file_filtered};
use agentv_core::providers::ResponseCache;
use agentv_core::report::{JsonlWriter, Sink, default_results_path};
use agentv_core::resolve::{Plan, ResolveOptions, resolve};
use agentv_core::run::{self as runner, Interrupt, Outcome, RunContext, RunOptions, RunReport};
use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::cli::{EvalArgs, ReportFormat};
use crate::commands::report::{check_distinct, default_report_path, open_sinks};
use crate::exit::ExitStatus;
use crate::printer;
use crate::signals::{self, Signal};

/// How long in-flight cases may finish after Ctrl-C or SIGTERM.
const INTERRUPT_GRACE: Duration = Duration::from_secs(10);

pub fn run(args: EvalArgs) -> ExitStatus {
    if let Some(t) = args.threshold
        && !(0.0..=1.0).contains(&t)
    {
        printer::error(&format!("--threshold must be between 0 and 1, got {t}"));
        return ExitStatus::Config;
    }
    let ws = match Workspace::discover() {
        Ok(ws) => ws,
        Err(e) => {
            printer::error(&format!("cannot read the working directory: {e}"));
            return ExitStatus::Config;
        }
    };
    let Some(suites) = load_suites(&args, &ws) else {
        return ExitStatus::Config;
    };
    let skipped: usize = suites.iter().map(|s| s.skipped).sum();
    let cache = args.cache.then(|| {
        Arc::new(ResponseCache::new(
            ws.cwd.join(".agentv").join("cache"),
            printer::secrets(),
        ))
    });
    let options = ResolveOptions {
        target: args.target.clone(),
        targets_path: args.targets.clone(),
        dry_run: args.dry_run,
        cache: cache.clone(),
        secrets: printer::secrets(),
    };
    let plan = match resolve(suites, &ws, &options) {
        Ok(plan) => plan,
        Err(failure) => {
            printer::diagnostics(&failure.warnings);
            for e in failure.errors {
                printer::error(&e.to_string());
            }
            return ExitStatus::Config;
        }
    };
    printer::diagnostics(&plan.warnings);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            printer::error(&format!("cannot start the async runtime: {e}"));
            return ExitStatus::Config;
        }
    };
    runtime.block_on(execute(plan, &args, &ws, skipped, cache.as_deref()))
}

/// Expands, loads and filters the eval files; `None` (after printing why) when nothing can run.
fn load_suites(args: &EvalArgs, ws: &Workspace) -> Option<Vec<LoadedSuite>> {
    let files = match expand_paths(&args.paths, ws) {
        Ok(files) => files,
        Err(e) => {
            printer::error(&e.to_string());
            return None;
        }
    };
    let filter: Option<CaseFilter> = if args.eval_id.is_empty() {
        None
    } else {
        match id_filter(&args.eval_id) {
            Ok(set) => Some(Arc::new(move |id: &str| set.is_match(id))),
            Err(e) => {
                printer::error(&e);
                return None;
            }
        }
    };
    let mut suites: Vec<LoadedSuite> = files
        .iter()
        .map(|f| load_eval_file_filtered(f, ws, filter.clone()))
        .collect();
    for suite in &suites {
        printer::diagnostics(&suite.diagnostics);
    }
    let runnable: usize = suites.iter().map(|s| s.case_count).sum();
    if runnable == 0 {
        let skipped: usize = suites.iter().map(|s| s.skipped).sum();
        if filter.is_some() {
            printer::error(&format!("no eval case matches --eval-id {}", args.eval_id.join(", ")));
        } else {
            printer::error(&format!(
                "nothing to run: no valid eval cases ({skipped} skipped because of errors)"
            ));
        }
        return None;
    }
    suites.retain(|s| s.case_count > 0);
    Some(suites)
}

fn id_filter(patterns: &[String]) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        builder.add(Glob::new(p).map_err(|e| format!("invalid --eval-id pattern `{p}`: {}", e.kind()))?);
    }
    builder.build().map_err(|e| e.to_string())
}

async fn execute(
    plan: Plan,
    args: &EvalArgs,
    ws: &Workspace,
    skipped: usize,
    cache: Option<&ResponseCache>,
) -> ExitStatus {
    let out: PathBuf = args.out.clone().unwrap_or_else(|| default_results_path(&ws.cwd));
    let reports: Vec<(ReportFormat, PathBuf)> = args
        .reports
        .iter()
        .map(|spec| {
            let path = spec
                .path
                .clone()
                .unwrap_or_else(|| default_report_path(&out, spec.format));
            (spec.format, path)
        })
        .collect();
    if let Err(e) = check_distinct(&[&out], &reports) {
        printer::error(&e);
        return ExitStatus::Config;
    }
    let title = format!(
        "agentv results: {}",
        out.file_name()
            .map_or_else(|| out.display().to_string(), |n| n.to_string_lossy().into_owned())
    );
    let mut report_sinks = match open_sinks(&reports, &title, &plan.secrets) {
        Ok(sinks) => sinks,
        Err(e) => {
            printer::error(&e);
            return ExitStatus::Config;
        }
    };
    let mut writer = match JsonlWriter::create(&out, plan.secrets.clone()) {
        Ok(w) => w,
        Err(e) => {
            printer::error(&format!("cannot open results file {}: {e}", out.display()));
            return ExitStatus::Config;
        }
    };
    let workers = workers(&plan, args);
    printer::note(&format!("Output path: {}", out.display()));
    for t in &plan.targets {
        let judge = if t.judge_name == t.name {
            String::new()
        } else {
            format!(", judge {}", t.judge_name)
        };
        printer::note(&format!(
            "Using target: {} [provider={}{judge}]",
            t.name,
            t.provider.kind().as_str()
        ));
    }
    let total = plan.total;
    printer::note(&format!("Running {total} case(s) with {workers} worker(s)"));
    let options = RunOptions {
        workers,
        max_retries: args.max_retries,
        grace: INTERRUPT_GRACE,
        exploration_tools: args
            .exploration_tools
            .iter()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect(),
        context: RunContext {
            timeout: args.timeout,
            child_env: plan.child_env.clone(),
            secrets: plan.secrets.clone(),
            dump_prompts: args.dump_prompts.then(|| ws.cwd.join(".agentv").join("prompts")),
        },
    };
    let interrupt = Interrupt::default();
    let listener = signals::Listener::start(interrupt.clone());
    let secrets = plan.secrets.clone();
    let mut progress = printer::Progress::new(plan.secrets.clone(), total);
    let mut sinks: Vec<&mut dyn Sink> = vec![&mut writer];
    sinks.extend(report_sinks.iter_mut().map(|s| s.as_mut() as &mut dyn Sink));
    let report = runner::run(plan.into_jobs(), &options, &mut sinks, &mut progress, &interrupt).await;
    let signal = listener.finish();

    printer::stdout(&format!("\n{}", report.summary.render(Some(writer.path()), &secrets)));
    if let Some(cache) = cache {
        // Lookups of this run's targets and judges (mock targets are never cached).
        printer::stdout(&format!("{}\n", cache.stats()));
    }
    for (format, path) in &reports {
        if path.exists() {
            printer::note(&format!("{} report written to {}", format.name(), path.display()));
        }
    }
    if skipped > 0 {
        printer::note(&format!(
            "{skipped} case(s) were skipped because of errors in the eval files"
        ));
    }
    let outcome = report.outcome(skipped, args.threshold);
    explain(&report, outcome, skipped, args.threshold, signal);
    match outcome {
        Outcome::Complete => ExitStatus::Success,
        Outcome::BelowThreshold => ExitStatus::Failure,
        Outcome::Incomplete => ExitStatus::Incomplete,
        Outcome::Interrupted if signal == Some(Signal::Terminate) => ExitStatus::Terminated,
        Outcome::Interrupted => ExitStatus::Interrupted,
    }
}

/// Says on stderr why the run ends with its exit code.
fn explain(report: &RunReport, outcome: Outcome, skipped: usize, threshold: Option<f64>, signal: Option<Signal>) {
    let below = threshold.map(|t| (t, report.summary.below(t))).filter(|(_, n)| *n > 0);
    match outcome {
        Outcome::Complete => {}
        Outcome::Interrupted => {
            let what = match signal {
                Some(Signal::Terminate) => "Terminated (SIGTERM)",
                _ => "Interrupted",
            };
            printer::note(&format!("{what}: {} case(s) did not run", report.not_run));
        }
        Outcome::Incomplete => {
            let summary = &report.summary;
            let parts: Vec<String> = [
                (summary.errors.len(), "could not be run (execution error)"),
                (summary.grader_errors.len(), "could not be graded (grader error)"),
                (skipped, "were skipped as invalid"),
                (report.unwritten, "could not be written to the results file or a report"),
                (report.not_run, "did not run"),
            ]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} case(s) {what}"))
            .collect();
            printer::note(&format!("Run incomplete: {}", parts.join("; ")));
            if let Some((t, n)) = below {
                printer::note(&format!("{n} graded case(s) scored below the threshold {t}"));
            }
        }
        Outcome::BelowThreshold => {
            if let Some((t, n)) = below {
                printer::note(&format!("{n} case(s) scored below the threshold {t}"));
            }
        }
    }
}

/// `--workers`, else the first target's `workers`, else 1; capped by providers that cannot run
/// cases in parallel.
fn workers(plan: &Plan, args: &EvalArgs) -> usize {
    let wanted = args
        .workers
        .map(|w| w as usize)
        .or_else(|| plan.targets.iter().find_map(|t| t.workers))
        .unwrap_or(1);
    plan.targets
        .iter()
        .filter_map(|t| t.provider.max_workers())
        .min()
        .map_or(wanted, |cap| wanted.min(cap))
}
