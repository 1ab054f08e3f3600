//! Two runs side by side: per-case score deltas, counts of what changed, the mean delta with its
//! confidence interval, and the regression gates of `agentv compare`
//! (`docs/architecture.md#exit-codes`: a failed gate exits 1). `docs/results.md` defines every rule
//! here in prose.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, RandomState};

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
    /// The record's `trial` (with `--repeat`).
    pub trial: Option<u32>,
    pub score: f64,
    pub status: ExecutionStatus,
}

impl From<&EvaluationRecord> for Entry {
    fn from(r: &EvaluationRecord) -> Self {
        Self {
            eval_id: r.eval_id.clone(),
            target: r.target.clone(),
            dataset: r.dataset.clone(),
            trial: r.trial,
            score: r.score,
            status: r.execution_status,
        }
    }
}

pub use agentv_eval_sdk::compare::{Change, CompareCounts, ErroredPair, MatchBy, Pair, Unmatched};

/// One record of a run, compactly: its id is a range of one shared text, its dataset and target
/// indices into a name table, so a million records cost a few dozen bytes each.
#[derive(Debug, Clone)]
struct Slot {
    /// Where the eval id is in the ids text.
    id_at: usize,
    id_len: usize,
    dataset: u32,
    target: u32,
    trial: Option<u32>,
    score: f64,
    status: ExecutionStatus,
}

/// Datasets and targets, each stored once.
#[derive(Debug, Clone, Default)]
struct Names {
    list: Vec<Box<str>>,
    index: HashMap<Box<str>, u32>,
}

impl Names {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = u32::try_from(self.list.len()).unwrap_or(u32::MAX);
        self.list.push(name.into());
        self.index.insert(name.into(), id);
        id
    }

    fn get(&self, id: u32) -> &str {
        self.list.get(id as usize).map_or("", |n| n)
    }
}

/// A matched pair: indices into the base and candidate slots.
#[derive(Debug, Clone, Copy)]
struct Matched {
    base: u32,
    candidate: u32,
    delta: f64,
    change: Change,
}

/// Builds a [`Comparison`] from the records of the two runs, each run's records given once
/// (the last line of each record: `super::latest`).
#[derive(Debug, Default)]
pub struct ComparisonBuilder {
    names: Names,
    /// Every eval id, one after the other.
    ids: String,
    base: Vec<Slot>,
    candidate: Vec<Slot>,
}

impl ComparisonBuilder {
    pub fn base(&mut self, e: &Entry) {
        let slot = self.slot(e);
        self.base.push(slot);
    }

    pub fn candidate(&mut self, e: &Entry) {
        let slot = self.slot(e);
        self.candidate.push(slot);
    }

    fn slot(&mut self, e: &Entry) -> Slot {
        let id_at = self.ids.len();
        self.ids.push_str(&e.eval_id);
        Slot {
            id_at,
            id_len: e.eval_id.len(),
            dataset: self.names.id(&e.dataset),
            target: self.names.id(&e.target),
            trial: e.trial,
            score: e.score,
            status: e.status,
        }
    }

    /// The comparison, with deltas within ± `epsilon` unchanged.
    pub fn finish(self, epsilon: f64) -> Comparison {
        Comparison::build(self, epsilon)
    }

    /// Cases match by id and target, or by id alone when each run has one target and they
    /// differ (one model against another).
    fn match_by(&self) -> MatchBy {
        let targets = |slots: &[Slot]| slots.iter().map(|s| s.target).collect::<BTreeSet<u32>>();
        let (base_targets, candidate_targets) = (targets(&self.base), targets(&self.candidate));
        if base_targets.len() == 1 && candidate_targets.len() == 1 && base_targets != candidate_targets {
            MatchBy::Id
        } else {
            MatchBy::IdAndTarget
        }
    }

    /// For each base slot, in order, the candidate slot it matches.
    fn matches(&self, match_by: MatchBy) -> Vec<Option<u32>> {
        let state = RandomState::new();
        let id = |s: &Slot| &self.ids[s.id_at..s.id_at + s.id_len];
        let key = |s: &Slot| {
            let target = if match_by == MatchBy::IdAndTarget { s.target } else { 0 };
            state.hash_one((s.dataset, id(s), target, s.trial.unwrap_or(1)))
        };
        // Hash → the last candidate with it, each chained to the previous one with the same
        // hash (two keys sharing a hash are told apart by comparing the slots).
        const END: u32 = u32::MAX;
        let mut head: HashMap<u64, u32> = HashMap::with_capacity(self.candidate.len());
        let mut next: Vec<u32> = vec![END; self.candidate.len()];
        for (i, s) in self.candidate.iter().enumerate() {
            if let Some(previous) = head.insert(key(s), i as u32) {
                next[i] = previous;
            }
        }
        let same = |x: &Slot, y: &Slot| {
            x.dataset == y.dataset
                && id(x) == id(y)
                && x.trial.unwrap_or(1) == y.trial.unwrap_or(1)
                && (match_by == MatchBy::Id || x.target == y.target)
        };
        let find = |s: &Slot| {
            let mut at = head.get(&key(s)).copied().unwrap_or(END);
            while at != END && !same(s, &self.candidate[at as usize]) {
                at = next[at as usize];
            }
            (at != END).then_some(at)
        };
        self.base.iter().map(find).collect()
    }
}

