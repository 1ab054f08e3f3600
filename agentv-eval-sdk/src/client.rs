//! A blocking client for the target proxy, for judges that need model calls.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::proxy::{
    BatchRequest, ErrorBody, InvokeRequest, InvokeResponse, JUDGE_PROXY_TOKEN_ENV, JUDGE_PROXY_URL_ENV,
    PROXY_TOKEN_ENV, PROXY_URL_ENV, ProxyInfo,
};

/// How long a call may take unless [`TargetClient::timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Why a proxy call failed. [`kind`](Self::kind) names the case the way the other SDKs do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// The proxy URL is set without its token (kind `not_available`, as the other SDKs name it).
    #[error("{PROXY_URL_ENV} is set but {PROXY_TOKEN_ENV} is missing; the proxy cannot be used")]
    MissingToken,
    /// The proxy answered with an error status; `message` is its `error` text, exactly.
    #[error("target proxy answered HTTP {status}: {message}")]
    Status { status: u16, message: String },
    /// Nothing answered at the proxy's address: it is gone (the judge's run is over).
    #[error("cannot reach the target proxy at {url}: {message}")]
    Connection { url: String, message: String },
    /// No answer within the client's timeout.
    #[error("no answer from the target proxy at {url} within {timeout:?}")]
    Timeout { url: String, timeout: Duration },
    /// An answer that is not the expected JSON.
    #[error("unexpected answer from the target proxy: {message}")]
    Protocol { status: u16, message: String },
    /// One request of a batch failed; the others are unaffected.
    #[error("the target failed this request: {message}")]
    ItemFailed { message: String },
}

/// The kind of a [`TargetError`], as the conformance suite and the other SDKs name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetErrorKind {
    NotAvailable,
    Status,
    Connection,
    Timeout,
    Protocol,
    ItemFailed,
}

impl TargetErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotAvailable => "not_available",
            Self::Status => "status",
            Self::Connection => "connection",
            Self::Timeout => "timeout",
            Self::Protocol => "protocol",
            Self::ItemFailed => "item_failed",
        }
    }
}

impl TargetError {
    pub fn kind(&self) -> TargetErrorKind {
        match self {
            Self::MissingToken => TargetErrorKind::NotAvailable,
            Self::Status { .. } => TargetErrorKind::Status,
            Self::Connection { .. } => TargetErrorKind::Connection,
            Self::Timeout { .. } => TargetErrorKind::Timeout,
            Self::Protocol { .. } => TargetErrorKind::Protocol,
            Self::ItemFailed { .. } => TargetErrorKind::ItemFailed,
        }
    }

    /// The HTTP status, when the proxy answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } | Self::Protocol { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The proxy's own `error` text for a status error or a failed batch item; otherwise the
    /// whole description.
    pub fn message(&self) -> String {
        match self {
            Self::Status { message, .. } | Self::ItemFailed { message } => message.clone(),
            other => other.to_string(),
        }
    }

    /// HTTP 401: the token is wrong (or from another case).
    pub fn is_unauthorized(&self) -> bool {
        self.status() == Some(401)
    }

    /// HTTP 429: the evaluator's `max_calls` budget is spent.
    pub fn is_budget_exhausted(&self) -> bool {
        self.status() == Some(429)
    }

    /// HTTP 503 or nothing listening: the judge's run is over and the proxy is closing.
    pub fn is_proxy_closed(&self) -> bool {
        self.status() == Some(503) || self.kind() == TargetErrorKind::Connection
    }
}

/// Calls the configured target (or another one) through the runtime's loopback proxy.
///
/// The proxy holds the provider credentials and the call budget; the judge only sees a URL
/// and a bearer token that are valid for the current case. Create the client inside the judge
/// function ([`TargetClient::from_env`]) or use the one [`run_judge`](crate::run_judge)
/// passes: in persistent mode every case has its own proxy. `HTTP_PROXY`-style variables are
/// never used: the proxy is on loopback, and they must not reroute (or see the token of) these
/// calls.
#[derive(Clone)]
pub struct TargetClient {
    base_url: String,
    token: String,
    timeout: Duration,
    agent: ureq::Agent,
}

