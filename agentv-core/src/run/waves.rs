//! Cases that depend on others (`depends_on`, `docs/workspaces.md#dependencies`): a suite's jobs
//! run wave by wave per target and repeat, and a case whose dependency ended in an execution
//! error is skipped, failed or run as its `on_dependency_failure` says.
//!
//! Jobs are put in wave order, so every job only ever waits for jobs that started before it:
//! the earliest unfinished job never waits, and the run cannot deadlock however few workers it
//! has. A job that never finishes (interrupted, over budget) drops its sender, which its
//! dependants read as a failure.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::watch;

use super::Job;
use crate::model::{ExecutionStatus, OnDependencyFailure};

/// What a job of a suite with dependencies waits for, and how it tells its dependants it is
/// done.
#[derive(Debug)]
pub struct Links {
    /// `Some(true)` once the job ended in an execution error, `Some(false)` once it ended
    /// otherwise.
    done: watch::Sender<Option<bool>>,
    waits: Vec<Wait>,
    policy: OnDependencyFailure,
}

#[derive(Debug)]
struct Wait {
    id: String,
    done: watch::Receiver<Option<bool>>,
    /// A dependency of the job (its failure matters), not only a job of an earlier wave.
    dependency: bool,
}

impl Links {
    /// Waits until the jobs of the wave before and every dependency have finished; the ids of
    /// the dependencies that failed (or never finished), in `depends_on` order.
    pub async fn wait(&self) -> Vec<String> {
        let mut failed = Vec::new();
        for wait in &self.waits {
            let mut done = wait.done.clone();
            let bad = match done.wait_for(Option::is_some).await {
                Ok(state) => *state == Some(true),
                Err(_) => true,
            };
            if bad && wait.dependency {
                failed.push(wait.id.clone());
            }
        }
        failed
    }

    /// Tells the dependants how the job ended.
    pub fn finish(&self, status: ExecutionStatus) {
        let _ = self.done.send(Some(status == ExecutionStatus::ExecutionError));
    }

    /// What the job does after its dependencies `failed`: `None` runs it, else the error
    /// message of its record.
    pub fn blocked(&self, failed: &[String]) -> Option<String> {
        let prefix = match (failed.is_empty(), self.policy) {
            (true, _) | (false, OnDependencyFailure::Run) => return None,
            (false, OnDependencyFailure::Skip) => "Skipped",
            (false, OnDependencyFailure::Fail) => "Failed",
        };
        Some(format!("{prefix}: dependency failed ({})", failed.join(", ")))
    }
}

/// The jobs of one suite in wave order (file order within a wave), each linked to what it
/// waits for among the jobs of the same target and repeat. Jobs without a wave are kept as
/// they are.
pub fn link(mut jobs: Vec<Job>) -> Vec<Job> {
    let wave = |job: &Job| job.case.dependencies.as_ref().map_or(0, |d| d.wave);
    jobs.sort_by_key(wave);
    type Group = (String, Option<u32>);
    type Done = watch::Receiver<Option<bool>>;
    // Per group: each job's receiver by id, and the receivers of each wave.
    let mut by_id: HashMap<Group, HashMap<String, Done>> = HashMap::new();
    let mut by_wave: HashMap<Group, Vec<Vec<(String, Done)>>> = HashMap::new();
    for job in &mut jobs {
        let Some(deps) = job.case.dependencies.clone() else {
            continue;
        };
        let group = (job.target.name.clone(), job.trial);
        let ids = by_id.entry(group.clone()).or_default();
        let waves = by_wave.entry(group).or_default();
        let mut waits: Vec<Wait> = deps
            .on
            .iter()
            .filter_map(|id| {
                ids.get(id).map(|done| Wait {
                    id: id.clone(),
                    done: done.clone(),
                    dependency: true,
                })
            })
            .collect();
        let previous = (deps.wave as usize).checked_sub(1).and_then(|w| waves.get(w));
        for (id, done) in previous.into_iter().flatten() {
            if !deps.on.contains(id) {
                waits.push(Wait {
                    id: id.clone(),
                    done: done.clone(),
                    dependency: false,
                });
            }
        }
        let (tx, rx) = watch::channel(None);
        ids.insert(job.case.id.clone(), rx.clone());
        let w = deps.wave as usize;
        if waves.len() <= w {
            waves.resize_with(w + 1, Vec::new);
        }
        waves[w].push((job.case.id.clone(), rx));
        job.links = Some(Arc::new(Links {
            done: tx,
            waits,
            policy: deps.on_failure,
        }));
    }
    jobs
}
