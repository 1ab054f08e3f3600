//! Contextual precision: are the chunks a retriever ranked first the relevant ones?
//!
//! CP = (1/R) · Σₖ vₖ · precision@k, where vₖ is 1 when the k-th retrieved chunk is relevant,
//! precision@k is the share of relevant chunks among the first k, and R is the number of
//! relevant chunks (CP = 0 when R = 0). Relevance is judged by the eval's judge target through
//! the agentv proxy, so this program needs no model credentials.
//!
//! Config keys (from the evaluator's YAML):
//! - `mode`: `batch` (default; one call asking for every verdict as a JSON array) or
//!   `per_chunk` (one call per chunk, sent together with `invoke_batch`);
//! - `retrieval_tool`: name of the tool call whose output holds the chunks (default `retrieve`).

use std::process::ExitCode;

use agentv_eval_sdk::{CodeJudgePayload, InvokeRequest, JudgeResult, ResultError, TargetClient, run_judge};
use serde_json::{Value, json};

fn main() -> ExitCode {
    run_judge(|payload, target| {
        let target = target.ok_or("this judge calls the judge target: set `target: true` on the evaluator")?;
        let tool = config_str(payload, "retrieval_tool").unwrap_or("retrieve");
        let chunks = retrieved_chunks(payload, tool)?;
        let (mode, verdicts) = match config_str(payload, "mode").unwrap_or("batch") {
            "batch" => ("batch", batch_verdicts(target, &payload.question, &chunks)?),
            "per_chunk" => ("per_chunk", per_chunk_verdicts(target, &payload.question, &chunks)?),
            other => return Err(format!("unknown mode `{other}`: use batch or per_chunk").into()),
        };
        Ok(result(mode, &verdicts)?)
    })
}

fn config_str<'a>(payload: &'a CodeJudgePayload, key: &str) -> Option<&'a str> {
    payload.config.get(key).and_then(Value::as_str)
}

/// One relevance verdict.
#[derive(Debug, Clone, PartialEq)]
struct Verdict {
    relevant: bool,
    reason: String,
}

/// The chunks the retriever returned, in rank order: the output of the last `tool` call, an
/// array of strings or of objects with `text` or `content`.
fn retrieved_chunks(payload: &CodeJudgePayload, tool: &str) -> Result<Vec<String>, String> {
    let output = payload
        .output_messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .filter(|c| c.tool == tool)
        .filter_map(|c| c.output.as_ref())
        .next_back()
        .ok_or_else(|| format!("no `{tool}` tool call with an output in the answer's trace"))?;
    let items = output
        .as_array()
        .ok_or_else(|| format!("the `{tool}` output is not an array of chunks"))?;
    items
        .iter()
        .map(|item| match item {
            Value::String(s) => Ok(s.clone()),
            other => other
                .get("text")
                .or_else(|| other.get("content"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("chunk {other} has no text")),
        })
        .collect()
}

fn chunk_block(rank: usize, text: &str) -> String {
    format!("<chunk rank=\"{rank}\">\n{text}\n</chunk>")
}

const SYSTEM: &str = "You judge whether retrieved context is relevant to a question. Be strict: a chunk is relevant only if it helps answer the question.";

fn batch_verdicts(
    target: &TargetClient,
    question: &str,
    chunks: &[String],
) -> Result<Vec<Verdict>, Box<dyn std::error::Error>> {
    let listing: Vec<String> = chunks.iter().enumerate().map(|(i, c)| chunk_block(i + 1, c)).collect();
    let prompt = format!(
        "Question:\n{question}\n\nRetrieved chunks, in rank order:\n{}\n\nFor every chunk, in order, decide whether it is relevant to the question. Reply with only a JSON array with one object per chunk: [{{\"verdict\": \"yes\" or \"no\", \"reason\": \"...\"}}].",
        listing.join("\n")
    );
    let answer = target.invoke(&InvokeRequest::new(prompt).system_prompt(SYSTEM))?;
    let text = answer.text();
    let items = first_json_array(&text).ok_or_else(|| format!("the judge did not answer a JSON array: {text}"))?;
    if items.len() != chunks.len() {
        return Err(format!("the judge gave {} verdicts for {} chunks", items.len(), chunks.len()).into());
    }
    Ok(items.iter().map(verdict_of).collect())
}

fn per_chunk_verdicts(
    target: &TargetClient,
    question: &str,
    chunks: &[String],
) -> Result<Vec<Verdict>, Box<dyn std::error::Error>> {
    let requests: Vec<InvokeRequest> = chunks
        .iter()
        .enumerate()
        .map(|(i, chunk)| {
            let prompt = format!(
                "Question:\n{question}\n\n{}\n\nIs this chunk relevant to the question? Answer yes or no, then a short reason.",
                chunk_block(i + 1, chunk)
            );
            InvokeRequest::new(prompt).system_prompt(SYSTEM)
        })
        .collect();
    let answers = target.invoke_batch(&requests)?;
    answers
        .into_iter()
        .enumerate()
        .map(|(i, a)| match a {
            Err(e) => Err(format!("verdict for chunk {} failed: {}", i + 1, e.message()).into()),
            Ok(answer) => Ok(verdict_of_text(&answer.text())),
        })
        .collect()
}

fn verdict_of(item: &Value) -> Verdict {
    let word = item.get("verdict").and_then(Value::as_str).unwrap_or_default();
    Verdict {
        relevant: word.trim().eq_ignore_ascii_case("yes"),
        reason: item
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    }
}

fn verdict_of_text(text: &str) -> Verdict {
    let trimmed = text.trim();
    Verdict {
        relevant: trimmed.to_ascii_lowercase().starts_with("yes"),
        reason: trimmed.to_owned(),
    }
}

/// The first JSON array in `text` (bare, or inside prose or code fences).
fn first_json_array(text: &str) -> Option<Vec<Value>> {
    text.match_indices('[').find_map(|(start, _)| {
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(Value::Array(items))) => Some(items),
            _ => None,
        }
    })
}

