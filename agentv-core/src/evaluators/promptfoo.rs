//! promptfoo's assertion vocabulary (`docs/promptfoo.md#assertions`): which grader each
//! promptfoo `type` is, and building one from an assertion's parts.
//!
//! [`entry`]`(type)` is the [`GraderEntry`] for a promptfoo type written without `not-`
//! (`contains`, `is-json`, `rouge-n`, …), `None` for a type agentv does not grade this way.
//! Types agentv spells the same but scores differently (`equals`, `contains*`, `icontains*`,
//! `starts-with`, `regex`, `word-count`, `cost`, `latency`, `is-json`) map to promptfoo's own
//! entries ([`OWN`]), which are not in the grader table; the others are the grader table's
//! entries with a promptfoo spelling. The list parser reads a config's assertions through it
//! ([`super::find`] for a promptfoo config).
//!
//! Every grader here takes a `not-` prefix itself ([`super::ParseContext::take_inverse`]) and
//! reports promptfoo's result: its verdict is promptfoo's `pass`, its score promptfoo's `score`
//! (not clamped), its reasoning promptfoo's `reason`. The keys `weight`, `metric` and the
//! combination of assertions are the list parser's.

use super::{Generation, GraderEntry};

/// promptfoo's own checks for the types agentv's graders of the same names score and word as
/// AgentV does; not in the grader table.
pub(crate) static OWN: &[&GraderEntry] = &[
    &super::promptfoo_text::EQUALS,
    &super::promptfoo_text::CONTAINS,
    &super::promptfoo_text::ICONTAINS,
    &super::promptfoo_text::CONTAINS_ANY,
    &super::promptfoo_text::ICONTAINS_ANY,
    &super::promptfoo_text::CONTAINS_ALL,
    &super::promptfoo_text::ICONTAINS_ALL,
    &super::promptfoo_text::STARTS_WITH,
    &super::promptfoo_text::REGEX,
    &super::promptfoo_text::WORD_COUNT,
    &super::promptfoo_text::COST,
    &super::promptfoo_text::LATENCY,
    &super::json_output::IS_JSON,
];

/// The entry grading promptfoo's `type` (written without `not-`): promptfoo's own check
/// first, then the grader table's promptfoo spellings.
pub fn entry(type_name: &str) -> Option<&'static GraderEntry> {
    OWN.iter()
        .copied()
        .find(|e| e.names.promptfoo.contains(&type_name))
        .or_else(|| super::rules::lookup_in(super::GRADERS, Generation::Promptfoo, type_name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::{ConfiguredGrader, ParseContext};

    const IN_TABLE: &[&str] = &[
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
        "assert-set",
        "llm-rubric",
        "model-graded-closedqa",
        "factuality",
        "g-eval",
        "answer-relevance",
        "context-faithfulness",
        "context-recall",
        "context-relevance",
        "similar",
        "similar:dot",
        "similar:euclidean",
        "select-best",
        "max-score",
        "conversation-relevance",
    ];

    #[test]
    fn every_promptfoo_type_agentv_grades_has_an_entry() {
        for name in IN_TABLE {
            assert!(entry(name).is_some(), "{name}");
        }
        for (name, own) in [("contains", "contains"), ("equals", "equals"), ("is-json", "is-json")] {
            let e = entry(name).expect(name);
            let agentv = super::super::find(Generation::V2, own).expect(own);
            assert!(
                !std::ptr::eq(e, agentv),
                "{name} must be promptfoo's own check, not agentv's"
            );
            assert_eq!(e.type_name(), name, "results carry promptfoo's type");
        }
        assert!(entry("not-contains").is_none(), "types come without `not-`");
        assert!(entry("llm_judge").is_none());
    }

    #[test]
    fn promptfoo_spellings_name_one_grader_with_its_own_checks() {
        let mut seen: Vec<&str> = Vec::new();
        for e in OWN.iter().copied().chain(super::super::entries()) {
            for name in e.names.promptfoo {
                assert!(!seen.contains(name), "`{name}` names two promptfoo graders");
                seen.push(name);
            }
        }
    }

    /// Builds one assertion as a promptfoo config's list holds it, and runs its grader.
    fn run(yaml: &str, answer: &str) -> (Option<(ConfiguredGrader, crate::evaluators::Grade)>, Vec<String>) {
        use crate::config::Diagnostics;
        use crate::evaluators::testkit::{Answered, FakeProvider};
        let node = crate::config::node::parse_yaml(&format!("[{yaml}]")).expect("yaml");
        let dir = std::env::temp_dir();
        let ws = crate::paths::Workspace::from_cwd(dir.clone());
        let mut diags = Diagnostics::new(std::path::Path::new("promptfooconfig.yaml"));
        let mut cx = ParseContext::new(&ws, &dir, &mut diags).with_generation(Generation::Promptfoo);
        let made = super::super::parse_graders(&node, &mut cx)
            .and_then(|mut list| list.pop())
            .filter(|_| cx.diags.error_count() == 0);
        let problems = diags.into_vec().iter().map(ToString::to_string).collect();
        let made = made.map(|g| {
            let answered = Answered::new("q", "", answer, FakeProvider::llm(&["unused"]));
            let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
            let grade = runtime.block_on(g.grader.grade(&answered.context()));
            (g, grade)
        });
        (made, problems)
    }

    #[test]
    fn an_assertion_applies_its_not_once() {
        let (made, _) = run("{type: not-contains, value: Paris}", "It is Paris.");
        let (configured, grade) = made.expect("a grader");
        assert!(
            !configured.negate,
            "the grader inverts its own check; the list must not negate it"
        );
        assert_eq!(grade.score, 0.0);
        assert_eq!(
            grade.reasoning.as_deref(),
            Some("Expected output to not contain \"Paris\"")
        );
        let (made, _) = run("{type: rouge-n, value: the cat sat}", "the cat sat");
        assert_eq!(made.expect("a grader").1.score, 1.0);
    }

    #[test]
    fn an_assertion_reports_unknown_types_and_bad_values() {
        let (made, problems) = run("{type: contains-everything, value: x}", "x");
        assert!(made.is_none());
        assert!(
            problems
                .iter()
                .any(|p| p.contains("assertion type `contains-everything` is not supported")),
            "{problems:?}"
        );
        let (made, problems) = run("{type: latency}", "x");
        assert!(made.is_none());
        assert!(
            problems
                .iter()
                .any(|p| p.contains("missing the required key `threshold`")),
            "{problems:?}"
        );
    }
}
