//! Fake LLM services on 127.0.0.1: OpenAI Chat Completions (and any OpenAI-compatible
//! server), Azure OpenAI, Anthropic Messages and Gemini generateContent, each answered in its
//! own wire format. One server answers all four, telling them apart by the request path as
//! the real services' URLs do; judge prompts get a verdict, the rest a canned answer.
//!
//! How the fake answers ([`reply`]) is one definition with two transports: [`FakeLlm`], a
//! wiremock server that keeps requests for tests to inspect, used by the end-to-end and core
//! tests; and the benchmark's `fake-model-server` (`bench/tools`), a bare hyper server for
//! throughput and for running the tool examples offline.
//!
//! With a [`Script`] the fake calls tools: for a question the script names, it answers each
//! step with the script's tool calls in the API's own shape, and checks the tool turns it is
//! sent as strictly as the real API (see [`script`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{any, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

pub mod batch;
pub mod batch_anthropic;
pub mod batch_gemini;
pub mod bucket;
pub mod responses;
pub mod script;

pub use batch::{BatchApi, BatchBehaviour};
pub use batch_anthropic::AnthropicBatchApi;
pub use batch_gemini::GeminiBatchApi;
pub use bucket::Bucket;
pub use script::Script;

/// What the LLM judge's system prompt says; requests holding it are judge requests.
pub const JUDGE_MARK: &str = "impartial evaluator";

/// What the 4.x LLM grader's system prompt says; requests holding it are judge requests too.
pub const GRADER_MARK: &str = "You must respond with a single JSON object matching this schema";

/// How promptfoo's grading prompts begin (`llm-rubric`, `model-graded-closedqa`,
/// `factuality`, `g-eval`, the RAG assertions): requests holding one are judge requests too.
pub const PROMPTFOO_GRADER_MARKS: &[&str] = &[
    "You are grading output according to a user-specified rubric",
    "You are assessing a submitted answer on a given task based on a criterion",
    "You are a precise factuality evaluator",
    "generate 3-4 concise evaluation steps",
    "You will be given one Reply for a Prompt below",
    "Generate question for the given answer.",
    "Given a context, and an answer, analyze each sentence",
    "Please extract relevant sentences from the provided context",
    "Given a question and answer, create one or more statements",
    "Prompt: Natural language inference",
    "You are comparing multiple pieces of text to see which best fits",
    "Based on the given list of message exchanges between a user and an LLM",
];

/// The canned answer to a question.
pub const ANSWER: &str = "2+2 is 4.";

/// The canned verdict to a judge prompt.
pub const VERDICT: &str = r#"{"score": 0.8, "hits": ["says 4"], "misses": [], "reasoning": "correct"}"#;

/// Token usage every canned answer reports.
pub const USAGE: Usage = Usage { input: 20, output: 5 };

/// Prompt and completion tokens of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
}

/// The LLM APIs agentv speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Azure,
    Anthropic,
    Gemini,
}

impl Api {
    pub const ALL: [Api; 4] = [Api::OpenAi, Api::Azure, Api::Anthropic, Api::Gemini];

