//! The four LLM API clients against fake servers on 127.0.0.1 that check the request shape the
//! real APIs require and answer like them (the kit's answers, or a test's own where it checks a
//! field the canned answer lacks).

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentv_core::load::{Env, Secrets, load_targets_file};
use agentv_core::model::TokenUsage;
use agentv_core::providers::{ChatMessage, Provider, ProviderError, ProviderRequest, ResponseCache, TargetRegistry};
use agentv_testkit::llm::{Api, USAGE};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const KEY: &str = "sk-test-secret-key-123";

fn registry(yaml: &str, cache: Option<&std::path::Path>) -> (Arc<TargetRegistry>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("targets.yaml");
    std::fs::write(&path, yaml).expect("write");
    let file = load_targets_file(&path);
    assert!(!file.has_errors(), "{:?}", file.diagnostics);
    let env = Env::from_pairs([("TEST_API_KEY".to_owned(), KEY.to_owned())]);
    let cache = cache.map(|d| Arc::new(ResponseCache::new(d, Secrets::default())));
    let reg = TargetRegistry::new(Some(file), Arc::new(env), Secrets::default()).with_response_cache(cache);
    (Arc::new(reg), dir)
}

fn provider(yaml: &str) -> (Arc<dyn Provider>, tempfile::TempDir) {
    let (reg, dir) = registry(yaml, None);
    (reg.resolve("t").expect("resolves"), dir)
}

fn request() -> ProviderRequest {
    ProviderRequest {
        eval_id: "case-1".into(),
        attempt: 1,
        question: "What is 2+2?".into(),
        guidelines: "[[ ## Guidelines ## ]]\nBe exact.".into(),
        ..ProviderRequest::default()
    }
}

async fn only_request(server: &MockServer) -> (Request, Value) {
    let received = server.received_requests().await.expect("recording on");
    assert_eq!(received.len(), 1, "requests: {}", received.len());
    let body: Value = serde_json::from_slice(&received[0].body).expect("json body");
    (received[0].clone(), body)
}

fn header<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers.get(name).and_then(|v| v.to_str().ok())
}

fn openai_answer(text: &str) -> Value {
    Api::OpenAi.answer(text, USAGE)
}

fn openai_target(server: &MockServer, extra: &str) -> String {
    format!(
        "targets:\n  - name: t\n    provider: openai\n    base_url: {}/v1\n    model: gpt-4o-mini\n    api_key: ${{{{ TEST_API_KEY }}}}\n    initialDelayMs: 1\n{extra}",
        server.uri()
    )
}

#[tokio::test]
async fn openai_chat_completions() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 21, "completion_tokens": 4, "total_tokens": 25,
                      "prompt_tokens_details": {"cached_tokens": 16}}
        })))
        .mount(&server)
        .await;
    let (p, _d) = provider(&openai_target(
        &server,
        "    organization: org-9\n    temperature: 0\n    maxOutputTokens: 50\n",
    ));
    let r = p.invoke(&request()).await.expect("answers");
    assert_eq!(r.output_messages[0].text().as_deref(), Some("4"));
    assert_eq!(
        r.token_usage,
        Some(TokenUsage {
            input: 21,
            output: 4,
            cached: Some(16)
        })
    );
    assert!(r.duration_ms.is_some());
    let (req, body) = only_request(&server).await;
    assert_eq!(header(&req, "authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(header(&req, "openai-organization"), Some("org-9"));
    assert_eq!(header(&req, "content-type"), Some("application/json"));
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["max_tokens"], 50);
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .expect("system")
            .ends_with("[[ ## Guidelines ## ]]\nBe exact.")
    );
    assert_eq!(body["messages"][1], json!({"role": "user", "content": "What is 2+2?"}));
}

#[tokio::test]
async fn openai_multi_turn_chat_prompt() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(openai_answer("ok")))
        .mount(&server)
        .await;
    let (p, _d) = provider(&openai_target(&server, ""));
    let mut req = request();
    let turn = |role: &str, content: &str| ChatMessage {
        role: role.into(),
        content: content.into(),
    };
    req.chat_prompt = Some(vec![
        turn("system", "Be terse."),
        turn("user", "Hi"),
        turn("assistant", "Hello"),
        turn("user", "Again"),
    ]);
    p.invoke(&req).await.expect("answers");
    let (_, body) = only_request(&server).await;
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .expect("system")
            .ends_with("Be terse.")
    );
}

