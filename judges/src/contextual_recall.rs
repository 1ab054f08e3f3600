//! **Contextual recall**: did the retriever find what the reference answer needs?
//!
//! ```text
//! contextual recall = reference statements attributable to the context / reference statements
//! ```
//!
//! Two stages: the model breaks the **reference answer** into statements (one call; `split:
//! sentences` takes its sentences instead, with no call), then decides for each whether the
//! retrieved context supports it (`mode: batch`: one call listing every statement against the
//! context sent once; `mode: per_item`: one call per statement, all in one `invoke_batch`).
//!
//! The case must have a reference answer (`reference_answer`, i.e. the last expected message;
//! 4.x `expected_output`): without one the judge reports a grader error. **Zero statements**
//! (a reference with no content): `empty_score`, default **0**.
//!
//! Example: a reference of 3 statements, 2 found in the context, scores 2/3 = 0.667.

use agentv_eval_sdk::{CodeJudgePayload, JudgeResult, TargetClient};

use crate::Error;
use crate::config::Config;
use crate::context::{self, ContextSettings};
use crate::model::{JudgeModel, Session};
use crate::outcome::{Outcome, count, ratio, round};
use crate::prompt::{assemble, block, context_block};
use crate::settings::{ModelSettings, Scoring, SplitSettings};
use crate::statements::{self, StatementTask};

pub const NAME: &str = "contextual_recall";

/// The task paragraph of the statement-listing prompt (`extract_instructions` replaces it).
pub const EXTRACT_TASK: &str = "Break the reference answer into its statements, each a short standalone sentence \
(replace pronouns by what they refer to).";

/// The task paragraph of the verdict prompts (`instructions` replaces it).
pub const VERDICT_TASK: &str = "Decide for each statement of a reference answer whether it can be attributed to the \
retrieved context: \"yes\" when the context states it or directly implies it, \"no\" otherwise. Use only the context, \
not what you know.";

/// Attributable statements / statements; `empty` when there are none.
pub fn score(attributable: usize, statements: usize, empty: f64) -> f64 {
    ratio(attributable, statements, empty)
}

/// The statement-listing prompt.
pub fn extract_prompt(reference: &str, instructions: Option<&str>) -> String {
    assemble(
        EXTRACT_TASK,
        instructions,
        &[block("reference_answer", reference)],
        "Reply with only a JSON object:\n{\"statements\": [\"<statement>\", ...]}",
    )
}

pub fn grade(payload: &CodeJudgePayload, model: &dyn JudgeModel) -> Result<JudgeResult, Error> {
    let mut config = Config::new(&payload.config, "agentv-contextual-recall");
    let scoring = Scoring::read(&mut config, 0.0)?;
    let settings = ModelSettings::read(&mut config)?;
    let split = SplitSettings::read(&mut config)?;
    let context_settings = ContextSettings::read(&mut config)?;
    config.finish()?;

    let reference = context::reference_answer(payload);
    if reference.trim().is_empty() {
        return Err(Error::Input(
            "contextual recall compares the reference answer with the retrieved context, but the case has no \
             reference answer: add an assistant message to `expected_messages` (4.x: `expected_output`)"
                .to_owned(),
        ));
    }
    let context = context::retrieved_context(payload, &context_settings)?;
    let mut session = Session::open(model, NAME, &settings)?;
    let task = StatementTask {
        noun: "statement",
        key: "statements",
        text: &reference,
        extract_prompt: &|instructions| extract_prompt(&reference, instructions),
        verdict_task: VERDICT_TASK,
        blocks: vec![context_block(&context.chunks)],
    };
    let judged = statements::judge_statements(&mut session, &split, &settings, scoring.include_reason, &task)?;
    let (attributable, total) = statements::tally(&judged);
    let value = score(attributable, total, scoring.empty_score);
    let reasoning = if total == 0 {
        format!(
            "the reference answer has no statements, so contextual recall is the empty_score {}",
            round(value)
        )
    } else {
        format!(
            "contextual recall = {attributable} attributable / {} = {}",
            count(total, "statement"),
            round(value)
        )
    };
    let mut out = Outcome::new(NAME, value, reasoning);
    let words = ("in the context", "not in the context");
    statements::check_each(&mut out, &judged, "reference statement", words);
    out.asked(settings.mode.as_str(), Some(split.split.as_str()), Some(context.source))
        .detail("attributable_count", attributable)
        .detail(
            "statements",
            statements::listed(&judged, "attributable", scoring.include_reason),
        )
        .finish_judged(judged.verdicts.skipped, session.calls(), &scoring)
}

/// The judge function for [`agentv_eval_sdk::run_judge`].
pub fn judge(payload: &CodeJudgePayload, target: Option<&TargetClient>) -> agentv_eval_sdk::JudgeOutcome {
    let target = target.ok_or(Error::NoTarget { metric: NAME })?;
    Ok(grade(payload, target)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::Scripted;
    use serde_json::{Value, json};

    #[test]
    fn worked_scores() {
        for (found, total, want) in [(2, 3, 2.0 / 3.0), (3, 3, 1.0), (0, 2, 0.0), (0, 0, 0.0)] {
            assert_eq!(score(found, total, 0.0), want);
        }
    }

    fn payload(reference: &str, config: Value) -> CodeJudgePayload {
        CodeJudgePayload::from_value(json!({
            "expected_messages": [{"role": "assistant", "content": reference}],
            "reference_answer": reference,
            "output_messages": [{"role": "assistant", "tool_calls": [{"tool": "retrieve", "output": [
                "Online orders can be refunded within 30 days of delivery.",
                "Refunds are issued to the original payment method."
            ]}]}],
            "config": config
        }))
        .expect("payload")
    }

    #[test]
    fn two_of_three_reference_statements_found() {
        let reference = "Online orders can be refunded within 30 days of delivery. Refunds are issued to the original \
                         payment method. A receipt is required.";
        for mode in ["batch", "per_item"] {
            let model = Scripted::rules();
            let r = grade(&payload(reference, json!({"mode": mode})), &model).expect("graded");
            assert!((r.score() - 2.0 / 3.0).abs() < 1e-12);
            assert_eq!(
                r.reasoning(),
                Some("contextual recall = 2 attributable / 3 statements = 0.667")
            );
            assert_eq!(
                r.misses(),
                ["reference statement 3: not in the context: A receipt is required."]
            );
            assert!(model.prompts()[0].contains("<reference_answer>\nOnline orders"));
        }
    }

    #[test]
    fn no_reference_answer_is_a_grader_error() {
        let error = grade(&payload("", json!({})), &Scripted::rules())
            .expect_err("no reference")
            .to_string();
        assert!(
            error.starts_with("contextual recall compares the reference answer"),
            "{error}"
        );
    }
}
