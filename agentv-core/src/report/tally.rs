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
    /// Sum of the costs known; `with_cost` cases had one (the others' cost is unknown).
    pub cost_usd: f64,
    pub with_cost: usize,
}

impl Tally {
    pub fn add(&mut self, r: &EvaluationRecord) {
        self.cases += 1;
        if let Some(m) = &r.execution_metrics {
            self.duration_ms += m.duration_ms.filter(|d| d.is_finite()).unwrap_or(0.0);
            if let Some(cost) = m.cost_usd.filter(|c| c.is_finite()) {
                self.cost_usd += cost;
                self.with_cost += 1;
            }
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

    /// The total cost as reports show it (`docs/running.md#cost`): `–` when no case's cost is
    /// known (never `$0.0000`), and how many cases it covers when not all.
    pub fn cost_text(&self) -> String {
        match self.with_cost {
            0 => "–".to_owned(),
            n if n == self.cases => format!("${:.4}", self.cost_usd),
            n => format!("${:.4} ({n} of {} cases; the rest unknown)", self.cost_usd, self.cases),
        }
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

    /// An unknown cost is shown as unknown, never as $0.0000.
    #[test]
    fn unknown_cost_is_shown_as_a_dash_never_as_zero() {
        let record = |cost: Option<f64>| -> EvaluationRecord {
            let mut v = serde_json::json!({
                "timestamp": "t", "eval_id": "a", "dataset": "d", "target": "t", "attempt": 1,
                "execution_status": "ok", "score": 1.0, "verdict": "pass", "hits": [], "misses": [],
                "candidate_answer": "", "evaluator_results": [], "execution_metrics": {"duration_ms": 5.0}
            });
            if let Some(c) = cost {
                v["execution_metrics"]["cost_usd"] = c.into();
            }
            serde_json::from_value(v).expect("record")
        };
        let mut t = Tally::default();
        t.add(&record(None));
        assert_eq!(t.cost_text(), "–");
        t.add(&record(Some(0.5)));
        assert_eq!(t.cost_text(), "$0.5000 (1 of 2 cases; the rest unknown)");
        let mut all = Tally::default();
        all.add(&record(Some(0.0)));
        assert_eq!(all.cost_text(), "$0.0000", "a known zero is zero");
    }

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
