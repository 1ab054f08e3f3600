//! The JSON object a code judge prints on stdout, always valid by construction.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::judge_output::JudgeOutput;
use crate::wire::kind;

/// Why a result cannot be sent: agentv would record a grader error instead of a grade.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResultError {
    #[error("score must be a finite number in [0, 1], got {0}")]
    NotFinite(&'static str),
    #[error(
        "score {} is outside [0, 1]; agentv does not clamp code judge scores, so scale it in the judge (e.g. passed / total)",
        show_number(*.0)
    )]
    OutOfRange(f64),
    #[error("score must be a number in [0, 1], got {0}")]
    NotANumber(String),
    #[error("a judge result needs a `score` (a number in [0, 1])")]
    MissingScore,
    #[error("details must be a JSON object, got {0}; wrap the value, e.g. {{\"value\": ...}}")]
    DetailsNotObject(&'static str),
    #[error("{0}")]
    Shape(String),
    #[error("unknown result key `{0}`; allowed: {keys}", keys = crate::judge_output::KNOWN_KEYS.join(", "))]
    UnknownKey(String),
    #[error("the judge returned {0}; return a JudgeResult, an object with a `score`, or a number")]
    NotAResult(&'static str),
}

/// A number as people write it: `2`, `1.5`, and `1e308` rather than 309 digits.
fn show_number(n: f64) -> String {
    let magnitude = n.abs();
    if magnitude != 0.0 && !(1e-6..1e16).contains(&magnitude) {
        format!("{n:e}")
    } else {
        n.to_string()
    }
}

/// Checks a code judge score the way agentv does (`docs/architecture.md#scoring`): a finite number
/// in [0, 1]. Out-of-range values are reported, never clamped: a judge answering 2 has a bug, and
/// clamping would turn it into a pass.
pub fn check_score(score: f64) -> Result<f64, ResultError> {
    if score.is_nan() {
        return Err(ResultError::NotFinite("NaN"));
    }
    if score.is_infinite() {
        return Err(ResultError::NotFinite(if score > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }));
    }
    if !(0.0..=1.0).contains(&score) {
        return Err(ResultError::OutOfRange(score));
    }
    Ok(score)
}

/// A judge's verdict on one case: `{score, hits?, misses?, reasoning?, details?}`.
///
/// The score is always a finite number in [0, 1]: every way to set it
/// ([`new`](Self::new), [`set_score`](Self::set_score), [`with_score`](Self::with_score))
/// rejects anything else with a [`ResultError`] that says why, so a bad score fails loudly in
/// the judge instead of being rewritten. Serializes to the wire shape (empty lists and absent
/// values omitted); deserializes through [`JudgeResult::from_value`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JudgeResult {
    score: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hits: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    misses: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<Map<String, Value>>,
}

impl JudgeResult {
    /// A result with `score` and nothing else.
    pub fn new(score: f64) -> Result<Self, ResultError> {
        Ok(Self {
            score: check_score(score)?,
            ..Self::default()
        })
    }

    /// The score-0 result a runner prints when the judge could not grade.
    pub fn failed(message: &str) -> Self {
        Self {
            misses: vec![message.to_owned()],
            reasoning: Some(format!("Evaluation failed: {message}")),
            ..Self::default()
        }
    }

    pub fn score(&self) -> f64 {
        self.score
    }

    pub fn hits(&self) -> &[String] {
        &self.hits
    }

    pub fn misses(&self) -> &[String] {
        &self.misses
    }

    pub fn reasoning(&self) -> Option<&str> {
        self.reasoning.as_deref()
    }

    pub fn details(&self) -> Option<&Map<String, Value>> {
        self.details.as_ref()
    }

    /// Sets the score; an error (and no change) unless it is a finite number in [0, 1].
    pub fn set_score(&mut self, score: f64) -> Result<(), ResultError> {
        self.score = check_score(score)?;
        Ok(())
    }

