//! `openai` with `api: responses`: the OpenAI Responses API (`POST {base_url}/responses`).
//!
//! The request carries the turns in `input` (a single user turn as a plain string), the system
//! prompt in `instructions`, the output limit in `max_output_tokens`, tools in the Responses
//! shape (`{type: function, name, description, parameters}`, no `function` wrapper) and a
//! `response_format` as `text.format`. The answer's `output` is a list of items: `message`
//! items hold `output_text` parts, `function_call` items are the tool calls (arguments as JSON
//! text, `call_id` to answer them by), `reasoning` items are left out of the answer
//! (`docs/tools.md#openai-responses-api`).

use serde_json::{Map, Value, json};

use super::llm::{self, HttpCall, Parsed, Speaker};
use super::openai::{Flavor, OpenAiConfig};
use super::{Provider, ProviderFuture, ProviderKind, ProviderRequest, ProviderResponse};
use crate::model::{TokenUsage, ToolCall, ToolChoice, ToolDef, ToolDialect, ToolExchange, ToolSettings};

/// A model called through the Responses API.
#[derive(Debug)]
pub struct ResponsesProvider {
    name: String,
    config: OpenAiConfig,
}

impl ResponsesProvider {
    pub fn new(name: impl Into<String>, config: OpenAiConfig) -> Self {
        Self {
            name: name.into(),
            config,
        }
    }

    /// The HTTP request for `request`.
    pub fn http_call(&self, request: &ProviderRequest) -> HttpCall {
        let c = &self.config;
        let conversation = llm::conversation(request);
        let exchanges = request.tools.as_ref().map_or(&[][..], |t| &t.exchanges[..]);
        let input = match conversation.turns.as_slice() {
            // promptfoo's shape for a plain prompt: the text itself.
            [(Speaker::User, text)] if exchanges.is_empty() => json!(text),
            turns => {
                let mut items: Vec<Value> = turns
                    .iter()
                    .map(|(speaker, text)| {
                        let role = if *speaker == Speaker::User { "user" } else { "assistant" };
                        json!({"role": role, "content": text})
                    })
                    .collect();
                for exchange in exchanges {
                    push_exchange(&mut items, exchange);
                }
                Value::Array(items)
            }
        };
        let mut body = json!({"input": input});
        if !conversation.system.is_empty() {
            body["instructions"] = json!(conversation.system);
        }
        if let Some(tools) = &request.tools {
            body["tools"] = tools.tools.iter().map(wire_tool).collect();
            if let Some(choice) = &tools.choice {
                body["tool_choice"] = wire_choice(choice);
            }
            if let Some(parallel) = tools.parallel {
                body["parallel_tool_calls"] = json!(parallel);
            }
        }
        if let Some(t) = request.temperature.or(c.llm.temperature) {
            body["temperature"] = json!(t);
        }
        if let Some(m) = c.llm.max_output_tokens {
            body["max_output_tokens"] = json!(m);
        }
        for (k, v) in &c.passthrough {
            put_passthrough(&mut body, k, v);
        }
        let mut headers = vec![("content-type", "application/json".to_owned())];
        if let Some(key) = &c.api_key {
            headers.push(("authorization", format!("Bearer {}", key.expose())));
        }
        let (base_url, model) = match &c.flavor {
            Flavor::OpenAi {
                base_url,
                model,
                organization,
            } => {
                if let Some(org) = organization {
                    headers.push(("openai-organization", org.clone()));
                }
                (base_url.as_str(), model.as_str())
            }
            // Built only for `openai` targets (`build_openai`).
            Flavor::Azure {
                endpoint, deployment, ..
            } => (endpoint.as_str(), deployment.as_str()),
        };
        body["model"] = json!(model);
        HttpCall {
            url: format!("{}/responses", base_url.trim_end_matches('/')),
            headers,
            body,
            timeout: c.llm.timeout,
            secrets: c.llm.secrets.clone(),
            throttle: Some(c.llm.throttle.clone()),
        }
    }
}

/// A `passthrough` field, with the Chat Completions names promptfoo configs use moved to
/// where the Responses API reads them: `response_format` to `text.format`,
/// `reasoning_effort` to `reasoning.effort`, `max_tokens` to `max_output_tokens`.
fn put_passthrough(body: &mut Value, key: &str, value: &Value) {
    match key {
        "response_format" => body["text"] = json!({"format": text_format(value)}),
        "reasoning_effort" => body["reasoning"] = json!({"effort": value}),
        "max_tokens" | "max_completion_tokens" => body["max_output_tokens"] = value.clone(),
        _ => body[key] = value.clone(),
    }
}

