//! The results file: one JSON object per line, written as each case completes.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::sink::{Row, Sink};
use crate::redact::Secrets;

/// `.agentv/results/eval_<timestamp>.jsonl` under `base` (`docs/architecture.md#outputs`).
pub fn default_results_path(base: &Path) -> PathBuf {
    let stamp = jiff::Timestamp::now().strftime("%Y-%m-%dT%H-%M-%S-%3fZ").to_string();
    base.join(".agentv").join("results").join(format!("eval_{stamp}.jsonl"))
}

/// Writes records to a JSONL file. Each line, newline included, goes out in one unbuffered
/// write, so a crash or a `kill -9` leaves only whole lines behind and an interrupt loses
/// nothing already written.
pub struct JsonlWriter {
    path: PathBuf,
    out: File,
    secrets: Secrets,
    line: Vec<u8>,
}

impl JsonlWriter {
    /// Creates `path` (and its parent directories), emptying an existing file: a new run makes
    /// a new results file (`docs/architecture.md#outputs`).
    pub fn create(path: &Path, secrets: Secrets) -> std::io::Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let out = OpenOptions::new().create(true).write(true).truncate(true).open(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            out,
            secrets,
            line: Vec::with_capacity(4096),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Sink for JsonlWriter {
    fn write(&mut self, row: Row<'_>) -> std::io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, row.record)?;
        self.line.push(b'\n');
        // Redacted whole (a secret cannot be cut by a line boundary inside one record), inside
        // JSON strings only, so the line stays JSON whatever the secret.
        let redacted = self.secrets.redact_json(&self.line);
        self.out.write_all(&redacted)
    }

    fn describe(&self) -> String {
        format!("results file {}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EvaluationRecord, ExecutionStatus, Verdict};

    fn record(id: &str) -> EvaluationRecord {
        EvaluationRecord {
            timestamp: "t".into(),
            eval_id: id.into(),
            dataset: "d".into(),
            conversation_id: None,
            target: "default".into(),
            attempt: 1,
            execution_status: ExecutionStatus::Ok,
            score: 1.0,
            verdict: Verdict::Pass,
            hits: vec![],
            misses: vec![],
            reasoning: None,
            candidate_answer: "a\nb".into(),
            lm_provider_request: None,
            agent_provider_request: None,
            evaluator_results: vec![],
            trace_summary: None,
            execution_metrics: None,
            error: None,
            v4: Default::default(),
        }
    }

    #[test]
    fn out_file_is_truncated_not_appended() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("sub").join("r.jsonl");
        for _ in 0..2 {
            let mut w = JsonlWriter::create(&path, Secrets::default()).expect("opens");
            w.write((&record("a")).into()).expect("writes");
            w.write((&record("b")).into()).expect("writes");
        }
        let text = std::fs::read_to_string(&path).expect("written");
        let ids: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<EvaluationRecord>(l).expect("whole line").eval_id)
            .collect();
        assert_eq!(ids, ["a", "b"], "the second run replaced the first");
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn results_redact_secrets_with_quotes_and_backslashes() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("r.jsonl");
        let secrets = Secrets::default();
        secrets.add(r#"sk-"quoted"\back"#);
        let mut r = record("c");
        r.candidate_answer = r#"the key is sk-"quoted"\back, see"#.into();
        let mut writer = JsonlWriter::create(&path, secrets).expect("open");
        writer.write((&r).into()).expect("write");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(!text.contains("quoted"), "{text}");
        let line: serde_json::Value = serde_json::from_str(text.trim_end()).expect("still JSON");
        assert_eq!(line["candidate_answer"], "the key is ***, see");
    }
}
