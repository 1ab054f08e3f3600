//! A fake invoker and a raw HTTP client for proxy tests.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentv_eval_sdk::{InvokeRequest, InvokeResponse, OutputMessage};
use agentv_proxy::{InvokeError, ProxyConfig, ProxyHandle, TargetInvoker, TargetProxy};
use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Answers `"<target>: <question>"`; `locked` needs credentials that are missing.
#[derive(Default)]
pub struct FakeInvoker {
    pub calls: AtomicUsize,
    pub in_flight: Arc<AtomicUsize>,
    pub peak: Arc<AtomicUsize>,
    pub delay: Duration,
}

impl TargetInvoker for FakeInvoker {
    fn default_target(&self) -> String {
        "judge".into()
    }

    fn available_targets(&self) -> Vec<String> {
        vec!["judge".into(), "other".into(), "locked".into()]
    }

    fn check_target(&self, name: &str) -> Result<(), InvokeError> {
        match name {
            "judge" | "other" => Ok(()),
            "locked" => Err(InvokeError::BadTarget(
                "missing environment variables: LOCKED_KEY".into(),
            )),
            _ => Err(InvokeError::BadTarget(format!(
                "unknown target `{name}`; available targets: judge, other, locked"
            ))),
        }
    }

    fn invoke(
        &self,
        target: Option<String>,
        request: InvokeRequest,
    ) -> BoxFuture<'static, Result<InvokeResponse, InvokeError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let (in_flight, peak, delay) = (self.in_flight.clone(), self.peak.clone(), self.delay);
        Box::pin(async move {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(delay).await;
            in_flight.fetch_sub(1, Ordering::SeqCst);
            if request.question == "fail" {
                return Err(InvokeError::Failed("provider exploded".into()));
            }
            let text = format!("{}: {}", target.unwrap_or_else(|| "judge".into()), request.question);
            Ok(InvokeResponse {
                output_messages: vec![OutputMessage::assistant(text.clone())],
                raw_text: Some(text),
                error: None,
                token_usage: None,
            })
        })
    }
}

pub async fn start(max_calls: u32, invoker: Arc<FakeInvoker>) -> ProxyHandle {
    TargetProxy::start(ProxyConfig { max_calls }, invoker)
        .await
        .expect("proxy starts")
}

/// Sends one raw HTTP/1.1 request; returns the status and the JSON body.
pub async fn http(
    handle: &ProxyHandle,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: &[u8],
) -> (u16, serde_json::Value) {
    let addr = handle.url().trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.expect("connects");
    send(&mut stream, method, path, auth, body).await
}

pub async fn send(
    stream: &mut tokio::net::TcpStream,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: &[u8],
) -> (u16, serde_json::Value) {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    if let Some(a) = auth {
        head.push_str(&format!("authorization: {a}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.expect("writes");
    // The server may answer (413) before reading the whole body.
    let _ = stream.write_all(body).await;
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw);
    let status: u16 = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    (status, serde_json::from_str(body).unwrap_or(serde_json::Value::Null))
}

pub fn bearer(handle: &ProxyHandle) -> String {
    format!("Bearer {}", handle.token())
}
