//! `agentv compare BASE CANDIDATE`: per-case score deltas, what improved and what regressed, the
//! mean delta with its 95 % confidence interval, and the regression gates
//! (`docs/architecture.md#exit-codes`: a failed gate exits 1).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use agentv_core::report::{
    Comparison, ComparisonBuilder, Entry, Gate, MatchBy, Pair, ResultsFormat, escape_line, md, read_figures,
};
use agentv_eval_sdk::compare::{CompareInput, CompareOutput, GateOutcome, MeanDelta};
use comfy_table::{CellAlignment, LineStyle, Table, TableStyle};
use serde::Serialize;

use super::report::{print_read_errors, warn_truncated};
use crate::cli::{CompareArgs, CompareFormat};
use crate::exit::ExitStatus;
use crate::printer::Printer;

/// One side of the comparison, as read (its records went to the builder).
struct Side {
    path: PathBuf,
    generations: Vec<ResultsFormat>,
    cases: usize,
    /// Lines a later line of the same record replaced.
    superseded: usize,
}

pub fn run(args: CompareArgs, printer: Printer) -> ExitStatus {
    let mut builder = ComparisonBuilder::default();
    let Some(base) = read_side(&args.base, printer, |e| builder.base(e)) else {
        return ExitStatus::Config;
    };
    let Some(candidate) = read_side(&args.candidate, printer, |e| builder.candidate(e)) else {
        return ExitStatus::Config;
    };
    let comparison = builder.finish(args.epsilon);
    let gate = Gate {
        max_regression: args.max_regression,
        fail_on_regression: args.fail_on_regression,
        allow_missing: args.allow_missing,
    };
    let failures = gate.failures(&comparison);
    let view = View {
        base: &base,
        candidate: &candidate,
        comparison: &comparison,
        gate,
        failures: &failures,
        top: args.top,
    };
    match args.format {
        CompareFormat::Table => printer.result(&view.table()),
        CompareFormat::Json => view.json(printer),
        CompareFormat::Markdown => printer.result(&view.markdown()),
    }
    if failures.is_empty() {
        ExitStatus::Success
    } else {
        if args.format != CompareFormat::Table {
            for f in &failures {
                printer.note(&format!("regression gate failed: {f}"));
            }
        }
        ExitStatus::Failure
    }
}

/// Reads a results file's figures (the last line of each record) into `add`; `None` after
/// printing why.
fn read_side(path: &Path, printer: Printer, mut add: impl FnMut(&Entry)) -> Option<Side> {
    let summary = match read_figures(path, |r| add(&Entry::from(&r.record))) {
        Ok(summary) => summary,
        Err(errors) => {
            print_read_errors(&errors, printer);
            return None;
        }
    };
    warn_truncated(path, summary.truncated, printer);
    if summary.records == 0 {
        printer.error(&format!("{}: no results in this file", path.display()));
        return None;
    }
    Some(Side {
        path: path.to_path_buf(),
        generations: summary.generations,
        cases: summary.records,
        superseded: summary.superseded,
    })
}

impl Side {
    fn describe(&self) -> String {
        let kinds: Vec<&str> = self.generations.iter().map(|g| g.as_str()).collect();
        format!(
            "{} ({} case(s), {})",
            self.path.display(),
            self.cases,
            kinds.join(" + ")
        )
    }
}

struct View<'a> {
    base: &'a Side,
    candidate: &'a Side,
    comparison: &'a Comparison,
    gate: Gate,
    failures: &'a [String],
    top: usize,
}

