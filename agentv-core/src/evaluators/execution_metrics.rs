//! `execution-metrics` (4.x; 2.x spelling `execution_metrics`, reference §2.10): one check per
//! configured threshold (tool calls, LLM calls, tokens, cost, duration, exploration ratio);
//! the score is the share of checks that pass.
//!
//! Counts come from the target's output messages, as in 4.x: tool calls are every tool call
//! of every message, LLM calls the assistant messages, and the exploration ratio the share of
//! calls to the tools 4.x counts as exploring ([`EXPLORATION_TOOLS`], matched exactly). The
//! record's `execution_metrics.exploration_ratio` is a different number: it counts the tools
//! of `--exploration-tools`, ignoring case, as 2.x did.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::metric_check::{counts, dollars, optional_number};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::model::Assertion;
use crate::config::{Fields, Key, KeyTable, Kind, NumberRange};
use crate::model::{ExecutionMetrics, OutputMessage, TokenUsage};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "execution-metrics",
    names: Names {
        v2: &["execution_metrics"],
        v4: &["execution-metrics"],
        promptfoo: &[],
    },
    doc: "Checks tool calls, LLM calls, tokens, cost, duration and exploration against thresholds.",
    keys: &KEYS,
    parse,
};

/// The tools whose calls 4.x counts as exploration (`DEFAULT_EXPLORATION_TOOLS`).
pub const EXPLORATION_TOOLS: &[&str] = &[
    "read", "grep", "glob", "search", "list", "Read", "Grep", "Glob", "WebSearch", "WebFetch",
];

const LIMIT: Kind = Kind::Number(NumberRange::NON_NEGATIVE);
const OWN: &[Key] = &[
    Key::new("max_tool_calls", LIMIT, "Most tool calls.").aliases(&["maxToolCalls"]),
    Key::new("max_llm_calls", LIMIT, "Most LLM calls (assistant messages).").aliases(&["maxLlmCalls"]),
    Key::new("max_tokens", LIMIT, "Most input + output tokens (cached not counted).").aliases(&["maxTokens"]),
    Key::new("max_cost_usd", LIMIT, "Most cost, in US dollars.").aliases(&["maxCostUsd"]),
    Key::new("max_duration_ms", LIMIT, "Longest duration, in milliseconds.").aliases(&["maxDurationMs"]),
    Key::new(
        "target_exploration_ratio",
        LIMIT,
        "Wanted share of exploring tool calls (read, grep, glob, search, list, …).",
    )
    .aliases(&["targetExplorationRatio"]),
    Key::new(
        "exploration_tolerance",
        LIMIT,
        "How far the exploration ratio may be from its target (default 0.2).",
    )
    .aliases(&["explorationTolerance"]),
];
const KEYS: KeyTable = KeyTable::new("execution-metrics", "Execution thresholds (at least one).", &[OWN]);

/// The thresholds, each optional.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Thresholds {
    pub max_tool_calls: Option<f64>,
    pub max_llm_calls: Option<f64>,
    pub max_tokens: Option<f64>,
    pub max_cost_usd: Option<f64>,
    pub max_duration_ms: Option<f64>,
    pub target_exploration_ratio: Option<f64>,
    /// Default 0.2.
    pub exploration_tolerance: Option<f64>,
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let mut read = |name: &str| optional_number(f, name, cx);
    let (tool, llm, tokens, cost, duration, ratio, tolerance) = (
        read("max_tool_calls"),
        read("max_llm_calls"),
        read("max_tokens"),
        read("max_cost_usd"),
        read("max_duration_ms"),
        read("target_exploration_ratio"),
        read("exploration_tolerance"),
    );
    let t = Thresholds {
        max_tool_calls: tool.ok()?,
        max_llm_calls: llm.ok()?,
        max_tokens: tokens.ok()?,
        max_cost_usd: cost.ok()?,
        max_duration_ms: duration.ok()?,
        target_exploration_ratio: ratio.ok()?,
        exploration_tolerance: tolerance.ok()?,
    };
    let any = [t.max_tool_calls, t.max_llm_calls, t.max_tokens, t.max_cost_usd, t.max_duration_ms, t.target_exploration_ratio]
        .iter()
        .any(Option::is_some);
    if !any {
        let what = f.what().to_owned();
        cx.diags.error(
            f.pos,
            format!(
                "{what} needs at least one threshold: `max_tool_calls`, `max_llm_calls`, `max_tokens`, \
                 `max_cost_usd`, `max_duration_ms` or `target_exploration_ratio`"
            ),
            Some("add one, e.g. `max_tool_calls: 10`".to_owned()),
        );
        return None;
    }
    Some(Arc::new(MetricThresholds(t)))
}

