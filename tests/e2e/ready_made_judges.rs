//! The ready-made judges (judges/) run through agentv on their example suites against the fake
//! judge model (examples/judges/fake_model.py): the worked numbers of examples/judges/README.md,
//! and the number of proxy calls each metric costs.

use agentv_testkit::{Project, Run, agentv, repo_root};
use serde_json::Value;

/// Runs one example suite from the repository root; returns its result records.
fn run_suite(suite: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("r.jsonl");
    let suite = format!("examples/judges/evals/{suite}");
    let mut cmd = agentv(&repo_root(), &["eval", &suite, "--out"]);
    cmd.arg(&out);
    Run::of(&mut cmd).code(0);
    std::fs::read_to_string(&out)
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

/// The evaluator result `name` of case `id`.
fn evaluator<'a>(records: &'a [Value], id: &str, name: &str) -> &'a Value {
    let record = records
        .iter()
        .find(|r| r["eval_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id}"));
    record["evaluator_results"]
        .as_array()
        .and_then(|list| list.iter().find(|e| e["name"] == name))
        .unwrap_or_else(|| panic!("{id}: no evaluator {name}: {record}"))
}

/// Checks the score (to 1e-3), that it graded, and the proxy calls it cost.
fn assert_graded(e: &Value, score: f64, calls: Option<u64>) {
    assert!(e.get("error").is_none(), "grader error: {e}");
    let got = e["score"].as_f64().expect("score");
    assert!((got - score).abs() < 1e-3, "score {got}, want {score}: {e}");
    let proxy = &e["details"]["target_proxy"];
    match calls {
        Some(n) => assert_eq!(proxy["call_count"], n, "proxy calls: {e}"),
        None => assert!(proxy.is_null(), "no proxy: {e}"),
    }
}

#[test]
fn contextual_precision_ranks_in_one_call_or_one_batch_of_per_chunk_calls() {
    let records = run_suite("contextual-precision.yaml");
    // (case, CP, chunks)
    for (id, cp, chunks) in [
        ("refund-window", 0.8333, 3),
        ("refund-method", 0.5833, 3),
        ("store-hours", 0.0, 2),
    ] {
        let batch = evaluator(&records, id, "contextual_precision");
        assert_graded(batch, cp, Some(1));
        assert_eq!(batch["details"]["target_proxy"]["batch_used"], false);
        let per_item = evaluator(&records, id, "contextual_precision_per_item");
        assert_graded(per_item, cp, Some(chunks));
        assert_eq!(
            per_item["details"]["target_proxy"]["batch_used"], true,
            "one invoke_batch"
        );
    }
    let window = evaluator(&records, "refund-window", "contextual_precision");
    assert_eq!(window["reasoning"], "CP = (1/1 + 2/3) / 2 = 0.833");
    assert_eq!(
        window["details"]["context_source"],
        "output_messages[0].tool_calls[0].output"
    );
    assert_eq!(window["details"]["verdicts"][1]["relevant"], false);
}

#[test]
fn contextual_recall_checks_reference_statements_against_the_context() {
    let records = run_suite("contextual-recall.yaml");
    // (case, recall, reference sentences)
    for (id, recall, sentences) in [
        ("refund-window", 1.0, 2),
        ("refund-method", 0.6667, 3),
        ("store-hours", 0.0, 1),
    ] {
        assert_graded(evaluator(&records, id, "contextual_recall"), recall, Some(2));
        assert_graded(
            evaluator(&records, id, "contextual_recall_sentences"),
            recall,
            Some(sentences),
        );
    }
    let method = evaluator(&records, "refund-method", "contextual_recall");
    assert_eq!(
        method["reasoning"],
        "contextual recall = 2 attributable / 3 statements = 0.667"
    );
    assert_eq!(
        method["misses"][0],
        "reference statement 3: not in the context: A receipt is required."
    );
}

#[test]
fn contextual_relevancy_judges_every_statement_of_every_chunk() {
    let records = run_suite("contextual-relevancy.yaml");
    // (case, relevancy, chunks)
    for (id, relevancy, chunks) in [
        ("refund-window", 0.6667, 3),
        ("refund-method", 0.5, 3),
        ("store-hours", 0.0, 2),
    ] {
        assert_graded(evaluator(&records, id, "contextual_relevancy"), relevancy, Some(1));
        assert_graded(
            evaluator(&records, id, "contextual_relevancy_per_item"),
            relevancy,
            Some(chunks),
        );
    }
    let method = evaluator(&records, "refund-method", "contextual_relevancy");
    assert_eq!(method["details"]["statement_count"], 4);
    assert_eq!(
        method["details"]["chunks"][0]["statements"][1]["text"],
        "Parking is free on Sundays."
    );
}

