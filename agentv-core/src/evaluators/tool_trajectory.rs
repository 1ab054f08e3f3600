//! `tool_trajectory`: checks which tools the agent called, how often and in what order.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::{Grade, GradeContext, Grader, GraderEntry, ParseContext};
use crate::config::{Fields, IntRange, Key, KeyTable, Kind, Node, NodeValue, describe};
use crate::model::{OutputMessage, TraceEvent, TraceEventKind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    names: &["tool_trajectory", "tool-trajectory"],
    doc: "Checks which tools the agent called, how often and in what order.",
    keys: &KEYS,
    parse,
};

const MODES: &[&str] = &["any_order", "in_order", "exact"];

const OWN: &[Key] = &[
    Key::new(
        "mode",
        Kind::Enum(MODES),
        "any_order (minimum counts), in_order (a subsequence) or exact (the whole sequence).",
    )
    .required(),
    Key::new(
        "minimums",
        Kind::Map(&Kind::Int(IntRange::at_least(0))),
        "any_order: the least number of calls of each tool.",
    ),
    Key::new(
        "expected",
        Kind::List(&Kind::Object(&EXPECTED_CALL_KEYS)),
        "in_order and exact: the expected calls.",
    ),
];
const KEYS: KeyTable = KeyTable::new("tool_trajectory", "A tool-trajectory check.", &[OWN]);

const EXPECTED_CALL_OWN: &[Key] = &[
    Key::new("tool", Kind::Text, "The tool's name.").required(),
    Key::new(
        "args",
        Kind::OneOf(&[Kind::Enum(&["any"]), Kind::Map(&Kind::Any)]),
        "`any` (default), or the arguments the call must have (other arguments are ignored).",
    ),
    Key::new("input", Kind::Any, "Documentation only; not checked."),
    Key::new("output", Kind::Any, "Documentation only; not checked."),
];
const EXPECTED_CALL_KEYS: KeyTable = KeyTable::new("expected tool call", "One expected call.", &[EXPECTED_CALL_OWN]);

/// How `tool_trajectory` compares calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrajectoryMode {
    /// Each tool must be called at least its minimum number of times.
    AnyOrder,
    /// The expected calls appear in this order; other calls may come between.
    InOrder,
    /// Exactly the expected calls, in order, nothing else.
    Exact,
}

impl TrajectoryMode {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "any_order" => Some(Self::AnyOrder),
            "in_order" => Some(Self::InOrder),
            "exact" => Some(Self::Exact),
            _ => None,
        }
    }
}

/// A tool-trajectory check as configured.
#[derive(Debug, Clone)]
pub struct ToolTrajectory {
    pub mode: TrajectoryMode,
    /// Tool name and minimum count, in file order (used by `any_order`).
    pub minimums: Vec<(String, u64)>,
    /// Expected calls (used by `in_order` and `exact`).
    pub expected: Vec<ExpectedCall>,
}

/// One expected tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedCall {
    pub tool: String,
    pub args: ArgsMatch,
}

/// How an expected call's arguments are checked.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgsMatch {
    /// Not checked (`args` absent or `any`).
    Any,
    /// Every listed key must deep-equal the call's input; other input keys are ignored.
    Partial(Map<String, Value>),
}

/// Reads a `tool_trajectory`'s keys: `mode`, and the `minimums` or `expected` it needs.
fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let pos = f.pos;
    let mode_node = f.take("mode");
    let mode = match mode_node.and_then(Node::as_str) {
        Some(text) => match TrajectoryMode::parse(text) {
            Some(mode) => mode,
            None => {
                let p = mode_node.map_or(pos, |n| n.pos);
                cx.diags.error(
                    p,
                    format!("unknown tool_trajectory mode `{text}`"),
                    Some("use any_order, in_order or exact".to_owned()),
                );
                return None;
            }
        },
        None => {
            cx.diags.error(
                mode_node.map_or(pos, |n| n.pos),
                "tool_trajectory needs a `mode`",
                Some("use any_order, in_order or exact".to_owned()),
            );
            return None;
        }
    };
    let mut minimums = Vec::new();
    if let Some(node) = f.take("minimums") {
        let Some(entries) = node.as_map() else {
            cx.diags.error(
                node.pos,
                "`minimums` must map tool names to counts",
                Some("for example `minimums: {search: 2}`".to_owned()),
            );
            return None;
        };
        for (k, v) in entries {
            match v.value {
                NodeValue::Int(n) if n >= 0 => minimums.push((k.key_text(), n as u64)),
                _ => {
                    cx.diags.error(
                        v.pos,
                        format!(
                            "minimum for `{}` must be a whole number ≥ 0, found {}",
                            k.key_text(),
                            describe(v)
                        ),
                        None,
                    );
                    return None;
                }
            }
        }
    } else if mode == TrajectoryMode::AnyOrder {
        cx.diags.error(
            pos,
            "tool_trajectory mode any_order needs `minimums`",
            Some("add `minimums: {toolName: count}`".to_owned()),
        );
        return None;
    }
    let mut expected = Vec::new();
    if let Some(node) = f.take("expected") {
        let Some(items) = node.as_seq() else {
            cx.diags.error(
                node.pos,
                "`expected` must be a list of `{tool: name, args?: ...}`",
                None,
            );
            return None;
        };
        for item in items {
            expected.push(expected_call(item, cx)?);
        }
    } else if mode != TrajectoryMode::AnyOrder {
        cx.diags.error(
            pos,
            "tool_trajectory modes in_order and exact need `expected`",
            Some("add `expected: [{tool: name}, ...]`".to_owned()),
        );
        return None;
    }
    Some(Arc::new(ToolTrajectory {
        mode,
        minimums,
        expected,
    }))
}

