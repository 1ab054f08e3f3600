//! `tool-call-f1` (agentv's): precision, recall and F1 of the tools the answer called against
//! an expected list (`docs/tools.md#graders`). An expected entry is a tool's name, or
//! `{tool, args}`: then only a call whose arguments hold those keys with equal values (objects
//! compared the same way) matches it. Each expected entry is matched by at most one call, and
//! the matching pairs as many as possible; the score is F1. No calls and nothing expected
//! scores 1.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Grade, GradeContext, GradeVerdict, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind, Node, NodeValue, describe};
use crate::model::{Assertion, ToolCall, ToolOutcome, ToolResultRule};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "tool-call-f1",
    names: Names {
        v2: &["tool_call_f1"],
        v4: &["tool-call-f1"],
        promptfoo: &[],
    },
    doc: "F1 of the called tools (optionally with arguments) against an expected list.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[Key::new(
    "expected",
    Kind::List(&Kind::OneOf(&[Kind::Str, Kind::Map(&Kind::Any)])),
    "The calls expected: tool names, or `{tool, args}` (args compared as a subset).",
)
.required()];
const KEYS: KeyTable = KeyTable::new("tool-call-f1", "F1 of the tool calls against `expected`.", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let what = f.what().to_owned();
    let Some(node) = f.take("expected").filter(|n| !n.is_null()) else {
        cx.diags.error(
            f.pos,
            format!("{what} is missing the required key `expected`"),
            Some("add `expected: [lookup_order]` (or `[]` when no tool should be called)".to_owned()),
        );
        return None;
    };
    let Some(items) = node.as_seq() else {
        cx.diags.error(
            node.pos,
            format!("`expected` of {what} must be a list, found {}", describe(node)),
            None,
        );
        return None;
    };
    let expected: Option<Vec<ToolResultRule>> = items.iter().map(|item| entry(item, cx)).collect();
    Some(Arc::new(ToolCallF1 { expected: expected? }))
}

/// An expected call, kept as a rule (its outcome unused): a name and optional arguments.
fn entry(node: &Node, cx: &mut ParseContext<'_>) -> Option<ToolResultRule> {
    let rule = |tool: String, arguments: Option<Value>| ToolResultRule {
        tool,
        arguments,
        outcome: ToolOutcome::Result(Value::Null),
    };
    match &node.value {
        NodeValue::Str(name) if !name.trim().is_empty() => Some(rule(name.clone(), None)),
        NodeValue::Map(_) => {
            let tool = node.get("tool").or_else(|| node.get("name")).and_then(Node::scalar_text);
            let args = node.get("args").or_else(|| node.get("arguments")).map(Node::to_json);
            let unknown: Vec<String> = node
                .as_map()
                .unwrap_or_default()
                .iter()
                .map(|(k, _)| k.key_text())
                .filter(|k| !["tool", "name", "args", "arguments"].contains(&k.as_str()))
                .collect();
            if !unknown.is_empty() {
                cx.diags.warn(
                    node.pos,
                    format!("unknown key `{}` in an expected call; it is ignored", unknown.join("`, `")),
                    Some("an expected call has `tool` and `args`".to_owned()),
                );
            }
            match (tool, args) {
                (Some(tool), Some(args)) if !args.is_object() && !args.is_null() => {
                    cx.diags.error(node.pos, format!("`args` of expected call `{tool}` must be a mapping"), None);
                    None
                }
                (Some(tool), args) => Some(rule(tool, args.filter(|a| !a.is_null()))),
                (None, _) => {
                    cx.diags.error(node.pos, "an expected call needs `tool`", Some("write `{tool: lookup_order}`".to_owned()));
                    None
                }
            }
        }
        _ => {
            cx.diags.error(
                node.pos,
                format!("an expected call is a tool name or `{{tool, args}}`, found {}", describe(node)),
                None,
            );
            None
        }
    }
}

/// A `tool-call-f1` check.
#[derive(Debug, Clone)]
pub struct ToolCallF1 {
    pub expected: Vec<ToolResultRule>,
}

impl Grader for ToolCallF1 {
    fn default_name(&self) -> Option<String> {
        Some("tool-call-f1".to_owned())
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let calls: Vec<&ToolCall> = ctx.output_messages.iter().flat_map(|m| &m.tool_calls).collect();
            grade(&self.expected, &calls)
        })
    }
}

/// The score is F1; one assertion per expected call (found or not) and per unexpected call.
pub fn grade(expected: &[ToolResultRule], calls: &[&ToolCall]) -> Grade {
    let pairs = best_matching(expected, calls);
    let matched = pairs.iter().filter(|p| p.is_some()).count();
    let (precision, recall) = match (calls.len(), expected.len()) {
        (0, 0) => (1.0, 1.0),
        (c, e) => (ratio(matched, c), ratio(matched, e)),
    };
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    let mut assertions = Vec::new();
    for (want, pair) in expected.iter().zip(&pairs) {
        let shown = show(want);
        assertions.push(match pair {
            Some(i) => Assertion::new(format!("Expected {shown}: called (call {})", i + 1), true),
            None => Assertion::new(format!("Expected {shown}: not called"), false),
        });
    }
    for (i, call) in calls.iter().enumerate() {
        if !pairs.contains(&Some(i)) {
            assertions.push(Assertion::new(format!("Unexpected call {} `{}`", i + 1, call.tool), false));
        }
    }
    let verdict = GradeVerdict::of_score(f1);
    let mut grade = Grade::assessed(f1, assertions).with_verdict(verdict);
    grade.details = json!({"precision": precision, "recall": recall, "f1": f1,
                           "matched": matched, "calls": calls.len(), "expected": expected.len()})
    .as_object()
    .cloned();
    grade
}

