//! **Faithfulness**: is everything the answer claims supported by the retrieved context?
//!
//! ```text
//! faithfulness = supported claims / claims
//! ```
//!
//! Two stages: the model lists the answer's factual claims (one call; `split: sentences` takes
//! the answer's sentences instead, with no call), then decides for every claim whether the
//! context supports it (`mode: batch`: one call listing every claim against the context sent
//! once; `mode: per_item`: one call per claim, all in one `invoke_batch`). A claim the context
//! contradicts or does not mention is unsupported.
//!
//! **Zero claims** (an empty answer, or one that claims nothing, like "I don't know"): score
//! `empty_score`, default **1**: nothing the answer says is unsupported. Set `empty_score: 0`
//! to count an answer without claims as a failure.
//!
//! Example: 3 claims of which 2 are supported give 2/3 = 0.667.

use agentv_eval_sdk::{CodeJudgePayload, JudgeResult, TargetClient};

use crate::Error;
use crate::config::Config;
use crate::context::{self, ContextSettings};
use crate::model::{JudgeModel, Session};
use crate::outcome::{Outcome, count, ratio, round};
use crate::prompt::{assemble, block, context_block};
use crate::settings::{ModelSettings, Scoring, SplitSettings};
use crate::statements::{self, StatementTask};

pub const NAME: &str = "faithfulness";

/// The task paragraph of the claim-listing prompt (`extract_instructions` replaces it).
pub const EXTRACT_TASK: &str = "List every factual claim the answer makes, each as a short standalone sentence \
(replace pronouns by what they refer to). Leave out greetings, questions, opinions and statements that claim nothing.";

/// The task paragraph of the verdict prompts (`instructions` replaces it).
pub const VERDICT_TASK: &str = "Decide for each claim whether the context supports it: \"yes\" when the context states \
it or directly implies it, \"no\" when the context contradicts it or does not mention it. Use only the context, not \
what you know.";

/// Supported claims / claims; `empty` when there are none.
pub fn score(supported: usize, claims: usize, empty: f64) -> f64 {
    ratio(supported, claims, empty)
}

/// The claim-listing prompt.
pub fn extract_prompt(answer: &str, instructions: Option<&str>) -> String {
    assemble(
        EXTRACT_TASK,
        instructions,
        &[block("answer", answer)],
        "Reply with only a JSON object:\n{\"claims\": [\"<claim>\", ...]}",
    )
}

/// What every verdict prompt shows before the claims: the context.
pub fn verdict_blocks(chunks: &[String]) -> Vec<String> {
    vec![context_block(chunks)]
}

