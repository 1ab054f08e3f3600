//! Ready-made agentv code judges: RAG metrics that ask the judge model through agentv's target
//! proxy, and a JSON field-F1 judge that needs no model.
//!
//! Each metric is a module with a pure scoring function, its prompt builders and a `judge`
//! function for [`agentv_eval_sdk::run_judge`]; the binaries (`agentv-faithfulness`, …) are
//! thin wrappers around them, so the same judges can be embedded in another Rust judge:
//!
//! | module | binary | score | model calls (`mode: batch` / `per_item`) |
//! |---|---|---|---|
//! | [`contextual_precision`] | `agentv-contextual-precision` | (1/R) Σₖ vₖ · precision@k | 1 / one per chunk |
//! | [`contextual_recall`] | `agentv-contextual-recall` | attributable reference statements / statements | 1 + 1 / 1 + one per statement |
//! | [`contextual_relevancy`] | `agentv-contextual-relevancy` | relevant context statements / statements | 1 / one per chunk |
//! | [`faithfulness`] | `agentv-faithfulness` | supported claims / claims | 1 + 1 / 1 + one per claim |
//! | [`answer_relevancy`] | `agentv-answer-relevancy` | relevant answer statements / statements | 1 + 1 / 1 + one per statement |
//! | [`json_f1`] | `agentv-json-f1` | F1 over JSON fields | none |
//!
//! (`split: sentences` replaces the first call of the statement-based metrics with a local
//! sentence split.) judges/README.md documents every metric, its configuration and worked
//! numbers.
//!
//! # What the judges share
//!
//! - [`config`]: the evaluator's `config`, read strictly (an unknown key is an error naming the
//!   known ones), and the settings every judge understands ([`settings`]).
//! - [`context`]: where the retrieved context, the question and the reference answer come from.
//! - [`model`]: the judge model behind a trait ([`model::JudgeModel`], implemented by the SDK's
//!   `TargetClient`), the call budget, and asking about many items in one proxy round trip.
//! - [`outcome`]: the result: the score, the formula as reasoning, a hit or miss per item, the
//!   items in `details`, and `threshold` / `strict_mode`.

pub mod answer_relevancy;
pub mod config;
pub mod context;
pub mod contextual_precision;
pub mod contextual_recall;
pub mod contextual_relevancy;
mod error;
pub mod faithfulness;
pub mod json_f1;
pub mod model;
pub mod outcome;
pub mod prompt;
pub mod settings;
pub mod statements;

#[cfg(test)]
mod fake;

pub use error::Error;
