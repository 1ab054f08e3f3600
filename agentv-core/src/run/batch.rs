//! Batch mode (`docs/batch.md`): the cases of a target whose provider has a batch API are
//! answered by provider batch jobs before the cases run; their answers then go through the same
//! grading and results path as an online answer.
//!
//! Each case's request gets a custom id derived from its eval file, id and repeat, so results
//! are matched by id, never by order, and a resumed run finds the same ids again. Job ids are
//! written to the run's state file beside the results before any wait, so `--resume` reattaches
//! to jobs still running or finished instead of submitting (and paying for) them again. An item
//! that fails, or a job that fails or expires, leaves its cases to an online call, unless
//! `--batch=strict` makes them execution errors.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Interrupt, Job, Prefetched, RunObserver, RunSetup};
use crate::providers::batch::{encoded_len, split};
use crate::providers::{BatchApi, JobState, ProviderError, ResolvedTarget};

/// `--batch`: whether LLM targets answer through their provider's batch API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BatchMode {
    /// Only targets with `batch: true` (or `provider_batching: true`).
    #[default]
    Targets,
    /// Every target whose provider has a batch API; failed items are answered online.
    All,
    /// As `All`, and a failed item is an execution error instead of an online call.
    Strict,
}

/// The longest wait between two polls.
const LONGEST_POLL: Duration = Duration::from_secs(60);
/// Polls in a row that may fail before the job's cases are answered online.
const POLL_FAILURES: u32 = 10;

/// The batch jobs of a run, as written beside its results (`<results>.batches.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BatchState {
    pub jobs: Vec<JobRecord>,
}

/// One submitted job: who it is for and which items it holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobRecord {
    pub target: String,
    pub provider: String,
    pub id: String,
    pub submitted_at: String,
    pub custom_ids: Vec<String>,
    /// `judge` for a job of judge requests (`docs/batch.md#judges`); absent for a target's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// A batch state file (`--batch-state`) that cannot be read, with its path.
#[derive(Debug, thiserror::Error)]
pub enum BatchStateError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    Parse { path: PathBuf, source: serde_json::Error },
}

/// A job whose state could not be asked of its provider, [`POLL_FAILURES`] times in a row.
#[derive(Debug, thiserror::Error)]
#[error("cannot poll it ({0})")]
pub struct PollError(#[source] ProviderError);

impl BatchState {
    /// The run's batch state (`--batch-state`), or a fresh one when it has none or it
    /// cannot be read (with a warning: the jobs are submitted again).
    fn of_run(setup: &RunSetup, observer: &mut dyn RunObserver) -> Self {
        match setup.batch_state.as_deref().map(Self::load) {
            Some(Ok(state)) => state,
            Some(Err(e)) => {
                observer.warning(&format!("cannot read the batch state ({e}); submitting new jobs"));
                Self::default()
            }
            None => Self::default(),
        }
    }

    /// The state at `path`; none when there is no file (a first run).
    pub fn load(path: &Path) -> Result<Self, BatchStateError> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|source| BatchStateError::Parse {
                path: path.to_owned(),
                source,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(BatchStateError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Writes the state whole (a new file renamed over the old one): a crash leaves the old
    /// state or the new one, never half of one.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, path)
    }
}

/// Where the state of the run writing `results` lives.
pub fn state_path(results: &Path) -> PathBuf {
    let mut name = results.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".batches.json");
    results.with_file_name(name)
}

/// The custom id of `job`: stable across runs (eval file, dataset, id, repeat) and short.
pub fn custom_id(job: &Job) -> String {
    let mut h = Sha256::new();
    h.update(job.case.source.file.to_string_lossy().as_bytes());
    h.update([0]);
    h.update(job.case.dataset.as_bytes());
    h.update([0]);
    h.update(job.case.id.as_bytes());
    h.update([0]);
    h.update(job.trial.unwrap_or(1).to_le_bytes());
    format!("agentv-{}", &hex::encode(h.finalize())[..24])
}

/// Whether `job` can be answered by a batch item: one request, no tool loop, no conversation.
pub fn fits(job: &Job) -> bool {
    job.case.conversation.is_none() && super::tool_loop::first_request(job).is_none()
}

/// A target's cases to answer in batch: positions in the run's jobs.
pub struct Group<'a> {
    pub target: &'a Arc<ResolvedTarget>,
    pub api: &'a dyn BatchApi,
    pub members: Vec<usize>,
}