impl View<'_> {
    fn matched_by(&self) -> &'static str {
        match self.comparison.match_by {
            MatchBy::IdAndTarget => "case and target",
            MatchBy::Id => "case (one target on each side)",
        }
    }

    fn mean_line(&self) -> String {
        match self.comparison.mean_delta {
            None => "no case was graded in both runs".to_owned(),
            Some(m) => match m.interval {
                Some((low, high)) => format!("{:+.3}  (95% CI {low:+.3} to {high:+.3}, n={})", m.mean, m.n),
                None => format!("{:+.3}  (n=1: no interval)", m.mean),
            },
        }
    }

    fn gate_line(&self) -> Option<String> {
        if !self.gate.is_set() {
            return None;
        }
        let mut flags = Vec::new();
        if let Some(d) = self.gate.max_regression {
            flags.push(format!("--max-regression {d}"));
        }
        if self.gate.fail_on_regression {
            flags.push("--fail-on-regression".to_owned());
        }
        Some(if self.failures.is_empty() {
            format!("PASSED ({})", flags.join(" "))
        } else {
            format!("FAILED ({}): {}", flags.join(" "), self.failures.join("; "))
        })
    }

    fn table(&self) -> String {
        let c = self.comparison;
        let n = c.counts;
        let mut out = String::new();
        let _ = writeln!(out, "Base:       {}", escape_line(&self.base.describe()));
        let _ = writeln!(out, "Candidate:  {}", escape_line(&self.candidate.describe()));
        let _ = writeln!(
            out,
            "Matched {} case(s) by {}; {} added, {} removed{}",
            n.matched,
            self.matched_by(),
            n.added,
            n.removed,
            if n.missing > 0 {
                format!(" ({} graded in the base: missing from the candidate)", n.missing)
            } else {
                String::new()
            }
        );
        for (count, which) in [(self.base.superseded, "base"), (self.candidate.superseded, "candidate")] {
            if count > 0 {
                let _ = writeln!(
                    out,
                    "  {count} superseded line(s) in the {which} file left out: the last line of each case counts"
                );
            }
        }
        out.push('\n');
        let _ = writeln!(out, "  improved   {:>6}", n.improved);
        let _ = writeln!(out, "  regressed  {:>6}", n.regressed);
        let _ = writeln!(out, "  unchanged  {:>6}   (|delta| <= {})", n.unchanged, c.epsilon);
        let _ = writeln!(
            out,
            "  errors     {:>6}   (not graded in one run or both; not in the deltas)",
            n.errors
        );
        let _ = writeln!(out, "\nMean delta: {}", self.mean_line());
        let worst = c.largest_regressions(self.top);
        if !worst.is_empty() {
            let _ = writeln!(out, "\nLargest regressions:");
            let _ = writeln!(out, "{}", regressions_table(&worst));
        }
        let broken: Vec<_> = c.broken().take(self.top).collect();
        if !broken.is_empty() {
            let _ = writeln!(out, "\nGraded in the base, not in the candidate:");
            for e in broken {
                let _ = writeln!(
                    out,
                    "  {} [{}]: {}",
                    escape_line(&e.eval_id),
                    escape_line(&e.target),
                    e.candidate_status.as_str()
                );
            }
        }
        if n.missing > 0 {
            let _ = writeln!(out, "\nGraded in the base, missing from the candidate ({}):", n.missing);
            for u in c.missing().take(self.top) {
                let _ = writeln!(out, "  {} [{}]", escape_line(&u.eval_id), escape_line(&u.target));
            }
            if n.missing > self.top {
                let _ = writeln!(out, "  … {} more (--format json lists them all)", n.missing - self.top);
            }
        }
        if let Some(gate) = self.gate_line() {
            let _ = writeln!(out, "\nGate: {}", escape_line(&gate));
        }
        out
    }

    /// The comparison as one JSON document, streamed to stdout a block at a time: every pair
    /// is written as it is produced, so a million cases never sit in memory as JSON.
    fn json(&self, printer: Printer) {
        let c = self.comparison;
        let document = CompareOutput {
            base: input(self.base),
            candidate: input(self.candidate),
            match_by: c.match_by,
            epsilon: c.epsilon,
            counts: c.counts,
            mean_delta: c.mean_delta.map(|m| MeanDelta {
                n: m.n,
                mean: m.mean,
                ci95: m.interval.map(|(low, high)| [low, high]),
            }),
            gate: GateOutcome {
                max_regression: self.gate.max_regression,
                fail_on_regression: self.gate.fail_on_regression,
                allow_missing: self.gate.allow_missing,
                passed: self.failures.is_empty(),
                failures: self.failures.to_vec(),
            },
            largest_regressions: c.largest_regressions(self.top),
            cases: Streamed::new(c.pairs()),
            errors: Streamed::new(c.errors()),
            added: Streamed::new(c.added()),
            removed: Streamed::new(c.removed()),
        };
        let mut out = Blocks::new(printer);
        if serde_json::to_writer_pretty(&mut out, &document).is_ok() {
            let _ = out.write_all(b"\n");
        }
        let _ = out.flush();
    }

    fn markdown(&self) -> String {
        let c = self.comparison;
        let n = c.counts;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "## agentv compare: {} → {}\n",
            md(&file_name(&self.base.path)),
            md(&file_name(&self.candidate.path))
        );
        if let Some(gate) = self.gate_line() {
            let mark = if self.failures.is_empty() { "✅" } else { "❌" };
            let _ = writeln!(out, "{mark} **Gate {}**\n", md(&gate));
        }
        let _ = writeln!(out, "| | cases |\n|---|--:|");
        for (label, count) in [
            ("matched", n.matched),
            ("improved", n.improved),
            ("regressed", n.regressed),
            ("unchanged", n.unchanged),
            ("errors", n.errors),
            ("added", n.added),
            ("removed", n.removed),
        ] {
            let _ = writeln!(out, "| {label} | {count} |");
        }
        let _ = writeln!(out, "\n**Mean delta** {}\n", md(&self.mean_line()));
        let _ = writeln!(
            out,
            "Matched by {}; |delta| ≤ {} is unchanged.",
            self.matched_by(),
            c.epsilon
        );
        let worst = c.largest_regressions(self.top);
        if !worst.is_empty() {
            let _ = writeln!(out, "\n### Largest regressions\n");
            let _ = writeln!(
                out,
                "| case | target | base | candidate | delta |\n|---|---|--:|--:|--:|"
            );
            for p in worst {
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.3} | {:.3} | {:+.3} |",
                    md(&p.eval_id),
                    md(&p.target),
                    p.base,
                    p.candidate,
                    p.delta
                );
            }
        }
        let improved: Vec<Pair<'_>> = c.largest_improvements(self.top);
        if !improved.is_empty() {
            let _ = writeln!(out, "\n<details><summary>Largest improvements</summary>\n");
            let _ = writeln!(
                out,
                "| case | target | base | candidate | delta |\n|---|---|--:|--:|--:|"
            );
            for p in improved {
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.3} | {:.3} | {:+.3} |",
                    md(&p.eval_id),
                    md(&p.target),
                    p.base,
                    p.candidate,
                    p.delta
                );
            }
            let _ = writeln!(out, "\n</details>");
        }
        out
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

