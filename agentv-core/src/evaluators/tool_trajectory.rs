//! `tool_trajectory`: checks which tools the agent called, how often and in what order.

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::{EvalContext, Evaluator, Grade};
use crate::model::{
    ArgsMatch, ExpectedCall, OutputMessage, TraceEvent, TraceEventKind, TrajectoryMode, TrajectorySpec,
};

/// The message when there is nothing to evaluate.
pub const NO_TRACE: &str = "No trace available for evaluation";

/// One observed call: tool name and input.
#[derive(Debug, Clone, PartialEq)]
pub struct Call<'a> {
    pub tool: &'a str,
    pub input: Option<&'a Value>,
}

impl Evaluator for TrajectorySpec {
    fn evaluate<'a>(&'a self, ctx: &'a EvalContext<'a>) -> BoxFuture<'a, Grade> {
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

/// Grades `calls` against the spec (D17).
pub fn grade(spec: &TrajectorySpec, calls: &[Call<'_>]) -> Grade {
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

    fn mins(m: &[(&str, u64)]) -> TrajectorySpec {
        TrajectorySpec {
            mode: TrajectoryMode::AnyOrder,
            minimums: m.iter().map(|(t, n)| ((*t).into(), *n)).collect(),
            expected: Vec::new(),
        }
    }

    fn seq(mode: TrajectoryMode, names: &[&str]) -> TrajectorySpec {
        TrajectorySpec {
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
            let spec = TrajectorySpec {
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