fn expected_call(node: &Node, cx: &mut ParseContext<'_>) -> Option<ExpectedCall> {
    let mut f = Fields::of(node, &EXPECTED_CALL_KEYS, cx.diags)?;
    let tool = f.required_string("tool", "expected tool call", cx.diags)?;
    let args = match f.take("args") {
        None => ArgsMatch::Any,
        Some(n) if n.as_str() == Some("any") => ArgsMatch::Any,
        Some(n) => match n.to_json() {
            Value::Object(map) => ArgsMatch::Partial(map),
            _ => {
                cx.diags.error(
                    n.pos,
                    format!("`args` must be `any` or a mapping, found {}", describe(n)),
                    None,
                );
                return None;
            }
        },
    };
    // `input`/`output` appear in some suites as documentation; they are not checked.
    let _ = f.take("input");
    let _ = f.take("output");
    f.warn_unknown(cx.diags);
    Some(ExpectedCall { tool, args })
}

/// The message when there is nothing to evaluate.
pub const NO_TRACE: &str = "No trace available for evaluation";

/// One observed call: tool name and input.
#[derive(Debug, Clone, PartialEq)]
pub struct Call<'a> {
    pub tool: &'a str,
    pub input: Option<&'a Value>,
}

impl Grader for ToolTrajectory {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            match observed_calls(ctx.output_messages, ctx.trace) {
                Some(calls) => grade(self, &calls),
                None => Grade::scored(0.0, Vec::new(), vec![NO_TRACE.to_owned()]),
            }
        })
    }
}

/// The calls to grade: the tool calls of the output messages (the primary source), else the
/// `tool_call` events of the trace. `None` when there is neither a tool call nor any trace event.
pub fn observed_calls<'a>(messages: &'a [OutputMessage], trace: &'a [TraceEvent]) -> Option<Vec<Call<'a>>> {
    let from_messages: Vec<Call<'a>> = messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|c| Call {
            tool: &c.tool,
            input: c.input.as_ref(),
        })
        .collect();
    if !from_messages.is_empty() {
        return Some(from_messages);
    }
    if trace.is_empty() {
        return None;
    }
    Some(
        trace
            .iter()
            .filter(|e| e.kind == TraceEventKind::ToolCall)
            .filter_map(|e| {
                e.name.as_deref().map(|tool| Call {
                    tool,
                    input: e.input.as_ref(),
                })
            })
            .collect(),
    )
}

/// Grades `calls` against the spec (`docs/architecture.md#tool-trajectory`).
pub fn grade(spec: &ToolTrajectory, calls: &[Call<'_>]) -> Grade {
    match spec.mode {
        TrajectoryMode::AnyOrder => any_order(&spec.minimums, calls),
        TrajectoryMode::InOrder => in_order(&spec.expected, calls),
        TrajectoryMode::Exact => exact(&spec.expected, calls),
    }
}

fn times(n: usize) -> &'static str {
    if n == 1 { "time" } else { "times" }
}

