//! Reading a results file back: ours (`docs/architecture.md#results`) and the TypeScript AgentV's,
//! 2.x evaluation results and 4.x `index.jsonl` rows, streamed one line at a time so memory stays
//! flat however large the file. Foreign rows are mapped into [`EvaluationRecord`] by
//! [`super::foreign`]; `docs/results.md` lists the mapping.
//!
//! A line is read in one of two ways ([`Detail`]): whole, for the reports, which need every
//! field (a line longer than [`max_line_bytes`] is then an error for that line), or as its
//! figures only, streamed, for `compare`, `merge`, `--resume` and the last-record rule, which
//! then read a line of any length in constant memory (`docs/results.md#memory`). Every reader
//! takes the last line of each record ([`super::latest`]).

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeSeed;
use serde_json::{Map, Value};

use super::foreign;
use super::lines::{LineEnd, LineProblem, LineRead, Next, max_line_bytes, size_text, skip_blank};
use super::slim::{RECORD, Top, TopSeed};
use crate::model::{EvaluationRecord, TraceEvent};

/// Which program wrote a line of a results file: its results format (an eval file's format is
/// [`crate::model::Generation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultsFormat {
    /// agentv (this program): the record as `docs/architecture.md#results` defines it.
    Agentv,
    /// The TypeScript AgentV 2.x: `eval_id`, no `execution_status`.
    AgentvTs2,
    /// The TypeScript AgentV 4.x: `test_id`, `scores[]`, `execution_status`.
    AgentvTs4,
}

impl ResultsFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agentv => "agentv",
            Self::AgentvTs2 => "AgentV 2.x",
            Self::AgentvTs4 => "AgentV 4.x",
        }
    }
}

/// How much of each line is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Every field: what a report shows. A line longer than the cap is an error.
    Full,
    /// What identifies, scores and counts a record (ids, target, trial, status, score,
    /// verdict, metrics, each grader's name, score and error); hits, misses, answers, requests
    /// and traces are skipped unread, so any line reads in constant memory.
    Figures,
}

/// One record read from a results file.
#[derive(Debug, Clone)]
pub struct ReadRecord {
    /// 1-based line number in the file.
    pub line: usize,
    pub generation: ResultsFormat,
    /// The record; its `trace` is the line's full trace when it carries one (in any generation).
    /// Read with [`Detail::Figures`], its text fields are empty.
    pub record: EvaluationRecord,
}

impl ReadRecord {
    /// The record redacted, for the sinks.
    pub fn row(&self, secrets: &crate::redact::Secrets) -> super::Row<'_> {
        super::Row::redact(&self.record, secrets)
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
    #[error("{}:{line}: {source}", path.display())]
    Record {
        path: PathBuf,
        line: usize,
        source: RecordError,
    },
    #[error(
        "{}:{line}: the line is over {} (the most one record may take to be read whole); set {}=<MiB> to read longer lines",
        path.display(), size_text(*limit), super::lines::MAX_LINE_ENV
    )]
    TooLong { path: PathBuf, line: usize, limit: u64 },
}

impl ReadError {
    /// The line the error is on (`None` for a file that could not be opened).
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::Open { .. } => None,
            Self::Io { line, .. }
            | Self::NotUtf8 { line, .. }
            | Self::Syntax { line, .. }
            | Self::Record { line, .. }
            | Self::TooLong { line, .. } => Some(*line),
        }
    }
}

