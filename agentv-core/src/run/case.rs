//! One case: prompt → provider (with timeout retries) → trace and metrics → evaluators → record.

use serde_json::{Value, json};

use super::{Job, RunSetup};
use crate::evaluators::{self, GradeContext};
use crate::model::{EvalCase, EvaluationRecord, EvaluatorResult, ExecutionStatus, TraceSummary};
use crate::prompt::{self, PromptInputs};
use crate::providers::{ProviderError, ProviderRequest, ProviderResponse};

/// The provider request for attempt `attempt` of `job`.
pub fn request_for(job: &Job, attempt: u32) -> ProviderRequest {
    let inputs = prompt::build(&job.case, job.target.provider.prompt_mode());
    make_request(job, &inputs, attempt, None, None)
}

fn make_request(
    job: &Job,
    inputs: &PromptInputs,
    attempt: u32,
    workspace: Option<&std::path::Path>,
    container: Option<crate::model::workspace::AgentContainer>,
) -> ProviderRequest {
    let case = &job.case;
    ProviderRequest {
        eval_id: case.id.clone(),
        attempt,
        question: inputs.question.clone(),
        guidelines: inputs.guidelines.clone(),
        guideline_files: case.guidelines.iter().map(|g| g.path.clone()).collect(),
        input_files: case.input_files.clone(),
        chat_prompt: inputs.chat_prompt.clone(),
        system_prompt: crate::evaluators::rules::target_system_prompt(case.generation).map(str::to_owned),
        temperature: None,
        eval_dir: Some(case.eval_dir().to_path_buf()),
        workspace: workspace.map(std::path::Path::to_path_buf),
        container,
        tools: super::tool_loop::first_request(job),
        vars: case
            .metadata
            .as_ref()
            .and_then(|m| m.get("promptfoo"))
            .and_then(|keys| keys.get("vars"))
            .and_then(Value::as_object)
            .cloned(),
    }
}

/// Calls the provider; a timeout is retried up to `max_retries` times. Returns the result
/// and the attempt that produced it. With `docker.agent` each attempt runs in a container of
/// its own, removed when the attempt ends (`docs/workspaces.md#containers`).
async fn call_with_retries(
    job: &Job,
    inputs: &PromptInputs,
    setup: &RunSetup,
    mut session: Option<&mut crate::workspace::Session>,
) -> (Result<ProviderResponse, ProviderError>, u32) {
    let mut attempt = 1;
    // `--dump-prompts` writes every request: the first as `<id>-<attempt>`, the later steps of
    // a tool loop as `<id>-<attempt>-step-<n>`.
    let dump = |request: &ProviderRequest, step: u32| {
        if let Some(dumps) = &setup.context.dump_prompts {
            let suffix = (step > 1).then(|| format!("step-{step}"));
            let dump_for = crate::report::DumpFor {
                eval_file: &job.case.source.file,
                grader: None,
                suffix: suffix.as_deref(),
            };
            crate::report::dump_prompt(
                dumps,
                dump_for,
                job.target.provider.as_ref(),
                request,
                &setup.context.secrets,
            );
        }
    };
    let in_container = job.target.provider.kind().entry().container;
    loop {
        let container = match session.as_deref_mut() {
            Some(s) if in_container => match s.start_agent(&job.case.input_files).await {
                Ok(container) => container,
                Err(e) => return (Err(ProviderError::Workspace(e.to_string())), attempt),
            },
            _ => None,
        };
        let workspace = session.as_deref().map(crate::workspace::Session::path);
        let request = make_request(job, inputs, attempt, workspace, container);
        dump(&request, 1);
        let result = super::tool_loop::answer(job, &request, setup, &dump).await;
        if let Some(s) = session.as_deref_mut() {
            s.stop_agent().await;
        }
        match (result, attempt.checked_add(1)) {
            (Err(ProviderError::Timeout(_)), Some(next)) if attempt <= setup.options.max_retries => attempt = next,
            (other, _) => return (other, attempt),
        }
    }
}

