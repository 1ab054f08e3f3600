//! `equals` (4.x, reference §2.4): passes when the trimmed answer equals the trimmed `value`.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::string_check::{VALUE_TEXT, candidate, value_text};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "equals",
    names: Names {
        v2: &[],
        v4: &["equals"],
        promptfoo: &[],
    },
    doc: "Passes when the trimmed answer equals the trimmed `value`.",
    keys: &KEYS,
    parse,
};

const KEYS: KeyTable = KeyTable::new("equals", "Passes when the trimmed answer equals the trimmed `value`.", &[VALUE_TEXT]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(Equals {
        value: value_text(f, cx)?,
    }))
}

/// A `equals` check as configured.
#[derive(Debug, Clone)]
pub struct Equals {
    pub value: String,
}

impl Grader for Equals {
    fn default_name(&self) -> Option<String> {
        Some(format!("equals-{}", self.value))
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(&self.value, &candidate(ctx)) })
    }
}

/// Score 1 and `pass` when it holds, else 0 and `fail`; one assertion saying which.
pub fn grade(value: &str, output: &str) -> Grade {
    let passed = super::js::trim(output) == super::js::trim(value);
    Grade::check(passed, if passed { format!("Output equals \"{value}\"") } else { format!("Output does not equal \"{value}\"") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::{check_grades, parse_one, problems};

    #[test]
    fn equals_scores_and_says_what_4x_says() {
        let cases = [
            ("The capital of France is Paris.", "The capital of France is Paris.", true, "Output equals \"The capital of France is Paris.\""),
            ("  Hello World  ", " Hello World ", true, "Output equals \" Hello World \""),
            ("The capital of France is Paris.", "the capital of france is paris.", false, "Output does not equal \"the capital of france is paris.\""),
            ("a\r\n", "a", true, "Output equals \"a\""),
        ];
        check_grades(cases.map(|(output, value, passed, text)| (grade(value, output), passed, text)));
    }

    #[test]
    fn equals_is_named_after_its_value_and_checked_at_load() {
        let (grader, shown) = parse_one("{type: equals, value: 'The x'}");
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| g.name), Some("equals-The x".to_owned()));
        assert_eq!(
            problems("{type: equals, value: 4}"),
            ["e.yaml:1:25: error: `value` of equals must be a string, found 4"]
        );
        assert_eq!(problems("{type: equals, value: ''}"), ["e.yaml:1:25: error: equals has an empty `value`"]);
        assert_eq!(problems("{type: equals}"), ["e.yaml:1:3: error: equals is missing the required key `value`"]);
    }
}
