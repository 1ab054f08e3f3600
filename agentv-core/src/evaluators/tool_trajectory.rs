//! `tool_trajectory` / `tool-trajectory`: checks which tools the agent called, how often, in
//! what order and with which arguments (reference §2.9, `docs/architecture.md#tool-trajectory`).
//!
//! One grader serves both generations. In a 2.x file `in_order` and `exact` are all-or-nothing
//! and arguments match partially by default (the spec); in a 4.x file they score the share of
//! expected steps found (plus latency checks) and arguments match exactly by default, with
//! 4.x's assertion texts. `subset`, `superset`, `unordered`, `args_match`, `max_duration_ms`
//! and `maximums` work in both.

use std::sync::Arc;

use agentv_eval_sdk::Assertion;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::{Generation, Grade, GradeContext, GradeVerdict, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, IntRange, Key, KeyTable, Kind, Node, NodeValue, NumberRange, describe};
use crate::model::{OutputMessage, TraceEvent, TraceEventKind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "tool_trajectory",
    names: Names {
        v2: &["tool_trajectory"],
        v4: &["tool-trajectory"],
        promptfoo: &[],
    },
    doc: "Checks which tools the agent called, how often, in what order and with which arguments.",
    keys: &KEYS,
    parse,
};

const MODES: &[&str] = &["any_order", "in_order", "exact", "subset", "superset", "unordered"];
const ARGS_MODES: &[&str] = &["exact", "superset", "subset", "ignore"];
const ARGS_MATCH: Kind = Kind::OneOf(&[Kind::Enum(ARGS_MODES), Kind::List(&Kind::Text)]);

const OWN: &[Key] = &[
    Key::new(
        "mode",
        Kind::Enum(MODES),
        "any_order (minimum counts), in_order (a subsequence), exact (the whole sequence), superset (every expected call, any order), subset (only expected calls), unordered (every expected call matched once, any order).",
    )
    .required(),
    Key::new(
        "minimums",
        Kind::Map(&Kind::Int(IntRange::at_least(0))),
        "any_order: the least number of calls of each tool.",
    ),
    Key::new(
        "maximums",
        Kind::Map(&Kind::Int(IntRange::at_least(0))),
        "Any mode: the most calls of each tool; each is one more check.",
    ),
    Key::new(
        "expected",
        Kind::List(&Kind::Object(&EXPECTED_CALL_KEYS)),
        "The expected calls (every mode but any_order).",
    ),
    Key::new(
        "args_match",
        ARGS_MATCH,
        "How arguments are compared: exact (4.x default), superset, subset, ignore, or the list of argument paths to compare.",
    )
    .aliases(&["argsMatch"]),
];
const KEYS: KeyTable = KeyTable::new("tool_trajectory", "A tool-trajectory check.", &[OWN]);

const EXPECTED_CALL_OWN: &[Key] = &[
    Key::new("tool", Kind::Text, "The tool's name.").required(),
    Key::new(
        "args",
        Kind::OneOf(&[Kind::Enum(&["any"]), Kind::Map(&Kind::Any)]),
        "`any` (default), or the arguments the call must have (compared as `args_match` says).",
    ),
    Key::new("args_match", ARGS_MATCH, "This call's `args_match`, over the grader's.").aliases(&["argsMatch"]),
    Key::new(
        "max_duration_ms",
        Kind::Number(NumberRange::NON_NEGATIVE),
        "in_order, exact and unordered: the longest the matched call may take; one more check.",
    )
    .aliases(&["maxDurationMs"]),
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
    /// Exactly the expected calls, in order.
    Exact,
    /// Every actual call is one of the expected calls (which may repeat).
    Subset,
    /// Every expected call appears (each consumes the first unused matching call).
    Superset,
    /// Every expected call is matched by its own actual call, in any order: the best
    /// one-to-one assignment, so the order of the expected list never matters.
    Unordered,
}

impl TrajectoryMode {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "any_order" => Some(Self::AnyOrder),
            "in_order" => Some(Self::InOrder),
            "exact" => Some(Self::Exact),
            "subset" => Some(Self::Subset),
            "superset" => Some(Self::Superset),
            "unordered" => Some(Self::Unordered),
            _ => None,
        }
    }
}

/// How arguments are compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgsMode {
    /// The whole arguments object is equal (4.x default).
    Exact,
    /// Every expected key is in the call with an equal value; other keys are fine.
    Superset,
    /// Every key of the call is expected, with an equal value.
    Subset,
    /// Arguments are not compared.
    Ignore,
    /// Only these dot-paths are compared (those the expected arguments give).
    Paths(Vec<String>),
    /// The spec's partial match (2.x default): every expected key matches, objects
    /// recursively, arrays exactly.
    Partial,
}

