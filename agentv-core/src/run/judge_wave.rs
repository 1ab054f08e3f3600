//! Judges in batch mode (`docs/batch.md#judges`): the second wave. Once a case's target answer
//! is in, its LLM judges (`llm_judge`, `llm-grader`, `rubrics`, the default judge: whatever
//! calls the target's judge provider) ask a judge that does not call at once: the request joins
//! a queue and the grader waits for its answer. The queue goes out as one provider batch job
//! when every case in flight waits on a judge (nothing more can join), when it is full, or when
//! nothing joined it for a while; the job's answers then go back to the waiting graders, which
//! go on as after an online call.
//!
//! Cases waiting on a judge give their worker slot back, so the run starts more cases while
//! they wait: a job is not capped at `--workers` requests. A judge request's custom id comes
//! from its case's and from the request itself, so `--resume` finds the same ids in the jobs the
//! state file names and reattaches to them. An item without an answer is asked online once (or,
//! under `--batch=strict`, is a grader error). A judge called from outside a case's own grading
//! (a code judge through the target proxy) calls online.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use super::batch::{BatchMode, BatchState, JobRecord, JobView};
use super::{Interrupt, Job, RunObserver, RunSetup};
use crate::model::EvaluatorResult;
use crate::providers::{
    BatchApi, CostBasis, PromptMode, Provider, ProviderError, ProviderFuture, ProviderKind, ProviderRequest,
    ProviderResponse, ResolvedTarget, Throttle,
};

/// The most cases in flight at once while judges batch: they mostly wait on a judge job, but
/// each holds its answer until graded.
pub const WIDTH: usize = 10_000;
/// A queue nothing joined for this long goes out as it is (a case may wait on something the
/// wave cannot see, such as a workspace another waiting case holds).
const LINGER: Duration = Duration::from_secs(3);

tokio::task_local! {
    /// The case being graded, while its grading runs.
    static SEAT: Arc<Seat>;
}

/// What the wave tells the run's observer, from the tasks that follow jobs.
#[derive(Debug)]
pub enum Relayed {
    Line(String),
    Job(JobView),
}

/// An answer from a job, or why there is none.
type Answer = Result<(ProviderResponse, String), ProviderError>;

/// The judge wave of a run.
pub struct Wave {
    shared: Arc<Shared>,
    /// The batching version of each target, by the address of the run's own.
    adopted: HashMap<usize, Arc<ResolvedTarget>>,
    /// The queue of each judge provider, by its address (targets may share a judge).
    queues: HashMap<usize, Arc<Queue>>,
}

/// What the cases, the queues and the job tasks share.
struct Shared {
    counts: Mutex<Counts>,
    width: usize,
    queues: Mutex<Vec<Arc<Queue>>>,
    /// Worker slots: a case holds one while it works, not while it waits on a judge.
    slots: Arc<Semaphore>,
    state: Mutex<BatchState>,
    state_path: Option<PathBuf>,
    strict: bool,
    relay: mpsc::UnboundedSender<Relayed>,
    interrupt: Interrupt,
    secrets: crate::redact::Secrets,
}

#[derive(Debug, Default)]
struct Counts {
    in_flight: usize,
    waiting: usize,
    /// No case is left to start.
    exhausted: bool,
}

/// One judge provider's queue.
struct Queue {
    name: String,
    inner: Arc<dyn Provider>,
    pending: Mutex<Pending>,
    /// Judge requests an earlier run submitted, by custom id: the job holding each.
    earlier: HashMap<String, String>,
    /// Jobs of an earlier run followed again, by id.
    reattached: Mutex<HashMap<String, Arc<Mutex<Delivery>>>>,
}

#[derive(Default)]
struct Pending {
    items: Vec<Value>,
    bytes: usize,
    waiters: HashMap<String, oneshot::Sender<Answer>>,
    last: Option<Instant>,
}

/// Where a job's answers go: to the graders waiting on them, or kept for those to come (a
/// reattached job's).
#[derive(Default)]
struct Delivery {
    waiters: HashMap<String, oneshot::Sender<Answer>>,
    /// Set once the job's results are read.
    results: Option<HashMap<String, Answer>>,
}

