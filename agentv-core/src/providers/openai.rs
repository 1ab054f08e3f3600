//! `openai` (Chat Completions on any compatible server, or the Responses API with
//! `api: responses`: `openai_responses.rs`) and `azure` (deployment URLs).
//!
//! Tools go in the Chat Completions shape (`docs/tools.md#openai-and-azure-openai`): `tools`
//! of `{type: function, function: {name, description, parameters}}`, `tool_choice`,
//! `parallel_tool_calls`; the answer's `message.tool_calls` carry arguments as JSON text, and
//! each result goes back as a `tool` message naming its `tool_call_id`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::llm::{self, HttpCall, LLM_KEYS, LlmSettings, RETRY_KEYS, Parsed, Speaker, TOOL_KEYS};
use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderFuture, ProviderKind, ProviderRequest,
    ProviderResponse, TargetSettings,
};
use crate::config::{Key, KeyTable, Kind};
use crate::model::{INPUT_ERROR, TokenUsage, ToolCall, ToolChoice, ToolDef, ToolDialect, ToolExchange, ToolSettings};
use crate::redact::Secret;

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&OPENAI, &AZURE];

/// `openai`: Chat Completions on api.openai.com or any compatible server.
pub(crate) static OPENAI: ProviderEntry = ProviderEntry {
    name: "openai",
    aliases: &[],
    doc: "OpenAI Chat Completions, or any OpenAI-compatible server through `base_url`.",
    class: ProviderClass::Llm,
    batch: true,
    cacheable: true,
    executable: None,
    container: false,
    keys: &OPENAI_KEYS,
    build: build_openai,
};

/// `azure`: Chat Completions on an Azure OpenAI deployment.
pub(crate) static AZURE: ProviderEntry = ProviderEntry {
    name: "azure",
    aliases: &["azure-openai"],
    doc: "Azure OpenAI Chat Completions on a deployment.",
    class: ProviderClass::Llm,
    batch: true,
    cacheable: true,
    executable: None,
    container: false,
    keys: &AZURE_KEYS,
    build: build_azure,
};

const OPENAI_OWN: &[Key] = &[
    Key::new("base_url", Kind::Url, "Server URL (default https://api.openai.com/v1)."),
    Key::new("model", Kind::Text, "Model name, e.g. gpt-4o-mini.").required(),
    Key::new("organization", Kind::Text, "OpenAI organization id."),
    Key::new(
        "api",
        Kind::Enum(&["chat", "responses"]),
        "`chat` (Chat Completions, the default) or `responses` (the Responses API, `POST {base_url}/responses`).",
    ),
    Key::new(
        "passthrough",
        Kind::Map(&Kind::Any),
        "Body fields sent as written (`top_p`, `seed`, `stop`, `response_format`, ...); they win over agentv's.",
    ),
    Key::new(
        "api_key",
        Kind::Text,
        "API key, e.g. `${{ OPENAI_API_KEY }}` (needed for api.openai.com).",
    ),
];
const OPENAI_KEYS: KeyTable = KeyTable::new(
    "openai",
    "Settings of an `openai` target.",
    &[OPENAI_OWN, LLM_KEYS, RETRY_KEYS, TOOL_KEYS],
);

const AZURE_OWN: &[Key] = &[
    Key::new(
        "endpoint",
        Kind::Text,
        "Resource URL, or the resource name (https://<name>.openai.azure.com).",
    )
    .aliases(&["resource_name", "resource"])
    .required(),
    Key::new("deployment_name", Kind::Text, "The deployment to call.")
        .aliases(&["deployment", "model"])
        .required(),
    Key::new("api_version", Kind::Text, "API version (default 2024-10-01-preview).").aliases(&["version"]),
    Key::new(
        "passthrough",
        Kind::Map(&Kind::Any),
        "Body fields sent as written (`top_p`, `seed`, `stop`, `response_format`, ...); they win over agentv's.",
    ),
    Key::new("api_key", Kind::Text, "API key, e.g. `${{ AZURE_OPENAI_API_KEY }}`.").required(),
];
const AZURE_KEYS: KeyTable = KeyTable::new(
    "azure",
    "Settings of an `azure` target.",
    &[AZURE_OWN, LLM_KEYS, RETRY_KEYS, TOOL_KEYS],
);

/// The official endpoint.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Azure API version when the target sets none.
pub const AZURE_API_VERSION: &str = "2024-10-01-preview";

