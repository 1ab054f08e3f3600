//! Persistent code judges: one long-lived judge process per worker, one JSON line per case.
//!
//! Starting an interpreter per case costs tens of milliseconds of CPU; a judge with
//! `persistent: true` is started once and then fed cases over stdin (docs/judges.md,
//! "Persistent judges"). A pool holds the idle processes of one program (its argv and working
//! directory): a case takes one, or starts one when none is idle, so there are never more than
//! the cases graded at the same time (the run's workers). A process that dies, times out or
//! breaks the protocol is killed with its process group and never returned: the next case gets
//! a fresh one. Every process left when the pool is dropped (the end of the run, or a run
//! cancelled by Ctrl-C/SIGTERM) is killed with its group.
//!
//! Pools are shared by program through a registry of weak references, so graders parsed once
//! per case (case-level `evaluators`) share their processes too, and a pool lives exactly as
//! long as the graders using it.
//!
//! agentv's own warm workers (the `javascript` and `python` assertions, JavaScript providers
//! and transforms: docs/promptfoo.md#javascript) are **multiplexed** instead ([`lanes`]): they
//! answer requests as they finish, in any order, so one process takes many requests at once and
//! a few processes (one per CPU at most) serve every case graded at the same time.
//!
//! A judge that grows without bound (a cache never emptied, a leak) is **recycled**: after a
//! case, a process that has served `max_cases` cases, or whose resident memory (with its
//! children's, read from `/proc`) passed `max_memory_mb`, is stopped, and the next case starts
//! a fresh one ([`Recycle`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

use agentv_eval_sdk::persistent::{PERSISTENT_ENV, PROTOCOL_VERSION};
use agentv_eval_sdk::proxy::{JUDGE_PROXY_TOKEN_ENV, JUDGE_PROXY_URL_ENV, PROXY_TOKEN_ENV, PROXY_URL_ENV};
use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessGroup};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

use crate::redact::Secrets;

mod lanes;

/// A response line longer than this is a protocol error (a judge printing without end).
const MAX_LINE: u64 = crate::process::MAX_CAPTURE as u64;
/// How much of a judge's stderr is kept for error messages (the end of it).
const STDERR_KEEP: usize = 16 * 1024;
/// How many characters of stderr an error message quotes.
const STDERR_SHOWN: usize = 2000;
/// How long to wait for the exit status of a judge that closed its stdout.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long idle judges get to exit by themselves once their stdin is closed at the end of a
/// run, before their process groups are killed.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// When a persistent judge process is replaced by a fresh one, between cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Recycle {
    /// After this many cases.
    pub max_cases: Option<u64>,
    /// Once its resident memory (the process and its descendants) is above this many bytes.
    pub max_rss_bytes: Option<u64>,
}

impl Recycle {
    /// The default ceiling: 1 GiB of resident memory, no limit on cases.
    pub const DEFAULT_MAX_MEMORY_MB: u64 = 1024;
}

impl Default for Recycle {
    fn default() -> Self {
        Self {
            max_cases: None,
            max_rss_bytes: Some(Self::DEFAULT_MAX_MEMORY_MB * 1024 * 1024),
        }
    }
}

/// The processes of one persistent judge program.
pub struct JudgePool {
    argv: Vec<String>,
    cwd: PathBuf,
    recycle: Recycle,
    idle: Mutex<Vec<JudgeProcess>>,
    /// Set when a started judge answered with something other than the ready line: every
    /// later case fails at once with the same message instead of waiting for a timeout.
    refused: Mutex<Option<String>>,
    starts: AtomicU64,
    recycled: AtomicU64,
    /// Set for agentv's own workers, which answer many requests at once ([`lanes`]).
    lanes: Option<lanes::Lanes>,
}

impl std::fmt::Debug for JudgePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgePool")
            .field("argv", &self.argv)
            .field("cwd", &self.cwd)
            .field("starts", &self.starts.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Drop for JudgePool {
    /// The end of the run: closes every idle judge's stdin (the protocol's "end": an SDK judge
    /// exits 0), gives them [`CLOSE_GRACE`] to exit, then kills the groups of those still
    /// running. Waiting also reaps them, so no zombie is left and their CPU time is counted as
    /// agentv's children's. A pool dropped on a runtime thread waits on a blocking thread
    /// instead (the runtime's shutdown waits for it), so no worker stalls for the grace.
    fn drop(&mut self) {
        let idle = std::mem::take(self.idle.get_mut().unwrap_or_else(|e| e.into_inner()));
        // Dropping a process's stdin closes it.
        let mut groups: Vec<Group> = idle.into_iter().map(|process| process.child).collect();
        if let Some(lanes) = &mut self.lanes {
            groups.extend(lanes.close());
        }
        if groups.is_empty() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(move || close(groups));
            }
            Err(_) => close(groups),
        }
    }
}

