//! Unit tests of the converter: one row per mapping in each direction, the constructs that
//! cannot be converted, and round trips of generated suites.

use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::config::Severity;

fn to(text: &str, g: Generation) -> Result<Converted, Vec<Diagnostic>> {
    convert(text, Path::new("suite.yaml"), Path::new("."), Part::Suite, g)
}

fn ok(text: &str, g: Generation) -> String {
    match to(text, g) {
        Ok(c) => c.text,
        Err(problems) => panic!("conversion failed: {problems:#?}\n{text}"),
    }
}

fn generation_of(text: &str) -> Generation {
    detect(&parse_yaml(text).expect("valid YAML"), Part::Suite)
}

/// 2.x → 4.x, one mapping per row: (what, 2.x text, 4.x text).
const TO_V4: &[(&str, &str, &str)] = &[
    (
        "evalcases becomes tests, expected_outcome criteria",
        "evalcases:\n  - id: a\n    expected_outcome: Says hi.\n    input: hi\n",
        "tests:\n  - id: a\n    criteria: Says hi.\n    input: hi\n",
    ),
    (
        "outcome alias becomes criteria",
        "evalcases:\n  - id: a\n    outcome: x\n    input: hi\n",
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n",
    ),
    (
        "input_messages becomes input, expected_messages expected_output",
        "evalcases:\n  - id: a\n    expected_outcome: x\n    input_messages: [{role: user, content: hi}]\n    expected_messages: [{role: assistant, content: yo}]\n",
        "tests:\n  - id: a\n    criteria: x\n    input: [{role: user, content: hi}]\n    expected_output: [{role: assistant, content: yo}]\n",
    ),
    (
        "suite execution.evaluators becomes execution.assertions, llm_judge llm-grader",
        "execution:\n  evaluators:\n    - {name: q, type: llm_judge}\nevalcases:\n  - {id: a, expected_outcome: x, input: hi}\n",
        "execution:\n  assertions:\n    - {name: q, type: llm-grader}\ntests:\n  - {id: a, criteria: x, input: hi}\n",
    ),
    (
        "case evaluators becomes assertions",
        "evalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators:\n      - {name: t, type: latency, threshold: 10}\n",
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - {name: t, type: latency, threshold: 10}\n",
    ),
    (
        "case execution.evaluators moves to assertions",
        "evalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    execution:\n      evaluators:\n        - {name: c, type: cost, budget: 1}\n",
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n        - {name: c, type: cost, budget: 1}\n",
    ),
    (
        "a case's own list replaces the suite's: skip_defaults",
        "execution:\n  evaluators: [{name: q, type: llm_judge}]\nevalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators: [{name: t, type: latency, threshold: 5}]\n",
        "execution:\n  assertions: [{name: q, type: llm-grader}]\ntests:\n  - id: a\n    execution: {skip_defaults: true}\n    criteria: x\n    input: hi\n    assertions: [{name: t, type: latency, threshold: 5}]\n",
    ),
    (
        "code_judge becomes code-grader with command",
        "evalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators:\n      - name: c\n        type: code_judge\n        script: [python3, j.py]\n",
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - name: c\n        type: code-grader\n        command: [python3, j.py]\n",
    ),
    (
        "tool_trajectory with args matches as a superset",
        "evalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators:\n      - name: t\n        type: tool_trajectory\n        mode: any_order\n        expected: [{tool: s, args: {q: 1}}]\n",
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - name: t\n        args_match: superset\n        type: tool-trajectory\n        mode: any_order\n        expected: [{tool: s, args: {q: 1}}]\n",
    ),
    (
        "field_accuracy, token_usage, execution_metrics become kebab-case",
        "evalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators:\n      - {name: f, type: field_accuracy, fields: [{path: a, match: exact}]}\n      - {name: u, type: token_usage, max_total: 9}\n      - {name: m, type: execution_metrics, max_tool_calls: 3}\n",
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - {name: f, type: field-accuracy, fields: [{path: a, match: exact}]}\n      - {name: u, type: token-usage, max_total: 9}\n      - {name: m, type: execution-metrics, max_tool_calls: 3}\n",
    ),
    (
        "rubric grader becomes rubrics with criteria and outcome",
        "evalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators:\n      - name: r\n        type: rubric\n        rubrics:\n          - {id: one, description: Polite}\n",
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - name: r\n        type: rubrics\n        criteria:\n          - {id: one, outcome: Polite}\n",
    ),
    (
        "composite members become assertions, aggregator kebab-case",
        "evalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators:\n      - name: c\n        type: composite\n        evaluators:\n          - {name: l, type: latency, threshold: 9}\n        aggregator: {type: code_judge, path: ./agg.sh}\n",
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - name: c\n        type: composite\n        assertions:\n          - {name: l, type: latency, threshold: 9}\n        aggregator: {type: code-grader, path: ./agg.sh}\n",
    ),
    (
        "legacy evaluator key is dropped",
        "evaluator: llm_judge\nevalcases:\n  - {id: a, expected_outcome: x, input: hi}\n",
        "tests:\n  - {id: a, criteria: x, input: hi}\n",
    ),
    (
        "comments, quoting and blank lines are kept",
        "# suite\nevalcases:   # the cases\n\n  - id: 'a'   # first\n    \"expected_outcome\": x\n    input: hi\n",
        "# suite\ntests:   # the cases\n\n  - id: 'a'   # first\n    criteria: x\n    input: hi\n",
    ),
];

