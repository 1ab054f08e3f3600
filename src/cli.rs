//! Command-line arguments.

use std::path::PathBuf;
use std::time::Duration;

use agentv_core::report::ReportFormat;
use clap::{Args, Parser, Subcommand};

use crate::commands::init::templates::{JudgeLanguage, Template};
use crate::printer::{ColorChoice, Level};

#[derive(Debug, Parser)]
#[command(
    name = "agentv",
    version,
    about = "Evaluate AI agents and LLM applications from YAML suites",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub output: OutputArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// How much is printed, and in colour or not: accepted before or after the command.
#[derive(Debug, Args)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Also print debug logs (on stderr).
    #[arg(long, short, global = true)]
    pub verbose: bool,

    /// Print only errors and the final summary line.
    #[arg(long, short, global = true)]
    pub quiet: bool,

    /// Colour stderr: auto (on a terminal, unless NO_COLOR is set; CLICOLOR_FORCE colours a
    /// pipe too), always, never.
    #[arg(
        long,
        value_name = "WHEN",
        global = true,
        default_value = "auto",
        hide_possible_values = true
    )]
    pub color: ColorChoice,
}

impl OutputArgs {
    /// The output level; `--quiet` with `--verbose` is a usage error (clap's own `conflicts_with`
    /// misses the pair when one is given before the command and the other after it).
    pub fn level(&self) -> Result<Level, clap::Error> {
        match (self.quiet, self.verbose) {
            (true, true) => Err(<Cli as clap::CommandFactory>::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                "--quiet and --verbose cannot be used together",
            )),
            (true, false) => Ok(Level::Quiet),
            (false, true) => Ok(Level::Verbose),
            (false, false) => Ok(Level::Default),
        }
    }
}

// Parsed once per process: the size of the largest variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run eval suites against a target and grade the answers.
    #[command(after_help = EVAL_EXAMPLES)]
    Eval(EvalArgs),
    /// Check eval files, targets files and results files without running anything.
    #[command(after_help = VALIDATE_EXAMPLES)]
    Validate(ValidateArgs),
    /// Compare two results files case by case; optionally fail on regressions.
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare(CompareArgs),
    /// Build an HTML, JUnit or Markdown report from a results file.
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// Merge the results files of a sharded run into one, with its run summary.
    #[command(after_help = MERGE_EXAMPLES)]
    Merge(MergeArgs),
    /// Print the JSON Schema of eval files or targets files (for editors).
    Schema(SchemaArgs),
    /// Create a suite that runs offline at once: targets, an eval file, a code judge, a README.
    #[command(after_help = INIT_EXAMPLES)]
    Init(InitArgs),
    /// Rewrite an eval file between the AgentV 2.x and 4.x formats.
    #[command(after_help = CONVERT_EXAMPLES)]
    Convert(ConvertArgs),
    /// Run a ready-made code judge: a suite names it as `script: [agentv, judge, <name>]`.
    #[command(after_help = JUDGE_EXAMPLES)]
    Judge(JudgeArgs),
    /// Show or cancel the provider batch jobs a run submitted (docs/batch.md).
    #[command(subcommand)]
    Batch(BatchCommand),
}

/// `agentv batch list|cancel RESULTS`.
#[derive(Debug, clap::Subcommand)]
pub enum BatchCommand {
    /// The run's batch jobs and where each stands at its provider.
    List(BatchJobsArgs),
    /// Cancel the run's batch jobs that have not finished.
    Cancel(BatchJobsArgs),
}

#[derive(Debug, clap::Args)]
pub struct BatchJobsArgs {
    /// The results file of the run (its jobs are in `<RESULTS>.batches.json`).
    #[arg(value_name = "RESULTS")]
    pub results: PathBuf,

    /// The targets file (default: searched from the results file's directory).
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
}

const JUDGE_EXAMPLES: &str = "\
In a suite:
  evaluators:
    - name: faithfulness
      type: code_judge
      script: [agentv, judge, faithfulness]
      target: {max_calls: 2}

agentv runs `agentv` in a judge's script as itself, so the judge needs nothing
else installed. The judge reads the case on stdin and prints its result on
stdout; judges/README.md documents each one and its settings.