#[test]
fn faithfulness_extracts_claims_once_and_verifies_them_in_one_round_trip() {
    let records = run_suite("faithfulness.yaml");
    // (case, faithfulness, claims, passes the 0.8 threshold)
    for (id, faithfulness, claims, passed) in [
        ("refund-window", 1.0, 2, true),
        ("refund-method", 0.5, 2, false),
        ("store-hours", 0.5, 2, false),
    ] {
        let batch = evaluator(&records, id, "faithfulness");
        assert_graded(batch, faithfulness, Some(2));
        assert_eq!(
            batch["details"]["model_calls"],
            serde_json::json!({"extract": 1, "verdicts": 1})
        );
        assert_eq!(batch["details"]["passed"], passed, "{id}");
        assert_graded(
            evaluator(&records, id, "faithfulness_per_claim"),
            faithfulness,
            Some(1 + claims),
        );
    }
    let method = evaluator(&records, "refund-method", "faithfulness");
    assert_eq!(method["reasoning"], "faithfulness = 1 supported / 2 claims = 0.5");
    assert_eq!(
        method["misses"],
        serde_json::json!([
            "claim 2: not supported: Cash purchases are refunded in store within 14 days.",
            "faithfulness 0.5 is below the threshold 0.8"
        ])
    );
}

#[test]
fn answer_relevancy_scores_statements_and_strict_mode_makes_it_binary() {
    let records = run_suite("answer-relevancy.yaml");
    // (case, relevancy, strict score)
    for (id, relevancy, strict) in [
        ("refund-window", 1.0, 1.0),
        ("refund-method", 1.0, 1.0),
        ("store-hours", 0.5, 0.0),
    ] {
        assert_graded(evaluator(&records, id, "answer_relevancy"), relevancy, Some(2));
        let binary = evaluator(&records, id, "answer_relevancy_strict");
        assert_graded(binary, strict, Some(2));
        assert_eq!(binary["details"]["metric_score"], relevancy);
    }
}

#[test]
fn json_f1_counts_fields_without_any_model_call() {
    let records = run_suite("json-f1.yaml");
    // (case, F1 over every field, recall of vendor and total)
    for (id, f1, key_recall) in [
        ("invoice-acme", 1.0, 1.0),
        ("invoice-globex", 0.7273, 0.5),
        ("invoice-initech", 0.0, 0.0),
    ] {
        assert_graded(evaluator(&records, id, "fields_f1"), f1, None);
        assert_graded(evaluator(&records, id, "key_fields"), key_recall, None);
    }
    let globex = &evaluator(&records, "invoice-globex", "fields_f1")["details"];
    assert_eq!(
        (globex["tp"].clone(), globex["fp"].clone(), globex["fn"].clone()),
        (4.into(), 2.into(), 1.into())
    );
    assert_eq!(
        globex["fields"]["total"],
        serde_json::json!({"tp": 0, "fp": 1, "fn": 1, "tn": 0, "expected": 99, "actual": 89})
    );
    assert_eq!(globex["fields"]["notes"]["fp"], 1);
    let initech = evaluator(&records, "invoice-initech", "fields_f1");
    assert_eq!(
        initech["misses"][0],
        "the answer is not JSON: Sorry, I cannot read this invoice."
    );
}

/// A project whose app retrieves a chunk the fake model fails on.
fn failing_chunk_project(evaluators: &str) -> Project {
    let targets = "targets:\n  - name: app\n    provider: mock\n    judge_target: fake\n    response:\n      output_messages:\n        - role: assistant\n          tool_calls:\n            - {tool: retrieve, output: [Refunds take 30 days., FAKE-FAIL chunk, Refunds go to the card.]}\n        - {role: assistant, content: Refunds take 30 days.}\n  - name: fake\n    provider: cli\n    command_template: python3 -S fake_model.py {PROMPT} {OUTPUT_FILE}\n    cwd: .\n";
    let suite = format!(
        "execution:\n  target: app\n  evaluators:\n{evaluators}evalcases:\n  - {{id: c, expected_outcome: x, input_messages: [{{role: user, content: How long do refunds take?}}]}}\n"
    );
    let fake = std::fs::read_to_string(repo_root().join("examples/judges/fake_model.py")).expect("fake model");
    Project::new()
        .file("targets.yaml", targets)
        .file("fake_model.py", &fake)
        .file("e.yaml", &suite)
}

fn run_project(p: &Project) -> Run {
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
}

