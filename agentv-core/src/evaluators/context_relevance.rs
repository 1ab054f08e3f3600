//! `context-relevance` (promptfoo, RAGAS): the grading model extracts the sentences of the
//! context needed to answer the `query` var; the score is their share of the context's units
//! (its chunks or lines, else its sentences), passing at `threshold` (default 0)
//! (`docs/promptfoo.md#context-relevance`). It ignores `not-`, as promptfoo does.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::promptfoo_check::{self, PfResult};
use super::promptfoo_graded::{self as graded, Calls, Context, Grading};
use super::{GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "context-relevance",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["context-relevance"],
    },
    doc: "The share of the `context` var a grading model finds needed to answer the `query` var (RAGAS context relevance).",
    keys: &KEYS,
    parse,
};

/// `contextTransform`: JavaScript giving the context from the answer (`docs/promptfoo.md#context-transform`).
pub const CONTEXT_TRANSFORM: Key = Key::new(
    "contextTransform",
    Kind::Str,
    "JavaScript of `output` and `context` (`vars`, `prompt`) returning the context (a text or a list of texts), instead of the `context` var; `file://module.js[:function]` calls a module's function.",
);

const OWN: &[Key] = &[graded::THRESHOLD, graded::PROVIDER, graded::RUBRIC_PROMPT, CONTEXT_TRANSFORM];
const KEYS: KeyTable = KeyTable::new("context-relevance", "A context-relevance check.", &[OWN]);

/// promptfoo's prompt (`CONTEXT_RELEVANCE`, from RAGAS).
pub const PROMPT: &str = include_str!("promptfoo_graded/prompts/context_relevance.txt");
const INSUFFICIENT: &str = "Insufficient Information";

