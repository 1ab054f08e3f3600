//! `conversation-relevance` (promptfoo, from DeepEval): a grading model judges, over a sliding
//! window of the conversation, whether the last answer is relevant to the messages before it;
//! the score is the share of relevant windows, passing at `threshold` (default 0.5)
//! (`docs/promptfoo.md#conversation-relevance`). The conversation is the test's
//! `_conversation` var (`[{input, output}]`), else the prompt and the answer; the window is
//! `config.windowSize` exchanges (default 5). `not-` inverts pass and score. A window whose
//! verdict cannot be read is a grader error, never a pass.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::promptfoo_check::PfResult;
use super::promptfoo_graded::{self as graded, Calls, Grading};
use super::{GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "conversation-relevance",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["conversation-relevance"],
    },
    doc: "The share of the conversation's sliding windows whose last answer a grading model finds relevant to the messages before it.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    graded::THRESHOLD,
    graded::PROVIDER,
    graded::RUBRIC_PROMPT,
    Key::new("config", Kind::Any, "`{windowSize: n}`: the exchanges in each window (default 5)."),
];
const KEYS: KeyTable = KeyTable::new("conversation-relevance", "A conversation relevance check.", &[OWN]);

/// promptfoo's prompt for one window's verdict (`ConversationRelevancyTemplate`).
pub const VERDICTS_PROMPT: &str = include_str!("promptfoo_graded/prompts/conversation_relevance_verdicts.txt");
/// promptfoo's prompt summing up why windows were irrelevant.
pub const REASON_PROMPT: &str = include_str!("promptfoo_graded/prompts/conversation_relevance_reason.txt");
const NOT_RELEVANT: &str = "Response is not relevant to the conversation context";
const DEFAULT_WINDOW: usize = 5;

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let threshold = super::promptfoo_check::threshold(f, cx).ok()?;
    let window = match f.take("config").map(crate::config::Node::to_json) {
        None => DEFAULT_WINDOW,
        Some(config) => match config.get("windowSize") {
            None | Some(Value::Null) => DEFAULT_WINDOW,
            // promptfoo's `windowSize || 5`: 0 is the default too.
            Some(n) if n.as_u64() == Some(0) => DEFAULT_WINDOW,
            Some(n) => match n.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(n) => n,
                None => {
                    cx.drop_grader(
                        f.pos,
                        format!("conversation-relevance `config.windowSize` must be a whole number, not {n}"),
                        Some("write `config: {windowSize: 5}`".to_owned()),
                    );
                    return None;
                }
            },
        },
    };
    let grading = Grading::parse(f, cx)?;
    Some(Arc::new(ConversationRelevance {
        threshold: threshold.unwrap_or(0.5),
        window,
        grading,
        inverse: cx.take_inverse(),
    }))
}

/// A `conversation-relevance` assertion as configured.
#[derive(Debug, Clone)]
pub struct ConversationRelevance {
    pub threshold: f64,
    /// Exchanges per window.
    pub window: usize,
    pub grading: Grading,
    pub inverse: bool,
}

graded::grader_asking!(ConversationRelevance, ask);

/// One exchange of the conversation: what the user said and what was answered.
#[derive(Debug, Clone, PartialEq)]
struct Exchange {
    input: Value,
    output: Value,
}

