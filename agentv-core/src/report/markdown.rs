//! A Markdown summary of a run, fit for `$GITHUB_STEP_SUMMARY` or a pull-request comment:
//! totals, pass rate, mean, errors, a table of the worst failures with their first miss, and
//! their details folded in `<details>`.
//!
//! Bounded whatever the run's size (GitHub refuses step summaries over 1 MiB): only the
//! [`LISTED`] worst failures and errors are kept while records stream by.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::format::{FormatEntry, ReportTarget};
use super::sink::{Row, Sink};
use super::tally::{Tallies, Tally, counted_misses, first_problem, shorten};
use super::terminal::escape_line;
use crate::model::{EvaluationRecord, ExecutionStatus, Verdict};
use crate::redact::Secrets;

/// Failures (and errors) listed; the rest are counted.
pub const LISTED: usize = 50;
/// Misses shown per failure in its details.
const MISSES_SHOWN: usize = 10;
/// Longest text of one cell or bullet, in characters.
const TEXT_WIDTH: usize = 300;

/// What the report keeps of a failed or errored case.
#[derive(Debug, Clone)]
struct Listed {
    eval_id: String,
    target: String,
    score: f64,
    status: ExecutionStatus,
    first: String,
    misses: Vec<String>,
    more_misses: usize,
    grader_errors: Vec<String>,
}

impl Listed {
    fn new(r: &EvaluationRecord) -> Self {
        Self {
            eval_id: r.eval_id.clone(),
            target: r.target.clone(),
            score: r.score,
            status: r.execution_status,
            first: shorten(first_problem(r).unwrap_or(""), TEXT_WIDTH),
            misses: counted_misses(r)
                .take(MISSES_SHOWN)
                .map(|m| shorten(m, TEXT_WIDTH))
                .collect(),
            more_misses: counted_misses(r).count().saturating_sub(MISSES_SHOWN),
            grader_errors: r
                .evaluator_results
                .iter()
                .filter_map(|g| {
                    g.error
                        .as_ref()
                        .map(|e| shorten(&format!("{}: {e}", g.name), TEXT_WIDTH))
                })
                .collect(),
        }
    }
}

/// The table entry of the Markdown report (`report/format.rs`).
pub(crate) static FORMAT: FormatEntry = FormatEntry {
    name: "markdown",
    aliases: &["md"],
    label: "Markdown",
    extension: "md",
    doc: "Markdown, for a pull-request comment",
    open: |to: &ReportTarget<'_>| Ok(Box::new(MarkdownReport::new(to.path, to.title, to.secrets.clone()))),
};

/// The Markdown report, written whole at [`Sink::finish`] (it is small: see [`LISTED`]).
pub struct MarkdownReport {
    path: PathBuf,
    title: String,
    secrets: Secrets,
    tallies: Tallies,
    /// The worst failures by score, worst first.
    failures: Vec<Listed>,
    errors: Vec<Listed>,
}