/// An `execution-metrics` check as configured.
#[derive(Debug, Clone, Copy)]
pub struct MetricThresholds(pub Thresholds);

impl Grader for MetricThresholds {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(&self.0, &Observed::of(ctx.output_messages, ctx.metrics)) })
    }
}

/// What a run shows, as 4.x counts it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// Counts from the output messages; `None` when there is no trace at all (no output
    /// messages and no metric).
    pub trace: Option<TraceCounts>,
    pub token_usage: Option<TokenUsage>,
    pub cost_usd: Option<f64>,
    pub duration_ms: Option<f64>,
}

/// Counts from the output messages.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TraceCounts {
    pub tool_calls: usize,
    pub llm_calls: usize,
    pub exploration_calls: usize,
}

impl Observed {
    pub fn of(messages: &[OutputMessage], metrics: &ExecutionMetrics) -> Self {
        let has_metric = metrics.token_usage.is_some() || metrics.cost_usd.is_some() || metrics.duration_ms.is_some();
        let trace = (!messages.is_empty() || has_metric).then(|| {
            let calls = messages.iter().flat_map(|m| &m.tool_calls);
            TraceCounts {
                tool_calls: calls.clone().count(),
                llm_calls: messages.iter().filter(|m| m.role == "assistant").count(),
                exploration_calls: calls.filter(|c| EXPLORATION_TOOLS.contains(&c.tool.as_str())).count(),
            }
        });
        Self {
            trace,
            token_usage: metrics.token_usage,
            cost_usd: metrics.cost_usd,
            duration_ms: metrics.duration_ms,
        }
    }
}

/// One assertion per configured threshold, in 4.x's order; score = passed / checks.
pub fn grade(t: &Thresholds, seen: &Observed) -> Grade {
    let needs_trace = t.max_tool_calls.is_some() || t.max_llm_calls.is_some() || t.target_exploration_ratio.is_some();
    let mut details = Map::new();
    details.insert("config".into(), configured(t));
    let trace = match seen.trace {
        Some(trace) => trace,
        None if !needs_trace => TraceCounts::default(),
        None => {
            details.insert("actual".into(), Value::Null);
            let mut g = Grade::check(false, "No trace summary available");
            g.details = Some(details);
            return g;
        }
    };
    let num = super::js::number;
    let mut checks = Vec::new();
    let mut actual = Map::new();
    if let Some(max) = t.max_tool_calls {
        actual.insert("tool_calls".into(), Value::from(trace.tool_calls));
        checks.push(at_most("Tool calls", trace.tool_calls as f64, max));
    }
    if let Some(max) = t.max_llm_calls {
        actual.insert("llm_calls".into(), Value::from(trace.llm_calls));
        checks.push(at_most("LLM calls", trace.llm_calls as f64, max));
    }
    if let Some(max) = t.max_tokens {
        checks.push(match &seen.token_usage {
            Some(usage) => {
                let (input, output, _) = counts(usage);
                let tokens = input.saturating_add(output);
                actual.insert("tokens".into(), Value::from(tokens));
                at_most("Total tokens", tokens as f64, max)
            }
            None => Assertion::new("Token usage data not available", false),
        });
    }
    if let Some(max) = t.max_cost_usd {
        match seen.cost_usd {
            Some(cost) => {
                actual.insert("cost_usd".into(), Value::from(cost));
                let ok = cost <= max;
                let op = if ok { "<=" } else { ">" };
                checks.push(Assertion::new(format!("Cost {} {op} {} max", dollars(cost), dollars(max)), ok));
            }
            None => checks.push(Assertion::new("Cost data not available", false)),
        }
    }
    if let Some(max) = t.max_duration_ms {
        match seen.duration_ms {
            Some(ms) => {
                actual.insert("duration_ms".into(), Value::from(ms));
                let ok = ms <= max;
                let op = if ok { "<=" } else { ">" };
                checks.push(Assertion::new(format!("Duration {}ms {op} {}ms max", num(ms), num(max)), ok));
            }
            None => checks.push(Assertion::new("Duration data not available", false)),
        }
    }
    if let Some(target) = t.target_exploration_ratio {
        let tolerance = t.exploration_tolerance.unwrap_or(0.2);
        checks.push(exploration(&trace, target, tolerance, &mut actual));
    }
    let passed = checks.iter().filter(|a| a.passed).count();
    let score = if checks.is_empty() { 0.0 } else { passed as f64 / checks.len() as f64 };
    details.insert("actual".into(), if actual.is_empty() { Value::Null } else { Value::Object(actual) });
    let mut g = Grade::assessed(score, checks);
    g.details = Some(details);
    g
}