/// Whether `target`'s judge answers through its provider's batch API in this run.
pub fn batches(target: &ResolvedTarget, mode: BatchMode) -> bool {
    target.judge.batch_api().is_some() && (mode != BatchMode::Targets || target.registry.batches(&target.judge_name))
}

impl Wave {
    /// The wave of a run whose targets are `targets`, when one of their judges batches; what
    /// it says for the observer comes out of the receiver.
    pub fn open(
        targets: &[Arc<ResolvedTarget>],
        setup: &RunSetup,
        interrupt: &Interrupt,
    ) -> Option<(Self, mpsc::UnboundedReceiver<Relayed>)> {
        let batching: Vec<&Arc<ResolvedTarget>> = targets.iter().filter(|t| batches(t, setup.options.batch)).collect();
        if batching.is_empty() {
            return None;
        }
        let state = setup
            .batch_state
            .as_deref()
            .and_then(|p| BatchState::load(p).ok())
            .unwrap_or_default();
        let (relay, rx) = mpsc::unbounded_channel();
        let workers = setup.workers.max(1);
        let shared = Arc::new(Shared {
            counts: Mutex::default(),
            width: workers.max(WIDTH),
            queues: Mutex::default(),
            slots: Arc::new(Semaphore::new(workers)),
            state: Mutex::new(state),
            state_path: setup.batch_state.clone(),
            strict: setup.options.batch == BatchMode::Strict,
            relay,
            interrupt: interrupt.clone(),
            secrets: setup.context.secrets.clone(),
        });
        let mut wave = Self {
            shared,
            adopted: HashMap::new(),
            queues: HashMap::new(),
        };
        for target in batching {
            wave.adopt_target(target);
        }
        linger(Arc::downgrade(&wave.shared));
        Some((wave, rx))
    }

    /// How many cases may be in flight at once.
    pub fn width(&self) -> usize {
        self.shared.width
    }

    fn adopt_target(&mut self, target: &Arc<ResolvedTarget>) {
        let judge_key = Arc::as_ptr(&target.judge).cast::<()>() as usize;
        let queue = self
            .queues
            .entry(judge_key)
            .or_insert_with(|| {
                let queue = Arc::new(Queue::new(&target.judge_name, target.judge.clone(), &self.shared));
                lock(&self.shared.queues).push(queue.clone());
                queue
            })
            .clone();
        let judge: Arc<dyn Provider> = Arc::new(BatchedJudge {
            queue,
            shared: self.shared.clone(),
        });
        let adopted = ResolvedTarget {
            name: target.name.clone(),
            // A target that is its own judge keeps its own provider for its answers.
            provider: target.provider.clone(),
            judge_name: target.judge_name.clone(),
            judge,
            workers: target.workers,
            batching: target.batching,
            registry: target.registry.clone(),
        };
        self.adopted.insert(Arc::as_ptr(target) as usize, Arc::new(adopted));
    }

    /// `job` as it runs in the wave: its target's judge batches, and its seat counts it in flight.
    pub fn seat(&self, mut job: Job, slot: Option<OwnedSemaphorePermit>) -> (Job, Arc<Seat>) {
        if let Some(adopted) = self.adopted.get(&(Arc::as_ptr(&job.target) as usize)) {
            job.target = adopted.clone();
        }
        lock(&self.shared.counts).in_flight += 1;
        let seat = Arc::new(Seat {
            key: super::batch::custom_id(&job),
            shared: self.shared.clone(),
            permit: Mutex::new(slot),
            calls: Mutex::new(Vec::new()),
            seen: Mutex::new(HashMap::new()),
        });
        (job, seat)
    }

    /// No case is left to start: what waits can go out.
    pub fn exhausted(&self) {
        lock(&self.shared.counts).exhausted = true;
        self.shared.check();
    }
}