/// Reads `contextTransform`: `None` after reporting one that is not a text; `Some(None)`
/// without it.
pub fn context_transform(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Option<String>> {
    match f.take("contextTransform") {
        None => Some(None),
        Some(n) => match n.as_str() {
            Some(code) if !code.trim().is_empty() => Some(Some(code.to_owned())),
            _ => {
                cx.drop_grader(
                    n.pos,
                    "`contextTransform` must be a JavaScript expression (a text)",
                    Some("write it as text, such as `contextTransform: output.context`".to_owned()),
                );
                None
            }
        },
    }
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let threshold = promptfoo_check::threshold(f, cx).ok()?;
    let transform = context_transform(f, cx)?;
    let grading = Grading::parse(f, cx)?;
    cx.take_inverse();
    Some(Arc::new(ContextRelevance {
        threshold: threshold.unwrap_or(0.0),
        grading,
        transform,
    }))
}

/// A `context-relevance` assertion as configured.
#[derive(Debug, Clone)]
pub struct ContextRelevance {
    pub threshold: f64,
    pub grading: Grading,
    /// `contextTransform`.
    pub transform: Option<String>,
}

graded::grader_asking!(ContextRelevance, ask);

/// The `query` var, which the RAG assertions require.
pub fn query(vars: &Map<String, Value>, what: &str) -> Result<String, String> {
    match vars.get("query") {
        Some(Value::String(q)) => Ok(q.clone()),
        _ => Err(format!("{what} assertion requires a \"query\" variable with the user question")),
    }
}

impl ContextRelevance {
    async fn ask(&self, ctx: &GradeContext<'_>, calls: &mut Calls) -> Result<PfResult, String> {
        let vars = graded::vars(ctx);
        let query = query(&vars, "context-relevance")?;
        let context = Context::resolve(ctx, &vars, None, self.transform.as_deref()).await?;
        let mut scope = Map::new();
        scope.insert("context".to_owned(), context.joined().into());
        scope.insert("query".to_owned(), query.into());
        let prompt = graded::render(&self.grading.prompt_or(PROMPT), &scope)?;
        let answer = calls.ask(ctx, &self.grading, &prompt).await?;
        Ok(relevance(&context, &answer, self.threshold))
    }
}

/// promptfoo's score: the distinct extracted sentences (none for `Insufficient Information`)
/// over the context's units, at most 1.
pub fn relevance(context: &Context, answer: &str, threshold: f64) -> PfResult {
    let (segmented, units) = match context {
        Context::Chunks(chunks) => (true, chunks.iter().filter(|c| !c.trim().is_empty()).count()),
        Context::Text(text) => (graded::lines(text).len() > 1, graded::sentences(text).len()),
    };
    let extracted = if answer.contains(INSUFFICIENT) {
        0
    } else {
        let mut found = if segmented { graded::lines(answer) } else { graded::sentences(answer) };
        let mut seen = std::collections::HashSet::new();
        found.retain(|s| seen.insert(s.clone()));
        found.len()
    };
    let score = if units > 0 { extracted.min(units) as f64 / units as f64 } else { 0.0 };
    graded::ratio_result("Context relevance", score, threshold)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::promptfoo_graded::testing::{graded, sent};
    use serde_json::json;

    #[test]
    fn context_relevance_sends_query_and_context_and_scores_extracted_units() {
        let (grade, requests) = graded(
            "- {type: context-relevance, threshold: 0.5}",
            "q",
            json!({"query": "Capital?", "context": "Paris is the capital. It is big. 1. It has a river."}),
            "a",
            &["Paris is the capital."],
        );
        assert!(grade.error.is_none(), "{grade:?}");
        assert_eq!(grade.reasoning.as_deref(), Some("Context relevance 0.33 is < 0.5"));
        assert!(sent(&requests[0])[0].1.ends_with(
            "query: Capital?\ncontext: Paris is the capital. It is big. 1. It has a river.\ncandidate sentences:\n"
        ));
        let chunks = Context::Chunks(vec!["a".into(), "b".into()]);
        assert_eq!(relevance(&chunks, "a\na\nb\nc", 0.0).score, 1.0, "at most every unit");
        assert_eq!(relevance(&chunks, "Insufficient Information", 0.0).score, 0.0);
    }

    #[test]
    fn context_relevance_needs_the_query_var() {
        let (grade, _) = graded("- {type: context-relevance}", "q", json!({"context": "c"}), "a", &["x"]);
        assert_eq!(
            grade.error.as_deref(),
            Some("context-relevance assertion requires a \"query\" variable with the user question")
        );
        let problems = crate::evaluators::promptfoo_graded::testing::problems("- {type: context-relevance, contextTransform: [1]}");
        assert!(
            problems.iter().any(|p| p.contains("`contextTransform` must be a JavaScript expression")),
            "{problems:?}"
        );
    }

    #[test]
    fn context_transform_gives_the_context_from_the_answer() {
        if !agentv_testkit::toolchains::require("node", "contextTransform") {
            return;
        }
        let (grade, requests) = graded(
            "- {type: context-relevance, contextTransform: 'JSON.parse(output).docs.concat([context.vars.query])'}",
            "q",
            json!({"query": "Capital?", "context": "ignored"}),
            r#"{"answer": "Paris", "docs": ["Paris is the capital."]}"#,
            &["Paris is the capital."],
        );
        assert!(grade.error.is_none(), "{grade:?}");
        assert!(
            sent(&requests[0])[0].1.contains("context: Paris is the capital.\n\nCapital?\n"),
            "{:?}",
            sent(&requests[0])
        );
        assert_eq!(grade.score, 0.5);
        let (grade, requests) = graded(
            "- {type: context-recall, value: x, contextTransform: 'output.length'}",
            "q",
            json!({}),
            "abc",
            &["unused"],
        );
        assert!(requests.is_empty(), "nothing is graded without a context");
        assert_eq!(
            grade.error.as_deref(),
            Some("Failed to transform context using expression 'output.length': contextTransform must return a string or array of strings. Got number. Check your transform expression: output.length")
        );
        let (grade, _) = graded(
            "- {type: context-faithfulness, contextTransform: 'output.nope.x'}",
            "q",
            json!({"query": "q"}),
            "abc",
            &["unused"],
        );
        assert!(
            grade.error.as_deref().is_some_and(|e| e.starts_with("Failed to transform context using expression 'output.nope.x': ")),
            "{grade:?}"
        );
    }
}