#[test]
fn a_failed_verdict_is_a_grader_error_unless_on_item_error_skips_it() {
    let p = failing_chunk_project(
        "    - {name: fail, type: code_judge, script: [agentv, judge, contextual-precision], target: true, mode: per_item}\n    - {name: skip, type: code_judge, script: [agentv, judge, contextual-precision], target: true, mode: per_item, on_item_error: skip}\n",
    );
    // The summary cuts the error to its columns; the case's progress line keeps the reason.
    run_project(&p)
        .code(3)
        .stdout_has("grader 'fail': code judge exited with code 1")
        .stderr_has("the verdict on chunk 2 failed");
    let records = p.results("r.jsonl");
    let failed = evaluator(&records, "c", "fail");
    let error = failed["error"].as_str().expect("a grader error");
    assert!(
        error.contains("contextual_precision: the verdict on chunk 2 failed: command exited with code 1: fake model: asked to fail (set `on_item_error: skip` to leave such items out)"),
        "{error}"
    );
    let skipped = evaluator(&records, "c", "skip");
    // Chunks 1 and 3 are relevant and chunk 2 is left out of the ranking: CP = 1.
    assert_graded(skipped, 1.0, Some(3));
    assert_eq!(
        skipped["misses"],
        serde_json::json!([
            "chunk 2 left out: its verdict failed: command exited with code 1: fake model: asked to fail"
        ])
    );
}

#[test]
fn a_budget_too_small_or_a_missing_target_fails_before_any_call() {
    let p = failing_chunk_project(
        "    - {name: budget, type: code_judge, script: [agentv, judge, faithfulness], target: {max_calls: 1}}\n    - {name: no_target, type: code_judge, script: [agentv, judge, faithfulness]}\n    - {name: typo, type: code_judge, script: [agentv, judge, faithfulness], target: true, treshold: 0.5}\n",
    );
    run_project(&p).code(3);
    let records = p.results("r.jsonl");
    let budget = evaluator(&records, "c", "budget");
    assert_eq!(budget["details"]["target_proxy"]["call_count"], 0, "nothing spent");
    assert!(
        budget["error"].as_str().expect("error").contains(
            "faithfulness needs 2 more model call(s) (1 to list the claims and 1 or more for their verdicts) but \
             the proxy allows 1 more (max_calls 1); set `target: {max_calls: 2}` or more on the evaluator"
        ),
        "{budget}"
    );
    let no_target = evaluator(&records, "c", "no_target");
    assert!(
        no_target["error"]
            .as_str()
            .expect("error")
            .contains("faithfulness asks the judge model: set `target: true`"),
        "{no_target}"
    );
    let typo = evaluator(&records, "c", "typo");
    assert!(
        typo["error"]
            .as_str()
            .expect("error")
            .contains("config `treshold`: agentv-faithfulness has no such setting"),
        "{typo}"
    );
}

#[test]
fn ready_made_judges_work_after_cargo_install() {
    // The binary alone, somewhere that is not on PATH (as after `cargo install --root DIR`):
    // `script: [agentv, judge, …]` runs the judge of that very executable.
    let install = tempfile::tempdir().expect("tmp");
    let bin = install.path().join("bin").join("agentv");
    std::fs::create_dir_all(bin.parent().expect("bin dir")).expect("bin dir");
    let built = agentv_testkit::agentv_bin();
    if std::fs::hard_link(&built, &bin).is_err() {
        std::fs::copy(&built, &bin).expect("copy the binary");
    }
    let p = Project::new()
        .file(
            "targets.yaml",
            "targets:\n  - name: default\n    provider: mock\n    response: '{\"vendor\": \"Acme\", \"total\": 12}'\n",
        )
        .file(
            "e.yaml",
            "evalcases:\n  - id: invoice\n    expected_outcome: Extracts the fields.\n    input_messages: [{role: user, content: Extract.}]\n    expected_messages: [{role: assistant, content: {vendor: Acme, total: 12, currency: EUR}}]\n    evaluators:\n      - {name: f1, type: code_judge, script: [agentv, judge, json-f1]}\n      - {name: recall, type: code-grader, command: [agentv, judge, json-f1], metric: recall}\n",
        );
    let mut cmd = std::process::Command::new(&bin);
    cmd.args(["eval", "e.yaml", "--out", "r.jsonl"])
        .current_dir(p.path())
        .env("PATH", "/usr/bin:/bin");
    let run = p.output(&mut cmd);
    run.code(0);
    let records = p.results("r.jsonl");
    // 2 of 2 answered fields are right, 2 of 3 expected ones found: F1 = 0.8.
    assert_graded(evaluator(&records, "invoice", "f1"), 0.8, None);
    let recall = evaluator(&records, "invoice", "recall")["score"]
        .as_f64()
        .expect("score");
    assert!((recall - 2.0 / 3.0).abs() < 1e-9, "{recall}");

    // The subcommand itself: a usage error names the judges.
    let unknown = p.run(&["judge", "faithfulnes"]);
    unknown.code(2).stderr_has("faithfulness");
}
