//! agentv's engine: load eval suites, run them against targets, grade and report.
//!
//! Data flows one way: [`load`] (files → validated model) → [`resolve`] (targets, secrets,
//! credentials) → [`run`] (bounded concurrency, retries, graders) → [`report`] (JSONL written
//! as each case completes, statistics at the end). Providers and graders are tables
//! ([`providers`], [`evaluators`]); every configuration section declares its keys once
//! ([`config`]). `docs/architecture.md` describes the modules and the decisions behind them.

pub mod config;
pub mod context;
pub mod env;
pub mod evaluators;
pub mod http;
pub mod load;
pub mod model;
pub mod paths;
pub mod process;
pub mod prompt;
pub mod providers;
pub mod redact;
pub mod report;
pub mod resolve;
pub mod run;
pub mod schema;
pub mod template;
pub mod trace;
