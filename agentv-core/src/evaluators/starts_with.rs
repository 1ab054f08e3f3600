//! `starts-with` (4.x, reference §2.4): passes when the trimmed answer starts with the trimmed `value`.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::string_check::{VALUE_TEXT, candidate, value_text};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "starts-with",
    names: Names {
        v2: &[],
        v4: &["starts-with"],
        promptfoo: &[],
    },
    doc: "Passes when the trimmed answer starts with the trimmed `value`.",
    keys: &KEYS,
    parse,
};

const KEYS: KeyTable = KeyTable::new("starts-with", "Passes when the trimmed answer starts with the trimmed `value`.", &[VALUE_TEXT]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(StartsWith {
        value: value_text(f, cx)?,
    }))
}

/// A `starts-with` check as configured.
#[derive(Debug, Clone)]
pub struct StartsWith {
    pub value: String,
}

impl Grader for StartsWith {
    fn default_name(&self) -> Option<String> {
        Some(format!("starts-with-{}", self.value))
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(&self.value, &candidate(ctx)) })
    }
}

/// Score 1 and `pass` when it holds, else 0 and `fail`; one assertion saying which.
pub fn grade(value: &str, output: &str) -> Grade {
    let passed = super::js::trim(output).starts_with(super::js::trim(value));
    Grade::check(passed, if passed { format!("Output starts with \"{value}\"") } else { format!("Output does not start with \"{value}\"") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::{check_grades, parse_one, problems};

    #[test]
    fn starts_with_scores_and_says_what_4x_says() {
        let cases = [
            ("  Hello World  ", "Hello ", true, "Output starts with \"Hello \""),
            ("The capital of France is Paris.", "The", true, "Output starts with \"The\""),
            ("The capital of France is Paris.", "capital", false, "Output does not start with \"capital\""),
            ("\u{feff}x", "x", true, "Output starts with \"x\""),
        ];
        check_grades(cases.map(|(output, value, passed, text)| (grade(value, output), passed, text)));
    }

    #[test]
    fn starts_with_is_named_after_its_value_and_checked_at_load() {
        let (grader, shown) = parse_one("{type: starts-with, value: 'The x'}");
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| g.name), Some("starts-with-The x".to_owned()));
        assert_eq!(
            problems("{type: starts-with, value: 4}"),
            ["e.yaml:1:30: error: `value` of starts-with must be a string, found 4"]
        );
        assert_eq!(problems("{type: starts-with, value: ''}"), ["e.yaml:1:30: error: starts-with has an empty `value`"]);
        assert_eq!(problems("{type: starts-with}"), ["e.yaml:1:3: error: starts-with is missing the required key `value`"]);
    }
}
