use serde_json::json;

use super::*;
use crate::evaluators::testkit::parse;

fn calls<'a>(names: &[&'a str]) -> Vec<Call<'a>> {
    names.iter().map(|t| Call::new(t, None)).collect()
}

fn expect(names: &[&str]) -> Vec<ExpectedCall> {
    names.iter().map(|t| ExpectedCall::named(t)).collect()
}

fn spec(generation: Generation, mode: TrajectoryMode, expected: Vec<ExpectedCall>) -> ToolTrajectory {
    ToolTrajectory {
        mode,
        generation,
        minimums: Vec::new(),
        maximums: Vec::new(),
        expected,
        args_match: None,
    }
}

fn mins(generation: Generation, m: &[(&str, u64)]) -> ToolTrajectory {
    ToolTrajectory {
        minimums: m.iter().map(|(t, n)| ((*t).into(), *n)).collect(),
        ..spec(generation, TrajectoryMode::AnyOrder, Vec::new())
    }
}

// --- 2.x: the spec's scenarios (all-or-nothing sequences, partial args) ---

const V2: Generation = Generation::V2;

#[test]
fn spec_minimum_calls_met() {
    let g = grade(&mins(V2, &[("semanticSearch", 3)]), &calls(&["semanticSearch"; 3]));
    assert_eq!(g.score, 1.0);
    assert_eq!(g.hits, ["semanticSearch called 3 times (minimum: 3)"]);
}

#[test]
fn spec_minimum_calls_not_met() {
    let g = grade(&mins(V2, &[("semanticSearch", 3)]), &calls(&["semanticSearch"]));
    assert_eq!(g.score, 0.0);
    assert_eq!(g.misses, ["semanticSearch called 1 time (minimum: 3)"]);
}

#[test]
fn spec_multiple_minimums_partial_pass() {
    let g = grade(
        &mins(V2, &[("toolA", 2), ("toolB", 2)]),
        &calls(&["toolA", "toolB", "toolA"]),
    );
    assert_eq!(g.score, 0.5);
    assert_eq!(g.hits, ["toolA called 2 times (minimum: 2)"]);
    assert_eq!(g.misses, ["toolB called 1 time (minimum: 2)"]);
}

#[test]
fn spec_in_order_allows_extra_tools() {
    let g = grade(
        &spec(V2, TrajectoryMode::InOrder, expect(&["A", "B", "C"])),
        &calls(&["A", "X", "B", "Y", "C"]),
    );
    assert_eq!(g.score, 1.0, "{:?}", g.misses);
}

#[test]
fn spec_in_order_wrong_order_fails() {
    let g = grade(&spec(V2, TrajectoryMode::InOrder, expect(&["A", "B"])), &calls(&["B", "A"]));
    assert_eq!(g.score, 0.0);
    assert_eq!(
        g.misses,
        [
            "step 2: expected B — B was only called before the previous expected step (out of order); calls were: B, A",
            "first divergence at step 2: expected B, got nothing",
        ]
    );
}

#[test]
fn spec_exact_pass_and_extra_tool_fails() {
    let s = spec(V2, TrajectoryMode::Exact, expect(&["A", "B"]));
    assert_eq!(grade(&s, &calls(&["A", "B"])).score, 1.0);
    let g = grade(&s, &calls(&["A", "B", "C"]));
    assert_eq!(g.score, 0.0);
    assert_eq!(
        g.misses,
        [
            "expected exactly 2 tool calls, got 3; extra: C",
            "first divergence at step 3: expected nothing, got C()",
        ]
    );
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
    assert_eq!(grade(&mins(V2, &[("semanticSearch", 3)]), &calls).score, 1.0);
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
    let call = [Call::new("search", Some(&input))];
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
        let s = spec(
            V2,
            TrajectoryMode::InOrder,
            vec![ExpectedCall {
                args: Some(map),
                ..ExpectedCall::named("search")
            }],
        );
        assert_eq!(grade(&s, &call).score, want, "{args}");
    }
    assert_eq!(grade(&spec(V2, TrajectoryMode::Exact, expect(&["search"])), &call).score, 1.0);
}

// --- 4.x: the compat suite's trajectory, as 4.42.4 scored it ---