/// The comparison of a base run with a candidate run.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub match_by: MatchBy,
    pub epsilon: f64,
    pub counts: CompareCounts,
    /// Mean of the deltas of the graded pairs, with its paired 95 % t interval.
    pub mean_delta: Option<MeanCi>,
    names: Names,
    ids: String,
    base: Vec<Slot>,
    candidate: Vec<Slot>,
    /// Graded pairs, in base-file order.
    pairs: Vec<Matched>,
    /// Matched pairs not graded in one run or both.
    errors: Vec<(u32, u32)>,
    /// In the candidate only, in its order.
    added: Vec<u32>,
    /// In the base only, in its order.
    removed: Vec<u32>,
}

impl Comparison {
    /// Compares `base` with `candidate`, each holding a record once.
    pub fn new(base: Vec<Entry>, candidate: Vec<Entry>, epsilon: f64) -> Self {
        let mut builder = ComparisonBuilder::default();
        for e in &base {
            builder.base(e);
        }
        for e in &candidate {
            builder.candidate(e);
        }
        builder.finish(epsilon)
    }

    fn build(b: ComparisonBuilder, epsilon: f64) -> Self {
        let match_by = b.match_by();
        let found = b.matches(match_by);
        let mut matched_candidate = vec![false; b.candidate.len()];
        let (mut pairs, mut errors, mut removed) = (Vec::new(), Vec::new(), Vec::new());
        for (bi, (s, found)) in b.base.iter().zip(found).enumerate() {
            let Some(ci) = found else {
                removed.push(bi as u32);
                continue;
            };
            matched_candidate[ci as usize] = true;
            let c = &b.candidate[ci as usize];
            if s.status != ExecutionStatus::Ok || c.status != ExecutionStatus::Ok {
                errors.push((bi as u32, ci));
                continue;
            }
            let delta = c.score - s.score;
            pairs.push(Matched {
                base: bi as u32,
                candidate: ci,
                delta,
                change: classify(delta, epsilon),
            });
        }
        let added = (0..b.candidate.len() as u32)
            .filter(|&ci| !matched_candidate[ci as usize])
            .collect();
        let deltas: Vec<f64> = pairs.iter().map(|p| p.delta).collect();
        let mut out = Comparison {
            match_by,
            epsilon,
            counts: CompareCounts::default(),
            mean_delta: mean_ci95(&deltas),
            pairs,
            errors,
            added,
            removed,
            names: b.names,
            ids: b.ids,
            base: b.base,
            candidate: b.candidate,
        };
        out.counts = out.count();
        out
    }

    /// The counts of the matched, graded, added and removed cases and of the changes.
    fn count(&self) -> CompareCounts {
        let mut counts = CompareCounts {
            base_cases: self.base.len(),
            candidate_cases: self.candidate.len(),
            matched: self.pairs.len() + self.errors.len(),
            errors: self.errors.len(),
            added: self.added.len(),
            removed: self.removed.len(),
            missing: self
                .removed
                .iter()
                .filter(|&&i| self.base[i as usize].status == ExecutionStatus::Ok)
                .count(),
            ..CompareCounts::default()
        };
        for p in &self.pairs {
            match p.change {
                Change::Improved => counts.improved += 1,
                Change::Regressed => counts.regressed += 1,
                Change::Unchanged => counts.unchanged += 1,
            }
        }
        counts
    }

    fn id_of(&self, s: &Slot) -> &str {
        &self.ids[s.id_at..s.id_at + s.id_len]
    }

