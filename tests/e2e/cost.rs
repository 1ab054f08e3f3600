//! Cost is known or said to be unknown (`docs/running.md#cost`): LLM targets' tokens are
//! priced from the pricing table or the target's `pricing:`, `--budget-usd` counts them and
//! refuses a target it cannot count before any call, and reports show an unknown cost as `–`.
//! The kit's fake LLM service on 127.0.0.1 answers every call with 20 input and 5 output tokens.

use agentv_testkit::llm::{Api, FakeLlm};
use agentv_testkit::{Project, Run};
use serde_json::Value;

const KEY: &str = "sk-cost-e2e-secret-value";

/// `n` cases graded by a keyword and a `cost` check of at most a cent.
fn suite(n: usize) -> String {
    let mut yaml = String::from(
        "execution:\n  evaluators:\n    - {name: kw, type: keywords, expected: ['4']}\n    - {name: cheap, type: cost, budget: 0.01}\nevalcases:\n",
    );
    for i in 0..n {
        yaml.push_str(&format!(
            "  - {{id: c{i}, expected_outcome: x, input_messages: [{{role: user, content: q{i}}}]}}\n"
        ));
    }
    yaml
}

/// An `api` target named `default` on `server`, its model (or deployment) replaced by `model`,
/// with `extra` settings.
fn targets(api: Api, server: &FakeLlm, model: &str, extra: &str) -> String {
    let entry = api
        .target("default", &server.uri(), "${{ E2E_COST_KEY }}")
        .replace("model: gpt-4o-mini", &format!("model: {model}"))
        .replace("deployment_name: dep", &format!("deployment_name: {model}"));
    format!("targets:\n{entry}{extra}")
}

async fn run(p: &Project, args: &[&str]) -> Run {
    let mut cmd = p.command(args);
    cmd.env("E2E_COST_KEY", KEY);
    p.output_async(cmd).await
}

fn cost(r: &Value) -> Option<f64> {
    r["execution_metrics"]["cost_usd"].as_f64()
}

/// An OpenAI target reports tokens and no cost: agentv prices them (gpt-4o: $2.50 and $10 per
/// million, so 20 in and 5 out cost $0.0001), the `cost` grader grades it, the record says how
/// it was priced, and `--budget-usd` counts it: with a budget of $0.00015 the second case
/// reaches it and the third is not run (exit 3).
#[tokio::test]
async fn openai_target_cost_is_priced_from_tokens_and_counted_by_the_budget() {
    let server = FakeLlm::start().await;
    let p = Project::new()
        .file("targets.yaml", &targets(Api::OpenAi, &server, "gpt-4o", ""))
        .file("e.yaml", &suite(3));
    let run = run(&p, &["eval", "e.yaml", "--out", "r.jsonl", "--budget-usd", "0.00015"]).await;
    run.code(3);
    let records = p.results("r.jsonl");
    assert_eq!(records.len(), 3);
    let ran: Vec<&Value> = records.iter().filter(|r| r["attempt"] != 0).collect();
    assert_eq!(ran.len(), 2, "the budget stopped the third case: {records:?}");
    for r in &ran {
        let usd = cost(r).expect("a priced cost");
        assert!((usd - 0.0001).abs() < 1e-12, "{usd}");
        assert_eq!(r["cost_usd"], r["execution_metrics"]["cost_usd"], "the 4.x key too");
        assert_eq!(r["evaluator_results"][1]["score"], 1.0, "{r}");
        assert_eq!(r["evaluator_results"][1]["hits"][0], "Cost $0.0001 <= $0.0100 budget");
        let how = &r["lm_provider_request"]["response_metadata"]["pricing"];
        assert_eq!(how["source"], "pricing table");
        assert_eq!(how["model"], "gpt-4o");
    }
    assert_eq!(server.requests().await.len(), 2, "no call for the case not run");
    assert!(!run.stderr.contains(KEY) && !run.stdout.contains(KEY));
}

/// `--budget-usd` with a target whose cost cannot be known (a model the pricing table lacks,
/// no `pricing:`) is a usage error before any call, naming the target and the fix.
#[tokio::test]
async fn budget_with_a_target_whose_cost_cannot_be_known_is_a_usage_error() {
    let server = FakeLlm::start().await;
    let p = Project::new()
        .file("targets.yaml", &targets(Api::OpenAi, &server, "llama3", ""))
        .file("e.yaml", &suite(1));
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl", "--budget-usd", "5"])
        .await
        .code(2)
        .stderr_has("--budget-usd cannot count target `default`, whose cost cannot be known: agentv's pricing table has no model `llama3`; give the target a price: `pricing: {model: <a model of the table>}`");
    assert!(server.requests().await.is_empty(), "nothing was called");
    assert!(!p.path().join("r.jsonl").exists(), "nothing was written");
    // The same target with a price is counted.
    let priced = targets(
        Api::OpenAi,
        &server,
        "llama3",
        "    pricing: {input_per_million: 1000, output_per_million: 2000}\n",
    );
    std::fs::write(p.path().join("targets.yaml"), priced).expect("write");
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl", "--budget-usd", "5"])
        .await
        .code(0);
    let usd = cost(&p.result("r.jsonl", "c0")).expect("priced by the target's rates");
    assert!((usd - 0.03).abs() < 1e-12, "20 × $0.001 + 5 × $0.002: {usd}");
}

