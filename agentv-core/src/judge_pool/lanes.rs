//! Multiplexed workers: many requests in flight on one process (see the module docs of
//! [`super`]).
//!
//! Each lane is one worker process and a task reading its stdout: the task checks the ready
//! line, then hands each answer to the request whose id it carries, in whatever order they
//! come. A case takes the lane with the fewest requests in flight; another lane starts only
//! when every lane already holds [`DEPTH`], up to one lane per CPU (more processes than CPUs
//! would only share the same cores, at tens of megabytes each). A lane that breaks (it dies,
//! or prints a line that answers no request) fails the requests it holds and leaves the pool:
//! the next case starts a fresh one. A request that times out retires its lane the same way;
//! the lane is stopped once the other requests it holds are answered or time out.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{Broken, CaseRequest, Group, JudgePool, JudgeProcess, NOT_PERSISTENT_HINT, PoolError};
use crate::redact::Secrets;

/// Requests in flight on every lane before another lane starts.
const DEPTH: usize = 8;
/// A lane's memory is read from `/proc` after every this many answers rather than after each:
/// the read costs about as much as a whole inline assertion.
const RSS_EVERY: u64 = 32;

/// The lanes of one pool.
pub(super) struct Lanes {
    max: usize,
    lanes: Mutex<Vec<Arc<Lane>>>,
}

impl Lanes {
    pub(super) fn new() -> Self {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        Self {
            max: cpus.clamp(1, 8),
            lanes: Mutex::default(),
        }
    }

    /// How many lanes may run at once.
    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// The end of the run: every lane's stdin closed, its process group to wait for.
    pub(super) fn close(&mut self) -> Vec<Group> {
        let lanes = std::mem::take(self.lanes.get_mut().unwrap_or_else(|e| e.into_inner()));
        lanes
            .into_iter()
            .filter_map(|lane| Arc::try_unwrap(lane).ok())
            .map(Lane::into_group)
            .collect()
    }

    /// Grades one case on a lane of `pool`.
    pub(super) async fn grade(&self, pool: &JudgePool, case: CaseRequest<'_>) -> Result<Value, PoolError> {
        let lane = self.pick(pool, &case)?;
        let answer = lane.exchange(&case).await;
        lane.in_flight.fetch_sub(1, Ordering::AcqRel);
        match &answer {
            Ok(_) | Err(PoolError::Judge(_)) => {
                let served = lane.served.fetch_add(1, Ordering::AcqRel) + 1;
                let pid = lane.pid.filter(|_| served % RSS_EVERY == 0);
                if let Some(why) = pool.worn_out(served, pid)
                    && self.retire(&lane)
                {
                    pool.note_recycled(&why);
                }
            }
            Err(e) => {
                if let PoolError::NotPersistent(message) = e {
                    pool.refuse(message);
                }
                self.retire(&lane);
            }
        }
        answer
    }

    /// The lane with the fewest requests in flight, or a new one when all are [`DEPTH`] deep
    /// and there is room; counted in flight.
    fn pick(&self, pool: &JudgePool, case: &CaseRequest<'_>) -> Result<Arc<Lane>, PoolError> {
        let mut lanes = lock(&self.lanes);
        let least = lanes
            .iter()
            .min_by_key(|lane| lane.in_flight.load(Ordering::Acquire))
            .cloned();
        let lane = match least {
            Some(lane) if lane.in_flight.load(Ordering::Acquire) < DEPTH || lanes.len() >= self.max => lane,
            _ => {
                pool.starts.fetch_add(1, Ordering::Relaxed);
                let lane = Arc::new(Lane::start(&pool.argv, &pool.cwd, case.env)?);
                lanes.push(lane.clone());
                lane
            }
        };
        lane.in_flight.fetch_add(1, Ordering::AcqRel);
        Ok(lane)
    }

