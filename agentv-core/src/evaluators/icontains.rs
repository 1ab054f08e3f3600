//! `icontains` (4.x, reference §2.4): passes when the answer contains `value`, ignoring letter case.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::string_check::{VALUE_TEXT, candidate, value_text};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "icontains",
    names: Names {
        v2: &[],
        v4: &["icontains"],
        promptfoo: &[],
    },
    doc: "Passes when the answer contains `value`, ignoring letter case.",
    keys: &KEYS,
    parse,
};

const KEYS: KeyTable = KeyTable::new("icontains", "Passes when the answer contains `value`, ignoring letter case.", &[VALUE_TEXT]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(Icontains {
        value: value_text(f, cx)?,
    }))
}

/// A `icontains` check as configured.
#[derive(Debug, Clone)]
pub struct Icontains {
    pub value: String,
}

impl Grader for Icontains {
    fn default_name(&self) -> Option<String> {
        Some(format!("icontains-{}", self.value))
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(&self.value, &candidate(ctx)) })
    }
}

/// Score 1 and `pass` when it holds, else 0 and `fail`; one assertion saying which.
pub fn grade(value: &str, output: &str) -> Grade {
    let passed = output.to_lowercase().contains(&value.to_lowercase());
    Grade::check(passed, if passed { format!("Output contains \"{value}\" (case-insensitive)") } else { format!("Output does not contain \"{value}\" (case-insensitive)") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::{check_grades, parse_one, problems};

    #[test]
    fn icontains_scores_and_says_what_4x_says() {
        let cases = [
            ("The capital of France is Paris.", "PARIS", true, "Output contains \"PARIS\" (case-insensitive)"),
            ("The capital of France is Paris.", "berlin", false, "Output does not contain \"berlin\" (case-insensitive)"),
            ("STRASSE", "straße", false, "Output does not contain \"straße\" (case-insensitive)"),
            ("ΟΔΥΣΣΕΥΣ", "οδυσσευς", true, "Output contains \"οδυσσευς\" (case-insensitive)"),
        ];
        check_grades(cases.map(|(output, value, passed, text)| (grade(value, output), passed, text)));
    }

    #[test]
    fn icontains_is_named_after_its_value_and_checked_at_load() {
        let (grader, shown) = parse_one("{type: icontains, value: 'The x'}");
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| g.name), Some("icontains-The x".to_owned()));
        assert_eq!(
            problems("{type: icontains, value: 4}"),
            ["e.yaml:1:28: error: `value` of icontains must be a string, found 4"]
        );
        assert_eq!(problems("{type: icontains, value: ''}"), ["e.yaml:1:28: error: icontains has an empty `value`"]);
        assert_eq!(problems("{type: icontains}"), ["e.yaml:1:3: error: icontains is missing the required key `value`"]);
    }
}
