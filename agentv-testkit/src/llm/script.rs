//! Scripted tool calling for the fake LLM service: a script says, for a question, which tools
//! the model calls at each step and what it finally answers, and the fake answers in each API's
//! own wire shape (Chat Completions `tool_calls`, Messages `tool_use` blocks, generateContent
//! `functionCall` parts with a thought signature). Parallel calls are several calls in one step.
//!
//! The fake is as strict as the real APIs about the tool turns it is sent ([`check`]): a
//! malformed tool, an assistant turn whose calls are not all answered, a result for a call
//! never made, or a Gemini function call replayed without its thought signature is a 400 with
//! the API's kind of message.
//!
//! A script is YAML (or JSON): a list of rules, the first whose `when` occurs in the question
//! (the request's first user message) applies:
//!
//! ```yaml
//! - when: "order A-1001"
//!   steps:
//!     - calls: [{name: find_customer, arguments: {email: jane@example.com}}]
//!     - calls: [{name: lookup_order, arguments: {order_id: A-1001}}]
//!     - text: Your order A-1001 shipped on May 2.
//!   verdict: {score: 1, hits: [names the ship date], misses: [], reasoning: correct}
//! ```
//!
//! The step is the number of tool-calling turns already in the request; past the last step the
//! last one repeats. `raw_arguments: "{bad"` instead of `arguments` sends arguments that are not
//! a JSON object (as text to Chat Completions, as a string value to the others). `verdict` is
//! the answer to an LLM judge whose prompt holds `when`; `judge_steps` (as `steps`) make that
//! judge call tools first.

use serde_json::{Value, json};

use super::{Api, Usage};

/// A parsed script.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Script {
    pub rules: Vec<Rule>,
}

/// What the model does for questions holding `when`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub when: String,
    pub steps: Vec<Step>,
    /// The judge's reply (JSON text) for this question.
    pub verdict: Option<String>,
    /// A judge that explores with tools: its steps, as `steps` are the model's (the last one
    /// answers the verdict as text). Empty: the judge answers `verdict` at once.
    pub judge_steps: Vec<Step>,
}

/// One model answer: text, tool calls, or both.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    pub text: Option<String>,
    pub calls: Vec<Call>,
}

/// One tool call of a step.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    pub arguments: Arguments,
}

/// A call's arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    Json(Value),
    /// Not a JSON object: sent as written.
    Raw(String),
}

impl Script {
    /// Reads a script from YAML or JSON text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let value: Value = serde_saphyr::from_str(text).map_err(|e| format!("not YAML: {e}"))?;
        Self::from_value(&value)
    }

    pub fn from_value(value: &Value) -> Result<Self, String> {
        let items = value.as_array().ok_or("a script is a list of rules")?;
        let rules = items
            .iter()
            .enumerate()
            .map(|(i, item)| Rule::from_value(item).map_err(|e| format!("rule {}: {e}", i + 1)))
            .collect::<Result<_, _>>()?;
        Ok(Self { rules })
    }

    /// The rule for a request to `api` with `body`: the first whose `when` is in the question,
    /// or for a judge request, in the judge's prompt.
    pub fn rule(&self, api: Api, body: &Value, judge: bool) -> Option<&Rule> {
        let haystack = if judge {
            // The JSON text (escaped) and every string in it as written, so that a `when`
            // holding a line break matches a grading prompt's lines.
            let mut text = body.to_string();
            raw_strings(body, &mut text);
            text
        } else {
            first_user_text(api, body)
        };
        self.rules.iter().find(|r| haystack.contains(&r.when))
    }
}

/// Appends every string of `value`, as written, each after a line break.
fn raw_strings(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            out.push('\n');
            out.push_str(s);
        }
        Value::Array(items) => items.iter().for_each(|v| raw_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| raw_strings(v, out)),
        _ => {}
    }
}

