//! `bleu` (promptfoo): passes when the answer's BLEU-4 score against `value` (one reference or
//! a list) is at least `threshold` (default 0.5); the score is BLEU (`docs/promptfoo.md#bleu`).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::promptfoo_check::{self, PfResult, THRESHOLD};
use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "bleu",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["bleu"],
    },
    doc: "Scores the answer's BLEU against `value` (a reference or a list); passes at `threshold` (default 0.5).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("value", Kind::OneOf(&[Kind::Str, Kind::List(&Kind::Str)]), "The reference text, or a list of them.").required(),
    THRESHOLD,
];
const KEYS: KeyTable = KeyTable::new("bleu", "A BLEU score against references.", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let threshold = promptfoo_check::threshold(f, cx).ok()?;
    Some(Arc::new(Bleu {
        references: promptfoo_check::value_texts(f, cx)?,
        threshold: threshold.unwrap_or(0.5),
        inverse: promptfoo_check::inverse(cx),
    }))
}

/// A `bleu` check as configured.
#[derive(Debug, Clone)]
pub struct Bleu {
    pub references: Vec<String>,
    pub threshold: f64,
    pub inverse: bool,
}

impl Grader for Bleu {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            match super::text_metrics::bleu(&candidate(ctx), &self.references) {
                Ok(score) => scored("BLEU", score, self.threshold, self.inverse).grade(),
                Err(e) => promptfoo_check::thrown(e.0),
            }
        })
    }
}

/// promptfoo's result for a BLEU or GLEU `score` (`name`): pass at or above the threshold,
/// the score inverted with the check.
pub fn scored(name: &str, score: f64, threshold: f64, inverse: bool) -> PfResult {
    let pass = (score >= threshold) != inverse;
    PfResult {
        pass,
        score: if inverse { 1.0 - score } else { score },
        reason: if pass {
            promptfoo_check::PASSED.to_owned()
        } else {
            format!(
                "{name} score {} is {} than threshold {}",
                super::js::to_fixed(score, 4),
                if inverse { "greater" } else { "less" },
                super::js::number(threshold)
            )
        },
    }
}

#[cfg(test)]
mod tests {
    use crate::evaluators::promptfoo_check::testing::agrees_with_promptfoo;

    #[test]
    fn bleu_agrees_with_promptfoo() {
        agrees_with_promptfoo("bleu");
    }
}
