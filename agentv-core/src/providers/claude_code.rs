//! `claude-code`: runs `claude -p --output-format stream-json --verbose` and reads its JSONL
//! stream into output messages with tool calls, usage, cost and duration.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::agent::{self, AGENT_KEYS, AgentConfig, AgentOutputError, AgentProfile};
use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderFuture, ProviderKind, ProviderRequest,
    ProviderResponse, TargetSettings,
};
use crate::config::KeyTable;
use crate::model::{OutputMessage, TokenUsage, ToolCall};

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&ENTRY];

pub(crate) static ENTRY: ProviderEntry = ProviderEntry {
    name: "claude-code",
    aliases: &["claude"],
    doc: "Claude Code: `claude -p --output-format stream-json --verbose`, prompt on stdin.",
    class: ProviderClass::Agent,
    batch: false,
    cacheable: true,
    executable: Some(agent::CLAUDE_CODE),
    container: true,
    keys: &KEYS,
    build,
};

const KEYS: KeyTable = KeyTable::new("claude-code", "Settings of a `claude-code` target.", &[AGENT_KEYS]);

/// A `claude-code` target from its settings.
fn build(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let config = agent::config(s, ctx, "claude");
    Some(Arc::new(ClaudeCodeProvider::new(ctx.target, config)))
}

/// Set to `false`, `0` or `off` to turn stream logs off.
pub const STREAM_LOGS_ENV: &str = "AGENTV_CLAUDE_CODE_STREAM_LOGS";

const PROFILE: AgentProfile = AgentProfile {
    program: "claude",
    logs: "claude-code",
    logs_env: STREAM_LOGS_ENV,
    // These make a nested Claude Code run think it is inside another one.
    env_remove: &["CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"],
    prompt_md: false,
    container_env: &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"],
};

/// Claude Code as a target.
#[derive(Debug)]
pub struct ClaudeCodeProvider {
    name: String,
    config: AgentConfig,
}

impl ClaudeCodeProvider {
    pub fn new(name: impl Into<String>, config: AgentConfig) -> Self {
        Self {
            name: name.into(),
            config,
        }
    }

    /// argv after the executable: the built-in flags, the model and system prompt when set, then
    /// the target's extra `args`.
    pub fn arguments(&self) -> Vec<String> {
        let mut args: Vec<String> = ["-p", "--output-format", "stream-json", "--verbose"]
            .map(String::from)
            .to_vec();
        if let Some(model) = &self.config.model {
            args.extend(["--model".to_owned(), model.clone()]);
        }
        if let Some(prompt) = &self.config.system_prompt {
            args.extend(["--system-prompt".to_owned(), prompt.clone()]);
        }
        args.extend(self.config.args.iter().cloned());
        args
    }

    /// The prompt sent on stdin. Without a configured system prompt (which replaces Claude
    /// Code's own), the default instruction leads the prompt instead.
    pub fn prompt(&self, request: &ProviderRequest, cwd: &std::path::Path) -> String {
        let preread = agent::preread_block(&request.guideline_files, &request.input_files, cwd);
        let lead = match &self.config.system_prompt {
            Some(_) => None,
            None => Some(agent::DEFAULT_AGENT_SYSTEM_PROMPT),
        };
        agent::prompt_document(lead, &preread, &request.question)
    }
}

impl Provider for ClaudeCodeProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(&ENTRY)
    }

    fn executable(&self) -> Option<&str> {
        Some(&self.config.executable)
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(agent::run(
            &self.config,
            &PROFILE,
            request,
            self.arguments(),
            |cwd| self.prompt(request, cwd),
            parse_stream,
        ))
    }

    fn public_settings(&self) -> Value {
        json!({"executable": self.config.executable, "args": self.config.args, "model": self.config.model, "system_prompt": self.config.system_prompt})
    }
}

