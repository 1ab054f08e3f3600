//! Tools an LLM API target may call (`docs/tools.md`): their definitions, where their results
//! come from, and the tool turns of a conversation. Plain data: the `tools` module reads and
//! runs them, each LLM provider translates them to its own wire shape.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::OutputMessage;

/// The key of a tool call (`ToolCall::extra`) that says why its arguments are not a JSON
/// object: the model wrote text that does not parse, or a value of another type. The arguments
/// are then kept as the model wrote them.
pub const INPUT_ERROR: &str = "input_error";

/// The provider families whose own tool shapes a file may use as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolDialect {
    /// Chat Completions (`openai`, `azure`): `{type: function, function: {name, parameters}}`.
    OpenAi,
    /// Messages API: `{name, description, input_schema}`.
    Anthropic,
    /// generateContent: a function declaration `{name, description, parametersJsonSchema}`.
    Gemini,
}

impl ToolDialect {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
        }
    }
}

/// One tool: the neutral definition every provider gets, translated to its shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub parameters: Value,
    /// The definition in a provider's own shape, as written (agentv's keys removed): that
    /// provider gets it unchanged, the others its translation.
    pub native: Option<(ToolDialect, Value)>,
    /// The result when the model calls the tool: a value whose strings may use
    /// `{{ argument }}` placeholders.
    pub mock: Option<Value>,
    /// A program that computes the result.
    pub command: Option<ToolCommand>,
}

impl ToolDef {
    /// A tool with a name and an argument schema, nothing else (tests, translations).
    pub fn new(name: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: None,
            parameters,
            native: None,
            mock: None,
            command: None,
        }
    }

    /// The definition as written in `dialect`'s shape, when it was written in it.
    pub fn native_for(&self, dialect: ToolDialect) -> Option<&Value> {
        self.native.as_ref().filter(|(d, _)| *d == dialect).map(|(_, v)| v)
    }

    /// What decides the model's answer and the tool's results, for cache keys: the neutral
    /// fields, the native shape, the mock and the command.
    pub fn cache_value(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "native": self.native.as_ref().map(|(d, v)| json!({"dialect": d.as_str(), "tool": v})),
            "mock": self.mock,
            "command": self.command.as_ref().map(|c| json!({"argv": c.argv, "env": c.env})),
        })
    }
}

/// A program run for each call of a tool: the arguments as JSON on stdin, the result on stdout.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCommand {
    /// The program and its arguments; a command written as one string is `sh -c <string>`.
    pub argv: Vec<String>,
    /// `None`: the run's `--timeout`.
    pub timeout: Option<Duration>,
    /// Variables the command receives even when their values are secrets (provider keys are
    /// removed from its environment otherwise).
    pub env: Vec<String>,
}

/// Whether and which tools the model must call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides (the providers' default).
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// A call of this tool.
    Tool(String),
}

impl ToolChoice {
    /// The choice for the steps after the model has called tools: a forced call (`required`, a
    /// named tool) has happened, so the model is free again; `auto` and `none` stay.
    pub fn after_calls(self) -> Self {
        match self {
            Self::Required | Self::Tool(_) => Self::Auto,
            other => other,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Self::Auto => "auto".to_owned(),
            Self::None => "none".to_owned(),
            Self::Required => "required".to_owned(),
            Self::Tool(name) => format!("tool `{name}`"),
        }
    }
}

/// A case's result for calls of one tool (`tool_results`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultRule {
    pub tool: String,
    /// When set, only calls whose arguments hold every key given here with an equal value
    /// (objects compared the same way, recursively) match.
    pub arguments: Option<Value>,
    pub outcome: ToolOutcome,
}

impl ToolResultRule {
    /// Whether this rule answers a call of `tool` with `input`.
    pub fn matches(&self, tool: &str, input: Option<&Value>) -> bool {
        self.tool == tool
            && match (&self.arguments, input) {
                (None, _) => true,
                (Some(want), Some(got)) => contains(got, want),
                (Some(_), None) => false,
            }
    }
}

