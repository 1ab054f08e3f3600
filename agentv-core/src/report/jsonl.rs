//! The results file: one JSON object per line, appended and flushed as each case completes.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::load::Secrets;
use crate::model::EvaluationRecord;
use crate::run::RecordSink;

/// `.agentv/results/eval_<timestamp>.jsonl` under `base` (D16).
pub fn default_results_path(base: &Path) -> PathBuf {
    let stamp = jiff::Timestamp::now().strftime("%Y-%m-%dT%H-%M-%S-%3fZ").to_string();
    base.join(".agentv").join("results").join(format!("eval_{stamp}.jsonl"))
}

/// Appends records to a JSONL file. Lines are complete and flushed one by one, so a crash or
/// an interrupt loses nothing already written.
pub struct JsonlWriter {
    path: PathBuf,
    out: BufWriter<File>,
    secrets: Secrets,
    line: Vec<u8>,
}

impl JsonlWriter {
    /// Opens `path` for appending, creating parent directories.
    pub fn create(path: &Path, secrets: Secrets) -> std::io::Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
            secrets,
            line: Vec::with_capacity(4096),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl RecordSink for JsonlWriter {
    fn write(&mut self, record: &EvaluationRecord) -> std::io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, record)?;
        let text = String::from_utf8_lossy(&self.line);
        let redacted = self.secrets.redact(&text);
        self.out.write_all(redacted.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }
}
