//! The HTML report: one self-contained file (CSS, script, data and the SVG chart inlined; no
//! network, enforced by a Content-Security-Policy) that a person opens in a browser.
//!
//! It is written as records arrive, so memory stays flat: each case's full record goes into
//! the file at once, as a `<script type="application/json">` block the browser parses only
//! when the case is opened; memory keeps a compact index row per case (id, target, score,
//! verdict, status, duration, cost, first miss), written at [`Sink::finish`] with the summary
//! header, the chart and the script that renders the table. The table is paginated, so a
//! 10 000-case report opens as fast as a small one.
//!
//! Every user string (answers hold HTML and `</script>`) is embedded as JSON with `<`, `>`,
//! `&`, U+2028 and U+2029 escaped, and rendered with `textContent`, never parsed as markup.

mod page;

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::compare::{Comparison, Entry};
use super::format::{FormatEntry, ReportTarget};
use super::sink::{Row, Sink};
use super::tally::{Tally, first_problem, shorten};
use crate::model::{EvaluationRecord, ExecutionStatus};

/// Longest first-miss text kept in the index, in characters (the drill-down has it whole).
const FIRST_MISS_WIDTH: usize = 160;

/// How records are grouped into the columns of the side-by-side view.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Grouping {
    /// By target (a run against several targets).
    Targets,
    /// By run: `agentv report --compare BASE CANDIDATE`, labelled by file.
    Runs(Vec<String>),
}

/// One column of the side-by-side view, with its totals.
#[derive(Debug, Clone, Serialize)]
struct Group {
    label: String,
    #[serde(flatten)]
    tally: Tally,
}

/// What the index keeps of one case: a JSON array, short keys, for a small file.
#[derive(Debug, Serialize)]
struct IndexRow {
    /// Eval id.
    i: String,
    /// Group (column) index.
    g: usize,
    /// Target.
    t: String,
    /// Dataset.
    d: String,
    /// Score.
    s: f64,
    /// Verdict: `pass`, `borderline`, `fail`.
    v: &'static str,
    /// Status: `ok`, `execution_error`, `grader_error`, `invalid`.
    x: &'static str,
    /// Duration in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    ms: Option<f64>,
    /// Cost in USD.
    #[serde(skip_serializing_if = "Option::is_none")]
    usd: Option<f64>,
    /// First miss (or error), shortened.
    #[serde(skip_serializing_if = "String::is_empty")]
    m: String,
    /// The case across groups: rows with the same `k` sit side by side.
    k: usize,
}

/// The table entry of the HTML report (`report/format.rs`).
pub(crate) static FORMAT: FormatEntry = FormatEntry {
    name: "html",
    aliases: &[],
    label: "HTML",
    extension: "html",
    doc: "one self-contained HTML page",
    open: |to: &ReportTarget<'_>| Ok(Box::new(HtmlReport::create(to.path, to.title)?)),
};

/// The HTML report sink.
pub struct HtmlReport {
    path: PathBuf,
    title: String,
    grouping: Grouping,
    run: usize,
    /// The page being written; `None` once finished.
    out: Option<BufWriter<tempfile::NamedTempFile>>,
    groups: Vec<Group>,
    rows: Vec<IndexRow>,
    keys: HashMap<(String, String, String), usize>,
    buf: Vec<u8>,
}

impl HtmlReport {
    /// A report of one run (grouped by target when it has several), written to `path`.
    pub fn create(path: &Path, title: &str) -> io::Result<Self> {
        Self::start(path, title, Grouping::Targets)
    }

    /// A report of several runs side by side (`runs` are their labels, e.g. file names); call
    /// [`HtmlReport::start_run`] before each run's records.
    pub fn create_compare(path: &Path, title: &str, runs: Vec<String>) -> io::Result<Self> {
        Self::start(path, title, Grouping::Runs(runs))
    }

    fn start(path: &Path, title: &str, grouping: Grouping) -> io::Result<Self> {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut out = BufWriter::with_capacity(256 * 1024, super::sink::output_file(dir)?);
        out.write_all(page::head(title).as_bytes())?;
        let groups = match &grouping {
            Grouping::Targets => Vec::new(),
            Grouping::Runs(labels) => labels
                .iter()
                .map(|l| Group {
                    label: l.clone(),
                    tally: Tally::default(),
                })
                .collect(),
        };
        Ok(Self {
            path: path.to_path_buf(),
            title: title.to_owned(),
            grouping,
            run: 0,
            out: Some(out),
            groups,
            rows: Vec::new(),
            keys: HashMap::new(),
            buf: Vec::with_capacity(16 * 1024),
        })
    }

    /// The records that follow belong to run `index` (compare reports only).
    pub fn start_run(&mut self, index: usize) {
        self.run = index;
    }

    fn group_of(&mut self, r: &EvaluationRecord) -> usize {
        match self.grouping {
            Grouping::Runs(_) => self.run.min(self.groups.len().saturating_sub(1)),
            Grouping::Targets => match self.groups.iter().position(|g| g.label == r.target) {
                Some(g) => g,
                None => {
                    self.groups.push(Group {
                        label: r.target.clone(),
                        tally: Tally::default(),
                    });
                    self.groups.len() - 1
                }
            },
        }
    }

    /// The same case in every group shares a key: dataset and id, and the target too when
    /// runs are compared (each run may hold several targets).
    fn key_of(&mut self, r: &EvaluationRecord) -> usize {
        let target = match self.grouping {
            Grouping::Runs(_) => r.target.clone(),
            Grouping::Targets => String::new(),
        };
        let next = self.keys.len();
        *self
            .keys
            .entry((r.dataset.clone(), r.eval_id.clone(), target))
            .or_insert(next)
    }

