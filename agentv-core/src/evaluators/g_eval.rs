//! `g-eval` (promptfoo): G-Eval in two calls (`docs/promptfoo.md#g-eval`). The grading model
//! first writes 3–4 evaluation steps for the criteria `value`, then scores the answer from 0
//! to 10 by them; the score is that over 10 and passes at `threshold` (default 0.7). A list
//! `value` is graded per criterion and averaged. `not-g-eval` inverts pass and score. An answer
//! that does not give steps, or a score in range with a reason, is a grader error.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::promptfoo_check::PfResult;
use super::promptfoo_graded::{self as graded, Calls, Grading};
use super::{GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind, describe};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "g-eval",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["g-eval"],
    },
    doc: "G-Eval: a grading model writes evaluation steps for the criteria `value`, then scores the answer 0–10 by them.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("value", Kind::Any, "The criteria: text, or a list of texts graded one by one and averaged.").required(),
    graded::THRESHOLD,
    graded::PROVIDER,
    graded::RUBRIC_PROMPT,
];
const KEYS: KeyTable = KeyTable::new("g-eval", "G-Eval criteria graded by a model.", &[OWN]);

/// promptfoo's prompts (`GEVAL_PROMPT_STEPS`, `GEVAL_PROMPT_EVALUATE`).
pub const STEPS_PROMPT: &str = include_str!("promptfoo_graded/prompts/g_eval_steps.txt");
pub const EVALUATE_PROMPT: &str = include_str!("promptfoo_graded/prompts/g_eval_evaluate.txt");
const MAX_SCORE: f64 = 10.0;

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let value = f.take("value");
    let list = value.is_some_and(|n| n.as_seq().is_some());
    let criteria = match value {
        Some(n) if n.as_str().is_some() => vec![n.as_str().unwrap_or_default().to_owned()],
        Some(n) if n.as_seq().is_some_and(|items| items.iter().all(|i| i.as_str().is_some())) => {
            n.as_seq().unwrap_or_default().iter().filter_map(|i| i.as_str().map(str::to_owned)).collect()
        }
        Some(n) => {
            cx.drop_grader(
                n.pos,
                format!("`value` of g-eval must be a string or a list of strings, found {}", describe(n)),
                None,
            );
            return None;
        }
        None => {
            cx.drop_grader(f.pos, "g-eval is missing the required key `value`", Some("add `value: <criteria>`".to_owned()));
            return None;
        }
    };
    let threshold = super::promptfoo_check::threshold(f, cx).ok()?;
    let grading = Grading::parse(f, cx)?;
    Some(Arc::new(GEval {
        criteria,
        list,
        threshold: threshold.unwrap_or(0.7),
        grading,
        inverse: cx.take_inverse(),
    }))
}

/// A `g-eval` assertion as configured.
#[derive(Debug, Clone)]
pub struct GEval {
    pub criteria: Vec<String>,
    /// `value` was a list (its failures name the criterion).
    pub list: bool,
    pub threshold: f64,
    pub grading: Grading,
    pub inverse: bool,
}

graded::grader_asking!(GEval, run);