/// Where requests go and how they authenticate.
#[derive(Debug, Clone)]
pub enum Flavor {
    /// `POST {base_url}/chat/completions` with `Authorization: Bearer` and `model` in the body.
    OpenAi {
        base_url: String,
        model: String,
        organization: Option<String>,
    },
    /// `POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=` with `api-key`.
    Azure {
        endpoint: String,
        deployment: String,
        api_version: String,
    },
}

/// Chat Completions settings, validated.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    pub flavor: Flavor,
    /// Optional for OpenAI-compatible servers that need none (Ollama, llama.cpp).
    pub api_key: Option<Secret>,
    /// Temperature, output limit, timeout and retries.
    pub llm: LlmSettings,
    /// The target's own tools, tool choice and steps.
    pub tools: ToolSettings,
    /// `passthrough`: body fields sent as written, over agentv's.
    pub passthrough: serde_json::Map<String, Value>,
}

/// An OpenAI-style chat model.
#[derive(Debug)]
pub struct OpenAiProvider {
    name: String,
    pub(crate) config: OpenAiConfig,
}

impl OpenAiProvider {
    pub fn new(name: impl Into<String>, config: OpenAiConfig) -> Self {
        Self {
            name: name.into(),
            config,
        }
    }

    /// The HTTP request for `request`.
    pub fn http_call(&self, request: &ProviderRequest) -> HttpCall {
        let conversation = llm::conversation(request);
        let mut messages = Vec::new();
        if !conversation.system.is_empty() {
            messages.push(json!({"role": "system", "content": conversation.system}));
        }
        for (speaker, text) in &conversation.turns {
            let role = match speaker {
                Speaker::User => "user",
                Speaker::Assistant => "assistant",
            };
            messages.push(json!({"role": role, "content": text}));
        }
        let mut body = json!({ "messages": messages });
        if let Some(tools) = &request.tools {
            for exchange in &tools.exchanges {
                push_exchange(&mut body["messages"], exchange);
            }
            body["tools"] = tools.tools.iter().map(wire_tool).collect();
            if let Some(choice) = &tools.choice {
                body["tool_choice"] = wire_choice(choice);
            }
            if let Some(parallel) = tools.parallel {
                body["parallel_tool_calls"] = json!(parallel);
            }
        }
        if let Some(t) = request.temperature.or(self.config.llm.temperature) {
            body["temperature"] = json!(t);
        }
        if let Some(m) = self.config.llm.max_output_tokens {
            body["max_tokens"] = json!(m);
        }
        for (k, v) in &self.config.passthrough {
            body[k.as_str()] = v.clone();
        }
        let mut headers = vec![("content-type", "application/json".to_owned())];
        let url = match &self.config.flavor {
            Flavor::OpenAi {
                base_url,
                model,
                organization,
            } => {
                body["model"] = json!(model);
                if let Some(key) = &self.config.api_key {
                    headers.push(("authorization", format!("Bearer {}", key.expose())));
                }
                if let Some(org) = organization {
                    headers.push(("openai-organization", org.clone()));
                }
                format!("{}/chat/completions", base_url.trim_end_matches('/'))
            }
            Flavor::Azure {
                endpoint,
                deployment,
                api_version,
            } => {
                if let Some(key) = &self.config.api_key {
                    headers.push(("api-key", key.expose().to_owned()));
                }
                format!(
                    "{}/openai/deployments/{deployment}/chat/completions?api-version={api_version}",
                    endpoint.trim_end_matches('/')
                )
            }
        };
        HttpCall {
            url,
            headers,
            body,
            timeout: self.config.llm.timeout,
            secrets: self.config.llm.secrets.clone(),
            throttle: Some(self.config.llm.throttle.clone()),
        }
    }
}

/// A tool in the Chat Completions shape: as written when it was written in it.
pub fn wire_tool(tool: &ToolDef) -> Value {
    tool.native_for(ToolDialect::OpenAi)
        .cloned()
        .unwrap_or_else(|| json!({"type": "function", "function": llm::function_shape(tool, "parameters")}))
}

/// `tool_choice`: `auto`, `none`, `required`, or `{type: function, function: {name}}`.
pub fn wire_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

/// An earlier step: the assistant message with its `tool_calls`, then one `tool` message per
/// call.
fn push_exchange(messages: &mut Value, exchange: &ToolExchange) {
    let Some(messages) = messages.as_array_mut() else { return };
    let calls: Vec<Value> = exchange
        .message
        .tool_calls
        .iter()
        .map(|call| {
            json!({"id": call.id, "type": "function",
                   "function": {"name": call.tool, "arguments": arguments_text(call)}})
        })
        .collect();
    messages.push(json!({"role": "assistant", "content": exchange.message.text(), "tool_calls": calls}));
    for reply in &exchange.replies {
        messages.push(json!({"role": "tool", "tool_call_id": reply.id, "content": reply.text()}));
    }
}

