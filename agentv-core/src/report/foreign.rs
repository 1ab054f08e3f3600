//! The TypeScript AgentV's result rows, mapped into our record (reference `agentv.md` §2.f for
//! 2.x, `agentv-4.md` §7.3 and §2.14 for 4.x). The mapping is listed in `docs/results.md`.
//!
//! Both are read leniently: a key of the wrong type is treated as absent, except `score`,
//! which every use of a result needs.

use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::reader::RecordError;

use crate::model::{
    EvaluationRecord, EvaluatorResult, ExecutionMetrics, ExecutionStatus, TokenUsage, TraceSummary, Verdict,
};

/// Longest answer or input file of a 4.x run directory read into a record.
const MAX_SIDE_FILE: u64 = 1024 * 1024;

/// A 2.x evaluation result: our keys, minus `execution_status`, `verdict` and `attempt`; the
/// token, cost and duration figures sit in `trace_summary`.
pub fn from_ts2(obj: &Map<String, Value>) -> Result<EvaluationRecord, RecordError> {
    let eval_id = text(obj, "eval_id").ok_or(RecordError::NotAString("eval_id"))?;
    let score = score(obj)?;
    let error = text(obj, "error");
    let mut evaluator_results: Vec<EvaluatorResult> = list(obj, "evaluator_results")
        .iter()
        .filter_map(Value::as_object)
        .map(ts2_evaluator)
        .collect();
    // The single-default-judge path records the judge's request on the case.
    if evaluator_results.is_empty()
        && let Some(request) = obj.get("evaluator_provider_request").filter(|v| !v.is_null())
    {
        evaluator_results.push(EvaluatorResult {
            name: "llm_judge".into(),
            kind: "llm_judge".into(),
            score,
            weight: 1.0,
            verdict: Verdict::from_score(score),
            hits: strings(obj, "hits"),
            misses: strings(obj, "misses"),
            assertions: Vec::new(),
            reasoning: text(obj, "reasoning"),
            details: None,
            error: None,
            evaluator_provider_request: Some(request.clone()),
        });
    }
    let (trace_summary, execution_metrics) = ts2_trace(obj.get("trace_summary"));
    Ok(EvaluationRecord {
        timestamp: text(obj, "timestamp").unwrap_or_default(),
        eval_id,
        dataset: text(obj, "dataset").unwrap_or_default(),
        conversation_id: text(obj, "conversation_id"),
        target: text(obj, "target").unwrap_or_else(|| "default".into()),
        attempt: 1,
        execution_status: if error.is_some() {
            ExecutionStatus::ExecutionError
        } else {
            ExecutionStatus::Ok
        },
        score,
        verdict: Verdict::from_score(score),
        hits: strings(obj, "hits"),
        misses: strings(obj, "misses"),
        reasoning: text(obj, "reasoning"),
        candidate_answer: text(obj, "candidate_answer").unwrap_or_default(),
        lm_provider_request: obj.get("lm_provider_request").filter(|v| !v.is_null()).cloned(),
        agent_provider_request: obj.get("agent_provider_request").filter(|v| !v.is_null()).cloned(),
        evaluator_results,
        trace_summary,
        execution_metrics,
        error,
        trial: None,
        failure_reason_code: None,
        output_messages: None,
        trace: None,
        truncated: None,
        workspace_path: None,
        workspace: None,
        v4: Default::default(),
    })
}

fn ts2_evaluator(obj: &Map<String, Value>) -> EvaluatorResult {
    let score = number(obj, "score").unwrap_or(0.0);
    let mut details = obj.get("details").and_then(Value::as_object).cloned();
    // Composite children stay visible in the details.
    if let Some(children) = obj.get("evaluator_results").filter(|v| v.is_array()) {
        details
            .get_or_insert_with(Map::new)
            .insert("evaluator_results".into(), children.clone());
    }
    EvaluatorResult {
        name: text(obj, "name").unwrap_or_default(),
        kind: text(obj, "type").unwrap_or_default(),
        score,
        weight: number(obj, "weight").unwrap_or(1.0),
        verdict: text(obj, "verdict")
            .and_then(|v| verdict(&v))
            .unwrap_or_else(|| Verdict::from_score(score)),
        hits: strings(obj, "hits"),
        misses: strings(obj, "misses"),
        assertions: Vec::new(),
        reasoning: text(obj, "reasoning"),
        details,
        error: text(obj, "error"),
        evaluator_provider_request: obj.get("evaluator_provider_request").filter(|v| !v.is_null()).cloned(),
    }
}

