//! Target settings as `eval` and `validate` see them: bad values are diagnostics, never
//! panics, and `${{ VAR }}` works at any depth.

use agentv_testkit::Project;

const SUITE: &str = "evalcases:\n  - id: fine\n    expected_outcome: Names Paris.\n    input_messages: [{role: user, content: Capital of France?}]\n    evaluators:\n      - {name: k, type: keywords, expected: [Paris]}\n";

#[test]
fn huge_durations_stop_eval_and_validate_with_a_diagnostic_not_a_panic() {
    let cases = [
        (
            "provider: mock\n    delay_ms: 7e30",
            "targets.yaml:4:15: error: `delay_ms` must be a number of milliseconds from 0 to 604800000 (7 days), found 7e+30",
        ),
        (
            "provider: cli\n    command_template: echo {OUTPUT_FILE}\n    healthcheck: {type: command, command_template: 'true', timeout_seconds: 18446744073709551615}",
            "targets.yaml:5:77: error: `healthcheck.timeout_seconds` must be a number of seconds greater than 0 and at most 604800 (7 days)",
        ),
    ];
    for (settings, want) in cases {
        let p = Project::new().file("e.yaml", SUITE).file(
            "targets.yaml",
            &format!("targets:\n  - name: default\n    {settings}\n"),
        );
        let eval = p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
        assert!(!eval.stderr.contains("panicked"), "{}", eval.stderr);
        let validate = p.run(&["validate", "."]);
        assert!(!validate.stderr.contains("panicked"), "{}", validate.stderr);
        eval.code(2).stderr_has(want);
        validate.code(1).stderr_has(want);
    }
}

#[test]
fn variables_in_mock_responses_are_substituted() {
    let p = Project::new()
        .file("e.yaml", SUITE)
        .file(".env", "AGENTV_TEST_MOCK_ANSWER=\"Paris is the capital of France.\"\n")
        .file(
            "targets.yaml",
            "targets:\n  - name: default\n    provider: mock\n    responses:\n      fine: ${{ AGENTV_TEST_MOCK_ANSWER }}\n",
        );
    p.run(&["validate", "."]).code(0);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    let record = p.result("r.jsonl", "fine");
    assert_eq!(
        record["score"], 1.0,
        "the keyword judge saw the substituted answer: {record}"
    );
}

#[test]
fn healthcheck_cwd_from_a_variable_is_where_the_check_runs() {
    let p = Project::new()
        .file("e.yaml", SUITE)
        .file("checks/ready", "")
        .file(
            "targets.yaml",
            "targets:\n  - name: default\n    provider: cli\n    command_template: echo Paris > {OUTPUT_FILE}\n    healthcheck:\n      type: command\n      command_template: test -f ready\n      cwd: ${{ AGENTV_TEST_CHECK_DIR }}\n",
        );
    let dir = p.path().join("checks").display().to_string();
    p.output(
        p.command(&["eval", "e.yaml", "--out", "r.jsonl"])
            .env("AGENTV_TEST_CHECK_DIR", &dir),
    )
    .code(0);
    assert_eq!(p.result("r.jsonl", "fine")["score"], 1.0);
}

#[test]
fn target_default_selects_the_target_named_default() {
    let targets = "targets:\n  - name: default\n    provider: mock\n    response: Paris\n  - name: needsenv\n    provider: mock\n    response: ${{ AGENTV_TEST_NEVER_SET }}\n";
    let suite = format!("execution:\n  target: needsenv\n{SUITE}");
    let p = Project::new().file("e.yaml", &suite).file("targets.yaml", targets);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl", "--target", "default"])
        .code(0);
    let record = p.result("r.jsonl", "fine");
    assert_eq!(
        (record["target"].as_str(), record["score"].as_f64()),
        (Some("default"), Some(1.0))
    );
    p.run(&["validate", "e.yaml", "--target", "default"]).code(0);
    // Without a target named `default`, `--target default` keeps the eval file's.
    let only = "targets:\n  - name: other\n    provider: mock\n    response: Paris\n";
    let p = Project::new()
        .file("e.yaml", &format!("execution:\n  target: other\n{SUITE}"))
        .file("targets.yaml", only);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl", "--target", "default"])
        .code(0);
    assert_eq!(p.result("r.jsonl", "fine")["target"], "other");
}

/// A directory tree outside any repository: `outer/` holds a targets file and a `.env`,
/// `outer/inner/` the eval file.
fn outside_a_repository() -> tempfile::TempDir {
    let outer = tempfile::tempdir().expect("tmp");
    let root = outer.path();
    std::fs::create_dir_all(root.join("inner")).expect("dirs");
    std::fs::write(root.join("inner/e.yaml"), SUITE).expect("suite");
    std::fs::write(
        root.join("targets.yaml"),
        "targets:\n  - name: default\n    provider: mock\n    response: ${{ AGENTV_TEST_OUTER }}\n",
    )
    .expect("targets");
    std::fs::write(root.join(".env"), "AGENTV_TEST_OUTER=Paris\n").expect(".env");
    outer
}

#[test]
fn discovery_outside_a_repository_finds_targets_and_env_in_any_ancestor() {
    let outer = outside_a_repository();
    // The working directory is another project (a repository of its own) without targets.
    let p = Project::new();
    let eval = outer.path().join("inner/e.yaml").display().to_string();
    p.run(&["eval", &eval, "--out", "r.jsonl"]).code(0);
    assert_eq!(p.result("r.jsonl", "fine")["score"], 1.0, "the outer .env was read too");
    // Inside a repository, the search goes up to its root, and no further.
    std::fs::create_dir_all(outer.path().join("inner/.git")).expect("repo");
    p.run(&["eval", &eval, "--out", "r.jsonl"])
        .code(2)
        .stderr_has("no targets file found");
}

#[test]
fn discovery_lists_the_directories_tried_and_why_it_stopped() {
    let p = Project::new().file("evals/sub/e.yaml", SUITE);
    let root = p.path().display().to_string();
    let run = p.run(&["eval", "evals/sub/e.yaml", "--out", "r.jsonl"]);
    run.code(2).stderr_has(&format!(
        "looked in {root}/evals/sub, {root}/evals, {root} for targets.yaml, targets.yml, .agentv/targets.yaml, .agentv/targets.yml; the search stops at the repository root {root} (it holds .git)"
    ));
}

#[test]
fn discovery_reads_the_env_file_beside_a_targets_file_given_with_targets() {
    let p = Project::new()
        .file("e.yaml", SUITE)
        .file(
            "conf/ci.targets.yaml",
            "targets:\n  - name: default\n    provider: mock\n    response: ${{ AGENTV_TEST_BESIDE }}\n",
        )
        .file("conf/.env", "AGENTV_TEST_BESIDE=Paris\n");
    p.run(&[
        "eval",
        "e.yaml",
        "--targets",
        "conf/ci.targets.yaml",
        "--out",
        "r.jsonl",
    ])
    .code(0);
    assert_eq!(p.result("r.jsonl", "fine")["score"], 1.0);
}
