//! The HTTP server behind [`TargetProxy`].

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use agentv_eval_sdk::proxy::MAX_BODY_BYTES;
use agentv_eval_sdk::{BatchRequest, BatchResponse, ErrorBody, InvokeRequest, InvokeResponse, ProxyInfo};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use rand::rand_core::TryRng;
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::{InvokeError, ProxyConfig, SharedInvoker};

/// Starts proxies.
pub struct TargetProxy;

/// Counters of a proxy after it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyStats {
    pub call_count: u32,
    pub max_calls: u32,
    pub batch_used: bool,
}

struct State {
    token: String,
    max_calls: u32,
    calls: AtomicU32,
    batch_used: AtomicBool,
    closed: AtomicBool,
    invoker: SharedInvoker,
}

/// A running proxy. Dropping it stops the server too, but [`ProxyHandle::shutdown`] also
/// waits for open connections and returns the counters.
pub struct ProxyHandle {
    url: String,
    state: Arc<State>,
    stop: watch::Sender<bool>,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl TargetProxy {
    /// Binds 127.0.0.1 on a free port with a fresh token and starts serving.
    pub async fn start(config: ProxyConfig, invoker: SharedInvoker) -> std::io::Result<ProxyHandle> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            token: new_token()?,
            max_calls: config.max_calls,
            calls: AtomicU32::new(0),
            batch_used: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            invoker,
        });
        let (stop, stopped) = watch::channel(false);
        let server = tokio::spawn(serve(listener, state.clone(), stopped));
        Ok(ProxyHandle {
            url: format!("http://{addr}"),
            state,
            stop,
            server: Some(server),
        })
    }
}

/// 32 bytes from the operating system's generator, hex-encoded.
fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    rand::rngs::SysRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| std::io::Error::other(format!("no OS randomness for the proxy token: {e}")))?;
    Ok(hex::encode(bytes))
}

impl ProxyHandle {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn token(&self) -> &str {
        &self.state.token
    }

    /// Calls served (or reserved) so far.
    pub fn call_count(&self) -> u32 {
        self.state.calls.load(Ordering::SeqCst)
    }

    /// From now on every request is answered 503; the server keeps its connections.
    pub fn close(&self) {
        self.state.closed.store(true, Ordering::SeqCst);
    }

    /// Closes, stops accepting, lets open connections finish (up to a second) and returns the
    /// counters.
    pub async fn shutdown(mut self) -> ProxyStats {
        self.close();
        let _ = self.stop.send(true);
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
        self.stats()
    }

    fn stats(&self) -> ProxyStats {
        ProxyStats {
            call_count: self.call_count(),
            max_calls: self.state.max_calls,
            batch_used: self.state.batch_used.load(Ordering::SeqCst),
        }
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        self.state.closed.store(true, Ordering::SeqCst);
        let _ = self.stop.send(true);
    }
}

async fn serve(listener: TcpListener, state: Arc<State>, mut stopped: watch::Receiver<bool>) {
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = state.clone();
                let service = hyper::service::service_fn(move |req| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(handle(req, &state).await) }
                });
                let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
            _ = stopped.changed() => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(Duration::from_secs(1), graceful.shutdown()).await;
}

type Reply = Response<Full<Bytes>>;

