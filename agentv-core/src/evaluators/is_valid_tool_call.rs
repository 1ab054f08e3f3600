//! `is-valid-tool-call` (agentv's; promptfoo has a like-named assertion): every tool call of the
//! answer names a declared tool and its arguments validate against that tool's JSON Schema,
//! one assertion per call (`docs/tools.md#graders`). The tools are the grader's own `tools`
//! when it has them (an agent's tools can be checked this way), else those the case runs with:
//! the case's, its suite's or its target's. An answer without tool calls fails: there is
//! nothing valid in it.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Grade, GradeContext, GradeVerdict, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable};
use crate::model::{Assertion, INPUT_ERROR, ToolCall, ToolDef, ToolSettings};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "is-valid-tool-call",
    names: Names {
        v2: &["is_valid_tool_call"],
        v4: &["is-valid-tool-call"],
        promptfoo: &[],
    },
    doc: "Passes when every tool call names a declared tool and its arguments validate against the tool's JSON Schema.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[Key::new(
    "tools",
    crate::tools::keys::TOOLS_KIND,
    "The tools to check against (default: the tools the case runs with).",
)];
const KEYS: KeyTable = KeyTable::new("is-valid-tool-call", "A check of the answer's tool calls.", &[OWN]);

/// Schema errors listed per call.
const SHOWN_ERRORS: usize = 3;

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let tools = match f.take("tools") {
        None => None,
        Some(node) => {
            let (ws, dir) = (cx.ws, cx.eval_dir);
            let find = |path: &str| ws.resolve_file(path, dir);
            Some(crate::tools::read::read_tools(node, &find, cx.diags)?)
        }
    };
    Some(Arc::new(IsValidToolCall { tools }))
}

/// An `is-valid-tool-call` check.
#[derive(Debug, Clone)]
pub struct IsValidToolCall {
    /// Its own tools; `None`: the case's.
    pub tools: Option<Arc<[ToolDef]>>,
}

impl Grader for IsValidToolCall {
    fn default_name(&self) -> Option<String> {
        Some("is-valid-tool-call".to_owned())
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let tools = match &self.tools {
                Some(tools) => tools.clone(),
                None => ToolSettings::effective(ctx.case.tool_use.as_deref(), ctx.target.provider.tool_settings())
                    .tools
                    .unwrap_or_else(|| Arc::from(Vec::new())),
            };
            if tools.is_empty() {
                return Grade::failed_with(
                    "no tools are declared for this case: declare `tools` on the case, its suite, its target or this grader",
                );
            }
            let calls: Vec<&ToolCall> = ctx.output_messages.iter().flat_map(|m| &m.tool_calls).collect();
            grade(&tools, &calls)
        })
    }
}

/// One assertion per call; the score is the share of valid calls.
pub fn grade(tools: &[ToolDef], calls: &[&ToolCall]) -> Grade {
    if calls.is_empty() {
        return Grade::check(false, "No tool calls to validate");
    }
    let mut validators: HashMap<&str, Result<jsonschema::Validator, String>> = HashMap::new();
    let mut assertions = Vec::with_capacity(calls.len());
    let mut valid = 0usize;
    for (i, call) in calls.iter().enumerate() {
        let label = format!("Call {} `{}`", i + 1, call.tool);
        let problems = check(tools, call, &mut validators);
        if problems.is_empty() {
            valid += 1;
            assertions.push(Assertion::new(format!("{label} is valid"), true));
        } else {
            assertions.push(Assertion::new(format!("{label}: {}", problems.join("; ")), false));
        }
    }
    let score = valid as f64 / calls.len() as f64;
    let verdict = if valid == calls.len() {
        GradeVerdict::Pass
    } else {
        GradeVerdict::Fail
    };
    let mut grade = Grade::assessed(score, assertions).with_verdict(verdict);
    grade.details = json!({"calls": calls.len(), "valid": valid}).as_object().cloned();
    grade
}

