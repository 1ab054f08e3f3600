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
    /// Cases not run because their definition has errors.
    pub invalid: usize,
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
            ExecutionStatus::Invalid => self.invalid += 1,
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

    /// Cases that could not be run or graded, invalid ones included.
    pub fn errors(&self) -> usize {
        self.execution_errors + self.grader_errors + self.invalid
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

/// The first miss worth showing for a case: the run's error, an evaluator's error, or the
/// first miss that counts ([`counted_misses`]).
pub fn first_problem(r: &EvaluationRecord) -> Option<&str> {
    if let Some(e) = &r.error {
        return Some(e);
    }
    if let Some(e) = r.evaluator_results.iter().find_map(|g| g.error.as_deref()) {
        return Some(e);
    }
    counted_misses(r).next()
}

/// The misses that explain a case's score: those of the graders that count toward it (weight
/// above 0), in grader order. A grader of weight 0 is reported in the record, but what it
/// missed did not fail the case, so it is never given as the reason. A record without grader
/// results (from another program) has only its own misses.
pub fn counted_misses(r: &EvaluationRecord) -> Box<dyn Iterator<Item = &str> + '_> {
    if r.evaluator_results.is_empty() {
        return Box::new(r.misses.iter().map(String::as_str));
    }
    Box::new(
        r.evaluator_results
            .iter()
            .filter(|g| g.weight > 0.0)
            .flat_map(|g| g.misses.iter().map(String::as_str)),
    )
}

/// A case as the console names it: its id, and its trial when the run repeats cases
/// (`capital-of-japan (trial 2)`), so each trial of a case is listed once, and told apart.
pub fn case_label(r: &EvaluationRecord) -> std::borrow::Cow<'_, str> {
    match r.trial {
        Some(trial) => std::borrow::Cow::Owned(format!("{} (trial {trial})", r.eval_id)),
        None => std::borrow::Cow::Borrowed(&r.eval_id),
    }
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
    fn misses_of_a_weight_0_grader_are_never_a_failures_reason() {
        let record: EvaluationRecord = serde_json::from_value(serde_json::json!({
            "timestamp": "t", "eval_id": "capital-of-australia", "dataset": "d", "target": "m",
            "attempt": 1, "execution_status": "ok", "score": 0.3, "verdict": "fail",
            "hits": [], "candidate_answer": "Sydney",
            "misses": ["missing Paris", "does not mention Canberra"],
            "evaluator_results": [
                {"name": "all_cities", "type": "keywords", "score": 0.0, "weight": 0.0,
                 "verdict": "fail", "hits": [], "misses": ["missing Paris"]},
                {"name": "city", "type": "code_judge", "score": 0.3, "weight": 1.0,
                 "verdict": "fail", "hits": [], "misses": ["does not mention Canberra"]}
            ]
        }))
        .expect("record");
        assert_eq!(
            counted_misses(&record).collect::<Vec<_>>(),
            ["does not mention Canberra"]
        );
        assert_eq!(first_problem(&record), Some("does not mention Canberra"));
        let foreign = EvaluationRecord {
            evaluator_results: Vec::new(),
            ..record
        };
        assert_eq!(first_problem(&foreign), Some("missing Paris"));
    }

    #[test]
    fn shorten_cuts_on_characters() {
        assert_eq!(shorten("abc", 3), "abc");
        assert_eq!(shorten("abcd", 3), "ab…");
        assert_eq!(shorten("ééééé", 3), "éé…");
    }
}