/// `text.format` for a `response_format`: `json_object` as it is; a `json_schema` (its schema
/// in `json_schema.schema` as Chat Completions has it, or at the top) flattened to
/// `{type, name, schema, strict}`; anything else is plain text.
pub fn text_format(format: &Value) -> Value {
    match format.get("type").and_then(Value::as_str) {
        Some("json_object") => json!({"type": "json_object"}),
        Some("json_schema") => {
            let nested = format.get("json_schema");
            let pick = |k: &str| nested.and_then(|n| n.get(k)).or_else(|| format.get(k)).cloned();
            let mut out = json!({
                "type": "json_schema",
                "name": pick("name").unwrap_or_else(|| json!("response_schema")),
                "schema": pick("schema").unwrap_or_else(|| json!({})),
                "strict": pick("strict").unwrap_or(json!(true)),
            });
            if let Some(d) = pick("description") {
                out["description"] = d;
            }
            out
        }
        _ => json!({"type": "text"}),
    }
}

/// A tool in the Responses shape: a tool written in that shape (or any non-function tool) as
/// written, a Chat Completions tool unwrapped from its `function`, else the neutral definition.
pub fn wire_tool(tool: &ToolDef) -> Value {
    if let Some(written) = tool.native_for(ToolDialect::OpenAi)
        && let Some(function) = written.get("function").and_then(Value::as_object)
    {
        let mut out = Map::from_iter([("type".to_owned(), json!("function"))]);
        out.extend(function.iter().map(|(k, v)| (k.clone(), v.clone())));
        return Value::Object(out);
    }
    let mut out = llm::function_shape(tool, "parameters");
    out["type"] = json!("function");
    out
}

/// `tool_choice`: `auto`, `none`, `required`, or `{type: function, name}`.
pub fn wire_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
    }
}

/// An earlier step: the answer's `output` items replayed as they came (reasoning items
/// included, which reasoning models need back), else its text as an assistant message and each
/// call as a `function_call` item; then each result as a `function_call_output` naming the
/// call's `call_id`.
fn push_exchange(items: &mut Vec<Value>, exchange: &ToolExchange) {
    let replayed = exchange
        .raw
        .as_ref()
        .and_then(|raw| raw.get("output"))
        .and_then(Value::as_array)
        .filter(|output| {
            output
                .iter()
                .any(|i| i.get("type").and_then(Value::as_str) == Some("function_call"))
        });
    if let Some(output) = replayed {
        items.extend(output.iter().cloned());
    } else {
        if let Some(text) = exchange.message.text().filter(|t| !t.is_empty()) {
            items.push(json!({"role": "assistant", "content": text}));
        }
        for (i, call) in exchange.message.tool_calls.iter().enumerate() {
            let id = call.id.clone().unwrap_or_else(|| format!("call_{i}"));
            items.push(
                json!({"type": "function_call", "call_id": id, "name": call.tool, "arguments": super::openai::arguments_text(call)}),
            );
        }
    }
    for (i, reply) in exchange.replies.iter().enumerate() {
        let id = reply.id.clone().unwrap_or_else(|| format!("call_{i}"));
        items.push(json!({"type": "function_call_output", "call_id": id, "output": reply.text()}));
    }
}

/// Reads a Responses answer: the text of its `message` items, its `function_call` items, why
/// it stopped (`completed`, or the `incomplete_details.reason`) and the usage. A `failed`
/// answer, or one carrying `error`, is an error with the API's message.
pub fn parse_response(body: &Value) -> Result<Parsed, String> {
    if let Some(error) = body.get("error").filter(|e| !e.is_null()) {
        let message = error.get("message").and_then(Value::as_str).unwrap_or("no message");
        let code = error
            .get("code")
            .and_then(Value::as_str)
            .map(|c| format!(" ({c})"))
            .unwrap_or_default();
        return Err(format!("the response failed{code}: {message}"));
    }
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or("the answer has no `output` list")?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => text.push_str(part.get("text").and_then(Value::as_str).unwrap_or("")),
                        Some("refusal") => text.push_str(part.get("refusal").and_then(Value::as_str).unwrap_or("")),
                        _ => {}
                    }
                }
            }
            Some("function_call") => calls.push(parse_call(calls.len(), item)?),
            _ => {}
        }
    }
    let usage = match (
        llm::count(body, "/usage/input_tokens"),
        llm::count(body, "/usage/output_tokens"),
    ) {
        (Some(input), Some(output)) => Some(TokenUsage {
            input,
            output,
            cached: llm::count(body, "/usage/input_tokens_details/cached_tokens"),
        }),
        _ => None,
    };
    let finish_reason = llm::text_at(body, "/incomplete_details/reason").or_else(|| llm::text_at(body, "/status"));
    Ok(Parsed {
        text,
        calls,
        usage,
        finish_reason,
    })
}

