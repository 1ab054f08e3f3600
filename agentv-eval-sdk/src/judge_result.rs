//! The JSON object a code judge prints on stdout.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A judge's verdict on one case: `{score, hits?, misses?, reasoning?, details?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeResult {
    /// In [0, 1].
    pub score: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hits: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub misses: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Structured data kept verbatim in the results file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Map<String, Value>>,
}

impl JudgeResult {
    /// A result with `score` clamped to [0, 1] (NaN becomes 0).
    pub fn new(score: f64) -> Self {
        Self {
            score: clamp_score(score),
            ..Self::default()
        }
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

    /// Sets the explanation.
    pub fn reasoning(mut self, text: impl Into<String>) -> Self {
        self.reasoning = Some(text.into());
        self
    }

    /// Adds one `details` entry.
    pub fn detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.details
            .get_or_insert_with(Map::new)
            .insert(key.into(), value.into());
        self
    }

    /// Prints the result as one JSON line on stdout, the way the runtime reads it.
    pub fn emit(&self) -> std::io::Result<()> {
        use std::io::Write;
        let line = serde_json::to_string(self).map_err(std::io::Error::other)?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")?;
        out.flush()
    }
}

/// Clamps a score to [0, 1]; NaN and infinities that are not +inf become 0.
pub fn clamp_score(score: f64) -> f64 {
    if score.is_nan() { 0.0 } else { score.clamp(0.0, 1.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_clamps_and_collects() {
        let r = JudgeResult::new(1.7).hit("a").miss("b").reasoning("r").detail("k", 3);
        assert_eq!(r.score, 1.0);
        assert_eq!(r.hits, ["a"]);
        assert_eq!(r.misses, ["b"]);
        assert_eq!(r.details.as_ref().and_then(|d| d.get("k")), Some(&Value::from(3)));
        for (raw, want) in [(f64::NAN, 0.0), (-0.5, 0.0), (0.25, 0.25), (f64::INFINITY, 1.0)] {
            assert_eq!(clamp_score(raw), want);
        }
    }
}
