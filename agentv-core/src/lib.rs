//! agentv's engine: load eval suites, run them against targets, grade and report.
//!
//! Data flows one way: load (files → validated model) → resolve (targets, secrets,
//! credentials) → run (bounded concurrency, retries, graders) → report (JSONL written as each
//! case completes, statistics at the end). Providers and graders are tables ([`providers`],
//! [`evaluators`]); every configuration section declares its keys once ([`config`]).
//! `docs/architecture.md` describes the modules and the decisions behind them.
//!
//! # The API
//!
//! A front end (the `agentv` binary) calls the functions at the crate root, one per step, and
//! prints what they return:
//!
//! - `agentv eval`: [`load()`] → [`plan()`] → [`run()`] → [`report()`];
//! - `agentv validate`: [`validate()`];
//! - `agentv merge`: [`merge()`].
//!
//! with the types they take and return re-exported beside them. [`model`] is the data model
//! (cases, results) and [`report`](mod@report) the result writers and statistics.
//! [`load`](mod@load), [`providers`], [`evaluators`] and [`trace`] stay public for this
//! crate's integration tests and benchmarks, which exercise the loaders, the provider clients,
//! the graders and trace extraction directly; a front end has no need of them. Everything else
//! is `pub(crate)`.

pub mod config;
pub mod context;
pub mod convert;
pub(crate) mod derived_metrics;
pub mod env;
pub mod evaluators;
pub(crate) mod facade;
pub(crate) mod http;
pub mod js;
pub mod judge_pool;
pub mod load;
pub mod model;
pub mod nunjucks;
pub mod paths;
pub(crate) mod process;
pub(crate) mod prompt;
pub mod providers;
pub(crate) mod redact;
pub mod report;
pub(crate) mod resolve;
pub(crate) mod run;
pub mod schema;
pub mod template;
pub mod tools;
pub mod trace;
pub mod workspace;

pub use facade::{BatchJobsError, JobError, JobLine, JobsAction, batch_jobs};
pub use facade::{
    CheckedFile, Finished, IdPatternError, LoadError, LoadOptions, Loaded, MAX_SHARDS, MergeError, MergeOptions,
    Merged, Plan, PlanError, PlanOptions, PlanProblem, ProblemCounts, Report, RunOptions, Shard, ShardError,
    TargetInfo, ValidateOptions, Validation, load, merge, plan, report, run, validate,
};
pub use load::{Diagnostic, DiscoverError, FileKind, Secrets, Severity, Workspace};
pub use process::cause_line;
pub use providers::CacheStats;
pub use redact::RedactingWriter;
pub use report::{escape_line, escape_text};
pub use run::{BatchMode, BatchState, Interrupt, JobRecord, JobView, Outcome, RunObserver, RunReport, TargetRole};
pub use trace::DEFAULT_EXPLORATION_TOOLS;
pub use workspace::{Kept, WorkspaceOptions};
