//! `perplexity` and `perplexity-score` (promptfoo): the answer's perplexity from the token log
//! probabilities the provider returned (an OpenAI-compatible target is asked for them only when
//! a case has one of these), compared with `threshold` when one is given
//! (`docs/promptfoo.md#perplexity`).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::promptfoo_check::{self, PfResult, THRESHOLD};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&PERPLEXITY, &SCORE];

pub(crate) static PERPLEXITY: GraderEntry = GraderEntry {
    name: "perplexity",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["perplexity"],
    },
    doc: "Passes when the answer's perplexity (from token log probabilities) is at most `threshold`.",
    keys: &PERPLEXITY_KEYS,
    parse: parse_perplexity,
};

pub(crate) static SCORE: GraderEntry = GraderEntry {
    name: "perplexity-score",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["perplexity-score"],
    },
    doc: "Scores 1 / (1 + perplexity-like term) from token log probabilities; passes at `threshold`.",
    keys: &SCORE_KEYS,
    parse: parse_score,
};

const PERPLEXITY_KEYS: KeyTable = KeyTable::new("perplexity", "A perplexity ceiling.", &[&[THRESHOLD]]);
const SCORE_KEYS: KeyTable = KeyTable::new("perplexity-score", "A normalised perplexity floor.", &[&[THRESHOLD]]);

fn parse_perplexity(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    parse(f, cx, Measure::Perplexity)
}

fn parse_score(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    parse(f, cx, Measure::Score)
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>, measure: Measure) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(Perplexity {
        measure,
        threshold: promptfoo_check::threshold(f, cx).ok()?,
        inverse: promptfoo_check::inverse(cx),
    }))
}

/// Which of the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// `exp(−mean log prob)`: lower is better.
    Perplexity,
    /// `1 / (1 + exp(−mean log prob))`: higher is better.
    Score,
}

/// A `perplexity` or `perplexity-score` check as configured.
#[derive(Debug, Clone, Copy)]
pub struct Perplexity {
    pub measure: Measure,
    pub threshold: Option<f64>,
    pub inverse: bool,
}

impl Grader for Perplexity {
    fn wants_logprobs(&self) -> bool {
        true
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            match result(self, ctx.logprobs.unwrap_or_default()) {
                Some(r) => r.grade(),
                None => promptfoo_check::thrown(match self.measure {
                    Measure::Perplexity => "Perplexity assertion does not support providers that do not return logProbs",
                    Measure::Score => "perplexity-score assertion does not support providers that do not return logProbs",
                }),
            }
        })
    }
}

/// promptfoo's result; `None` without log probabilities. Without a threshold it passes, even
/// inverted.
pub fn result(check: &Perplexity, logprobs: &[f64]) -> Option<PfResult> {
    let t = check.threshold;
    let threshold_text = t.map_or_else(|| "undefined".to_owned(), super::js::number);
    Some(match check.measure {
        Measure::Perplexity => {
            let p = super::text_metrics::perplexity(logprobs)?;
            let pass = t.is_none_or(|t| (p <= t) != check.inverse);
            PfResult::check(pass, || {
                let relation = if check.inverse { "less than or equal to" } else { "greater than" };
                format!("Perplexity {} is {relation} threshold {threshold_text}", super::js::to_fixed(p, 2))
            })
        }
        Measure::Score => {
            let s = super::text_metrics::perplexity_score(logprobs)?;
            let pass = t.is_none_or(|t| (s >= t) != check.inverse);
            PfResult {
                pass,
                score: if check.inverse { 1.0 - s } else { s },
                reason: if pass {
                    promptfoo_check::PASSED.to_owned()
                } else {
                    let relation = if check.inverse { "greater than or equal to" } else { "less than" };
                    format!("Perplexity score {} is {relation} threshold {threshold_text}", super::js::to_fixed(s, 2))
                },
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use crate::evaluators::promptfoo_check::testing::agrees_with_promptfoo;

    #[test]
    fn perplexity_agrees_with_promptfoo() {
        agrees_with_promptfoo("perplexity");
        agrees_with_promptfoo("perplexity-score");
    }
}
