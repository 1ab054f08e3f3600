//! Reading a results file back: ours (`docs/architecture.md#results`) and the TypeScript AgentV's,
//! 2.x evaluation results and 4.x `index.jsonl` rows, streamed one line at a time so memory stays
//! flat however large the file. Foreign rows are mapped into [`EvaluationRecord`] by
//! [`super::foreign`]; `docs/results.md` lists the mapping.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::foreign;
use crate::model::{EvaluationRecord, TraceEvent};

/// Which program wrote a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// agentv (this program): the record as `docs/architecture.md#results` defines it.
    Agentv,
    /// The TypeScript AgentV 2.x: `eval_id`, no `execution_status`.
    AgentvTs2,
    /// The TypeScript AgentV 4.x: `test_id`, `scores[]`, `execution_status`.
    AgentvTs4,
}

impl Generation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agentv => "agentv",
            Self::AgentvTs2 => "AgentV 2.x",
            Self::AgentvTs4 => "AgentV 4.x",
        }
    }
}

/// One record read from a results file.
#[derive(Debug, Clone)]
pub struct ReadRecord {
    /// 1-based line number in the file.
    pub line: usize,
    pub generation: Generation,
    /// The record; its `trace` is the line's full trace when it carries one (in any generation).
    pub record: EvaluationRecord,
}

impl ReadRecord {
    pub fn row(&self) -> super::Row<'_> {
        super::Row { record: &self.record }
    }
}

/// Why a results file or one of its lines could not be read. Every variant names the file and,
/// for a line, its number (and column when known), so the message reads `file:line:col: what`.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{}: cannot open the results file: {source}", path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("{}:{line}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        line: usize,
        source: io::Error,
    },
    #[error("{}:{line}:{column}: not UTF-8 (byte {column} of the line); results files are UTF-8 JSON lines", path.display())]
    NotUtf8 { path: PathBuf, line: usize, column: usize },
    #[error("{}:{line}:{column}: not valid JSON: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}:{line}: {message}", path.display())]
    Record {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

impl ReadError {
    /// The line the error is on (`None` for a file that could not be opened).
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::Open { .. } => None,
            Self::Io { line, .. }
            | Self::NotUtf8 { line, .. }
            | Self::Syntax { line, .. }
            | Self::Record { line, .. } => Some(*line),
        }
    }
}

/// Streams the records of a JSONL results file.
///
/// Blank lines are skipped, a UTF-8 byte order mark and CRLF line ends are accepted. A last
/// line that is cut off (no newline at its end and not valid JSON: the run was killed while
/// writing it) is not an error: it ends the stream and [`ResultsReader::truncated`] reports it.
/// Any other bad line is an error for that line; the next call reads on after it.
pub struct ResultsReader<R> {
    path: PathBuf,
    /// Where relative paths of 4.x rows (`answer_path`, `input_path`) are resolved.
    base_dir: PathBuf,
    input: R,
    line: usize,
    buf: Vec<u8>,
    truncated: Option<usize>,
    done: bool,
}

impl ResultsReader<BufReader<File>> {
    /// Opens `path` for reading.
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        let file = File::open(path).map_err(|source| ReadError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(ReadError::Open {
                path: path.to_path_buf(),
                source: io::Error::other("it is a directory (give the results .jsonl file)"),
            });
        }
        Ok(Self::new(path, BufReader::with_capacity(64 * 1024, file)))
    }
}

impl<R: BufRead> ResultsReader<R> {
    /// Reads `input`, naming it `path` in errors.
    pub fn new(path: &Path, input: R) -> Self {
        let base_dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        Self {
            path: path.to_path_buf(),
            base_dir,
            input,
            line: 0,
            buf: Vec::new(),
            truncated: None,
            done: false,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The number of the last line when it was cut off and skipped.
    pub fn truncated(&self) -> Option<usize> {
        self.truncated
    }

    /// Reads the next non-blank line into `buf`; false at the end. Returns whether the line
    /// ended with a newline.
    fn next_line(&mut self) -> Result<Option<bool>, ReadError> {
        loop {
            self.buf.clear();
            let n = self
                .input
                .read_until(b'\n', &mut self.buf)
                .map_err(|source| ReadError::Io {
                    path: self.path.clone(),
                    line: self.line + 1,
                    source,
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            let complete = self.buf.last() == Some(&b'\n');
            if self.line == 1 && self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.buf.drain(..3);
            }
            while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
                self.buf.pop();
            }
            if !self.buf.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some(complete));
            }
        }
    }

