//! What every call made while running a case honours: the target's answer, a judge's reply and
//! a code judge's process alike.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::redact::Secrets;

/// Run-wide settings of the calls a case makes (the target, LLM judges, code judges).
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The run's `--timeout`: each provider call, and code judges without their own.
    pub timeout: Duration,
    /// Variables from `.env` files, for child processes (agents, commands, judges).
    pub child_env: Arc<[(String, String)]>,
    /// Redacted from everything written about the calls.
    pub secrets: Secrets,
    /// `--dump-prompts`: where every request (to the target and to judges) is written.
    pub dump_prompts: Option<PathBuf>,
}
