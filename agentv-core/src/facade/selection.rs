//! Which jobs a run makes of its suites: every case against every target of its suite, each
//! repeated, less what `--shard`, `--rerun-failed` and `--resume` leave out
//! (`docs/running.md`).

use std::collections::HashSet;
use std::sync::Arc;

use super::shard::{CaseId, Shard, members, selection_digest};
use crate::load::LoadedSuite;
use crate::providers::ResolvedTarget;
use crate::report::{Prior, ShardInfo};
use crate::run::{Expansion, JobFilter, JobKey};

/// What to leave out.
#[derive(Default)]
pub(crate) struct Choice {
    pub repeat: u32,
    pub shard: Option<Shard>,
    /// `--rerun-failed`: only the cases that did not pass there.
    pub rerun: Option<Arc<Prior>>,
    /// `--resume`: not the jobs complete there.
    pub resume: Option<Arc<Prior>>,
}

/// The jobs chosen.
pub(crate) struct Selection {
    pub expansion: Expansion,
    /// Jobs to run now.
    pub to_run: usize,
    /// Records the results file holds once the selection has run (`to_run` plus what a
    /// resumed file already holds).
    pub planned: usize,
    pub shard: Option<ShardInfo>,
    /// Cases that share a dataset and an id (in different files): reruns, resumes and merges
    /// cannot tell them apart.
    pub ambiguous: Vec<(String, String)>,
}

type Suites = [(LoadedSuite, Vec<Arc<ResolvedTarget>>)];

/// A case of a suite: the suite's index, the case, and the targets it does not run on.
type SelectedCase = (usize, CaseId, Option<Arc<Vec<String>>>);

/// Chooses the jobs of `suites`. Without a shard, a rerun or a resume, nothing is read again;
/// otherwise every case's dataset and id are read once (a JSONL dataset once more).
pub(crate) fn select(suites: &Suites, choice: &Choice) -> Selection {
    let plain = Expansion {
        repeat: choice.repeat,
        filter: None,
    };
    if choice.shard.is_none() && choice.rerun.is_none() && choice.resume.is_none() {
        let n = plain.count(suites);
        return Selection {
            expansion: plain,
            to_run: n,
            planned: n,
            shard: None,
            ambiguous: Vec::new(),
        };
    }
    let cases: Vec<SelectedCase> = suites
        .iter()
        .enumerate()
        .flat_map(|(i, (suite, _))| {
            suite
                .cases()
                .map(move |c| (i, (c.case.dataset.clone(), c.case.id), c.case.excluded_targets))
        })
        .collect();
    let ambiguous = duplicates(cases.iter().map(|(_, c, _)| c));
    let all: Vec<CaseId> = cases.iter().map(|(_, c, _)| c.clone()).collect();
    let shard_set: Option<Arc<HashSet<(String, String)>>> = choice.shard.map(|shard| {
        Arc::new(
            members(&all, shard)
                .into_iter()
                .map(|(d, id)| (d.to_string(), id))
                .collect(),
        )
    });
    let failed = choice.rerun.as_ref().map(|p| Arc::new(p.failed_cases()));
    let base: JobFilter = Arc::new(move |k: &JobKey<'_>| {
        let key = || (k.dataset.to_owned(), k.eval_id.to_owned());
        shard_set.as_ref().is_none_or(|s| s.contains(&key()))
            && failed
                .as_ref()
                .is_none_or(|f| f.contains(&(k.dataset.to_owned(), k.eval_id.to_owned(), k.target.to_owned())))
    });
    let (planned, to_run) = count_jobs(suites, &cases, plain.trials(), &base, choice);
    let filter: JobFilter = match choice.resume.clone() {
        None => base,
        Some(prior) => {
            Arc::new(move |k: &JobKey<'_>| base(k) && !prior.is_complete(k.dataset, k.eval_id, k.target, k.trial))
        }
    };
    Selection {
        expansion: Expansion {
            repeat: choice.repeat,
            filter: Some(filter),
        },
        to_run,
        planned,
        shard: choice.shard.map(|s| ShardInfo {
            index: s.index,
            count: s.count,
            selected_cases: all.len(),
            selection_digest: selection_digest(&all),
        }),
        ambiguous,
    }
}

/// How many jobs of `cases` the filter keeps (`planned`), and how many of those a resumed
/// results file does not already hold (`to_run`).
fn count_jobs(
    suites: &Suites,
    cases: &[SelectedCase],
    trials: u32,
    keep: &JobFilter,
    choice: &Choice,
) -> (usize, usize) {
    let (mut planned, mut to_run) = (0, 0);
    for (suite, (dataset, id), excluded) in cases {
        let runs = |name: &str| excluded.as_deref().is_none_or(|ex| !ex.iter().any(|t| t == name));
        for target in suites[*suite].1.iter().filter(|t| runs(&t.name)) {
            for trial in 1..=trials {
                let key = JobKey {
                    dataset,
                    eval_id: id,
                    target: &target.name,
                    trial,
                };
                if keep(&key) {
                    planned += 1;
                    let done = choice
                        .resume
                        .as_ref()
                        .is_some_and(|p| p.is_complete(dataset, id, &target.name, trial));
                    to_run += usize::from(!done);
                }
            }
        }
    }
    (planned, to_run)
}

/// Every (dataset, id) seen more than once, once each, in first-seen order.
fn duplicates<'a>(cases: impl Iterator<Item = &'a CaseId>) -> Vec<(String, String)> {
    let mut seen: HashSet<&CaseId> = HashSet::new();
    let mut out: Vec<(String, String)> = Vec::new();
    for c in cases {
        if !seen.insert(c) {
            let pair = (c.0.to_string(), c.1.clone());
            if !out.contains(&pair) {
                out.push(pair);
            }
        }
    }
    out
}
