//! Run: schedules cases with bounded concurrency, calls the target with retries, grades, and
//! hands each record to the sink as soon as it is complete.

mod batch;
mod budget;
mod case;
mod compare;
mod conversation;
mod jobs;
mod judge_wave;
mod outcome;
mod promptfoo;
mod throttling;
mod tool_loop;
mod waves;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

pub use crate::context::RunContext;
use crate::evaluators::ConfiguredGrader;
use crate::load::LoadedSuite;
use crate::model::{EvalCase, EvaluationRecord};
use crate::providers::{ProviderError, ProviderResponse, ResolvedTarget};
use crate::report::{Row, Sink, Summary};
use crate::resolve::Resolved;
pub use batch::{BatchMode, BatchSavings, BatchState, BatchStateError, JobRecord, JobView, state_path};
pub use budget::{Budget, uncountable};
pub use case::run_case;
pub use jobs::{Expansion, JobFilter, JobKey};
pub use outcome::{Outcome, RunFacts, decide};
pub use throttling::TargetThrottling;

/// One case, its graders and the target that answers it.
#[derive(Debug, Clone)]
pub struct Job {
    pub case: EvalCase,
    pub graders: Arc<[ConfiguredGrader]>,
    /// The graders of each turn of a conversation case (empty otherwise).
    pub turn_graders: Arc<[Arc<[ConfiguredGrader]>]>,
    pub target: Arc<ResolvedTarget>,
    /// Which repeat of the case this is, when the run repeats cases (`--repeat`).
    pub trial: Option<u32>,
    /// Set in a suite whose cases depend on others: what the job waits for.
    pub links: Option<Arc<waves::Links>>,
}

/// How each case runs, as the front end asks (`agentv eval`'s flags).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Extra attempts of a case whose target call timed out.
    pub max_retries: u32,
    /// Each target call, and each code judge without its own `timeout_seconds`.
    pub timeout: Duration,
    /// After an interrupt, how long running cases may still finish.
    pub grace: Duration,
    /// Tools counted as exploration in `exploration_ratio`; blank names are dropped.
    pub exploration_tools: Vec<String>,
    /// `--dump-prompts`: each request is written under `.agentv/prompts/`.
    pub dump_prompts: bool,
    /// `--threshold`: the pass threshold of cases without their own, and the exit-code gate.
    pub threshold: Option<f64>,
    /// `--workspace-mode`, `--workspace-path`, `--keep-workspaces` (`docs/workspaces.md`).
    pub workspaces: crate::workspace::WorkspaceOptions,
    /// `--strict`: graders apply no generation's lenient rule (a 4.x code grader printing plain
    /// text is a grader error).
    pub strict: bool,
    /// `--batch`: which targets answer through their provider's batch API (`docs/batch.md`).
    pub batch: BatchMode,
}

/// What the runner works with: the front end's [`RunOptions`] and what the plan made of them
/// (workers decided, the context every call honours, the workspaces, the budget).
#[derive(Debug, Clone)]
pub struct RunSetup {
    /// As asked, blank exploration tools dropped.
    pub options: RunOptions,
    /// Cases in flight at once.
    pub workers: usize,
    /// What every call of a case honours: the target's, the judges' and the code judges'.
    pub context: RunContext,
    /// `--budget-usd`: once the targets' reported cost reaches it, no new case starts.
    pub budget: Option<Budget>,
    /// The run's workspaces (`docs/workspaces.md`); `None` runs every case where its target
    /// says.
    pub workspaces: Option<Arc<crate::workspace::Runtime>>,
    /// Where the ids of submitted batch jobs are written (beside the results).
    pub batch_state: Option<PathBuf>,
}

/// Progress callbacks, on the dispatcher task (no locking needed).
pub trait RunObserver {
    /// A case started: its target is about to be called. Every started case is heard of before
    /// it finishes; cases cancelled by an interrupt never finish.
    fn case_started(&mut self, _eval_id: &str, _target: &str) {}

    /// A case finished (`elapsed` is its own wall time).
    fn case_finished(&mut self, record: &EvaluationRecord, elapsed: Duration, done: usize, total: usize);

    /// A problem worth telling the user that did not fail anything.
    fn warning(&mut self, _message: &str) {}

    /// Something about batch jobs worth a line: submitted, reattached, answered online
    /// (`docs/batch.md`).
    fn batch_progress(&mut self, _line: &str) {}

