//! Run-level behaviour from the binary: interrupts, provider batching, concurrency.

use agentv_testkit::process::send_signal;
use agentv_testkit::{Project, keyword_cases as cases};

#[test]
fn ctrl_c_stops_scheduling_keeps_results_and_exits_130() {
    let targets =
        "targets:\n  - name: default\n    provider: cli\n    command_template: sleep 1; echo done > {OUTPUT_FILE}\n";
    let p = Project::new().file("targets.yaml", targets).file("e.yaml", &cases(20));
    let child = p.spawn(&["eval", "e.yaml", "--out", "r.jsonl", "--workers", "2"]);
    let results = p.path().join("r.jsonl");
    agentv_testkit::process::wait_until("two results", || {
        std::fs::read_to_string(&results).is_ok_and(|t| t.lines().count() >= 2)
    });
    send_signal(child.pid(), "INT");
    let run = child.wait();
    run.code(130)
        .stderr_has("interrupted: no new cases will start")
        .stderr_has("case(s) did not run")
        .stdout_has("EVALUATION SUMMARY");
    let written = p.results("r.jsonl");
    assert!(written.len() >= 2 && written.len() < 20, "{} results", written.len());
    assert!(
        written.iter().all(|r| r["score"] == 1.0),
        "in-flight cases finished within the grace period"
    );
}

#[test]
fn provider_batching_runs_one_command_for_all_cases() {
    let script = "#!/bin/sh\necho run >> calls\nfor i in 0 1 2; do echo \"{\\\"id\\\": \\\"c$i\\\", \\\"text\\\": \\\"done $i\\\"}\"; done > \"$1\"\n";
    let targets = "targets:\n  - name: default\n    provider: cli\n    provider_batching: true\n    command_template: sh agent.sh {OUTPUT_FILE}\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("agent.sh", script)
        .file("e.yaml", &cases(3));
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(0)
        .stdout_has("Verdicts: 3 pass");
    assert_eq!(
        std::fs::read_to_string(p.path().join("calls"))
            .expect("calls")
            .lines()
            .count(),
        1
    );
    assert_eq!(p.result("r.jsonl", "c2")["candidate_answer"], "done 2");
}

#[test]
fn failed_batch_falls_back_to_per_case_calls() {
    let script = "#!/bin/sh\necho \"$2\" >> calls\nif [ \"$2\" = batch ]; then exit 1; fi\necho \"done $2\" > \"$1\"\n";
    let targets = "targets:\n  - name: default\n    provider: cli\n    provider_batching: true\n    command_template: sh agent.sh {OUTPUT_FILE} {EVAL_ID}\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("agent.sh", script)
        .file("e.yaml", &cases(2));
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(0)
        .stderr_has("warning: batch for `default` failed (command exited with code 1")
        .stderr_has("running per case");
    let mut calls: Vec<String> = std::fs::read_to_string(p.path().join("calls"))
        .expect("calls")
        .lines()
        .map(str::to_owned)
        .collect();
    calls.sort();
    assert_eq!(calls, ["batch", "c0", "c1"]);
    assert_eq!(p.result("r.jsonl", "c1")["candidate_answer"], "done c1");
}

#[test]
fn workers_bound_concurrency() {
    // Each case records its start and end; with 3 workers at most 3 overlap.
    let script =
        "#!/bin/sh\necho \"+ $(date +%s%N)\" >> log\nsleep 0.3\necho \"- $(date +%s%N)\" >> log\necho done > \"$1\"\n";
    let targets = "targets:\n  - name: default\n    provider: cli\n    workers: 3\n    command_template: sh agent.sh {OUTPUT_FILE}\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("agent.sh", script)
        .file("e.yaml", &cases(9));
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(0)
        .stderr_has("with 3 worker(s)");
    let mut events: Vec<(u128, i32)> = std::fs::read_to_string(p.path().join("log"))
        .expect("log")
        .lines()
        .map(|l| {
            let (sign, t) = l.split_once(' ').expect("entry");
            (t.parse().expect("time"), if sign == "+" { 1 } else { -1 })
        })
        .collect();
    events.sort();
    let (mut running, mut peak) = (0, 0);
    for (_, delta) in events {
        running += delta;
        peak = peak.max(running);
    }
    // The bound is the behaviour: never more than 3 at once (and more than one, or it ran serially).
    assert!((2..=3).contains(&peak), "peak concurrency {peak}");
}

#[test]
fn exploration_tools_are_configurable() {
    let answer = r#"{"text": "done", "output_messages": [{"role": "assistant", "content": "done", "tool_calls": [{"tool": "Read"}, {"tool": "lookup"}, {"tool": "Edit"}, {"tool": "lookup"}]}], "token_usage": {"input": 10, "output": 8}}"#;
    let targets = format!("targets:\n  - name: default\n    provider: mock\n    response: '{answer}'\n");
    let p = Project::new().file("targets.yaml", &targets).file("e.yaml", &cases(1));
    p.run(&["eval", "e.yaml", "--out", "r1.jsonl"]).code(0);
    let m = &p.result("r1.jsonl", "c0")["execution_metrics"];
    assert_eq!(
        (m["exploration_ratio"].as_f64(), m["tokens_per_tool"].as_f64()),
        (Some(0.25), Some(2.0)),
        "{m}"
    );
    p.run(&[
        "eval",
        "e.yaml",
        "--out",
        "r2.jsonl",
        "--exploration-tools",
        "read,LOOKUP",
    ])
    .code(0);
    assert_eq!(
        p.result("r2.jsonl", "c0")["execution_metrics"]["exploration_ratio"],
        0.75
    );
}

#[test]
fn batching_on_a_provider_that_cannot_is_quiet_unless_verbose() {
    let targets = "targets:\n  - name: default\n    provider: mock\n    provider_batching: true\n    response: done\n";
    let p = Project::new().file("targets.yaml", targets).file("e.yaml", &cases(2));
    let quiet = p.run(&["eval", "e.yaml", "--out", "r1.jsonl"]);
    quiet.code(0);
    assert!(!quiet.stderr.contains("cannot batch"), "{}", quiet.stderr);
    p.run(&["eval", "e.yaml", "--out", "r2.jsonl", "--verbose"])
        .code(0)
        .stderr_has("target `default` sets provider_batching but provider `mock` cannot batch; running per case");
    assert_eq!(p.results("r2.jsonl").len(), 2);
}

#[test]
fn batching_target_of_a_later_suite_still_batches() {
    let script = "#!/bin/sh\necho run >> calls\nfor i in 0 1; do echo \"{\\\"id\\\": \\\"c$i\\\", \\\"text\\\": \\\"done $i\\\"}\"; done > \"$1\"\n";
    let targets = "targets:\n  - name: plain\n    provider: mock\n    response: done\n  - name: batcher\n    provider: cli\n    provider_batching: true\n    command_template: sh agent.sh {OUTPUT_FILE}\n";
    let first = cases(1)
        .replace("execution:\n", "execution:\n  target: plain\n")
        .replace("id: c0", "id: first");
    let second = cases(2).replace("execution:\n", "execution:\n  target: batcher\n");
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("agent.sh", script)
        .file("a.yaml", &first)
        .file("b.yaml", &second);
    p.run(&["eval", "a.yaml", "b.yaml", "--out", "r.jsonl"])
        .code(0)
        .stdout_has("Verdicts: 3 pass");
    assert_eq!(
        std::fs::read_to_string(p.path().join("calls"))
            .expect("calls")
            .lines()
            .count(),
        1,
        "one batch command"
    );
}
