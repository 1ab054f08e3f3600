//! Code judges with `persistent: true`: one process per worker, one JSON line per case, a
//! fresh process after one dies or hangs, a fresh proxy budget per case, for the three SDKs.

use std::path::PathBuf;
use std::process::Command;

use agentv_testkit::process::gone_soon;
use agentv_testkit::toolchains::require;
use agentv_testkit::{Project, repo_root};
use serde_json::{Value, json};

/// A Python judge on the SDK. It appends its pid to `starts.log` when it starts; a case whose
/// question holds `KILL` makes it kill itself, `HANG` makes it sleep past the timeout. With a
/// proxy it makes three calls and reports what each returned.
const PY_JUDGE: &str = r#"import os, signal, time
from agentv_eval import JudgeResult, TargetError, run_judge

with open("starts.log", "a") as log:
    log.write(f"{os.getpid()}\n")

def judge(payload, target):
    if "KILL" in payload.question:
        os.kill(os.getpid(), signal.SIGKILL)
    if "HANG" in payload.question:
        time.sleep(60)
    result = JudgeResult(1.0).hit(f"graded {payload.eval_id}")
    if target is not None:
        calls = []
        for i in range(3):
            try:
                calls.append(target.invoke(f"question {i}").text)
            except TargetError as e:
                calls.append(f"{e.status}: {e.message}")
        result.detail("calls", calls)
    print(f"graded {payload.eval_id} in pid {os.getpid()}")  # goes to stderr, not the protocol
    return result

run_judge(judge)
"#;

fn python_project(questions: &[&str], evaluator: &str) -> Project {
    let sdk = std::fs::read_to_string(repo_root().join("sdk/python/agentv_eval/__init__.py")).expect("python SDK");
    Project::new()
        .file("agentv_eval.py", &sdk)
        .file("judge.py", PY_JUDGE)
        .file("targets.yaml", &agentv_testkit::mock_targets("the answer"))
        .file("e.yaml", &suite(questions, evaluator))
}

fn suite(questions: &[&str], evaluator: &str) -> String {
    let mut yaml = format!("execution:\n  evaluators:\n    - {evaluator}\nevalcases:\n");
    for (i, q) in questions.iter().enumerate() {
        yaml.push_str(&format!(
            "  - {{id: c{i}, expected_outcome: x, input_messages: [{{role: user, content: {q}}}]}}\n"
        ));
    }
    yaml
}

