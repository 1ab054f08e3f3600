//! Shaping a run: the target matrix (`--target` repeated), `--repeat`, `--shard` with
//! `agentv merge`, `--resume`, `--rerun-failed` and `--budget-usd`; the full trace in each
//! record and the run summary beside the results (`docs/running.md`).

use agentv_testkit::{Project, keyword_cases as cases};
use serde_json::Value;

/// A fake agent: answers `done` for the ids listed in `pass` (a file, one id a line; every id
/// when it is absent), `nope` otherwise; reports a Read tool call, $0.10 and 15 tokens; and
/// appends `<target> <id>` to `calls`.
const AGENT: &str = r#"#!/bin/sh
echo "$3 $2" >> calls
t=done
if [ -f pass ] && ! grep -qx "$2" pass; then t=nope; fi
printf '{"text": "%s", "cost_usd": 0.1, "token_usage": {"input": 10, "output": 5}, "output_messages": [{"role": "assistant", "content": "%s", "tool_calls": [{"tool": "Read", "input": {"path": "src/%s.rs"}, "output": "fn main() {}", "timestamp": "2026-01-01T00:00:00Z", "duration_ms": 12}]}]}' "$t" "$t" "$2" > "$1"
"#;

/// Targets `a` and `b`, both the fake agent.
const TARGETS: &str = "targets:
  - name: a
    provider: cli
    command_template: sh agent.sh {OUTPUT_FILE} {EVAL_ID} a
  - name: b
    provider: cli
    command_template: sh agent.sh {OUTPUT_FILE} {EVAL_ID} b
";

fn project(n: usize) -> Project {
    Project::new()
        .file("targets.yaml", TARGETS)
        .file("agent.sh", AGENT)
        .file("e.yaml", &cases(n))
}

/// The agent's calls, as `<target> <id>` lines, sorted.
fn calls(p: &Project) -> Vec<String> {
    let mut calls: Vec<String> = std::fs::read_to_string(p.path().join("calls"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    calls.sort();
    calls
}

fn summary(p: &Project, rel: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p.path().join(rel)).expect("run summary")).expect("JSON")
}

/// Records without what differs from run to run (times and durations), sorted by their text.
fn comparable(records: Vec<Value>) -> Vec<String> {
    let mut out: Vec<String> = records
        .into_iter()
        .map(|mut r| {
            let o = r.as_object_mut().expect("object");
            o.remove("timestamp");
            // The 4.x keys repeat the duration at the top level and in the trace summary.
            o.remove("duration_ms");
            for key in ["execution_metrics", "trace_summary"] {
                if let Some(m) = o.get_mut(key).and_then(Value::as_object_mut) {
                    m.remove("duration_ms");
                }
            }
            r.to_string()
        })
        .collect();
    out.sort();
    out
}

/// A run summary without its metadata and the latencies.
fn comparable_summary(mut s: Value) -> Value {
    let o = s.as_object_mut().expect("object");
    o.remove("metadata");
    o.remove("duration_ms");
    for t in o["targets"].as_array_mut().expect("targets") {
        t.as_object_mut().expect("target").remove("latency_ms");
    }
    s
}

#[test]
fn target_matrix_runs_every_case_against_each_target() {
    let p = project(3).file("pass", "c0\nc1\n");
    p.run(&["eval", "e.yaml", "--target", "a", "--target", "b", "--out", "r.jsonl"])
        .code(0)
        .stdout_has("BY TARGET")
        .stderr_has("Running 6 case(s)");
    let records = p.results("r.jsonl");
    assert_eq!(records.len(), 6);
    for target in ["a", "b"] {
        let ids: Vec<&str> = records
            .iter()
            .filter(|r| r["target"] == target)
            .filter_map(|r| r["eval_id"].as_str())
            .collect();
        assert_eq!(ids, ["c0", "c1", "c2"], "{target}");
    }
    assert_eq!(calls(&p).len(), 6);
    let s = summary(&p, "r.summary.json");
    let targets = s["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), 2);
    for t in targets {
        assert_eq!(t["records"], 3);
        assert_eq!(t["pass"], 2);
        assert!((t["pass_rate"].as_f64().expect("rate") - 2.0 / 3.0).abs() < 1e-9);
        assert!((t["cost_usd"].as_f64().expect("cost") - 0.3).abs() < 1e-9);
        assert_eq!(t["tokens"]["input"], 30);
        assert!(t["latency_ms"]["p95"].as_f64().is_some(), "{t}");
    }
    let run = p.run(&["eval", "e.yaml", "--target", "a", "--target", "b", "--out", "r.jsonl"]);
    let header = run
        .stdout
        .lines()
        .find(|l| l.starts_with("BY TARGET"))
        .expect("a header line");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["BY", "TARGET", "a", "b"],
        "one column per target"
    );
}

