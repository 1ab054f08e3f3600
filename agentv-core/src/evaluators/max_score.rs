//! `max-score` (promptfoo): of the rows of one test, the one whose other assertions score
//! highest passes (score 1), the others fail (score 0) (`docs/promptfoo.md#max-score`). A
//! row's score is the mean of its other assertions' scores (`value.method: sum` their sum),
//! each weighted by `value.weights[<type>]` (default 1); with `value.threshold` the best score
//! must also reach it. Graded across the rows of a test ([`super::across_rows`]); no model is
//! asked.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::across_rows::{self, AcrossRows, RowView};
use super::promptfoo_check::PfResult;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "max-score",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["max-score"],
    },
    doc: "Of the rows of the test (its prompts × providers), the one whose other assertions score highest passes, the others fail.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[Key::new(
    "value",
    Kind::Any,
    "`{method: average | sum, weights: {<type>: n}, threshold: n}` (all optional).",
)];
const KEYS: KeyTable = KeyTable::new("max-score", "The best-scoring row of the test.", &[OWN]);

/// `value.method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    Average,
    Sum,
}

/// A `max-score` assertion as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct MaxScore {
    pub method: Aggregate,
    /// Weight per assertion type (default 1).
    pub weights: Vec<(String, f64)>,
    pub threshold: Option<f64>,
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let value = f.take("value").map(crate::config::Node::to_json);
    cx.take_inverse();
    let pos = f.pos;
    match read(value.as_ref()) {
        Ok(max) => Some(Arc::new(max)),
        Err(why) => {
            cx.drop_grader(
                pos,
                format!("max-score `value` {why}"),
                Some("write `value: {method: average, weights: {contains: 2}, threshold: 0.5}` (every key optional)".to_owned()),
            );
            None
        }
    }
}

/// Reads `value` as promptfoo does, refusing what promptfoo would misread.
pub fn read(value: Option<&Value>) -> Result<MaxScore, String> {
    let map = match value {
        None | Some(Value::Null) => return Ok(MaxScore { method: Aggregate::Average, weights: Vec::new(), threshold: None }),
        Some(Value::Object(map)) => map,
        Some(_) => return Err("must be a mapping".to_owned()),
    };
    let method = match map.get("method") {
        None | Some(Value::Null) => Aggregate::Average,
        Some(Value::String(m)) if m == "sum" => Aggregate::Sum,
        Some(Value::String(m)) if m == "average" || m == "avg" => Aggregate::Average,
        Some(other) => return Err(format!("`method` must be `average` or `sum`, not {other}")),
    };
    let weights = match map.get("weights") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(w)) => w
            .iter()
            .map(|(k, v)| v.as_f64().map(|n| (k.clone(), n)).ok_or(format!("`weights.{k}` must be a number")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`weights` must be a mapping of assertion types to numbers".to_owned()),
    };
    let threshold = match map.get("threshold") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_f64().ok_or("`threshold` must be a number")?),
    };
    if let Some(k) = map.keys().find(|k| !["method", "weights", "threshold"].contains(&k.as_str())) {
        return Err(format!("has an unknown key `{k}`"));
    }
    Ok(MaxScore { method, weights, threshold })
}

impl Grader for MaxScore {
    fn grade<'a>(&'a self, _ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async { across_rows::not_compared_yet("max-score") })
    }

    fn across_rows(&self) -> Option<&dyn AcrossRows> {
        Some(self)
    }
}

impl AcrossRows for MaxScore {
    fn compare<'a>(&'a self, _ctx: &'a GradeContext<'a>, rows: &'a [RowView<'a>]) -> BoxFuture<'a, Vec<Grade>> {
        let grades = match self.select(rows) {
            Ok(results) => results
                .into_iter()
                .map(|(result, named)| {
                    let mut grade = result.grade();
                    grade.details.get_or_insert_with(Default::default).insert("named_scores".to_owned(), named);
                    grade
                })
                .collect(),
            Err(reason) => rows.iter().map(|_| super::promptfoo_graded::grader_error(reason.clone())).collect(),
        };
        Box::pin(async move { grades })
    }
}

