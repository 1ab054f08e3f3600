//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "agentv",
    version,
    about = "Evaluate AI agents and LLM applications from YAML suites",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run eval suites against a target and grade the answers.
    #[command(after_help = EVAL_EXAMPLES)]
    Eval(EvalArgs),
    /// Check eval files and targets files without running anything.
    #[command(after_help = VALIDATE_EXAMPLES)]
    Validate(ValidateArgs),
}

const EVAL_EXAMPLES: &str = "\
Examples:
  agentv eval examples/mock/evals/capitals.yaml
  agentv eval 'evals/**/*.yaml' --target claude --workers 8
  agentv eval evals/dataset.jsonl --eval-id 'login-*' --out results.jsonl
  agentv eval evals/ --dry-run --threshold 0.8

Exit codes: 0 run completed; 1 --threshold given and a case scored below it or errored;
2 usage or configuration error (nothing ran); 130 interrupted.";

const VALIDATE_EXAMPLES: &str = "\
Examples:
  agentv validate examples/mock/evals/capitals.yaml
  agentv validate evals/ targets.yaml

Exit codes: 0 every file is valid; 1 a file has errors; 2 a path does not exist.";

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Eval files (.yaml, .yml, .jsonl), directories, or globs.
    #[arg(required = true, value_name = "PATHS")]
    pub paths: Vec<String>,

    /// Target to run against (overrides the eval file's target; `default` keeps it).
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,

    /// targets.yaml file, or a directory holding one.
    #[arg(long, value_name = "PATH")]
    pub targets: Option<PathBuf>,

    /// Run only cases whose id matches (repeatable; globs allowed).
    #[arg(long = "eval-id", value_name = "ID")]
    pub eval_id: Vec<String>,

    /// Results file (default .agentv/results/eval_<time>.jsonl).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,

    /// Cases run concurrently (default: the target's `workers`, else 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub workers: Option<u32>,

    /// Answer with a mock instead of calling the target.
    #[arg(long)]
    pub dry_run: bool,

    /// Detailed logs on stderr.
    #[arg(long, short)]
    pub verbose: bool,

    /// Retries of a case whose target call timed out.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub max_retries: u32,

    /// Seconds per target call and per code judge.
    #[arg(long, value_name = "SECONDS", default_value_t = 120.0)]
    pub timeout: f64,

    /// Tools counted as exploration in `exploration_ratio` (comma-separated, case-insensitive).
    #[arg(
        long,
        value_name = "TOOLS",
        value_delimiter = ',',
        default_values_t = default_exploration_tools()
    )]
    pub exploration_tools: Vec<String>,

    /// Reuse answers cached in .agentv/cache/ and cache new ones (errors are never cached).
    #[arg(long)]
    pub cache: bool,

    /// Write each request to .agentv/prompts/<eval_id>-<attempt>.json (secrets redacted).
    #[arg(long)]
    pub dump_prompts: bool,

    /// Exit with 1 if any case scores below this (0 to 1) or errors.
    #[arg(long, value_name = "SCORE")]
    pub threshold: Option<f64>,
}

/// The core's exploration tools, as the flag's default.
fn default_exploration_tools() -> Vec<String> {
    agentv_core::trace::DEFAULT_EXPLORATION_TOOLS
        .iter()
        .map(|t| (*t).to_owned())
        .collect()
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Eval files, targets files, or directories to check.
    #[arg(required = true, value_name = "PATHS")]
    pub paths: Vec<PathBuf>,
}
