//! JUnit XML, the format CI systems (GitHub actions, GitLab, Jenkins) read test results in:
//! one `<testsuite>` per dataset and target, one `<testcase>` per case, `<failure>` for a case
//! whose verdict is `fail` (its misses in the body), `<error>` for a case that could not be run
//! or graded, and the score and verdict as `<properties>`.
//!
//! A suite's counts come before its cases in the file, but cases arrive in completion order,
//! mixed across suites. So each `<testcase>` is written to a spool file as it arrives and only
//! its place is remembered; [`Sink::finish`] writes the suites in order, copying their cases
//! from the spool. Memory holds a few numbers per case, never their text.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use super::format::{FormatEntry, ReportTarget};
use super::sink::{Row, Sink};
use super::tally::{counted_misses, first_problem, shorten};
use super::terminal::escape_line;
use crate::model::{EvaluationRecord, ExecutionStatus, Verdict};

/// Longest `message` attribute, in characters (the body has everything).
const MESSAGE_WIDTH: usize = 500;

/// Counts and cases of one `<testsuite>`.
#[derive(Debug, Default)]
struct Suite {
    dataset: String,
    target: String,
    tests: usize,
    failures: usize,
    errors: usize,
    seconds: f64,
    /// The earliest case timestamp, as the suite's start.
    timestamp: Option<String>,
    /// (offset, length) of each case in the spool, in arrival order.
    cases: Vec<(u64, u32)>,
}

/// The table entry of the JUnit report (`report/format.rs`).
pub(crate) static FORMAT: FormatEntry = FormatEntry {
    name: "junit",
    aliases: &["xml"],
    label: "JUnit",
    extension: "junit.xml",
    doc: "JUnit XML, for CI systems",
    open: |to: &ReportTarget<'_>| Ok(Box::new(JunitReport::create(to.path)?)),
};

/// The JUnit report sink.
pub struct JunitReport {
    path: PathBuf,
    spool: BufWriter<File>,
    spooled: u64,
    suites: Vec<Suite>,
    buf: Vec<u8>,
}

impl JunitReport {
    /// A report to be written to `path` at [`Sink::finish`].
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(Self {
            path: path.to_path_buf(),
            spool: BufWriter::new(tempfile::tempfile()?),
            spooled: 0,
            suites: Vec::new(),
            buf: Vec::with_capacity(4096),
        })
    }

    fn suite_of(&mut self, r: &EvaluationRecord) -> &mut Suite {
        let at = match self
            .suites
            .iter()
            .position(|s| s.dataset == r.dataset && s.target == r.target)
        {
            Some(at) => at,
            None => {
                self.suites.push(Suite {
                    dataset: r.dataset.clone(),
                    target: r.target.clone(),
                    ..Suite::default()
                });
                self.suites.len() - 1
            }
        };
        &mut self.suites[at]
    }

    fn write_final(&mut self) -> io::Result<()> {
        self.spool.flush()?;
        let mut out = super::sink::output_file_for(&self.path)?;
        {
            let mut spool = self.spool.get_ref().try_clone()?;
            let mut xml = Writer::new_with_indent(BufWriter::new(out.as_file_mut()), b' ', 2);
            xml.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
            let tests: usize = self.suites.iter().map(|s| s.tests).sum();
            let failures: usize = self.suites.iter().map(|s| s.failures).sum();
            let errors: usize = self.suites.iter().map(|s| s.errors).sum();
            let seconds: f64 = self.suites.iter().map(|s| s.seconds).sum();
            let (tests, failures, errors, seconds) = (
                tests.to_string(),
                failures.to_string(),
                errors.to_string(),
                secs(seconds),
            );
            let mut case = Vec::new();
            xml.create_element("testsuites")
                .with_attribute(("name", "agentv"))
                .with_attribute(("tests", tests.as_str()))
                .with_attribute(("failures", failures.as_str()))
                .with_attribute(("errors", errors.as_str()))
                .with_attribute(("time", seconds.as_str()))
                .write_inner_content(|xml| {
                    for (id, suite) in self.suites.iter().enumerate() {
                        write_suite(xml, id, suite, &mut spool, &mut case)?;
                    }
                    Ok(())
                })?;
            xml.get_mut().write_all(b"\n")?;
            xml.into_inner().flush()?;
        }
        crate::paths::persist(out, &self.path)?;
        Ok(())
    }
}