/// Why a line that is JSON is not a result record of any generation (`docs/results.md`).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("expected a JSON object (one result per line), found {0}")]
    NotAnObject(&'static str),
    #[error("not a result record: it has no `eval_id` (agentv, AgentV 2.x) or `test_id` (AgentV 4.x)")]
    NoId,
    #[error("not a valid agentv result record: {0}")]
    Invalid(serde_json::Error),
    #[error("`trace` must be a list of trace events: {0}")]
    Trace(serde_json::Error),
    /// A key of an AgentV 2.x or 4.x record that must be a string is not.
    #[error("`{0}` must be a string")]
    NotAString(&'static str),
    #[error("missing `score`")]
    NoScore,
    #[error("`score` must be a number, found {0}")]
    ScoreNotANumber(Value),
    #[error("`score` {0} is outside 0 to 1; results files hold scores from 0 to 1")]
    ScoreOutOfRange(f64),
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
    detail: Detail,
    /// The cap on a line read whole.
    limit: u64,
    /// Lines passed over unread: older lines of a record a later line replaces.
    skip: Option<Arc<HashSet<usize>>>,
}

impl ResultsReader<BufReader<File>> {
    /// Opens `path` for reading.
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        let file = open_file(path)?;
        Ok(Self::new(path, BufReader::with_capacity(64 * 1024, file)))
    }
}

/// `path`, opened to read, when it is a file (not a directory).
fn open_file(path: &Path) -> Result<File, ReadError> {
    let open_error = |source| ReadError::Open {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(open_error)?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(open_error(io::Error::other(
            "it is a directory (give the results .jsonl file)",
        )));
    }
    Ok(file)
}

