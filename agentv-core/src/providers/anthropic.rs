//! `anthropic`: the Messages API, with optional extended thinking.
//!
//! Tools go in the Messages shape (`docs/tools.md#anthropic`): `tools` of `{name, description,
//! input_schema}` and `tool_choice` `{type: auto | any | tool | none}` (with
//! `disable_parallel_tool_use`); the answer's `tool_use` blocks are the calls, and the results
//! go back in one `user` message of `tool_result` blocks, after the assistant's turn replayed
//! as it came (thinking blocks and their signatures included).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::llm::{self, HttpCall, LLM_KEYS, LlmSettings, Parsed, Speaker, TOOL_KEYS};
use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderFuture, ProviderKind, ProviderRequest,
    ProviderResponse, TargetSettings,
};
use crate::config::{IntRange, Key, KeyTable, Kind};
use crate::model::{TokenUsage, ToolChoice, ToolDef, ToolDialect, ToolExchange, ToolRequest, ToolSettings};
#[cfg(test)]
use crate::model::INPUT_ERROR;
use crate::redact::Secret;

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&ENTRY];

pub(crate) static ENTRY: ProviderEntry = ProviderEntry {
    name: "anthropic",
    aliases: &[],
    doc: "The Anthropic Messages API, with optional extended thinking.",
    class: ProviderClass::Llm,
    batch: true,
    cacheable: true,
    executable: None,
    keys: &KEYS,
    build,
};

const OWN: &[Key] = &[
    Key::new("base_url", Kind::Url, "Server URL (default https://api.anthropic.com)."),
    Key::new("model", Kind::Text, "Model name, e.g. claude-sonnet-4-5.")
        .aliases(&["deployment", "variant"])
        .required(),
    Key::new("api_key", Kind::Text, "API key, e.g. `${{ ANTHROPIC_API_KEY }}`.").required(),
    Key::new("anthropic_version", Kind::Text, "The `anthropic-version` header (default 2023-06-01)."),
    Key::new(
        "thinking_budget",
        Kind::Int(IntRange::at_least(0)),
        "Extended thinking budget in tokens (`thinking: {type: enabled, budget_tokens}`).",
    ),
    Key::new("thinking", Kind::Any, "A `thinking` object sent as written (newer models use other shapes)."),
];
const KEYS: KeyTable = KeyTable::new(
    "anthropic",
    "Settings of an `anthropic` target.",
    &[OWN, LLM_KEYS, TOOL_KEYS],
);

pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; used when the target sets none.
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// Messages API settings, validated.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    pub base_url: String,
    pub model: String,
    pub api_key: Secret,
    pub anthropic_version: String,
    /// Temperature, output limit, timeout and retries.
    pub llm: LlmSettings,
    /// Extended thinking budget (`thinking: {type: enabled, budget_tokens}`).
    pub thinking_budget: Option<u64>,
    /// A `thinking` object passed through as written (newer models use other shapes).
    pub thinking: Option<Value>,
    /// The target's own tools, tool choice and steps.
    pub tools: ToolSettings,
}

/// A Claude model through the Messages API.
#[derive(Debug)]
pub struct AnthropicProvider {
    name: String,
    pub(super) config: AnthropicConfig,
}

impl AnthropicProvider {
    pub fn new(name: impl Into<String>, config: AnthropicConfig) -> Self {
        Self {
            name: name.into(),
            config,
        }
    }