/// 2.x `trace_summary` carries the metrics too: split them out.
fn ts2_trace(value: Option<&Value>) -> (Option<TraceSummary>, Option<ExecutionMetrics>) {
    let Some(obj) = value.and_then(Value::as_object) else {
        return (None, None);
    };
    let summary = TraceSummary {
        event_count: count(obj, "event_count"),
        tool_names: strings(obj, "tool_names"),
        tool_calls_by_name: obj
            .get("tool_calls_by_name")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_u64().map_or(0, |n| n as usize)))
                    .collect()
            })
            .unwrap_or_default(),
        error_count: count(obj, "error_count"),
        ..TraceSummary::default()
    };
    (Some(summary), metrics(obj))
}

/// A 4.x `index.jsonl` row. The answer and the input live in files of the run directory
/// (`answer_path`, `input_path`, relative to the index file); they are read when present.
pub fn from_ts4(obj: &Map<String, Value>, base_dir: &Path) -> Result<EvaluationRecord, RecordError> {
    let eval_id = text(obj, "test_id").ok_or(RecordError::NotAString("test_id"))?;
    let score = score(obj)?;
    let error = text(obj, "error");
    let status = text(obj, "execution_status");
    let execution_status = match status.as_deref() {
        Some("execution_error") if text(obj, "failure_stage").as_deref() == Some("evaluator") => {
            ExecutionStatus::GraderError
        }
        Some("execution_error") => ExecutionStatus::ExecutionError,
        Some(_) => ExecutionStatus::Ok,
        None if error.is_some() => ExecutionStatus::ExecutionError,
        None => ExecutionStatus::Ok,
    };
    // 4.x has two verdicts: `ok` passed the case's threshold, anything else did not.
    let verdict = match status.as_deref() {
        Some("ok") => Verdict::Pass,
        Some(_) => Verdict::Fail,
        None if score >= 0.8 => Verdict::Pass,
        None => Verdict::Fail,
    };
    let evaluator_results: Vec<EvaluatorResult> = list(obj, "scores")
        .iter()
        .filter_map(Value::as_object)
        .map(ts4_grader)
        .collect();
    let hits = evaluator_results.iter().flat_map(|r| r.hits.iter().cloned()).collect();
    let mut misses: Vec<String> = evaluator_results
        .iter()
        .flat_map(|r| r.misses.iter().cloned())
        .collect();
    if execution_status == ExecutionStatus::ExecutionError
        && let Some(e) = &error
    {
        misses.push(format!("Error: {e}"));
    }
    let question = side_file(obj, "input_path", base_dir);
    let answer = side_file(obj, "answer_path", base_dir).or_else(|| side_file(obj, "response_path", base_dir));
    Ok(EvaluationRecord {
        timestamp: text(obj, "timestamp")
            .or_else(|| text(obj, "end_time"))
            .unwrap_or_default(),
        eval_id,
        dataset: text(obj, "suite").or_else(|| text(obj, "dataset")).unwrap_or_default(),
        conversation_id: text(obj, "conversation_id"),
        target: text(obj, "target").unwrap_or_else(|| "default".into()),
        attempt: 1,
        execution_status,
        score,
        verdict,
        hits,
        misses,
        reasoning: None,
        candidate_answer: answer.unwrap_or_default(),
        lm_provider_request: question.map(|q| json!({ "question": q })),
        agent_provider_request: None,
        evaluator_results,
        trace_summary: None,
        execution_metrics: metrics(obj),
        error,
        trial: None,
        failure_reason_code: text(obj, "failure_reason_code"),
        output_messages: None,
        trace: None,
        truncated: None,
        workspace_path: None,
        workspace: None,
        v4: Default::default(),
    })
}