/// Whether the share of exploration tools among the tool calls is within `tolerance` of
/// `target`; the share goes to `actual`.
fn exploration(trace: &TraceCounts, target: f64, tolerance: f64, actual: &mut Map<String, Value>) -> Assertion {
    if trace.tool_calls == 0 {
        return Assertion::new("Exploration ratio not available (no tool calls)", false);
    }
    let num = super::js::number;
    let ratio = trace.exploration_calls as f64 / trace.tool_calls as f64;
    actual.insert("exploration_ratio".into(), Value::from(ratio));
    let diff = (ratio - target).abs();
    let (r, tg) = (super::js::to_fixed(ratio, 2), num(target));
    if diff <= tolerance {
        Assertion::new(format!("Exploration ratio {r} within tolerance of target {tg}"), true)
    } else {
        Assertion::new(
            format!(
                "Exploration ratio {r} outside tolerance of target {tg} (diff: {}, tolerance: {})",
                super::js::to_fixed(diff, 2),
                num(tolerance)
            ),
            false,
        )
    }
}

/// `<label> <value> <= <max> max` (or `>`), numbers as JavaScript writes them.
fn at_most(label: &str, value: f64, max: f64) -> crate::model::Assertion {
    let ok = value <= max;
    let op = if ok { "<=" } else { ">" };
    Assertion::new(format!("{label} {} {op} {} max", super::js::number(value), super::js::number(max)), ok)
}

