//! What the LLM API providers share: the conversation they send, one JSON POST with retries,
//! and reading provider error bodies.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::retry::{RetryPolicy, parse_retry_after};
use super::throttle::{Permit, Signal, Throttle};
use super::{ProviderError, ProviderRequest, ProviderResponse, TargetSettings};
use crate::config::{DurationRange, IntRange, Key, Kind, NumberRange};
use crate::model::{INPUT_ERROR, OutputMessage, TokenUsage, ToolCall, ToolDef, ToolSettings};
use crate::redact::Secrets;

/// The tool keys every LLM API target accepts (`docs/tools.md`).
pub use crate::tools::keys::USE_KEYS as TOOL_KEYS;

/// Keys every LLM API target accepts besides its own and [`RETRY_KEYS`] (read by
/// [`super::TargetSettings::llm`]).
pub const LLM_KEYS: &[Key] = &[
    Key::new(
        "temperature",
        Kind::Number(NumberRange::NON_NEGATIVE),
        "Sampling temperature.",
    ),
    Key::new(
        "max_output_tokens",
        Kind::Int(IntRange::at_least(0)),
        "Most tokens an answer may have.",
    )
    .aliases(&["max_tokens"]),
    Key::new(
        "timeout_seconds",
        Kind::Duration(DurationRange::TIMEOUT_SECONDS),
        "Per HTTP attempt (the run's `--timeout` bounds the whole call).",
    ),
    Key::new(
        "max_rps",
        Kind::Number(NumberRange {
            min: 0.001,
            max: f64::INFINITY,
        }),
        "Most requests started per second, whatever the provider allows (`docs/running.md#rate-limits`).",
    ),
    Key::new(
        "max_tpm",
        Kind::Number(NumberRange {
            min: 1.0,
            max: f64::INFINITY,
        }),
        "Most tokens used per minute, whatever the provider allows (`docs/running.md#rate-limits`).",
    ),
    Key::new(
        "batch_poll_ms",
        Kind::Duration(DurationRange::DELAY_MILLIS),
        "First wait between polls of a batch job (default 5000, growing to 60000; `docs/batch.md`).",
    ),
    Key::new(
        "adaptive_concurrency",
        Kind::Bool,
        "Adapt requests in flight to the provider's rate limits (default true; `docs/running.md#rate-limits`).",
    ),
    Key::new(
        "pricing",
        Kind::Object(&super::priced::PRICING),
        "What calls cost when the provider reports no cost: `{model: <a model of the pricing table>}` or rates per million tokens (`docs/running.md#cost`).",
    ),
];

/// The retry keys (`docs/architecture.md#retries`), read by
/// [`super::TargetSettings::retry`]: every LLM API target's, and any other provider that calls
/// over HTTP.
pub const RETRY_KEYS: &[Key] = &[
    Key::new(
        "max_retries",
        Kind::Int(IntRange::at_least(0)),
        "Retries of a failed HTTP call (default 3, at most 100).",
    ),
    Key::new(
        "initial_delay_ms",
        Kind::Duration(DurationRange::DELAY_MILLIS),
        "First retry delay (default 1000).",
    )
    .aliases(&["retry_initial_delay_ms"]),
    Key::new(
        "max_delay_ms",
        Kind::Duration(DurationRange::DELAY_MILLIS),
        "Longest retry delay (default 60000).",
    )
    .aliases(&["retry_max_delay_ms"]),
    Key::new(
        "backoff_factor",
        Kind::Number(NumberRange::NON_NEGATIVE),
        "Delay growth per retry (default 2).",
    )
    .aliases(&["retry_backoff_factor"]),
    Key::new(
        "retryable_status_codes",
        Kind::List(&Kind::Int(IntRange { min: 100, max: 599 })),
        "HTTP statuses that are retried (default 408, 429, 500, 502, 503, 504).",
    )
    .aliases(&["retry_status_codes"]),
];

