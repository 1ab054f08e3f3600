//! Execution metrics: what a run cost in tokens, money and time.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::wire::{Path, Reader, Wire, deserialize_from_wire};

/// Tokens a provider reports for one request (or a whole agent run), as the runtime records
/// them. (Unknown keys are not kept: the runtime builds this type field by field; the 4.x
/// payload keys use [`TokenCounts`].)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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

    pub(crate) fn from_wire(value: Value, path: Path<'_>) -> Wire<Self> {
        let mut r = Reader::new(value, path)?;
        Ok(Self {
            input: r.count("input")?,
            output: r.count("output")?,
            cached: r.opt_count("cached")?,
        })
    }
}

deserialize_from_wire!(TokenUsage);

/// Token counts as the 4.x payload keys carry them (`token_usage` of the payload, of a
/// message, of the `trace`): `{input, output, cached?, reasoning?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TokenCounts {
    pub input: u64,
    pub output: u64,
    /// Input tokens served from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<u64>,
    /// Tokens spent on hidden reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
    /// Keys this type does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TokenCounts {
    pub(crate) fn from_wire(value: Value, path: Path<'_>) -> Wire<Self> {
        let mut r = Reader::new(value, path)?;
        Ok(Self {
            input: r.count("input")?,
            output: r.count("output")?,
            cached: r.opt_count("cached")?,
            reasoning: r.opt_count("reasoning")?,
            extra: r.extra(),
        })
    }
}

deserialize_from_wire!(TokenCounts);

impl From<TokenUsage> for TokenCounts {
    fn from(usage: TokenUsage) -> Self {
        Self {
            input: usage.input,
            output: usage.output,
            cached: usage.cached,
            ..Self::default()
        }
    }
}

/// Metrics of one case's provider run; every field is optional and omitted when unknown.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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
    /// Keys this type does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ExecutionMetrics {
    /// True when no field is known.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    pub(crate) fn from_wire(value: Value, path: Path<'_>) -> Wire<Self> {
        let mut r = Reader::new(value, path)?;
        Ok(Self {
            token_usage: r.nested("token_usage", TokenUsage::from_wire)?,
            cost_usd: r.opt_number("cost_usd")?,
            duration_ms: r.opt_number("duration_ms")?,
            tool_durations: r.opt_durations("tool_durations")?,
            tool_call_count: r.opt_usize("tool_call_count")?,
            exploration_ratio: r.opt_number("exploration_ratio")?,
            tokens_per_tool: r.opt_number("tokens_per_tool")?,
            extra: r.extra(),
        })
    }
}

deserialize_from_wire!(ExecutionMetrics);

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
