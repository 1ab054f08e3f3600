//! Run: schedules cases with bounded concurrency, calls the target with retries, grades, and
//! hands each record to the sink as soon as it is complete.

mod case;
pub mod proxy_invoker;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::evaluators::GradeSettings;
use crate::model::{EvalCase, EvaluationRecord};
use crate::providers::{ProviderError, ProviderResponse, ResolvedTarget};
use crate::report::Summary;
pub use case::run_case;

/// One case and the target that answers it.
#[derive(Debug, Clone)]
pub struct Job {
    pub case: EvalCase,
    pub target: Arc<ResolvedTarget>,
}

/// How a run behaves.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Cases in flight at once.
    pub workers: usize,
    /// Extra attempts after a timeout.
    pub max_retries: u32,
    /// After an interrupt, how long in-flight cases may still finish.
    pub grace: Duration,
    pub exploration_tools: Vec<String>,
    /// Grader settings; its `timeout` (the run's `--timeout`) also bounds each provider call.
    pub grade: GradeSettings,
}

/// Where finished records go (the JSONL writer, or a test's vector).
pub trait RecordSink {
    fn write(&mut self, record: &EvaluationRecord) -> std::io::Result<()>;
}

/// Progress callbacks, on the dispatcher task (no locking needed).
pub trait RunObserver {
    /// A case finished (`elapsed` is its own wall time).
    fn case_finished(&mut self, record: &EvaluationRecord, elapsed: Duration, done: usize, total: usize);

    /// A problem worth telling the user that did not fail anything.
    fn warning(&mut self, _message: &str) {}

    /// The run was interrupted; `in_flight` cases are still finishing.
    fn interrupted(&mut self, _in_flight: usize, _grace: Duration) {}
}

/// Interrupt signals from the caller: `stop` ends scheduling (first Ctrl-C); `abort` cancels
/// cases still running (second Ctrl-C). The runner cancels `abort` itself after the grace period.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    pub stop: CancellationToken,
    pub abort: CancellationToken,
}

/// What happened.
#[derive(Debug)]
pub struct RunReport {
    pub summary: Summary,
    pub interrupted: bool,
    /// Cases never started or cancelled before finishing.
    pub not_run: usize,
}

/// The jobs of a run, pulled lazily.
pub struct Jobs {
    pub iter: Box<dyn Iterator<Item = Job> + Send>,
    /// How many there are (for progress).
    pub total: usize,
    /// Some target uses provider batching: its cases must be known up front.
    pub batching: bool,
}

/// Runs every job. Never fails: provider and grader failures become error records. Jobs are
/// pulled as workers free up, so a lazy iterator keeps memory flat; when a target batches, the
/// jobs are collected first so its cases can go out in one call.
pub async fn run(
    jobs: Jobs,
    options: &RunOptions,
    sink: &mut dyn RecordSink,
    observer: &mut dyn RunObserver,
    interrupt: &Interrupt,
) -> RunReport {
    let total = jobs.total;
    let (jobs, mut prefetched): (Box<dyn Iterator<Item = Job> + Send>, _) = if jobs.batching {
        let all: Vec<Job> = jobs.iter.collect();
        let prefetched = prefetch_batches(&all, options, observer).await;
        (Box::new(all.into_iter()), prefetched)
    } else {
        (jobs.iter, HashMap::new())
    };
    let workers = options.workers.max(1);
    let stop = interrupt.stop.clone();
    let abort = interrupt.abort.clone();
    let stream = futures::stream::iter(jobs.enumerate())
        .take_while(move |_| futures::future::ready(!stop.is_cancelled()))
        .map(|(index, job)| {
            let early = prefetched.remove(&index);
            let abort = abort.clone();
            async move {
                let started = Instant::now();
                tokio::select! {
                    record = run_case(&job, early, options) => Some((record, started.elapsed())),
                    _ = abort.cancelled() => None,
                }
            }
        })
        .buffer_unordered(workers);
    tokio::pin!(stream);

    let mut summary = Summary::default();
    let mut write_failed = false;
    let mut done = 0;
    let mut interrupted = false;
    let grace_timer = tokio::time::sleep(Duration::MAX);
    tokio::pin!(grace_timer);
    loop {
        tokio::select! {
            next = stream.next() => match next {
                None => break,
                Some(None) => {}
                Some(Some((record, elapsed))) => {
                    done += 1;
                    // Reported once; the run goes on so the summary still shows every case.
                    if let Err(e) = sink.write(&record)
                        && !write_failed
                    {
                        observer.warning(&format!("cannot write results: {e}"));
                        write_failed = true;
                    }
                    observer.case_finished(&record, elapsed, done, total);
                    summary.add(&record);
                }
            },
            _ = interrupt.stop.cancelled(), if !interrupted => {
                interrupted = true;
                observer.interrupted(workers.min(total - done), options.grace);
                grace_timer.as_mut().reset(tokio::time::Instant::now() + options.grace);
            }
            _ = &mut grace_timer, if interrupted => interrupt.abort.cancel(),
        }
    }
    RunReport {
        summary,
        interrupted,
        not_run: total - done,
    }
}

/// For targets with `provider_batching: true` whose provider can batch, answers all their cases
/// in one call up front. A failed batch falls back to per-case calls (nothing prefetched).
async fn prefetch_batches(
    jobs: &[Job],
    options: &RunOptions,
    observer: &mut dyn RunObserver,
) -> HashMap<usize, Result<ProviderResponse, ProviderError>> {
    let mut groups: Vec<(Arc<ResolvedTarget>, Vec<usize>)> = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        if !job.target.batching {
            continue;
        }
        match groups.iter_mut().find(|(t, _)| Arc::ptr_eq(t, &job.target)) {
            Some((_, members)) => members.push(i),
            None => groups.push((job.target.clone(), vec![i])),
        }
    }
    let mut out = HashMap::new();
    for (target, members) in groups {
        if !target.provider.supports_batch() {
            // Not a configuration error (spec): a verbose note, then per-case calls.
            tracing::info!(
                "target `{}` sets provider_batching but provider `{}` cannot batch; running per case",
                target.name,
                target.provider.kind().as_str()
            );
            continue;
        }
        let requests: Vec<_> = members.iter().map(|&i| case::request_for(&jobs[i], 1)).collect();
        match target.provider.invoke_batch(&requests).await {
            Ok(results) if results.len() == members.len() => {
                out.extend(members.into_iter().zip(results));
            }
            Ok(_) => observer.warning(&format!(
                "batch for `{}` returned the wrong number of answers; running per case",
                target.name
            )),
            Err(e) => observer.warning(&format!(
                "batch for `{}` failed ({}); running per case",
                target.name,
                options.grade.secrets.redact(&e.to_string())
            )),
        }
    }
    out
}
