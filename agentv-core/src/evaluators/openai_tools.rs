//! promptfoo's `is-valid-openai-tools-call` and `is-valid-openai-function-call`
//! (`docs/promptfoo.md#is-valid-openai-tools-call`): every tool call of the answer names a
//! function the target declares (its `tools`, or its legacy `functions`), and its arguments,
//! read as JSON, conform to that function's `parameters` (Ajv's draft-07, errors in Ajv's
//! JSON). promptfoo ignores `not-` for both: so do these.
//!
//! The answer's tool calls are those of its last assistant message, written as OpenAI sends
//! them (`{id, type: function, function: {name, arguments}}`); without any, the answer text
//! stands for promptfoo's output (an MCP tool's `MCP Tool Result (…)` passes, its `MCP Tool
//! Error (…)` fails).

use std::sync::{Arc, LazyLock};

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::promptfoo_check::PfResult;
use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};
use crate::model::OutputMessage;
use crate::providers::ToolList;

pub(crate) static ENTRIES: &[&GraderEntry] = &[&TOOLS_CALL, &FUNCTION_CALL];

pub(crate) static TOOLS_CALL: GraderEntry = GraderEntry {
    name: "is-valid-openai-tools-call",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["is-valid-openai-tools-call"],
    },
    doc: "Passes when every tool call names a declared tool and its arguments match its parameters.",
    keys: &TOOLS_KEYS,
    parse: |_, _| Some(Arc::new(ToolsCall { legacy: false })),
};

pub(crate) static FUNCTION_CALL: GraderEntry = GraderEntry {
    name: "is-valid-openai-function-call",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["is-valid-openai-function-call"],
    },
    doc: "Passes when the function call names a declared function and its arguments match its parameters.",
    keys: &FUNCTION_KEYS,
    parse: parse_function,
};

const TOOLS_KEYS: KeyTable = KeyTable::new("is-valid-openai-tools-call", "A tool-call check.", &[]);
const FUNCTION_KEYS: KeyTable = KeyTable::new("is-valid-openai-function-call", "A function-call check.", &[]);

fn parse_function(_: &mut Fields<'_>, _: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(ToolsCall { legacy: true }))
}

/// Either check: `legacy` is `is-valid-openai-function-call` (one call, `functions`).
#[derive(Debug, Clone, Copy)]
pub struct ToolsCall {
    pub legacy: bool,
}

impl Grader for ToolsCall {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let output = promptfoo_output(ctx.output_messages).unwrap_or_else(|| Value::String(candidate(ctx)));
            let provider = &ctx.target.provider;
            if self.legacy {
                let functions = provider.declared_tools(ToolList::Functions);
                PfResult::from(function_call(&output, functions)).grade()
            } else {
                tools_call(&output, provider.declared_tools(ToolList::Tools)).grade()
            }
        })
    }
}

impl From<Result<(), String>> for PfResult {
    fn from(result: Result<(), String>) -> Self {
        let failed = result.as_ref().err().cloned().unwrap_or_default();
        PfResult::check(result.is_ok(), || failed)
    }
}

/// The tool calls of the last assistant message, as OpenAI writes them; else its content
/// when the provider answered with structured JSON rather than text.
fn promptfoo_output(messages: &[OutputMessage]) -> Option<Value> {
    let last = messages.iter().rev().find(|m| m.role == "assistant")?;
    if last.tool_calls.is_empty() {
        return last.content.clone().filter(|c| c.is_array() || c.is_object());
    }
    let calls = last
        .tool_calls
        .iter()
        .map(|call| {
            let arguments = match &call.input {
                Some(Value::String(raw)) => raw.clone(),
                Some(other) => other.to_string(),
                None => "{}".to_owned(),
            };
            let mut wire = json!({"type": "function", "function": {"name": call.tool, "arguments": arguments}});
            if let (Some(id), Some(obj)) = (&call.id, wire.as_object_mut()) {
                obj.insert("id".to_owned(), Value::String(id.clone()));
            }
            wire
        })
        .collect();
    Some(Value::Array(calls))
}

static MCP_ERROR: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"MCP Tool Error \(([^)]+)\): (.+)").expect("a valid pattern"));
static MCP_RESULT: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"MCP Tool Result \(([^)]+)\):").expect("a valid pattern"));

/// promptfoo's `is-valid-openai-tools-call` on its output value.
pub fn tools_call(output: &Value, tools: Option<&Value>) -> PfResult {
    let text = match output {
        Value::String(s) => s.clone(),
        other => super::js::stringify(other),
    };
    if text.contains("MCP Tool Error") {
        let found = MCP_ERROR.captures(&text);
        let part = |i| found.as_ref().and_then(|c| c.get(i)).map(|m| m.as_str());
        return PfResult {
            pass: false,
            score: 0.0,
            reason: format!(
                "MCP tool call failed for {}: {}",
                part(1).unwrap_or("unknown"),
                part(2).unwrap_or("unknown error")
            ),
        };
    }
    if text.contains("MCP Tool Result") {
        let name = MCP_RESULT.captures(&text).and_then(|c| c.get(1)).map(|m| m.as_str().to_owned());
        return PfResult {
            pass: true,
            score: 1.0,
            reason: format!("MCP tool call succeeded for {}", name.as_deref().unwrap_or("unknown")),
        };
    }
    let calls = match output {
        Value::Object(o) if o.contains_key("tool_calls") => &o["tool_calls"],
        other => other,
    };
    let looks_valid = calls.as_array().is_some_and(|list| {
        !list.is_empty()
            && list
                .iter()
                .all(|c| c["function"]["name"].is_string() && c["function"]["arguments"].is_string())
    });
    if !looks_valid {
        return PfResult::check(false, || {
            format!(
                "OpenAI did not return a valid-looking tools response: {}",
                super::js::stringify(calls)
            )
        });
    }
    let Some(tools) = tools.filter(|t| !t.is_null()) else {
        return PfResult::check(false, || "No tools configured in provider, but output contains tool calls".to_owned());
    };
    let functions: Vec<Value> = tools
        .as_array()
        .map(|list| {
            list.iter()
                .filter(|t| t["type"] == "function" && t.get("function").is_some())
                .map(|t| t["function"].clone())
                .collect()
        })
        .unwrap_or_default();
    let functions = Value::Array(functions);
    let verdict = calls
        .as_array()
        .into_iter()
        .flatten()
        .try_for_each(|call| validate_call(&call["function"], Some(&functions)));
    verdict.into()
}