/// Flushes queues nothing joined for [`LINGER`], until the wave is gone.
fn linger(shared: Weak<Shared>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let Some(shared) = shared.upgrade() else { return };
            if shared.interrupt.stop.is_cancelled() {
                return;
            }
            let queues = lock(&shared.queues).clone();
            for queue in queues {
                let idle = lock(&queue.pending).last.is_some_and(|t| t.elapsed() >= LINGER);
                if idle {
                    queue.flush(&shared);
                }
            }
        }
    });
}

impl Shared {
    /// Sends every queue out when no case in flight can add to them.
    fn check(self: &Arc<Self>) {
        let ready = {
            let c = lock(&self.counts);
            c.waiting >= c.in_flight && (c.exhausted || c.in_flight >= self.width)
        };
        if ready && !self.interrupt.stop.is_cancelled() {
            let queues = lock(&self.queues).clone();
            for queue in queues {
                queue.flush(self);
            }
        }
    }

    fn say(&self, line: String) {
        let _ = self.relay.send(Relayed::Line(line));
    }

    /// Writes a submitted job to the state file before anything waits on it.
    fn record(&self, job: JobRecord) {
        let id = job.id.clone();
        let mut state = lock(&self.state);
        state.jobs.push(job);
        if let Some(path) = &self.state_path
            && let Err(e) = state.save(path)
        {
            self.say(format!(
                "cannot write the batch state {}: {e}; --resume will not find job {id}",
                path.display()
            ));
        }
    }
}

impl Queue {
    fn new(name: &str, inner: Arc<dyn Provider>, shared: &Shared) -> Self {
        let kind = inner.kind().as_str().to_owned();
        let earlier = lock(&shared.state)
            .jobs
            .iter()
            .filter(|j| j.target == name && j.role.as_deref() == Some(JUDGE_ROLE) && j.provider == kind)
            .flat_map(|j| j.custom_ids.iter().map(move |c| (c.clone(), j.id.clone())))
            .collect();
        Self {
            name: name.to_owned(),
            inner,
            pending: Mutex::default(),
            earlier,
            reattached: Mutex::default(),
        }
    }

    fn label(&self) -> String {
        format!("judge `{}`", self.name)
    }

    /// Where the answer to `custom` will come from: a job of an earlier run holding it, else
    /// the queue.
    fn join(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        api: &dyn BatchApi,
        custom: String,
        request: &ProviderRequest,
    ) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        if let Some(job) = self.earlier.get(&custom) {
            let delivery = {
                let mut reattached = lock(&self.reattached);
                reattached
                    .entry(job.clone())
                    .or_insert_with(|| {
                        shared.say(format!("batch job {job} of {}: reattached", self.label()));
                        let delivery = Arc::new(Mutex::new(Delivery::default()));
                        tokio::spawn(follow(shared.clone(), self.clone(), job.clone(), delivery.clone()));
                        delivery
                    })
                    .clone()
            };
            let mut d = lock(&delivery);
            match d.results.as_mut() {
                Some(results) => {
                    let answer = results
                        .remove(&custom)
                        .unwrap_or(Err(ProviderError::Unanswered("no result in its batch job")));
                    let _ = tx.send(answer);
                }
                None => {
                    d.waiters.insert(custom, tx);
                }
            }
            return rx;
        }
        let item = api.item(&custom, request);
        let full = {
            let mut p = lock(&self.pending);
            p.bytes += item.to_string().len() + 1;
            p.items.push(item);
            p.waiters.insert(custom, tx);
            p.last = Some(Instant::now());
            let limits = api.limits();
            p.items.len() >= limits.requests || p.bytes >= limits.bytes
        };
        if full {
            self.flush(shared);
        }
        rx
    }

    /// Sends what the queue holds as one job.
    fn flush(self: &Arc<Self>, shared: &Arc<Shared>) {
        let pending = std::mem::take(&mut *lock(&self.pending));
        if !pending.items.is_empty() {
            tokio::spawn(submit(shared.clone(), self.clone(), pending));
        }
    }
}

/// `role` of a judge job in the state file.
pub const JUDGE_ROLE: &str = "judge";