#[test]
fn each_2x_construct_converts_to_its_4x_form() {
    for (what, v2, v4) in TO_V4 {
        assert_eq!(generation_of(v2), Generation::V2, "{what}: input is 2.x");
        let out = ok(v2, Generation::V4);
        assert_eq!(out, *v4, "{what}");
        assert_eq!(generation_of(&out), Generation::V4, "{what}: output is 4.x");
    }
}

/// 4.x → 2.x: (what, 4.x text, 2.x text).
const TO_V2: &[(&str, &str, &str)] = &[
    (
        "tests becomes evalcases, criteria expected_outcome, name dataset",
        "name: demo\ntests:\n  - id: a\n    criteria: x\n    input: hi\n",
        "dataset: demo\nevalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n",
    ),
    (
        "cases alias becomes evalcases",
        "cases:\n  - {id: a, criteria: x, input: hi}\n",
        "evalcases:\n  - {id: a, expected_outcome: x, input: hi}\n",
    ),
    (
        "message lists become input_messages and expected_messages; text stays a short form",
        "tests:\n  - id: a\n    criteria: x\n    input: [{role: user, content: hi}]\n    expected_output: [{role: assistant, content: yo}]\n  - id: b\n    criteria: x\n    input: hi\n    expected_output: yo\n",
        "evalcases:\n  - id: a\n    expected_outcome: x\n    input_messages: [{role: user, content: hi}]\n    expected_messages: [{role: assistant, content: yo}]\n  - id: b\n    expected_outcome: x\n    input: hi\n    expected_output: yo\n",
    ),
    (
        "top-level assertions move under a new execution as evaluators",
        "assertions:\n- name: q\n  type: llm-grader\ntests:\n  - {id: a, criteria: x, input: hi}\n",
        "execution:\n  evaluators:\n  - name: q\n    type: llm_judge\nevalcases:\n  - {id: a, expected_outcome: x, input: hi}\n",
    ),
    (
        "top-level assertions move into the existing execution",
        "execution:\n  target: t\nassertions:\n  - {name: q, type: llm-grader}\ntests:\n  - {id: a, criteria: x, input: hi}\n",
        "execution:\n  target: t\n  evaluators:\n    - {name: q, type: llm_judge}\nevalcases:\n  - {id: a, expected_outcome: x, input: hi}\n",
    ),
    (
        "case assertions become evaluators; skip_defaults goes",
        "execution:\n  assertions: [{name: q, type: llm-grader}]\ntests:\n  - id: a\n    execution: {skip_defaults: true}\n    criteria: x\n    input: hi\n    assertions: [{name: c, type: code-grader, command: [./j]}]\n",
        "execution:\n  evaluators: [{name: q, type: llm_judge}]\nevalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators: [{name: c, type: code_judge, script: [./j]}]\n",
    ),
    (
        "rubrics with string criteria become rubric objects",
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - name: r\n        type: rubrics\n        criteria:\n          - Polite\n          - {id: b, outcome: Brief}\n",
        "evalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators:\n      - name: r\n        type: rubric\n        rubrics:\n          - {description: Polite}\n          - {id: b, description: Brief}\n",
    ),
    (
        "tool-trajectory with args and no args_match keeps 4.x's exact match",
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - {name: t, type: tool-trajectory, mode: any_order, minimums: {s: 1}, expected: [{tool: s, args: {q: 1}}]}\n",
        "evalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators:\n      - {name: t, args_match: exact, type: tool_trajectory, mode: any_order, minimums: {s: 1}, expected: [{tool: s, args: {q: 1}}]}\n",
    ),
    (
        "llm-grader file:// prompt becomes a path",
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - {name: q, type: llm-grader, prompt: \"file://p.md\"}\n",
        "evalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators:\n      - {name: q, type: llm_judge, prompt: p.md}\n",
    ),
    (
        "metadata-only suite keys are dropped",
        "tags: [a, b]\nversion: '1'\ntests:\n  - {id: a, criteria: x, input: hi}\n",
        "evalcases:\n  - {id: a, expected_outcome: x, input: hi}\n",
    ),
];

#[test]
fn each_4x_construct_converts_to_its_2x_form() {
    for (what, v4, v2) in TO_V2 {
        assert_eq!(generation_of(v4), Generation::V4, "{what}: input is 4.x");
        let out = ok(v4, Generation::V2);
        assert_eq!(out, *v2, "{what}");
        assert_eq!(generation_of(&out), Generation::V2, "{what}: output is 2.x");
    }
}

/// Constructs with no 2.x equivalent: (4.x text, line:col of the error, words of its message).
const NO_V2_FORM: &[(&str, &str, &str)] = &[
    (
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - {type: contains, value: hi}\n",
        "6:16",
        "`contains` has no 2.x equivalent",
    ),
    (
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - Is polite\n",
        "6:9",
        "bare-string",
    ),
    ("tests: cases.yaml\n", "1:8", "names a file"),
    (
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    vars: {a: 1}\n",
        "5:5",
        "`vars` has no 2.x",
    ),
    (
        "assertions: [{name: q, type: llm-grader}]\ntests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions: [{name: l, type: latency, threshold: 1}]\n",
        "3:5",
        "then the suite's",
    ),
    (
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions: [{name: l, type: latency, threshold: 1, required: true}]\n",
        "5:57",
        "`required`",
    ),
    (
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - {name: c, type: composite, assertions: [{name: l, type: latency, threshold: 1}], aggregator: {type: threshold, threshold: 1}}\n",
        "6:109",
        "`threshold` aggregator",
    ),
];

#[test]
fn constructs_without_a_2x_form_are_errors_at_their_position() {
    for (v4, at, words) in NO_V2_FORM {
        let problems = to(v4, Generation::V2).expect_err(v4);
        let found = problems.iter().any(|p| {
            p.severity == Severity::Error
                && p.to_string().contains(&format!("suite.yaml:{at}:"))
                && p.message.contains(words)
        });
        assert!(
            found,
            "expected an error at {at} saying {words:?} for\n{v4}\ngot {problems:#?}"
        );
    }
}

#[test]
fn a_file_already_in_the_target_generation_is_unchanged() {
    let v4 = "tests:\n  - {id: a, criteria: x, input: hi}\n";
    let c = to(v4, Generation::V4).expect("ok");
    assert_eq!(c.text, v4);
    assert_eq!(c.from, Generation::V4);
}

#[test]
fn crlf_files_get_crlf_in_inserted_lines() {
    let v2 = "execution:\r\n  evaluators: [{name: q, type: llm_judge}]\r\nevalcases:\r\n  - id: a\r\n    expected_outcome: x\r\n    input: hi\r\n    evaluators: [{name: l, type: latency, threshold: 1}]\r\n";
    let v4 = ok(v2, Generation::V4);
    assert!(!v4.replace("\r\n", "").contains('\n'), "{v4:?}");
    assert!(v4.contains("    execution: {skip_defaults: true}\r\n"), "{v4:?}");
    assert_eq!(ok(&v4, Generation::V2), v2);
}

#[test]
fn invalid_yaml_is_an_error_with_its_position() {
    let problems = to("evalcases: [\n", Generation::V4).expect_err("invalid");
    assert!(problems[0].to_string().contains("invalid YAML"), "{problems:?}");
}

#[test]
fn dropped_and_changed_constructs_are_warned_about() {
    let v2 = "evaluator: llm_judge\nevalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators: [{name: k, type: keywords, expected: [hi]}]\n";
    let c = to(v2, Generation::V4).expect("ok");
    let texts: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("suite.yaml:1:1:") && t.contains("dropped")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("`keywords` has no AgentV 4.x equivalent")),
        "{texts:?}"
    );
}