    /// [`set_score`](Self::set_score) for builder chains.
    pub fn with_score(mut self, score: f64) -> Result<Self, ResultError> {
        self.set_score(score)?;
        Ok(self)
    }

    /// Sets the score to the share of checks passed: hits / (hits + misses), 0 with none.
    pub fn score_by_checks(mut self) -> Self {
        let total = self.hits.len() + self.misses.len();
        self.score = if total == 0 {
            0.0
        } else {
            self.hits.len() as f64 / total as f64
        };
        self
    }

    /// Adds a satisfied expectation.
    pub fn hit(mut self, text: impl Into<String>) -> Self {
        self.hits.push(text.into());
        self
    }

    /// Adds an unmet expectation.
    pub fn miss(mut self, text: impl Into<String>) -> Self {
        self.misses.push(text.into());
        self
    }

    /// Adds `text` to the hits when `passed`, else to the misses; returns `passed`.
    pub fn check(&mut self, passed: bool, text: impl Into<String>) -> bool {
        if passed {
            self.hits.push(text.into());
        } else {
            self.misses.push(text.into());
        }
        passed
    }

    /// Sets the explanation.
    pub fn with_reasoning(mut self, text: impl Into<String>) -> Self {
        self.reasoning = Some(text.into());
        self
    }

    /// Adds one `details` entry (kept verbatim in the results file).
    pub fn detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.details
            .get_or_insert_with(Map::new)
            .insert(key.into(), value.into());
        self
    }

    /// Builds a result from what a judge function returned as JSON: a number (the score), or
    /// an object in the 2.x shape `{score, hits?, misses?, reasoning?, details?}` or the 4.x
    /// shapes (`assertions: [{text, passed}]`, mapped to hits and misses, the score defaulting
    /// to passed / total; `pass: true|false`, score 1 or 0). Unknown keys are errors here, so a
    /// typo (`hit`) fails in the judge rather than being dropped by agentv.
    pub fn from_value(value: Value) -> Result<Self, ResultError> {
        match value {
            Value::Number(n) => match n.as_f64() {
                Some(score) => Self::new(score),
                None => Err(ResultError::NotANumber(format!("a number: {n}"))),
            },
            Value::Object(map) => {
                let output = JudgeOutput::from_object(map)?;
                if let Some(key) = output.unknown_keys.first() {
                    return Err(ResultError::UnknownKey(key.clone()));
                }
                Ok(output.result)
            }
            other => Err(ResultError::NotAResult(kind(&other))),
        }
    }

    /// The result as one line of compact JSON (no newline), `score` first.
    pub fn to_json_line(&self) -> String {
        // Serializing strings, a finite number and a map of JSON values cannot fail.
        serde_json::to_string(self).unwrap_or_else(|_| format!("{{\"score\":{}}}", self.score))
    }

    /// Prints the result as one JSON line on stdout, the way agentv reads it. (Judges that
    /// use [`run_judge`](crate::run_judge) do not call this: the runner prints the result.)
    pub fn emit(&self) -> std::io::Result<()> {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", self.to_json_line())?;
        out.flush()
    }

    /// Assembles a result from parts already checked by [`JudgeOutput`].
    pub(crate) fn from_checked_parts(
        score: f64,
        hits: Vec<String>,
        misses: Vec<String>,
        reasoning: Option<String>,
        details: Option<Map<String, Value>>,
    ) -> Result<Self, ResultError> {
        Ok(Self {
            score: check_score(score)?,
            hits,
            misses,
            reasoning,
            details,
        })
    }
}

impl From<JudgeResult> for Value {
    /// The wire shape: empty lists and absent values omitted.
    fn from(result: JudgeResult) -> Self {
        serde_json::to_value(result).unwrap_or_default()
    }
}

impl TryFrom<Value> for JudgeResult {
    type Error = ResultError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        Self::from_value(value)
    }
}