impl std::fmt::Debug for TargetClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TargetClient")
            .field("base_url", &self.base_url)
            .field("token", &"***")
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl TargetClient {
    /// The client for the current case's proxy, from `AGENTV_TARGET_PROXY_URL` /
    /// `AGENTV_TARGET_PROXY_TOKEN` (or the older `AGENTV_JUDGE_PROXY_*` names). `Ok(None)`
    /// when the evaluator has no `target`; an error when the URL is set without a token.
    pub fn from_env() -> Result<Option<Self>, TargetError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`TargetClient::from_env`] on another environment: `lookup` returns a variable's value.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, TargetError> {
        let first = |names: [&str; 2]| names.into_iter().find_map(|n| lookup(n).filter(|v| !v.is_empty()));
        Self::from_vars(
            first([PROXY_URL_ENV, JUDGE_PROXY_URL_ENV]),
            first([PROXY_TOKEN_ENV, JUDGE_PROXY_TOKEN_ENV]),
        )
    }

    /// [`TargetClient::from_env`] on explicit values; empty values count as unset.
    pub fn from_vars(url: Option<String>, token: Option<String>) -> Result<Option<Self>, TargetError> {
        let url = url.filter(|v| !v.is_empty());
        let token = token.filter(|v| !v.is_empty());
        match (url, token) {
            (None, _) => Ok(None),
            (Some(_), None) => Err(TargetError::MissingToken),
            (Some(url), Some(token)) => Ok(Some(Self::new(url, token))),
        }
    }

    /// A client for an explicit proxy address (tests, tools), with the default timeout.
    pub fn new(base_url: impl Into<String>, token: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            token: token.into(),
            timeout: DEFAULT_TIMEOUT,
            agent: agent(DEFAULT_TIMEOUT),
        }
    }

    /// The same client with another limit on each call (default 600 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self.agent = agent(timeout);
        self
    }

    /// The proxy's address.
    pub fn url(&self) -> &str {
        &self.base_url
    }

    /// Asks the target one question; counts one call against the budget.
    pub fn invoke(&self, request: &InvokeRequest) -> Result<InvokeResponse, TargetError> {
        let answer = self.call("/invoke", Some(request))?;
        decode(answer)
    }

    /// Asks several questions in one call; each counts against the budget, and a batch that
    /// would pass it is refused whole (the outer error, HTTP 429). Returns one result per
    /// request, in order: a request the target failed is an [`TargetError::ItemFailed`] there,
    /// and the others are unaffected.
    pub fn invoke_batch(
        &self,
        requests: &[InvokeRequest],
    ) -> Result<Vec<Result<InvokeResponse, TargetError>>, TargetError> {
        let body = BatchRequest {
            requests: requests.to_vec(),
        };
        let answer = self.call("/invokeBatch", Some(&body))?;
        let Some(Value::Array(items)) = answer.get("responses").cloned() else {
            return Err(protocol("no `responses` array"));
        };
        if items.len() != requests.len() {
            return Err(protocol(format!(
                "{} responses for {} requests",
                items.len(),
                requests.len()
            )));
        }
        items
            .into_iter()
            .map(|item| {
                let response: InvokeResponse = decode(item)?;
                Ok(match response.error {
                    Some(message) => Err(TargetError::ItemFailed { message }),
                    None => Ok(response),
                })
            })
            .collect()
    }

    /// The default target's name, the budget, calls so far and the targets a call may name.
    pub fn get_info(&self) -> Result<ProxyInfo, TargetError> {
        let answer = self.call::<()>("/info", None)?;
        decode(answer)
    }

    fn call<B: Serialize>(&self, path: &str, body: Option<&B>) -> Result<Value, TargetError> {
        let url = format!("{}{path}", self.base_url);
        let auth = format!("Bearer {}", self.token);
        let sent = match body {
            None => self.agent.get(&url).header("Authorization", &auth).call(),
            Some(body) => self.agent.post(&url).header("Authorization", &auth).send_json(body),
        };
        let mut response = sent.map_err(|e| self.transport(&url, e))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| self.transport(&url, e))?;
        if !(200..300).contains(&status) {
            return Err(TargetError::Status {
                status,
                message: error_message(status, &text),
            });
        }
        serde_json::from_str(&text).map_err(|e| TargetError::Protocol {
            status,
            message: format!("not JSON ({e}): {:?}", text.chars().take(200).collect::<String>()),
        })
    }

    fn transport(&self, url: &str, error: ureq::Error) -> TargetError {
        match error {
            ureq::Error::Timeout(_) => TargetError::Timeout {
                url: url.to_owned(),
                timeout: self.timeout,
            },
            ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => TargetError::Timeout {
                url: url.to_owned(),
                timeout: self.timeout,
            },
            other => TargetError::Connection {
                url: url.to_owned(),
                message: other.to_string(),
            },
        }
    }
}

