//! Inputs that used to be silently wrong, or crashed a loader: each is now read correctly or
//! reported with file:line:column, and the rest of the run goes on.

use agentv_testkit::{Project, mock_targets};

const CASE: &str = "expected_outcome: x\n    input_messages: [{role: user, content: q}]\n";

#[test]
fn validate_reports_an_out_of_range_judge_timeout_instead_of_panicking() {
    let yaml = "evalcases:\n  - id: a\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    evaluators:\n      - {type: code_judge, script: [echo], timeout_seconds: 1e20}\n";
    let p = Project::new().file("e.yaml", yaml);
    p.run(&["validate", "e.yaml"]).code(1).stderr_has(
        "e.yaml:6:61: error: `timeout_seconds` must be a number of seconds from 0.001 to 86400, found 1e+20",
    );
}

#[test]
fn dotenv_values_with_spaces_reach_the_target() {
    let targets = "targets:\n  - name: default\n    provider: mock\n    response: ${{ AGENTV_E2E_SPACED }}\n";
    let yaml = "execution:\n  evaluators: [{name: kw, type: keywords, expected: ['two words']}]\nevalcases:\n  - id: a\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file(
            ".env",
            "\u{feff}# comment\r\nexport AGENTV_E2E_SPACED=answer in two words  # trailing\r\n",
        )
        .file("e.yaml", yaml);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    assert_eq!(p.result("r.jsonl", "a")["score"], 1.0);
}

#[test]
fn dotenv_warning_is_printed_before_the_missing_variable_error() {
    let targets = "targets:\n  - name: default\n    provider: mock\n    response: ${{ AGENTV_E2E_BROKEN }}\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file(".env", "AGENTV_E2E_BROKEN=\"sk-unclosed-secret\n")
        .file("e.yaml", &format!("evalcases:\n  - id: a\n    {CASE}"));
    let run = p.run(&["eval", "e.yaml"]);
    run.code(2)
        .stderr_has(".env:1:19: warning: the value of `AGENTV_E2E_BROKEN` opens a \" quote that is never closed")
        .stderr_has("missing environment variables:\n  AGENTV_E2E_BROKEN");
    let warning = run.stderr.find("never closed").expect("warning");
    let error = run.stderr.find("missing environment variables").expect("error");
    assert!(warning < error, "the reason comes first:\n{}", run.stderr);
    assert!(!run.stderr.contains("sk-unclosed"), "the value is never shown");
}

#[test]
fn jsonl_line_with_invalid_utf8_is_reported_and_the_rest_run() {
    let p = Project::new().file("targets.yaml", &mock_targets("four"));
    let mut data = b"\xEF\xBB\xBF{\"id\": \"one\", \"expected_outcome\": \"x\", \"input\": \"q\"}\r\n".to_vec();
    data.extend(b"{\"id\": \"two\", \"expected_outcome\": \"\xff\", \"input\": \"q\"}\r\n");
    data.extend(b"{\"id\": \"three\", \"expected_outcome\": \"x\", \"input\": \"q\"}\r\n");
    std::fs::write(p.path().join("d.jsonl"), data).expect("write");
    let run = p.run(&["eval", "d.jsonl", "--out", "r.jsonl"]);
    run.stderr_has("d.jsonl:2:36: error: this line is not UTF-8 text");
    let ids: Vec<String> = p
        .results("r.jsonl")
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["eval_id"].as_str().unwrap_or_default(),
                r["execution_status"].as_str().unwrap_or_default()
            )
        })
        .collect();
    // The line is recorded as an invalid case, named by where it is: its id cannot be read.
    assert_eq!(ids, ["d.jsonl:2 invalid", "one ok", "three ok"]);
}

#[test]
fn broken_sidecar_is_an_error_for_its_dataset() {
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file(
            "d.jsonl",
            "{\"id\": \"a\", \"expected_outcome\": \"x\", \"input\": \"q\"}\n",
        )
        .file("d.yaml", "execution:\n  target: [unclosed\n");
    p.run(&["eval", "d.jsonl"])
        .code(2)
        .stderr_has("d.yaml:2:11: error: invalid YAML:")
        .stderr_has("d.jsonl: error: the dataset is not run: its sidecar d.yaml has errors")
        .stderr_has("nothing to run");
    p.run(&["validate", "d.jsonl"]).code(1).stderr_has("✘ d.jsonl");
}

#[test]
fn duplicate_case_ids_are_reported_with_both_lines() {
    let yaml = format!("evalcases:\n  - id: same\n    {CASE}  - id: same\n    {CASE}");
    let p = Project::new().file("e.yaml", &yaml);
    p.run(&["validate", "e.yaml"])
        .code(1)
        .stderr_has("e.yaml:5:9: error: duplicate case id `same`: the case at line 2 already uses it");
}