/// The arguments as the model wrote them: invalid JSON goes back as it came.
pub(super) fn arguments_text(call: &ToolCall) -> String {
    match (&call.input, call.extra.contains_key(INPUT_ERROR)) {
        (Some(Value::String(text)), true) => text.clone(),
        (Some(value), _) => value.to_string(),
        (None, _) => "{}".to_owned(),
    }
}

/// Reads a Chat Completions answer: the first choice's text, tool calls, finish reason and the
/// usage.
pub fn parse_completion(body: &Value) -> Result<Parsed, String> {
    let message = body
        .pointer("/choices/0/message")
        .ok_or("the answer has no choices[0].message")?;
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| calls.iter().enumerate().map(|(i, c)| parse_call(i, c)).collect::<Result<Vec<_>, _>>())
        .transpose()?
        .unwrap_or_default();
    let usage = match (
        llm::count(body, "/usage/prompt_tokens"),
        llm::count(body, "/usage/completion_tokens"),
    ) {
        (Some(input), Some(output)) => Some(TokenUsage {
            input,
            output,
            cached: llm::count(body, "/usage/prompt_tokens_details/cached_tokens"),
        }),
        _ => None,
    };
    let finish_reason = llm::text_at(body, "/choices/0/finish_reason");
    Ok(Parsed {
        text,
        calls,
        usage,
        finish_reason,
    })
}

/// One of `message.tool_calls`; a server that gives no id gets `call_<index>`, so the result
/// can name it.
fn parse_call(index: usize, call: &Value) -> Result<ToolCall, String> {
    let name = call
        .pointer("/function/name")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("tool_calls[{index}] has no function.name"))?;
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .map_or_else(|| format!("call_{index}"), str::to_owned);
    let (input, problem) = match call.pointer("/function/arguments") {
        Some(Value::String(text)) => llm::arguments_from_text(text),
        Some(Value::Null) | None => llm::arguments_from_text(""),
        Some(other) => llm::object_arguments(other.clone()),
    };
    Ok(llm::tool_call(Some(id), name.to_owned(), input, problem))
}

impl Provider for OpenAiProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        match self.config.flavor {
            Flavor::OpenAi { .. } => ProviderKind::of(&OPENAI),
            Flavor::Azure { .. } => ProviderKind::of(&AZURE),
        }
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move {
            let (body, attempts, elapsed) = llm::send(&self.http_call(request), &self.config.llm.retry).await?;
            let parsed = parse_completion(&body).map_err(llm::malformed)?;
            Ok(llm::response(parsed, body, attempts, elapsed, request.tools.is_some()))
        })
    }

    fn tool_settings(&self) -> Option<&ToolSettings> {
        Some(&self.config.tools)
    }

    fn moderate<'a>(&'a self, text: &'a str) -> ProviderFuture<'a, super::Moderation> {
        Box::pin(async move {
            let mut call = self.http_call(&ProviderRequest::default());
            let Flavor::OpenAi { base_url, model, .. } = &self.config.flavor else {
                return Err(super::ProviderError::Unsupported("Azure targets have no moderation API in agentv"));
            };
            // The omni models take a list of parts, the older text models a string.
            let input = if model.starts_with("omni-moderation") {
                json!([{"type": "text", "text": text}])
            } else {
                json!(text)
            };
            call.body = json!({"model": model, "input": input});
            call.url = format!("{}/moderations", base_url.trim_end_matches('/'));
            let (body, _, _) = llm::send(&call, &self.config.llm.retry).await?;
            Ok(moderation_flags(&body))
        })
    }

    fn embed<'a>(&'a self, text: &'a str) -> ProviderFuture<'a, super::Embedding> {
        Box::pin(async move {
            let mut call = self.http_call(&ProviderRequest::default());
            call.body = json!({"input": text});
            match &self.config.flavor {
                Flavor::OpenAi { base_url, model, .. } => {
                    call.body["model"] = json!(model);
                    call.url = format!("{}/embeddings", base_url.trim_end_matches('/'));
                }
                Flavor::Azure { .. } => call.url = call.url.replace("/chat/completions", "/embeddings"),
            }
            let (body, _, _) = llm::send(&call, &self.config.llm.retry).await?;
            let vector: Option<Vec<f64>> = body
                .pointer("/data/0/embedding")
                .and_then(Value::as_array)
                .and_then(|items| items.iter().map(Value::as_f64).collect());
            let vector = vector.ok_or_else(|| llm::malformed("no `data[0].embedding` list of numbers".to_owned()))?;
            Ok(super::Embedding {
                vector,
                tokens: llm::count(&body, "/usage/prompt_tokens").unwrap_or(0),
                cost_usd: None,
            })
        })
    }

    fn throttle(&self) -> Option<&std::sync::Arc<super::Throttle>> {
        Some(&self.config.llm.throttle)
    }

    fn batch_api(&self) -> Option<&dyn super::BatchApi> {
        Some(self)
    }

    fn public_settings(&self) -> Value {
        let c = &self.config;
        let mut out = match &c.flavor {
            Flavor::OpenAi { base_url, model, .. } => json!({"base_url": base_url, "model": model}),
            Flavor::Azure {
                endpoint,
                deployment,
                api_version,
            } => json!({"endpoint": endpoint, "deployment_name": deployment, "api_version": api_version}),
        };
        out["temperature"] = json!(c.llm.temperature);
        out["max_output_tokens"] = json!(c.llm.max_output_tokens);
        if !c.passthrough.is_empty() {
            out["passthrough"] = Value::Object(c.passthrough.clone());
        }
        out
    }
}

