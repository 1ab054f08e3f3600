//! **Contextual relevancy**: how much of what the retriever returned is relevant to the input?
//!
//! ```text
//! contextual relevancy = relevant statements of the retrieved chunks / statements of the chunks
//! ```
//!
//! One stage: for each chunk the model lists the statements it makes and decides for each
//! whether it is relevant to the question, so splitting and judging take the same call.
//! `mode: batch` (default): one call listing every chunk, replying one list per chunk;
//! `mode: per_item`: one call per chunk, all in one `invoke_batch`. No chunks retrieved, or no
//! statements in them: `empty_score`, default **0**. A chunk left out by `on_item_error: skip`
//! counts for nothing.
//!
//! Example: chunks of 2 and 3 statements with 1 and 2 relevant score (1 + 2) / 5 = 0.6.

use agentv_eval_sdk::{CodeJudgePayload, JudgeResult, TargetClient};
use serde_json::{Value, json};

use crate::Error;
use crate::config::Config;
use crate::context::{self, ContextSettings};
use crate::model::{JudgeModel, Session, Verdict, VerdictRequest, ask_verdicts, parse_verdict};
use crate::outcome::{Outcome, count, excerpt, ratio, round};
use crate::prompt::{assemble, block, numbered, reason_field};
use crate::settings::{ModelSettings, Scoring};

pub const NAME: &str = "contextual_relevancy";

/// The task paragraph of the prompts (`instructions` replaces it).
pub const TASK: &str = "For each retrieved chunk, list the statements it makes, each a short standalone sentence, \
and decide for each statement whether it is relevant to the question: \"yes\" when it helps answer the question, \
\"no\" otherwise.";

/// A statement of a chunk with its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementVerdict {
    pub statement: String,
    pub verdict: Verdict,
}

/// Relevant statements / statements over every judged chunk; `empty` when there are none.
pub fn score(chunks: &[Vec<bool>], empty: f64) -> f64 {
    let total = chunks.iter().map(Vec::len).sum();
    let relevant = chunks.iter().flatten().filter(|r| **r).count();
    ratio(relevant, total, empty)
}

fn statements_reply(include_reason: bool) -> String {
    format!(
        "{{\"statements\": [{{\"statement\": \"<statement>\", \"verdict\": \"yes\" or \"no\"{}}}]}}",
        reason_field(include_reason)
    )
}

/// The `batch` prompt: every chunk, one statement list each.
pub fn batch_prompt(question: &str, chunks: &[String], instructions: Option<&str>, include_reason: bool) -> String {
    let mut blocks = vec![block("question", question)];
    blocks.extend(
        chunks
            .iter()
            .enumerate()
            .map(|(i, c)| numbered("chunk", "rank", i + 1, c)),
    );
    let reply = format!(
        "Reply with only a JSON object holding one entry per chunk, in the order given:\n{{\"chunks\": [{}]}}",
        statements_reply(include_reason)
    );
    assemble(TASK, instructions, &blocks, &reply)
}

/// The `per_item` prompt of the chunk at `rank` (from 1).
pub fn chunk_prompt(
    question: &str,
    rank: usize,
    chunk: &str,
    instructions: Option<&str>,
    include_reason: bool,
) -> String {
    let blocks = [block("question", question), numbered("chunk", "rank", rank, chunk)];
    let reply = format!("Reply with only a JSON object:\n{}", statements_reply(include_reason));
    assemble(TASK, instructions, &blocks, &reply)
}

/// Reads one chunk's `{"statements": [{"statement", "verdict", "reason"?}]}`.
pub fn parse_chunk(entry: &Value) -> Result<Vec<StatementVerdict>, String> {
    let Some(Value::Array(list)) = entry.get("statements") else {
        return Err(format!("no `statements` list in {}", excerpt(&entry.to_string(), 80)));
    };
    list.iter()
        .enumerate()
        .map(|(i, item)| {
            let statement = item
                .get("statement")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("statement {} has no `statement` text", i + 1))?;
            let verdict = parse_verdict(item).map_err(|e| format!("statement {}: {e}", i + 1))?;
            Ok(StatementVerdict {
                statement: statement.to_owned(),
                verdict,
            })
        })
        .collect()
}