    /// A batch job changed state or counts (by default, said as a line).
    fn batch_job(&mut self, job: &JobView) {
        self.batch_progress(&job.describe());
    }

    /// The run was interrupted; `in_flight` cases are still finishing.
    fn interrupted(&mut self, _in_flight: usize, _grace: Duration) {}

    /// A target (or the judge of one: `role` says which) failed its healthcheck before any case
    /// ran. Said once; the cases then point to it.
    fn healthcheck_failed(&mut self, _role: TargetRole, _target: &str, _message: &str) {}
}

/// What a probed provider is to the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetRole {
    /// Answers the cases: when unhealthy, its cases are execution errors.
    Target,
    /// Grades the answers: when unhealthy, its grades are grader errors.
    Judge,
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
    /// Finished cases whose record could not be written (to some sink).
    pub unwritten: usize,
    /// Sinks whose final write failed: their output is incomplete.
    pub unfinished: usize,
    /// Cases recorded as not run because the run's cost reached `--budget-usd`.
    pub over_budget: usize,
    /// The adaptive concurrency of each LLM target that was called.
    pub throttling: Vec<TargetThrottling>,
    /// What the cases answered in batch cost, against the online price.
    pub batch_savings: BatchSavings,
}

impl RunReport {
    /// The run's outcome (`docs/architecture.md#exit-codes`), given the cases skipped at load
    /// and the `--threshold`.
    pub fn outcome(&self, skipped: usize, threshold: Option<f64>) -> Outcome {
        decide(&RunFacts {
            graded: self.summary.scores(),
            execution_errors: self.summary.execution_errors(),
            grader_errors: self.summary.grader_errors(),
            skipped,
            not_run: self.not_run,
            unwritten: self.unwritten + self.unfinished,
            threshold,
            interrupted: self.interrupted,
        })
    }
}

/// The jobs of a run, pulled lazily.
pub struct Jobs {
    pub iter: Box<dyn Iterator<Item = Job> + Send>,
    /// How many there are (for progress).
    pub total: usize,
    /// Some target uses provider batching: its cases must be known up front.
    pub batching: bool,
    /// Targets to healthcheck before any case runs.
    pub probes: Vec<Probe>,
}

/// A target to healthcheck before the run, and where its commands run (the directory of the
/// first eval file that uses it, as for its first case).
#[derive(Debug, Clone)]
pub struct Probe {
    pub target: Arc<ResolvedTarget>,
    pub eval_dir: PathBuf,
}

impl Resolved {
    /// The jobs, lazily: JSONL datasets are read as the run goes. `total` is how many
    /// `expansion` makes ([`Expansion::count`]).
    pub fn into_jobs(self, expansion: Expansion, total: usize) -> Jobs {
        let batching = self.targets.iter().any(|t| t.batching);
        let probes = health_probes(&self.suites);
        let iter = jobs::expand(self.suites, expansion);
        Jobs {
            probes,
            iter: Box::new(iter),
            total,
            batching,
        }
    }
}

/// One probe per distinct target of `suites`, in first-use order.
pub fn health_probes(suites: &[(LoadedSuite, Vec<Arc<ResolvedTarget>>)]) -> Vec<Probe> {
    let mut probes: Vec<Probe> = Vec::new();
    for (suite, target) in suites
        .iter()
        .flat_map(|(s, targets)| targets.iter().map(move |t| (s, t)))
    {
        if !probes.iter().any(|p| Arc::ptr_eq(&p.target, target)) {
            probes.push(Probe {
                target: target.clone(),
                eval_dir: suite
                    .file
                    .parent()
                    .filter(|dir| !dir.as_os_str().is_empty())
                    .map_or_else(|| PathBuf::from("."), std::path::Path::to_path_buf),
            });
        }
    }
    probes
}

/// Targets that failed their healthcheck, with the message their cases carry.
type Unhealthy = Vec<(Arc<ResolvedTarget>, String)>;