/// An `azure` target from its settings.
fn build_azure(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let llm = s.llm();
    let tools = llm::tool_settings(s);
    let passthrough = passthrough(s);
    let endpoint = s.string("endpoint", true);
    let deployment = s.string("deployment_name", true);
    let version = s
        .string("api_version", false)
        .map(|v| v.trim_start_matches("api-version=").to_owned())
        .unwrap_or_else(|| AZURE_API_VERSION.to_owned());
    let api_key = s.credential("api_key", "AZURE_OPENAI_API_KEY", ctx.pos);
    if endpoint.is_none() && !s.any_missing() {
        s.error(
            ctx.pos,
            format!("azure target `{}` needs `endpoint` or `resource_name`", ctx.target),
            None,
        );
    }
    if deployment.is_none() && !s.any_missing() {
        s.error(
            ctx.pos,
            format!("azure target `{}` needs `deployment_name`", ctx.target),
            None,
        );
    }
    let endpoint = endpoint?;
    let endpoint = if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        endpoint
    } else {
        format!("https://{endpoint}.openai.azure.com")
    };
    let config = OpenAiConfig {
        flavor: Flavor::Azure {
            endpoint,
            deployment: deployment?,
            api_version: version,
        },
        api_key: Some(Secret::new(api_key?)),
        llm,
        tools,
        passthrough,
    };
    Some(Arc::new(OpenAiProvider::new(ctx.target, config)))
}