fn write_suite<W: Write>(
    xml: &mut Writer<W>,
    id: usize,
    suite: &Suite,
    spool: &mut File,
    case: &mut Vec<u8>,
) -> io::Result<()> {
    let name = format!("{} ({})", label(&suite.dataset), suite.target);
    let timestamp = suite.timestamp.as_deref().and_then(junit_timestamp).unwrap_or_default();
    let (id, tests, failures, errors, seconds) = (
        id.to_string(),
        suite.tests.to_string(),
        suite.failures.to_string(),
        suite.errors.to_string(),
        secs(suite.seconds),
    );
    let mut element = xml
        .create_element("testsuite")
        .with_attribute(("id", id.as_str()))
        .with_attribute(("name", xml_text(&name).as_str()))
        .with_attribute(("package", xml_text(label(&suite.dataset)).as_str()))
        .with_attribute(("tests", tests.as_str()))
        .with_attribute(("failures", failures.as_str()))
        .with_attribute(("errors", errors.as_str()))
        .with_attribute(("skipped", "0"))
        .with_attribute(("time", seconds.as_str()));
    if !timestamp.is_empty() {
        element = element.with_attribute(("timestamp", timestamp.as_str()));
    }
    element
        .with_attribute(("hostname", "localhost"))
        .write_inner_content(|xml| {
            xml.create_element("properties").write_inner_content(|xml| {
                property(xml, "dataset", &suite.dataset)?;
                property(xml, "target", &suite.target)
            })?;
            for &(offset, len) in &suite.cases {
                case.resize(len as usize, 0);
                spool.seek(SeekFrom::Start(offset))?;
                spool.read_exact(case)?;
                // The spooled case is already well-formed XML: written as is.
                xml.get_mut().write_all(b"\n    ")?;
                xml.get_mut().write_all(case)?;
            }
            Ok(())
        })?;
    Ok(())
}

/// One `<testcase>` element, indented to sit inside its `<testsuite>`.
fn write_case(out: &mut Vec<u8>, r: &EvaluationRecord) -> io::Result<()> {
    let mut flat = Vec::with_capacity(1024);
    write_case_at_top(&mut flat, r)?;
    indent_tags(&flat, out);
    Ok(())
}

/// Moves every tag that starts a line four spaces right. A `<` after a line break and spaces
/// is always a tag the writer indented: in text and attribute values `<` is escaped.
fn indent_tags(flat: &[u8], out: &mut Vec<u8>) {
    let mut at_line_start = false;
    for &b in flat {
        if b == b'\n' {
            at_line_start = true;
            out.push(b);
            continue;
        }
        if at_line_start && b != b' ' {
            if b == b'<' {
                out.extend_from_slice(b"    ");
            }
            at_line_start = false;
        }
        out.push(b);
    }
}

fn write_case_at_top(out: &mut Vec<u8>, r: &EvaluationRecord) -> io::Result<()> {
    let mut xml = Writer::new_with_indent(out, b' ', 2);
    let classname = format!("{}.{}", label(&r.dataset), r.target);
    let time = secs(duration_secs(r));
    let (score, verdict) = (format!("{:.3}", r.score), r.verdict.as_str());
    xml.create_element("testcase")
        .with_attribute(("classname", xml_text(&classname).as_str()))
        .with_attribute(("name", xml_text(&r.eval_id).as_str()))
        .with_attribute(("time", time.as_str()))
        .write_inner_content(|xml| {
            xml.create_element("properties").write_inner_content(|xml| {
                property(xml, "score", &score)?;
                property(xml, "verdict", verdict)?;
                property(xml, "execution_status", r.execution_status.as_str())?;
                property(xml, "attempt", &r.attempt.to_string())
            })?;
            match r.execution_status {
                ExecutionStatus::ExecutionError | ExecutionStatus::GraderError | ExecutionStatus::Invalid => {
                    // The first line: the body holds the rest (an invalid case's help, a traceback).
                    let first = first_problem(r).and_then(|p| p.lines().next()).unwrap_or("error");
                    let message = shorten(&escape_line(first), MESSAGE_WIDTH);
                    xml.create_element("error")
                        .with_attribute(("message", xml_text(&message).as_str()))
                        .with_attribute(("type", r.execution_status.as_str()))
                        .write_text_content(BytesText::new(&xml_text(&error_body(r))))?;
                }
                ExecutionStatus::Ok if r.verdict == Verdict::Fail => {
                    let first = counted_misses(r).next().map_or(String::new(), |m| format!(": {m}"));
                    let message = shorten(
                        &escape_line(&format!("score {:.3} (fail){first}", r.score)),
                        MESSAGE_WIDTH,
                    );
                    xml.create_element("failure")
                        .with_attribute(("message", xml_text(&message).as_str()))
                        .with_attribute(("type", "fail"))
                        .write_text_content(BytesText::new(&xml_text(&failure_body(r))))?;
                }
                ExecutionStatus::Ok => {}
            }
            let answer = xml_text(&r.candidate_answer);
            if !answer.is_empty() {
                xml.create_element("system-out")
                    .write_text_content(BytesText::new(&answer))?;
            }
            Ok(())
        })?;
    Ok(())
}