/// Runs every job. Never fails: provider and grader failures become error records. Jobs are
/// pulled as workers free up, so a lazy iterator keeps memory flat; when a target batches, the
/// jobs are collected first so its cases can go out in one call.
///
/// Each record goes to every sink as soon as its case finishes; after the last one (or after
/// an interrupt), every sink is finished. A sink that fails is reported once and the others
/// go on.
pub async fn run(
    jobs: Jobs,
    setup: &RunSetup,
    sinks: &mut [&mut dyn Sink],
    observer: &mut dyn RunObserver,
    interrupt: &Interrupt,
) -> RunReport {
    let total = jobs.total;
    let throttles = throttling::open(&jobs.probes, setup.workers.max(1));
    let probes = jobs.probes.clone();
    let unhealthy = check_health(&jobs.probes, observer, interrupt).await;
    let Batched {
        jobs,
        prefetched,
        announced,
        finish_in_flight,
    } = with_batches(jobs, &unhealthy, setup, observer, interrupt).await;
    let workers = setup.workers.max(1);
    let targets: Vec<Arc<ResolvedTarget>> = jobs_targets(&probes);
    let (wave, mut relayed) = judge_wave::Wave::open(&targets, setup, interrupt)
        .map_or((None, None), |(wave, relayed)| (Some(Arc::new(wave)), Some(relayed)));
    let width = wave.as_ref().map_or(workers, |w| w.width());
    // Cases start inside the stream, where the observer cannot be reached: they are told to it
    // from the loop below, always before they finish.
    let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel::<(String, String)>();
    let stop = interrupt.stop.clone();
    let mut ledger = Ledger {
        tally: Tally::new(sinks.len(), total, &setup.context.secrets),
        batch_savings: BatchSavings::default(),
        spending: budget::Spending::new(setup.budget),
    };
    // Shared so that the jobs left when the budget is reached can be recorded as not run.
    let source = Arc::new(std::sync::Mutex::new(jobs));
    let jobs = gated(source.clone(), ledger.spending.flag(), wave.clone());
    let mut starter = Starter {
        prefetched,
        unhealthy: &unhealthy,
        wave: wave.clone(),
        started: started_tx,
        setup,
        abort: interrupt.abort.clone(),
    };
    let stream = judge_wave::paced(jobs.enumerate(), wave.as_deref())
        .take_while(move |_| futures::future::ready(finish_in_flight || !stop.is_cancelled()))
        .map(|((index, job), slot)| starter.start(index, job, slot))
        .buffer_unordered(width);
    tokio::pin!(stream);

    let mut interrupted = false;
    let mut held: Vec<compare::Held> = Vec::new();
    let grace_timer = tokio::time::sleep(Duration::MAX);
    tokio::pin!(grace_timer);
    loop {
        tokio::select! {
            // An interrupt is seen before the end of the cases, so a run stopped before its
            // first case (during a healthcheck) still counts as interrupted.
            biased;
            _ = interrupt.stop.cancelled(), if !interrupted => {
                interrupted = true;
                if !announced {
                    observer.interrupted(workers.min(total.saturating_sub(ledger.tally.done)), setup.options.grace);
                }
                let now = tokio::time::Instant::now();
                // An unrepresentable deadline (a huge grace) means: wait for the cases.
                if let Some(deadline) = now.checked_add(setup.options.grace) {
                    grace_timer.as_mut().reset(deadline);
                }
            }
            next = stream.next() => match next {
                None => break,
                Some(None) => {}
                Some(Some((record, elapsed, Some(job)))) => {
                    // Written once the other rows of its test are answered.
                    held.push(compare::Held { job, record, elapsed });
                }
                Some(Some((record, elapsed, None))) => {
                    while let Ok((id, target)) = started_rx.try_recv() {
                        observer.case_started(&id, &target);
                    }
                    ledger.add(&record, elapsed, sinks, observer);
                }
            },
            Some((id, target)) = started_rx.recv() => observer.case_started(&id, &target),
            Some(relayed) = next_relayed(&mut relayed) => tell(observer, relayed),
            _ = &mut grace_timer, if interrupted => interrupt.abort.cancel(),
        }
    }
    tell_the_rest(relayed.as_mut(), &mut started_rx, observer);
    for (record, elapsed) in compare::settle(held, setup).await {
        ledger.add(&record, elapsed, sinks, observer);
    }
    let interrupted = interrupted || interrupt.stop.is_cancelled();
    ledger.close(&source, interrupted, sinks, observer, throttling::report(&throttles))
}

/// Tells the observer what the judges relayed and which cases started, once the stream is over.
fn tell_the_rest(
    relayed: Option<&mut tokio::sync::mpsc::UnboundedReceiver<judge_wave::Relayed>>,
    started: &mut tokio::sync::mpsc::UnboundedReceiver<(String, String)>,
    observer: &mut dyn RunObserver,
) {
    if let Some(relayed) = relayed {
        while let Ok(r) = relayed.try_recv() {
            tell(observer, r);
        }
    }
    while let Ok((id, target)) = started.try_recv() {
        observer.case_started(&id, &target);
    }
}