/// CP and precision@k for each rank.
fn contextual_precision(relevant: &[bool]) -> (f64, Vec<f64>) {
    let mut seen = 0;
    let mut sum = 0.0;
    let mut precision_at = Vec::with_capacity(relevant.len());
    for (k, &is_relevant) in relevant.iter().enumerate() {
        if is_relevant {
            seen += 1;
        }
        let precision = seen as f64 / (k + 1) as f64;
        precision_at.push(precision);
        if is_relevant {
            sum += precision;
        }
    }
    let score = if seen == 0 { 0.0 } else { sum / seen as f64 };
    (score, precision_at)
}

fn result(mode: &str, verdicts: &[Verdict]) -> Result<JudgeResult, ResultError> {
    let relevant: Vec<bool> = verdicts.iter().map(|v| v.relevant).collect();
    let (score, precision_at) = contextual_precision(&relevant);
    let r = relevant.iter().filter(|v| **v).count();
    let terms: Vec<String> = relevant
        .iter()
        .zip(&precision_at)
        .enumerate()
        .filter(|(_, (v, _))| **v)
        .map(|(k, (_, _))| {
            let seen = relevant[..=k].iter().filter(|v| **v).count();
            format!("{seen}/{}", k + 1)
        })
        .collect();
    let mut out = JudgeResult::new(score)?.with_reasoning(if r == 0 {
        "no retrieved chunk is relevant, so contextual precision is 0".to_owned()
    } else {
        format!("CP = ({}) / {r} = {score:.3}", terms.join(" + "))
    });
    for (k, v) in verdicts.iter().enumerate() {
        let line = format!(
            "rank {}: {}",
            k + 1,
            if v.relevant { "relevant" } else { "not relevant" }
        );
        out = if v.relevant { out.hit(line) } else { out.miss(line) };
    }
    let per_chunk: Vec<Value> = verdicts
        .iter()
        .zip(&precision_at)
        .enumerate()
        .map(|(k, (v, p))| json!({"rank": k + 1, "relevant": v.relevant, "precision_at_k": p, "reason": v.reason}))
        .collect();
    Ok(out
        .detail("mode", mode)
        .detail("relevant_count", r)
        .detail("verdicts", per_chunk))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_examples() {
        let cases: &[(&[bool], f64)] = &[
            (&[true, false, true], (1.0 + 2.0 / 3.0) / 2.0),
            (&[false, true, true], (0.5 + 2.0 / 3.0) / 2.0),
            (&[true, true, false], 1.0),
            (&[false, false, false], 0.0),
            (&[], 0.0),
        ];
        for (relevant, want) in cases {
            let (got, _) = contextual_precision(relevant);
            assert!((got - want).abs() < 1e-12, "{relevant:?}: {got}");
        }
        assert!((contextual_precision(&[true, false, true]).0 - 0.8333).abs() < 1e-4);
    }

    #[test]
    fn reasoning_shows_the_terms() {
        let verdicts: Vec<Verdict> = [true, false, true]
            .iter()
            .map(|&relevant| Verdict {
                relevant,
                reason: String::new(),
            })
            .collect();
        let r = result("batch", &verdicts).expect("a valid score");
        assert_eq!(r.reasoning(), Some("CP = (1/1 + 2/3) / 2 = 0.833"));
        assert_eq!(r.hits(), ["rank 1: relevant", "rank 3: relevant"]);
        assert_eq!(r.misses(), ["rank 2: not relevant"]);
    }

    #[test]
    fn parses_verdicts_from_prose() {
        let items =
            first_json_array("Sure:\n```json\n[{\"verdict\": \"yes\"}, {\"verdict\": \"No\"}]\n```").expect("array");
        let relevant: Vec<bool> = items.iter().map(|i| verdict_of(i).relevant).collect();
        assert_eq!(relevant, [true, false]);
        assert!(verdict_of_text("Yes, it states the window.").relevant);
        assert!(!verdict_of_text("no").relevant);
    }
}
