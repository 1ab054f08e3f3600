//! AgentV 4.x's run directory (`docs/results.md#agentv-4x-run-directory`), written beside
//! agentv's own results when `eval --output DIR` asks for it, so a CI script or dashboard made
//! for AgentV 4.x finds what it reads:
//!
//! ```text
//! DIR/index.jsonl                    one 4.x row per record, written as each case finishes
//! DIR/benchmark.json                 a stub before the first case, the run's summary at the end
//! DIR/timing.json                    tokens and time of the whole run, at the end
//! DIR/<suite>/<test_id>/grading.json, timing.json, input.md,
//!     outputs/answer.md, outputs/response.md, outputs/trace.json, outputs/transcript.jsonl
//! ```
//!
//! Everything is written through the redaction layer. The directory of a case is
//! `<suite>/<test_id>` as AgentV names it (`/ \ : * ? " < > |` replaced by `_`); a second
//! record of the same case (another target, another trial) gets its own directory instead of
//! replacing the first, and an id no file system can hold as written gets a safe name. The
//! index row gives each file's path, relative to `DIR`.

mod case;
mod summary;

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::sink::{Row, Sink};
use crate::model::{EvaluationRecord, ExecutionStatus, Verdict};
use crate::redact::{self, Secrets};

pub use summary::RunSummary;

/// The index file's name.
pub const INDEX: &str = "index.jsonl";

/// What the run directory says about its run (`benchmark.json`'s metadata).
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// The eval file (the first, when the run has several).
    pub eval_file: String,
    /// How many records the run sets out to write.
    pub planned: usize,
    /// AgentV's experiment label (`default`).
    pub experiment: String,
}

/// The sink that writes the run directory.
pub struct RunDirectory {
    dir: PathBuf,
    index: File,
    secrets: Secrets,
    info: RunInfo,
    /// The directory's name, the run's id in trace envelopes.
    run_id: String,
    /// Case directories taken so far, relative to `dir`.
    taken: HashSet<String>,
    summary: RunSummary,
    line: Vec<u8>,
}

impl RunDirectory {
    /// Creates `dir` (an existing directory is reused; `index.jsonl` starts empty) and writes
    /// the stub `benchmark.json`. `dir` must not be a file.
    pub fn create(dir: &Path, info: RunInfo, secrets: Secrets) -> io::Result<Self> {
        if dir.exists() && !dir.is_dir() {
            return Err(io::Error::other(format!(
                "{} is a file, not a directory",
                dir.display()
            )));
        }
        std::fs::create_dir_all(dir)?;
        let index = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(dir.join(INDEX))?;
        let run_id = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "run".to_owned());
        let out = Self {
            dir: dir.to_path_buf(),
            index,
            secrets,
            info,
            run_id,
            taken: HashSet::new(),
            summary: RunSummary::default(),
            line: Vec::with_capacity(4096),
        };
        out.write_json("benchmark.json", &out.summary.benchmark(&out.info))?;
        Ok(out)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `value` as pretty JSON to `rel` under the directory, redacted, atomically.
    fn write_json(&self, rel: &str, value: &Value) -> io::Result<()> {
        let mut text = serde_json::to_vec_pretty(value)?;
        text.push(b'\n');
        redact::write_json_atomic(&self.dir.join(rel), &text, &self.secrets)
    }

    /// A directory for the case of `r` that no earlier record of this run took.
    fn case_dir(&mut self, r: &EvaluationRecord) -> String {
        let suite = segment(&r.dataset, "default");
        let id = segment(&r.eval_id, "unknown");
        let mut candidates = vec![format!("{suite}/{id}")];
        let mut variant = r.target.clone();
        if let Some(trial) = r.trial {
            variant.push_str(&format!("-trial-{trial}"));
        }
        candidates.push(format!(
            "{suite}/{}",
            segment(&format!("{}__{variant}", r.eval_id), "unknown")
        ));
        let chosen = candidates
            .into_iter()
            .find(|c| !self.taken.contains(c))
            .unwrap_or_else(|| {
                let base = format!("{suite}/{id}");
                (2..)
                    .map(|n| format!("{base}__{n}"))
                    .find(|c| !self.taken.contains(c))
                    .unwrap_or(base)
            });
        self.taken.insert(chosen.clone());
        chosen
    }