/// What the run has accounted for: the records written and counted, what batching saved and
/// what the targets cost against the budget.
struct Ledger<'a> {
    tally: Tally<'a>,
    batch_savings: BatchSavings,
    spending: budget::Spending,
}

impl Ledger<'_> {
    fn add(
        &mut self,
        record: &EvaluationRecord,
        elapsed: Duration,
        sinks: &mut [&mut dyn Sink],
        observer: &mut dyn RunObserver,
    ) {
        self.tally.add(record, elapsed, sinks, observer);
        self.batch_savings.add(record);
        self.spending.add(record);
    }

    /// Records the jobs the budget left out as not run, finishes every sink and reports.
    /// `interrupted` is decided by the token, not by which branch won: the cases may have run
    /// out just as the signal came.
    fn close(
        mut self,
        source: &std::sync::Mutex<Box<dyn Iterator<Item = Job> + Send>>,
        interrupted: bool,
        sinks: &mut [&mut dyn Sink],
        observer: &mut dyn RunObserver,
        throttling: Vec<TargetThrottling>,
    ) -> RunReport {
        if let Some(warning) = self.spending.uncounted_warning() {
            observer.warning(&warning);
        }
        let over_budget = match self.spending.reached() && !interrupted {
            true => record_not_run(
                source,
                &self.spending.not_run_message(),
                &mut self.tally,
                sinks,
                observer,
            ),
            false => 0,
        };
        let unfinished = finish_sinks(sinks, observer);
        RunReport {
            summary: self.tally.summary,
            interrupted,
            not_run: self.tally.total.saturating_sub(self.tally.done),
            unwritten: self.tally.unwritten,
            unfinished,
            over_budget,
            throttling,
            batch_savings: self.batch_savings,
        }
    }
}

/// The jobs as the budget lets them start; once they are all out, the judge wave hears that
/// what the judges wait on can go.
fn gated(
    source: Arc<std::sync::Mutex<Box<dyn Iterator<Item = Job> + Send>>>,
    reached: Arc<std::sync::atomic::AtomicBool>,
    wave: Option<Arc<judge_wave::Wave>>,
) -> impl Iterator<Item = Job> + Send {
    budget_gate(source, reached).chain(std::iter::from_fn(move || {
        if let Some(wave) = &wave {
            wave.exhausted();
        }
        None
    }))
}

/// Records every job left when the budget was reached as not run; returns how many.
fn record_not_run(
    source: &std::sync::Mutex<Box<dyn Iterator<Item = Job> + Send>>,
    message: &str,
    tally: &mut Tally<'_>,
    sinks: &mut [&mut dyn Sink],
    observer: &mut dyn RunObserver,
) -> usize {
    let mut count = 0;
    // Lazily, as they were going to run: a large dataset is still never held.
    let mut rest = source.lock().ok();
    for job in rest.iter_mut().flat_map(|jobs| jobs.by_ref()) {
        count += 1;
        tally.add(&case::not_run_record(&job, message), Duration::ZERO, sinks, observer);
    }
    count
}

/// Starts the jobs the stream pulls: each with its batch answer, its target's health, its seat
/// in the judge wave, told to the loop (which tells the observer) as it starts.
struct Starter<'a> {
    prefetched: Prefetched,
    unhealthy: &'a Unhealthy,
    wave: Option<Arc<judge_wave::Wave>>,
    started: tokio::sync::mpsc::UnboundedSender<(String, String)>,
    setup: &'a RunSetup,
    abort: CancellationToken,
}

impl<'a> Starter<'a> {
    fn start(
        &mut self,
        index: usize,
        job: Job,
        slot: Option<tokio::sync::OwnedSemaphorePermit>,
    ) -> impl Future<Output = Option<Ran>> + use<'a> {
        let early = self.prefetched.remove(&index).map(|held| held.and_then(Held::take));
        let sick = self
            .unhealthy
            .iter()
            .find(|(t, _)| Arc::ptr_eq(t, &job.target))
            .map(|(_, message)| message.clone());
        let (job, seat) = match &self.wave {
            Some(wave) => {
                let (job, seat) = wave.seat(job, slot);
                (job, Some(seat))
            }
            None => (job, None),
        };
        let _ = self.started.send((job.case.id.clone(), job.target.name.clone()));
        run_job(job, early, sick, seat, self.setup, self.abort.clone())
    }
}

