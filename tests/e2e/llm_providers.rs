//! One suite against each LLM provider by changing only targets.yaml; the LLM judge goes
//! through the same provider. The kit's fake LLM service on 127.0.0.1 plays the APIs.

use agentv_testkit::llm::{Api, FakeLlm};
use agentv_testkit::{Project, Run};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, ResponseTemplate};

const KEY: &str = "sk-e2e-very-secret-value";
const SUITE: &str = "execution:\n  evaluators:\n    - {name: kw, type: keywords, expected: ['4']}\n    - {name: judge, type: llm_judge}\nevalcases:\n  - id: add\n    expected_outcome: Answers 4.\n    input_messages: [{role: user, content: What is 2+2?}]\n";

fn targets(api: Api, uri: &str) -> String {
    format!("targets:\n{}", api.target("default", uri, "${{ E2E_PROVIDER_KEY }}"))
}

async fn run(p: &Project, args: &'static [&'static str]) -> Run {
    let mut cmd = p.command(args);
    cmd.env("E2E_PROVIDER_KEY", KEY);
    p.output_async(cmd).await
}

#[tokio::test]
async fn every_provider_answers_and_judges() {
    for api in Api::ALL {
        let provider = api.provider();
        let server = FakeLlm::start().await;
        let p = Project::new()
            .file("targets.yaml", &targets(api, &server.uri()))
            .file("e.yaml", SUITE);
        run(&p, &["eval", "e.yaml", "--out", "r.jsonl"])
            .await
            .code(0)
            .stderr_has(&format!("[provider={provider}]"));
        let r = p.result("r.jsonl", "add");
        assert_eq!(r["candidate_answer"], "2+2 is 4.", "{provider}");
        assert_eq!(r["evaluator_results"][1]["score"], 0.8, "{provider}: {r}");
        assert_eq!(r["evaluator_results"][1]["hits"], json!(["says 4"]));
        assert_eq!(
            r["evaluator_results"][1]["evaluator_provider_request"]["target"],
            "default"
        );
        assert!((r["score"].as_f64().expect("score") - 0.9).abs() < 1e-9, "{provider}");
        assert_eq!(
            r["execution_metrics"]["token_usage"],
            json!({"input": 20, "output": 5}),
            "{provider}"
        );
        assert_eq!(server.requests().await.len(), 2, "{provider}: answer + judge");
    }
}

#[tokio::test]
async fn cache_and_prompt_dumps() {
    let server = FakeLlm::start().await;
    let p = Project::new()
        .file("targets.yaml", &targets(Api::OpenAi, &server.uri()))
        .file("e.yaml", SUITE);
    run(
        &p,
        &["eval", "e.yaml", "--out", "r1.jsonl", "--cache", "--dump-prompts"],
    )
    .await
    .code(0);
    assert_eq!(server.requests().await.len(), 2);
    run(&p, &["eval", "e.yaml", "--out", "r2.jsonl", "--cache"])
        .await
        .code(0);
    assert_eq!(
        server.requests().await.len(),
        2,
        "the second identical run made no call"
    );
    assert_eq!(
        p.result("r2.jsonl", "add")["score"],
        p.result("r1.jsonl", "add")["score"]
    );
    let dumps: Vec<_> = std::fs::read_dir(p.path().join(".agentv/prompts"))
        .expect("dumps")
        .flatten()
        .map(|e| e.path())
        .collect();
    let names: Vec<String> = dumps
        .iter()
        .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    assert!(names.contains(&"add-1.json".to_owned()), "{names:?}");
    assert!(names.contains(&"add-1-judge-default.json".to_owned()), "{names:?}");
    for dump in &dumps {
        let text = std::fs::read_to_string(dump).expect("dump");
        assert!(!text.contains(KEY), "secret in {}", dump.display());
        assert!(text.contains("gpt-4o-mini"), "settings are dumped");
    }
    let case: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join(".agentv/prompts/add-1.json")).expect("dump"))
            .expect("json");
    assert_eq!(case["request"]["question"], "What is 2+2?");
    for results in ["r1.jsonl", "r2.jsonl"] {
        let text = std::fs::read_to_string(p.path().join(results)).expect("results");
        assert!(!text.contains(KEY));
    }
}

#[tokio::test]
async fn provider_errors_never_show_the_key() {
    let server = FakeLlm::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_json(json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}})),
        )
        .mount(server.server())
        .await;
    let p = Project::new()
        .file("targets.yaml", &targets(Api::OpenAi, &server.uri()))
        .file("e.yaml", SUITE);
    let out = run(&p, &["eval", "e.yaml", "--out", "r.jsonl"]).await;
    out.code(3).stdout_has("HTTP 401: Incorrect API key provided: ***");
    assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
    let r = p.result("r.jsonl", "add");
    assert_eq!(r["error"], "HTTP 401: Incorrect API key provided: ***");
}

/// `--cache` (`docs/architecture.md#cache`) caches a warm target's answers too, and the summary
/// counts lookups.
#[tokio::test]
async fn warm_target_is_cached_and_the_summary_counts_hits() {
    let server = FakeLlm::start().await;
    let targets = format!("{}    temperature: 0.7\n", targets(Api::OpenAi, &server.uri()));
    let p = Project::new().file("targets.yaml", &targets).file("e.yaml", SUITE);
    run(&p, &["eval", "e.yaml", "--out", "r1.jsonl", "--cache"])
        .await
        .code(0)
        .stdout_has("Cache:         0 hits, 2 misses");
    run(&p, &["eval", "e.yaml", "--out", "r2.jsonl", "--cache"])
        .await
        .code(0)
        .stdout_has("Cache:         2 hits, 0 misses");
    assert_eq!(server.requests().await.len(), 2, "the second run made no call");
}