/// Answers `group` through batch jobs; what could not be answered is left out (answered online),
/// or is an error under `--batch=strict`.
pub async fn answer(
    jobs: &[Job],
    group: Group<'_>,
    setup: &RunSetup,
    observer: &mut dyn RunObserver,
    interrupt: &Interrupt,
) -> Prefetched {
    let Group { target, api, members } = group;
    let name = &target.name;
    let mut state = BatchState::of_run(setup, observer);
    let by_id: HashMap<String, usize> = members.iter().map(|&i| (custom_id(&jobs[i]), i)).collect();
    // Jobs of an earlier run holding some of these cases: reattached, not submitted again.
    let mut active: Vec<String> = state
        .jobs
        .iter()
        .filter(|j| j.target == *name && j.role.is_none() && j.custom_ids.iter().any(|id| by_id.contains_key(id)))
        .map(|j| j.id.clone())
        .collect();
    let label = format!("`{name}`");
    for id in &active {
        observer.batch_progress(&format!("batch job {id} of {label}: reattached"));
    }
    let submitted: std::collections::HashSet<&str> = state
        .jobs
        .iter()
        .filter(|j| active.contains(&j.id))
        .flat_map(|j| j.custom_ids.iter().map(String::as_str))
        .collect();
    let fresh: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&i| !submitted.contains(custom_id(&jobs[i]).as_str()))
        .collect();
    let mut out = Prefetched::new();
    let mut failed: Vec<(usize, ProviderError)> = Vec::new();
    submit_all(
        jobs,
        &fresh,
        target,
        api,
        &mut state,
        &mut active,
        &mut failed,
        setup,
        observer,
    )
    .await;
    let mut answered = 0;
    for id in poll(api, &label, &active, observer, interrupt).await {
        let (id, result) = id;
        let job_state = match result {
            Ok(s) => s,
            Err(e) => {
                observer.batch_progress(&format!("batch job {id} of {label}: {e}"));
                continue;
            }
        };
        let mut take = |(custom, result): crate::providers::batch::ItemResult| {
            let Some(&i) = by_id.get(&custom) else { return };
            match result {
                Ok(response) => {
                    let mut response = target.provider.price_batched(response);
                    // Priced: the raw body is not needed any more, and a large run holds every
                    // answer until its case runs.
                    response.raw = None;
                    let metadata = response.metadata.get_or_insert_with(Default::default);
                    metadata.insert("batched".to_owned(), serde_json::json!(true));
                    metadata.insert("batch_job".to_owned(), serde_json::json!(id));
                    out.insert(i, super::hold(Ok(response)));
                    answered += 1;
                }
                Err(e) => failed.push((i, e)),
            }
        };
        if let Err(e) = api.results(&job_state, &mut take).await {
            observer.batch_progress(&format!("batch job {id} of {label}: cannot read its results ({e})"));
        }
    }
    if interrupt.stop.is_cancelled() {
        return out;
    }
    settle(jobs, &members, &mut out, failed, setup, observer, name);
    out
}

/// Splits `fresh` into jobs within the provider's limits and submits each, writing its id to
/// the state before anything waits on it.
#[allow(clippy::too_many_arguments)]
async fn submit_all(
    jobs: &[Job],
    fresh: &[usize],
    target: &ResolvedTarget,
    api: &dyn BatchApi,
    state: &mut BatchState,
    active: &mut Vec<String>,
    failed: &mut Vec<(usize, ProviderError)>,
    setup: &RunSetup,
    observer: &mut dyn RunObserver,
) {
    if fresh.is_empty() {
        return;
    }
    let ids: Vec<String> = fresh.iter().map(|&i| custom_id(&jobs[i])).collect();
    // Items are built as they are written out, never held together: once to size the jobs,
    // once to submit them.
    let item = |k: usize| api.item(&ids[k], &super::case::request_for(&jobs[fresh[k]], 1));
    let sizes: Vec<usize> = (0..fresh.len()).map(|k| encoded_len(&item(k)) + 1).collect();
    for range in split(&sizes, api.limits()) {
        let mut items = range.clone().map(item);
        match api.submit_each(&mut items).await {
            Ok(id) => {
                state.jobs.push(JobRecord {
                    target: target.name.clone(),
                    provider: target.provider.kind().as_str().to_owned(),
                    id: id.clone(),
                    submitted_at: jiff::Timestamp::now().to_string(),
                    custom_ids: ids[range.clone()].to_vec(),
                    role: None,
                });
                if let Some(path) = &setup.batch_state
                    && let Err(e) = state.save(path)
                {
                    observer.warning(&format!(
                        "cannot write the batch state {}: {e}; --resume will not find job {id}",
                        path.display()
                    ));
                }
                observer.batch_progress(&format!(
                    "batch job {id} of `{}`: submitted, {} request(s)",
                    target.name,
                    range.len()
                ));
                active.push(id);
            }
            Err(e) => {
                let message = setup.context.secrets.redact(&e.to_string()).into_owned();
                observer.batch_progress(&format!(
                    "batch of `{}` not submitted ({message}); its {} case(s) go online",
                    target.name,
                    range.len()
                ));
                failed.extend(fresh[range].iter().map(|&i| (i, e.clone())));
            }
        }
    }
}