fn agent(timeout: Duration) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .timeout_global(Some(timeout))
        .build();
    ureq::Agent::new_with_config(config)
}

fn decode<T: serde::de::DeserializeOwned>(answer: Value) -> Result<T, TargetError> {
    serde_json::from_value(answer).map_err(|e| protocol(e.to_string()))
}

fn protocol(message: impl Into<String>) -> TargetError {
    TargetError::Protocol {
        status: 200,
        message: message.into(),
    }
}

/// The proxy's `{"error": …}` text; else the body; else `HTTP <status>`.
fn error_message(status: u16, text: &str) -> String {
    if let Ok(body) = serde_json::from_str::<ErrorBody>(text) {
        return body.error;
    }
    let trimmed = text.trim();
    if trimmed.is_empty() {
        format!("HTTP {status}")
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_lookup_prefers_the_target_names_and_accepts_the_judge_names() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
        };
        let client = TargetClient::from_lookup(env(&[
            (JUDGE_PROXY_URL_ENV, "http://old"),
            (JUDGE_PROXY_TOKEN_ENV, "t-old"),
        ]))
        .expect("valid")
        .expect("a client");
        assert_eq!(client.url(), "http://old");
        let client = TargetClient::from_lookup(env(&[
            (PROXY_URL_ENV, "http://new/"),
            (PROXY_TOKEN_ENV, "t"),
            (JUDGE_PROXY_URL_ENV, "http://old"),
        ]))
        .expect("valid")
        .expect("a client");
        assert_eq!(client.url(), "http://new");
        assert!(matches!(TargetClient::from_lookup(env(&[])), Ok(None)));
        let error = TargetClient::from_lookup(env(&[(PROXY_URL_ENV, "http://x")])).expect_err("no token");
        assert_eq!(error.kind().as_str(), "not_available");
        assert!(error.to_string().contains("AGENTV_TARGET_PROXY_TOKEN is missing"));
    }

    #[test]
    fn debug_output_hides_the_token() {
        let client = TargetClient::new("http://127.0.0.1:1", "secret-token-value");
        assert!(!format!("{client:?}").contains("secret-token-value"));
    }

    #[test]
    fn error_messages_come_from_the_body() {
        for (status, body, want) in [
            (
                429,
                r#"{"error": "Max calls exceeded (limit: 2)"}"#,
                "Max calls exceeded (limit: 2)",
            ),
            (502, "Bad Gateway\n", "Bad Gateway"),
            (404, "", "HTTP 404"),
        ] {
            assert_eq!(error_message(status, body), want);
        }
    }

    #[test]
    fn shortcuts_follow_the_status() {
        let status = |status| TargetError::Status {
            status,
            message: String::new(),
        };
        assert!(status(401).is_unauthorized());
        assert!(status(429).is_budget_exhausted());
        assert!(status(503).is_proxy_closed());
        let gone = TargetError::Connection {
            url: "http://127.0.0.1:1".into(),
            message: "refused".into(),
        };
        assert!(gone.is_proxy_closed() && gone.status().is_none());
    }
}
