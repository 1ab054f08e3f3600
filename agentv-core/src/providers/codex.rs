//! `codex`: runs `codex exec --json` and reads its JSONL events into output messages with
//! tool calls and token usage.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::agent::{self, AGENT_KEYS, AgentConfig, AgentOutputError, AgentProfile};
use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderFuture, ProviderKind, ProviderRequest,
    ProviderResponse, TargetSettings,
};
use crate::config::{Key, KeyTable, Kind};
use crate::model::{OutputMessage, TokenUsage, ToolCall};

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&ENTRY];

pub(crate) static ENTRY: ProviderEntry = ProviderEntry {
    name: "codex",
    aliases: &["codex-cli"],
    doc: "Codex CLI: `codex exec --json`, prompt on stdin.",
    class: ProviderClass::Agent,
    batch: false,
    cacheable: true,
    executable: Some(agent::CODEX),
    container: true,
    keys: &KEYS,
    build,
};

const OWN: &[Key] = &[Key::new(
    "approval_policy",
    Kind::Text,
    "`--ask-for-approval` value (default never; empty leaves the flag out).",
)
.aliases(&["ask_for_approval"])];
const KEYS: KeyTable = KeyTable::new("codex", "Settings of a `codex` target.", &[AGENT_KEYS, OWN]);

/// A `codex` target from its settings.
fn build(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let policy = s
        .string("approval_policy", false)
        .unwrap_or_else(|| "never".to_owned());
    let config = agent::config(s, ctx, "codex");
    Some(Arc::new(CodexProvider::new(ctx.target, config, policy)))
}

/// Set to `false`, `0` or `off` to turn stream logs off.
pub const STREAM_LOGS_ENV: &str = "AGENTV_CODEX_STREAM_LOGS";

const PROFILE: AgentProfile = AgentProfile {
    program: "codex",
    logs: "codex",
    logs_env: STREAM_LOGS_ENV,
    env_remove: &["CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED"],
    prompt_md: true,
    container_env: &["OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY"],
};

/// Codex as a target.
#[derive(Debug)]
pub struct CodexProvider {
    name: String,
    config: AgentConfig,
    /// `--ask-for-approval` value; empty leaves the flag out. Codex takes it before `exec`.
    approval_policy: String,
}

impl CodexProvider {
    pub fn new(name: impl Into<String>, config: AgentConfig, approval_policy: String) -> Self {
        Self {
            name: name.into(),
            config,
            approval_policy,
        }
    }

    /// argv after the executable.
    pub fn arguments(&self) -> Vec<String> {
        let mut args = Vec::new();
        if !self.approval_policy.is_empty() {
            args.extend(["--ask-for-approval".to_owned(), self.approval_policy.clone()]);
        }
        args.extend(["exec", "--json", "--color", "never", "--skip-git-repo-check"].map(String::from));
        if let Some(model) = &self.config.model {
            args.extend(["--model".to_owned(), model.clone()]);
        }
        args.extend(self.config.args.iter().cloned());
        args.push("-".to_owned());
        args
    }

    /// The preread prompt document sent on stdin.
    pub fn prompt(&self, request: &ProviderRequest, cwd: &std::path::Path) -> String {
        let preread = agent::preread_block(&request.guideline_files, &request.input_files, cwd);
        let system = self
            .config
            .system_prompt
            .as_deref()
            .unwrap_or(agent::DEFAULT_AGENT_SYSTEM_PROMPT);
        agent::prompt_document(Some(system), &preread, &request.question)
    }
}

impl Provider for CodexProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(&ENTRY)
    }

    fn executable(&self) -> Option<&str> {
        Some(&self.config.executable)
    }

    fn cost_basis(&self) -> super::CostBasis {
        super::CostBasis::Unknown("Codex reports tokens but no cost; run it without --budget-usd".to_owned())
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(agent::run(
            &self.config,
            &PROFILE,
            request,
            self.arguments(),
            |cwd| self.prompt(request, cwd),
            parse_events,
        ))
    }

    fn public_settings(&self) -> Value {
        json!({"executable": self.config.executable, "args": self.config.args, "model": self.config.model,
               "system_prompt": self.config.system_prompt, "approval_policy": self.approval_policy})
    }
}