impl<R: BufRead> ResultsReader<R> {
    /// Reads `input` whole ([`Detail::Full`]), naming it `path` in errors.
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
            detail: Detail::Full,
            limit: max_line_bytes(),
            skip: None,
        }
    }

    /// Reads `detail` of each line.
    pub fn detail(mut self, detail: Detail) -> Self {
        self.detail = detail;
        self
    }

    /// Caps a line read whole at `limit` bytes (default: [`max_line_bytes`]).
    pub fn limit(mut self, limit: u64) -> Self {
        self.limit = limit;
        self
    }

    /// Passes over these lines without reading them.
    fn skipping(mut self, lines: Arc<HashSet<usize>>) -> Self {
        self.skip = Some(lines);
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The number of the last line when it was cut off and skipped.
    pub fn truncated(&self) -> Option<usize> {
        self.truncated
    }

    fn io_error(&self, source: io::Error) -> ReadError {
        ReadError::Io {
            path: self.path.clone(),
            line: self.line,
            source,
        }
    }

    /// Reads the current line whole into `buf`. `Ok(None)`: a last line cut off mid-write.
    fn read_full(&mut self, skipped: usize) -> Result<Option<ReadRecord>, ReadError> {
        self.buf.clear();
        let mut reader = LineRead::new(&mut self.input, Some(self.limit));
        let read = reader.read_to_end(&mut self.buf);
        let problem = reader.problem();
        let end = reader.finish().map_err(|e| self.io_error(e))?;
        let complete = end == LineEnd::Newline;
        if let Err(e) = read {
            return match problem {
                Some(LineProblem::TooLong { limit }) => Err(ReadError::TooLong {
                    path: self.path.clone(),
                    line: self.line,
                    limit,
                }),
                Some(LineProblem::NotUtf8 { .. }) if !complete => Ok(None),
                Some(LineProblem::NotUtf8 { column }) => Err(self.not_utf8(column + skipped)),
                None => Err(self.io_error(e)),
            };
        }
        // Ours, straight into the record: no JSON tree in between.
        if let Ok(record) = serde_json::from_slice::<EvaluationRecord>(&self.buf) {
            return self.checked(ResultsFormat::Agentv, record).map(Some);
        }
        let value: Value = match serde_json::from_slice(&self.buf) {
            Ok(value) => value,
            Err(_) if !complete => return Ok(None),
            Err(e) => return Err(self.syntax(&e, skipped)),
        };
        let Value::Object(obj) = value else {
            return Err(self.record_error(RecordError::NotAnObject(kind_of(&value))));
        };
        self.decoded(obj).map(Some)
    }

    /// Reads the figures of the current line, streaming. `Ok(None)`: a last line cut off.
    fn read_figures(&mut self, skipped: usize) -> Result<Option<ReadRecord>, ReadError> {
        self.buf.clear();
        let mut reader = LineRead::new(&mut self.input, None);
        // A line up to this long is parsed from memory (fast); a longer one is streamed.
        const IN_MEMORY: u64 = 1024 * 1024;
        let head = (&mut reader).take(IN_MEMORY).read_to_end(&mut self.buf);
        let parsed = match head {
            Err(e) => Err(serde_json::Error::io(e)),
            Ok(_) if reader.ended() => figures_of(serde_json::Deserializer::from_slice(&self.buf)),
            // serde_json reads a byte at a time: a buffer in front saves a call per byte (it
            // cannot read past the line, which ends the stream).
            Ok(_) => figures_of(serde_json::Deserializer::from_reader(io::BufReader::with_capacity(
                8 * 1024,
                io::Cursor::new(&self.buf[..]).chain(&mut reader),
            ))),
        };
        let problem = reader.problem();
        let end = reader.finish().map_err(|e| self.io_error(e))?;
        let complete = end == LineEnd::Newline;
        let top = match parsed {
            Ok(top) => top,
            Err(_) if !complete => return Ok(None),
            Err(e) => {
                return Err(match problem {
                    Some(LineProblem::NotUtf8 { column }) => self.not_utf8(column + skipped),
                    _ if e.is_io() => self.io_error(io::Error::other(e)),
                    _ => self.syntax(&e, skipped),
                });
            }
        };
        match top {
            Top::Other(kind) => Err(self.record_error(RecordError::NotAnObject(kind))),
            Top::Object(mut obj) => {
                fill_skipped_text(&mut obj);
                self.decoded(obj).map(Some)
            }
        }
    }

    fn decoded(&self, obj: Map<String, Value>) -> Result<ReadRecord, ReadError> {
        let (generation, record) = decode(obj, &self.base_dir).map_err(|e| self.record_error(e))?;
        self.checked(generation, record)
    }

    fn checked(&self, generation: ResultsFormat, record: EvaluationRecord) -> Result<ReadRecord, ReadError> {
        // Scores are in [0, 1] in every generation; anything else would skew every mean and delta.
        if !(0.0..=1.0).contains(&record.score) {
            return Err(self.record_error(RecordError::ScoreOutOfRange(record.score)));
        }
        Ok(ReadRecord {
            line: self.line,
            generation,
            record,
        })
    }

    fn record_error(&self, source: RecordError) -> ReadError {
        ReadError::Record {
            path: self.path.clone(),
            line: self.line,
            source,
        }
    }

    fn not_utf8(&self, column: usize) -> ReadError {
        ReadError::NotUtf8 {
            path: self.path.clone(),
            line: self.line,
            column,
        }
    }

    fn syntax(&self, e: &serde_json::Error, skipped: usize) -> ReadError {
        let full = e.to_string();
        let message = full
            .rsplit_once(" at line ")
            .map_or(full.as_str(), |(m, _)| m)
            .to_owned();
        ReadError::Syntax {
            path: self.path.clone(),
            line: self.line,
            column: e.column() + skipped,
            message,
        }
    }
}

/// The figures of one line, read by `de`.
fn figures_of<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
) -> Result<Top, serde_json::Error> {
    let top = TopSeed(&RECORD).deserialize(&mut de)?;
    de.end()?;
    Ok(top)
}

/// The text a figures-only read skipped, as empty values, so the record decodes as a whole
/// one would.
fn fill_skipped_text(obj: &mut Map<String, Value>) {
    // Our records' 4.x `scores` repeat `evaluator_results`: a figures-only read leaves them out.
    if obj.contains_key("eval_id") && obj.contains_key("execution_status") {
        obj.remove("scores");
    }
    for key in ["hits", "misses"] {
        obj.entry(key).or_insert_with(|| Value::Array(Vec::new()));
    }
    obj.entry("candidate_answer")
        .or_insert_with(|| Value::String(String::new()));
    if let Some(Value::Array(graders)) = obj.get_mut("evaluator_results") {
        for grader in graders.iter_mut().filter_map(Value::as_object_mut) {
            for key in ["hits", "misses"] {
                grader.entry(key).or_insert_with(|| Value::Array(Vec::new()));
            }
        }
    }
}