impl MarkdownReport {
    /// A report to be written to `path`, headed `title`.
    pub fn new(path: &Path, title: &str, secrets: Secrets) -> Self {
        Self {
            path: path.to_path_buf(),
            title: title.to_owned(),
            secrets,
            tallies: Tallies::default(),
            failures: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// The document as it stands.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let t = &self.tallies.total;
        let _ = writeln!(out, "## {}\n", md(&self.title));
        let verdict = if t.errors() > 0 {
            "⚠️ incomplete"
        } else if t.fail > 0 {
            "❌ failures"
        } else {
            "✅ all passed"
        };
        let _ = writeln!(
            out,
            "**{verdict}** · {} case(s) · pass rate {} · mean score {} · {} error(s)\n",
            t.cases,
            percent(t.pass_rate()),
            fixed(t.mean()),
            t.errors()
        );
        let _ = writeln!(
            out,
            "| target | cases | graded | pass | borderline | fail | pass rate | mean | execution errors | grader errors | invalid | cost |"
        );
        let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
        for (target, tally) in &self.tallies.by_target {
            row(&mut out, &md(target), tally);
        }
        if self.tallies.by_target.len() > 1 {
            row(&mut out, "**all**", t);
        }
        self.render_failures(&mut out);
        self.render_errors(&mut out);
        out
    }

    fn render_failures(&self, out: &mut String) {
        let failed = self.tallies.total.fail;
        if failed == 0 {
            return;
        }
        let _ = writeln!(out, "\n### Failures ({failed})\n");
        if failed > self.failures.len() {
            let _ = writeln!(
                out,
                "The {} lowest scores; the results file has them all.\n",
                self.failures.len()
            );
        }
        let _ = writeln!(out, "| case | target | score | first miss |");
        let _ = writeln!(out, "|---|---|--:|---|");
        for f in &self.failures {
            let _ = writeln!(
                out,
                "| {} | {} | {:.3} | {} |",
                md(&f.eval_id),
                md(&f.target),
                f.score,
                md(&f.first)
            );
        }
        let _ = writeln!(out, "\n<details><summary>Misses of each failure</summary>\n");
        for f in &self.failures {
            let _ = writeln!(out, "#### {} · {} · {:.3}\n", md(&f.eval_id), md(&f.target), f.score);
            for m in &f.misses {
                let _ = writeln!(out, "- {}", md(m));
            }
            if f.more_misses > 0 {
                let _ = writeln!(out, "- … and {} more", f.more_misses);
            }
            if f.misses.is_empty() {
                let _ = writeln!(out, "- (no misses recorded)");
            }
            out.push('\n');
        }
        let _ = writeln!(out, "</details>");
    }

    fn render_errors(&self, out: &mut String) {
        let t = &self.tallies.total;
        if t.errors() == 0 {
            return;
        }
        let _ = writeln!(
            out,
            "\n### Errors ({}: {} execution, {} grader, {} invalid)\n",
            t.errors(),
            t.execution_errors,
            t.grader_errors,
            t.invalid
        );
        let _ = writeln!(out, "| case | target | kind | error |");
        let _ = writeln!(out, "|---|---|---|---|");
        for e in &self.errors {
            let kind = match e.status {
                ExecutionStatus::GraderError => "grader",
                ExecutionStatus::Invalid => "invalid",
                _ => "execution",
            };
            let message = e.grader_errors.first().unwrap_or(&e.first);
            let _ = writeln!(
                out,
                "| {} | {} | {kind} | {} |",
                md(&e.eval_id),
                md(&e.target),
                md(message)
            );
        }
        if t.errors() > self.errors.len() {
            let _ = writeln!(
                out,
                "\n… and {} more in the results file.",
                t.errors() - self.errors.len()
            );
        }
    }
}

fn row(out: &mut String, name: &str, t: &Tally) {
    let _ = writeln!(
        out,
        "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        t.cases,
        t.graded,
        t.pass,
        t.borderline,
        t.fail,
        percent(t.pass_rate()),
        fixed(t.mean()),
        t.execution_errors,
        t.grader_errors,
        t.invalid,
        t.cost_text()
    );
}

fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{:.1} %", v * 100.0))
}

fn fixed(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.3}"))
}

