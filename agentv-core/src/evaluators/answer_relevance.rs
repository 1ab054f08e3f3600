//! `answer-relevance` (promptfoo, RAGAS): the grading model writes, three times, the question
//! the answer answers; the score is the mean cosine similarity of their embeddings to the
//! `query` var's (else the prompt's), passing at `threshold` (default 0)
//! (`docs/promptfoo.md#answer-relevance`). It ignores `not-`, as promptfoo does.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::promptfoo_check::{self, PfResult};
use super::promptfoo_graded::{self as graded, Calls, Grading};
use super::{GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "answer-relevance",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["answer-relevance"],
    },
    doc: "How similar (embeddings) the questions a grading model infers from the answer are to the `query` var (RAGAS answer relevance).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    graded::THRESHOLD,
    graded::PROVIDER,
    graded::EMBEDDING_PROVIDER,
    graded::RUBRIC_PROMPT,
];
const KEYS: KeyTable = KeyTable::new("answer-relevance", "An answer-relevance check.", &[OWN]);

/// promptfoo's prompt (`ANSWER_RELEVANCY_GENERATE`, from RAGAS).
pub const PROMPT: &str = include_str!("promptfoo_graded/prompts/answer_relevance.txt");

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let threshold = promptfoo_check::threshold(f, cx).ok()?;
    let grading = Grading::parse_embedding(f, cx)?;
    cx.take_inverse();
    Some(Arc::new(AnswerRelevance {
        threshold: threshold.unwrap_or(0.0),
        grading,
    }))
}

/// An `answer-relevance` assertion as configured.
#[derive(Debug, Clone)]
pub struct AnswerRelevance {
    pub threshold: f64,
    pub grading: Grading,
}

graded::grader_asking!(AnswerRelevance, ask);

impl AnswerRelevance {
    async fn ask(&self, ctx: &GradeContext<'_>, calls: &mut Calls) -> Result<PfResult, String> {
        if ctx.case.question.is_empty() {
            return Err("answer-relevance assertion type must have a prompt".to_owned());
        }
        let input = match graded::vars(ctx).get("query") {
            Some(Value::String(q)) => q.clone(),
            _ => ctx.case.question.clone(),
        };
        let mut scope = Map::new();
        scope.insert("answer".to_owned(), graded::try_parse(ctx.candidate_answer));
        let prompt = graded::render(&self.grading.prompt_or(PROMPT), &scope)?;
        let mut questions = Vec::with_capacity(3);
        for _ in 0..3 {
            questions.push(calls.ask(ctx, &self.grading, &prompt).await?);
        }
        let asked = calls.embed(ctx, &self.grading, &input).await?;
        let mut similarities = Vec::with_capacity(3);
        for q in &questions {
            let inferred = calls.embed(ctx, &self.grading, q).await?;
            similarities.push(graded::cosine(&asked, &inferred)?);
        }
        let similarity = similarities.iter().sum::<f64>() / similarities.len() as f64;
        Ok(result(similarity, self.threshold))
    }
}

/// promptfoo's result for the mean similarity.
pub fn result(similarity: f64, threshold: f64) -> PfResult {
    let pass = similarity >= threshold - graded::EPSILON;
    let how = if pass { "greater" } else { "less" };
    PfResult {
        pass,
        score: similarity,
        reason: format!(
            "Relevance {} is {how} than threshold {}",
            super::js::to_fixed(similarity, 2),
            super::js::number(threshold)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_relevance_words_its_result_as_promptfoo_does() {
        let r = result(0.876, 0.5);
        assert_eq!((r.pass, r.reason.as_str()), (true, "Relevance 0.88 is greater than threshold 0.5"));
        assert!(!result(0.2, 0.5).pass);
        assert!(PROMPT.ends_with("Answer:{{answer}}\nQuestion:"));
    }
}
