//! A 2.x suite and a 4.x suite through the binary (`docs/architecture.md#generations`): each
//! loads, runs and is scored by its own generation's rules, and every record also carries the
//! keys an AgentV 4.x reader expects (`docs/results.md`).

use agentv_testkit::Project;
use serde_json::{Value, json};

/// A target that names Paris and France, never Lyon.
const TARGETS: &str = r#"targets:
  - name: default
    provider: mock
    response: Paris is the capital of France.
"#;

/// The same grader in both generations: two of three words → 0.667.
const V2_SUITE: &str = "\
execution:
  evaluators:
    - {name: words, type: keywords, expected: [Paris, France, Lyon]}
evalcases:
  - id: capital
    expected_outcome: Names Paris.
    input_messages: [{role: user, content: What is the capital of France?}]
";

const V4_SUITE: &str = "\
name: geo
metadata: {team: geo, labels: [suite]}
assertions:
  - {type: keywords, name: suite-paris, expected: [Paris]}
tests:
  - id: capital
    input: What is the capital of France?
    metadata: {labels: [case]}
    assertions:
      - {name: words, type: keywords, expected: [Paris, France, Lyon]}
    execution: {skip_defaults: true}
  - id: gate-fails
    input: What is the capital of France?
    assertions:
      - {type: keywords, name: lyon, expected: [Lyon], required: true}
  - id: negated
    input: What is the capital of France?
    assertions:
      - {type: keywords, name: no-lyon, expected: [Lyon], negate: true}
    execution: {skip_defaults: true}
  - id: own-threshold
    input: What is the capital of France?
    assertions:
      - {type: keywords, name: lyon, expected: [Lyon]}
    execution: {threshold: 0.5}
  - id: vars
    vars: {city: Lyon}
    input: Is {{city}} the capital?
    criteria: Says no about {{city}}.
    assertions:
      - {type: code_judge, name: sees, command: [python3, judge.py]}
    execution: {skip_defaults: true}
  - id: unknown-type
    input: What is the capital of France?
    assertions:
      - {type: fancy-check, value: x}
    execution: {skip_defaults: true}
";

/// Passes when the 4.x keys carry the substituted criteria and the merged metadata, and the
/// 2.x keys are there too.
const JUDGE: &str = r#"import json, sys
p = json.load(sys.stdin)
checks = [
    p["criteria"] == "Says no about Lyon." and p["expected_outcome"] == p["criteria"],
    p["metadata"] == {"team": "geo", "labels": ["suite"]},
    p["input"][0]["content"] == "Is Lyon the capital?",
    p["output"] == p["candidate_answer"] == "Paris is the capital of France.",
]
print(json.dumps({"score": sum(checks) / len(checks), "assertions": [
    {"text": "check %d" % i, "passed": bool(c)} for i, c in enumerate(checks)]}))
"#;

fn score(r: &Value) -> f64 {
    r["score"].as_f64().expect("score")
}

#[test]
fn a_2x_suite_keeps_2x_scoring_and_carries_the_4x_record_keys() {
    let p = Project::new().file("targets.yaml", TARGETS).file("e.yaml", V2_SUITE);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    let r = p.result("r.jsonl", "capital");
    assert!((score(&r) - 2.0 / 3.0).abs() < 1e-9, "{r}");
    assert_eq!(r["verdict"], "borderline", "2.x verdicts keep borderline");
    assert_eq!(r["test_id"], "capital");
    assert_eq!(r["suite"], "e");
    assert_eq!(r["scores"][0]["name"], "words");
    assert_eq!(
        r["scores"][0]["assertions"],
        json!([
            {"text": "contains Paris", "passed": true},
            {"text": "contains France", "passed": true},
            {"text": "missing Lyon", "passed": false},
        ]),
        "hits as passed assertions, then misses as failed ones: {r}"
    );
}