/// Reads Claude Code's `stream-json` output.
///
/// `assistant` lines carry one content block each; blocks of one API message share
/// `message.id` and are merged into one output message. `tool_use` blocks become tool calls;
/// `tool_result` blocks on `user` lines fill in the output of the call with the same id. The
/// `result` line has the final answer and the run's totals. Non-JSON lines are skipped.
pub fn parse_stream(stdout: &str) -> Result<ProviderResponse, AgentOutputError> {
    let mut messages: Vec<OutputMessage> = Vec::new();
    let mut by_message_id: HashMap<String, usize> = HashMap::new();
    let mut call_index: HashMap<String, (usize, usize)> = HashMap::new();
    let mut metadata = Map::new();
    let mut result: Option<Value> = None;
    let mut events = 0;
    for line in stdout.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        events += 1;
        match event.get("type").and_then(Value::as_str) {
            Some("system") => {
                for key in ["session_id", "model", "claude_code_version"] {
                    if let Some(v) = event.get(key) {
                        metadata.insert(key.to_owned(), v.clone());
                    }
                }
            }
            Some("assistant") => assistant(&event, &mut messages, &mut by_message_id, &mut call_index),
            Some("user") => tool_results(&event, &mut messages, &call_index),
            Some("result") => result = Some(event),
            _ => {}
        }
    }
    if events == 0 {
        return Err(AgentOutputError::NoEvents);
    }
    let Some(result) = result else {
        return Err(AgentOutputError::Unreadable(
            "claude output has no `result` event (the run ended early)".to_owned(),
        ));
    };
    let text = result
        .get("result")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if let Some(reported) = reported_error(&result, &text) {
        return Err(reported);
    }
    if agentv_eval_sdk::last_assistant_text(&messages).as_deref() != Some(text.as_str()) && !text.is_empty() {
        messages.push(OutputMessage::assistant(text));
    }
    for key in ["num_turns", "session_id", "duration_api_ms", "stop_reason"] {
        if let Some(v) = result.get(key) {
            metadata.insert(key.to_owned(), v.clone());
        }
    }
    Ok(ProviderResponse {
        output_messages: messages,
        token_usage: token_usage(&result),
        cost_usd: result
            .get("total_cost_usd")
            .and_then(Value::as_f64)
            .filter(|c| *c >= 0.0),
        duration_ms: result.get("duration_ms").and_then(Value::as_f64).filter(|d| *d >= 0.0),
        raw: None,
        metadata: Some(metadata),
        ..ProviderResponse::default()
    })
}

/// The agent's own report of a failed run (an error result, the turn limit reached).
fn reported_error(result: &Value, text: &str) -> Option<AgentOutputError> {
    let subtype = result.get("subtype").and_then(Value::as_str).unwrap_or_default();
    if result.get("is_error").and_then(Value::as_bool) == Some(true) || subtype.starts_with("error") {
        let detail = match (text.is_empty(), result.get("errors")) {
            (false, _) => text.to_owned(),
            (true, Some(errors)) => errors.to_string(),
            (true, None) => subtype.to_owned(),
        };
        let what = if subtype == "error_max_turns" {
            "stopped at the maximum number of turns"
        } else {
            "an error"
        };
        return Some(AgentOutputError::Reported(format!("claude reported {what}: {detail}")));
    }
    None
}

/// The run's tokens: input counts the cache reads and writes too.
fn token_usage(result: &Value) -> Option<TokenUsage> {
    let count = |key: &str| result.pointer(&format!("/usage/{key}")).and_then(Value::as_u64);
    match (count("input_tokens"), count("output_tokens")) {
        (Some(input), Some(output)) => {
            let read = count("cache_read_input_tokens");
            Some(TokenUsage {
                // Saturating: the counts are the agent's, and may be anything.
                input: input
                    .saturating_add(read.unwrap_or(0))
                    .saturating_add(count("cache_creation_input_tokens").unwrap_or(0)),
                output,
                cached: read,
            })
        }
        _ => None,
    }
}

fn assistant(
    event: &Value,
    messages: &mut Vec<OutputMessage>,
    by_message_id: &mut HashMap<String, usize>,
    call_index: &mut HashMap<String, (usize, usize)>,
) {
    let Some(message) = event.get("message") else { return };
    let id = message.get("id").and_then(Value::as_str).map(str::to_owned);
    let index = match id.as_ref().and_then(|i| by_message_id.get(i)) {
        Some(&i) => i,
        None => {
            messages.push(OutputMessage {
                role: "assistant".to_owned(),
                id: id.clone(),
                ..OutputMessage::default()
            });
            if let Some(i) = id {
                by_message_id.insert(i, messages.len() - 1);
            }
            messages.len() - 1
        }
    };
    let blocks = message
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let Some(text) = block.get("text").and_then(Value::as_str) else {
                    continue;
                };
                let msg = &mut messages[index];
                let joined = match msg.content.as_ref().and_then(Value::as_str) {
                    Some(existing) if existing == text || existing.ends_with(&format!("\n{text}")) => continue,
                    Some(existing) => format!("{existing}\n{text}"),
                    None => text.to_owned(),
                };
                msg.content = Some(Value::String(joined));
            }
            Some("tool_use") => {
                let call_id = block.get("id").and_then(Value::as_str).map(str::to_owned);
                if call_id.as_ref().is_some_and(|c| call_index.contains_key(c)) {
                    continue;
                }
                let msg = &mut messages[index];
                msg.tool_calls.push(ToolCall {
                    tool: block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown")
                        .to_owned(),
                    input: block.get("input").cloned(),
                    id: call_id.clone(),
                    ..ToolCall::default()
                });
                if let Some(c) = call_id {
                    call_index.insert(c, (index, msg.tool_calls.len() - 1));
                }
            }
            _ => {}
        }
    }
}

