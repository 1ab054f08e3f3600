//! Running a model's tool call (`docs/tools.md#where-results-come-from`): the case's
//! `tool_results` first, then the tool's `mock`, then its `command`. An unknown tool, arguments
//! that are not a JSON object, a tool without any of the three and a failing command are tool
//! errors: the model is told, and the call is recorded as failed.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::context::RunContext;
use crate::model::{INPUT_ERROR, ToolCall, ToolCommand, ToolOutcome, ToolSettings};
use crate::process::{self, ProcessSpec};

/// Variables the LLM providers read their keys from by default: never given to a tool command
/// unless it names them (`env`).
const PROVIDER_KEY_VARS: &[&str] = &[
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
];

/// Where a call's result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A case's `tool_results` entry.
    CaseResult,
    Mock,
    Command,
    /// Nothing ran: the call was refused (unknown tool, bad arguments, no result).
    Refused,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CaseResult => "tool_results",
            Self::Mock => "mock",
            Self::Command => "command",
            Self::Refused => "none",
        }
    }
}

/// What running one call gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    pub outcome: ToolOutcome,
    pub source: Source,
    pub duration: Duration,
}

/// Runs tool calls for one case.
#[derive(Debug, Clone, Copy)]
pub struct ToolRunner<'a> {
    pub settings: &'a ToolSettings,
    /// Where commands run: the case's working directory (its workspace when it has one, else
    /// the eval file's directory).
    pub cwd: &'a Path,
    pub run: &'a RunContext,
}

impl ToolRunner<'_> {
    /// Runs `call`; never fails: every problem is a tool error.
    pub async fn call(&self, call: &ToolCall) -> Executed {
        let started = Instant::now();
        let (outcome, source) = self.outcome(call).await;
        Executed {
            outcome,
            source,
            duration: started.elapsed(),
        }
    }

    async fn outcome(&self, call: &ToolCall) -> (ToolOutcome, Source) {
        let refuse = |message: String| (ToolOutcome::Error(message), Source::Refused);
        let Some(tool) = self.settings.find(&call.tool) else {
            return refuse(format!(
                "unknown tool `{}`; the tools are: {}",
                call.tool,
                super::read::names(self.settings.tool_list())
            ));
        };
        if let Some(problem) = call.extra.get(INPUT_ERROR).and_then(Value::as_str) {
            return refuse(format!("invalid arguments for `{}`: {problem}", call.tool));
        }
        let input = call.input.clone().unwrap_or_else(|| Value::Object(Default::default()));
        if let Some(rule) = self
            .settings
            .results
            .iter()
            .find(|r| r.matches(&call.tool, Some(&input)))
        {
            return (rule.outcome.clone(), Source::CaseResult);
        }
        if let Some(mock) = &tool.mock {
            return (ToolOutcome::Result(super::mock::render(mock, &input)), Source::Mock);
        }
        if let Some(command) = &tool.command {
            return (self.command(command, &input).await, Source::Command);
        }
        refuse(format!(
            "tool `{}` has no result: give it a `mock` or a `command`, or the case a `tool_results` entry",
            call.tool
        ))
    }

    /// Runs `command` with the arguments on stdin; its stdout, redacted, is the result (JSON
    /// when it parses, else the text).
    async fn command(&self, command: &ToolCommand, input: &Value) -> ToolOutcome {
        let secrets = &self.run.secrets;
        let stdin = input.to_string();
        let env: Vec<(String, String)> = self
            .run
            .child_env
            .iter()
            .filter(|(k, v)| passes(k, v, command, self.run))
            .cloned()
            .collect();
        let removed: Vec<String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().unwrap_or_default())))
            .filter(|(k, v)| !passes(k, v, command, self.run))
            .map(|(k, _)| k)
            .chain(
                PROVIDER_KEY_VARS
                    .iter()
                    .filter(|k| !command.env.iter().any(|n| n == *k))
                    .map(|k| (*k).to_owned()),
            )
            .collect();
        let removed: Vec<&str> = removed.iter().map(String::as_str).collect();
        let spec = ProcessSpec {
            argv: &command.argv,
            cwd: self.cwd,
            env: &env,
            env_remove: &removed,
            stdin: Some(stdin.as_bytes()),
            timeout: command.timeout.unwrap_or(self.run.timeout),
            tee: None,
            keep_children: false,
        };
        match process::run(spec).await {
            Ok(done) if done.status.success() => {
                let text = secrets.redact(&String::from_utf8_lossy(&done.stdout)).trim().to_owned();
                ToolOutcome::Result(serde_json::from_str(&text).unwrap_or(Value::String(text)))
            }
            Ok(done) => ToolOutcome::Error(format!(
                "the tool's command exited with code {}: {}",
                done.code_text(),
                done.output_tail(500, secrets)
            )),
            Err(e) => ToolOutcome::Error(format!(
                "the tool's command failed: {}",
                process::tail(&e.to_string(), 500, secrets)
            )),
        }
    }
}