/// Waits up to [`CLOSE_GRACE`] for judges whose stdin is closed, then kills what is left.
fn close(mut groups: Vec<Group>) {
    let deadline = std::time::Instant::now() + CLOSE_GRACE;
    for group in &mut groups {
        while std::time::Instant::now() < deadline {
            match group.0.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Ok(Some(_)) | Err(_) => break,
            }
        }
    }
    // Dropping each one kills its group (whatever is left of it).
    drop(groups);
}

/// A judge's process group, killed when dropped: a judge's own children must not outlive it.
pub(crate) struct Group(Box<dyn ChildWrapper>);

impl Drop for Group {
    fn drop(&mut self) {
        // ESRCH (already gone) is fine.
        let _ = self.0.start_kill();
    }
}

type Registry = Mutex<HashMap<(Vec<String>, PathBuf, Recycle, bool), Weak<JudgePool>>>;
static POOLS: LazyLock<Registry> = LazyLock::new(Registry::default);

/// Everything a case needs to be graded by a pooled judge.
pub struct CaseRequest<'a> {
    /// Added to agentv's environment when a process has to be started.
    pub env: &'a [(String, String)],
    /// The payload, the same object a one-shot judge reads on stdin.
    pub payload: Value,
    /// `{url, token, max_calls}` of this case's target proxy, when the evaluator has one.
    pub proxy: Option<Value>,
    /// For the case and, when a process must be started, for the ready line.
    pub timeout: Duration,
    /// Redacted from the stderr quoted in error messages.
    pub secrets: &'a Secrets,
}

/// Why a pooled judge could not grade a case. Every message starts with "code judge".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    #[error("code judge cannot start: {0}")]
    Spawn(String),
    #[error("code judge is not speaking the persistent protocol: {0}")]
    NotPersistent(String),
    #[error("code judge timed out after {secs}s on this case; it was stopped and the next case starts a fresh one{1}", secs = .0.as_secs_f64())]
    TimedOut(Duration, String),
    #[error("code judge {0}; the next case starts a fresh one{1}")]
    Died(String, String),
    #[error("code judge broke the persistent protocol: {0}; it was stopped and the next case starts a fresh one")]
    Protocol(String),
    #[error("code judge reported an error: {0}")]
    Judge(String),
}

impl PoolError {
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::TimedOut(..))
    }
}

impl JudgePool {
    /// The pool of `argv` run in `cwd`, shared with every grader of the same program (and the
    /// same `recycle` limits).
    pub fn shared(argv: &[String], cwd: &Path, recycle: Recycle) -> Arc<Self> {
        Self::registered(argv, cwd, recycle, false)
    }

    /// The pool of one of agentv's own workers (`argv` run in `cwd`): each process takes many
    /// requests at once and answers them as they finish, so a few processes serve all the cases
    /// graded at the same time ([`lanes`]).
    pub fn multiplexed(argv: &[String], cwd: &Path, recycle: Recycle) -> Arc<Self> {
        Self::registered(argv, cwd, recycle, true)
    }

