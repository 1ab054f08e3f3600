//! `gemini` / `google`: generateContent.
//!
//! Tools go in the generateContent shape (`docs/tools.md#gemini`): one `tools` entry of
//! `functionDeclarations` (`{name, description, parametersJsonSchema}`) and
//! `toolConfig.functionCallingConfig` (`mode` AUTO / NONE / ANY, `allowedFunctionNames`); the
//! answer's `functionCall` parts are the calls, and the results go back as `functionResponse`
//! parts after the model's turn replayed as it came (thought signatures included).

use std::sync::Arc;

use serde_json::{Value, json};

use super::llm::{self, HttpCall, LLM_KEYS, LlmSettings, RETRY_KEYS, Parsed, Speaker, TOOL_KEYS};
use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderFuture, ProviderKind, ProviderRequest,
    ProviderResponse, TargetSettings,
};
use crate::config::{Key, KeyTable, Kind};
use crate::model::{TokenUsage, ToolChoice, ToolDef, ToolDialect, ToolExchange, ToolRequest, ToolSettings};
use crate::redact::Secret;

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&ENTRY];

pub(crate) static ENTRY: ProviderEntry = ProviderEntry {
    name: "gemini",
    aliases: &["google", "google-gemini"],
    doc: "Google Gemini generateContent.",
    class: ProviderClass::Llm,
    batch: true,
    cacheable: true,
    executable: None,
    container: false,
    keys: &KEYS,
    build,
};

const OWN: &[Key] = &[
    Key::new(
        "base_url",
        Kind::Url,
        "Server URL (default https://generativelanguage.googleapis.com).",
    ),
    Key::new("model", Kind::Text, "Model name (default gemini-2.5-flash).").aliases(&["deployment", "variant"]),
    Key::new("api_key", Kind::Text, "API key, e.g. `${{ GOOGLE_API_KEY }}`.").required(),
];
const KEYS: KeyTable = KeyTable::new(
    "gemini",
    "Settings of a `gemini` target.",
    &[OWN, LLM_KEYS, RETRY_KEYS, TOOL_KEYS],
);

pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";
pub const GEMINI_DEFAULT_MODEL: &str = "gemini-2.5-flash";

/// generateContent settings, validated.
#[derive(Debug, Clone)]
pub struct GeminiConfig {
    pub base_url: String,
    pub model: String,
    pub api_key: Secret,
    /// Temperature, output limit, timeout and retries.
    pub llm: LlmSettings,
    /// The target's own tools, tool choice and steps.
    pub tools: ToolSettings,
}

/// A Gemini model.
#[derive(Debug)]
pub struct GeminiProvider {
    name: String,
    pub(super) config: GeminiConfig,
}

impl GeminiProvider {
    pub fn new(name: impl Into<String>, config: GeminiConfig) -> Self {
        Self {
            name: name.into(),
            config,
        }
    }

    pub fn http_call(&self, request: &ProviderRequest) -> HttpCall {
        let c = &self.config;
        HttpCall {
            // The key goes in a header, never in the URL.
            url: format!(
                "{}/v1beta/models/{}:generateContent",
                c.base_url.trim_end_matches('/'),
                c.model
            ),
            headers: vec![
                ("content-type", "application/json".to_owned()),
                ("x-goog-api-key", c.api_key.expose().to_owned()),
            ],
            body: generate_body(&c.llm, request),
            timeout: c.llm.timeout,
            secrets: c.llm.secrets.clone(),
            throttle: Some(c.llm.throttle.clone()),
        }
    }
}

/// The generateContent body for `request`: shared with Vertex AI (`vertex.rs`), which takes
/// the same request at another URL.
pub(super) fn generate_body(settings: &LlmSettings, request: &ProviderRequest) -> Value {
    let conversation = llm::conversation(request);
    let mut contents: Vec<Value> = conversation
        .turns
        .iter()
        .map(|(speaker, text)| {
            let role = if *speaker == Speaker::User { "user" } else { "model" };
            json!({"role": role, "parts": [{"text": text}]})
        })
        .collect();
    if let Some(tools) = &request.tools {
        for exchange in &tools.exchanges {
            push_exchange(&mut contents, exchange);
        }
    }
    let mut generation = serde_json::Map::new();
    if let Some(t) = request.temperature.or(settings.temperature) {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(m) = settings.max_output_tokens {
        generation.insert("maxOutputTokens".into(), json!(m));
    }
    let mut body = json!({
        "systemInstruction": {"parts": [{"text": conversation.system}]},
        "contents": contents,
    });
    if !generation.is_empty() {
        body["generationConfig"] = Value::Object(generation);
    }
    if let Some(tools) = &request.tools {
        add_tools(&mut body, tools);
    }
    body
}

/// `tools` (one entry holding every declaration) and `toolConfig`. Gemini has no switch for
/// parallel calls: `parallel_tool_calls` is not sent.
fn add_tools(body: &mut Value, tools: &ToolRequest) {
    let declarations: Vec<Value> = tools.tools.iter().map(wire_declaration).collect();
    body["tools"] = json!([{"functionDeclarations": declarations}]);
    if let Some(choice) = &tools.choice {
        body["toolConfig"] = json!({"functionCallingConfig": wire_choice(choice)});
    }
}

/// A function declaration: as written when it was written in Gemini's shape; the neutral
/// parameters go in `parametersJsonSchema`, which takes JSON Schema as it is.
pub fn wire_declaration(tool: &ToolDef) -> Value {
    tool.native_for(ToolDialect::Gemini)
        .cloned()
        .unwrap_or_else(|| llm::function_shape(tool, "parametersJsonSchema"))
}

/// `functionCallingConfig`: `mode` AUTO, NONE or ANY; a named tool is ANY limited to it.
pub fn wire_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
    }
}