/// search {query, limit} 120 ms · read docs/refunds.md 40 ms · read docs/faq.md 30 ms ·
/// write {path, content, mode} 900 ms.
fn trajectory() -> Vec<Value> {
    vec![
        json!({"query": "refund policy", "limit": 5}),
        json!({"path": "docs/refunds.md"}),
        json!({"path": "docs/faq.md"}),
        json!({"path": "out.md", "content": "summary", "mode": "w"}),
    ]
}

fn observed(inputs: &[Value]) -> Vec<Call<'_>> {
    let tools = ["search", "read", "read", "write"];
    let durations = [120.0, 40.0, 30.0, 900.0];
    inputs
        .iter()
        .zip(tools)
        .zip(durations)
        .map(|((input, tool), d)| Call {
            tool,
            input: Some(input),
            duration_ms: Some(d),
        })
        .collect()
}

/// Reads one 4.x tool-trajectory grader's keys.
fn v4(yaml: &str) -> ToolTrajectory {
    let node = crate::config::node::parse_yaml(yaml).expect("yaml");
    let ws = crate::paths::Workspace::from_cwd(std::env::temp_dir());
    let mut diags = crate::config::Diagnostics::new(std::path::Path::new("e.yaml"));
    let mut cx = ParseContext::new(&ws, &ws.cwd, &mut diags);
    let mut f = Fields::of(&node, &KEYS, cx.diags).expect("map");
    let spec = read(&mut f, Generation::V4, &mut cx).expect("valid");
    f.warn_unknown(cx.diags);
    let problems = diags.into_vec();
    assert!(problems.is_empty(), "{problems:?}");
    spec
}

#[test]
fn a_kebab_case_type_follows_4x_until_the_file_says_otherwise() {
    for (yaml, generation) in [
        ("- {type: tool-trajectory, mode: any_order, minimums: {}}\n", "V4"),
        ("- {type: tool_trajectory, mode: any_order, minimums: {}}\n", "V2"),
    ] {
        let (graders, _) = parse(yaml);
        let shown = format!("{:?}", graders.expect("valid")[0].grader);
        assert!(shown.contains(&format!("generation: {generation}")), "{shown}");
    }
}

