//! Two runs side by side: per-case score deltas, counts of what changed, the mean delta with its
//! confidence interval, and the regression gates of `agentv compare`
//! (`docs/architecture.md#exit-codes`: a failed gate exits 1). `docs/results.md` defines every rule
//! here in prose.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use super::ci::{MeanCi, mean_ci95};
use crate::model::{EvaluationRecord, ExecutionStatus};

/// Deltas within ± this are "unchanged" by default: finer than any judge's resolution, coarser
/// than floating-point noise and the three decimals AgentV rounds to.
pub const DEFAULT_EPSILON: f64 = 0.001;

/// What `compare` keeps of one record: enough to match, score and name it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    pub eval_id: String,
    pub target: String,
    pub dataset: String,
    pub score: f64,
    pub status: ExecutionStatus,
}

impl From<&EvaluationRecord> for Entry {
    fn from(r: &EvaluationRecord) -> Self {
        Self {
            eval_id: r.eval_id.clone(),
            target: r.target.clone(),
            dataset: r.dataset.clone(),
            score: r.score,
            status: r.execution_status,
        }
    }
}

/// How cases of the two runs are paired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchBy {
    /// Same eval id and same target (the usual case: one system, two versions).
    IdAndTarget,
    /// Same eval id: each run has one target and they differ (two models compared).
    Id,
}

/// Where a matched case went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Improved,
    Regressed,
    Unchanged,
}

/// A case graded in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    pub eval_id: String,
    /// The target (`base → candidate` when matched by id alone).
    pub target: String,
    pub dataset: String,
    pub base: f64,
    pub candidate: f64,
    pub delta: f64,
    pub change: Change,
}

/// A matched case that could not be graded in one run or both: left out of the deltas.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErroredPair {
    pub eval_id: String,
    pub target: String,
    pub base_status: ExecutionStatus,
    pub candidate_status: ExecutionStatus,
}

impl ErroredPair {
    /// Graded in the base run, not in the candidate: the case's quality is now unknown.
    pub fn broken(&self) -> bool {
        self.base_status == ExecutionStatus::Ok && self.candidate_status != ExecutionStatus::Ok
    }
}

/// A case present in one run only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unmatched {
    pub eval_id: String,
    pub target: String,
    pub score: f64,
    pub status: ExecutionStatus,
}

/// Counts of [`Comparison`], as printed and as JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub base_cases: usize,
    pub candidate_cases: usize,
    pub matched: usize,
    pub improved: usize,
    pub regressed: usize,
    pub unchanged: usize,
    /// Matched, but not graded in one run or both.
    pub errors: usize,
    pub added: usize,
    pub removed: usize,
    /// Lines for a case already seen in the same file (the last one counts).
    pub base_duplicates: usize,
    pub candidate_duplicates: usize,
}

/// The comparison of a base run with a candidate run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub match_by: MatchBy,
    pub epsilon: f64,
    pub counts: Counts,
    /// Mean of the deltas of the graded pairs, with its paired 95 % t interval.
    pub mean_delta: Option<MeanCi>,
    /// Graded pairs, in base-file order.
    pub pairs: Vec<Pair>,
    pub errors: Vec<ErroredPair>,
    /// In the candidate only, in its order.
    pub added: Vec<Unmatched>,
    /// In the base only, in its order.
    pub removed: Vec<Unmatched>,
}

/// The last entry per key of one run, in first-seen order, and how many lines were repeats.
struct Run {
    entries: Vec<Entry>,
    duplicates: usize,
    targets: BTreeSet<String>,
}

impl Run {
    fn new(entries: Vec<Entry>) -> Self {
        let mut index: HashMap<(String, String), usize> = HashMap::new();
        let mut unique: Vec<Entry> = Vec::with_capacity(entries.len());
        let mut duplicates = 0;
        let mut targets = BTreeSet::new();
        for e in entries {
            targets.insert(e.target.clone());
            match index.get(&(e.eval_id.clone(), e.target.clone())) {
                Some(&i) => {
                    duplicates += 1;
                    unique[i] = e;
                }
                None => {
                    index.insert((e.eval_id.clone(), e.target.clone()), unique.len());
                    unique.push(e);
                }
            }
        }
        Self {
            entries: unique,
            duplicates,
            targets,
        }
    }
}

