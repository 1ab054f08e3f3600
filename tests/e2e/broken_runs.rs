//! A broken run never crashes and never looks green: hostile provider data, failing
//! healthchecks, judges that cannot grade and closed pipes end in a readable report and the
//! exit code that says what happened (`docs/architecture.md#exit-codes`).

use agentv_testkit::{Project, keyword_cases as cases};
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn mock_answering(answer: &str) -> String {
    format!("targets:\n  - name: default\n    provider: mock\n    response: {answer:?}\n")
}

#[tokio::test]
async fn retry_after_huge_value_is_capped_and_other_targets_still_run() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1e30")
                .set_body_json(json!({"error": {"message": "rate limited"}})),
        )
        .mount(&server)
        .await;
    let targets = format!(
        "targets:\n  - name: flaky\n    provider: openai\n    base_url: {}/v1\n    model: m\n    api_key: k-not-secret\n    max_retries: 2\n    max_delay_ms: 20\n  - name: default\n    provider: mock\n    response: done\n",
        server.uri()
    );
    let p = Project::new()
        .file("targets.yaml", &targets)
        .file(
            "a.yaml",
            &cases(1).replace("execution:\n", "execution:\n  target: flaky\n"),
        )
        .file("b.yaml", &cases(2).replace("id: c", "id: b"));
    let cmd = p.command(&["eval", "a.yaml", "b.yaml", "--out", "r.jsonl"]);
    let run = p.output_async(cmd).await;
    run.code(3)
        .stdout_has("  ✘ c0 [flaky]  execution error\n      error: HTTP 429: rate limited (gave up after 3 attempts)");
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_eq!(p.results("r.jsonl").len(), 3, "every target's cases are recorded");
    assert_eq!(p.result("r.jsonl", "b1")["score"], 1.0);
    assert_eq!(server.received_requests().await.expect("recorded").len(), 3);
}

#[test]
fn timeout_beyond_seven_days_is_a_usage_error() {
    let p = Project::new()
        .file("targets.yaml", &mock_answering("done"))
        .file("e.yaml", &cases(1));
    for value in ["1e20", "0", "-3", "NaN"] {
        let run = p.run(&["eval", "e.yaml", &format!("--timeout={value}"), "--out", "r.jsonl"]);
        run.code(2)
            .stderr_has("invalid value")
            .stderr_has("allowed: 0.001 to 604800 seconds (7 days)");
        assert!(!run.stderr.contains("panicked"), "{value}: {}", run.stderr);
    }
    assert!(!p.path().join("r.jsonl").exists(), "nothing ran");
}

#[test]
fn closed_stdout_pipe_ends_output_quietly() {
    let p = Project::new()
        .file("targets.yaml", &mock_answering("done"))
        .file("e.yaml", &cases(3));
    // The reader goes away before the summary is printed, as `| head -1` does after its line.
    let run = p
        .spawn_with_stdout_closed(&["eval", "e.yaml", "--out", "r.jsonl"])
        .wait();
    run.code(0);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(!run.stderr.contains("Broken pipe"), "{}", run.stderr);
    assert_eq!(p.results("r.jsonl").len(), 3);
}

#[test]
fn run_where_every_case_errored_exits_3() {
    let targets =
        "targets:\n  - name: default\n    provider: cli\n    command_template: echo 'agent down' >&2; exit 1\n";
    let p = Project::new().file("targets.yaml", targets).file("e.yaml", &cases(2));
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(3)
        .stdout_has("Graded: 0   Execution errors: 2   Grader errors: 0")
        .stderr_has("Run incomplete: 2 case(s) could not be run (execution error)");
    for r in p.results("r.jsonl") {
        assert_eq!(r["execution_status"], "execution_error", "{r}");
    }
}

#[test]
fn case_below_threshold_exits_1_and_incomplete_wins_over_it() {
    let p = Project::new()
        .file("targets.yaml", &mock_answering("not finished"))
        .file("e.yaml", &cases(1));
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl", "--threshold", "0.5"])
        .code(1)
        .stderr_has("1 case(s) scored below the threshold 0.5");
    let failing = "targets:\n  - name: default\n    provider: cli\n    command_template: if [ {EVAL_ID} = c1 ]; then exit 1; fi; echo nope > {OUTPUT_FILE}\n";
    let p = Project::new().file("targets.yaml", failing).file("e.yaml", &cases(2));
    p.run(&["eval", "e.yaml", "--out", "r.jsonl", "--threshold", "0.5"])
        .code(3)
        .stderr_has("Run incomplete: 1 case(s) could not be run (execution error)")
        .stderr_has("1 graded case(s) scored below the threshold 0.5");
}