    fn registered(argv: &[String], cwd: &Path, recycle: Recycle, multiplexed: bool) -> Arc<Self> {
        let key = (argv.to_vec(), cwd.to_path_buf(), recycle, multiplexed);
        let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pool) = pools.get(&key).and_then(Weak::upgrade) {
            return pool;
        }
        pools.retain(|_, pool| pool.strong_count() > 0);
        let pool = Arc::new(Self {
            argv: key.0.clone(),
            cwd: key.1.clone(),
            recycle,
            idle: Mutex::new(Vec::new()),
            refused: Mutex::new(None),
            starts: AtomicU64::new(0),
            recycled: AtomicU64::new(0),
            lanes: multiplexed.then(lanes::Lanes::new),
        });
        pools.insert(key, Arc::downgrade(&pool));
        pool
    }

    /// How many processes this pool has started.
    pub fn starts(&self) -> u64 {
        self.starts.load(Ordering::Relaxed)
    }

    /// How many processes a multiplexed pool runs at once at most; `None` for a judge's pool,
    /// which runs one per case graded at the same time.
    pub fn max_processes(&self) -> Option<usize> {
        self.lanes.as_ref().map(lanes::Lanes::max)
    }

    /// How many processes this pool has recycled (stopped after a case for their limits).
    pub fn recycled(&self) -> u64 {
        self.recycled.load(Ordering::Relaxed)
    }

    /// Why `process`, which has just answered a case, must not serve another: `None` when it
    /// may.
    /// `served` is how many cases the process answered; `pid` is `None` to skip the memory
    /// check.
    fn worn_out(&self, served: u64, pid: Option<u32>) -> Option<String> {
        if let Some(max) = self.recycle.max_cases
            && served >= max
        {
            return Some(format!("it served max_cases = {max} cases"));
        }
        let ceiling = self.recycle.max_rss_bytes?;
        let rss = pid.and_then(tree_rss_bytes)?;
        (rss > ceiling).then(|| {
            format!(
                "its memory ({} MB) is over max_memory_mb = {}",
                rss / (1024 * 1024),
                ceiling / (1024 * 1024)
            )
        })
    }

    /// Grades one case: its result object (the judge's `result`), or why there is none.
    pub async fn grade(&self, case: CaseRequest<'_>) -> Result<Value, PoolError> {
        if let Some(message) = self.refused.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            return Err(PoolError::NotPersistent(message));
        }
        if let Some(lanes) = &self.lanes {
            return lanes.grade(self, case).await;
        }
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut process = match idle {
            Some(process) => process,
            None => self.start(&case).await?,
        };
        let answer = process.exchange(&case).await;
        match &answer {
            // The process answered in step: it can serve the next case, unless it is worn out.
            Ok(_) | Err(PoolError::Judge(_)) => {
                process.served += 1;
                match self.worn_out(process.served, process.child.0.id()) {
                    None => self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(process),
                    Some(why) => {
                        self.note_recycled(&why);
                        drop(process);
                    }
                }
            }
            // Dropping it kills its process group.
            Err(_) => drop(process),
        }
        answer
    }

    fn note_recycled(&self, why: &str) {
        self.recycled.fetch_add(1, Ordering::Relaxed);
        tracing::info!(judge = ?self.argv, "persistent judge recycled: {why}; the next case starts a fresh one");
    }

    /// Every later case fails at once with `message`.
    fn refuse(&self, message: &str) {
        *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(message.to_owned());
    }

    async fn start(&self, case: &CaseRequest<'_>) -> Result<JudgeProcess, PoolError> {
        self.starts.fetch_add(1, Ordering::Relaxed);
        let mut process = JudgeProcess::spawn(&self.argv, &self.cwd, case.env)?;
        match process.handshake(case.timeout, case.secrets).await {
            Ok(()) => Ok(process),
            Err(e) => {
                if let PoolError::NotPersistent(message) = &e {
                    self.refuse(message);
                }
                Err(e)
            }
        }
    }
}

/// One running judge: its process group, the request and response pipes, and the end of its
/// stderr (read all along so a chatty judge never blocks on a full pipe).
struct JudgeProcess {
    child: Group,
    /// `None` once closed, at the end of the run.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The task reading stderr: done once the judge and its children closed it.
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
    next_id: u64,
    /// Cases answered.
    served: u64,
}