impl<R: BufRead> Iterator for ResultsReader<R> {
    type Item = Result<ReadRecord, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let skipped = match skip_blank(&mut self.input, self.line) {
                Ok(Next::Line { line, skipped }) => {
                    self.line = line;
                    skipped
                }
                Ok(Next::End) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(self.io_error(e)));
                }
            };
            if self.skip.as_ref().is_some_and(|lines| lines.contains(&self.line)) {
                if let Err(e) = LineRead::new(&mut self.input, None).finish() {
                    self.done = true;
                    return Some(Err(self.io_error(e)));
                }
                continue;
            }
            let read = match self.detail {
                Detail::Full => self.read_full(skipped),
                Detail::Figures => self.read_figures(skipped),
            };
            return match read {
                Ok(Some(record)) => Some(Ok(record)),
                // A last line cut off mid-write: the run was killed. Everything before it stands.
                Ok(None) => {
                    self.truncated = Some(self.line);
                    self.done = true;
                    None
                }
                Err(e) => {
                    if matches!(e, ReadError::Io { .. }) {
                        self.done = true;
                    }
                    Some(Err(e))
                }
            };
        }
    }
}

/// How many bad lines a whole-file read reports before it stops.
pub const MAX_REPORTED_ERRORS: usize = 20;

/// What a whole-file read saw.
#[derive(Debug, Clone, Default)]
pub struct ReadSummary {
    /// Records read: the last line of each.
    pub records: usize,
    /// Lines left out because a later line holds a newer record of the same case and trial (a
    /// resumed run appends one): `docs/results.md#the-last-line-of-a-record-counts`.
    pub superseded: usize,
    /// The last line, cut off mid-write and skipped.
    pub truncated: Option<usize>,
    /// Generations seen, in first-seen order.
    pub generations: Vec<ResultsFormat>,
}

/// Streams every record of `path` to `each`, whole, the last line of each record only (the
/// rule of [`super::latest`]). Bad lines are collected (up to [`MAX_REPORTED_ERRORS`], then
/// reading stops) and returned together, so a user fixes them in one go; `each` has then seen
/// the good lines.
pub fn read_all(path: &Path, each: impl FnMut(ReadRecord)) -> Result<ReadSummary, Vec<ReadError>> {
    read_latest(path, Detail::Full, each)
}

/// [`read_all`], reading the figures of each record only ([`Detail::Figures`]).
pub fn read_figures(path: &Path, each: impl FnMut(ReadRecord)) -> Result<ReadSummary, Vec<ReadError>> {
    read_latest(path, Detail::Figures, each)
}

/// Two passes: which lines a later line supersedes (figures only), then the records.
fn read_latest(path: &Path, detail: Detail, mut each: impl FnMut(ReadRecord)) -> Result<ReadSummary, Vec<ReadError>> {
    let mut file = rereadable(path).map_err(|e| vec![e])?;
    let superseded = super::latest::scan(path, BufReader::with_capacity(64 * 1024, &file))?;
    file.seek(SeekFrom::Start(0)).map_err(|source| {
        vec![ReadError::Open {
            path: path.to_path_buf(),
            source,
        }]
    })?;
    let count = superseded.len();
    let reader = ResultsReader::new(path, BufReader::with_capacity(64 * 1024, file))
        .detail(detail)
        .skipping(Arc::new(superseded));
    let mut summary = drain(reader, &mut each)?;
    summary.superseded = count;
    Ok(summary)
}