    fn write_row(&mut self, r: &EvaluationRecord) -> io::Result<()> {
        let index = self.rows.len();
        /// A case's block: the record, its full trace (if any) under `r.trace`.
        #[derive(Serialize)]
        struct Detail<'a> {
            r: &'a EvaluationRecord,
        }
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, &Detail { r })?;
        let out = self.out.as_mut().ok_or_else(finished)?;
        write!(out, "<script type=\"application/json\" id=\"c{index}\">")?;
        write_script_json(out, &self.buf)?;
        out.write_all(b"</script>\n")?;

        let g = self.group_of(r);
        self.groups[g].tally.add(r);
        let k = self.key_of(r);
        let metrics = r.execution_metrics.as_ref();
        self.rows.push(IndexRow {
            i: r.eval_id.clone(),
            g,
            t: r.target.clone(),
            d: r.dataset.clone(),
            s: if r.score.is_finite() { r.score } else { 0.0 },
            v: r.verdict.as_str(),
            x: r.execution_status.as_str(),
            ms: metrics.and_then(|m| m.duration_ms).filter(|v| v.is_finite()),
            usd: metrics.and_then(|m| m.cost_usd).filter(|v| v.is_finite()),
            m: shorten(first_problem(r).unwrap_or(""), FIRST_MISS_WIDTH),
            k,
        });
        Ok(())
    }

    /// Pairwise comparisons of every group with the first, for the header.
    fn comparisons(&self) -> Vec<(usize, Comparison)> {
        if self.groups.len() < 2 {
            return Vec::new();
        }
        let entries = |g: usize| -> Vec<Entry> {
            self.rows
                .iter()
                .filter(|row| row.g == g)
                .map(|row| Entry {
                    // Matched by the case key, so targets that differ by group still pair.
                    eval_id: row.k.to_string(),
                    target: String::new(),
                    dataset: row.d.clone(),
                    trial: None,
                    score: row.s,
                    status: status_of(row.x),
                })
                .collect()
        };
        let base = entries(0);
        (1..self.groups.len())
            .map(|g| {
                (
                    g,
                    Comparison::new(base.clone(), entries(g), super::compare::DEFAULT_EPSILON),
                )
            })
            .collect()
    }

    fn write_tail(&mut self) -> io::Result<()> {
        let comparisons = self.comparisons();
        let header = page::header(&self.title, &self.groups, &comparisons);
        let meta = serde_json::to_vec(&serde_json::json!({
            "title": self.title,
            "groups": self.groups,
            "compare": matches!(self.grouping, Grouping::Runs(_)),
        }))?;
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, &self.rows)?;
        let out = self.out.as_mut().ok_or_else(finished)?;
        out.write_all(header.as_bytes())?;
        out.write_all(page::BODY.as_bytes())?;
        out.write_all(b"<script type=\"application/json\" id=\"meta\">")?;
        write_script_json(out, &meta)?;
        out.write_all(b"</script>\n<script type=\"application/json\" id=\"index\">")?;
        write_script_json(out, &self.buf)?;
        out.write_all(b"</script>\n")?;
        out.write_all(page::tail().as_bytes())?;
        out.flush()
    }
}

fn finished() -> io::Error {
    io::Error::other("the report is already finished")
}

fn status_of(x: &str) -> ExecutionStatus {
    match x {
        "execution_error" => ExecutionStatus::ExecutionError,
        "grader_error" => ExecutionStatus::GraderError,
        "invalid" => ExecutionStatus::Invalid,
        _ => ExecutionStatus::Ok,
    }
}

/// Writes JSON text so that it can sit inside a `<script>` element: `<`, `>` and `&` (which
/// could close the element or open a comment) and U+2028/U+2029 (line ends to older
/// JavaScript) become `\u` escapes. They can only occur inside JSON strings, where the escape
/// means the same character, so the JSON is unchanged.
pub fn write_script_json(out: &mut impl Write, json: &[u8]) -> io::Result<()> {
    let mut start = 0;
    let mut i = 0;
    while i < json.len() {
        let escape: Option<&[u8]> = match json[i] {
            b'<' => Some(b"\\u003c"),
            b'>' => Some(b"\\u003e"),
            b'&' => Some(b"\\u0026"),
            0xE2 if json.get(i + 1) == Some(&0x80) && json.get(i + 2) == Some(&0xA8) => Some(b"\\u2028"),
            0xE2 if json.get(i + 1) == Some(&0x80) && json.get(i + 2) == Some(&0xA9) => Some(b"\\u2029"),
            _ => None,
        };
        match escape {
            Some(text) => {
                out.write_all(&json[start..i])?;
                out.write_all(text)?;
                i += if json[i] == 0xE2 { 3 } else { 1 };
                start = i;
            }
            None => i += 1,
        }
    }
    out.write_all(&json[start..])
}

impl Sink for HtmlReport {
    fn write(&mut self, row: &Row<'_>) -> io::Result<()> {
        self.write_row(row.record())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.write_tail()?;
        let out = self.out.take().ok_or_else(finished)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        crate::paths::persist(file, &self.path)?;
        Ok(())
    }

    fn describe(&self) -> String {
        format!("HTML report {}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn embed(value: &Value) -> String {
        let mut out = Vec::new();
        write_script_json(&mut out, value.to_string().as_bytes()).expect("writes");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn script_json_cannot_close_its_element() {
        let value = serde_json::json!({"a": "</script><!-- & \u{2028}\u{2029} é"});
        let text = embed(&value);
        assert_eq!(text, r#"{"a":"\u003c/script\u003e\u003c!-- \u0026 \u2028\u2029 é"}"#);
        let back: Value = serde_json::from_str(&text).expect("still JSON");
        assert_eq!(back, value);
    }
}
