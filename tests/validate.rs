//! `agentv validate` reports every problem in every file and runs nothing.

mod common;

use common::Project;

#[test]
fn reports_every_problem_in_every_file() {
    let p = Project::new()
        .file(
            "evals/a.yaml",
            "evalcases:\n  - id: one\n    input_messages: [{role: user, content: q}]\n  - id: two\n    expected_outcome: x\n    input_messages: [{role: robot, content: q}]\n    evaluators:\n      - {name: t, type: tool_trajectory, mode: sideways}\n",
        )
        .file("evals/b.yaml", "evalcases:\n  - id: fine\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n")
        .file("targets.yaml", "targets:\n  - name: c\n    provider: cli\n    command_template: run {NOPE}\n");
    let run = p.run(&["validate", "evals", "targets.yaml"]);
    run.code(1)
        .stderr_has("evals/a.yaml:2:5: error: eval case is missing the required key `expected_outcome`")
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
    let p = Project::new().file(
        "e.yaml",
        "evalcases:\n  - id: fine\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n",
    );
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

#[test]
fn every_shipped_example_is_valid() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentv"))
        .args(["validate", "examples"])
        .current_dir(common::repo_root())
        .output()
        .expect("runs");
    let run = common::Run::from(out);
    run.code(0).stderr_has(", 0 invalid");
    assert!(!run.stderr.contains("warning:"), "{}", run.stderr);
}
