//! A fake model server for benchmarks: the tests' fake LLM service answers
//! (`agentv_testkit::llm::reply`: OpenAI Chat Completions, streamed when asked, Azure OpenAI,
//! Anthropic Messages and Gemini; a canned verdict to LLM judge prompts) served by a bare
//! multi-threaded hyper server for throughput, with a fixed latency and request counters at
//! `/stats`. Loopback only. With `--script FILE` it calls tools as the script says
//! (`agentv_testkit::llm::script`): the tool examples run offline against it.
//!
//! ```text
//! fake-model-server [--port P] [--latency-ms MS] [--script FILE] [--rps R]
//!                                                     serve; prints the URL on stdout
//!                                                     (--rps: a token bucket of R requests a
//!                                                     second, burst R, 429 beyond; its counts
//!                                                     in `/stats` under `bucket`). OpenAI's
//!                                                     batch API (files, batches) is served too;
//!                                                     its counts under `batch`.
//! fake-model-server --capacity [--seconds S] [--connections C]
//!                                                     measure its own throughput at 0 ms latency
//! ```

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentv_testkit::llm::{ANSWER, BatchApis, BatchBehaviour, Bucket, Call, Counters, Script, VERDICT, reply_scripted};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

struct Options {
    port: u16,
    latency: Duration,
    capacity: bool,
    seconds: u64,
    connections: usize,
    script: Option<Arc<Script>>,
    bucket: Option<Arc<Bucket>>,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        port: 0,
        latency: Duration::ZERO,
        capacity: false,
        seconds: 3,
        connections: 64,
        script: None,
        bucket: None,
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
            "--script" => {
                let text = std::fs::read_to_string(&value).map_err(|e| format!("cannot read {value}: {e}"))?;
                let script = Script::parse(&text).map_err(|e| format!("{value}: {e}"))?;
                o.script = Some(Arc::new(script));
            }
            "--rps" => {
                let rps: u32 = value
                    .parse()
                    .map_err(|_| format!("--rps takes a whole number, not {value}"))?;
                o.bucket = Some(Arc::new(Bucket::new(f64::from(rps), rps, Duration::from_secs(5))));
            }
            "--capacity" => {
                o.capacity = true;
                i += 1;
                continue;
            }
            other => return Err(format!("unknown argument {other}")),
        }
        i += 2;
    }
    Ok(o)
}

fn main() -> std::process::ExitCode {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], o.port))).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("cannot listen on 127.0.0.1:{}: {e}", o.port);
                return std::process::ExitCode::from(1);
            }
        };
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let counters = Arc::new(Counters::default());
        let server = tokio::spawn(serve(
            listener,
            counters.clone(),
            o.latency,
            o.script.clone(),
            o.bucket.clone(),
        ));
        if o.capacity {
            capacity(&url, o.seconds, o.connections).await;
        } else {
            println!("{url}");
            let _ = server.await;
        }
        std::process::ExitCode::SUCCESS
    })
}

async fn serve(
    listener: tokio::net::TcpListener,
    counters: Arc<Counters>,
    latency: Duration,
    script: Option<Arc<Script>>,
    bucket: Option<Arc<Bucket>>,
) {
    let batch = Arc::new(BatchApis::new(BatchBehaviour::default()));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let counters = counters.clone();
        let script = script.clone();
        let bucket = bucket.clone();
        let batch = batch.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let counters = counters.clone();
                let script = script.clone();
                let bucket = bucket.clone();
                let batch = batch.clone();
                async move {
                    let served = Served {
                        counters: &counters,
                        script: script.as_deref(),
                        bucket: bucket.as_deref(),
                        batch: &batch,
                    };
                    Ok::<_, Infallible>(handle(req, latency, served).await)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn respond(status: u16, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::OK);
    r.headers_mut()
        .insert("content-type", hyper::header::HeaderValue::from_static(content_type));
    r
}

/// What one request is served from.
struct Served<'a> {
    counters: &'a Counters,
    script: Option<&'a Script>,
    bucket: Option<&'a Bucket>,
    batch: &'a BatchApis,
}

async fn handle(req: Request<Incoming>, latency: Duration, served: Served<'_>) -> Response<Full<Bytes>> {
    let Served {
        counters,
        script,
        bucket,
        batch,
    } = served;
    let path = req.uri().path().to_owned();
    let method = req.method().as_str().to_owned();
    if path == "/stats" {
        let mut stats = counters.to_json();
        if let Some(b) = bucket {
            stats["bucket"] = b.to_json();
        }
        stats["batch"] = batch.openai.counters.to_json();
        stats["anthropic_batch"] = batch.anthropic.counters.to_json();
        stats["gemini_batch"] = batch.gemini.counters.to_json();
        return respond(200, "application/json", stats.to_string());
    }
    if path.contains("/files") || path.contains("/batches") || path.contains(":batchGenerateContent") {
        let query = req.uri().query().unwrap_or("").to_owned();
        let origin = req
            .headers()
            .get("host")
            .and_then(|h| h.to_str().ok())
            .map_or_else(String::new, |h| format!("http://{h}"));
        let (parts, body) = req.into_parts();
        let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let call = Call {
            method: &method,
            path: &path,
            query: &query,
            origin: &origin,
            header: &header,
            body: &body,
        };
        if let Some((reply, headers)) = batch.reply(&call, script, ANSWER, VERDICT) {
            let mut response = respond(reply.status, reply.content_type, reply.body);
            for (name, value) in headers {
                if let Ok(value) = hyper::header::HeaderValue::from_str(&value) {
                    response.headers_mut().insert(name, value);
                }
            }
            return response;
        }
        return respond(404, "application/json", "{}".to_owned());
    }
    let admission = bucket.map(Bucket::admit);
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let mut response = match &admission {
        Some(a) if !a.allowed => respond(
            429,
            "application/json",
            r#"{"error": {"type": "rate_limit_exceeded", "message": "Rate limit reached for requests"}}"#.to_owned(),
        ),
        _ => {
            let answer = reply_scripted(&path, &body, script, ANSWER, VERDICT, counters);
            respond(answer.status, answer.content_type, answer.body)
        }
    };
    for (name, value) in admission.iter().flat_map(|a| &a.headers) {
        if let Ok(value) = hyper::header::HeaderValue::from_str(value) {
            response.headers_mut().insert(*name, value);
        }
    }
    response
}

/// Floods the server with `connections` keep-alive clients for `seconds`; prints requests/s.
async fn capacity(url: &str, seconds: u64, connections: usize) {
    // The client speaks plain HTTP here, but reqwest wants a TLS provider chosen all the same.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
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
