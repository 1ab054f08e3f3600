//! A blocking client for the target proxy, for judges that need model calls.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::proxy::{
    BatchRequest, BatchResponse, ErrorBody, InvokeRequest, InvokeResponse, PROXY_TOKEN_ENV, PROXY_URL_ENV, ProxyInfo,
};

/// Why a proxy call failed.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// `AGENTV_TARGET_PROXY_URL` is set but the token is not.
    #[error("{PROXY_URL_ENV} is set but {PROXY_TOKEN_ENV} is missing; the proxy cannot be used")]
    NotAvailable,
    /// The proxy answered with a non-2xx status.
    #[error("target proxy answered HTTP {status}: {message}")]
    Status { status: u16, message: String },
    /// The request never got an answer, or the answer was not the expected JSON.
    #[error("target proxy request failed: {0}")]
    Transport(String),
}

impl TargetError {
    /// The HTTP status, when the proxy answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Calls the configured target (or another one) through the runtime's loopback proxy.
///
/// The proxy holds the provider credentials; the judge only sees a URL and a bearer token that
/// are valid for this one invocation.
#[derive(Debug, Clone)]
pub struct TargetClient {
    base_url: String,
    token: String,
    agent: ureq::Agent,
}

impl TargetClient {
    /// Reads the proxy address from the environment. `Ok(None)` when no proxy was configured for
    /// this judge; an error when the URL is set without a token.
    pub fn from_env() -> Result<Option<Self>, TargetError> {
        Self::from_vars(std::env::var(PROXY_URL_ENV).ok(), std::env::var(PROXY_TOKEN_ENV).ok())
    }

    /// [`TargetClient::from_env`] on explicit values; empty values count as unset.
    pub fn from_vars(url: Option<String>, token: Option<String>) -> Result<Option<Self>, TargetError> {
        let url = url.filter(|v| !v.is_empty());
        let token = token.filter(|v| !v.is_empty());
        match (url, token) {
            (None, _) => Ok(None),
            (Some(_), None) => Err(TargetError::NotAvailable),
            (Some(url), Some(token)) => Ok(Some(Self::new(url, token))),
        }
    }

    /// A client for an explicit proxy address (tests, tools).
    pub fn new(base_url: impl Into<String>, token: impl Into<String>) -> Self {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(600)))
            .build();
        Self {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            token: token.into(),
            agent: ureq::Agent::new_with_config(config),
        }
    }

    /// Asks the target one question.
    pub fn invoke(&self, request: &InvokeRequest) -> Result<InvokeResponse, TargetError> {
        self.post("/invoke", request)
    }

    /// Asks several questions concurrently; each counts as one call against the budget. A batch
    /// that would exceed the budget is refused whole (HTTP 429).
    pub fn invoke_batch(&self, requests: &[InvokeRequest]) -> Result<Vec<InvokeResponse>, TargetError> {
        let body = BatchRequest {
            requests: requests.to_vec(),
        };
        let answer: BatchResponse = self.post("/invokeBatch", &body)?;
        Ok(answer.responses)
    }

    /// The proxy's target name, budget and the targets a call may name.
    pub fn get_info(&self) -> Result<ProxyInfo, TargetError> {
        let response = self
            .agent
            .get(format!("{}/info", self.base_url))
            .header("Authorization", format!("Bearer {}", self.token))
            .call()
            .map_err(|e| TargetError::Transport(e.to_string()))?;
        read_answer(response)
    }

    fn post<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> Result<T, TargetError> {
        let response = self
            .agent
            .post(format!("{}{path}", self.base_url))
            .header("Authorization", format!("Bearer {}", self.token))
            .send_json(body)
            .map_err(|e| TargetError::Transport(e.to_string()))?;
        read_answer(response)
    }
}

fn read_answer<T: DeserializeOwned>(mut response: ureq::http::Response<ureq::Body>) -> Result<T, TargetError> {
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .read_to_string()
        .map_err(|e| TargetError::Transport(e.to_string()))?;
    if !(200..300).contains(&status) {
        let message = serde_json::from_str::<ErrorBody>(&text)
            .map(|b| b.error)
            .unwrap_or_else(|_| {
                if text.trim().is_empty() {
                    format!("HTTP {status}")
                } else {
                    text
                }
            });
        return Err(TargetError::Status { status, message });
    }
    serde_json::from_str(&text).map_err(|e| TargetError::Transport(format!("unexpected answer: {e}")))
}