#[test]
fn records_carry_the_full_trace_and_a_huge_one_is_capped_with_a_marker() {
    let p = project(1);
    p.run(&["eval", "e.yaml", "--target", "a", "--out", "r.jsonl"]).code(0);
    let r = p.result("r.jsonl", "c0");
    let event = &r["trace"][0];
    assert_eq!(event["type"], "tool_call");
    assert_eq!(event["name"], "Read");
    assert_eq!(event["input"]["path"], "src/c0.rs");
    assert_eq!(event["output"], "fn main() {}");
    assert_eq!(event["timestamp"], "2026-01-01T00:00:00Z");
    assert_eq!(event["duration_ms"], 12.0);
    assert_eq!(r["output_messages"][0]["tool_calls"][0]["tool"], "Read");
    assert!(r.get("truncated").is_none());

    // 400 calls of 2 KB each: 800 KB of trace, over the 256 KiB cap.
    let big = r#"#!/bin/sh
python3 -c '
import json, sys
calls = [{"tool": "Grep", "input": {"n": i}, "output": "x" * 2000} for i in range(400)]
json.dump({"text": "done", "output_messages": [{"role": "assistant", "content": "done", "tool_calls": calls}]}, open(sys.argv[1], "w"))
' "$1"
"#;
    let p = project(1).file("agent.sh", big);
    p.run(&["eval", "e.yaml", "--target", "a", "--out", "r.jsonl"]).code(0);
    let r = p.result("r.jsonl", "c0");
    let line = std::fs::read_to_string(p.path().join("r.jsonl")).expect("results");
    assert!(line.len() < 300 * 1024, "{} bytes", line.len());
    let t = &r["truncated"];
    assert_eq!(t["max_bytes"], 262_144);
    assert!(t["original_bytes"].as_u64().expect("bytes") > 800_000, "{t}");
    assert_eq!(
        r["trace_summary"]["tool_calls_by_name"]["Grep"], 400,
        "the summary counts every call"
    );
    let kept = r["trace"].as_array().expect("trace").len() as u64;
    assert_eq!(kept + t["trace_events_dropped"].as_u64().unwrap_or(0), 400);
    assert_eq!(r["candidate_answer"], "done", "the answer is never cut");
}