/// `path` opened so that it can be read twice: a file as it is; a pipe (`/dev/stdin`,
/// `<(…)`) copied to a temporary file first.
fn rereadable(path: &Path) -> Result<File, ReadError> {
    let mut file = open_file(path)?;
    if file.metadata().is_ok_and(|m| m.is_file()) {
        return Ok(file);
    }
    let open_error = |source| ReadError::Open {
        path: path.to_path_buf(),
        source,
    };
    let mut copy = tempfile::tempfile().map_err(open_error)?;
    io::copy(&mut file, &mut copy).map_err(open_error)?;
    copy.seek(SeekFrom::Start(0)).map_err(open_error)?;
    Ok(copy)
}

/// The keys that tell a results file from a dataset.
const HEAD: super::slim::Keep = super::slim::Keep::Keys(&[
    ("eval_id", super::slim::Keep::Short),
    ("test_id", super::slim::Keep::Short),
    ("score", super::slim::Keep::Short),
    ("evaluator_results", super::slim::Keep::Short),
    ("scores", super::slim::Keep::Short),
]);

/// Whether the first record of the JSONL file `path` is a result (an id, `eval_id` or 4.x
/// `test_id`, with `score`, `evaluator_results` or `scores`); dataset lines carry `id` and
/// inputs instead. The first line is streamed, keys only, so its size does not matter.
pub fn starts_with_a_result(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut input = BufReader::with_capacity(64 * 1024, file);
    if !matches!(skip_blank(&mut input, 0), Ok(Next::Line { .. })) {
        return false;
    }
    let mut line = LineRead::new(&mut input, None);
    let mut de = serde_json::Deserializer::from_reader(io::BufReader::with_capacity(8 * 1024, &mut line));
    let Ok(Top::Object(keys)) = TopSeed(&HEAD).deserialize(&mut de) else {
        return false;
    };
    let has = |key: &str| keys.contains_key(key);
    (has("eval_id") || has("test_id")) && (has("score") || has("evaluator_results") || has("scores"))
}

/// Reads every record of `input` as [`read_all`] does, but without the last-record rule (for
/// callers that need each line: the rule's own scan, a merge copying lines).
pub(super) fn each_line<R: BufRead>(
    path: &Path,
    input: R,
    detail: Detail,
    mut each: impl FnMut(ReadRecord),
) -> Result<ReadSummary, Vec<ReadError>> {
    drain(ResultsReader::new(path, input).detail(detail), &mut each)
}