    /// The `provider:` name in a targets file.
    pub fn provider(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Azure => "azure",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
        }
    }

    /// The API a request path belongs to.
    pub fn of_path(path: &str) -> Self {
        if path.ends_with("/v1/messages") {
            Self::Anthropic
        } else if path.contains(":generateContent") {
            Self::Gemini
        } else if path.contains("/openai/deployments/") {
            Self::Azure
        } else {
            Self::OpenAi
        }
    }

    /// A successful, non-streamed answer holding `text`, shaped as the real API's.
    pub fn answer(self, text: &str, usage: Usage) -> Value {
        let Usage { input, output } = usage;
        match self {
            Self::Anthropic => json!({
                "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": input, "output_tokens": output}
            }),
            Self::Gemini => json!({
                "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": input, "candidatesTokenCount": output,
                                  "totalTokenCount": input + output}
            }),
            Self::OpenAi | Self::Azure => json!({
                "id": "chatcmpl-fake", "object": "chat.completion", "model": "fake-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
            }),
        }
    }

    /// A streamed Chat Completions answer (`"stream": true`): Server-Sent Events as OpenAI
    /// sends them, usage in the last chunk.
    pub fn stream_events(text: &str, usage: Usage) -> String {
        let chunk = |choices: Value, usage: Option<Value>| {
            let mut c = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                               "model": "fake-model", "choices": choices});
            if let Some(u) = usage {
                c["usage"] = u;
            }
            c
        };
        let delta = chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]),
            None,
        );
        let stop = chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]), None);
        let usage = chunk(
            json!([]),
            Some(json!({"prompt_tokens": usage.input, "completion_tokens": usage.output,
                        "total_tokens": usage.input + usage.output})),
        );
        format!("data: {delta}\n\ndata: {stop}\n\ndata: {usage}\n\ndata: [DONE]\n\n")
    }

    /// A targets-file entry `name` for this API at `base` (the fake's URI), its key read from
    /// `key` (a `${{ VAR }}` reference or a literal).
    pub fn target(self, name: &str, base: &str, key: &str) -> String {
        let head = format!("  - name: {name}\n    provider: {}\n", self.provider());
        let settings = match self {
            Self::OpenAi => format!("    base_url: {base}/v1\n    model: gpt-4o-mini\n"),
            Self::Azure => format!("    endpoint: {base}\n    deployment_name: dep\n"),
            Self::Anthropic => format!("    base_url: {base}\n    model: claude-sonnet-4-5\n"),
            Self::Gemini => format!("    base_url: {base}\n"),
        };
        format!("{head}{settings}    api_key: {key}\n")
    }
}

/// What the fake sends back: a status, a content type and a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl Reply {
    /// `text` as the API at `path` answers it: Server-Sent Events when an OpenAI-compatible
    /// request asks to stream (`"stream": true`), else the API's JSON.
    pub fn answering(path: &str, request_body: &[u8], text: &str) -> Self {
        let api = Api::of_path(path);
        let streaming = contains(request_body, b"\"stream\":true") || contains(request_body, b"\"stream\": true");
        if streaming && matches!(api, Api::OpenAi | Api::Azure) {
            Self {
                status: 200,
                content_type: "text/event-stream",
                body: Api::stream_events(text, USAGE),
            }
        } else {
            Self::json(api.answer(text, USAGE))
        }
    }

    /// `body` (an API's JSON answer) as the API streams it when the request asks to: the
    /// Messages API's events for Anthropic, the JSON itself otherwise.
    fn json_or_stream(api: Api, request_body: &[u8], body: Value) -> Self {
        let streaming = contains(request_body, b"\"stream\":true") || contains(request_body, b"\"stream\": true");
        if streaming && api == Api::Anthropic {
            return Self {
                status: 200,
                content_type: "text/event-stream",
                body: anthropic_events(&body),
            };
        }
        Self::json(body)
    }

    fn json(body: Value) -> Self {
        Self {
            status: 200,
            content_type: "application/json",
            body: body.to_string(),
        }
    }

    /// A 400 with the API's error body.
    pub(crate) fn bad_request(message: &str) -> Self {
        Self {
            status: 400,
            content_type: "application/json",
            body: json!({"error": {"type": "invalid_request_error", "message": message}}).to_string(),
        }
    }
}

/// One HTTP request as the fake batch APIs see it, whatever serves it (wiremock or hyper).
pub struct Call<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// The query string without its `?` (empty when none).
    pub query: &'a str,
    /// `http://127.0.0.1:<port>`: where URLs the fake hands back (a results URL, an upload
    /// session) point.
    pub origin: &'a str,
    /// A request header's value by its lower-case name.
    pub header: &'a dyn Fn(&str) -> Option<String>,
    pub body: &'a [u8],
}

/// The three fake batch APIs: OpenAI's (and Azure's), Anthropic's Message Batches and Gemini's
/// batch mode, all behaving as one [`BatchBehaviour`] says.
#[derive(Debug, Clone)]
pub struct BatchApis {
    pub openai: Arc<BatchApi>,
    pub anthropic: Arc<AnthropicBatchApi>,
    pub gemini: Arc<GeminiBatchApi>,
}

