//! `agentv validate` reports every problem in every file and runs nothing.

use agentv_testkit::Project;

#[test]
fn reports_every_problem_in_every_file() {
    let p = Project::new()
        .file(
            "evals/a.yaml",
            "evalcases:\n  - id: one\n    input_messages: [{role: user, content: q}]\n  - id: two\n    expected_outcome: x\n    input_messages: [{role: robot, content: q}]\n    evaluators:\n      - {name: t, type: tool_trajectory, mode: sideways}\n",
        )
        .file("evals/b.yaml", "evalcases:\n  - id: fine\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n")
        .file(
            "targets.yaml",
            "targets:\n  - name: c\n    provider: cli\n    command_template: run {NOPE}\n  - {name: default, provider: mock}\n",
        );
    let run = p.run(&["validate", "evals", "targets.yaml"]);
    run.code(1)
        .stderr_has(
            "evals/a.yaml:2:5: error: eval case is missing `expected_outcome`, which the llm_judge evaluator needs",
        )
        .stderr_has("evals/a.yaml:6:29: error: unknown message role `robot`")
        .stderr_has("evals/a.yaml:8:48: error: unknown tool_trajectory mode `sideways`")
        .stderr_has("✘ evals/a.yaml (3 error(s))")
        .stderr_has("✔ evals/b.yaml")
        .stderr_has("targets.yaml:4:23: error: unsupported placeholder {NOPE} in `command_template`")
        .stderr_has("✘ targets.yaml (1 error(s))")
        .stderr_has("3 file(s) checked, 2 invalid");
}

#[test]
fn valid_files_exit_0_and_missing_paths_exit_2() {
    let p = Project::new()
        .file(
            "e.yaml",
            "evalcases:\n  - id: fine\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n",
        )
        .file("targets.yaml", "targets:\n  - {name: default, provider: mock}\n");
    p.run(&["validate", "e.yaml"])
        .code(0)
        .stderr_has("1 file(s) checked, 0 invalid");
    p.run(&["validate", "missing.yaml"])
        .code(2)
        .stderr_has("error: no such file: missing.yaml");
}

#[test]
fn help_shows_examples() {
    let p = Project::new();
    p.run(&["eval", "--help"])
        .code(0)
        .stdout_has("Examples:")
        .stdout_has("--eval-id");
    p.run(&["validate", "--help"]).code(0).stdout_has("Examples:");
}

/// A suite every test below can pair with a targets file.
const SUITE: &str = "evalcases:\n  - id: fine\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    evaluators: [{name: k, type: keywords, expected: [Mock]}]\n";

/// `validate` checks files, not the machine: a missing targets file is a warning by default (a
/// CI job may check suites without the targets it runs them with), an error under `--strict`.
#[test]
fn validate_warns_about_the_machine_and_fails_on_it_under_strict() {
    let p = Project::new().file("evals/e.yaml", SUITE);
    p.run(&["validate", "evals/e.yaml"])
        .code(0)
        .stderr_has("evals/e.yaml: warning: no targets file found; looked in ")
        .stderr_has("✔ evals/e.yaml");
    p.run(&["validate", "--strict", "evals/e.yaml"])
        .code(2)
        .stderr_has("evals/e.yaml: error: no targets file found; looked in ")
        .stderr_has("✘ evals/e.yaml (1 error(s))");
    p.run(&["eval", "evals/e.yaml"])
        .code(2)
        .stderr_has("error: no targets file found");
}

#[test]
fn unknown_provider_fails_the_suites_that_use_it_and_only_warns_in_the_targets_file() {
    let p = Project::new()
        .file("a/e.yaml", "execution: {target: odd}\nevalcases:\n  - id: fine\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n")
        .file("b/e.yaml", SUITE)
        .file(
            "targets.yaml",
            "targets:\n  - {name: default, provider: mock}\n  - {name: odd, provider: warp-drive}\n",
        );
    p.run(&["validate", "."])
        .code(1)
        .stderr_has("targets.yaml:3:27: warning: target `odd` has unknown provider `warp-drive`")
        .stderr_has("a/e.yaml: error: target `odd` has unknown provider `warp-drive` (targets.yaml:3:27)")
        .stderr_has("✘ a/e.yaml (1 error(s))")
        .stderr_has("✔ b/e.yaml")
        .stderr_has("✔ targets.yaml");
    // eval agrees: the suite that does not use the target runs, warned.
    p.run(&["eval", "b/e.yaml", "--out", "r.jsonl"])
        .code(0)
        .stderr_has("warning: target `odd` has unknown provider `warp-drive`");
    p.run(&["eval", "a/e.yaml", "--out", "r.jsonl"])
        .code(2)
        .stderr_has("error: target `odd` has unknown provider `warp-drive`");
}

