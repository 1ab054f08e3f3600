//! `agentv convert`: exit codes, a 2.x suite and its 4.x conversion scoring the same, every
//! shipped 2.x example converting to a valid 4.x file, and the 4.x examples scoring as
//! designed.

use std::path::{Path, PathBuf};

use agentv_testkit::{Project, Run, agentv, repo_root, walk};

/// A canned judge reply valid for 2.x `llm_judge` (`score`, `hits`, …), 4.x `llm-grader`
/// (`score`, `assertions`) and rubric grading in both (`checks`).
const JUDGE_REPLY: &str = r#"{"score": 0.7, "hits": ["h"], "misses": [], "reasoning": "r", "assertions": [{"text": "h", "passed": true}], "checks": [{"id": "polite", "satisfied": true, "reasoning": "yes"}, {"id": "brief", "satisfied": false, "reasoning": "no"}], "overall_reasoning": "r"}"#;

fn targets() -> String {
    format!(
        "targets:
  - name: default
    provider: mock
    judge_target: judge
    response:
      text: '{{\"invoice\": {{\"number\": \"INV-7\", \"total\": 100.4}}}}'
      token_usage: {{input: 100, output: 50}}
      cost_usd: 0.002
      duration_ms: 120
  - name: judge
    provider: mock
    response: '{JUDGE_REPLY}'
"
    )
}

/// A 2.x suite using every grader that has a 4.x equivalent with the same score.
const V2_SUITE: &str = "# A 2.x suite; its 4.x conversion must score the same.
description: conversion parity
execution:
  target: default
  evaluators:
    - name: quality          # the canned judge: 0.7
      type: llm_judge
    - name: fast
      type: latency
      threshold: 1000
evalcases:
  - id: suite-graders
    expected_outcome: Reads the invoice.
    input_messages:
      - {role: user, content: Read the invoice.}
  - id: own-graders
    expected_outcome: Reads the invoice.
    input_messages:
      - {role: user, content: Read the invoice.}
    expected_messages:
      - role: assistant
        content: {invoice: {number: INV-7, total: 100}}
    evaluators:
      - name: fields
        type: field_accuracy
        fields:
          - {path: invoice.number, match: exact}
          - {path: invoice.total, match: numeric_tolerance, tolerance: 0.1}
      - {name: cheap, type: cost, budget: 0.001}
      - {name: tokens, type: token_usage, max_total: 500}
  - id: rubric-and-composite
    expected_outcome: Polite and brief.
    input_messages:
      - {role: user, content: Read the invoice.}
    execution:
      evaluators:
        - name: manners
          type: rubric
          rubrics:
            - {id: polite, description: Is polite}
            - {id: brief, description: Is brief, weight: 3}
        - name: both
          type: composite
          evaluators:
            - {name: judge, type: llm_judge}
            - {name: quick, type: latency, threshold: 10}
          aggregator:
            type: weighted_average
            weights: {judge: 3, quick: 1}
";

