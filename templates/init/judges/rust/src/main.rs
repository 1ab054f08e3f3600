//! Scores an answer by the keywords it mentions (the evaluator's `keywords`) and, when the
//! evaluator has `target: true`, by the judge model's verdict, given the case's attached files
//! as context. Built on the agentv judge SDK, `agentv-eval-sdk` (docs/judges.md).

use std::process::ExitCode;

use agentv_eval_sdk::{InvokeRequest, JudgeResult, extract_json_object, run_judge};
use serde_json::Value;

fn main() -> ExitCode {
    run_judge(|payload, target| {
        let answer = payload.answer_text()?;
        let keywords: Vec<&str> = payload
            .config
            .get("keywords")
            .and_then(Value::as_array)
            .map(|words| words.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut result = JudgeResult::default();
        for word in &keywords {
            let mentioned = answer.to_lowercase().contains(&word.to_lowercase());
            result.check(mentioned, format!("mentions {word}"));
        }
        let mut scores = Vec::new();
        if !keywords.is_empty() {
            scores.push(result.hits().len() as f64 / keywords.len() as f64);
        }

        if let Some(target) = target {
            // the evaluator has `target: true`
            let mut context = Vec::new();
            for path in &payload.input_files {
                context.push(std::fs::read_to_string(path)?);
            }
            let context = if context.is_empty() { "(none)".to_owned() } else { context.join("\n\n") };
            let question = format!(
                "Criteria: {}\n\nContext:\n{context}\n\nAnswer: {answer}\n\nDoes the answer meet the \
                 criteria, using only the context? Reply with JSON: {{\"score\": <0 to 1>, \"reasoning\": \"<why>\"}}",
                payload.criteria_text()
            );
            let reply = target.invoke(&InvokeRequest::new(question).system_prompt("You are a strict grader."))?;
            let verdict = extract_json_object(&reply.text()).unwrap_or_default();
            match verdict.get("score").and_then(Value::as_f64) {
                Some(score) if (0.0..=1.0).contains(&score) => {
                    scores.push(score);
                    let reasoning = verdict.get("reasoning").cloned().unwrap_or(Value::Null);
                    result = result.detail("model_reasoning", reasoning);
                }
                _ => {
                    scores.push(0.0);
                    result = result.miss("the judge model gave no usable score");
                }
            }
        }

        let score = scores.iter().sum::<f64>() / scores.len().max(1) as f64;
        let checks = result.hits().len() + result.misses().len();
        let reasoning = format!("{} of {checks} checks passed", result.hits().len());
        Ok(result.with_score(score)?.with_reasoning(reasoning))
    })
}
