//! Totals per target, from the records (each names its target), and the side-by-side table a
//! run with several targets ends with: one column per target, so the targets compare at a
//! glance.

use std::fmt::Write as _;
use std::time::Duration;

use super::Shown;
use super::text::{Paint, Tone, compact_count, cut_middle, dollars, duration, pad_left, pad_right};
use crate::model::{EvaluationRecord, ExecutionStatus, TokenUsage, Verdict};

/// Width of the row labels of the table.
const LABEL_WIDTH: usize = 16;
/// Width of one target's column (its values are right-aligned, one space from the next).
const COLUMN_WIDTH: usize = 16;

/// What one target did in a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetStats {
    pub name: String,
    pub cases: usize,
    /// Ran and graded (`execution_status: ok`).
    pub graded: usize,
    pub pass: usize,
    pub execution_errors: usize,
    pub grader_errors: usize,
    /// Cases not run because their definition has errors.
    pub invalid: usize,
    /// Sum of the graded cases' scores.
    pub score_sum: f64,
    /// Tokens of the cases that reported usage, and how many did.
    pub tokens: TokenUsage,
    pub with_tokens: usize,
    /// Dollars of the cases that reported a cost, and how many did.
    pub cost_usd: f64,
    pub with_cost: usize,
    /// Each case's wall time in milliseconds (for percentiles).
    latencies_ms: Vec<f64>,
}

impl TargetStats {
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            ..Self::default()
        }
    }

    /// Adds a record; `elapsed` is the case's wall time, else the target's own duration from
    /// the record's metrics.
    pub fn add(&mut self, r: &EvaluationRecord, elapsed: Option<Duration>) {
        self.cases += 1;
        match r.execution_status {
            ExecutionStatus::ExecutionError => self.execution_errors += 1,
            ExecutionStatus::GraderError => self.grader_errors += 1,
            ExecutionStatus::Invalid => self.invalid += 1,
            ExecutionStatus::Ok => {
                self.graded += 1;
                if r.score.is_finite() {
                    self.score_sum += r.score;
                }
                if r.verdict == Verdict::Pass {
                    self.pass += 1;
                }
            }
        }
        let metrics = r.execution_metrics.as_ref();
        if let Some(tokens) = metrics.and_then(|m| m.token_usage) {
            self.tokens.add(&tokens);
            self.with_tokens += 1;
        }
        if let Some(cost) = metrics.and_then(|m| m.cost_usd).filter(|c| c.is_finite()) {
            self.cost_usd += cost;
            self.with_cost += 1;
        }
        let latency = elapsed
            .map(|d| d.as_secs_f64() * 1000.0)
            .or_else(|| metrics.and_then(|m| m.duration_ms));
        if let Some(ms) = latency.filter(|ms| ms.is_finite() && *ms >= 0.0) {
            self.latencies_ms.push(ms);
        }
    }

    pub fn mean(&self) -> Option<f64> {
        (self.graded > 0).then(|| self.score_sum / self.graded as f64)
    }

    /// Share of all the target's cases that pass: a case that errored did not pass, so a target
    /// that fails to answer half the time cannot look as good as one that always answers.
    pub fn pass_rate(&self) -> Option<f64> {
        (self.cases > 0).then(|| self.pass as f64 / self.cases as f64)
    }

    /// Cases that could not be run or graded, invalid ones included.
    pub fn errors(&self) -> usize {
        self.execution_errors + self.grader_errors + self.invalid
    }

    /// The `p`-th percentile (0–100) of the cases' wall times, by nearest rank.
    pub fn latency(&self, p: f64) -> Option<Duration> {
        percentile(&self.latencies_ms, p).map(|ms| Duration::from_secs_f64(ms / 1000.0))
    }
}

/// Nearest-rank percentile of `values`; `None` when empty.
fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// The table, with as many targets side by side as fit in `width` columns, then the next ones
/// below.
pub(super) fn render(out: &mut String, targets: &[TargetStats], shown: &Shown<'_>, paint: Paint, width: usize) {
    let per_block = (width.saturating_sub(LABEL_WIDTH) / COLUMN_WIDTH).max(1);
    for (i, block) in targets.chunks(per_block).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let title = if i == 0 { "BY TARGET" } else { "BY TARGET (continued)" };
        let mut head = paint.tone(Tone::Heading, &pad_right(title, LABEL_WIDTH));
        for t in block {
            let name = cut_middle(&shown.line(&t.name), COLUMN_WIDTH - 1);
            head.push_str(&paint.tone(Tone::Heading, &pad_left(&name, COLUMN_WIDTH)));
        }
        let _ = writeln!(out, "{}", head.trim_end());
        for (label, cell) in ROWS {
            let mut line = pad_right(&format!("  {label}"), LABEL_WIDTH);
            for t in block {
                line.push_str(&pad_left(&cell(t), COLUMN_WIDTH));
            }
            let _ = writeln!(out, "{line}");
        }
    }
}

/// What a cell shows when the target has no such data.
const NONE: &str = "–";

type Cell = fn(&TargetStats) -> String;

const ROWS: &[(&str, Cell)] = &[
    ("cases", |t| t.cases.to_string()),
    ("mean score", |t| {
        t.mean().map_or_else(|| NONE.to_owned(), |m| format!("{m:.3}"))
    }),
    ("pass rate", |t| {
        t.pass_rate()
            .map_or_else(|| NONE.to_owned(), |r| format!("{:.0}%", r * 100.0))
    }),
    ("errors", |t| t.errors().to_string()),
    ("tokens", |t| {
        if t.with_tokens == 0 {
            NONE.to_owned()
        } else {
            compact_count(t.tokens.input.saturating_add(t.tokens.output))
        }
    }),
    ("cost", |t| {
        if t.with_cost == 0 {
            NONE.to_owned()
        } else {
            dollars(t.cost_usd)
        }
    }),
    ("latency p50", |t| {
        t.latency(50.0).map_or_else(|| NONE.to_owned(), duration)
    }),
    ("latency p95", |t| {
        t.latency(95.0).map_or_else(|| NONE.to_owned(), duration)
    }),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn record(status: &str, score: f64) -> EvaluationRecord {
        serde_json::from_value(serde_json::json!({
            "timestamp": "t", "eval_id": "c", "dataset": "d", "target": "t", "attempt": 1,
            "execution_status": status, "score": score, "verdict": Verdict::from_score(score),
            "hits": [], "misses": [], "candidate_answer": "", "evaluator_results": []
        }))
        .expect("record")
    }

    #[test]
    fn pass_rate_counts_errored_cases_as_not_passing() {
        let mut t = TargetStats::new("t");
        for (status, score) in [
            ("ok", 1.0),
            ("ok", 0.9),
            ("execution_error", 0.0),
            ("grader_error", 0.0),
        ] {
            t.add(&record(status, score), None);
        }
        assert_eq!(t.pass_rate(), Some(0.5));
        assert_eq!(t.mean(), Some(0.95), "the mean is over graded cases");
        assert_eq!(t.errors(), 2);
        assert_eq!(TargetStats::new("none").pass_rate(), None);
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let values: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), Some(10.0));
        assert_eq!(percentile(&values, 95.0), Some(19.0));
        assert_eq!(percentile(&values, 100.0), Some(20.0));
        assert_eq!(percentile(&[7.0], 95.0), Some(7.0));
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), Some(2.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