impl JudgeProcess {
    fn spawn(argv: &[String], cwd: &Path, env: &[(String, String)]) -> Result<Self, PoolError> {
        let argv = own_program(argv);
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| PoolError::Spawn("the command is empty".to_owned()))?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        // Each request carries its case's proxy; a variable left from agentv's own environment
        // would point every case at the wrong one.
        for name in [
            PROXY_URL_ENV,
            PROXY_TOKEN_ENV,
            JUDGE_PROXY_URL_ENV,
            JUDGE_PROXY_TOKEN_ENV,
        ] {
            command.env_remove(name);
        }
        command.env(PERSISTENT_ENV, "1");
        let mut wrap = CommandWrap::from(command);
        wrap.wrap(ProcessGroup::leader());
        let mut child = wrap
            .spawn()
            .map_err(|e| PoolError::Spawn(format!("`{program}`: {e}")))?;
        let pipes = (child.stdin().take(), child.stdout().take(), child.stderr().take());
        let (Some(stdin), Some(stdout), Some(stderr_pipe)) = pipes else {
            let _ = child.start_kill();
            return Err(PoolError::Spawn(format!("`{program}`: its pipes are not available")));
        };
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stderr_reader = Some(tokio::spawn(keep_tail(stderr_pipe, stderr.clone())));
        Ok(Self {
            child: Group(child),
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            stderr,
            stderr_reader,
            next_id: 0,
            served: 0,
        })
    }

    /// Waits for the ready line.
    async fn handshake(&mut self, timeout: Duration, secrets: &Secrets) -> Result<(), PoolError> {
        let first = match tokio::time::timeout(timeout, next_line(&mut self.stdout)).await {
            Err(_) => {
                return Err(PoolError::NotPersistent(format!(
                    "no ready line within {}s{}",
                    timeout.as_secs_f64(),
                    NOT_PERSISTENT_HINT
                )));
            }
            Ok(Err(e)) => return Err(PoolError::Protocol(e.to_string())),
            Ok(Ok(line)) => line,
        };
        let Some(line) = first else {
            let how = self.exit_text().await;
            self.read_stderr_to_end().await;
            return Err(PoolError::Died(
                format!("{how} before announcing itself"),
                self.stderr_suffix(secrets),
            ));
        };
        check_ready(&line, secrets).map_err(|e| PoolError::NotPersistent(format!("{e}{NOT_PERSISTENT_HINT}")))
    }

    /// Sends one case and reads its answer.
    async fn exchange(&mut self, case: &CaseRequest<'_>) -> Result<Value, PoolError> {
        self.next_id += 1;
        let id = Value::from(self.next_id);
        let line = request_line(&id, &case.payload, case.proxy.as_ref());
        match tokio::time::timeout(case.timeout, self.send_and_read(&line)).await {
            Err(_) => Err(PoolError::TimedOut(case.timeout, self.stderr_suffix(case.secrets))),
            Ok(Err(Broken::Closed)) => {
                let how = self.exit_text().await;
                self.read_stderr_to_end().await;
                Err(PoolError::Died(
                    format!("{how} while grading this case"),
                    self.stderr_suffix(case.secrets),
                ))
            }
            Ok(Err(Broken::Bad(e) | Broken::NotReady(e) | Broken::Stray(e))) => Err(PoolError::Protocol(e)),
            Ok(Ok(answer)) => read_response(&answer, &id, case.secrets),
        }
    }

    async fn send_and_read(&mut self, line: &[u8]) -> Result<String, Broken> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(Broken::Closed);
        };
        let written = async {
            stdin.write_all(line).await?;
            stdin.flush().await
        };
        if written.await.is_err() {
            return Err(Broken::Closed);
        }
        loop {
            match next_line(&mut self.stdout).await {
                Err(e) => return Err(Broken::Bad(e.to_string())),
                Ok(None) => return Err(Broken::Closed),
                Ok(Some(line)) if line.trim().is_empty() => {}
                Ok(Some(line)) => return Ok(line),
            }
        }
    }

    async fn exit_text(&mut self) -> String {
        exit_text(&mut self.child).await
    }

    async fn read_stderr_to_end(&mut self) {
        read_stderr_to_end(self.stderr_reader.take()).await;
    }

    fn stderr_suffix(&self, secrets: &Secrets) -> String {
        stderr_suffix(&self.stderr, secrets)
    }
}

/// "exited with code N" / "was killed by signal N", once the process has ended (or "closed
/// its output" when it does not end within [`EXIT_GRACE`]).
async fn exit_text(child: &mut Group) -> String {
    match tokio::time::timeout(EXIT_GRACE, child.0.wait()).await {
        Ok(Ok(status)) => match status.code() {
            Some(code) => format!("exited with code {code}"),
            None => {
                use std::os::unix::process::ExitStatusExt as _;
                match status.signal() {
                    Some(signal) => format!("was killed by signal {signal}"),
                    None => "exited".to_owned(),
                }
            }
        },
        _ => "closed its stdout".to_owned(),
    }
}

/// Waits (briefly) until everything a judge that ended wrote on stderr is read, so the message
/// about its end quotes it.
async fn read_stderr_to_end(reader: Option<tokio::task::JoinHandle<()>>) {
    if let Some(reader) = reader {
        let _ = tokio::time::timeout(EXIT_GRACE, reader).await;
    }
}

/// `; stderr: …` with the end of what the judge wrote there, redacted; empty when nothing.
fn stderr_suffix(stderr: &Mutex<Vec<u8>>, secrets: &Secrets) -> String {
    let bytes = stderr.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let text = String::from_utf8_lossy(&bytes);
    let shown = crate::process::tail(&text, STDERR_SHOWN, secrets);
    if shown.is_empty() {
        String::new()
    } else {
        format!("; stderr: {shown}")
    }
}

