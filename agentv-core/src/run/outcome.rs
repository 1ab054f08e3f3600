//! What a finished run amounts to (`docs/architecture.md#exit-codes`): the one decision behind the
//! exit code, kept pure so every combination is tested in one table.

/// The outcome of a run, from best to worst news.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every case ran and was graded (and met the threshold when one was given).
    Complete,
    /// The quality gate failed: a graded case scored below `--threshold`.
    BelowThreshold,
    /// The run is incomplete: a case could not be run or graded, was skipped as invalid, was
    /// not run, or its record could not be written. Wins over [`Outcome::BelowThreshold`]: a
    /// gate that could not see every case has not passed.
    Incomplete,
    /// Stopped by a signal before every case ran. Wins over everything: the summary says what
    /// ran, and the caller asked to stop.
    Interrupted,
}

/// What the decision looks at.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunFacts<'a> {
    /// Scores of the cases that ran and were graded (`execution_status: ok`).
    pub graded: &'a [f64],
    /// Cases whose target could not answer.
    pub execution_errors: usize,
    /// Cases an evaluator could not grade.
    pub grader_errors: usize,
    /// Cases left out at load because they were invalid.
    pub skipped: usize,
    /// Cases never started or cancelled.
    pub not_run: usize,
    /// Cases whose record could not be written to the results file.
    pub unwritten: usize,
    /// `--threshold`.
    pub threshold: Option<f64>,
    pub interrupted: bool,
}

impl RunFacts<'_> {
    /// Graded cases below the threshold (none without one).
    pub fn below_threshold(&self) -> usize {
        self.threshold
            .map_or(0, |t| self.graded.iter().filter(|s| **s < t || s.is_nan()).count())
    }

    /// Cases that were not run and graded to the end.
    pub fn incomplete(&self) -> usize {
        self.execution_errors + self.grader_errors + self.skipped + self.not_run + self.unwritten
    }
}

/// The outcome of a run: interrupted, else incomplete, else below the threshold, else complete.
pub fn decide(facts: &RunFacts<'_>) -> Outcome {
    if facts.interrupted {
        Outcome::Interrupted
    } else if facts.incomplete() > 0 {
        Outcome::Incomplete
    } else if facts.below_threshold() > 0 {
        Outcome::BelowThreshold
    } else {
        Outcome::Complete
    }
}

#[cfg(test)]
#[allow(
    clippy::too_many_lines,
    reason = "a table-driven test keeps its rows and checks in one place"
)]
mod tests {
    use super::*;

    #[test]
    fn outcome_follows_the_exit_code_rules() {
        let facts = RunFacts::default;
        let cases: &[(&str, RunFacts<'_>, Outcome)] = &[
            (
                "all graded",
                RunFacts {
                    graded: &[0.2, 1.0],
                    ..facts()
                },
                Outcome::Complete,
            ),
            (
                "low scores without a threshold still complete",
                RunFacts {
                    graded: &[0.0],
                    ..facts()
                },
                Outcome::Complete,
            ),
            (
                "every case at or above the threshold",
                RunFacts {
                    graded: &[0.8, 0.9],
                    threshold: Some(0.8),
                    ..facts()
                },
                Outcome::Complete,
            ),
            (
                "a case below the threshold",
                RunFacts {
                    graded: &[0.79, 0.9],
                    threshold: Some(0.8),
                    ..facts()
                },
                Outcome::BelowThreshold,
            ),
            (
                "a NaN score never passes a gate",
                RunFacts {
                    graded: &[f64::NAN],
                    threshold: Some(0.0),
                    ..facts()
                },
                Outcome::BelowThreshold,
            ),
            (
                "every case errored",
                RunFacts {
                    execution_errors: 3,
                    ..facts()
                },
                Outcome::Incomplete,
            ),
            (
                "a grader error",
                RunFacts {
                    graded: &[1.0],
                    grader_errors: 1,
                    ..facts()
                },
                Outcome::Incomplete,
            ),
            (
                "cases skipped as invalid",
                RunFacts {
                    graded: &[1.0],
                    skipped: 1,
                    ..facts()
                },
                Outcome::Incomplete,
            ),
            (
                "a record that could not be written",
                RunFacts {
                    graded: &[1.0],
                    unwritten: 1,
                    ..facts()
                },
                Outcome::Incomplete,
            ),
            (
                "cases not run",
                RunFacts {
                    graded: &[1.0],
                    not_run: 2,
                    ..facts()
                },
                Outcome::Incomplete,
            ),
            (
                "incomplete wins over the gate",
                RunFacts {
                    graded: &[0.1],
                    execution_errors: 1,
                    threshold: Some(0.5),
                    ..facts()
                },
                Outcome::Incomplete,
            ),
            (
                "interrupted wins over everything",
                RunFacts {
                    graded: &[0.1],
                    execution_errors: 1,
                    not_run: 5,
                    threshold: Some(0.5),
                    interrupted: true,
                    ..facts()
                },
                Outcome::Interrupted,
            ),
            ("nothing graded and nothing wrong", facts(), Outcome::Complete),
        ];
        for (name, run, want) in cases {
            assert_eq!(decide(run), *want, "{name}");
        }
    }
}