    fn parse(&self, complete: bool) -> Result<Option<ReadRecord>, ReadError> {
        let line = self.line;
        if let Err(e) = std::str::from_utf8(&self.buf) {
            if !complete {
                return Ok(None);
            }
            return Err(ReadError::NotUtf8 {
                path: self.path.clone(),
                line,
                column: e.valid_up_to() + 1,
            });
        }
        let value: Value = match serde_json::from_slice(&self.buf) {
            Ok(value) => value,
            Err(_) if !complete => return Ok(None),
            Err(e) => {
                let full = e.to_string();
                let message = full
                    .rsplit_once(" at line ")
                    .map_or(full.as_str(), |(m, _)| m)
                    .to_owned();
                return Err(ReadError::Syntax {
                    path: self.path.clone(),
                    line,
                    column: e.column(),
                    message,
                });
            }
        };
        let record_error = |message: String| ReadError::Record {
            path: self.path.clone(),
            line,
            message,
        };
        let Value::Object(obj) = value else {
            return Err(record_error(format!(
                "expected a JSON object (one result per line), found {}",
                kind_of(&value)
            )));
        };
        let (generation, record) = decode(obj, &self.base_dir).map_err(&record_error)?;
        // Scores are in [0, 1] in every generation; anything else would skew every mean and delta.
        if !(0.0..=1.0).contains(&record.score) {
            return Err(record_error(format!(
                "`score` {} is outside 0 to 1; results files hold scores from 0 to 1",
                record.score
            )));
        }
        Ok(Some(ReadRecord {
            line,
            generation,
            record,
        }))
    }
}

impl<R: BufRead> Iterator for ResultsReader<R> {
    type Item = Result<ReadRecord, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let complete = match self.next_line() {
            Ok(Some(complete)) => complete,
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        match self.parse(complete) {
            Ok(Some(record)) => Some(Ok(record)),
            // A last line cut off mid-write: the run was killed. Everything before it stands.
            Ok(None) => {
                self.truncated = Some(self.line);
                self.done = true;
                None
            }
            Err(e) => Some(Err(e)),
        }
    }
}

/// How many bad lines a whole-file read reports before it stops.
pub const MAX_REPORTED_ERRORS: usize = 20;

/// What a whole-file read saw.
#[derive(Debug, Clone, Default)]
pub struct ReadSummary {
    pub records: usize,
    /// The last line, cut off mid-write and skipped.
    pub truncated: Option<usize>,
    /// Generations seen, in first-seen order.
    pub generations: Vec<Generation>,
}

/// Streams every record of `path` to `each`. Bad lines are collected (up to
/// [`MAX_REPORTED_ERRORS`], then reading stops) and returned together, so a user fixes them in
/// one go; `each` has then seen the good lines.
pub fn read_all(path: &Path, mut each: impl FnMut(ReadRecord)) -> Result<ReadSummary, Vec<ReadError>> {
    let mut reader = ResultsReader::open(path).map_err(|e| vec![e])?;
    let mut summary = ReadSummary::default();
    let mut errors = Vec::new();
    for item in reader.by_ref() {
        match item {
            Ok(record) => {
                summary.records += 1;
                if !summary.generations.contains(&record.generation) {
                    summary.generations.push(record.generation);
                }
                each(record);
            }
            Err(e) => {
                errors.push(e);
                if errors.len() >= MAX_REPORTED_ERRORS {
                    break;
                }
            }
        }
    }
    summary.truncated = reader.truncated();
    if errors.is_empty() { Ok(summary) } else { Err(errors) }
}

/// Which generation wrote `obj`, and the record it holds (with the line's `trace`, in any
/// generation).
fn decode(mut obj: Map<String, Value>, base_dir: &Path) -> Result<(Generation, EvaluationRecord), String> {
    let trace = match obj.remove("trace") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            serde_json::from_value::<Vec<TraceEvent>>(value)
                .map_err(|e| format!("`trace` must be a list of trace events: {e}"))?,
        ),
    };
    let (generation, mut record) = decode_record(obj, base_dir)?;
    record.trace = trace;
    Ok((generation, record))
}

