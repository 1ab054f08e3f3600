//! The proxy's HTTP contract (`docs/architecture.md#target-proxy`), against a real server on
//! 127.0.0.1.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{FakeInvoker, bearer, http, start};
use serde_json::json;

#[tokio::test]
async fn info_reports_target_budget_and_count() {
    let proxy = start(7, Arc::default()).await;
    let (status, body) = http(&proxy, "GET", "/info", Some(&bearer(&proxy)), b"").await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"targetName": "judge", "maxCalls": 7, "callCount": 0, "availableTargets": ["judge", "other", "locked"]})
    );
}

#[tokio::test]
async fn every_bad_token_is_401_before_anything_else() {
    let invoker = Arc::new(FakeInvoker::default());
    let proxy = start(5, invoker.clone()).await;
    let token = proxy.token().to_owned();
    assert_eq!(token.len(), 64);
    assert!(token.chars().all(|c| c.is_ascii_hexdigit()));
    let mut almost = token.clone();
    let last = if almost.ends_with('0') { '1' } else { '0' };
    almost.pop();
    almost.push(last);
    let auths = [
        None,
        Some(token.clone()),                      // no "Bearer " scheme
        Some(format!("Basic {token}")),           // wrong scheme
        Some("Bearer ".to_owned()),               // empty token
        Some(format!("Bearer {almost}")),         // one character off
        Some(format!("Bearer {token}0")),         // one character too many
        Some(format!("Bearer {}", &token[..63])), // one character short
    ];
    for auth in auths {
        for (method, path) in [("GET", "/info"), ("POST", "/invoke"), ("GET", "/nowhere")] {
            let (status, body) = http(&proxy, method, path, auth.as_deref(), b"{\"question\": \"q\"}").await;
            assert_eq!(
                (status, &body),
                (401, &json!({"error": "Unauthorized"})),
                "{auth:?} {method} {path}"
            );
        }
    }
    assert_eq!(invoker.calls.load(Ordering::SeqCst), 0);
}

/// The `Bearer` scheme is matched in any letter case, and one or more spaces may follow it
/// (RFC 7235 §2.1); the token itself stays exact.
#[tokio::test]
async fn proxy_accepts_the_bearer_scheme_case_insensitively() {
    let invoker = Arc::new(FakeInvoker::default());
    let proxy = start(5, invoker.clone()).await;
    let token = proxy.token().to_owned();
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        for gap in [" ", "   "] {
            let auth = format!("{scheme}{gap}{token}");
            let (status, body) = http(&proxy, "GET", "/info", Some(&auth), b"").await;
            assert_eq!(status, 200, "{auth:?}: {body}");
        }
    }
    for refused in [
        format!("Bearer {}", token.to_uppercase()),
        format!("Bearerx {token}"),
        format!("Bearer\t{token}"),
        "bearer    ".to_owned(),
    ] {
        let (status, _) = http(&proxy, "GET", "/info", Some(&refused), b"").await;
        assert_eq!(status, 401, "{refused:?}");
    }
}