/// Whether `got` holds `want`: every key of an object equal (recursively), anything else equal.
fn contains(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w.iter().all(|(k, wv)| g.get(k).is_some_and(|gv| contains(gv, wv))),
        _ => got == want,
    }
}

/// What a tool call gives back to the model.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    Result(Value),
    /// The tool failed; the model is told so.
    Error(String),
}

/// The tool settings of a target, a suite or a case. Each key is taken from the nearest level
/// that sets it (case, then suite, then target), as grader lists are (`docs/tools.md`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolSettings {
    pub tools: Option<Arc<[ToolDef]>>,
    pub choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one step (`None`: the provider's default).
    pub parallel: Option<bool>,
    /// Model calls per case: 1 (the default) means the tool calls are recorded, not run.
    pub max_steps: Option<u32>,
    /// The case's results for tool calls, tried before a tool's mock and command.
    pub results: Arc<[ToolResultRule]>,
}

impl ToolSettings {
    /// Model calls per case when nothing sets `max_steps`.
    pub const DEFAULT_MAX_STEPS: u32 = 1;

    /// These settings over `base`: each key set here wins, the others come from `base`.
    pub fn over(&self, base: &ToolSettings) -> ToolSettings {
        ToolSettings {
            tools: self.tools.clone().or_else(|| base.tools.clone()),
            choice: self.choice.clone().or_else(|| base.choice.clone()),
            parallel: self.parallel.or(base.parallel),
            max_steps: self.max_steps.or(base.max_steps),
            results: if self.results.is_empty() {
                base.results.clone()
            } else {
                self.results.clone()
            },
        }
    }

    /// The settings a case runs with: the case's (already over its suite's) over its
    /// target's.
    pub fn effective(case: Option<&ToolSettings>, target: Option<&ToolSettings>) -> ToolSettings {
        let base = target.cloned().unwrap_or_default();
        match case {
            Some(case) => case.over(&base),
            None => base,
        }
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == ToolSettings::default()
    }

    /// The declared tools (none when no level declares any).
    pub fn tool_list(&self) -> &[ToolDef] {
        self.tools.as_deref().unwrap_or_default()
    }

    pub fn max_steps(&self) -> u32 {
        self.max_steps.unwrap_or(Self::DEFAULT_MAX_STEPS).max(1)
    }

    /// The declared tool called `name`.
    pub fn find(&self, name: &str) -> Option<&ToolDef> {
        self.tool_list().iter().find(|t| t.name == name)
    }
}

/// What a request to an LLM carries about tools: the tools offered and the tool turns so far.
#[derive(Debug, Clone, Default)]
pub struct ToolRequest {
    pub tools: Arc<[ToolDef]>,
    pub choice: Option<ToolChoice>,
    pub parallel: Option<bool>,
    /// Every earlier step that called tools, with the results sent back, in order.
    pub exchanges: Vec<ToolExchange>,
}

impl ToolRequest {
    /// What shapes the answer, for cache keys: the tools, the choice, and every tool call and
    /// result so far.
    pub fn cache_value(&self) -> Value {
        let exchanges: Vec<Value> = self
            .exchanges
            .iter()
            .map(|e| {
                // What is sent back, not how long it took.
                let calls: Vec<Value> = e
                    .message
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "tool": c.tool, "input": c.input, "input_error": c.extra.get(INPUT_ERROR)}))
                    .collect();
                json!({
                    "text": e.message.text(),
                    "calls": calls,
                    "replies": e.replies.iter().map(ToolReply::cache_value).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "tools": self.tools.iter().map(ToolDef::cache_value).collect::<Vec<_>>(),
            "choice": self.choice.as_ref().map(ToolChoice::describe),
            "parallel": self.parallel,
            "exchanges": exchanges,
        })
    }
}

