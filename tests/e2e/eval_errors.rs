//! Bad input gets a clear message and the documented exit code; a bad case never stops others.

use agentv_testkit::{Project, mock_targets};

const GOOD_CASE: &str =
    "  - id: good\n    expected_outcome: says hi\n    input_messages: [{role: user, content: hi}]\n";

#[test]
fn malformed_yaml_reports_file_line_column_and_exits_2() {
    let p = Project::new().file("targets.yaml", &mock_targets("hi")).file(
        "evals/bad.yaml",
        "evalcases:\n  - id: a\n    expected_outcome: [unclosed\n",
    );
    p.run(&["eval", "evals/bad.yaml"])
        .code(2)
        .stderr_has("evals/bad.yaml:3:23: error: invalid YAML: unclosed bracket")
        .stderr_has("error: nothing to run: no valid eval cases (0 skipped because of errors)");
}

#[test]
fn case_missing_id_is_skipped_and_the_rest_run() {
    let yaml =
        format!("evalcases:\n  - expected_outcome: x\n    input_messages: [{{role: user, content: q}}]\n{GOOD_CASE}");
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file("e.yaml", &yaml);
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    // A skipped case makes the run incomplete (`docs/architecture.md#exit-codes`): exit 3, even
    // with every other case green.
    run.code(3)
        .stderr_has("e.yaml:2:5: error: eval case is missing the required key `id`\n  help: add `id: ...` to it")
        .stderr_has("1 case(s) were skipped because of errors in the eval files")
        .stderr_has("Run incomplete: 1 case(s) were skipped as invalid");
    // The skipped case is recorded too, named by where it is (it has no id).
    let records = p.results("r.jsonl");
    let statuses: Vec<(&str, &str)> = records
        .iter()
        .map(|r| {
            (
                r["eval_id"].as_str().unwrap_or(""),
                r["execution_status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(statuses, [("e.yaml:2", "invalid"), ("good", "ok")]);
    p.run(&["eval", "e.yaml", "--out", "r2.jsonl", "--threshold", "0.5"])
        .code(3)
        .stderr_has("Run incomplete: 1 case(s) were skipped as invalid");
}

/// A file that cannot be read at all is not a clean run, even when the other files pass.
#[test]
fn unreadable_eval_file_beside_good_ones_makes_the_run_incomplete() {
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file("good.yaml", &format!("evalcases:\n{GOOD_CASE}"))
        .bytes("bad.yaml", b"evalcases:\n  - id: \xff\xfe\n");
    p.run(&["eval", "good.yaml", "bad.yaml", "--out", "r.jsonl"])
        .code(3)
        .stderr_has("bad.yaml:2:9: error: the eval file is not UTF-8 text")
        .stderr_has("Run incomplete: 1 eval file(s) could not be read");
    assert_eq!(p.results("r.jsonl").len(), 1, "the good file still ran");
}

#[test]
fn unknown_keys_warn_with_position() {
    let yaml = "evalcases:\n  - id: a\n    expected_outcom: typo\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n";
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file("e.yaml", yaml);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(0)
        .stderr_has("e.yaml:3:5: warning: unknown key `expected_outcom` in an eval case; it is ignored");
}

#[test]
fn unknown_target_lists_available_names_and_exits_2() {
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file("e.yaml", &format!("evalcases:\n{GOOD_CASE}"));
    p.run(&["eval", "e.yaml", "--target", "nope"])
        .code(2)
        .stderr_has("error: unknown target `nope`; available targets: default, judge");
}

#[test]
fn missing_env_vars_are_listed_together_before_any_call() {
    let targets = "targets:\n  - name: default\n    provider: cli\n    judge_target: judge\n    command_template: ${{ AGENTV_E2E_CMD }}\n  - name: judge\n    provider: mock\n    response: ${{ AGENTV_E2E_JUDGE }}\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("e.yaml", &format!("evalcases:\n{GOOD_CASE}"));
    p.run(&["eval", "e.yaml"]).code(2).stderr_has(
        "error: missing environment variables:\n  AGENTV_E2E_CMD (target `default`, setting `command_template`)\n  AGENTV_E2E_JUDGE (target `judge`, setting `response`)",
    );
}

#[test]
fn dotenv_next_to_the_eval_file_supplies_variables() {
    let targets = "targets:\n  - name: default\n    provider: mock\n    response: ${{ AGENTV_E2E_ANSWER }}\n";
    let yaml = format!(
        "execution:\n  evaluators: [{{name: kw, type: keywords, expected: [from-dotenv]}}]\nevalcases:\n{GOOD_CASE}"
    );
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("evals/.env", "AGENTV_E2E_ANSWER=answer-from-dotenv\n")
        .file("evals/e.yaml", &yaml);
    p.run(&["eval", "evals/e.yaml", "--out", "r.jsonl"]).code(0);
    let record = p.result("r.jsonl", "good");
    assert_eq!(record["score"], 1.0);
    let line = std::fs::read_to_string(p.path().join("r.jsonl")).expect("results");
    assert!(
        !line.contains("answer-from-dotenv"),
        "resolved secrets never appear in results: {line}"
    );
}

#[test]
fn unsupported_placeholder_is_rejected_at_load() {
    let targets = "targets:\n  - name: default\n    provider: cli\n    command_template: agent {PROMPT} --model {MODEL} > {OUTPUT_FILE}\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("e.yaml", &format!("evalcases:\n{GOOD_CASE}"));
    p.run(&["eval", "e.yaml"])
        .code(2)
        .stderr_has("targets.yaml:4:23: error: unsupported placeholder {MODEL} in `command_template`");
}

fn judge_suite(script: &str, extra: &str) -> Project {
    let yaml = format!(
        "execution:\n  evaluators:\n    - name: j\n      type: code_judge\n      script: [sh, judge.sh]\n{extra}evalcases:\n{GOOD_CASE}  - id: other\n    expected_outcome: x\n    input_messages: [{{role: user, content: q}}]\n"
    );
    Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file("judge.sh", script)
        .file("e.yaml", &yaml)
}

#[test]
fn judge_that_crashes_scores_zero_with_error() {
    let p = judge_suite("cat > /dev/null; echo 'boom: cannot grade' >&2; exit 3\n", "");
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(3)
        .stdout_has("Total eval cases: 2");
    let r = p.result("r.jsonl", "good");
    let ev = &r["evaluator_results"][0];
    assert_eq!(ev["score"], 0.0);
    assert_eq!(ev["error"], "code judge exited with code 3: boom: cannot grade");
    assert_eq!(
        ev["misses"][0],
        "Evaluator 'j' failed: code judge exited with code 3: boom: cannot grade"
    );
    assert!(r.get("error").is_none(), "the target answered; only the grader failed");
    assert_eq!(r["execution_status"], "grader_error");
}

#[test]
fn judge_that_prints_garbage_scores_zero_with_error() {
    let p = judge_suite("cat > /dev/null; echo 'score: high'\n", "");
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(3);
    let ev = &p.result("r.jsonl", "good")["evaluator_results"][0];
    assert_eq!(
        ev["error"],
        "code judge printed no valid JSON object on stdout (got: \"score: high\")"
    );
    assert_eq!(
        ev["misses"],
        serde_json::json!([]),
        "unparsable output: empty hits and misses (spec)"
    );
}

#[test]
fn judge_that_hangs_is_killed_with_its_children() {
    let script = "cat > /dev/null; sleep 300 & echo $! >> pids; sleep 300\n";
    let p = judge_suite(script, "      timeout_seconds: 1\n");
    // The kit's deadline fails the test if the judge is never killed.
    p.run(&["eval", "e.yaml", "--out", "r.jsonl", "--workers", "2"]).code(3);
    let ev = &p.result("r.jsonl", "good")["evaluator_results"][0];
    assert_eq!(ev["error"], "code judge timed out after 1s");
    let pids = std::fs::read_to_string(p.path().join("pids")).expect("children recorded");
    for pid in pids.lines() {
        if let Err(e) = agentv_testkit::process::gone_soon(pid) {
            panic!("the judge's child survived: {e}");
        }
    }
}

#[test]
fn judge_details_must_be_an_object() {
    let p = judge_suite("cat > /dev/null; echo '{\"score\": 1, \"details\": \"text\"}'\n", "");
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(3);
    let ev = &p.result("r.jsonl", "good")["evaluator_results"][0];
    assert_eq!(ev["score"], 0.0);
    assert!(
        ev["error"]
            .as_str()
            .expect("error")
            .starts_with("code judge output: details must be a JSON object, got a string")
    );
}

#[test]
fn judge_receives_the_payload_and_config() {
    let script = "cat > payload.json; echo '{\"score\": 0.75, \"hits\": [\"ok\"], \"details\": {\"n\": 1}}'\n";
    let p = judge_suite(script, "      threshold: 3\n      nestedKey: {keepCase: true}\n");
    p.run(&["eval", "e.yaml", "--eval-id", "good", "--out", "r.jsonl"])
        .code(0);
    let payload: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join("payload.json")).expect("payload")).expect("json");
    for key in [
        "eval_id",
        "question",
        "expected_outcome",
        "expected_messages",
        "reference_answer",
        "candidate_answer",
        "output_messages",
        "guideline_files",
        "input_files",
        "input_messages",
        "trace_summary",
        "candidate_trace",
        "execution_metrics",
        "config",
    ] {
        assert!(payload.get(key).is_some(), "payload lacks {key}: {payload}");
    }
    assert_eq!(payload["candidate_answer"], "hi");
    assert_eq!(
        payload["config"],
        serde_json::json!({"threshold": 3, "nestedKey": {"keepCase": true}})
    );
    let ev = &p.result("r.jsonl", "good")["evaluator_results"][0];
    assert_eq!(
        (ev["score"].as_f64(), &ev["details"]["n"]),
        (Some(0.75), &serde_json::json!(1))
    );
    assert_eq!(p.results("r.jsonl").len(), 1, "--eval-id filters cases");
}

#[test]
fn provider_failure_is_an_error_record_and_others_continue() {
    let targets = "targets:\n  - name: default\n    provider: cli\n    command_template: if [ {EVAL_ID} = bad ]; then echo 'agent crashed' >&2; exit 4; fi; echo fine > {OUTPUT_FILE}\n";
    let yaml = format!(
        "evalcases:\n{GOOD_CASE}  - id: bad\n    expected_outcome: x\n    input_messages: [{{role: user, content: q}}]\nexecution:\n  evaluators: [{{name: kw, type: keywords, expected: [fine]}}]\n"
    );
    let p = Project::new().file("targets.yaml", targets).file("e.yaml", &yaml);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(3)
        .stdout_has("  ✘ bad  execution error\n      error: command exited with code 4: agent crashed");
    let bad = p.result("r.jsonl", "bad");
    assert_eq!(bad["error"], "command exited with code 4: agent crashed");
    assert_eq!(bad["execution_status"], "execution_error");
    assert_eq!(p.result("r.jsonl", "good")["execution_status"], "ok");
    assert_eq!(bad["score"], 0.0);
    assert_eq!(p.result("r.jsonl", "good")["score"], 1.0);
}

#[test]
fn provider_timeout_is_retried_and_the_attempt_recorded() {
    let targets = "targets:\n  - name: default\n    provider: cli\n    command_template: if [ {ATTEMPT} = 1 ]; then sleep 5; fi; echo done > {OUTPUT_FILE}\n";
    let yaml =
        format!("execution:\n  evaluators: [{{name: kw, type: keywords, expected: [done]}}]\nevalcases:\n{GOOD_CASE}");
    let p = Project::new().file("targets.yaml", targets).file("e.yaml", &yaml);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl", "--timeout", "0.5"])
        .code(0);
    let r = p.result("r.jsonl", "good");
    assert_eq!(
        (r["attempt"].as_u64(), r["score"].as_f64()),
        (Some(2), Some(1.0)),
        "{r}"
    );
    p.run(&[
        "eval",
        "e.yaml",
        "--out",
        "r2.jsonl",
        "--timeout",
        "0.5",
        "--max-retries",
        "0",
    ])
    .code(3);
    assert_eq!(p.result("r2.jsonl", "good")["error"], "timed out after 0.5s");
}

#[test]
fn jsonl_dataset_with_sidecar_runs() {
    let p = Project::new()
        .file("targets.yaml", &mock_targets("The answer is 4."))
        .file(
            "data/set.jsonl",
            "{\"id\": \"add\", \"expected_outcome\": \"says 4\", \"input\": \"2+2?\"}\n\n{\"id\": \"bad\"\n",
        )
        .file(
            "data/set.yaml",
            "dataset: arithmetic\nexecution:\n  evaluators: [{name: kw, type: keywords, expected: ['4']}]\n",
        );
    p.run(&["eval", "data", "--out", "r.jsonl"])
        .code(3)
        .stderr_has("data/set.jsonl:3:")
        .stderr_has("error: invalid JSON:");
    let r = p.result("r.jsonl", "add");
    assert_eq!(
        (r["dataset"].as_str(), r["score"].as_f64()),
        (Some("arithmetic"), Some(1.0))
    );
}

#[test]
fn dry_run_needs_no_targets_file() {
    let p = Project::new().file("e.yaml", &format!("evalcases:\n{GOOD_CASE}"));
    p.run(&["eval", "e.yaml", "--dry-run", "--out", "r.jsonl"])
        .code(0)
        .stderr_has("Using target: default-dry-run [provider=mock, judge default-dry-run-judge]");
    let r = p.result("r.jsonl", "good");
    assert_eq!(r["candidate_answer"], "{\"answer\":\"Mock dry-run response\"}");
    let judge = &r["evaluator_results"][0];
    assert!(
        judge.get("error").is_none(),
        "the dry-run judge answers judge JSON: {judge}"
    );
    assert_eq!(judge["evaluator_provider_request"]["target"], "default-dry-run-judge");
    assert_eq!(r["execution_status"], "ok");
}

#[test]
fn missing_file_segment_is_an_error_for_its_case() {
    let yaml = "evalcases:\n  - id: a\n    expected_outcome: x\n    input_messages:\n      - role: user\n        content: [{type: text, value: see}, {type: file, value: nope.md}]\n";
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file("evals/e.yaml", yaml);
    p.run(&["eval", "evals/e.yaml", "--out", "r.jsonl"])
        .code(2)
        .stderr_has("evals/e.yaml:6:65: error: file `nope.md` not found; the case is not run without it")
        .stderr_has("help: tried: ")
        .stderr_has("nothing to run: no valid eval cases (1 skipped because of errors)");
    p.run(&["validate", "evals/e.yaml"])
        .code(1)
        .stderr_has("evals/e.yaml:6:65: error: file `nope.md` not found");
}

#[test]
fn no_matching_files_or_ids_exit_2() {
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file("e.yaml", &format!("evalcases:\n{GOOD_CASE}"));
    p.run(&["eval", "evals/*.yaml"])
        .code(2)
        .stderr_has("error: pattern `evals/*.yaml` matched no eval files");
    p.run(&["eval", "e.yaml", "--eval-id", "zzz*"])
        .code(2)
        .stderr_has("error: no eval case matches --eval-id zzz*");
}

#[test]
fn llm_judge_custom_prompt_file_renders_variables_and_trace_section() {
    let answer = r#"{"output_messages": [{"role": "assistant", "content": "done", "tool_calls": [{"tool": "searchDocs", "input": {"q": "x"}}]}]}"#;
    let targets = format!(
        "targets:\n  - name: default\n    provider: mock\n    judge_target: judge\n    response: '{answer}'\n  - name: judge\n    provider: mock\n    response: '{{\"score\": 0.5}}'\n"
    );
    let yaml = "execution:\n  evaluators:\n    - name: custom\n      type: llm_judge\n      prompt: judges/grade.md\n      include_trace_summary: true\n    - name: inline\n      type: llm_judge\n      prompt: 'Q={{question}} A={{ candidate_answer }} ?={{ nope }}'\nevalcases:\n  - {id: c, expected_outcome: uses search, input_messages: [{role: user, content: find x}]}\n";
    let template = "Outcome: {{ expected_outcome }}\nAnswer: {{ candidate_answer }}\nCalls:\n{{ output_messages }}\n";
    let p = Project::new()
        .file("targets.yaml", &targets)
        .file("evals/judges/grade.md", template)
        .file("evals/e.yaml", yaml);
    p.run(&["eval", "evals/e.yaml", "--out", "r.jsonl"])
        .code(0)
        .stderr_has("warning: unknown variable `{{ nope }}` in the llm_judge prompt; it is left as written");
    let r = p.result("r.jsonl", "c");
    let custom = r["evaluator_results"][0]["evaluator_provider_request"]["user_prompt"]
        .as_str()
        .expect("prompt")
        .to_owned();
    assert!(
        custom.starts_with("Outcome: uses search\nAnswer: done\nCalls:\n["),
        "{custom}"
    );
    assert!(custom.contains("\"tool\": \"searchDocs\""), "{custom}");
    assert!(
        custom.contains("[[ ## trace_summary ## ]]\n{\n  \"event_count\": 1"),
        "{custom}"
    );
    let inline = r["evaluator_results"][1]["evaluator_provider_request"]["user_prompt"]
        .as_str()
        .expect("prompt")
        .to_owned();
    assert_eq!(inline, "Q=find x A=done ?={{ nope }}");
    assert_eq!(r["score"], 0.5);
}

#[test]
fn an_empty_path_argument_is_a_usage_error_not_the_whole_directory() {
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file("e.yaml", &format!("evalcases:\n{GOOD_CASE}"));
    for command in ["eval", "validate"] {
        let run = p.run(&[command, ""]);
        run.code(2)
            .stderr_has("an empty path names no file: pass `.` for the current directory");
    }
    assert!(!p.path().join(".agentv/results").exists(), "nothing ran");
}

#[test]
fn a_long_error_is_shortened_on_the_progress_line_and_kept_whole_in_the_results() {
    let targets = "targets:\n  - name: default\n    provider: cli\n    command_template: \"printf 'e%.0s' $(seq 1 1500) >&2; exit 4\"\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("e.yaml", &format!("evalcases:\n{GOOD_CASE}"));
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    run.code(3);
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("ERROR"))
        .unwrap_or_else(|| panic!("no ERROR line in {}", run.stderr));
    assert!(line.chars().count() < 260, "{line}");
    assert!(line.contains("eee…"), "{line}");
    let error = p.result("r.jsonl", "good")["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(error.matches('e').count() > 1000, "{error}");
}