#[tokio::test]
async fn azure_deployment_url_and_api_key_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/openai/deployments/gpt4o-prod/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(openai_answer("4")))
        .mount(&server)
        .await;
    let yaml = format!(
        "targets:\n  - name: t\n    provider: azure-openai\n    endpoint: {}\n    deploymentName: gpt4o-prod\n    api_key: ${{{{ TEST_API_KEY }}}}\n",
        server.uri()
    );
    let (p, _d) = provider(&yaml);
    let r = p.invoke(&request()).await.expect("answers");
    assert_eq!(r.output_messages[0].text().as_deref(), Some("4"));
    let (req, body) = only_request(&server).await;
    assert_eq!(req.url.query(), Some("api-version=2024-10-01-preview"));
    assert_eq!(header(&req, "api-key"), Some(KEY));
    assert!(header(&req, "authorization").is_none());
    assert!(body.get("model").is_none(), "the deployment names the model");
}

#[tokio::test]
async fn anthropic_messages_with_thinking() {
    let server = MockServer::start().await;
    let answer = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "thinking", "thinking": "2+2 is 4", "signature": "sig"}, {"type": "text", "text": "4"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 30, "output_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 5}
    });
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&server)
        .await;
    let yaml = format!(
        "targets:\n  - name: t\n    provider: anthropic\n    base_url: {}\n    model: claude-sonnet-4-5\n    api_key: ${{{{ TEST_API_KEY }}}}\n    max_output_tokens: 2000\n    thinking_budget: 1024\n    temperature: 0.2\n",
        server.uri()
    );
    let (p, _d) = provider(&yaml);
    let r = p.invoke(&request()).await.expect("answers");
    assert_eq!(
        r.output_messages[0].text().as_deref(),
        Some("4"),
        "thinking stays out of the answer"
    );
    assert_eq!(
        r.token_usage,
        Some(TokenUsage {
            input: 35,
            output: 12,
            cached: Some(5)
        })
    );
    let (req, body) = only_request(&server).await;
    assert_eq!(header(&req, "x-api-key"), Some(KEY));
    assert_eq!(header(&req, "anthropic-version"), Some("2023-06-01"));
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["max_tokens"], 2000);
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 1024}));
    assert!(
        body.get("temperature").is_none(),
        "thinking requires the default temperature"
    );
    assert!(body["system"].as_str().expect("system").contains("Be exact."));
    assert_eq!(body["messages"], json!([{"role": "user", "content": "What is 2+2?"}]));
}

#[tokio::test]
async fn gemini_generate_content() {
    let server = MockServer::start().await;
    let answer = json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "4"}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 17, "candidatesTokenCount": 1, "totalTokenCount": 18}
    });
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-2.5-flash:generateContent"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&server)
        .await;
    let yaml = format!(
        "targets:\n  - name: t\n    provider: google\n    base_url: {}\n    api_key: ${{{{ TEST_API_KEY }}}}\n    temperature: 0.1\n    max_output_tokens: 64\n",
        server.uri()
    );
    let (p, _d) = provider(&yaml);
    let r = p.invoke(&request()).await.expect("answers");
    assert_eq!(r.output_messages[0].text().as_deref(), Some("4"));
    assert_eq!(
        r.token_usage,
        Some(TokenUsage {
            input: 17,
            output: 1,
            cached: None
        })
    );
    let (req, body) = only_request(&server).await;
    assert_eq!(header(&req, "x-goog-api-key"), Some(KEY));
    assert!(req.url.query().is_none(), "the key is never in the URL");
    assert_eq!(
        body["contents"],
        json!([{"role": "user", "parts": [{"text": "What is 2+2?"}]}])
    );
    assert!(
        body["systemInstruction"]["parts"][0]["text"]
            .as_str()
            .expect("system")
            .contains("Be exact.")
    );
    assert_eq!(
        body["generationConfig"],
        json!({"temperature": 0.1, "maxOutputTokens": 64})
    );
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_json(json!({"error": {"message": "Rate limit reached"}})),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(openai_answer("4")))
        .mount(&server)
        .await;
    // A 30 s computed delay: only the server's Retry-After: 0 lets this finish quickly.
    let (p, _d) = provider(&openai_target(&server, "    initial_delay_ms: 30000\n"));
    let started = Instant::now();
    let r = p.invoke(&request()).await.expect("answers after a retry");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "Retry-After was not honoured"
    );
    assert_eq!(r.metadata.as_ref().and_then(|m| m.get("attempts")), Some(&json!(2)));
    assert_eq!(server.received_requests().await.expect("recorded").len(), 2);
}