/// Why `call` is not valid (empty when it is).
fn check<'t>(
    tools: &'t [ToolDef],
    call: &ToolCall,
    validators: &mut HashMap<&'t str, Result<jsonschema::Validator, String>>,
) -> Vec<String> {
    let Some(tool) = tools.iter().find(|t| t.name == call.tool) else {
        return vec![format!("unknown tool (declared: {})", crate::tools::read::names(tools))];
    };
    if let Some(problem) = call.extra.get(INPUT_ERROR).and_then(Value::as_str) {
        return vec![format!("arguments are {problem}")];
    }
    let empty = Value::Object(Default::default());
    let input = call.input.as_ref().unwrap_or(&empty);
    if !input.is_object() {
        return vec!["arguments are not a JSON object".to_owned()];
    }
    let validator = validators
        .entry(tool.name.as_str())
        .or_insert_with(|| jsonschema::validator_for(&tool.parameters).map_err(|e| e.to_string()));
    let validator = match validator {
        Ok(v) => v,
        Err(e) => return vec![format!("the tool's parameters are not a valid JSON Schema: {e}")],
    };
    let errors: Vec<String> = validator
        .iter_errors(input)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("{}: {e}", if at.is_empty() { "/" } else { at.as_str() })
        })
        .collect();
    let mut shown: Vec<String> = errors.iter().take(SHOWN_ERRORS).cloned().collect();
    if errors.len() > SHOWN_ERRORS {
        shown.push(format!("… and {} more", errors.len() - SHOWN_ERRORS));
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::testkit::{Answered, FakeProvider, one};
    use crate::model::{OutputMessage, ToolSettings};

    fn tools() -> Vec<ToolDef> {
        vec![ToolDef::new(
            "lookup_order",
            json!({"type": "object", "properties": {"order_id": {"type": "string", "pattern": "^A-"}},
                   "required": ["order_id"], "additionalProperties": false}),
        )]
    }

    fn call(tool: &str, input: Value) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            input: Some(input),
            ..ToolCall::default()
        }
    }

    #[test]
    fn each_call_is_one_assertion_naming_what_is_wrong() {
        let mut bad_json = call("lookup_order", json!("{order"));
        bad_json.extra.insert(INPUT_ERROR.into(), json!("not valid JSON: EOF while parsing"));
        let calls = [
            call("lookup_order", json!({"order_id": "A-1"})),
            call("cancel_order", json!({})),
            call("lookup_order", json!({"order_id": 7, "extra": true})),
            bad_json,
        ];
        let refs: Vec<&ToolCall> = calls.iter().collect();
        let g = grade(&tools(), &refs);
        let texts: Vec<(&str, bool)> = g.assertions.iter().map(|a| (a.text.as_str(), a.passed)).collect();
        assert_eq!(g.score, 0.25);
        assert_eq!(g.verdict, Some(GradeVerdict::Fail));
        assert_eq!(texts[0], ("Call 1 `lookup_order` is valid", true));
        assert_eq!(texts[1], ("Call 2 `cancel_order`: unknown tool (declared: lookup_order)", false));
        assert!(texts[2].0.starts_with("Call 3 `lookup_order`: /"), "{texts:?}");
        assert!(texts[2].0.contains("7 is not of type \"string\""), "{texts:?}");
        assert_eq!(
            texts[3],
            ("Call 4 `lookup_order`: arguments are not valid JSON: EOF while parsing", false)
        );
        let none = grade(&tools(), &[]);
        assert_eq!((none.score, none.misses.as_slice()), (0.0, &["No tool calls to validate".to_owned()][..]));
    }

    #[tokio::test]
    async fn the_case_s_tools_are_used_unless_the_grader_has_its_own() {
        let mut answered = Answered::new("q", "c", "", FakeProvider::llm(&["x"]));
        let mut message = OutputMessage::assistant("");
        message.tool_calls = vec![call("lookup_order", json!({"order_id": "A-9"}))];
        answered.messages = vec![message];
        let g = answered.grade(&one("- type: is-valid-tool-call\n")).await;
        assert!(g.error.as_deref().is_some_and(|e| e.starts_with("no tools are declared")), "{g:?}");
        answered.case.tool_use = Some(Arc::new(ToolSettings {
            tools: Some(Arc::from(tools())),
            ..ToolSettings::default()
        }));
        let g = answered.grade(&one("- type: is-valid-tool-call\n")).await;
        assert_eq!((g.score, g.error.clone()), (1.0, None), "{g:?}");
        let own = one("- type: is_valid_tool_call\n  tools: [{name: other}]\n");
        assert_eq!(own.name, "is-valid-tool-call");
        let g = answered.grade(&own).await;
        assert_eq!(g.misses, ["Call 1 `lookup_order`: unknown tool (declared: other)"]);
    }
}
