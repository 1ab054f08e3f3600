//! `agentv init`: every template with every judge language installed here runs offline at once
//! with the scores its files promise, passes `validate`, and never replaces a file unasked.

use std::time::Duration;

use agentv_testkit::toolchains::{cargo_build, require, rust_judge_env};
use agentv_testkit::{Project, Run};

/// The scores each template's cases get from its mock targets: `(template, [(case, score)])`.
const EXPECTED: [(&str, &[(&str, f64)]); 3] = [
    ("basic", &[("capital-of-france", 1.0), ("two-plus-two", 0.75)]),
    (
        "rag",
        // (the suite's judge 0.9 + the ready-made faithfulness judge 1.0) / 2
        &[
            ("refund-window", 0.95),
            ("shipping-time", 0.95),
            ("warranty-length", 0.95),
        ],
    ),
    ("agent", &[("fix-typo", 1.0), ("run-tests", 1.0)]),
];

/// Writes `template` with a `judge` judge into `dir` of a fresh project.
fn init(template: &str, judge: &str) -> Project {
    let p = Project::new().timeout(Duration::from_secs(300));
    p.run(&["init", "suite", "--template", template, "--judge", judge])
        .code(0)
        .stdout_has("agentv eval evals/");
    p
}

/// `agentv eval evals/` in the suite, as its README says, with `env` applied.
fn eval_in_suite(p: &Project, env: fn(&mut std::process::Command) -> &mut std::process::Command) -> Run {
    let mut cmd = p.command(&["eval", "evals/", "--out", "results.jsonl"]);
    cmd.current_dir(p.path().join("suite"));
    env(&mut cmd);
    p.output(&mut cmd)
}

fn no_env(cmd: &mut std::process::Command) -> &mut std::process::Command {
    cmd
}

/// Runs the suite and checks every case's score and that no grader failed.
fn assert_scores(p: &Project, template: &str, judge: &str, run: &Run) {
    run.code(0);
    let (_, want) = EXPECTED.iter().find(|(t, _)| *t == template).expect("a template");
    let records = p.results("suite/results.jsonl");
    assert_eq!(records.len(), want.len(), "{template}/{judge}: {records:?}");
    for (id, score) in *want {
        let record = p.result("suite/results.jsonl", id);
        for grade in record["evaluator_results"].as_array().expect("grades") {
            assert!(grade.get("error").is_none(), "{template}/{judge} {id}: {grade}");
        }
        let got = record["score"].as_f64().expect("a score");
        assert!(
            (got - score).abs() < 1e-9,
            "{template}/{judge} {id}: score {got}, want {score}"
        );
    }
}

