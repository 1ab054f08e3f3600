//! Comparing the rows of a promptfoo test (`docs/promptfoo.md#comparing-rows`): `select-best`
//! and `max-score` grade the outputs of every prompt × provider of a test together, so a row
//! with one of them is held until the run's rows are all answered, then compared with the
//! other rows of its test (in promptfoo's row order), re-scored as promptfoo merges the
//! comparison, and written. A row that could not run is not compared and never wins.

use std::time::Duration;

use serde_json::Value;

use super::{Job, RunSetup};
use crate::evaluators::across_rows::RowView;
use crate::evaluators::{self, CaseThreshold, GradeContext, GradeVerdict};
use crate::model::{EvaluationRecord, EvaluatorResult, ExecutionStatus, Generation, Verdict};

/// A row waiting for the other rows of its test.
pub(super) struct Held {
    pub job: Job,
    pub record: EvaluationRecord,
    pub elapsed: Duration,
}

/// Whether `job`'s row is compared with the other rows of its test.
pub(super) fn compares(job: &Job) -> bool {
    job.graders.iter().any(|g| g.grader.across_rows().is_some())
}

/// The held rows compared test by test, in the order their tests were first answered.
pub(super) async fn settle(held: Vec<Held>, setup: &RunSetup) -> Vec<(EvaluationRecord, Duration)> {
    // Found by key, kept in first-seen order: a large config holds a group per test.
    let mut index: std::collections::HashMap<GroupKey, usize> = std::collections::HashMap::new();
    let mut groups: Vec<Vec<Held>> = Vec::new();
    for row in held {
        let slot = *index.entry(group_key(&row.job)).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[slot].push(row);
    }
    let mut out = Vec::new();
    for mut rows in groups {
        rows.sort_by_key(|r| row_order(&r.record));
        compare_group(&mut rows, setup).await;
        out.extend(rows.into_iter().map(|r| (r.record, r.elapsed)));
    }
    out
}

/// The rows of one test: its config, its index in promptfoo's expanded order, the repeat.
type GroupKey = (std::path::PathBuf, u64, Option<u32>);

fn group_key(job: &Job) -> GroupKey {
    let test_index = job
        .case
        .metadata
        .as_ref()
        .and_then(|m| m.get("promptfoo"))
        .and_then(|k| k.get("test_index"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    (job.case.source.file.to_path_buf(), test_index, job.trial)
}

/// promptfoo's `promptIdx`: providers outermost, then prompts.
fn row_order(record: &EvaluationRecord) -> u64 {
    record
        .v4
        .metadata
        .as_ref()
        .and_then(|m| m.get("promptfoo"))
        .and_then(Value::as_object)
        .map_or(0, |keys| crate::report::promptfoo::prompt_idx(keys, &record.target).0)
}

/// Grades every comparison of one test's rows and merges it into each row.
async fn compare_group(rows: &mut [Held], setup: &RunSetup) {
    let answered: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].record.execution_status != ExecutionStatus::ExecutionError)
        .collect();
    let Some(&first) = answered.first() else {
        return;
    };
    let across: Vec<usize> = rows[first]
        .job
        .graders
        .iter()
        .enumerate()
        .filter(|(_, g)| g.grader.across_rows().is_some())
        .map(|(i, _)| i)
        .collect();
    for &gi in &across {
        let others: Vec<Vec<EvaluatorResult>> = answered.iter().map(|&i| other_results(&rows[i])).collect();
        let views: Vec<RowView<'_>> = answered
            .iter()
            .zip(&others)
            .map(|(&i, results)| RowView {
                answer: &rows[i].record.candidate_answer,
                results,
            })
            .collect();
        let grades = {
            let lead = &rows[first];
            let Some(comparison) = lead.job.graders.get(gi).and_then(|g| g.grader.across_rows()) else {
                continue;
            };
            let (trace, summary, metrics): (
                Vec<crate::model::TraceEvent>,
                crate::model::TraceSummary,
                crate::model::ExecutionMetrics,
            ) = Default::default();
            let ctx = GradeContext {
                case: &lead.job.case,
                attempt: lead.record.attempt,
                candidate_answer: &lead.record.candidate_answer,
                output_messages: &[],
                trace: &trace,
                trace_summary: &summary,
                metrics: &metrics,
                finish_reason: None,
                logprobs: None,
                target: &lead.job.target,
                run: &setup.context,
                workspace: None,
            };
            comparison.compare(&ctx, &views).await
        };
        drop(views);
        for (&i, grade) in answered.iter().zip(grades) {
            let row = &mut rows[i];
            let Some(grader) = row.job.graders.get(gi) else {
                continue;
            };
            let passed = grade.error.is_none() && grade.verdict == Some(GradeVerdict::Pass);
            let mut result = evaluators::result_of(grader, grade, Generation::Promptfoo).result;
            result.verdict = if passed { Verdict::Pass } else { Verdict::Fail };
            if let Some(slot) = row.record.evaluator_results.get_mut(gi) {
                *slot = result;
            }
        }
    }
    for &i in &answered {
        rescore(&mut rows[i], setup.options.threshold);
    }
}

/// A row's results other than its comparisons.
fn other_results(row: &Held) -> Vec<EvaluatorResult> {
    row.job
        .graders
        .iter()
        .zip(&row.record.evaluator_results)
        .filter(|(g, _)| g.grader.across_rows().is_none())
        .map(|(_, r)| r.clone())
        .collect()
}

/// The row's score and verdict as promptfoo merges a comparison: the row as its other
/// assertions grade it, failed (with the comparison's score) when a comparison fails.
fn rescore(row: &mut Held, cli_threshold: Option<f64>) {
    let (graders, mut results): (Vec<_>, Vec<_>) = row
        .job
        .graders
        .iter()
        .zip(&row.record.evaluator_results)
        .filter(|(g, _)| g.grader.across_rows().is_none())
        .map(|(g, r)| (g.clone(), r.clone()))
        .unzip();
    let crashed = vec![false; results.len()];
    let threshold = CaseThreshold {
        own: row.job.case.threshold,
        cli: cli_threshold,
    };
    let only_comparisons = results.is_empty();
    let scored = evaluators::score_case(&graders, &mut results, &crashed, Generation::Promptfoo, threshold);
    let record = &mut row.record;
    let (mut score, mut verdict, mut status) = (scored.score, scored.verdict, scored.status);
    // A row whose only assertions are comparisons has nothing weighed: promptfoo scores it 0.
    if only_comparisons {
        score = 0.0;
    }
    for (g, r) in row.job.graders.iter().zip(&record.evaluator_results) {
        if g.grader.across_rows().is_none() {
            continue;
        }
        if r.error.is_some() {
            status = ExecutionStatus::GraderError;
            score = 0.0;
            verdict = Verdict::Fail;
        } else if r.verdict != Verdict::Pass {
            score = r.score;
            verdict = Verdict::Fail;
        }
    }
    record.score = score;
    record.verdict = verdict;
    record.execution_status = status;
    record.error = scored.error;
    record.hits = record
        .evaluator_results
        .iter()
        .flat_map(|r| r.hits.iter().cloned())
        .collect();
    record.misses = super::case::misses_counted_first(&record.evaluator_results);
    record.reasoning = super::case::combined_reasoning(&record.evaluator_results);
}