impl Rule {
    fn from_value(value: &Value) -> Result<Self, String> {
        let when = value
            .get("when")
            .and_then(Value::as_str)
            .ok_or("`when` (text) is missing")?;
        let steps = value
            .get("steps")
            .and_then(Value::as_array)
            .ok_or("`steps` (a list) is missing")?
            .iter()
            .map(Step::from_value)
            .collect::<Result<Vec<_>, _>>()?;
        if steps.is_empty() {
            return Err("`steps` is empty".to_owned());
        }
        let verdict = match value.get("verdict") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => Some(other.to_string()),
        };
        let judge_steps = match value.get("judge_steps").and_then(Value::as_array) {
            None => Vec::new(),
            Some(items) => items.iter().map(Step::from_value).collect::<Result<Vec<_>, _>>()?,
        };
        Ok(Self {
            when: when.to_owned(),
            steps,
            verdict,
            judge_steps,
        })
    }

    /// The step after `done` tool-calling turns (the last one repeats).
    pub fn step(&self, done: usize) -> &Step {
        &self.steps[done.min(self.steps.len() - 1)]
    }
}

impl Step {
    fn from_value(value: &Value) -> Result<Self, String> {
        let text = value.get("text").and_then(Value::as_str).map(str::to_owned);
        let calls = match value.get("calls") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.iter().map(Call::from_value).collect::<Result<_, _>>()?,
            Some(_) => return Err("`calls` must be a list".to_owned()),
        };
        if text.is_none() && calls.is_empty() {
            return Err("a step needs `text` or `calls`".to_owned());
        }
        Ok(Self { text, calls })
    }

    /// A step that only answers `text`.
    pub fn text(text: &str) -> Self {
        Self {
            text: Some(text.to_owned()),
            calls: Vec::new(),
        }
    }

    /// The step's answer in `api`'s wire shape; `step` numbers its call ids and signature.
    pub fn answer(&self, api: Api, step: usize, usage: Usage) -> Value {
        if self.calls.is_empty() {
            return api.answer(self.text.as_deref().unwrap_or_default(), usage);
        }
        match api {
            Api::OpenAi | Api::Azure => self.openai(step, usage),
            Api::Anthropic => self.anthropic(step, usage),
            Api::Gemini => self.gemini(step, usage),
        }
    }

    fn openai(&self, step: usize, usage: Usage) -> Value {
        let calls: Vec<Value> = self
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let arguments = match &c.arguments {
                    Arguments::Json(v) => v.to_string(),
                    Arguments::Raw(text) => text.clone(),
                };
                json!({"id": format!("call_{step}_{i}"), "type": "function",
                       "function": {"name": c.name, "arguments": arguments}})
            })
            .collect();
        json!({
            "id": "chatcmpl-fake", "object": "chat.completion", "model": "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": self.text, "tool_calls": calls},
                         "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": usage.input, "completion_tokens": usage.output,
                      "total_tokens": usage.input + usage.output}
        })
    }

    fn anthropic(&self, step: usize, usage: Usage) -> Value {
        let mut content: Vec<Value> = self.text.iter().map(|t| json!({"type": "text", "text": t})).collect();
        content.extend(self.calls.iter().enumerate().map(|(i, c)| {
            json!({"type": "tool_use", "id": format!("toolu_{step}_{i}"), "name": c.name, "input": c.arguments.value()})
        }));
        json!({
            "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model",
            "content": content, "stop_reason": "tool_use",
            "usage": {"input_tokens": usage.input, "output_tokens": usage.output}
        })
    }

    fn gemini(&self, step: usize, usage: Usage) -> Value {
        let mut parts: Vec<Value> = self.text.iter().map(|t| json!({"text": t})).collect();
        for (i, c) in self.calls.iter().enumerate() {
            let mut part = json!({"functionCall": {"name": c.name, "args": c.arguments.value()}});
            // Gemini 3 signs the first function call of a turn; it must come back as sent.
            if i == 0 {
                part["thoughtSignature"] = json!(signature(step));
            }
            parts.push(part);
        }
        json!({
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": usage.input, "candidatesTokenCount": usage.output,
                              "totalTokenCount": usage.input + usage.output}
        })
    }
}

