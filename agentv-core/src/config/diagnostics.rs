//! Problems found while reading files, each with the file, line and column, and a hint.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use annotate_snippets::renderer::{DEFAULT_ERROR_STYLE, DEFAULT_HELP_STYLE, DEFAULT_WARNING_STYLE};
use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

use super::node::{Node, NodeValue, Pos, YamlError};

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The thing it is about (file, case, evaluator) cannot be used.
    Error,
    /// Used anyway; the user probably meant something else.
    Warning,
}

/// One problem in one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub file: PathBuf,
    pub pos: Pos,
    pub message: String,
    /// What would fix it.
    pub help: Option<String>,
    /// The text of the line `pos` is on, when the file's text is known (for [`Diagnostic::render`]).
    pub source_line: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = self.severity.as_str();
        write!(f, "{}", self.file.display())?;
        if self.pos.line > 0 {
            write!(f, ":{}:{}", self.pos.line, self.pos.column)?;
        }
        write!(f, ": {level}: {}", self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
        }
    }
}

impl Diagnostic {
    /// The diagnostic as rustc shows one: the `file:line:col: level: message` line and the help
    /// (exactly the [`Display`](fmt::Display) text, so greps keep working), then the source line
    /// with a caret under the column. `color` adds ANSI styles; the caller decides whether the
    /// terminal wants them.
    pub fn render(&self, color: bool) -> String {
        let mut out = String::new();
        let level_style = match self.severity {
            Severity::Error => DEFAULT_ERROR_STYLE,
            Severity::Warning => DEFAULT_WARNING_STYLE,
        };
        out.push_str(&self.file.display().to_string());
        if self.pos.line > 0 {
            out.push_str(&format!(":{}:{}", self.pos.line, self.pos.column));
        }
        out.push_str(": ");
        out.push_str(&styled(self.severity.as_str(), level_style, color));
        out.push_str(&format!(": {}", self.message));
        if let Some(help) = &self.help {
            out.push_str(&format!("\n  {}: {help}", styled("help", DEFAULT_HELP_STYLE, color)));
        }
        if let Some(snippet) = self.snippet(color) {
            out.push('\n');
            out.push_str(&snippet);
        }
        out
    }

    /// The source line with a caret under the column, when both are known.
    fn snippet(&self, color: bool) -> Option<String> {
        let line = self.source_line.as_deref()?;
        if self.pos.line == 0 || self.pos.column == 0 {
            return None;
        }
        let span = token_span(line, self.pos.column as usize)?;
        let level = match self.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
        };
        let group = Group::with_level(level).element(
            Snippet::source(line)
                .line_start(self.pos.line as usize)
                .annotation(AnnotationKind::Primary.span(span)),
        );
        let renderer = if color { Renderer::styled() } else { Renderer::plain() };
        Some(renderer.render(&[group]))
    }
}

fn styled(text: &str, style: annotate_snippets::renderer::Style, color: bool) -> String {
    if color {
        format!("{}{text}{}", style.render(), style.render_reset())
    } else {
        text.to_owned()
    }
}

/// The bytes to underline in `line` for a problem at character `column` (1-based): the word or
/// value starting there, else the one character. `None` past the end of the line.
fn token_span(line: &str, column: usize) -> Option<std::ops::Range<usize>> {
    let mut chars = line.char_indices().skip(column.saturating_sub(1));
    let (start, first) = chars.next()?;
    let stops = |c: char| c.is_whitespace() || matches!(c, ',' | ':' | '}' | ']' | '#');
    if stops(first) || matches!(first, '{' | '[') {
        return Some(start..start + first.len_utf8());
    }
    let end = chars.find(|(_, c)| stops(*c)).map_or(line.len(), |(i, _)| i);
    Some(start..end)
}

/// The text of a file, indexed by line, so diagnostics can quote the line they point at.
#[derive(Debug, Clone)]
struct SourceText {
    text: Arc<str>,
    /// Byte offset of each line's start.
    starts: Vec<usize>,
    /// The line number of the text's first line (a JSONL line is quoted alone).
    first_line: u64,
}

impl SourceText {
    fn new(text: Arc<str>, first_line: u64) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self {
            text,
            starts,
            first_line,
        }
    }

    fn line(&self, line: u64) -> Option<String> {
        let index = usize::try_from(line.checked_sub(self.first_line)?).ok()?;
        let start = *self.starts.get(index)?;
        let end = self.starts.get(index + 1).map_or(self.text.len(), |next| next - 1);
        let text = self.text.get(start..end)?;
        Some(printable(text.strip_suffix('\r').unwrap_or(text).to_owned()))
    }
}

/// Collects the problems of one file.
#[derive(Debug, Clone)]
pub struct Diagnostics {
    file: PathBuf,
    items: Vec<Diagnostic>,
    /// Errors among `items`, kept as they are added so [`Diagnostics::error_count`] is O(1):
    /// loaders call it around every case, and a count that scanned every problem made a file
    /// with one problem per line quadratic.
    errors: usize,
    source: Option<SourceText>,
}