/// Every record of `reader` to `each`, and what was seen; the bad lines (up to
/// [`MAX_REPORTED_ERRORS`]) instead when there are any.
fn drain<R: BufRead>(
    mut reader: ResultsReader<R>,
    each: &mut impl FnMut(ReadRecord),
) -> Result<ReadSummary, Vec<ReadError>> {
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
fn decode(mut obj: Map<String, Value>, base_dir: &Path) -> Result<(ResultsFormat, EvaluationRecord), RecordError> {
    let trace = match obj.remove("trace") {
        None | Some(Value::Null) => None,
        Some(value) => Some(serde_json::from_value::<Vec<TraceEvent>>(value).map_err(RecordError::Trace)?),
    };
    let (generation, mut record) = decode_record(obj, base_dir)?;
    record.trace = trace;
    Ok((generation, record))
}

fn decode_record(obj: Map<String, Value>, base_dir: &Path) -> Result<(ResultsFormat, EvaluationRecord), RecordError> {
    if obj.contains_key("test_id") && !obj.contains_key("eval_id") {
        return Ok((ResultsFormat::AgentvTs4, foreign::from_ts4(&obj, base_dir)?));
    }
    if !obj.contains_key("eval_id") {
        return Err(RecordError::NoId);
    }
    if obj.contains_key("execution_status") {
        let record = serde_json::from_value::<EvaluationRecord>(Value::Object(obj)).map_err(RecordError::Invalid)?;
        return Ok((ResultsFormat::Agentv, record));
    }
    Ok((ResultsFormat::AgentvTs2, foreign::from_ts2(&obj)?))
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
    fn a_results_file_whose_first_record_is_over_4_mib_is_told_from_a_dataset() {
        let dir = tempfile::tempdir().expect("tmp");
        let huge = OURS.replace(
            r#""candidate_answer":"A""#,
            &format!(r#""candidate_answer":"{}""#, "a".repeat(6 << 20)),
        );
        let ts4 = r#"{"test_id":"t","score":1,"scores":[]}"#;
        let cases: &[(&str, String, bool)] = &[
            ("huge first record", format!("{huge}\n{OURS}\n"), true),
            ("bom and blank lines first", format!("\u{feff}\n  \r\n{OURS}\n"), true),
            ("an AgentV 4.x run index", format!("{ts4}\n"), true),
            (
                "a dataset with a huge first case",
                format!(
                    "{{\"id\":\"c\",\"input\":\"{}\",\"expected_output\":\"x\"}}\n",
                    "q".repeat(6 << 20)
                ),
                false,
            ),
            (
                "a dataset line with score-like text",
                "{\"id\":\"eval_id\",\"input\":\"score\"}\n".to_owned(),
                false,
            ),
            ("not JSON", "eval_id score\n".to_owned(), false),
            ("empty", String::new(), false),
        ];
        for (name, text, want) in cases {
            let path = dir.path().join("f.jsonl");
            std::fs::write(&path, text).expect("write");
            assert_eq!(starts_with_a_result(&path), *want, "{name}");
        }
    }

    #[test]
    fn a_line_over_the_cap_is_an_error_when_read_whole_and_fine_for_its_figures() {
        let long = OURS.replace(
            r#""candidate_answer":"A""#,
            &format!(r#""candidate_answer":"{}""#, "a".repeat(5000)),
        );
        let text = format!("{long}\n{OURS}\n");
        let whole: Vec<Result<ReadRecord, String>> = ResultsReader::new(Path::new("r.jsonl"), text.as_bytes())
            .limit(4096)
            .map(|r| r.map_err(|e| e.to_string()))
            .collect();
        assert_eq!(
            whole[0].as_ref().expect_err("too long"),
            "r.jsonl:1: the line is over 4 KiB (the most one record may take to be read whole); set AGENTV_MAX_LINE_MB=<MiB> to read longer lines"
        );
        assert_eq!(whole[1].as_ref().expect("next line").record.eval_id, "a");
        let figures: Vec<ReadRecord> = ResultsReader::new(Path::new("r.jsonl"), text.as_bytes())
            .limit(4096)
            .detail(Detail::Figures)
            .map(|r| r.expect("figures"))
            .collect();
        assert_eq!(figures.len(), 2);
        assert_eq!(figures[0].record.candidate_answer, "", "text is skipped");
        assert_eq!(figures[0].record.score, 0.5);
    }

    #[test]
    fn figures_and_whole_reads_agree_on_bad_lines() {
        let text = format!("{OURS}\n{{\"eval_id\": tru}}\n\n[1]\n{{\"x\":1}}\n{OURS}\n");
        for detail in [Detail::Full, Detail::Figures] {
            let items: Vec<Result<usize, String>> = ResultsReader::new(Path::new("r.jsonl"), text.as_bytes())
                .detail(detail)
                .map(|r| r.map(|r| r.line).map_err(|e| e.to_string()))
                .collect();
            assert_eq!(items.len(), 5, "{detail:?}: {items:?}");
            assert!(
                items[1]
                    .as_ref()
                    .is_err_and(|e| e.starts_with("r.jsonl:2:16: not valid JSON: expected ident")),
                "{detail:?}: {items:?}"
            );
            assert_eq!(
                items[2],
                Err("r.jsonl:4: expected a JSON object (one result per line), found an array".to_owned()),
                "{detail:?}"
            );
            assert_eq!(items[4], Ok(6), "{detail:?}");
        }
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
        assert_eq!(read.generation, ResultsFormat::Agentv);
        assert_eq!(read.record.execution_status, ExecutionStatus::Ok);
        assert_eq!(read.record.verdict, Verdict::Fail);
    }
}
