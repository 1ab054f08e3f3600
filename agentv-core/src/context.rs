//! What every call made while running a case honours: the target's answer, a judge's reply and
//! a code judge's process alike.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::judge_pool::JudgePool;
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
    pub dump_prompts: Option<Arc<PromptDumps>>,
    /// `--strict`: a 4.x code grader whose stdout is not a result object is a grader error
    /// instead of being graded by its exit code (`docs/judges.md#one-shot-judges`).
    pub strict: bool,
    /// The working directory of the case being run when it has one of its own (its
    /// workspace): tool commands run there. `None`: the eval file's directory.
    pub cwd: Option<PathBuf>,
    /// Warm worker pools that no grader or provider owns (promptfoo's `options.transform`
    /// runs in node workers), held until the run ends.
    pub held_pools: Arc<HeldPools>,
}

/// Pools held for the run: a pool lives only as long as something holds it
/// (`judge_pool.rs`), and one taken for a single call would otherwise start a process per case.
#[derive(Debug, Default)]
pub struct HeldPools(Mutex<Vec<Arc<JudgePool>>>);

impl HeldPools {
    /// Holds `pool` until the run ends.
    pub fn hold(&self, pool: &Arc<JudgePool>) {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !held.iter().any(|p| Arc::ptr_eq(p, pool)) {
            held.push(pool.clone());
        }
    }
}

/// Where `--dump-prompts` writes, and the file names this run has given out. Names come from
/// eval ids, which are unique only within a suite, and two judges of one case share their
/// target: each request still gets its own file (`docs/architecture.md#outputs`).
#[derive(Debug)]
pub struct PromptDumps {
    pub dir: PathBuf,
    /// File name (without `.json`) → who wrote it.
    taken: Mutex<HashMap<String, String>>,
}

impl PromptDumps {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            taken: Mutex::new(HashMap::new()),
        }
    }

    /// The file name to use for `name` written on behalf of `owner` (the eval file, the case and
    /// the grader): `name` itself unless another owner has it in this run, then `name.2`,
    /// `name.3`, ... (a `.` cannot end a name made from an id and an attempt). The same owner
    /// gets the same name again.
    pub fn claim(&self, name: &str, owner: &str) -> String {
        let mut taken = match self.taken.lock() {
            Ok(taken) => taken,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut candidate = name.to_owned();
        for n in 2.. {
            match taken.get(&candidate) {
                None => {
                    taken.insert(candidate.clone(), owner.to_owned());
                    break;
                }
                Some(holder) if holder == owner => break,
                Some(_) => candidate = format!("{name}.{n}"),
            }
        }
        candidate
    }
}