    pub fn http_call(&self, request: &ProviderRequest) -> HttpCall {
        let c = &self.config;
        let conversation = llm::conversation(request);
        let mut messages: Vec<Value> = conversation
            .turns
            .iter()
            .map(|(speaker, text)| {
                let role = if *speaker == Speaker::User { "user" } else { "assistant" };
                json!({"role": role, "content": text})
            })
            .collect();
        if let Some(tools) = &request.tools {
            for exchange in &tools.exchanges {
                push_exchange(&mut messages, exchange);
            }
        }
        let thinking = c.thinking.clone().or_else(|| {
            c.thinking_budget
                .map(|b| json!({"type": "enabled", "budget_tokens": b}))
        });
        let budget = thinking
            .as_ref()
            .and_then(|t| t.get("budget_tokens"))
            .and_then(Value::as_u64);
        // max_tokens must exceed the thinking budget.
        let max_tokens = match (c.llm.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS), budget) {
            (m, Some(b)) if m <= b => b.saturating_add(DEFAULT_MAX_TOKENS),
            (m, _) => m,
        };
        let mut body = json!({
            "model": c.model,
            "max_tokens": max_tokens,
            "messages": messages,
        });
        if !conversation.system.is_empty() {
            body["system"] = json!(conversation.system);
        }
        if let Some(t) = thinking {
            body["thinking"] = t;
        } else if let Some(t) = request.temperature.or(c.llm.temperature) {
            // The API rejects a temperature other than 1 with thinking on.
            body["temperature"] = json!(t);
        }
        if let Some(tools) = &request.tools {
            add_tools(&mut body, tools);
        }
        HttpCall {
            url: format!("{}/v1/messages", c.base_url.trim_end_matches('/')),
            headers: vec![
                ("content-type", "application/json".to_owned()),
                ("x-api-key", c.api_key.expose().to_owned()),
                ("anthropic-version", c.anthropic_version.clone()),
            ],
            body,
            timeout: c.llm.timeout,
            secrets: c.llm.secrets.clone(),
            throttle: Some(c.llm.throttle.clone()),
        }
    }
}

/// `tools` and `tool_choice` of a request.
fn add_tools(body: &mut Value, tools: &ToolRequest) {
    body["tools"] = tools.tools.iter().map(wire_tool).collect();
    if let Some(choice) = wire_choice(tools.choice.as_ref(), tools.parallel) {
        body["tool_choice"] = choice;
    }
}

/// A tool in the Messages shape: as written when it was written in it.
pub fn wire_tool(tool: &ToolDef) -> Value {
    tool.native_for(ToolDialect::Anthropic)
        .cloned()
        .unwrap_or_else(|| llm::function_shape(tool, "input_schema"))
}

/// `tool_choice`: `{type: auto | none | any | tool}`; parallel calls are turned off with
/// `disable_parallel_tool_use` (on `auto` when no choice is given). `None`: the API's default.
pub fn wire_choice(choice: Option<&ToolChoice>, parallel: Option<bool>) -> Option<Value> {
    let mut out = match choice {
        None if parallel == Some(false) => json!({"type": "auto"}),
        None => return None,
        Some(ToolChoice::Auto) => json!({"type": "auto"}),
        Some(ToolChoice::None) => return Some(json!({"type": "none"})),
        Some(ToolChoice::Required) => json!({"type": "any"}),
        Some(ToolChoice::Tool(name)) => json!({"type": "tool", "name": name}),
    };
    if parallel == Some(false) {
        out["disable_parallel_tool_use"] = json!(true);
    }
    Some(out)
}

/// An earlier step: the assistant's turn as the API sent it (else rebuilt from its text and
/// calls), then one `user` message of `tool_result` blocks.
fn push_exchange(messages: &mut Vec<Value>, exchange: &ToolExchange) {
    let content = exchange
        .raw
        .as_ref()
        .and_then(|raw| raw.get("content"))
        .filter(|c| c.is_array())
        .cloned()
        .unwrap_or_else(|| {
            let mut blocks: Vec<Value> = exchange
                .message
                .text()
                .filter(|t| !t.is_empty())
                .map(|t| json!({"type": "text", "text": t}))
                .into_iter()
                .collect();
            blocks.extend(exchange.message.tool_calls.iter().map(|call| {
                json!({"type": "tool_use", "id": call.id, "name": call.tool, "input": call.input})
            }));
            Value::Array(blocks)
        });
    messages.push(json!({"role": "assistant", "content": content}));
    let results: Vec<Value> = exchange
        .replies
        .iter()
        .map(|reply| {
            let mut block = json!({"type": "tool_result", "tool_use_id": reply.id, "content": reply.text()});
            if reply.is_error {
                block["is_error"] = json!(true);
            }
            block
        })
        .collect();
    messages.push(json!({"role": "user", "content": results}));
}