/// promptfoo's `is-valid-openai-function-call` on its output value.
fn function_call(output: &Value, functions: Option<&Value>) -> Result<(), String> {
    let call = match output {
        Value::Array(calls) if calls.len() == 1 => &calls[0]["function"],
        other => other,
    };
    let call = match call {
        Value::Object(o) if o.contains_key("function_call") => &o["function_call"],
        other => other,
    };
    validate_call(call, functions)
}

/// promptfoo's `validateFunctionCall` for OpenAI: a call `{name, arguments}` against the
/// declared functions.
fn validate_call(call: &Value, functions: Option<&Value>) -> Result<(), String> {
    let (Some(name), Some(arguments)) = (call["name"].as_str(), call["arguments"].as_str()) else {
        return Err(format!(
            "OpenAI did not return a valid-looking function call: {}",
            super::js::stringify(call)
        ));
    };
    let args = super::js::json_parse(arguments)?;
    let schema = functions
        .and_then(Value::as_array)
        .and_then(|list| list.iter().find(|f| f["name"] == name))
        .and_then(|f| f.get("parameters"))
        .filter(|p| !p.is_null());
    let Some(schema) = schema else {
        return Err(format!("Called \"{name}\", but there is no function with that name"));
    };
    let validator = super::ajv::compile(schema).map_err(|e| format!("schema is invalid: {e}"))?;
    super::ajv::check_json(&validator, &args)
        .map_err(|errors| format!("Call to \"{name}\" does not match schema: {errors}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::promptfoo_check::testing::agrees_with_promptfoo;

    #[test]
    fn is_valid_openai_tools_call_agrees_with_promptfoo() {
        agrees_with_promptfoo("is-valid-openai-tools-call");
    }

    /// Expectations checked against promptfoo 0.121.20.
    #[test]
    fn tools_call_reads_mcp_results_and_errors() {
        for (text, pass, reason) in [
            ("MCP Tool Result (search): 3 hits", true, "MCP tool call succeeded for search"),
            ("MCP Tool Error (search): timed out", false, "MCP tool call failed for search: timed out"),
            ("MCP Tool Error: boom", false, "MCP tool call failed for unknown: unknown error"),
        ] {
            let got = tools_call(&Value::String(text.to_owned()), None);
            assert_eq!((got.pass, got.reason.as_str()), (pass, reason), "{text}");
        }
    }

    /// Expectations checked against promptfoo 0.121.20.
    #[test]
    fn function_call_checks_the_declared_functions() {
        let functions = json!([{"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}}]);
        for (output, want) in [
            (json!({"name": "add", "arguments": "{\"a\": 1}"}), Ok(())),
            (json!({"function_call": {"name": "add", "arguments": "{\"a\": 1}"}}), Ok(())),
            (
                json!({"name": "add", "arguments": "{\"a\": \"x\"}"}),
                Err("Call to \"add\" does not match schema: [{\"instancePath\":\"/a\",\"schemaPath\":\"#/properties/a/type\",\"keyword\":\"type\",\"params\":{\"type\":\"number\"},\"message\":\"must be number\"}]".to_owned()),
            ),
            (json!({"name": "sub", "arguments": "{}"}), Err("Called \"sub\", but there is no function with that name".to_owned())),
            (json!("text"), Err("OpenAI did not return a valid-looking function call: \"text\"".to_owned())),
            (json!({"name": "add", "arguments": "{a:1}"}), Err("Expected property name or '}' in JSON at position 1".to_owned())),
        ] {
            assert_eq!(function_call(&output, Some(&functions)), want, "{output}");
        }
    }

    /// V8's `JSON.parse` messages, checked against Node 20.
    #[test]
    fn json_parse_errors_read_as_node_writes_them() {
        for (text, want) in [
            ("not json", "Unexpected token 'o', \"not json\" is not valid JSON"),
            ("{\"a\": x}", "Unexpected token 'x', \"{\"a\": x}\" is not valid JSON"),
            (
                "{\"city\": \"Paris\", \"unit\": \"k\", \"more\": nope, \"and more\": 1}",
                "Unexpected token 'o', ...\" \"more\": nope, \"and \"... is not valid JSON",
            ),
            ("", "Unexpected end of JSON input"),
            ("{\"a\":1} x", "Unexpected non-whitespace character after JSON at position 8"),
            ("{\"a\":", "Unexpected end of JSON input"),
            ("{a:1}", "Expected property name or '}' in JSON at position 1"),
            ("[1,]", "Unexpected token ']', \"[1,]\" is not valid JSON"),
            (
                "abcdefghijabcdefghijabcdefghijabcdefghij1",
                "Unexpected token 'a', \"abcdefghij\"... is not valid JSON",
            ),
        ] {
            assert_eq!(crate::evaluators::js::json_parse(text), Err(want.to_owned()), "{text}");
        }
    }
}