/// The system prompt when the caller sets none.
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a careful assistant. Follow all provided instructions and do not fabricate results.";

/// Settings every LLM API target shares.
#[derive(Debug, Clone, Default)]
pub struct LlmSettings {
    pub temperature: Option<f64>,
    pub max_output_tokens: Option<u64>,
    /// Per HTTP attempt; `None` leaves it to the run's timeout.
    pub timeout: Option<Duration>,
    pub retry: RetryPolicy,
    /// Redacted from error bodies before they are cut for a message.
    pub secrets: Secrets,
    /// The target's adaptive concurrency and `max_rps` / `max_tpm`, shared by its calls.
    pub throttle: Arc<Throttle>,
    /// `batch_poll_ms`: the first wait between polls of a batch job.
    pub batch_poll: Option<Duration>,
}

/// Who speaks a turn, in the two-role form LLM APIs take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    User,
    Assistant,
}

/// The system prompt and turns of one request, in the two-role form LLM APIs take (a case's
/// multi-turn conversation is [`crate::model::Conversation`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatTurns {
    pub system: String,
    /// Alternating turns (consecutive turns of one speaker are merged).
    pub turns: Vec<(Speaker, String)>,
}

/// Builds the conversation: the caller's system prompt (or the default) with the guidelines
/// block, then the chat prompt's turns or the single question.
pub fn conversation(request: &ProviderRequest) -> ChatTurns {
    let mut system = vec![
        request
            .system_prompt
            .clone()
            .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_owned()),
    ];
    let mut turns: Vec<(Speaker, String)> = Vec::new();
    match &request.chat_prompt {
        Some(chat) => {
            // The chat prompt's leading system message already carries the guidelines.
            for m in chat {
                match m.role.as_str() {
                    "system" => system.push(m.content.clone()),
                    "assistant" => push_turn(&mut turns, Speaker::Assistant, &m.content),
                    _ => push_turn(&mut turns, Speaker::User, &m.content),
                }
            }
        }
        None => {
            if !request.guidelines.is_empty() {
                system.push(request.guidelines.clone());
            }
            push_turn(&mut turns, Speaker::User, &request.question);
        }
    }
    if turns.first().is_some_and(|(s, _)| *s == Speaker::Assistant) {
        turns.insert(0, (Speaker::User, "(conversation so far)".to_owned()));
    }
    // An empty system prompt (`Some("")`) sends none: promptfoo's grading prompts say exactly
    // which messages go (`docs/promptfoo.md#model-graded-assertions`).
    system.retain(|part| !part.is_empty());
    ChatTurns {
        system: system.join("\n\n"),
        turns,
    }
}

fn push_turn(turns: &mut Vec<(Speaker, String)>, speaker: Speaker, text: &str) {
    match turns.last_mut() {
        Some((last, existing)) if *last == speaker => {
            existing.push_str("\n\n");
            existing.push_str(text);
        }
        _ => turns.push((speaker, text.to_owned())),
    }
}

/// One HTTP request to an LLM API. Its `Debug` names the headers but never shows their values
/// (they carry API keys).
#[derive(Clone)]
pub struct HttpCall {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Value,
    /// Per attempt; `None` leaves it to the run's timeout.
    pub timeout: Option<Duration>,
    /// Redacted from error bodies before they are cut for a message.
    pub secrets: Secrets,
    /// Every attempt takes a slot of the target's throttle (`None`: no limit).
    pub throttle: Option<Arc<Throttle>>,
}

impl std::fmt::Debug for HttpCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| *name).collect();
        f.debug_struct("HttpCall")
            .field("url", &self.url)
            .field("headers", &names)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// POSTs `call` with retries: the JSON answer, the attempts made and the wall time, or the error
