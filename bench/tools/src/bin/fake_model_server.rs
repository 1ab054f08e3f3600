//! A fake model server for benchmarks: OpenAI Chat Completions (`/v1/chat/completions`) and
//! Anthropic Messages (`/v1/messages`; Chat Completions also streamed when asked) with a fixed latency, a canned answer, a canned judge
//! verdict for requests whose prompt is the LLM judge's, and a request counter at `/stats`.
//! Loopback only.
//!
//! ```text
//! fake-model-server [--port P] [--latency-ms MS]      serve; prints the URL on stdout
//! fake-model-server --capacity [--seconds S] [--connections C]
//!                                                     measure its own throughput at 0 ms latency
//! ```

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

const ANSWER: &str = "The answer is 4.";
const VERDICT: &str = r#"{"score": 0.9, "hits": ["answers 4"], "misses": [], "reasoning": "correct"}"#;
/// Marks the LLM judge's system prompt.
const JUDGE_MARK: &[u8] = b"impartial evaluator";

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    judge: AtomicU64,
    openai: AtomicU64,
    anthropic: AtomicU64,
}

struct Options {
    port: u16,
    latency: Duration,
    capacity: bool,
    seconds: u64,
    connections: usize,
}

fn options() -> Options {
    let mut o = Options {
        port: 0,
        latency: Duration::ZERO,
        capacity: false,
        seconds: 3,
        connections: 64,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--port" => o.port = value.parse().unwrap_or(0),
            "--latency-ms" => o.latency = Duration::from_millis(value.parse().unwrap_or(0)),
            "--seconds" => o.seconds = value.parse().unwrap_or(3),
            "--connections" => o.connections = value.parse().unwrap_or(64),
            "--capacity" => {
                o.capacity = true;
                i += 1;
                continue;
            }
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
        i += 2;
    }
    o
}

fn main() {
    let o = options();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], o.port)))
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let counters = Arc::new(Counters::default());
        let server = tokio::spawn(serve(listener, counters.clone(), o.latency));
        if o.capacity {
            capacity(&url, o.seconds, o.connections).await;
        } else {
            println!("{url}");
            let _ = server.await;
        }
    });
}

async fn serve(listener: tokio::net::TcpListener, counters: Arc<Counters>, latency: Duration) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let counters = counters.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let counters = counters.clone();
                async move { Ok::<_, Infallible>(handle(req, &counters, latency).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn json(body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

async fn handle(req: Request<Incoming>, c: &Counters, latency: Duration) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    if path == "/stats" {
        return json(
            serde_json::json!({
                "requests": c.requests.load(Ordering::SeqCst),
                "judge_requests": c.judge.load(Ordering::SeqCst),
                "openai": c.openai.load(Ordering::SeqCst),
                "anthropic": c.anthropic.load(Ordering::SeqCst),
            })
            .to_string(),
        );
    }
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let judge = contains(&body, JUDGE_MARK);
    c.requests.fetch_add(1, Ordering::SeqCst);
    if judge {
        c.judge.fetch_add(1, Ordering::SeqCst);
    }
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let text = if judge { VERDICT } else { ANSWER };
    // Streaming clients (`"stream": true`) get Server-Sent Events, as the real API sends them.
    let streaming = contains(&body, b"\"stream\":true") || contains(&body, b"\"stream\": true");
    if streaming && path != "/v1/messages" {
        c.openai.fetch_add(1, Ordering::SeqCst);
        let chunk = serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "bench-model",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]});
        let stop = serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "bench-model",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
        let usage = serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "bench-model",
            "choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}});
        let events = format!("data: {chunk}\n\ndata: {stop}\n\ndata: {usage}\n\ndata: [DONE]\n\n");
        let mut r = Response::new(Full::new(Bytes::from(events)));
        r.headers_mut().insert(
            "content-type",
            hyper::header::HeaderValue::from_static("text/event-stream"),
        );
        return r;
    }
    match path.as_str() {
        "/v1/messages" => {
            c.anthropic.fetch_add(1, Ordering::SeqCst);
            json(
                serde_json::json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": text}],
                                   "usage": {"input_tokens": 50, "output_tokens": 10}})
                .to_string(),
            )
        }
        _ => {
            c.openai.fetch_add(1, Ordering::SeqCst);
            json(
                serde_json::json!({"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                                   "usage": {"prompt_tokens": 50, "completion_tokens": 10}})
                .to_string(),
            )
        }
    }
}

/// Floods the server with `connections` keep-alive clients for `seconds`; prints requests/s.
async fn capacity(url: &str, seconds: u64, connections: usize) {
    let client = agentv_core::http::client().clone();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let body = serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "What is 2+2?"}]});
    let started = Instant::now();
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            let client = client.clone();
            let url = format!("{url}/v1/chat/completions");
            let body = body.clone();
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < deadline {
                    if client
                        .post(&url)
                        .json(&body)
                        .send()
                        .await
                        .and_then(|r| r.error_for_status())
                        .is_ok()
                    {
                        n += 1;
                    }
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap_or(0);
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "fake-model-server capacity: {total} requests in {secs:.1} s = {:.0} requests/s ({connections} connections, client in the same process)",
        total as f64 / secs
    );
}
