//! Report: results streamed to JSONL, statistics at the end.

mod jsonl;
mod summary;

pub use jsonl::{JsonlWriter, default_results_path};
pub use summary::{Stats, Summary, histogram_bins};
