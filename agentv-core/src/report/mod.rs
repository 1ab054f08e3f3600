//! Report: results streamed to JSONL, statistics at the end.

mod ci;
mod compare;
mod foreign;
mod html;
mod jsonl;
mod junit;
mod markdown;
mod prompts;
mod reader;
mod sink;
mod summary;
mod tally;
mod terminal;

pub use ci::{MeanCi, mean_ci95, t_quantile};
pub use compare::{
    Change, Comparison, Counts, DEFAULT_EPSILON, Entry, ErroredPair, Gate, MatchBy, Pair, Unmatched, classify,
};
pub use html::{HtmlReport, write_script_json};
pub use jsonl::{JsonlWriter, default_results_path};
pub use junit::{JunitReport, xml_text};
pub use markdown::{MarkdownReport, md};
pub use prompts::{DumpFor, dump_prompt};
pub use reader::{Generation, MAX_REPORTED_ERRORS, ReadError, ReadRecord, ReadSummary, ResultsReader, read_all};
pub use sink::{Row, Sink, redacted, redacted_trace};
pub use summary::{
    BINS, DEFAULT_WIDTH, MIN_WIDTH, Stats, Summary, SummaryContext, SummaryStyle, TargetStats, bin_for, bin_of, text,
};
pub use tally::{Tallies, Tally, first_problem, shorten};
pub use terminal::{escape_line, escape_text};