/// (saying how many attempts were made).
pub async fn send(call: &HttpCall, policy: &RetryPolicy) -> Result<(Value, u32, Duration), ProviderError> {
    let started = Instant::now();
    let (result, attempts) = policy
        .run(|| async {
            let permit = match &call.throttle {
                Some(t) => Some(t.acquire().await),
                None => None,
            };
            send_once(call, permit).await
        })
        .await;
    result
        .map(|body| (body, attempts, started.elapsed()))
        .map_err(|e| with_attempts(e, attempts))
}

/// The error for an answer that is JSON but not the API's shape.
pub fn malformed(problem: String) -> ProviderError {
    ProviderError::malformed("the provider", problem)
}

/// The headers of a provider call, every value but `content-type` marked sensitive so that no
/// debug output or error of the HTTP stack shows a key (`docs/architecture.md#secrets`).
pub(crate) fn header_map(headers: &[(&'static str, String)]) -> Result<HeaderMap, ProviderError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| ProviderError::Setup(format!("header `{name}` has characters HTTP does not allow")))?;
        value.set_sensitive(*name != "content-type");
        map.insert(HeaderName::from_static(name), value);
    }
    Ok(map)
}

/// One attempt; `permit` (a slot of the target's throttle) is told what the reply said.
async fn send_once(call: &HttpCall, permit: Option<Permit>) -> Result<Value, ProviderError> {
    let mut builder = crate::http::client()
        .post(&call.url)
        .headers(header_map(&call.headers)?)
        .json(&call.body);
    if let Some(t) = call.timeout {
        builder = builder.timeout(t);
    }
    let response = builder
        .send()
        .await
        .map_err(|e| super::retry::transport_error(e, call.timeout))?;
    let status = response.status().as_u16();
    let mut signal = Signal::from_reply(status, response.headers());
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let text = response
        .text()
        .await
        .map_err(|e| super::retry::transport_error(e, call.timeout))?;
    let parsed = serde_json::from_str::<Value>(&text);
    if let Some(permit) = permit {
        signal.tokens = parsed.as_ref().ok().and_then(tokens_used);
        permit.finish(signal);
    }
    if !(200..300).contains(&status) {
        return Err(ProviderError::Http {
            status,
            message: error_message(&text, &call.secrets),
            retry_after,
        });
    }
    parsed.map_err(|e| {
        ProviderError::malformed(
            "the provider",
            format!("{e}; it answered: {}", crate::process::tail(&text, 300, &call.secrets)),
        )
    })
}

/// Tokens an answer used, as each API reports them (for `max_tpm`).
fn tokens_used(body: &Value) -> Option<u64> {
    count(body, "/usage/total_tokens")
        .or_else(|| count(body, "/usageMetadata/totalTokenCount"))
        .or_else(|| Some(count(body, "/usage/input_tokens")? + count(body, "/usage/output_tokens").unwrap_or(0)))
}

/// The message of a provider error body (`error.message`, `error`, `message`), else the body's
/// end, secrets redacted.
pub fn error_message(body: &str, secrets: &Secrets) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let found = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    found.unwrap_or_else(|| crate::process::tail(body, 500, secrets))
}

/// What one answer of an LLM API says: its text, its tool calls, the tokens, and why the
/// model stopped as the API words it (`stop`, `tool_calls`, `end_turn`, `tool_use`, `STOP`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub usage: Option<TokenUsage>,
    pub finish_reason: Option<String>,
}

/// The response for an answer: one assistant message holding its text and tool calls, the
/// usage, the raw body, and in `metadata` the attempts made (and, when tools were offered, the
/// finish reason).
pub fn response(parsed: Parsed, raw: Value, attempts: u32, elapsed: Duration, tools_offered: bool) -> ProviderResponse {
    let mut metadata = Map::new();
    metadata.insert("attempts".to_owned(), json!(attempts));
    if tools_offered && let Some(reason) = &parsed.finish_reason {
        metadata.insert("finish_reason".to_owned(), json!(reason));
    }
    ProviderResponse {
        output_messages: vec![answer_message(parsed.text, parsed.calls)],
        token_usage: parsed.usage,
        duration_ms: Some(elapsed.as_secs_f64() * 1000.0),
        raw: Some(raw),
        metadata: Some(metadata),
        ..ProviderResponse::default()
    }
}

