//! `is-json` (4.x, reference §2.4): passes when the whole answer is one JSON value
//! (`JSON.parse` succeeds): any value (`42`, `"x"`), white space around it allowed, a
//! Markdown fence or a byte-order mark not.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "is-json",
    names: Names {
        v2: &[],
        v4: &["is-json"],
        promptfoo: &[],
    },
    doc: "Passes when the answer is valid JSON (any value; a Markdown fence fails).",
    keys: &KEYS,
    parse,
};

const KEYS: KeyTable = KeyTable::new("is-json", "A JSON syntax check.", &[]);

fn parse(_: &mut Fields<'_>, _: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(IsJson))
}

/// The `is-json` check.
#[derive(Debug, Clone, Copy)]
pub struct IsJson;

impl Grader for IsJson {
    fn default_name(&self) -> Option<String> {
        Some("is-json".to_owned())
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(&candidate(ctx)) })
    }
}

/// Score 1 and `pass` for valid JSON, else 0 and `fail`.
pub fn grade(output: &str) -> Grade {
    if is_json(output) {
        Grade::check(true, "Output is valid JSON")
    } else {
        Grade::check(false, "Output is not valid JSON")
    }
}

/// JSON syntax only, as `JSON.parse` judges it: numbers beyond f64 (`1e400`), lone
/// surrogate escapes, duplicate keys and deep nesting are all valid JSON.
pub fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::check_grades;

    #[test]
    fn is_json_accepts_what_json_parse_accepts() {
        let deep = format!("{}{}", "[".repeat(500), "]".repeat(500));
        let cases = [
            ("{\"city\": \"Paris\"}", true),
            ("42", true),
            ("\"x\"", true),
            ("  \n[1, 2]\n ", true),
            ("1e400", true),
            ("\"\\ud800\"", true),
            ("{\"a\": 1, \"a\": 2}", true),
            (deep.as_str(), true),
            ("The capital of France is Paris.", false),
            ("```json\n{\"a\": 1}\n```", false),
            ("\u{feff}{}", false),
            ("{\"a\": 1} extra", false),
            ("{'a': 1}", false),
            ("NaN", false),
            ("", false),
        ];
        check_grades(cases.map(|(output, passed)| {
            (grade(output), passed, if passed { "Output is valid JSON" } else { "Output is not valid JSON" })
        }));
    }
}
