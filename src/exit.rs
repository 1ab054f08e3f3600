//! Exit codes (D9).

use std::process::ExitCode;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// The run completed (or every validated file is valid).
    Success,
    /// `--threshold` was given and a case scored below it or errored; or `validate` found an
    /// invalid file.
    Failure,
    /// Usage or configuration error: nothing was run.
    Config,
    /// Interrupted with Ctrl-C.
    Interrupted,
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        ExitCode::from(match status {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Config => 2,
            ExitStatus::Interrupted => 130,
        })
    }
}