    /// Appends the row of `r` to the index, in one write (a killed run leaves whole lines).
    fn append_row(&mut self, row: &Value) -> io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, row)?;
        self.line.push(b'\n');
        let clean = self.secrets.redact_json(&self.line);
        self.index.write_all(&clean)
    }
}

/// `text` as one path segment the way AgentV names it (`/ \ : * ? " < > |` replaced by `_`),
/// or a safe name when that would still not be one (`..`, control characters, too long).
fn segment(text: &str, fallback: &str) -> String {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return fallback.to_owned();
    }
    let replaced: String = trimmed
        .chars()
        .map(|c| if "/\\:*?\"<>|".contains(c) { '_' } else { c })
        .collect();
    let unsafe_name =
        replaced == "." || replaced == ".." || replaced.len() > 100 || replaced.chars().any(char::is_control);
    if unsafe_name {
        crate::paths::file_name_safe(trimmed)
    } else {
        replaced
    }
}

/// AgentV 4.x's status of a record: `ok`, `quality_failure` (graded below the pass mark) or
/// `execution_error` (could not be run or graded, or invalid), with the stage that failed.
fn v4_status(r: &EvaluationRecord) -> (&'static str, Option<&'static str>) {
    match r.execution_status {
        ExecutionStatus::Ok if r.verdict == Verdict::Pass => ("ok", None),
        ExecutionStatus::Ok => ("quality_failure", None),
        ExecutionStatus::GraderError => ("execution_error", Some("evaluator")),
        ExecutionStatus::ExecutionError => ("execution_error", Some("agent")),
        // The case definition has errors: it never reached the agent.
        ExecutionStatus::Invalid => ("execution_error", Some("setup")),
    }
}

/// Inserts `value` under `key` when it is not null.
fn put(out: &mut Map<String, Value>, key: &str, value: Value) {
    if !value.is_null() {
        out.insert(key.to_owned(), value);
    }
}

/// The index row of `r` (`docs/results.md#agentv-4x-run-directory`), its files in `files`.
fn index_row(r: &EvaluationRecord, files: &case::Written, experiment: &str) -> Value {
    let metrics = r.execution_metrics.as_ref();
    let (status, stage) = v4_status(r);
    let mut row = Map::new();
    put(&mut row, "timestamp", json!(r.timestamp));
    put(&mut row, "test_id", json!(r.eval_id));
    put(&mut row, "suite", json!(r.dataset));
    put(&mut row, "conversation_id", json!(r.conversation_id));
    put(&mut row, "score", json!(r.score));
    put(&mut row, "target", json!(r.target));
    put(&mut row, "trial", json!(r.trial));
    put(&mut row, "token_usage", json!(metrics.and_then(|m| m.token_usage)));
    put(&mut row, "cost_usd", json!(metrics.and_then(|m| m.cost_usd)));
    put(&mut row, "duration_ms", json!(metrics.and_then(|m| m.duration_ms)));
    put(&mut row, "start_time", json!(case::start_time(r)));
    put(&mut row, "end_time", json!(r.timestamp));
    put(&mut row, "scores", json!(r.v4.scores));
    put(&mut row, "execution_status", json!(status));
    put(&mut row, "error", json!(r.error));
    put(&mut row, "failure_stage", json!(stage));
    put(&mut row, "failure_reason_code", json!(r.failure_reason_code));
    for (key, path) in files.paths() {
        put(&mut row, key, json!(path));
    }
    put(&mut row, "metadata", json!(r.v4.metadata));
    put(&mut row, "experiment", json!(experiment));
    Value::Object(row)
}

impl Sink for RunDirectory {
    fn write(&mut self, row: &Row<'_>) -> io::Result<()> {
        let r = row.record();
        let rel = self.case_dir(r);
        let context = case::Context {
            root: &self.dir,
            rel: &rel,
            run_id: &self.run_id,
            eval_file: &self.info.eval_file,
            experiment: &self.info.experiment,
            secrets: &self.secrets,
        };
        let files = case::write(r, &context)?;
        self.append_row(&index_row(r, &files, &self.info.experiment))?;
        self.summary.add(r);
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.index.flush()?;
        self.write_json("timing.json", &self.summary.timing())?;
        self.write_json("benchmark.json", &self.summary.benchmark(&self.info))
    }

    fn describe(&self) -> String {
        format!("AgentV 4.x run directory {}", self.dir.display())
    }
}

#[cfg(test)]
#[allow(
    clippy::too_many_lines,
    reason = "a table-driven test keeps its rows and checks in one place"
)]
mod tests;
