//! `context-faithfulness` (promptfoo, RAGAS): two calls (`docs/promptfoo.md#context-faithfulness`).
//! The grading model first turns the answer into statements (given the `query` var), then
//! judges each against the `context` var (Yes/No); the score is the share supported, passing at
//! `threshold` (default 0). It ignores `not-`, as promptfoo does. A verdict answer with no
//! verdict in it is a grader error.

use std::sync::Arc;

use serde_json::Value;

use super::promptfoo_check::{self, PfResult};
use super::promptfoo_graded::{self as graded, Calls, Context, Grading};
use super::{GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "context-faithfulness",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["context-faithfulness"],
    },
    doc: "The share of the answer's statements a grading model finds supported by the `context` var (RAGAS faithfulness).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    graded::THRESHOLD,
    graded::PROVIDER,
    graded::RUBRIC_PROMPT,
    super::context_relevance::CONTEXT_TRANSFORM,
];
const KEYS: KeyTable = KeyTable::new("context-faithfulness", "A context-faithfulness check.", &[OWN]);

/// promptfoo's prompts (`CONTEXT_FAITHFULNESS_LONGFORM`, `CONTEXT_FAITHFULNESS_NLI_STATEMENTS`).
pub const STATEMENTS_PROMPT: &str = include_str!("promptfoo_graded/prompts/context_faithfulness_longform.txt");
pub const VERDICTS_PROMPT: &str = include_str!("promptfoo_graded/prompts/context_faithfulness_nli.txt");
const FINAL: &str = "final verdict for each statement in order:";

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let threshold = promptfoo_check::threshold(f, cx).ok()?;
    let transform = super::context_relevance::context_transform(f, cx)?;
    let grading = Grading::parse(f, cx)?;
    if let Some(p) = grading.rubric_prompt.as_ref().filter(|p| !p.is_array()) {
        cx.drop_grader(
            f.pos,
            format!("`rubricPrompt` of context-faithfulness must be a list of two prompts (statements, verdicts), found {p}"),
            None,
        );
        return None;
    }
    cx.take_inverse();
    Some(Arc::new(ContextFaithfulness {
        threshold: threshold.unwrap_or(0.0),
        grading,
        transform,
    }))
}

/// A `context-faithfulness` assertion as configured.
#[derive(Debug, Clone)]
pub struct ContextFaithfulness {
    pub threshold: f64,
    pub grading: Grading,
    /// `contextTransform`.
    pub transform: Option<String>,
}

graded::grader_asking!(ContextFaithfulness, ask);

impl ContextFaithfulness {
    /// The `n`th prompt of `rubricPrompt` (a text or `{content}`), else promptfoo's.
    fn prompt(&self, n: usize, default: &str) -> String {
        let own = self.grading.rubric_prompt.as_ref().and_then(|p| p.get(n)).and_then(|p| match p {
            Value::String(s) => Some(s.clone()),
            other => other.get("content").and_then(Value::as_str).map(str::to_owned),
        });
        own.filter(|p| !p.is_empty()).unwrap_or_else(|| default.to_owned())
    }

    async fn ask(&self, ctx: &GradeContext<'_>, calls: &mut Calls) -> Result<PfResult, String> {
        let vars = graded::vars(ctx);
        let query = super::context_relevance::query(&vars, "context-faithfulness")?;
        let context = Context::resolve(ctx, &vars, None, self.transform.as_deref()).await?;
        let mut scope = vars.clone();
        scope.insert("question".to_owned(), query.into());
        scope.insert("answer".to_owned(), graded::try_parse(ctx.candidate_answer));
        let prompt = graded::render(&self.prompt(0, STATEMENTS_PROMPT), &scope)?;
        let statements = graded::lines(&calls.ask(ctx, &self.grading, &prompt).await?);
        let mut scope = vars;
        scope.insert("context".to_owned(), context.joined().into());
        scope.insert("statements".to_owned(), statements.clone().into());
        let prompt = graded::render(&self.prompt(1, VERDICTS_PROMPT), &scope)?;
        let answer = calls.ask(ctx, &self.grading, &prompt).await?;
        faithfulness(statements.len(), &answer, self.threshold)
    }
}

