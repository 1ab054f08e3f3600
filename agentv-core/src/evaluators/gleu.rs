//! `gleu` (promptfoo): passes when the answer's GLEU score against `value` (one reference or a
//! list) is at least `threshold` (default 0.5) (`docs/promptfoo.md#gleu`).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::promptfoo_check::{self, THRESHOLD};
use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "gleu",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["gleu"],
    },
    doc: "Scores the answer's GLEU against `value` (a reference or a list); passes at `threshold` (default 0.5).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("value", Kind::OneOf(&[Kind::Str, Kind::List(&Kind::Str)]), "The reference text, or a list of them.").required(),
    THRESHOLD,
];
const KEYS: KeyTable = KeyTable::new("gleu", "A GLEU score against references.", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let threshold = promptfoo_check::threshold(f, cx).ok()?;
    Some(Arc::new(Gleu {
        references: promptfoo_check::value_texts(f, cx)?,
        threshold: threshold.unwrap_or(0.5),
        inverse: promptfoo_check::inverse(cx),
    }))
}

/// A `gleu` check as configured.
#[derive(Debug, Clone)]
pub struct Gleu {
    pub references: Vec<String>,
    pub threshold: f64,
    pub inverse: bool,
}

impl Grader for Gleu {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            match super::text_metrics::gleu(&candidate(ctx), &self.references) {
                Ok(score) => super::bleu::scored("GLEU", score, self.threshold, self.inverse).grade(),
                Err(e) => promptfoo_check::thrown(e.0),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::evaluators::promptfoo_check::testing::agrees_with_promptfoo;

    #[test]
    fn gleu_agrees_with_promptfoo() {
        agrees_with_promptfoo("gleu");
    }
}
