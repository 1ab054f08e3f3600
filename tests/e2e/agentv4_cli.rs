//! AgentV 4.x's command line as a team's CI script writes it: `agentv eval run PATHS --output
//! DIR` and `agentv eval PATHS --output DIR` write AgentV 4.x's run directory
//! (`docs/results.md#agentv-4x-run-directory`) beside agentv's own results.

use std::path::Path;

use agentv_testkit::Project;
use serde_json::Value;

const TARGETS: &str = "targets:\n  - name: default\n    provider: mock\n    response: the answer is 4\n";

fn suite() -> &'static str {
    "name: arithmetic\ntests:\n  - id: add\n    criteria: says 4\n    input: What is 2+2?\n    assertions: [{type: contains, value: '4'}]\n  - id: sub\n    criteria: says 0\n    input: What is 2-2?\n    assertions: [{type: contains, value: '0'}]\n"
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn rows(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("index.jsonl"))
        .expect("index.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect()
}

/// Checks the run directory `dir` of the two-case suite: 4.x rows, each case's files, the
/// run's summary files, and agentv's own results beside them.
fn check_run_directory(p: &Project, dir: &str) {
    let dir = p.path().join(dir);
    let rows = rows(&dir);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let add = rows.iter().find(|r| r["test_id"] == "add").expect("add");
    let sub = rows.iter().find(|r| r["test_id"] == "sub").expect("sub");
    assert_eq!(add["suite"], "arithmetic");
    assert_eq!(add["execution_status"], "ok");
    assert_eq!(sub["execution_status"], "quality_failure", "the answer has no 0");
    assert_eq!(add["target"], "default");
    assert_eq!(add["scores"][0]["type"], "contains");
    assert!(
        add.get("candidate_answer").is_none() && add.get("verdict").is_none(),
        "{add}"
    );
    for key in [
        "grading_path",
        "timing_path",
        "answer_path",
        "response_path",
        "input_path",
        "transcript_path",
    ] {
        let rel = add[key].as_str().unwrap_or_else(|| panic!("{key} in {add}"));
        assert!(rel.starts_with("arithmetic/add/"), "{key}: {rel}");
        assert!(dir.join(rel).is_file(), "{key}: {rel} missing");
    }
    let answer = std::fs::read_to_string(dir.join("arithmetic/add/outputs/answer.md")).expect("answer");
    assert_eq!(answer, "the answer is 4");
    assert_eq!(
        json(&dir.join("arithmetic/add/outputs/trace.json"))["schema_version"],
        "agentv.trace.v1"
    );
    let bench = json(&dir.join("benchmark.json"));
    assert_eq!(bench["metadata"]["tests_run"], serde_json::json!(["add", "sub"]));
    assert_eq!(bench["metadata"]["planned_test_count"], 2);
    assert_eq!(bench["run_summary"]["default"]["pass_rate"]["mean"], 0.5);
    assert!(json(&dir.join("timing.json")).get("total_duration_seconds").is_some());
    let ours = p.results(&format!("{}/results.jsonl", dir.display()));
    assert_eq!(ours.len(), 2, "agentv's own results are beside the 4.x files");
    assert!(dir.join("results.summary.json").is_file());
}

#[test]
fn eval_run_with_output_writes_the_agentv_4_run_directory() {
    let p = Project::new()
        .file("targets.yaml", TARGETS)
        .file("evals/e.yaml", suite());
    p.run(&["eval", "run", "evals/e.yaml", "--output", "out"])
        .code(0)
        .stderr_has("AgentV 4.x run directory written to out");
    check_run_directory(&p, "out");
}

#[test]
fn eval_paths_with_output_write_it_too() {
    let p = Project::new()
        .file("targets.yaml", TARGETS)
        .file("evals/e.yaml", suite());
    p.run(&["eval", "evals/", "-o", "runs/latest"]).code(0);
    check_run_directory(&p, "runs/latest");
    // `--out` still names agentv's own results; the run directory holds the 4.x files.
    p.run(&[
        "eval",
        "run",
        "evals/e.yaml",
        "--output",
        "again",
        "--out",
        "mine.jsonl",
    ])
    .code(0);
    assert_eq!(rows(&p.path().join("again")).len(), 2);
    assert_eq!(p.results("mine.jsonl").len(), 2);
    assert!(!p.path().join("again/results.jsonl").exists());
}

#[test]
fn output_that_names_a_file_is_a_usage_error_before_anything_runs() {
    let p = Project::new()
        .file("targets.yaml", TARGETS)
        .file("evals/e.yaml", suite())
        .file("taken", "x");
    p.run(&["eval", "run", "evals/e.yaml", "--output", "taken"])
        .code(2)
        .stderr_has("--output taken: a file is there; --output names a directory");
    assert_eq!(std::fs::read_to_string(p.path().join("taken")).expect("kept"), "x");
    assert!(!p.path().join(".agentv/results").exists(), "nothing ran");
}

/// A directory really named `run` is still reachable, and the user is told how.
#[test]
fn a_directory_named_run_is_reached_as_dot_slash_run() {
    let p = Project::new().file("targets.yaml", TARGETS).file("run/e.yaml", suite());
    p.run(&["eval", "run", "./run", "--out", "r.jsonl"])
        .code(0)
        .stderr_has("`agentv eval run PATHS` is read as AgentV 4.x's command");
    assert_eq!(p.results("r.jsonl").len(), 2);
    p.run(&["eval", "run", "--out", "alone.jsonl"]).code(0);
    assert_eq!(p.results("alone.jsonl").len(), 2, "`run` alone is a path");
}
