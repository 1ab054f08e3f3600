//! `llm-rubric` (promptfoo): the grading model reads the answer and the rubric `value` and
//! answers `{reason, pass, score}` (`docs/promptfoo.md#llm-rubric`).
//!
//! promptfoo's rules: `pass` defaults to true and a text `pass` counts when it is
//! `true`/`yes`/`pass`/`y`; a `score` that is not a number is read as one, else it is the
//! pass (1 or 0); with `threshold` the assertion passes only when the score reaches it too.
//! `not-llm-rubric` inverts pass and score (`1 − score`, kept in [0, 1]). An answer with no
//! JSON object in it is a grader error, never a pass.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::promptfoo_check::PfResult;
use super::promptfoo_graded::{self as graded, Calls, Grading};
use super::{GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "llm-rubric",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["llm-rubric"],
    },
    doc: "A grading model checks the answer against the rubric `value` with promptfoo's prompt and answers `{reason, pass, score}`.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("value", Kind::Any, "The rubric: what a passing answer does (text, or an object shown as JSON)."),
    graded::THRESHOLD,
    graded::PROVIDER,
    graded::RUBRIC_PROMPT,
];
const KEYS: KeyTable = KeyTable::new("llm-rubric", "A rubric graded by a model.", &[OWN]);

/// promptfoo's grading prompt (`DEFAULT_GRADING_PROMPT`).
pub const PROMPT: &str = include_str!("promptfoo_graded/prompts/llm_rubric.json");

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let rubric = f.take("value").map(crate::config::Node::to_json).unwrap_or(Value::Null);
    let threshold = super::promptfoo_check::threshold(f, cx).ok()?;
    let grading = Grading::parse(f, cx)?;
    Some(Arc::new(LlmRubric {
        rubric,
        threshold,
        grading,
        inverse: cx.take_inverse(),
    }))
}

/// An `llm-rubric` assertion as configured.
#[derive(Debug, Clone)]
pub struct LlmRubric {
    pub rubric: Value,
    pub threshold: Option<f64>,
    pub grading: Grading,
    pub inverse: bool,
}

graded::grader_asking!(LlmRubric, ask);

impl LlmRubric {
    async fn ask(&self, ctx: &GradeContext<'_>, calls: &mut Calls) -> Result<PfResult, String> {
        let mut scope = graded::vars(ctx);
        scope.insert("output".to_owned(), graded::try_parse(ctx.candidate_answer));
        let rubric = match &self.rubric {
            Value::Null => Value::String(String::new()),
            other => other.clone(),
        };
        scope.insert("rubric".to_owned(), rubric);
        let prompt = graded::render(&self.grading.prompt_or(PROMPT), &scope)?;
        let answer = calls.ask(ctx, &self.grading, &prompt).await?;
        verdict(&answer, self.threshold, self.inverse)
    }
}

/// promptfoo's reading of the grading model's answer; `Err` (a grader error) when it holds no
/// JSON object.
pub fn verdict(answer: &str, threshold: Option<f64>, inverse: bool) -> Result<PfResult, String> {
    let parsed: Map<String, Value> =
        graded::first_json_object(answer).ok_or_else(|| "Could not extract JSON from llm-rubric response".to_owned())?;
    let mut pass = match parsed.get("pass") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => matches!(
            graded::js_string(other).to_lowercase().as_str(),
            "true" | "yes" | "pass" | "y"
        ),
    };
    let score = match parsed.get("score") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
        Some(other) if graded::js_number(other).is_finite() => graded::js_number(other),
        _ => f64::from(u8::from(pass)),
    };
    if let Some(t) = threshold {
        pass = pass && score >= t;
    }
    let reason = match parsed.get("reason") {
        None | Some(Value::Null | Value::Bool(false)) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => None,
        Some(other) => Some(graded::js_string(other)),
    };
    let reason = reason.unwrap_or_else(|| {
        if pass {
            "Grading passed".to_owned()
        } else {
            let shown = threshold.map_or_else(|| "undefined".to_owned(), super::js::number);
            format!("Score {} below threshold {shown}", super::js::number(score))
        }
    });
    Ok(if inverse {
        let flipped = 1.0 - if score.is_finite() { score } else { 0.0 };
        PfResult {
            pass: !pass,
            score: flipped.clamp(0.0, 1.0),
            reason,
        }
    } else {
        PfResult { pass, score, reason }
    })
}

