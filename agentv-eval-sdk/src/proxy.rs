//! Bodies of the target proxy's HTTP API (camelCase on the wire).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::wire::{Path, Reader, Wire, deserialize_from_wire};
use crate::{OutputMessage, TokenUsage, last_assistant_text};

/// Environment variable holding the proxy's base URL.
pub const PROXY_URL_ENV: &str = "AGENTV_TARGET_PROXY_URL";
/// Environment variable holding the proxy's bearer token.
pub const PROXY_TOKEN_ENV: &str = "AGENTV_TARGET_PROXY_TOKEN";
/// Older name of [`PROXY_URL_ENV`], exported too.
pub const JUDGE_PROXY_URL_ENV: &str = "AGENTV_JUDGE_PROXY_URL";
/// Older name of [`PROXY_TOKEN_ENV`], exported too.
pub const JUDGE_PROXY_TOKEN_ENV: &str = "AGENTV_JUDGE_PROXY_TOKEN";
/// Largest request body the proxy accepts.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// `POST /invoke` body, and one item of `POST /invokeBatch`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvokeRequest {
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_case_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Name of another configured target to route this call to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl InvokeRequest {
    /// A request with only a question.
    pub fn new(question: impl Into<String>) -> Self {
        Self {
            question: question.into(),
            ..Self::default()
        }
    }

    /// Sets the system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Routes the call to another configured target.
    pub fn target(mut self, name: impl Into<String>) -> Self {
        self.target = Some(name.into());
        self
    }
}

/// `POST /invoke` answer, and one item of the `/invokeBatch` answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InvokeResponse {
    /// The target's messages (a 4.x proxy names the key `output`; both are read).
    pub output_messages: Vec<OutputMessage>,
    /// Text of the last assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_text: Option<String>,
    /// Set on a batch item whose call failed; the other items are unaffected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Tokens the call used, when the proxy reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<TokenUsage>,
}

impl InvokeResponse {
    /// The answer's text: `raw_text`, else the last assistant message, else `""`.
    pub fn text(&self) -> String {
        match &self.raw_text {
            Some(text) => text.clone(),
            None => last_assistant_text(&self.output_messages).unwrap_or_default(),
        }
    }

    /// The first JSON object in the answer's text (see [`crate::extract_json_object`]).
    pub fn json_object(&self) -> Option<Map<String, Value>> {
        crate::extract_json_object(&self.text())
    }

    pub(crate) fn from_wire(value: Value, path: Path<'_>) -> Wire<Self> {
        let mut r = Reader::new(value, path)?;
        let messages = r.list("outputMessages", OutputMessage::from_wire)?;
        let v4_messages = r.list("output", OutputMessage::from_wire)?;
        Ok(Self {
            output_messages: if messages.is_empty() { v4_messages } else { messages },
            raw_text: r.opt_string("rawText")?,
            error: r.opt_string("error")?,
            token_usage: r.nested("tokenUsage", TokenUsage::from_wire)?,
        })
    }
}

deserialize_from_wire!(InvokeResponse);

/// `POST /invokeBatch` body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchRequest {
    pub requests: Vec<InvokeRequest>,
}

/// `POST /invokeBatch` answer, one response per request, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchResponse {
    pub responses: Vec<InvokeResponse>,
}

/// `GET /info` answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProxyInfo {
    pub target_name: String,
    pub max_calls: u32,
    pub call_count: u32,
    pub available_targets: Vec<String>,
}

/// Body of every non-2xx answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
}
