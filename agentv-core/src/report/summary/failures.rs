//! The failures section: each case that failed or could not run or be graded, with what explains
//! it (its first misses, its error), bounded so that a run of ten thousand failures prints a
//! screenful, not a novel: the results file has them all.

use std::fmt::Write as _;

use super::text::{Paint, Tone, cut_end, cut_middle, width};
use super::{Shown, name_width, plural};
use crate::model::{EvaluationRecord, ExecutionStatus, Verdict};
use crate::report::counted_misses;

/// How many failing cases are listed.
pub(super) const LISTED: usize = 10;
/// How many lines of misses (or grader errors) one case gets: all of them when they fit, else
/// one fewer and a line counting the rest (never "+1 more" in place of the one it hides).
pub(super) const DETAILS: usize = 3;
/// Indent of a detail line under its case.
const DETAIL_INDENT: &str = "      ";

/// Why a case is listed. The order is the listing order: invalid cases first, then cases that
/// did not run, then cases that could not be graded, then low scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Invalid,
    ExecutionError,
    NotRun,
    GraderError,
    Fail,
}

/// What a detail line is.
#[derive(Debug, Clone)]
enum Label {
    Miss,
    Error,
    /// A grader's error, with the grader's name.
    Grader(String),
    /// A failed case without misses says why through its reasoning.
    Reasoning,
}

#[derive(Debug, Clone)]
struct Failure {
    kind: Kind,
    score: f64,
    /// Arrival order, to break ties the same way every time.
    seq: u64,
    id: String,
    target: String,
    /// Raw text: it is redacted whole, then cut, only when rendered.
    details: Vec<(Label, String)>,
    /// Details not kept.
    more: usize,
}

impl Failure {
    fn key(&self) -> (Kind, f64, u64) {
        (self.kind, self.score, self.seq)
    }
}

fn before(a: (Kind, f64, u64), b: (Kind, f64, u64)) -> bool {
    a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)).is_lt()
}

/// The failing cases worth listing, and how many there are in all.
#[derive(Debug, Clone, Default)]
pub(super) struct Failures {
    kept: Vec<Failure>,
    total: usize,
}

impl Failures {
    pub(super) fn add(&mut self, record: &EvaluationRecord, seq: u64) {
        let kind = match (record.execution_status, record.verdict) {
            (ExecutionStatus::Invalid, _) => Kind::Invalid,
            (ExecutionStatus::ExecutionError, _) if record.is_not_run() => Kind::NotRun,
            (ExecutionStatus::ExecutionError, _) => Kind::ExecutionError,
            (ExecutionStatus::GraderError, _) => Kind::GraderError,
            (ExecutionStatus::Ok, Verdict::Fail | Verdict::Skip) => Kind::Fail,
            (ExecutionStatus::Ok, Verdict::Pass | Verdict::Borderline) => return,
        };
        self.total += 1;
        let key = (kind, record.score, seq);
        let position = self.kept.iter().position(|f| before(key, f.key()));
        let position = match position {
            Some(p) => p,
            None if self.kept.len() < LISTED => self.kept.len(),
            // Below everything kept, and the list is full: nothing to copy.
            None => return,
        };
        let (details, more) = details(record, kind);
        self.kept.insert(
            position,
            Failure {
                kind,
                score: record.score,
                seq,
                id: crate::report::case_label(record).into_owned(),
                target: record.target.clone(),
                details,
                more,
            },
        );
        self.kept.truncate(LISTED);
    }

    /// The section, `width` columns wide; nothing when no case failed. `with_target` names each
    /// case's target (a run with several).
    pub(super) fn render(
        &self,
        out: &mut String,
        cases: usize,
        with_target: bool,
        shown: &Shown<'_>,
        paint: Paint,
        width: usize,
    ) {
        if self.total == 0 {
            return;
        }
        let title = format!("FAILURES ({} of {})", self.total, plural(cases, "case", "cases"));
        let _ = writeln!(out, "{}", paint.tone(Tone::Heading, &title));
        for f in &self.kept {
            render_one(out, f, with_target, shown, paint, width);
        }
        if self.total > self.kept.len() {
            let _ = writeln!(
                out,
                "  … {} (every case is in the results file)",
                plural(self.total - self.kept.len(), "more failing case", "more failing cases")
            );
        }
        out.push('\n');
    }
}

