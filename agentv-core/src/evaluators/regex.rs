//! `regex` (4.x, reference §2.4): passes when a JavaScript regular expression matches
//! anywhere in the answer. The pattern is compiled at load (an invalid one is reported with
//! its position; 4.x finds out when grading and scores 0); `js_regex` says how JavaScript
//! patterns are read and what still differs.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "regex",
    names: Names {
        v2: &[],
        v4: &["regex"],
        promptfoo: &[],
    },
    doc: "Passes when the JavaScript regular expression `value` matches anywhere in the answer.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("value", Kind::Str, "The pattern, a JavaScript regular expression without slashes.").required(),
    Key::new("flags", Kind::Str, "JavaScript flags: i, m, s, u (g and d change nothing; y anchors at the start)."),
];
const KEYS: KeyTable = KeyTable::new("regex", "A regular expression check.", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let value_pos = f.take("value").map(|n| n.pos);
    let pattern = super::string_check::value_text(f, cx)?;
    let flags_node = f.take("flags").filter(|n| !n.is_null());
    let flags = match flags_node {
        None => None,
        Some(node) => match node.as_str() {
            Some(s) => Some(s.to_owned()),
            None => {
                cx.diags.error(
                    node.pos,
                    format!("`flags` of regex must be a string such as \"i\", found {}", node.type_name()),
                    None,
                );
                return None;
            }
        },
    };
    match super::js_regex::compile(&pattern, flags.as_deref().unwrap_or_default()) {
        Ok(matcher) => Some(Arc::new(RegexCheck { pattern, flags, matcher })),
        Err(e) => {
            let pos = flags_node
                .filter(|_| e.contains("flag"))
                .map(|n| n.pos)
                .or(value_pos)
                .unwrap_or(f.pos);
            cx.diags.error(
                pos,
                format!("invalid regular expression /{pattern}/{}: {e}", flags.as_deref().unwrap_or_default()),
                Some("write a JavaScript regular expression (escape `\\` as `\\\\` inside double quotes)".to_owned()),
            );
            None
        }
    }
}

/// A `regex` check as configured, its pattern compiled.
#[derive(Debug, Clone)]
pub struct RegexCheck {
    /// As written, for names and texts.
    pub pattern: String,
    pub flags: Option<String>,
    pub matcher: fancy_regex::Regex,
}

impl Grader for RegexCheck {
    fn default_name(&self) -> Option<String> {
        Some(format!("regex-{}", first_utf16_units(&self.pattern, 30)))
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(self, &candidate(ctx)) })
    }
}

/// Score 1 and `pass` when the pattern matches, else 0 and `fail`. A match that exceeds the
/// engine's backtracking limit is a grader error (4.x cannot hit it; JavaScript backtracks
/// without limit).
pub fn grade(check: &RegexCheck, output: &str) -> Grade {
    let flags = check.flags.as_deref().unwrap_or_default();
    let shown = if flags.is_empty() {
        format!("/{}/", check.pattern)
    } else {
        format!("/{}/{flags} (flags: {flags})", check.pattern)
    };
    match check.matcher.is_match(output) {
        Ok(true) => Grade::check(true, format!("Output matches pattern {shown}")),
        Ok(false) => Grade::check(false, format!("Output does not match pattern {shown}")),
        Err(e) => Grade::failed(format!("pattern {shown} could not be matched: {e}")),
    }
}

/// The first `n` UTF-16 code units of `s` (JavaScript's `slice(0, n)`), never splitting a
/// character.
fn first_utf16_units(s: &str, n: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > n {
            return &s[..i];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::{check_grades, parse_one, problems};

    fn check(pattern: &str, flags: Option<&str>) -> RegexCheck {
        RegexCheck {
            pattern: pattern.into(),
            flags: flags.map(str::to_owned),
            matcher: super::super::js_regex::compile(pattern, flags.unwrap_or_default()).expect("valid"),
        }
    }

    #[test]
    fn regex_scores_and_says_what_4x_says() {
        let paris = "The capital of France is Paris.";
        let lines = "first\nSECOND\nthird";
        let cases = [
            (paris, r"\bParis\b", None, true, r"Output matches pattern /\bParis\b/"),
            (paris, "^Paris", None, false, "Output does not match pattern /^Paris/"),
            (paris, "^the CAPITAL", Some("i"), true, "Output matches pattern /^the CAPITAL/i (flags: i)"),
            (lines, "^SECOND", Some("m"), true, "Output matches pattern /^SECOND/m (flags: m)"),
            (lines, "^SECOND", None, false, "Output does not match pattern /^SECOND/"),
            (lines, "first.*third", Some("s"), true, "Output matches pattern /first.*third/s (flags: s)"),
            (lines, "first.*third", None, false, "Output does not match pattern /first.*third/"),
            (paris, r"\d{3}", None, false, r"Output does not match pattern /\d{3}/"),
            (paris, "PARIS", Some("gi"), true, "Output matches pattern /PARIS/gi (flags: gi)"),
        ];
        check_grades(
            cases.map(|(output, pattern, flags, passed, text)| (grade(&check(pattern, flags), output), passed, text)),
        );
    }

    #[test]
    fn regex_is_named_after_its_first_30_characters() {
        let (grader, shown) = parse_one(r"{type: regex, value: '\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$'}");
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| g.name), Some(r"regex-\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:".to_owned()));
        assert_eq!(first_utf16_units("a😀b", 2), "a", "a surrogate pair is not split");
    }

    #[test]
    fn invalid_patterns_and_flags_are_reported_at_load() {
        let bad = problems("{type: regex, value: '(unclosed'}");
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].starts_with("e.yaml:1:24: error: invalid regular expression /(unclosed/: "), "{}", bad[0]);
        let bad = problems("{type: regex, value: a, flags: x}");
        assert_eq!(
            bad,
            ["e.yaml:1:34: error: invalid regular expression /a/x: `x` is not a JavaScript regex flag (use d, g, i, m, s, u, v or y)"]
        );
        assert_eq!(
            problems("{type: regex, value: 5}"),
            ["e.yaml:1:24: error: `value` of regex must be a string, found 5"]
        );
    }
}
