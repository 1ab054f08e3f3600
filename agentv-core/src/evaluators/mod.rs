//! Graders: each turns an answer into a score in [0, 1] with hits, misses and reasoning.

pub mod code_judge;
pub mod keywords;
pub mod llm_judge;
pub mod tool_trajectory;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::load::Secrets;
use crate::model::{
    EvalCase, EvaluatorKind, EvaluatorResult, EvaluatorSpec, ExecutionMetrics, OutputMessage, TraceEvent, TraceSummary,
    Verdict,
};
use crate::providers::ResolvedTarget;

/// Run-wide settings graders need.
#[derive(Debug, Clone)]
pub struct GradeSettings {
    /// The run's `--timeout`: each provider call, and code judges without their own.
    pub timeout: Duration,
    /// Variables from `.env` files, for judge processes.
    pub child_env: Arc<[(String, String)]>,
    pub secrets: Secrets,
    /// `--dump-prompts`: where judge requests are written too.
    pub dump_prompts: Option<std::path::PathBuf>,
}

/// Everything known about one answered case.
pub struct EvalContext<'a> {
    pub case: &'a EvalCase,
    pub attempt: u32,
    pub candidate_answer: &'a str,
    pub output_messages: &'a [OutputMessage],
    pub trace: &'a [TraceEvent],
    pub trace_summary: &'a TraceSummary,
    pub metrics: &'a ExecutionMetrics,
    pub target: &'a ResolvedTarget,
    pub settings: &'a GradeSettings,
}

/// What one evaluator concluded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grade {
    pub score: f64,
    pub hits: Vec<String>,
    pub misses: Vec<String>,
    pub reasoning: Option<String>,
    pub details: Option<Map<String, Value>>,
    /// Set when the evaluator could not grade (D8).
    pub error: Option<String>,
    /// The error is also listed as the miss `Evaluator '<name>' failed: <error>`, as the spec
    /// reports a grader that crashed. Invalid judge output is not: the spec wants it scored 0
    /// with empty hits and misses, the reason kept in `error` only.
    pub error_is_miss: bool,
    /// What was sent to a judge, for the results file.
    pub request: Option<Value>,
}

impl Grade {
    /// A grade for an evaluator that could not grade: score 0 and `error` set, no miss.
    pub fn failed(error: impl Into<String>) -> Self {
        Self {
            error: Some(error.into()),
            ..Self::default()
        }
    }

    /// Like [`Grade::failed`], for a grader that crashed (could not start, exited non-zero,
    /// timed out): the error is also listed as a miss.
    pub fn crashed(error: impl Into<String>) -> Self {
        Self {
            error_is_miss: true,
            ..Self::failed(error)
        }
    }

    /// A score with its hits and misses.
    pub fn scored(score: f64, hits: Vec<String>, misses: Vec<String>) -> Self {
        Self {
            score,
            hits,
            misses,
            ..Self::default()
        }
    }
}

/// A grader. Implementations must not panic on any answer: failures become [`Grade::failed`].
pub trait Evaluator: Send + Sync {
    fn evaluate<'a>(&'a self, ctx: &'a EvalContext<'a>) -> BoxFuture<'a, Grade>;
}

impl EvaluatorKind {
    /// The grader for this configuration.
    pub fn evaluator(&self) -> &dyn Evaluator {
        match self {
            Self::LlmJudge(spec) => spec,
            Self::CodeJudge(spec) => spec,
            Self::ToolTrajectory(spec) => spec,
            Self::Keywords(spec) => spec,
        }
    }
}

/// Runs one evaluator and records its result. (Secrets are redacted where results leave the
/// run: the JSONL writer and the terminal.)
pub async fn evaluate(spec: &EvaluatorSpec, ctx: &EvalContext<'_>) -> EvaluatorResult {
    let grade = spec.kind.evaluator().evaluate(ctx).await;
    // Graders return scores in [0, 1] (the LLM judge clamps, the code judge rejects anything
    // else as a grader error, D21); this only guards the weighted mean against a stray value.
    let score = agentv_eval_sdk::clamp_score(grade.score);
    let mut misses = grade.misses;
    if let Some(e) = &grade.error
        && grade.error_is_miss
        && misses.is_empty()
    {
        misses.push(agentv_eval_sdk::failure_miss(&spec.name, e));
    }
    EvaluatorResult {
        name: spec.name.clone(),
        kind: spec.kind.type_name().to_owned(),
        score,
        weight: spec.weight,
        verdict: Verdict::from_score(score),
        hits: grade.hits,
        misses,
        reasoning: grade.reasoning,
        details: grade.details,
        error: grade.error,
        evaluator_provider_request: grade.request,
    }
}

/// Weighted mean of evaluator scores (D7): weight 0 excludes an evaluator; all-zero → 0.
pub fn aggregate(results: &[EvaluatorResult]) -> f64 {
    let total: f64 = results.iter().map(|r| r.weight).sum();
    if total <= 0.0 {
        return 0.0;
    }
    results.iter().map(|r| r.weight * r.score).sum::<f64>() / total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(score: f64, weight: f64) -> EvaluatorResult {
        EvaluatorResult {
            name: "e".into(),
            kind: "keywords".into(),
            score,
            weight,
            verdict: Verdict::from_score(score),
            hits: vec![],
            misses: vec![],
            reasoning: None,
            details: None,
            error: None,
            evaluator_provider_request: None,
        }
    }

    #[test]
    fn weighted_mean_follows_the_spec() {
        let cases: &[(&[(f64, f64)], f64)] = &[
            (&[(0.8, 1.0), (0.4, 1.0)], 0.6),
            (&[(0.8, 3.0), (0.4, 1.0)], 0.7),
            (&[(0.8, 1.0), (0.0, 0.0)], 0.8),
            (&[(0.8, 0.0), (0.4, 0.0)], 0.0),
            (&[(1.0, 1.0), (0.0, 1.0)], 0.5),
            (&[], 0.0),
        ];
        for (inputs, want) in cases {
            let results: Vec<EvaluatorResult> = inputs.iter().map(|(s, w)| result(*s, *w)).collect();
            let got = aggregate(&results);
            assert!((got - want).abs() < 1e-12, "{inputs:?}: {got} != {want}");
        }
    }
}