/// Judges spend too: a judge target whose cost cannot be known makes `--budget-usd` a usage
/// error before any call, as an unpriced eval target does.
#[tokio::test]
async fn budget_with_a_judge_target_whose_cost_cannot_be_known_is_a_usage_error() {
    let server = FakeLlm::start().await;
    let judge = Api::OpenAi
        .target("judge", &server.uri(), "${{ E2E_COST_KEY }}")
        .replace("model: gpt-4o-mini", "model: llama3");
    let targets = format!(
        "{}    judge_target: judge\n{judge}",
        targets(Api::OpenAi, &server, "gpt-4o-mini", "")
    );
    let p = Project::new().file("targets.yaml", &targets).file("e.yaml", &suite(1));
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl", "--budget-usd", "5"])
        .await
        .code(2)
        .stderr_has("--budget-usd cannot count judge target `judge` (of `default`), whose cost cannot be known");
    assert!(server.requests().await.is_empty(), "nothing was called");
}

/// An Azure deployment's name says nothing of its model: `pricing: {model: …}` names it. A typo
/// there is an error that suggests the table's name.
#[tokio::test]
async fn azure_deployment_is_priced_as_the_model_its_pricing_names() {
    let server = FakeLlm::start().await;
    let priced = targets(Api::Azure, &server, "prod-chat", "    pricing: {model: gpt-4o-mini}\n");
    let p = Project::new().file("targets.yaml", &priced).file("e.yaml", &suite(1));
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl", "--budget-usd", "1"])
        .await
        .code(0);
    let usd = cost(&p.result("r.jsonl", "c0")).expect("priced");
    assert!((usd - 0.000006).abs() < 1e-12, "20 × $0.15/M + 5 × $0.60/M: {usd}");
    let typo = targets(Api::Azure, &server, "prod-chat", "    pricing: {model: gpt-4o-mni}\n");
    std::fs::write(p.path().join("targets.yaml"), typo).expect("write");
    run(&p, &["eval", "e.yaml", "--out", "r2.jsonl"])
        .await
        .code(2)
        .stderr_has("agentv's pricing table has no model `gpt-4o-mni`")
        .stderr_has("did you mean `gpt-4o-mini`");
}

/// A cost nobody knows is shown as unknown in every report, never as $0.0000, and the `cost`
/// grader does not pass it as free.
#[tokio::test]
async fn unknown_cost_is_shown_as_unknown_in_every_report() {
    let server = FakeLlm::start().await;
    let p = Project::new()
        .file("targets.yaml", &targets(Api::OpenAi, &server, "llama3", ""))
        .file("e.yaml", &suite(1));
    let run = run(
        &p,
        &[
            "eval",
            "e.yaml",
            "--out",
            "r.jsonl",
            "--report",
            "html=r.html",
            "--report",
            "markdown=r.md",
        ],
    )
    .await;
    run.code(0);
    let r = p.result("r.jsonl", "c0");
    assert_eq!(cost(&r), None, "{r}");
    assert!(r.get("cost_usd").is_none());
    assert_eq!(r["evaluator_results"][1]["score"], 0.0);
    assert_eq!(
        r["evaluator_results"][1]["misses"][0],
        "No cost data available in trace"
    );
    let html = std::fs::read_to_string(p.path().join("r.html")).expect("html");
    assert!(html.contains("<th>Total cost</th><td>–</td>"), "{html}");
    let md = std::fs::read_to_string(p.path().join("r.md")).expect("markdown");
    assert!(md.contains("| cost |") && md.contains(" | – |"), "{md}");
    for (what, text) in [
        ("html", &html),
        ("markdown", &md),
        ("stdout", &run.stdout),
        ("stderr", &run.stderr),
    ] {
        assert!(
            !text.contains("$0.0000"),
            "{what} shows an unknown cost as zero:\n{text}"
        );
    }
}

/// A code judge's calls through the target proxy are priced like the target's:
/// `details.target_proxy` carries their cost (two gpt-4o-mini calls of 20 + 5 tokens).
#[tokio::test]
async fn judge_calls_through_the_proxy_are_priced() {
    let judge = r#"import json, os, sys, urllib.request
json.load(sys.stdin)
url, token = os.environ["AGENTV_TARGET_PROXY_URL"], os.environ["AGENTV_TARGET_PROXY_TOKEN"]
for q in ["one", "two"]:
    req = urllib.request.Request(url + "/invoke", data=json.dumps({"question": q}).encode(), method="POST")
    req.add_header("Authorization", "Bearer " + token)
    urllib.request.urlopen(req, timeout=60).read()
print(json.dumps({"score": 1}))
"#;
    let server = FakeLlm::start().await;
    let targets = format!(
        "targets:\n  - name: default\n    provider: mock\n    judge_target: judge\n    response: 4\n{}",
        Api::OpenAi.target("judge", &server.uri(), "${{ E2E_COST_KEY }}")
    );
    let yaml = "execution:\n  evaluators:\n    - {name: j, type: code_judge, script: [python3, judge.py], target: true}\nevalcases:\n  - {id: c0, expected_outcome: x, input_messages: [{role: user, content: q}]}\n";
    let p = Project::new()
        .file("targets.yaml", &targets)
        .file("judge.py", judge)
        .file("e.yaml", yaml);
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl"]).await.code(0);
    let proxy = &p.result("r.jsonl", "c0")["evaluator_results"][0]["details"]["target_proxy"];
    assert_eq!(proxy["call_count"], 2, "{proxy}");
    let usd = proxy["cost_usd"].as_f64().expect("a priced cost");
    assert!((usd - 0.000012).abs() < 1e-12, "{usd}");
}
