//! Running totals per target, shared by the report formats: each record is added as it comes
//! and dropped, so a report's header costs the same for ten cases or a million.

use serde::Serialize;

use super::summary::bin_for;
use crate::model::{EvaluationRecord, ExecutionStatus, Verdict};

/// Totals of one target (or of a whole run).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    pub cases: usize,
    /// Ran and graded (`execution_status: ok`).
    pub graded: usize,
    pub pass: usize,
    pub borderline: usize,
    pub fail: usize,
    pub execution_errors: usize,
    pub grader_errors: usize,
    /// Sum of the graded cases' scores.
    pub score_sum: f64,
    /// Graded cases per score bin `0.0-0.2` … `0.8-1.0` (upper edges included).
    pub bins: [usize; 5],
    pub duration_ms: f64,
    pub cost_usd: f64,
}

impl Tally {
    pub fn add(&mut self, r: &EvaluationRecord) {
        self.cases += 1;
        if let Some(m) = &r.execution_metrics {
            self.duration_ms += m.duration_ms.filter(|d| d.is_finite()).unwrap_or(0.0);
            self.cost_usd += m.cost_usd.filter(|c| c.is_finite()).unwrap_or(0.0);
        }
        match r.execution_status {
            ExecutionStatus::ExecutionError => self.execution_errors += 1,
            ExecutionStatus::GraderError => self.grader_errors += 1,
            ExecutionStatus::Ok => {
                self.graded += 1;
                match r.verdict {
                    Verdict::Pass => self.pass += 1,
                    Verdict::Borderline => self.borderline += 1,
                    Verdict::Fail | Verdict::Skip => self.fail += 1,
                }
                if r.score.is_finite() {
                    self.score_sum += r.score;
                    self.bins[bin_for(r.score, r.verdict)] += 1;
                }
            }
        }
    }

    /// Mean score of the graded cases.
    pub fn mean(&self) -> Option<f64> {
        (self.graded > 0).then(|| self.score_sum / self.graded as f64)
    }

    /// Share of the graded cases whose verdict is `pass`.
    pub fn pass_rate(&self) -> Option<f64> {
        (self.graded > 0).then(|| self.pass as f64 / self.graded as f64)
    }

    pub fn errors(&self) -> usize {
        self.execution_errors + self.grader_errors
    }
}

/// A tally per target, in first-seen order, and the total.
#[derive(Debug, Clone, Default)]
pub struct Tallies {
    pub total: Tally,
    pub by_target: Vec<(String, Tally)>,
}

impl Tallies {
    pub fn add(&mut self, r: &EvaluationRecord) {
        self.total.add(r);
        match self.by_target.iter_mut().find(|(t, _)| *t == r.target) {
            Some((_, tally)) => tally.add(r),
            None => {
                let mut tally = Tally::default();
                tally.add(r);
                self.by_target.push((r.target.clone(), tally));
            }
        }
    }
}

/// The first miss worth showing for a case: an evaluator's error, the run's error, or the
/// first miss.
pub fn first_problem(r: &EvaluationRecord) -> Option<&str> {
    if let Some(e) = &r.error {
        return Some(e);
    }
    if let Some(e) = r.evaluator_results.iter().find_map(|g| g.error.as_deref()) {
        return Some(e);
    }
    r.misses.first().map(String::as_str)
}

/// At most `max` characters of `text`, with `…` when cut.
pub fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let mut out = text[..cut].to_owned();
            out.pop();
            out.push('…');
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_cuts_on_characters() {
        assert_eq!(shorten("abc", 3), "abc");
        assert_eq!(shorten("abcd", 3), "ab…");
        assert_eq!(shorten("ééééé", 3), "éé…");
    }
}