    fn target_of(&self, b: &Slot, c: &Slot) -> Cow<'_, str> {
        match self.match_by {
            MatchBy::IdAndTarget => Cow::Borrowed(self.names.get(b.target)),
            MatchBy::Id => Cow::Owned(format!("{} → {}", self.names.get(b.target), self.names.get(c.target))),
        }
    }

    fn pair(&self, m: &Matched) -> Pair<'_> {
        let (b, c) = (&self.base[m.base as usize], &self.candidate[m.candidate as usize]);
        Pair {
            eval_id: Cow::Borrowed(self.id_of(b)),
            target: self.target_of(b, c),
            dataset: Cow::Borrowed(self.names.get(b.dataset)),
            trial: b.trial,
            base: b.score,
            candidate: c.score,
            delta: m.delta,
            change: m.change,
        }
    }

    fn unmatched<'a>(&'a self, s: &'a Slot) -> Unmatched<'a> {
        Unmatched {
            eval_id: Cow::Borrowed(self.id_of(s)),
            target: Cow::Borrowed(self.names.get(s.target)),
            dataset: Cow::Borrowed(self.names.get(s.dataset)),
            trial: s.trial,
            score: s.score,
            status: s.status,
        }
    }

    /// Graded pairs, in base-file order.
    pub fn pairs(&self) -> impl Iterator<Item = Pair<'_>> + '_ {
        self.pairs.iter().map(|m| self.pair(m))
    }

    /// Matched cases not graded in one run or both, in base-file order.
    pub fn errors(&self) -> impl Iterator<Item = ErroredPair<'_>> + '_ {
        self.errors.iter().map(|&(bi, ci)| {
            let (b, c) = (&self.base[bi as usize], &self.candidate[ci as usize]);
            ErroredPair {
                eval_id: Cow::Borrowed(self.id_of(b)),
                target: self.target_of(b, c),
                trial: b.trial,
                base_status: b.status,
                candidate_status: c.status,
            }
        })
    }

    /// Cases in the candidate only, in its order.
    pub fn added(&self) -> impl Iterator<Item = Unmatched<'_>> + '_ {
        self.added.iter().map(|&i| self.unmatched(&self.candidate[i as usize]))
    }

    /// Cases in the base only, in its order.
    pub fn removed(&self) -> impl Iterator<Item = Unmatched<'_>> + '_ {
        self.removed.iter().map(|&i| self.unmatched(&self.base[i as usize]))
    }

    /// Cases the base graded that the candidate does not hold.
    pub fn missing(&self) -> impl Iterator<Item = Unmatched<'_>> + '_ {
        self.removed().filter(|u| u.status == ExecutionStatus::Ok)
    }

    /// The `n` pairs that dropped the most, worst first (regressed pairs only).
    pub fn largest_regressions(&self, n: usize) -> Vec<Pair<'_>> {
        self.largest(n, Change::Regressed)
    }

    /// The `n` pairs that rose the most, best first (improved pairs only).
    pub fn largest_improvements(&self, n: usize) -> Vec<Pair<'_>> {
        self.largest(n, Change::Improved)
    }

    fn largest(&self, n: usize, change: Change) -> Vec<Pair<'_>> {
        let mut chosen: Vec<&Matched> = self.pairs.iter().filter(|p| p.change == change).collect();
        let size = |m: &Matched| if change == Change::Regressed { m.delta } else { -m.delta };
        chosen.sort_by(|a, b| {
            size(a).total_cmp(&size(b)).then_with(|| {
                self.id_of(&self.base[a.base as usize])
                    .cmp(self.id_of(&self.base[b.base as usize]))
            })
        });
        chosen.truncate(n);
        chosen.into_iter().map(|m| self.pair(m)).collect()
    }

    /// Matched cases graded in the base run that the candidate could not grade.
    pub fn broken(&self) -> impl Iterator<Item = ErroredPair<'_>> + '_ {
        self.errors().filter(ErroredPair::broken)
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
    /// `--allow-missing`: a case graded in the base and absent from the candidate does not
    /// fail the gate.
    pub allow_missing: bool,
}

/// How many case ids a gate failure names.
const NAMED: usize = 3;

impl Gate {
    pub fn is_set(&self) -> bool {
        self.max_regression.is_some() || self.fail_on_regression
    }

