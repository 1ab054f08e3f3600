//! SIGINT (Ctrl-C) and SIGTERM (what CI runners and `timeout` send) stop a run the same way
//! (`docs/architecture.md#exit-codes`): the first stops scheduling, the second (a second or more
//! later) cancels the cases still running. Only the exit code tells them apart.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agentv_core::Interrupt;
use tokio::task::JoinHandle;

use crate::printer::Printer;

/// Signals this close to the first are the same stop: GNU `timeout` (and some CI runners)
/// signal agentv and its process group, so one stop arrives twice at once. Only a signal sent
/// later, as a second Ctrl-C is, cancels the running cases.
const COALESCE: Duration = Duration::from_secs(1);

/// The signal that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT: Ctrl-C.
    Interrupt,
    /// SIGTERM.
    Terminate,
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
        let mut signals = Signals::install(printer);
        let recorded = first.clone();
        let task = tokio::spawn(async move {
            let got = signals.next().await;
            let first_at = tokio::time::Instant::now();
            let _ = recorded.set(got);
            interrupt.stop.cancel();
            loop {
                signals.next().await;
                if first_at.elapsed() >= COALESCE {
                    break;
                }
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