impl Comparison {
    /// Compares `base` with `candidate` (records in file order). Within a file the last record
    /// of a case wins: a re-run appended later is the newer result.
    pub fn new(base: Vec<Entry>, candidate: Vec<Entry>, epsilon: f64) -> Self {
        let base = Run::new(base);
        let candidate = Run::new(candidate);
        let match_by = if base.targets.len() == 1 && candidate.targets.len() == 1 && base.targets != candidate.targets {
            MatchBy::Id
        } else {
            MatchBy::IdAndTarget
        };
        let key = |e: &Entry| match match_by {
            MatchBy::IdAndTarget => (e.eval_id.clone(), e.target.clone()),
            MatchBy::Id => (e.eval_id.clone(), String::new()),
        };
        let mut in_candidate: HashMap<(String, String), usize> = HashMap::new();
        for (i, e) in candidate.entries.iter().enumerate() {
            in_candidate.insert(key(e), i);
        }
        let mut matched_candidate = vec![false; candidate.entries.len()];
        let mut out = Comparison {
            match_by,
            epsilon,
            counts: Counts {
                base_cases: base.entries.len(),
                candidate_cases: candidate.entries.len(),
                base_duplicates: base.duplicates,
                candidate_duplicates: candidate.duplicates,
                ..Counts::default()
            },
            mean_delta: None,
            pairs: Vec::new(),
            errors: Vec::new(),
            added: Vec::new(),
            removed: Vec::new(),
        };
        for b in &base.entries {
            let Some(&ci) = in_candidate.get(&key(b)) else {
                out.removed.push(unmatched(b));
                continue;
            };
            matched_candidate[ci] = true;
            let c = &candidate.entries[ci];
            let target = match match_by {
                MatchBy::IdAndTarget => b.target.clone(),
                MatchBy::Id => format!("{} → {}", b.target, c.target),
            };
            if b.status != ExecutionStatus::Ok || c.status != ExecutionStatus::Ok {
                out.errors.push(ErroredPair {
                    eval_id: b.eval_id.clone(),
                    target,
                    base_status: b.status,
                    candidate_status: c.status,
                });
                continue;
            }
            let delta = c.score - b.score;
            out.pairs.push(Pair {
                eval_id: b.eval_id.clone(),
                target,
                dataset: b.dataset.clone(),
                base: b.score,
                candidate: c.score,
                delta,
                change: classify(delta, epsilon),
            });
        }
        for (c, matched) in candidate.entries.iter().zip(&matched_candidate) {
            if !matched {
                out.added.push(unmatched(c));
            }
        }
        let counts = &mut out.counts;
        counts.matched = out.pairs.len() + out.errors.len();
        counts.errors = out.errors.len();
        counts.added = out.added.len();
        counts.removed = out.removed.len();
        for p in &out.pairs {
            match p.change {
                Change::Improved => counts.improved += 1,
                Change::Regressed => counts.regressed += 1,
                Change::Unchanged => counts.unchanged += 1,
            }
        }
        let deltas: Vec<f64> = out.pairs.iter().map(|p| p.delta).collect();
        out.mean_delta = mean_ci95(&deltas);
        out
    }

    /// The `n` pairs that dropped the most, worst first (regressed pairs only).
    pub fn largest_regressions(&self, n: usize) -> Vec<&Pair> {
        let mut worst: Vec<&Pair> = self.pairs.iter().filter(|p| p.change == Change::Regressed).collect();
        worst.sort_by(|a, b| a.delta.total_cmp(&b.delta).then_with(|| a.eval_id.cmp(&b.eval_id)));
        worst.truncate(n);
        worst
    }

    /// Matched cases graded in the base run that the candidate could not grade.
    pub fn broken(&self) -> impl Iterator<Item = &ErroredPair> {
        self.errors.iter().filter(|e| e.broken())
    }
}

