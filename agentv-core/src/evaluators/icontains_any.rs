//! `icontains-any` (4.x, reference §2.4): passes when the answer contains any of the strings in `value`, ignoring letter case.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::string_check::{VALUE_LIST, candidate, quoted_list, value_list};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "icontains-any",
    names: Names {
        v2: &[],
        v4: &["icontains-any"],
        promptfoo: &[],
    },
    doc: "Passes when the answer contains any of the strings in `value`, ignoring letter case.",
    keys: &KEYS,
    parse,
};

const KEYS: KeyTable = KeyTable::new("icontains-any", "Passes when the answer contains any of the strings in `value`, ignoring letter case.", &[VALUE_LIST]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let (values, written) = value_list(f, cx)?;
    Some(Arc::new(IcontainsAny { values, written }))
}

/// A `icontains-any` check as configured.
#[derive(Debug, Clone)]
pub struct IcontainsAny {
    /// The strings of `value`, in order.
    pub values: Vec<String>,
    /// How many items `value` has as written (non-strings included): 4.x names the grader by it.
    pub written: usize,
}

impl Grader for IcontainsAny {
    fn default_name(&self) -> Option<String> {
        Some(format!("icontains-any-{}", self.written))
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(&self.values, &candidate(ctx)) })
    }
}

/// Score 1 and `pass` when any value is in the answer (ignoring letter case), else 0 and `fail`; one assertion
/// naming the first value found, or all of them.
pub fn grade(values: &[String], output: &str) -> Grade {
    let output = output.to_lowercase();
    match values.iter().find(|v| output.contains(&v.to_lowercase())) {
        Some(found) => Grade::check(true, format!("Output contains \"{found}\" (case-insensitive)")),
        None => Grade::check(false, format!("Output does not contain any of: {} (case-insensitive)", quoted_list(values))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::{check_grades, parse_one, problems};

    #[test]
    fn icontains_any_scores_and_says_what_4x_says() {
        let cases: [(&str, &[&str], bool, &str); 2] = [
            ("The capital of France is Paris.", &["LONDON", "PARIS"][..], true, "Output contains \"PARIS\" (case-insensitive)"),
            ("The capital of France is Paris.", &["london", "berlin"], false, "Output does not contain any of: \"london\", \"berlin\" (case-insensitive)"),
        ];
        check_grades(cases.map(|(output, values, passed, text)| {
            let values: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
            (grade(&values, output), passed, text)
        }));
    }

    #[test]
    fn icontains_any_is_named_after_its_count_and_checked_at_load() {
        let (grader, shown) = parse_one("{type: icontains-any, value: [a, 5, b]}");
        assert_eq!(grader.map(|g| g.name), Some("icontains-any-3".to_owned()), "non-strings count in the name");
        assert_eq!(shown.len(), 1, "{shown:?}");
        assert!(
            shown[0].starts_with("e.yaml:1:36: warning: `value` of icontains-any holds 5, not a string; it is ignored"),
            "{}",
            shown[0]
        );
        assert_eq!(
            problems("{type: icontains-any, value: Paris}"),
            ["e.yaml:1:32: error: `value` of icontains-any must be a list of strings, found \"Paris\""]
        );
        assert_eq!(problems("{type: icontains-any, value: []}"), ["e.yaml:1:32: error: `value` of icontains-any must hold at least one string"]);
    }
}