/// Fraction of minimums met.
fn any_order(minimums: &[(String, u64)], calls: &[Call<'_>]) -> Grade {
    if minimums.is_empty() {
        return Grade::scored(1.0, vec!["No tool requirements specified".to_owned()], Vec::new());
    }
    let (mut hits, mut misses) = (Vec::new(), Vec::new());
    for (tool, min) in minimums {
        let count = calls.iter().filter(|c| c.tool == tool).count();
        let line = format!("{tool} called {count} {} (minimum: {min})", times(count));
        if count as u64 >= *min {
            hits.push(line)
        } else {
            misses.push(line)
        }
    }
    let score = hits.len() as f64 / minimums.len() as f64;
    Grade::scored(score, hits, misses)
}

fn sequence(calls: &[Call<'_>]) -> String {
    if calls.is_empty() {
        "(none)".to_owned()
    } else {
        calls.iter().map(|c| c.tool).collect::<Vec<_>>().join(", ")
    }
}

/// All expected calls, in order, possibly with other calls between: 1.0, else 0.0.
fn in_order(expected: &[ExpectedCall], calls: &[Call<'_>]) -> Grade {
    if expected.is_empty() {
        return Grade::scored(1.0, vec!["No tool sequence specified".to_owned()], Vec::new());
    }
    let mut hits = Vec::new();
    let mut cursor = 0;
    for (step, want) in expected.iter().enumerate() {
        let step = step + 1;
        let rest = &calls[cursor.min(calls.len())..];
        match rest
            .iter()
            .position(|c| c.tool == want.tool && args_match(&want.args, c.input))
        {
            Some(offset) => {
                hits.push(format!(
                    "step {step}: {} called (position {})",
                    want.tool,
                    cursor + offset + 1
                ));
                cursor += offset + 1;
            }
            None => {
                let why = if rest.iter().any(|c| c.tool == want.tool) {
                    format!(
                        "{} was called after position {cursor} but its arguments did not match {}",
                        want.tool,
                        describe_args(&want.args)
                    )
                } else if calls[..cursor.min(calls.len())].iter().any(|c| c.tool == want.tool) {
                    format!(
                        "{} was only called before the previous expected step (out of order)",
                        want.tool
                    )
                } else {
                    format!("{} was never called", want.tool)
                };
                let miss = format!(
                    "step {step}: expected {} — {why}; calls were: {}",
                    want.tool,
                    sequence(calls)
                );
                return Grade::scored(0.0, hits, vec![miss]);
            }
        }
    }
    Grade::scored(1.0, hits, Vec::new())
}

/// Exactly the expected calls in order: 1.0, else 0.0.
fn exact(expected: &[ExpectedCall], calls: &[Call<'_>]) -> Grade {
    if expected.is_empty() && calls.is_empty() {
        return Grade::scored(1.0, vec!["No tool sequence specified".to_owned()], Vec::new());
    }
    let (mut hits, mut misses) = (Vec::new(), Vec::new());
    for (i, want) in expected.iter().enumerate() {
        match calls.get(i) {
            Some(c) if c.tool == want.tool && args_match(&want.args, c.input) => {
                hits.push(format!("step {}: {}", i + 1, want.tool))
            }
            Some(c) if c.tool == want.tool => misses.push(format!(
                "step {}: {} arguments did not match {}",
                i + 1,
                want.tool,
                describe_args(&want.args)
            )),
            Some(c) => misses.push(format!("step {}: expected {}, got {}", i + 1, want.tool, c.tool)),
            None => misses.push(format!(
                "step {}: expected {}, but there were only {} calls",
                i + 1,
                want.tool,
                calls.len()
            )),
        }
    }
    if calls.len() > expected.len() {
        let extra: Vec<&str> = calls[expected.len()..].iter().map(|c| c.tool).collect();
        misses.push(format!(
            "expected exactly {} tool calls, got {}; extra: {}",
            expected.len(),
            calls.len(),
            extra.join(", ")
        ));
    }
    let score = if misses.is_empty() { 1.0 } else { 0.0 };
    Grade::scored(score, hits, misses)
}

fn describe_args(args: &ArgsMatch) -> String {
    match args {
        ArgsMatch::Any => "any".to_owned(),
        ArgsMatch::Partial(map) => Value::Object(map.clone()).to_string(),
    }
}

fn args_match(want: &ArgsMatch, input: Option<&Value>) -> bool {
    match want {
        ArgsMatch::Any => true,
        ArgsMatch::Partial(expected) => match input {
            Some(Value::Object(actual)) => partial_match(expected, actual),
            _ => expected.is_empty(),
        },
    }
}

/// Every expected key is present and matches; objects match partially, arrays exactly.
fn partial_match(expected: &Map<String, Value>, actual: &Map<String, Value>) -> bool {
    expected
        .iter()
        .all(|(k, v)| actual.get(k).is_some_and(|a| value_match(v, a)))
}

fn value_match(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => partial_match(e, a),
        (Value::Array(e), Value::Array(a)) => e.len() == a.len() && e.iter().zip(a).all(|(x, y)| deep_equal(x, y)),
        _ => deep_equal(expected, actual),
    }
}

fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn calls<'a>(names: &[&'a str]) -> Vec<Call<'a>> {
        names.iter().map(|t| Call { tool: t, input: None }).collect()
    }

    fn expect(names: &[&str]) -> Vec<ExpectedCall> {
        names
            .iter()
            .map(|t| ExpectedCall {
                tool: (*t).into(),
                args: ArgsMatch::Any,
            })
            .collect()
    }

    fn mins(m: &[(&str, u64)]) -> ToolTrajectory {
        ToolTrajectory {
            mode: TrajectoryMode::AnyOrder,
            minimums: m.iter().map(|(t, n)| ((*t).into(), *n)).collect(),
            expected: Vec::new(),
        }
    }

    fn seq(mode: TrajectoryMode, names: &[&str]) -> ToolTrajectory {
        ToolTrajectory {
            mode,
            minimums: Vec::new(),
            expected: expect(names),
        }
    }

    #[test]
    fn spec_minimum_calls_met() {
        let g = grade(&mins(&[("semanticSearch", 3)]), &calls(&["semanticSearch"; 3]));
        assert_eq!(g.score, 1.0);
        assert_eq!(g.hits, ["semanticSearch called 3 times (minimum: 3)"]);
    }

    #[test]
    fn spec_minimum_calls_not_met() {
        let g = grade(&mins(&[("semanticSearch", 3)]), &calls(&["semanticSearch"]));
        assert_eq!(g.score, 0.0);
        assert_eq!(g.misses, ["semanticSearch called 1 time (minimum: 3)"]);
    }

    #[test]
    fn spec_multiple_minimums_partial_pass() {
        let g = grade(
            &mins(&[("toolA", 2), ("toolB", 2)]),
            &calls(&["toolA", "toolB", "toolA"]),
        );
        assert_eq!(g.score, 0.5);
        assert_eq!(g.hits, ["toolA called 2 times (minimum: 2)"]);
        assert_eq!(g.misses, ["toolB called 1 time (minimum: 2)"]);
    }

    #[test]
    fn spec_in_order_allows_extra_tools() {
        let g = grade(
            &seq(TrajectoryMode::InOrder, &["A", "B", "C"]),
            &calls(&["A", "X", "B", "Y", "C"]),
        );
        assert_eq!(g.score, 1.0, "{:?}", g.misses);
    }

    #[test]
    fn spec_in_order_wrong_order_fails() {
        let g = grade(&seq(TrajectoryMode::InOrder, &["A", "B"]), &calls(&["B", "A"]));
        assert_eq!(g.score, 0.0);
        assert_eq!(
            g.misses,
            [
                "step 2: expected B — B was only called before the previous expected step (out of order); calls were: B, A"
            ]
        );
    }

    #[test]
    fn spec_exact_pass_and_extra_tool_fails() {
        let spec = seq(TrajectoryMode::Exact, &["A", "B"]);
        assert_eq!(grade(&spec, &calls(&["A", "B"])).score, 1.0);
        let g = grade(&spec, &calls(&["A", "B", "C"]));
        assert_eq!(g.score, 0.0);
        assert_eq!(g.misses, ["expected exactly 2 tool calls, got 3; extra: C"]);
    }

    #[test]
    fn spec_falls_back_to_the_trace_without_output_messages() {
        let mut event = TraceEvent::new(TraceEventKind::ToolCall);
        event.name = Some("semanticSearch".into());
        let trace = vec![
            event.clone(),
            TraceEvent::new(TraceEventKind::ToolResult),
            event.clone(),
            event,
        ];
        let calls = observed_calls(&[], &trace).expect("trace calls");
        assert_eq!(grade(&mins(&[("semanticSearch", 3)]), &calls).score, 1.0);
        let text_only = [OutputMessage::assistant("no tools")];
        assert_eq!(
            observed_calls(&text_only, &trace).map(|c| c.len()),
            Some(3),
            "messages without calls fall back too"
        );
    }

    #[test]
    fn spec_no_trace_at_all_scores_zero() {
        assert!(observed_calls(&[OutputMessage::assistant("hi")], &[]).is_none());
        assert_eq!(NO_TRACE, "No trace available for evaluation");
    }

    #[test]
    fn args_partial_deep_match_and_any() {
        let input = json!({"query": "rust", "opts": {"limit": 5, "lang": "en"}, "tags": [1, 2]});
        let call = [Call {
            tool: "search",
            input: Some(&input),
        }];
        let cases = [
            (json!({"query": "rust"}), 1.0),
            (json!({"opts": {"limit": 5.0}}), 1.0),
            (json!({"tags": [1, 2]}), 1.0),
            (json!({"tags": [2, 1]}), 0.0),
            (json!({"query": "go"}), 0.0),
            (json!({"missing": 1}), 0.0),
        ];
        for (args, want) in cases {
            let Value::Object(map) = args.clone() else {
                unreachable!()
            };
            let spec = ToolTrajectory {
                mode: TrajectoryMode::InOrder,
                minimums: Vec::new(),
                expected: vec![ExpectedCall {
                    tool: "search".into(),
                    args: ArgsMatch::Partial(map),
                }],
            };
            assert_eq!(grade(&spec, &call).score, want, "{args}");
        }
        assert_eq!(grade(&seq(TrajectoryMode::Exact, &["search"]), &call).score, 1.0);
    }
}