pub fn grade(payload: &CodeJudgePayload, model: &dyn JudgeModel) -> Result<JudgeResult, Error> {
    let mut config = Config::new(&payload.config, "agentv-faithfulness");
    let scoring = Scoring::read(&mut config, 1.0)?;
    let settings = ModelSettings::read(&mut config)?;
    let split = SplitSettings::read(&mut config)?;
    let context_settings = ContextSettings::read(&mut config)?;
    config.finish()?;

    let context = context::retrieved_context(payload, &context_settings)?;
    let answer = payload.answer_text()?;
    let mut session = Session::open(model, NAME, &settings)?;
    let task = StatementTask {
        noun: "claim",
        key: "claims",
        text: &answer,
        extract_prompt: &|instructions| extract_prompt(&answer, instructions),
        verdict_task: VERDICT_TASK,
        blocks: verdict_blocks(&context.chunks),
    };
    let judged = statements::judge_statements(&mut session, &split, &settings, scoring.include_reason, &task)?;
    let (supported, claims) = statements::tally(&judged);
    let value = score(supported, claims, scoring.empty_score);
    let reasoning = if claims == 0 {
        format!(
            "the answer makes no claims, so faithfulness is the empty_score {}",
            round(value)
        )
    } else {
        format!(
            "faithfulness = {supported} supported / {} = {}",
            count(claims, "claim"),
            round(value)
        )
    };
    let mut out = Outcome::new(NAME, value, reasoning);
    statements::check_each(&mut out, &judged, "claim", ("supported", "not supported"));
    out.asked(settings.mode.as_str(), Some(split.split.as_str()), Some(context.source))
        .detail("supported_count", supported)
        .detail(
            "claims",
            statements::listed(&judged, "supported", scoring.include_reason),
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
        // (supported, claims, empty_score) → score
        for (supported, claims, empty, want) in [
            (2, 3, 1.0, 2.0 / 3.0),
            (3, 3, 1.0, 1.0),
            (0, 4, 1.0, 0.0),
            (0, 0, 1.0, 1.0),
            (0, 0, 0.0, 0.0),
        ] {
            assert_eq!(score(supported, claims, empty), want, "{supported}/{claims}");
        }
    }

    fn payload(answer: &str, config: Value) -> CodeJudgePayload {
        CodeJudgePayload::from_value(json!({
            "input_messages": [{"role": "user", "content": "What is the refund window for online orders?"}],
            "output_messages": [
                {"role": "assistant", "tool_calls": [{"tool": "retrieve", "output": [
                    "Online orders can be refunded within 30 days of delivery.",
                    "Refunds are issued to the original payment method."
                ]}]},
                {"role": "assistant", "content": answer}
            ],
            "config": config
        }))
        .expect("payload")
    }

    const ANSWER: &str = "You can get a refund within 30 days of delivery. The refund goes to your original \
                          payment method. Refunds take 5 business days.";

    #[test]
    fn two_of_three_claims_supported_in_two_round_trips() {
        for (mode, verdict_calls) in [("batch", 1), ("per_item", 3)] {
            let model = Scripted::rules();
            let r = grade(&payload(ANSWER, json!({"mode": mode})), &model).expect("graded");
            assert!((r.score() - 2.0 / 3.0).abs() < 1e-12, "{mode}: {}", r.score());
            assert_eq!(r.reasoning(), Some("faithfulness = 2 supported / 3 claims = 0.667"));
            assert_eq!(r.misses(), ["claim 3: not supported: Refunds take 5 business days."]);
            let d = r.details().expect("details");
            assert_eq!(d["model_calls"], json!({"extract": 1, "verdicts": verdict_calls}));
            assert_eq!(
                model.round_trips(),
                2,
                "{mode}: one call to extract, one round trip to verify"
            );
            assert_eq!(
                d["claims"][2],
                json!({"n": 3, "text": "Refunds take 5 business days.", "supported": false, "reason": "fake"})
            );
        }
    }

    #[test]
    fn the_context_is_sent_once_in_batch_mode_and_with_every_claim_per_item() {
        let model = Scripted::rules();
        grade(&payload(ANSWER, json!({})), &model).expect("graded");
        let verify = &model.prompts()[1];
        assert_eq!(verify.matches("<context>").count(), 1);
        assert_eq!(verify.matches("<claim n=").count(), 3);
        let model = Scripted::rules();
        grade(&payload(ANSWER, json!({"mode": "per_item"})), &model).expect("graded");
        assert!(
            model.prompts()[1..]
                .iter()
                .all(|p| p.matches("<claim n=").count() == 1 && p.contains("<context>"))
        );
    }

    #[test]
    fn zero_claims_score_the_empty_score_without_a_verdict_call() {
        for (config, want) in [(json!({}), 1.0), (json!({"empty_score": 0}), 0.0)] {
            let model = Scripted::new(|_| Ok("{\"claims\": []}".to_owned()));
            let r = grade(&payload("I don't know.", config), &model).expect("graded");
            assert_eq!(r.score(), want);
            assert_eq!(model.round_trips(), 1, "only the extraction");
        }
        let model = Scripted::rules();
        let r = grade(&payload("", json!({})), &model).expect("graded");
        assert_eq!(
            (r.score(), model.round_trips()),
            (1.0, 0),
            "an empty answer needs no call"
        );
    }

    #[test]
    fn sentence_split_needs_no_extraction_call() {
        let model = Scripted::rules();
        let r = grade(&payload(ANSWER, json!({"split": "sentences"})), &model).expect("graded");
        assert!((r.score() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(r.details().expect("details")["model_calls"], json!({"verdicts": 1}));
    }

    #[test]
    fn a_budget_too_small_fails_before_spending_and_names_the_fix() {
        let model = Scripted::rules().with_budget(1, 0);
        let error = grade(&payload(ANSWER, json!({})), &model)
            .expect_err("too small")
            .to_string();
        assert_eq!(
            error,
            "faithfulness needs 2 more model call(s) (1 to list the claims and 1 or more for their verdicts) but \
             the proxy allows 1 more (max_calls 1); set `target: {max_calls: 2}` or more on the evaluator"
        );
        assert_eq!(model.round_trips(), 0);
        let model = Scripted::rules().with_budget(3, 0);
        let error = grade(&payload(ANSWER, json!({"mode": "per_item"})), &model)
            .expect_err("too small")
            .to_string();
        assert!(
            error.starts_with(
                "faithfulness needs 3 more model call(s) (1 per claim for the verdicts) but the proxy allows 2 more"
            ),
            "{error}"
        );
    }

    #[test]
    fn unknown_settings_are_errors() {
        let error = grade(&payload(ANSWER, json!({"treshold": 0.5})), &Scripted::rules())
            .expect_err("typo")
            .to_string();
        assert!(error.starts_with("config `treshold`: agentv-faithfulness has no such setting; its settings are: context, context_from, empty_score, extract_instructions, include_reason, instructions, judge_target, mode, on_item_error, retrieval_calls, retrieval_tool, split, strict_mode, system_prompt, threshold"), "{error}");
    }
}