fn scores(project: &Project, results: &str) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = project
        .results(results)
        .iter()
        .map(|r| {
            let id = r["eval_id"]
                .as_str()
                .or_else(|| r["test_id"].as_str())
                .unwrap_or_default();
            (id.to_owned(), r["score"].as_f64().unwrap_or(f64::NAN))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn a_2x_suite_and_its_4x_conversion_score_the_same() {
    let project = Project::new()
        .file("targets.yaml", &targets())
        .file("evals/v2.yaml", V2_SUITE);
    let converted = project.run(&["convert", "evals/v2.yaml", "--to", "v4", "--out", "evals/v4.yaml"]);
    assert_eq!(converted.code, 0, "{}", converted.stderr);
    let v4 = std::fs::read_to_string(project.path().join("evals/v4.yaml")).expect("converted file");
    assert!(v4.contains("tests:") && v4.contains("type: llm-grader"), "{v4}");
    assert!(v4.contains("# the canned judge: 0.7"), "comments are kept: {v4}");

    let v2_run = project.run(&["eval", "evals/v2.yaml", "--out", "r2.jsonl"]);
    let v4_run = project.run(&["eval", "evals/v4.yaml", "--out", "r4.jsonl"]);
    assert_eq!(v2_run.code, 0, "2.x run: {}", v2_run.stderr);
    assert_eq!(v4_run.code, 0, "4.x run: {}", v4_run.stderr);
    let (s2, s4) = (scores(&project, "r2.jsonl"), scores(&project, "r4.jsonl"));
    assert_eq!(s2.len(), 3, "{s2:?}");
    for ((id2, a), (id4, b)) in s2.iter().zip(&s4) {
        assert_eq!(id2, id4);
        assert!((a - b).abs() < 1e-9, "{id2}: 2.x scored {a}, its 4.x conversion {b}");
    }
    // Converting back gives the 2.x suite, with the case's `execution.evaluators` as `evaluators`.
    let back = project.run(&["convert", "evals/v4.yaml", "--to", "v2"]);
    assert_eq!(back.code, 0, "{}", back.stderr);
    assert!(
        back.stdout.contains("evalcases:") && back.stdout.contains("type: llm_judge"),
        "{}",
        back.stdout
    );
}

#[test]
fn convert_exit_codes_say_usage_and_impossible_apart() {
    let v4 =
        "tests:\n  - id: a\n    criteria: x\n    input: hi\n    assertions:\n      - {type: contains, value: hi}\n";
    let project = Project::new().file("s.yaml", v4).file("notes.txt", "x");
    let missing = project.run(&["convert", "nope.yaml"]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    let wrong_kind = project.run(&["convert", "notes.txt"]);
    assert_eq!(wrong_kind.code, 2, "{}", wrong_kind.stderr);
    let both = project.run(&["convert", "s.yaml", "--out", "o.yaml", "--in-place"]);
    assert_eq!(both.code, 2, "{}", both.stderr);

    let impossible = project.run(&["convert", "s.yaml", "--to", "v2", "--in-place"]);
    assert_eq!(impossible.code, 1, "{}", impossible.stderr);
    assert!(
        impossible
            .stderr
            .contains("s.yaml:6:16: error: grader type `contains` has no 2.x equivalent"),
        "{}",
        impossible.stderr
    );
    let after = std::fs::read_to_string(project.path().join("s.yaml")).expect("file");
    assert_eq!(after, v4, "nothing is written when the conversion is impossible");
}

#[test]
fn convert_reads_a_jsonl_datasets_sidecar() {
    let project = Project::new()
        .file(
            "d.jsonl",
            "{\"id\": \"a\", \"expected_outcome\": \"x\", \"input\": \"hi\"}\n",
        )
        .file(
            "d.yaml",
            "# sidecar\nexecution:\n  evaluators:\n    - {name: q, type: llm_judge}\n",
        );
    let run = project.run(&["convert", "d.jsonl", "--in-place"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let sidecar = std::fs::read_to_string(project.path().join("d.yaml")).expect("sidecar");
    assert_eq!(
        sidecar,
        "# sidecar\nexecution:\n  assertions:\n    - {name: q, type: llm-grader}\n"
    );
    let orphan = Project::new().file("e.jsonl", "{}\n");
    assert_eq!(orphan.run(&["convert", "e.jsonl"]).code, 2);
}

/// The eval files among the examples (YAML files under an `evals/` directory).
fn example_eval_files() -> Vec<PathBuf> {
    let root = repo_root().join("examples");
    let mut files: Vec<PathBuf> = walk(&root)
        .into_iter()
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml" || e == "yml") && p.components().any(|c| c.as_os_str() == "evals")
        })
        .collect();
    files.sort();
    files
}

/// Copies an example directory (the one holding `evals/`) into a temporary directory.
fn copy_tree(from: &Path, to: &Path) {
    for file in walk(from) {
        let rel = file.strip_prefix(from).expect("under the tree");
        if rel.components().any(|c| c.as_os_str() == "target") {
            continue;
        }
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
        std::fs::copy(&file, &dest).expect("copy");
    }
}

#[test]
fn every_2x_example_converts_to_a_valid_4x_file() {
    let files = example_eval_files();
    assert!(files.len() >= 5, "{files:?}");
    let mut converted = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("example");
        if text.contains("\ntests:") {
            continue; // already 4.x
        }
        let example = file
            .ancestors()
            .find(|d| d.file_name().is_some_and(|n| n == "evals"))
            .and_then(Path::parent)
            .expect("an evals/ directory");
        let tmp = tempfile::tempdir().expect("tmp");
        copy_tree(example, tmp.path());
        let rel = file.strip_prefix(example).expect("inside");
        let rel = rel.to_str().expect("utf-8 path");
        let run = Run::of(&mut agentv(tmp.path(), &["convert", rel, "--to", "v4", "--in-place"]));
        assert_eq!(run.code, 0, "{}: {}", file.display(), run.stderr);
        let out = std::fs::read_to_string(tmp.path().join(rel)).expect("converted");
        assert!(out.contains("tests:"), "{}: not 4.x:\n{out}", file.display());
        let mut check = agentv(tmp.path(), &["validate", rel]);
        check.env("OPENAI_API_KEY", "k").env("ANTHROPIC_API_KEY", "k");
        let validate = Run::of(&mut check);
        assert_eq!(
            validate.code,
            0,
            "{} converted does not validate:\n{}\n{out}",
            file.display(),
            validate.stderr
        );
        converted += 1;
    }
    assert!(converted >= 4, "only {converted} 2.x examples");
}

/// `# designed: X` after each test id.
fn designed_scores(suite: &str) -> Vec<(String, f64)> {
    suite
        .lines()
        .filter_map(|l| {
            let (id, rest) = l.trim().strip_prefix("- id: ")?.split_once("# designed: ")?;
            let score = rest.split_whitespace().next()?.parse().ok()?;
            Some((id.trim().to_owned(), score))
        })
        .collect()
}

#[test]
fn the_4x_examples_score_as_designed() {
    for suite in ["deterministic", "rubrics", "composite"] {
        let rel = format!("examples/v4/evals/{suite}.yaml");
        let text = std::fs::read_to_string(repo_root().join(&rel)).expect("example");
        let designed = designed_scores(&text);
        assert!(!designed.is_empty(), "{rel}");
        let tmp = tempfile::tempdir().expect("tmp");
        let out = tmp.path().join("r.jsonl");
        let mut cmd = agentv(&repo_root(), &["eval", &rel, "--out"]);
        cmd.arg(&out);
        let run = Run::of(&mut cmd);
        assert!(run.code == 0 || run.code == 1, "{rel}: {}", run.stderr);
        let records: Vec<serde_json::Value> = std::fs::read_to_string(&out)
            .expect("results")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        for (id, want) in designed {
            let r = records
                .iter()
                .find(|r| r["eval_id"] == id.as_str() || r["test_id"] == id.as_str())
                .unwrap_or_else(|| panic!("{rel}: no result for {id}"));
            let got = r["score"].as_f64().unwrap_or(f64::NAN);
            assert!(
                (got - want).abs() < 1e-3,
                "{rel} {id}: designed {want}, scored {got}\n{r}"
            );
        }
    }
}