const NOT_PERSISTENT_HINT: &str = " (a persistent judge first prints `{\"ready\": true, \"protocol\": 1}` when started with AGENTV_JUDGE_PERSISTENT=1, as the SDK runners `run_judge` and `defineCodeJudge` do; remove `persistent: true` to run it once per case)";

#[derive(Debug, Clone)]
enum Broken {
    /// The judge closed its end: it exited or crashed.
    Closed,
    /// A line that cannot be read.
    Bad(String),
    /// A multiplexed worker's first line, which is not the ready line.
    NotReady(String),
    /// A multiplexed worker's line that answers no request.
    Stray(String),
}

/// A judge's stdout line that cannot be read.
#[derive(Debug, thiserror::Error)]
enum LineError {
    #[error("cannot read its stdout: {0}")]
    Read(#[from] std::io::Error),
    #[error("a stdout line is longer than {MAX_LINE} bytes")]
    TooLong,
    #[error("a stdout line is not UTF-8")]
    NotUtf8,
}

/// The next line without its `\n` (and `\r`); `None` at the end of the stream.
async fn next_line<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Result<Option<String>, LineError> {
    let mut buf = Vec::new();
    let read = (&mut *reader).take(MAX_LINE + 1).read_until(b'\n', &mut buf).await?;
    if read == 0 {
        return Ok(None);
    }
    if buf.len() as u64 > MAX_LINE {
        return Err(LineError::TooLong);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    }
    String::from_utf8(buf).map(Some).map_err(|_| LineError::NotUtf8)
}

/// The resident memory of process `pid` and all its descendants, in bytes (`VmRSS` of
/// `/proc/<pid>/status`; children from `/proc/<pid>/task/<tid>/children`): a judge run through
/// `sh -c` or a launcher grows in a child. `None` when `pid` is gone or `/proc` is not there.
pub fn tree_rss_bytes(root: u32) -> Option<u64> {
    std::fs::metadata(format!("/proc/{root}/status")).ok()?;
    let mut total = 0;
    let mut pending = vec![root];
    let mut seen = 0usize;
    while let Some(pid) = pending.pop() {
        seen += 1;
        // A cycle cannot happen in a process tree; the bound only guards against a racing /proc.
        if seen > 10_000 {
            break;
        }
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        total += status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
            * 1024;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            if let Ok(children) = std::fs::read_to_string(task.path().join("children")) {
                pending.extend(children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
            }
        }
    }
    Some(total)
}

/// Reads the judge's stderr to the end, keeping its last [`STDERR_KEEP`] bytes.
async fn keep_tail<R: AsyncRead + Unpin>(mut reader: R, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buf = [0u8; 8 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut kept = tail.lock().unwrap_or_else(|e| e.into_inner());
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > STDERR_KEEP {
                    let cut = kept.len() - STDERR_KEEP;
                    kept.drain(..cut);
                }
            }
        }
    }
}

/// One request line: `{"id", "payload", "proxy"}` and a `\n`.
pub fn request_line(id: &Value, payload: &Value, proxy: Option<&Value>) -> Vec<u8> {
    let request = json!({ "id": id, "payload": payload, "proxy": proxy });
    // A `Value` always serializes; its compact form has no raw newline.
    let mut line = serde_json::to_vec(&request).unwrap_or_default();
    line.push(b'\n');
    line
}

/// A judge's first line that is not a ready line it can be used with; `got` is the line's tail,
/// secrets redacted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReadyError {
    #[error("its first stdout line is not the ready line (got: {got:?})")]
    NotReady { got: String },
    #[error("it speaks protocol {0}; agentv speaks protocol {PROTOCOL_VERSION}")]
    Protocol(u64),
    #[error("its ready line names no protocol (got: {got:?})")]
    NoProtocol { got: String },
}

/// Checks a judge's first line: `{"ready": true, "protocol": 1, …}`.
pub fn check_ready(line: &str, secrets: &Secrets) -> Result<(), ReadyError> {
    let shown = || crate::process::tail(line, 200, secrets);
    let ready = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(ready)) if ready.get("ready") == Some(&Value::Bool(true)) => ready,
        _ => return Err(ReadyError::NotReady { got: shown() }),
    };
    match ready.get("protocol").and_then(Value::as_u64) {
        Some(PROTOCOL_VERSION) => Ok(()),
        Some(other) => Err(ReadyError::Protocol(other)),
        None => Err(ReadyError::NoProtocol { got: shown() }),
    }
}

