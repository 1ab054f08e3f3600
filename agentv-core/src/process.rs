//! Runs a child process with stdin, captured output, a timeout, and process-group cleanup.
//!
//! Agent CLIs and judges run under `sh -c` and start children of their own. Killing only the
//! direct child leaves those running, so every process here leads its own process group and the
//! whole group is killed on timeout, on cancellation (drop), and after a normal exit (so that a
//! background child left behind cannot linger or hold the output pipes open).

use std::io::Write as _;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessGroup};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::redact::{RedactingWriter, Secrets, SharedFile, StreamLog};

/// Captured output is cut at this size; the rest is read and discarded.
pub const MAX_CAPTURE: usize = 10 * 1024 * 1024;

/// What to run.
#[derive(Debug, Clone, Copy)]
pub struct ProcessSpec<'a> {
    pub argv: &'a [String],
    pub cwd: &'a Path,
    /// Added to the inherited environment.
    pub env: &'a [(String, String)],
    /// Removed from the inherited environment.
    pub env_remove: &'a [&'a str],
    pub stdin: Option<&'a [u8]>,
    pub timeout: Duration,
    /// A log that receives stdout and stderr, redacted, as they arrive (agent stream logs).
    pub tee: Option<&'a StreamLog>,
    /// Leave processes the command started running after it exits (a launcher that hands work
    /// to a long-lived app). Timeouts and cancellation still kill the whole group.
    pub keep_children: bool,
}

/// A process that exited by itself.
#[derive(Debug)]
pub struct Exited {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Exited {
    /// The last `max` characters of stderr (or stdout when stderr is empty), secrets redacted,
    /// for error messages.
    pub fn output_tail(&self, max: usize, secrets: &Secrets) -> String {
        let stream = if self.stderr.iter().all(u8::is_ascii_whitespace) {
            &self.stdout
        } else {
            &self.stderr
        };
        tail(&String::from_utf8_lossy(stream), max, secrets)
    }

