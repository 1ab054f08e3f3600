//! Jobs from a plan: each case once per target of its suite (a matrix) and per repeat, less the
//! ones a selection leaves out (`--shard`, `--resume`, `--rerun-failed`). Jobs are made lazily,
//! case by case, so a JSONL dataset is still read as the run consumes it.

use std::sync::Arc;

use super::Job;
use crate::load::{LoadedCase, LoadedSuite};
use crate::providers::ResolvedTarget;

/// What identifies one job, and the record it becomes: the case (dataset and id), the target
/// and the repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JobKey<'a> {
    pub dataset: &'a str,
    pub eval_id: &'a str,
    pub target: &'a str,
    /// 1 to the number of repeats (1 without repeats).
    pub trial: u32,
}

/// Whether a job runs.
pub type JobFilter = Arc<dyn Fn(&JobKey<'_>) -> bool + Send + Sync>;

/// How cases become jobs.
#[derive(Clone, Default)]
pub struct Expansion {
    /// Runs of each case against each target (`--repeat`); 0 and 1 both mean once.
    pub repeat: u32,
    /// Leaves jobs out; `None` runs them all.
    pub filter: Option<JobFilter>,
}

impl std::fmt::Debug for Expansion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expansion")
            .field("repeat", &self.repeat)
            .field("filter", &self.filter.is_some())
            .finish()
    }
}

impl Expansion {
    /// Runs of each case against each target.
    pub fn trials(&self) -> u32 {
        self.repeat.max(1)
    }

    /// The `trial` a record carries: its number when the run repeats cases, else none (the
    /// records of a plain run look as they always did).
    fn trial_field(&self, trial: u32) -> Option<u32> {
        (self.repeat > 1).then_some(trial)
    }

    fn keeps(&self, key: &JobKey<'_>) -> bool {
        self.filter.as_ref().is_none_or(|f| f(key))
    }

    /// How many jobs `suites` make. Without a filter the counts of the suites suffice; with one,
    /// every case is read once more to ask it.
    pub fn count(&self, suites: &[(LoadedSuite, Vec<Arc<ResolvedTarget>>)]) -> usize {
        let trials = self.trials() as usize;
        if self.filter.is_none() {
            return suites
                .iter()
                .map(|(s, t)| (s.case_count * t.len() - left_out(s, t)) * trials)
                .sum();
        }
        let mut n = 0;
        for (suite, targets) in suites {
            for loaded in suite.cases() {
                for target in targets.iter().filter(|t| loaded.case.runs_on(&t.name)) {
                    for trial in 1..=self.trials() {
                        let key = JobKey {
                            dataset: &loaded.case.dataset,
                            eval_id: &loaded.case.id,
                            target: &target.name,
                            trial,
                        };
                        n += usize::from(self.keeps(&key));
                    }
                }
            }
        }
        n
    }
}

/// The (case, target) pairs of `suite` a case's `excluded_targets` leave out (only cases held
/// in memory have any: a promptfoo config's).
fn left_out(suite: &LoadedSuite, targets: &[Arc<ResolvedTarget>]) -> usize {
    suite
        .cases
        .iter()
        .filter(|c| c.case.excluded_targets.is_some())
        .map(|c| targets.iter().filter(|t| !c.case.runs_on(&t.name)).count())
        .sum()
}

/// The jobs of `suites` in plan order: suite by suite, case by case in file order, then each
/// target in order, then each repeat. A suite whose cases depend on others runs in waves: its
/// jobs are made at once and put in wave order (`docs/workspaces.md#dependencies`).
pub fn expand(
    suites: Vec<(LoadedSuite, Vec<Arc<ResolvedTarget>>)>,
    expansion: Expansion,
) -> impl Iterator<Item = Job> + Send {
    let expansion = Arc::new(expansion);
    suites.into_iter().flat_map(move |(suite, targets)| {
        let expansion = expansion.clone();
        let waves = suite.cases.iter().any(|c| c.case.dependencies.is_some());
        let jobs = suite
            .into_cases()
            .flat_map(move |loaded| case_jobs(loaded, &targets, &expansion));
        if waves {
            Box::new(super::waves::link(jobs.collect()).into_iter()) as Box<dyn Iterator<Item = Job> + Send>
        } else {
            Box::new(jobs)
        }
    })
}

/// The jobs of one case: each target, each repeat, less those the filter leaves out.
fn case_jobs(loaded: LoadedCase, targets: &[Arc<ResolvedTarget>], expansion: &Expansion) -> Vec<Job> {
    let mut kept: Vec<(&Arc<ResolvedTarget>, u32)> = Vec::new();
    for target in targets.iter().filter(|t| loaded.case.runs_on(&t.name)) {
        for trial in 1..=expansion.trials() {
            let key = JobKey {
                dataset: &loaded.case.dataset,
                eval_id: &loaded.case.id,
                target: &target.name,
                trial,
            };
            if expansion.keeps(&key) {
                kept.push((target, trial));
            }
        }
    }
    // The last job takes the case itself: a plain run clones nothing.
    let mut jobs = Vec::with_capacity(kept.len());
    let mut case = Some(loaded.case);
    let last = kept.len().saturating_sub(1);
    for (i, (target, trial)) in kept.into_iter().enumerate() {
        let case = if i == last { case.take() } else { case.clone() };
        if let Some(case) = case {
            jobs.push(Job {
                case,
                graders: loaded.graders.clone(),
                turn_graders: loaded.turn_graders.clone(),
                target: target.clone(),
                trial: expansion.trial_field(trial),
                links: None,
            });
        }
    }
    jobs
}