/// Reads a response line to request `id`: its `result` object, or the judge's `error`.
pub fn read_response(line: &str, id: &Value, secrets: &Secrets) -> Result<Value, PoolError> {
    let shown = || crate::process::tail(line, 200, secrets);
    // Judges in JavaScript may answer with strings JSON.stringify writes but serde_json refuses.
    let Ok(Value::Object(response)) = crate::js::from_js_json(line) else {
        return Err(PoolError::Protocol(format!(
            "its response is not a JSON object (got: {:?})",
            shown()
        )));
    };
    match response.get("id") {
        Some(got) if got == id => {}
        got => {
            return Err(PoolError::Protocol(format!(
                "it answered request {} with id {}",
                id,
                got.unwrap_or(&Value::Null)
            )));
        }
    }
    answer_of(response, line, secrets)
}

/// The `result` of a response object to the right request (`line` is its text, for messages),
/// or the judge's `error`.
fn answer_of(mut response: serde_json::Map<String, Value>, line: &str, secrets: &Secrets) -> Result<Value, PoolError> {
    let shown = || crate::process::tail(line, 200, secrets);
    if let Some(error) = response.remove("error").filter(|e| !e.is_null()) {
        let message = match error {
            Value::String(s) => s,
            other => other.to_string(),
        };
        return Err(PoolError::Judge(secrets.redact(&message).into_owned()));
    }
    match response.remove("result") {
        Some(result) => Ok(result),
        None => Err(PoolError::Protocol(format!(
            "its response has neither `result` nor `error` (got: {:?})",
            shown()
        ))),
    }
}