#[test]
fn ids_that_differ_only_in_unsafe_characters_keep_separate_prompt_dumps() {
    let long = "x".repeat(10_000);
    let mut yaml = String::from("evalcases:\n");
    for id in ["a/b", "a_b", "a.b", &long] {
        yaml.push_str(&format!("  - id: '{id}'\n    {CASE}"));
    }
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file("e.yaml", &yaml);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl", "--dump-prompts"]).code(0);
    let names: Vec<String> = std::fs::read_dir(p.path().join(".agentv/prompts"))
        .expect("dumps")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.contains("judge"))
        .collect();
    assert_eq!(names.len(), 4, "one dump per case: {names:?}");
    assert!(names.iter().all(|n| n.len() <= 100), "{names:?}");
    assert!(names.contains(&"a_b-1.json".to_owned()), "{names:?}");
}

#[test]
fn agent_case_with_a_very_long_id_runs() {
    let targets = "targets:\n  - name: default\n    provider: claude-code\n    executable: bin/fake-claude.sh\n";
    let yaml = format!(
        "execution:\n  evaluators: [{{name: kw, type: keywords, expected: ['']}}]\nevalcases:\n  - id: '{}'\n    {CASE}",
        "y".repeat(10_000)
    );
    let p = Project::new()
        .file("targets.yaml", targets)
        .file(
            "bin/fake-claude.sh",
            "#!/bin/sh\ncat > /dev/null\ncat \"$FAKE_TRANSCRIPT\"\n",
        )
        .file("e.yaml", &yaml);
    let transcript = agentv_testkit::agents::transcript("claude-stream-text.jsonl");
    p.output(
        p.command(&["eval", "e.yaml", "--out", "r.jsonl"])
            .env("FAKE_TRANSCRIPT", transcript),
    )
    .code(0);
    let record = &p.results("r.jsonl")[0];
    assert!(record.get("error").is_none(), "{record}");
    let logs: Vec<String> = std::fs::read_dir(p.path().join(".agentv/logs/claude-code"))
        .expect("stream log")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert!(logs[0].len() < 120, "{logs:?}");
}

#[test]
fn readme_jsonl_short_form_runs_without_expected_outcome() {
    let p = Project::new()
        .file("targets.yaml", &mock_targets("The answer is 4."))
        .file(
            "d.jsonl",
            "{\"id\": \"add\", \"input\": \"2+2?\", \"expected_output\": \"4\"}\n{\"id\": \"judged\", \"input\": \"2+2?\"}\n",
        )
        .file("d.yaml", "execution:\n  evaluators: [{name: kw, type: keywords, expected: ['4']}]\n");
    p.run(&["eval", "d.jsonl", "--out", "r.jsonl"]);
    assert_eq!(p.result("r.jsonl", "add")["score"], 1.0);
    let judged = "{\"id\": \"judged\", \"input\": \"2+2?\"}\n";
    let q = Project::new().file("d.jsonl", judged);
    q.run(&["validate", "d.jsonl"])
        .code(1)
        .stderr_has("d.jsonl:1:1: error: eval case is missing `expected_outcome`, which the llm_judge evaluator needs");
}

#[test]
fn yaml_problems_are_worded_for_users() {
    let yaml = format!("evalcases:\n  - id: a\n    id: b\n    {CASE}");
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file("dup.yaml", &yaml)
        .file("multi.yaml", &format!("evalcases:\n  - id: a\n    {CASE}---\nevalcases: []\n"))
        .file(
            "huge.yaml",
            &format!("evalcases:\n  - id: a\n    {CASE}    evaluators: [{{type: keywords, expected: [k], weight: 1e400}}]\n  - id: b\n    {CASE}"),
        );
    let run = p.run(&["validate", "dup.yaml", "multi.yaml", "huge.yaml"]);
    run.code(1)
        .stderr_has("dup.yaml:3:5: error: invalid YAML: key `id` appears twice (first at line 2)")
        .stderr_has(
            "multi.yaml:6:1: error: invalid YAML: the file holds several YAML documents; it must hold exactly one",
        )
        .stderr_has("huge.yaml:5:58: error: `weight` must be a number ≥ 0, found a number out of range")
        .stderr_has("✘ huge.yaml (1 error(s))");
    for leak in ["Policy", "Options", "from_str", "serde"] {
        assert!(!run.stderr.contains(leak), "leaks {leak}: {}", run.stderr);
    }
}