impl Diagnostics {
    pub fn new(file: &Path) -> Self {
        Self {
            file: file.to_path_buf(),
            items: Vec::new(),
            errors: 0,
            source: None,
        }
    }

    /// Quotes lines of `text` (the whole file) in the problems found from now on.
    pub fn set_source(&mut self, text: impl Into<Arc<str>>) {
        self.source = Some(SourceText::new(text.into(), 1));
    }

    /// The file's text, when [`Diagnostics::set_source`] gave it (to quote it elsewhere).
    pub fn source(&self) -> Option<Arc<str>> {
        self.source
            .as_ref()
            .filter(|s| s.first_line == 1)
            .map(|s| s.text.clone())
    }

    /// Quotes `text` as line `line` of the file (a JSONL line read on its own).
    pub fn set_source_line(&mut self, line: u64, text: &str) {
        self.source = Some(SourceText::new(Arc::from(text), line));
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    pub fn error(&mut self, pos: Pos, message: impl Into<String>, help: Option<String>) {
        self.push(Severity::Error, pos, message.into(), help);
    }

    pub fn warn(&mut self, pos: Pos, message: impl Into<String>, help: Option<String>) {
        self.push(Severity::Warning, pos, message.into(), help);
    }

    fn push(&mut self, severity: Severity, pos: Pos, message: String, help: Option<String>) {
        let source_line = self.source.as_ref().and_then(|s| s.line(pos.line));
        if severity == Severity::Error {
            self.errors += 1;
        }
        self.items.push(Diagnostic {
            severity,
            file: self.file.clone(),
            pos,
            message: printable(message),
            help: help.map(printable),
            source_line,
        });
    }

    /// Number of errors so far (a checkpoint: compare before and after validating a case).
    pub fn error_count(&self) -> usize {
        self.errors
    }

    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items
    }

    /// Number of problems so far, errors and warnings (a checkpoint for
    /// [`Diagnostics::annotate_errors_since`]).
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The problems reported since checkpoint `mark` (a [`Diagnostics::len`]).
    pub fn since(&self, mark: usize) -> &[Diagnostic] {
        self.items.get(mark..).unwrap_or(&[])
    }

    /// Appends `suffix` to the errors reported since checkpoint `mark`: they say what they mean
    /// for the part of the file they are in. True when there were any.
    pub fn annotate_errors_since(&mut self, mark: usize, suffix: &str) -> bool {
        let mut any = false;
        for d in self.items.iter_mut().skip(mark) {
            if d.severity == Severity::Error {
                d.message.push_str(suffix);
                any = true;
            }
        }
        any
    }

    /// Takes in the problems of another file read on this one's behalf (an included template,
    /// a cases file); they keep their own file name, and count in [`Diagnostics::error_count`].
    pub fn absorb(&mut self, other: Diagnostics) {
        self.errors += other.errors;
        self.items.extend(other.items);
    }

    /// Records why a YAML text could not be read (see [`super::node::parse_yaml`]).
    pub fn yaml_syntax(&mut self, errors: &[YamlError]) {
        for e in errors {
            self.error(e.pos, format!("invalid YAML: {}", e.message), e.help.clone());
        }
    }
}

/// Turns every warning of `items` into an error (`--strict`, or a suite's `strict: true`:
/// `docs/architecture.md#unknown-keys`). Returns how many there were.
pub fn promote_warnings(items: &mut [Diagnostic]) -> usize {
    let mut promoted = 0;
    for d in items.iter_mut().filter(|d| d.severity == Severity::Warning) {
        d.severity = Severity::Error;
        d.message.push_str(" (an error under --strict)");
        promoted += 1;
    }
    promoted
}

/// `text` with control characters escaped (`\t`, `\u{1b}`): messages quote keys and values
/// from files, and a raw escape sequence or line break from a file must not reach the terminal.
fn printable(text: String) -> String {
    if !text.chars().any(char::is_control) {
        return text;
    }
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_debug().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// The known key `key` most likely misspells: within an edit distance of about a third of its
/// length (`wieght` → `weight`, `timeout_secs` → `timeout_seconds`), ignoring case and the
/// difference between `_`, `-` and camelCase.
pub fn did_you_mean<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let norm = |s: &str| -> String {
        s.chars()
            .filter(|c| !matches!(c, '_' | '-'))
            .flat_map(char::to_lowercase)
            .collect()
    };
    let typed = norm(key);
    if typed.is_empty() {
        return None;
    }
    known
        .iter()
        // A key is never its own suggestion: a declared key left unread is not a typo.
        .filter(|k| **k != key)
        .map(|k| (k, strsim::damerau_levenshtein(&typed, &norm(k))))
        .filter(|(k, d)| *d <= (norm(k).chars().count() / 3).max(1))
        .min_by_key(|(_, d)| *d)
        .map(|(k, _)| *k)
}

