//! A case's score, verdict and status from its graders' results
//! (`docs/architecture.md#generations`).
//!
//! The same steps serve every file generation; what differs (the verdict, the score of a case
//! without graders, which grader failures are errors) is in [`super::rules`]. In order:
//!
//! 1. (`negate` has already turned a grader's result around when it ran;)
//! 2. a grader whose verdict is `skip` could not grade: the case scores 0 and is a grader
//!    error whose `error` names it (`agentv-4.md` §3.3);
//! 3. a `required` grader below its gate (`min_score`, else the case's threshold) zeroes the
//!    case (§3.1);
//! 4. otherwise the score is the weighted mean of the grader scores (weight 0 excludes a grader;
//!    no weight at all gives 0).
//!
//! A grader that could not grade (its result carries `error`) counts as 0 in the mean; in a 2.x
//! file it also makes the case a grader error. In a 4.x file a `skip` does, and so does a
//! grader whose process crashed (died by a signal, exited non-zero with output on stderr, could
//! not start, timed out); another failed 4.x grader (an LLM reply that did not parse) is a
//! quality failure, as AgentV 4.x counts it.

use super::grader::ConfiguredGrader;
use super::rules::{self, CaseThreshold};
use crate::model::{EvaluatorResult, ExecutionStatus, Generation, Verdict};

/// What a case's graders amount to.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseScore {
    pub score: f64,
    pub verdict: Verdict,
    pub status: ExecutionStatus,
    /// Why the case could not be graded, when a grader skipped.
    pub error: Option<String>,
}

/// Scores a case from its graders and their results (same order; `negate` was applied when
/// each grader ran, [`super::negate`]); `crashed[i]` says result `i`'s process crashed. The
/// generation's rules ([`super::rules`]) read the score, the verdict and the status.
pub fn score_case(
    graders: &[ConfiguredGrader],
    results: &mut [EvaluatorResult],
    crashed: &[bool],
    generation: Generation,
    threshold: CaseThreshold,
) -> CaseScore {
    let skipped: Vec<&EvaluatorResult> = results.iter().filter(|r| r.verdict == Verdict::Skip).collect();
    let error = skip_message(&skipped);
    let gated = graders
        .iter()
        .zip(results.iter())
        .any(|(g, r)| g.required && r.score < g.min_score.unwrap_or(threshold.value()));
    let score = if !skipped.is_empty() || gated {
        0.0
    } else {
        rules::case_score(generation, results)
    };
    let verdict = rules::case_verdict(generation, score, threshold, results);
    // A crashed process is a grader error in every generation.
    let could_not_grade = results
        .iter()
        .enumerate()
        .any(|(i, r)| rules::could_not_grade(generation, r) || crashed.get(i).copied().unwrap_or(false));
    let status = if could_not_grade {
        ExecutionStatus::GraderError
    } else {
        ExecutionStatus::Ok
    };
    CaseScore {
        score,
        verdict,
        status,
        error,
    }
}