/// The assistant message of an answer: an answer that only calls tools has no content, so it
/// is never mistaken for an empty answer (`docs/tools.md#what-the-record-holds`).
pub fn answer_message(text: String, calls: Vec<ToolCall>) -> OutputMessage {
    let mut message = OutputMessage::assistant(text);
    if !calls.is_empty() && message.text().is_some_and(|t| t.is_empty()) {
        message.content = None;
    }
    message.tool_calls = calls;
    message
}

/// A tool call as an API reported it; `problem` says why its arguments are not a JSON object.
pub fn tool_call(id: Option<String>, name: String, input: Value, problem: Option<String>) -> ToolCall {
    let mut call = ToolCall {
        tool: name,
        input: Some(input),
        id,
        ..ToolCall::default()
    };
    if let Some(problem) = problem {
        call.extra.insert(INPUT_ERROR.to_owned(), Value::String(problem));
    }
    call
}

/// Arguments written as JSON text (Chat Completions): the object, or the text as written and
/// why it is not one. Empty text is no arguments.
pub fn arguments_from_text(text: &str) -> (Value, Option<String>) {
    if text.trim().is_empty() {
        return (Value::Object(Map::new()), None);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value) => object_arguments(value),
        Err(e) => (Value::String(text.to_owned()), Some(format!("not valid JSON: {e}"))),
    }
}

/// Arguments sent as a JSON value (Messages, generateContent): an object, else the value and
/// why it is not one.
pub fn object_arguments(value: Value) -> (Value, Option<String>) {
    if value.is_object() {
        (value, None)
    } else {
        let kind = match &value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "a list",
            Value::Object(_) => "an object",
        };
        (value, Some(format!("not a JSON object but {kind}")))
    }
}

/// The tool settings of an LLM target (`docs/tools.md`); problems are reported with the
/// target's other settings. A tools file is relative to the targets file.
pub fn tool_settings(s: &mut TargetSettings<'_>) -> ToolSettings {
    // Tool files are found as every relative path of a target setting is.
    let base = s.path(".");
    let find = move |text: &str| {
        let path = crate::paths::normalize(&base.join(text));
        if path.is_file() { Ok(path) } else { Err(vec![path]) }
    };
    let tools_node = s.node("tools");
    let choice_node = s.node("tool_choice");
    let parallel = s.boolean("parallel_tool_calls");
    let max_steps = s.whole("max_steps").and_then(|n| u32::try_from(n).ok());
    let diags = s.diagnostics();
    let tools = tools_node.and_then(|n| crate::tools::read::read_tools(n, &find, diags));
    let choice = choice_node.and_then(|n| crate::tools::read::read_choice(n, diags));
    if let (Some(tools), Some(choice), Some(node)) = (&tools, &choice, choice_node) {
        crate::tools::read::check_choice(choice, tools, node.pos, diags);
    }
    ToolSettings {
        tools,
        choice,
        parallel,
        max_steps,
        results: Default::default(),
    }
}

/// An error that says how many attempts were made when there was more than one (an error
/// that is not about the wire keeps its message).
fn with_attempts(error: ProviderError, attempts: u32) -> ProviderError {
    let gave_up = |m: String| format!("{m} (gave up after {attempts} attempts)");
    match error {
        ProviderError::Http {
            status,
            message,
            retry_after,
        } if attempts > 1 => ProviderError::Http {
            status,
            message: gave_up(message),
            retry_after,
        },
        ProviderError::Network(m) if attempts > 1 => ProviderError::Network(gave_up(m)),
        other => other,
    }
}

/// The text at `pointer` of an answer (a finish reason).
pub fn text_at(body: &Value, pointer: &str) -> Option<String> {
    body.pointer(pointer).and_then(Value::as_str).map(str::to_owned)
}