pub fn grade(payload: &CodeJudgePayload, model: &dyn JudgeModel) -> Result<JudgeResult, Error> {
    let mut config = Config::new(&payload.config, "agentv-contextual-relevancy");
    let scoring = Scoring::read(&mut config, 0.0)?;
    let settings = ModelSettings::read(&mut config)?;
    let context_settings = ContextSettings::read(&mut config)?;
    config.finish()?;

    let context = context::retrieved_context(payload, &context_settings)?;
    let question = context::question(payload);
    let chunks = &context.chunks;
    let mut session = Session::open(model, NAME, &settings)?;
    let instructions = settings.instructions.as_deref();
    let include_reason = scoring.include_reason;
    let batch = || batch_prompt(&question, chunks, instructions, include_reason);
    let item = |i: usize| chunk_prompt(&question, i + 1, &chunks[i], instructions, include_reason);
    let request = VerdictRequest {
        stage: "verdicts",
        noun: "chunk",
        list_key: "chunks",
        batch_prompt: &batch,
        item_prompt: &item,
        parse: &parse_chunk,
    };
    let verdicts = ask_verdicts(&mut session, settings.on_item_error, chunks.len(), &request)?;

    let judged: Vec<Vec<bool>> = verdicts
        .items
        .iter()
        .flatten()
        .map(|list| list.iter().map(|s| s.verdict.yes).collect())
        .collect();
    let total: usize = judged.iter().map(Vec::len).sum();
    let relevant = judged.iter().flatten().filter(|r| **r).count();
    let value = score(&judged, scoring.empty_score);
    let reasoning = if total == 0 {
        format!(
            "the retrieved context has no statements, so contextual relevancy is the empty_score {}",
            round(value)
        )
    } else {
        format!(
            "contextual relevancy = {relevant} relevant / {} = {}",
            count(total, "statement"),
            round(value)
        )
    };
    let mut out = Outcome::new(NAME, value, reasoning);
    let mut listed = Vec::new();
    for (i, list) in verdicts.items.iter().enumerate() {
        let Some(list) = list else { continue };
        let yes = list.iter().filter(|s| s.verdict.yes).count();
        out.check(
            yes == list.len(),
            format!(
                "chunk {}: {yes} of {} statements relevant: {}",
                i + 1,
                list.len(),
                excerpt(&chunks[i], 60)
            ),
        );
        let statements: Vec<Value> = list
            .iter()
            .map(|s| {
                let mut entry = json!({"text": s.statement, "relevant": s.verdict.yes});
                if include_reason {
                    entry["reason"] = json!(s.verdict.reason);
                }
                entry
            })
            .collect();
        listed.push(json!({"rank": i + 1, "text": chunks[i], "statements": statements}));
    }
    out.asked(settings.mode.as_str(), None, Some(context.source))
        .detail("relevant_count", relevant)
        .detail("statement_count", total)
        .detail("chunks", listed)
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
    fn worked_scores() {
        let cases: &[(&[&[bool]], f64)] = &[
            (&[&[true, false], &[true, true, false]], 3.0 / 5.0),
            (&[&[true], &[true]], 1.0),
            (&[&[false], &[]], 0.0),
            (&[], 0.0),
        ];
        for (chunks, want) in cases {
            let chunks: Vec<Vec<bool>> = chunks.iter().map(|c| c.to_vec()).collect();
            assert_eq!(score(&chunks, 0.0), *want, "{chunks:?}");
        }
    }

    fn payload(config: Value) -> CodeJudgePayload {
        CodeJudgePayload::from_value(json!({
            "input_messages": [{"role": "user", "content": "How are refunds paid?"}],
            "output_messages": [{"role": "assistant", "tool_calls": [{"tool": "retrieve", "output": [
                "Refunds are issued to the original payment method. Gift cards never expire.",
                "Parking is free on Sundays."
            ]}]}],
            "config": config
        }))
        .expect("payload")
    }

    #[test]
    fn one_of_three_statements_relevant() {
        for (mode, calls) in [("batch", 1), ("per_item", 2)] {
            let model = Scripted::rules();
            let r = grade(&payload(json!({"mode": mode})), &model).expect("graded");
            assert!((r.score() - 1.0 / 3.0).abs() < 1e-12, "{mode}: {}", r.score());
            assert_eq!(
                r.reasoning(),
                Some("contextual relevancy = 1 relevant / 3 statements = 0.333")
            );
            let d = r.details().expect("details");
            assert_eq!(d["model_calls"], json!({"verdicts": calls}));
            assert_eq!(d["chunks"][0]["statements"][1]["relevant"], false);
            assert_eq!(model.round_trips(), 1);
        }
    }

    #[test]
    fn chunk_replies() {
        assert_eq!(
            parse_chunk(&json!({"statements": [{"statement": "s", "verdict": "yes"}]})),
            Ok(vec![StatementVerdict {
                statement: "s".to_owned(),
                verdict: Verdict {
                    yes: true,
                    reason: None
                }
            }])
        );
        assert_eq!(
            parse_chunk(&json!({"statements": [{"verdict": "yes"}]})),
            Err("statement 1 has no `statement` text".to_owned())
        );
        assert_eq!(
            parse_chunk(&json!({"statements": [{"statement": "s", "verdict": "?"}]})),
            Err("statement 1: verdict `?` is neither yes nor no".to_owned())
        );
        assert_eq!(
            parse_chunk(&json!({"verdict": "yes"})),
            Err("no `statements` list in {\"verdict\":\"yes\"}".to_owned())
        );
    }
}