/// An earlier step: the model's turn as the API sent it (else rebuilt from its text and
/// calls), then one `user` turn of `functionResponse` parts.
fn push_exchange(contents: &mut Vec<Value>, exchange: &ToolExchange) {
    let turn = exchange
        .raw
        .as_ref()
        .and_then(|raw| raw.pointer("/candidates/0/content"))
        .filter(|c| c.get("parts").is_some_and(Value::is_array))
        .cloned()
        .unwrap_or_else(|| {
            let mut parts: Vec<Value> = exchange
                .message
                .text()
                .filter(|t| !t.is_empty())
                .map(|t| json!({"text": t}))
                .into_iter()
                .collect();
            parts.extend(exchange.message.tool_calls.iter().map(|call| {
                let mut function_call = json!({"name": call.tool, "args": call.input});
                if let Some(id) = &call.id {
                    function_call["id"] = json!(id);
                }
                json!({"functionCall": function_call})
            }));
            json!({"role": "model", "parts": parts})
        });
    contents.push(turn);
    let parts: Vec<Value> = exchange
        .replies
        .iter()
        .map(|reply| {
            let mut response = json!({"name": reply.name, "response": reply.object()});
            if let Some(id) = &reply.id {
                response["id"] = json!(id);
            }
            json!({"functionResponse": response})
        })
        .collect();
    contents.push(json!({"role": "user", "parts": parts}));
}

/// The first candidate's text parts (thought parts kept out), function calls, finish reason
/// and usage.
pub fn parse_generation(body: &Value) -> Result<Parsed, String> {
    let parts = body
        .pointer("/candidates/0/content/parts")
        .and_then(Value::as_array)
        .ok_or_else(
            || match body.pointer("/promptFeedback/blockReason").and_then(Value::as_str) {
                Some(reason) => format!("the prompt was blocked: {reason}"),
                None => "the answer has no candidates[0].content.parts".to_owned(),
            },
        )?;
    let text: String = parts
        .iter()
        .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    let mut calls = Vec::new();
    for call in parts.iter().filter_map(|p| p.get("functionCall")) {
        let name = call
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("functionCall {} has no name", calls.len()))?;
        let id = call.get("id").and_then(Value::as_str).map(str::to_owned);
        let (input, problem) = llm::object_arguments(call.get("args").cloned().unwrap_or(json!({})));
        calls.push(llm::tool_call(id, name.to_owned(), input, problem));
    }
    let usage = llm::count(body, "/usageMetadata/promptTokenCount").map(|input| TokenUsage {
        input,
        // Thinking tokens are billed as output.
        output: llm::count(body, "/usageMetadata/candidatesTokenCount")
            .unwrap_or(0)
            .saturating_add(llm::count(body, "/usageMetadata/thoughtsTokenCount").unwrap_or(0)),
        cached: llm::count(body, "/usageMetadata/cachedContentTokenCount"),
    });
    Ok(Parsed {
        finish_reason: llm::text_at(body, "/candidates/0/finishReason"),
        text,
        calls,
        usage,
    })
}

impl Provider for GeminiProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(&ENTRY)
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move {
            let (body, attempts, elapsed) = llm::send(&self.http_call(request), &self.config.llm.retry).await?;
            let parsed = parse_generation(&body).map_err(llm::malformed)?;
            Ok(llm::response(parsed, body, attempts, elapsed, request.tools.is_some()))
        })
    }

    fn tool_settings(&self) -> Option<&ToolSettings> {
        Some(&self.config.tools)
    }

    fn throttle(&self) -> Option<&std::sync::Arc<super::Throttle>> {
        Some(&self.config.llm.throttle)
    }

    fn batch_api(&self) -> Option<&dyn super::BatchApi> {
        Some(self)
    }

    fn public_settings(&self) -> Value {
        let c = &self.config;
        json!({"base_url": c.base_url, "model": c.model, "temperature": c.llm.temperature, "max_output_tokens": c.llm.max_output_tokens})
    }
}