    /// Why the gate fails (empty when it passes or is not set). Every gate also fails on a case
    /// the base graded that the candidate could not grade or does not hold (unless
    /// `allow_missing`), and when no case matched: a gate passes only on the cases it was
    /// given, so it must see all of them (`docs/results.md#agentv-compare-base-candidate`).
    pub fn failures(&self, c: &Comparison) -> Vec<String> {
        let mut out = Vec::new();
        if !self.is_set() {
            return out;
        }
        if let Some(limit) = self.max_regression {
            let over: Vec<Pair<'_>> = c
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
        if !self.allow_missing && c.counts.missing > 0 {
            let named: Vec<String> = c.missing().take(NAMED).map(|u| u.eval_id.into_owned()).collect();
            let more = if c.counts.missing > NAMED { ", …" } else { "" };
            out.push(format!(
                "{} case(s) graded in the base run are missing from the candidate ({}{more}); pass --allow-missing if they were left out on purpose",
                c.counts.missing,
                named.join(", ")
            ));
        }
        if c.counts.matched == 0 {
            out.push("no case of the base run is in the candidate run: nothing to compare".to_owned());
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
            trial: None,
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
        assert_eq!(c.added().next().expect("added").eval_id, "new");
        assert_eq!(c.removed().next().expect("removed").eval_id, "gone");
        assert_eq!(c.largest_regressions(5)[0].eval_id, "down");
        assert_eq!(c.broken().count(), 1);
    }

    #[test]
    fn one_target_each_side_is_matched_by_id() {
        let c = Comparison::new(vec![e("a", "gpt", 0.5)], vec![e("a", "claude", 0.75)], DEFAULT_EPSILON);
        assert_eq!(c.match_by, MatchBy::Id);
        let pair = c.pairs().next().expect("a pair");
        assert_eq!(pair.target, "gpt → claude");
        assert_eq!(pair.delta, 0.25);
    }

    #[test]
    fn cases_match_by_dataset_and_trial_too() {
        let trial = |id: &str, n: u32, score: f64| Entry {
            trial: Some(n),
            ..e(id, "m", score)
        };
        let other_dataset = Entry {
            dataset: "other".into(),
            ..e("a", "m", 0.2)
        };
        let c = Comparison::new(
            vec![trial("a", 1, 0.5), trial("a", 2, 0.5), other_dataset.clone()],
            vec![trial("a", 2, 0.9), e("a", "m", 0.1), other_dataset],
            DEFAULT_EPSILON,
        );
        let pairs: Vec<(Option<u32>, String, f64)> =
            c.pairs().map(|p| (p.trial, p.dataset.into_owned(), p.delta)).collect();
        assert_eq!(pairs.len(), 3, "{pairs:?}");
        // Trial 1 and no trial are the same record.
        assert!(
            (pairs[0].2 - -0.4).abs() < 1e-9 && (pairs[1].2 - 0.4).abs() < 1e-9,
            "{pairs:?}"
        );
        assert_eq!(pairs[2], (None, "other".to_owned(), 0.0));
    }

    #[test]
    fn gates_fail_on_what_they_promise() {
        let base: Vec<Entry> = (0..10).map(|i| e(&format!("c{i}"), "m", 0.9)).collect();
        let small_drop: Vec<Entry> = (0..10).map(|i| e(&format!("c{i}"), "m", 0.85)).collect();
        let c = Comparison::new(base.clone(), small_drop, DEFAULT_EPSILON);
        let max = Gate {
            max_regression: Some(0.1),
            ..Gate::default()
        };
        let mean = Gate {
            fail_on_regression: true,
            ..Gate::default()
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

    #[test]
    fn gate_counts_every_case_missing_from_the_candidate() {
        let mut base: Vec<Entry> = (0..25).map(|i| e(&format!("c{i:02}"), "m", 0.9)).collect();
        base.push(errored("never-graded", "m"));
        let candidate = vec![e("c00", "m", 0.9)];
        let c = Comparison::new(base, candidate, DEFAULT_EPSILON);
        assert_eq!((c.counts.matched, c.counts.removed, c.counts.missing), (1, 25, 24));
        for gate in [
            Gate {
                max_regression: Some(0.2),
                ..Gate::default()
            },
            Gate {
                fail_on_regression: true,
                ..Gate::default()
            },
        ] {
            assert_eq!(
                gate.failures(&c),
                [
                    "24 case(s) graded in the base run are missing from the candidate (c01, c02, c03, …); pass --allow-missing if they were left out on purpose"
                ],
                "{gate:?}"
            );
            let allowed = Gate {
                allow_missing: true,
                ..gate
            };
            assert!(allowed.failures(&c).is_empty(), "{allowed:?}");
        }
        assert!(Gate::default().failures(&c).is_empty(), "no gate, no failure");
        let nothing = Comparison::new(vec![e("a", "m", 1.0)], vec![e("b", "m", 1.0)], DEFAULT_EPSILON);
        let allowed = Gate {
            max_regression: Some(0.2),
            allow_missing: true,
            ..Gate::default()
        };
        assert_eq!(
            allowed.failures(&nothing),
            ["no case of the base run is in the candidate run: nothing to compare"]
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
            for p in cmp.pairs() {
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