#[test]
fn convert_to_v4_says_what_a_code_judges_hits_misses_and_reasoning_become() {
    let v2 = "evalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators:\n      - {name: c, type: code_judge, script: [python3, j.py]}\n      - name: m\n        type: composite\n        evaluators: [{name: l, type: latency, threshold: 9}]\n        aggregator: {type: code_judge, path: ./agg.sh}\n";
    let c = to(v2, Generation::V4).expect("ok");
    let texts: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
    assert!(
        texts.iter().any(|t| t.contains("suite.yaml:6:25:")
            && t.contains("ignores `hits`, `misses` and `reasoning`")
            && t.contains("assertions: [{text, passed}]")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("suite.yaml:10:28:") && t.contains("4.x code aggregator receives 4.x member results")),
        "{texts:?}"
    );
}

#[test]
fn a_sidecar_converts_its_suite_keys() {
    let v2 = "dataset: d\nexecution:\n  target: t\n  evaluators:\n    - {name: q, type: llm_judge}\n";
    let c = convert(v2, Path::new("d.yaml"), Path::new("."), Part::Sidecar, Generation::V4).expect("ok");
    assert_eq!(
        c.text,
        "dataset: d\nexecution:\n  target: t\n  assertions:\n    - {name: q, type: llm-grader}\n"
    );
    let back = convert(
        &c.text,
        Path::new("d.yaml"),
        Path::new("."),
        Part::Sidecar,
        Generation::V2,
    )
    .expect("ok");
    assert_eq!(back.text, v2);
}

