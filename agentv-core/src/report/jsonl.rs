//! The results file: one JSON object per line, written as each case completes.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::sink::{Row, Sink};

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
    line: Vec<u8>,
}

impl JsonlWriter {
    /// Creates `path` (and its parent directories), emptying an existing file: a new run makes
    /// a new results file (`docs/architecture.md#outputs`).
    pub fn create(path: &Path) -> std::io::Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let out = OpenOptions::new().create(true).write(true).truncate(true).open(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            out,
            line: Vec::with_capacity(4096),
        })
    }

    /// Opens `path` to add records at its end (`--resume`), first repairing an end left by a
    /// killed run: a last line cut off mid-write is removed (the case runs again), a whole
    /// last line without its newline gets one.
    pub fn append(path: &Path) -> std::io::Result<(Self, Repair)> {
        let repair = repair_end(path)?;
        let out = OpenOptions::new().append(true).open(path)?;
        Ok((
            Self {
                path: path.to_path_buf(),
                out,
                line: Vec::with_capacity(4096),
            },
            repair,
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// What [`JsonlWriter::append`] found at the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repair {
    /// The file ended with a whole line.
    None,
    /// The last line was cut off mid-write; this many bytes of it were removed.
    DroppedCutLine(u64),
    /// The last line was whole but had no newline; one was added.
    AddedNewline,
}

/// Makes `path` end with a whole line (or be empty), reading only its last line.
fn repair_end(path: &Path) -> std::io::Result<Repair> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = OpenOptions::new().read(true).write(true).open(path)?;
    let len = file.metadata()?.len();
    // Find the start of the last line by reading backwards in blocks.
    let mut start = len;
    let mut block = vec![0u8; 64 * 1024];
    let line_start = loop {
        if start == 0 {
            break 0;
        }
        let from = start.saturating_sub(block.len() as u64);
        let n = (start - from) as usize;
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(&mut block[..n])?;
        if let Some(i) = block[..n].iter().rposition(|b| *b == b'\n') {
            // A newline as the very last byte: the file already ends with a whole line.
            break from + i as u64 + 1;
        }
        start = from;
    };
    if line_start == len {
        return Ok(Repair::None);
    }
    let mut tail = Vec::with_capacity((len - line_start) as usize);
    file.seek(SeekFrom::Start(line_start))?;
    file.read_to_end(&mut tail)?;
    let text = tail.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&tail);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(Repair::None);
    }
    if serde_json::from_slice::<serde::de::IgnoredAny>(text.trim_ascii_end()).is_ok() {
        file.seek(SeekFrom::End(0))?;
        file.write_all(b"\n")?;
        return Ok(Repair::AddedNewline);
    }
    file.set_len(line_start)?;
    Ok(Repair::DroppedCutLine(len - line_start))
}

impl Sink for JsonlWriter {
    fn write(&mut self, row: &Row<'_>) -> std::io::Result<()> {
        // One write per line, so a record is never split by another writer's line.
        self.line.clear();
        self.line.extend_from_slice(&row.json()?);
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }

    fn describe(&self) -> String {
        format!("results file {}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EvaluationRecord, ExecutionStatus, Verdict};
    use crate::redact::Secrets;

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
            trial: None,
            failure_reason_code: None,
            output_messages: None,
            trace: None,
            truncated: None,
            workspace_path: None,
            workspace: None,
            v4: Default::default(),
        }
    }

    #[test]
    fn out_file_is_truncated_not_appended() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("sub").join("r.jsonl");
        for _ in 0..2 {
            let mut w = JsonlWriter::create(&path).expect("opens");
            w.write(&Row::redact(&record("a"), &Secrets::default()))
                .expect("writes");
            w.write(&Row::redact(&record("b"), &Secrets::default()))
                .expect("writes");
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
    fn appending_repairs_an_end_left_by_a_killed_run() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("r.jsonl");
        let whole = serde_json::to_string(&record("a")).expect("json");
        let cases: &[(&str, String, Repair, &str)] = &[
            ("a whole file", format!("{whole}\n"), Repair::None, "a b"),
            ("an empty file", String::new(), Repair::None, "b"),
            (
                "a cut-off last line",
                format!("{whole}\n{}", &whole[..30]),
                Repair::DroppedCutLine(30),
                "a b",
            ),
            (
                "a cut-off only line",
                whole[..30].to_owned(),
                Repair::DroppedCutLine(30),
                "b",
            ),
            (
                "a whole last line without newline",
                whole.clone(),
                Repair::AddedNewline,
                "a b",
            ),
            ("a CRLF file", format!("{whole}\r\n"), Repair::None, "a b"),
        ];
        for (name, text, repair, ids) in cases {
            std::fs::write(&path, text).expect("write");
            let (mut w, found) = JsonlWriter::append(&path).expect("opens");
            assert_eq!(found, *repair, "{name}");
            w.write(&Row::redact(&record("b"), &Secrets::default()))
                .expect("writes");
            let read: Vec<String> = std::fs::read_to_string(&path)
                .expect("read")
                .lines()
                .map(|l| serde_json::from_str::<EvaluationRecord>(l).expect(name).eval_id)
                .collect();
            assert_eq!(read.join(" "), *ids, "{name}");
        }
        // A cut-off line longer than one read block.
        let long = format!("{{\"eval_id\": \"{}", "x".repeat(200_000));
        std::fs::write(&path, format!("{whole}\n{long}")).expect("write");
        let (_, found) = JsonlWriter::append(&path).expect("opens");
        assert_eq!(found, Repair::DroppedCutLine(long.len() as u64));
        assert_eq!(std::fs::read_to_string(&path).expect("read"), format!("{whole}\n"));
    }

    #[test]
    fn results_redact_secrets_with_quotes_and_backslashes() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("r.jsonl");
        let secrets = Secrets::default();
        secrets.add(r#"sk-"quoted"\back"#);
        let mut r = record("c");
        r.candidate_answer = r#"the key is sk-"quoted"\back, see"#.into();
        let mut writer = JsonlWriter::create(&path).expect("open");
        writer.write(&Row::redact(&r, &secrets)).expect("write");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(!text.contains("quoted"), "{text}");
        let line: serde_json::Value = serde_json::from_str(text.trim_end()).expect("still JSON");
        assert_eq!(line["candidate_answer"], "the key is ***, see");
    }
}