fn unmatched(e: &Entry) -> Unmatched {
    Unmatched {
        eval_id: e.eval_id.clone(),
        target: e.target.clone(),
        score: e.score,
        status: e.status,
    }
}

/// `improved` above `epsilon`, `regressed` below `−epsilon`, else `unchanged`.
pub fn classify(delta: f64, epsilon: f64) -> Change {
    if delta > epsilon {
        Change::Improved
    } else if delta < -epsilon {
        Change::Regressed
    } else {
        Change::Unchanged
    }
}

/// The regression gates of `agentv compare`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Gate {
    /// `--max-regression D`: fail when a regressed case dropped by more than `D`.
    pub max_regression: Option<f64>,
    /// `--fail-on-regression`: fail when the mean delta is significantly below zero.
    pub fail_on_regression: bool,
}

impl Gate {
    pub fn is_set(&self) -> bool {
        self.max_regression.is_some() || self.fail_on_regression
    }

    /// Why the gate fails (empty when it passes or is not set). Both gates also fail on a case
    /// the base graded and the candidate could not: its quality is unknown, and a gate must not
    /// pass because a candidate broke.
    pub fn failures(&self, c: &Comparison) -> Vec<String> {
        let mut out = Vec::new();
        if !self.is_set() {
            return out;
        }
        if let Some(limit) = self.max_regression {
            let over: Vec<&Pair> = c
                .largest_regressions(usize::MAX)
                .into_iter()
                .filter(|p| -p.delta > limit)
                .collect();
            if let Some(worst) = over.first() {
                out.push(format!(
                    "{} case(s) dropped by more than {limit} (worst: {} by {:.3})",
                    over.len(),
                    worst.eval_id,
                    -worst.delta
                ));
            }
        }
        if self.fail_on_regression
            && let Some(m) = c.mean_delta
        {
            match m.interval {
                Some((low, high)) if high < 0.0 => out.push(format!(
                    "the mean delta {:+.3} is below 0 with 95 % confidence (CI {low:+.3} to {high:+.3}, n={})",
                    m.mean, m.n
                )),
                None if m.mean < -c.epsilon => out.push(format!(
                    "the only graded pair regressed (delta {:+.3}; no interval from one pair)",
                    m.mean
                )),
                _ => {}
            }
        }
        let broken = c.broken().count();
        if broken > 0 {
            out.push(format!(
                "{broken} case(s) graded in the base run could not be graded in the candidate"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn e(id: &str, target: &str, score: f64) -> Entry {
        Entry {
            eval_id: id.into(),
            target: target.into(),
            dataset: "d".into(),
            score,
            status: ExecutionStatus::Ok,
        }
    }

    fn errored(id: &str, target: &str) -> Entry {
        Entry {
            status: ExecutionStatus::ExecutionError,
            ..e(id, target, 0.0)
        }
    }

    #[test]
    fn cases_are_counted_by_where_they_went() {
        let base = vec![
            e("up", "m", 0.5),
            e("down", "m", 0.9),
            e("same", "m", 0.7),
            e("noise", "m", 0.7),
            e("gone", "m", 1.0),
            e("broke", "m", 1.0),
            e("up", "other", 0.1),
        ];
        let cand = vec![
            e("new", "m", 0.3),
            e("broke", "m", 0.0),
            e("up", "m", 0.8),
            e("down", "m", 0.4),
            e("same", "m", 0.7),
            e("noise", "m", 0.7005),
            e("up", "other", 0.1),
        ];
        let mut cand = cand;
        cand[1] = errored("broke", "m");
        let c = Comparison::new(base, cand, DEFAULT_EPSILON);
        assert_eq!(c.match_by, MatchBy::IdAndTarget);
        let n = c.counts;
        assert_eq!(
            (
                n.matched,
                n.improved,
                n.regressed,
                n.unchanged,
                n.errors,
                n.added,
                n.removed
            ),
            (6, 1, 1, 3, 1, 1, 1)
        );
        assert_eq!(c.added[0].eval_id, "new");
        assert_eq!(c.removed[0].eval_id, "gone");
        assert_eq!(c.largest_regressions(5)[0].eval_id, "down");
        assert_eq!(c.broken().count(), 1);
    }

    #[test]
    fn one_target_each_side_is_matched_by_id() {
        let c = Comparison::new(vec![e("a", "gpt", 0.5)], vec![e("a", "claude", 0.75)], DEFAULT_EPSILON);
        assert_eq!(c.match_by, MatchBy::Id);
        assert_eq!(c.pairs[0].target, "gpt → claude");
        assert_eq!(c.pairs[0].delta, 0.25);
    }

    #[test]
    fn the_last_line_of_a_repeated_case_counts() {
        let c = Comparison::new(
            vec![e("a", "m", 0.1), e("a", "m", 0.6)],
            vec![e("a", "m", 0.6)],
            DEFAULT_EPSILON,
        );
        assert_eq!(c.counts.base_duplicates, 1);
        assert_eq!(c.pairs[0].change, Change::Unchanged);
    }

    #[test]
    fn gates_fail_on_what_they_promise() {
        let base: Vec<Entry> = (0..10).map(|i| e(&format!("c{i}"), "m", 0.9)).collect();
        let small_drop: Vec<Entry> = (0..10).map(|i| e(&format!("c{i}"), "m", 0.85)).collect();
        let c = Comparison::new(base.clone(), small_drop, DEFAULT_EPSILON);
        let max = Gate {
            max_regression: Some(0.1),
            fail_on_regression: false,
        };
        let mean = Gate {
            max_regression: None,
            fail_on_regression: true,
        };
        assert!(max.failures(&c).is_empty(), "drops of 0.05 are within 0.1");
        let why = mean.failures(&c);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].starts_with("the mean delta -0.050 is below 0"), "{why:?}");

        let mut one_big = base.clone();
        one_big[3].score = 0.5;
        let c = Comparison::new(base.clone(), one_big, DEFAULT_EPSILON);
        assert_eq!(
            max.failures(&c),
            ["1 case(s) dropped by more than 0.1 (worst: c3 by 0.400)"]
        );
        assert!(mean.failures(&c).is_empty(), "one drop among ten is not significant");
        assert!(Gate::default().failures(&c).is_empty(), "no gate, no failure");

        let mut broken = base.clone();
        broken[0] = errored("c0", "m");
        let c = Comparison::new(base, broken, DEFAULT_EPSILON);
        assert_eq!(
            max.failures(&c),
            ["1 case(s) graded in the base run could not be graded in the candidate"]
        );
    }

    proptest! {
        #[test]
        fn counts_add_up_and_deltas_are_candidate_minus_base(
            scores in proptest::collection::vec((0.0f64..=1.0, 0.0f64..=1.0, any::<bool>(), any::<bool>()), 0..60),
        ) {
            let mut base = Vec::new();
            let mut cand = Vec::new();
            for (i, (b, c, in_base, in_cand)) in scores.iter().enumerate() {
                if *in_base { base.push(e(&format!("c{i}"), "m", *b)); }
                if *in_cand { cand.push(e(&format!("c{i}"), "m", *c)); }
            }
            let cmp = Comparison::new(base.clone(), cand.clone(), DEFAULT_EPSILON);
            let n = cmp.counts;
            prop_assert_eq!(n.improved + n.regressed + n.unchanged + n.errors, n.matched);
            prop_assert_eq!(n.matched + n.removed, base.len());
            prop_assert_eq!(n.matched + n.added, cand.len());
            for p in &cmp.pairs {
                prop_assert_eq!(p.delta, p.candidate - p.base);
                prop_assert_eq!(p.change, classify(p.delta, DEFAULT_EPSILON));
            }
            // Swapping the runs mirrors everything.
            let back = Comparison::new(cand, base, DEFAULT_EPSILON);
            prop_assert_eq!(back.counts.improved, n.regressed);
            prop_assert_eq!(back.counts.added, n.removed);
            if let (Some(a), Some(b)) = (cmp.mean_delta, back.mean_delta) {
                prop_assert!((a.mean + b.mean).abs() < 1e-9);
            }
        }
    }
}
