//! `model-graded-closedqa` (promptfoo): the grading model decides whether the answer meets the
//! criterion `value`, reasoning step by step and ending with `Y` or `N`
//! (`docs/promptfoo.md#model-graded-closedqa`). It ignores `not-`, as promptfoo does. An
//! answer ending in neither letter is a grader error, never a pass.

use std::sync::Arc;


use super::promptfoo_check::{self, PfResult};
use super::promptfoo_graded::{self as graded, Calls, Grading};
use super::{GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "model-graded-closedqa",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["model-graded-closedqa"],
    },
    doc: "A grading model decides (Y/N, promptfoo's prompt) whether the answer meets the criterion `value`.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("value", Kind::Str, "The criterion the answer must meet.").required(),
    graded::PROVIDER,
    graded::RUBRIC_PROMPT,
];
const KEYS: KeyTable = KeyTable::new("model-graded-closedqa", "A criterion graded Y/N by a model.", &[OWN]);

/// promptfoo's grading prompt (`OPENAI_CLOSED_QA_PROMPT`).
pub const PROMPT: &str = include_str!("promptfoo_graded/prompts/closedqa.json");

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let criterion = promptfoo_check::value_text(f, cx)?;
    let grading = Grading::parse(f, cx)?;
    // promptfoo's closed QA has no inverse: `not-` changes nothing.
    cx.take_inverse();
    Some(Arc::new(ClosedQa { criterion, grading }))
}

/// A `model-graded-closedqa` assertion as configured.
#[derive(Debug, Clone)]
pub struct ClosedQa {
    pub criterion: String,
    pub grading: Grading,
}

graded::grader_asking!(ClosedQa, ask);

impl ClosedQa {
    async fn ask(&self, ctx: &GradeContext<'_>, calls: &mut Calls) -> Result<PfResult, String> {
        if ctx.case.question.is_empty() {
            return Err("model-graded-closedqa assertion type must have a prompt".to_owned());
        }
        let mut scope = graded::vars(ctx);
        scope.insert("input".to_owned(), ctx.case.question.clone().into());
        scope.insert("criteria".to_owned(), self.criterion.clone().into());
        scope.insert("completion".to_owned(), graded::try_parse(ctx.candidate_answer));
        let prompt = graded::render(&self.grading.prompt_or(PROMPT), &scope)?;
        let answer = calls.ask(ctx, &self.grading, &prompt).await?;
        verdict(&answer)
    }
}

/// promptfoo's reading: the answer's last letter (white space at the end ignored) is `Y` or
/// `N`; anything else is a grader error with promptfoo's reason.
pub fn verdict(answer: &str) -> Result<PfResult, String> {
    let end = answer.trim_end_matches(super::js::is_whitespace);
    if end.ends_with('Y') {
        Ok(PfResult {
            pass: true,
            score: 1.0,
            reason: format!("The submission meets the criterion:\n{answer}"),
        })
    } else if end.ends_with('N') {
        Ok(PfResult {
            pass: false,
            score: 0.0,
            reason: format!("The submission does not meet the criterion:\n{answer}"),
        })
    } else {
        Err(format!("Model grader produced a malformed response:\n{answer}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::promptfoo_graded::testing::{graded, sent};
    use serde_json::json;

    #[test]
    fn closedqa_sends_promptfoos_one_system_message() {
        let (grade, requests) = graded(
            "- {type: model-graded-closedqa, value: 'mentions Paris'}",
            "Capital of France?",
            json!({"city": "Paris"}),
            "Paris.",
            &["It names Paris.\nY\nY"],
        );
        assert!(grade.error.is_none(), "{grade:?}");
        assert_eq!(grade.score, 1.0);
        let messages = sent(&requests[0]);
        assert_eq!(messages.len(), 1);
        assert_eq!(messages[0].0, "system");
        assert!(messages[0].1.contains("[Task]: Capital of France?\n***\n[Submission]: Paris.\n***\n[Criterion]: mentions Paris\n***"));
        assert!(messages[0].1.ends_with("by itself on a new line.\n\n    Reasoning:"));
    }

    #[test]
    fn closedqa_reads_the_last_letter_and_a_malformed_answer_is_a_grader_error() {
        assert!(verdict("reasoning\nY\nY  \n").expect("Y").pass);
        let no = verdict("reasoning\nN\nN").expect("N");
        assert_eq!((no.pass, no.score), (false, 0.0));
        assert_eq!(no.reason, "The submission does not meet the criterion:\nreasoning\nN\nN");
        assert!(verdict("Yes.").is_err());
        let (grade, _) = graded("- {type: not-model-graded-closedqa, value: x}", "q", json!({}), "a", &["maybe"]);
        assert_eq!(grade.error.as_deref(), Some("Model grader produced a malformed response:\nmaybe"));
        let (grade, _) = graded("- {type: not-model-graded-closedqa, value: x}", "q", json!({}), "a", &["Y"]);
        assert_eq!((grade.score, grade.error.is_none()), (1.0, true), "`not-` changes nothing, as in promptfoo");
    }
}