fn starts(p: &Project) -> Vec<String> {
    std::fs::read_to_string(p.path().join("starts.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn evaluator(p: &Project, id: &str) -> Value {
    p.result("r.jsonl", id)["evaluator_results"][0].clone()
}

#[test]
fn persistent_python_judge_grades_every_case_with_one_process() {
    let questions: Vec<String> = (0..6).map(|i| format!("q{i}")).collect();
    let questions: Vec<&str> = questions.iter().map(String::as_str).collect();
    let p = python_project(
        &questions,
        "{name: py, type: code_judge, script: [python3, judge.py], persistent: true}",
    );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    let pids = starts(&p);
    assert_eq!(pids.len(), 1, "one start for six cases: {pids:?}");
    for i in 0..6 {
        let e = evaluator(&p, &format!("c{i}"));
        assert_eq!(e["score"], 1.0, "{e}");
        assert_eq!(e["hits"], json!([format!("graded c{i}")]), "{e}");
        assert_eq!(e["evaluator_provider_request"]["persistent"], true, "{e}");
    }
    gone_soon(&pids[0]).expect("the judge is stopped at the end of the run");
}

#[test]
fn persistent_judges_start_at_most_one_process_per_worker() {
    let questions: Vec<String> = (0..8).map(|i| format!("q{i}")).collect();
    let questions: Vec<&str> = questions.iter().map(String::as_str).collect();
    let p = python_project(
        &questions,
        "{name: py, type: code_judge, script: [python3, judge.py], persistent: true}",
    );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl", "--workers", "2"]).code(0);
    let pids = starts(&p);
    assert!((1..=2).contains(&pids.len()), "at most two starts: {pids:?}");
    for pid in &pids {
        gone_soon(pid).expect("every judge is stopped at the end of the run");
    }
}

#[test]
fn persistent_judge_killed_mid_case_fails_that_case_only() {
    let p = python_project(
        &["q0", "KILL", "q2", "q3"],
        "{name: py, type: code_judge, script: [python3, judge.py], persistent: true}",
    );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    let killed = evaluator(&p, "c1");
    let error = killed["error"].as_str().expect("a grader error");
    assert!(
        error
            .starts_with("code judge was killed by signal 9 while grading this case; the next case starts a fresh one"),
        "{error}"
    );
    for id in ["c0", "c2", "c3"] {
        let e = evaluator(&p, id);
        assert_eq!((e["score"].as_f64(), e.get("error")), (Some(1.0), None), "{id}: {e}");
    }
    assert_eq!(starts(&p).len(), 2, "one start, one restart after the kill");
}

#[test]
fn persistent_judge_hanging_on_a_case_times_out_that_case_only() {
    let p = python_project(
        &["q0", "HANG", "q2"],
        "{name: py, type: code_judge, script: [python3, judge.py], persistent: true, timeout_seconds: 3}",
    );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    let hung = evaluator(&p, "c1");
    let error = hung["error"].as_str().expect("a grader error");
    assert!(
        error.starts_with(
            "code judge timed out after 3s on this case; it was stopped and the next case starts a fresh one"
        ),
        "{error}"
    );
    assert!(
        error.contains("graded c0 in pid"),
        "the judge's stderr is quoted: {error}"
    );
    for id in ["c0", "c2"] {
        let e = evaluator(&p, id);
        assert_eq!((e["score"].as_f64(), e.get("error")), (Some(1.0), None), "{id}: {e}");
    }
    let pids = starts(&p);
    assert_eq!(pids.len(), 2, "{pids:?}");
    gone_soon(&pids[0]).expect("the hung judge was killed");
}

#[test]
fn persistent_judge_gets_a_fresh_proxy_budget_per_case() {
    let p = python_project(
        &["q0", "q1", "q2"],
        "{name: py, type: code_judge, script: [python3, judge.py], persistent: true, target: {max_calls: 2}}",
    );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    assert_eq!(starts(&p).len(), 1);
    for id in ["c0", "c1", "c2"] {
        let e = evaluator(&p, id);
        let calls = &e["details"]["calls"];
        assert_eq!(calls[0], calls[1], "{id}: {e}");
        assert!(calls[0].as_str().is_some_and(|s| s.contains("0.9")), "{id}: {e}");
        assert_eq!(calls[2], "429: Max calls exceeded (limit: 2)", "{id}: {e}");
        assert_eq!(e["details"]["target_proxy"]["call_count"], 2, "{id}: {e}");
        let shown = e.to_string();
        assert!(!shown.contains("token"), "no proxy token in the results: {shown}");
    }
}

#[test]
fn one_shot_judge_marked_persistent_is_a_clear_error() {
    let judge = "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'score': 1}))\n";
    let p = Project::new()
        .file("judge.py", judge)
        .file("targets.yaml", &agentv_testkit::mock_targets("the answer"))
        .file(
            "e.yaml",
            &suite(
                &["q0", "q1"],
                "{name: py, type: code_judge, script: [python3, judge.py], persistent: true, timeout_seconds: 1}",
            ),
        );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    for id in ["c0", "c1"] {
        let e = evaluator(&p, id);
        let error = e["error"].as_str().expect("a grader error");
        assert!(
            error.starts_with("code judge is not speaking the persistent protocol: no ready line within 1s"),
            "{id}: {error}"
        );
        assert!(error.contains("remove `persistent: true`"), "{error}");
    }
}

#[test]
fn persistent_code_grader_reads_results_by_4x_rules() {
    let p = python_project(
        &["q0", "q1"],
        "{name: py, type: code-grader, command: [python3, judge.py], persistent: true}",
    );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    assert_eq!(starts(&p).len(), 1);
    for id in ["c0", "c1"] {
        let e = evaluator(&p, id);
        assert_eq!(e["score"], 1.0, "{id}: {e}");
    }
}

/// Builds `bench-judge` (a minimal judge on the Rust SDK) and returns its path.
fn rust_judge() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .args(["build", "--quiet", "--package", "agentv-bench", "--bin", "bench-judge"])
        .current_dir(repo_root())
        .status()
        .expect("cargo runs");
    assert!(status.success(), "bench-judge builds");
    let exe = agentv_testkit::agentv_bin();
    exe.parent()
        .map(|dir| dir.join("bench-judge"))
        .expect("a target directory")
}

#[test]
fn persistent_rust_sdk_judge_serves_every_case_with_fresh_budgets() {
    let judge = rust_judge();
    let wrapper = format!("echo $$ >> starts.log; exec '{}' proxy 2", judge.display());
    let p = Project::new()
        .file("judge.sh", &wrapper)
        .file("targets.yaml", &agentv_testkit::mock_targets("the answer"))
        .file(
            "e.yaml",
            &suite(
                &["q0", "q1", "q2", "q3"],
                "{name: rs, type: code_judge, script: [sh, judge.sh], persistent: true, target: {max_calls: 2}}",
            ),
        );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    assert_eq!(starts(&p).len(), 1);
    for id in ["c0", "c1", "c2", "c3"] {
        let e = evaluator(&p, id);
        assert_eq!(e["score"], 1.0, "{id}: {e}");
        assert_eq!(e["details"]["target_proxy"]["call_count"], 2, "{id}: {e}");
    }
}

#[test]
fn persistent_typescript_sdk_judge_serves_every_case() {
    if !require("node", "the TypeScript SDK") {
        return;
    }
    let sdk = std::fs::read_to_string(repo_root().join("sdk/typescript/dist/index.js")).expect("TypeScript SDK");
    let judge = r#"import { appendFileSync } from "node:fs";
import { defineCodeJudge } from "./agentv-eval.js";

appendFileSync("starts.log", `${process.pid}\n`);
defineCodeJudge(async (payload, { target }) => {
  const calls = [];
  for (let i = 0; i < 3; i++) {
    try {
      calls.push((await target.invoke({ question: `question ${i}` })).text);
    } catch (e) {
      calls.push(`${e.statusCode}: ${e.message}`);
    }
  }
  return { score: 1, hits: [`graded ${payload.evalId}`], details: { calls } };
});
"#;
    let p = Project::new()
        .file("agentv-eval.js", &sdk)
        .file("package.json", r#"{"type": "module"}"#)
        .file("judge.js", judge)
        .file("targets.yaml", &agentv_testkit::mock_targets("the answer"))
        .file(
            "e.yaml",
            &suite(
                &["q0", "q1", "q2"],
                "{name: ts, type: code_judge, script: [node, judge.js], persistent: true, target: {max_calls: 2}}",
            ),
        );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    assert_eq!(starts(&p).len(), 1);
    for id in ["c0", "c1", "c2"] {
        let e = evaluator(&p, id);
        assert_eq!(e["hits"], json!([format!("graded {id}")]), "{id}: {e}");
        assert_eq!(
            e["details"]["calls"][2], "429: Max calls exceeded (limit: 2)",
            "{id}: {e}"
        );
    }
}

#[test]
fn persistent_judges_still_running_at_the_end_of_the_run_are_killed() {
    // Serves the protocol, then ignores the end of its stdin and keeps a child running.
    let judge = r#"echo $$ > judge.pid
echo '{"ready":true,"protocol":1}'
n=0
while read -r line; do n=$((n+1)); echo "{\"id\":$n,\"result\":{\"score\":1}}"; done
sleep 300 &
echo $! > child.pid
wait
"#;
    let p = Project::new()
        .file("judge.sh", judge)
        .file("targets.yaml", &agentv_testkit::mock_targets("the answer"))
        .file(
            "e.yaml",
            &suite(
                &["q0", "q1"],
                "{name: sh, type: code_judge, script: [sh, judge.sh], persistent: true}",
            ),
        );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    assert_eq!(evaluator(&p, "c1")["score"], 1.0);
    for file in ["judge.pid", "child.pid"] {
        let pid = std::fs::read_to_string(p.path().join(file)).expect("pid written");
        gone_soon(&pid).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}

#[test]
fn sigterm_kills_a_persistent_judge_busy_with_a_case() {
    // Announces itself, then takes forever on the first case, with a child of its own.
    let judge = r#"echo '{"ready":true,"protocol":1}'
read -r line
sleep 300 &
echo $! > child.pid
echo $$ > judge.pid
wait
"#;
    let p = Project::new()
        .file("judge.sh", judge)
        .file("targets.yaml", &agentv_testkit::mock_targets("the answer"))
        .file(
            "e.yaml",
            &suite(
                &["q0", "q1"],
                "{name: sh, type: code_judge, script: [sh, judge.sh], persistent: true}",
            ),
        );
    let mut child = p.spawn(&["eval", "e.yaml", "--out", "r.jsonl"]);
    crate::signals::wait_for_file(&p, "judge.pid");
    // The first SIGTERM stops scheduling; the second, once the window in which a program's
    // second signal is the same stop has passed, cancels the running case (long before the
    // grace period would end it).
    crate::signals::stop_then_cancel(&mut child, "TERM");
    child
        .wait()
        .code(143)
        .stderr_has("interrupted again: cancelling the running cases");
    for file in ["judge.pid", "child.pid"] {
        let pid = std::fs::read_to_string(p.path().join(file)).expect("pid written");
        gone_soon(&pid).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}

#[test]
fn a_persistent_judge_that_grows_without_bound_is_recycled() {
    let questions: Vec<String> = (0..7).map(|i| format!("q{i}")).collect();
    let questions: Vec<&str> = questions.iter().map(String::as_str).collect();
    // After 3 cases (by count), and under a memory ceiling no Python process stays below.
    let p = python_project(
        &questions,
        "{name: py, type: code_judge, script: [python3, judge.py], persistent: {max_cases: 3}}",
    );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    let pids = starts(&p);
    assert_eq!(pids.len(), 3, "cases 1-3, 4-6 and 7 on their own processes: {pids:?}");
    for i in 0..7 {
        assert_eq!(evaluator(&p, &format!("c{i}"))["score"], 1.0);
    }
    for pid in &pids {
        gone_soon(pid).expect("a recycled judge is stopped");
    }

    let p = python_project(
        &questions[..3],
        "{name: py, type: code-grader, command: [python3, judge.py], persistent: {max_memory_mb: 1}}",
    );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    assert_eq!(
        starts(&p).len(),
        3,
        "over 1 MB after every case: a fresh process each time"
    );

    // A bad setting is reported at load with the keys it takes.
    let p = python_project(
        &["q0"],
        "{name: py, type: code_judge, script: [python3, judge.py], persistent: {max_case: 3}}",
    );
    let run = p.run(&["validate", "e.yaml"]);
    assert!(
        run.stderr.contains("max_case") && run.stderr.contains("max_cases"),
        "{}",
        run.stderr
    );
}