/// The answer's text blocks (thinking blocks kept out), tool calls, stop reason and usage, and
/// the thinking text apart.
pub fn parse_message(body: &Value) -> Result<(Parsed, Option<String>), String> {
    let blocks = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or("the answer has no content blocks")?;
    let mut text = Vec::new();
    let mut thinking = Vec::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.extend(block.get("text").and_then(Value::as_str)),
            Some("thinking") => thinking.extend(block.get("thinking").and_then(Value::as_str)),
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("tool_use block {} has no name", calls.len()))?;
                let id = block.get("id").and_then(Value::as_str).map(str::to_owned);
                let (input, problem) = llm::object_arguments(block.get("input").cloned().unwrap_or(json!({})));
                calls.push(llm::tool_call(id, name.to_owned(), input, problem));
            }
            _ => {}
        }
    }
    let usage = match (
        llm::count(body, "/usage/input_tokens"),
        llm::count(body, "/usage/output_tokens"),
    ) {
        (Some(input), Some(output)) => {
            let read = llm::count(body, "/usage/cache_read_input_tokens");
            let created = llm::count(body, "/usage/cache_creation_input_tokens").unwrap_or(0);
            Some(TokenUsage {
                // input_tokens excludes cache reads and writes; report everything sent.
                input: input.saturating_add(read.unwrap_or(0)).saturating_add(created),
                output,
                cached: read,
            })
        }
        _ => None,
    };
    let parsed = Parsed {
        text: text.join(""),
        calls,
        usage,
        finish_reason: llm::text_at(body, "/stop_reason"),
    };
    Ok((parsed, (!thinking.is_empty()).then(|| thinking.join("\n"))))
}

/// The response for a Messages answer, online or from a batch: its text and calls, with the
/// thinking apart in `metadata.thinking`.
pub(super) fn message_response(
    body: Value,
    attempts: u32,
    elapsed: std::time::Duration,
    tools_offered: bool,
) -> Result<ProviderResponse, super::ProviderError> {
    let (parsed, thinking) = parse_message(&body).map_err(llm::malformed)?;
    let mut response = llm::response(parsed, body, attempts, elapsed, tools_offered);
    if let Some(thinking) = thinking {
        response
            .metadata
            .get_or_insert_with(Map::new)
            .insert("thinking".to_owned(), json!(thinking));
    }
    Ok(response)
}

impl Provider for AnthropicProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(&ENTRY)
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move {
            let (body, attempts, elapsed) = llm::send(&self.http_call(request), &self.config.llm.retry).await?;
            message_response(body, attempts, elapsed, request.tools.is_some())
        })
    }

    fn batch_api(&self) -> Option<&dyn super::BatchApi> {
        Some(self)
    }

    fn tool_settings(&self) -> Option<&ToolSettings> {
        Some(&self.config.tools)
    }

    fn throttle(&self) -> Option<&std::sync::Arc<super::Throttle>> {
        Some(&self.config.llm.throttle)
    }

    fn public_settings(&self) -> Value {
        let c = &self.config;
        json!({
            "base_url": c.base_url,
            "model": c.model,
            "anthropic_version": c.anthropic_version,
            "temperature": c.llm.temperature,
            "max_output_tokens": c.llm.max_output_tokens,
            "thinking_budget": c.thinking_budget,
            "thinking": c.thinking,
        })
    }
}

