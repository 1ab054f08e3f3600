//! promptfoo's assertion vocabulary (`docs/promptfoo.md#assertions`): which grader each
//! promptfoo `type` is, and building one from an assertion's parts.
//!
//! The shape a promptfoo config loader uses:
//!
//! - [`entry`]`(type)` — the [`GraderEntry`] for a promptfoo type written without `not-`
//!   (`contains`, `is-json`, `rouge-n`, …), `None` for a type agentv does not grade this way.
//!   Types agentv spells the same but scores differently (`equals`, `contains*`,
//!   `icontains*`, `starts-with`, `regex`, `word-count`, `cost`, `latency`, `is-json`) map to
//!   promptfoo's own entries, which are not in the grader table.
//! - [`grader`]`(type, value, threshold, config, cx)` — the grader for one assertion: `type`
//!   as written (a `not-` prefix makes the grader invert its own check, with promptfoo's
//!   wording: the caller must not negate it again), `value` (already rendered), `threshold`,
//!   and the assertion's `config`. A problem is reported in `cx` against the assertion's
//!   position and `None` returned, as every grader parser does.
//!
//! Every grader made here reports promptfoo's result: its verdict is promptfoo's `pass`, its
//! score promptfoo's `score` (not clamped), its reasoning promptfoo's `reason`. The keys
//! `weight`, `metric` and the combination of assertions are the caller's.

use std::sync::Arc;

use super::{Grader, GraderEntry, ParseContext};
use crate::config::{Fields, Node};

/// The entry grading promptfoo's `type` (written without `not-`).
pub fn entry(type_name: &str) -> Option<&'static GraderEntry> {
    use super::promptfoo_text as t;
    let own: Option<&'static GraderEntry> = match type_name {
        "equals" => Some(&t::EQUALS),
        "contains" => Some(&t::CONTAINS),
        "icontains" => Some(&t::ICONTAINS),
        "contains-any" => Some(&t::CONTAINS_ANY),
        "icontains-any" => Some(&t::ICONTAINS_ANY),
        "contains-all" => Some(&t::CONTAINS_ALL),
        "icontains-all" => Some(&t::ICONTAINS_ALL),
        "starts-with" => Some(&t::STARTS_WITH),
        "regex" => Some(&t::REGEX),
        "word-count" => Some(&t::WORD_COUNT),
        "cost" => Some(&t::COST),
        "latency" => Some(&t::LATENCY),
        "is-json" => Some(&super::json_output::IS_JSON),
        _ => None,
    };
    own.or_else(|| {
        PROMPTFOO_IN_TABLE
            .contains(&type_name)
            .then(|| super::find(type_name))
            .flatten()
    })
}

/// promptfoo types whose grader-table entry already follows promptfoo's rules.
const PROMPTFOO_IN_TABLE: &[&str] = &[
    "contains-json",
    "is-xml",
    "contains-xml",
    "is-html",
    "contains-html",
    "is-sql",
    "contains-sql",
    "is-refusal",
    "finish-reason",
    "is-valid-openai-tools-call",
    "is-valid-openai-function-call",
    "levenshtein",
    "bleu",
    "gleu",
    "rouge-n",
    "perplexity",
    "perplexity-score",
    "javascript",
    "python",
];

/// The grader for one promptfoo assertion: `written` is its `type` as written (`not-`
/// included); `node` is the assertion mapping (`value`, `threshold`, `config` and the keys the
/// caller reads are looked up in it; unknown keys are the caller's to report).
pub fn grader(written: &str, node: &Node, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let base = written.strip_prefix("not-").unwrap_or(written);
    let Some(entry) = entry(base) else {
        cx.drop_grader(
            node.pos,
            format!("`{written}` is not a promptfoo assertion type agentv grades"),
            None,
        );
        return None;
    };
    let mut fields = Fields::of(node, entry.keys, cx.diags)?;
    let outer = cx.current.replace((written.to_owned(), false));
    let grader = (entry.parse)(&mut fields, cx);
    cx.current = outer;
    grader
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_promptfoo_type_agentv_grades_has_an_entry() {
        for name in PROMPTFOO_IN_TABLE {
            assert!(entry(name).is_some(), "{name}");
        }
        for (name, own) in [("contains", "contains"), ("equals", "equals"), ("is-json", "is-json")] {
            let e = entry(name).expect(name);
            assert!(
                !std::ptr::eq(e, super::super::find(own).expect(own)),
                "{name} must be promptfoo's own check, not agentv's"
            );
        }
        assert!(entry("not-contains").is_none(), "types come without `not-`");
        assert!(entry("llm_judge").is_none());
    }

    /// Builds and runs the grader of one assertion as a promptfoo config writes it.
    fn run(written: &str, yaml: &str, answer: &str) -> (Option<crate::evaluators::Grade>, Vec<String>) {
        use crate::config::Diagnostics;
        use crate::evaluators::testkit::{Answered, FakeProvider};
        let node = crate::config::node::parse_yaml(yaml).expect("yaml");
        let dir = std::env::temp_dir();
        let ws = crate::paths::Workspace::from_cwd(dir.clone());
        let mut diags = Diagnostics::new(std::path::Path::new("promptfooconfig.yaml"));
        let mut cx = ParseContext::new(&ws, &dir, &mut diags);
        let made = grader(written, &node, &mut cx);
        let problems = diags.into_vec().iter().map(ToString::to_string).collect();
        let grade = made.map(|g| {
            let answered = Answered::new("q", "", answer, FakeProvider::llm(&["unused"]));
            let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
            runtime.block_on(g.grade(&answered.context()))
        });
        (grade, problems)
    }

    #[test]
    fn grader_builds_one_assertion_with_its_not() {
        let (grade, _) = run("not-contains", "{type: not-contains, value: Paris}", "It is Paris.");
        let grade = grade.expect("a grader");
        assert_eq!(grade.score, 0.0);
        assert_eq!(
            grade.reasoning.as_deref(),
            Some("Expected output to not contain \"Paris\"")
        );
        let (grade, _) = run("rouge-n", "{type: rouge-n, value: the cat sat}", "the cat sat");
        assert_eq!(grade.expect("a grader").score, 1.0);
    }

    #[test]
    fn grader_reports_unknown_types_and_bad_values() {
        let (grade, problems) = run("contains-everything", "{value: x}", "x");
        assert!(grade.is_none());
        assert!(
            problems
                .iter()
                .any(|p| p.contains("`contains-everything` is not a promptfoo assertion type")),
            "{problems:?}"
        );
        let (grade, problems) = run("latency", "{type: latency}", "x");
        assert!(grade.is_none());
        assert!(
            problems
                .iter()
                .any(|p| p.contains("missing the required key `threshold`")),
            "{problems:?}"
        );
    }
}