Exit codes: 0 graded; 1 the judge could not grade (its result says why).";

#[derive(Debug, Args)]
pub struct JudgeArgs {
    /// The judge.
    #[arg(value_enum, value_name = "NAME")]
    pub name: crate::commands::judge::ReadyMade,
}

const INIT_EXAMPLES: &str = "\
Examples:
  agentv init
  agentv init my-evals --template rag --judge typescript
  agentv init agent-evals --template agent --judge rust

Then `agentv eval evals/` in that directory runs the suite offline.

Exit codes: 0 written; 2 usage error, a file already there (without --force;
nothing is written) or a file that cannot be written.";

const EVAL_EXAMPLES: &str = "\
Examples:
  agentv eval examples/mock/evals/capitals.yaml
  agentv eval 'evals/**/*.yaml' --target claude --workers 8
  agentv eval evals/dataset.jsonl --eval-id 'login-*' --out results.jsonl
  agentv eval evals/ --dry-run
  agentv eval evals/ --threshold 0.8
  agentv eval evals/ --out r.jsonl --report junit --report html=report.html
  agentv eval evals/ --target gpt --target claude --repeat 5 --out m.jsonl
  agentv eval evals/ --shard 2/4 --out shard-2.jsonl --budget-usd 5
  agentv eval evals/ --resume r.jsonl
  agentv eval evals/ --rerun-failed r.jsonl --out retry.jsonl
  agentv eval run evals/ --output out/   # AgentV 4.x's form and run directory

Beside the results file, <results>.summary.json holds the run's metadata and
statistics (per target, per grader, across repeats). See docs/running.md.

Exit codes:
  0    every case ran and was graded (and met --threshold when given)
  1    quality gate failed: a graded case scored below --threshold
  2    usage or configuration error; nothing ran
  3    run incomplete: a case could not be run or graded (target or grader
       error), was skipped as invalid (or its file could not be read), or
       was not run because of --budget-usd; wins over 1
  130  interrupted by Ctrl-C (SIGINT); 143 stopped by SIGTERM. Both stop
       scheduling, keep every result written and print the summary of what ran.";

const VALIDATE_EXAMPLES: &str = "\
Examples:
  agentv validate examples/mock/evals/capitals.yaml
  agentv validate evals/ targets.yaml
  agentv validate evals/smoke.yaml --targets openai.targets.yaml

Each eval file is checked with the target `eval` would use (same targets file,
same target, same settings and variables), without calling anything.

Exit codes: 0 every file is valid; 1 a file has errors; 2 a path does not exist
or is not an eval or targets file.";

const CONVERT_EXAMPLES: &str = "\
Examples:
  agentv convert evals/old.yaml > evals/new.yaml
  agentv convert evals/old.yaml --in-place
  agentv convert evals/new.yaml --to v2 --out evals/old.yaml
  agentv convert evals/dataset.jsonl --in-place   # its sidecar dataset.yaml

The file is edited where it differs, so comments and key order stay
(docs/convert.md). Exit codes: 0 converted; 1 a construct has no
equivalent (nothing is written); 2 usage.
";

const COMPARE_EXAMPLES: &str = "\
Examples:
  agentv compare examples/results/baseline.jsonl \\
    examples/results/candidate.jsonl
  agentv compare base.jsonl new.jsonl --max-regression 0.2 --fail-on-regression
  agentv compare a.jsonl b.jsonl --format markdown >> \"$GITHUB_STEP_SUMMARY\"

Cases are matched by dataset, eval id, trial and target (without the target
when each file has one and they differ); the last line of a case counts. Both
files may be agentv results or the TypeScript AgentV's (2.x results, 4.x
index.jsonl rows). A gate also fails when a case graded in the baseline is
missing from the candidate (unless --allow-missing) or could not be graded.

Exit codes: 0 compared (and every gate passed); 1 a regression gate failed;
2 usage error or a file that cannot be read.";

