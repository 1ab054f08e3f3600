//! Command-line arguments.

use std::path::PathBuf;
use std::time::Duration;

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
  agentv eval evals/ --dry-run
  agentv eval evals/ --threshold 0.8

Exit codes:
  0    every case ran and was graded (and met --threshold when given)
  1    quality gate failed: a graded case scored below --threshold
  2    usage or configuration error; nothing ran
  3    run incomplete: a case could not be run or graded (target or grader error), or was
       skipped as invalid; wins over 1
  130  interrupted by Ctrl-C (SIGINT); 143 stopped by SIGTERM. Both stop scheduling, keep
       every result written and print the summary of what ran.";

const VALIDATE_EXAMPLES: &str = "\
Examples:
  agentv validate examples/mock/evals/capitals.yaml
  agentv validate evals/ targets.yaml
  agentv validate evals/smoke.yaml --targets openai.targets.yaml

Each eval file is checked with the target `eval` would use (same targets file, same target,
same settings and variables), without calling anything.

Exit codes: 0 every file is valid; 1 a file has errors; 2 a path does not exist or is not an
eval or targets file.";

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

    /// Results file, replaced if it exists (default .agentv/results/eval_<time>.jsonl).
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

    /// Retries of a case whose target call timed out (0 to 100).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub max_retries: u32,

    /// Seconds per target call and per code judge (0.001 to 604800, i.e. 7 days).
    #[arg(long, value_name = "SECONDS", default_value = "120", value_parser = parse_timeout)]
    pub timeout: Duration,

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

    /// Exit with 1 if a graded case scores below this (0 to 1); see the exit codes below.
    #[arg(long, value_name = "SCORE")]
    pub threshold: Option<f64>,
}

/// The longest `--timeout`, in seconds: 7 days. Longer than any agent run, and far from the
/// values where durations and deadlines overflow.
pub const MAX_TIMEOUT_SECS: f64 = 7.0 * 24.0 * 60.0 * 60.0;

/// The shortest `--timeout`, in seconds: below a millisecond nothing can answer.
pub const MIN_TIMEOUT_SECS: f64 = 0.001;

/// `--timeout`: seconds within [`MIN_TIMEOUT_SECS`, `MAX_TIMEOUT_SECS`].
fn parse_timeout(text: &str) -> Result<Duration, String> {
    let range = format!("allowed: {MIN_TIMEOUT_SECS} to {MAX_TIMEOUT_SECS} seconds (7 days)");
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds; {range}"))?;
    if !(MIN_TIMEOUT_SECS..=MAX_TIMEOUT_SECS).contains(&secs) {
        return Err(format!("{text} is out of range; {range}"));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{text}: {e}; {range}"))
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

    /// Check eval files against this target, as `eval --target` would run them.
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,

    /// targets.yaml file, or a directory holding one, as for `eval --targets`.
    #[arg(long, value_name = "PATH")]
    pub targets: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_outside_the_allowed_range_is_a_usage_error() {
        for (text, want) in [
            ("120", Some(Duration::from_secs(120))),
            ("0.5", Some(Duration::from_millis(500))),
            ("604800", Some(Duration::from_secs(604_800))),
            ("1e20", None),
            ("604800.5", None),
            ("0", None),
            ("-1", None),
            ("NaN", None),
            ("inf", None),
            ("soon", None),
        ] {
            assert_eq!(parse_timeout(text).ok(), want, "{text}");
        }
        let err = parse_timeout("1e20").expect_err("too long");
        assert!(err.contains("allowed: 0.001 to 604800 seconds (7 days)"), "{err}");
    }
}
