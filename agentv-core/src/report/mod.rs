//! Report: results streamed to JSONL, statistics at the end.

mod foreign;
mod jsonl;
mod prompts;
mod reader;
mod sink;
mod summary;
mod terminal;

pub use jsonl::{JsonlWriter, default_results_path};
pub use prompts::dump_prompt;
pub use reader::{Generation, ReadError, ReadRecord, ResultsReader};
pub use sink::{Row, Sink, redacted, redacted_trace};
pub use summary::{Stats, Summary, histogram_bins};
pub use terminal::{escape_line, escape_text};
