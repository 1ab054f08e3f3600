//! The judge SDK's `TargetClient` against a real proxy started here.

mod common;

use std::sync::Arc;

use agentv_eval_sdk::{InvokeRequest, TargetClient, TargetError};
use common::{FakeInvoker, start};

/// Runs blocking SDK calls off the async runtime that serves the proxy.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

#[test]
fn from_vars_distinguishes_absent_and_incomplete() {
    assert!(matches!(TargetClient::from_vars(None, None), Ok(None)));
    assert!(matches!(
        TargetClient::from_vars(Some(String::new()), Some("t".into())),
        Ok(None)
    ));
    let err = TargetClient::from_vars(Some("http://127.0.0.1:1".into()), None).expect_err("no token");
    assert!(matches!(err, TargetError::MissingToken));
    assert_eq!(
        err.to_string(),
        "AGENTV_TARGET_PROXY_URL is set but AGENTV_TARGET_PROXY_TOKEN is missing; the proxy cannot be used"
    );
    assert!(matches!(
        TargetClient::from_vars(Some("http://x".into()), Some("t".into())),
        Ok(Some(_))
    ));
}

#[tokio::test]
async fn invoke_batch_and_info_return_typed_values() {
    let proxy = start(10, Arc::default()).await;
    let client = TargetClient::new(proxy.url(), proxy.token());
    let (info, one, many, info_after) = blocking(move || {
        let info = client.get_info().expect("info");
        let one = client
            .invoke(&InvokeRequest::new("hello").system_prompt("be brief").target("other"))
            .expect("invoke");
        let many = client
            .invoke_batch(&[InvokeRequest::new("a"), InvokeRequest::new("b").target("nope")])
            .expect("batch");
        (info, one, many, client.get_info().expect("info"))
    })
    .await;
    assert_eq!(info.target_name, "judge");
    assert_eq!((info.max_calls, info.call_count), (10, 0));
    assert_eq!(info.available_targets, ["judge", "other", "locked"]);
    assert_eq!(one.raw_text.as_deref(), Some("other: hello"));
    assert_eq!(one.output_messages[0].role, "assistant");
    assert_eq!(many.len(), 2);
    assert_eq!(many[0].as_ref().map(|r| r.text()).ok().as_deref(), Some("judge: a"));
    let failed = many[1].as_ref().expect_err("the item with an unknown target failed");
    assert_eq!(failed.kind().as_str(), "item_failed");
    assert!(failed.message().starts_with("unknown target `nope`"), "{failed}");
    assert_eq!(info_after.call_count, 3);
}

#[tokio::test]
async fn errors_carry_status_and_message() {
    let proxy = start(1, Arc::new(FakeInvoker::default())).await;
    let good = TargetClient::new(proxy.url(), proxy.token());
    let bad_token = TargetClient::new(proxy.url(), "0".repeat(64));
    let (unknown, first, spent, unauthorized) = blocking(move || {
        (
            good.invoke(&InvokeRequest::new("q").target("nope"))
                .expect_err("unknown"),
            good.invoke(&InvokeRequest::new("q")).map(|r| r.raw_text),
            good.invoke(&InvokeRequest::new("q")).expect_err("spent"),
            bad_token.get_info().expect_err("401"),
        )
    })
    .await;
    assert_eq!(unknown.status(), Some(400));
    assert_eq!(
        unknown.to_string(),
        "target proxy answered HTTP 400: unknown target `nope`; available targets: judge, other, locked"
    );
    assert_eq!(first.expect("first call").as_deref(), Some("judge: q"));
    assert_eq!(spent.status(), Some(429));
    assert_eq!(
        spent.to_string(),
        "target proxy answered HTTP 429: Max calls exceeded (limit: 1)"
    );
    assert_eq!(unauthorized.status(), Some(401));
    let closed = {
        let url = proxy.url().to_owned();
        let token = proxy.token().to_owned();
        proxy.shutdown().await;
        blocking(move || TargetClient::new(url, token).get_info().expect_err("closed")).await
    };
    assert!(closed.is_proxy_closed(), "{closed}");
}
