//! `agentv eval`: load → plan → run → report, each step decided by the core.

use std::path::PathBuf;
use std::time::Duration;

use agentv_core::report::Sink;
use agentv_core::{Interrupt, LoadOptions, PlanOptions, RunOptions, Workspace};

use crate::cli::{EvalArgs, ReportFormat};
use crate::commands::report::{check_distinct, default_report_path, open_sinks};
use crate::exit::ExitStatus;
use crate::printer::{self, Printer, Progress};
use crate::signals;

/// How long in-flight cases may finish after Ctrl-C or SIGTERM.
const INTERRUPT_GRACE: Duration = Duration::from_secs(10);

pub fn run(args: EvalArgs, ws: &Workspace, printer: Printer) -> ExitStatus {
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
            return ExitStatus::Config;
        }
    };
    printer.diagnostics(&loaded.diagnostics);
    // `--out x.json`: promptfoo's JSON output there, the results file beside it as x.jsonl.
    let promptfoo_json = args
        .out
        .as_ref()
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")))
        .cloned();
    let options = PlanOptions {
        targets: args.target.clone(),
        targets_path: args.targets.clone(),
        dry_run: args.dry_run,
        cache: args.cache,
        workers: args.workers.map(|w| w as usize),
        out: match &promptfoo_json {
            Some(json) => Some(json.with_extension("jsonl")),
            None => args.out.clone(),
        },
        secrets: printer::secrets(),
        repeat: args.repeat,
        shard: args.shard,
        resume: args.resume.clone(),
        rerun_failed: args.rerun_failed.clone(),
        budget_usd: args.budget_usd,
        command_line: command_line(),
        strict: args.strict,
    };
    let out = options.results_path(ws);
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
    let summary = agentv_core::report::summary_path(&out);
    let read_back: Vec<&PathBuf> = args.rerun_failed.iter().collect();
    if let Err(e) = check_distinct(&[out.as_path(), summary.as_path()], &reports)
        .and_then(|()| check_not_replaced(&out, &read_back))
    {
        printer.error(&e);
        return ExitStatus::Config;
    }
    let title = format!(
        "agentv results: {}",
        out.file_name()
            .map_or_else(|| out.display().to_string(), |n| n.to_string_lossy().into_owned())
    );
    let mut report_sinks = match open_sinks(&reports, &title, &printer::secrets()) {
        Ok(sinks) => sinks,
        Err(e) => {
            printer.error(&e);
            return ExitStatus::Config;
        }
    };
    if let Some(path) = &promptfoo_json {
        report_sinks.push(Box::new(agentv_core::report::PromptfooJson::new(
            path,
            printer::secrets(),
        )));
    }
    let plan = match agentv_core::plan(ws, loaded, &options) {
        Ok(plan) => plan,
        Err(e) => {
            printer.diagnostics(&e.warnings);
            for message in &e.errors {
                printer.error(message);
            }
            return ExitStatus::Config;
        }
    };
    printer.diagnostics(&plan.warnings);
    printer.plan(&plan);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            printer.error(&format!("cannot start the async runtime: {e}"));
            return ExitStatus::Config;
        }
    };
    let options = RunOptions {
        max_retries: args.max_retries,
        timeout: args.timeout,
        grace: INTERRUPT_GRACE,
        exploration_tools: args.exploration_tools.clone(),
        dump_prompts: args.dump_prompts,
        threshold: args.threshold,
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
        for (format, path) in &reports {
            if path.exists() {
                printer.note(&format!("{} report written to {}", format.name(), path.display()));
            }
        }
        if let Some(path) = promptfoo_json.as_ref().filter(|p| p.exists()) {
            printer.note(&format!("promptfoo JSON output written to {}", path.display()));
        }
        ExitStatus::of_run(report.outcome, signal)
    })
}

/// The command line as given, for the run summary (the core redacts it when writing).
pub fn command_line() -> Vec<String> {
    std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect()
}

/// `--out` must not replace the file `--rerun-failed` reads: its passing cases would be lost.
fn check_not_replaced(out: &std::path::Path, read: &[&PathBuf]) -> Result<(), String> {
    let same = |a: &std::path::Path, b: &std::path::Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    match read.iter().find(|r| same(out, r)) {
        Some(r) => Err(format!(
            "the results file {} is the one --rerun-failed reads; write the rerun elsewhere with --out",
            r.display()
        )),
        None => Ok(()),
    }
}