/// Whether variable `name` (holding `value`) reaches a tool command: not when it is a provider
/// key or holds a secret, unless the command names it.
fn passes(name: &str, value: &str, command: &ToolCommand, run: &RunContext) -> bool {
    command.env.iter().any(|n| n == name) || !(PROVIDER_KEY_VARS.contains(&name) || run.secrets.contains(value))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::model::{ToolDef, ToolResultRule};
    use crate::redact::Secrets;

    fn run_context(secrets: Secrets, env: Vec<(String, String)>) -> RunContext {
        RunContext {
            timeout: Duration::from_secs(30),
            child_env: Arc::from(env),
            secrets,
            dump_prompts: None,
            strict: false,
            cwd: None,
            held_pools: Default::default(),
        }
    }

    fn call(tool: &str, input: Value) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            input: Some(input),
            ..ToolCall::default()
        }
    }

    fn settings(tools: Vec<ToolDef>, results: Vec<ToolResultRule>) -> ToolSettings {
        ToolSettings {
            tools: Some(Arc::from(tools)),
            results: Arc::from(results),
            ..ToolSettings::default()
        }
    }

    fn command_tool(name: &str, script: &str, env: &[&str]) -> ToolDef {
        ToolDef {
            command: Some(ToolCommand {
                argv: vec!["sh".into(), "-c".into(), script.into()],
                timeout: None,
                env: env.iter().map(|s| (*s).to_owned()).collect(),
            }),
            ..ToolDef::new(name, json!({"type": "object"}))
        }
    }

    async fn outcome(settings: &ToolSettings, run: &RunContext, call: &ToolCall) -> (ToolOutcome, Source) {
        let dir = tempfile::tempdir().expect("tmp");
        let runner = ToolRunner {
            settings,
            cwd: dir.path(),
            run,
        };
        let done = runner.call(call).await;
        (done.outcome, done.source)
    }

    #[tokio::test]
    async fn case_results_come_before_the_mock_which_comes_before_the_command() {
        let mut tool = command_tool("lookup", "echo from-command", &[]);
        tool.mock = Some(json!({"status": "shipped", "id": "{{ order_id }}"}));
        let rules = vec![ToolResultRule {
            tool: "lookup".into(),
            arguments: Some(json!({"order_id": "A1"})),
            outcome: ToolOutcome::Error("order A1 is archived".into()),
        }];
        let run = run_context(Secrets::default(), Vec::new());
        let s = settings(vec![tool.clone()], rules);
        let (got, source) = outcome(&s, &run, &call("lookup", json!({"order_id": "A1"}))).await;
        assert_eq!(
            (got, source),
            (ToolOutcome::Error("order A1 is archived".into()), Source::CaseResult)
        );
        let (got, source) = outcome(&s, &run, &call("lookup", json!({"order_id": "B2"}))).await;
        assert_eq!(got, ToolOutcome::Result(json!({"status": "shipped", "id": "B2"})));
        assert_eq!(source, Source::Mock);
        tool.mock = None;
        let s = settings(vec![tool], Vec::new());
        let (got, source) = outcome(&s, &run, &call("lookup", json!({}))).await;
        assert_eq!(
            (got, source),
            (ToolOutcome::Result(json!("from-command")), Source::Command)
        );
    }

    #[tokio::test]
    async fn unknown_tools_bad_arguments_and_tools_without_results_are_tool_errors() {
        let run = run_context(Secrets::default(), Vec::new());
        let s = settings(vec![ToolDef::new("lookup", json!({}))], Vec::new());
        let mut bad = call("lookup", json!("{oops"));
        bad.extra
            .insert(INPUT_ERROR.into(), json!("not valid JSON: key must be a string"));
        for (c, want) in [
            (
                call("cancel", json!({})),
                "unknown tool `cancel`; the tools are: lookup",
            ),
            (
                bad,
                "invalid arguments for `lookup`: not valid JSON: key must be a string",
            ),
            (
                call("lookup", json!({})),
                "tool `lookup` has no result: give it a `mock` or a `command`, or the case a `tool_results` entry",
            ),
        ] {
            let (got, source) = outcome(&s, &run, &c).await;
            assert_eq!((got, source), (ToolOutcome::Error(want.into()), Source::Refused));
        }
    }

    #[tokio::test]
    async fn commands_read_arguments_on_stdin_and_fail_with_their_stderr() {
        let run = run_context(Secrets::default(), Vec::new());
        let s = settings(
            vec![
                command_tool("echo_args", "cat", &[]),
                command_tool("broken", "echo 'db down' >&2; exit 4", &[]),
            ],
            Vec::new(),
        );
        let (got, _) = outcome(&s, &run, &call("echo_args", json!({"q": "x"}))).await;
        assert_eq!(got, ToolOutcome::Result(json!({"q": "x"})));
        let (got, _) = outcome(&s, &run, &call("broken", json!({}))).await;
        assert_eq!(
            got,
            ToolOutcome::Error("the tool's command exited with code 4: db down".into())
        );
    }

    #[tokio::test]
    async fn commands_get_the_env_file_but_no_secret_unless_named_and_their_output_is_redacted() {
        let secret = "sk-tool-secret-123456";
        let secrets = Secrets::default();
        secrets.add(secret);
        let env = vec![
            ("PLAIN".to_owned(), "visible".to_owned()),
            ("PROVIDER_KEY".to_owned(), secret.to_owned()),
            ("ANTHROPIC_API_KEY".to_owned(), "not-registered-but-a-key".to_owned()),
        ];
        let run = run_context(secrets, env);
        let script = r#"echo "$PLAIN|${PROVIDER_KEY:-unset}|${ANTHROPIC_API_KEY:-unset}""#;
        let s = settings(
            vec![
                command_tool("env", script, &[]),
                command_tool("named", script, &["PROVIDER_KEY"]),
            ],
            Vec::new(),
        );
        let (got, _) = outcome(&s, &run, &call("env", json!({}))).await;
        assert_eq!(got, ToolOutcome::Result(json!("visible|unset|unset")));
        let (got, _) = outcome(&s, &run, &call("named", json!({}))).await;
        assert_eq!(
            got,
            ToolOutcome::Result(json!("visible|***|unset")),
            "named, passed, and redacted"
        );
    }
}