impl Call {
    fn from_value(value: &Value) -> Result<Self, String> {
        let name = value.get("name").and_then(Value::as_str).ok_or("a call needs `name`")?;
        let arguments = match (value.get("arguments"), value.get("raw_arguments")) {
            (_, Some(Value::String(raw))) => Arguments::Raw(raw.clone()),
            (Some(args), _) => Arguments::Json(args.clone()),
            (None, _) => Arguments::Json(json!({})),
        };
        Ok(Self {
            name: name.to_owned(),
            arguments,
        })
    }
}

impl Call {
    /// The arguments as the JSON text an API that sends them as a string carries.
    pub fn arguments_text(&self) -> String {
        match &self.arguments {
            Arguments::Json(v) => v.to_string(),
            Arguments::Raw(text) => text.clone(),
        }
    }
}

impl Arguments {
    fn value(&self) -> Value {
        match self {
            Self::Json(v) => v.clone(),
            Self::Raw(text) => Value::String(text.clone()),
        }
    }
}

/// The thought signature the fake gives the first call of step `step`.
fn signature(step: usize) -> String {
    format!("fake-signature-{step}")
}

/// The text of the request's first user message.
pub fn first_user_text(api: Api, body: &Value) -> String {
    let text_of = |content: &Value| match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    let list = match api {
        Api::Gemini => body.get("contents"),
        _ => body.get("messages"),
    };
    let first = list.and_then(Value::as_array).and_then(|items| {
        items
            .iter()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
    });
    match (api, first) {
        (Api::Gemini, Some(m)) => m.get("parts").map(text_of).unwrap_or_default(),
        (_, Some(m)) => m.get("content").map(text_of).unwrap_or_default(),
        (_, None) => String::new(),
    }
}

/// How many turns of the request called tools (the step the model is at).
pub fn tool_turns(api: Api, body: &Value) -> usize {
    turns(api, body).iter().filter(|t| !t.calls.is_empty()).count()
}

/// One turn of a conversation, reduced to its tool calls and results.
#[derive(Debug, Default)]
struct Turn {
    model: bool,
    /// (id or name, signature) of each call.
    calls: Vec<(String, Option<String>)>,
    /// Id (or name) of each result.
    results: Vec<String>,
    /// Other content came before a result (Messages wants results first).
    text_before_results: bool,
}

fn turns(api: Api, body: &Value) -> Vec<Turn> {
    let key = if api == Api::Gemini { "contents" } else { "messages" };
    let items = body.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    items.iter().map(|m| turn(api, m)).collect()
}

fn turn(api: Api, m: &Value) -> Turn {
    let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut t = Turn {
        model: matches!(role, "assistant" | "model"),
        ..Turn::default()
    };
    match api {
        Api::OpenAi | Api::Azure => {
            for c in m.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                t.calls.push((s(c.get("id")), None));
            }
            if role == "tool" {
                t.results.push(s(m.get("tool_call_id")));
            }
        }
        Api::Anthropic => {
            for block in m.get("content").and_then(Value::as_array).into_iter().flatten() {
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => t.calls.push((s(block.get("id")), None)),
                    Some("tool_result") => t.results.push(s(block.get("tool_use_id"))),
                    _ if t.results.is_empty() && role == "user" => t.text_before_results = true,
                    _ => {}
                }
            }
        }
        Api::Gemini => {
            for part in m.get("parts").and_then(Value::as_array).into_iter().flatten() {
                if let Some(call) = part.get("functionCall") {
                    let sig = part.get("thoughtSignature").and_then(Value::as_str).map(str::to_owned);
                    t.calls.push((s(call.get("name")), sig));
                }
                if let Some(response) = part.get("functionResponse") {
                    t.results.push(s(response.get("name")));
                }
            }
        }
    }
    t
}

/// Checks the tools, the tool choice and the tool turns of a request as the real API does;
/// the error message of the 400 it would answer.
pub fn check(api: Api, body: &Value) -> Result<(), String> {
    let declared = check_tools(api, body)?;
    check_choice(api, body, &declared)?;
    check_turns(api, body)
}

