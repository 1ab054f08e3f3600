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
    let options = PlanOptions {
        target: args.target.clone(),
        targets_path: args.targets.clone(),
        dry_run: args.dry_run,
        cache: args.cache,
        workers: args.workers.map(|w| w as usize),
        out: args.out.clone(),
        secrets: printer::secrets(),
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
    if let Err(e) = check_distinct(&[&out], &reports) {
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
        for (format, path) in &reports {
            if path.exists() {
                printer.note(&format!("{} report written to {}", format.name(), path.display()));
            }
        }
        ExitStatus::of_run(report.outcome, signal)
    })
}