#[tokio::test]
async fn server_errors_retry_then_give_up_with_the_attempt_count() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "upstream overloaded"}})))
        .expect(3)
        .mount(&server)
        .await;
    let (p, _d) = provider(&openai_target(&server, "    max_retries: 2\n"));
    let err = p.invoke(&request()).await.expect_err("gives up");
    assert_eq!(
        err.to_string(),
        "HTTP 500: upstream overloaded (gave up after 3 attempts)"
    );
}

#[tokio::test]
async fn unauthorized_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "Incorrect API key provided"}})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let (p, _d) = provider(&openai_target(&server, ""));
    let err = p.invoke(&request()).await.expect_err("fails");
    assert_eq!(err.to_string(), "HTTP 401: Incorrect API key provided");
}

#[tokio::test]
async fn malformed_body_is_a_clear_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>oops</html>"))
        .mount(&server)
        .await;
    let (p, _d) = provider(&openai_target(&server, ""));
    let err = p.invoke(&request()).await.expect_err("fails");
    assert!(
        err.to_string().starts_with("malformed response from the provider"),
        "{err}"
    );
    assert!(err.to_string().ends_with("<html>oops</html>"), "{err}");
}

#[tokio::test]
async fn slow_server_times_out() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(openai_answer("late"))
                .set_delay(Duration::from_secs(5)),
        )
        .mount(&server)
        .await;
    let (p, _d) = provider(&openai_target(&server, "    timeout_seconds: 0.3\n"));
    let err = p.invoke(&request()).await.expect_err("times out");
    assert!(matches!(err, ProviderError::Timeout(_)), "{err}");
}

#[tokio::test]
async fn cached_answer_makes_no_request_in_a_second_run() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(openai_answer("4")))
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().expect("tmp");
    let yaml = openai_target(&server, "");
    for _ in 0..2 {
        let (reg, _d) = registry(&yaml, Some(cache.path()));
        let r = reg
            .resolve("t")
            .expect("resolves")
            .invoke(&request())
            .await
            .expect("answers");
        assert_eq!(r.output_messages[0].text().as_deref(), Some("4"));
    }
    assert_eq!(
        server.received_requests().await.expect("recorded").len(),
        1,
        "the second run hit the cache"
    );
    let stored: Vec<_> = agentv_testkit::walk(cache.path());
    assert_eq!(stored.len(), 1);
    let text = std::fs::read_to_string(&stored[0]).expect("cache file");
    assert!(!text.contains(KEY), "the cache holds no secret");
}

#[test]
fn missing_credentials_are_listed_per_target() {
    let yaml = "targets:\n  - name: t\n    provider: anthropic\n    model: m\n    api_key: ${{ NO_SUCH_ANTHROPIC_KEY }}\n    judge_target: j\n  - name: j\n    provider: gemini\n    api_key: ${{ NO_SUCH_GEMINI_KEY }}\n";
    let (reg, _d) = registry(yaml, None);
    let errs = reg.resolve_target("t").expect_err("missing");
    let text = errs.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    assert!(
        text.contains("NO_SUCH_ANTHROPIC_KEY (target `t`, setting `api_key`)"),
        "{text}"
    );
    assert!(
        text.contains("NO_SUCH_GEMINI_KEY (target `j`, setting `api_key`)"),
        "{text}"
    );
    let (reg, _d) = registry("targets:\n  - {name: t, provider: openai, model: gpt-4o}\n", None);
    let err = reg.resolve("t").expect_err("no key");
    assert!(err.to_string().contains("target `t` needs `api_key`"), "{err}");
}