#[test]
fn run_summary_sits_beside_the_results_with_metadata_and_totals() {
    const SECRET: &str = "sh agent.sh {OUTPUT_FILE} {EVAL_ID} a";
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let p = project(2)
        .file(".git/HEAD", "ref: refs/heads/main\n")
        .file(".git/refs/heads/main", &format!("{commit}\n"))
        .file(".env", &format!("AGENT_CMD=\"{SECRET}\"\n"))
        .file(
            "targets.yaml",
            "targets:\n  - name: a\n    provider: cli\n    command_template: ${{ AGENT_CMD }}\n",
        );
    // A resolved secret that also appears on the command line (here in a report's name).
    let report = format!("junit={SECRET}.xml");
    p.run(&[
        "eval", "e.yaml", "--target", "a", "--out", "r.jsonl", "--report", &report,
    ])
    .code(0)
    .stderr_has("Run summary written to r.summary.json");
    let s = summary(&p, "r.summary.json");
    let m = &s["metadata"];
    assert_eq!(m["agentv_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(m["git_commit"], commit);
    assert_eq!(m["results_file"], "r.jsonl");
    assert!(
        m["started_at"]
            .as_str()
            .is_some_and(|t| t <= m["finished_at"].as_str().expect("end"))
    );
    let command: Vec<&str> = m["command"]
        .as_array()
        .expect("argv")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(command[1..4], ["eval", "e.yaml", "--target"]);
    let text = std::fs::read_to_string(p.path().join("r.summary.json")).expect("summary");
    assert!(!text.contains(SECRET), "a secret on the command line is redacted");
    assert_eq!(s["records"], 2);
    assert_eq!(s["tokens"]["output"], 10);
    assert!((s["cost_usd"].as_f64().expect("cost") - 0.2).abs() < 1e-9);
    assert!(s["duration_ms"].as_f64().expect("duration") > 0.0);
    assert_eq!(s["graders"][0]["name"], "kw");
    assert_eq!(s["graders"][0]["results"], 2);
}

#[test]
fn repeat_records_trials_and_reports_spread_flaky_cases_and_pass_at_k() {
    // c0 always passes; c1 passes on the first and third tries only.
    let flaky = r#"#!/bin/sh
echo "$2" >> calls
t=done
if [ "$2" = c1 ] && [ $(grep -cx c1 calls) = 2 ]; then t=nope; fi
echo "$t" > "$1"
"#;
    let p = project(2).file("agent.sh", flaky);
    let run = p.run(&["eval", "e.yaml", "--target", "a", "--repeat", "3", "--out", "r.jsonl"]);
    run.code(0)
        .stdout_has("REPEATS (3 per case)")
        .stdout_has("flaky: a e/c1: 1.00, 0.00, 1.00 (mean 0.667)");
    let trials: Vec<(String, u64)> = p
        .results("r.jsonl")
        .iter()
        .map(|r| {
            (
                r["eval_id"].as_str().unwrap_or("").to_owned(),
                r["trial"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(trials.len(), 6);
    for id in ["c0", "c1"] {
        let mut t: Vec<u64> = trials.iter().filter(|(i, _)| i == id).map(|(_, t)| *t).collect();
        t.sort_unstable();
        assert_eq!(t, [1, 2, 3], "{id}");
    }
    let s = summary(&p, "r.summary.json");
    let rep = &s["targets"][0]["repeats"];
    assert_eq!(rep["k"], 3);
    assert_eq!(rep["flaky"][0]["eval_id"], "c1");
    let at = |k: usize, key: &str| rep["pass_at"][k - 1][key].as_f64().expect("estimate");
    // pass@1 = (3/3 + 2/3)/2; pass@3 = 1; pass^3 = (1 + 0)/2.
    assert!((at(1, "pass_at_k") - 5.0 / 6.0).abs() < 1e-9);
    assert!((at(3, "pass_at_k") - 1.0).abs() < 1e-9);
    assert!((at(3, "pass_hat_k") - 0.5).abs() < 1e-9);
    let c1 = rep["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["eval_id"] == "c1")
        .expect("c1");
    assert!((c1["std_dev"].as_f64().expect("spread") - 0.577_350_269).abs() < 1e-6);
    let ci = s["targets"][0]["mean_ci95"].as_array().expect("interval");
    assert!(ci[0].as_f64() < ci[1].as_f64());
    p.run(&["eval", "e.yaml", "--repeat", "0"]).code(2);
    p.run(&["eval", "e.yaml", "--repeat", "2", "--cache"])
        .code(2)
        .stderr_has("--cache cannot be used with --repeat");
}

#[test]
fn rerun_failed_runs_only_the_cases_that_did_not_pass() {
    let p = project(4).file("pass", "c0\nc2\n");
    p.run(&["eval", "e.yaml", "--target", "a", "--out", "first.jsonl"])
        .code(0);
    std::fs::remove_file(p.path().join("calls")).expect("reset");
    p.run(&[
        "eval",
        "e.yaml",
        "--target",
        "a",
        "--rerun-failed",
        "first.jsonl",
        "--out",
        "retry.jsonl",
    ])
    .code(0)
    .stderr_has("Running 2 case(s)");
    assert_eq!(calls(&p), ["a c1", "a c3"]);
    p.run(&[
        "eval",
        "e.yaml",
        "--rerun-failed",
        "first.jsonl",
        "--out",
        "first.jsonl",
    ])
    .code(2)
    .stderr_has("is the one --rerun-failed reads");
    p.run(&["eval", "e.yaml", "--rerun-failed", "missing.jsonl"]).code(2);
}

#[test]
fn resume_continues_a_killed_run_and_runs_only_what_is_missing() {
    let p = project(5);
    p.run(&["eval", "e.yaml", "--target", "a", "--out", "r.jsonl"]).code(0);
    // What a run killed mid-write leaves: two whole lines and half of the third.
    let text = std::fs::read_to_string(p.path().join("r.jsonl")).expect("results");
    let lines: Vec<&str> = text.lines().collect();
    let killed = format!("{}\n{}\n{}", lines[0], lines[1], &lines[2][..40]);
    std::fs::write(p.path().join("r.jsonl"), killed).expect("write");
    std::fs::remove_file(p.path().join("calls")).expect("reset");
    p.run(&["eval", "e.yaml", "--target", "a", "--resume", "r.jsonl"])
        .code(0)
        .stderr_has("Resuming: 2 complete record(s) kept, 3 to run")
        .stderr_has("cut off mid-write")
        .stdout_has("Total eval cases: 5");
    assert_eq!(calls(&p), ["a c2", "a c3", "a c4"]);
    let mut ids: Vec<String> = p
        .results("r.jsonl")
        .iter()
        .filter_map(|r| r["eval_id"].as_str().map(str::to_owned))
        .collect();
    ids.sort();
    assert_eq!(ids, ["c0", "c1", "c2", "c3", "c4"]);
    assert_eq!(summary(&p, "r.summary.json")["records"], 5);
    // Nothing left to do: nothing runs, the file stays as it is.
    std::fs::remove_file(p.path().join("calls")).expect("reset");
    p.run(&["eval", "e.yaml", "--target", "a", "--resume", "r.jsonl"])
        .code(0);
    assert!(calls(&p).is_empty());
    assert_eq!(p.results("r.jsonl").len(), 5);
    p.run(&["eval", "e.yaml", "--resume", "r.jsonl", "--out", "o.jsonl"])
        .code(2);
}

#[test]
fn shards_merge_into_the_same_results_and_summary_as_one_machine() {
    let p = project(10).file("pass", "c1\nc4\nc7\n");
    let matrix = ["--target", "a", "--target", "b", "--repeat", "2"];
    let mut sizes = Vec::new();
    for k in 1..=3 {
        let out = format!("s{k}.jsonl");
        let shard = format!("{k}/3");
        let mut args = vec!["eval", "e.yaml", "--shard", shard.as_str(), "--out", out.as_str()];
        args.extend(matrix);
        p.run(&args).code(0);
        sizes.push(p.results(&out).len());
    }
    // 10 cases dealt to 3 shards: 4, 3, 3 cases, each × 2 targets × 2 repeats.
    let mut sorted = sizes.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [12, 12, 16], "{sizes:?}");
    let mut args = vec!["eval", "e.yaml", "--out", "full.jsonl"];
    args.extend(matrix);
    p.run(&args).code(0);
    p.run(&["merge", "s1.jsonl", "s2.jsonl", "s3.jsonl", "--out", "all.jsonl"])
        .code(0)
        .stdout_has("Merged 40 record(s) into all.jsonl");
    assert_eq!(comparable(p.results("all.jsonl")), comparable(p.results("full.jsonl")));
    assert_eq!(
        comparable_summary(summary(&p, "all.summary.json")),
        comparable_summary(summary(&p, "full.summary.json"))
    );
    // Merging the single-machine run alone sorts it the same way, line for line.
    p.run(&["merge", "full.jsonl", "--out", "full-sorted.jsonl"]).code(0);
    let order = |rel: &str| -> Vec<String> {
        p.results(rel)
            .iter()
            .map(|r| format!("{} {} {}", r["eval_id"], r["target"], r["trial"]))
            .collect()
    };
    assert_eq!(order("all.jsonl"), order("full-sorted.jsonl"));

    std::fs::copy(p.path().join("s1.jsonl"), p.path().join("again.jsonl")).expect("copy");
    p.run(&["merge", "s1.jsonl", "again.jsonl", "--out", "x.jsonl"])
        .code(2)
        .stderr_has("more than one input");
    p.run(&["merge", "s1.jsonl", "./s1.jsonl", "--out", "x.jsonl"])
        .code(2)
        .stderr_has("given twice");
    p.run(&["merge", "s1.jsonl", "s3.jsonl", "--out", "x.jsonl"])
        .code(3)
        .stderr_has("incomplete:");
    p.run(&["eval", "e.yaml", "--shard", "4/3"])
        .code(2)
        .stderr_has("K must be from 1 to N");
}

#[test]
fn budget_stops_scheduling_and_records_the_rest_as_not_run() {
    let p = project(6);
    p.run(&[
        "eval",
        "e.yaml",
        "--target",
        "a",
        "--out",
        "r.jsonl",
        "--budget-usd",
        "0.25",
    ])
    .code(3)
    .stderr_has("3 case(s) were not run: the budget was reached (--budget-usd)");
    assert_eq!(calls(&p).len(), 3, "$0.10 a case: the third reaches $0.25");
    let records = p.results("r.jsonl");
    assert_eq!(records.len(), 6, "every case has a record");
    let not_run: Vec<&Value> = records
        .iter()
        .filter(|r| r["failure_reason_code"] == "budget_exceeded")
        .collect();
    assert_eq!(not_run.len(), 3);
    for r in not_run {
        assert_eq!(r["execution_status"], "execution_error");
        assert_eq!(r["attempt"], 0);
        assert!(
            r["error"].as_str().is_some_and(|e| e.contains("--budget-usd 0.25")),
            "{r}"
        );
    }
    assert_eq!(summary(&p, "r.summary.json")["by_status"]["not_run"], 3);
    // A resume with more budget runs what the budget left out.
    std::fs::remove_file(p.path().join("calls")).expect("reset");
    p.run(&[
        "eval",
        "e.yaml",
        "--target",
        "a",
        "--resume",
        "r.jsonl",
        "--budget-usd",
        "10",
    ])
    .code(0);
    assert_eq!(calls(&p), ["a c3", "a c4", "a c5"]);
    for bad in ["0", "-1", "NaN", "lots"] {
        p.run(&["eval", "e.yaml", "--budget-usd", bad]).code(2);
    }
}

/// The CI example's steps (`examples/ci/.github/workflows/agentv.yml`), run here as the workflow runs them:
/// four shards of the shipped mock suite, merged, gated by `compare` against the shipped
/// baseline.
#[test]
fn ci_example_shards_merge_and_gate_against_its_baseline() {
    use agentv_testkit::{Run, repo_root};
    let workflow =
        std::fs::read_to_string(repo_root().join("examples/ci/.github/workflows/agentv.yml")).expect("workflow");
    for step in [
        "SUITE: examples/mock/evals/capitals.yaml",
        "BASELINE: examples/ci/baseline.jsonl",
        "agentv eval \"$SUITE\" --shard ${{ matrix.shard }}/$SHARDS --budget-usd 5",
        "agentv merge results/shard-*.jsonl --out results/all.jsonl",
        "agentv compare \"$BASELINE\" results/all.jsonl --fail-on-regression --max-regression 0.2",
    ] {
        assert!(workflow.contains(step), "the workflow no longer runs `{step}`");
    }
    let dir = tempfile::tempdir().expect("tmp");
    let out = |name: &str| dir.path().join(name).display().to_string();
    let agentv = |args: &[&str]| Run::of(&mut agentv_testkit::agentv(&repo_root(), args));
    let mut shards = Vec::new();
    for k in 1..=4 {
        let shard = format!("{k}/4");
        let path = out(&format!("shard-{k}.jsonl"));
        agentv(&[
            "eval",
            "examples/mock/evals/capitals.yaml",
            "--shard",
            &shard,
            "--budget-usd",
            "5",
            "--out",
            &path,
        ])
        .code(0);
        shards.push(path);
    }
    let all = out("all.jsonl");
    let mut merge: Vec<&str> = vec!["merge"];
    merge.extend(shards.iter().map(String::as_str));
    merge.extend(["--out", all.as_str()]);
    agentv(&merge).code(0);
    agentv(&[
        "compare",
        "examples/ci/baseline.jsonl",
        &all,
        "--fail-on-regression",
        "--max-regression",
        "0.2",
    ])
    .code(0)
    .stdout_has("Gate: PASSED");
}