/// A tool in the neutral form most APIs take: `{name, description?, <schema_key>: parameters}`.
pub fn function_shape(tool: &ToolDef, schema_key: &str) -> Value {
    let mut out = json!({"name": tool.name});
    if let Some(d) = &tool.description {
        out["description"] = json!(d);
    }
    out[schema_key] = tool.parameters.clone();
    out
}

/// A count from a usage object.
pub fn count(value: &Value, pointer: &str) -> Option<u64> {
    value.pointer(pointer).and_then(Value::as_u64)
}

/// What the tool tests of the three LLM clients share: a request with tools and one earlier
/// step whose call had arguments that did not parse, answered by a tool error.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use crate::model::{ToolChoice, ToolDef, ToolDialect, ToolExchange, ToolReply, ToolRequest};
    use crate::providers::ProviderRequest;

    /// `lookup` (neutral, described) and `native` (written in `dialect`'s shape as `written`).
    pub(crate) fn tools(dialect: ToolDialect, written: Value) -> Vec<ToolDef> {
        let mut lookup = ToolDef::new(
            "lookup",
            json!({"type": "object", "properties": {"id": {"type": "string"}}}),
        );
        lookup.description = Some("Find an order.".into());
        let native = ToolDef {
            native: Some((dialect, written)),
            ..ToolDef::new("native", json!({"type": "object"}))
        };
        vec![lookup, native]
    }

    /// A request offering `tools`, after one step: the text "Checking." and a call of `lookup`
    /// (id `c1`) whose arguments `{bad` did not parse, answered with the error `bad arguments`.
    pub(crate) fn request(
        tools: Vec<ToolDef>,
        choice: Option<ToolChoice>,
        parallel: Option<bool>,
        raw: Option<Value>,
    ) -> ProviderRequest {
        let (input, problem) = super::arguments_from_text("{bad");
        let mut message = super::answer_message(
            "Checking.".into(),
            vec![super::tool_call(Some("c1".into()), "lookup".into(), input, problem)],
        );
        message.tool_calls[0].output = Some(json!("bad arguments"));
        ProviderRequest {
            question: "Where is A1?".into(),
            tools: Some(ToolRequest {
                tools: Arc::from(tools),
                choice,
                parallel,
                exchanges: vec![ToolExchange {
                    raw,
                    message,
                    replies: vec![ToolReply {
                        id: Some("c1".into()),
                        name: "lookup".into(),
                        content: json!("bad arguments"),
                        is_error: true,
                    }],
                }],
            }),
            ..ProviderRequest::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::ChatMessage;

    #[test]
    fn every_header_but_content_type_is_sensitive_and_a_bad_value_is_an_error() {
        let map = header_map(&[
            ("authorization", "Bearer sk-secret".into()),
            ("x-api-key", "k\"quoted".into()),
            ("content-type", "application/json".into()),
        ])
        .expect("valid headers");
        assert!(map["authorization"].is_sensitive());
        assert!(map["x-api-key"].is_sensitive());
        assert!(!map["content-type"].is_sensitive());
        assert!(!format!("{map:?}").contains("sk-secret"));
        let err = header_map(&[("authorization", "Bearer a\nb".into())]).expect_err("newline in a header");
        assert!(err.to_string().contains("header `authorization`"), "{err}");
        assert!(!err.to_string().contains("Bearer a"), "{err}");
    }

    #[test]
    fn arguments_that_are_not_an_object_are_kept_and_flagged() {
        for (text, value, problem) in [
            ("{\"id\": 1}", json!({"id": 1}), None),
            ("", json!({}), None),
            ("  ", json!({}), None),
            (
                "{bad",
                json!("{bad"),
                Some("not valid JSON: key must be a string at line 1 column 2"),
            ),
            ("[1]", json!([1]), Some("not a JSON object but a list")),
            ("null", Value::Null, Some("not a JSON object but null")),
        ] {
            let (got, why) = arguments_from_text(text);
            assert_eq!((got, why.as_deref()), (value, problem), "{text}");
        }
        let flagged = tool_call(None, "t".into(), json!("x"), Some("why".into()));
        assert_eq!(flagged.extra[INPUT_ERROR], "why");
        let calls_only = answer_message(String::new(), vec![flagged]);
        assert!(calls_only.content.is_none(), "a call-only answer is not an empty text");
        assert_eq!(answer_message(String::new(), Vec::new()).text().as_deref(), Some(""));
    }

    #[test]
    fn single_question_gets_guidelines_in_the_system_prompt() {
        let request = ProviderRequest {
            question: "Q".into(),
            guidelines: "[[ ## Guidelines ## ]]\nG".into(),
            ..ProviderRequest::default()
        };
        let c = conversation(&request);
        assert_eq!(
            c.system,
            format!("{DEFAULT_SYSTEM_PROMPT}\n\n[[ ## Guidelines ## ]]\nG")
        );
        assert_eq!(c.turns, [(Speaker::User, "Q".to_owned())]);
    }

    #[test]
    fn chat_prompt_turns_are_merged_and_start_with_the_user() {
        let chat = |role: &str, content: &str| ChatMessage {
            role: role.into(),
            content: content.into(),
        };
        let request = ProviderRequest {
            system_prompt: Some("S".into()),
            chat_prompt: Some(vec![
                chat("system", "sys + guidelines"),
                chat("assistant", "@[Tool]:\nr"),
                chat("assistant", "a"),
                chat("user", "u"),
            ]),
            ..ProviderRequest::default()
        };
        let c = conversation(&request);
        assert_eq!(c.system, "S\n\nsys + guidelines");
        let speakers: Vec<Speaker> = c.turns.iter().map(|(s, _)| *s).collect();
        assert_eq!(speakers, [Speaker::User, Speaker::Assistant, Speaker::User]);
        assert_eq!(c.turns[1].1, "@[Tool]:\nr\n\na");
    }

    /// Answers every request with 429 and `retry-after: <value>` on 127.0.0.1.
    async fn rate_limited(retry_after: &str) -> wiremock::MockServer {
        let server = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::method("POST"))
            .respond_with(
                wiremock::ResponseTemplate::new(429)
                    .insert_header("retry-after", retry_after)
                    .set_body_json(json!({"error": {"message": "slow down"}})),
            )
            .mount(&server)
            .await;
        server
    }

    #[tokio::test]
    async fn send_caps_hostile_retry_after_at_max_delay() {
        let policy = RetryPolicy {
            max_retries: 2,
            max_delay: Duration::from_millis(20),
            ..RetryPolicy::default()
        };
        for header in [
            "1e30",
            "-5",
            "NaN",
            "Fri, 31 Dec 9999 23:59:59 GMT",
            "18446744073709551616",
        ] {
            let server = rate_limited(header).await;
            let call = HttpCall {
                url: format!("{}/v1/chat", server.uri()),
                headers: vec![],
                body: json!({}),
                timeout: Some(Duration::from_secs(10)),
                secrets: Secrets::default(),
                throttle: None,
            };
            let err = send(&call, &policy).await.expect_err("always 429");
            assert_eq!(
                err.to_string(),
                "HTTP 429: slow down (gave up after 3 attempts)",
                "{header}"
            );
            let requests = server.received_requests().await.expect("recorded");
            assert_eq!(requests.len(), 3, "{header}");
        }
    }

    #[test]
    fn error_messages_come_from_the_body() {
        for (body, want) in [
            (
                r#"{"error": {"message": "Rate limit reached", "type": "x"}}"#,
                "Rate limit reached",
            ),
            (r#"{"error": "bad key"}"#, "bad key"),
            (r#"{"message": "nope"}"#, "nope"),
            ("<html>Bad Gateway</html>", "<html>Bad Gateway</html>"),
        ] {
            assert_eq!(error_message(body, &Secrets::default()), want);
        }
    }
}