/// What the default prompt looks like rendered, for tests and docs.
#[cfg(test)]
fn rendered_default(output: &str, rubric: &str) -> String {
    let scope: Map<String, Value> =
        serde_json::from_value(serde_json::json!({"output": graded::try_parse(output), "rubric": rubric})).expect("map");
    graded::render(PROMPT, &scope).expect("renders")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use crate::evaluators::promptfoo_graded::testing::{graded, sent};

    #[test]
    fn llm_rubric_sends_promptfoos_two_messages_and_nothing_else() {
        let (grade, requests) = graded(
            "- {type: llm-rubric, value: 'Names Paris'}",
            "What is the capital?",
            json!({"city": "Paris"}),
            "It is Paris.",
            &[r#"{"reason": "names Paris", "pass": true, "score": 0.9}"#],
        );
        assert!(grade.error.is_none(), "{grade:?}");
        assert_eq!(grade.score, 0.9);
        assert_eq!(grade.reasoning.as_deref(), Some("names Paris"));
        let messages = sent(&requests[0]);
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].0, "system");
        assert!(messages[0].1.starts_with("You are grading output according to a user-specified rubric."));
        assert!(messages[0].1.ends_with("\"pass\": false, \"score\": 0.0}"));
        assert_eq!(messages[1], ("user".to_owned(), "<Output>\nIt is Paris.\n</Output>\n<Rubric>\nNames Paris\n</Rubric>".to_owned()));
        assert_eq!(requests[0].system_prompt.as_deref(), Some(""), "no system prompt of agentv's");
        assert_eq!(grade.details.as_ref().expect("details")["grading"]["calls"], 1);
    }

    #[test]
    fn llm_rubric_reads_the_answer_as_promptfoo_does() {
        type Case<'c> = (&'c str, Option<f64>, bool, bool, f64, &'c str);
        let cases: &[Case<'_>] = &[
            (r#"{"reason": "ok", "pass": true, "score": 1}"#, None, false, true, 1.0, "ok"),
            (r#"Sure! {"pass": false} done"#, None, false, false, 0.0, "Score 0 below threshold undefined"),
            (r#"{"pass": "yes", "score": "0.4"}"#, Some(0.5), false, false, 0.4, "Score 0.4 below threshold 0.5"),
            (r#"{"score": 0.7}"#, Some(0.5), false, true, 0.7, "Grading passed"),
            (r#"{reason: lenient, pass: true}"#, None, false, true, 1.0, "lenient"),
            (r#"{"pass": true, "score": 0.8, "reason": "r"}"#, None, true, false, 0.19999999999999996, "r"),
            (r#"{"pass": false, "score": 3, "reason": "r"}"#, None, true, true, 0.0, "r"),
            (r#"{"pass": "nope", "reason": "r", "score": null}"#, None, false, false, 0.0, "r"),
        ];
        for (answer, threshold, inverse, pass, score, reason) in cases {
            let got = verdict(answer, *threshold, *inverse).expect(answer);
            assert_eq!((got.pass, got.score, got.reason.as_str()), (*pass, *score, *reason), "{answer}");
        }
    }

    #[test]
    fn an_llm_rubric_answer_without_json_is_a_grader_error_never_a_pass() {
        for inverse in [false, true] {
            let yaml = if inverse { "- {type: not-llm-rubric, value: x}" } else { "- {type: llm-rubric, value: x}" };
            let (grade, _) = graded(yaml, "q", json!({}), "a", &["I think it passes."]);
            assert_eq!(grade.error.as_deref(), Some("Could not extract JSON from llm-rubric response"));
            assert_eq!(grade.score, 0.0);
        }
        let (grade, _) = graded("- {type: llm-rubric, value: x}", "q", json!({}), "a", &[""]);
        assert_eq!(grade.error.as_deref(), Some("No output"));
    }

    #[test]
    fn llm_rubric_takes_a_rubric_prompt_and_a_json_answer_as_promptfoo_does() {
        let (_, requests) = graded(
            "- {type: llm-rubric, value: polite, rubricPrompt: 'Grade {{ output.a }} / {{ output }} by {{ rubric }} for {{ name }}'}",
            "q",
            json!({"name": "Ann"}),
            "{\"a\": 1}",
            &[r#"{"pass": true}"#],
        );
        assert_eq!(sent(&requests[0]), [("user".to_owned(), "Grade  / {\"a\":1} by polite for Ann".to_owned())]);
        assert!(rendered_default("x", "y").contains("<Output>\\nx\\n</Output>"));
    }
}
