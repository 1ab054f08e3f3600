//! What `agentv eval` prints around the run: the plan, the summary and why the run ends with
//! its exit code.

use agentv_core::report::{DEFAULT_WIDTH, SummaryStyle};
use agentv_core::{Outcome, Plan, ProblemCounts, Report};

use super::{Level, Printer};
use crate::signals::Signal;

impl Printer {
    /// Where results go, which targets answer and how many cases run at once.
    pub fn plan(self, plan: &Plan) {
        self.note(&format!("Output path: {}", plan.results_path().display()));
        for t in &plan.targets {
            let judge = if t.judge == t.name {
                String::new()
            } else {
                format!(", judge {}", t.judge)
            };
            self.note(&format!("Using target: {} [provider={}{judge}]", t.name, t.provider));
        }
        self.run_modes(plan);
        self.note(&format!(
            "Running {} case(s) with {} worker(s)",
            plan.total, plan.workers
        ));
    }

    /// What `--repeat`, `--shard`, `--resume`, `--rerun-failed` and `--budget-usd` make of the
    /// run, one note each.
    fn run_modes(self, plan: &Plan) {
        use agentv_core::report::Repair;
        if plan.repeat > 1 {
            self.note(&format!("Repeating each case {} times", plan.repeat));
        }
        if let Some(shard) = plan.shard {
            self.note(&format!("Shard {shard}: {} record(s) of this part", plan.planned));
        }
        if let Some((kept, repair)) = plan.resumed {
            self.note(&format!(
                "Resuming: {kept} complete record(s) kept, {} to run",
                plan.total
            ));
            match repair {
                Repair::DroppedCutLine(bytes) => self.warning(&format!(
                    "the results file ended in a line cut off mid-write; removed it ({bytes} bytes)"
                )),
                Repair::AddedNewline => self.note("The results file's last line had no newline; added one"),
                Repair::None => {}
            }
        }
        if let Some(failed) = plan.rerun_failed {
            self.note(&format!(
                "Rerunning the failed cases: {failed} case(s) did not pass there"
            ));
        }
        for (dataset, id) in plan.ambiguous.iter().take(5) {
            self.warning(&format!(
                "more than one case has dataset `{}` and id `{}`: --resume, --rerun-failed and merge cannot tell them apart",
                agentv_core::escape_line(dataset),
                agentv_core::escape_line(id)
            ));
        }
        if let Some(usd) = plan.budget_usd {
            self.note(&format!(
                "Budget: ${usd}, counting each case's cost and its code judges' proxy calls"
            ));
        }
    }

    /// The per-target table and the repeats after the summary, and where the run summary is.
    pub fn run_stats(self, report: &Report) {
        if self.level != Level::Quiet && !report.stats_text.is_empty() {
            self.result(&report.stats_text);
        }
        if let Some(path) = &report.summary_file {
            self.note(&format!("Run summary written to {}", path.display()));
        }
    }

    /// The summary on stdout (one line with `--quiet`), 80 columns wide (narrower on a narrower
    /// terminal), coloured when stdout takes colour; then on stderr why the run ends as it does.
    pub fn report(self, report: &Report, signal: Option<Signal>) {
        if self.level == Level::Quiet {
            self.result(&format!("{}\n", report.summary_line));
            return;
        }
        let columns = console::Term::stdout()
            .size_checked()
            .map_or(DEFAULT_WIDTH, |(_, w)| usize::from(w).min(DEFAULT_WIDTH));
        let style = SummaryStyle {
            width: columns,
            color: self.color_stdout,
        };
        self.result(&format!("\n{}", report.summary(style)));
        if report.batch_savings.cases > 0 {
            self.note(&report.batch_savings.describe());
        }
        for target in &report.throttling {
            self.note(&format!("Rate limits: {}", target.describe()));
        }
        let counts = &report.counts;
        if counts.skipped > 0 {
            self.note(&format!(
                "{} case(s) were skipped because of errors in the eval files",
                counts.skipped
            ));
        }
        for line in explanation(report.outcome, counts, signal) {
            self.note(&line);
        }
    }
}

/// Why the run ends with its exit code, in lines; none for a complete run.
fn explanation(outcome: Outcome, counts: &ProblemCounts, signal: Option<Signal>) -> Vec<String> {
    let below = counts
        .threshold
        .filter(|_| counts.below_threshold > 0)
        .map(|t| (t, counts.below_threshold));
    match outcome {
        Outcome::Complete => Vec::new(),
        Outcome::Interrupted => {
            let what = match signal {
                Some(Signal::Terminate) => "Terminated (SIGTERM)",
                _ => "Interrupted",
            };
            vec![format!("{what}: {} case(s) did not run", counts.not_run)]
        }
        Outcome::Incomplete => {
            let parts: Vec<String> = [
                (counts.execution_errors, "case(s) could not be run (execution error)"),
                (counts.grader_errors, "case(s) could not be graded (grader error)"),
                (counts.skipped, "case(s) were skipped as invalid"),
                (counts.unread, "eval file(s) could not be read"),
                (
                    counts.unwritten,
                    "case(s) could not be written to the results file or a report",
                ),
                (counts.not_run, "case(s) did not run"),
                (
                    counts.over_budget,
                    "case(s) were not run: the budget was reached (--budget-usd)",
                ),
            ]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
            let mut lines = vec![format!("Run incomplete: {}", parts.join("; "))];
            if let Some((t, n)) = below {
                lines.push(format!("{n} graded case(s) scored below the threshold {t}"));
            }
            lines
        }
        Outcome::BelowThreshold => below
            .map(|(t, n)| vec![format!("{n} case(s) scored below the threshold {t}")])
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_is_explained_in_its_own_words() {
        let counts = ProblemCounts::default;
        let cases: &[(Outcome, ProblemCounts, Option<Signal>, &[&str])] = &[
            (Outcome::Complete, counts(), None, &[]),
            (
                Outcome::Interrupted,
                ProblemCounts { not_run: 3, ..counts() },
                Some(Signal::Interrupt),
                &["Interrupted: 3 case(s) did not run"],
            ),
            (
                Outcome::Interrupted,
                ProblemCounts { not_run: 1, ..counts() },
                Some(Signal::Terminate),
                &["Terminated (SIGTERM): 1 case(s) did not run"],
            ),
            (
                Outcome::Incomplete,
                ProblemCounts {
                    execution_errors: 1,
                    skipped: 2,
                    unread: 1,
                    below_threshold: 1,
                    threshold: Some(0.5),
                    ..counts()
                },
                None,
                &[
                    "Run incomplete: 1 case(s) could not be run (execution error); 2 case(s) were skipped as invalid; 1 eval file(s) could not be read",
                    "1 graded case(s) scored below the threshold 0.5",
                ],
            ),
            (
                Outcome::BelowThreshold,
                ProblemCounts {
                    below_threshold: 2,
                    threshold: Some(0.8),
                    ..counts()
                },
                None,
                &["2 case(s) scored below the threshold 0.8"],
            ),
        ];
        for (outcome, counts, signal, want) in cases {
            assert_eq!(explanation(*outcome, counts, *signal), *want, "{outcome:?}");
        }
    }
}
