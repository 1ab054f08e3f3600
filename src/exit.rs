//! Exit codes (`docs/architecture.md#exit-codes`).

use std::process::ExitCode;

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