fn decode_record(obj: Map<String, Value>, base_dir: &Path) -> Result<(Generation, EvaluationRecord), String> {
    if obj.contains_key("test_id") && !obj.contains_key("eval_id") {
        return Ok((Generation::AgentvTs4, foreign::from_ts4(&obj, base_dir)?));
    }
    if !obj.contains_key("eval_id") {
        return Err(
            "not a result record: it has no `eval_id` (agentv, AgentV 2.x) or `test_id` (AgentV 4.x)".to_owned(),
        );
    }
    if obj.contains_key("execution_status") {
        let record = serde_json::from_value::<EvaluationRecord>(Value::Object(obj))
            .map_err(|e| format!("not a valid agentv result record: {e}"))?;
        return Ok((Generation::Agentv, record));
    }
    Ok((Generation::AgentvTs2, foreign::from_ts2(&obj)?))
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ExecutionStatus, Verdict};

    fn read(text: &[u8]) -> (Vec<Result<ReadRecord, String>>, Option<usize>) {
        let mut reader = ResultsReader::new(Path::new("r.jsonl"), text);
        let items = reader.by_ref().map(|r| r.map_err(|e| e.to_string())).collect();
        (items, reader.truncated())
    }

    const OURS: &str = r#"{"timestamp":"t","eval_id":"a","dataset":"d","target":"m","attempt":1,"execution_status":"ok","score":0.5,"verdict":"fail","hits":[],"misses":["x"],"candidate_answer":"A","evaluator_results":[]}"#;

    #[test]
    fn a_cut_off_last_line_ends_the_stream_without_error() {
        let text = format!("{OURS}\n{}", &OURS[..40]);
        let (items, truncated) = read(text.as_bytes());
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].as_ref().expect("first line").record.eval_id, "a");
        assert_eq!(truncated, Some(2));
    }

    #[test]
    fn a_bad_line_is_an_error_with_file_line_and_column_and_reading_goes_on() {
        let text = format!("{OURS}\n{{\"eval_id\": tru}}\n\n[1]\n{{\"x\":1}}\n{OURS}\n");
        let (items, truncated) = read(text.as_bytes());
        let errors: Vec<&String> = items.iter().filter_map(|r| r.as_ref().err()).collect();
        assert_eq!(items.len(), 5, "{items:?}");
        assert!(
            errors[0].starts_with("r.jsonl:2:16: not valid JSON: expected ident"),
            "{}",
            errors[0]
        );
        assert_eq!(
            errors[1],
            "r.jsonl:4: expected a JSON object (one result per line), found an array"
        );
        assert!(errors[2].starts_with("r.jsonl:5: not a result record"), "{}", errors[2]);
        assert_eq!(items[4].as_ref().expect("last line").line, 6);
        assert_eq!(truncated, None);
    }

    #[test]
    fn bom_crlf_and_blank_lines_are_accepted() {
        let text = format!("\u{feff}{OURS}\r\n\r\n  \n{OURS}\r\n");
        let (items, _) = read(text.as_bytes());
        let lines: Vec<usize> = items.iter().map(|r| r.as_ref().expect("ok").line).collect();
        assert_eq!(lines, [1, 4]);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_an_error_naming_the_byte() {
        let mut text = OURS.as_bytes()[..30].to_vec();
        text.extend_from_slice(b"\xff\xfe");
        text.extend_from_slice(&OURS.as_bytes()[30..]);
        text.push(b'\n');
        let (items, _) = read(&text);
        assert_eq!(
            items[0].as_ref().expect_err("not utf-8"),
            "r.jsonl:1:31: not UTF-8 (byte 31 of the line); results files are UTF-8 JSON lines"
        );
    }

    #[test]
    fn scores_outside_zero_to_one_are_an_error() {
        for (score, ok) in [
            ("0", true),
            ("1", true),
            ("1.5", false),
            ("-0.1", false),
            ("1e300", false),
        ] {
            let line = OURS.replace(r#""score":0.5"#, &format!(r#""score":{score}"#));
            let (items, _) = read(format!("{line}\n").as_bytes());
            assert_eq!(items[0].is_ok(), ok, "{score}: {:?}", items[0].as_ref().err());
        }
        let (items, _) = read(format!("{}\n", OURS.replace(r#""score":0.5"#, r#""score":2"#)).as_bytes());
        assert_eq!(
            items[0].as_ref().expect_err("out of range"),
            "r.jsonl:1: `score` 2 is outside 0 to 1; results files hold scores from 0 to 1"
        );
    }

    #[test]
    fn our_records_missing_a_key_name_it() {
        let bad = OURS.replace(r#""score":0.5,"#, "");
        let (items, _) = read(format!("{bad}\n").as_bytes());
        let err = items[0].as_ref().expect_err("missing score");
        assert_eq!(
            err,
            "r.jsonl:1: not a valid agentv result record: missing field `score`"
        );
    }

    #[test]
    fn a_trace_under_trace_is_kept_beside_the_record() {
        let line = OURS.replace(
            r#""evaluator_results":[]"#,
            r#""evaluator_results":[],"trace":[{"type":"tool_call","name":"Read","input":{"p":1}}]"#,
        );
        let (items, _) = read(format!("{line}\n").as_bytes());
        let read = items[0].as_ref().expect("ok");
        let trace = read.record.trace.as_ref().expect("trace");
        assert_eq!(trace[0].name.as_deref(), Some("Read"));
        assert_eq!(read.generation, Generation::Agentv);
        assert_eq!(read.record.execution_status, ExecutionStatus::Ok);
        assert_eq!(read.record.verdict, Verdict::Fail);
    }
}
