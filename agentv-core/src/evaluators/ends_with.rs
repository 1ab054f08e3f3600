//! `ends-with` (4.x, reference §2.4): passes when the trimmed answer ends with the trimmed `value`.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::string_check::{VALUE_TEXT, candidate, value_text};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "ends-with",
    names: Names {
        v2: &[],
        v4: &["ends-with"],
        promptfoo: &[],
    },
    doc: "Passes when the trimmed answer ends with the trimmed `value`.",
    keys: &KEYS,
    parse,
};

const KEYS: KeyTable = KeyTable::new("ends-with", "Passes when the trimmed answer ends with the trimmed `value`.", &[VALUE_TEXT]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(EndsWith {
        value: value_text(f, cx)?,
    }))
}

/// A `ends-with` check as configured.
#[derive(Debug, Clone)]
pub struct EndsWith {
    pub value: String,
}

impl Grader for EndsWith {
    fn default_name(&self) -> Option<String> {
        Some(format!("ends-with-{}", self.value))
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(&self.value, &candidate(ctx)) })
    }
}

/// Score 1 and `pass` when it holds, else 0 and `fail`; one assertion saying which.
pub fn grade(value: &str, output: &str) -> Grade {
    let passed = super::js::trim(output).ends_with(super::js::trim(value));
    Grade::check(passed, if passed { format!("Output ends with \"{value}\"") } else { format!("Output does not end with \"{value}\"") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::{check_grades, parse_one, problems};

    #[test]
    fn ends_with_scores_and_says_what_4x_says() {
        let cases = [
            ("The capital of France is Paris.", "Paris.", true, "Output ends with \"Paris.\""),
            ("  Hello World  ", "World", true, "Output ends with \"World\""),
            ("The capital of France is Paris.", "Paris", false, "Output does not end with \"Paris\""),
        ];
        check_grades(cases.map(|(output, value, passed, text)| (grade(value, output), passed, text)));
    }

    #[test]
    fn ends_with_is_named_after_its_value_and_checked_at_load() {
        let (grader, shown) = parse_one("{type: ends-with, value: 'The x'}");
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| g.name), Some("ends-with-The x".to_owned()));
        assert_eq!(
            problems("{type: ends-with, value: 4}"),
            ["e.yaml:1:28: error: `value` of ends-with must be a string, found 4"]
        );
        assert_eq!(problems("{type: ends-with, value: ''}"), ["e.yaml:1:28: error: ends-with has an empty `value`"]);
        assert_eq!(problems("{type: ends-with}"), ["e.yaml:1:3: error: ends-with is missing the required key `value`"]);
    }
}
