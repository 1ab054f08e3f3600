//! The end-of-run summary: its data, accumulated record by record without holding the
//! records, and its text, fitted to a terminal's columns (80 by default).
//!
//! The text, top to bottom: the failing cases with what explains them; the counts, score
//! statistics, wall time, tokens, cost and cache lookups; the score histogram; with several
//! targets, a column per target; the best and worst cases; where the results are. Every piece of
//! user text in it (ids, targets, messages, paths) is redacted, cut to one line and escaped
//! before it is fitted, and colour, when asked for, paints only our own words.

mod failures;
mod ranking;
mod targets;
pub mod text;

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use self::failures::Failures;
use self::ranking::Ranking;
use self::text::{Paint, Tone, count, cut_middle, dollars, duration, pad_right, relative_path};
use super::terminal::escape_line;
use crate::model::{EvaluationRecord, ExecutionStatus, TokenUsage, Verdict};
use crate::providers::CacheStats;
use crate::redact::Secrets;
use crate::report::stats::TargetStats;

/// Width of the longest histogram bar.
const BAR_WIDTH: usize = 30;
/// Width of the labels of the statistics (`Std deviation: `).
const LABEL_WIDTH: usize = 15;
/// Columns the summary fits in unless told otherwise.
pub const DEFAULT_WIDTH: usize = 80;
/// The fewest columns the summary is laid out for.
pub const MIN_WIDTH: usize = 60;

/// Statistics over the scores of cases that ran and were graded without error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n − 1); `None` below two scores.
    pub std_dev: Option<f64>,
}