/// An `anthropic` target from its settings.
fn build(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let base_url = s
        .string("base_url", true)
        .unwrap_or_else(|| ANTHROPIC_BASE_URL.to_owned());
    let model = s.string("model", true);
    let api_key = s.credential("api_key", "ANTHROPIC_API_KEY", ctx.pos);
    let anthropic_version = s
        .string("anthropic_version", false)
        .unwrap_or_else(|| ANTHROPIC_VERSION.to_owned());
    let llm = s.llm();
    let tools = llm::tool_settings(s);
    let thinking_budget = s.whole("thinking_budget");
    let thinking = s.tree("thinking").map(|n| n.to_json());
    if model.is_none() && !s.any_missing() {
        s.error(
            ctx.pos,
            format!("anthropic target `{}` needs `model`", ctx.target),
            Some("for example `model: claude-sonnet-4-5`".to_owned()),
        );
    }
    let config = AnthropicConfig {
        base_url,
        model: model?,
        api_key: Secret::new(api_key?),
        anthropic_version,
        llm,
        thinking_budget,
        thinking,
        tools,
    };
    Some(Arc::new(AnthropicProvider::new(ctx.target, config)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::llm::testing;

    fn provider() -> AnthropicProvider {
        AnthropicProvider::new(
            "t",
            AnthropicConfig {
                base_url: "http://127.0.0.1:9".into(),
                model: "m".into(),
                api_key: Secret::new("k"),
                anthropic_version: ANTHROPIC_VERSION.into(),
                llm: LlmSettings::default(),
                thinking_budget: None,
                thinking: None,
                tools: ToolSettings::default(),
            },
        )
    }

    #[test]
    fn tools_choice_and_earlier_steps_go_in_the_messages_shape() {
        let native = json!({"name": "native", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}});
        let tools = testing::tools(ToolDialect::Anthropic, native.clone());
        let body = provider().http_call(&testing::request(tools.clone(), None, None, None)).body;
        assert_eq!(
            body["tools"][0],
            json!({"name": "lookup", "description": "Find an order.",
                   "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}}})
        );
        assert_eq!(body["tools"][1], native);
        assert!(body.get("tool_choice").is_none(), "the API's default");
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(
            messages[1]["content"],
            json!([{"type": "text", "text": "Checking."}, {"type": "tool_use", "id": "c1", "name": "lookup", "input": "{bad"}]),
            "rebuilt when the raw answer is not at hand"
        );
        assert_eq!(
            messages[2],
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "bad arguments", "is_error": true}]})
        );
        // The turn as it came, thinking and signature included.
        let raw = json!({"content": [{"type": "thinking", "thinking": "hmm", "signature": "sig"},
                                     {"type": "tool_use", "id": "c1", "name": "lookup", "input": {}}]});
        let body = provider().http_call(&testing::request(tools, None, None, Some(raw.clone()))).body;
        assert_eq!(body["messages"][1]["content"], raw["content"]);
        for (choice, parallel, want) in [
            (None, None, None),
            (None, Some(false), Some(json!({"type": "auto", "disable_parallel_tool_use": true}))),
            (None, Some(true), None),
            (Some(ToolChoice::Auto), None, Some(json!({"type": "auto"}))),
            (Some(ToolChoice::None), Some(false), Some(json!({"type": "none"}))),
            (Some(ToolChoice::Required), Some(false), Some(json!({"type": "any", "disable_parallel_tool_use": true}))),
            (Some(ToolChoice::Tool("lookup".into())), None, Some(json!({"type": "tool", "name": "lookup"}))),
        ] {
            assert_eq!(wire_choice(choice.as_ref(), parallel), want, "{choice:?} {parallel:?}");
        }
    }

    #[test]
    fn tool_use_blocks_are_the_calls() {
        let body = json!({"content": [{"type": "text", "text": "Let me check."},
                                      {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"id": "A1"}},
                                      {"type": "tool_use", "id": "toolu_2", "name": "track", "input": "x"}],
                          "stop_reason": "tool_use"});
        let (parsed, _) = parse_message(&body).expect("parses");
        assert_eq!((parsed.text.as_str(), parsed.finish_reason.as_deref()), ("Let me check.", Some("tool_use")));
        assert_eq!(parsed.calls[0].id.as_deref(), Some("toolu_1"));
        assert_eq!(parsed.calls[0].input, Some(json!({"id": "A1"})));
        assert_eq!(parsed.calls[1].extra[INPUT_ERROR], "not a JSON object but a string");
    }

    #[test]
    fn thinking_is_kept_out_of_the_answer_and_cache_counts() {
        let body = json!({
            "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "42"}],
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0}
        });
        let (parsed, thinking) = parse_message(&body).expect("parses");
        assert_eq!(parsed.text, "42");
        assert_eq!(thinking.as_deref(), Some("hmm"));
        assert_eq!(
            parsed.usage,
            Some(TokenUsage {
                input: 110,
                output: 5,
                cached: Some(100)
            })
        );
    }

    #[test]
    fn huge_token_counts_saturate_instead_of_panicking() {
        let body = json!({
            "content": [{"type": "text", "text": "42"}],
            "usage": {"input_tokens": u64::MAX, "output_tokens": 1, "cache_read_input_tokens": u64::MAX,
                      "cache_creation_input_tokens": u64::MAX}
        });
        let (parsed, _) = parse_message(&body).expect("parses");
        assert_eq!(parsed.usage.map(|u| u.input), Some(u64::MAX));
    }
}
