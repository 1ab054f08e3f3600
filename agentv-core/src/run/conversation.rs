//! A 4.x conversation case (`mode: conversation`, `agentv-4.md` §1.11): the target is called
//! once per turn with the growing history, each answer is graded by the turn's graders, and the
//! case's own graders (if any) grade the whole transcript at the end.
//!
//! Each turn runs as a case of its own through [`run_case`]: its input is the history so far
//! (windowed with `window_size`), its reference answer the turn's `expected_output`. The case's
//! record is the last one made, with one `turn-N` result per turn and a `conversation` result,
//! and the score combined by `aggregation`.

use std::sync::Arc;

use super::case::run_case;
use super::{Job, RunSetup};
use crate::evaluators::ConfiguredGrader;
use crate::model::{
    Content, Conversation, EvalCase, EvaluationRecord, EvaluatorResult, ExecutionStatus, Message, Role,
    TurnAggregation, Verdict,
};
use crate::providers::ProviderResponse;

/// A job for part of `job`'s conversation: `case`, graded by `graders`, on the same target and
/// trial.
fn part_job(job: &Job, case: EvalCase, graders: Arc<[ConfiguredGrader]>) -> Job {
    Job {
        case,
        graders,
        turn_graders: Arc::from(Vec::new()),
        target: job.target.clone(),
        trial: job.trial,
        links: None,
    }
}

/// Grades the whole transcript with the case's own graders, the transcript standing as the
/// target's answer.
async fn grade_transcript(job: &Job, history: &[Message], setup: &RunSetup) -> EvaluationRecord {
    let transcript = history
        .iter()
        .map(|m| format!("{}: {}", m.role.as_str(), m.text_parts().join("\n")))
        .collect::<Vec<_>>()
        .join("\n\n");
    let case = EvalCase {
        conversation: None,
        workspace: None,
        ..job.case.clone()
    };
    let whole = part_job(job, case, job.graders.clone());
    Box::pin(run_case(&whole, Some(Ok(ProviderResponse::text(transcript))), setup)).await
}

/// Runs every turn of `job`'s conversation and grades the transcript.
pub async fn run(job: &Job, conversation: &Conversation, setup: &RunSetup) -> EvaluationRecord {
    let case = &job.case;
    let threshold = case.pass_threshold(setup.options.threshold);
    let mut history: Vec<Message> = case.input_messages.clone();
    let mut turns: Vec<EvaluatorResult> = Vec::with_capacity(conversation.turns.len());
    let mut last: Option<EvaluationRecord> = None;
    let mut stopped = false;
    for (i, turn) in conversation.turns.iter().enumerate() {
        let graders = job
            .turn_graders
            .get(i)
            .cloned()
            .unwrap_or_else(|| Arc::from(Vec::new()));
        if stopped {
            turns.push(turn_result(i, 0.0, None));
            continue;
        }
        history.extend(turn.input.iter().cloned());
        let turn_case = EvalCase {
            input_messages: window(&history, conversation.window_size),
            expected_messages: turn.expected.clone(),
            reference_answer: turn.expected.last().map(reference).unwrap_or_default(),
            conversation: None,
            // Conversation cases run where their target says (`docs/workspaces.md#limits`).
            workspace: None,
            ..case.clone()
        };
        let ungraded = graders.is_empty();
        let turn_job = part_job(job, turn_case, graders);
        let mut record = Box::pin(run_case(&turn_job, None, setup)).await;
        // A turn with neither graders nor a reference answer scores 1.
        let score = if ungraded && record.execution_status != ExecutionStatus::ExecutionError {
            1.0
        } else {
            record.score
        };
        history.push(Message {
            role: Role::Assistant,
            content: Content::Text(record.candidate_answer.clone()),
            name: None,
            tool_calls: None,
        });
        turns.push(turn_result(i, score, Some(&record)));
        record.score = score;
        stopped = conversation.stop_on_failure && score < threshold;
        let failed = record.execution_status == ExecutionStatus::ExecutionError;
        last = Some(record);
        if failed {
            stopped = true;
        }
    }
    let mut scores: Vec<f64> = turns.iter().map(|t| t.score).collect();
    let mut results = turns;
    if has_own_graders(&job.graders) {
        let record = grade_transcript(job, &history, setup).await;
        scores.push(record.score);
        results.push(EvaluatorResult {
            name: "conversation".to_owned(),
            kind: "conversation".to_owned(),
            ..summary_result(record.score, &record)
        });
        last = Some(record);
    }
    let mut record = last.unwrap_or_else(|| super::case::unhealthy_target_record(job, "the conversation has no turns"));
    record.score = combine(&scores, conversation.aggregation);
    let threshold = crate::evaluators::CaseThreshold {
        own: case.threshold,
        cli: setup.options.threshold,
    };
    record.verdict = crate::evaluators::rules::case_verdict(case.generation, record.score, threshold, &results);
    if results.iter().any(|r| r.error.is_some()) && record.execution_status == ExecutionStatus::Ok {
        record.execution_status = ExecutionStatus::GraderError;
    }
    record.hits = results.iter().flat_map(|r| r.hits.iter().cloned()).collect();
    record.misses = results.iter().flat_map(|r| r.misses.iter().cloned()).collect();
    record.evaluator_results = results;
    record.fill_v4_fields(case.metadata.clone());
    record
}