/// The things that explain `record`'s failure, as many as [`DETAILS`] allows, and how many more
/// there are.
fn details(record: &EvaluationRecord, kind: Kind) -> (Vec<(Label, String)>, usize) {
    let all: Vec<(Label, String)> = match kind {
        Kind::ExecutionError | Kind::NotRun | Kind::Invalid => vec![(
            Label::Error,
            record
                .error
                .clone()
                .unwrap_or_else(|| "the target could not answer".to_owned()),
        )],
        Kind::GraderError => record
            .evaluator_results
            .iter()
            .filter_map(|r| r.error.as_ref().map(|e| (Label::Grader(r.name.clone()), e.clone())))
            .collect(),
        Kind::Fail => {
            let misses: Vec<(Label, String)> = counted_misses(record).map(|m| (Label::Miss, m.to_owned())).collect();
            if misses.is_empty() {
                record.reasoning.iter().map(|r| (Label::Reasoning, r.clone())).collect()
            } else {
                misses
            }
        }
    };
    let kept = if all.len() <= DETAILS { all.len() } else { DETAILS - 1 };
    let more = all.len() - kept;
    (all.into_iter().take(kept).collect(), more)
}

fn render_one(out: &mut String, f: &Failure, with_target: bool, shown: &Shown<'_>, paint: Paint, columns: usize) {
    let (mark, tone, status) = match f.kind {
        Kind::Invalid => ("✘", Tone::Bad, "invalid".to_owned()),
        Kind::ExecutionError => ("✘", Tone::Bad, "execution error".to_owned()),
        Kind::NotRun => ("-", Tone::SoSo, "not run".to_owned()),
        Kind::GraderError => ("!", Tone::SoSo, format!("{:.3} grader error", f.score)),
        Kind::Fail => ("✘", Tone::Bad, format!("{:.3} fail", f.score)),
    };
    let target = if with_target {
        format!(" [{}]", cut_middle(&shown.line(&f.target), name_width(columns)))
    } else {
        String::new()
    };
    // "  ✘ " + id + target + "  " + status
    let fixed = 4 + width(&target) + 2 + width(&status);
    let id = cut_middle(&shown.line(&f.id), columns.saturating_sub(fixed));
    let _ = writeln!(
        out,
        "  {} {id}{}  {}",
        paint.tone(tone, mark),
        paint.tone(Tone::Dim, &target),
        paint.tone(tone, &status)
    );
    for (kind, text) in &f.details {
        let label = match kind {
            Label::Miss => "miss".to_owned(),
            Label::Error => "error".to_owned(),
            Label::Reasoning => "reasoning".to_owned(),
            Label::Grader(name) => format!("grader '{}'", cut_middle(&shown.line(name), name_width(columns))),
        };
        let room = columns.saturating_sub(DETAIL_INDENT.len() + width(&label) + 2);
        // An error names its cause at its end (a traceback); a miss or reasoning at its start,
        // and so does an invalid case's diagnostic (its help lines follow).
        let text = match kind {
            Label::Error if matches!(f.kind, Kind::Invalid) => shown.first_line(text),
            Label::Error | Label::Grader(_) => shown.cause(text, room),
            Label::Miss | Label::Reasoning => shown.first_line(text),
        };
        let text = cut_end(&text, room);
        let _ = writeln!(out, "{DETAIL_INDENT}{}: {text}", paint.tone(Tone::Dim, &label));
    }
    if f.more > 0 {
        let what = match f.kind {
            Kind::Fail => plural(f.more, "more miss", "more misses"),
            _ => plural(f.more, "more grader error", "more grader errors"),
        };
        let _ = writeln!(out, "{DETAIL_INDENT}+{what}");
    }
}