fn regressions_table(worst: &[Pair<'_>]) -> Table {
    let mut table = Table::new();
    // A rule under the header, nothing else: readable in a terminal and in a CI log.
    table.load_style(TableStyle::new().header_separator(LineStyle::none().fill('─').junction('─')));
    table.set_header(vec!["case", "target", "base", "candidate", "delta"]);
    for p in worst {
        table.add_row(vec![
            escape_line(&p.eval_id).into_owned(),
            escape_line(&p.target).into_owned(),
            format!("{:.3}", p.base),
            format!("{:.3}", p.candidate),
            format!("{:+.3}", p.delta),
        ]);
    }
    for column in 2..5 {
        if let Some(col) = table.column_mut(column) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

/// One side as `compare --format json` names it.
fn input(side: &Side) -> CompareInput<'_> {
    CompareInput {
        path: side.path.to_string_lossy(),
        cases: side.cases,
        superseded: side.superseded,
        generations: side.generations.iter().map(|g| Cow::Borrowed(g.as_str())).collect(),
    }
}

/// A sequence serialized from an iterator, once, as it is walked.
struct Streamed<I>(std::cell::Cell<Option<I>>);

impl<I> Streamed<I> {
    fn new(items: I) -> Self {
        Self(std::cell::Cell::new(Some(items)))
    }
}

impl<I: Iterator<Item = T>, T: Serialize> Serialize for Streamed<I> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.take().into_iter().flatten())
    }
}

/// Output for stdout, handed to the printer in blocks that end at a line's end (so no string
/// of the JSON is cut between two blocks, and redaction sees each whole).
struct Blocks {
    printer: Printer,
    buf: Vec<u8>,
}

impl Blocks {
    const SIZE: usize = 64 * 1024;

    fn new(printer: Printer) -> Self {
        Self {
            printer,
            buf: Vec::with_capacity(Self::SIZE),
        }
    }

    fn emit(&mut self, upto: usize) {
        let text = String::from_utf8_lossy(&self.buf[..upto]).into_owned();
        self.printer.result(&text);
        self.buf.drain(..upto);
    }
}

impl std::io::Write for Blocks {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= Self::SIZE
            && let Some(end) = self.buf.iter().rposition(|b| *b == b'\n')
        {
            self.emit(end + 1);
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            self.emit(self.buf.len());
        }
        Ok(())
    }
}