/// Whether the case has graders of its own for the transcript (the loader gives a conversation
/// case no default grader).
fn has_own_graders(graders: &[ConfiguredGrader]) -> bool {
    !graders.is_empty()
}

/// The system messages and the last `2n` others, in order; everything without a window.
fn window(history: &[Message], size: Option<usize>) -> Vec<Message> {
    let Some(n) = size else {
        return history.to_vec();
    };
    let others = history.iter().filter(|m| m.role != Role::System).count();
    let skip = others.saturating_sub(n.saturating_mul(2));
    let mut seen = 0;
    history
        .iter()
        .filter(|m| {
            if m.role == Role::System {
                return true;
            }
            seen += 1;
            seen > skip
        })
        .cloned()
        .collect()
}

/// The turn's reference answer as text.
fn reference(message: &Message) -> String {
    message.text_parts().join("\n")
}

/// The `turn-N` entry of the record (type `rubrics`, as AgentV 4.x writes it).
fn turn_result(i: usize, score: f64, record: Option<&EvaluationRecord>) -> EvaluatorResult {
    let base = match record {
        Some(record) => summary_result(score, record),
        None => EvaluatorResult {
            misses: vec!["not run: an earlier turn failed".to_owned()],
            ..blank(score)
        },
    };
    EvaluatorResult {
        name: format!("turn-{}", i + 1),
        kind: "rubrics".to_owned(),
        ..base
    }
}

/// One result standing for a whole record: its score, checks and error.
fn summary_result(score: f64, record: &EvaluationRecord) -> EvaluatorResult {
    let assertions: Vec<_> = record
        .evaluator_results
        .iter()
        .flat_map(|r| r.assertions.clone())
        .collect();
    EvaluatorResult {
        hits: record.hits.clone(),
        misses: record.misses.clone(),
        reasoning: record.reasoning.clone(),
        error: record.error.clone(),
        assertions,
        ..blank(score)
    }
}

/// A result with only a score.
fn blank(score: f64) -> EvaluatorResult {
    EvaluatorResult {
        name: String::new(),
        kind: String::new(),
        score,
        weight: 1.0,
        verdict: Verdict::pass_fail(score, crate::model::DEFAULT_THRESHOLD),
        hits: Vec::new(),
        misses: Vec::new(),
        reasoning: None,
        details: None,
        error: None,
        evaluator_provider_request: None,
        assertions: Vec::new(),
    }
}

/// The case score from the turn scores and the conversation's (`aggregation`).
fn combine(scores: &[f64], aggregation: TurnAggregation) -> f64 {
    if scores.is_empty() {
        return 0.0;
    }
    match aggregation {
        TurnAggregation::Mean => scores.iter().sum::<f64>() / scores.len() as f64,
        TurnAggregation::Min => scores.iter().copied().fold(f64::INFINITY, f64::min),
        TurnAggregation::Max => scores.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: Role, text: &str) -> Message {
        Message {
            role,
            content: Content::Text(text.to_owned()),
            name: None,
            tool_calls: None,
        }
    }

    #[test]
    fn turn_scores_combine_by_the_aggregation() {
        for (aggregation, want) in [
            (TurnAggregation::Mean, 0.5),
            (TurnAggregation::Min, 0.0),
            (TurnAggregation::Max, 1.0),
        ] {
            assert_eq!(combine(&[1.0, 0.5, 0.0], aggregation), want, "{aggregation:?}");
        }
        assert_eq!(combine(&[], TurnAggregation::Mean), 0.0);
    }

    #[test]
    fn a_window_keeps_system_messages_and_the_last_exchanges() {
        let history = vec![
            msg(Role::System, "s"),
            msg(Role::User, "u1"),
            msg(Role::Assistant, "a1"),
            msg(Role::User, "u2"),
            msg(Role::Assistant, "a2"),
            msg(Role::User, "u3"),
        ];
        let texts = |w: Vec<Message>| w.iter().flat_map(Message::text_parts).collect::<Vec<_>>().join(",");
        assert_eq!(texts(window(&history, Some(1))), "s,a2,u3");
        assert_eq!(texts(window(&history, Some(2))), "s,a1,u2,a2,u3");
        assert_eq!(texts(window(&history, None)), "s,u1,a1,u2,a2,u3");
    }
}