/// Polls `ids` (jobs of `of`: `` `default` ``, ``judge `default` ``) with a growing interval
/// until each is terminal (or cannot be polled); its final state, in the order they ended. Stops
/// at an interrupt: the jobs keep running at the provider.
pub(super) async fn poll<O: RunObserver + ?Sized>(
    api: &dyn BatchApi,
    of: &str,
    ids: &[String],
    observer: &mut O,
    interrupt: &Interrupt,
) -> Vec<(String, Result<JobState, PollError>)> {
    let mut pending: Vec<(String, Option<JobState>, u32)> = ids.iter().map(|id| (id.clone(), None, 0)).collect();
    let mut done = Vec::new();
    let mut wait = api.poll_interval();
    let mut first = true;
    while !pending.is_empty() {
        if !first {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = interrupt.stop.cancelled() => {
                    observer.batch_progress(&format!(
                        "{} batch job(s) of {of} keep running at the provider; --resume reattaches to them",
                        pending.len()
                    ));
                    return done;
                }
            }
            wait = wait.mul_f64(1.5).min(LONGEST_POLL);
        }
        first = false;
        let mut still = Vec::new();
        for (id, last, failures) in pending {
            match api.status(&id).await {
                Ok(s) => {
                    if last.as_ref() != Some(&s) {
                        observer.batch_job(&JobView {
                            id: id.clone(),
                            of: of.to_owned(),
                            state: s.clone(),
                        });
                    }
                    if s.terminal {
                        done.push((id, Ok(s)));
                    } else {
                        still.push((id, Some(s), 0));
                    }
                }
                Err(e) if failures + 1 >= POLL_FAILURES => {
                    done.push((id, Err(PollError(e))));
                }
                Err(_) => still.push((id, last, failures + 1)),
            }
        }
        pending = still;
    }
    done
}

/// A job as the console shows it: whose it is, where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct JobView {
    pub id: String,
    /// Whose requests it holds: `` `default` `` (a target's), ``judge `default` ``.
    pub of: String,
    pub state: JobState,
}

impl JobView {
    /// `batch job X of `t`: in_progress, 120/500 done, 2 failed`.
    pub fn describe(&self) -> String {
        let s = &self.state;
        let mut line = format!(
            "batch job {} of {}: {}, {}/{} done, {} failed",
            self.id, self.of, s.status, s.completed, s.total, s.failed
        );
        if let Some(e) = &s.error {
            line.push_str(&format!(" ({e})"));
        }
        line
    }
}

/// After the jobs: failed items and cases without a result are answered online (left out of
/// `out`), or under `--batch=strict` become execution errors.
fn settle(
    jobs: &[Job],
    members: &[usize],
    out: &mut Prefetched,
    failed: Vec<(usize, ProviderError)>,
    setup: &RunSetup,
    observer: &mut dyn RunObserver,
    target: &str,
) {
    let strict = setup.options.batch == BatchMode::Strict;
    let mut reasons: HashMap<usize, ProviderError> = failed.into_iter().collect();
    let mut online = 0;
    for &i in members {
        if out.contains_key(&i) {
            continue;
        }
        let reason = reasons
            .remove(&i)
            .unwrap_or(ProviderError::Unanswered("no result in its batch job"));
        if strict {
            let failed = ProviderError::BatchItem {
                case: Some(jobs[i].case.id.clone()),
                source: Box::new(reason),
            };
            out.insert(i, Err(failed));
        } else {
            online += 1;
        }
    }
    if online > 0 {
        observer.batch_progress(&format!(
            "{online} case(s) of `{target}` had no batch answer; answering them online"
        ));
    }
}

/// What the cases answered in batch cost, against what they would have cost online.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchSavings {
    pub cases: usize,
    pub cost_usd: f64,
    pub online_cost_usd: f64,
}

impl BatchSavings {
    /// Counts `record` when its answer came from a batch job at a known batch price.
    pub fn add(&mut self, record: &crate::model::EvaluationRecord) {
        let price = record
            .lm_provider_request
            .as_ref()
            .and_then(|r| r.pointer("/response_metadata/batch_price"));
        let figure = |name: &str| price.and_then(|p| p.get(name)).and_then(serde_json::Value::as_f64);
        if let (Some(cost), Some(online)) = (figure("cost_usd"), figure("online_cost_usd")) {
            self.cases += 1;
            self.cost_usd += cost;
            self.online_cost_usd += online;
        }
    }

    /// `Batch price: 500 case(s) cost $0.0150 instead of $0.0300 online (saved $0.0150)`.
    pub fn describe(&self) -> String {
        format!(
            "Batch price: {} case(s) cost ${:.4} instead of ${:.4} online (saved ${:.4})",
            self.cases,
            self.cost_usd,
            self.online_cost_usd,
            self.online_cost_usd - self.cost_usd
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_lives_beside_the_results_and_survives_a_round_trip() {
        assert_eq!(
            state_path(Path::new("out/r.jsonl")),
            PathBuf::from("out/r.jsonl.batches.json")
        );
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("r.jsonl.batches.json");
        assert_eq!(BatchState::load(&path).expect("no file yet"), BatchState::default());
        let state = BatchState {
            jobs: vec![JobRecord {
                target: "t".into(),
                provider: "openai".into(),
                id: "batch_1".into(),
                submitted_at: "2026-01-01T00:00:00Z".into(),
                custom_ids: vec!["a".into()],
                role: None,
            }],
        };
        state.save(&path).expect("saved");
        assert_eq!(BatchState::load(&path).expect("read"), state);
        std::fs::write(&path, "{").expect("garbled");
        assert!(BatchState::load(&path).is_err());
    }
}