/// One step that called tools: the model's message and what each call gave back.
#[derive(Debug, Clone)]
pub struct ToolExchange {
    /// The step's answer as the provider sent it: providers replay their own turn from it as
    /// written (thinking blocks, thought signatures) when the API needs that.
    pub raw: Option<Value>,
    /// The assistant message: its text, and its tool calls with ids and arguments.
    pub message: OutputMessage,
    /// One reply per tool call of `message`, in the same order.
    pub replies: Vec<ToolReply>,
}

/// What one tool call gave back.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    /// The id of the call, when the provider gave one.
    pub id: Option<String>,
    pub name: String,
    /// The result, or the error message when `is_error`.
    pub content: Value,
    pub is_error: bool,
}

impl ToolReply {
    /// The reply as text for APIs that take text: a string as it is, anything else as JSON.
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// The reply as a JSON object for APIs that take one: an object as it is, an error as
    /// `{error}`, anything else as `{result}`.
    pub fn object(&self) -> Map<String, Value> {
        match (&self.content, self.is_error) {
            (_, true) => Map::from_iter([("error".to_owned(), Value::String(self.text()))]),
            (Value::Object(o), false) => o.clone(),
            (other, false) => Map::from_iter([("result".to_owned(), other.clone())]),
        }
    }

    fn cache_value(&self) -> Value {
        json!({"id": self.id, "name": self.name, "content": self.content, "is_error": self.is_error})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(arguments: Option<Value>) -> ToolResultRule {
        ToolResultRule {
            tool: "lookup".into(),
            arguments,
            outcome: ToolOutcome::Result(json!("ok")),
        }
    }

    #[test]
    fn result_rules_match_by_name_and_listed_arguments() {
        let args = json!({"id": "A1", "opts": {"deep": true, "x": 1}});
        for (rule, tool, input, want) in [
            (rule(None), "lookup", Some(&args), true),
            (rule(None), "other", Some(&args), false),
            (rule(Some(json!({"id": "A1"}))), "lookup", Some(&args), true),
            (rule(Some(json!({"opts": {"deep": true}}))), "lookup", Some(&args), true),
            (rule(Some(json!({"id": "B2"}))), "lookup", Some(&args), false),
            (rule(Some(json!({"missing": 1}))), "lookup", Some(&args), false),
            (rule(Some(json!({"id": "A1"}))), "lookup", None, false),
        ] {
            assert_eq!(rule.matches(tool, input), want, "{rule:?} {tool} {input:?}");
        }
    }

    #[test]
    fn nearer_settings_win_key_by_key() {
        let target = ToolSettings {
            tools: Some(Arc::from(vec![ToolDef::new("a", json!({}))])),
            choice: Some(ToolChoice::Required),
            max_steps: Some(5),
            ..ToolSettings::default()
        };
        let case = ToolSettings {
            choice: Some(ToolChoice::None),
            parallel: Some(false),
            ..ToolSettings::default()
        };
        let merged = case.over(&target);
        assert_eq!(merged.tool_list()[0].name, "a");
        assert_eq!(merged.choice, Some(ToolChoice::None));
        assert_eq!((merged.parallel, merged.max_steps()), (Some(false), 5));
        assert_eq!(ToolSettings::default().max_steps(), 1);
        assert!(ToolSettings::default().is_empty() && !merged.is_empty());
    }

    #[test]
    fn replies_render_as_text_or_objects() {
        let reply = |content: Value, is_error| ToolReply {
            id: None,
            name: "t".into(),
            content,
            is_error,
        };
        assert_eq!(reply(json!("plain"), false).text(), "plain");
        assert_eq!(reply(json!({"a": 1}), false).text(), r#"{"a":1}"#);
        assert_eq!(Value::Object(reply(json!({"a": 1}), false).object()), json!({"a": 1}));
        assert_eq!(Value::Object(reply(json!([1]), false).object()), json!({"result": [1]}));
        assert_eq!(
            Value::Object(reply(json!("boom"), true).object()),
            json!({"error": "boom"})
        );
    }
}