fn property<W: Write>(xml: &mut Writer<W>, name: &str, value: &str) -> io::Result<()> {
    xml.create_element("property")
        .with_attribute(("name", name))
        .with_attribute(("value", xml_text(value).as_str()))
        .write_empty()?;
    Ok(())
}

/// Misses, then each evaluator's score and reasoning.
fn failure_body(r: &EvaluationRecord) -> String {
    let mut body = String::new();
    for m in &r.misses {
        body.push_str(&format!("✘ {m}\n"));
    }
    for h in &r.hits {
        body.push_str(&format!("✔ {h}\n"));
    }
    for g in &r.evaluator_results {
        body.push_str(&format!(
            "\n{} ({}): {:.3} {}",
            g.name,
            g.kind,
            g.score,
            g.verdict.as_str()
        ));
        if let Some(reasoning) = &g.reasoning {
            body.push_str(&format!("\n  {reasoning}"));
        }
        body.push('\n');
    }
    body
}

fn error_body(r: &EvaluationRecord) -> String {
    let mut body = String::new();
    if let Some(e) = &r.error {
        body.push_str(e);
        body.push('\n');
    }
    for g in &r.evaluator_results {
        if let Some(e) = &g.error {
            body.push_str(&format!("evaluator '{}': {e}\n", g.name));
        }
    }
    body
}

fn duration_secs(r: &EvaluationRecord) -> f64 {
    r.execution_metrics
        .as_ref()
        .and_then(|m| m.duration_ms)
        .filter(|d| d.is_finite() && *d >= 0.0)
        .map_or(0.0, |ms| ms / 1000.0)
}

fn secs(s: f64) -> String {
    format!("{s:.3}")
}

fn label(dataset: &str) -> &str {
    if dataset.is_empty() { "agentv" } else { dataset }
}

/// `2025-01-02T03:04:05` (the JUnit schema's timestamp has no zone) from an RFC 3339 time, in
/// UTC.
fn junit_timestamp(rfc3339: &str) -> Option<String> {
    let t: jiff::Timestamp = rfc3339.parse().ok()?;
    Some(t.strftime("%Y-%m-%dT%H:%M:%S").to_string())
}

/// `text` with the characters XML 1.0 cannot hold at all (even escaped: C0 controls other than
/// tab, newline and carriage return, and U+FFFE/U+FFFF) written as `\u{1b}`.
pub fn xml_text(text: &str) -> String {
    let bad = |c: char| (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{fffe}' | '\u{ffff}');
    if !text.chars().any(bad) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

impl Sink for JunitReport {
    fn write(&mut self, row: &Row<'_>) -> io::Result<()> {
        let r = row.record();
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let written = write_case(&mut buf, r);
        let result = written.and_then(|()| {
            let len = u32::try_from(buf.len()).map_err(|_| io::Error::other("a test case over 4 GiB"))?;
            self.spool.write_all(&buf)?;
            let offset = self.spooled;
            self.spooled += u64::from(len);
            let suite = self.suite_of(r);
            suite.tests += 1;
            match r.execution_status {
                ExecutionStatus::Ok if r.verdict == Verdict::Fail => suite.failures += 1,
                ExecutionStatus::Ok => {}
                _ => suite.errors += 1,
            }
            suite.seconds += duration_secs(r);
            if suite.timestamp.as_deref().is_none_or(|t| r.timestamp.as_str() < t) && !r.timestamp.is_empty() {
                suite.timestamp = Some(r.timestamp.clone());
            }
            suite.cases.push((offset, len));
            Ok(())
        });
        self.buf = buf;
        result
    }

    fn finish(&mut self) -> io::Result<()> {
        self.write_final()
    }

    fn describe(&self) -> String {
        format!("JUnit report {}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_xml_cannot_hold_are_written_as_escapes() {
        assert_eq!(xml_text("a\u{1b}[31m\u{0}b\tc\n"), "a\\u{1b}[31m\\u{0}b\tc\n");
        assert_eq!(xml_text("plain <&>"), "plain <&>");
        assert_eq!(xml_text("\u{ffff}"), "\\u{ffff}");
    }

    #[test]
    fn only_tags_that_start_a_line_are_indented() {
        let mut out = Vec::new();
        indent_tags(b"<a>\n  <b>text\n  &lt;not a tag\n</b>\n</a>", &mut out);
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "<a>\n      <b>text\n  &lt;not a tag\n    </b>\n    </a>"
        );
    }

    #[test]
    fn junit_timestamps_have_no_zone() {
        assert_eq!(
            junit_timestamp("2025-03-04T05:06:07.891Z").as_deref(),
            Some("2025-03-04T05:06:07")
        );
        assert_eq!(junit_timestamp("yesterday"), None);
    }
}