#[test]
fn failing_healthcheck_is_reported_once_before_the_cases() {
    let targets = "targets:\n  - name: default\n    provider: cli\n    command_template: echo ran >> calls; echo done > {OUTPUT_FILE}\n    healthcheck:\n      type: command\n      command_template: echo probe >> probes; exit 3\n";
    let p = Project::new().file("targets.yaml", targets).file("e.yaml", &cases(3));
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl", "--workers", "2"]);
    run.code(3).stderr_has(
        "error: target `default` failed its healthcheck: command exited with code 3: no output\n  its cases will not run",
    );
    assert_eq!(
        run.stderr.matches("command exited with code 3").count(),
        1,
        "said once: {}",
        run.stderr
    );
    let report = run.stderr.find("failed its healthcheck:").expect("reported");
    let first_case = run.stderr.find("[1/3]").expect("case lines");
    assert!(report < first_case, "before the cases: {}", run.stderr);
    run.stderr_has("ERROR  target `default` failed its healthcheck before the run  (");
    assert!(!p.path().join("calls").exists(), "the target was never called");
    let probes = std::fs::read_to_string(p.path().join("probes")).expect("probed");
    assert_eq!(probes.lines().count(), 1, "probed once");
    for r in p.results("r.jsonl") {
        assert_eq!(r["execution_status"], "execution_error");
        assert_eq!(
            r["error"],
            "target `default` failed its healthcheck before the run\ncommand exited with code 3: no output"
        );
    }
}

#[test]
fn failing_judge_healthcheck_is_reported_once_and_grades_fail() {
    let targets = "targets:\n  - name: default\n    provider: mock\n    response: done\n    judge_target: judge\n  - name: judge\n    provider: cli\n    command_template: echo never > {OUTPUT_FILE}\n    healthcheck:\n      type: command\n      command_template: echo 'judge offline' >&2; exit 1\n";
    let yaml = "evalcases:\n  - {id: a, expected_outcome: x, input_messages: [{role: user, content: q}]}\n  - {id: b, expected_outcome: x, input_messages: [{role: user, content: q}]}\n";
    let p = Project::new().file("targets.yaml", targets).file("e.yaml", yaml);
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    run.code(3)
        .stderr_has("warning: judge target `judge` failed its healthcheck: command exited with code 1: judge offline\n  grades that need it will be recorded as grader errors");
    assert_eq!(
        run.stderr.matches("failed its healthcheck:").count(),
        1,
        "{}",
        run.stderr
    );
    for r in p.results("r.jsonl") {
        assert_eq!(r["execution_status"], "grader_error", "{r}");
    }
}

#[test]
fn healthcheck_reason_falls_back_to_stdout() {
    let targets = "targets:\n  - name: default\n    provider: cli\n    command_template: echo done > {OUTPUT_FILE}\n    healthcheck:\n      type: command\n      command_template: echo 'server on :8080 not listening'; exit 3\n";
    let p = Project::new().file("targets.yaml", targets).file("e.yaml", &cases(1));
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(3)
        .stderr_has("failed its healthcheck: command exited with code 3: server on :8080 not listening");
}

/// A suite whose code judge runs `script` (in `sh`), against a mock answering `done`.
fn judged(script: &str) -> Project {
    let yaml = cases(2).replace(
        "evaluators: [{name: kw, type: keywords, expected: [done]}]",
        "evaluators: [{name: j, type: code_judge, script: [sh, judge.sh]}]",
    );
    Project::new()
        .file("targets.yaml", &mock_answering("done"))
        .file("judge.sh", script)
        .file("e.yaml", &yaml)
}

#[test]
fn code_judge_score_out_of_range_is_a_grader_error() {
    let p = judged("cat > /dev/null; echo '{\"score\": 2, \"hits\": [\"great\"]}'\n");
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(3)
        .stderr_has("GRADER ERROR")
        .stderr_has("grader error in 'j': code judge output: score 2 is outside [0, 1]; agentv does not clamp")
        .stdout_has("Grader errors: 2");
    let r = p.result("r.jsonl", "c0");
    assert_eq!(r["execution_status"], "grader_error");
    assert_eq!(r["score"], 0.0, "2 is not clamped into a pass");
    assert_eq!(
        r["evaluator_results"][0]["error"],
        "code judge output: score 2 is outside [0, 1]; agentv does not clamp code judge scores, so scale it in the judge (e.g. passed / total)"
    );
}