/// Runs one case to its record. Never fails: a provider error becomes an error record.
pub async fn run_case(
    job: &Job,
    prefetched: Option<Result<ProviderResponse, ProviderError>>,
    setup: &RunSetup,
) -> EvaluationRecord {
    let case = &job.case;
    if let Some(conversation) = &case.conversation {
        return super::conversation::run(job, conversation, setup).await;
    }
    // A batched answer was made outside any workspace, as AgentV 4.x makes it.
    let mut session = match open_session(job, setup, prefetched.is_some()).await {
        Ok(session) => session,
        Err(record) => return record,
    };
    let inputs = prompt::build(case, job.target.provider.prompt_mode());
    let (result, attempt) = match prefetched {
        Some(result) => (result, 1),
        None => call_with_retries(job, &inputs, setup, session.as_mut()).await,
    };
    let mut record = empty_record(job, attempt);
    log_request(job, &inputs, &result, &mut record);
    let result = super::promptfoo::after_call(case, result, &setup.context).await;
    let response = match result {
        Ok(response) => response,
        Err(e) => return call_failed(record, case, &e, session, setup),
    };
    let mut warnings = response.warnings.clone();
    let trace = crate::trace::resolve(&response, &mut warnings).await;
    let mut summary = TraceSummary::from_events(&trace);
    let metrics = crate::trace::metrics(&response, &summary, &setup.options.exploration_tools);
    // AgentV 2.x judges read the figures in the summary (`docs/judges.md`).
    summary.token_usage = metrics.token_usage;
    summary.cost_usd = metrics.cost_usd;
    summary.duration_ms = metrics.duration_ms;
    let candidate = agentv_eval_sdk::last_assistant_text(&response.output_messages).unwrap_or_default();
    for w in &warnings {
        tracing::warn!(eval_id = %case.id, "{w}");
    }
    let view = match session.as_mut() {
        Some(s) => Some(s.after_agent().await),
        None => None,
    };
    let ctx = GradeContext {
        case,
        attempt,
        candidate_answer: &candidate,
        output_messages: &response.output_messages,
        trace: &trace,
        trace_summary: &summary,
        metrics: &metrics,
        finish_reason: response.finish_reason.as_deref(),
        logprobs: response.logprobs.as_deref(),
        target: &job.target,
        run: &setup.context,
        workspace: view.as_ref(),
    };
    let (results, scored) = grade(job, &ctx, setup.options.threshold).await;
    record.score = scored.score;
    record.verdict = scored.verdict;
    record.hits = results.iter().flat_map(|r| r.hits.iter().cloned()).collect();
    record.misses = misses_counted_first(&results);
    record.reasoning = combined_reasoning(&results);
    record.candidate_answer = candidate;
    record.execution_status = scored.status;
    record.error = scored.error;
    record.evaluator_results = results;
    record.trace_summary = Some(summary);
    record.execution_metrics = (!metrics.is_empty()).then_some(metrics);
    record_trace(&mut record, trace, response.output_messages, &setup.context.secrets);
    if let Some(session) = session {
        session.finish(&mut record);
    }
    finish(record, case)
}

/// The case's workspace (`docs/workspaces.md`), unless the run has none or the answer came
/// from a batch; an error record when it cannot be made.
async fn open_session(
    job: &Job,
    setup: &RunSetup,
    prefetched: bool,
) -> Result<Option<crate::workspace::Session>, EvaluationRecord> {
    let Some(workspaces) = setup.workspaces.as_ref().filter(|_| !prefetched) else {
        return Ok(None);
    };
    workspaces.open(&job.case, &job.target.name).await.map_err(|e| {
        let mut record = execution_error(empty_record(job, 1), &job.case, e.message);
        record.failure_reason_code = Some(e.reason.to_owned());
        record
    })
}

