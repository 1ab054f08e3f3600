//! `keywords`: heuristic grading by expected and forbidden words, plus error detection.

use std::sync::{Arc, LazyLock};

use futures::future::BoxFuture;
use regex::Regex;
use serde_json::{Map, Value};

use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind, Node, NodeValue, describe};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "keywords",
    names: Names {
        v2: &["keywords"],
        v4: &[],
        promptfoo: &[],
    },
    doc: "Heuristic grading by expected and forbidden words, plus error detection.",
    keys: &KEYS,
    parse,
};

/// A keyword: a word, or `{regex: ...}`.
const PATTERN: Kind = Kind::OneOf(&[Kind::Str, Kind::Object(&REGEX_KEYS)]);

const OWN: &[Key] = &[
    Key::new("expected", Kind::List(&PATTERN), "Words the answer should contain."),
    Key::new("forbidden", Kind::List(&PATTERN), "Words the answer must not contain."),
    Key::new("case_sensitive", Kind::Bool, "Match letter case (default false).").aliases(&["caseSensitive"]),
    Key::new(
        "detect_errors",
        Kind::Bool,
        "Flag answers that look like error dumps (default true).",
    )
    .aliases(&["detectErrors"]),
];
const KEYS: KeyTable = KeyTable::new("keywords", "A keyword check.", &[OWN]);

const REGEX_OWN: &[Key] = &[Key::new("regex", Kind::Str, "A regular expression.").required()];
const REGEX_KEYS: KeyTable = KeyTable::new("a keyword", "A keyword written as a regular expression.", &[REGEX_OWN]);

/// A keyword check as configured.
#[derive(Debug, Clone)]
pub struct Keywords {
    pub expected: Vec<KeywordPattern>,
    pub forbidden: Vec<KeywordPattern>,
    /// Flags answers that look like errors (stack traces, `Traceback`, `panicked at`, ...).
    pub detect_errors: bool,
}

/// A keyword, or a regex written as `{regex: ...}`.
#[derive(Debug, Clone)]
pub struct KeywordPattern {
    /// As written, for hit/miss messages.
    pub label: String,
    pub matcher: regex::Regex,
}

/// Reads a `keywords` check: at least one of `expected` and `forbidden`.
fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let case_sensitive = f.boolean("case_sensitive", cx.diags).unwrap_or(false);
    let detect_errors = f.boolean("detect_errors", cx.diags).unwrap_or(true);
    let before = cx.diags.error_count();
    let expected = f
        .take("expected")
        .map(|n| patterns(n, case_sensitive, cx))
        .unwrap_or_default();
    let forbidden = f
        .take("forbidden")
        .map(|n| patterns(n, case_sensitive, cx))
        .unwrap_or_default();
    if cx.diags.error_count() > before {
        return None;
    }
    if expected.is_empty() && forbidden.is_empty() {
        cx.diags.error(
            f.pos,
            "keywords needs `expected` or `forbidden`",
            Some("add `expected: [word, ...]`".to_owned()),
        );
        return None;
    }
    Some(Arc::new(Keywords {
        expected,
        forbidden,
        detect_errors,
    }))
}

fn patterns(node: &Node, case_sensitive: bool, cx: &mut ParseContext<'_>) -> Vec<KeywordPattern> {
    let Some(items) = node.as_seq() else {
        cx.diags.error(
            node.pos,
            "keyword lists must be lists of strings or `{regex: ...}`",
            None,
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        let regex = match &item.value {
            NodeValue::Map(_) => Fields::of(item, &REGEX_KEYS, cx.diags).and_then(|mut f| {
                let re = f.take("regex").and_then(Node::as_str);
                f.warn_unknown(cx.diags);
                re
            }),
            _ => None,
        };
        let (label, source) = match (&item.value, regex) {
            (NodeValue::Str(s), _) => (s.clone(), regex::escape(s)),
            (_, Some(re)) => (format!("/{re}/"), re.to_owned()),
            _ => {
                cx.diags.error(
                    item.pos,
                    format!(
                        "a keyword must be a string or `{{regex: ...}}`, found {}",
                        describe(item)
                    ),
                    None,
                );
                continue;
            }
        };
        match regex::RegexBuilder::new(&source)
            .case_insensitive(!case_sensitive)
            .build()
        {
            Ok(matcher) => out.push(KeywordPattern { label, matcher }),
            Err(e) => cx.diags.error(
                item.pos,
                format!("invalid regex {label}: {}", regex_problem(&e)),
                None,
            ),
        }
    }
    out
}

/// The regex crate's error is a multi-line drawing (pattern, caret, `error: ...`), which a
/// one-line diagnostic would show with literal `\n`: keep the `error:` line's words.
fn regex_problem(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    last.trim().strip_prefix("error: ").unwrap_or(last.trim()).to_owned()
}

/// Text that suggests the answer is an error dump rather than an answer.
static ERROR_PATTERNS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    [
        ("Traceback", r"Traceback \(most recent call last\)"),
        ("panicked at", r"panicked at"),
        ("Exception:", r"\b[A-Za-z.]*Exception:"),
        ("stack frame", r"(?m)^\s+at \S+ \(?[^\s()]+:\d+(:\d+)?\)?$"),
        ("error:", r"(?mi)^\s*(error|fatal)(\[\w+\])?:"),
    ]
    .into_iter()
    .filter_map(|(label, re)| Regex::new(re).ok().map(|r| (label, r)))
    .collect()
});

impl Grader for Keywords {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(self, ctx.candidate_answer) })
    }
}