/// promptfoo's reading of the verdicts: after `Final verdict for each statement in order:`,
/// one verdict per `.`-separated part (a part without `yes` is unsupported, a missing one
/// too); without that line, the `verdict: yes` and `verdict: no` counts.
pub fn faithfulness(statements: usize, answer: &str, threshold: f64) -> Result<PfResult, String> {
    let verdicts = answer.to_lowercase();
    let verdicts = verdicts.trim();
    let mut score = 0.0;
    if statements > 0 {
        let n = statements as f64;
        if let Some(at) = verdicts.find(FINAL) {
            let parts: Vec<&str> = verdicts[at + FINAL.len()..].split('.').filter(|p| !p.trim().is_empty()).collect();
            if parts.is_empty() {
                return Err(no_verdict(answer));
            }
            let unsupported = parts.iter().filter(|p| !p.contains("yes")).count();
            score = 1.0 - (unsupported + statements.saturating_sub(parts.len())) as f64 / n;
        } else {
            let no = verdicts.matches("verdict: no").count();
            let yes = verdicts.matches("verdict: yes").count();
            if no + yes == 0 {
                return Err(no_verdict(answer));
            }
            score = 1.0 - (no + statements.saturating_sub(no + yes)) as f64 / n;
        }
    }
    Ok(graded::ratio_result("Faithfulness", score.clamp(0.0, 1.0), threshold))
}

fn no_verdict(answer: &str) -> String {
    format!("context-faithfulness: the grading model gave no verdict (Yes/No) for the statements:\n{answer}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::promptfoo_graded::testing::{graded, sent};
    use serde_json::json;

    #[test]
    fn context_faithfulness_asks_for_statements_then_verdicts() {
        let (grade, requests) = graded(
            "- {type: context-faithfulness, threshold: 0.9}",
            "q",
            json!({"query": "Capital?", "context": "Paris is the capital of France."}),
            "Paris. It has 9M people.",
            &["Paris is the capital.\nParis has 9M people.", "1. ... Verdict: Yes.\n2. ... Verdict: No.\nFinal verdict for each statement in order: Yes. No."],
        );
        assert!(grade.error.is_none(), "{grade:?}");
        assert_eq!((grade.score, grade.reasoning.as_deref()), (0.5, Some("Faithfulness 0.50 is < 0.9")));
        let first = &sent(&requests[0])[0].1;
        assert!(first.ends_with("question:Capital?\nanswer: Paris. It has 9M people.\nstatements:\n"));
        let second = &sent(&requests[1])[0].1;
        assert!(second.ends_with(
            "context:\nParis is the capital of France.\nstatements:\nParis is the capital.\nParis has 9M people.\nAnswer:\n"
        ));
    }

    #[test]
    fn context_faithfulness_reads_verdicts_as_promptfoo_does() {
        assert_eq!(faithfulness(3, "verdict: yes. verdict: no.", 0.0).expect("ok").score, 1.0 - 2.0 / 3.0);
        assert_eq!(faithfulness(2, "Final verdict for each statement in order: Yes. Yes.", 1.0).expect("ok").reason, "Faithfulness 1.00 is >= 1");
        assert_eq!(faithfulness(0, "anything", 0.5).expect("ok").score, 0.0);
        assert!(faithfulness(2, "I cannot tell", 0.0).is_err(), "no verdict is a grader error");
        let (grade, _) = graded("- {type: context-faithfulness}", "q", json!({"query": "x"}), "a", &["s"]);
        assert!(grade.error.as_deref().is_some_and(|e| e.starts_with("Context is required")), "{grade:?}");
    }
}