/// A tool-trajectory check as configured.
#[derive(Debug, Clone)]
pub struct ToolTrajectory {
    pub mode: TrajectoryMode,
    /// Whose scoring and texts: 2.x (all-or-nothing sequences) or 4.x.
    pub generation: Generation,
    /// Tool name and minimum count, in file order (used by `any_order`).
    pub minimums: Vec<(String, u64)>,
    /// Tool name and maximum count, in file order (every mode).
    pub maximums: Vec<(String, u64)>,
    /// Expected calls (every mode but `any_order`).
    pub expected: Vec<ExpectedCall>,
    /// The grader's `args_match`.
    pub args_match: Option<ArgsMode>,
}

/// One expected tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedCall {
    pub tool: String,
    /// `None`: any arguments (`args` absent or `any`).
    pub args: Option<Map<String, Value>>,
    pub args_match: Option<ArgsMode>,
    pub max_duration_ms: Option<f64>,
}

impl ExpectedCall {
    /// A call of `tool` with any arguments.
    pub fn named(tool: &str) -> Self {
        Self {
            tool: tool.to_owned(),
            args: None,
            args_match: None,
            max_duration_ms: None,
        }
    }
}

/// Reads a tool-trajectory's keys: `mode`, and the `minimums` or `expected` it needs. A
/// missing or wrong part drops the grader in a 4.x file (as 4.x does) and makes the case
/// invalid in a 2.x file (as agentv always has).
fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let generation = cx.generation();
    let mark = cx.mark();
    let parsed = read(f, generation, cx);
    if generation == Generation::V4 && cx.drop_grader_if_errors(mark) {
        return None;
    }
    parsed.map(|t| Arc::new(t) as Arc<dyn Grader>)
}

fn read(f: &mut Fields<'_>, generation: Generation, cx: &mut ParseContext<'_>) -> Option<ToolTrajectory> {
    let pos = f.pos;
    let modes_help = Some("use any_order, in_order, exact, subset, superset or unordered".to_owned());
    let mode_node = f.take("mode");
    let mode = match mode_node.and_then(Node::as_str) {
        Some(text) => match TrajectoryMode::parse(text) {
            Some(mode) => mode,
            None => {
                let p = mode_node.map_or(pos, |n| n.pos);
                cx.diags
                    .error(p, format!("unknown tool_trajectory mode `{text}`"), modes_help);
                return None;
            }
        },
        None => {
            cx.diags
                .error(mode_node.map_or(pos, |n| n.pos), "tool_trajectory needs a `mode`", modes_help);
            return None;
        }
    };
    let minimums = match f.take("minimums") {
        Some(node) => counts(node, "minimums", cx)?,
        None if mode == TrajectoryMode::AnyOrder => {
            cx.diags.error(
                pos,
                "tool_trajectory mode any_order needs `minimums`",
                Some("add `minimums: {toolName: count}`".to_owned()),
            );
            return None;
        }
        None => Vec::new(),
    };
    let maximums = match f.take("maximums") {
        Some(node) => counts(node, "maximums", cx)?,
        None => Vec::new(),
    };
    let args_match = match f.take("args_match") {
        Some(node) => Some(args_mode(node, cx)?),
        None => None,
    };
    let mut expected = Vec::new();
    match f.take("expected") {
        Some(node) => {
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
        }
        None if mode != TrajectoryMode::AnyOrder => {
            let written = mode_node.and_then(Node::as_str).unwrap_or_default();
            cx.diags.error(
                pos,
                format!("tool_trajectory mode {written} needs `expected`"),
                Some("add `expected: [{tool: name}, ...]`".to_owned()),
            );
            return None;
        }
        None => {}
    }
    Some(ToolTrajectory {
        mode,
        generation,
        minimums,
        maximums,
        expected,
        args_match,
    })
}

/// `minimums` / `maximums`: tool names to whole counts ≥ 0.
fn counts(node: &Node, key: &str, cx: &mut ParseContext<'_>) -> Option<Vec<(String, u64)>> {
    let Some(entries) = node.as_map() else {
        cx.diags.error(
            node.pos,
            format!("`{key}` must map tool names to counts"),
            Some(format!("for example `{key}: {{search: 2}}`")),
        );
        return None;
    };
    let mut out = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        match v.value {
            NodeValue::Int(n) if n >= 0 => out.push((k.key_text(), n as u64)),
            _ => {
                let which = if key == "minimums" { "minimum" } else { "maximum" };
                cx.diags.error(
                    v.pos,
                    format!("{which} for `{}` must be a whole number ≥ 0, found {}", k.key_text(), describe(v)),
                    None,
                );
                return None;
            }
        }
    }
    Some(out)
}

