//! The best and worst cases. Both lists come from one order (higher score first, then earlier
//! arrival), the top from its start and the bottom from its end, so no case is ever in both:
//! with six or fewer graded cases each is listed once, half at the top, the rest at the bottom.

use std::cmp::Ordering;
use std::fmt::Write as _;

use super::text::{Paint, Tone, cut_middle, width};
use super::{Shown, name_width, plural};
use crate::model::EvaluationRecord;

/// How many best and worst cases are listed at most.
pub(super) const RANKED: usize = 3;

#[derive(Debug, Clone)]
struct Entry {
    score: f64,
    seq: u64,
    id: String,
    target: String,
}

/// The order of the ranking: better first; among equal scores, the earlier case first.
fn better_first(a: &Entry, b: &Entry) -> Ordering {
    b.score.total_cmp(&a.score).then(a.seq.cmp(&b.seq))
}

#[derive(Debug, Clone, Default)]
pub(super) struct Ranking {
    /// The `RANKED` first entries of the order, best first.
    best: Vec<Entry>,
    /// The `RANKED` last entries of the order, worst first.
    worst: Vec<Entry>,
    graded: usize,
}

impl Ranking {
    pub(super) fn add(&mut self, record: &EvaluationRecord, seq: u64) {
        self.graded += 1;
        let entry = || Entry {
            score: record.score,
            seq,
            id: crate::report::case_label(record).into_owned(),
            target: record.target.clone(),
        };
        let probe = Entry {
            score: record.score,
            seq,
            id: String::new(),
            target: String::new(),
        };
        keep(&mut self.best, &probe, entry, |new, old| better_first(new, old).is_lt());
        keep(&mut self.worst, &probe, entry, |new, old| {
            better_first(new, old).is_gt()
        });
    }

    /// How many cases the top and the bottom list show: at most `RANKED` each, and together
    /// never more than there are.
    fn sizes(&self) -> (usize, usize) {
        let top = RANKED.min(self.graded.div_ceil(2));
        let bottom = RANKED.min(self.graded - top);
        (top, bottom)
    }

    /// Both lists; `with_target` names each case's target (a run with several).
    pub(super) fn render(&self, out: &mut String, with_target: bool, shown: &Shown<'_>, paint: Paint, columns: usize) {
        let (top, bottom) = self.sizes();
        for (title, list) in [("Top", &self.best[..top]), ("Bottom", &self.worst[..bottom])] {
            if list.is_empty() {
                continue;
            }
            let heading = format!("{title} {}:", plural(list.len(), "case", "cases"));
            let _ = writeln!(out, "{}", paint.tone(Tone::Heading, &heading));
            for (i, e) in list.iter().enumerate() {
                let target = if with_target {
                    format!(" [{}]", cut_middle(&shown.line(&e.target), name_width(columns)))
                } else {
                    String::new()
                };
                let score = format!("{:.3}", e.score);
                // "  1. " + id + target + ": " + score
                let room = columns.saturating_sub(5 + width(&target) + 2 + score.len());
                let id = cut_middle(&shown.line(&e.id), room);
                let _ = writeln!(out, "  {}. {id}{}: {score}", i + 1, paint.tone(Tone::Dim, &target));
            }
        }
    }
}

/// Inserts the entry made by `make` into `list` when it comes before (by `first`) one of the
/// `RANKED` kept; copies the id only then.
fn keep(list: &mut Vec<Entry>, probe: &Entry, make: impl Fn() -> Entry, first: impl Fn(&Entry, &Entry) -> bool) {
    let position = list.iter().position(|old| first(probe, old)).unwrap_or(list.len());
    if position < RANKED {
        list.insert(position, make());
        list.truncate(RANKED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranking(scores: &[f64]) -> Ranking {
        let mut r = Ranking::default();
        for (seq, score) in scores.iter().enumerate() {
            let record: EvaluationRecord = serde_json::from_value(serde_json::json!({
                "timestamp": "t", "eval_id": format!("c{seq}"), "dataset": "d", "target": "t",
                "attempt": 1, "execution_status": "ok", "score": score, "verdict": "pass",
                "hits": [], "misses": [], "candidate_answer": "", "evaluator_results": []
            }))
            .expect("record");
            r.add(&record, seq as u64);
        }
        r
    }

    fn listed(r: &Ranking) -> (Vec<String>, Vec<String>) {
        let (top, bottom) = r.sizes();
        let ids = |list: &[Entry]| list.iter().map(|e| e.id.clone()).collect();
        (ids(&r.best[..top]), ids(&r.worst[..bottom]))
    }

    #[test]
    fn no_case_is_both_top_and_bottom() {
        let cases: &[(&[f64], &[&str], &[&str])] = &[
            (&[0.5], &["c0"], &[]),
            (&[0.5, 0.9], &["c1"], &["c0"]),
            (&[0.5, 0.9, 0.1], &["c1", "c0"], &["c2"]),
            (&[1.0, 1.0, 1.0, 1.0], &["c0", "c1"], &["c3", "c2"]),
            (&[1.0; 6], &["c0", "c1", "c2"], &["c5", "c4", "c3"]),
            (&[1.0; 9], &["c0", "c1", "c2"], &["c8", "c7", "c6"]),
            (
                &[0.5, 0.9, 0.1, 0.9, 0.7, 0.3, 0.3],
                &["c1", "c3", "c4"],
                &["c2", "c6", "c5"],
            ),
        ];
        let owned = |ids: &[&str]| ids.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        for (scores, top, bottom) in cases {
            let (t, b) = listed(&ranking(scores));
            assert_eq!((&t, &b), (&owned(top), &owned(bottom)), "{scores:?}");
            assert!(t.iter().all(|id| !b.contains(id)), "{scores:?}");
        }
    }
}