const MERGE_EXAMPLES: &str = "\
Examples:
  agentv merge shard-1.jsonl shard-2.jsonl shard-3.jsonl --out all.jsonl
  agentv merge results/*.jsonl --out all.jsonl && agentv compare base.jsonl all.jsonl

Records are sorted by dataset, eval id, target and trial, so the merge of a
sharded run matches the same run on one machine (merge that one alone to sort
it). The same record in two inputs is an overlap: nothing is written. With the
inputs' run summaries, missing shards and cases are reported. Writes
<out>.summary.json beside the merged file.

Exit codes: 0 merged, every planned case present and run; 2 usage error, an
unreadable input, overlapping or mismatched shards; 3 merged, but a shard or
case is missing, or a case could not be run or graded or is invalid.";

const REPORT_EXAMPLES: &str = "\
Examples:
  agentv report .agentv/results/eval_2025-01-01T00-00-00-000Z.jsonl
  agentv report results.jsonl --html report.html --junit r.junit.xml --markdown
  agentv report --compare examples/results/baseline.jsonl \\
    examples/results/candidate.jsonl --html compare.html

Without a format flag, writes the HTML report. A flag without a path writes next
to the results file (results.html, results.junit.xml, results.md).

Exit codes: 0 written; 2 usage error, a results file that cannot be read, or a
report that cannot be written.";

/// `--report FORMAT[=PATH]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportSpec {
    pub format: ReportFormat,
    pub path: Option<PathBuf>,
}

/// Why a flag's value is refused. clap prints it after the flag's name, with the usage, and
/// exits with status 2 before anything runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagValueError {
    #[error("`{text}` is not {expected}; {allowed}")]
    NotANumber {
        text: String,
        expected: &'static str,
        allowed: String,
    },
    #[error("{text} is out of range; {allowed}")]
    OutOfRange { text: String, allowed: String },
    #[error("unknown report format `{name}`; expected {known} (optionally =PATH)")]
    UnknownReport { name: String, known: String },
    #[error("`{0}`: the path after `=` is empty")]
    EmptyPath(String),
}

impl FlagValueError {
    fn not_a_number(text: &str, expected: &'static str, allowed: impl Into<String>) -> Self {
        Self::NotANumber {
            text: text.to_owned(),
            expected,
            allowed: allowed.into(),
        }
    }

    fn out_of_range(text: &str, allowed: impl Into<String>) -> Self {
        Self::OutOfRange {
            text: text.to_owned(),
            allowed: allowed.into(),
        }
    }
}

fn parse_report_spec(text: &str) -> Result<ReportSpec, FlagValueError> {
    let (name, path) = match text.split_once('=') {
        Some((name, path)) => (name, Some(path)),
        None => (text, None),
    };
    let Some(format) = ReportFormat::find(name) else {
        return Err(FlagValueError::UnknownReport {
            name: name.trim().to_owned(),
            known: ReportFormat::known(),
        });
    };
    match path {
        Some("") => Err(FlagValueError::EmptyPath(text.to_owned())),
        Some(p) => Ok(ReportSpec {
            format,
            path: Some(PathBuf::from(p)),
        }),
        None => Ok(ReportSpec { format, path: None }),
    }
}

/// A score difference: a finite number from 0 to 1.
fn parse_score_delta(text: &str) -> Result<f64, FlagValueError> {
    const ALLOWED: &str = "allowed: 0 to 1";
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| FlagValueError::not_a_number(text, "a number", ALLOWED))?;
    if !(0.0..=1.0).contains(&value) {
        return Err(FlagValueError::out_of_range(text, ALLOWED));
    }
    Ok(value)
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Eval files (.yaml, .yml, .jsonl), directories, or globs.
    #[arg(required = true, value_name = "PATHS")]
    pub paths: Vec<String>,

    /// Target to run against instead of the eval file's (`default` picks the target named
    /// default, or keeps the file's when there is none). Repeatable: every case runs against
    /// each target.
    #[arg(long, value_name = "NAME")]
    pub target: Vec<String>,

    /// targets.yaml file, or a directory holding one.
    #[arg(long, value_name = "PATH")]
    pub targets: Option<PathBuf>,

    /// Run only cases whose id matches (repeatable; globs allowed).
    #[arg(long = "eval-id", value_name = "ID")]
    pub eval_id: Vec<String>,

    /// Results file, replaced if it exists (default .agentv/results/eval_<time>.jsonl, or
    /// DIR/results.jsonl with --output).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,

    /// Also write AgentV 4.x's run directory here: index.jsonl, benchmark.json, timing.json and
    /// a directory per case (docs/results.md). `agentv eval run PATHS --output DIR`, AgentV
    /// 4.x's form, works as written.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,

    /// Cases run concurrently (default: the target's `workers`, else 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub workers: Option<u32>,

    /// Answer with a mock instead of calling the target.
    #[arg(long)]
    pub dry_run: bool,

    /// Warnings are errors: any problem in the eval files or their targets stops the run
    /// before anything is called (exit 2).
    #[arg(long)]
    pub strict: bool,

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
        default_value = EXPLORATION_TOOLS_DEFAULT
    )]
    pub exploration_tools: Vec<String>,

    /// Reuse answers cached in .agentv/cache/ and cache new ones (errors are never cached).
    #[arg(long)]
    pub cache: bool,

    /// Write each request to .agentv/prompts/<eval_id>-<attempt>.json (secrets redacted).
    #[arg(long)]
    pub dump_prompts: bool,

    /// Exit with 1 if a graded case scores below this (0 to 1); see the exit codes below.
    #[arg(long, value_name = "SCORE", value_parser = parse_threshold)]
    pub threshold: Option<f64>,

    /// Also write a report as cases finish (see `--report` below). Repeatable.
    #[arg(long = "report", value_name = "FORMAT[=PATH]", value_parser = parse_report_spec, help = report_help("Also write a report as cases finish"))]
    pub reports: Vec<ReportSpec>,

    /// Run every case K times against each target (1 to 1000); records carry `trial`.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,

    /// Run only part K of N of the cases (e.g. 2/4), the same part on any machine.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<agentv_core::Shard>,

    /// Continue this results file: skip its complete cases, append the rest.
    #[arg(long, value_name = "RESULTS", conflicts_with_all = ["out", "rerun_failed"])]
    pub resume: Option<PathBuf>,

    /// Run only the cases that failed or errored in this results file.
    #[arg(long, value_name = "RESULTS")]
    pub rerun_failed: Option<PathBuf>,

    /// Start no new case once the targets' reported cost reaches this many dollars.
    #[arg(long, value_name = "USD", value_parser = parse_budget)]
    pub budget_usd: Option<f64>,

    /// Workspace mode of every suite, over its own `mode` (docs/workspaces.md).
    #[arg(long, value_name = "MODE", value_parser = ["pooled", "temp", "static"])]
    pub workspace_mode: Option<String>,

    /// Run every case in this existing directory, as it is (static mode).
    #[arg(long, value_name = "DIR")]
    pub workspace_path: Option<PathBuf>,

    /// Keep every workspace after the run (failed cases' are always kept).
    #[arg(long)]
    pub keep_workspaces: bool,

    /// Answer LLM targets through their provider's batch API, at its batch price; failed items
    /// are answered online, or are errors with `--batch=strict` (docs/batch.md).
    #[arg(long, value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "on")]
    pub batch: Option<BatchFlag>,
}

/// `--batch` / `--batch=strict`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BatchFlag {
    On,
    Strict,
}

impl EvalArgs {
    /// Reads `agentv eval run PATHS`, AgentV 4.x's form, as `agentv eval PATHS`: a first path
    /// `run` followed by others is the word `run`. A note says so when a file or directory
    /// named `run` exists (`./run` names it).
    pub fn drop_run_word(&mut self) -> Option<String> {
        if self.paths.len() < 2 || self.paths[0] != "run" {
            return None;
        }
        self.paths.remove(0);
        std::path::Path::new("run").exists().then(|| {
            "`agentv eval run PATHS` is read as AgentV 4.x's command, so `run` is not a path here; write `./run` to evaluate it".to_owned()
        })
    }
}

/// `--shard K/N`.
fn parse_shard(text: &str) -> Result<agentv_core::Shard, agentv_core::ShardError> {
    text.parse()
}

/// `--budget-usd`: a finite number of dollars above 0.
fn parse_budget(text: &str) -> Result<f64, FlagValueError> {
    const ALLOWED: &str = "a budget is a number of dollars above 0";
    match text.trim().parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(usd),
        Ok(_) => Err(FlagValueError::out_of_range(text, ALLOWED)),
        Err(_) => Err(FlagValueError::not_a_number(text, "a number of dollars", ALLOWED)),
    }
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Results files to merge (the shards of one run, or any runs).
    #[arg(required = true, value_name = "RESULTS")]
    pub inputs: Vec<PathBuf>,

    /// The merged results file (replaced if it exists; not one of the inputs).
    #[arg(long, value_name = "PATH", required = true)]
    pub out: PathBuf,
}

/// Output of `agentv compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    Table,
    Json,
    Markdown,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline results file (JSONL: agentv's, or the TypeScript AgentV's).
    #[arg(value_name = "BASE")]
    pub base: PathBuf,

    /// The candidate results file, compared with the baseline.
    #[arg(value_name = "CANDIDATE")]
    pub candidate: PathBuf,

    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Table)]
    pub format: CompareFormat,

    /// Exit with 1 if a case's score drops by more than D (0 to 1), or a case graded in the
    /// baseline cannot be graded in the candidate.
    #[arg(long, value_name = "D", value_parser = parse_score_delta)]
    pub max_regression: Option<f64>,

    /// Exit with 1 if the mean delta is below 0 with 95 % confidence, or a case graded in the
    /// baseline cannot be graded in the candidate.
    #[arg(long)]
    pub fail_on_regression: bool,

    /// Let the gates pass when cases graded in the baseline are missing from the candidate
    /// (they are still listed).
    #[arg(long)]
    pub allow_missing: bool,

    /// Deltas within ±E count as unchanged (0 to 1).
    #[arg(long, value_name = "E", default_value = "0.001", value_parser = parse_score_delta)]
    pub epsilon: f64,

    /// How many of the largest regressions to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The results file (JSONL: agentv's, or the TypeScript AgentV's).
    #[arg(
        value_name = "RESULTS",
        required_unless_present = "compare",
        conflicts_with = "compare"
    )]
    pub results: Option<PathBuf>,

    /// Put two runs side by side in one HTML report instead.
    #[arg(long, num_args = 2, value_names = ["BASE", "CANDIDATE"])]
    pub compare: Option<Vec<PathBuf>>,

    /// Write the HTML report (to PATH, default next to the results file).
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    pub html: Option<Option<PathBuf>>,

    /// Write the JUnit XML report (to PATH, default next to the results file).
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    pub junit: Option<Option<PathBuf>>,

    /// Write the Markdown summary (to PATH, default next to the results file).
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    pub markdown: Option<Option<PathBuf>>,

    /// Write a report (see `--report` below). Repeatable.
    #[arg(long = "report", value_name = "FORMAT[=PATH]", value_parser = parse_report_spec, help = report_help("Write a report"))]
    pub reports: Vec<ReportSpec>,

    /// The report's title (default: the results file's name).
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
}

/// The help of `--report`, naming the formats of the table.
fn report_help(what: &str) -> String {
    format!(
        "{what}: {}, optionally =PATH (default: next to the results file). Repeatable",
        ReportFormat::known()
    )
}

/// The longest `--timeout`, in seconds: 7 days. Longer than any agent run, and far from the
/// values where durations and deadlines overflow.
pub const MAX_TIMEOUT_SECS: f64 = 7.0 * 24.0 * 60.0 * 60.0;

/// The shortest `--timeout`, in seconds: below a millisecond nothing can answer.
pub const MIN_TIMEOUT_SECS: f64 = 0.001;

/// `--timeout`: seconds within [`MIN_TIMEOUT_SECS`, `MAX_TIMEOUT_SECS`].
fn parse_timeout(text: &str) -> Result<Duration, FlagValueError> {
    let range = format!("allowed: {MIN_TIMEOUT_SECS} to {MAX_TIMEOUT_SECS} seconds (7 days)");
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| FlagValueError::not_a_number(text, "a number of seconds", range.clone()))?;
    if !(MIN_TIMEOUT_SECS..=MAX_TIMEOUT_SECS).contains(&secs) {
        return Err(FlagValueError::out_of_range(text, range));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| FlagValueError::out_of_range(text, range))
}

/// `--threshold`: a score within [0, 1].
fn parse_threshold(text: &str) -> Result<f64, FlagValueError> {
    const ALLOWED: &str = "a score is between 0 and 1";
    match text.trim().parse::<f64>() {
        Ok(t) if (0.0..=1.0).contains(&t) => Ok(t),
        Ok(_) => Err(FlagValueError::out_of_range(text, ALLOWED)),
        Err(_) => Err(FlagValueError::not_a_number(text, "a score", ALLOWED)),
    }
}

/// The core's exploration tools as the flag takes them, comma-separated (a list default would
/// show space-separated in `--help`); a test keeps it equal to the core's list.
const EXPLORATION_TOOLS_DEFAULT: &str = "read,grep,glob,search,list";

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Eval files, targets files, directories, or globs to check.
    #[arg(required = true, value_name = "PATHS")]
    pub paths: Vec<String>,

    /// Check eval files against this target, as `eval --target` would run them.
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,

    /// targets.yaml file, or a directory holding one, as for `eval --targets`.
    #[arg(long, value_name = "PATH")]
    pub targets: Option<PathBuf>,

    /// Warnings are errors, and so are problems of the machine (no targets file, unset
    /// variables, agent CLIs not installed); any problem exits 2.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Directory to write the suite in (created when missing).
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,

    /// What the suite shows: basic (keywords and a code judge), rag (answers from retrieved
    /// context, graded through the target proxy), agent (tool-call trajectories).
    #[arg(long, value_enum, default_value = "basic", hide_possible_values = true)]
    pub template: Template,

    /// The code judge's language: python, typescript (run by node) or rust (run by cargo).
    #[arg(long, value_enum, default_value = "python", hide_possible_values = true)]
    pub judge: JudgeLanguage,

    /// Eval file format: v2 (AgentV 2.x) or v4 (AgentV 4.x).
    #[arg(long, value_enum, default_value = "v2", hide_possible_values = true)]
    pub format: EvalFormat,

    /// Replace files that are already there.
    #[arg(long)]
    pub force: bool,
}

/// The generation of eval files `agentv init` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EvalFormat {
    V2,
    V4,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The eval file (.yaml/.yml), or a .jsonl dataset whose sidecar is converted.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The generation to write (default: the other one than the file's).
    #[arg(long, value_enum, value_name = "GENERATION")]
    pub to: Option<ConvertTo>,

    /// Write the converted file here instead of stdout.
    #[arg(long, value_name = "PATH", conflicts_with = "in_place")]
    pub out: Option<PathBuf>,

    /// Replace the file with its conversion.
    #[arg(long)]
    pub in_place: bool,

    /// With `--to promptfoo`: the targets file the suite's target is read from (default: the
    /// one `agentv eval` finds).
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
}

/// The generations `agentv convert` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ConvertTo {
    /// AgentV 4.x: `tests`, `criteria`, `assertions`, kebab-case grader types.
    V4,
    /// AgentV 2.x (the spec): `evalcases`, `expected_outcome`, `evaluators`, snake_case types.
    V2,
    /// A promptfoo config (`promptfooconfig.yaml`) from an AgentV 4.x suite.
    Promptfoo,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which file the schema describes.
    #[arg(value_enum)]
    pub kind: SchemaFile,
}

/// The files `agentv schema` describes.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum SchemaFile {
    /// Eval files (`evalcases`, `execution`, graders).
    Eval,
    /// Targets files (`targets`, one entry per target, keys per provider).
    Targets,
    /// The output of `agentv compare --format json`.
    Compare,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exploration_tools_default_is_the_cores_list_comma_separated() {
        assert_eq!(
            EXPLORATION_TOOLS_DEFAULT,
            agentv_core::DEFAULT_EXPLORATION_TOOLS.join(",")
        );
    }

    #[test]
    fn report_specs_name_a_format_and_maybe_a_path() {
        assert_eq!(
            parse_report_spec("junit"),
            Ok(ReportSpec {
                format: ReportFormat::JUNIT,
                path: None
            })
        );
        assert_eq!(
            parse_report_spec("HTML=out/r.html"),
            Ok(ReportSpec {
                format: ReportFormat::HTML,
                path: Some(PathBuf::from("out/r.html"))
            })
        );
        assert_eq!(
            parse_report_spec("md=a=b.md").map(|s| s.path),
            Ok(Some(PathBuf::from("a=b.md")))
        );
        assert!(
            parse_report_spec("pdf")
                .expect_err("unknown")
                .to_string()
                .contains("expected junit, markdown or html")
        );
        assert_eq!(
            parse_report_spec("html=").expect_err("empty").to_string(),
            "`html=`: the path after `=` is empty"
        );
    }

    #[test]
    fn score_deltas_are_between_zero_and_one() {
        assert_eq!(parse_score_delta("0.2"), Ok(0.2));
        for bad in ["-0.1", "1.5", "NaN", "inf", "lots"] {
            assert!(parse_score_delta(bad).is_err(), "{bad}");
        }
    }

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
        let err = parse_timeout("1e20").expect_err("too long").to_string();
        assert!(err.contains("allowed: 0.001 to 604800 seconds (7 days)"), "{err}");
    }

    #[test]
    fn budget_is_a_positive_number_of_dollars() {
        for (text, want) in [
            ("5", Some(5.0)),
            ("0.01", Some(0.01)),
            ("0", None),
            ("-1", None),
            ("NaN", None),
            ("inf", None),
            ("1e400", None),
            ("lots", None),
        ] {
            assert_eq!(parse_budget(text).ok(), want, "{text}");
        }
    }

    #[test]
    fn run_mode_flags_parse_and_exclude_each_other() {
        use clap::Parser;
        let cli = Cli::try_parse_from([
            "agentv", "eval", "x", "--target", "a", "--target", "b", "--repeat", "3", "--shard", "2/4",
        ])
        .expect("parses");
        let Command::Eval(args) = cli.command else {
            panic!("eval")
        };
        assert_eq!(args.target, ["a", "b"]);
        assert_eq!(args.repeat, 3);
        assert_eq!(args.shard, Some(agentv_core::Shard { index: 2, count: 4 }));
        for bad in [
            &["agentv", "eval", "x", "--repeat", "0"][..],
            &["agentv", "eval", "x", "--shard", "5/4"][..],
            &["agentv", "eval", "x", "--resume", "r", "--out", "o"][..],
            &["agentv", "eval", "x", "--resume", "r", "--rerun-failed", "r"][..],
            &["agentv", "merge", "a.jsonl"][..],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn threshold_outside_zero_to_one_is_a_usage_error() {
        for (text, want) in [
            ("0", Some(0.0)),
            ("0.8", Some(0.8)),
            ("1", Some(1.0)),
            ("1.01", None),
            ("-0.1", None),
            ("NaN", None),
            ("inf", None),
            ("high", None),
        ] {
            assert_eq!(parse_threshold(text).ok(), want, "{text}");
        }
    }

    #[test]
    fn output_flags_are_global_and_exclusive() {
        use clap::Parser;
        for args in [
            &["agentv", "--quiet", "validate", "x"][..],
            &["agentv", "validate", "x", "--quiet"][..],
            &["agentv", "-q", "eval", "x"][..],
        ] {
            let cli = Cli::try_parse_from(args).expect("parses");
            assert_eq!(cli.output.level().expect("one level"), Level::Quiet, "{args:?}");
        }
        let cli = Cli::try_parse_from(["agentv", "eval", "x", "--verbose", "--color", "never"]).expect("parses");
        assert_eq!(cli.output.level().expect("one level"), Level::Verbose);
        assert_eq!(cli.output.color, ColorChoice::Never);
        for args in [
            &["agentv", "-q", "eval", "x", "-v"][..],
            &["agentv", "eval", "x", "--verbose", "--quiet"][..],
        ] {
            let cli = Cli::try_parse_from(args).expect("parses");
            assert!(cli.output.level().is_err(), "{args:?}");
        }
        assert!(Cli::try_parse_from(["agentv", "--color", "sometimes", "eval", "x"]).is_err());
    }
}