fn args_mode(node: &Node, cx: &mut ParseContext<'_>) -> Option<ArgsMode> {
    match &node.value {
        NodeValue::Str(s) => match s.as_str() {
            "exact" => Some(ArgsMode::Exact),
            "superset" => Some(ArgsMode::Superset),
            "subset" => Some(ArgsMode::Subset),
            "ignore" => Some(ArgsMode::Ignore),
            other => {
                cx.diags.error(
                    node.pos,
                    format!("unknown `args_match` `{other}`"),
                    Some("use exact, superset, subset, ignore, or a list of argument paths".to_owned()),
                );
                None
            }
        },
        NodeValue::Seq(items) if items.iter().all(|i| i.as_str().is_some()) => Some(ArgsMode::Paths(
            items.iter().filter_map(Node::as_str).map(str::to_owned).collect(),
        )),
        _ => {
            cx.diags.error(
                node.pos,
                format!("`args_match` must be a mode or a list of argument paths, found {}", describe(node)),
                None,
            );
            None
        }
    }
}

fn expected_call(node: &Node, cx: &mut ParseContext<'_>) -> Option<ExpectedCall> {
    let mut f = Fields::of(node, &EXPECTED_CALL_KEYS, cx.diags)?;
    let tool = f.required_string("tool", "expected tool call", cx.diags)?;
    let args = match f.take("args") {
        None => None,
        Some(n) if n.as_str() == Some("any") => None,
        Some(n) => match n.to_json() {
            Value::Object(map) => Some(map),
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
    let args_match = match f.take("args_match") {
        Some(n) => Some(args_mode(n, cx)?),
        None => None,
    };
    let max_duration_ms = f.number("max_duration_ms", cx.diags);
    // `input`/`output` appear in some suites as documentation; they are not checked.
    let _ = f.take("input");
    let _ = f.take("output");
    f.warn_unknown(cx.diags);
    Some(ExpectedCall {
        tool,
        args,
        args_match,
        max_duration_ms,
    })
}

/// The message when there is nothing to evaluate.
pub const NO_TRACE: &str = "No trace available for evaluation";

/// One observed call: tool name, input and duration.
#[derive(Debug, Clone, PartialEq)]
pub struct Call<'a> {
    pub tool: &'a str,
    pub input: Option<&'a Value>,
    pub duration_ms: Option<f64>,
}

impl<'a> Call<'a> {
    pub fn new(tool: &'a str, input: Option<&'a Value>) -> Self {
        Self {
            tool,
            input,
            duration_ms: None,
        }
    }
}

impl Grader for ToolTrajectory {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let calls = observed_calls(ctx.output_messages, ctx.trace);
            // 4.x grades an answer without tool calls (zero calls); only no output at all is
            // "no trace". 2.x needs a call or a trace event.
            let calls = match (calls, self.generation) {
                (Some(calls), _) => calls,
                (None, Generation::V4) if !ctx.output_messages.is_empty() => Vec::new(),
                (None, _) => return no_trace(self.generation),
            };
            grade(self, &calls)
        })
    }
}

fn no_trace(generation: Generation) -> Grade {
    match generation {
        Generation::V2 => Grade::scored(0.0, Vec::new(), vec![NO_TRACE.to_owned()]),
        Generation::V4 | Generation::Promptfoo => {
            Grade::assessed(0.0, vec![Assertion::new(NO_TRACE, false)]).with_verdict(GradeVerdict::Fail)
        }
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
            duration_ms: c.duration_ms,
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
            .filter_map(|e| e.name.as_deref().map(|tool| Call::new(tool, e.input.as_ref())))
            .collect(),
    )
}

/// What one mode concluded before the maximums are added: its checks and, for sequences, the
/// first divergence.
struct Checked {
    assertions: Vec<Assertion>,
    /// Numerator and denominator of the mode's score; `None` for a 2.x all-or-nothing mode.
    fraction: Option<(f64, f64)>,
    divergence: Option<String>,
}

