//! Report: results streamed to JSONL, statistics at the end.

mod ci;
mod compare;
mod foreign;
mod format;
mod jsonl;
mod latest;
mod lines;
mod prior;
pub(crate) mod promptfoo;
mod prompts;
mod reader;
mod run_summary;
mod sink;
mod slim;
mod stats;
mod summary;
mod tally;
mod terminal;
mod trace_cap;
mod v4_run_dir;

/// Declares the report format modules and lists their entries, in the order `--help` shows them.
macro_rules! report_formats {
    ($($module:ident),* $(,)?) => {
        $(mod $module;)*

        /// The report format table (`report/format.rs`).
        static FORMATS: &[ReportFormat] = &[$(ReportFormat::of(&$module::FORMAT)),*];
    };
}

report_formats! {
    junit,
    markdown,
    html,
}

pub use ci::{MeanCi, mean_ci95, t_quantile};
pub use compare::{
    Change, CompareCounts, Comparison, ComparisonBuilder, DEFAULT_EPSILON, Entry, ErroredPair, Gate, MatchBy, Pair,
    Unmatched, classify,
};
pub use format::{FormatEntry, ReportFormat, ReportTarget};
pub use html::{HtmlReport, write_script_json};
pub use jsonl::{JsonlWriter, Repair, default_results_path};
pub use junit::{JunitReport, xml_text};
pub use latest::{KeyHasher, RecordKey, key_of};
pub use lines::{Capped, DEFAULT_MAX_LINE_MB, MAX_LINE_ENV, max_line_bytes, read_line_capped, size_text};
pub use markdown::{MarkdownReport, md};
pub use prior::Prior;
pub use promptfoo::PromptfooJson;
pub use prompts::{DumpFor, dump_prompt};
pub use reader::{
    Detail, MAX_REPORTED_ERRORS, ReadError, ReadRecord, ReadSummary, ResultsFormat, ResultsReader, read_all,
    read_figures, starts_with_a_result,
};
pub use run_summary::{
    MergedFile, RunMetadata, SUMMARY_SCHEMA, ShardInfo, SummaryError, git_commit, read_metadata, summary_path,
    write_summary,
};
pub(crate) use sink::output_file;
pub use sink::{Row, Sink};
pub use stats::{
    CaseRef, CaseStats, GraderStats, Latency, PassAtK, RepeatStats, RunStats, StatsReport, StatusCounts, TargetStats,
    Tokens, pass_at_k, pass_hat_k,
};
pub use summary::{
    BINS, DEFAULT_WIDTH, MIN_WIDTH, Stats, Summary, SummaryContext, SummaryStyle, bin_for, bin_of, text,
};
pub use tally::{Tallies, Tally, case_label, counted_misses, first_problem, shorten};
pub use terminal::{escape_line, escape_text};
pub use trace_cap::{MAX_TRACE_BYTES, cap_trace, traced_bytes};
pub use v4_run_dir::{INDEX as RUN_DIR_INDEX, RunDirectory, RunInfo};
