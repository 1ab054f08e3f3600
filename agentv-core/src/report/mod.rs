//! Report: results streamed to JSONL, statistics at the end.

mod jsonl;
mod prompts;
mod summary;
mod terminal;

pub use jsonl::{JsonlWriter, default_results_path};
pub use prompts::dump_prompt;
pub use summary::{Stats, Summary, histogram_bins};
pub use terminal::{escape_line, escape_text};
