//! `rouge-n` (promptfoo): the answer's ROUGE-1 F1 against `value`, both lower-cased and
//! tokenised by the Penn Treebank rules; passes at `threshold` (default 0.75)
//! (`docs/promptfoo.md#rouge-n`).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::promptfoo_check::{self, PfResult, THRESHOLD};
use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "rouge-n",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["rouge-n"],
    },
    doc: "Scores the answer's ROUGE-1 F1 against `value`; passes at `threshold` (default 0.75).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[Key::new("value", Kind::Str, "The reference text.").required(), THRESHOLD];
const KEYS: KeyTable = KeyTable::new("rouge-n", "A ROUGE-N score against a reference.", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let threshold = promptfoo_check::threshold(f, cx).ok()?;
    Some(Arc::new(RougeN {
        reference: promptfoo_check::value_text(f, cx)?.to_lowercase(),
        threshold: threshold.unwrap_or(0.75),
        inverse: promptfoo_check::inverse(cx),
    }))
}

/// A `rouge-n` check as configured (the reference already lower-cased).
#[derive(Debug, Clone)]
pub struct RougeN {
    pub reference: String,
    pub threshold: f64,
    pub inverse: bool,
}

impl Grader for RougeN {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            match super::text_metrics::rouge_n(&candidate(ctx).to_lowercase(), &self.reference, 1) {
                Ok(score) => result(self, score).grade(),
                Err(e) => promptfoo_check::thrown(e.0),
            }
        })
    }
}

/// promptfoo's result for `score`: its reason states the score whether it passed or not.
pub fn result(check: &RougeN, score: f64) -> PfResult {
    let reached = score >= check.threshold;
    PfResult {
        pass: reached != check.inverse,
        score: if check.inverse { 1.0 - score } else { score },
        reason: format!(
            "ROUGE-N score {} is {} threshold {}",
            super::js::to_fixed(score, 2),
            if reached { "greater than or equal to" } else { "less than" },
            super::js::number(check.threshold)
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::evaluators::promptfoo_check::testing::agrees_with_promptfoo;

    #[test]
    fn rouge_n_agrees_with_promptfoo() {
        agrees_with_promptfoo("rouge-n");
    }
}
