//! `factuality` (promptfoo): the grading model compares the answer with the reference `value`
//! and names a category, A–E (`docs/promptfoo.md#factuality`). A (subset), B (superset), C
//! (same details) and E (differences that do not matter) pass with score 1; D (disagreement)
//! fails with 0. It ignores `not-`, as promptfoo does. An answer naming no category is a
//! grader error, never a pass.

use std::sync::Arc;

use serde_json::Value;

use super::promptfoo_check::{self, PfResult};
use super::promptfoo_graded::{self as graded, Calls, Grading};
use super::{GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "factuality",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["factuality"],
    },
    doc: "A grading model compares the answer with the reference `value` (promptfoo's categories A–E; D fails).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("value", Kind::Str, "The reference (expert) answer.").required(),
    graded::PROVIDER,
    graded::RUBRIC_PROMPT,
];
const KEYS: KeyTable = KeyTable::new("factuality", "A factual comparison graded by a model.", &[OWN]);

/// promptfoo's grading prompt (`PROMPTFOO_FACTUALITY_PROMPT`).
pub const PROMPT: &str = include_str!("promptfoo_graded/prompts/factuality.json");

/// promptfoo's words for each category, the reason when the model gives none.
const CATEGORIES: [(char, &str); 5] = [
    ('A', "The submitted answer is a subset of the expert answer and is fully consistent with it."),
    ('B', "The submitted answer is a superset of the expert answer and is fully consistent with it."),
    ('C', "The submitted answer contains all the same details as the expert answer."),
    ('D', "There is a disagreement between the submitted answer and the expert answer."),
    ('E', "The answers differ, but these differences don't matter from the perspective of factuality."),
];

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let reference = promptfoo_check::value_text(f, cx)?;
    let grading = Grading::parse(f, cx)?;
    cx.take_inverse();
    Some(Arc::new(Factuality { reference, grading }))
}

/// A `factuality` assertion as configured.
#[derive(Debug, Clone)]
pub struct Factuality {
    pub reference: String,
    pub grading: Grading,
}

graded::grader_asking!(Factuality, ask);

impl Factuality {
    async fn ask(&self, ctx: &GradeContext<'_>, calls: &mut Calls) -> Result<PfResult, String> {
        if ctx.case.question.is_empty() {
            return Err("factuality assertion type must have a prompt".to_owned());
        }
        let mut scope = graded::vars(ctx);
        scope.insert("input".to_owned(), ctx.case.question.clone().into());
        scope.insert("ideal".to_owned(), self.reference.clone().into());
        scope.insert("completion".to_owned(), graded::try_parse(ctx.candidate_answer));
        let prompt = graded::render(&self.grading.prompt_or(PROMPT), &scope)?;
        let answer = calls.ask(ctx, &self.grading, &prompt).await?;
        verdict(&answer)
    }
}

/// promptfoo's reading: a JSON object's `category` (and `reason`), else the first letter
/// A–E followed by `)` in the text (the reason: what follows the first `)`).
pub fn verdict(answer: &str) -> Result<PfResult, String> {
    let (category, reason) = match from_json(answer)? {
        Some(found) => found,
        None => legacy(answer)?,
    };
    let pass = category != 'D';
    Ok(PfResult {
        pass,
        score: if pass { 1.0 } else { 0.0 },
        reason,
    })
}

fn from_json(answer: &str) -> Result<Option<(char, String)>, String> {
    let Some(object) = graded::first_json_object(answer) else {
        return Ok(None);
    };
    let Some(Value::String(category)) = object.get("category").filter(|c| c.as_str().is_some_and(|s| !s.is_empty())) else {
        return Ok(None);
    };
    let option = super::js::trim(category).to_uppercase();
    let letter = match option.chars().collect::<Vec<_>>().as_slice() {
        [c @ 'A'..='E'] => *c,
        _ => return Err(format!("Invalid category value: {option}")),
    };
    let reason = object
        .get("reason")
        .and_then(Value::as_str)
        .map(super::js::trim)
        .filter(|r| !r.is_empty())
        .map_or_else(|| format!("Category {letter}: {}", describe(letter)), str::to_owned);
    Ok(Some((letter, reason)))
}

fn legacy(answer: &str) -> Result<(char, String), String> {
    let bytes = answer.as_bytes();
    let letter = (0..bytes.len().saturating_sub(1))
        .find(|&i| bytes[i].is_ascii_alphabetic() && (b'a'..=b'e').contains(&bytes[i].to_ascii_lowercase()) && bytes[i + 1] == b')')
        .map(|i| char::from(bytes[i].to_ascii_uppercase()))
        .ok_or_else(|| format!("Factuality checker output did not match expected format: {answer}"))?;
    let after = answer.find(')').map(|i| super::js::trim(&answer[i + 1..]).to_owned());
    let reason = after.filter(|r| !r.is_empty()).unwrap_or_else(|| answer.to_owned());
    Ok((letter, reason))
}

fn describe(letter: char) -> &'static str {
    CATEGORIES.iter().find(|(c, _)| *c == letter).map_or("", |(_, d)| d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::promptfoo_graded::testing::{graded, sent};
    use serde_json::json;

    #[test]
    fn factuality_sends_promptfoos_two_messages() {
        let (grade, requests) = graded(
            "- {type: factuality, value: Paris is the capital}",
            "Capital?",
            json!({}),
            "Paris",
            &[r#"{"category": "A", "reason": "subset"}"#],
        );
        assert_eq!((grade.score, grade.reasoning.as_deref()), (1.0, Some("subset")));
        let messages = sent(&requests[0]);
        assert_eq!(messages[0].0, "system");
        assert!(messages[0].1.starts_with("You are a precise factuality evaluator"));
        assert_eq!(messages[1].0, "user");
        assert!(messages[1].1.contains("<question>\nCapital?\n</question>\n\n<expert_answer>\nParis is the capital\n</expert_answer>\n\n<submitted_answer>\nParis\n</submitted_answer>"));
    }

    #[test]
    fn factuality_reads_categories_as_promptfoo_does() {
        for (answer, pass, reason) in [
            (r#"{"category": "d", "reason": " differs "}"#, false, "differs"),
            (r#"{"category": "E"}"#, true, "Category E: The answers differ, but these differences don't matter from the perspective of factuality."),
            ("(B) The answer adds detail.", true, "The answer adds detail."),
            ("I pick c)", true, "I pick c)"),
        ] {
            let got = verdict(answer).expect(answer);
            assert_eq!((got.pass, got.reason.as_str()), (pass, reason), "{answer}");
        }
        assert_eq!(verdict(r#"{"category": "F"}"#).unwrap_err(), "Invalid category value: F");
        let (grade, _) = graded("- {type: factuality, value: x}", "q", json!({}), "a", &["no idea"]);
        assert_eq!(grade.error.as_deref(), Some("Factuality checker output did not match expected format: no idea"));
    }
}