fn tool_results(event: &Value, messages: &mut [OutputMessage], call_index: &HashMap<String, (usize, usize)>) {
    let blocks = event
        .pointer("/message/content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for block in blocks {
        if block.get("type").and_then(Value::as_str) != Some("tool_result") {
            continue;
        }
        let Some(&(m, c)) = block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .and_then(|id| call_index.get(id))
        else {
            continue;
        };
        let call = &mut messages[m].tool_calls[c];
        call.output = block.get("content").cloned();
        if let Some(ts) = event.get("timestamp").and_then(Value::as_str) {
            call.timestamp = Some(ts.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOL_RUN: &str = include_str!("../../../agentv-testkit/fixtures/agent-cli/claude-stream.jsonl");
    const TEXT_RUN: &str = include_str!("../../../agentv-testkit/fixtures/agent-cli/claude-stream-text.jsonl");
    const API_ERROR: &str =
        include_str!("../../../agentv-testkit/fixtures/agent-cli/claude-stream-api-error-400.jsonl");

    #[test]
    fn tool_run_yields_messages_calls_usage_and_cost() {
        let r = parse_stream(TOOL_RUN).expect("parses");
        assert_eq!(r.output_messages.len(), 2, "two API messages");
        let first = &r.output_messages[0];
        assert_eq!(first.text().as_deref(), Some("I will run a command."));
        assert_eq!(first.tool_calls.len(), 1);
        let call = &first.tool_calls[0];
        assert_eq!(call.tool, "Bash");
        assert_eq!(call.id.as_deref(), Some("toolu_fake_d90d6815de374cfb866a"));
        assert_eq!(
            call.input.as_ref().and_then(|i| i.get("command")),
            Some(&json!("echo fake-tool-output"))
        );
        assert_eq!(call.output, Some(json!("fake-tool-output")));
        assert_eq!(
            agentv_eval_sdk::last_assistant_text(&r.output_messages).as_deref(),
            Some("Done: the tool ran and I read its output.")
        );
        assert_eq!(
            r.token_usage,
            Some(TokenUsage {
                input: 3468,
                output: 69,
                cached: Some(0)
            })
        );
        assert_eq!(r.cost_usd, Some(0.019065));
        assert_eq!(r.duration_ms, Some(183.0));
        assert_eq!(r.metadata.as_ref().and_then(|m| m.get("num_turns")), Some(&json!(2)));
    }

    #[test]
    fn text_run_has_no_tool_calls() {
        let r = parse_stream(TEXT_RUN).expect("parses");
        assert_eq!(r.output_messages.len(), 1);
        assert!(r.output_messages[0].tool_calls.is_empty());
        assert_eq!(
            r.output_messages[0].text().as_deref(),
            Some("Hello from the fake Anthropic server.")
        );
        assert_eq!(r.cost_usd, Some(0.00874));
    }

    #[test]
    fn api_error_is_reported_with_its_message() {
        let err = parse_stream(API_ERROR).expect_err("is_error");
        assert_eq!(
            err,
            AgentOutputError::Reported("claude reported an error: API Error: 400 fake: injected error".to_owned())
        );
    }

    #[test]
    fn max_turns_and_garbage() {
        let max = r#"{"type":"result","subtype":"error_max_turns","is_error":false,"errors":["Reached maximum number of turns (3)"]}"#;
        assert_eq!(
            parse_stream(max).expect_err("max turns"),
            AgentOutputError::Reported(
                r#"claude reported stopped at the maximum number of turns: ["Reached maximum number of turns (3)"]"#
                    .to_owned()
            )
        );
        let garbage = parse_stream("segfault\n").expect_err("garbage");
        assert_eq!(garbage, AgentOutputError::NoEvents);
        assert_eq!(
            parse_stream("{\"type\":\"system\"}\n").expect_err("no result"),
            AgentOutputError::Unreadable("claude output has no `result` event (the run ended early)".to_owned())
        );
    }

    #[test]
    fn huge_token_counts_saturate_instead_of_panicking() {
        let max = u64::MAX;
        let stream = format!(
            r#"{{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{{"input_tokens":{max},"output_tokens":1,"cache_read_input_tokens":{max},"cache_creation_input_tokens":{max}}}}}"#
        );
        let response = parse_stream(&stream).expect("parses");
        assert_eq!(response.token_usage.map(|u| u.input), Some(max));
    }
}