    pub fn code_text(&self) -> String {
        match self.status.code() {
            Some(code) => code.to_string(),
            None => "none (killed by a signal)".to_owned(),
        }
    }
}

/// The last `max` characters of `text`, trimmed, with every secret redacted first: cutting
/// first could leave the end of a secret that redaction no longer recognises.
pub fn tail(text: &str, max: usize, secrets: &Secrets) -> String {
    let redacted = secrets.redact(text);
    let text = redacted.trim();
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().skip(count - max).collect();
    format!("…{cut}")
}

/// One line, at most `max` characters, that says what went wrong in a possibly multi-line
/// error: its first line (what failed: "code judge exited with code 1: Traceback …") and, when
/// that line goes on to quote a program's output (`…: `), the last non-blank line (why: the
/// exception at the end of a traceback, "HTTPError: HTTP Error 429"), joined by ` … `. When they
/// do not fit, the first line gives way: the cause is at the end. Otherwise the first line, cut
/// at its end (its other lines were said elsewhere). Redact before and escape after calling this.
pub fn cause_line(text: &str, max: usize) -> String {
    let text = text.trim();
    let first = text.lines().next().unwrap_or_default().trim_end();
    let last = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let count = |s: &str| s.chars().count();
    let take = |s: &str, n: usize| -> String {
        if count(s) <= n {
            return s.to_owned();
        }
        if n == 0 {
            return String::new();
        }
        let mut cut: String = s.chars().take(n.saturating_sub(1)).collect();
        cut.push('…');
        cut
    };
    if first.trim() == last || !first.contains(": ") {
        return take(first, max);
    }
    const JOIN: &str = " … ";
    if max < 2 * count(JOIN) {
        return take(last, max);
    }
    let room = max - count(JOIN);
    // The last line takes what it needs; the first line what is left, unless too little is.
    let last_room = count(last).min(room);
    let first_room = room - last_room;
    if first_room < 4 {
        return take(last, max);
    }
    format!("{}{JOIN}{}", take(first, first_room), take(last, last_room))
}

/// Why a process did not finish by itself.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("timed out after {}s", .0.as_secs_f64())]
    TimedOut(Duration),
    #[error("I/O error while running `{program}`: {source}")]
    Io {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// Kills the process group when dropped before [`GroupChild::finish`] (e.g. the run was
/// cancelled while the process was still running).
struct GroupChild {
    child: Box<dyn ChildWrapper>,
    /// Set once the process exited and its leftovers may stay.
    released: bool,
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        if !self.released {
            // ESRCH (nothing left to kill) is the normal case after a clean exit.
            let _ = self.child.start_kill();
        }
    }
}

/// Runs `spec` to completion or timeout.
pub async fn run(spec: ProcessSpec<'_>) -> Result<Exited, ProcessError> {
    let (program, args) = spec.argv.split_first().ok_or_else(|| ProcessError::Spawn {
        program: String::new(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command"),
    })?;
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir(spec.cwd)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for name in spec.env_remove {
        command.env_remove(name);
    }
    for (k, v) in spec.env {
        command.env(k, v);
    }
    let mut wrap = CommandWrap::from(command);
    wrap.wrap(ProcessGroup::leader());
    let child = wrap.spawn().map_err(|source| ProcessError::Spawn {
        program: program.clone(),
        source,
    })?;
    let mut group = GroupChild { child, released: false };
    let io_error = |source| ProcessError::Io {
        program: program.clone(),
        source,
    };

    let stdin_task = match (group.child.stdin().take(), spec.stdin) {
        (Some(mut pipe), Some(bytes)) => {
            let bytes = bytes.to_vec();
            Some(tokio::spawn(async move {
                // A judge may exit without reading stdin; a broken pipe is not our error.
                let _ = pipe.write_all(&bytes).await;
                let _ = pipe.shutdown().await;
            }))
        }
        _ => None,
    };
    let stdout_task = group
        .child
        .stdout()
        .take()
        .map(|p| tokio::spawn(read_capped(p, spec.tee.map(StreamLog::writer))));
    let stderr_task = group
        .child
        .stderr()
        .take()
        .map(|p| tokio::spawn(read_capped(p, spec.tee.map(StreamLog::writer))));

    let status = match tokio::time::timeout(spec.timeout, group.child.wait()).await {
        Ok(status) => status.map_err(io_error)?,
        Err(_) => {
            let _ = group.child.start_kill();
            let _ = group.child.wait().await;
            return Err(ProcessError::TimedOut(spec.timeout));
        }
    };
    // Kill whatever the process left behind in its group, so the pipes close; or, when the
    // leftovers must live on, read what is there and stop waiting for them.
    let grace = if spec.keep_children {
        group.released = true;
        Some(Duration::from_millis(200))
    } else {
        let _ = group.child.start_kill();
        None
    };
    if let Some(task) = stdin_task {
        let _ = task.await;
    }
    let stdout = join_output(stdout_task, grace).await;
    let stderr = join_output(stderr_task, grace).await;
    Ok(Exited { status, stdout, stderr })
}

async fn join_output(task: Option<tokio::task::JoinHandle<Vec<u8>>>, grace: Option<Duration>) -> Vec<u8> {
    let Some(task) = task else { return Vec::new() };
    match grace {
        None => task.await.unwrap_or_default(),
        Some(limit) => {
            let abort = task.abort_handle();
            match tokio::time::timeout(limit, task).await {
                Ok(joined) => joined.unwrap_or_default(),
                Err(_) => {
                    abort.abort();
                    Vec::new()
                }
            }
        }
    }
}

async fn read_capped<R: AsyncRead + Unpin>(mut reader: R, mut tee: Option<RedactingWriter<SharedFile>>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Some(log) = tee.as_mut() {
                    let _ = log.write_all(&buf[..n]);
                }
                let room = MAX_CAPTURE.saturating_sub(out.len());
                out.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    if let Some(log) = tee.as_mut() {
        let _ = log.flush();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    fn spec<'a>(argv: &'a [String], stdin: Option<&'a [u8]>, secs: f64) -> ProcessSpec<'a> {
        ProcessSpec {
            argv,
            cwd: Path::new("."),
            env: &[],
            env_remove: &[],
            stdin,
            timeout: Duration::from_secs_f64(secs),
            tee: None,
            keep_children: false,
        }
    }

    #[tokio::test]
    async fn passes_stdin_and_captures_both_streams() {
        let argv = sh("cat; echo err >&2; exit 3");
        let out = run(spec(&argv, Some(b"hello"), 10.0)).await.expect("runs");
        assert_eq!(out.stdout, b"hello");
        assert_eq!(out.output_tail(100, &Secrets::default()), "err");
        assert_eq!(out.status.code(), Some(3));
    }

    #[test]
    fn tail_redacts_before_cutting() {
        let secrets = Secrets::default();
        secrets.add("SUPERSECRETTOKEN_0123456789abcdef");
        let text = format!("SUPERSECRETTOKEN_0123456789abcdef{}", "x".repeat(190));
        for max in [200, 195, 193, 10] {
            let cut = tail(&text, max, &secrets);
            assert!(!cut.contains("abcdef") && !cut.contains("6789"), "{max}: {cut}");
            assert!(cut.chars().count() <= max + 1, "{max}: {cut}");
        }
        assert_eq!(tail(&text, 200, &secrets), format!("***{}", "x".repeat(190)));
    }

    #[test]
    fn console_names_the_cause_of_a_crashed_process() {
        let traceback = "code judge exited with code 1: Traceback (most recent call last):\n  File \"judge.py\", line 9, in <module>\n    call()\nurllib.error.HTTPError: HTTP Error 429: Too Many Requests\n\n";
        let shown = cause_line(traceback, 200);
        assert_eq!(
            shown,
            "code judge exited with code 1: Traceback (most recent call last): … urllib.error.HTTPError: HTTP Error 429: Too Many Requests"
        );
        // Narrow: the cause stays whole, the first line gives way.
        let narrow = cause_line(traceback, 80);
        assert!(
            narrow.ends_with("… urllib.error.HTTPError: HTTP Error 429: Too Many Requests"),
            "{narrow}"
        );
        assert!(narrow.chars().count() <= 80, "{narrow}");
        // Very narrow: both are cut, never past `max`.
        for max in [0, 1, 5, 20, 40] {
            assert!(cause_line(traceback, max).chars().count() <= max, "{max}");
        }
        assert_eq!(cause_line("one line only", 100), "one line only");
        assert_eq!(cause_line("one line only", 5), "one …");
        assert_eq!(cause_line("same\n\nsame", 100), "same");
        // A first line that quotes no output: the rest was said elsewhere (a healthcheck).
        assert_eq!(
            cause_line(
                "target `t` failed its healthcheck before the run\ncommand exited with code 3",
                100
            ),
            "target `t` failed its healthcheck before the run"
        );
        assert_eq!(cause_line("", 10), "");
    }

    #[tokio::test]
    async fn large_output_does_not_deadlock() {
        let argv = sh("head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2");
        let out = run(spec(&argv, None, 30.0)).await.expect("runs");
        assert_eq!(out.stdout.len(), 3_000_000);
        assert_eq!(out.stderr.len(), 3_000_000);
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().expect("tmp");
        let marker = dir.path().join("child.pid");
        let script = format!("sleep 30 & echo $! > {}; wait", marker.display());
        let argv = sh(&script);
        let err = run(spec(&argv, None, 0.5)).await.expect_err("times out");
        assert!(matches!(err, ProcessError::TimedOut(_)), "{err}");
        let pid = std::fs::read_to_string(&marker).expect("pid written");
        assert!(!process_alive(pid.trim()), "background child {pid} survived");
    }

    #[tokio::test]
    async fn background_child_left_after_exit_is_killed() {
        let dir = tempfile::tempdir().expect("tmp");
        let marker = dir.path().join("child.pid");
        let script = format!("sleep 30 & echo $! > {}; echo done", marker.display());
        let argv = sh(&script);
        let out = run(spec(&argv, None, 10.0)).await.expect("runs");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "done");
        let pid = std::fs::read_to_string(&marker).expect("pid written");
        assert!(!process_alive(pid.trim()), "background child {pid} survived");
    }

    #[tokio::test]
    async fn missing_program_is_a_spawn_error() {
        let argv = vec!["/nonexistent/agentv-judge".to_owned()];
        let err = run(spec(&argv, None, 1.0)).await.expect_err("fails");
        assert!(
            err.to_string().starts_with("cannot start `/nonexistent/agentv-judge`"),
            "{err}"
        );
    }

    /// True while `pid` exists and is not a zombie.
    fn process_alive(pid: &str) -> bool {
        for _ in 0..50 {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => return false,
                Ok(stat) if stat.contains(") Z") => return false,
                Ok(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        true
    }
}