#[tokio::test]
async fn routes_methods_and_bodies() {
    let proxy = start(5, Arc::default()).await;
    let auth = bearer(&proxy);
    let cases: &[(&str, &str, &[u8], u16, &str)] = &[
        ("POST", "/invoke", b"{\"question\": \"hi\"}", 200, ""),
        ("GET", "/nowhere", b"", 404, "Not found: /nowhere"),
        ("GET", "/invoke", b"", 405, "Method not allowed: use POST"),
        ("POST", "/info", b"", 405, "Method not allowed: use GET /info"),
        ("POST", "/invoke", b"{not json", 400, "Invalid JSON body"),
        (
            "POST",
            "/invoke",
            b"{\"systemPrompt\": \"s\"}",
            400,
            "Invalid JSON body",
        ),
        (
            "POST",
            "/invoke",
            b"{\"question\": \"  \"}",
            400,
            "Missing required field `question`",
        ),
        (
            "POST",
            "/invoke",
            b"{\"question\": \"q\", \"target\": \"nope\"}",
            400,
            "unknown target `nope`; available targets: judge, other, locked",
        ),
        (
            "POST",
            "/invoke",
            b"{\"question\": \"q\", \"target\": \"locked\"}",
            400,
            "missing environment variables: LOCKED_KEY",
        ),
        ("POST", "/invoke", b"{\"question\": \"fail\"}", 500, "provider exploded"),
        (
            "POST",
            "/invokeBatch",
            b"{\"requests\": 3}",
            400,
            "Invalid JSON body: expected {\"requests\": [...]}",
        ),
    ];
    for (method, path, body, want_status, want_error) in cases {
        let (status, reply) = http(&proxy, method, path, Some(&auth), body).await;
        assert_eq!(status, *want_status, "{method} {path} {reply}");
        if !want_error.is_empty() {
            let error = reply["error"].as_str().unwrap_or_default();
            assert!(error.starts_with(want_error), "{method} {path}: {error}");
        }
    }
}

#[tokio::test]
async fn body_over_one_mebibyte_is_413() {
    let proxy = start(5, Arc::default()).await;
    let question = "x".repeat(1024 * 1024);
    let body = serde_json::to_vec(&json!({"question": question})).expect("json");
    let (status, reply) = http(&proxy, "POST", "/invoke", Some(&bearer(&proxy)), &body).await;
    assert_eq!(status, 413, "{reply}");
    assert_eq!(reply["error"], "Request body exceeds 1048576 bytes");
}

#[tokio::test]
async fn default_and_overridden_targets() {
    let proxy = start(5, Arc::default()).await;
    let auth = bearer(&proxy);
    for (body, want) in [
        (json!({"question": "q1"}), "judge: q1"),
        (json!({"question": "q2", "target": "other"}), "other: q2"),
        (
            json!({"question": "q3", "target": "judge", "evalCaseId": "c", "attempt": 2, "systemPrompt": "s"}),
            "judge: q3",
        ),
    ] {
        let (status, reply) = http(&proxy, "POST", "/invoke", Some(&auth), body.to_string().as_bytes()).await;
        assert_eq!(status, 200);
        assert_eq!(reply["rawText"], want);
        assert_eq!(reply["outputMessages"][0]["content"], want);
    }
    let (_, info) = http(&proxy, "GET", "/info", Some(&auth), b"").await;
    assert_eq!(info["callCount"], 3, "overrides count toward the budget");
}

#[tokio::test]
async fn budget_of_n_serves_exactly_n_under_8n_concurrent_requests() {
    for n in [1u32, 5, 16] {
        let invoker = Arc::new(FakeInvoker {
            delay: Duration::from_millis(5),
            ..FakeInvoker::default()
        });
        let proxy = Arc::new(start(n, invoker.clone()).await);
        let tasks: Vec<_> = (0..8 * n)
            .map(|i| {
                let proxy = proxy.clone();
                tokio::spawn(async move {
                    let body = json!({"question": format!("q{i}")}).to_string();
                    http(&proxy, "POST", "/invoke", Some(&bearer(&proxy)), body.as_bytes())
                        .await
                        .0
                })
            })
            .collect();
        let mut statuses = Vec::new();
        for t in tasks {
            statuses.push(t.await.expect("task"));
        }
        let ok = statuses.iter().filter(|s| **s == 200).count();
        let refused = statuses.iter().filter(|s| **s == 429).count();
        assert_eq!((ok, refused), (n as usize, 7 * n as usize), "budget {n}");
        assert_eq!(invoker.calls.load(Ordering::SeqCst), n as usize);
        assert_eq!(proxy.call_count(), n);
    }
}