fn json_reply(status: StatusCode, body: &impl serde::Serialize) -> Reply {
    let bytes = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn error(status: StatusCode, message: impl Into<String>) -> Reply {
    json_reply(status, &ErrorBody { error: message.into() })
}

async fn handle(req: Request<Incoming>, state: &State) -> Reply {
    if !authorized(&req, &state.token) {
        return error(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    if state.closed.load(Ordering::SeqCst) {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "The target proxy is shut down: the judge has finished",
        );
    }
    let method = req.method().clone();
    match (req.uri().path(), method) {
        ("/info", Method::GET) => json_reply(StatusCode::OK, &info(state)),
        ("/invoke", Method::POST) => match read_body(req).await {
            Ok(body) => invoke(&body, state).await,
            Err(reply) => reply,
        },
        ("/invokeBatch", Method::POST) => match read_body(req).await {
            Ok(body) => invoke_batch(&body, state).await,
            Err(reply) => reply,
        },
        ("/info", _) => error(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed: use GET /info"),
        ("/invoke" | "/invokeBatch", _) => error(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed: use POST"),
        (path, _) => error(
            StatusCode::NOT_FOUND,
            format!("Not found: {path} (routes: GET /info, POST /invoke, POST /invokeBatch)"),
        ),
    }
}

fn authorized(req: &Request<Incoming>, token: &str) -> bool {
    let Some(value) = req.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some(given) = bearer_credentials(value) else {
        return false;
    };
    // Tokens have a fixed length, so the early return on a length mismatch leaks nothing.
    given.as_bytes().ct_eq(token.as_bytes()).into()
}

/// The token of an `Authorization: Bearer <token>` value. The scheme is matched in any letter
/// case and may be followed by several spaces, as HTTP authentication allows (RFC 7235 §2.1:
/// `credentials = auth-scheme 1*SP token68`); `bearer`, `BEARER` and `Bearer` are one scheme.
fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, rest) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = rest.trim_start_matches(' ');
    (!token.is_empty()).then_some(token)
}

fn info(state: &State) -> ProxyInfo {
    ProxyInfo {
        target_name: state.invoker.default_target(),
        max_calls: state.max_calls,
        call_count: state.calls.load(Ordering::SeqCst),
        available_targets: state.invoker.available_targets(),
    }
}

async fn read_body(req: Request<Incoming>) -> Result<Bytes, Reply> {
    match Limited::new(req.into_body(), MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => Err(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Request body exceeds {MAX_BODY_BYTES} bytes"),
        )),
        Err(e) => Err(error(StatusCode::BAD_REQUEST, format!("Cannot read request body: {e}"))),
    }
}

/// Reserves `n` calls; `false` (nothing reserved) when that would pass the budget. Exact under
/// any interleaving: the check and the increment are one atomic step.
fn reserve(state: &State, n: u32) -> bool {
    state
        .calls
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
            used.checked_add(n).filter(|total| *total <= state.max_calls)
        })
        .is_ok()
}

fn budget_spent(state: &State) -> Reply {
    error(
        StatusCode::TOO_MANY_REQUESTS,
        format!("Max calls exceeded (limit: {})", state.max_calls),
    )
}

/// Validates one request: a non-empty question and a usable target.
fn validate(request: &InvokeRequest, state: &State) -> Result<(), String> {
    if request.question.trim().is_empty() {
        return Err("Missing required field `question`".to_owned());
    }
    if let Some(target) = &request.target
        && let Err(e) = state.invoker.check_target(target)
    {
        return Err(e.to_string());
    }
    Ok(())
}

async fn invoke(body: &[u8], state: &State) -> Reply {
    let request: InvokeRequest = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("Invalid JSON body: {e}")),
    };
    if let Err(message) = validate(&request, state) {
        return error(StatusCode::BAD_REQUEST, message);
    }
    if !reserve(state, 1) {
        return budget_spent(state);
    }
    let target = request.target.clone();
    match state.invoker.invoke(target, request).await {
        Ok(response) => json_reply(StatusCode::OK, &response),
        Err(InvokeError::BadTarget(m)) => error(StatusCode::BAD_REQUEST, m),
        Err(InvokeError::Failed(m)) => error(StatusCode::INTERNAL_SERVER_ERROR, m),
    }
}

async fn invoke_batch(body: &[u8], state: &State) -> Reply {
    let batch: BatchRequest = match serde_json::from_slice(body) {
        Ok(b) => b,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("Invalid JSON body: expected {{\"requests\": [...]}}: {e}"),
            );
        }
    };
    let n = u32::try_from(batch.requests.len()).unwrap_or(u32::MAX);
    if !reserve(state, n) {
        return budget_spent(state);
    }
    state.batch_used.store(true, Ordering::SeqCst);
    let calls = batch.requests.into_iter().map(|request| async move {
        if let Err(message) = validate(&request, state) {
            return item_error(message);
        }
        let target = request.target.clone();
        match state.invoker.invoke(target, request).await {
            Ok(response) => response,
            Err(e) => item_error(e.to_string()),
        }
    });
    let responses = futures::future::join_all(calls).await;
    json_reply(StatusCode::OK, &BatchResponse { responses })
}

fn item_error(message: String) -> InvokeResponse {
    InvokeResponse {
        output_messages: Vec::new(),
        raw_text: Some(format!("Error: {message}")),
        error: Some(message),
        token_usage: None,
    }
}
