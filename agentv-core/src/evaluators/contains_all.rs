//! `contains-all` (4.x, reference §2.4): passes when the answer contains every string in `value` (case-sensitive).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::string_check::{VALUE_LIST, candidate, quoted_list, value_list};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "contains-all",
    names: Names {
        v2: &[],
        v4: &["contains-all"],
        promptfoo: &[],
    },
    doc: "Passes when the answer contains every string in `value` (case-sensitive).",
    keys: &KEYS,
    parse,
};

const KEYS: KeyTable = KeyTable::new("contains-all", "Passes when the answer contains every string in `value` (case-sensitive).", &[VALUE_LIST]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let (values, written) = value_list(f, cx)?;
    Some(Arc::new(ContainsAll { values, written }))
}

/// A `contains-all` check as configured.
#[derive(Debug, Clone)]
pub struct ContainsAll {
    /// The strings of `value`, in order.
    pub values: Vec<String>,
    /// How many items `value` has as written (non-strings included): 4.x names the grader by it.
    pub written: usize,
}

impl Grader for ContainsAll {
    fn default_name(&self) -> Option<String> {
        Some(format!("contains-all-{}", self.written))
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(&self.values, &candidate(ctx)) })
    }
}

/// Score 1 and `pass` when every value is in the answer, else 0 and `fail`; one
/// assertion naming the values missing.
pub fn grade(values: &[String], output: &str) -> Grade {
    let missing: Vec<&String> = values.iter().filter(|v| !(output.contains(v.as_str()))).collect();
    if missing.is_empty() {
        Grade::check(true, format!("Output contains all {} expected strings", values.len()))
    } else {
        Grade::check(false, format!("Output missing: {}", quoted_list(missing)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::{check_grades, parse_one, problems};

    #[test]
    fn contains_all_scores_and_says_what_4x_says() {
        let cases: [(&str, &[&str], bool, &str); 3] = [
            ("The capital of France is Paris.", &["capital", "Paris"][..], true, "Output contains all 2 expected strings"),
            ("The capital of France is Paris.", &["capital", "paris", "Rome"], false, "Output missing: \"paris\", \"Rome\""),
            ("anything", &[""], true, "Output contains all 1 expected strings"),
        ];
        check_grades(cases.map(|(output, values, passed, text)| {
            let values: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
            (grade(&values, output), passed, text)
        }));
    }

    #[test]
    fn contains_all_is_named_after_its_count_and_checked_at_load() {
        let (grader, shown) = parse_one("{type: contains-all, value: [a, 5, b]}");
        assert_eq!(grader.map(|g| g.name), Some("contains-all-3".to_owned()), "non-strings count in the name");
        assert_eq!(shown.len(), 1, "{shown:?}");
        assert!(
            shown[0].starts_with("e.yaml:1:35: warning: `value` of contains-all holds 5, not a string; it is ignored"),
            "{}",
            shown[0]
        );
        assert_eq!(
            problems("{type: contains-all, value: Paris}"),
            ["e.yaml:1:31: error: `value` of contains-all must be a list of strings, found \"Paris\""]
        );
        assert_eq!(problems("{type: contains-all, value: []}"), ["e.yaml:1:31: error: `value` of contains-all must hold at least one string"]);
    }
}