/// A node's value for messages: short scalars verbatim, otherwise its type.
pub fn describe(node: &Node) -> String {
    match &node.value {
        NodeValue::Float(f) if f.is_nan() => "not a number (.nan)".to_owned(),
        NodeValue::Float(f) if !f.is_finite() => "a number out of range".to_owned(),
        NodeValue::Str(s) if s.len() <= 40 => format!("\"{s}\""),
        NodeValue::Int(_) | NodeValue::Float(_) | NodeValue::Bool(_) => node.to_json().to_string(),
        _ => node.type_name().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error count is kept, not recounted: it must agree with the items through every
    /// operation that changes them.
    #[test]
    fn error_count_is_kept_in_step_without_scanning() {
        let mut d = Diagnostics::new(Path::new("a.jsonl"));
        let scan = |d: &Diagnostics| d.items.iter().filter(|i| i.severity == Severity::Error).count();
        for i in 0..10_000u64 {
            if i % 3 == 0 {
                d.error(Pos::new(i + 1, 1), "bad line", None);
            } else {
                d.warn(Pos::new(i + 1, 1), "odd line", None);
            }
        }
        assert_eq!(d.error_count(), 3334);
        assert_eq!(d.error_count(), scan(&d));
        let mark = d.len() - 9;
        assert!(d.annotate_errors_since(mark, " (case invalid)"));
        assert_eq!(d.error_count(), 3334);
        let mut other = Diagnostics::new(Path::new("b.yaml"));
        other.error(Pos::new(1, 1), "x", None);
        d.absorb(other);
        assert_eq!(d.error_count(), scan(&d));
    }

    #[test]
    fn display_has_file_line_column_and_help() {
        let mut d = Diagnostics::new(Path::new("evals/a.yaml"));
        d.error(Pos::new(3, 5), "bad thing", Some("do this".into()));
        let text = d.into_vec()[0].to_string();
        assert_eq!(text, "evals/a.yaml:3:5: error: bad thing\n  help: do this");
    }

    #[test]
    fn control_characters_in_messages_are_escaped() {
        let mut d = Diagnostics::new(Path::new("f.yaml"));
        d.warn(Pos::new(1, 1), "unknown key `a\u{1b}[31m\tb`", Some("x\ny".into()));
        let all = d.into_vec();
        assert_eq!(all[0].message, "unknown key `a\\u{1b}[31m\\tb`");
        assert_eq!(all[0].help.as_deref(), Some("x\\ny"));
    }

    #[test]
    fn unknown_keys_suggest_the_known_key_they_misspell() {
        let known = ["weight", "timeout_seconds", "expected_outcome", "name", "cwd"];
        let cases = [
            ("wieght", Some("weight")),
            ("timeout_secs", Some("timeout_seconds")),
            ("timeoutSeconds", Some("timeout_seconds")),
            ("expected_outcom", Some("expected_outcome")),
            ("Name", Some("name")),
            ("weight", None),
            ("cwd", None),
            ("threshold", None),
            ("config", None),
            ("", None),
        ];
        for (typed, want) in cases {
            assert_eq!(did_you_mean(typed, &known), want, "{typed}");
        }
    }

    #[test]
    fn render_quotes_the_line_with_a_caret_under_the_column() {
        let mut d = Diagnostics::new(Path::new("e.yaml"));
        d.set_source("evalcases:\r\n  - {id: a, wieght: 2}\r\n");
        d.warn(
            Pos::new(2, 13),
            "unknown key `wieght`",
            Some("did you mean `weight`?".into()),
        );
        d.error(Pos::new(9, 1), "past the end", None);
        let all = d.into_vec();
        assert_eq!(
            all[0].render(false),
            "e.yaml:2:13: warning: unknown key `wieght`\n  help: did you mean `weight`?\n  |\n2 |   - {id: a, wieght: 2}\n  |             ^^^^^^"
        );
        assert!(
            all[0].render(false).starts_with(&all[0].to_string()),
            "the first lines are the Display text"
        );
        assert_eq!(all[1].render(false), all[1].to_string(), "no line, no snippet");
        let colored = all[0].render(true);
        assert!(colored.contains("\u{1b}["), "{colored:?}");
        assert!(colored.starts_with("e.yaml:2:13: "), "{colored:?}");
    }

    #[test]
    fn a_jsonl_line_is_quoted_by_its_own_number() {
        let mut d = Diagnostics::new(Path::new("d.jsonl"));
        d.set_source_line(7, "{\"id\": 1,}");
        d.error(Pos::new(7, 10), "invalid JSON", None);
        let text = d.into_vec()[0].render(false);
        assert!(text.ends_with("7 | {\"id\": 1,}\n  |          ^"), "{text}");
    }
}
