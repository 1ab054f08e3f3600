//! `agentv`: evaluate AI agents and LLM applications from YAML suites.
//!
//! Parsing ([`cli`]), printing ([`printer`]) and exit codes ([`exit`]); every decision is
//! `agentv_core`'s.

// Only the printer writes to the terminal (`printer/mod.rs`).
#![deny(clippy::print_stdout, clippy::print_stderr, clippy::dbg_macro)]

mod cli;
mod commands;
mod exit;
mod memory;
mod printer;
mod signals;

use clap::Parser;

use crate::exit::ExitStatus;
use crate::printer::Printer;

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    // A judge speaks its protocol on stdin and stdout, whatever the output flags say.
    if let cli::Command::Judge(judge) = &args.command {
        return commands::judge::run(judge.name);
    }
    let level = args.output.level().unwrap_or_else(|e| e.exit());
    let printer = Printer::new(level, args.output.color);
    init_logging(printer);
    let ws = match agentv_core::Workspace::discover() {
        Ok(ws) => ws,
        Err(e) => {
            printer.error(&format!("cannot read the working directory: {e}"));
            return ExitStatus::Config.into();
        }
    };
    let is_eval = matches!(args.command, cli::Command::Eval(_));
    let status = match args.command {
        cli::Command::Eval(eval) => commands::eval::run(eval, &ws, printer),
        cli::Command::Validate(validate) => commands::validate::run(validate, &ws, printer),
        cli::Command::Compare(compare) => commands::compare::run(compare, printer),
        cli::Command::Report(report) => commands::report::run(report, printer),
        cli::Command::Merge(merge) => commands::merge::run(merge, printer),
        cli::Command::Schema(schema) => commands::schema::run(schema, printer),
        cli::Command::Init(init) => commands::init::run(init, printer),
        cli::Command::Convert(convert) => commands::convert::run(convert, printer),
        cli::Command::Judge(judge) => return commands::judge::run(judge.name),
        cli::Command::Batch(batch) => commands::batch::run(batch, &ws, printer),
    };
    // Output lost to a failing stdout is never a success: a run's summary is part of the run
    // (incomplete, 3); any other command produced nothing usable (2).
    let status = match status {
        ExitStatus::Success | ExitStatus::Failure if printer::stdout_failed() => {
            if is_eval {
                ExitStatus::Incomplete
            } else {
                ExitStatus::Config
            }
        }
        status => status,
    };
    status.into()
}

/// Logs go to stderr, through the printer's redaction, so stdout stays clean for the summary.
fn init_logging(printer: Printer) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTV_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(printer.log_filter()));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Printer::log_writer)
        .with_ansi(printer.colors_stderr())
        .with_target(false)
        .without_time()
        .try_init();
}