/// Reads `codex exec --json` events.
///
/// `item.completed` items become output: `agent_message` → an assistant message;
/// `command_execution`, `file_change`, `mcp_tool_call` and `web_search` → tool calls (named by
/// item type, or by the MCP tool's name) with their input and output. `turn.completed` usage
/// adds up. `turn.failed` fails the run; a bare `error` event (e.g. a reconnect notice) does not.
pub fn parse_events(stdout: &str) -> Result<ProviderResponse, AgentOutputError> {
    let mut messages: Vec<OutputMessage> = Vec::new();
    let mut usage: Option<TokenUsage> = None;
    let mut notices: Vec<Value> = Vec::new();
    let mut metadata = Map::new();
    let mut events = 0;
    for line in stdout.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        events += 1;
        match event.get("type").and_then(Value::as_str) {
            Some("thread.started") => {
                if let Some(id) = event.get("thread_id") {
                    metadata.insert("thread_id".to_owned(), id.clone());
                }
            }
            Some("item.completed") => {
                if let Some(item) = event.get("item") {
                    completed_item(item, &mut messages, &mut notices);
                }
            }
            Some("turn.completed") => {
                let count = |key: &str| event.pointer(&format!("/usage/{key}")).and_then(Value::as_u64);
                if let (Some(input), Some(output)) = (count("input_tokens"), count("output_tokens")) {
                    let turn = TokenUsage {
                        input,
                        output,
                        cached: count("cached_input_tokens"),
                    };
                    usage.get_or_insert_with(TokenUsage::default).add(&turn);
                }
            }
            Some("turn.failed") => {
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map_or_else(|| event.to_string(), str::to_owned);
                return Err(AgentOutputError::Reported(format!("codex turn failed: {message}")));
            }
            Some("error") => notices.push(event.get("message").cloned().unwrap_or(event.clone())),
            _ => {}
        }
    }
    if events == 0 {
        return Err(AgentOutputError::NoEvents);
    }
    if !messages.iter().any(|m| m.content.is_some()) {
        return Err(AgentOutputError::Unreadable(
            "codex finished without an agent message".to_owned(),
        ));
    }
    if !notices.is_empty() {
        metadata.insert("notices".to_owned(), Value::Array(notices));
    }
    Ok(ProviderResponse {
        output_messages: messages,
        token_usage: usage,
        metadata: Some(metadata),
        ..ProviderResponse::default()
    })
}

