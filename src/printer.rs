//! Terminal output: progress lines and problems on stderr, the summary on stdout.
//!
//! Nothing here panics on a closed stream: a reader that goes away (`agentv eval … | head -1`)
//! ends output quietly, as ripgrep does. User text (ids, messages, provider output) is redacted
//! and escaped before it is printed, so it can neither leak a secret nor forge a line.
//!
//! Every write goes through the process's redaction layer (`docs/architecture.md#secrets`):
//! [`secrets`] is the registry resolution fills, and both streams (logs too, through [`stderr`])
//! are redacted with it.

use std::borrow::Cow;
use std::io::Write;
use std::sync::LazyLock;
use std::time::Duration;

use agentv_core::load::{Diagnostic, Secrets, Severity};
use agentv_core::model::{EvaluationRecord, ExecutionStatus, Verdict};
use agentv_core::redact::RedactingWriter;
use agentv_core::report::{escape_line, escape_text};
use agentv_core::run::{RunObserver, TargetRole};

/// The process's secrets: resolution registers `${{ VAR }}` values here, and every print
/// redacts them, including values registered after printing began.
static SECRETS: LazyLock<Secrets> = LazyLock::new(Secrets::default);

/// The registry every output of this process redacts through.
pub fn secrets() -> Secrets {
    SECRETS.clone()
}

/// stderr behind the redaction layer: the writer of logs.
pub fn stderr() -> RedactingWriter<std::io::Stderr> {
    RedactingWriter::new(std::io::stderr(), secrets())
}

fn redacted(text: &str) -> Cow<'_, str> {
    SECRETS.redact(text)
}

/// How many misses of a failed case the progress line shows.
const SHOWN_MISSES: usize = 3;
/// Longest message shown under a progress line, in characters.
const DETAIL_WIDTH: usize = 160;

/// Prints diagnostics; returns the number of errors. The message and help are escaped onto
/// their own line each, so an id quoted in them cannot forge another line.
pub fn diagnostics(items: &[Diagnostic]) -> usize {
    for d in items {
        let shown = Diagnostic {
            message: escape_line(&redacted(&d.message)).into_owned(),
            help: d.help.as_deref().map(|h| escape_line(&redacted(h)).into_owned()),
            ..d.clone()
        };
        to_stderr(&format!("{}\n", escape_text(&shown.to_string())));
    }
    items.iter().filter(|d| d.severity == Severity::Error).count()
}

/// Prints a message to stderr.
pub fn note(message: &str) {
    to_stderr(&format!("{}\n", escape_text(&redacted(message))));
}

/// Prints an error to stderr.
pub fn error(message: &str) {
    to_stderr(&format!("error: {}\n", escape_text(&redacted(message))));
}

/// Prints `text` to stdout. A closed pipe is not an error: the reader has what it wanted.
pub fn stdout(text: &str) {
    let text = redacted(text);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => to_stderr(&format!("error: cannot write to stdout: {e}\n")),
    }
}

/// One write per message (stderr is unbuffered), errors ignored: there is nowhere left to
/// report them.
fn to_stderr(text: &str) {
    let _ = std::io::stderr().lock().write_all(redacted(text).as_bytes());
}

/// One line per finished case on stderr, with what went wrong under it.
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

    /// `text` redacted, then escaped onto one line.
    fn clean(&self, text: &str) -> String {
        escape_line(&self.secrets.redact(text)).into_owned()
    }

    /// The first line of `text`, redacted (whole, so a secret is found even when it spans
    /// lines) and escaped.
    fn clean_first_line(&self, text: &str) -> String {
        let redacted = self.secrets.redact(text);
        escape_line(first_line(&redacted)).into_owned()
    }

    /// A detail line under a case: indented, one line, bounded.
    fn detail(&self, label: &str, text: &str) -> String {
        format!(
            "      {label}: {}\n",
            shorten(&self.clean_first_line(text), DETAIL_WIDTH)
        )
    }
}

impl RunObserver for Progress {
    fn case_finished(&mut self, record: &EvaluationRecord, elapsed: Duration, done: usize, total: usize) {
        let w = self.width;
        let head = format!("[{done:>w$}/{total}]");
        let id = self.clean(&record.eval_id);
        let secs = elapsed.as_secs_f64();
        let mut text = String::new();
        match record.execution_status {
            ExecutionStatus::ExecutionError => {
                let error = self.clean_first_line(record.error.as_deref().unwrap_or_default());
                text.push_str(&format!("{head} ✘ {id}  ERROR  {error}  ({secs:.1}s)\n"));
            }
            ExecutionStatus::GraderError => {
                text.push_str(&format!(
                    "{head} ! {id}  {:.3}  GRADER ERROR  ({secs:.1}s)\n",
                    record.score
                ));
                for r in &record.evaluator_results {
                    if let Some(e) = &r.error {
                        let label = format!("grader error in '{}'", self.clean(&r.name));
                        text.push_str(&self.detail(&label, e));
                    }
                }
            }
            ExecutionStatus::Ok => {
                let mark = match record.verdict {
                    Verdict::Pass => '✔',
                    Verdict::Borderline => '~',
                    Verdict::Fail => '✘',
                };
                text.push_str(&format!(
                    "{head} {mark} {id}  {:.3} {}  ({secs:.1}s)\n",
                    record.score,
                    record.verdict.as_str()
                ));
                if record.verdict == Verdict::Fail {
                    for miss in record.misses.iter().take(SHOWN_MISSES) {
                        text.push_str(&self.detail("miss", miss));
                    }
                    if record.misses.len() > SHOWN_MISSES {
                        text.push_str(&format!(
                            "      … {} more miss(es) in the results file\n",
                            record.misses.len() - SHOWN_MISSES
                        ));
                    }
                }
            }
        }
        to_stderr(&text);
    }

    fn warning(&mut self, message: &str) {
        to_stderr(&format!("warning: {}\n", self.clean(message)));
    }

    fn interrupted(&mut self, in_flight: usize, grace: Duration) {
        to_stderr(&format!(
            "interrupted: no new cases will start; waiting up to {}s for {in_flight} running case(s) (interrupt again to cancel them)\n",
            grace.as_secs()
        ));
    }

    fn healthcheck_failed(&mut self, role: TargetRole, target: &str, message: &str) {
        // A judge only matters to cases graded by it, so its failure is a warning.
        let (level, what, consequence) = match role {
            TargetRole::Target => (
                "error",
                "target",
                "its cases will not run: each is recorded as an execution error",
            ),
            TargetRole::Judge => (
                "warning",
                "judge target",
                "grades that need it will be recorded as grader errors",
            ),
        };
        let redacted = self.secrets.redact(message);
        let mut lines = redacted.lines().map(escape_line);
        let mut text = format!(
            "{level}: {what} `{}` failed its healthcheck: {}\n",
            self.clean(target),
            lines.next().unwrap_or_default()
        );
        for line in lines {
            text.push_str(&format!("    {line}\n"));
        }
        text.push_str(&format!("  {consequence}\n"));
        to_stderr(&text);
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// At most `max` characters of `text`, with `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_cuts_on_characters_not_bytes() {
        assert_eq!(shorten("short", 10), "short");
        assert_eq!(shorten("ééééé", 3), "éé…");
        assert_eq!(shorten("", 0), "");
    }
}
