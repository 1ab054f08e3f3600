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
            let question = format!(
                "Criteria: {}\n\nAnswer: {answer}\n\nDoes the answer meet the criteria? \
                 Reply with JSON: {{\"score\": <0 to 1>, \"reason\": \"<why>\"}}",
                payload.criteria_text()
            );
            let reply = target.invoke(&InvokeRequest::new(question).system_prompt("You are a strict grader."))?;
            let verdict = extract_json_object(&reply.text()).unwrap_or_default();
            match verdict.get("score").and_then(Value::as_f64) {
                Some(score) if (0.0..=1.0).contains(&score) => {
                    scores.push(score);
                    result = result.detail("model_reason", verdict.get("reason").cloned().unwrap_or(Value::Null));
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
        // An out-of-range score is an error here, never clamped (agentv would reject it).
        Ok(result.with_score(score)?.with_reasoning(reasoning))
    })
}
