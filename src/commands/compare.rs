//! `agentv compare BASE CANDIDATE`: per-case score deltas, what improved and what regressed, the
//! mean delta with its 95 % confidence interval, and the regression gates
//! (`docs/architecture.md#exit-codes`: a failed gate exits 1).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use agentv_core::report::{
    Change, Comparison, Entry, Gate, Generation, MatchBy, Pair, ReadSummary, escape_line, md, read_all,
};
use comfy_table::{CellAlignment, LineStyle, Table, TableStyle};
use serde_json::json;

use super::report::{print_read_errors, warn_truncated};
use crate::cli::{CompareArgs, CompareFormat};
use crate::exit::ExitStatus;
use crate::printer::Printer;

/// One side of the comparison, as read.
struct Side {
    path: PathBuf,
    entries: Vec<Entry>,
    generations: Vec<Generation>,
}

pub fn run(args: CompareArgs, printer: Printer) -> ExitStatus {
    let Some(base) = read_side(&args.base, printer) else {
        return ExitStatus::Config;
    };
    let Some(candidate) = read_side(&args.candidate, printer) else {
        return ExitStatus::Config;
    };
    let base_cases = base.entries.len();
    let candidate_cases = candidate.entries.len();
    let comparison = Comparison::new(base.entries, candidate.entries, args.epsilon);
    let gate = Gate {
        max_regression: args.max_regression,
        fail_on_regression: args.fail_on_regression,
    };
    let mut failures = gate.failures(&comparison);
    if gate.is_set() && comparison.counts.matched == 0 {
        failures.push("no case of the base run is in the candidate run: nothing to compare".to_owned());
    }
    let view = View {
        base: Named {
            path: &base.path,
            generations: &base.generations,
            cases: base_cases,
        },
        candidate: Named {
            path: &candidate.path,
            generations: &candidate.generations,
            cases: candidate_cases,
        },
        comparison: &comparison,
        gate,
        failures: &failures,
        top: args.top,
    };
    let text = match args.format {
        CompareFormat::Table => view.table(),
        CompareFormat::Json => view.json(),
        CompareFormat::Markdown => view.markdown(),
    };
    printer.result(&text);
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

/// Reads a results file into compare entries; `None` after printing why.
fn read_side(path: &Path, printer: Printer) -> Option<Side> {
    let mut entries = Vec::new();
    let summary: ReadSummary = match read_all(path, |r| entries.push(Entry::from(&r.record))) {
        Ok(summary) => summary,
        Err(errors) => {
            print_read_errors(&errors, printer);
            return None;
        }
    };
    warn_truncated(path, summary.truncated, printer);
    if entries.is_empty() {
        printer.error(&format!("{}: no results in this file", path.display()));
        return None;
    }
    Some(Side {
        path: path.to_path_buf(),
        entries,
        generations: summary.generations,
    })
}

struct Named<'a> {
    path: &'a Path,
    generations: &'a [Generation],
    cases: usize,
}

impl Named<'_> {
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
    base: Named<'a>,
    candidate: Named<'a>,
    comparison: &'a Comparison,
    gate: Gate,
    failures: &'a [String],
    top: usize,
}

impl View<'_> {
    fn matched_by(&self) -> &'static str {
        match self.comparison.match_by {
            MatchBy::IdAndTarget => "eval id and target",
            MatchBy::Id => "eval id (one target on each side)",
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
            "Matched {} case(s) by {}; {} added, {} removed",
            n.matched,
            self.matched_by(),
            n.added,
            n.removed
        );
        for (count, which) in [(n.base_duplicates, "base"), (n.candidate_duplicates, "candidate")] {
            if count > 0 {
                let _ = writeln!(
                    out,
                    "  {count} repeated case(s) in the {which} file: the last line of each counts"
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
        if let Some(gate) = self.gate_line() {
            let _ = writeln!(out, "\nGate: {}", escape_line(&gate));
        }
        out
    }

    fn json(&self) -> String {
        let c = self.comparison;
        let value = json!({
            "base": {"path": self.base.path, "cases": self.base.cases,
                     "generations": self.base.generations.iter().map(|g| g.as_str()).collect::<Vec<_>>()},
            "candidate": {"path": self.candidate.path, "cases": self.candidate.cases,
                          "generations": self.candidate.generations.iter().map(|g| g.as_str()).collect::<Vec<_>>()},
            "match_by": c.match_by,
            "epsilon": c.epsilon,
            "counts": c.counts,
            "mean_delta": c.mean_delta.map(|m| json!({
                "n": m.n, "mean": m.mean,
                "ci95": m.interval.map(|(low, high)| [low, high]),
            })),
            "gate": {
                "max_regression": self.gate.max_regression,
                "fail_on_regression": self.gate.fail_on_regression,
                "passed": self.failures.is_empty(),
                "failures": self.failures,
            },
            "largest_regressions": c.largest_regressions(self.top),
            "cases": c.pairs,
            "errors": c.errors,
            "added": c.added,
            "removed": c.removed,
        });
        format!("{}\n", serde_json::to_string_pretty(&value).unwrap_or_default())
    }

    fn markdown(&self) -> String {
        let c = self.comparison;
        let n = c.counts;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "## agentv compare: {} → {}\n",
            md(&file_name(self.base.path)),
            md(&file_name(self.candidate.path))
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
        let improved: Vec<&Pair> = {
            let mut v: Vec<&Pair> = c.pairs.iter().filter(|p| p.change == Change::Improved).collect();
            v.sort_by(|a, b| b.delta.total_cmp(&a.delta));
            v.truncate(self.top);
            v
        };
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

fn regressions_table(worst: &[&Pair]) -> Table {
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
