//! `context-recall` (promptfoo, RAGAS): the grading model classifies each sentence of the
//! expected answer `value` as attributable to the context or not; the score is the share
//! attributed, passing at `threshold` (default 0) (`docs/promptfoo.md#context-recall`). The
//! context is the test's `context` var (text or list of texts), else the prompt. It ignores
//! `not-`, as promptfoo does. An answer that classifies no sentence is a grader error.

use std::sync::Arc;


use super::promptfoo_check::{self, PfResult};
use super::promptfoo_graded::{self as graded, Calls, Context, Grading};
use super::{GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "context-recall",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["context-recall"],
    },
    doc: "The share of the expected answer's sentences a grading model attributes to the `context` var (RAGAS context recall).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("value", Kind::Str, "The expected answer (or fact) the context should hold.").required(),
    graded::THRESHOLD,
    graded::PROVIDER,
    graded::RUBRIC_PROMPT,
    super::context_relevance::CONTEXT_TRANSFORM,
];
const KEYS: KeyTable = KeyTable::new("context-recall", "A context-recall check.", &[OWN]);

/// promptfoo's prompt (`CONTEXT_RECALL`, from RAGAS).
pub const PROMPT: &str = include_str!("promptfoo_graded/prompts/context_recall.txt");

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let expected = promptfoo_check::value_text(f, cx)?;
    let threshold = promptfoo_check::threshold(f, cx).ok()?;
    let transform = super::context_relevance::context_transform(f, cx)?;
    let grading = Grading::parse(f, cx)?;
    cx.take_inverse();
    Some(Arc::new(ContextRecall {
        expected,
        threshold: threshold.unwrap_or(0.0),
        grading,
        transform,
    }))
}

/// A `context-recall` assertion as configured.
#[derive(Debug, Clone)]
pub struct ContextRecall {
    pub expected: String,
    pub threshold: f64,
    pub grading: Grading,
    /// `contextTransform`.
    pub transform: Option<String>,
}

graded::grader_asking!(ContextRecall, ask);

impl ContextRecall {
    async fn ask(&self, ctx: &GradeContext<'_>, calls: &mut Calls) -> Result<PfResult, String> {
        if ctx.case.question.is_empty() {
            return Err("context-recall assertion requires a prompt".to_owned());
        }
        let mut scope = graded::vars(ctx);
        let context = Context::resolve(ctx, &scope, Some(&ctx.case.question), self.transform.as_deref()).await?;
        scope.insert("context".to_owned(), context.joined().into());
        scope.insert("groundTruth".to_owned(), self.expected.clone().into());
        let prompt = graded::render(&self.grading.prompt_or(PROMPT), &scope)?;
        let answer = calls.ask(ctx, &self.grading, &prompt).await?;
        recall(&answer, self.threshold)
    }
}

/// promptfoo's reading: the lines holding `[Attributed]` or `[Not Attributed]` (any case) are
/// the classified sentences; the score is the share of those attributed.
pub fn recall(answer: &str, threshold: f64) -> Result<PfResult, String> {
    let classified: Vec<String> = graded::lines(answer)
        .into_iter()
        .map(|l| l.to_lowercase())
        .filter(|l| l.contains("[attributed]") || l.contains("[not attributed]"))
        .collect();
    if classified.is_empty() {
        return Err(format!(
            "context-recall: the grading model classified no sentence as [Attributed] or [Not Attributed]:\n{answer}"
        ));
    }
    let attributed = classified
        .iter()
        .filter(|l| !l.contains("[not attributed]") && l.contains("[attributed]"))
        .count();
    let score = attributed as f64 / classified.len() as f64;
    Ok(graded::ratio_result("Recall", score, threshold))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::promptfoo_graded::testing::{graded, sent};
    use serde_json::json;

    #[test]
    fn context_recall_sends_the_context_var_and_scores_the_attributed_share() {
        let (grade, requests) = graded(
            "- {type: context-recall, value: 'Paris is the capital. It has 2M people.', threshold: 0.6}",
            "q",
            json!({"context": ["Paris is the capital of France.", "It is on the Seine."]}),
            "a",
            &["1. Paris is the capital. So [Attributed]\n2. It has 2M people. So [Not Attributed]"],
        );
        assert!(grade.error.is_none(), "{grade:?}");
        assert_eq!((grade.score, grade.reasoning.as_deref()), (0.5, Some("Recall 0.50 is < 0.6")));
        let prompt = &sent(&requests[0])[0].1;
        assert!(prompt.starts_with("Given a context, and an answer, analyze each sentence"));
        assert!(prompt.ends_with(
            "context:Paris is the capital of France.\n\nIt is on the Seine.\nanswer:Paris is the capital. It has 2M people.\nclassification:\n"
        ));
    }

    #[test]
    fn context_recall_falls_back_to_the_prompt_and_an_unclassified_answer_is_a_grader_error() {
        let (grade, requests) = graded("- {type: context-recall, value: x}", "the prompt", json!({}), "a", &["nothing here"]);
        assert!(sent(&requests[0])[0].1.contains("context:the prompt\n"));
        assert!(grade.error.as_deref().is_some_and(|e| e.contains("classified no sentence")), "{grade:?}");
        assert_eq!(recall("[Attributed]\n[attributed]", 1.0).expect("ok").reason, "Recall 1.00 is >= 1");
    }
}