#[test]
fn a_prompt_file_gets_file_scheme_and_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("judge.md"), "Grade {{ candidate_answer }}").expect("write");
    let v2 = "evalcases:\n  - id: a\n    expected_outcome: x\n    input: hi\n    evaluators: [{name: q, type: llm_judge, prompt: judge.md}]\n";
    let c = convert(v2, Path::new("s.yaml"), dir.path(), Part::Suite, Generation::V4).expect("ok");
    assert!(c.text.contains("prompt: file://judge.md"), "{}", c.text);
    let inline = v2.replace("judge.md", "Be strict");
    let c2 = convert(&inline, Path::new("s.yaml"), dir.path(), Part::Suite, Generation::V4).expect("ok");
    assert!(
        c2.text.contains("prompt: Be strict"),
        "an inline prompt stays inline: {}",
        c2.text
    );
    let back = convert(&c.text, Path::new("s.yaml"), dir.path(), Part::Suite, Generation::V2).expect("ok");
    assert_eq!(back.text, v2);
}

// ---- round trips of generated 2.x suites ----

/// One generated grader, as 2.x YAML flow text.
fn grader_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..3).prop_map(|w| format!("{{name: q, type: llm_judge, weight: {w}}}")),
        (1u32..500).prop_map(|t| format!("{{name: l, type: latency, threshold: {t}}}")),
        (1u32..9).prop_map(|b| format!("{{name: c, type: cost, budget: {b}}}")),
        (1u32..900).prop_map(|m| format!("{{name: u, type: token_usage, max_total: {m}}}")),
        Just("{name: f, type: field_accuracy, fields: [{path: a.b, match: exact}]}".to_owned()),
        Just("{name: s, type: code_judge, script: [python3, j.py]}".to_owned()),
        Just("{name: r, type: rubric, rubrics: [{id: p, description: Polite}]}".to_owned()),
        Just("{name: t, type: tool_trajectory, mode: any_order, minimums: {s: 1}, expected: [{tool: s, args: {q: 1}}]}".to_owned()),
        Just("{name: m, type: composite, evaluators: [{name: l, type: latency, threshold: 5}], aggregator: {type: weighted_average}}".to_owned()),
    ]
}

