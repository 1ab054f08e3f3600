//! `agentv`: evaluate AI agents and LLM applications from YAML suites.

mod cli;
mod commands;
mod exit;
mod printer;
mod signals;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    let verbose = matches!(&args.command, cli::Command::Eval(e) if e.verbose);
    init_logging(verbose);
    let status = match args.command {
        cli::Command::Eval(eval) => commands::eval::run(eval),
        cli::Command::Validate(validate) => commands::validate::run(validate),
        cli::Command::Compare(compare) => commands::compare::run(compare),
        cli::Command::Report(report) => commands::report::run(report),
        cli::Command::Schema(schema) => commands::schema::run(schema),
    };
    status.into()
}

/// Logs go to stderr so stdout stays clean for the summary.
fn init_logging(verbose: bool) {
    let default = if verbose {
        "agentv=debug,agentv_core=debug,agentv_proxy=debug"
    } else {
        "warn"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTV_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(printer::stderr)
        .with_target(false)
        .without_time()
        .try_init();
}