/// A job's record and its wall time, and the job itself when its row waits for the other rows
/// of its test to be compared (`docs/promptfoo.md#select-best`).
type Ran = (EvaluationRecord, Duration, Option<Job>);

/// Runs one job to its record and its wall time: after the cases it depends on, unless one of
/// them failed or its target is unhealthy. `None` when `abort` cancels it.
async fn run_job(
    job: Job,
    early: Option<Result<ProviderResponse, ProviderError>>,
    sick: Option<String>,
    seat: Option<Arc<judge_wave::Seat>>,
    setup: &RunSetup,
    abort: CancellationToken,
) -> Option<Ran> {
    let started = Instant::now();
    let held = compare::compares(&job);
    let failed = match &job.links {
        Some(links) => tokio::select! {
            failed = judge_wave::parked(seat.as_ref(), links.wait()) => failed,
            _ = abort.cancelled() => return None,
        },
        None => Vec::new(),
    };
    let blocked = job.links.as_ref().and_then(|links| links.blocked(&failed));
    let record = if let Some(message) = blocked {
        case::dependency_failed_record(&job, &message)
    } else if let Some(message) = sick {
        case::unhealthy_target_record(&job, &message)
    } else {
        tokio::select! {
            record = judge_wave::seated(seat, run_case(&job, early, setup)) => record,
            _ = abort.cancelled() => return None,
        }
    };
    if let Some(links) = &job.links {
        links.finish(record.execution_status);
    }
    Some((record, started.elapsed(), held.then_some(job)))
}

/// What the run has recorded so far: each finished case is written to every sink, told to the
/// observer and counted in the summary.
struct Tally<'a> {
    summary: Summary,
    /// Cases whose record could not be written to some sink.
    unwritten: usize,
    /// Sinks that failed already (reported once each).
    failed_sinks: Vec<bool>,
    done: usize,
    total: usize,
    secrets: &'a crate::redact::Secrets,
}

impl<'a> Tally<'a> {
    fn new(sinks: usize, total: usize, secrets: &'a crate::redact::Secrets) -> Self {
        Self {
            summary: Summary::default(),
            unwritten: 0,
            failed_sinks: vec![false; sinks],
            done: 0,
            total,
            secrets,
        }
    }

    fn add(
        &mut self,
        record: &EvaluationRecord,
        elapsed: Duration,
        sinks: &mut [&mut dyn Sink],
        observer: &mut dyn RunObserver,
    ) {
        self.done += 1;
        if !write_to_sinks(
            sinks,
            &Row::redact(record, self.secrets),
            &mut self.failed_sinks,
            observer,
        ) {
            self.unwritten += 1;
        }
        observer.case_finished(record, elapsed, self.done, self.total);
        self.summary.add(record);
    }
}

/// The jobs as the run pulls them, and their batch answers.
struct Batched {
    jobs: Box<dyn Iterator<Item = Job> + Send>,
    prefetched: Prefetched,
    /// The interrupt was already announced (during a batch call).
    announced: bool,
    /// Cases whose batch answer arrived within the grace period of an interrupt: they were in
    /// flight, so they are still graded and written.
    finish_in_flight: bool,
}

/// When some target batches (or `--batch` asks), every job is collected and the batch answers
/// fetched first, so the cases go out in one call (`docs/batch.md`); otherwise the jobs stay
/// lazy.
async fn with_batches(
    jobs: Jobs,
    unhealthy: &Unhealthy,
    setup: &RunSetup,
    observer: &mut dyn RunObserver,
    interrupt: &Interrupt,
) -> Batched {
    let mut batched = Batched {
        jobs: jobs.iter,
        prefetched: HashMap::new(),
        announced: false,
        finish_in_flight: false,
    };
    if !jobs.batching && setup.options.batch == BatchMode::Targets {
        return batched;
    }
    let mut all: Vec<Job> = batched.jobs.collect();
    let mut prefetched = prefetch_batches(&all, unhealthy, setup, observer, interrupt, &mut batched.announced).await;
    if interrupt.stop.is_cancelled() {
        (all, prefetched) = only_answered(all, prefetched);
        batched.finish_in_flight = true;
    }
    batched.jobs = Box::new(all.into_iter());
    batched.prefetched = prefetched;
    batched
}