/// score = hit ratio × (1 − miss ratio); error detection adds a miss and a detail only.
pub fn grade(spec: &Keywords, text: &str) -> Grade {
    let (mut hits, mut misses) = (Vec::new(), Vec::new());
    let mut found = 0;
    for p in &spec.expected {
        if p.matcher.is_match(text) {
            found += 1;
            hits.push(format!("contains {}", p.label));
        } else {
            misses.push(format!("missing {}", p.label));
        }
    }
    let mut forbidden = 0;
    for p in &spec.forbidden {
        if p.matcher.is_match(text) {
            forbidden += 1;
            misses.push(format!("contains forbidden {}", p.label));
        }
    }
    let hit_ratio = if spec.expected.is_empty() {
        1.0
    } else {
        found as f64 / spec.expected.len() as f64
    };
    let miss_ratio = if spec.forbidden.is_empty() {
        0.0
    } else {
        forbidden as f64 / spec.forbidden.len() as f64
    };
    let mut details = Map::new();
    details.insert("hit_ratio".into(), Value::from(hit_ratio));
    details.insert("miss_ratio".into(), Value::from(miss_ratio));
    if spec.detect_errors {
        let matched: Vec<&str> = ERROR_PATTERNS
            .iter()
            .filter(|(_, re)| re.is_match(text))
            .map(|(l, _)| *l)
            .collect();
        details.insert("error_detected".into(), Value::from(!matched.is_empty()));
        if !matched.is_empty() {
            misses.push(format!("answer looks like an error ({})", matched.join(", ")));
        }
    }
    Grade {
        score: hit_ratio * (1.0 - miss_ratio),
        hits,
        misses,
        reasoning: Some(format!(
            "{found}/{} expected found, {forbidden}/{} forbidden present",
            spec.expected.len(),
            spec.forbidden.len()
        )),
        details: Some(details),
        ..Grade::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(word: &str) -> KeywordPattern {
        KeywordPattern {
            label: word.into(),
            matcher: regex::RegexBuilder::new(&regex::escape(word))
                .case_insensitive(true)
                .build()
                .expect("re"),
        }
    }

    fn spec(expected: &[&str], forbidden: &[&str]) -> Keywords {
        Keywords {
            expected: expected.iter().map(|w| pattern(w)).collect(),
            forbidden: forbidden.iter().map(|w| pattern(w)).collect(),
            detect_errors: true,
        }
    }

    #[test]
    fn score_is_hit_ratio_times_one_minus_miss_ratio() {
        let cases = [
            (
                "Paris is the CAPITAL of France",
                &["paris", "capital"][..],
                &["london", "berlin"][..],
                1.0,
            ),
            ("Paris", &["paris", "capital"], &["london", "berlin"], 0.5),
            ("Paris or London", &["paris", "capital"], &["london", "berlin"], 0.25),
            ("nothing", &[], &["london"], 1.0),
        ];
        for (text, expected, forbidden, want) in cases {
            let g = grade(&spec(expected, forbidden), text);
            assert!((g.score - want).abs() < 1e-12, "{text}: {}", g.score);
        }
    }

    #[test]
    fn error_detection_flags_without_zeroing() {
        let texts = [
            "Traceback (most recent call last):\n  File \"x.py\"",
            "thread 'main' panicked at src/main.rs:2:5",
            "java.lang.IllegalStateException: bad",
            "error: could not compile",
            "    at foo (/app/index.js:10:3)",
        ];
        for text in texts {
            let g = grade(&spec(&["x"], &[]), &format!("x\n{text}"));
            assert_eq!(g.score, 1.0, "{text}");
            assert_eq!(g.details.as_ref().expect("details")["error_detected"], true, "{text}");
            assert!(
                g.misses.iter().any(|m| m.starts_with("answer looks like an error")),
                "{text}"
            );
        }
        let clean = grade(&spec(&["x"], &[]), "x: no errors were found");
        assert_eq!(clean.details.expect("details")["error_detected"], false);
    }

    #[test]
    fn an_invalid_regex_is_reported_on_one_line() {
        let node = crate::config::node::parse_yaml("- {type: keywords, expected: [{regex: 'a(b'}]}\n").expect("yaml");
        let ws = crate::paths::Workspace::from_cwd(std::env::temp_dir());
        let mut diags = crate::config::Diagnostics::new(std::path::Path::new("e.yaml"));
        let mut cx = ParseContext::new(&ws, &ws.cwd, &mut diags);
        assert!(crate::evaluators::parse_graders(&node, &mut cx).is_none());
        let problems: Vec<String> = diags.into_vec().iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("invalid regex"), "{}", problems[0]);
        let first = problems[0].lines().next().unwrap_or_default();
        assert!(first.ends_with("unclosed group"), "{}", problems[0]);
        assert!(!problems[0].contains("\\n"), "{}", problems[0]);
    }

    #[test]
    fn regex_keywords_are_read_through_their_table() {
        let node = crate::config::node::parse_yaml("- {type: keywords, expected: [{regex: 'P.ris', flgs: i}]}\n")
            .expect("yaml");
        let ws = crate::paths::Workspace::from_cwd(std::env::temp_dir());
        let mut diags = crate::config::Diagnostics::new(std::path::Path::new("e.yaml"));
        let mut cx = ParseContext::new(&ws, &ws.cwd, &mut diags);
        let graders = crate::evaluators::parse_graders(&node, &mut cx).expect("valid");
        assert_eq!(graders.len(), 1);
        let problems: Vec<String> = diags.into_vec().iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("e.yaml:1:48: warning: unknown key `flgs` in a keyword; it is ignored"),
            "{}",
            problems[0]
        );
    }
}