fn completed_item(item: &Value, messages: &mut Vec<OutputMessage>, notices: &mut Vec<Value>) {
    let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
    let id = item.get("id").and_then(Value::as_str).map(str::to_owned);
    let call = match kind {
        "agent_message" => {
            let text = item.get("text").and_then(Value::as_str).unwrap_or_default();
            let mut msg = OutputMessage::assistant(text);
            msg.id = id;
            messages.push(msg);
            return;
        }
        "command_execution" => ToolCall {
            tool: "command_execution".to_owned(),
            input: Some(json!({"command": item.get("command")})),
            output: Some(json!({
                "output": item.get("aggregated_output"),
                "exit_code": item.get("exit_code"),
                "status": item.get("status"),
            })),
            id,
            ..ToolCall::default()
        },
        "file_change" => ToolCall {
            tool: "file_change".to_owned(),
            input: Some(json!({"changes": item.get("changes")})),
            output: Some(json!({"status": item.get("status")})),
            id,
            ..ToolCall::default()
        },
        "mcp_tool_call" => ToolCall {
            tool: item
                .get("tool")
                .and_then(Value::as_str)
                .unwrap_or("mcp_tool_call")
                .to_owned(),
            input: item.get("arguments").cloned(),
            output: item.get("result").or_else(|| item.get("error")).cloned(),
            id,
            ..ToolCall::default()
        },
        "web_search" => ToolCall {
            tool: "web_search".to_owned(),
            input: Some(json!({"query": item.get("query")})),
            id,
            ..ToolCall::default()
        },
        "error" => {
            notices.push(item.get("message").cloned().unwrap_or(item.clone()));
            return;
        }
        _ => return,
    };
    // Tool calls join the preceding tool-calling assistant message, or start one.
    match messages.last_mut() {
        Some(last) if last.content.is_none() => last.tool_calls.push(call),
        _ => messages.push(OutputMessage {
            role: "assistant".to_owned(),
            tool_calls: vec![call],
            ..OutputMessage::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOL_RUN: &str = include_str!("../../../agentv-testkit/fixtures/agent-cli/codex-exec.jsonl");
    const TEXT_RUN: &str = include_str!("../../../agentv-testkit/fixtures/agent-cli/codex-exec-text.jsonl");
    const FAILED_COMMAND: &str =
        include_str!("../../../agentv-testkit/fixtures/agent-cli/codex-exec-command-failed.jsonl");

    #[test]
    fn tool_run_yields_a_command_call_and_the_answer() {
        let r = parse_events(TOOL_RUN).expect("parses");
        assert_eq!(r.output_messages.len(), 2);
        let call = &r.output_messages[0].tool_calls[0];
        assert_eq!(call.tool, "command_execution");
        assert_eq!(call.id.as_deref(), Some("item_1"));
        assert_eq!(
            call.input,
            Some(json!({"command": "/bin/bash -lc 'echo fake-tool-output'"}))
        );
        assert_eq!(
            call.output,
            Some(json!({"output": "fake-tool-output\n", "exit_code": 0, "status": "completed"}))
        );
        assert_eq!(
            agentv_eval_sdk::last_assistant_text(&r.output_messages).as_deref(),
            Some("Done: the command ran and I read its output.")
        );
        assert_eq!(
            r.token_usage,
            Some(TokenUsage {
                input: 14396,
                output: 181,
                cached: Some(0)
            })
        );
        assert_eq!(r.cost_usd, None, "codex reports no cost");
    }

    #[test]
    fn text_run_and_failed_command() {
        let r = parse_events(TEXT_RUN).expect("parses");
        assert_eq!(r.output_messages.len(), 1);
        assert_eq!(
            r.output_messages[0].text().as_deref(),
            Some("Hello from the fake OpenAI server.")
        );
        let r = parse_events(FAILED_COMMAND).expect("a failed command is not a failed turn");
        let call = &r.output_messages[0].tool_calls[0];
        assert_eq!(call.output.as_ref().and_then(|o| o.get("exit_code")), Some(&json!(3)));
        assert_eq!(
            call.output.as_ref().and_then(|o| o.get("status")),
            Some(&json!("failed"))
        );
    }

    #[test]
    fn failures_notices_and_garbage() {
        let failed =
            "{\"type\":\"turn.started\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":\"stream disconnected\"}}\n";
        assert_eq!(
            parse_events(failed).expect_err("fails"),
            AgentOutputError::Reported("codex turn failed: stream disconnected".to_owned())
        );
        let notice = format!("{{\"type\":\"error\",\"message\":\"Reconnecting... 1/5\"}}\n{TEXT_RUN}");
        let r = parse_events(&notice).expect("a reconnect notice is not a failure");
        assert_eq!(
            r.metadata.as_ref().and_then(|m| m.get("notices")),
            Some(&json!(["Reconnecting... 1/5"]))
        );
        let garbage = parse_events("not json").expect_err("garbage");
        assert_eq!(garbage, AgentOutputError::NoEvents);
    }

    #[test]
    fn approval_flag_comes_before_exec() {
        let config = AgentConfig {
            executable: "codex".into(),
            args: vec!["--full-auto".into()],
            cwd: None,
            timeout: None,
            model: Some("gpt-5".into()),
            system_prompt: None,
            log_dir: None,
            env: std::sync::Arc::from(Vec::new()),
            secrets: crate::redact::Secrets::default(),
        };
        let p = CodexProvider::new("c", config, "never".into());
        assert_eq!(
            p.arguments(),
            [
                "--ask-for-approval",
                "never",
                "exec",
                "--json",
                "--color",
                "never",
                "--skip-git-repo-check",
                "--model",
                "gpt-5",
                "--full-auto",
                "-"
            ]
        );
    }
}
