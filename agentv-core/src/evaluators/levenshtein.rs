//! `levenshtein` (promptfoo): passes when the edit distance between the answer and `value` is
//! at most `threshold` (default 5), counted in UTF-16 code units as promptfoo counts them
//! (`docs/promptfoo.md#levenshtein`).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::promptfoo_check::{self, PfResult, THRESHOLD};
use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "levenshtein",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["levenshtein"],
    },
    doc: "Passes when the edit distance to `value` is at most `threshold` (default 5).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[Key::new("value", Kind::Str, "The expected text.").required(), THRESHOLD];
const KEYS: KeyTable = KeyTable::new("levenshtein", "An edit-distance check.", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let threshold = promptfoo_check::threshold(f, cx).ok()?;
    Some(Arc::new(Levenshtein {
        value: promptfoo_check::value_text(f, cx)?,
        threshold: threshold.unwrap_or(5.0),
        inverse: promptfoo_check::inverse(cx),
    }))
}

/// A `levenshtein` check as configured.
#[derive(Debug, Clone)]
pub struct Levenshtein {
    pub value: String,
    pub threshold: f64,
    pub inverse: bool,
}

impl Grader for Levenshtein {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { result(self, &candidate(ctx)).grade() })
    }
}

/// promptfoo's result for `output`.
pub fn result(check: &Levenshtein, output: &str) -> PfResult {
    let distance = super::text_metrics::levenshtein(output, &check.value);
    let pass = (distance as f64 <= check.threshold) != check.inverse;
    PfResult::check(pass, || {
        let relation = if check.inverse { "less than or equal to" } else { "greater than" };
        format!(
            "Levenshtein distance {distance} is {relation} threshold {}",
            super::js::number(check.threshold)
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::evaluators::promptfoo_check::testing::agrees_with_promptfoo;

    #[test]
    fn levenshtein_agrees_with_promptfoo() {
        agrees_with_promptfoo("levenshtein");
    }
}