#[test]
fn a_4x_suite_is_scored_by_4x_rules() {
    let p = Project::new()
        .file("targets.yaml", TARGETS)
        .file("e.yaml", V4_SUITE)
        .file("judge.py", JUDGE);
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    run.code(0)
        .stderr_has("unknown grader type `fancy-check`: it scores 0 when it grades");

    let capital = p.result("r.jsonl", "capital");
    assert!((score(&capital) - 2.0 / 3.0).abs() < 1e-9, "{capital}");
    assert_eq!(capital["verdict"], "fail", "4.x has no borderline: below 0.8 fails");
    assert_eq!(capital["suite"], "geo", "the 4.x `name` names the suite");
    assert_eq!(capital["metadata"], json!({"team": "geo", "labels": ["suite", "case"]}));

    // The required grader scored 0, below the 0.8 gate: the case scores 0, not 0.5.
    let gated = p.result("r.jsonl", "gate-fails");
    assert_eq!(score(&gated), 0.0, "{gated}");
    assert_eq!(
        gated["scores"].as_array().map(Vec::len),
        Some(2),
        "case list, then the suite's"
    );

    let negated = p.result("r.jsonl", "negated");
    assert_eq!(score(&negated), 1.0, "{negated}");
    assert_eq!(negated["verdict"], "pass");

    // 0 (case) and 1 (suite) → 0.5, which passes the case's own threshold.
    let own = p.result("r.jsonl", "own-threshold");
    assert_eq!(score(&own), 0.5, "{own}");
    assert_eq!(own["verdict"], "pass");

    let vars = p.result("r.jsonl", "vars");
    assert_eq!(score(&vars), 1.0, "the judge sees the 4.x payload keys: {vars}");

    let unknown = p.result("r.jsonl", "unknown-type");
    assert_eq!(score(&unknown), 0.0, "{unknown}");
    assert_eq!(
        unknown["execution_status"], "ok",
        "a failed 4.x grader is a quality failure"
    );
    assert_eq!(
        unknown["scores"][0]["assertions"][0]["text"],
        "Grader 'fancy-check' failed: Unknown grader type: \"fancy-check\""
    );
}

#[test]
fn a_4x_conversation_calls_the_target_once_per_turn() {
    let p = Project::new().file("targets.yaml", TARGETS).file(
        "e.yaml",
        "\
tests:
  - id: chat
    mode: conversation
    aggregation: min
    input: [{role: system, content: You know geography.}]
    turns:
      - input: What is the capital of France?
        assertions: [{type: keywords, expected: [Paris]}]
      - input: And its country?
        assertions: [{type: keywords, expected: [Lyon]}]
      - input: Thanks.
",
    );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    let r = p.result("r.jsonl", "chat");
    let names: Vec<&str> = r["evaluator_results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["turn-1", "turn-2", "turn-3"]);
    let scores: Vec<f64> = r["evaluator_results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|e| e["score"].as_f64())
        .collect();
    assert_eq!(scores, [1.0, 0.0, 1.0], "an ungraded turn scores 1");
    assert_eq!(score(&r), 0.0, "aggregation: min");
}

/// A 4.x suite's `execution.threshold` gates the exit code as `--threshold` does, and the flag
/// wins over it; case verdicts never see it.
#[test]
fn a_4x_suite_threshold_gates_the_exit_code_unless_the_flag_is_given() {
    let suite = "\
name: gate
execution:
  threshold: 0.9
tests:
  - id: capital
    criteria: Names Paris.
    input: What is the capital of France?
    assertions:
      - {type: contains, value: Paris}
      - {type: contains, value: Lyon}
";
    let p = Project::new().file("targets.yaml", TARGETS).file("e.yaml", suite);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(1)
        .stderr_has("threshold");
    let r = p.result("r.jsonl", "capital");
    assert_eq!(score(&r), 0.5, "{r}");
    assert_eq!(r["verdict"], "fail", "the case threshold stays 0.8: {r}");
    p.run(&["eval", "e.yaml", "--out", "r2.jsonl", "--threshold", "0.4"])
        .code(0);
    let plain = suite.replace("execution:\n  threshold: 0.9\n", "");
    let q = Project::new().file("targets.yaml", TARGETS).file("e.yaml", &plain);
    q.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
}
