//! Exit codes (`docs/architecture.md#exit-codes`).

use std::process::ExitCode;

use agentv_core::Outcome;

use crate::signals::Signal;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Every case ran and was graded, and met `--threshold` when given (or every validated
    /// file is valid).
    Success,
    /// The quality gate failed: a case scored below `--threshold`; or `validate` found an
    /// invalid file.
    Failure,
    /// Usage or configuration error: nothing was run.
    Config,
    /// The run is incomplete: a case could not be run or graded, or was skipped as invalid.
    Incomplete,
    /// Interrupted by SIGINT (Ctrl-C).
    Interrupted,
    /// Stopped by SIGTERM.
    Terminated,
}

impl ExitStatus {
    /// The exit status of a finished run: the core decides the outcome, the signal that
    /// stopped it (if any) tells 130 from 143.
    pub fn of_run(outcome: Outcome, signal: Option<Signal>) -> Self {
        match outcome {
            Outcome::Complete => Self::Success,
            Outcome::BelowThreshold => Self::Failure,
            Outcome::Incomplete => Self::Incomplete,
            Outcome::Interrupted if signal == Some(Signal::Terminate) => Self::Terminated,
            Outcome::Interrupted => Self::Interrupted,
        }
    }

    pub fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::Failure => 1,
            Self::Config => 2,
            Self::Incomplete => 3,
            // 128 + the signal number, as a shell reports a process the signal killed.
            Self::Interrupted => 130,
            Self::Terminated => 143,
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        ExitCode::from(status.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_maps_to_its_documented_exit_code() {
        let cases = [
            (Outcome::Complete, None, 0),
            (Outcome::BelowThreshold, None, 1),
            (Outcome::Incomplete, None, 3),
            (Outcome::Interrupted, Some(Signal::Interrupt), 130),
            (Outcome::Interrupted, None, 130),
            (Outcome::Interrupted, Some(Signal::Terminate), 143),
        ];
        for (outcome, signal, code) in cases {
            assert_eq!(
                ExitStatus::of_run(outcome, signal).code(),
                code,
                "{outcome:?} {signal:?}"
            );
        }
        assert_eq!(ExitStatus::Config.code(), 2);
    }
}