fn ratio(n: usize, of: usize) -> f64 {
    if of == 0 { 0.0 } else { n as f64 / of as f64 }
}

fn show(want: &ToolResultRule) -> String {
    match &want.arguments {
        Some(args) => format!("`{}` with {args}", want.tool),
        None => format!("`{}`", want.tool),
    }
}

/// For each expected call, the call matched to it: a maximum matching (augmenting paths), so
/// an early call that fits two expectations never costs a match.
fn best_matching(expected: &[ToolResultRule], calls: &[&ToolCall]) -> Vec<Option<usize>> {
    let fits = |e: usize, c: usize| expected[e].matches(&calls[c].tool, calls[c].input.as_ref());
    let mut owner: Vec<Option<usize>> = vec![None; calls.len()];
    for e in 0..expected.len() {
        let mut seen = vec![false; calls.len()];
        augment(e, &fits, &mut owner, &mut seen);
    }
    let mut pairs = vec![None; expected.len()];
    for (c, e) in owner.iter().enumerate() {
        if let Some(e) = e {
            pairs[*e] = Some(c);
        }
    }
    pairs
}

fn augment(e: usize, fits: &dyn Fn(usize, usize) -> bool, owner: &mut [Option<usize>], seen: &mut [bool]) -> bool {
    for c in 0..owner.len() {
        if seen[c] || !fits(e, c) {
            continue;
        }
        seen[c] = true;
        if owner[c].is_none_or(|other| augment(other, fits, owner, seen)) {
            owner[c] = Some(e);
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::{parse_one, problems};

    fn expect(tool: &str, args: Option<Value>) -> ToolResultRule {
        ToolResultRule {
            tool: tool.into(),
            arguments: args,
            outcome: ToolOutcome::Result(Value::Null),
        }
    }

    fn call(tool: &str, input: Value) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            input: Some(input),
            ..ToolCall::default()
        }
    }

    #[test]
    fn precision_recall_and_f1_of_the_calls() {
        let a1 = call("lookup", json!({"id": "A1", "verbose": true}));
        let a2 = call("lookup", json!({"id": "A2"}));
        let t = call("track", json!({}));
        for (expected, calls, want_f1, want_misses) in [
            (vec![expect("lookup", None)], vec![&a1], 1.0, vec![]),
            (vec![], vec![], 1.0, vec![]),
            (vec![expect("lookup", None)], vec![], 0.0, vec!["Expected `lookup`: not called"]),
            (vec![], vec![&t], 0.0, vec!["Unexpected call 1 `track`"]),
            // precision 1/2, recall 1 → 2/3
            (vec![expect("lookup", None)], vec![&a1, &t], 2.0 / 3.0, vec!["Unexpected call 2 `track`"]),
            (
                vec![expect("lookup", Some(json!({"id": "A2"}))), expect("lookup", None)],
                vec![&a2, &a1],
                1.0,
                vec![],
            ),
            (
                vec![expect("lookup", Some(json!({"id": "B"})))],
                vec![&a1],
                0.0,
                vec![r#"Expected `lookup` with {"id":"B"}: not called"#, "Unexpected call 1 `lookup`"],
            ),
        ] {
            let g = grade(&expected, &calls);
            assert!((g.score - want_f1).abs() < 1e-9, "{expected:?}: {}", g.score);
            assert_eq!(g.misses, want_misses, "{expected:?}");
        }
    }

    #[test]
    fn a_call_fitting_two_expectations_does_not_cost_a_match() {
        // Greedy in order would give the first call to the unconstrained `lookup`.
        let first = call("lookup", json!({"id": "A1"}));
        let second = call("lookup", json!({"id": "Z"}));
        let expected = [expect("lookup", None), expect("lookup", Some(json!({"id": "A1"})))];
        let g = grade(&expected, &[&first, &second]);
        assert_eq!(g.score, 1.0, "{:?}", g.assertions);
        assert_eq!(g.details.as_ref().map(|d| d["matched"].clone()), Some(json!(2)));
    }

    #[test]
    fn expected_calls_are_names_or_tool_and_args() {
        let (grader, shown) = parse_one("{type: tool-call-f1, expected: [lookup, {tool: track, args: {id: 1}}]}");
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| g.name), Some("tool-call-f1".to_owned()));
        assert_eq!(
            problems("{type: tool_call_f1}")[0],
            "e.yaml:1:3: error: tool-call-f1 is missing the required key `expected`"
        );
        assert!(problems("{type: tool-call-f1, expected: [{args: {}}]}")[0].contains("an expected call needs `tool`"));
        assert!(problems("{type: tool-call-f1, expected: [{tool: t, args: 3}]}")[0].contains("must be a mapping"));
    }
}