/// The record of a case whose target could not answer; a timed-out agent's workspace is
/// discarded, any other kept as the run keeps workspaces.
fn call_failed(
    record: EvaluationRecord,
    case: &EvalCase,
    e: &ProviderError,
    session: Option<crate::workspace::Session>,
    setup: &RunSetup,
) -> EvaluationRecord {
    let message = setup.context.secrets.redact(&e.to_string()).into_owned();
    let mut record = execution_error(record, case, message);
    match session {
        Some(s) if matches!(e, ProviderError::Timeout(_)) => s.discard(&mut record),
        Some(s) => s.finish(&mut record),
        None => {}
    }
    record
}

/// Puts the request sent (with the response's metadata) in the record, under the key of the
/// target's kind.
fn log_request(
    job: &Job,
    inputs: &PromptInputs,
    result: &Result<ProviderResponse, ProviderError>,
    record: &mut EvaluationRecord,
) {
    let mut provider_request = provider_request(job, inputs);
    if let Ok(response) = result
        && let Some(metadata) = &response.metadata
        && let Some(obj) = provider_request.as_object_mut()
    {
        // Log paths, HTTP attempts, session ids: where to look when an answer surprises.
        obj.insert("response_metadata".to_owned(), Value::Object(metadata.clone()));
    }
    if job.target.provider.kind().is_agent() {
        record.agent_provider_request = Some(provider_request);
    } else {
        record.lm_provider_request = Some(provider_request);
    }
}

/// Every grader's result, in order, and the case's score from them
/// (`docs/architecture.md#scoring`).
async fn grade(
    job: &Job,
    ctx: &GradeContext<'_>,
    cli_threshold: Option<f64>,
) -> (Vec<EvaluatorResult>, evaluators::CaseScore) {
    let mut results = Vec::with_capacity(job.graders.len());
    let mut crashed = Vec::with_capacity(job.graders.len());
    for grader in job.graders.iter() {
        let since = super::judge_wave::calls_so_far();
        let mut evaluated = evaluators::evaluate(grader, ctx).await;
        super::judge_wave::mark(&mut evaluated.result, since);
        results.push(evaluated.result);
        crashed.push(evaluated.crashed);
    }
    let scored = evaluators::score_case(
        &job.graders,
        &mut results,
        &crashed,
        job.case.generation,
        evaluators::CaseThreshold {
            own: job.case.threshold,
            cli: cli_threshold,
        },
    );
    (results, scored)
}

/// Stamps the record and fills the keys a 4.x reader looks for.
fn finish(mut record: EvaluationRecord, case: &EvalCase) -> EvaluationRecord {
    record.timestamp = now();
    record.fill_v4_fields(case.metadata.clone());
    record
}

/// Keeps the case's full trace and output messages in its record, within the size cap
/// (`docs/results.md#the-record-keys-trace-and-output_messages`). Output messages that are only
/// the answer (one assistant message holding `candidate_answer`, no tool calls) are left out:
/// the record already has them.
fn record_trace(
    record: &mut EvaluationRecord,
    trace: Vec<crate::model::TraceEvent>,
    messages: Vec<crate::model::OutputMessage>,
    secrets: &crate::redact::Secrets,
) {
    let only_the_answer = match messages.as_slice() {
        [] => true,
        [m] => {
            m.tool_calls.is_empty()
                && m.role == "assistant"
                && m.text().is_some_and(|t| t == record.candidate_answer)
                && m.metadata.is_none()
        }
        _ => false,
    };
    record.trace = (!trace.is_empty()).then_some(trace);
    record.output_messages = (!only_the_answer).then_some(messages);
    crate::report::cap_trace(record, crate::report::MAX_TRACE_BYTES, secrets);
}

/// The record of a case whose target was never called because it failed its healthcheck.
pub fn unhealthy_target_record(job: &Job, message: &str) -> EvaluationRecord {
    execution_error(empty_record(job, 1), &job.case, message.to_owned())
}