/// Submits `pending` as one job, writes its id to the state file, then follows it.
async fn submit(shared: Arc<Shared>, queue: Arc<Queue>, pending: Pending) {
    let Some(api) = queue.inner.batch_api() else { return };
    let Pending { items, waiters, .. } = pending;
    let count = items.len();
    match api.submit(&items).await {
        Err(e) => {
            let message = shared.secrets.redact(&e.to_string()).into_owned();
            let then = if shared.strict {
                "they are grader errors"
            } else {
                "they go online"
            };
            shared.say(format!(
                "batch of {} not submitted ({message}); {then} ({count} request(s))",
                queue.label()
            ));
            for (_, tx) in waiters {
                let _ = tx.send(Err(e.clone()));
            }
        }
        Ok(id) => {
            drop(items);
            shared.record(JobRecord {
                target: queue.name.clone(),
                provider: queue.inner.kind().as_str().to_owned(),
                id: id.clone(),
                submitted_at: jiff::Timestamp::now().to_string(),
                custom_ids: waiters.keys().cloned().collect(),
                role: Some(JUDGE_ROLE.to_owned()),
            });
            shared.say(format!(
                "batch job {id} of {}: submitted, {count} request(s)",
                queue.label()
            ));
            let delivery = Arc::new(Mutex::new(Delivery { waiters, results: None }));
            follow(shared, queue, id, delivery).await;
        }
    }
}

/// Polls job `id` to its end and hands its answers to the graders waiting on them (and keeps
/// the others for graders to come). What has no answer is said once.
async fn follow(shared: Arc<Shared>, queue: Arc<Queue>, id: String, delivery: Arc<Mutex<Delivery>>) {
    let Some(api) = queue.inner.batch_api() else { return };
    let label = queue.label();
    let mut relay = Relay(&shared.relay);
    let ended = super::batch::poll(api, &label, std::slice::from_ref(&id), &mut relay, &shared.interrupt).await;
    if shared.interrupt.stop.is_cancelled() {
        // The graders waiting stop with the run; `--resume` reattaches to the job.
        return;
    }
    let mut kept = HashMap::new();
    let mut failed = 0;
    for (job, result) in ended {
        let state = match result {
            Ok(state) => state,
            Err(e) => {
                shared.say(format!("batch job {job} of {label}: {e}"));
                continue;
            }
        };
        let mut take = |(custom, result): crate::providers::batch::ItemResult| {
            let answer = result.map(|r| (queue.inner.price_batched(r), job.clone()));
            failed += usize::from(answer.is_err());
            let waiter = lock(&delivery).waiters.remove(&custom);
            match waiter {
                Some(tx) => {
                    let _ = tx.send(answer);
                }
                None => {
                    kept.insert(custom, answer);
                }
            }
        };
        if let Err(e) = api.results(&state, &mut take).await {
            shared.say(format!("batch job {job} of {label}: cannot read its results ({e})"));
        }
    }
    let mut d = lock(&delivery);
    failed += d.waiters.len();
    for (_, tx) in d.waiters.drain() {
        let _ = tx.send(Err(ProviderError::Unanswered("no result in its batch job")));
    }
    d.results = Some(kept);
    drop(d);
    if failed > 0 {
        let then = if shared.strict {
            "they are grader errors"
        } else {
            "answering them online"
        };
        shared.say(format!("{failed} request(s) of {label} had no batch answer; {then}"));
    }
}

/// The run's observer as the job tasks reach it.
struct Relay<'a>(&'a mpsc::UnboundedSender<Relayed>);

impl RunObserver for Relay<'_> {
    fn case_finished(&mut self, _: &crate::model::EvaluationRecord, _: Duration, _: usize, _: usize) {}

    fn batch_progress(&mut self, line: &str) {
        let _ = self.0.send(Relayed::Line(line.to_owned()));
    }

    fn batch_job(&mut self, job: &JobView) {
        let _ = self.0.send(Relayed::Job(job.clone()));
    }
}

