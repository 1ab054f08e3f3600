//! **Contextual precision**: did the retriever rank the relevant chunks first?
//!
//! ```text
//! CP = (1/R) · Σₖ vₖ · precision@k
//! ```
//!
//! where vₖ is 1 when the chunk at rank k is relevant and 0 otherwise, precision@k is the share
//! of relevant chunks among the first k, and R is the number of relevant chunks; CP is 0 when
//! no chunk is relevant. Relevance is the judge model's yes/no: does the chunk help answer the
//! question (and reach the reference answer, when the case has one)?
//!
//! Model calls: `mode: batch` (default) 1, listing every chunk; `mode: per_item` one per chunk,
//! sent in one `invoke_batch`. No chunks retrieved: `empty_score` (default 0), no call.
//! A chunk left out by `on_item_error: skip` is removed from the ranking.
//!
//! Example: relevant chunks at ranks 1 and 3 of 3 give (1/1 + 2/3) / 2 = 0.833.

use agentv_eval_sdk::{CodeJudgePayload, JudgeResult, TargetClient};
use serde_json::{Value, json};

use crate::Error;
use crate::config::Config;
use crate::context::{self, ContextSettings};
use crate::model::{JudgeModel, Session, Verdict, VerdictRequest, ask_verdicts, parse_verdict};
use crate::outcome::{Outcome, excerpt, round};
use crate::prompt::{assemble, block, numbered, verdict_reply, verdicts_reply};
use crate::settings::{ModelSettings, Scoring};

/// The metric's name in `details.metric` and in messages.
pub const NAME: &str = "contextual_precision";

/// The task paragraph of the verdict prompts (`instructions` replaces it).
pub const TASK: &str = "Decide whether each retrieved chunk is relevant: whether it contains information that helps \
answer the question (and reach the reference answer, when one is given). A chunk that is on the topic but does not \
help is not relevant.";

/// CP, and precision@k at every rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Precision {
    pub score: f64,
    pub precision_at_k: Vec<f64>,
    pub relevant: usize,
}

/// CP of a ranking given as relevant (true) or not, best rank first.
pub fn score(relevant: &[bool]) -> Precision {
    let mut seen = 0;
    let mut sum = 0.0;
    let mut precision_at_k = Vec::with_capacity(relevant.len());
    for (k, &is_relevant) in relevant.iter().enumerate() {
        if is_relevant {
            seen += 1;
        }
        let precision = seen as f64 / (k + 1) as f64;
        precision_at_k.push(precision);
        if is_relevant {
            sum += precision;
        }
    }
    Precision {
        score: if seen == 0 { 0.0 } else { sum / seen as f64 },
        precision_at_k,
        relevant: seen,
    }
}

/// The formula with its terms: `CP = (1/1 + 2/3) / 2 = 0.833`.
pub fn formula(relevant: &[bool]) -> String {
    let p = score(relevant);
    if p.relevant == 0 {
        return "no retrieved chunk is relevant, so contextual precision is 0".to_owned();
    }
    let terms: Vec<String> = relevant
        .iter()
        .enumerate()
        .filter(|(_, r)| **r)
        .enumerate()
        .map(|(seen, (k, _))| format!("{}/{}", seen + 1, k + 1))
        .collect();
    format!("CP = ({}) / {} = {}", terms.join(" + "), p.relevant, round(p.score))
}

fn data_blocks(question: &str, reference: &str) -> Vec<String> {
    let mut blocks = vec![block("question", question)];
    if !reference.trim().is_empty() {
        blocks.push(block("reference_answer", reference));
    }
    blocks
}

/// The `batch` prompt: every chunk, one verdict each.
pub fn batch_prompt(
    question: &str,
    reference: &str,
    chunks: &[String],
    instructions: Option<&str>,
    include_reason: bool,
) -> String {
    let mut blocks = data_blocks(question, reference);
    blocks.extend(
        chunks
            .iter()
            .enumerate()
            .map(|(i, c)| numbered("chunk", "rank", i + 1, c)),
    );
    assemble(TASK, instructions, &blocks, &verdicts_reply("chunk", include_reason))
}

/// The `per_item` prompt of the chunk at `rank` (from 1).
pub fn chunk_prompt(
    question: &str,
    reference: &str,
    rank: usize,
    chunk: &str,
    instructions: Option<&str>,
    include_reason: bool,
) -> String {
    let mut blocks = data_blocks(question, reference);
    blocks.push(numbered("chunk", "rank", rank, chunk));
    assemble(TASK, instructions, &blocks, &verdict_reply(include_reason))
}