/// The record of a case not run because a case it depends on ended in an execution error
/// (`docs/workspaces.md#dependencies`): attempt 0, `failure_reason_code: dependency_failed`.
pub fn dependency_failed_record(job: &Job, message: &str) -> EvaluationRecord {
    let mut record = execution_error(empty_record(job, 0), &job.case, message.to_owned());
    record.failure_reason_code = Some("dependency_failed".to_owned());
    record
}

/// The record of a case that was not run because the run's cost reached `--budget-usd`: an
/// execution error (the target did not answer) with `failure_reason_code: budget_exceeded` and
/// attempt 0 (`docs/running.md#spend-guard`).
pub fn not_run_record(job: &Job, message: &str) -> EvaluationRecord {
    let mut record = execution_error(empty_record(job, 0), &job.case, message.to_owned());
    record.failure_reason_code = Some(agentv_eval_sdk::NOT_RUN_BUDGET.to_owned());
    record
}

/// A record for `job` with nothing answered or graded yet.
fn empty_record(job: &Job, attempt: u32) -> EvaluationRecord {
    let case = &job.case;
    EvaluationRecord {
        conversation_id: case.conversation_id.clone(),
        attempt,
        trial: job.trial,
        ..EvaluationRecord::empty(case.id.clone(), case.dataset.to_string(), job.target.name.clone())
    }
}

/// Finishes `record` as a case the target could not answer: score 0, `error` set, and the
/// spec's `candidate_answer` and miss wording.
fn execution_error(mut record: EvaluationRecord, case: &EvalCase, message: String) -> EvaluationRecord {
    record.execution_status = ExecutionStatus::ExecutionError;
    record.candidate_answer = format!("Error occurred: {message}");
    record.misses = vec![format!("Error: {message}")];
    record.error = Some(message);
    finish(record, case)
}

/// The misses of every grader, those that count toward the score (weight above 0) first: a
/// weight-0 grader is reported, but what failed the case is what the console shows first.
pub(super) fn misses_counted_first(results: &[EvaluatorResult]) -> Vec<String> {
    let (counted, uncounted): (Vec<&EvaluatorResult>, Vec<&EvaluatorResult>) =
        results.iter().partition(|r| r.weight > 0.0);
    counted
        .into_iter()
        .chain(uncounted)
        .flat_map(|r| r.misses.iter().cloned())
        .collect()
}

pub(super) fn combined_reasoning(results: &[EvaluatorResult]) -> Option<String> {
    let parts: Vec<String> = results
        .iter()
        .filter_map(|r| r.reasoning.as_ref().map(|t| format!("{}: {t}", r.name)))
        .collect();
    (!parts.is_empty()).then(|| parts.join(" | "))
}

/// What was sent, as recorded in results: agents get `{question, guideline_paths}`; others
/// `{chat_prompt}` for multi-turn inputs, else `{question, guidelines}`.
fn provider_request(job: &Job, inputs: &PromptInputs) -> Value {
    if job.target.provider.kind().is_agent() {
        let guideline_paths: Vec<String> = job
            .case
            .guidelines
            .iter()
            .map(|g| g.path.display().to_string())
            .collect();
        return json!({ "question": inputs.question, "guideline_paths": guideline_paths });
    }
    match &inputs.chat_prompt {
        Some(chat) => json!({ "chat_prompt": chat }),
        None => json!({ "question": inputs.question, "guidelines": inputs.guidelines }),
    }
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Verdict;

    fn graded(miss: &str, weight: f64) -> EvaluatorResult {
        EvaluatorResult {
            name: miss.into(),
            kind: "keywords".into(),
            score: 0.0,
            weight,
            verdict: Verdict::Fail,
            hits: vec![],
            misses: vec![miss.into()],
            assertions: vec![],
            reasoning: None,
            details: None,
            error: None,
            evaluator_provider_request: None,
        }
    }

    #[test]
    fn misses_of_weight_zero_graders_come_after_the_counted_ones() {
        let results = [graded("uncounted", 0.0), graded("first", 1.0), graded("second", 0.5)];
        assert_eq!(misses_counted_first(&results), ["first", "second", "uncounted"]);
    }
}
