//! The shipped examples run offline from the binary.

use agentv_testkit::{Run, agentv, repo_root};

fn run_example(args: &[&str], out: &std::path::Path) -> Run {
    let mut cmd = agentv(&repo_root(), args);
    cmd.arg("--out").arg(out);
    Run::of(&mut cmd)
}

fn results(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

fn by_id<'a>(records: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    records
        .iter()
        .find(|r| r["eval_id"] == id)
        .unwrap_or_else(|| panic!("no {id}"))
}

#[test]
fn mock_example_grades_every_case() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("r.jsonl");
    let run = run_example(&["eval", "examples/mock/evals/capitals.yaml"], &out);
    run.code(0)
        .stdout_has("Total eval cases: 4")
        .stdout_has("Score distribution:")
        .stderr_has("Using target: default [provider=mock, judge mock-judge]");
    let records = results(&out);
    assert_eq!(records.len(), 4);
    // expected_city: mentions Paris (0.7) + ≥5 words (0.3) = 1.0; quality 0.9 (weight 0.5);
    // names_the_city has weight 0. → (1.0 + 0.5 × 0.9) / 1.5
    let france = by_id(&records, "capital-of-france");
    assert!(
        (france["score"].as_f64().expect("score") - 1.45 / 1.5).abs() < 1e-9,
        "{france}"
    );
    assert_eq!(france["evaluator_results"][1]["details"]["expected_city"], "Paris");
    assert_eq!(
        france["evaluator_results"][2]["evaluator_provider_request"]["target"],
        "mock-judge"
    );
    // Sydney: no Canberra (0) + words (0.3); judge 0.9 → (0.3 + 0.45) / 1.5 = 0.5
    let australia = by_id(&records, "capital-of-australia");
    assert!(
        (australia["score"].as_f64().expect("score") - 0.5).abs() < 1e-9,
        "{australia}"
    );
    assert_eq!(australia["verdict"], "fail");
    let notes = by_id(&records, "summarize-notes");
    assert_eq!(notes["score"], 1.0);
    assert_eq!(
        notes["evaluator_results"].as_array().expect("list").len(),
        1,
        "a case's own evaluators replace the suite's"
    );
}

#[test]
fn cli_agent_example_passes_with_traces_and_metrics() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("r.jsonl");
    let run = run_example(&["eval", "examples/cli-agent/evals/agent.yaml"], &out);
    run.code(0).stdout_has("Verdicts: 2 pass, 0 borderline, 0 fail");
    let records = results(&out);
    let report = by_id(&records, "summarize-report");
    assert_eq!(report["score"], 1.0, "{report}");
    assert_eq!(report["trace_summary"]["tool_calls_by_name"]["Read"], 1);
    assert_eq!(
        report["execution_metrics"]["token_usage"]["output"]
            .as_u64()
            .map(|n| n > 0),
        Some(true)
    );
    let request = &report["lm_provider_request"];
    assert!(
        request["guidelines"]
            .as_str()
            .expect("guidelines")
            .contains("summary.instructions.md")
    );
    assert!(
        !request["question"]
            .as_str()
            .expect("question")
            .contains("summary.instructions"),
        "guideline split out"
    );
    let deploy = by_id(&records, "no-deploy-without-approval");
    assert_eq!(
        deploy["trace_summary"]["tool_names"],
        serde_json::json!(["Bash", "List"])
    );
}

#[test]
fn contextual_precision_example_scores_the_worked_numbers() {
    // The suite names the judge as `agentv judge contextual-precision`: nothing is built.
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("r.jsonl");
    let mut cmd = agentv(
        &repo_root(),
        &["eval", "examples/contextual-precision/evals/retrieval.yaml", "--out"],
    );
    cmd.arg(&out);
    Run::of(&mut cmd).code(0);
    let records = results(&out);
    for (id, want, calls) in [
        ("refund-window", 0.8333, 3),
        ("refund-method", 0.5833, 3),
        ("store-hours", 0.0, 2),
    ] {
        let r = by_id(&records, id);
        assert!((r["score"].as_f64().expect("score") - want).abs() < 1e-3, "{id}: {r}");
        let evs = r["evaluator_results"].as_array().expect("results");
        let batch = &evs[0];
        assert_eq!(batch["details"]["mode"], "batch");
        assert_eq!(batch["details"]["target_proxy"]["call_count"], 1, "{id}");
        assert_eq!(batch["details"]["target_proxy"]["target_name"], "fake-judge-model");
        let per_chunk = &evs[1];
        assert!(
            (per_chunk["score"].as_f64().expect("score") - want).abs() < 1e-3,
            "{id} per chunk"
        );
        assert_eq!(per_chunk["details"]["target_proxy"]["call_count"], calls);
        assert_eq!(per_chunk["details"]["target_proxy"]["batch_used"], true);
        let python = &evs[2];
        assert_eq!(python["score"], 1.0, "{python}");
        assert_eq!(python["details"]["proxy_info"]["targetName"], "fake-judge-model");
        assert_eq!(python["details"]["proxy_info"]["maxCalls"], 50);
    }
    let window = by_id(&records, "refund-window");
    assert_eq!(
        window["evaluator_results"][0]["reasoning"],
        "CP = (1/1 + 2/3) / 2 = 0.833"
    );
    assert_eq!(
        window["evaluator_results"][0]["details"]["verdicts"][1]["relevant"],
        false
    );
}

/// `examples/promptfoo/`: the llm-rubric and RAG configs give the rows their README designs,
/// offline against the fake model following `fake-model.json` (the grading prompts are
/// promptfoo's own, so promptfoo 0.121.20 gives the same rows on that server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promptfoo_examples_give_their_designed_rows_offline() {
    use agentv_testkit::llm::FakeLlm;
    let script = std::fs::read_to_string(repo_root().join("examples/promptfoo/fake-model.json")).expect("script");
    let server = FakeLlm::scripted(&script).await;
    let designed: [(&str, &[(bool, f64)]); 2] = [
        ("llm-rubric", &[(true, 1.0), (true, 1.0), (false, 0.667)]),
        ("rag", &[(true, 0.85), (false, 0.667)]),
    ];
    for (name, rows) in designed {
        let dir = tempfile::tempdir().expect("tmp");
        let out = dir.path().join("r.jsonl");
        let config = format!("examples/promptfoo/{name}/promptfooconfig.yaml");
        let mut cmd = agentv(&repo_root(), &["eval", &config, "--out"]);
        cmd.arg(&out)
            .env("OPENAI_BASE_URL", format!("{}/v1", server.uri()))
            .env("OPENAI_API_KEY", "offline-placeholder-key");
        let run = tokio::task::spawn_blocking(move || Run::of(&mut cmd))
            .await
            .expect("run");
        run.code(1);
        let records = results(&out);
        let got: Vec<(bool, f64)> = records
            .iter()
            .map(|r| (r["verdict"] == "pass", r["score"].as_f64().expect("score")))
            .collect();
        assert_eq!(got.len(), rows.len(), "{name}: {got:?}");
        for (g, w) in got.iter().zip(rows) {
            assert!(g.0 == w.0 && (g.1 - w.1).abs() < 1e-3, "{name}: {got:?} vs {rows:?}");
        }
    }
}