impl Stats {
    /// `None` when there are no scores.
    pub fn compute(scores: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = scores.iter().copied().filter(|s| !s.is_nan()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let std_dev =
            (n >= 2).then(|| (sorted.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
        Some(Self {
            mean,
            median,
            min: sorted[0],
            max: sorted[n - 1],
            std_dev,
        })
    }
}

/// The histogram's bins, lowest first: each holds its lower edge, and the edges include the
/// verdict thresholds, so a bin never mixes verdicts (0.800 is a pass and is drawn with the
/// passes, 0.600 with the borderline cases). Verdicts: `docs/architecture.md#scoring`.
pub const BINS: [(f64, &str, &str); 5] = [
    (0.0, "fail", "[0.0, 0.2)"),
    (0.2, "fail", "[0.2, 0.4)"),
    (0.4, "fail", "[0.4, 0.6)"),
    (0.6, "borderline", "[0.6, 0.8)"),
    (0.8, "pass", "[0.8, 1.0]"),
];

/// The bin of `score` (see [`BINS`]); below 0 (or NaN) is the first, above 1 the last.
pub fn bin_of(score: f64) -> usize {
    BINS.iter().rposition(|(lower, _, _)| score >= *lower).unwrap_or(0)
}

/// The bin a graded case is drawn in: its verdict's bin, and within the fail bins, its
/// score's. The verdict decides, not the score alone, so a case is never drawn with cases of
/// another verdict, even from a results file whose verdicts were decided elsewhere.
pub fn bin_for(score: f64, verdict: Verdict) -> usize {
    match verdict {
        Verdict::Pass => 4,
        Verdict::Borderline => 3,
        Verdict::Fail | Verdict::Skip => bin_of(score).min(2),
    }
}

/// Accumulates what the end-of-run summary needs, without holding the records.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub total: usize,
    /// Scores of the cases that ran and were graded (`execution_status: ok`).
    scores: Vec<f64>,
    /// Cases whose target could not answer, those not run (`--budget-usd`) included.
    execution_errors: usize,
    /// Of `execution_errors`, the cases not run because the budget was reached.
    not_run: usize,
    grader_errors: usize,
    /// Cases not run because their definition has errors.
    invalid: usize,
    pub verdicts: [usize; 3],
    /// Graded cases per bin of [`BINS`].
    bins: [usize; 5],
    ranking: Ranking,
    failures: Failures,
    /// Tokens and cost of the whole run.
    usage: Usage,
}

/// Tokens and cost of the cases, and how many cases reported each.
#[derive(Debug, Default, Clone, Copy)]
struct Usage {
    tokens: TokenUsage,
    with_tokens: usize,
    cost_usd: f64,
    with_cost: usize,
}

impl Usage {
    fn add(&mut self, record: &EvaluationRecord) {
        let metrics = record.execution_metrics.as_ref();
        if let Some(tokens) = metrics.and_then(|m| m.token_usage) {
            self.tokens.add(&tokens);
            self.with_tokens += 1;
        }
        if let Some(cost) = metrics.and_then(|m| m.cost_usd).filter(|c| c.is_finite()) {
            self.cost_usd += cost;
            self.with_cost += 1;
        }
    }
}

/// What the summary shows around the cases: where the results went, how long the run took,
/// what the cache did.
#[derive(Debug, Clone, Default)]
pub struct SummaryContext {
    /// The results file.
    pub results: Option<PathBuf>,
    /// The working directory: paths below it are shown relative to it.
    pub cwd: Option<PathBuf>,
    /// The run's wall time.
    pub elapsed: Option<Duration>,
    /// Cache lookups, with `--cache`.
    pub cache: Option<CacheStats>,
    /// The run statistics per target: with several, the summary draws them side by side and
    /// names each case's target.
    pub targets: Vec<TargetStats>,
}

/// How the summary is drawn.
#[derive(Debug, Clone, Copy)]
pub struct SummaryStyle {
    /// Columns every line fits in (at least [`MIN_WIDTH`]).
    pub width: usize,
    /// Our own words in colour (never in snapshots).
    pub color: bool,
}

impl Default for SummaryStyle {
    fn default() -> Self {
        Self {
            width: DEFAULT_WIDTH,
            color: false,
        }
    }
}

impl Summary {
    /// Adds a record.
    pub fn add(&mut self, record: &EvaluationRecord) {
        let seq = self.total as u64;
        self.total += 1;
        self.usage.add(record);
        self.failures.add(record, seq);
        match record.execution_status {
            ExecutionStatus::ExecutionError => {
                self.execution_errors += 1;
                self.not_run += usize::from(record.is_not_run());
            }
            ExecutionStatus::GraderError => self.grader_errors += 1,
            ExecutionStatus::Invalid => self.invalid += 1,
            ExecutionStatus::Ok => {
                self.scores.push(record.score);
                self.bins[bin_for(record.score, record.verdict)] += 1;
                self.verdicts[match record.verdict {
                    Verdict::Pass => 0,
                    Verdict::Borderline => 1,
                    // A case's verdict is never `skip` (a skipped grader makes the case a grader error).
                    Verdict::Fail | Verdict::Skip => 2,
                }] += 1;
                self.ranking.add(record, seq);
            }
        }
    }

    pub fn scores(&self) -> &[f64] {
        &self.scores
    }

    /// Cases whose target could not answer.
    pub fn execution_errors(&self) -> usize {
        self.execution_errors
    }

    /// Cases an evaluator could not grade.
    pub fn grader_errors(&self) -> usize {
        self.grader_errors
    }

    /// Cases recorded as not run because the budget was reached (counted in
    /// [`Summary::execution_errors`] too).
    pub fn not_run(&self) -> usize {
        self.not_run
    }

    /// Cases recorded as invalid: their definition has errors, so they were not run.
    pub fn invalid(&self) -> usize {
        self.invalid
    }

    pub fn stats(&self) -> Option<Stats> {
        Stats::compute(&self.scores)
    }

    /// Graded cases that scored below `threshold`.
    pub fn below(&self, threshold: f64) -> usize {
        self.scores.iter().filter(|s| **s < threshold).count()
    }

    /// The summary as printed at the end of a run (see the module's documentation).
    pub fn render(&self, context: &SummaryContext, style: SummaryStyle, secrets: &Secrets) -> String {
        let columns = style.width.max(MIN_WIDTH);
        let paint = Paint { on: style.color };
        let shown = Shown { secrets };
        let mut out = String::new();
        let several = context.targets.len() > 1;
        self.failures
            .render(&mut out, self.total, several, &shown, paint, columns);
        self.render_totals(&mut out, context, paint);
        if !self.scores.is_empty() {
            out.push('\n');
            self.render_histogram(&mut out, paint, columns);
        }
        if several {
            out.push('\n');
            targets::render(&mut out, &context.targets, &shown, paint, columns);
        }
        if !self.scores.is_empty() {
            out.push('\n');
            self.ranking.render(&mut out, several, &shown, paint, columns);
        }
        if let Some(path) = &context.results {
            const LEAD: &str = "Results written to: ";
            let path = shown.line(&relative_path(path, context.cwd.as_deref()));
            let path = cut_middle(&path, columns - LEAD.len());
            let _ = writeln!(out, "\n{LEAD}{path}");
        }
        out
    }

    fn render_totals(&self, out: &mut String, context: &SummaryContext, paint: Paint) {
        let row = |out: &mut String, label: &str, value: &str| {
            let _ = writeln!(out, "  {}{value}", pad_right(&format!("{label}:"), LABEL_WIDTH));
        };
        let _ = writeln!(out, "{}", paint.tone(Tone::Heading, "EVALUATION SUMMARY"));
        let _ = writeln!(out, "  Total eval cases: {}", self.total);
        let _ = writeln!(
            out,
            "  Graded: {}   Execution errors: {}   Grader errors: {}",
            self.scores.len(),
            self.execution_errors - self.not_run,
            self.grader_errors
        );
        if self.invalid + self.not_run > 0 {
            // Apart from the errors, as in the run summary file: neither case was run.
            let _ = writeln!(out, "  Invalid: {}   Not run: {}", self.invalid, self.not_run);
        }
        let [pass, borderline, fail] = self.verdicts;
        let _ = writeln!(
            out,
            "  Verdicts: {} pass, {} borderline, {} fail",
            paint.tone(Tone::Good, &pass.to_string()),
            paint.tone(Tone::SoSo, &borderline.to_string()),
            paint.tone(Tone::Bad, &fail.to_string())
        );
        match self.stats() {
            None => {
                let _ = writeln!(out, "  No graded cases.");
            }
            Some(s) => {
                row(out, "Mean score", &format!("{:.3}", s.mean));
                row(out, "Median score", &format!("{:.3}", s.median));
                row(out, "Min score", &format!("{:.3}", s.min));
                row(out, "Max score", &format!("{:.3}", s.max));
                let sd = s
                    .std_dev
                    .map_or_else(|| "n/a (fewer than 2 scores)".to_owned(), |sd| format!("{sd:.3}"));
                row(out, "Std deviation", &sd);
            }
        }
        if let Some(elapsed) = context.elapsed {
            row(out, "Wall time", &duration(elapsed));
        }
        let Usage {
            tokens,
            with_tokens,
            cost_usd: cost,
            with_cost,
        } = self.usage;
        if with_tokens > 0 {
            let mut value = format!("{} in, {} out", count(tokens.input), count(tokens.output));
            if let Some(cached) = tokens.cached.filter(|c| *c > 0) {
                let _ = write!(value, " ({} cached)", count(cached));
            }
            row(out, "Tokens", &(value + &self.reported_by(with_tokens)));
        }
        if with_cost > 0 {
            row(out, "Cost", &(dollars(cost) + &self.reported_by(with_cost)));
        }
        if let Some(cache) = context.cache {
            let value = format!(
                "{}, {}",
                plural(cache.hits, "hit", "hits"),
                plural(cache.misses, "miss", "misses")
            );
            row(out, "Cache", &value);
        }
    }

    /// ` (reported by 3 of 4 cases)` when not every case reported it.
    fn reported_by(&self, reported: usize) -> String {
        if reported == self.total {
            String::new()
        } else {
            format!(" (reported by {reported} of {} cases)", self.total)
        }
    }

    fn render_histogram(&self, out: &mut String, paint: Paint, columns: usize) {
        let bins = self.bins;
        let most = bins.iter().copied().max().unwrap_or(0).max(1);
        // "  borderline [0.6, 0.8) │" + bar + " " + count
        let room = columns.saturating_sub(26 + 1 + most.to_string().len());
        let bar_width = BAR_WIDTH.min(room).max(1);
        let _ = writeln!(out, "{}", paint.tone(Tone::Heading, "Score distribution:"));
        for ((_, verdict, range), count) in BINS.iter().zip(bins) {
            let width = if count == 0 {
                0
            } else {
                (count * bar_width).div_ceil(most)
            };
            let tone = match *verdict {
                "pass" => Tone::Good,
                "borderline" => Tone::SoSo,
                _ => Tone::Bad,
            };
            let _ = writeln!(
                out,
                "  {} {range} │{} {count}",
                pad_right(verdict, 10),
                paint.tone(tone, &"█".repeat(width))
            );
        }
    }
}

/// The per-target table of [`super::StatsReport::render`] (`agentv merge`): the summary's, in
/// [`DEFAULT_WIDTH`] columns.
pub(super) fn targets_table(targets: &[TargetStats], secrets: &Secrets) -> String {
    let mut out = String::new();
    targets::render(
        &mut out,
        targets,
        &Shown { secrets },
        Paint { on: false },
        DEFAULT_WIDTH,
    );
    out
}

/// User text as the terminal shows it: secrets redacted (in the whole text, so a secret that
/// spans lines is found), then escaped onto one line.
pub(super) struct Shown<'a> {
    secrets: &'a Secrets,
}

impl Shown<'_> {
    /// All of `text` on one line.
    fn line(&self, text: &str) -> String {
        escape_line(&self.secrets.redact(text)).into_owned()
    }

    /// The first line of `text`.
    fn first_line(&self, text: &str) -> String {
        let redacted: Cow<'_, str> = self.secrets.redact(text);
        escape_line(redacted.lines().next().unwrap_or_default()).into_owned()
    }

    /// The line of `text` that names what went wrong, within `max` characters: its first line
    /// and, for a multi-line error, its last (`crate::process::cause_line`).
    fn cause(&self, text: &str, max: usize) -> String {
        let redacted: Cow<'_, str> = self.secrets.redact(text);
        escape_line(&crate::process::cause_line(&redacted, max)).into_owned()
    }
}

/// Columns a target's (or a grader's) name may take beside an id: a quarter of the line, at
/// most 20.
fn name_width(columns: usize) -> usize {
    (columns / 4).min(20)
}

/// `1 case`, `2 cases`.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests;
