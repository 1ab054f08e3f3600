//! The live progress bar on a terminal: two lines at the bottom of stderr, redrawn in place
//! (`indicatif`), with everything else printed above them.
//!
//! ```text
//! ⠹ ████████░░░░░ 120/200  ✔ 100  ✘ 15  ~ 3  ! 2  0:42 elapsed, ETA 0:31
//!   running: refund-policy, escalation-to-a-human, order-st…tatus-3  +61 more
//! ```
//!
//! Nothing reaches the terminal around the printer's rules: the bar draws through
//! [`StderrTerm`], which redacts every frame before writing it, and what it shows of user text
//! (ids, targets) is redacted and escaped by [`super::clean_line`] before it is handed over.
//! While the bar is up, every other line for stderr (case lines, warnings, notes, logs) goes
//! through [`ProgressBar::println`], which clears the bar, prints the line and redraws the bar
//! in one write, so nothing garbles it and it does not flicker.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Mutex;
use std::time::Duration;

use agentv_core::JobView;
use agentv_core::model::{EvaluationRecord, ExecutionStatus, Verdict};
use agentv_core::report::text::{cut_end, cut_middle, width};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle, TermLike};

use super::{Printer, clean_line, redacted, styles};

/// Redraws per second at most (indicatif also redraws at once for a line printed above).
const REFRESH_HZ: u8 = 15;
/// How often the spinner and the clock move when nothing else happens.
const TICK: Duration = Duration::from_millis(120);
/// Longest id in the running line, in columns.
const RUNNING_ID_WIDTH: usize = 28;
/// Longest target name beside an id in the running line.
const RUNNING_TARGET_WIDTH: usize = 16;

/// The bar that is up, if any: lines for stderr go above it.
static ACTIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// The bar that is up, if any.
pub(super) fn active() -> Option<ProgressBar> {
    ACTIVE.lock().ok().and_then(|bar| bar.clone())
}

/// Whether a live bar suits this stderr: a terminal that can move its cursor, outside CI.
pub(super) fn suits_terminal(stderr_is_terminal: bool, ci: Option<&str>, term: Option<&str>) -> bool {
    let in_ci = ci.is_some_and(|v| !matches!(v.trim(), "" | "0" | "false" | "FALSE" | "False"));
    stderr_is_terminal && !in_ci && term != Some("dumb")
}

/// A running case as the bar shows it.
struct Running {
    id: String,
    target: String,
    shown: String,
}

/// The live bar and the state it shows.
pub(super) struct LiveBar {
    bar: ProgressBar,
    printer: Printer,
    /// Name each running case's target too (a run with several).
    with_targets: bool,
    running: Vec<Running>,
    pass: usize,
    borderline: usize,
    fail: usize,
    errors: usize,
    stopping: bool,
    /// Batch jobs not finished yet, as last heard of (`docs/batch.md`): while there are some,
    /// the second line shows them instead of the running cases.
    jobs: Vec<JobView>,
}