    /// Takes `lane` out of service (it is stopped when the last request holding it is done);
    /// whether it was still in service.
    fn retire(&self, lane: &Arc<Lane>) -> bool {
        let mut lanes = lock(&self.lanes);
        let before = lanes.len();
        lanes.retain(|l| !Arc::ptr_eq(l, lane));
        lanes.len() < before
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// An answer line, parsed, with its text (for messages).
type Answer = Result<(Map<String, Value>, String), Broken>;

/// What the reading task shares with the requests of a lane.
#[derive(Default)]
struct Answers {
    /// Requests sent and not answered yet.
    waiting: HashMap<u64, oneshot::Sender<Answer>>,
    /// The last request id given out: an answer to an earlier request that is no longer
    /// waiting (it timed out) is dropped, anything else is a protocol error.
    issued: u64,
    /// The ready line came.
    ready: bool,
    /// Why the lane takes no more requests.
    broken: Option<Broken>,
}

/// One multiplexed worker process.
struct Lane {
    group: tokio::sync::Mutex<Group>,
    pid: Option<u32>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    answers: Arc<Mutex<Answers>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_reader: Mutex<Option<JoinHandle<()>>>,
    _reader: AbortOnDrop,
    in_flight: AtomicUsize,
    served: AtomicU64,
}

/// The task reading a lane's answers, stopped with the lane.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Lane {
    fn start(argv: &[String], cwd: &Path, env: &[(String, String)]) -> Result<Self, PoolError> {
        let JudgeProcess {
            child,
            stdin,
            stdout,
            stderr,
            stderr_reader,
            ..
        } = JudgeProcess::spawn(argv, cwd, env)?;
        let answers = Arc::new(Mutex::new(Answers::default()));
        let reader = tokio::spawn(read_answers(stdout, answers.clone()));
        Ok(Self {
            pid: child.0.id(),
            group: tokio::sync::Mutex::new(child),
            stdin: tokio::sync::Mutex::new(stdin),
            answers,
            stderr,
            stderr_reader: Mutex::new(stderr_reader),
            _reader: AbortOnDrop(reader),
            in_flight: AtomicUsize::new(0),
            served: AtomicU64::new(0),
        })
    }

    /// Its process group, its stdin closed and its reader stopped.
    fn into_group(self) -> Group {
        let Self { group, stdin, .. } = self;
        drop(stdin);
        group.into_inner()
    }

    /// Sends one case and waits for its answer.
    async fn exchange(&self, case: &CaseRequest<'_>) -> Result<Value, PoolError> {
        let waiting = {
            let mut answers = lock(&self.answers);
            match answers.broken.clone() {
                Some(broken) => Err(broken),
                None => {
                    answers.issued += 1;
                    let id = answers.issued;
                    let (tx, rx) = oneshot::channel();
                    answers.waiting.insert(id, tx);
                    Ok((id, rx))
                }
            }
        };
        let (id, answer) = match waiting {
            Ok(waiting) => waiting,
            Err(broken) => return Err(self.failure(broken, case).await),
        };
        let line = super::request_line(&Value::from(id), &case.payload, case.proxy.as_ref());
        let exchange = async {
            // A failed write means the worker is gone: its reader reports how.
            let _ = self.send(&line).await;
            answer.await.unwrap_or(Err(Broken::Closed))
        };
        match tokio::time::timeout(case.timeout, exchange).await {
            Ok(Ok((response, text))) => super::answer_of(response, &text, case.secrets),
            Ok(Err(broken)) => Err(self.failure(broken, case).await),
            Err(_) => {
                let ready = {
                    let mut answers = lock(&self.answers);
                    answers.waiting.remove(&id);
                    answers.ready
                };
                Err(if ready {
                    PoolError::TimedOut(case.timeout, super::stderr_suffix(&self.stderr, case.secrets))
                } else {
                    PoolError::NotPersistent(format!(
                        "no ready line within {}s{NOT_PERSISTENT_HINT}",
                        case.timeout.as_secs_f64()
                    ))
                })
            }
        }
    }

    async fn send(&self, line: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        let stdin = stdin.as_mut().ok_or(std::io::ErrorKind::BrokenPipe)?;
        stdin.write_all(line).await?;
        stdin.flush().await
    }

    /// The error for a request on a lane that broke.
    async fn failure(&self, broken: Broken, case: &CaseRequest<'_>) -> PoolError {
        let secrets = case.secrets;
        match broken {
            Broken::Closed => {
                let how = super::exit_text(&mut *self.group.lock().await).await;
                let reader = lock(&self.stderr_reader).take();
                super::read_stderr_to_end(reader).await;
                let when = if lock(&self.answers).ready {
                    "while grading this case"
                } else {
                    "before announcing itself"
                };
                PoolError::Died(format!("{how} {when}"), super::stderr_suffix(&self.stderr, secrets))
            }
            Broken::Bad(e) => PoolError::Protocol(e),
            Broken::NotReady(line) => {
                let why = super::check_ready(&line, secrets)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                PoolError::NotPersistent(format!("{why}{NOT_PERSISTENT_HINT}"))
            }
            Broken::Stray(line) => PoolError::Protocol(stray(&line, secrets)),
        }
    }
}

/// Why `line` answers no request.
fn stray(line: &str, secrets: &Secrets) -> String {
    let shown = crate::process::tail(line, 200, secrets);
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(response)) => format!(
            "it answered with id {}, which no request has (got: {shown:?})",
            response.get("id").unwrap_or(&Value::Null)
        ),
        _ => format!("its response is not a JSON object (got: {shown:?})"),
    }
}

/// Reads a lane's stdout to its end: the ready line, then answers, each handed to its request.
/// When the lane breaks, every request still waiting gets why.
async fn read_answers(mut stdout: BufReader<ChildStdout>, answers: Arc<Mutex<Answers>>) {
    let broken = loop {
        let line = match super::next_line(&mut stdout).await {
            Err(e) => break Broken::Bad(e.to_string()),
            Ok(None) => break Broken::Closed,
            Ok(Some(line)) if line.trim().is_empty() => continue,
            Ok(Some(line)) => line,
        };
        let mut answers = lock(&answers);
        if !answers.ready {
            if super::check_ready(&line, &Secrets::default()).is_err() {
                break Broken::NotReady(line);
            }
            answers.ready = true;
            continue;
        }
        let Ok(Value::Object(response)) = crate::js::from_js_json(&line) else {
            break Broken::Stray(line);
        };
        let Some(id) = response.get("id").and_then(Value::as_u64) else {
            break Broken::Stray(line);
        };
        match answers.waiting.remove(&id) {
            Some(waiting) => {
                let _ = waiting.send(Ok((response, line)));
            }
            // Its request timed out; the answer came late.
            None if (1..=answers.issued).contains(&id) => {}
            None => break Broken::Stray(line),
        }
    };
    let mut answers = lock(&answers);
    for (_, waiting) in answers.waiting.drain() {
        let _ = waiting.send(Err(broken.clone()));
    }
    answers.broken = Some(broken);
}
