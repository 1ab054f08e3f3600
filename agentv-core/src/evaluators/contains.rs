//! `contains` (4.x, reference §2.4): passes when the answer contains `value` (case-sensitive).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::string_check::{VALUE_TEXT, candidate, value_text};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "contains",
    names: Names {
        v2: &[],
        v4: &["contains"],
        promptfoo: &[],
    },
    doc: "Passes when the answer contains `value` (case-sensitive).",
    keys: &KEYS,
    parse,
};

const KEYS: KeyTable = KeyTable::new("contains", "Passes when the answer contains `value` (case-sensitive).", &[VALUE_TEXT]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(Contains {
        value: value_text(f, cx)?,
    }))
}

/// A `contains` check as configured.
#[derive(Debug, Clone)]
pub struct Contains {
    pub value: String,
}

impl Grader for Contains {
    fn default_name(&self) -> Option<String> {
        Some(format!("contains-{}", self.value))
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(&self.value, &candidate(ctx)) })
    }
}

/// Score 1 and `pass` when it holds, else 0 and `fail`; one assertion saying which.
pub fn grade(value: &str, output: &str) -> Grade {
    let passed = output.contains(value);
    Grade::check(passed, if passed { format!("Output contains \"{value}\"") } else { format!("Output does not contain \"{value}\"") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::{check_grades, parse_one, problems};

    #[test]
    fn contains_scores_and_says_what_4x_says() {
        let cases = [
            ("The capital of France is Paris.", "Paris", true, "Output contains \"Paris\""),
            ("The capital of France is Paris.", "paris", false, "Output does not contain \"paris\""),
            ("The capital of France is Paris.", "London", false, "Output does not contain \"London\""),
            ("  spaced  ", " spaced ", true, "Output contains \" spaced \""),
            ("", "x", false, "Output does not contain \"x\""),
        ];
        check_grades(cases.map(|(output, value, passed, text)| (grade(value, output), passed, text)));
    }

    #[test]
    fn contains_is_named_after_its_value_and_checked_at_load() {
        let (grader, shown) = parse_one("{type: contains, value: 'The x'}");
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| g.name), Some("contains-The x".to_owned()));
        assert_eq!(
            problems("{type: contains, value: 4}"),
            ["e.yaml:1:27: error: `value` of contains must be a string, found 4"]
        );
        assert_eq!(problems("{type: contains, value: ''}"), ["e.yaml:1:27: error: contains has an empty `value`"]);
        assert_eq!(problems("{type: contains}"), ["e.yaml:1:3: error: contains is missing the required key `value`"]);
    }
}