impl LiveBar {
    /// Puts a bar for `total` cases up on stderr.
    pub(super) fn start(printer: Printer, total: usize, targets: usize) -> Self {
        let bar = ProgressBar::with_draw_target(
            Some(total as u64),
            ProgressDrawTarget::term_like_with_hz(Box::new(StderrTerm::default()), REFRESH_HZ),
        );
        let style = ProgressStyle::with_template("{spinner} {wide_bar} {pos}/{len}  {prefix}  {clock}\n{wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("█▌░")
            .with_key("clock", clock);
        bar.set_style(style);
        let mut live = Self {
            bar,
            printer,
            with_targets: targets > 1,
            running: Vec::new(),
            pass: 0,
            borderline: 0,
            fail: 0,
            errors: 0,
            stopping: false,
            jobs: Vec::new(),
        };
        live.refresh();
        live.bar.enable_steady_tick(TICK);
        if let Ok(mut active) = ACTIVE.lock() {
            *active = Some(live.bar.clone());
        }
        live
    }

    pub(super) fn started(&mut self, id: &str, target: &str) {
        let mut shown = cut_middle(&clean_line(id), RUNNING_ID_WIDTH);
        if self.with_targets {
            let _ = write!(shown, " [{}]", cut_middle(&clean_line(target), RUNNING_TARGET_WIDTH));
        }
        self.running.push(Running {
            id: id.to_owned(),
            target: target.to_owned(),
            shown,
        });
        self.refresh_running();
    }

    pub(super) fn finished(&mut self, record: &EvaluationRecord) {
        if let Some(i) = self
            .running
            .iter()
            .position(|r| r.id == record.eval_id && r.target == record.target)
        {
            self.running.remove(i);
        }
        match (record.execution_status, record.verdict) {
            (ExecutionStatus::Ok, Verdict::Pass) => self.pass += 1,
            (ExecutionStatus::Ok, Verdict::Borderline) => self.borderline += 1,
            (ExecutionStatus::Ok, Verdict::Fail) => self.fail += 1,
            _ => self.errors += 1,
        }
        self.bar.inc(1);
        self.refresh();
    }

    /// A batch job changed state or counts: the second line shows it until it ends.
    pub(super) fn batch_job(&mut self, job: &JobView) {
        match self.jobs.iter_mut().position(|j| j.id == job.id) {
            Some(i) if job.state.terminal => {
                self.jobs.remove(i);
            }
            Some(i) => self.jobs[i] = job.clone(),
            None if !job.state.terminal => self.jobs.push(job.clone()),
            None => {}
        }
        self.refresh_running();
    }

    /// After an interrupt: no new case starts; the bar says what it waits for.
    pub(super) fn stopping(&mut self) {
        self.stopping = true;
        self.refresh_running();
    }

    fn refresh(&mut self) {
        let p = self.printer;
        let counts = format!(
            "{} {}  {} {}  {} {}  {} {}",
            p.mark(styles::GOOD, "✔"),
            self.pass,
            p.mark(styles::BAD, "✘"),
            self.fail,
            p.mark(styles::SO_SO, "~"),
            self.borderline,
            p.mark(styles::BAD, "!"),
            self.errors
        );
        self.bar.set_prefix(counts);
        self.refresh_running();
    }

    /// The second line: the batch jobs not finished, else the running cases, oldest first, as
    /// many as fit.
    fn refresh_running(&mut self) {
        let columns = usize::from(terminal_width()).saturating_sub(1);
        if !self.jobs.is_empty() {
            let line = jobs_line(&self.jobs, columns);
            self.bar.set_message(self.printer.mark(styles::DIM, &line));
            return;
        }
        let lead = if self.stopping {
            "  stopping, waiting for: "
        } else {
            "  running: "
        };
        let mut line = String::from(lead);
        let mut used = width(lead);
        for (i, r) in self.running.iter().enumerate() {
            let left = self.running.len() - i - 1;
            let more = if left > 0 {
                format!("  +{left} more")
            } else {
                String::new()
            };
            let separator = if i == 0 { "" } else { ", " };
            if used + width(separator) + width(&r.shown) + width(&more) > columns {
                let _ = write!(line, "  +{} more", self.running.len() - i);
                break;
            }
            line.push_str(separator);
            line.push_str(&r.shown);
            used += width(separator) + width(&r.shown);
        }
        if self.running.is_empty() {
            line.truncate(0);
        }
        self.bar.set_message(self.printer.mark(styles::DIM, &line));
    }

    /// Takes the bar down: lines for stderr are written directly again.
    pub(super) fn finish(&self) {
        if let Ok(mut active) = ACTIVE.lock() {
            *active = None;
        }
        self.bar.finish_and_clear();
    }
}

impl Drop for LiveBar {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Cells of the jobs' own bar.
const JOBS_BAR: usize = 12;

/// `  batch: 2 job(s) ████░░░░░░░░ 120/1000 done, 0 failed · batch_a of `t`: in_progress 120/500 ·
/// batch_b of judge `t`: validating 0/500`, cut to `columns`.
fn jobs_line(jobs: &[JobView], columns: usize) -> String {
    let sum = |f: fn(&JobView) -> u64| jobs.iter().map(f).sum::<u64>();
    let (done, failed, total) = (
        sum(|j| j.state.completed),
        sum(|j| j.state.failed),
        sum(|j| j.state.total),
    );
    let filled = ((done + failed).min(total) * JOBS_BAR as u64)
        .checked_div(total)
        .map_or(0, |cells| usize::try_from(cells).unwrap_or(JOBS_BAR));
    let mut line = format!(
        "  batch: {} job(s) {}{} {done}/{total} done, {failed} failed",
        jobs.len(),
        "█".repeat(filled),
        "░".repeat(JOBS_BAR - filled)
    );
    for j in jobs {
        let _ = write!(
            line,
            " · {} of {}: {} {}/{}",
            clean_line(&j.id),
            clean_line(&j.of),
            clean_line(&j.state.status),
            j.state.completed,
            j.state.total
        );
    }
    cut_end(&line, columns)
}

/// `0:42 elapsed, ETA 0:31`: the ETA is the mean time per finished case so far times the cases
/// left (cases differ too much for a rate over the last few to mean more).
fn clock(state: &ProgressState, w: &mut dyn std::fmt::Write) {
    let elapsed = state.elapsed();
    let done = state.pos();
    let total = state.len().unwrap_or(done);
    let eta = if done == 0 {
        "–".to_owned()
    } else {
        let per_case = elapsed.as_secs_f64() / done as f64;
        stopwatch(Duration::from_secs_f64(per_case * total.saturating_sub(done) as f64))
    };
    let _ = write!(w, "{} elapsed, ETA {eta}", stopwatch(elapsed));
}

/// `0:07`, `12:05`, `1:02:03`.
fn stopwatch(d: Duration) -> String {
    let s = d.as_secs();
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// The terminal's width, from stderr (80 when it cannot be read).
pub(super) fn terminal_width() -> u16 {
    console::Term::stderr().size_checked().map_or(80, |(_, w)| w)
}

/// stderr as indicatif draws on it: each frame is gathered, redacted and written at once.
#[derive(Debug, Default)]
struct StderrTerm {
    frame: Mutex<String>,
}

impl StderrTerm {
    fn push(&self, text: &str) -> std::io::Result<()> {
        let mut frame = self
            .frame
            .lock()
            .map_err(|_| std::io::Error::other("frame lock poisoned"))?;
        frame.push_str(text);
        Ok(())
    }
}

impl TermLike for StderrTerm {
    fn width(&self) -> u16 {
        terminal_width()
    }

    fn height(&self) -> u16 {
        console::Term::stderr().size_checked().map_or(24, |(h, _)| h)
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        if n == 0 {
            Ok(())
        } else {
            self.push(&format!("\u{1b}[{n}A"))
        }
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        if n == 0 {
            Ok(())
        } else {
            self.push(&format!("\u{1b}[{n}B"))
        }
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        if n == 0 {
            Ok(())
        } else {
            self.push(&format!("\u{1b}[{n}C"))
        }
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        if n == 0 {
            Ok(())
        } else {
            self.push(&format!("\u{1b}[{n}D"))
        }
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.push(s)?;
        self.push("\n")
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.push(s)
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.push("\r\u{1b}[2K")
    }

    fn flush(&self) -> std::io::Result<()> {
        let frame = {
            let mut frame = self
                .frame
                .lock()
                .map_err(|_| std::io::Error::other("frame lock poisoned"))?;
            std::mem::take(&mut *frame)
        };
        if frame.is_empty() {
            return Ok(());
        }
        let mut err = std::io::stderr().lock();
        err.write_all(redacted(&frame).as_bytes())?;
        err.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_needs_a_terminal_outside_ci() {
        let cases = [
            (true, None, Some("xterm-256color"), true),
            (false, None, Some("xterm"), false),
            (true, Some("true"), Some("xterm"), false),
            (true, Some("1"), None, false),
            (true, Some("false"), Some("xterm"), true),
            (true, Some(""), Some("xterm"), true),
            (true, None, Some("dumb"), false),
        ];
        for (terminal, ci, term, want) in cases {
            assert_eq!(suits_terminal(terminal, ci, term), want, "{terminal} {ci:?} {term:?}");
        }
    }

    fn job(id: &str, status: &str, done: u64, total: u64) -> JobView {
        JobView {
            id: id.to_owned(),
            of: "`default`".to_owned(),
            state: agentv_core::providers::JobState {
                status: status.to_owned(),
                total,
                completed: done,
                ..Default::default()
            },
        }
    }

    #[test]
    fn the_jobs_line_shows_each_job_its_state_and_the_counts_with_a_bar() {
        let jobs = [
            job("batch_a", "in_progress", 120, 500),
            job("batch_b", "validating", 0, 500),
        ];
        assert_eq!(
            jobs_line(&jobs, 200),
            "  batch: 2 job(s) █░░░░░░░░░░░ 120/1000 done, 0 failed · batch_a of `default`: in_progress 120/500 · batch_b of `default`: validating 0/500"
        );
        assert_eq!(width(&jobs_line(&jobs, 40)), 40, "cut to the terminal");
        let done = [job("batch_a", "finalizing", 500, 500)];
        assert!(jobs_line(&done, 200).contains("████████████ 500/500"));
        let unknown = [job("batch\u{1b}[2J", "validating", 0, 0)];
        assert!(!jobs_line(&unknown, 200).contains('\u{1b}'), "ids are escaped");
    }

    #[test]
    fn stopwatch_reads_like_a_clock() {
        assert_eq!(stopwatch(Duration::from_secs(7)), "0:07");
        assert_eq!(stopwatch(Duration::from_secs(725)), "12:05");
        assert_eq!(stopwatch(Duration::from_secs(3723)), "1:02:03");
    }

    #[test]
    fn frames_are_redacted_before_they_reach_the_terminal() {
        let term = StderrTerm::default();
        super::super::secrets().add("bar-frame-secret-5829");
        term.write_str("id bar-frame-secret-5829").expect("buffered");
        let frame = term.frame.lock().expect("frame").clone();
        assert_eq!(redacted(&frame), "id ***");
    }
}