/// The declared tool names, after checking each tool's shape.
fn check_tools(api: Api, body: &Value) -> Result<Vec<String>, String> {
    let Some(tools) = body.get("tools") else {
        return Ok(Vec::new());
    };
    let tools = tools.as_array().ok_or("`tools` must be an array")?;
    let mut names = Vec::new();
    let is_object = |v: Option<&Value>| v.is_none_or(Value::is_object);
    for (i, tool) in tools.iter().enumerate() {
        match api {
            Api::OpenAi | Api::Azure => {
                let ok = tool.get("type").and_then(Value::as_str) == Some("function")
                    && tool.pointer("/function/name").is_some_and(Value::is_string)
                    && is_object(tool.pointer("/function/parameters"));
                if !ok {
                    return Err(format!(
                        "Invalid value for 'tools[{i}]': expected {{type: function, function: {{name, parameters}}}}"
                    ));
                }
                names.push(
                    tool.pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                );
            }
            Api::Anthropic => {
                let ok = tool.get("name").is_some_and(Value::is_string)
                    && tool.get("input_schema").is_some_and(Value::is_object);
                if !ok {
                    return Err(format!("tools.{i}: `name` and `input_schema` are required"));
                }
                names.push(tool.get("name").and_then(Value::as_str).unwrap_or_default().to_owned());
            }
            Api::Gemini => {
                let decls = tool
                    .get("functionDeclarations")
                    .and_then(Value::as_array)
                    .ok_or(format!("tools[{i}]: expected functionDeclarations"))?;
                for d in decls {
                    let name = d
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("function declaration without name")?;
                    if d.get("parameters").is_some() && d.get("parametersJsonSchema").is_some() {
                        return Err(format!(
                            "{name}: parameters and parametersJsonSchema are mutually exclusive"
                        ));
                    }
                    names.push(name.to_owned());
                }
            }
        }
    }
    Ok(names)
}

fn check_choice(api: Api, body: &Value, declared: &[String]) -> Result<(), String> {
    let named = |name: Option<&str>| match name {
        Some(n) if declared.iter().any(|d| d == n) => Ok(()),
        other => Err(format!("tool choice names an undeclared tool: {other:?}")),
    };
    match api {
        Api::OpenAi | Api::Azure => match body.get("tool_choice") {
            None => Ok(()),
            Some(Value::String(s)) if ["auto", "none", "required"].contains(&s.as_str()) => Ok(()),
            Some(v) if v.get("type").and_then(Value::as_str) == Some("function") => {
                named(v.pointer("/function/name").and_then(Value::as_str))
            }
            Some(v) => Err(format!("Invalid value for 'tool_choice': {v}")),
        },
        Api::Anthropic => match body.get("tool_choice") {
            None => Ok(()),
            Some(v) => match v.get("type").and_then(Value::as_str) {
                Some("auto" | "any" | "none") => Ok(()),
                Some("tool") => named(v.get("name").and_then(Value::as_str)),
                _ => Err(format!("tool_choice: invalid {v}")),
            },
        },
        Api::Gemini => match body.pointer("/toolConfig/functionCallingConfig") {
            None => Ok(()),
            Some(c) => {
                let mode = c.get("mode").and_then(Value::as_str);
                if !matches!(mode, Some("AUTO" | "ANY" | "NONE")) {
                    return Err(format!("functionCallingConfig.mode: invalid {mode:?}"));
                }
                for n in c
                    .get("allowedFunctionNames")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    named(n.as_str())?;
                }
                Ok(())
            }
        },
    }
}