#[tokio::test]
async fn spent_budget_is_429() {
    let proxy = start(1, Arc::default()).await;
    let auth = bearer(&proxy);
    assert_eq!(
        http(&proxy, "POST", "/invoke", Some(&auth), b"{\"question\": \"a\"}")
            .await
            .0,
        200
    );
    let (status, reply) = http(&proxy, "POST", "/invoke", Some(&auth), b"{\"question\": \"b\"}").await;
    assert_eq!(
        (status, reply),
        (429, json!({"error": "Max calls exceeded (limit: 1)"}))
    );
}

#[tokio::test]
async fn batch_over_budget_is_refused_whole() {
    let invoker = Arc::new(FakeInvoker::default());
    let proxy = start(3, invoker.clone()).await;
    let body = json!({"requests": [{"question": "a"}, {"question": "b"}, {"question": "c"}, {"question": "d"}]});
    let (status, reply) = http(
        &proxy,
        "POST",
        "/invokeBatch",
        Some(&bearer(&proxy)),
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(
        (status, reply),
        (429, json!({"error": "Max calls exceeded (limit: 3)"}))
    );
    assert_eq!((invoker.calls.load(Ordering::SeqCst), proxy.call_count()), (0, 0));
}

#[tokio::test]
async fn batch_runs_concurrently_with_per_item_errors() {
    let invoker = Arc::new(FakeInvoker {
        delay: Duration::from_millis(100),
        ..FakeInvoker::default()
    });
    let proxy = start(10, invoker.clone()).await;
    let body = json!({"requests": [
        {"question": "a"},
        {"question": "b", "target": "other"},
        {"question": "c", "target": "nope"},
        {"question": "fail"},
        {"question": "e"}
    ]});
    let (status, reply) = http(
        &proxy,
        "POST",
        "/invokeBatch",
        Some(&bearer(&proxy)),
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(status, 200);
    let responses = reply["responses"].as_array().expect("responses");
    assert_eq!(responses.len(), 5);
    assert_eq!(responses[0]["rawText"], "judge: a");
    assert_eq!(responses[1]["rawText"], "other: b");
    assert!(
        responses[2]["error"]
            .as_str()
            .expect("error")
            .starts_with("unknown target `nope`")
    );
    assert_eq!(responses[3]["error"], "provider exploded");
    assert_eq!(responses[4]["rawText"], "judge: e");
    assert_eq!(proxy.call_count(), 5, "each batch item counts one call");
    assert!(invoker.peak.load(Ordering::SeqCst) >= 3, "items ran one at a time");
    let stats = proxy.shutdown().await;
    assert!(stats.batch_used);
}

#[tokio::test]
async fn closed_proxy_answers_503_and_shutdown_stops_listening() {
    let proxy = start(5, Arc::default()).await;
    let auth = bearer(&proxy);
    let addr = proxy.url().trim_start_matches("http://").to_owned();
    proxy.close();
    let (status, _) = http(&proxy, "POST", "/invoke", Some(&auth), b"{\"question\": \"late\"}").await;
    assert_eq!(status, 503);
    let (status, _) = http(&proxy, "GET", "/info", Some("Bearer wrong"), b"").await;
    assert_eq!(status, 401, "auth is still checked first");
    let stats = proxy.shutdown().await;
    assert_eq!((stats.call_count, stats.max_calls, stats.batch_used), (0, 5, false));
    assert!(
        tokio::net::TcpStream::connect(&addr).await.is_err(),
        "still listening after shutdown"
    );
}

#[tokio::test]
async fn each_proxy_gets_a_new_token_and_port() {
    let a = start(1, Arc::default()).await;
    let b = start(1, Arc::default()).await;
    assert_ne!(a.token(), b.token());
    assert_ne!(a.url(), b.url());
    assert!(a.url().starts_with("http://127.0.0.1:"));
    let (status, _) = http(&a, "GET", "/info", Some(&bearer(&b)), b"").await;
    assert_eq!(status, 401, "a token is valid only for its own proxy");
}