impl MaxScore {
    /// Each row's result and the named scores promptfoo adds to it.
    pub fn select(&self, rows: &[RowView<'_>]) -> Result<Vec<(PfResult, Value)>, String> {
        if rows.len() < 2 {
            return Err(across_rows::too_few("max-score"));
        }
        let mut scores = Vec::with_capacity(rows.len());
        for row in rows {
            if row.results.is_empty() {
                return Err(
                    "max-score requires at least one other assertion (besides max-score or select-best) to aggregate scores from"
                        .to_owned(),
                );
            }
            let (mut sum, mut total) = (0.0, 0.0);
            for r in row.results {
                let w = self.weights.iter().find(|(t, _)| *t == r.name).map_or(1.0, |(_, w)| *w);
                sum += r.score * w;
                total += w;
            }
            let score = match self.method {
                Aggregate::Sum => sum,
                Aggregate::Average if total > 0.0 => sum / total,
                Aggregate::Average => 0.0,
            };
            scores.push((score, row.results.len(), total));
        }
        let mut winner = 0;
        let mut max = f64::NEG_INFINITY;
        for (i, (s, _, _)) in scores.iter().enumerate() {
            if *s > max {
                max = *s;
                winner = i;
            }
        }
        let meets = self.threshold.is_none_or(|t| max >= t);
        let fixed = |n: f64| super::js::to_fixed(n, 3);
        Ok(scores
            .iter()
            .enumerate()
            .map(|(i, (score, count, total))| {
                let won = i == winner && meets;
                let reason = if won {
                    format!("Selected as highest scoring output (score: {})", fixed(*score))
                } else if *score == max && !meets {
                    format!(
                        "Not selected - score {} below threshold {}",
                        fixed(*score),
                        self.threshold.map_or_else(String::new, super::js::number)
                    )
                } else {
                    format!("Not selected (score: {}, max: {})", fixed(*score), fixed(max))
                };
                let result = PfResult { pass: won, score: if won { 1.0 } else { 0.0 }, reason };
                (result, json!({"maxScore": score, "assertionCount": count, "totalWeight": total}))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EvaluatorResult;

    fn result(name: &str, score: f64) -> EvaluatorResult {
        EvaluatorResult {
            score,
            error: None,
            ..EvaluatorResult::failed(name, name, 1.0, "unused")
        }
    }

    #[test]
    fn max_score_picks_the_first_best_row_by_weighted_mean_or_sum() {
        let a = [result("contains", 1.0), result("regex", 0.0)];
        let b = [result("contains", 0.0), result("regex", 1.0)];
        let c = [result("contains", 1.0), result("regex", 0.0)];
        let rows = [
            RowView { answer: "a", results: &a },
            RowView { answer: "b", results: &b },
            RowView { answer: "c", results: &c },
        ];
        let plain = read(None).expect("default");
        let picked = plain.select(&rows).expect("graded");
        let passes: Vec<bool> = picked.iter().map(|(r, _)| r.pass).collect();
        assert_eq!(passes, [true, false, false], "a tie goes to the first row");
        assert_eq!(picked[0].0.reason, "Selected as highest scoring output (score: 0.500)");
        assert_eq!(picked[1].0.reason, "Not selected (score: 0.500, max: 0.500)");
        assert_eq!(picked[0].1, json!({"maxScore": 0.5, "assertionCount": 2, "totalWeight": 2.0}));
        let weighted = read(Some(&json!({"method": "sum", "weights": {"regex": 3}}))).expect("valid");
        let picked = weighted.select(&rows).expect("graded");
        assert!(picked[1].0.pass && !picked[0].0.pass);
        assert_eq!(picked[1].0.reason, "Selected as highest scoring output (score: 3.000)");
        let strict = read(Some(&json!({"threshold": 0.9}))).expect("valid");
        let picked = strict.select(&rows).expect("graded");
        assert!(picked.iter().all(|(r, _)| !r.pass), "no row reaches the threshold");
        assert_eq!(picked[0].0.reason, "Not selected - score 0.500 below threshold 0.9");
    }

    #[test]
    fn max_score_refuses_bad_values_and_needs_two_rows_with_assertions() {
        assert!(read(Some(&json!("x"))).is_err());
        assert!(read(Some(&json!({"method": "median"}))).is_err());
        assert!(read(Some(&json!({"weights": {"contains": "two"}}))).is_err());
        assert!(read(Some(&json!({"treshold": 1}))).is_err_and(|e| e.contains("`treshold`")));
        let plain = read(None).expect("default");
        let none: [EvaluatorResult; 0] = [];
        let one = [result("contains", 1.0)];
        assert_eq!(
            plain.select(&[RowView { answer: "a", results: &one }]).err().as_deref(),
            Some("max-score assertion must have at least two outputs to compare between")
        );
        assert!(
            plain
                .select(&[RowView { answer: "a", results: &one }, RowView { answer: "b", results: &none }])
                .is_err_and(|e| e.starts_with("max-score requires at least one other assertion"))
        );
    }
}