/// A 4.x `scores[]` entry: assertions that passed are hits, the others misses; their evidence
/// becomes the reasoning; the grader's request (`input`) is its provider request.
fn ts4_grader(obj: &Map<String, Value>) -> EvaluatorResult {
    let score = number(obj, "score").unwrap_or(0.0);
    let mut hits = Vec::new();
    let mut misses = Vec::new();
    let mut evidence = Vec::new();
    for a in list(obj, "assertions").iter().filter_map(Value::as_object) {
        let said = text(a, "text").unwrap_or_default();
        if let Some(e) = text(a, "evidence").filter(|e| !e.is_empty()) {
            evidence.push(format!("{said}: {e}"));
        }
        if a.get("passed").and_then(Value::as_bool).unwrap_or(false) {
            hits.push(said);
        } else {
            misses.push(said);
        }
    }
    let mut details = obj.get("details").and_then(Value::as_object).cloned();
    for key in ["scores", "target", "duration_ms", "token_usage"] {
        if let Some(v) = obj.get(key).filter(|v| !v.is_null()) {
            details.get_or_insert_with(Map::new).insert(key.into(), v.clone());
        }
    }
    let raw_verdict = text(obj, "verdict");
    let skipped = raw_verdict.as_deref() == Some("skip");
    EvaluatorResult {
        name: text(obj, "name").unwrap_or_default(),
        kind: text(obj, "type").unwrap_or_default(),
        score,
        weight: number(obj, "weight").unwrap_or(1.0),
        verdict: match raw_verdict.as_deref() {
            Some("pass") => Verdict::Pass,
            Some("skip") => Verdict::Skip,
            Some(_) => Verdict::Fail,
            None => Verdict::from_score(score),
        },
        hits,
        misses,
        assertions: Vec::new(),
        reasoning: (!evidence.is_empty()).then(|| evidence.join("\n")),
        details,
        error: skipped.then(|| "skipped: the grader could not grade (AgentV 4.x verdict `skip`)".to_owned()),
        evaluator_provider_request: obj.get("input").filter(|v| !v.is_null()).cloned(),
    }
}

/// `token_usage`, `cost_usd`, `duration_ms` of `obj`, when any is there.
fn metrics(obj: &Map<String, Value>) -> Option<ExecutionMetrics> {
    let token_usage = obj.get("token_usage").and_then(Value::as_object).map(|t| TokenUsage {
        input: t.get("input").and_then(Value::as_u64).unwrap_or(0),
        output: t.get("output").and_then(Value::as_u64).unwrap_or(0),
        cached: t.get("cached").and_then(Value::as_u64),
    });
    let metrics = ExecutionMetrics {
        token_usage,
        cost_usd: number(obj, "cost_usd"),
        duration_ms: number(obj, "duration_ms"),
        ..ExecutionMetrics::default()
    };
    (!metrics.is_empty()).then_some(metrics)
}

/// The text of a file named by `obj[key]` (relative to `base_dir`), up to [`MAX_SIDE_FILE`].
fn side_file(obj: &Map<String, Value>, key: &str, base_dir: &Path) -> Option<String> {
    let rel = text(obj, key)?;
    let path = base_dir.join(rel);
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_SIDE_FILE).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

fn score(obj: &Map<String, Value>) -> Result<f64, RecordError> {
    match obj.get("score") {
        Some(v) => v.as_f64().ok_or_else(|| RecordError::ScoreNotANumber(v.clone())),
        None => Err(RecordError::NoScore),
    }
}

fn verdict(text: &str) -> Option<Verdict> {
    match text {
        "pass" => Some(Verdict::Pass),
        "borderline" => Some(Verdict::Borderline),
        "fail" => Some(Verdict::Fail),
        _ => None,
    }
}

