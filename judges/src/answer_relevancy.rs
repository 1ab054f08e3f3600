//! **Answer relevancy**: does what the answer says address the question?
//!
//! ```text
//! answer relevancy = relevant statements / statements
//! ```
//!
//! Two stages: the model breaks the answer into statements (one call; `split: sentences` takes
//! its sentences instead, with no call), then decides for each whether it is relevant to the
//! question (`mode: batch`: one call listing every statement; `mode: per_item`: one call per
//! statement, all in one `invoke_batch`). No retrieved context is needed.
//!
//! **Zero statements** (an empty answer): `empty_score`, default **0**: an answer that says
//! nothing does not address the question.
//!
//! Example: an answer of 3 statements, 2 about the question, scores 2/3 = 0.667.

use agentv_eval_sdk::{CodeJudgePayload, JudgeResult, TargetClient};

use crate::Error;
use crate::config::Config;
use crate::context;
use crate::model::{JudgeModel, Session};
use crate::outcome::{Outcome, count, ratio, round};
use crate::prompt::{assemble, block};
use crate::settings::{ModelSettings, Scoring, SplitSettings};
use crate::statements::{self, StatementTask};

pub const NAME: &str = "answer_relevancy";

/// The task paragraph of the statement-listing prompt (`extract_instructions` replaces it).
pub const EXTRACT_TASK: &str = "Break the answer into its statements, each a short standalone sentence (replace \
pronouns by what they refer to). Keep every statement, relevant or not.";

/// The task paragraph of the verdict prompts (`instructions` replaces it).
pub const VERDICT_TASK: &str = "Decide for each statement of an answer whether it is relevant to the question: \"yes\" \
when it helps answer the question, \"no\" when it is off topic or filler.";

/// Relevant statements / statements; `empty` when there are none.
pub fn score(relevant: usize, statements: usize, empty: f64) -> f64 {
    ratio(relevant, statements, empty)
}

/// The statement-listing prompt.
pub fn extract_prompt(answer: &str, instructions: Option<&str>) -> String {
    assemble(
        EXTRACT_TASK,
        instructions,
        &[block("answer", answer)],
        "Reply with only a JSON object:\n{\"statements\": [\"<statement>\", ...]}",
    )
}

pub fn grade(payload: &CodeJudgePayload, model: &dyn JudgeModel) -> Result<JudgeResult, Error> {
    let mut config = Config::new(&payload.config, "agentv-answer-relevancy");
    let scoring = Scoring::read(&mut config, 0.0)?;
    let settings = ModelSettings::read(&mut config)?;
    let split = SplitSettings::read(&mut config)?;
    config.finish()?;

    let question = context::question(payload);
    if question.trim().is_empty() {
        return Err(Error::Input(
            "answer relevancy judges the answer against the question, but the case has no input text".to_owned(),
        ));
    }
    let answer = payload.answer_text()?;
    let mut session = Session::open(model, NAME, &settings)?;
    let task = StatementTask {
        noun: "statement",
        key: "statements",
        text: &answer,
        extract_prompt: &|instructions| extract_prompt(&answer, instructions),
        verdict_task: VERDICT_TASK,
        blocks: vec![block("question", &question)],
    };
    let judged = statements::judge_statements(&mut session, &split, &settings, scoring.include_reason, &task)?;
    let (relevant, total) = statements::tally(&judged);
    let value = score(relevant, total, scoring.empty_score);
    let reasoning = if total == 0 {
        format!(
            "the answer has no statements, so answer relevancy is the empty_score {}",
            round(value)
        )
    } else {
        format!(
            "answer relevancy = {relevant} relevant / {} = {}",
            count(total, "statement"),
            round(value)
        )
    };
    let mut out = Outcome::new(NAME, value, reasoning);
    statements::check_each(&mut out, &judged, "statement", ("relevant", "not relevant"));
    out.asked(settings.mode.as_str(), Some(split.split.as_str()), None)
        .detail("relevant_count", relevant)
        .detail(
            "statements",
            statements::listed(&judged, "relevant", scoring.include_reason),
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
        for (relevant, total, empty, want) in [
            (2, 3, 0.0, 2.0 / 3.0),
            (1, 1, 0.0, 1.0),
            (0, 2, 0.0, 0.0),
            (0, 0, 0.0, 0.0),
            (0, 0, 1.0, 1.0),
        ] {
            assert_eq!(score(relevant, total, empty), want);
        }
    }

    fn payload(answer: &str, config: Value) -> CodeJudgePayload {
        CodeJudgePayload::from_value(json!({
            "question": "What is the refund window for online orders?",
            "candidate_answer": answer,
            "config": config
        }))
        .expect("payload")
    }

    #[test]
    fn two_of_three_statements_relevant() {
        let answer = "Online orders can be refunded within 30 days. Refunds go to your card. Have a lovely weekend!";
        for (mode, calls) in [("batch", 1), ("per_item", 3)] {
            let model = Scripted::rules();
            let r = grade(&payload(answer, json!({"mode": mode})), &model).expect("graded");
            assert!((r.score() - 2.0 / 3.0).abs() < 1e-12, "{}", r.score());
            assert_eq!(
                r.reasoning(),
                Some("answer relevancy = 2 relevant / 3 statements = 0.667")
            );
            assert_eq!(r.misses(), ["statement 3: not relevant: Have a lovely weekend!"]);
            assert_eq!(
                r.details().expect("details")["model_calls"],
                json!({"extract": 1, "verdicts": calls})
            );
            assert_eq!(model.round_trips(), 2);
        }
    }

    #[test]
    fn an_empty_answer_scores_the_empty_score() {
        let model = Scripted::rules();
        let r = grade(&payload("", json!({})), &model).expect("graded");
        assert_eq!((r.score(), model.round_trips()), (0.0, 0));
        assert_eq!(
            r.reasoning(),
            Some("the answer has no statements, so answer relevancy is the empty_score 0")
        );
    }

    #[test]
    fn strict_threshold_makes_the_score_binary() {
        let answer = "Online orders can be refunded within 30 days. Have a lovely weekend!";
        let r = grade(
            &payload(answer, json!({"threshold": 0.5, "strict_mode": true})),
            &Scripted::rules(),
        )
        .expect("graded");
        assert_eq!(r.score(), 1.0);
        assert_eq!(r.details().expect("details")["metric_score"], 0.5);
        let r = grade(&payload(answer, json!({"strict_mode": true})), &Scripted::rules()).expect("graded");
        assert_eq!(r.score(), 0.0);
    }
}
