//! What a file's generation decides about grading, in one place
//! (`docs/architecture.md#generations`): which grader a written `type` names, what grades a case
//! that configures no grader, whether graders without a `name` get one from their configuration,
//! how a grader's and a case's verdicts are read, and when a grader that could not grade makes
//! its case a grader error. Graders whose own checks differ by generation (tool trajectories,
//! field accuracy, the promptfoo texts) ask [`super::ParseContext::generation`].

use super::grader::{GradeVerdict, GraderEntry};
use crate::config::{Node, NodeValue};
use crate::model::{EvaluatorResult, Generation, Verdict};

/// The grader `written` names in a file of `generation`, found in `table`:
///
/// - 2.x: any AgentV spelling, exactly (a file that writes a 4.x-only spelling is 4.x);
/// - 4.x: any AgentV spelling, with `_` read as `-` first (`llm_grader` is `llm-grader`), so
///   2.x graders still load in a 4.x file (agentv runs them; 4.x itself skips some);
/// - promptfoo: only promptfoo's spellings (the list parser has taken off `not-`).
pub fn lookup_in(
    table: &[&[&'static GraderEntry]],
    generation: Generation,
    written: &str,
) -> Option<&'static GraderEntry> {
    let entries = || table.iter().flat_map(|module| module.iter().copied());
    let agentv = |name: &str| entries().find(|e| e.names.v2.contains(&name) || e.names.v4.contains(&name));
    match generation {
        Generation::V2 => agentv(written),
        Generation::V4 => agentv(&written.replace('_', "-")).or_else(|| agentv(written)),
        Generation::Promptfoo => entries().find(|e| e.names.promptfoo.contains(&written)),
    }
}

/// Whether a grader list entry of type `written` makes an AgentV file 4.x: some grader spells
/// it that way in 4.x (exactly, or in snake_case) and none in 2.x. A type no grader spells
/// decides nothing, and a spelling added to a 2.x grader never moves 2.x files
/// (`docs/architecture.md#generations`).
pub fn spelled_only_in_v4(table: &[&[&'static GraderEntry]], written: &str) -> bool {
    let entries = || table.iter().flat_map(|module| module.iter().copied());
    !entries().any(|e| e.names.v2.contains(&written)) && entries().any(|e| e.names.spells(Generation::V4, written))
}

/// Keys holding grader lists, at any depth.
const LIST_KEYS: &[&str] = &["assertions", "assert", "evaluators"];

/// Whether a grader list anywhere under `node` has a 4.x-only entry.
pub fn has_v4_grader(node: &Node, table: &[&[&'static GraderEntry]]) -> bool {
    match &node.value {
        NodeValue::Map(entries) => entries.iter().any(|(k, v)| {
            let in_list = k.as_str().is_some_and(|k| LIST_KEYS.contains(&k))
                && v.as_seq()
                    .is_some_and(|items| items.iter().any(|e| entry_is_v4(e, table)));
            in_list || has_v4_grader(v, table)
        }),
        NodeValue::Seq(items) => items.iter().any(|n| has_v4_grader(n, table)),
        _ => false,
    }
}

fn entry_is_v4(entry: &Node, table: &[&[&'static GraderEntry]]) -> bool {
    match &entry.value {
        NodeValue::Str(_) => true,
        NodeValue::Map(entries) => {
            if entries.len() == 1 && entry.get("include").is_some() {
                return true;
            }
            let Some(kind) = entry.get("type").and_then(Node::as_str) else {
                return false;
            };
            let code_command =
                matches!(kind, "code_judge" | "code-judge" | "code" | "code_grader") && entry.get("command").is_some();
            spelled_only_in_v4(table, kind) || code_command
        }
        _ => false,
    }
}

/// The grader of a case that configures none and inherits none
/// (`docs/architecture.md#default-grader`): 2.x's LLM judge, 4.x's `llm-grader`; a promptfoo
/// test without assertions has none (its row passes with score 1).
pub fn default_grader(generation: Generation) -> Option<&'static str> {
    match generation {
        Generation::V2 => Some("llm_judge"),
        Generation::V4 => Some("llm-grader"),
        Generation::Promptfoo => None,
    }
}

/// Whether `workspace.docker` runs the agent in the container when `docker.agent` is not
/// written (`docs/workspaces.md#containers`): AgentV 4.x never does, so a 4.x file keeps its
/// agent on this machine; agentv's own (2.x) files run it in the container.
pub fn docker_runs_agent(generation: Generation) -> bool {
    match generation {
        Generation::V2 => true,
        Generation::V4 | Generation::Promptfoo => false,
    }
}

/// The system prompt a case's request to an LLM target carries: `None` is the provider's
/// default (AgentV's), `Some("")` none at all — a promptfoo row sends exactly its prompt, as
/// promptfoo does, so that the same model answers the same way (`docs/promptfoo.md#providers`).
pub fn target_system_prompt(generation: Generation) -> Option<&'static str> {
    match generation {
        Generation::V2 | Generation::V4 => None,
        Generation::Promptfoo => Some(""),
    }
}

/// Whether a grader without a `name` is named from its configuration (`contains-Paris`,
/// AgentV 4.x's rule); otherwise it is named by its type as written.
pub fn names_from_configuration(generation: Generation) -> bool {
    generation == Generation::V4
}

/// A grader result's verdict: the grader's own when it decided one, else its score read as the
/// generation reads it (2.x: pass, borderline, fail at 0.8 and 0.6; 4.x: pass at 0.8). A
/// promptfoo assertion of weight 0 always passes: it is reported, never counted.
pub fn grader_verdict(generation: Generation, own: Option<GradeVerdict>, score: f64, weight: f64) -> Verdict {
    if generation == Generation::Promptfoo && weight == 0.0 {
        return Verdict::Pass;
    }
    match (own, generation) {
        (Some(GradeVerdict::Pass), _) => Verdict::Pass,
        (Some(GradeVerdict::Fail), _) => Verdict::Fail,
        (Some(GradeVerdict::Skip), _) => Verdict::Skip,
        (None, Generation::V2) => Verdict::from_score(score),
        (None, Generation::V4 | Generation::Promptfoo) => Verdict::pass_fail(score, crate::model::DEFAULT_THRESHOLD),
    }
}

/// The threshold a case is judged against: its own, else `--threshold`, else 0.8. A promptfoo
/// row has one only when its test sets `threshold`; without, every assertion must pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaseThreshold {
    /// The case's own (4.x `execution.threshold`, promptfoo's `threshold`).
    pub own: Option<f64>,
    /// `--threshold`.
    pub cli: Option<f64>,
}

impl CaseThreshold {
    /// The threshold of an AgentV case.
    pub fn value(self) -> f64 {
        self.own.or(self.cli).unwrap_or(crate::model::DEFAULT_THRESHOLD)
    }
}

/// A case's verdict from its score and its graders' results.
///
/// - 2.x: pass, borderline, fail at 0.8 and 0.6;
/// - 4.x: pass or fail against the case's threshold;
/// - promptfoo: pass when every assertion passed; a test `threshold` replaces that rule by
///   "the score meets it" (`docs/promptfoo.md#scoring`).
pub fn case_verdict(
    generation: Generation,
    score: f64,
    threshold: CaseThreshold,
    results: &[EvaluatorResult],
) -> Verdict {
    match generation {
        Generation::V2 => Verdict::from_score(score),
        Generation::V4 => Verdict::pass_fail(score, threshold.value()),
        Generation::Promptfoo => match threshold.own {
            Some(t) => Verdict::pass_fail(score, t),
            None if results.iter().all(|r| r.verdict == Verdict::Pass) => Verdict::Pass,
            None => Verdict::Fail,
        },
    }
}

/// The score of a case whose graders all counted (no skip, no failed gate): the weighted mean
/// (`docs/architecture.md#scoring`). A promptfoo test without assertions scores 1, and a row
/// with an assertion that could not run scores 0 (`docs/promptfoo.md#scoring`).
pub fn case_score(generation: Generation, results: &[EvaluatorResult]) -> f64 {
    match generation {
        Generation::Promptfoo if results.is_empty() => 1.0,
        Generation::Promptfoo if results.iter().any(|r| r.error.is_some()) => 0.0,
        _ => super::list::aggregate(results),
    }
}

/// Whether result `r` makes its case a grader error: in 2.x and promptfoo any grader that
/// could not grade does (promptfoo counts the row as an error); in 4.x only a skip does, a
/// failed grader being a quality failure there.
pub fn could_not_grade(generation: Generation, r: &EvaluatorResult) -> bool {
    match generation {
        Generation::V2 | Generation::Promptfoo => r.error.is_some(),
        Generation::V4 => r.verdict == Verdict::Skip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(verdict: Verdict, score: f64, weight: f64) -> EvaluatorResult {
        EvaluatorResult {
            score,
            verdict,
            error: None,
            ..EvaluatorResult::failed("a", "contains", weight, "unused")
        }
    }

    #[test]
    fn promptfoo_rows_pass_when_every_assertion_passes_or_the_threshold_is_met() {
        let none = CaseThreshold {
            own: None,
            cli: Some(0.1),
        };
        let pass = result(Verdict::Pass, 1.0, 1.0);
        let fail = result(Verdict::Fail, 0.0, 1.0);
        let cases = [
            (
                "every assertion passes",
                vec![pass.clone(), pass.clone()],
                none,
                Verdict::Pass,
            ),
            ("one fails", vec![pass.clone(), fail.clone()], none, Verdict::Fail),
            (
                "a threshold the score meets",
                vec![pass.clone(), fail.clone()],
                CaseThreshold {
                    own: Some(0.5),
                    cli: None,
                },
                Verdict::Pass,
            ),
            (
                "a threshold above the score",
                vec![pass.clone(), fail.clone()],
                CaseThreshold {
                    own: Some(0.6),
                    cli: None,
                },
                Verdict::Fail,
            ),
            ("no assertions", vec![], none, Verdict::Pass),
        ];
        for (what, results, threshold, want) in cases {
            let score = case_score(Generation::Promptfoo, &results);
            assert_eq!(
                case_verdict(Generation::Promptfoo, score, threshold, &results),
                want,
                "{what}"
            );
        }
        assert_eq!(case_score(Generation::Promptfoo, &[]), 1.0);
    }

    #[test]
    fn a_promptfoo_assertion_of_weight_zero_always_passes() {
        assert_eq!(
            grader_verdict(Generation::Promptfoo, Some(GradeVerdict::Fail), 0.0, 0.0),
            Verdict::Pass
        );
        assert_eq!(
            grader_verdict(Generation::V4, Some(GradeVerdict::Fail), 0.0, 0.0),
            Verdict::Fail
        );
        assert_eq!(grader_verdict(Generation::V2, None, 0.7, 1.0), Verdict::Borderline);
        assert_eq!(grader_verdict(Generation::V4, None, 0.7, 1.0), Verdict::Fail);
    }
}
