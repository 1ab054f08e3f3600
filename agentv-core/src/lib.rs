//! agentv's engine: load eval suites, run them against targets, grade and report.
//!
//! Data flows one way: [`load`] (files → validated model) → [`providers`] resolution (targets,
//! secrets, credentials) → [`run`] (bounded concurrency, retries, evaluators) → [`report`]
//! (JSONL written as each case completes, statistics at the end).

pub mod evaluators;
pub mod http;
pub mod load;
pub mod model;
pub mod process;
pub mod prompt;
pub mod providers;
pub mod redact;
pub mod report;
pub mod resolve;
pub mod run;
pub mod trace;
