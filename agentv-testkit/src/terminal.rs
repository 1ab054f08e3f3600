//! Running a child with its stderr on a pseudo-terminal, as a user's shell runs it, to see what
//! a terminal would show (a live progress bar, colour) while stdout stays a pipe; and
//! [`Session`], a child in the foreground of its own terminal, to type keys (Ctrl-C) at it.
//!
//! The terminal's bytes are returned as written, escape sequences and all (the terminal turns
//! each `\n` into `\r\n`).

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, mpsc};
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

/// A child run in the foreground of its own terminal, as a shell runs a command: a fresh
/// pseudo-terminal is its controlling terminal, with its stdin and stderr on it (stdout stays
/// a pipe). Keys written with [`Session::type_keys`] reach it as a user's would: Ctrl-C is a
/// SIGINT the kernel sends to its process group, not a signal sent by a program.
pub struct Session {
    child: std::process::Child,
    what: String,
    master: File,
    screen: Arc<(Mutex<Vec<u8>>, Condvar)>,
    stdout: Option<mpsc::Receiver<Vec<u8>>>,
    started: Instant,
}

impl Session {
    /// Starts `cmd` on a new terminal of `columns` × `rows`, in a new session whose
    /// controlling terminal it is.
    #[track_caller]
    pub fn start(cmd: &mut Command, columns: u16, rows: u16) -> Self {
        use std::os::unix::process::CommandExt as _;
        let (master, slave) = open_pty(columns, rows);
        let what = format!("{cmd:?}");
        let stdin = slave.try_clone().expect("dup the terminal");
        cmd.stdin(Stdio::from(stdin))
            .stdout(Stdio::piped())
            .stderr(Stdio::from(slave));
        // SAFETY: between fork and exec only async-signal-safe calls are made: `setsid` gives
        // the child a session of its own, and `ioctl(TIOCSCTTY)` makes its stdin (the terminal)
        // the session's controlling terminal, with the child's group in the foreground.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 || libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        cmd.stdin(Stdio::null()).stderr(Stdio::null());
        let stdout = child.stdout.take().map(drain);
        let keys = File::from(master);
        let reader = keys.try_clone().expect("dup the terminal's master");
        let screen = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        let shown = screen.clone();
        std::thread::spawn(move || watch(reader, &shown));
        Self {
            child,
            what,
            master: keys,
            screen,
            stdout,
            started: Instant::now(),
        }
    }

    /// Waits until the terminal has shown `text` (escape sequences and all) since the start;
    /// fails, showing the terminal, when it has not within [`default_timeout`].
    #[track_caller]
    pub fn wait_for(&self, text: &str) {
        let (lock, changed) = &*self.screen;
        let mut screen = lock.lock().expect("the terminal's text");
        loop {
            if String::from_utf8_lossy(&screen).contains(text) {
                return;
            }
            let left = default_timeout().saturating_sub(self.started.elapsed());
            assert!(
                !left.is_zero(),
                "{} never showed {text:?}; the terminal shows:\n{}",
                self.what,
                String::from_utf8_lossy(&screen)
            );
            screen = changed.wait_timeout(screen, left).expect("the terminal's text").0;
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Types `keys` on the terminal (`b"\x03"` is Ctrl-C).
    #[track_caller]
    pub fn type_keys(&mut self, keys: &[u8]) {
        use std::io::Write as _;
        self.master.write_all(keys).expect("type on the terminal");
    }

    /// Waits for the child to end within [`default_timeout`] (killing it and failing when it
    /// does not); its `stderr` is what the terminal showed.
    #[track_caller]
    pub fn wait(mut self) -> Run {
        let limit = default_timeout();
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if self.started.elapsed() >= limit => {
                    kill_tree(self.child.id());
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    panic!("{} did not finish within {limit:?}; it was killed", self.what);
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => panic!("cannot wait for {}: {e}", self.what),
            }
        };
        let stdout = self
            .stdout
            .take()
            .and_then(|rx| rx.recv_timeout(Duration::from_secs(10)).ok())
            .unwrap_or_default();
        let screen = self.screen.0.lock().map(|s| s.clone()).unwrap_or_default();
        Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&screen).into_owned(),
        }
    }
}

/// Appends what the terminal shows to `screen` as it comes, waking [`Session::wait_for`].
fn watch(mut master: File, screen: &(Mutex<Vec<u8>>, Condvar)) {
    let mut chunk = [0u8; 8192];
    loop {
        match master.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                if let Ok(mut text) = screen.0.lock() {
                    text.extend_from_slice(&chunk[..n]);
                }
                screen.1.notify_all();
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}