#[test]
fn validate_picks_the_targets_file_and_target_as_eval_does() {
    let p = Project::new()
        .file("evals/e.yaml", SUITE)
        .file("evals/targets.yaml", "targets:\n  - {name: default, provider: mock}\n")
        .file(
            "other.targets.yaml",
            "targets:\n  - {name: default, provider: mock}\n  - name: keyed\n    provider: openai\n    model: m\n    api_key: ${{ AGENTV_TEST_UNSET_KEY }}\n",
        );
    p.run(&["validate", "evals/e.yaml"]).code(0);
    p.run(&["validate", "evals/e.yaml", "--target", "nope"])
        .code(1)
        .stderr_has("unknown target `nope`; available targets: default (in evals/targets.yaml)");
    p.run(&["validate", "evals/e.yaml", "--targets", "other.targets.yaml", "--target", "keyed"])
        .code(0)
        .stderr_has("other.targets.yaml: warning: environment variable AGENTV_TEST_UNSET_KEY is not set (target `keyed`, setting `api_key`)");
    p.run(&["validate", "evals/e.yaml", "--targets", "other.targets.yaml", "--target", "keyed", "--strict"])
        .code(2)
        .stderr_has("other.targets.yaml: error: environment variable AGENTV_TEST_UNSET_KEY is not set (target `keyed`, setting `api_key`)");
    p.run(&[
        "eval",
        "evals/e.yaml",
        "--targets",
        "other.targets.yaml",
        "--target",
        "keyed",
    ])
    .code(2)
    .stderr_has("AGENTV_TEST_UNSET_KEY (target `keyed`, setting `api_key`)");
}

#[test]
fn unset_variable_is_a_warning_for_validate_and_an_error_under_strict() {
    let p = Project::new().file("e.yaml", SUITE).file(
        "targets.yaml",
        "targets:\n  - name: default\n    provider: mock\n    responses:\n      fine: ${{ AGENTV_TEST_UNSET_ANSWER }}\n",
    );
    let run = p.run(&["validate", "e.yaml", "targets.yaml"]);
    run.code(0)
        .stderr_has("targets.yaml: warning: environment variable AGENTV_TEST_UNSET_ANSWER is not set (target `default`, setting `responses.fine`)")
        .stderr_has("✔ e.yaml")
        .stderr_has("✔ targets.yaml");
    p.run(&["validate", "--strict", "e.yaml", "targets.yaml"])
        .code(2)
        .stderr_has("targets.yaml: error: environment variable AGENTV_TEST_UNSET_ANSWER is not set (target `default`, setting `responses.fine`) (an error under --strict)")
        .stderr_has("✘ e.yaml (1 error(s))")
        .stderr_has("✘ targets.yaml (1 error(s))");
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(2)
        .stderr_has("AGENTV_TEST_UNSET_ANSWER");
    p.output(
        p.command(&["validate", "e.yaml"])
            .env("AGENTV_TEST_UNSET_ANSWER", "the answer"),
    )
    .code(0);
}

#[test]
fn relative_cwd_is_valid_when_validating_from_the_targets_directory() {
    let p = Project::new().file("agent/evals/e.yaml", SUITE).file(
        "agent/targets.yaml",
        "targets:\n  - name: default\n    provider: cli\n    command_template: ./agent.sh {OUTPUT_FILE}\n    cwd: ..\n",
    );
    let run = p.output(p.command(&["validate", "."]).current_dir(p.path().join("agent")));
    run.code(0).stderr_has("2 file(s) checked, 0 invalid");
}

#[test]
fn a_path_that_is_not_an_eval_or_targets_file_is_a_usage_error() {
    let p = Project::new()
        .file("agent.py", "print('hi')\n")
        .file("empty/notes.md", "x\n");
    p.run(&["validate", "agent.py", "empty"])
        .code(2)
        .stderr_has("error: agent.py is not an eval file (.yaml, .yml, .jsonl) or a targets file")
        .stderr_has(
            "error: empty: no eval files (.yaml, .yml, .jsonl), targets files or results files in this directory",
        );
}

#[test]
fn directory_walk_reads_results_files_as_results_and_named_targets_files_as_targets() {
    let p = Project::new()
        .file(
            "evals/cases.jsonl",
            "{\"id\":\"c1\",\"expected_outcome\":\"x\",\"input_messages\":[{\"role\":\"user\",\"content\":\"q\"}]}\n",
        )
        .file("evals/run.baseline.jsonl", "{\"eval_id\":\"c1\",\"score\":1}\n")
        .file(
            "evals/renamed-results.jsonl",
            "{\"eval_id\":\"c1\",\"score\":0.5,\"evaluator_results\":[]}\n",
        )
        .file(
            "evals/.agentv/results/eval_1.jsonl",
            "{\"eval_id\":\"c1\",\"score\":1}\n",
        )
        .file(
            "evals/mock.targets.yaml",
            "targets:\n  - {name: default, provider: mock}\n",
        )
        .file("targets.yaml", "targets:\n  - {name: default, provider: mock}\n");
    let run = p.run(&["validate", "evals"]);
    run.code(0)
        .stderr_has("✔ evals/cases.jsonl")
        .stderr_has("✔ evals/mock.targets.yaml")
        .stderr_has("✔ evals/run.baseline.jsonl")
        .stderr_has("✔ evals/renamed-results.jsonl")
        .stderr_has("4 file(s) checked, 0 invalid");
    assert!(
        !run.stderr.contains(".agentv"),
        "agentv's own results stay out: {}",
        run.stderr
    );
}