/// One `function_call` item; its `call_id` (else its `id`, else `call_<index>`) names it.
fn parse_call(index: usize, item: &Value) -> Result<ToolCall, String> {
    let name = item
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("function_call {index} has no name"))?;
    let id = ["call_id", "id"]
        .iter()
        .find_map(|k| item.get(*k).and_then(Value::as_str))
        .map_or_else(|| format!("call_{index}"), str::to_owned);
    let (input, problem) = match item.get("arguments") {
        Some(Value::String(text)) => llm::arguments_from_text(text),
        Some(Value::Null) | None => llm::arguments_from_text(""),
        Some(other) => llm::object_arguments(other.clone()),
    };
    Ok(llm::tool_call(Some(id), name.to_owned(), input, problem))
}

impl Provider for ResponsesProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(&super::openai::OPENAI)
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move {
            let (body, attempts, elapsed) = llm::send(&self.http_call(request), &self.config.llm.retry).await?;
            let parsed = parse_response(&body).map_err(llm::malformed)?;
            Ok(llm::response(parsed, body, attempts, elapsed, request.tools.is_some()))
        })
    }

    fn tool_settings(&self) -> Option<&ToolSettings> {
        Some(&self.config.tools)
    }

    fn throttle(&self) -> Option<&std::sync::Arc<super::Throttle>> {
        Some(&self.config.llm.throttle)
    }

    fn public_settings(&self) -> Value {
        let c = &self.config;
        let (base_url, model) = match &c.flavor {
            Flavor::OpenAi { base_url, model, .. } => (base_url, model),
            Flavor::Azure {
                endpoint, deployment, ..
            } => (endpoint, deployment),
        };
        let mut out = json!({"api": "responses", "base_url": base_url, "model": model,
            "temperature": c.llm.temperature, "max_output_tokens": c.llm.max_output_tokens});
        if !c.passthrough.is_empty() {
            out["passthrough"] = Value::Object(c.passthrough.clone());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::llm::{LlmSettings, testing};
    use crate::redact::Secret;

    fn provider(passthrough: Value) -> ResponsesProvider {
        let Value::Object(passthrough) = passthrough else {
            panic!("an object")
        };
        ResponsesProvider::new(
            "t",
            OpenAiConfig {
                flavor: Flavor::OpenAi {
                    base_url: "http://127.0.0.1:9/v1/".into(),
                    model: "gpt-4.1-mini".into(),
                    organization: Some("org-1".into()),
                },
                api_key: Some(Secret::new("sk-test")),
                llm: LlmSettings {
                    max_output_tokens: Some(64),
                    temperature: Some(0.0),
                    ..LlmSettings::default()
                },
                tools: ToolSettings::default(),
                passthrough,
            },
        )
    }

    #[test]
    fn a_plain_prompt_goes_as_input_text_to_the_responses_endpoint() {
        let request = ProviderRequest {
            question: "What is 2+2?".into(),
            system_prompt: Some(String::new()),
            ..ProviderRequest::default()
        };
        let call = provider(json!({"response_format": {"type": "json_object"}, "reasoning_effort": "low"}))
            .http_call(&request);
        assert_eq!(call.url, "http://127.0.0.1:9/v1/responses");
        assert_eq!(
            call.body,
            json!({"model": "gpt-4.1-mini", "input": "What is 2+2?", "temperature": 0.0, "max_output_tokens": 64,
                   "text": {"format": {"type": "json_object"}}, "reasoning": {"effort": "low"}})
        );
        let headers: Vec<(&str, &str)> = call.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert!(headers.contains(&("authorization", "Bearer sk-test")), "{headers:?}");
        assert!(headers.contains(&("openai-organization", "org-1")));
        let with_system = ProviderRequest {
            question: "hi".into(),
            system_prompt: Some("Be brief.".into()),
            ..ProviderRequest::default()
        };
        assert_eq!(
            provider(json!({})).http_call(&with_system).body["instructions"],
            "Be brief."
        );
    }

    #[test]
    fn response_format_becomes_text_format() {
        let chat_shape = json!({"type": "json_schema", "json_schema": {"name": "answer", "strict": false,
            "schema": {"type": "object"}}});
        assert_eq!(
            text_format(&chat_shape),
            json!({"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "strict": false})
        );
        let flat = json!({"type": "json_schema", "schema": {"type": "object"}});
        assert_eq!(
            text_format(&flat),
            json!({"type": "json_schema", "name": "response_schema", "schema": {"type": "object"}, "strict": true})
        );
        assert_eq!(text_format(&json!({"type": "text"})), json!({"type": "text"}));
    }

    #[test]
    fn tools_choice_and_earlier_steps_go_in_the_responses_shape() {
        let native = json!({"type": "function", "function": {"name": "native", "parameters": {"type": "object"}, "strict": true}});
        let tools = testing::tools(ToolDialect::OpenAi, native);
        let request = testing::request(tools, Some(ToolChoice::Tool("lookup".into())), Some(false), None);
        let body = provider(json!({})).http_call(&request).body;
        assert_eq!(
            body["tools"][0],
            json!({"type": "function", "name": "lookup", "description": "Find an order.",
                   "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}})
        );
        assert_eq!(
            body["tools"][1],
            json!({"type": "function", "name": "native", "parameters": {"type": "object"}, "strict": true}),
            "a Chat Completions tool is unwrapped"
        );
        assert_eq!(body["tool_choice"], json!({"type": "function", "name": "lookup"}));
        assert_eq!(body["parallel_tool_calls"], false);
        assert_eq!(body["instructions"].as_str().map(|s| s.is_empty()), Some(false));
        let input = body["input"].as_array().expect("input items");
        assert_eq!(input[0]["role"], "user");
        assert_eq!(input[1], json!({"role": "assistant", "content": "Checking."}));
        assert_eq!(
            input[2],
            json!({"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{bad"})
        );
        assert_eq!(
            input[3],
            json!({"type": "function_call_output", "call_id": "c1", "output": "bad arguments"})
        );
    }

    #[test]
    fn an_earlier_answer_is_replayed_as_its_output_items() {
        let raw = json!({"output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_0_0", "call_id": "c1", "name": "lookup", "arguments": "{bad"}]});
        let tools = testing::tools(
            ToolDialect::OpenAi,
            json!({"type": "function", "function": {"name": "n"}}),
        );
        let body = provider(json!({}))
            .http_call(&testing::request(tools, None, None, Some(raw.clone())))
            .body;
        let input = body["input"].as_array().expect("items");
        assert_eq!(
            input[1..3],
            raw["output"].as_array().expect("output")[..],
            "as they came"
        );
        assert_eq!(
            input[3],
            json!({"type": "function_call_output", "call_id": "c1", "output": "bad arguments"})
        );
    }

    #[test]
    fn output_items_give_text_calls_usage_and_reasoning_is_left_out() {
        let body = json!({"status": "completed", "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Par", "annotations": []}, {"type": "output_text", "text": "is"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "lookup", "arguments": "{\"id\": \"A1\"}"},
            {"type": "function_call", "name": "track", "arguments": "{oops"}
        ], "usage": {"input_tokens": 11, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 2}}});
        let parsed = parse_response(&body).expect("parses");
        assert_eq!(parsed.text, "Paris");
        assert_eq!(parsed.finish_reason.as_deref(), Some("completed"));
        assert_eq!(parsed.calls[0].id.as_deref(), Some("call_a"));
        assert_eq!(parsed.calls[0].input, Some(json!({"id": "A1"})));
        assert_eq!(parsed.calls[1].id.as_deref(), Some("call_1"));
        assert!(parsed.calls[1].extra.contains_key(crate::model::INPUT_ERROR));
        assert_eq!(
            parsed.usage,
            Some(TokenUsage {
                input: 11,
                output: 4,
                cached: Some(2)
            })
        );
        let incomplete =
            json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []});
        assert_eq!(
            parse_response(&incomplete).expect("parses").finish_reason.as_deref(),
            Some("max_output_tokens")
        );
    }

    #[test]
    fn a_failed_or_shapeless_response_is_an_error() {
        let failed = json!({"status": "failed", "error": {"code": "server_error", "message": "boom"}, "output": []});
        assert_eq!(
            parse_response(&failed).expect_err("failed"),
            "the response failed (server_error): boom"
        );
        assert_eq!(
            parse_response(&json!({"choices": []})).expect_err("no output"),
            "the answer has no `output` list"
        );
        let nameless = json!({"output": [{"type": "function_call", "arguments": "{}"}]});
        assert_eq!(
            parse_response(&nameless).expect_err("no name"),
            "function_call 0 has no name"
        );
    }
}