/// The thresholds set, as 4.x records them (`exploration_tolerance` with its default when a
/// target ratio is set).
fn configured(t: &Thresholds) -> Value {
    let mut out = Map::new();
    let set = [
        ("max_tool_calls", t.max_tool_calls),
        ("max_llm_calls", t.max_llm_calls),
        ("max_tokens", t.max_tokens),
        ("max_cost_usd", t.max_cost_usd),
        ("max_duration_ms", t.max_duration_ms),
        ("target_exploration_ratio", t.target_exploration_ratio),
    ];
    for (key, value) in set {
        if let Some(v) = value {
            out.insert(key.into(), Value::from(v));
        }
    }
    if t.target_exploration_ratio.is_some() {
        out.insert("exploration_tolerance".into(), Value::from(t.exploration_tolerance.unwrap_or(0.2)));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::{GradeVerdict, negate};
    use crate::evaluators::string_check::testing::{parse_one, problems};
    use crate::model::ToolCall;

    /// (thresholds, what the run did, score, [(assertion text, passed)]).
    type Case<'a> = (Thresholds, &'a Observed, f64, Vec<(&'a str, bool)>);

    fn call(tool: &str) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            ..ToolCall::default()
        }
    }

    fn agent_run() -> Vec<OutputMessage> {
        let mut first = OutputMessage::assistant("looking");
        first.tool_calls = vec![call("Read"), call("grep"), call("Edit")];
        let mut second = OutputMessage::assistant("checking");
        second.tool_calls = vec![call("read")];
        vec![first, OutputMessage { role: "tool".into(), ..OutputMessage::default() }, second, OutputMessage::assistant("done")]
    }

    fn metrics() -> ExecutionMetrics {
        ExecutionMetrics {
            token_usage: Some(TokenUsage { input: 1000, output: 500, cached: Some(9999) }),
            cost_usd: Some(0.0123),
            duration_ms: Some(4200.0),
            ..ExecutionMetrics::default()
        }
    }

    #[test]
    fn counts_follow_4x() {
        let seen = Observed::of(&agent_run(), &metrics());
        assert_eq!(seen.trace, Some(TraceCounts { tool_calls: 4, llm_calls: 3, exploration_calls: 3 }));
        assert_eq!(Observed::of(&[], &ExecutionMetrics::default()).trace, None);
        assert_eq!(
            Observed::of(&[], &ExecutionMetrics { duration_ms: Some(1.0), ..ExecutionMetrics::default() }).trace,
            Some(TraceCounts::default()),
            "a metric alone makes an (empty) trace"
        );
    }

    #[test]
    fn each_threshold_is_one_check_and_the_score_is_proportional() {
        let seen = Observed::of(&agent_run(), &metrics());
        let all = Thresholds {
            max_tool_calls: Some(3.0),
            max_llm_calls: Some(5.0),
            max_tokens: Some(2000.0),
            max_cost_usd: Some(0.01),
            max_duration_ms: Some(5000.0),
            target_exploration_ratio: Some(0.5),
            exploration_tolerance: None,
        };
        let nothing = Observed { trace: Some(TraceCounts::default()), ..Observed::default() };
        let no_trace = Observed::default();
        let only_duration = Observed { duration_ms: Some(10.0), ..Observed::default() };
        let cases: Vec<Case<'_>> = vec![
            (
                all,
                &seen,
                3.0 / 6.0,
                vec![
                    ("Tool calls 4 > 3 max", false),
                    ("LLM calls 3 <= 5 max", true),
                    ("Total tokens 1500 <= 2000 max", true),
                    ("Cost $0.0123 > $0.0100 max", false),
                    ("Duration 4200ms <= 5000ms max", true),
                    ("Exploration ratio 0.75 outside tolerance of target 0.5 (diff: 0.25, tolerance: 0.2)", false),
                ],
            ),
            (
                Thresholds { target_exploration_ratio: Some(0.7), exploration_tolerance: Some(0.1), ..Thresholds::default() },
                &seen,
                1.0,
                vec![("Exploration ratio 0.75 within tolerance of target 0.7", true)],
            ),
            (
                Thresholds { max_tokens: Some(10.0), max_cost_usd: Some(1.0), max_duration_ms: Some(1.0), target_exploration_ratio: Some(0.5), ..Thresholds::default() },
                &nothing,
                0.0,
                vec![
                    ("Token usage data not available", false),
                    ("Cost data not available", false),
                    ("Duration data not available", false),
                    ("Exploration ratio not available (no tool calls)", false),
                ],
            ),
            (
                Thresholds { max_tool_calls: Some(1.0), max_tokens: Some(1.0), ..Thresholds::default() },
                &no_trace,
                0.0,
                vec![("No trace summary available", false)],
            ),
            // Without a trace-based threshold, no trace is no problem.
            (
                Thresholds { max_duration_ms: Some(5000.0), ..Thresholds::default() },
                &only_duration,
                1.0,
                vec![("Duration 10ms <= 5000ms max", true)],
            ),
        ];
        for (t, seen, score, want) in cases {
            let g = grade(&t, seen);
            let got: Vec<(&str, bool)> = g.assertions.iter().map(|a| (a.text.as_str(), a.passed)).collect();
            assert_eq!(got, want);
            assert!((g.score - score).abs() < 1e-12, "{} != {score}", g.score);
            assert_eq!(g.verdict4(), GradeVerdict::of_score(score));
            let n = negate(g);
            assert!((n.score - (1.0 - score)).abs() < 1e-12);
        }
    }

    #[test]
    fn execution_metrics_needs_a_threshold_at_load() {
        let (grader, shown) = parse_one("{type: execution_metrics, maxToolCalls: 10}");
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| g.name), Some("execution-metrics".to_owned()));
        let bad = problems("{type: execution-metrics, exploration_tolerance: 0.1}");
        assert_eq!(bad.len(), 1);
        assert!(bad[0].starts_with("e.yaml:1:3: error: execution-metrics needs at least one threshold"), "{}", bad[0]);
        assert_eq!(
            problems("{type: execution-metrics, max_tokens: -1, max_cost_usd: x}"),
            [
                "e.yaml:1:41: error: `max_tokens` must be a number ≥ 0, found -1",
                "e.yaml:1:59: error: `max_cost_usd` must be a number ≥ 0, found \"x\""
            ]
        );
    }
}
