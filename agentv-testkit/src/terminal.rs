//! Running a child with its stderr on a pseudo-terminal, as a user's shell runs it, to see what
//! a terminal would show (a live progress bar, colour) while stdout stays a pipe.
//!
//! The terminal's bytes are returned as written, escape sequences and all (the terminal turns
//! each `\n` into `\r\n`).

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::process::{Run, default_timeout, kill_tree};

/// Runs `cmd` with stdin closed, stdout piped and stderr on a fresh pseudo-terminal of
/// `columns` × `rows`, within [`default_timeout`]. The returned [`Run`]'s `stderr` is what the
/// terminal received.
#[track_caller]
pub fn run_with_stderr_on_terminal(cmd: &mut Command, columns: u16, rows: u16) -> Run {
    let (master, slave) = open_pty(columns, rows);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave));
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    // The child holds the only other end now (`cmd` keeps a copy until it is dropped, so the
    // reader sees the end of the terminal's output only once both are gone).
    cmd.stderr(Stdio::null());
    let stdout = child.stdout.take().map(drain);
    let terminal = drain(File::from(master));
    let limit = default_timeout();
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= limit => {
                kill_tree(child.id());
                let _ = child.kill();
                let _ = child.wait();
                panic!("{cmd:?} did not finish within {limit:?} on a terminal; it was killed");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("cannot wait for {cmd:?}: {e}"),
        }
    };
    let text = |rx: Option<mpsc::Receiver<Vec<u8>>>| {
        let bytes = rx
            .and_then(|rx| rx.recv_timeout(Duration::from_secs(10)).ok())
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: text(stdout),
        stderr: text(Some(terminal)),
    }
}

/// A new pseudo-terminal of `columns` × `rows`: `(master, slave)`.
#[track_caller]
fn open_pty(columns: u16, rows: u16) -> (OwnedFd, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: rows,
        ws_col: columns,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: `openpty` writes two descriptors it opened into `master` and `slave` and reads
    // `size`; the name and termios pointers may be null.
    let rc = unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), &size) };
    assert_eq!(rc, 0, "openpty failed: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened by `openpty` and are owned by nothing else.
    unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

/// Reads `stream` to its end (for a terminal's master: until the last writer closes it, which
/// Linux reports as an error, taken here as the end) on a thread.
fn drain(mut stream: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => bytes.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send(bytes);
    });
    rx
}