impl Sink for MarkdownReport {
    fn write(&mut self, row: &Row<'_>) -> io::Result<()> {
        let r = row.record();
        self.tallies.add(r);
        match r.execution_status {
            ExecutionStatus::Ok if r.verdict == Verdict::Fail => {
                // Keep the LISTED lowest scores, earlier cases first among equals.
                let at = self.failures.partition_point(|f| f.score <= r.score);
                if at < LISTED {
                    self.failures.insert(at, Listed::new(r));
                    self.failures.truncate(LISTED);
                }
            }
            ExecutionStatus::Ok => {}
            _ if self.errors.len() < LISTED => self.errors.push(Listed::new(r)),
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        let text = self.render();
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let mut file = std::fs::File::create(&self.path)?;
        file.write_all(self.secrets.redact(&text).as_bytes())
    }

    fn describe(&self) -> String {
        format!("Markdown report {}", self.path.display())
    }
}

/// `text` as literal Markdown inline text on one line: control characters escaped as in the
/// terminal (`\n`), then every ASCII punctuation character that Markdown or HTML could read as
/// syntax backslash-escaped (CommonMark renders `\<` as `<`), so an answer holding `|`, `<script>`,
/// `**` or `[x](y)` shows as written and cannot break the table or inject HTML.
pub fn md(text: &str) -> String {
    let line = escape_line(text);
    let mut out = String::with_capacity(line.len() + 8);
    for c in line.chars() {
        if c.is_ascii_punctuation()
            && !matches!(
                c,
                '.' | ',' | ':' | ';' | '?' | '/' | '\'' | '"' | '%' | '@' | '$' | '='
            )
        {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, score: f64, status: &str, misses: &[&str]) -> EvaluationRecord {
        serde_json::from_value(serde_json::json!({
            "timestamp": "t", "eval_id": id, "dataset": "d", "target": "m", "attempt": 1,
            "execution_status": status, "score": score, "verdict": Verdict::from_score(score),
            "hits": [], "misses": misses, "candidate_answer": "",
            "evaluator_results": [], "error": (status == "execution_error").then_some("down")
        }))
        .expect("record")
    }

    #[test]
    fn markdown_escapes_syntax_and_html() {
        assert_eq!(md("a|b"), r"a\|b");
        assert_eq!(md("<script>x</script>"), r"\<script\>x\</script\>");
        assert_eq!(md("**bold** [l](u) `c`"), r"\*\*bold\*\* \[l\]\(u\) \`c\`");
        assert_eq!(md("two\nlines"), r"two\\nlines");
        assert_eq!(md("&amp; é"), r"\&amp; é");
    }

    #[test]
    fn the_summary_lists_the_worst_failures_and_the_errors() {
        let mut report = MarkdownReport::new(Path::new("r.md"), "agentv results", Secrets::default());
        for (id, score) in [("ok", 1.0), ("bad", 0.2), ("worse", 0.1), ("meh", 0.5)] {
            report
                .write(&Row::redact(
                    &record(id, score, "ok", &["missed | pipe"]),
                    &Secrets::default(),
                ))
                .expect("write");
        }
        report
            .write(&Row::redact(
                &record("down", 0.0, "execution_error", &[]),
                &Secrets::default(),
            ))
            .expect("write");
        let text = report.render();
        assert!(
            text.contains("**⚠️ incomplete** · 5 case(s) · pass rate 25.0 % · mean score 0.450 · 1 error(s)"),
            "{text}"
        );
        let worse = text
            .find("| worse | m | 0.100 | missed \\| pipe |")
            .expect("worst listed");
        let bad = text.find("| bad | m | 0.200 |").expect("listed");
        assert!(worse < bad, "worst first:\n{text}");
        assert!(text.contains("| down | m | execution | down |"), "{text}");
        assert!(text.contains("<details><summary>"), "{text}");
        assert!(!text.contains("| ok |"), "passing cases are not listed: {text}");
    }

    #[test]
    fn the_failure_list_stays_bounded() {
        let mut report = MarkdownReport::new(Path::new("r.md"), "t", Secrets::default());
        for i in 0..(LISTED + 30) {
            report
                .write(&Row::redact(
                    &record(&format!("c{i}"), 0.3, "ok", &["m"]),
                    &Secrets::default(),
                ))
                .expect("write");
        }
        assert_eq!(report.failures.len(), LISTED);
        assert_eq!(
            report.failures[0].eval_id, "c0",
            "earlier cases first among equal scores"
        );
        assert!(report.render().contains(&format!("The {LISTED} lowest scores")));
    }
}
