//! `moderation` (promptfoo): the answer goes to the grading provider's moderation API
//! (promptfoo's default: OpenAI's `omni-moderation-latest`) and passes when no category is
//! flagged, or none of the categories `value` lists (`docs/promptfoo.md#moderation`).
//! `not-moderation` inverts pass and score. A moderation call that fails is a grader error.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::promptfoo_check::PfResult;
use super::promptfoo_graded::{self as graded, Grading};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind, describe};
use crate::providers::Moderation;

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "moderation",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["moderation"],
    },
    doc: "The answer passes a moderation API (no flagged category, or none of the categories `value` lists).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("value", Kind::List(&Kind::Text), "The categories that fail the answer (default: any)."),
    graded::PROVIDER,
    graded::RUBRIC_PROMPT,
];
const KEYS: KeyTable = KeyTable::new("moderation", "A moderation check.", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let categories = match f.take("value").filter(|n| !n.is_null()) {
        None => Vec::new(),
        Some(n) => match n.as_seq().map(|items| items.iter().map(|i| i.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>()) {
            Some(Some(list)) => list,
            _ => {
                cx.drop_grader(
                    n.pos,
                    format!("moderation assertion value must be a string array if set, found {}", describe(n)),
                    Some("write `value: [violence, harassment]`".to_owned()),
                );
                return None;
            }
        },
    };
    let grading = Grading::parse(f, cx)?;
    Some(Arc::new(ModerationCheck {
        categories,
        grading,
        inverse: cx.take_inverse(),
    }))
}

/// A `moderation` assertion as configured.
#[derive(Debug, Clone)]
pub struct ModerationCheck {
    pub categories: Vec<String>,
    pub grading: Grading,
    pub inverse: bool,
}

impl Grader for ModerationCheck {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            if ctx.candidate_answer.is_empty() {
                return self.invert(PfResult { pass: true, score: 1.0, reason: "No output to moderate".to_owned() }).grade();
            }
            let mut calls = graded::Calls::default();
            let grade = match calls.moderate(ctx, &self.grading, ctx.candidate_answer).await {
                Ok(found) => self.invert(result(&found, &self.categories)).grade(),
                Err(e) => graded::grader_error(format!("Moderation API error: {e}")),
            };
            calls.record(grade)
        })
    }
}

impl ModerationCheck {
    fn invert(&self, r: PfResult) -> PfResult {
        if self.inverse {
            PfResult { pass: !r.pass, score: 1.0 - r.score, reason: r.reason }
        } else {
            r
        }
    }
}

/// promptfoo's result for the flags found.
pub fn result(found: &Moderation, categories: &[String]) -> PfResult {
    if found.flags.is_empty() {
        return PfResult { pass: true, score: 1.0, reason: "No moderation flags detected".to_owned() };
    }
    let relevant: Vec<&str> = found
        .flags
        .iter()
        .map(|(code, _)| code.as_str())
        .filter(|code| categories.is_empty() || categories.iter().any(|c| c == code))
        .collect();
    if relevant.is_empty() {
        PfResult { pass: true, score: 1.0, reason: "No relevant moderation flags detected".to_owned() }
    } else {
        PfResult { pass: false, score: 0.0, reason: format!("Moderation flags detected: {}", relevant.join(", ")) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moderation_words_its_result_as_promptfoo_does() {
        let found = Moderation { flags: vec![("violence".into(), 0.9), ("hate".into(), 0.6)] };
        assert_eq!(result(&found, &[]).reason, "Moderation flags detected: violence, hate");
        let r = result(&found, &["harassment".to_owned()]);
        assert_eq!((r.pass, r.reason.as_str()), (true, "No relevant moderation flags detected"));
        assert!(result(&Moderation::default(), &[]).pass);
    }
}
