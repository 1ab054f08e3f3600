//! Execution metrics: what a run cost in tokens, money and time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Tokens a provider reports for one request (or a whole agent run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub input: u64,
    pub output: u64,
    /// Input tokens served from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<u64>,
}

impl TokenUsage {
    /// Adds `other` into `self` (cached stays absent only if both are absent). Saturates:
    /// counts come from providers and may be anything.
    pub fn add(&mut self, other: &TokenUsage) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cached = match (self.cached, other.cached) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
    }
}

/// Metrics of one case's provider run; every field is optional and omitted when unknown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionMetrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<TokenUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// Duration of each call, per tool name, in call order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_durations: Option<BTreeMap<String, Vec<f64>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_count: Option<usize>,
    /// Share of tool calls that only explore (read, grep, ...), in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exploration_ratio: Option<f64>,
    /// Output tokens per tool call; absent when there were no tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_tool: Option<f64>,
}

impl ExecutionMetrics {
    /// True when no field is known.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_from_providers_saturate() {
        let mut total = TokenUsage {
            input: u64::MAX,
            output: 1,
            cached: Some(u64::MAX),
        };
        total.add(&TokenUsage {
            input: 1,
            output: u64::MAX,
            cached: Some(1),
        });
        assert_eq!(
            (total.input, total.output, total.cached),
            (u64::MAX, u64::MAX, Some(u64::MAX))
        );
    }
}