/// The example directories, each validated from inside it and all together from the root
/// (`ci` and `results` hold results files, which `validate` reads as `compare` does).
const EXAMPLES: &[&str] = &[
    "agents",
    "ci",
    "cli-agent",
    "contextual-precision",
    "judges",
    "mock",
    "promptfoo",
    "providers",
    "results",
    "tools",
    "v4",
    "workspaces",
];

/// Runs `agentv validate .` in `dir` with `env` set (and the provider variables otherwise
/// removed, so the result does not depend on the machine).
fn validate_in(dir: &std::path::Path, path: &str, env: &[(&str, String)]) -> agentv_testkit::Run {
    let mut cmd = agentv_testkit::agentv(dir, &["validate", path]);
    for var in PROVIDER_VARS {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    agentv_testkit::Run::of(&mut cmd)
}

/// Variables the shipped targets files read.
const PROVIDER_VARS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "VERTEX_API_KEY",
    "VERTEX_ACCESS_TOKEN",
    "GOOGLE_CLOUD_PROJECT",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_DEPLOYMENT_NAME",
    "AZURE_OPENAI_API_KEY",
];

#[test]
fn every_shipped_example_is_valid() {
    let examples = agentv_testkit::repo_root().join("examples");
    let listed: Vec<String> = std::fs::read_dir(&examples)
        .expect("examples")
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for dir in &listed {
        assert!(EXAMPLES.contains(&dir.as_str()), "examples/{dir} is not validated here");
    }
    // As a user with the credentials and agent CLIs: no problem at all.
    let bin = tempfile::tempdir().expect("tmp");
    for exe in ["claude", "codex"] {
        let path = bin.path().join(exe);
        std::fs::write(&path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    }
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap_or_default());
    let mut full: Vec<(&str, String)> = PROVIDER_VARS
        .iter()
        .map(|v| (*v, "placeholder-value".to_owned()))
        .collect();
    full.push(("PATH", path));
    for dir in EXAMPLES {
        let run = validate_in(&examples.join(dir), ".", &full);
        run.code(0).stderr_has(", 0 invalid");
        assert!(!run.stderr.contains("warning:"), "examples/{dir}:\n{}", run.stderr);
    }
    let run = validate_in(&agentv_testkit::repo_root(), "examples", &full);
    run.code(0).stderr_has(", 0 invalid");
    assert!(!run.stderr.contains("warning:"), "{}", run.stderr);
    // On a fresh machine the offline suites still pass; targets files that need keys or agent
    // CLIs only warn.
    for dir in EXAMPLES {
        validate_in(&examples.join(dir), ".", &[]).code(0);
    }
}

/// A results file is checked by reading it as `compare` does: a bad line is an error with its
/// line, a good file is valid.
#[test]
fn results_files_are_read_and_their_bad_lines_reported() {
    let p = agentv_testkit::Project::new()
        .file("good.baseline.jsonl", "{\"eval_id\":\"a\",\"score\":1}\n")
        .file("bad.baseline.jsonl", "{\"eval_id\":\"a\",\"score\":1}\nnot json\n");
    p.run(&["validate", "good.baseline.jsonl"]).code(0);
    p.run(&["validate", "bad.baseline.jsonl"])
        .code(1)
        .stderr_has("bad.baseline.jsonl: error: 2:");
}

/// `agentv validate evals/` in a CI job without secrets or agent CLIs: the files are checked,
/// the machine is only warned about; `--strict` fails on it.
#[test]
fn validate_passes_in_ci_without_secrets_or_agent_clis() {
    let targets = "targets:\n  - name: default\n    provider: claude-code\n    executable: agentv-no-such-claude\n    judge_target: judge\n  - name: judge\n    provider: anthropic\n    model: m\n    api_key: ${{ AGENTV_E2E_NO_SUCH_KEY }}\n";
    let p = Project::new().file("targets.yaml", targets).file("evals/e.yaml", SUITE);
    p.run(&["validate", "evals/"])
        .code(0)
        .stderr_has("warning: target `default`: Claude Code executable `agentv-no-such-claude` not found on PATH")
        .stderr_has("warning: environment variable AGENTV_E2E_NO_SUCH_KEY is not set")
        .stderr_has("✔ evals/e.yaml");
    p.run(&["validate", "--strict", "evals/"])
        .code(2)
        .stderr_has("error: target `default`: Claude Code executable `agentv-no-such-claude` not found on PATH")
        .stderr_has("✘ evals/e.yaml (2 error(s))");
}
