//! The persistent-judge line protocol (docs/judges.md, "Persistent judges"): the judge is
//! started once with `AGENTV_JUDGE_PERSISTENT=1`, announces itself, then answers one JSON line
//! per request line until its stdin closes.
//!
//! The lines are built and read here, without I/O, for both sides: [`run_judge`] serves the
//! protocol, and a runtime can use the same types to speak it.
//!
//! [`run_judge`]: crate::run_judge

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::JudgeResult;
use crate::wire::kind;

/// Set to `1` in a judge's environment to ask for persistent mode.
pub const PERSISTENT_ENV: &str = "AGENTV_JUDGE_PERSISTENT";
/// The protocol version a judge announces.
pub const PROTOCOL_VERSION: u64 = 1;

/// One request: a case to grade, with that case's proxy.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// A string or a number, echoed verbatim in the response.
    pub id: Value,
    /// The payload object, not yet read (so a bad payload is answered with this `id`).
    pub payload: Value,
    pub proxy: Option<CaseProxy>,
}

/// The target proxy of one case; `None` in [`Request::proxy`] when its evaluator has none.
#[derive(Clone, PartialEq, Eq)]
pub struct CaseProxy {
    pub url: String,
    pub token: String,
    pub max_calls: Option<u64>,
}

impl std::fmt::Debug for CaseProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaseProxy")
            .field("url", &self.url)
            .field("token", &"***")
            .field("max_calls", &self.max_calls)
            .finish()
    }
}

/// A request line that cannot be served, with the id to answer under (`null` when the line
/// has no usable id).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct BadRequest {
    pub id: Value,
    pub message: String,
}

impl BadRequest {
    fn new(id: Value, message: impl Into<String>) -> Self {
        Self {
            id,
            message: message.into(),
        }
    }
}

/// Reads one request line (without its line ending).
pub fn parse_request(line: &str) -> Result<Request, BadRequest> {
    let message: Value = serde_json::from_str(line)
        .map_err(|e| BadRequest::new(Value::Null, format!("request line is not valid JSON: {e}")))?;
    let Value::Object(mut message) = message else {
        return Err(BadRequest::new(
            Value::Null,
            format!("request line must be a JSON object, got {}", kind(&message)),
        ));
    };
    let id = match message.remove("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        _ => {
            return Err(BadRequest::new(
                Value::Null,
                "request line needs an `id` (a string or a number)",
            ));
        }
    };
    let payload = match message.remove("payload") {
        Some(payload @ Value::Object(_)) => payload,
        other => {
            let got = other.as_ref().map_or("nothing", kind);
            return Err(BadRequest::new(
                id,
                format!("request `payload` must be a JSON object, got {got}"),
            ));
        }
    };
    let proxy = match message.remove("proxy") {
        None | Some(Value::Null) => None,
        Some(Value::Object(proxy)) => Some(case_proxy(proxy).ok_or_else(|| bad_proxy(&id))?),
        Some(_) => return Err(bad_proxy(&id)),
    };
    Ok(Request { id, payload, proxy })
}

fn case_proxy(mut proxy: Map<String, Value>) -> Option<CaseProxy> {
    let text = |v: Option<Value>| match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    Some(CaseProxy {
        url: text(proxy.remove("url"))?,
        token: text(proxy.remove("token"))?,
        max_calls: proxy.get("max_calls").and_then(Value::as_u64),
    })
}

fn bad_proxy(id: &Value) -> BadRequest {
    BadRequest::new(
        id.clone(),
        "request `proxy` must be null or an object with string `url` and `token`",
    )
}

/// The first line a persistent judge prints, e.g. `{"ready":true,"protocol":1,"sdk":"rust/0.1.0"}`.
pub fn ready_line(sdk: &str) -> String {
    #[derive(Serialize)]
    struct Ready<'a> {
        ready: bool,
        protocol: u64,
        sdk: &'a str,
    }
    line(&Ready {
        ready: true,
        protocol: PROTOCOL_VERSION,
        sdk,
    })
}

/// The answer to a graded case: `{"id": …, "result": {…}}`.
pub fn result_line(id: &Value, result: &JudgeResult) -> String {
    #[derive(Serialize)]
    struct Graded<'a> {
        id: &'a Value,
        result: &'a JudgeResult,
    }
    line(&Graded { id, result })
}

/// The answer to a case that could not be graded: `{"id": …, "error": "…"}`.
pub fn error_line(id: &Value, message: &str) -> String {
    #[derive(Serialize)]
    struct Failed<'a> {
        id: &'a Value,
        error: &'a str,
    }
    line(&Failed { id, error: message })
}

fn line(message: &impl Serialize) -> String {
    // Strings, finite numbers and JSON values always serialize.
    serde_json::to_string(message).unwrap_or_else(|e| json!({"id": null, "error": e.to_string()}).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_with_their_proxy() {
        let r = parse_request(
            r#"{"id": "case-7#1", "payload": {"eval_id": "a"}, "proxy": {"url": "http://127.0.0.1:1", "token": "t", "max_calls": 5}}"#,
        )
        .expect("valid");
        assert_eq!(r.id, "case-7#1");
        assert_eq!(r.payload["eval_id"], "a");
        let proxy = r.proxy.expect("a proxy");
        assert_eq!((proxy.url.as_str(), proxy.max_calls), ("http://127.0.0.1:1", Some(5)));
        assert!(!format!("{proxy:?}").contains("\"t\""), "the token is not printed");
        assert_eq!(
            parse_request(r#"{"id": 2, "payload": {}, "proxy": null}"#)
                .expect("valid")
                .proxy,
            None
        );
    }

    #[test]
    fn bad_lines_are_answered_with_the_id_they_have() {
        let cases = [
            ("this is not json", Value::Null, "request line is not valid JSON"),
            (
                "[1, 2]",
                Value::Null,
                "request line must be a JSON object, got an array",
            ),
            (r#"{"payload": {}}"#, Value::Null, "request line needs an `id`"),
            (
                r#"{"id": true, "payload": {}}"#,
                Value::Null,
                "request line needs an `id`",
            ),
            (
                r#"{"id": 5, "payload": [1]}"#,
                json!(5),
                "request `payload` must be a JSON object, got an array",
            ),
            (
                r#"{"id": 6, "payload": {}, "proxy": "http://x"}"#,
                json!(6),
                "request `proxy` must be null or an object",
            ),
            (
                r#"{"id": "p", "payload": {}, "proxy": {"url": 1}}"#,
                json!("p"),
                "request `proxy` must be null or an object",
            ),
        ];
        for (line, id, want) in cases {
            let bad = parse_request(line).expect_err("bad line");
            assert_eq!(bad.id, id, "{line}");
            assert!(bad.message.starts_with(want), "{line}: {}", bad.message);
        }
    }

    #[test]
    fn answer_lines_echo_the_id() {
        let result = JudgeResult::new(1.0).expect("valid").hit("ok");
        assert_eq!(
            result_line(&json!(2), &result),
            r#"{"id":2,"result":{"score":1.0,"hits":["ok"]}}"#
        );
        assert_eq!(error_line(&json!("a"), "boom"), r#"{"id":"a","error":"boom"}"#);
        assert_eq!(
            ready_line("rust/0.1.0"),
            r#"{"ready":true,"protocol":1,"sdk":"rust/0.1.0"}"#
        );
    }
}