/// Every model turn's calls are answered, each by its id (Gemini: by name, in a `user` turn),
/// by the turn right after it; Messages wants the results first; Gemini wants each turn's
/// thought signature back.
fn check_turns(api: Api, body: &Value) -> Result<(), String> {
    let turns = turns(api, body);
    let mut i = 0;
    let mut step = 0;
    while i < turns.len() {
        let t = &turns[i];
        if !t.results.is_empty() {
            return Err("a tool result must follow the model turn that made the call".to_owned());
        }
        if !t.model || t.calls.is_empty() {
            i += 1;
            continue;
        }
        if api == Api::Gemini && t.calls.first().and_then(|c| c.1.as_deref()) != Some(signature(step).as_str()) {
            return Err(format!(
                "Function call `{}` is missing a thought_signature",
                t.calls[0].0
            ));
        }
        let mut answered: Vec<String> = Vec::new();
        let mut j = i + 1;
        // Chat Completions: one `tool` message per call; the others: one turn of results.
        while let Some(next) = turns.get(j).filter(|n| !n.results.is_empty()) {
            if next.text_before_results {
                return Err("tool_result blocks must come first in the user message".to_owned());
            }
            answered.extend(next.results.iter().cloned());
            j += 1;
            if api != Api::OpenAi && api != Api::Azure {
                break;
            }
        }
        let mut wanted: Vec<String> = t.calls.iter().map(|c| c.0.clone()).collect();
        wanted.sort();
        answered.sort();
        if wanted != answered {
            return Err(format!(
                "the tool calls {wanted:?} must each be answered by the next turn; got results for {answered:?}"
            ));
        }
        step += 1;
        i = j;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "- when: order A-1\n  steps:\n    - calls: [{name: lookup, arguments: {id: A-1}}, {name: track, raw_arguments: '{bad'}]\n    - text: Shipped.\n  verdict: {score: 1}\n";

    #[test]
    fn scripts_parse_and_pick_steps_by_tool_turns() {
        let script = Script::parse(SCRIPT).expect("parses");
        let rule = &script.rules[0];
        assert_eq!(rule.step(0).calls.len(), 2);
        assert_eq!(rule.step(1).text.as_deref(), Some("Shipped."));
        assert_eq!(rule.step(9).text.as_deref(), Some("Shipped."), "the last step repeats");
        assert_eq!(rule.verdict.as_deref(), Some(r#"{"score":1}"#));
        assert!(Script::parse("- when: x\n  steps: []\n").is_err());
        let body = json!({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "Where is order A-1?"}]});
        assert!(script.rule(Api::OpenAi, &body, false).is_some());
        assert!(script.rule(Api::OpenAi, &json!({"messages": []}), false).is_none());
    }

    #[test]
    fn each_api_gets_its_own_tool_call_shape() {
        let script = Script::parse(SCRIPT).expect("parses");
        let step = script.rules[0].step(0);
        let usage = Usage { input: 1, output: 2 };
        let openai = step.answer(Api::OpenAi, 0, usage);
        assert_eq!(openai["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(
            openai["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            r#"{"id":"A-1"}"#
        );
        assert_eq!(
            openai["choices"][0]["message"]["tool_calls"][1]["function"]["arguments"],
            "{bad"
        );
        let anthropic = step.answer(Api::Anthropic, 0, usage);
        assert_eq!(anthropic["stop_reason"], "tool_use");
        assert_eq!(anthropic["content"][0]["input"], json!({"id": "A-1"}));
        let gemini = step.answer(Api::Gemini, 0, usage);
        assert_eq!(
            gemini["candidates"][0]["content"]["parts"][0]["thoughtSignature"],
            "fake-signature-0"
        );
        assert_eq!(
            gemini["candidates"][0]["content"]["parts"][1]["functionCall"]["name"],
            "track"
        );
    }

    #[test]
    fn unanswered_calls_and_missing_signatures_are_refused() {
        let openai = json!({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "t", "arguments": "{}"}},
                                                                  {"id": "b", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "x"}
        ]});
        assert!(
            check(Api::OpenAi, &openai)
                .expect_err("b unanswered")
                .contains("must each be answered")
        );
        let gemini = json!({"contents": [
            {"role": "user", "parts": [{"text": "q"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "t", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "t", "response": {}}}]}
        ]});
        assert!(
            check(Api::Gemini, &gemini)
                .expect_err("no signature")
                .contains("thought_signature")
        );
        let anthropic = json!({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "t", "input": {}}]},
            {"role": "user", "content": [{"type": "text", "text": "here"}, {"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
        ]});
        assert!(
            check(Api::Anthropic, &anthropic)
                .expect_err("text first")
                .contains("must come first")
        );
        let choice =
            json!({"tools": [{"name": "t", "input_schema": {}}], "tool_choice": {"type": "tool", "name": "u"}});
        assert!(check(Api::Anthropic, &choice).is_err());
    }
}