impl GEval {
    async fn run(&self, ctx: &GradeContext<'_>, calls: &mut Calls) -> Result<PfResult, String> {
        if ctx.case.question.is_empty() {
            return Err("No source text to estimate reply".to_owned());
        }
        if self.criteria.is_empty() {
            return Err("G-Eval assertion requires at least one criterion string in the value array.".to_owned());
        }
        let mut scores = Vec::new();
        let mut reasons = Vec::new();
        let n = self.criteria.len();
        for (i, criterion) in self.criteria.iter().enumerate() {
            match self.one(ctx, calls, criterion).await {
                Ok((score, reason)) => {
                    scores.push(score);
                    reasons.push(reason);
                }
                Err(e) if n > 1 || self.list => {
                    return Err(format!(
                        "G-Eval criterion {}/{n} ({}) failed: {e}",
                        i + 1,
                        Value::String(criterion.clone())
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        let mean = scores.iter().sum::<f64>() / scores.len() as f64;
        Ok(PfResult {
            pass: (mean >= self.threshold) != self.inverse,
            score: if self.inverse { 1.0 - mean } else { mean },
            reason: reasons.join("\n\n"),
        })
    }

    /// One criterion: its steps, then its score over 10 and the reason.
    async fn one(&self, ctx: &GradeContext<'_>, calls: &mut Calls, criterion: &str) -> Result<(f64, String), String> {
        let prompts = self.grading.rubric_prompt.as_ref().and_then(Value::as_object);
        let own = |key: &str| prompts.and_then(|p| p.get(key)).and_then(Value::as_str).filter(|s| !s.is_empty());
        let mut scope = Map::new();
        scope.insert("criteria".to_owned(), criterion.into());
        let prompt = graded::render(own("steps").unwrap_or(STEPS_PROMPT), &scope)?;
        let answer = calls.ask(ctx, &self.grading, &prompt).await?;
        let steps = steps(&answer)?;
        scope.insert("steps".to_owned(), steps.join("\n- ").into());
        scope.insert("maxScore".to_owned(), "10".into());
        scope.insert("input".to_owned(), graded::try_parse(&ctx.case.question));
        scope.insert("output".to_owned(), graded::try_parse(ctx.candidate_answer));
        let prompt = graded::render(own("evaluate").unwrap_or(EVALUATE_PROMPT), &scope)?;
        let answer = calls.ask(ctx, &self.grading, &prompt).await?;
        score(&answer)
    }
}

/// The first match of `{<start>.+}` on one line (JavaScript's `/\{…\.+\}/`, greedy, `.` not
/// crossing a line end).
fn braced<'t>(text: &'t str, start: &str) -> Option<&'t str> {
    for (i, _) in text.match_indices(start) {
        let line_end = text[i..].find('\n').map_or(text.len(), |e| i + e);
        let body = &text[i..line_end];
        if let Some(close) = body.rfind('}').filter(|&c| c > start.len()) {
            return Some(&body[..=close]);
        }
    }
    None
}

/// promptfoo's reading of the steps answer.
pub fn steps(answer: &str) -> Result<Vec<String>, String> {
    let found = braced(answer, "{\"steps\"")
        .ok_or_else(|| format!("LLM-proposed evaluation steps are not in JSON format: {answer}"))?;
    let parsed: Value = serde_json::from_str(found)
        .map_err(|e| format!("LLM-proposed evaluation steps are not in JSON format: {e}\n\n{answer}"))?;
    let steps = parsed.get("steps").cloned().unwrap_or(Value::Null);
    let Value::Array(items) = &steps else {
        return Err(format!("G-Eval steps response has invalid or missing steps: {}", js_json(&steps)));
    };
    if items.is_empty() {
        return Err("LLM does not propose any evaluation step".to_owned());
    }
    items
        .iter()
        .map(|s| s.as_str().filter(|t| !t.trim().is_empty()).map(str::to_owned))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| format!("G-Eval steps response contains invalid steps: {steps}"))
}

/// promptfoo's reading of the evaluation answer: `(score over 10, reason)`.
pub fn score(answer: &str) -> Result<(f64, String), String> {
    let found = braced(answer, "{").ok_or_else(|| format!("LLM-proposed evaluation result is not in JSON format: {answer}"))?;
    let parsed: Value = serde_json::from_str(found)
        .map_err(|e| format!("LLM-proposed evaluation result is not in JSON format: {e}\n\n{answer}"))?;
    let raw = parsed.get("score").cloned().unwrap_or(Value::Null);
    let score = match &raw {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) if !s.trim().is_empty() => graded::js_number(&raw),
        _ => f64::NAN,
    };
    if !score.is_finite() {
        return Err(format!("G-Eval result has invalid or missing score: {}", js_json(&raw)));
    }
    if !(0.0..=MAX_SCORE).contains(&score) {
        return Err(format!(
            "G-Eval result score {} is outside the expected 0-10 range",
            super::js::number(score)
        ));
    }
    match parsed.get("reason") {
        Some(Value::String(r)) if !r.trim().is_empty() => Ok((score / MAX_SCORE, r.clone())),
        other => Err(format!(
            "G-Eval result has invalid or missing reason: {}",
            other.map_or_else(|| "undefined".to_owned(), js_json)
        )),
    }
}

/// `JSON.stringify` of a value that may be missing.
fn js_json(value: &Value) -> String {
    if value.is_null() { "null".to_owned() } else { value.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::promptfoo_graded::testing::{graded, sent};
    use serde_json::json;

    #[test]
    fn g_eval_asks_for_steps_then_a_score_with_promptfoos_prompts() {
        let (grade, requests) = graded(
            "- {type: g-eval, value: Is polite, threshold: 0.5}",
            "Say hi",
            json!({}),
            "Hello!",
            &[r#"{"steps":["Check tone","Check greeting"]}"#, r#"{"score":8,"reason":"polite"}"#],
        );
        assert!(grade.error.is_none(), "{grade:?}");
        assert_eq!((grade.score, grade.reasoning.as_deref()), (0.8, Some("polite")));
        let first = sent(&requests[0]);
        assert_eq!(first[0].0, "user");
        assert!(first[0].1.contains("**EVALUATION CRITERIA**\nIs polite\n"));
        let second = &sent(&requests[1])[0].1;
        assert!(second.contains("**Evaluation Steps**\n- Check tone\n- Check greeting\nGiven the evaluation steps"));
        assert!(second.contains("an integer from 0 to 10, where 10 indicates"));
        assert!(second.contains("**Prompt**\nSay hi\n\n**Reply**\nHello!\n"));
    }

    #[test]
    fn g_eval_reads_answers_as_promptfoo_does() {
        assert_eq!(steps("Here: {\"steps\": [\"a\"]} ok").expect("steps"), ["a"]);
        assert!(steps("{\"steps\": []}").unwrap_err().contains("does not propose"));
        assert!(steps("no json").unwrap_err().starts_with("LLM-proposed evaluation steps are not in JSON format"));
        assert_eq!(score("{\"score\": \"7\", \"reason\": \"r\"}").expect("score"), (0.7, "r".to_owned()));
        assert_eq!(score("{\"score\": 11, \"reason\": \"r\"}").unwrap_err(), "G-Eval result score 11 is outside the expected 0-10 range");
        assert_eq!(score("{\"score\": 5}").unwrap_err(), "G-Eval result has invalid or missing reason: undefined");
        let (grade, _) = graded("- {type: not-g-eval, value: x}", "q", json!({}), "a", &[r#"{"steps":["s"]}"#, r#"{"score":2,"reason":"r"}"#]);
        assert!(grade.error.is_none());
        assert!((grade.score - 0.8).abs() < 1e-12, "{}", grade.score);
        let (grade, _) = graded("- {type: g-eval, value: [x, y]}", "q", json!({}), "a", &[r#"{"steps":["s"]}"#, "nope"]);
        assert_eq!(
            grade.error.as_deref(),
            Some("G-Eval criterion 1/2 (\"x\") failed: LLM-proposed evaluation result is not in JSON format: nope")
        );
    }
}