/// `validate` finds nothing to say about the generated files.
fn assert_validates(p: &Project) {
    let mut cmd = p.command(&["validate", "."]);
    cmd.current_dir(p.path().join("suite"));
    let run = p.output(&mut cmd);
    run.code(0).stderr_has("2 file(s) checked, 0 invalid");
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

#[test]
fn init_suites_with_python_and_typescript_judges_run_offline_with_the_expected_scores() {
    let node = require("node", "the TypeScript judges");
    for (template, _) in EXPECTED {
        for judge in ["python", "typescript"] {
            if judge == "typescript" && !node {
                continue;
            }
            let p = init(template, judge);
            assert_validates(&p);
            let run = eval_in_suite(&p, no_env);
            assert_scores(&p, template, judge, &run);
        }
    }
}

#[test]
fn init_suites_with_a_rust_judge_build_and_run_with_the_expected_scores() {
    // One after the other: the crates share a target directory and a binary name.
    for (template, _) in EXPECTED {
        let p = init(template, "rust");
        let manifest = p.path().join("suite/judges/judge/Cargo.toml");
        let toml = std::fs::read_to_string(&manifest).expect("the judge's manifest");
        assert!(toml.contains("agentv-eval-sdk = { path = "), "{toml}");
        assert_validates(&p);
        cargo_build(&manifest);
        let run = eval_in_suite(&p, rust_judge_env);
        assert_scores(&p, template, "rust", &run);
    }
}

#[test]
fn init_defaults_to_a_basic_suite_with_a_python_judge_here() {
    let p = Project::new();
    let run = p.run(&["init"]);
    run.code(0);
    for file in [
        "targets.yaml",
        "evals/basic.yaml",
        "judges/judge.py",
        "judges/agentv_eval.py",
        "schemas/eval.schema.json",
        "schemas/targets.schema.json",
        ".gitignore",
        "README.md",
    ] {
        assert!(p.path().join(file).is_file(), "{file} missing\n{}", run.stdout);
    }
    let eval = std::fs::read_to_string(p.path().join("evals/basic.yaml")).expect("eval file");
    assert!(
        eval.starts_with("# yaml-language-server: $schema=../schemas/eval.schema.json\n"),
        "{eval}"
    );
    let targets = std::fs::read_to_string(p.path().join("targets.yaml")).expect("targets");
    assert!(targets.contains("#   api_key: ${{ OPENAI_API_KEY }}"), "{targets}");
    let ignore = std::fs::read_to_string(p.path().join(".gitignore")).expect(".gitignore");
    assert!(ignore.lines().any(|l| l == ".agentv/"), "{ignore}");
    p.run(&["eval", "evals/", "--out", "r.jsonl"]).code(0);
}

#[test]
fn init_refuses_to_overwrite_files_and_names_them() {
    let p = Project::new()
        .file("targets.yaml", "mine\n")
        .file("README.md", "# Mine\n");
    let run = p.run(&["init", "--template", "rag"]);
    run.code(2)
        .stderr_has("already has targets.yaml, README.md")
        .stderr_has("--force");
    assert_eq!(
        std::fs::read_to_string(p.path().join("targets.yaml")).expect("kept"),
        "mine\n"
    );
    assert!(
        !p.path().join("evals").exists(),
        "nothing is written when a file is refused"
    );

    p.run(&["init", "--template", "rag", "--force"]).code(0);
    let targets = std::fs::read_to_string(p.path().join("targets.yaml")).expect("replaced");
    assert!(targets.contains("provider: mock"), "{targets}");
    p.run(&["eval", "evals/", "--out", "r.jsonl"]).code(0);
}

#[test]
fn init_rag_runs_a_ready_made_judge_of_agentv_itself() {
    let p = Project::new();
    p.run(&["init", "--template", "rag"]).code(0);
    let eval = std::fs::read_to_string(p.path().join("evals/rag.yaml")).expect("eval file");
    assert!(eval.contains("script: [agentv, judge, faithfulness]"), "{eval}");
    // Not on PATH: the running agentv is the judge's program.
    let mut cmd = p.command(&["eval", "evals/", "--out", "r.jsonl"]);
    cmd.env("PATH", "/usr/bin:/bin");
    p.output(&mut cmd).code(0);
    for id in ["refund-window", "shipping-time", "warranty-length"] {
        let record = p.result("r.jsonl", id);
        let faithfulness = record["evaluator_results"]
            .as_array()
            .and_then(|all| all.iter().find(|e| e["name"] == "faithfulness"))
            .unwrap_or_else(|| panic!("{id}: {record}"));
        assert_eq!(faithfulness["score"], 1.0, "{id}: {faithfulness}");
        assert_eq!(
            faithfulness["details"]["context_source"], "input_files",
            "{id}: {faithfulness}"
        );
    }
}

#[test]
fn init_into_a_file_is_a_usage_error() {
    let p = Project::new().file("taken", "x\n");
    p.run(&["init", "taken"]).code(2).stderr_has("is not a directory");
}

#[test]
fn init_v4_writes_a_4x_eval_file_that_validates_and_runs_with_the_same_scores() {
    for (template, _) in EXPECTED {
        let p = Project::new().timeout(Duration::from_secs(300));
        p.run(&["init", "suite", "--template", template, "--format", "v4"])
            .code(0)
            .stdout_has("agentv eval evals/");
        let rel = format!("suite/evals/{template}.yaml");
        let eval = std::fs::read_to_string(p.path().join(&rel)).expect("eval file");
        assert!(
            eval.contains("\ntests:\n") && eval.contains("type: code-grader") && !eval.contains("evalcases"),
            "{template}: not written in the 4.x format:\n{eval}"
        );
        assert!(
            eval.starts_with("# yaml-language-server: $schema=../schemas/eval.schema.json\n"),
            "{eval}"
        );
        // The loader reads it as 4.x (convert names the generation it finds).
        p.run(&["convert", &rel, "--to", "v4"])
            .code(0)
            .stderr_has("is already AgentV 4.x");
        assert_validates(&p);
        let run = eval_in_suite(&p, no_env);
        assert_scores(&p, template, "python", &run);
    }
}
