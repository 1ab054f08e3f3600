//! The result every judge prints: the score, the formula with its numbers as `reasoning`, a
//! hit or a miss per judged item, the items in `details`, and `threshold` / `strict_mode` applied.

use agentv_eval_sdk::JudgeResult;
use serde_json::{Map, Value};

use crate::Error;
use crate::settings::Scoring;

/// A metric's value and what explains it, before `threshold` and `strict_mode`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub metric: &'static str,
    pub score: f64,
    pub reasoning: String,
    pub hits: Vec<String>,
    pub misses: Vec<String>,
    pub details: Map<String, Value>,
}

impl Outcome {
    pub fn new(metric: &'static str, score: f64, reasoning: impl Into<String>) -> Self {
        Self {
            metric,
            score,
            reasoning: reasoning.into(),
            ..Self::default()
        }
    }

    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// The details every model judge records first (`docs/judges.md`): how it asked the model
    /// (`mode`), how it split the text into statements (statement judges) and where the context
    /// came from (context judges).
    pub fn asked(self, mode: &str, split: Option<&str>, context_source: Option<String>) -> Self {
        let mut out = self.detail("mode", mode);
        if let Some(split) = split {
            out = out.detail("split", split);
        }
        if let Some(source) = context_source {
            out = out.detail("context_source", source);
        }
        out
    }

    /// Finishes a model judge's result: the items the model gave no verdict for are misses and
    /// listed as `skipped`, beside the model calls made; then [`Outcome::finish`].
    pub fn finish_judged(
        mut self,
        skipped: Vec<String>,
        model_calls: Value,
        scoring: &Scoring,
    ) -> Result<JudgeResult, Error> {
        self.misses.extend(skipped.iter().cloned());
        self.detail("skipped", skipped)
            .detail("model_calls", model_calls)
            .finish(scoring)
    }

    /// A hit when `passed`, else a miss.
    pub fn check(&mut self, passed: bool, text: String) {
        if passed {
            self.hits.push(text);
        } else {
            self.misses.push(text);
        }
    }

    /// Applies `threshold` and `strict_mode` and builds the judge's result.
    ///
    /// With `threshold`, a hit or miss says whether the metric reaches it and `details.passed`
    /// records it. With `strict_mode`, the score is 1 when the metric reaches the threshold (1
    /// unless set) and 0 otherwise; the metric itself is kept in `details.metric_score`.
    pub fn finish(mut self, scoring: &Scoring) -> Result<JudgeResult, Error> {
        let metric = self.score;
        let threshold = scoring.threshold.or(scoring.strict.then_some(1.0));
        let mut score = metric;
        self.details.insert("metric".to_owned(), Value::from(self.metric));
        if let Some(threshold) = threshold {
            // Slack for floating-point noise: 1 − 0.9 reaches a threshold of 0.1.
            let passed = metric + 1e-9 >= threshold;
            let relation = if passed { "reaches" } else { "is below" };
            self.check(
                passed,
                format!(
                    "{} {} {relation} the threshold {}",
                    self.metric,
                    round(metric),
                    round(threshold)
                ),
            );
            self.details.insert("threshold".to_owned(), Value::from(threshold));
            self.details.insert("passed".to_owned(), Value::from(passed));
            if scoring.strict {
                score = if passed { 1.0 } else { 0.0 };
                self.details.insert("metric_score".to_owned(), Value::from(metric));
                self.reasoning = format!("{}; strict: {score}", self.reasoning);
            }
        }
        let mut result = JudgeResult::new(score)?.with_reasoning(self.reasoning);
        for hit in self.hits {
            result = result.hit(hit);
        }
        for miss in self.misses {
            result = result.miss(miss);
        }
        for (key, value) in self.details {
            result = result.detail(key, value);
        }
        Ok(result)
    }
}

/// A score as messages show it: three decimals, trailing zeros dropped (`0.833`, `1`).
pub fn round(x: f64) -> String {
    let text = format!("{x:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" { "0".to_owned() } else { text.to_owned() }
}

/// `text` on one line for a message: control characters (line breaks, tabs, escapes) become
/// spaces, and at most `max` characters are kept, with `…` when cut.
pub fn excerpt(text: &str, max: usize) -> String {
    let flat: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    match flat.char_indices().nth(max) {
        None => flat,
        Some((end, _)) => format!("{}…", &flat[..end]),
    }
}

/// `1 claim`, `2 claims`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `n/d`, or the empty score when there is nothing to count.
pub fn ratio(n: usize, d: usize, empty: f64) -> f64 {
    if d == 0 { empty } else { n as f64 / d as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scoring(threshold: Option<f64>, strict: bool) -> Scoring {
        Scoring {
            threshold,
            strict,
            include_reason: true,
            empty_score: 0.0,
        }
    }

    #[test]
    fn threshold_and_strict() {
        // (metric, threshold, strict) → (score, passed, hit or miss)
        let cases = [
            (0.75, None, false, 0.75, None, None),
            (
                0.75,
                Some(0.7),
                false,
                0.75,
                Some(true),
                Some("m 0.75 reaches the threshold 0.7"),
            ),
            (
                0.75,
                Some(0.8),
                false,
                0.75,
                Some(false),
                Some("m 0.75 is below the threshold 0.8"),
            ),
            (
                0.75,
                Some(0.7),
                true,
                1.0,
                Some(true),
                Some("m 0.75 reaches the threshold 0.7"),
            ),
            (
                0.75,
                None,
                true,
                0.0,
                Some(false),
                Some("m 0.75 is below the threshold 1"),
            ),
            (1.0, None, true, 1.0, Some(true), Some("m 1 reaches the threshold 1")),
            (
                1.0 - 0.9,
                Some(0.1),
                false,
                1.0 - 0.9,
                Some(true),
                Some("m 0.1 reaches the threshold 0.1"),
            ),
        ];
        for (metric, threshold, strict, score, passed, line) in cases {
            let r = Outcome::new("m", metric, "why")
                .finish(&scoring(threshold, strict))
                .expect("valid");
            assert_eq!(r.score(), score, "{metric} {threshold:?} {strict}");
            let details = r.details().expect("details");
            assert_eq!(details.get("passed").and_then(Value::as_bool), passed);
            let lines: Vec<&String> = r.hits().iter().chain(r.misses()).collect();
            assert_eq!(lines.first().map(|s| s.as_str()), line);
            assert_eq!(details.contains_key("metric_score"), strict);
        }
    }

    #[test]
    fn rounding_and_excerpts() {
        for (x, want) in [
            (0.8333333, "0.833"),
            (1.0, "1"),
            (0.5, "0.5"),
            (0.0, "0"),
            (0.0005, "0.001"),
        ] {
            assert_eq!(round(x), want);
        }
        assert_eq!(excerpt("héllo wörld", 5), "héllo…");
        assert_eq!(excerpt("short", 5), "short");
        assert_eq!(excerpt("a\nb\u{1b}[31m", 20), "a b [31m");
        assert_eq!(ratio(2, 3, 1.0), 2.0 / 3.0);
        assert_eq!(ratio(0, 0, 1.0), 1.0);
        assert_eq!(
            (count(1, "claim"), count(0, "claim"), count(2, "claim")),
            ("1 claim".into(), "0 claims".into(), "2 claims".into())
        );
    }
}
