//! Running a child under a deadline. A child that hangs (agentv, or an agent or judge it
//! spawned) is killed with everything it started, and the test fails saying what hung and
//! what it had printed, instead of stalling the suite.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
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
    stdout: Option<mpsc::Receiver<Vec<u8>>>,
    stderr: Option<mpsc::Receiver<Vec<u8>>>,
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
        kill_tree(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
        let stdout = collect(self.stdout.take(), Duration::from_secs(2));
        let stderr = collect(self.stderr.take(), Duration::from_secs(2));
        panic!(
            "{} did not finish within {:?} (AGENTV_TEST_TIMEOUT sets the limit); it was killed with every process it started\n--- stdout so far\n{}\n--- stderr so far\n{}",
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

/// Reads `stream` to its end on a thread; the bytes arrive on the channel.
fn drain(mut stream: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        let _ = tx.send(bytes);
    });
    rx
}

/// What a reader collected. A grandchild that escaped and still holds the pipe must not hang
/// the test, so the wait is bounded.
fn collect(rx: Option<mpsc::Receiver<Vec<u8>>>, limit: Duration) -> Vec<u8> {
    rx.and_then(|rx| rx.recv_timeout(limit).ok()).unwrap_or_default()
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