/// The case's `error` when graders skipped: `<name>: <first failed check>`, several joined by
/// ` | ` after `Graders skipped: `.
fn skip_message(skipped: &[&EvaluatorResult]) -> Option<String> {
    let each: Vec<String> = skipped
        .iter()
        .map(|r| {
            let why = r
                .assertions
                .iter()
                .find(|a| !a.passed)
                .map(|a| a.text.clone())
                .or_else(|| r.misses.first().cloned())
                .or_else(|| r.error.clone())
                .unwrap_or_default();
            format!("{}: {why}", r.name)
        })
        .collect();
    match each.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        many => Some(format!("Graders skipped: {}", many.join(" | "))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::Assertion;

    fn at(threshold: f64) -> CaseThreshold {
        CaseThreshold {
            own: Some(threshold),
            cli: None,
        }
    }

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
            assertions: Vec::new(),
        }
    }

    fn grader(required: bool, min_score: Option<f64>, negate: bool) -> ConfiguredGrader {
        let mut g = super::super::list::default_graders()[0].clone();
        g.required = required;
        g.min_score = min_score;
        g.negate = negate;
        g.grader = Arc::clone(&g.grader);
        g
    }

    /// The worked cases of the reference's gates suite (`agentv-4.md` §3.1, quirks 4 and 12):
    /// (graders as (score, required, min_score, negate), case threshold, case score).
    #[test]
    fn required_gate_follows_agentv_4() {
        type G = (f64, bool, Option<f64>, bool);
        let cases: &[(&str, &[G], f64, f64)] = &[
            (
                "required passes",
                &[(1.0, true, None, false), (0.0, false, None, false)],
                0.8,
                0.5,
            ),
            (
                "required fails",
                &[(0.0, true, None, false), (1.0, false, None, false)],
                0.8,
                0.0,
            ),
            (
                "min_score met",
                &[(0.5, true, Some(0.5), false), (1.0, false, None, false)],
                0.8,
                0.75,
            ),
            (
                "min_score missed",
                &[(0.5, true, Some(0.6), false), (1.0, false, None, false)],
                0.8,
                0.0,
            ),
            (
                "min_score alone does nothing",
                &[(0.5, false, Some(0.9), false), (1.0, false, None, false)],
                0.8,
                0.75,
            ),
            (
                "gate at the case threshold",
                &[(0.5, true, None, false), (1.0, false, None, false)],
                0.5,
                0.75,
            ),
            (
                "gate at 0.8 by default",
                &[(0.5, true, None, false), (1.0, false, None, false)],
                0.8,
                0.0,
            ),
        ];
        for (name, graders, threshold, want) in cases {
            let configured: Vec<ConfiguredGrader> = graders.iter().map(|g| grader(g.1, g.2, g.3)).collect();
            let mut results: Vec<EvaluatorResult> = graders.iter().map(|g| result(g.0, 1.0)).collect();
            let got = score_case(&configured, &mut results, &[], Generation::V4, at(*threshold));
            assert!((got.score - want).abs() < 1e-9, "{name}: {} != {want}", got.score);
            assert_eq!(got.status, ExecutionStatus::Ok, "{name}");
            let verdict = if got.score >= *threshold {
                Verdict::Pass
            } else {
                Verdict::Fail
            };
            assert_eq!(got.verdict, verdict, "{name}");
        }
    }

    #[test]
    fn verdicts_follow_the_files_generation() {
        let g = [grader(false, None, false)];
        for (score, threshold, v2, v4) in [
            (0.7, 0.8, Verdict::Borderline, Verdict::Fail),
            (0.7, 0.6, Verdict::Borderline, Verdict::Pass),
            (0.5, 0.5, Verdict::Fail, Verdict::Pass),
            (0.9, 0.95, Verdict::Pass, Verdict::Fail),
        ] {
            let got = score_case(&g, &mut [result(score, 1.0)], &[], Generation::V2, at(threshold));
            assert_eq!(got.verdict, v2, "2.x {score}");
            let got = score_case(&g, &mut [result(score, 1.0)], &[], Generation::V4, at(threshold));
            assert_eq!(got.verdict, v4, "4.x {score} at {threshold}");
        }
    }

    #[test]
    fn a_skipped_grader_zeroes_the_case_and_names_itself() {
        let g = [
            grader(false, None, false),
            grader(false, None, false),
            grader(false, None, false),
        ];
        let mut skipped = result(0.0, 1.0);
        skipped.name = "judge".into();
        skipped.verdict = Verdict::Skip;
        skipped.error = Some("Grader parse failure after 3 attempts: bad".into());
        skipped.assertions = vec![Assertion::new("Grader parse failure after 3 attempts: bad", false)];
        let mut results = vec![result(1.0, 1.0), skipped.clone(), result(1.0, 1.0)];
        let got = score_case(&g, &mut results, &[], Generation::V4, at(0.8));
        assert_eq!(got.score, 0.0);
        assert_eq!(got.status, ExecutionStatus::GraderError);
        assert_eq!(
            got.error.as_deref(),
            Some("judge: Grader parse failure after 3 attempts: bad")
        );
        let mut other = skipped.clone();
        other.name = "second".into();
        let mut results = vec![result(1.0, 1.0), skipped, other];
        let got = score_case(&g, &mut results, &[], Generation::V4, at(0.8));
        assert_eq!(
            got.error.as_deref(),
            Some(
                "Graders skipped: judge: Grader parse failure after 3 attempts: bad | second: Grader parse failure after 3 attempts: bad"
            )
        );
    }

    #[test]
    fn a_grader_error_counts_as_zero_and_marks_the_case() {
        let g = [grader(false, None, false), grader(false, None, false)];
        let mut failed = result(0.0, 1.0);
        failed.error = Some("boom".into());
        let got = score_case(
            &g,
            &mut [result(1.0, 1.0), failed.clone()],
            &[],
            Generation::V2,
            at(0.8),
        );
        assert_eq!(got.score, 0.5);
        assert_eq!(got.status, ExecutionStatus::GraderError);
        assert_eq!(got.error, None);
        let got = score_case(
            &g,
            &mut [result(1.0, 1.0), failed.clone()],
            &[],
            Generation::V4,
            at(0.8),
        );
        assert_eq!(got.score, 0.5);
        assert_eq!(got.status, ExecutionStatus::Ok, "4.x: a quality failure");
        let got = score_case(
            &g,
            &mut [result(1.0, 1.0), failed],
            &[false, true],
            Generation::V4,
            at(0.8),
        );
        assert_eq!(got.score, 0.5, "a crashed 4.x grader scores 0 as AgentV records it");
        assert_eq!(
            got.status,
            ExecutionStatus::GraderError,
            "4.x: a crashed process is a grader error"
        );
    }
}
