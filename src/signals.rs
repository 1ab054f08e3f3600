//! SIGINT (Ctrl-C) and SIGTERM (what CI runners and `timeout` send) stop a run the same way
//! (`docs/architecture.md#exit-codes`): the first stops scheduling, the second cancels the cases
//! still running. Only the exit code tells them apart.
//!
//! One stop can arrive twice: GNU `timeout`, CI runners and npm signal agentv and its process
//! group, so a program's single stop is delivered twice at once. A signal *sent by a program*
//! within a second of the first is therefore that same stop. A Ctrl-C typed on the terminal is
//! never a copy (the kernel sends it, and says so in the signal's `si_code`), so a second one
//! cancels the running cases however soon it comes. Either way agentv says what it did
//! (`docs/architecture.md#exit-codes`).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agentv_core::Interrupt;
use tokio::task::JoinHandle;

use crate::printer::Printer;

/// A signal sent by a program this close to the first is the same stop.
const SAME_STOP: Duration = Duration::from_secs(1);

/// The signal that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT: Ctrl-C.
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Signal {
    fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
        }
    }
}

/// What to do with a signal that comes after the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Again {
    /// Cancel the running cases.
    Cancel,
    /// A program sent the first stop twice: it is the same stop.
    SameStop,
}

/// The rule above: a signal typed on the terminal, or sent a second or more after the first,
/// cancels; one sent by a program within [`SAME_STOP`] of the first is the same stop.
fn decide(typed: bool, since_first: Duration) -> Again {
    if typed || since_first >= SAME_STOP {
        Again::Cancel
    } else {
        Again::SameStop
    }
}

/// Listens for stop signals while a run goes on.
pub struct Listener {
    task: JoinHandle<()>,
    first: Arc<OnceLock<Signal>>,
}

impl Listener {
    /// Installs the handlers (before returning, so a signal from now on never takes its
    /// default, fatal, action) and forwards signals to `interrupt`. Call inside the runtime.
    pub fn start(interrupt: Interrupt, printer: Printer) -> Self {
        let first = Arc::new(OnceLock::new());
        // Before tokio's handlers: a signal's origin is recorded before the listener wakes.
        origin::install(printer);
        let mut signals = Signals::install(printer);
        let recorded = first.clone();
        let task = tokio::spawn(async move {
            let got = signals.next().await;
            let first_at = tokio::time::Instant::now();
            let mut typed_seen = origin::typed();
            let _ = recorded.set(got);
            interrupt.stop.cancel();
            // Two key presses heard in one wake-up are a second Ctrl-C already.
            if typed_seen < 2 {
                loop {
                    let again = signals.next().await;
                    let typed = origin::typed();
                    let decision = decide(typed > typed_seen, first_at.elapsed());
                    typed_seen = typed;
                    if decision == Again::Cancel {
                        break;
                    }
                    printer.note(&format!(
                        "{} again within a second of the first, sent by a program: taken as the same stop (programs such as `timeout` send one stop twice); to cancel the running cases, press Ctrl-C or send it again once a second has passed",
                        again.name()
                    ));
                }
            }
            if !interrupt.abort.is_cancelled() {
                printer.note("interrupted again: cancelling the running cases");
            }
            interrupt.abort.cancel();
        });
        Self { task, first }
    }

    /// Stops listening; the signal that stopped the run, if any.
    pub fn finish(self) -> Option<Signal> {
        self.task.abort();
        self.first.get().copied()
    }
}

/// Where signals come from: Linux tells a signal the kernel sent (a key typed on the
/// terminal) from one a program sent with `kill`.
#[cfg(any(target_os = "linux", target_os = "android"))]
mod origin {
    use std::sync::Once;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::printer::Printer;

    /// SIGINT and SIGTERM signals the kernel sent, so far.
    static TYPED: AtomicUsize = AtomicUsize::new(0);

    /// Counts the signals the kernel sends; once per process.
    pub(super) fn install(printer: Printer) {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            for signal in [libc::SIGINT, libc::SIGTERM] {
                // SAFETY: the action runs inside the signal handler and only reads the signal's
                // info and adds to an atomic, both async-signal-safe.
                let registered = unsafe {
                    signal_hook_registry::register_sigaction(signal, |info: &libc::siginfo_t| {
                        if info.si_code == libc::SI_KERNEL {
                            TYPED.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                };
                if let Err(e) = registered {
                    printer.warning(&format!(
                        "cannot tell a typed Ctrl-C from a program's signal ({e}): a second signal within a second of the first will count as the same stop"
                    ));
                }
            }
        });
    }

    /// How many signals the kernel has sent so far.
    pub(super) fn typed() -> usize {
        TYPED.load(Ordering::SeqCst)
    }
}

/// Elsewhere the origin is unknown: every signal counts as sent by a program.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod origin {
    use crate::printer::Printer;

    pub(super) fn install(_printer: Printer) {}

    pub(super) fn typed() -> usize {
        0
    }
}

#[cfg(unix)]
struct Signals {
    interrupt: Option<tokio::signal::unix::Signal>,
    terminate: Option<tokio::signal::unix::Signal>,
}

#[cfg(unix)]
impl Signals {
    fn install(printer: Printer) -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        let install = |kind: SignalKind, name: &str| match signal(kind) {
            Ok(s) => Some(s),
            Err(e) => {
                printer.warning(&format!("cannot listen for {name}: {e}"));
                None
            }
        };
        Self {
            interrupt: install(SignalKind::interrupt(), "SIGINT"),
            terminate: install(SignalKind::terminate(), "SIGTERM"),
        }
    }

    async fn next(&mut self) -> Signal {
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
            match s {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            Some(()) = recv(&mut self.interrupt) => Signal::Interrupt,
            Some(()) = recv(&mut self.terminate) => Signal::Terminate,
            else => std::future::pending().await,
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn install(_printer: Printer) -> Self {
        Self
    }

    async fn next(&mut self) -> Signal {
        match tokio::signal::ctrl_c().await {
            Ok(()) => Signal::Interrupt,
            Err(_) => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_signal_cancels_unless_a_program_sent_it_within_a_second() {
        let ms = Duration::from_millis;
        for (typed, since, want) in [
            (true, ms(0), Again::Cancel),
            (true, ms(200), Again::Cancel),
            (false, ms(0), Again::SameStop),
            (false, ms(999), Again::SameStop),
            (false, ms(1000), Again::Cancel),
            (false, ms(5000), Again::Cancel),
        ] {
            assert_eq!(decide(typed, since), want, "typed {typed}, after {since:?}");
        }
    }
}