/// How a case lists its graders.
#[derive(Debug, Clone)]
enum CaseList {
    None,
    Own(Vec<String>),
    Execution(Vec<String>),
}

fn case_strategy() -> impl Strategy<Value = (bool, bool, CaseList)> {
    let list = prop_oneof![
        Just(CaseList::None),
        prop::collection::vec(grader_strategy(), 1..3).prop_map(CaseList::Own),
        prop::collection::vec(grader_strategy(), 1..3).prop_map(CaseList::Execution),
    ];
    (any::<bool>(), any::<bool>(), list)
}

fn suite_text(suite_list: &Option<Vec<String>>, cases: &[(bool, bool, CaseList)], comments: bool) -> String {
    let mut s = String::new();
    if comments {
        s.push_str("# generated suite\n");
    }
    s.push_str("description: generated\n");
    if let Some(list) = suite_list {
        s.push_str("execution:\n  target: default\n  evaluators:\n");
        for g in list {
            s.push_str(&format!("    - {g}\n"));
        }
    }
    s.push_str("evalcases:\n");
    for (i, (messages, expected, list)) in cases.iter().enumerate() {
        s.push_str(&format!("  - id: case-{i}\n"));
        if comments {
            s.push_str("    # what it checks\n");
        }
        s.push_str("    expected_outcome: Answers.\n");
        if *messages {
            s.push_str("    input_messages:\n      - role: user\n        content: hi\n");
        } else {
            s.push_str("    input: hi\n");
        }
        if *expected {
            s.push_str("    expected_messages:\n      - {role: assistant, content: yo}\n");
        }
        match list {
            CaseList::None => {}
            CaseList::Own(gs) => {
                s.push_str("    evaluators:\n");
                for g in gs {
                    s.push_str(&format!("      - {g}\n"));
                }
            }
            CaseList::Execution(gs) => {
                s.push_str("    execution:\n      evaluators:\n");
                for g in gs {
                    s.push_str(&format!("        - {g}\n"));
                }
            }
        }
    }
    s
}

/// The one documented normalisation of a 2.x → 4.x → 2.x round trip: a case's
/// `execution: {evaluators}` comes back as its `evaluators`, its items as indented as they were.
fn normalised(v2: &str) -> String {
    v2.replace("    execution:\n      evaluators:\n", "    evaluators:\n")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn v2_to_v4_to_v2_gives_back_the_same_suite(
        suite_list in prop::option::of(prop::collection::vec(grader_strategy(), 1..3)),
        cases in prop::collection::vec(case_strategy(), 1..4),
        comments in any::<bool>(),
    ) {
        let v2 = suite_text(&suite_list, &cases, comments);
        prop_assert_eq!(generation_of(&v2), Generation::V2);
        let v4 = ok(&v2, Generation::V4);
        prop_assert_eq!(generation_of(&v4), Generation::V4);
        let back = ok(&v4, Generation::V2);
        prop_assert_eq!(generation_of(&back), Generation::V2);
        // Text equal modulo the documented normalisation, so the same tree loads.
        let expected = normalised(&v2);
        prop_assert_eq!(&back, &expected);
        if comments {
            prop_assert!(v4.contains("# what it checks"));
        }
    }
}