impl ConversationRelevance {
    async fn ask(&self, ctx: &GradeContext<'_>, calls: &mut Calls) -> Result<PfResult, String> {
        let vars = graded::vars(ctx);
        let exchanges = conversation(&vars, &ctx.case.question, ctx.candidate_answer)?;
        let (mut relevant, mut irrelevancies) = (0usize, Vec::new());
        for end in 0..exchanges.len() {
            let window = &exchanges[(end + 1).saturating_sub(self.window)..=end];
            let prompt = self.verdict_prompt(&vars, window)?;
            let (pass, reason) = verdict(&calls.ask(ctx, &self.grading, &prompt).await?)?;
            if pass {
                relevant += 1;
            } else if reason != NOT_RELEVANT {
                irrelevancies.push(reason);
            }
        }
        let total = exchanges.len();
        let score = relevant as f64 / total as f64;
        let counted = format!("{relevant} out of {total} conversation windows were relevant");
        let reason = if !irrelevancies.is_empty() && score < 1.0 {
            let prompt = REASON_PROMPT
                .replace("{{score}}", &super::js::number(score))
                .replace("{{irrelevancies}}", &pretty_strings(&irrelevancies));
            // Only a summary: a failed call keeps the count as the reason, as promptfoo does.
            match calls.ask(ctx, &self.grading, &prompt).await {
                Ok(answer) => graded::first_json_object(&answer)
                    .and_then(|o| o.get("reason").and_then(Value::as_str).map(str::to_owned))
                    .filter(|r| !r.is_empty())
                    .unwrap_or(counted),
                Err(_) => counted,
            }
        } else {
            counted
        };
        let pass = (score >= self.threshold - graded::EPSILON) != self.inverse;
        Ok(PfResult {
            pass,
            score: if self.inverse { 1.0 - score } else { score },
            reason,
        })
    }

    /// The prompt for one window: `rubricPrompt` rendered with the vars and `messages` (the
    /// window), else promptfoo's with the window as chat messages.
    fn verdict_prompt(&self, vars: &Map<String, Value>, window: &[Exchange]) -> Result<String, String> {
        if let Some(own) = self.grading.rubric_prompt.as_ref().filter(|p| !p.is_null()) {
            let own = match own {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let mut scope = vars.clone();
            let messages: Vec<Value> = window
                .iter()
                .map(|e| serde_json::json!({"input": e.input, "output": e.output}))
                .collect();
            scope.insert("messages".to_owned(), Value::Array(messages));
            return super::nunjucks::render(&own, &scope).map_err(|e| e.to_string());
        }
        Ok(VERDICTS_PROMPT.replace("{{messages}}", &pretty_chat(window)))
    }
}

/// The exchanges of the test: its `_conversation` var when it has any, else the prompt and
/// the answer.
fn conversation(vars: &Map<String, Value>, prompt: &str, answer: &str) -> Result<Vec<Exchange>, String> {
    if let Some(Value::Array(items)) = vars.get("_conversation")
        && !items.is_empty()
    {
        return Ok(items
            .iter()
            .map(|i| Exchange {
                input: i.get("input").cloned().unwrap_or(Value::Null),
                output: i.get("output").cloned().unwrap_or(Value::Null),
            })
            .collect());
    }
    if prompt.is_empty() {
        return Err("conversational-relevance assertion type must have a prompt".to_owned());
    }
    Ok(vec![Exchange {
        input: Value::String(prompt.to_owned()),
        output: Value::String(answer.to_owned()),
    }])
}

/// promptfoo's reading of a window's verdict: the first JSON object's `verdict`, `yes` or `no`.
fn verdict(answer: &str) -> Result<(bool, String), String> {
    let found = graded::first_json_object(answer).ok_or("Error parsing output: No JSON object found in response")?;
    let pass = match found.get("verdict").and_then(Value::as_str) {
        Some("yes") => true,
        Some("no") => false,
        _ => return Err("Error parsing output: Conversation relevance grader returned an invalid verdict".to_owned()),
    };
    let reason = found
        .get("reason")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .map_or_else(
            || {
                if pass {
                    "Response is relevant to the conversation context".to_owned()
                } else {
                    NOT_RELEVANT.to_owned()
                }
            },
            str::to_owned,
        );
    Ok((pass, reason))
}

/// A text as JavaScript's `JSON.stringify` writes it, or a value's JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The window as `JSON.stringify(messages, null, 2)` writes promptfoo's `{role, content}` list.
fn pretty_chat(window: &[Exchange]) -> String {
    let mut items = Vec::new();
    for e in window {
        for (role, content) in [("user", &e.input), ("assistant", &e.output)] {
            let content = Value::String(text_of(content)).to_string();
            items.push(format!("  {{\n    \"role\": \"{role}\",\n    \"content\": {content}\n  }}"));
        }
    }
    format!("[\n{}\n]", items.join(",\n"))
}

/// A list of texts as `JSON.stringify(list, null, 2)` writes it.
fn pretty_strings(items: &[String]) -> String {
    if items.is_empty() {
        return "[]".to_owned();
    }
    let lines: Vec<String> = items.iter().map(|s| format!("  {}", Value::String(s.clone()))).collect();
    format!("[\n{}\n]", lines.join(",\n"))
}

#[cfg(test)]
mod tests {
    use crate::evaluators::promptfoo_graded::testing::{graded, sent};
    use serde_json::json;