#[test]
fn grader_errors_are_shown_per_case_and_counted() {
    let yaml = cases(2).replace(
        "evaluators: [{name: kw, type: keywords, expected: [done]}]",
        "evaluators: [{name: checker, type: code_judge, script: [sh, judges/chek.sh]}]",
    );
    let p = Project::new()
        .file("targets.yaml", &mock_answering("done"))
        .file("judges/check.sh", "echo '{\"score\": 1}'\n")
        .file("e.yaml", &yaml);
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    run.code(3)
        .stdout_has("Graded: 0   Execution errors: 0   Grader errors: 2")
        .stdout_has(
            "FAILURES (2 of 2 cases)\n  ! c0  0.000 grader error\n      grader 'checker': code judge exited with code",
        )
        .stderr_has("grader error in 'checker': code judge exited with code");
    assert!(run.stderr.contains("chek.sh"), "the reason is shown: {}", run.stderr);
    assert!(!run.stderr.contains('✔'), "no case is marked as passed: {}", run.stderr);
    assert_eq!(p.result("r.jsonl", "c1")["execution_status"], "grader_error");
}

#[test]
fn failed_case_shows_its_misses_and_is_not_marked_passed() {
    let p = Project::new()
        .file("targets.yaml", &mock_answering("still working"))
        .file("e.yaml", &cases(1));
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    run.code(0).stderr_has("✘ c0  0.000 fail").stderr_has("      miss: ");
    assert!(!run.stderr.contains('✔'), "{}", run.stderr);
    assert_eq!(
        p.result("r.jsonl", "c0")["execution_status"],
        "ok",
        "a failed case ran fine"
    );
}

#[test]
fn llm_judge_reply_without_json_has_empty_misses_and_the_reason_in_error() {
    let targets = "targets:\n  - name: default\n    provider: mock\n    judge_target: judge\n    response: done\n  - name: judge\n    provider: mock\n    response: I think it is good.\n";
    let yaml = "evalcases:\n  - {id: c, expected_outcome: x, input_messages: [{role: user, content: q}]}\n";
    let p = Project::new().file("targets.yaml", targets).file("e.yaml", yaml);
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    run.code(3);
    assert!(!run.stderr.contains("warning"), "no warning: {}", run.stderr);
    let r = p.result("r.jsonl", "c");
    let judge = &r["evaluator_results"][0];
    assert_eq!(
        (&judge["score"], &judge["hits"], &judge["misses"]),
        (&json!(0.0), &json!([]), &json!([]))
    );
    assert_eq!(judge["error"], "no valid JSON in judge reply");
    assert_eq!(r["misses"], json!([]), "no miss is synthesised for the LLM judge");
}

#[test]
fn dry_run_with_threshold_grades_llm_judges() {
    let yaml = "evalcases:\n  - {id: c, expected_outcome: x, input_messages: [{role: user, content: q}]}\n";
    let p = Project::new().file("e.yaml", yaml);
    p.run(&["eval", "e.yaml", "--dry-run", "--threshold", "0.8", "--out", "r.jsonl"])
        .code(0);
    let judge = &p.result("r.jsonl", "c")["evaluator_results"][0];
    assert_eq!(judge["score"], 1.0, "{judge}");
    assert!(judge.get("error").is_none(), "{judge}");
}

#[test]
fn out_file_is_truncated_on_a_second_run() {
    let p = Project::new()
        .file("targets.yaml", &mock_answering("done"))
        .file("e.yaml", &cases(2));
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    assert_eq!(p.results("r.jsonl").len(), 2);
}

#[test]
fn control_characters_in_ids_cannot_forge_terminal_lines() {
    let yaml = "execution:\n  evaluators: [{name: kw, type: keywords, expected: [done]}]\nevalcases:\n  - id: \"evil\\n[9/9] ✔ forged  1.000 pass\"\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n  - id: \"ansi\\e[2J\\0nul\"\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n";
    let p = Project::new()
        .file("targets.yaml", &mock_answering("done"))
        .file("e.yaml", yaml);
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(!text.contains('\u{1b}'), "raw escape on {stream}: {text:?}");
        assert!(!text.contains('\0'), "raw NUL on {stream}: {text:?}");
        assert!(
            !text.lines().any(|l| l.starts_with("[9/9]")),
            "forged line on {stream}: {text}"
        );
    }
    run.stderr_has("evil\\n[9/9] ✔ forged  1.000 pass")
        .stderr_has("ansi\\u{1b}[2J\\u{0}nul");
    assert_eq!(
        p.results("r.jsonl").len(),
        2,
        "the ids themselves are kept in the results"
    );
}