/// A case in the wave: counted in flight from when it is taken until it is dropped.
pub struct Seat {
    /// The case's custom id ([`super::batch::custom_id`]).
    key: String,
    shared: Arc<Shared>,
    permit: Mutex<Option<OwnedSemaphorePermit>>,
    /// Each judge call of the case: the job that answered it, or none (answered online).
    calls: Mutex<Vec<Option<String>>>,
    /// How often each judge request was made (a case may ask the same twice).
    seen: Mutex<HashMap<String, u32>>,
}

impl Seat {
    async fn take_slot(&self) {
        if let Ok(permit) = self.shared.slots.clone().acquire_owned().await {
            *lock(&self.permit) = Some(permit);
        }
    }

    fn give_slot(&self) {
        lock(&self.permit).take();
    }

    /// The custom id of a judge request: stable across runs for the same case, judge and
    /// request, so a resumed run finds it in the jobs it reattaches to.
    fn custom_id(&self, judge: &str, request: &ProviderRequest) -> String {
        let mut h = Sha256::new();
        for part in [self.key.as_str(), judge, &request.question, &request.guidelines] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        h.update(request.system_prompt.as_deref().unwrap_or_default().as_bytes());
        h.update([0]);
        if let Some(chat) = &request.chat_prompt {
            for m in chat {
                h.update(m.role.as_bytes());
                h.update([1]);
                h.update(m.content.as_bytes());
                h.update([0]);
            }
        }
        h.update(request.temperature.map(f64::to_bits).unwrap_or(u64::MAX).to_le_bytes());
        let digest = hex::encode(h.finalize());
        let mut seen = lock(&self.seen);
        let n = seen.entry(digest.clone()).or_insert(0);
        *n += 1;
        format!("agentv-j-{}-{n}", &digest[..24])
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        {
            let mut c = lock(&self.shared.counts);
            c.in_flight = c.in_flight.saturating_sub(1);
        }
        self.shared.check();
    }
}

/// A case waiting on something the wave serves (a judge job, a case it depends on): while it
/// waits, the queues may go out without it.
struct Waiting(Arc<Shared>);

impl Waiting {
    fn begin(shared: &Arc<Shared>) -> Self {
        lock(&shared.counts).waiting += 1;
        shared.check();
        Self(shared.clone())
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut c = lock(&self.0.counts);
        c.waiting = c.waiting.saturating_sub(1);
    }
}

/// Runs `grading` (a case from its target's answer to its record) in `seat`: it holds its worker
/// slot except while it waits on a judge job.
pub async fn seated<T>(seat: Option<Arc<Seat>>, grading: impl Future<Output = T>) -> T {
    match seat {
        Some(seat) => SEAT.scope(seat, grading).await,
        None => grading.await,
    }
}

/// The items of `jobs` as a stream, each with a worker slot when there is a `wave`: the next
/// case starts when a slot is free, and cases waiting on a judge job have given theirs back.
pub fn paced<I>(jobs: I, wave: Option<&Wave>) -> impl futures::Stream<Item = (I::Item, Option<OwnedSemaphorePermit>)>
where
    I: Iterator + Send,
{
    let slots = wave.map(|w| w.shared.slots.clone());
    futures::stream::unfold((jobs, slots), |(mut jobs, slots)| async move {
        let slot = match &slots {
            Some(slots) => Some(slots.clone().acquire_owned().await.ok()?),
            None => None,
        };
        let job = jobs.next()?;
        Some(((job, slot), (jobs, slots)))
    })
}

/// Waits for `other` (the cases a case depends on) counted as waiting, its worker slot given
/// back meanwhile.
pub async fn parked<T>(seat: Option<&Arc<Seat>>, other: impl Future<Output = T>) -> T {
    let Some(seat) = seat else { return other.await };
    seat.give_slot();
    let waiting = Waiting::begin(&seat.shared);
    let out = other.await;
    drop(waiting);
    seat.take_slot().await;
    out
}

/// How many judge calls the case being graded has made.
pub fn calls_so_far() -> usize {
    SEAT.try_with(|s| lock(&s.calls).len()).unwrap_or(0)
}

