//! Problems found while loading files, each with the file, line and column, and a hint.

use std::fmt;
use std::path::{Path, PathBuf};

use std::ops::RangeInclusive;
use std::time::Duration;

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
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
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

/// Collects the problems of one file.
#[derive(Debug, Clone)]
pub struct Diagnostics {
    file: PathBuf,
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn new(file: &Path) -> Self {
        Self {
            file: file.to_path_buf(),
            items: Vec::new(),
        }
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
        self.items.push(Diagnostic {
            severity,
            file: self.file.clone(),
            pos,
            message: printable(message),
            help: help.map(printable),
        });
    }

    /// Number of errors so far (a checkpoint: compare before and after validating a case).
    pub fn error_count(&self) -> usize {
        self.items.iter().filter(|d| d.severity == Severity::Error).count()
    }

    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items
    }

    /// Records why a YAML text could not be read (see [`super::node::parse_yaml`]).
    pub fn yaml_syntax(&mut self, errors: &[YamlError]) {
        for e in errors {
            self.error(e.pos, format!("invalid YAML: {}", e.message), e.help.clone());
        }
    }
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

/// Reads the keys of one mapping node, remembering which were used so the rest can be reported
/// as unknown (D3: typos are warnings, with their position).
pub struct Fields<'a> {
    entries: &'a [(Node, Node)],
    used: Vec<bool>,
    pub pos: Pos,
}

impl<'a> Fields<'a> {
    /// Starts reading `node`; `None` (after reporting an error) when it is not a mapping.
    pub fn of(node: &'a Node, what: &str, diags: &mut Diagnostics) -> Option<Self> {
        match &node.value {
            NodeValue::Map(entries) => Some(Self {
                entries,
                used: vec![false; entries.len()],
                pos: node.pos,
            }),
            _ => {
                diags.error(
                    node.pos,
                    format!("{what} must be a mapping, found {}", node.type_name()),
                    Some("write it as `key: value` lines".to_owned()),
                );
                None
            }
        }
    }

    /// The value of the first of `names` present (names are aliases, canonical first).
    pub fn take(&mut self, names: &[&str]) -> Option<&'a Node> {
        for name in names {
            if let Some(i) = self.entries.iter().position(|(k, _)| k.as_str() == Some(name)) {
                for (j, (k, _)) in self.entries.iter().enumerate() {
                    if names.contains(&k.as_str().unwrap_or_default()) {
                        self.used[j] = true;
                    }
                }
                return Some(&self.entries[i].1);
            }
        }
        None
    }

    /// A string field; reports an error if present with another type.
    pub fn string(&mut self, names: &[&str], diags: &mut Diagnostics) -> Option<String> {
        let node = self.take(names)?;
        match &node.value {
            NodeValue::Str(s) => Some(s.clone()),
            NodeValue::Float(f) if !f.is_finite() => {
                diags.error(
                    node.pos,
                    format!("`{}` must be a string, found a number out of range", names[0]),
                    Some("quote the value to keep it as text".to_owned()),
                );
                None
            }
            NodeValue::Int(_) | NodeValue::Float(_) | NodeValue::Bool(_) => Some(node.to_json().to_string()),
            NodeValue::Null => None,
            _ => {
                diags.error(
                    node.pos,
                    format!("`{}` must be a string, found {}", names[0], node.type_name()),
                    None,
                );
                None
            }
        }
    }

    /// A required non-empty string; reports an error naming the field when missing.
    pub fn required_string(&mut self, names: &[&str], what: &str, diags: &mut Diagnostics) -> Option<String> {
        let Some(node) = self.take(names).filter(|n| !n.is_null()) else {
            diags.error(
                self.pos,
                format!("{what} is missing the required key `{}`", names[0]),
                Some(format!("add `{}: ...` to it", names[0])),
            );
            return None;
        };
        let text = self.string(names, diags)?;
        if text.trim().is_empty() {
            diags.error(node.pos, format!("{what} has an empty `{}`", names[0]), None);
            return None;
        }
        Some(text)
    }

    /// A non-negative number field.
    pub fn non_negative(&mut self, names: &[&str], diags: &mut Diagnostics) -> Option<f64> {
        let node = self.take(names)?;
        match node.as_f64() {
            Some(v) if v.is_finite() && v >= 0.0 => Some(v),
            _ => {
                diags.error(
                    node.pos,
                    format!("`{}` must be a number ≥ 0, found {}", names[0], describe(node)),
                    None,
                );
                None
            }
        }
    }

    /// A duration written in seconds (`timeout_seconds: 30`), which must lie in `range`.
    ///
    /// Every duration read from a file goes through here or [`Fields::duration_ms`]: a value out
    /// of range (`1e20`, `-1`, `.inf`, `"soon"`) is an error at its position that states the
    /// accepted range, never a panic in `Duration::from_secs_f64`.
    pub fn duration_secs(
        &mut self,
        names: &[&str],
        range: RangeInclusive<Duration>,
        diags: &mut Diagnostics,
    ) -> Option<Duration> {
        self.duration(names, range, TimeUnit::Seconds, diags)
    }

    /// A duration written in milliseconds (`delay_ms: 250`), which must lie in `range`.
    pub fn duration_ms(
        &mut self,
        names: &[&str],
        range: RangeInclusive<Duration>,
        diags: &mut Diagnostics,
    ) -> Option<Duration> {
        self.duration(names, range, TimeUnit::Millis, diags)
    }

    fn duration(
        &mut self,
        names: &[&str],
        range: RangeInclusive<Duration>,
        unit: TimeUnit,
        diags: &mut Diagnostics,
    ) -> Option<Duration> {
        let node = self.take(names)?;
        let parsed = duration_in(node, unit).filter(|d| range.contains(d));
        if parsed.is_none() {
            diags.error(
                node.pos,
                format!(
                    "`{}` must be a number of {} from {} to {}, found {}",
                    names[0],
                    unit.name(),
                    unit.show(*range.start()),
                    unit.show(*range.end()),
                    describe(node)
                ),
                Some("write a plain number, without a unit".to_owned()),
            );
        }
        parsed
    }

    /// A boolean field.
    pub fn boolean(&mut self, names: &[&str], diags: &mut Diagnostics) -> Option<bool> {
        let node = self.take(names)?;
        match node.as_bool() {
            Some(b) => Some(b),
            None => {
                diags.error(
                    node.pos,
                    format!("`{}` must be true or false, found {}", names[0], describe(node)),
                    None,
                );
                None
            }
        }
    }

    /// The entries not read yet, in file order.
    pub fn rest(&self) -> impl Iterator<Item = &'a (Node, Node)> + '_ {
        self.entries
            .iter()
            .zip(&self.used)
            .filter(|(_, used)| !**used)
            .map(|(e, _)| e)
    }

    /// Warns about every key not read, suggesting the known key it most likely misspells.
    pub fn warn_unknown(&self, what: &str, known: &[&str], diags: &mut Diagnostics) {
        for (key, _) in self.rest() {
            let text = key.key_text();
            let help = match did_you_mean(&text, known) {
                Some(guess) => format!("did you mean `{guess}`? known keys: {}", known.join(", ")),
                None => format!("known keys: {}", known.join(", ")),
            };
            diags.warn(
                key.pos,
                format!("unknown key `{text}` in {what}; it is ignored"),
                Some(help),
            );
        }
    }
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
        .map(|k| (k, strsim::damerau_levenshtein(&typed, &norm(k))))
        .filter(|(k, d)| *d <= (norm(k).chars().count() / 3).max(1))
        .min_by_key(|(_, d)| *d)
        .map(|(k, _)| *k)
}