/// Grades one case with `model` (the SDK's `TargetClient`, or a test double).
pub fn grade(payload: &CodeJudgePayload, model: &dyn JudgeModel) -> Result<JudgeResult, Error> {
    let mut config = Config::new(&payload.config, "agentv-contextual-precision");
    let scoring = Scoring::read(&mut config, 0.0)?;
    let settings = ModelSettings::read(&mut config)?;
    let context_settings = ContextSettings::read(&mut config)?;
    config.finish()?;

    let context = context::retrieved_context(payload, &context_settings)?;
    let question = context::question(payload);
    let reference = context::reference_answer(payload);
    let chunks = &context.chunks;
    let mut session = Session::open(model, NAME, &settings)?;
    let instructions = settings.instructions.as_deref();
    let include_reason = scoring.include_reason;
    let batch = || batch_prompt(&question, &reference, chunks, instructions, include_reason);
    let item = |i: usize| chunk_prompt(&question, &reference, i + 1, &chunks[i], instructions, include_reason);
    let request = VerdictRequest {
        stage: "verdicts",
        noun: "chunk",
        list_key: "verdicts",
        batch_prompt: &batch,
        item_prompt: &item,
        parse: &|v: &Value| parse_verdict(v),
    };
    let verdicts = ask_verdicts(&mut session, settings.on_item_error, chunks.len(), &request)?;

    let ranked: Vec<(usize, &Verdict)> = verdicts
        .items
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.as_ref().map(|v| (i, v)))
        .collect();
    let relevant: Vec<bool> = ranked.iter().map(|(_, v)| v.yes).collect();
    let precision = score(&relevant);
    let (value, reasoning) = if chunks.is_empty() {
        (scoring.empty_score, "no chunk was retrieved".to_owned())
    } else {
        (precision.score, formula(&relevant))
    };
    let mut out = Outcome::new(NAME, value, reasoning);
    let mut listed = Vec::new();
    for ((i, verdict), p) in ranked.iter().zip(&precision.precision_at_k) {
        let label = if verdict.yes { "relevant" } else { "not relevant" };
        out.check(
            verdict.yes,
            format!("rank {}: {label}: {}", i + 1, excerpt(&chunks[*i], 80)),
        );
        let mut entry = json!({"rank": i + 1, "text": chunks[*i], "relevant": verdict.yes, "precision_at_k": p});
        if include_reason {
            entry["reason"] = json!(verdict.reason);
        }
        listed.push(entry);
    }
    out.asked(settings.mode.as_str(), None, Some(context.source))
        .detail("relevant_count", precision.relevant)
        .detail("verdicts", listed)
        .finish_judged(verdicts.skipped, session.calls(), &scoring)
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

    #[test]
    fn worked_examples() {
        // relevance by rank → CP
        let cases: &[(&[bool], f64, &str)] = &[
            (
                &[true, false, true],
                (1.0 + 2.0 / 3.0) / 2.0,
                "CP = (1/1 + 2/3) / 2 = 0.833",
            ),
            (
                &[false, true, true],
                (0.5 + 2.0 / 3.0) / 2.0,
                "CP = (1/2 + 2/3) / 2 = 0.583",
            ),
            (&[true, true, false], 1.0, "CP = (1/1 + 2/2) / 2 = 1"),
            (&[false, false, true], 1.0 / 3.0, "CP = (1/3) / 1 = 0.333"),
            (
                &[false, false],
                0.0,
                "no retrieved chunk is relevant, so contextual precision is 0",
            ),
            (&[], 0.0, "no retrieved chunk is relevant, so contextual precision is 0"),
        ];
        for (relevant, want, text) in cases {
            let got = score(relevant);
            assert!((got.score - want).abs() < 1e-12, "{relevant:?}: {}", got.score);
            assert_eq!(formula(relevant), *text);
        }
        assert_eq!(score(&[true, false, true]).precision_at_k, [1.0, 0.5, 2.0 / 3.0]);
    }

    fn refund_window(config: serde_json::Value) -> CodeJudgePayload {
        CodeJudgePayload::from_value(json!({
            "input_messages": [{"role": "user", "content": "What is the refund window for online orders?"}],
            "output_messages": [
                {"role": "assistant", "tool_calls": [{"tool": "retrieve", "output": [
                    "Online orders can be refunded within 30 days of delivery.",
                    "Our stores open at 9am on weekdays.",
                    "Refunds are issued to the original payment method."
                ]}]},
                {"role": "assistant", "content": "Within 30 days."}
            ],
            "config": config
        }))
        .expect("payload")
    }

    #[test]
    fn grades_with_the_fake_model_in_both_modes() {
        for (mode, calls, trips) in [("batch", 1, 1), ("per_item", 3, 1)] {
            let model = Scripted::rules();
            let r = grade(&refund_window(json!({"mode": mode})), &model).expect("graded");
            assert!((r.score() - 0.8333).abs() < 1e-4, "{mode}: {}", r.score());
            assert_eq!(r.reasoning(), Some("CP = (1/1 + 2/3) / 2 = 0.833"));
            let d = r.details().expect("details");
            assert_eq!(d["model_calls"], json!({"verdicts": calls}), "{mode}");
            assert_eq!(d["verdicts"][1]["relevant"], false);
            assert_eq!(model.round_trips(), trips);
            assert_eq!(
                r.misses(),
                ["rank 2: not relevant: Our stores open at 9am on weekdays."]
            );
        }
    }

    #[test]
    fn prompt_holds_question_chunks_and_reply_format() {
        let model = Scripted::rules();
        grade(
            &refund_window(json!({"include_reason": false, "instructions": "Mine."})),
            &model,
        )
        .expect("graded");
        let prompt = &model.prompts()[0];
        assert!(
            prompt.starts_with(
                "Mine.\n\n<question>\nWhat is the refund window for online orders?\n</question>\n\n<chunk rank=\"1\">"
            ),
            "{prompt}"
        );
        assert!(
            prompt.ends_with("{\"verdicts\": [{\"verdict\": \"yes\" or \"no\"}]}"),
            "{prompt}"
        );
    }

    #[test]
    fn without_a_target_or_context_it_cannot_grade() {
        let p = refund_window(json!({}));
        assert_eq!(
            judge(&p, None).expect_err("no target").to_string(),
            "contextual_precision asks the judge model: set `target: true` (or `target: {max_calls: N}`) on the evaluator"
        );
        let p = refund_window(json!({"retrieval_tool": "search"}));
        let error = grade(&p, &Scripted::rules()).expect_err("no context").to_string();
        assert!(error.contains("no `search` tool call"), "{error}");
    }
}