impl BatchApis {
    pub fn new(behaviour: BatchBehaviour) -> Self {
        Self {
            openai: Arc::new(BatchApi::new(behaviour.clone())),
            anthropic: Arc::new(AnthropicBatchApi::new(behaviour.clone())),
            gemini: Arc::new(GeminiBatchApi::new(behaviour)),
        }
    }

    /// The reply (and its extra headers) to a batch API request, or `None` when `call` is not
    /// one. Items are answered as the online API of their provider would answer them (following
    /// `script`), counted apart from online requests.
    pub fn reply(
        &self,
        call: &Call<'_>,
        script: Option<&Script>,
        answer: &str,
        verdict: &str,
    ) -> Option<(Reply, Vec<(&'static str, String)>)> {
        let items = Counters::default();
        let items = &items;
        let answering = |path: &'static str| move |b: &[u8]| reply_scripted(path, b, script, answer, verdict, items);
        if let Some(reply) = self.anthropic.reply(call, &answering("/v1/messages")) {
            return Some((reply, Vec::new()));
        }
        if let Some(answer) = self
            .gemini
            .reply(call, &answering("/v1beta/models/fake:generateContent"))
        {
            return Some(answer);
        }
        self.openai
            .reply(call.method, call.path, call.body, &answering("/v1/chat/completions"))
            .map(|reply| (reply, Vec::new()))
    }
}

/// A Messages API answer as its stream of Server-Sent Events: `message_start`, each content
/// block (`text_delta` for text, one `input_json_delta` for a tool call's input),
/// `message_delta` with the stop reason, `message_stop`.
fn anthropic_events(message: &Value) -> String {
    let mut out = String::new();
    let mut event = |kind: &str, data: Value| out.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    // Each answer its own id: Claude Code joins consecutive messages that share one into a
    // single turn.
    static ANSWERS: AtomicU64 = AtomicU64::new(0);
    let mut start = message.clone();
    start["id"] = json!(format!("msg_fake_{}", ANSWERS.fetch_add(1, Ordering::Relaxed)));
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    event("message_start", json!({"type": "message_start", "message": start}));
    let blocks = message["content"].as_array().cloned().unwrap_or_default();
    for (index, block) in blocks.iter().enumerate() {
        let (empty, delta) = if block["type"] == "tool_use" {
            let mut empty = block.clone();
            empty["input"] = json!({});
            (
                empty,
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        };
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": empty}),
        );
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    let stop = message["stop_reason"].clone();
    let usage = json!({"output_tokens": message["usage"]["output_tokens"]});
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": usage}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

/// The fake's reply to a request to `path` with `body`: `verdict` to a judge prompt, `answer`
/// to anything else, counted in `counters`.
pub fn reply(path: &str, body: &[u8], answer: &str, verdict: &str, counters: &Counters) -> Reply {
    reply_scripted(path, body, None, answer, verdict, counters)
}

/// [`reply`] following `script`: a question it names is answered with its step (tool calls
/// or text), a judge prompt holding it with its verdict. Tools and tool turns in any request
/// are checked first (a 400 when the real API would refuse them).
pub fn reply_scripted(
    path: &str,
    body: &[u8],
    script: Option<&Script>,
    answer: &str,
    verdict: &str,
    counters: &Counters,
) -> Reply {
    let judge = counters.count(path, body);
    if path.ends_with("/responses") {
        return responses::reply(body, script, answer);
    }
    let api = Api::of_path(path);
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    if let Some(parsed) = &parsed
        && let Err(message) = script::check(api, parsed)
    {
        return Reply::bad_request(&message);
    }
    let rule = match (script, &parsed) {
        (Some(script), Some(parsed)) => script.rule(api, parsed, judge),
        _ => None,
    };
    match (rule, parsed) {
        (Some(rule), Some(parsed)) if judge && !rule.judge_steps.is_empty() => {
            let done = script::tool_turns(api, &parsed);
            let step = &rule.judge_steps[done.min(rule.judge_steps.len() - 1)];
            Reply::json_or_stream(api, body, step.answer(api, done, USAGE))
        }
        (Some(rule), _) if judge => Reply::answering(path, body, rule.verdict.as_deref().unwrap_or(verdict)),
        (Some(rule), Some(parsed)) => {
            let done = script::tool_turns(api, &parsed);
            Reply::json_or_stream(api, body, rule.step(done).answer(api, done, USAGE))
        }
        _ => Reply::answering(path, body, if judge { verdict } else { answer }),
    }
}

/// Whether a request body is an LLM judge's.
pub fn is_judge(body: &[u8]) -> bool {
    contains(body, JUDGE_MARK.as_bytes())
        || contains(body, GRADER_MARK.as_bytes())
        || PROMPTFOO_GRADER_MARKS.iter().any(|m| contains(body, m.as_bytes()))
}

/// The answer of an OpenAI-compatible `/embeddings` call: a deterministic vector of the
/// input's words (each lower-cased word of letters and digits adds 1 to one of 16 dimensions,
/// chosen by the word's bytes), so texts sharing words are similar.
pub fn embedding_reply(body: &[u8]) -> Value {
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let input = parsed.get("input").and_then(Value::as_str).unwrap_or_default();
    json!({
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": embed(input)}],
        "model": parsed.get("model").cloned().unwrap_or(Value::Null),
        "usage": {"prompt_tokens": 8, "total_tokens": 8},
    })
}

/// Categories the fake's moderation flags, each when its name is in the input.
pub const MODERATION_CATEGORIES: &[&str] = &["violence", "harassment", "hate", "self-harm", "sexual", "illicit"];

/// The answer of an OpenAI-compatible `/moderations` call: a category is flagged (score 0.9)
/// when the input (text, or its text parts) holds its name, ignoring case.
pub fn moderation_reply(body: &[u8]) -> Value {
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let text = match parsed.get("input") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
    .to_lowercase();
    let mut categories = serde_json::Map::new();
    let mut scores = serde_json::Map::new();
    for c in MODERATION_CATEGORIES {
        let hit = text.contains(c);
        categories.insert((*c).to_owned(), json!(hit));
        scores.insert((*c).to_owned(), json!(if hit { 0.9 } else { 0.01 }));
    }
    let flagged = categories.values().any(|v| v == &json!(true));
    json!({
        "id": "modr-fake",
        "model": parsed.get("model").cloned().unwrap_or(Value::Null),
        "results": [{"flagged": flagged, "categories": categories, "category_scores": scores}],
    })
}

/// The vector [`embedding_reply`] answers for `text`.
pub fn embed(text: &str) -> Vec<f64> {
    let mut v = vec![0.0; 16];
    let lower = text.to_lowercase();
    for word in lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let slot = word.bytes().fold(0usize, |acc, b| (acc * 31 + usize::from(b)) % 16);
        v[slot] += 1.0;
    }
    v
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Requests served, by kind.
#[derive(Debug, Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub judge: AtomicU64,
    pub openai: AtomicU64,
    pub anthropic: AtomicU64,
    pub gemini: AtomicU64,
}

impl Counters {
    /// Counts a request; whether it is a judge's.
    pub fn count(&self, path: &str, body: &[u8]) -> bool {
        let judge = is_judge(body);
        self.requests.fetch_add(1, Ordering::SeqCst);
        if judge {
            self.judge.fetch_add(1, Ordering::SeqCst);
        }
        match Api::of_path(path) {
            Api::OpenAi | Api::Azure => &self.openai,
            Api::Anthropic => &self.anthropic,
            Api::Gemini => &self.gemini,
        }
        .fetch_add(1, Ordering::SeqCst);
        judge
    }

    /// The counts as JSON (the benchmark server's `/stats`).
    pub fn to_json(&self) -> Value {
        let n = |c: &AtomicU64| c.load(Ordering::SeqCst);
        json!({
            "requests": n(&self.requests),
            "judge_requests": n(&self.judge),
            "openai": n(&self.openai),
            "anthropic": n(&self.anthropic),
            "gemini": n(&self.gemini),
        })
    }
}

/// How the fake answers.
#[derive(Debug)]
pub struct FakeLlmBuilder {
    answer: String,
    verdict: String,
    latency: Duration,
    echo: bool,
    record: bool,
    listener: Option<std::net::TcpListener>,
    script: Option<Script>,
    bucket: Option<Arc<Bucket>>,
    batch: BatchBehaviour,
}

impl FakeLlmBuilder {
    /// How its batch jobs behave (see [`batch`]).
    pub fn batch(mut self, behaviour: BatchBehaviour) -> Self {
        self.batch = behaviour;
        self
    }

    /// Rate-limit every request with `bucket` (429 beyond it; see [`bucket`]).
    pub fn rate_limit(mut self, bucket: Arc<Bucket>) -> Self {
        self.bucket = Some(bucket);
        self
    }

    /// Answer the questions `script` names with its tool calls (see [`script`]).
    pub fn script(mut self, script: Script) -> Self {
        self.script = Some(script);
        self
    }

    /// The answer to questions (default [`ANSWER`]).
    pub fn answer(mut self, text: &str) -> Self {
        self.answer = text.to_owned();
        self
    }

    /// The answer to judge prompts (default [`VERDICT`]).
    pub fn verdict(mut self, text: &str) -> Self {
        self.verdict = text.to_owned();
        self
    }

    /// Every answer waits this long first.
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Every answer is a passing verdict whose reasoning is the request line, headers and
    /// body: what reached the server shows in what agentv writes (the secrets tests).
    pub fn echo(mut self) -> Self {
        self.echo = true;
        self
    }

    /// Forget requests instead of keeping them for [`FakeLlm::requests`] (long benchmark runs).
    pub fn without_recording(mut self) -> Self {
        self.record = false;
        self
    }

    /// Serve on this listener (a fixed port) instead of a free port.
    pub fn listener(mut self, listener: std::net::TcpListener) -> Self {
        self.listener = Some(listener);
        self
    }

    pub async fn start(self) -> FakeLlm {
        let mut builder = MockServer::builder();
        if !self.record {
            builder = builder.disable_request_recording();
        }
        if let Some(listener) = self.listener {
            builder = builder.listener(listener);
        }
        let server = builder.start().await;
        let counters = Arc::new(Counters::default());
        let batch = BatchApis::new(self.batch);
        let stats = counters.clone();
        Mock::given(method("GET"))
            .and(path("/stats"))
            .respond_with(move |_: &Request| ResponseTemplate::new(200).set_body_json(stats.to_json()))
            .with_priority(1)
            .mount(&server)
            .await;
        // Any method: healthchecks probe with GET.
        Mock::given(any())
            .respond_with(Canned {
                answer: self.answer,
                verdict: self.verdict,
                latency: self.latency,
                echo: self.echo,
                script: self.script.map(Arc::new),
                counters: counters.clone(),
                bucket: self.bucket,
                batch: batch.clone(),
            })
            .with_priority(u8::MAX)
            .mount(&server)
            .await;
        FakeLlm {
            server,
            counters,
            batch,
        }
    }
}

/// A fake LLM service on 127.0.0.1; see the module docs.
pub struct FakeLlm {
    server: MockServer,
    counters: Arc<Counters>,
    batch: BatchApis,
}

impl FakeLlm {
    /// The canned answer and verdict, no latency, requests recorded.
    pub async fn start() -> Self {
        Self::builder().start().await
    }

    /// A server that answers as `script` (YAML, see [`Script::parse`]) says; a script that does
    /// not parse is the test's own mistake and panics.
    pub async fn scripted(script: &str) -> Self {
        Self::builder()
            .script(Script::parse(script).expect("the test's script parses"))
            .start()
            .await
    }

    pub fn builder() -> FakeLlmBuilder {
        FakeLlmBuilder {
            answer: ANSWER.to_owned(),
            verdict: VERDICT.to_owned(),
            latency: Duration::ZERO,
            echo: false,
            record: true,
            listener: None,
            script: None,
            bucket: None,
            batch: BatchBehaviour::default(),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// The server, to mount answers of a test's own (errors, delays) in front of the canned
    /// ones: a mock with a priority below 255 wins.
    pub fn server(&self) -> &MockServer {
        &self.server
    }

    /// Requests received so far (not counting `/stats`).
    pub async fn requests(&self) -> Vec<Request> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.url.path() != "/stats")
            .collect()
    }

    /// Online requests served (batch items are not counted here).
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The OpenAI batch API: its counters (files, jobs, items, polls).
    pub fn batch(&self) -> &BatchApi {
        &self.batch.openai
    }

    /// Anthropic's Message Batches API: its counters (jobs, items, polls, cancels).
    pub fn anthropic_batch(&self) -> &AnthropicBatchApi {
        &self.batch.anthropic
    }

    /// Gemini's batch mode: its counters (files uploaded, jobs, items, polls, cancels).
    pub fn gemini_batch(&self) -> &GeminiBatchApi {
        &self.batch.gemini
    }
}

/// The fake's answers.
struct Canned {
    answer: String,
    verdict: String,
    latency: Duration,
    echo: bool,
    script: Option<Arc<Script>>,
    counters: Arc<Counters>,
    bucket: Option<Arc<Bucket>>,
    batch: BatchApis,
}

impl Respond for Canned {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let path = request.url.path();
        let header = |name: &str| {
            request
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        // The request's URL names no port; the Host header does.
        let origin = header("host").map_or_else(String::new, |h| format!("http://{h}"));
        let call = Call {
            method: request.method.as_str(),
            path,
            query: request.url.query().unwrap_or(""),
            origin: &origin,
            header: &header,
            body: &request.body,
        };
        // Batch items are answered as the online API would, but counted apart.
        if let Some((reply, headers)) = self
            .batch
            .reply(&call, self.script.as_deref(), &self.answer, &self.verdict)
        {
            let mut template = ResponseTemplate::new(reply.status).set_body_raw(reply.body, reply.content_type);
            for (name, value) in &headers {
                template = template.insert_header(*name, value.as_str());
            }
            return template;
        }
        if path.ends_with("/moderations") {
            self.counters.requests.fetch_add(1, Ordering::SeqCst);
            return ResponseTemplate::new(200).set_body_json(moderation_reply(&request.body));
        }
        if path.ends_with("/embeddings") {
            self.counters.requests.fetch_add(1, Ordering::SeqCst);
            return ResponseTemplate::new(200).set_body_json(embedding_reply(&request.body));
        }
        let admission = self.bucket.as_ref().map(|b| b.admit());
        if let Some(a) = admission.as_ref().filter(|a| !a.allowed) {
            let mut template = ResponseTemplate::new(429).set_body_json(
                json!({"error": {"type": "rate_limit_exceeded", "message": "Rate limit reached for requests"}}),
            );
            for (name, value) in &a.headers {
                template = template.insert_header(*name, value.as_str());
            }
            return template;
        }
        let reply = if self.echo {
            self.counters.count(path, &request.body);
            let text = json!({"score": 1, "hits": ["echo"], "misses": [], "reasoning": echo(request)});
            Reply::answering(path, &request.body, &text.to_string())
        } else {
            reply_scripted(
                path,
                &request.body,
                self.script.as_deref(),
                &self.answer,
                &self.verdict,
                &self.counters,
            )
        };
        let mut template = ResponseTemplate::new(reply.status).set_body_raw(reply.body, reply.content_type);
        for (name, value) in admission.iter().flat_map(|a| &a.headers) {
            template = template.insert_header(*name, value.as_str());
        }
        if self.latency.is_zero() {
            template
        } else {
            template.set_delay(self.latency)
        }
    }
}

/// The request line, headers and body of `request`.
fn echo(request: &Request) -> String {
    let headers: Vec<String> = request
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v.as_bytes())))
        .collect();
    format!(
        "{} {}\n{}\n{}",
        request.method,
        request.url,
        headers.join("\n"),
        String::from_utf8_lossy(&request.body)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_api_is_known_by_its_path() {
        for (path, api) in [
            ("/v1/chat/completions", Api::OpenAi),
            ("/openai/deployments/dep/chat/completions", Api::Azure),
            ("/v1/messages", Api::Anthropic),
            ("/v1beta/models/gemini-2.5-flash:generateContent", Api::Gemini),
        ] {
            assert_eq!(Api::of_path(path), api, "{path}");
        }
    }
}