/// Says on `result` whether its judge calls (those after the first `since` of its case) were
/// answered by a batch job: `batched` and `batch_job` in its `evaluator_provider_request`
/// (`docs/results.md`).
pub fn mark(result: &mut EvaluatorResult, since: usize) {
    let calls: Vec<Option<String>> = SEAT
        .try_with(|s| lock(&s.calls).get(since..).map(<[_]>::to_vec).unwrap_or_default())
        .unwrap_or_default();
    if calls.is_empty() {
        return;
    }
    let batched = calls.iter().all(Option::is_some);
    let mut jobs: Vec<&String> = calls.iter().flatten().collect();
    jobs.dedup();
    let into = match &mut result.evaluator_provider_request {
        Some(Value::Object(request)) => request,
        _ => result.details.get_or_insert_with(Default::default),
    };
    into.insert("batched".to_owned(), Value::Bool(batched));
    if let [job] = jobs.as_slice() {
        into.insert("batch_job".to_owned(), Value::String((*job).clone()));
    }
}

/// A judge whose calls during a case's grading join the wave's queue.
struct BatchedJudge {
    queue: Arc<Queue>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for BatchedJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchedJudge").field("judge", &self.queue.name).finish()
    }
}

impl BatchedJudge {
    async fn answer(&self, request: &ProviderRequest) -> Result<ProviderResponse, ProviderError> {
        let inner = &self.queue.inner;
        let (Ok(seat), Some(api)) = (SEAT.try_with(Arc::clone), inner.batch_api()) else {
            return inner.invoke(request).await;
        };
        let custom = seat.custom_id(&self.queue.name, request);
        let rx = self.queue.join(&self.shared, api, custom, request);
        seat.give_slot();
        let waiting = Waiting::begin(&self.shared);
        let answer = rx.await;
        drop(waiting);
        seat.take_slot().await;
        let failure = match answer {
            Ok(Ok((mut response, job))) => {
                let metadata = response.metadata.get_or_insert_with(Default::default);
                metadata.insert("batched".to_owned(), Value::Bool(true));
                metadata.insert("batch_job".to_owned(), Value::String(job.clone()));
                lock(&seat.calls).push(Some(job));
                return Ok(response);
            }
            Ok(Err(e)) => e,
            Err(_) if self.shared.interrupt.stop.is_cancelled() => {
                // The run is stopping: the case ends unrecorded and `--resume` grades it.
                return std::future::pending().await;
            }
            Err(_) => ProviderError::Unanswered("its batch job ended without an answer"),
        };
        lock(&seat.calls).push(None);
        if self.shared.strict {
            return Err(ProviderError::BatchItem {
                case: None,
                source: Box::new(failure),
            });
        }
        inner.invoke(request).await
    }
}

impl Provider for BatchedJudge {
    fn target_name(&self) -> &str {
        self.queue.inner.target_name()
    }

    fn kind(&self) -> ProviderKind {
        self.queue.inner.kind()
    }

    fn prompt_mode(&self) -> PromptMode {
        self.queue.inner.prompt_mode()
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(self.answer(request))
    }

    fn healthcheck<'a>(&'a self, eval_dir: &'a std::path::Path) -> ProviderFuture<'a, ()> {
        self.queue.inner.healthcheck(eval_dir)
    }

    fn public_settings(&self) -> Value {
        self.queue.inner.public_settings()
    }

    fn tool_settings(&self) -> Option<&crate::model::ToolSettings> {
        self.queue.inner.tool_settings()
    }

    fn throttle(&self) -> Option<&Arc<Throttle>> {
        self.queue.inner.throttle()
    }

    fn batch_api(&self) -> Option<&dyn BatchApi> {
        self.queue.inner.batch_api()
    }

    fn price_batched(&self, response: ProviderResponse) -> ProviderResponse {
        self.queue.inner.price_batched(response)
    }

    fn cost_basis(&self) -> CostBasis {
        self.queue.inner.cost_basis()
    }

    fn max_workers(&self) -> Option<usize> {
        self.queue.inner.max_workers()
    }

    fn executable(&self) -> Option<&str> {
        self.queue.inner.executable()
    }
}

/// A lock that a panic elsewhere does not make unusable (what it guards stays consistent).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