/// The argv to start for a judge's `argv`: `agentv` as its program is this executable, so
/// `script: [agentv, judge, faithfulness]` runs the ready-made judge of the agentv that runs
/// the suite, installed or not, on `PATH` or not (`judges/README.md`).
pub(crate) fn own_program(argv: &[String]) -> std::borrow::Cow<'_, [String]> {
    match argv.split_first() {
        Some((program, rest)) if program == "agentv" => match std::env::current_exe() {
            Ok(exe) => {
                let mut own = Vec::with_capacity(argv.len());
                own.push(exe.display().to_string());
                own.extend(rest.iter().cloned());
                std::borrow::Cow::Owned(own)
            }
            Err(_) => std::borrow::Cow::Borrowed(argv),
        },
        _ => std::borrow::Cow::Borrowed(argv),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_are_one_line_of_json() {
        let payload = json!({"candidate_answer": "two\nlines", "config": {"k": [1]}});
        let proxy = json!({"url": "http://127.0.0.1:1", "token": "t", "max_calls": 5});
        for (proxy, want_proxy) in [(None, Value::Null), (Some(&proxy), proxy.clone())] {
            let line = request_line(&json!(7), &payload, proxy);
            assert_eq!(line.last(), Some(&b'\n'));
            assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "only the terminator");
            let back: Value = serde_json::from_slice(&line).expect("json");
            assert_eq!(back, json!({"id": 7, "payload": payload, "proxy": want_proxy}));
        }
    }

    #[test]
    fn ready_lines() {
        let cases = [
            (r#"{"ready": true, "protocol": 1, "sdk": "python/0.1.0"}"#, Ok(())),
            (r#"{"ready":true,"protocol":1}"#, Ok(())),
            (
                r#"{"score": 1}"#,
                Err(r#"its first stdout line is not the ready line (got: "{\"score\": 1}")"#),
            ),
            (
                "hello",
                Err(r#"its first stdout line is not the ready line (got: "hello")"#),
            ),
            (
                r#"{"ready": "yes", "protocol": 1}"#,
                Err(r#"its first stdout line is not the ready line (got: "{\"ready\": \"yes\", \"protocol\": 1}")"#),
            ),
            (
                r#"{"ready": true, "protocol": 2}"#,
                Err("it speaks protocol 2; agentv speaks protocol 1"),
            ),
            (
                r#"{"ready": true}"#,
                Err(r#"its ready line names no protocol (got: "{\"ready\": true}")"#),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(
                check_ready(line, &Secrets::default()).map_err(|e| e.to_string()),
                want.map_err(str::to_owned),
                "{line}"
            );
        }
    }

    #[test]
    fn responses() {
        let id = json!(3);
        let cases: [(&str, Result<Value, PoolError>); 8] = [
            (r#"{"id": 3, "result": {"score": 1}}"#, Ok(json!({"score": 1}))),
            (
                r#"{"id": 3, "error": "boom"}"#,
                Err(PoolError::Judge("boom".to_owned())),
            ),
            (
                r#"{"id": 3, "error": {"why": 1}}"#,
                Err(PoolError::Judge(r#"{"why":1}"#.to_owned())),
            ),
            (
                r#"{"id": 3, "error": null, "result": {"score": 0}}"#,
                Ok(json!({"score": 0})),
            ),
            (
                r#"{"id": 2, "result": {"score": 1}}"#,
                Err(PoolError::Protocol("it answered request 3 with id 2".to_owned())),
            ),
            (
                r#"{"id": "3", "result": {"score": 1}}"#,
                Err(PoolError::Protocol(r#"it answered request 3 with id "3""#.to_owned())),
            ),
            (
                r#"{"id": 3}"#,
                Err(PoolError::Protocol(
                    r#"its response has neither `result` nor `error` (got: "{\"id\": 3}")"#.to_owned(),
                )),
            ),
            (
                "[1]",
                Err(PoolError::Protocol(
                    r#"its response is not a JSON object (got: "[1]")"#.to_owned(),
                )),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(read_response(line, &id, &Secrets::default()), want, "{line}");
        }
    }

    #[tokio::test]
    async fn lines_lose_their_terminators_and_end_with_none() {
        let input: &[u8] = b"one\r\ntwo\n\nlast";
        let mut reader = BufReader::new(input);
        let mut got = Vec::new();
        while let Some(line) = next_line(&mut reader).await.expect("reads") {
            got.push(line);
        }
        assert_eq!(got, ["one", "two", "", "last"]);
        let mut bad = BufReader::new(&b"\xff\n"[..]);
        let err = next_line(&mut bad).await.map_err(|e| e.to_string());
        assert_eq!(err, Err("a stdout line is not UTF-8".to_owned()));
    }

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    fn case<'a>(secrets: &'a Secrets, timeout: f64) -> CaseRequest<'a> {
        CaseRequest {
            env: &[],
            payload: json!({"eval_id": "c"}),
            proxy: None,
            timeout: Duration::from_secs_f64(timeout),
            secrets,
        }
    }

    /// A judge in shell: the ready line, then `{"id": N, "result": {"score": 1}}` per request.
    const ECHO_JUDGE: &str = r#"echo '{"ready":true,"protocol":1}'; n=0; while read -r line; do n=$((n+1)); echo "{\"id\":$n,\"result\":{\"score\":1}}"; done"#;

    /// Whether process `pid` is running (not gone, not a zombie).
    fn running(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
    }

    /// Dropping the pool on a runtime thread returns before the judge's grace is over: a judge
    /// that ignores the closed stdin is still running when `drop` returns, and killed after.
    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "current_thread")]
    async fn judge_pool_drop_never_blocks_a_runtime_thread() {
        let dir = tempfile::tempdir().expect("tmp");
        let stubborn = r#"echo '{"ready":true,"protocol":1}'; read -r line; echo "{\"id\":1,\"result\":{\"pid\":\"$$\"}}"; trap '' TERM; while :; do sleep 1; done"#;
        let pool = JudgePool::shared(&sh(stubborn), dir.path(), Recycle::default());
        let secrets = Secrets::default();
        let result = pool.grade(case(&secrets, 10.0)).await.expect("graded");
        let pid = result["pid"].as_str().expect("pid").to_owned();
        assert!(running(&pid), "the judge runs");
        drop(pool);
        assert!(running(&pid), "drop waited for the judge on the runtime thread");
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while running(&pid) {
            assert!(std::time::Instant::now() < deadline, "the judge {pid} was never killed");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn one_process_serves_many_cases() {
        let dir = tempfile::tempdir().expect("tmp");
        let pool = JudgePool::shared(&sh(ECHO_JUDGE), dir.path(), Recycle::default());
        let secrets = Secrets::default();
        for _ in 0..5 {
            assert_eq!(pool.grade(case(&secrets, 10.0)).await, Ok(json!({"score": 1})));
        }
        assert_eq!(pool.starts(), 1);
        let same = JudgePool::shared(&sh(ECHO_JUDGE), dir.path(), Recycle::default());
        assert!(Arc::ptr_eq(&pool, &same), "graders of one program share a pool");
    }

    #[tokio::test]
    async fn a_judge_without_the_ready_line_is_refused_at_once_afterwards() {
        let dir = tempfile::tempdir().expect("tmp");
        let pool = JudgePool::shared(
            &sh(r#"read -r line; echo '{"score": 1}'"#),
            dir.path(),
            Recycle::default(),
        );
        let secrets = Secrets::default();
        let first = pool.grade(case(&secrets, 0.3)).await.expect_err("refused");
        assert!(
            first
                .to_string()
                .starts_with("code judge is not speaking the persistent protocol: no ready line within 0.3s"),
            "{first}"
        );
        let second = pool.grade(case(&secrets, 0.3)).await.expect_err("refused");
        assert_eq!(first, second);
        assert_eq!(pool.starts(), 1, "no second start once refused");
    }

    #[tokio::test]
    async fn a_dead_judge_is_replaced_and_its_stderr_quoted_redacted() {
        let dir = tempfile::tempdir().expect("tmp");
        let marker = dir.path().join("died");
        let script = format!(
            r#"echo '{{"ready":true,"protocol":1}}'; read -r line; if [ ! -e {m} ]; then touch {m}; echo "dying with sk-secret-1" >&2; exit 3; fi; echo '{{"id":1,"result":{{"score":0.5}}}}'; cat >/dev/null"#,
            m = marker.display()
        );
        let pool = JudgePool::shared(&sh(&script), dir.path(), Recycle::default());
        let secrets = Secrets::default();
        secrets.add("sk-secret-1");
        let died = pool.grade(case(&secrets, 10.0)).await.expect_err("died");
        let text = died.to_string();
        assert!(
            text.starts_with("code judge exited with code 3 while grading this case"),
            "{text}"
        );
        assert!(text.contains("stderr: dying with"), "{text}");
        assert!(!text.contains("sk-secret-1"), "{text}");
        assert_eq!(pool.grade(case(&secrets, 10.0)).await, Ok(json!({"score": 0.5})));
        assert_eq!(pool.starts(), 2);
    }

    #[tokio::test]
    async fn a_hanging_case_times_out_and_the_next_case_gets_a_fresh_judge() {
        let dir = tempfile::tempdir().expect("tmp");
        let marker = dir.path().join("hung");
        let script = format!(
            r#"echo '{{"ready":true,"protocol":1}}'; read -r line; if [ ! -e {m} ]; then touch {m}; sleep 30; fi; echo '{{"id":1,"result":{{"score":1}}}}'; cat >/dev/null"#,
            m = marker.display()
        );
        let pool = JudgePool::shared(&sh(&script), dir.path(), Recycle::default());
        let secrets = Secrets::default();
        let hung = pool.grade(case(&secrets, 0.5)).await.expect_err("times out");
        assert!(hung.is_timeout(), "{hung}");
        assert_eq!(pool.grade(case(&secrets, 10.0)).await, Ok(json!({"score": 1})));
        assert_eq!(pool.starts(), 2);
    }

    #[tokio::test]
    async fn a_persistent_judge_that_grows_without_bound_is_recycled() {
        let dir = tempfile::tempdir().expect("tmp");
        let secrets = Secrets::default();
        // After 3 cases: cases 1-3 on the first process, 4-6 on the second, 7 on a third.
        let by_cases = JudgePool::shared(
            &sh(ECHO_JUDGE),
            dir.path(),
            Recycle {
                max_cases: Some(3),
                max_rss_bytes: None,
            },
        );
        for _ in 0..7 {
            assert_eq!(by_cases.grade(case(&secrets, 10.0)).await, Ok(json!({"score": 1})));
        }
        assert_eq!((by_cases.starts(), by_cases.recycled()), (3, 2));

        // A judge whose child holds 64 MiB, over a 16 MiB ceiling: replaced after every case.
        let hog = format!("python3 -c 'import time; b = b\"x\" * (64 << 20); time.sleep(60)' & {ECHO_JUDGE}");
        let by_memory = JudgePool::shared(
            &sh(&hog),
            dir.path(),
            Recycle {
                max_cases: None,
                max_rss_bytes: Some(16 << 20),
            },
        );
        let first = by_memory.grade(case(&secrets, 10.0)).await;
        assert_eq!(first, Ok(json!({"score": 1})));
        // The child needs a moment to touch its memory; until then the judge is under the ceiling.
        for _ in 0..50 {
            if by_memory.recycled() > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(by_memory.grade(case(&secrets, 10.0)).await, Ok(json!({"score": 1})));
        }
        assert!(by_memory.recycled() >= 1, "never recycled");
        let recycled = by_memory.recycled();
        assert_eq!(by_memory.grade(case(&secrets, 10.0)).await, Ok(json!({"score": 1})));
        assert_eq!(by_memory.starts(), recycled + 1, "the next case got a fresh process");
        let rss = tree_rss_bytes(std::process::id()).expect("this process");
        assert!(rss > 0);
        assert_eq!(tree_rss_bytes(u32::MAX), None);
    }
}