/// The unit a duration is written in.
#[derive(Debug, Clone, Copy)]
enum TimeUnit {
    Seconds,
    Millis,
}

impl TimeUnit {
    fn name(self) -> &'static str {
        match self {
            Self::Seconds => "seconds",
            Self::Millis => "milliseconds",
        }
    }

    fn per_second(self) -> f64 {
        match self {
            Self::Seconds => 1.0,
            Self::Millis => 1000.0,
        }
    }

    /// `d` in this unit, as a user would write it (`0.5`, `86400`).
    fn show(self, d: Duration) -> String {
        let value = d.as_secs_f64() * self.per_second();
        format!("{}", (value * 1000.0).round() / 1000.0)
    }
}

/// The duration a number node holds in `unit`; `None` when it is not a finite number ≥ 0 that
/// fits a `Duration`.
fn duration_in(node: &Node, unit: TimeUnit) -> Option<Duration> {
    let value = node.as_f64().filter(|v| v.is_finite() && *v >= 0.0)?;
    Duration::try_from_secs_f64(value / unit.per_second()).ok()
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
    use crate::load::node::parse_yaml;

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
    fn fields_track_aliases_and_unknown_keys() {
        let node = parse_yaml("id: x\noutcome: y\ntypo: 1\n").expect("yaml");
        let mut diags = Diagnostics::new(Path::new("f.yaml"));
        let mut f = Fields::of(&node, "eval case", &mut diags).expect("map");
        assert_eq!(f.string(&["id"], &mut diags).as_deref(), Some("x"));
        assert_eq!(
            f.string(&["expected_outcome", "outcome"], &mut diags).as_deref(),
            Some("y")
        );
        f.warn_unknown("eval case", &["id", "expected_outcome"], &mut diags);
        let all = diags.into_vec();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].severity, Severity::Warning);
        assert_eq!(all[0].pos, Pos::new(3, 1));
        assert!(all[0].message.contains("`typo`"), "{}", all[0].message);
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
            ("threshold", None),
            ("config", None),
            ("", None),
        ];
        for (typed, want) in cases {
            assert_eq!(did_you_mean(typed, &known), want, "{typed}");
        }
        let node = parse_yaml("wieght: 1\n").expect("yaml");
        let mut diags = Diagnostics::new(Path::new("f.yaml"));
        let f = Fields::of(&node, "an evaluator", &mut diags).expect("map");
        f.warn_unknown("an evaluator", &known, &mut diags);
        let help = diags.into_vec()[0].help.clone().unwrap_or_default();
        assert!(help.starts_with("did you mean `weight`?"), "{help}");
    }

    #[test]
    fn missing_required_key_is_an_error_at_the_mapping() {
        let node = parse_yaml("expected_outcome: y\n").expect("yaml");
        let mut diags = Diagnostics::new(Path::new("f.yaml"));
        let mut f = Fields::of(&node, "eval case", &mut diags).expect("map");
        assert!(f.required_string(&["id"], "eval case", &mut diags).is_none());
        let all = diags.into_vec();
        assert_eq!(
            all[0].to_string(),
            "f.yaml:1:1: error: eval case is missing the required key `id`\n  help: add `id: ...` to it"
        );
    }
}
