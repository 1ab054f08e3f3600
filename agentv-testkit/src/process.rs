//! Running a child under a deadline. A child that hangs (agentv, or an agent or judge it
//! spawned) is killed with everything it started, and the test fails saying what hung and
//! what it had printed, instead of stalling the suite.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a spawned child may run unless a test says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The deadline for children: `AGENTV_TEST_TIMEOUT` (seconds) when set, else
/// [`DEFAULT_TIMEOUT`]. Raise it on a slow machine; lower it to find a hang fast.
pub fn default_timeout() -> Duration {
    std::env::var("AGENTV_TEST_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// A finished child: its exit code (-1 when a signal ended it) and what it printed.
#[derive(Debug, Clone)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Runs `cmd` to the end within [`default_timeout`], stdin closed, both streams captured.
    pub fn of(cmd: &mut Command) -> Self {
        Self::within(cmd, default_timeout())
    }

    /// Runs `cmd` to the end within `limit`.
    pub fn within(cmd: &mut Command, limit: Duration) -> Self {
        cmd.stdin(Stdio::null());
        Spawned::start_within(cmd, limit).wait()
    }

    /// Asserts the exit code, printing both streams when it differs.
    #[track_caller]
    pub fn code(&self, want: i32) -> &Self {
        assert_eq!(
            self.code, want,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    #[track_caller]
    pub fn stderr_has(&self, text: &str) -> &Self {
        assert!(
            self.stderr.contains(text),
            "stderr lacks {text:?}\n--- stderr\n{}",
            self.stderr
        );
        self
    }

    #[track_caller]
    pub fn stdout_has(&self, text: &str) -> &Self {
        assert!(
            self.stdout.contains(text),
            "stdout lacks {text:?}\n--- stdout\n{}",
            self.stdout
        );
        self
    }

    fn finished(status: ExitStatus, stdout: Vec<u8>, stderr: Vec<u8>) -> Self {
        Self {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }
}

/// A running child whose stdout and stderr are being read, with a deadline.
pub struct Spawned {
    child: Child,
    what: String,
    started: Instant,
    limit: Duration,
    stdout: Option<Captured>,
    stderr: Option<Captured>,
}

impl Spawned {
    /// Starts `cmd` with both streams captured (stdin as the command sets it, else inherited),
    /// under [`default_timeout`].
    pub fn start(cmd: &mut Command) -> Self {
        Self::start_within(cmd, default_timeout())
    }

    pub fn start_within(cmd: &mut Command, limit: Duration) -> Self {
        Self::start_reading(cmd, limit, true)
    }

    /// Starts `cmd` with its stdout closed on our side as soon as it starts, as a reader that
    /// goes away (`| head`) leaves it.
    pub fn start_with_stdout_closed(cmd: &mut Command, limit: Duration) -> Self {
        Self::start_reading(cmd, limit, false)
    }

    fn start_reading(cmd: &mut Command, limit: Duration, read_stdout: bool) -> Self {
        let what = describe(cmd);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let stdout = child.stdout.take().filter(|_| read_stdout).map(drain);
        let stderr = child.stderr.take().map(drain);
        Self {
            child,
            what,
            started: Instant::now(),
            limit,
            stdout,
            stderr,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the child has printed `text` on stderr, and returns when it saw it. The
    /// wait is on the child's output, not on time; past the child's deadline the test fails
    /// with what it printed.
    #[track_caller]
    pub fn wait_for_stderr(&mut self, text: &str) -> Instant {
        let deadline = self.started + self.limit;
        let seen = self
            .stderr
            .as_ref()
            .is_some_and(|c| c.wait_for(text.as_bytes(), deadline));
        if !seen {
            self.fail_hung_waiting(&format!("print {text:?} on stderr"));
        }
        Instant::now()
    }

    /// Waits for the child to exit. Past the deadline the child and every process it started
    /// are killed and the test fails with what they printed.
    #[track_caller]
    pub fn wait(mut self) -> Run {
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    let stdout = collect(self.stdout.take(), Duration::from_secs(10));
                    let stderr = collect(self.stderr.take(), Duration::from_secs(10));
                    return Run::finished(status, stdout, stderr);
                }
                Ok(None) if self.started.elapsed() >= self.limit => self.fail_hung(),
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => panic!("cannot wait for {}: {e}", self.what),
            }
        }
    }

    #[track_caller]
    fn fail_hung(&mut self) -> ! {
        self.fail_hung_waiting("finish")
    }

    #[track_caller]
    fn fail_hung_waiting(&mut self, doing: &str) -> ! {
        kill_tree(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
        let stdout = collect(self.stdout.take(), Duration::from_secs(2));
        let stderr = collect(self.stderr.take(), Duration::from_secs(2));
        panic!(
            "{} did not {doing} within {:?} (AGENTV_TEST_TIMEOUT sets the limit); it was killed with every process it started\n--- stdout so far\n{}\n--- stderr so far\n{}",
            self.what,
            self.limit,
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        );
    }
}

impl Drop for Spawned {
    /// A test that panics while its child runs does not leave the child behind.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            kill_tree(self.child.id());
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What a reader thread has read of a stream so far, and whether it reached the end; waiters
/// are woken at each chunk.
#[derive(Clone, Default)]
struct Captured(Arc<(Mutex<Stream>, Condvar)>);

/// The bytes read so far, and whether the stream ended.
type Stream = (Vec<u8>, bool);

impl Captured {
    /// Blocks until the bytes read so far pass `done`, the stream ends or `deadline` passes;
    /// whether they passed.
    fn wait_until(&self, deadline: Instant, done: impl Fn(&[u8], bool) -> bool) -> bool {
        let (lock, woken) = &*self.0;
        let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if done(&state.0, state.1) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if state.1 || left.is_zero() {
                return false;
            }
            state = woken.wait_timeout(state, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    fn wait_for(&self, text: &[u8], deadline: Instant) -> bool {
        self.wait_until(deadline, |bytes, _| bytes.windows(text.len().max(1)).any(|w| w == text))
    }

    fn bytes(&self) -> Vec<u8> {
        self.0.0.lock().unwrap_or_else(|e| e.into_inner()).0.clone()
    }
}

/// Reads `stream` to its end on a thread, chunk by chunk.
fn drain(mut stream: impl Read + Send + 'static) -> Captured {
    let captured = Captured::default();
    let shared = captured.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            let n = stream.read(&mut chunk).unwrap_or(0);
            let (lock, woken) = &*shared.0;
            let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
            state.0.extend_from_slice(&chunk[..n]);
            state.1 = n == 0;
            woken.notify_all();
            if n == 0 {
                break;
            }
        }
    });
    captured
}

/// What a reader collected. A grandchild that escaped and still holds the pipe must not hang
/// the test, so the wait for the end is bounded.
fn collect(captured: Option<Captured>, limit: Duration) -> Vec<u8> {
    captured.map_or_else(Vec::new, |c| {
        c.wait_until(Instant::now() + limit, |_, ended| ended);
        c.bytes()
    })
}

fn describe(cmd: &Command) -> String {
    let program = std::path::Path::new(cmd.get_program())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    format!("`{program} {}`", args.join(" "))
}

/// Kills `pid` and every process descended from it (agent CLIs and judges run in process
/// groups of their own, so killing one group would miss them).
pub fn kill_tree(pid: u32) {
    let mut doomed = vec![pid];
    let mut i = 0;
    let parents = parent_links();
    while i < doomed.len() {
        let parent = doomed[i];
        doomed.extend(parents.iter().filter(|(_, p)| *p == parent).map(|(c, _)| *c));
        i += 1;
    }
    for pid in doomed {
        send_kill(pid);
    }
}

/// `(pid, parent pid)` of every process, from `/proc` (empty where there is none).
fn parent_links() -> Vec<(u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
            let after = &stat[stat.rfind(')')? + 1..];
            let ppid = after.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect()
}

fn send_kill(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) with a positive pid and a valid signal number has no memory effects.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// Sends `signal` (`INT`, `TERM`, `KILL`) to `pid`, as a user or CI runner would.
pub fn send_signal(pid: u32, signal: &str) {
    let number = match signal {
        "INT" => libc::SIGINT,
        "TERM" => libc::SIGTERM,
        "KILL" => libc::SIGKILL,
        other => panic!("no such signal in the kit: {other}"),
    };
    let pid = libc::pid_t::try_from(pid).expect("a pid");
    // SAFETY: as in `send_kill`.
    let sent = unsafe { libc::kill(pid, number) };
    assert_eq!(sent, 0, "kill -{signal} {pid}");
}

/// Waits until `ready` holds, for states only the file system shows (a marker file a command
/// touched, a line of a results file): checked every few milliseconds until
/// [`default_timeout`], then the test fails naming `what`. A guard against a hung run, not a
/// speed assertion.
#[track_caller]
pub fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + default_timeout();
    while !ready() {
        assert!(Instant::now() < deadline, "{what}: not within {:?}", default_timeout());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until `path` exists (see [`wait_until`]).
#[track_caller]
pub fn wait_for_file(path: &std::path::Path) {
    wait_until(&format!("{} never appeared", path.display()), || path.exists());
}

/// Whether `pid` is gone (or a zombie) within a few seconds. A killed process is not gone the
/// instant `kill` returns, least of all on a busy machine.
pub fn gone_soon(pid: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        if stat.is_empty() || stat.contains(") Z") {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("process {} still running: {stat}", pid.trim()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_for_stderr_returns_while_the_child_still_runs() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo one >&2; echo ready >&2; exec sleep 300"]);
        let mut child = Spawned::start_within(&mut cmd, Duration::from_secs(60));
        child.wait_for_stderr("ready");
        assert!(matches!(child.child.try_wait(), Ok(None)), "still running");
        send_signal(child.pid(), "KILL");
        let run = child.wait();
        assert_eq!(run.stderr, "one\nready\n");
    }

    #[test]
    fn a_hung_child_is_killed_with_its_children_and_fails_the_test() {
        let dir = tempfile::tempdir().expect("tmp");
        let pids = dir.path().join("pids");
        let script = format!("echo started; sleep 300 & echo $! > '{}'; sleep 300", pids.display());
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &script]);
        let hung = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            Run::within(&mut cmd, Duration::from_millis(500))
        }));
        let message = hung
            .err()
            .and_then(|p| p.downcast_ref::<String>().cloned())
            .expect("the test fails");
        assert!(message.contains("did not finish within 500ms"), "{message}");
        assert!(message.contains("--- stdout so far\nstarted\n"), "{message}");
        let grandchild = std::fs::read_to_string(&pids).expect("recorded");
        gone_soon(&grandchild).expect("the grandchild was killed too");
    }

    #[test]
    fn a_child_that_finishes_in_time_is_captured() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        let run = Run::of(&mut cmd);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (3, "out\n", "err\n")
        );
    }
}