/// A string, or a number written as one (ids are sometimes numbers).
fn text(obj: &Map<String, Value>, key: &str) -> Option<String> {
    match obj.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn number(obj: &Map<String, Value>, key: &str) -> Option<f64> {
    obj.get(key).and_then(Value::as_f64)
}

fn count(obj: &Map<String, Value>, key: &str) -> usize {
    obj.get(key).and_then(Value::as_u64).map_or(0, |n| n as usize)
}

fn list<'a>(obj: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    obj.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// A list of strings; other items are written as JSON.
fn strings(obj: &Map<String, Value>, key: &str) -> Vec<String> {
    list(obj, key)
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().expect("object").clone()
    }

    #[test]
    fn ts2_records_map_metrics_out_of_the_trace_summary_and_keep_the_judge_prompt() {
        let r = from_ts2(&obj(json!({
            "timestamp": "2025-01-01T00:00:00Z", "eval_id": "e1", "dataset": "ds", "score": 0.7,
            "hits": ["h"], "misses": ["m"], "candidate_answer": "A", "target": "gpt",
            "reasoning": "why", "evaluator_provider_request": {"user_prompt": "grade it"},
            "trace_summary": {"event_count": 3, "tool_names": ["Read"], "tool_calls_by_name": {"Read": 2},
                              "error_count": 0, "cost_usd": 0.5, "duration_ms": 1200,
                              "token_usage": {"input": 10, "output": 5}}
        })))
        .expect("maps");
        assert_eq!(
            (r.eval_id.as_str(), r.dataset.as_str(), r.target.as_str()),
            ("e1", "ds", "gpt")
        );
        assert_eq!(r.verdict, Verdict::Borderline, "2.x verdicts");
        assert_eq!(r.execution_status, ExecutionStatus::Ok);
        let m = r.execution_metrics.expect("metrics");
        assert_eq!((m.cost_usd, m.duration_ms), (Some(0.5), Some(1200.0)));
        assert_eq!(m.token_usage.expect("tokens").input, 10);
        assert_eq!(r.trace_summary.expect("summary").tool_calls_by_name["Read"], 2);
        let judge = &r.evaluator_results[0];
        assert_eq!(judge.kind, "llm_judge");
        assert_eq!(judge.misses, ["m"]);
        assert_eq!(
            judge.evaluator_provider_request,
            Some(json!({"user_prompt": "grade it"}))
        );
    }

    #[test]
    fn ts2_errors_are_execution_errors() {
        let r = from_ts2(&obj(json!({"eval_id": "e", "score": 0, "error": "boom",
                                     "misses": ["Error: boom"], "candidate_answer": "Error occurred: boom"})))
        .expect("maps");
        assert_eq!(r.execution_status, ExecutionStatus::ExecutionError);
        assert_eq!(r.target, "default");
    }

    #[test]
    fn ts4_rows_map_scores_assertions_and_status() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join("s/t1/outputs")).expect("dirs");
        std::fs::write(dir.path().join("s/t1/outputs/answer.md"), "<b>Paris</b>").expect("answer");
        let r = from_ts4(
            &obj(json!({
                "timestamp": "t", "test_id": "t1", "suite": "s", "score": 0.5, "target": "claude",
                "execution_status": "quality_failure", "cost_usd": 0.01, "duration_ms": 900,
                "token_usage": {"input": 1, "output": 2, "reasoning": 3},
                "answer_path": "s/t1/outputs/answer.md",
                "scores": [{"name": "rubric", "type": "llm-grader", "score": 0.5, "weight": 2, "verdict": "fail",
                            "assertions": [{"text": "names Paris", "passed": true},
                                           {"text": "cites a source", "passed": false, "evidence": "no link"}],
                            "input": {"system_prompt": "S", "user_prompt": "U"}}]
            })),
            dir.path(),
        )
        .expect("maps");
        assert_eq!((r.eval_id.as_str(), r.dataset.as_str()), ("t1", "s"));
        assert_eq!(r.execution_status, ExecutionStatus::Ok);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(r.candidate_answer, "<b>Paris</b>");
        assert_eq!(
            (r.hits.clone(), r.misses.clone()),
            (vec!["names Paris".to_owned()], vec!["cites a source".to_owned()])
        );
        let g = &r.evaluator_results[0];
        assert_eq!((g.weight, g.kind.as_str()), (2.0, "llm-grader"));
        assert_eq!(g.reasoning.as_deref(), Some("cites a source: no link"));
        assert_eq!(
            g.evaluator_provider_request,
            Some(json!({"system_prompt": "S", "user_prompt": "U"}))
        );
        assert_eq!(r.execution_metrics.expect("metrics").duration_ms, Some(900.0));
    }

    #[test]
    fn ts4_execution_errors_split_by_failure_stage() {
        let base = json!({"test_id": "t", "score": 0, "execution_status": "execution_error", "error": "x"});
        let agent = from_ts4(&obj(base.clone()), Path::new(".")).expect("maps");
        assert_eq!(agent.execution_status, ExecutionStatus::ExecutionError);
        assert_eq!(agent.misses, ["Error: x"]);
        let mut grader = base;
        grader["failure_stage"] = json!("evaluator");
        let grader = from_ts4(&obj(grader), Path::new(".")).expect("maps");
        assert_eq!(grader.execution_status, ExecutionStatus::GraderError);
    }

    #[test]
    fn a_missing_or_textual_score_is_an_error() {
        assert_eq!(
            from_ts4(&obj(json!({"test_id": "t"})), Path::new("."))
                .expect_err("no score")
                .to_string(),
            "missing `score`"
        );
        assert_eq!(
            from_ts2(&obj(json!({"eval_id": "t", "score": "high"})))
                .expect_err("text")
                .to_string(),
            "`score` must be a number, found \"high\""
        );
    }
}
