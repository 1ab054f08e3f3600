//! Progress of a run on stderr, in one of three forms:
//!
//! - on a terminal (outside CI): a live bar at the bottom ([`super::bar`]) with counts, time,
//!   ETA and the running cases; above it a line for each case that did not pass (with what went
//!   wrong under it), and for passing cases too with `--verbose`;
//! - elsewhere (a pipe, a file, CI): one line per finished case, as a log keeps it;
//! - with `--quiet`: nothing but errors.

use std::io::IsTerminal as _;
use std::time::Duration;

use agentv_core::model::{EvaluationRecord, ExecutionStatus, Verdict};
use agentv_core::report::text::{cut_end, cut_middle, width};
use agentv_core::report::{case_label, counted_misses};
use agentv_core::{JobView, RunObserver, Secrets, TargetRole, escape_line};

use super::bar::{LiveBar, suits_terminal, terminal_width};
use super::{Level, Printer, styles, to_stderr};

/// How many misses of a failed case the progress line shows.
const SHOWN_MISSES: usize = 3;
/// Longest message shown under a progress line, in characters (off a terminal; on one, lines fit
/// its width).
const DETAIL_WIDTH: usize = 160;
/// Columns a target's name takes beside an id, at most, on a terminal.
const TARGET_WIDTH: usize = 18;
/// The fewest columns a message (or an id) is cut to on a narrow terminal.
const MIN_MESSAGE_WIDTH: usize = 20;

/// Progress of a run. `--quiet` hides the case lines and warnings; a target's failed
/// healthcheck is an error and is always shown.
pub struct Progress {
    printer: Printer,
    secrets: Secrets,
    width: usize,
    /// Name each case's target beside its id (a run with several).
    with_targets: bool,
    /// The live bar, on a terminal.
    live: Option<LiveBar>,
    /// The terminal's columns, with a live bar: the lines above it are cut to fit, so they do
    /// not wrap around it.
    columns: Option<usize>,
}

impl Progress {
    /// Progress of `total` cases on `targets` targets; a live bar when stderr is a terminal
    /// (outside CI, and not with `--quiet`).
    pub fn new(printer: Printer, secrets: Secrets, total: usize, targets: usize) -> Self {
        let term = std::env::var("TERM").ok();
        let ci = std::env::var("CI").ok();
        let live = (printer.shows(Level::Default)
            && suits_terminal(std::io::stderr().is_terminal(), ci.as_deref(), term.as_deref()))
        .then(|| LiveBar::start(printer, total, targets));
        Self {
            printer,
            secrets,
            width: total.to_string().len(),
            with_targets: targets > 1,
            columns: live.as_ref().map(|_| usize::from(terminal_width()).saturating_sub(1)),
            live,
        }
    }

    /// Takes the bar down (before the summary is printed).
    pub fn finish(&mut self) {
        if let Some(live) = self.live.take() {
            live.finish();
        }
    }

    /// Whether `record`'s line is printed: always without a bar; above a bar, only for cases
    /// that did not pass, unless `--verbose`.
    fn prints_line_of(&self, record: &EvaluationRecord) -> bool {
        if !self.printer.shows(Level::Default) {
            return false;
        }
        let passed = record.execution_status == ExecutionStatus::Ok && record.verdict == Verdict::Pass;
        self.live.is_none() || !passed || self.printer.shows(Level::Verbose)
    }

    /// `text` redacted, then escaped onto one line.
    fn clean(&self, text: &str) -> String {
        escape_line(&self.secrets.redact(text)).into_owned()
    }

    /// The line of `text` that says what went wrong, within `max` characters: its first line
    /// and, for a multi-line error, its last (the end of a crashed program's stderr, where a
    /// traceback names the cause), redacted whole first, then escaped.
    fn clean_cause(&self, text: &str, max: usize) -> String {
        let redacted = self.secrets.redact(text);
        escape_line(&agentv_core::cause_line(&redacted, max)).into_owned()
    }

    /// A detail line under a case: indented, one line, bounded (by the terminal's width on
    /// one).
    fn detail(&self, label: &str, text: &str) -> String {
        let text = match self.columns {
            Some(columns) => {
                let room = self.room(columns, 6 + width(label) + 2);
                cut_end(&self.clean_cause(text, room), room)
            }
            None => shorten(&self.clean_cause(text, DETAIL_WIDTH), DETAIL_WIDTH),
        };
        format!("      {label}: {text}\n")
    }

    /// The case's id (and trial, with `--repeat`), with its target's name in a run with
    /// several. On a terminal the id is cut
    /// so that the line keeps its verdict and time: an error gets two fifths of the line, the
    /// rest of it goes to the message.
    fn id_of(&self, record: &EvaluationRecord, head: &str, secs: f64) -> String {
        let id = self.clean(&case_label(record));
        let mut target = String::new();
        if self.with_targets {
            target = format!(" [{}]", self.clean(&record.target));
        }
        let Some(columns) = self.columns else {
            return id + &target;
        };
        let target = cut_middle(&target, TARGET_WIDTH);
        let after = columns.saturating_sub(width(head) + 3 + width(&target));
        let room = if matches!(
            record.execution_status,
            ExecutionStatus::ExecutionError | ExecutionStatus::Invalid
        ) {
            after * 2 / 5
        } else {
            // "  0.000 borderline  (12.3s)" or "  0.000  GRADER ERROR  (12.3s)"
            after.saturating_sub(2 + 19 + format!("  ({secs:.1}s)").len())
        };
        cut_middle(&id, room.max(MIN_MESSAGE_WIDTH)) + &target
    }

    /// Columns left for a message on a line of `columns` where `used` are taken.
    fn room(&self, columns: usize, used: usize) -> usize {
        columns.saturating_sub(used).max(MIN_MESSAGE_WIDTH)
    }