/// An `openai` target from its settings.
/// `passthrough`, its `${{ VAR }}` resolved.
fn passthrough(s: &mut TargetSettings<'_>) -> serde_json::Map<String, Value> {
    match s.tree("passthrough").map(|n| n.to_json()) {
        Some(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    }
}

fn build_openai(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let llm = s.llm();
    let tools = llm::tool_settings(s);
    let passthrough = passthrough(s);
    let base_url = s
        .string("base_url", true)
        .unwrap_or_else(|| OPENAI_BASE_URL.to_owned());
    let model = s.string("model", true);
    let organization = s.string("organization", false);
    let api = s.string("api", false);
    let responses = api.as_deref().is_some_and(|api| api.eq_ignore_ascii_case("responses"));
    if let Some(other) = api.filter(|a| !responses && !a.eq_ignore_ascii_case("chat")) {
        s.error(
            ctx.pos,
            format!("openai target `{}`: unknown `api: {other}`", ctx.target),
            Some("use `api: chat` (Chat Completions, the default) or `api: responses`".to_owned()),
        );
        return None;
    }
    // A compatible server may need no key; api.openai.com always does.
    let api_key = if base_url == OPENAI_BASE_URL || s.has("api_key") {
        s.credential("api_key", "OPENAI_API_KEY", ctx.pos)
    } else {
        None
    };
    if model.is_none() && !s.any_missing() {
        s.error(
            ctx.pos,
            format!("openai target `{}` needs `model`", ctx.target),
            Some("for example `model: gpt-4o-mini`".to_owned()),
        );
    }
    let config = OpenAiConfig {
        flavor: Flavor::OpenAi {
            base_url,
            model: model?,
            organization,
        },
        api_key: api_key.map(Secret::new),
        llm,
        tools,
        passthrough,
    };
    if responses {
        return Some(Arc::new(super::openai_responses::ResponsesProvider::new(ctx.target, config)));
    }
    Some(Arc::new(OpenAiProvider::new(ctx.target, config)))
}

/// The flagged categories of a moderations answer, each with its highest score over the
/// flagged results.
fn moderation_flags(body: &Value) -> super::Moderation {
    let mut flags: Vec<(String, f64)> = Vec::new();
    for result in body.get("results").and_then(Value::as_array).into_iter().flatten() {
        if result.get("flagged").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        for (category, flagged) in result.get("categories").and_then(Value::as_object).into_iter().flatten() {
            if flagged.as_bool() != Some(true) {
                continue;
            }
            let score = result.pointer(&format!("/category_scores/{category}")).and_then(Value::as_f64).unwrap_or(0.0);
            match flags.iter_mut().find(|(c, _)| c == category) {
                Some(slot) if score > slot.1 => slot.1 = score,
                Some(_) => {}
                None => flags.push((category.clone(), score)),
            }
        }
    }
    super::Moderation { flags }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::llm::testing;

    fn provider() -> OpenAiProvider {
        let flavor = Flavor::OpenAi {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            organization: None,
        };
        OpenAiProvider::new(
            "t",
            OpenAiConfig {
                flavor,
                api_key: None,
                llm: LlmSettings::default(),
                tools: ToolSettings::default(),
                passthrough: serde_json::Map::new(),
            },
        )
    }

    #[test]
    fn tools_choice_and_earlier_steps_go_in_the_chat_completions_shape() {
        let native = json!({"type": "function", "function": {"name": "native", "parameters": {"type": "object"}, "strict": true}});
        let tools = testing::tools(ToolDialect::OpenAi, native.clone());
        let request = testing::request(tools, Some(ToolChoice::Tool("lookup".into())), Some(false), None);
        let body = provider().http_call(&request).body;
        assert_eq!(
            body["tools"][0],
            json!({"type": "function", "function": {"name": "lookup", "description": "Find an order.",
                   "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}})
        );
        assert_eq!(body["tools"][1], native, "its own shape, as written");
        assert_eq!(body["tool_choice"], json!({"type": "function", "function": {"name": "lookup"}}));
        assert_eq!(body["parallel_tool_calls"], false);
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 4, "system, user, the step, its result");
        assert_eq!(
            messages[2],
            json!({"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{bad"}}]})
        );
        assert_eq!(messages[3], json!({"role": "tool", "tool_call_id": "c1", "content": "bad arguments"}));
        for (choice, want) in [(ToolChoice::Auto, "auto"), (ToolChoice::None, "none"), (ToolChoice::Required, "required")] {
            assert_eq!(wire_choice(&choice), json!(want));
        }
        let plain = provider().http_call(&ProviderRequest::default()).body;
        assert!(plain.get("tools").is_none() && plain.get("tool_choice").is_none(), "no tools, no keys");
    }

    #[test]
    fn tool_calls_are_read_with_ids_arguments_and_the_finish_reason() {
        let body = json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": "{\"id\": \"A1\"}"}},
            {"type": "function", "function": {"name": "track", "arguments": "{oops"}}
        ]}, "finish_reason": "tool_calls"}]});
        let parsed = parse_completion(&body).expect("parses");
        assert_eq!((parsed.text.as_str(), parsed.finish_reason.as_deref()), ("", Some("tool_calls")));
        assert_eq!(parsed.calls[0].input, Some(json!({"id": "A1"})));
        assert_eq!(parsed.calls[0].id.as_deref(), Some("call_a"));
        assert_eq!(parsed.calls[1].id.as_deref(), Some("call_1"), "a missing id is made up");
        assert_eq!(parsed.calls[1].input, Some(json!("{oops")));
        assert!(parsed.calls[1].extra.contains_key(INPUT_ERROR));
        let nameless = json!({"choices": [{"message": {"tool_calls": [{"function": {}}]}}]});
        assert_eq!(parse_completion(&nameless).expect_err("no name"), "tool_calls[0] has no function.name");
    }

    #[test]
    fn completion_text_and_usage() {
        let body = json!({
            "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 8}}
        });
        let parsed = parse_completion(&body).expect("parses");
        assert_eq!(parsed.text, "hi");
        assert_eq!(parsed.finish_reason.as_deref(), Some("stop"));
        assert!(parsed.calls.is_empty());
        assert_eq!(
            parsed.usage,
            Some(TokenUsage {
                input: 12,
                output: 3,
                cached: Some(8)
            })
        );
        assert!(parse_completion(&json!({"choices": []})).is_err());
    }
}

