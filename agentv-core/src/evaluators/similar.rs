//! `similar` (promptfoo): the embeddings of the answer and of `value` (or of each value of a
//! list) are compared; cosine similarity by default (`similar:cosine`), or `similar:dot`
//! (dot product), passing at `threshold` (default 0.75); `similar:euclidean` is a distance,
//! passing at most `threshold`, scored `1 / (1 + distance)` (`docs/promptfoo.md#similar`).
//! With a list, the first value that passes decides; `not-similar` passes when no value is
//! similar.

use std::sync::Arc;


use super::promptfoo_check::{self, PfResult};
use super::promptfoo_graded::{self as graded, Calls, Grading};
use super::{GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "similar",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["similar", "similar:cosine", "similar:dot", "similar:euclidean"],
    },
    doc: "The answer's embedding is similar to `value`'s (cosine by default; `similar:dot`, `similar:euclidean`).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("value", Kind::Any, "The text (or list of texts) the answer should be similar to.").required(),
    graded::THRESHOLD,
    graded::PROVIDER,
    graded::EMBEDDING_PROVIDER,
    graded::RUBRIC_PROMPT,
];
const KEYS: KeyTable = KeyTable::new("similar", "An embedding similarity check.", &[OWN]);

/// How two embeddings are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Cosine,
    Dot,
    Euclidean,
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let written = cx.current.clone().unwrap_or_default();
    let metric = match written.rsplit_once(':').map(|(_, m)| m) {
        Some("dot") => Metric::Dot,
        Some("euclidean") => Metric::Euclidean,
        _ => Metric::Cosine,
    };
    let values = promptfoo_check::value_texts(f, cx)?;
    let threshold = promptfoo_check::threshold(f, cx).ok()?;
    let grading = Grading::parse_embedding(f, cx)?;
    Some(Arc::new(Similar {
        values,
        metric,
        threshold: threshold.unwrap_or(0.75),
        grading,
        inverse: cx.take_inverse(),
    }))
}

/// A `similar` assertion as configured.
#[derive(Debug, Clone)]
pub struct Similar {
    pub values: Vec<String>,
    pub metric: Metric,
    pub threshold: f64,
    pub grading: Grading,
    pub inverse: bool,
}

graded::grader_asking!(Similar, run);

impl Similar {
    async fn run(&self, ctx: &GradeContext<'_>, calls: &mut Calls) -> Result<PfResult, String> {
        if self.values.is_empty() {
            return Err("Similarity assertion must have at least one value to compare against".to_owned());
        }
        let answer = calls.embed(ctx, &self.grading, ctx.candidate_answer).await?;
        let mut best: Option<PfResult> = None;
        for value in &self.values {
            let expected = calls.embed(ctx, &self.grading, value).await?;
            let r = result(measure(self.metric, &expected, &answer)?, self.threshold, self.inverse, self.metric);
            if self.values.len() == 1 {
                return Ok(r);
            }
            if self.inverse {
                if !r.pass {
                    return Ok(r);
                }
                if best.as_ref().is_none_or(|b| r.score < b.score) {
                    best = Some(r);
                }
            } else {
                if r.pass {
                    return Ok(r);
                }
                if best.as_ref().is_none_or(|b| r.score > b.score) {
                    best = Some(r);
                }
            }
        }
        let best = best.ok_or_else(|| "Similarity result missing".to_owned())?;
        Ok(if self.inverse {
            best
        } else {
            PfResult {
                pass: false,
                score: best.score,
                reason: "None of the provided values met the similarity threshold".to_owned(),
            }
        })
    }
}

fn measure(metric: Metric, a: &[f64], b: &[f64]) -> Result<f64, String> {
    if a.len() != b.len() {
        return Err("Vectors must be of equal length".to_owned());
    }
    Ok(match metric {
        Metric::Cosine => graded::cosine(a, b)?,
        Metric::Dot => a.iter().zip(b).map(|(x, y)| x * y).sum(),
        Metric::Euclidean => a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt(),
    })
}

/// promptfoo's result for one comparison.
pub fn result(measured: f64, threshold: f64, inverse: bool, metric: Metric) -> PfResult {
    let t = super::js::number(threshold);
    let m = super::js::to_fixed(measured, 2);
    let eps = graded::EPSILON;
    if metric == Metric::Euclidean {
        let pass = if inverse { measured >= threshold - eps } else { measured <= threshold + eps };
        let normalized = 1.0 / (1.0 + measured);
        let below = format!("Distance {m} is less than or equal to threshold {t}");
        let above = format!("Distance {m} is greater than threshold {t}");
        let reason = if pass == inverse { above } else { below };
        return PfResult {
            pass,
            score: if inverse { 1.0 - normalized } else { normalized },
            reason,
        };
    }
    let pass = if inverse { measured <= threshold + eps } else { measured >= threshold - eps };
    let greater = format!("Similarity {m} is greater than or equal to threshold {t}");
    let less = format!("Similarity {m} is less than threshold {t}");
    let reason = match (pass, inverse) {
        (true, true) | (false, false) => less,
        (true, false) | (false, true) => greater,
    };
    PfResult {
        pass,
        score: if inverse { 1.0 - measured } else { measured },
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similar_scores_and_words_as_promptfoo_does() {
        let r = result(0.8, 0.75, false, Metric::Cosine);
        assert_eq!((r.pass, r.reason.as_str()), (true, "Similarity 0.80 is greater than or equal to threshold 0.75"));
        let r = result(0.8, 0.75, true, Metric::Cosine);
        assert_eq!((r.pass, r.reason.as_str()), (false, "Similarity 0.80 is greater than or equal to threshold 0.75"));
        assert!((r.score - 0.2).abs() < 1e-12);
        let r = result(1.0, 0.5, false, Metric::Euclidean);
        assert_eq!((r.pass, r.score, r.reason.as_str()), (false, 0.5, "Distance 1.00 is greater than threshold 0.5"));
        assert_eq!(measure(Metric::Dot, &[1.0, 2.0], &[3.0, 4.0]), Ok(11.0));
        assert!(measure(Metric::Cosine, &[1.0], &[1.0, 2.0]).is_err());
    }
}
