//! `agentv batch list|cancel RESULTS` (`docs/batch.md#jobs`): the batch jobs a run submitted,
//! read from the state beside its results, asked of their providers, and cancelled.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::env::Env;
use crate::load::{find_targets_file, load_targets_file};
use crate::paths::Workspace;
use crate::providers::{ProviderError, ResolveError, TargetRegistry};
use crate::redact::Secrets;
use crate::run::{BatchState, BatchStateError, state_path};

/// What to do with a run's jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobsAction {
    List,
    Cancel,
}

/// One job and what its provider says of it (or why it could not be asked).
#[derive(Debug)]
pub struct JobLine {
    pub target: String,
    pub id: String,
    pub requests: usize,
    pub submitted_at: String,
    /// `in_progress, 120/500 done, 2 failed`, or why the provider could not be asked.
    pub state: Result<String, JobError>,
    /// Set for `cancel`: whether a cancel was asked for, or why not.
    pub cancel: Option<Result<(), ProviderError>>,
}

/// Why a job's provider could not be asked about it. Its text can hold what a provider
/// answered: the caller redacts it before showing it.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error(transparent)]
    Target(#[from] ResolveError),
    #[error("target `{target}` has no batch API")]
    NoBatchApi { target: String },
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// Why a run's jobs cannot be listed at all.
#[derive(Debug, thiserror::Error)]
pub enum BatchJobsError {
    #[error("no batch jobs recorded for {}: {} does not exist (a run with --batch writes it)", results.display(), state.display())]
    NoState { results: PathBuf, state: PathBuf },
    #[error(transparent)]
    State(#[from] BatchStateError),
    #[error("no targets file found (tried {})", join(tried))]
    NoTargets { tried: Vec<PathBuf> },
}

/// Reads the jobs of the run that wrote `results`, asks each one's provider where it stands,
/// and with `Cancel` cancels those not finished. Errors: no state, or no targets file.
pub async fn batch_jobs(
    ws: &Workspace,
    results: &Path,
    targets: Option<&Path>,
    action: JobsAction,
    secrets: &Secrets,
) -> Result<Vec<JobLine>, BatchJobsError> {
    let path = state_path(&ws.cwd.join(results));
    if !path.is_file() {
        return Err(BatchJobsError::NoState {
            results: results.to_owned(),
            state: path,
        });
    }
    let state = BatchState::load(&path)?;
    let dir: PathBuf = path.parent().map_or_else(|| ws.cwd.clone(), Path::to_path_buf);
    let file = find_targets_file(targets, &dir, ws).map_err(|tried| BatchJobsError::NoTargets { tried })?;
    let (env, _) = Env::load_with(std::slice::from_ref(&dir), targets.map(|_| file.as_path()), ws);
    let registry = TargetRegistry::new(Some(load_targets_file(&file)), Arc::new(env), secrets.clone());
    let mut out = Vec::with_capacity(state.jobs.len());
    for job in &state.jobs {
        let api = registry.resolve(&job.target).map_err(JobError::from).and_then(|p| {
            p.batch_api().map(|_| p.clone()).ok_or_else(|| JobError::NoBatchApi {
                target: job.target.clone(),
            })
        });
        let (state_line, cancel) = match api {
            Err(e) => (Err(e), None),
            Ok(p) => {
                let api = p.batch_api().expect("checked above");
                match api.status(&job.id).await {
                    Err(e) => (Err(e.into()), None),
                    Ok(s) => {
                        let line = format!("{}, {}/{} done, {} failed", s.status, s.completed, s.total, s.failed);
                        let cancel = match action {
                            JobsAction::Cancel if !s.terminal => Some(api.cancel(&job.id).await),
                            _ => None,
                        };
                        (Ok(line), cancel)
                    }
                }
            }
        };
        out.push(JobLine {
            // A judge job holds the judge requests of the cases (`docs/batch.md#judges`).
            target: match job.role.as_deref() {
                Some(role) => format!("{} ({role})", job.target),
                None => job.target.clone(),
            },
            id: job.id.clone(),
            requests: job.custom_ids.len(),
            submitted_at: job.submitted_at.clone(),
            state: state_line,
            cancel,
        });
    }
    Ok(out)
}

fn join(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