    #[test]
    fn conversation_relevance_judges_each_window_of_the_conversation() {
        let conversation = json!({"_conversation": [
            {"input": "Hi", "output": "Hello!"},
            {"input": "Capital of France?", "output": "Paris."},
            {"input": "And of Italy?", "output": "I like cheese."},
        ]});
        let (grade, requests) = graded(
            "- {type: conversation-relevance, threshold: 0.7, config: {windowSize: 2}}",
            "q",
            conversation,
            "a",
            &[
                r#"{"verdict": "yes"}"#,
                r#"{"verdict": "yes"}"#,
                r#"{"verdict": "no", "reason": "Cheese is not a capital."}"#,
                r#"{"reason": "The score is 0.67 because of cheese."}"#,
            ],
        );
        assert!(grade.error.is_none(), "{grade:?}");
        assert!((grade.score - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(grade.reasoning.as_deref(), Some("The score is 0.67 because of cheese."));
        assert_eq!(requests.len(), 4);
        let last_window = &sent(&requests[2])[0].1;
        assert!(last_window.starts_with("Based on the given list of message exchanges between a user and an LLM"));
        assert!(last_window.ends_with(
            "Messages:\n[\n  {\n    \"role\": \"user\",\n    \"content\": \"Capital of France?\"\n  },\n  {\n    \"role\": \"assistant\",\n    \"content\": \"Paris.\"\n  },\n  {\n    \"role\": \"user\",\n    \"content\": \"And of Italy?\"\n  },\n  {\n    \"role\": \"assistant\",\n    \"content\": \"I like cheese.\"\n  }\n]\n\nJSON:"
        ), "{last_window}");
        let summary = &sent(&requests[3])[0].1;
        assert!(summary.contains("Relevancy Score:\n0.6666666666666666\n\nIrrelevancies:\n[\n  \"Cheese is not a capital.\"\n]"), "{summary}");
    }

    #[test]
    fn conversation_relevance_grades_the_prompt_and_answer_and_refuses_unreadable_verdicts() {
        let (grade, requests) = graded("- {type: conversation-relevance}", "Capital?", json!({}), "Paris.", &[r#"{"verdict": "yes"}"#]);
        assert_eq!((grade.score, grade.reasoning.as_deref()), (1.0, Some("1 out of 1 conversation windows were relevant")));
        assert!(sent(&requests[0])[0].1.contains("\"content\": \"Capital?\""));
        let (grade, _) = graded("- {type: not-conversation-relevance}", "Capital?", json!({}), "Paris.", &[r#"{"verdict": "yes"}"#]);
        assert_eq!(grade.score, 0.0, "not- inverts the score");
        let (grade, _) = graded("- {type: conversation-relevance}", "Capital?", json!({}), "Paris.", &["maybe"]);
        assert_eq!(grade.error.as_deref(), Some("Error parsing output: No JSON object found in response"));
        let (grade, _) = graded("- {type: conversation-relevance}", "Capital?", json!({}), "Paris.", &[r#"{"verdict": "perhaps"}"#]);
        assert!(grade.error.as_deref().is_some_and(|e| e.ends_with("returned an invalid verdict")));
        let problems = crate::evaluators::promptfoo_graded::testing::problems("- {type: conversation-relevance, config: {windowSize: -1}}");
        assert!(problems.iter().any(|p| p.contains("`config.windowSize` must be a whole number")), "{problems:?}");
    }
}