impl<'de> serde::Deserialize<'de> for JudgeResult {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = <Value as serde::Deserialize>::deserialize(deserializer)?;
        Self::from_value(value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builder_collects_and_serializes_the_wire_shape() {
        let mut r = JudgeResult::new(0.5)
            .expect("valid")
            .hit("a")
            .miss("b")
            .with_reasoning("r")
            .detail("k", 3);
        assert!(!r.check(false, "c"));
        assert_eq!(
            serde_json::to_value(&r).expect("serializes"),
            json!({"score": 0.5, "hits": ["a"], "misses": ["b", "c"], "reasoning": "r", "details": {"k": 3}})
        );
        assert_eq!(
            JudgeResult::default().to_json_line(),
            r#"{"score":0.0}"#,
            "empty lists and absent values are omitted"
        );
    }

    #[test]
    fn score_is_checked_not_clamped() {
        let cases = [
            (f64::NAN, "score must be a finite number in [0, 1], got NaN"),
            (f64::INFINITY, "score must be a finite number in [0, 1], got Infinity"),
            (
                f64::NEG_INFINITY,
                "score must be a finite number in [0, 1], got -Infinity",
            ),
            (
                1.5,
                "score 1.5 is outside [0, 1]; agentv does not clamp code judge scores, so scale it in the judge (e.g. passed / total)",
            ),
            (-0.1, "score -0.1 is outside [0, 1]"),
            (1e308, "score 1e308 is outside [0, 1]"),
            (-1e-9, "score -1e-9 is outside [0, 1]"),
            (1.0000001, "score 1.0000001 is outside [0, 1]"),
        ];
        for (score, want) in cases {
            let error = JudgeResult::new(score).expect_err("invalid");
            assert!(error.to_string().starts_with(want), "{score}: {error}");
            let mut kept = JudgeResult::new(0.25).expect("valid");
            assert!(kept.set_score(score).is_err());
            assert_eq!(kept.score(), 0.25, "a rejected score leaves the result unchanged");
        }
        for edge in [0.0, 1.0, 0.5] {
            assert_eq!(JudgeResult::new(edge).expect("valid").score(), edge);
        }
    }

    #[test]
    fn score_by_checks_is_the_share_passed() {
        let r = JudgeResult::default().hit("a").hit("b").miss("c").score_by_checks();
        assert!((r.score() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(JudgeResult::default().score_by_checks().score(), 0.0);
    }

    #[test]
    fn from_value_takes_numbers_and_both_shapes_and_rejects_typos() {
        assert_eq!(JudgeResult::from_value(json!(0.25)).expect("number").score(), 0.25);
        let v4 = JudgeResult::from_value(
            json!({"assertions": [{"text": "a", "passed": true}, {"text": "b", "passed": false}]}),
        )
        .expect("4.x");
        assert_eq!(
            (v4.score(), v4.hits(), v4.misses()),
            (0.5, &["a".to_owned()][..], &["b".to_owned()][..])
        );
        let errors = [
            (json!({"score": 1, "hit": ["a"]}), "unknown result key `hit`; allowed: "),
            (json!([0.5]), "the judge returned an array; return a JudgeResult"),
            (json!("pass"), "the judge returned a string"),
        ];
        for (value, want) in errors {
            let error = JudgeResult::from_value(value.clone()).expect_err("invalid");
            assert!(error.to_string().starts_with(want), "{value}: {error}");
        }
        let parsed = serde_json::from_str::<JudgeResult>(r#"{"score": 2}"#)
            .expect_err("checked")
            .to_string();
        assert!(parsed.contains("score 2 is outside [0, 1]"), "{parsed}");
    }

    #[test]
    fn failed_result_carries_the_message() {
        assert_eq!(
            serde_json::to_value(JudgeResult::failed("boom")).expect("serializes"),
            json!({"score": 0.0, "misses": ["boom"], "reasoning": "Evaluation failed: boom"})
        );
    }
}