/// Finishes every sink; returns how many failed (each reported to `observer`).
fn finish_sinks(sinks: &mut [&mut dyn Sink], observer: &mut dyn RunObserver) -> usize {
    let mut unfinished = 0;
    for sink in sinks.iter_mut() {
        if let Err(e) = sink.finish() {
            observer.warning(&format!("cannot finish the {}: {e}", sink.describe()));
            unfinished += 1;
        }
    }
    unfinished
}

/// The distinct targets of a run's probes.
fn jobs_targets(probes: &[Probe]) -> Vec<Arc<ResolvedTarget>> {
    probes.iter().map(|p| p.target.clone()).collect()
}

/// What the judge wave has to say, when there is a wave.
async fn next_relayed(
    relayed: &mut Option<tokio::sync::mpsc::UnboundedReceiver<judge_wave::Relayed>>,
) -> Option<judge_wave::Relayed> {
    match relayed {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

fn tell(observer: &mut dyn RunObserver, relayed: judge_wave::Relayed) {
    match relayed {
        judge_wave::Relayed::Line(line) => observer.batch_progress(&line),
        judge_wave::Relayed::Job(job) => observer.batch_job(&job),
    }
}

/// The jobs of `source` until `reached` is raised: then none more start, and what is left
/// stays in `source`.
fn budget_gate(
    source: Arc<std::sync::Mutex<Box<dyn Iterator<Item = Job> + Send>>>,
    reached: Arc<std::sync::atomic::AtomicBool>,
) -> impl Iterator<Item = Job> + Send {
    std::iter::from_fn(move || {
        if reached.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        source.lock().ok()?.next()
    })
}

/// Hands `record` to every sink; false when one failed. Each sink's first failure is reported
/// once; the run goes on so the summary (and the other sinks) still show every case.
fn write_to_sinks(
    sinks: &mut [&mut dyn Sink],
    row: &Row<'_>,
    failed: &mut [bool],
    observer: &mut dyn RunObserver,
) -> bool {
    let mut all = true;
    for (sink, failed) in sinks.iter_mut().zip(failed.iter_mut()) {
        if let Err(e) = sink.write(row) {
            if !*failed {
                observer.warning(&format!("cannot write to the {}: {e}", sink.describe()));
                *failed = true;
            }
            all = false;
        }
    }
    all
}

/// Runs each provider's healthcheck (targets and judges) once, before any case. A failure is
/// reported once; the cases of a failing target then become execution errors pointing to it,
/// without calling the target. (A failing judge is only reported: its grades fail on their own.)
async fn check_health(probes: &[Probe], observer: &mut dyn RunObserver, interrupt: &Interrupt) -> Unhealthy {
    let mut unhealthy = Unhealthy::new();
    // Per provider (by address: targets may share one), its failure if it failed.
    let mut checked: Vec<(*const (), Option<String>)> = Vec::new();
    for probe in probes {
        let t = &probe.target;
        for (role, name, provider) in [
            (TargetRole::Target, &t.name, &t.provider),
            (TargetRole::Judge, &t.judge_name, &t.judge),
        ] {
            let key = Arc::as_ptr(provider).cast::<()>();
            let failure = match checked.iter().find(|(k, _)| *k == key) {
                Some((_, failure)) => failure.clone(),
                None => {
                    let result = tokio::select! {
                        result = provider.healthcheck(&probe.eval_dir) => result,
                        _ = interrupt.stop.cancelled() => return unhealthy,
                    };
                    let failure = result.err().map(|e| e.to_string());
                    if let Some(reason) = &failure {
                        observer.healthcheck_failed(role, name, reason);
                    }
                    checked.push((key, failure.clone()));
                    failure
                }
            };
            if let (TargetRole::Target, Some(reason)) = (role, failure) {
                let message = format!("target `{name}` failed its healthcheck before the run\n{reason}");
                unhealthy.push((t.clone(), message));
            }
        }
    }
    unhealthy
}

/// The jobs that have an answer, and their answers re-keyed by their new positions.
fn only_answered(jobs: Vec<Job>, mut answers: Prefetched) -> (Vec<Job>, Prefetched) {
    let mut kept = Vec::new();
    let mut rekeyed = HashMap::new();
    for (i, job) in jobs.into_iter().enumerate() {
        if let Some(answer) = answers.remove(&i) {
            rekeyed.insert(kept.len(), answer);
            kept.push(job);
        }
    }
    (kept, rekeyed)
}

/// Answers fetched before the cases run, by job position.
type Prefetched = HashMap<usize, Result<Held, ProviderError>>;

/// An answer held until its case runs, as its JSON text: a run in batch mode holds every
/// answer at once, and the text takes a fraction of the response's room in memory
/// (`bench/batch.sh`).
pub(crate) struct Held(Box<[u8]>);

impl Held {
    fn new(response: &ProviderResponse) -> Result<Self, ProviderError> {
        serde_json::to_vec(response)
            .map(|text| Self(text.into_boxed_slice()))
            .map_err(|e| ProviderError::Internal(format!("cannot hold the batch answer ({e})")))
    }

    fn take(self) -> Result<ProviderResponse, ProviderError> {
        serde_json::from_slice(&self.0)
            .map_err(|e| ProviderError::Internal(format!("cannot read back the batch answer ({e})")))
    }
}

/// `answer` held until its case runs.
fn hold(answer: Result<ProviderResponse, ProviderError>) -> Result<Held, ProviderError> {
    answer.and_then(|r| Held::new(&r))
}

/// For targets with `provider_batching: true` whose provider can batch, answers all their cases
/// in one call up front. A failed batch falls back to per-case calls (nothing prefetched).
///
/// A batch call holds every case of its target, so it honours an interrupt as a running case
/// does: after the first signal it has the grace period to finish, and the second signal (or
/// the end of the grace) cancels it. No batch starts after an interrupt.
async fn prefetch_batches(
    jobs: &[Job],
    unhealthy: &Unhealthy,
    setup: &RunSetup,
    observer: &mut dyn RunObserver,
    interrupt: &Interrupt,
    announced: &mut bool,
) -> Prefetched {
    let mut groups: Vec<(Arc<ResolvedTarget>, Vec<usize>)> = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let asked = job.target.batching
            || (setup.options.batch != BatchMode::Targets && job.target.provider.batch_api().is_some());
        if !asked || unhealthy.iter().any(|(t, _)| Arc::ptr_eq(t, &job.target)) {
            continue;
        }
        match groups.iter_mut().find(|(t, _)| Arc::ptr_eq(t, &job.target)) {
            Some((_, members)) => members.push(i),
            None => groups.push((job.target.clone(), vec![i])),
        }
    }
    let mut out = HashMap::new();
    for (target, members) in groups {
        if let Some(api) = target.provider.batch_api() {
            if interrupt.stop.is_cancelled() {
                break;
            }
            let members = members.into_iter().filter(|&i| batch::fits(&jobs[i])).collect();
            let group = batch::Group {
                target: &target,
                api,
                members,
            };
            out.extend(batch::answer(jobs, group, setup, observer, interrupt).await);
            continue;
        }
        if !target.provider.supports_batch() {
            // Not a configuration error (spec): a verbose note, then per-case calls.
            tracing::info!(
                "target `{}` sets provider_batching but provider `{}` cannot batch; running per case",
                target.name,
                target.provider.kind().as_str()
            );
            continue;
        }
        if interrupt.stop.is_cancelled() {
            break;
        }
        let requests: Vec<_> = members.iter().map(|&i| case::request_for(&jobs[i], 1)).collect();
        let batch = target.provider.invoke_batch(&requests);
        tokio::pin!(batch);
        let result = tokio::select! {
            result = &mut batch => result,
            _ = interrupt.stop.cancelled() => {
                observer.interrupted(members.len(), setup.options.grace);
                *announced = true;
                let grace = tokio::time::sleep(setup.options.grace);
                tokio::select! {
                    result = &mut batch => result,
                    _ = grace => break,
                    _ = interrupt.abort.cancelled() => break,
                }
            }
        };
        match result {
            Ok(results) if results.len() == members.len() => {
                out.extend(members.into_iter().zip(results.into_iter().map(hold)));
            }
            Ok(_) => observer.warning(&format!(
                "batch for `{}` returned the wrong number of answers; running per case",
                target.name
            )),
            Err(e) => observer.warning(&format!(
                "batch for `{}` failed ({}); running per case",
                target.name,
                setup.context.secrets.redact(&e.to_string())
            )),
        }
    }
    out
}