/// A `gemini` target from its settings.
fn build(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let base_url = s
        .string("base_url", true)
        .unwrap_or_else(|| GEMINI_BASE_URL.to_owned());
    let model = s
        .string("model", false)
        .unwrap_or_else(|| GEMINI_DEFAULT_MODEL.to_owned());
    let api_key = s.credential("api_key", "GOOGLE_API_KEY", s.pos());
    let llm = s.llm();
    let tools = llm::tool_settings(s);
    let config = GeminiConfig {
        base_url,
        model,
        api_key: Secret::new(api_key?),
        llm,
        tools,
    };
    Some(Arc::new(GeminiProvider::new(ctx.target, config)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::llm::testing;

    fn provider() -> GeminiProvider {
        GeminiProvider::new(
            "t",
            GeminiConfig {
                base_url: "http://127.0.0.1:9".into(),
                model: "m".into(),
                api_key: Secret::new("k"),
                llm: LlmSettings::default(),
                tools: ToolSettings::default(),
            },
        )
    }

    #[test]
    fn tools_choice_and_earlier_steps_go_in_the_generate_content_shape() {
        let native = json!({"name": "native", "parametersJsonSchema": {"type": "object"}, "behavior": "BLOCKING"});
        let tools = testing::tools(ToolDialect::Gemini, native.clone());
        let body = provider()
            .http_call(&testing::request(tools.clone(), Some(ToolChoice::Tool("lookup".into())), Some(false), None))
            .body;
        assert_eq!(
            body["tools"],
            json!([{"functionDeclarations": [
                {"name": "lookup", "description": "Find an order.",
                 "parametersJsonSchema": {"type": "object", "properties": {"id": {"type": "string"}}}},
                native
            ]}])
        );
        assert_eq!(body["toolConfig"], json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}}));
        assert!(body.to_string().find("parallel").is_none(), "Gemini has no such switch");
        let contents = body["contents"].as_array().expect("contents");
        assert_eq!(
            contents[1],
            json!({"role": "model", "parts": [{"text": "Checking."}, {"functionCall": {"name": "lookup", "args": "{bad", "id": "c1"}}]})
        );
        assert_eq!(
            contents[2],
            json!({"role": "user", "parts": [{"functionResponse": {"name": "lookup", "id": "c1", "response": {"error": "bad arguments"}}}]})
        );
        let raw = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "lookup", "args": {}}, "thoughtSignature": "sig"}]}}]});
        let body = provider().http_call(&testing::request(tools, None, None, Some(raw.clone()))).body;
        assert_eq!(body["contents"][1], raw["candidates"][0]["content"], "replayed with its signature");
        for (choice, mode) in [(ToolChoice::Auto, "AUTO"), (ToolChoice::None, "NONE"), (ToolChoice::Required, "ANY")] {
            assert_eq!(wire_choice(&choice), json!({"mode": mode}));
        }
    }

    #[test]
    fn function_call_parts_are_the_calls() {
        let body = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "lookup", "args": {"id": "A1"}, "id": "fc-1"}, "thoughtSignature": "s"},
            {"functionCall": {"name": "ping"}}]}, "finishReason": "STOP"}]});
        let parsed = parse_generation(&body).expect("parses");
        assert_eq!(parsed.finish_reason.as_deref(), Some("STOP"));
        assert_eq!((parsed.calls[0].id.as_deref(), parsed.calls[0].input.clone()), (Some("fc-1"), Some(json!({"id": "A1"}))));
        assert_eq!((parsed.calls[1].id.clone(), parsed.calls[1].input.clone()), (None, Some(json!({}))));
    }

    #[test]
    fn text_without_thoughts_and_usage() {
        let body = json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "plan", "thought": true}, {"text": "Paris"}]}}],
            "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 2, "thoughtsTokenCount": 5, "cachedContentTokenCount": 4}
        });
        let parsed = parse_generation(&body).expect("parses");
        assert_eq!(parsed.text, "Paris");
        assert_eq!(
            parsed.usage,
            Some(TokenUsage {
                input: 9,
                output: 7,
                cached: Some(4)
            })
        );
        let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}});
        assert_eq!(
            parse_generation(&blocked).expect_err("blocked"),
            "the prompt was blocked: SAFETY"
        );
    }

    #[test]
    fn huge_token_counts_saturate_instead_of_panicking() {
        let body = json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "Paris"}]}}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": u64::MAX, "thoughtsTokenCount": u64::MAX}
        });
        let parsed = parse_generation(&body).expect("parses");
        assert_eq!(parsed.usage.map(|u| u.output), Some(u64::MAX));
    }
}
