//! Terminal output: progress lines and problems on stderr, the summary on stdout.

use std::io::Write;
use std::time::Duration;

use agentv_core::load::{Diagnostic, Secrets, Severity};
use agentv_core::model::EvaluationRecord;
use agentv_core::run::RunObserver;

/// Prints diagnostics; returns the number of errors.
pub fn diagnostics(items: &[Diagnostic]) -> usize {
    let mut err = std::io::stderr().lock();
    for d in items {
        let _ = writeln!(err, "{d}");
    }
    items.iter().filter(|d| d.severity == Severity::Error).count()
}

/// Prints a message to stderr.
pub fn note(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}

/// Prints an error to stderr.
pub fn error(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "error: {message}");
}

/// One line per finished case on stderr.
pub struct Progress {
    pub secrets: Secrets,
    width: usize,
}

impl Progress {
    pub fn new(secrets: Secrets, total: usize) -> Self {
        Self {
            secrets,
            width: total.to_string().len(),
        }
    }
}

impl RunObserver for Progress {
    fn case_finished(&mut self, record: &EvaluationRecord, elapsed: Duration, done: usize, total: usize) {
        let w = self.width;
        let secs = elapsed.as_secs_f64();
        let line = match &record.error {
            Some(e) => format!(
                "[{done:>w$}/{total}] ✘ {}  ERROR  {}  ({secs:.1}s)",
                record.eval_id,
                first_line(e)
            ),
            None => {
                let mark = if record.evaluator_results.iter().any(|r| r.error.is_some()) {
                    "!"
                } else {
                    "✔"
                };
                format!(
                    "[{done:>w$}/{total}] {mark} {}  {:.3} {}  ({secs:.1}s)",
                    record.eval_id,
                    record.score,
                    record.verdict.as_str()
                )
            }
        };
        let mut line = self.secrets.redact(&line).into_owned();
        line.push('\n');
        // stderr is unbuffered: one write per line, not one per formatted piece.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn warning(&mut self, message: &str) {
        let _ = writeln!(std::io::stderr().lock(), "warning: {}", self.secrets.redact(message));
    }

    fn interrupted(&mut self, in_flight: usize, grace: Duration) {
        let _ = writeln!(
            std::io::stderr().lock(),
            "interrupted: no new cases will start; waiting up to {}s for {in_flight} running case(s) (Ctrl-C again to cancel them)",
            grace.as_secs()
        );
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
