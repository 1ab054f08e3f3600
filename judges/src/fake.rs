//! Test doubles of the judge model: a scripted one, and the deterministic rules of
//! examples/judges/fake_model.py (the fake model the example suites run against), so unit
//! tests and the end-to-end tests work out the same numbers.

use std::cell::RefCell;
use std::collections::BTreeSet;

use agentv_eval_sdk::{InvokeRequest, TargetError};
use serde_json::{Value, json};

use crate::model::{Budget, JudgeModel};

type Script = Box<dyn Fn(&str) -> Result<String, TargetError>>;

/// A model whose reply to a prompt is a function of the prompt.
pub struct Scripted {
    script: Script,
    budget: Option<Budget>,
    sent: RefCell<Vec<InvokeRequest>>,
    trips: RefCell<usize>,
}

impl Scripted {
    pub fn new(script: impl Fn(&str) -> Result<String, TargetError> + 'static) -> Self {
        Self {
            script: Box::new(script),
            budget: None,
            sent: RefCell::default(),
            trips: RefCell::default(),
        }
    }

    /// The fake model of the example suites.
    pub fn rules() -> Self {
        Self::new(|prompt| Ok(rules::reply(prompt)))
    }

    pub fn with_budget(mut self, max_calls: u32, call_count: u32) -> Self {
        self.budget = Some(Budget { max_calls, call_count });
        self
    }

    /// Proxy round trips so far (`invoke` or `invoke_batch`).
    pub fn round_trips(&self) -> usize {
        *self.trips.borrow()
    }

    /// Every request sent, in order.
    pub fn requests(&self) -> Vec<InvokeRequest> {
        self.sent.borrow().clone()
    }

    /// Every prompt sent, in order.
    pub fn prompts(&self) -> Vec<String> {
        self.sent.borrow().iter().map(|r| r.question.clone()).collect()
    }

    fn spend(&self, calls: usize) -> Result<(), TargetError> {
        if let Some(budget) = self.budget {
            let used = self.sent.borrow().len() + calls + budget.call_count as usize;
            if used > budget.max_calls as usize {
                return Err(TargetError::Status {
                    status: 429,
                    message: format!("Max calls exceeded (limit: {})", budget.max_calls),
                });
            }
        }
        *self.trips.borrow_mut() += 1;
        Ok(())
    }
}

impl JudgeModel for Scripted {
    fn budget(&self) -> Result<Option<Budget>, TargetError> {
        Ok(self.budget)
    }

    fn invoke(&self, request: &InvokeRequest) -> Result<String, TargetError> {
        self.spend(1)?;
        self.sent.borrow_mut().push(request.clone());
        (self.script)(&request.question)
    }

    fn invoke_batch(&self, requests: &[InvokeRequest]) -> Result<Vec<Result<String, TargetError>>, TargetError> {
        self.spend(requests.len())?;
        self.sent.borrow_mut().extend(requests.iter().cloned());
        Ok(requests.iter().map(|r| (self.script)(&r.question)).collect())
    }
}

/// The rules of examples/judges/fake_model.py, for unit tests (keep the two in step).
pub mod rules {
    use super::*;

    /// Word stems: the first five letters of each word of five letters or more, lowercased.
    pub fn stems(text: &str) -> BTreeSet<String> {
        words(text)
            .filter(|w| w.chars().count() >= 5 && w.chars().all(|c| c.is_ascii_alphabetic()))
            .map(|w| w.chars().take(5).collect())
            .collect()
    }

    fn numbers(text: &str) -> BTreeSet<String> {
        words(text).filter(|w| w.chars().all(|c| c.is_ascii_digit())).collect()
    }

    fn words(text: &str) -> impl Iterator<Item = String> + '_ {
        text.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
    }

    pub fn relevant(item: &str, question: &str) -> bool {
        !stems(item).is_disjoint(&stems(question))
    }

    pub fn supported(item: &str, context: &str) -> bool {
        stems(item).is_subset(&stems(context)) && numbers(item).is_subset(&numbers(context))
    }

    pub fn sentences(text: &str) -> Vec<String> {
        crate::statements::split_sentences(text)
    }

    fn block<'a>(prompt: &'a str, tag: &str) -> Option<&'a str> {
        let open = format!("<{tag}>\n");
        let close = format!("\n</{tag}>");
        let start = prompt.find(&open)? + open.len();
        let end = prompt[start..].find(&close)? + start;
        Some(&prompt[start..end])
    }

    fn items<'a>(prompt: &'a str, tag: &str) -> Vec<&'a str> {
        let mut out = Vec::new();
        let mut rest = prompt;
        let open = format!("<{tag} ");
        let close = format!("\n</{tag}>");
        while let Some(at) = rest.find(&open) {
            let after = &rest[at..];
            let Some(body) = after.find(">\n").map(|i| i + 2) else {
                break;
            };
            let Some(end) = after[body..].find(&close) else { break };
            out.push(&after[body..body + end]);
            rest = &after[body + end + close.len()..];
        }
        out
    }

    /// The fake model's reply to one prompt.
    pub fn reply(prompt: &str) -> String {
        let question = block(prompt, "question").unwrap_or_default();
        if prompt.contains("{\"claims\": [") || prompt.contains("{\"statements\": [\"") {
            let key = if prompt.contains("{\"claims\": [") {
                "claims"
            } else {
                "statements"
            };
            let text = ["answer", "reference_answer"]
                .iter()
                .find_map(|t| block(prompt, t))
                .unwrap_or_default();
            return json!({ key: sentences(text) }).to_string();
        }
        if prompt.contains("{\"statement\": ") {
            let per_chunk: Vec<Value> = items(prompt, "chunk")
                .iter()
                .map(|chunk| {
                    let list: Vec<Value> = sentences(chunk)
                        .into_iter()
                        .map(|s| json!({"statement": s, "verdict": yes_no(relevant(&s, question))}))
                        .collect();
                    json!({ "statements": list })
                })
                .collect();
            return if prompt.contains("{\"chunks\": [") {
                json!({ "chunks": per_chunk }).to_string()
            } else {
                per_chunk
                    .into_iter()
                    .next()
                    .unwrap_or(json!({"statements": []}))
                    .to_string()
            };
        }
        let context = block(prompt, "context");
        let judged = ["chunk", "claim", "statement"]
            .iter()
            .map(|t| items(prompt.split("</context>").last().unwrap_or(prompt), t))
            .find(|list| !list.is_empty())
            .unwrap_or_default();
        let verdicts: Vec<Value> = judged
            .iter()
            .map(|item| {
                let yes = match context {
                    Some(c) => supported(item, c),
                    None => relevant(item, question),
                };
                json!({"verdict": yes_no(yes), "reason": "fake"})
            })
            .collect();
        if prompt.contains("{\"verdicts\": [") {
            json!({ "verdicts": verdicts }).to_string()
        } else {
            verdicts
                .into_iter()
                .next()
                .unwrap_or(json!({"verdict": "yes"}))
                .to_string()
        }
    }

    fn yes_no(yes: bool) -> &'static str {
        if yes { "yes" } else { "no" }
    }
}