#[test]
fn the_4x_modes_score_the_compat_trajectory_as_4_42_4_does() {
    let inputs = trajectory();
    let calls = observed(&inputs);
    // (case id, grader keys, score, assertion texts)
    type Case<'a> = (&'a str, &'a str, f64, &'a [(&'a str, bool)]);
    let cases: &[Case<'_>] = &[
        (
            "any-order-pass",
            "mode: any_order\nminimums: {read: 2, search: 1}\n",
            1.0,
            &[("read: called 2 times (required >=2)", true), ("search: called 1 times (required >=1)", true)],
        ),
        (
            "any-order-partial",
            "mode: any_order\nminimums: {read: 3, search: 1, write: 1}\n",
            2.0 / 3.0,
            &[
                ("read: called 2 times (required >=3)", false),
                ("search: called 1 times (required >=1)", true),
                ("write: called 1 times (required >=1)", true),
            ],
        ),
        (
            "in-order-pass",
            "mode: in_order\nexpected: [{tool: search}, {tool: read}, {tool: write}]\n",
            1.0,
            &[("Found search at position 0", true), ("Found read at position 1", true), ("Found write at position 3", true)],
        ),
        (
            "in-order-partial",
            "mode: in_order\nexpected: [{tool: write}, {tool: search}]\n",
            0.5,
            &[("Found write at position 3", true), ("Expected search at position 1, not found in remaining trace", false)],
        ),
        (
            "in-order-args-mismatch-consumes",
            "mode: in_order\nexpected: [{tool: read, args: {path: docs/faq.md}}, {tool: read}]\n",
            0.5,
            &[("Expected read at position 0: tool found at 1 but args mismatch", false), ("Found read at position 2", true)],
        ),
        (
            "exact-pass",
            "mode: exact\nexpected: [{tool: search}, {tool: read}, {tool: read}, {tool: write}]\n",
            1.0,
            &[("Position 0: search", true), ("Position 1: read", true), ("Position 2: read", true), ("Position 3: write", true)],
        ),
        (
            "exact-extra-calls-ignored",
            "mode: exact\nexpected: [{tool: search}, {tool: read}]\n",
            1.0,
            &[("Expected 2 tool calls, got 4", false), ("Position 0: search", true), ("Position 1: read", true)],
        ),
        (
            "exact-position-mismatch",
            "mode: exact\nexpected: [{tool: search}, {tool: write}, {tool: read}, {tool: write}]\n",
            0.75,
            &[
                ("Position 0: search", true),
                ("Position 1: expected write, got read", false),
                ("Position 2: read", true),
                ("Position 3: write", true),
            ],
        ),
        (
            "superset-pass",
            "mode: superset\nexpected: [{tool: read, args: {path: docs/faq.md}}, {tool: write}]\n",
            1.0,
            &[("Found read at position 2", true), ("Found write at position 3", true)],
        ),
        (
            "superset-partial",
            "mode: superset\nexpected: [{tool: read}, {tool: delete}]\n",
            0.5,
            &[("Found read at position 1", true), ("Expected delete not found in actual trajectory", false)],
        ),
        (
            "subset-partial",
            "mode: subset\nexpected: [{tool: search}, {tool: read}]\n",
            0.75,
            &[
                ("Position 0: search is in allowed set", true),
                ("Position 1: read is in allowed set", true),
                ("Position 2: read is in allowed set", true),
                ("Position 3: write is not in allowed set", false),
            ],
        ),
        (
            "args-default-exact",
            "mode: in_order\nexpected: [{tool: search, args: {query: refund policy}}]\n",
            0.0,
            &[("Expected search at position 0: tool found at 0 but args mismatch", false)],
        ),
        (
            "args-superset",
            "mode: in_order\nexpected: [{tool: search, args: {query: refund policy}, args_match: superset}]\n",
            1.0,
            &[("Found search at position 0", true)],
        ),
        (
            "args-subset-fail",
            "mode: in_order\nargs_match: subset\nexpected: [{tool: search, args: {query: refund policy}}]\n",
            0.0,
            &[("Expected search at position 0: tool found at 0 but args mismatch", false)],
        ),
        (
            "args-subset-pass",
            "mode: in_order\nargs_match: subset\nexpected: [{tool: search, args: {query: refund policy, limit: 5, lang: en}}]\n",
            1.0,
            &[("Found search at position 0", true)],
        ),
        (
            "args-field-list",
            "mode: in_order\nexpected: [{tool: search, args: {query: refund policy, limit: 99}, args_match: [query]}]\n",
            1.0,
            &[("Found search at position 0", true)],
        ),
        (
            "args-any",
            "mode: exact\nexpected: [{tool: search, args: any}, {tool: read, args: any}, {tool: read}, {tool: write}]\n",
            1.0,
            &[("Position 0: search", true), ("Position 1: read", true), ("Position 2: read", true), ("Position 3: write", true)],
        ),
        (
            "args-item-overrides-grader",
            "mode: in_order\nargs_match: superset\nexpected:\n  - {tool: search, args: {query: refund policy}}\n  - {tool: write, args: {path: out.md}, args_match: exact}\n",
            0.5,
            &[("Found search at position 0", true), ("Expected write at position 1: tool found at 3 but args mismatch", false)],
        ),
        (
            "in-order-max-duration",
            "mode: in_order\nexpected:\n  - {tool: search, max_duration_ms: 200}\n  - {tool: write, max_duration_ms: 500}\n",
            0.75,
            &[
                ("Found search at position 0", true),
                ("search completed in 120ms (max: 200ms)", true),
                ("Found write at position 3", true),
                ("write took 900ms (max: 500ms)", false),
            ],
        ),
        (
            "exact-max-duration",
            "mode: exact\nexpected: [{tool: search, max_duration_ms: 100}, {tool: read}, {tool: read}, {tool: write}]\n",
            0.8,
            &[
                ("Position 0: search", true),
                ("search took 120ms (max: 100ms)", false),
                ("Position 1: read", true),
                ("Position 2: read", true),
                ("Position 3: write", true),
            ],
        ),
    ];
    for (id, yaml, score, texts) in cases {
        let g = grade(&v4(yaml), &calls);
        assert!((g.score - score).abs() < 1e-12, "{id}: {} != {score}", g.score);
        let got: Vec<(&str, bool)> = g.assertions.iter().map(|a| (a.text.as_str(), a.passed)).collect();
        assert_eq!(got, *texts, "{id}");
        assert_eq!(g.verdict, Some(GradeVerdict::of_score(*score)), "{id}");
    }
    // no-tool-calls-*: an answer without tool calls is graded, not "no trace"
    let none: Vec<Call<'_>> = Vec::new();
    let g = grade(&v4("mode: any_order\nminimums: {read: 1}\n"), &none);
    assert_eq!((g.score, g.assertions[0].text.as_str()), (0.0, "read: called 0 times (required >=1)"));
    let g = grade(&v4("mode: subset\nexpected: [{tool: read}]\n"), &none);
    assert_eq!((g.score, g.assertions[0].text.as_str()), (1.0, "No actual tool calls (trivially a subset)"));
}

#[test]
fn a_latency_check_of_an_unmatched_step_still_counts() {
    let inputs = trajectory();
    let calls = observed(&inputs);
    // delete never found: 1 hit + 0 latency of 2 steps + 2 latency checks (search 120 ≤ 200)
    let g = grade(
        &v4("mode: in_order\nexpected: [{tool: search, max_duration_ms: 200}, {tool: delete, max_duration_ms: 10}]\n"),
        &calls,
    );
    assert_eq!(g.score, 0.5, "(1 + 1) / (2 + 2)");
    // a matched call without a duration is not counted
    let no_duration = [Call::new("search", None)];
    let g = grade(&v4("mode: in_order\nexpected: [{tool: search, max_duration_ms: 1}]\n"), &no_duration);
    assert_eq!((g.score, g.assertions.len()), (1.0, 1));
}

#[test]
fn the_first_divergence_is_explained_in_the_misses() {
    let inputs = trajectory();
    let calls = observed(&inputs);
    let g = grade(
        &v4("mode: in_order\nexpected: [{tool: search}, {tool: read, args: {path: docs/faq.md}}, {tool: write}]\n"),
        &calls,
    );
    assert_eq!(
        g.misses.last().map(String::as_str),
        Some("first divergence at step 2: expected read(path=\"docs/faq.md\"), got read(path=\"docs/refunds.md\")")
    );
    assert!(
        !g.assertions.iter().any(|a| a.text.starts_with("first divergence")),
        "the explanation is not an assertion"
    );
    let g = grade(&v4("mode: exact\nexpected: [{tool: search}, {tool: write}]\n"), &calls);
    assert_eq!(
        g.misses.last().map(String::as_str),
        Some("first divergence at step 2: expected write, got read(path=\"docs/refunds.md\")")
    );
    let g = grade(&v4("mode: in_order\nexpected: [{tool: write}, {tool: search}]\n"), &calls);
    assert_eq!(
        g.misses.last().map(String::as_str),
        Some("first divergence at step 2: expected search, got nothing")
    );
    let g = grade(&v4("mode: exact\nexpected: [{tool: search}]\n"), &calls[..1]);
    assert!(g.misses.is_empty(), "{:?}", g.misses);
}

#[test]
fn unordered_finds_the_best_assignment_where_superset_is_greedy() {
    let a = json!({"path": "a"});
    let b = json!({"path": "b"});
    let calls = [Call::new("read", Some(&a)), Call::new("read", Some(&b))];
    let keys = "expected: [{tool: read}, {tool: read, args: {path: a}}]\n";
    let greedy = grade(&v4(&format!("mode: superset\n{keys}")), &calls);
    assert_eq!(greedy.score, 0.5, "the first item takes read(a)");
    let best = grade(&v4(&format!("mode: unordered\n{keys}")), &calls);
    assert_eq!(best.score, 1.0);
    assert_eq!(
        best.assertions.iter().map(|x| x.text.as_str()).collect::<Vec<_>>(),
        ["Found read at position 1", "Found read at position 0"]
    );
    let g = grade(&v4("mode: unordered\nexpected: [{tool: read}, {tool: read}, {tool: read}]\n"), &calls);
    assert!((g.score - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(g.assertions[2].text, "Expected read not found in actual trajectory");
}

#[test]
fn maximums_are_one_more_check_in_every_mode() {
    let inputs = trajectory();
    let calls = observed(&inputs);
    let g = grade(&v4("mode: superset\nexpected: [{tool: write}]\nmaximums: {read: 1, write: 1}\n"), &calls);
    assert!((g.score - 2.0 / 3.0).abs() < 1e-12, "{}", g.score);
    assert_eq!(
        g.assertions.iter().map(|a| (a.text.as_str(), a.passed)).collect::<Vec<_>>(),
        [
            ("Found write at position 3", true),
            ("read: called 2 times (allowed <=1)", false),
            ("write: called 1 times (allowed <=1)", true),
        ]
    );
    // in a 2.x file a broken maximum fails the all-or-nothing sequence
    let mut s = spec(V2, TrajectoryMode::InOrder, expect(&["search"]));
    s.maximums = vec![("read".into(), 1)];
    let g = grade(&s, &calls);
    assert_eq!(g.score, 0.0);
    assert_eq!(g.misses, ["read called 2 times (maximum: 1)"]);
    let mut s = mins(V2, &[("read", 1)]);
    s.maximums = vec![("read".into(), 1)];
    assert_eq!(grade(&s, &calls).score, 0.5);
}

#[test]
fn argument_comparisons() {
    let actual = json!({"q": "x", "opts": {"limit": 5, "lang": "en"}});
    let args = |v: Value| v.as_object().cloned();
    let cases: &[(Value, ArgsMode, bool)] = &[
        (json!({"q": "x", "opts": {"limit": 5, "lang": "en"}}), ArgsMode::Exact, true),
        (json!({"q": "x"}), ArgsMode::Exact, false),
        (json!({"q": "x"}), ArgsMode::Superset, true),
        (json!({"opts": {"limit": 5}}), ArgsMode::Superset, false),
        (json!({"opts": {"limit": 5}}), ArgsMode::Partial, true),
        (json!({"q": "x", "opts": {"limit": 5, "lang": "en"}, "extra": 1}), ArgsMode::Subset, true),
        (json!({"q": "x"}), ArgsMode::Subset, false),
        (json!({"q": "y"}), ArgsMode::Ignore, true),
        (json!({"opts": {"limit": 5.0, "lang": "fr"}}), ArgsMode::Paths(vec!["opts.limit".into()]), true),
        (json!({"opts": {"lang": "fr"}}), ArgsMode::Paths(vec!["opts.lang".into()]), false),
        (json!({"q": "x"}), ArgsMode::Paths(vec!["missing.path".into()]), true),
    ];
    for (expected, mode, want) in cases {
        assert_eq!(args_match(args(expected.clone()).as_ref(), Some(&actual), mode), *want, "{expected} {mode:?}");
    }
    assert!(!args_match(args(json!({"q": "x"})).as_ref(), None, &ArgsMode::Superset), "no arguments at all");
    assert!(args_match(None, None, &ArgsMode::Exact), "`args` absent or `any` always matches");
}

#[test]
fn a_bad_configuration_invalidates_the_case_in_both_file_generations() {
    let (graders, problems) = parse("- {type: tool-trajectory, mode: sideways}\n- {type: tool-trajectory, mode: any_order, minimums: {}}\n");
    assert!(graders.is_none());
    assert!(
        problems[0].contains("error: unknown tool_trajectory mode `sideways`; the grader cannot be used, so the case is invalid"),
        "{problems:?}"
    );
    let (graders, problems) = parse("- {type: tool-trajectory, mode: subset}\n");
    assert!(graders.is_none());
    assert!(problems[0].contains("error: tool_trajectory mode subset needs `expected`; the grader cannot be used, so the case is invalid"), "{problems:?}");
    let (graders, problems) = parse("- {type: tool_trajectory, mode: in_order}\n");
    assert!(graders.is_none());
    assert!(problems[0].contains("error: tool_trajectory mode in_order needs `expected`"), "{problems:?}");
    let (graders, problems) = parse("- {type: tool_trajectory, mode: any_order, minimums: {a: 1}, args_match: fuzzy}\n");
    assert!(graders.is_none());
    assert!(problems[0].contains("error: unknown `args_match` `fuzzy`"), "{problems:?}");
}