/// Grades `calls` against the spec (`docs/architecture.md#tool-trajectory`).
pub fn grade(spec: &ToolTrajectory, calls: &[Call<'_>]) -> Grade {
    if spec.generation == Generation::V2 {
        match spec.mode {
            TrajectoryMode::AnyOrder => return v2::any_order(spec, calls),
            TrajectoryMode::InOrder => return v2::in_order(spec, calls),
            TrajectoryMode::Exact => return v2::exact(spec, calls),
            _ => {}
        }
    }
    let checked = match spec.mode {
        TrajectoryMode::AnyOrder => any_order(spec, calls),
        TrajectoryMode::InOrder => in_order(spec, calls),
        TrajectoryMode::Exact => exact(spec, calls),
        TrajectoryMode::Superset => superset(spec, calls),
        TrajectoryMode::Subset => subset(spec, calls),
        TrajectoryMode::Unordered => unordered(spec, calls),
    };
    finish(spec, calls, checked)
}

/// Adds the maximums to a mode's checks and scores: passed checks over all checks.
fn finish(spec: &ToolTrajectory, calls: &[Call<'_>], checked: Checked) -> Grade {
    let Checked {
        mut assertions,
        fraction,
        divergence,
    } = checked;
    let (mut hits, mut total) = fraction.unwrap_or((0.0, 0.0));
    for max in maximum_checks(&spec.maximums, calls, spec.generation) {
        total += 1.0;
        hits += f64::from(u8::from(max.passed));
        assertions.push(max);
    }
    let score = if total > 0.0 { hits / total } else { 1.0 };
    let mut grade = Grade::assessed(score, assertions).with_verdict(GradeVerdict::of_score(score));
    grade.misses.extend(divergence);
    grade
}

fn count(calls: &[Call<'_>], tool: &str) -> usize {
    calls.iter().filter(|c| c.tool == tool).count()
}

fn maximum_checks(maximums: &[(String, u64)], calls: &[Call<'_>], generation: Generation) -> Vec<Assertion> {
    maximums
        .iter()
        .map(|(tool, max)| {
            let n = count(calls, tool);
            let text = match generation {
                Generation::V4 | Generation::Promptfoo => format!("{tool}: called {n} times (allowed <={max})"),
                Generation::V2 => format!("{tool} called {n} {} (maximum: {max})", times(n)),
            };
            Assertion::new(text, n as u64 <= *max)
        })
        .collect()
}

fn times(n: usize) -> &'static str {
    if n == 1 { "time" } else { "times" }
}

/// The effective argument comparison of `want` (its own, else the grader's, else the
/// generation's default).
fn args_mode_of<'m>(spec: &'m ToolTrajectory, want: &'m ExpectedCall) -> &'m ArgsMode {
    want.args_match.as_ref().or(spec.args_match.as_ref()).unwrap_or(match spec.generation {
        Generation::V4 | Generation::Promptfoo => &ArgsMode::Exact,
        Generation::V2 => &ArgsMode::Partial,
    })
}

fn matches(spec: &ToolTrajectory, want: &ExpectedCall, call: &Call<'_>) -> bool {
    call.tool == want.tool && args_match(want.args.as_ref(), call.input, args_mode_of(spec, want))
}

/// Whether a call's arguments match (`argsMatch` of 4.x, plus the 2.x partial match).
pub fn args_match(expected: Option<&Map<String, Value>>, actual: Option<&Value>, mode: &ArgsMode) -> bool {
    let Some(expected) = expected else {
        return true;
    };
    if *mode == ArgsMode::Ignore {
        return true;
    }
    if *mode == ArgsMode::Partial {
        return match actual {
            Some(Value::Object(actual)) => partial_match(expected, actual),
            _ => expected.is_empty(),
        };
    }
    let Some(actual) = actual else {
        return false;
    };
    match mode {
        ArgsMode::Exact => deep_equal(&Value::Object(expected.clone()), actual),
        ArgsMode::Superset => actual.as_object().is_some_and(|a| {
            expected
                .iter()
                .all(|(k, v)| a.get(k).is_some_and(|w| deep_equal(v, w)))
        }),
        ArgsMode::Subset => actual.as_object().is_some_and(|a| {
            a.iter()
                .all(|(k, v)| expected.get(k).is_some_and(|w| deep_equal(v, w)))
        }),
        ArgsMode::Paths(paths) => paths.iter().all(|path| {
            match dotted(&Value::Object(expected.clone()), path) {
                None => true,
                Some(want) => dotted(actual, path).is_some_and(|got| deep_equal(want, got)),
            }
        }),
        ArgsMode::Ignore | ArgsMode::Partial => true,
    }
}

/// The value at dot-path `path` (`a.b.c`) of `value`.
fn dotted<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(value, |v, part| v.as_object()?.get(part))
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

/// Longest rendering of a call's arguments in a divergence message.
const MAX_ARGS_SHOWN: usize = 80;

fn render_args(args: &Map<String, Value>) -> String {
    let shown: Vec<String> = args.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let text = shown.join(", ");
    if text.chars().count() <= MAX_ARGS_SHOWN {
        text
    } else {
        format!("{}…", text.chars().take(MAX_ARGS_SHOWN).collect::<String>())
    }
}

/// `search(q="x")` for an expected call with arguments, `search` without.
fn show_expected(want: &ExpectedCall) -> String {
    match &want.args {
        Some(args) => format!("{}({})", want.tool, render_args(args)),
        None => want.tool.clone(),
    }
}

/// `read(path="a")`; `read()` without arguments.
fn show_call(call: Option<&Call<'_>>) -> String {
    match call {
        None => "nothing".to_owned(),
        Some(c) => match c.input {
            Some(Value::Object(args)) => format!("{}({})", c.tool, render_args(args)),
            Some(other) => format!("{}({other})", c.tool),
            None => format!("{}()", c.tool),
        },
    }
}

/// The diff-style line naming where a sequence first went wrong (steps count from 1).
fn divergence(step: usize, want: Option<&ExpectedCall>, got: Option<&Call<'_>>) -> String {
    let want = want.map_or_else(|| "nothing".to_owned(), show_expected);
    format!("first divergence at step {step}: expected {want}, got {}", show_call(got))
}

/// A latency check of a matched call: `Some(passed assertion)`, or `None` when not asked for
/// or the call reports no duration (not counted, as in 4.x).
fn latency(want: &ExpectedCall, call: &Call<'_>) -> Option<Assertion> {
    let max = want.max_duration_ms?;
    let Some(took) = call.duration_ms else {
        tracing::warn!(
            "[tool-trajectory] No duration data for {}; latency assertion skipped",
            want.tool
        );
        return None;
    };
    Some(if took <= max {
        Assertion::new(format!("{} completed in {took}ms (max: {max}ms)", want.tool), true)
    } else {
        Assertion::new(format!("{} took {took}ms (max: {max}ms)", want.tool), false)
    })
}

/// Sequence hits and latency checks of in_order / exact / unordered, scored as 4.x does:
/// (hits + latency passes) / (expected + latency checks not skipped), where a latency check of
/// an item that was never matched still counts.
struct Tally {
    hits: f64,
    latency_passed: f64,
    latency_skipped: f64,
}

impl Tally {
    fn new() -> Self {
        Self {
            hits: 0.0,
            latency_passed: 0.0,
            latency_skipped: 0.0,
        }
    }

    fn matched(&mut self, want: &ExpectedCall, call: &Call<'_>, assertions: &mut Vec<Assertion>) {
        self.hits += 1.0;
        match latency(want, call) {
            Some(a) => {
                self.latency_passed += f64::from(u8::from(a.passed));
                assertions.push(a);
            }
            None if want.max_duration_ms.is_some() => self.latency_skipped += 1.0,
            None => {}
        }
    }

    fn fraction(&self, expected: &[ExpectedCall]) -> (f64, f64) {
        let latency_checks = expected.iter().filter(|e| e.max_duration_ms.is_some()).count() as f64;
        (
            self.hits + self.latency_passed,
            expected.len() as f64 + latency_checks - self.latency_skipped,
        )
    }
}

fn any_order(spec: &ToolTrajectory, calls: &[Call<'_>]) -> Checked {
    if spec.minimums.is_empty() && spec.maximums.is_empty() {
        return Checked {
            assertions: vec![Assertion::new("No tool requirements specified", true)],
            fraction: Some((1.0, 1.0)),
            divergence: None,
        };
    }
    let assertions: Vec<Assertion> = spec
        .minimums
        .iter()
        .map(|(tool, min)| {
            let n = count(calls, tool);
            Assertion::new(format!("{tool}: called {n} times (required >={min})"), n as u64 >= *min)
        })
        .collect();
    let passed = assertions.iter().filter(|a| a.passed).count() as f64;
    Checked {
        fraction: Some((passed, assertions.len() as f64)),
        assertions,
        divergence: None,
    }
}

fn no_sequence() -> Checked {
    Checked {
        assertions: vec![Assertion::new("No tool sequence specified", true)],
        fraction: Some((1.0, 1.0)),
        divergence: None,
    }
}

/// One cursor over the calls: for each expected call, the next call of the same tool; its
/// arguments must match, else it is a miss and the call is used up all the same (quirk 6).
fn in_order(spec: &ToolTrajectory, calls: &[Call<'_>]) -> Checked {
    if spec.expected.is_empty() {
        return no_sequence();
    }
    let mut assertions = Vec::new();
    let mut tally = Tally::new();
    let mut first_divergence = None;
    let mut cursor = 0;
    for (i, want) in spec.expected.iter().enumerate() {
        let start = cursor;
        let found = calls[cursor.min(calls.len())..].iter().position(|c| c.tool == want.tool);
        match found {
            Some(offset) => {
                let j = cursor + offset;
                cursor = j + 1;
                let call = &calls[j];
                if matches(spec, want, call) {
                    assertions.push(Assertion::new(format!("Found {} at position {j}", want.tool), true));
                    tally.matched(want, call, &mut assertions);
                } else {
                    assertions.push(Assertion::new(
                        format!(
                            "Expected {} at position {i}: tool found at {j} but args mismatch",
                            want.tool
                        ),
                        false,
                    ));
                    first_divergence.get_or_insert_with(|| divergence(i + 1, Some(want), Some(call)));
                }
            }
            None => {
                cursor = calls.len();
                assertions.push(Assertion::new(
                    format!("Expected {} at position {i}, not found in remaining trace", want.tool),
                    false,
                ));
                first_divergence.get_or_insert_with(|| divergence(i + 1, Some(want), calls.get(start)));
            }
        }
    }
    Checked {
        fraction: Some(tally.fraction(&spec.expected)),
        assertions,
        divergence: first_divergence,
    }
}

/// Position by position; a length difference is one failed assertion that does not count, so
/// extra calls do not lower the score (4.x).
fn exact(spec: &ToolTrajectory, calls: &[Call<'_>]) -> Checked {
    if spec.expected.is_empty() {
        return no_sequence();
    }
    let expected = &spec.expected;
    let mut assertions = Vec::new();
    if calls.len() != expected.len() {
        assertions.push(Assertion::new(
            format!("Expected {} tool calls, got {}", expected.len(), calls.len()),
            false,
        ));
    }
    let mut tally = Tally::new();
    let mut first_divergence = None;
    for (i, (want, call)) in expected.iter().zip(calls).enumerate() {
        if call.tool != want.tool {
            assertions.push(Assertion::new(
                format!("Position {i}: expected {}, got {}", want.tool, call.tool),
                false,
            ));
        } else if !matches(spec, want, call) {
            assertions.push(Assertion::new(format!("Position {i}: {} args mismatch", want.tool), false));
        } else {
            assertions.push(Assertion::new(format!("Position {i}: {}", want.tool), true));
            tally.matched(want, call, &mut assertions);
            continue;
        }
        first_divergence.get_or_insert_with(|| divergence(i + 1, Some(want), Some(call)));
    }
    for (i, want) in expected.iter().enumerate().skip(calls.len()) {
        assertions.push(Assertion::new(format!("Position {i}: expected {}, got nothing", want.tool), false));
        first_divergence.get_or_insert_with(|| divergence(i + 1, Some(want), None));
    }
    if calls.len() > expected.len() {
        let i = expected.len();
        first_divergence.get_or_insert_with(|| divergence(i + 1, None, calls.get(i)));
    }
    Checked {
        fraction: Some(tally.fraction(expected)),
        assertions,
        divergence: first_divergence,
    }
}

/// Each expected call takes the first unused matching call (greedy, as 4.x).
fn superset(spec: &ToolTrajectory, calls: &[Call<'_>]) -> Checked {
    if spec.expected.is_empty() {
        return Checked {
            assertions: vec![Assertion::new("No expected tools specified", true)],
            fraction: Some((1.0, 1.0)),
            divergence: None,
        };
    }
    let mut used = vec![false; calls.len()];
    let mut assertions = Vec::new();
    for want in &spec.expected {
        let found = (0..calls.len()).find(|&j| !used[j] && matches(spec, want, &calls[j]));
        assertions.push(match found {
            Some(j) => {
                used[j] = true;
                Assertion::new(format!("Found {} at position {j}", want.tool), true)
            }
            None => Assertion::new(format!("Expected {} not found in actual trajectory", want.tool), false),
        });
    }
    let found = assertions.iter().filter(|a| a.passed).count() as f64;
    Checked {
        fraction: Some((found, spec.expected.len() as f64)),
        assertions,
        divergence: None,
    }
}

/// Every call must be one of the expected calls (each may be used any number of times).
fn subset(spec: &ToolTrajectory, calls: &[Call<'_>]) -> Checked {
    let only = |text: String, passed: bool| Checked {
        fraction: Some((f64::from(u8::from(passed)), 1.0)),
        assertions: vec![Assertion::new(text, passed)],
        divergence: None,
    };
    if spec.expected.is_empty() {
        return if calls.is_empty() {
            only("No tool calls and no expected tools".to_owned(), true)
        } else {
            only(
                format!("{} unexpected tool call(s) with empty allowed list", calls.len()),
                false,
            )
        };
    }
    if calls.is_empty() {
        return only("No actual tool calls (trivially a subset)".to_owned(), true);
    }
    let assertions: Vec<Assertion> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            if spec.expected.iter().any(|want| matches(spec, want, call)) {
                Assertion::new(format!("Position {i}: {} is in allowed set", call.tool), true)
            } else {
                Assertion::new(format!("Position {i}: {} is not in allowed set", call.tool), false)
            }
        })
        .collect();
    let allowed = assertions.iter().filter(|a| a.passed).count() as f64;
    Checked {
        fraction: Some((allowed, calls.len() as f64)),
        assertions,
        divergence: None,
    }
}

/// Every expected call matched by its own call, in any order: the largest one-to-one
/// assignment (augmenting paths), so `[read(any), read(path: a)]` against `[read(a), read(b)]`
/// matches both, where greedy `superset` would not.
fn unordered(spec: &ToolTrajectory, calls: &[Call<'_>]) -> Checked {
    if spec.expected.is_empty() {
        return Checked {
            assertions: vec![Assertion::new("No expected tools specified", true)],
            fraction: Some((1.0, 1.0)),
            divergence: None,
        };
    }
    let fits: Vec<Vec<usize>> = spec
        .expected
        .iter()
        .map(|want| (0..calls.len()).filter(|&j| matches(spec, want, &calls[j])).collect())
        .collect();
    // owner[j] = the expected item call j is assigned to
    let mut owner: Vec<Option<usize>> = vec![None; calls.len()];
    for i in 0..fits.len() {
        let mut seen = vec![false; calls.len()];
        assign(i, &fits, &mut owner, &mut seen);
    }
    let mut assigned: Vec<Option<usize>> = vec![None; spec.expected.len()];
    for (j, o) in owner.iter().enumerate() {
        if let Some(i) = o {
            assigned[*i] = Some(j);
        }
    }
    let mut assertions = Vec::new();
    let mut tally = Tally::new();
    for (want, slot) in spec.expected.iter().zip(&assigned) {
        match slot {
            Some(j) => {
                assertions.push(Assertion::new(format!("Found {} at position {j}", want.tool), true));
                tally.matched(want, &calls[*j], &mut assertions);
            }
            None => assertions.push(Assertion::new(
                format!("Expected {} not found in actual trajectory", want.tool),
                false,
            )),
        }
    }
    Checked {
        fraction: Some(tally.fraction(&spec.expected)),
        assertions,
        divergence: None,
    }
}

/// Kuhn's augmenting path from expected item `i`.
fn assign(i: usize, fits: &[Vec<usize>], owner: &mut [Option<usize>], seen: &mut [bool]) -> bool {
    for &j in &fits[i] {
        if seen[j] {
            continue;
        }
        seen[j] = true;
        if owner[j].is_none_or(|other| assign(other, fits, owner, seen)) {
            owner[j] = Some(i);
            return true;
        }
    }
    false
}

/// The spec's scoring of the three 2.x modes (`docs/architecture.md#tool-trajectory`):
/// any_order is the share of minimums met, in_order and exact are all-or-nothing; texts as
/// agentv has always written them. Maximums and latency checks, when given, must hold too.
mod v2 {
    use super::*;

    /// Fraction of minimums (and maximums) met.
    pub fn any_order(spec: &ToolTrajectory, calls: &[Call<'_>]) -> Grade {
        if spec.minimums.is_empty() && spec.maximums.is_empty() {
            return Grade::scored(1.0, vec!["No tool requirements specified".to_owned()], Vec::new());
        }
        let mut checks: Vec<Assertion> = spec
            .minimums
            .iter()
            .map(|(tool, min)| {
                let n = count(calls, tool);
                Assertion::new(format!("{tool} called {n} {} (minimum: {min})", times(n)), n as u64 >= *min)
            })
            .collect();
        checks.extend(maximum_checks(&spec.maximums, calls, Generation::V2));
        let passed = checks.iter().filter(|a| a.passed).count();
        let score = passed as f64 / checks.len() as f64;
        let (hits, misses) = split(checks);
        Grade::scored(score, hits, misses)
    }

    fn split(checks: Vec<Assertion>) -> (Vec<String>, Vec<String>) {
        let (passed, failed): (Vec<Assertion>, Vec<Assertion>) = checks.into_iter().partition(|a| a.passed);
        (
            passed.into_iter().map(|a| a.text).collect(),
            failed.into_iter().map(|a| a.text).collect(),
        )
    }

    fn sequence(calls: &[Call<'_>]) -> String {
        if calls.is_empty() {
            "(none)".to_owned()
        } else {
            calls.iter().map(|c| c.tool).collect::<Vec<_>>().join(", ")
        }
    }

    fn describe_args(want: &ExpectedCall) -> String {
        match &want.args {
            None => "any".to_owned(),
            Some(map) => Value::Object(map.clone()).to_string(),
        }
    }

    /// The maximum and latency checks every all-or-nothing mode adds: their hits and misses.
    fn extras(spec: &ToolTrajectory, calls: &[Call<'_>], latencies: Vec<Assertion>) -> (Vec<String>, Vec<String>) {
        let mut checks = latencies;
        checks.extend(maximum_checks(&spec.maximums, calls, Generation::V2));
        split(checks)
    }

    fn all_or_nothing(mut hits: Vec<String>, mut misses: Vec<String>, extra: (Vec<String>, Vec<String>)) -> Grade {
        hits.extend(extra.0);
        misses.extend(extra.1);
        let score = if misses.is_empty() { 1.0 } else { 0.0 };
        Grade::scored(score, hits, misses)
    }

    /// All expected calls, in order, possibly with other calls between: 1.0, else 0.0.
    pub fn in_order(spec: &ToolTrajectory, calls: &[Call<'_>]) -> Grade {
        if spec.expected.is_empty() {
            return Grade::scored(1.0, vec!["No tool sequence specified".to_owned()], Vec::new());
        }
        let mut hits = Vec::new();
        let mut latencies = Vec::new();
        let mut cursor = 0;
        for (step, want) in spec.expected.iter().enumerate() {
            let rest = &calls[cursor.min(calls.len())..];
            match rest.iter().position(|c| matches(spec, want, c)) {
                Some(offset) => {
                    let call = &calls[cursor + offset];
                    hits.push(format!(
                        "step {}: {} called (position {})",
                        step + 1,
                        want.tool,
                        cursor + offset + 1
                    ));
                    latencies.extend(latency(want, call));
                    cursor += offset + 1;
                }
                None => {
                    let why = if rest.iter().any(|c| c.tool == want.tool) {
                        format!(
                            "{} was called after position {cursor} but its arguments did not match {}",
                            want.tool,
                            describe_args(want)
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
                        "step {}: expected {} — {why}; calls were: {}",
                        step + 1,
                        want.tool,
                        sequence(calls)
                    );
                    let got = rest
                        .iter()
                        .find(|c| c.tool == want.tool)
                        .or_else(|| calls.get(cursor));
                    let misses = vec![miss, divergence(step + 1, Some(want), got)];
                    return all_or_nothing(hits, misses, extras(spec, calls, latencies));
                }
            }
        }
        all_or_nothing(hits, Vec::new(), extras(spec, calls, latencies))
    }

    /// Exactly the expected calls in order: 1.0, else 0.0.
    pub fn exact(spec: &ToolTrajectory, calls: &[Call<'_>]) -> Grade {
        let expected = &spec.expected;
        if expected.is_empty() && calls.is_empty() {
            return Grade::scored(1.0, vec!["No tool sequence specified".to_owned()], Vec::new());
        }
        let (mut hits, mut misses) = (Vec::new(), Vec::new());
        let mut latencies = Vec::new();
        let mut first = None;
        for (i, want) in expected.iter().enumerate() {
            match calls.get(i) {
                Some(c) if matches(spec, want, c) => {
                    hits.push(format!("step {}: {}", i + 1, want.tool));
                    latencies.extend(latency(want, c));
                    continue;
                }
                Some(c) if c.tool == want.tool => misses.push(format!(
                    "step {}: {} arguments did not match {}",
                    i + 1,
                    want.tool,
                    describe_args(want)
                )),
                Some(c) => misses.push(format!("step {}: expected {}, got {}", i + 1, want.tool, c.tool)),
                None => misses.push(format!(
                    "step {}: expected {}, but there were only {} calls",
                    i + 1,
                    want.tool,
                    calls.len()
                )),
            }
            first.get_or_insert_with(|| divergence(i + 1, Some(want), calls.get(i)));
        }
        if calls.len() > expected.len() {
            let extra: Vec<&str> = calls[expected.len()..].iter().map(|c| c.tool).collect();
            misses.push(format!(
                "expected exactly {} tool calls, got {}; extra: {}",
                expected.len(),
                calls.len(),
                extra.join(", ")
            ));
            let i = expected.len();
            first.get_or_insert_with(|| divergence(i + 1, None, calls.get(i)));
        }
        misses.extend(first);
        all_or_nothing(hits, misses, extras(spec, calls, latencies))
    }
}

#[cfg(test)]
#[allow(clippy::too_many_lines, reason = "a table-driven test keeps its rows and checks in one place")]
mod tests;