    fn line(&self, record: &EvaluationRecord, elapsed: Duration, done: usize, total: usize) -> String {
        let p = self.printer;
        let w = self.width;
        let head = format!("[{done:>w$}/{total}]");
        let secs = elapsed.as_secs_f64();
        let id = self.id_of(record, &head, secs);
        let mut text = String::new();
        match record.execution_status {
            ExecutionStatus::ExecutionError | ExecutionStatus::Invalid => {
                let word = if record.execution_status == ExecutionStatus::Invalid {
                    "INVALID"
                } else {
                    "ERROR"
                };
                // Bounded like the detail lines (to the terminal's width on one); the results
                // file keeps the whole error.
                let error = record.error.as_deref().unwrap_or_default();
                // An invalid case's diagnostic names its cause first; help lines follow.
                let error = if record.execution_status == ExecutionStatus::Invalid {
                    error.trim().lines().next().unwrap_or_default()
                } else {
                    error
                };
                let error = match self.columns {
                    Some(columns) => {
                        // "[1/2] ✘ " + id + "  ERROR  " + error + "  (1.0s)"
                        let used = width(&head) + 3 + width(&id) + 9 + format!("  ({secs:.1}s)").len();
                        let room = self.room(columns, used);
                        cut_end(&self.clean_cause(error, room), room)
                    }
                    None => shorten(&self.clean_cause(error, DETAIL_WIDTH), DETAIL_WIDTH),
                };
                text.push_str(&format!(
                    "{head} {} {id}  {}  {error}  ({secs:.1}s)\n",
                    p.mark(styles::BAD, "✘"),
                    p.mark(styles::BAD, word)
                ));
            }
            ExecutionStatus::GraderError => {
                text.push_str(&format!(
                    "{head} {} {id}  {:.3}  {}  ({secs:.1}s)\n",
                    p.mark(styles::SO_SO, "!"),
                    record.score,
                    p.mark(styles::SO_SO, "GRADER ERROR")
                ));
                for r in &record.evaluator_results {
                    if let Some(e) = &r.error {
                        let label = format!("grader error in '{}'", self.clean(&r.name));
                        text.push_str(&self.detail(&label, e));
                    }
                }
            }
            ExecutionStatus::Ok => {
                let (mark, style) = match record.verdict {
                    Verdict::Pass => ("✔", styles::GOOD),
                    Verdict::Borderline => ("~", styles::SO_SO),
                    Verdict::Fail | Verdict::Skip => ("✘", styles::BAD),
                };
                text.push_str(&format!(
                    "{head} {} {id}  {:.3} {}  {}\n",
                    p.mark(style, mark),
                    record.score,
                    p.mark(style, record.verdict.as_str()),
                    p.mark(styles::DIM, &format!("({secs:.1}s)"))
                ));
                if record.verdict == Verdict::Fail {
                    // What failed the case: a weight-0 grader's misses do not count.
                    let misses: Vec<&str> = counted_misses(record).collect();
                    for miss in misses.iter().take(SHOWN_MISSES) {
                        text.push_str(&self.detail("miss", miss));
                    }
                    if misses.len() > SHOWN_MISSES {
                        text.push_str(&format!(
                            "      … {} more miss(es) in the results file\n",
                            misses.len() - SHOWN_MISSES
                        ));
                    }
                }
            }
        }
        text
    }
}

impl RunObserver for Progress {
    fn case_started(&mut self, eval_id: &str, target: &str) {
        if let Some(live) = &mut self.live {
            live.started(eval_id, target);
        }
    }

    fn case_finished(&mut self, record: &EvaluationRecord, elapsed: Duration, done: usize, total: usize) {
        if self.prints_line_of(record) {
            to_stderr(&self.line(record, elapsed, done, total));
        }
        if let Some(live) = &mut self.live {
            live.finished(record);
        }
    }

    fn warning(&mut self, message: &str) {
        self.printer.warning(&self.clean(message));
    }

    fn batch_progress(&mut self, line: &str) {
        self.printer.note(&self.clean(line));
    }

    /// On a terminal the bar shows each job's state and counts as they change, and a line
    /// says how it ended; elsewhere every change is a line (`docs/batch.md`).
    fn batch_job(&mut self, job: &JobView) {
        if let Some(live) = &mut self.live {
            live.batch_job(job);
            if !job.state.terminal {
                return;
            }
        }
        self.printer.note(&self.clean(&job.describe()));
    }

    fn interrupted(&mut self, in_flight: usize, grace: Duration) {
        if let Some(live) = &mut self.live {
            live.stopping();
        }
        self.printer.note(&format!(
            "interrupted: no new cases will start; waiting up to {}s for {in_flight} running case(s) (interrupt again to cancel them)",
            grace.as_secs()
        ));
    }

    fn healthcheck_failed(&mut self, role: TargetRole, target: &str, message: &str) {
        // A judge only matters to cases graded by it, so its failure is a warning.
        let (error, what, consequence) = match role {
            TargetRole::Target => (
                true,
                "target",
                "its cases will not run: each is recorded as an execution error",
            ),
            TargetRole::Judge => (
                false,
                "judge target",
                "grades that need it will be recorded as grader errors",
            ),
        };
        let redacted = self.secrets.redact(message);
        let mut lines = redacted.lines().map(escape_line);
        let mut text = format!(
            "{what} `{}` failed its healthcheck: {}\n",
            self.clean(target),
            lines.next().unwrap_or_default()
        );
        for line in lines {
            text.push_str(&format!("    {line}\n"));
        }
        text.push_str(&format!("  {consequence}"));
        if error {
            self.printer.error(&text);
        } else {
            self.printer.warning(&text);
        }
    }
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
