//! One case's files in AgentV 4.x's run directory: `grading.json`, `timing.json`, `input.md`
//! and under `outputs/` the answer, the trace envelope (`agentv.trace.v1`) and the transcript
//! (`agentv.transcript.v1`), as AgentV 4.42.4 writes them
//! (`docs/results.md#agentv-4x-run-directory`).

use std::io;
use std::path::Path;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::model::{EvaluationRecord, ExecutionStatus, OutputMessage};
use crate::redact::{self, Secrets};

/// Where a case's files go and what its trace envelope says about the run.
pub(super) struct Context<'a> {
    pub(super) root: &'a Path,
    /// The case's directory, relative to `root`, `/`-separated.
    pub(super) rel: &'a str,
    pub(super) run_id: &'a str,
    pub(super) eval_file: &'a str,
    pub(super) experiment: &'a str,
    pub(super) secrets: &'a Secrets,
}

/// The files written for a case, relative to the run directory.
pub(super) struct Written {
    dir: String,
    input: bool,
    answer: bool,
    transcript: bool,
}

impl Written {
    /// The index row's path keys, in AgentV's order.
    pub(super) fn paths(&self) -> Vec<(&'static str, String)> {
        let at = |file: &str| format!("{}/{file}", self.dir);
        let mut out = vec![
            ("artifact_dir", self.dir.clone()),
            ("grading_path", at("grading.json")),
            ("timing_path", at("timing.json")),
        ];
        if self.answer {
            out.push(("output_path", at("outputs/answer.md")));
            out.push(("answer_path", at("outputs/answer.md")));
        }
        if self.transcript {
            out.push(("transcript_path", at("outputs/transcript.jsonl")));
        }
        if self.input {
            out.push(("input_path", at("input.md")));
        }
        if self.answer {
            out.push(("response_path", at("outputs/response.md")));
        }
        out
    }
}

/// Writes every file of the case of `r`.
pub(super) fn write(r: &EvaluationRecord, cx: &Context<'_>) -> io::Result<Written> {
    let dir = cx.root.join(cx.rel);
    let json = |name: &str, value: &Value| -> io::Result<()> {
        let mut text = serde_json::to_vec_pretty(value)?;
        text.push(b'\n');
        redact::write_json_file(&dir.join(name), &text, cx.secrets)
    };
    json("grading.json", &grading(r))?;
    json("timing.json", &timing(r))?;
    let input = input_markdown(r);
    if let Some(text) = &input {
        redact::write_file(&dir.join("input.md"), text.as_bytes(), cx.secrets)?;
    }
    let answer = answer(r);
    if let Some(text) = answer {
        for name in ["outputs/answer.md", "outputs/response.md"] {
            redact::write_file(&dir.join(name), text.as_bytes(), cx.secrets)?;
        }
    }
    let messages = transcript_messages(r);
    let envelope = Envelope::new(r, cx);
    let written = Written {
        dir: cx.rel.to_owned(),
        input: input.is_some(),
        answer: answer.is_some(),
        transcript: !messages.is_empty(),
    };
    json("outputs/trace.json", &envelope.to_json(r, &messages, &written))?;
    if !messages.is_empty() {
        let mut lines = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            serde_json::to_writer(&mut lines, &envelope.transcript_row(r, i, m))?;
            lines.push(b'\n');
        }
        redact::write_file(
            &dir.join("outputs/transcript.jsonl"),
            &cx.secrets.redact_json(&lines),
            &Secrets::default(),
        )?;
    }
    Ok(written)
}

/// The candidate text, when the target gave one (an execution error's placeholder is not).
fn answer(r: &EvaluationRecord) -> Option<&str> {
    (r.execution_status != ExecutionStatus::ExecutionError && !r.candidate_answer.is_empty())
        .then_some(r.candidate_answer.as_str())
}

/// `grading.json`: every grader's assertions, their tally, tool calls and each grader.
fn grading(r: &EvaluationRecord) -> Value {
    let scores = r.v4.scores.as_deref().unwrap_or_default();
    let assertions: Vec<Value> = scores
        .iter()
        .flat_map(|s| &s.assertions)
        .map(|a| json!({"text": a.text, "passed": a.passed, "evidence": a.evidence.clone().unwrap_or_default()}))
        .collect();
    let passed = assertions.iter().filter(|a| a["passed"] == true).count();
    let total = assertions.len();
    let tool_calls = r
        .trace_summary
        .as_ref()
        .map(|t| t.tool_calls_by_name.clone())
        .unwrap_or_default();
    let graders: Vec<Value> = scores
        .iter()
        .zip(&r.evaluator_results)
        .map(|(s, e)| {
            json!({"name": s.name, "type": s.kind, "score": s.score, "reasoning": e.reasoning.clone().unwrap_or_default(),
                   "weight": s.weight, "verdict": s.verdict, "assertions": s.assertions, "details": s.details})
        })
        .collect();
    let mut out = json!({
        "assertions": assertions,
        "summary": {"passed": passed, "failed": total - passed, "total": total, "pass_rate": rate(passed, total)},
        "execution_metrics": {
            "tool_calls": tool_calls,
            "total_tool_calls": tool_calls.values().sum::<usize>(),
            "errors_encountered": usize::from(r.error.is_some()),
        },
    });
    if !graders.is_empty() {
        out["graders"] = json!(graders);
    }
    if let Some(id) = &r.conversation_id {
        let turns = transcript_messages(r).iter().filter(|m| m.role == "assistant").count();
        out["conversation"] = json!({"turns": turns, "conversation_id": id});
    }
    out
}

/// A share rounded to three places, 0 of nothing.
fn rate(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 / whole as f64 * 1000.0).round() / 1000.0
    }
}

/// `timing.json` of one case.
fn timing(r: &EvaluationRecord) -> Value {
    let metrics = r.execution_metrics.as_ref();
    let usage = metrics.and_then(|m| m.token_usage).unwrap_or_default();
    let ms = metrics
        .and_then(|m| m.duration_ms)
        .filter(|d| d.is_finite())
        .unwrap_or(0.0);
    super::summary::timing_json(usage.input, usage.output, ms)
}

/// What the target was asked: the chat prompt's turns, or the question as a user turn.
fn input_messages(r: &EvaluationRecord) -> Vec<OutputMessage> {
    let Some(request) = r.lm_provider_request.as_ref().or(r.agent_provider_request.as_ref()) else {
        return Vec::new();
    };
    let turn = |role: &str, text: &str| OutputMessage {
        role: role.to_owned(),
        ..OutputMessage::assistant(text)
    };
    if let Some(chat) = request.get("chat_prompt").and_then(Value::as_array) {
        return chat
            .iter()
            .map(|m| {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
                turn(role, m.get("content").and_then(Value::as_str).unwrap_or_default())
            })
            .collect();
    }
    request
        .get("question")
        .and_then(Value::as_str)
        .map(|q| turn("user", q))
        .into_iter()
        .collect()
}

/// `input.md` as AgentV writes it: each turn as `@[role]:` and its text.
fn input_markdown(r: &EvaluationRecord) -> Option<String> {
    let turns: Vec<String> = input_messages(r)
        .iter()
        .map(|m| format!("@[{}]:\n{}", m.role, m.text().unwrap_or_default()))
        .collect();
    (!turns.is_empty()).then(|| turns.join("\n\n"))
}

/// The messages of the transcript: the question, then what the target said.
fn transcript_messages(r: &EvaluationRecord) -> Vec<OutputMessage> {
    let mut out = input_messages(r);
    match &r.output_messages {
        Some(messages) => out.extend(messages.iter().cloned()),
        None => out.extend(answer(r).map(OutputMessage::assistant)),
    }
    out
}

/// When the case started: its end less its duration, when both are known.
pub(super) fn start_time(r: &EvaluationRecord) -> Option<String> {
    let end: jiff::Timestamp = r.timestamp.parse().ok()?;
    let ms = r
        .execution_metrics
        .as_ref()?
        .duration_ms
        .filter(|d| d.is_finite() && *d >= 0.0)?;
    let span = jiff::SignedDuration::try_from_secs_f64(ms / 1000.0).ok()?;
    end.checked_sub(span).ok().map(|t| t.to_string())
}

/// The first `len` hex digits of the SHA-256 of `parts` joined by NUL.
fn hash(parts: &[&str], len: usize) -> String {
    let digest = Sha256::digest(parts.join("\0").as_bytes());
    let mut hex = hex::encode(digest);
    hex.truncate(len);
    hex
}

/// A time as AgentV's spans write it: nanoseconds since the epoch, as a string.
fn unix_nanos(time: Option<&str>) -> String {
    time.and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or(0, jiff::Timestamp::as_nanosecond)
        .to_string()
}

/// The ids of a case's trace envelope.
struct Envelope<'a> {
    trace_id: String,
    root_span: String,
    artifact_id: String,
    cx: &'a Context<'a>,
}

impl<'a> Envelope<'a> {
    fn new(r: &EvaluationRecord, cx: &'a Context<'a>) -> Self {
        let trial = r.trial.map(|t| t.to_string()).unwrap_or_default();
        let trace_id = hash(
            &[
                "execution-trace",
                &r.timestamp,
                &r.dataset,
                &r.eval_id,
                &r.target,
                cx.run_id,
                &trial,
            ],
            32,
        );
        let root_span = hash(&[&trace_id, "root"], 16);
        let artifact_id = format!(
            "execution-trace-{}",
            hash(&[&trace_id, &r.timestamp, &r.score.to_string()], 20)
        );
        Self {
            trace_id,
            root_span,
            artifact_id,
            cx,
        }
    }

    /// `outputs/trace.json`: the case as OpenTelemetry-style spans (the case, then each tool
    /// call) with its scores.
    fn to_json(&self, r: &EvaluationRecord, messages: &[OutputMessage], files: &Written) -> Value {
        let metrics = r.execution_metrics.as_ref();
        let (status, stage) = super::v4_status(r);
        let start = unix_nanos(start_time(r).as_deref().or(Some(&r.timestamp)));
        let end = unix_nanos(Some(&r.timestamp));
        let mut attributes = json!({
            "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "agentv",
            "gen_ai.agent.name": r.target, "openinference.span.kind": "AGENT",
            "agentv.test_id": r.eval_id, "agentv.target": r.target, "agentv.suite": r.dataset,
            "agentv.eval_path": self.cx.eval_file, "agentv.run_id": self.cx.run_id, "agentv.attempt": r.attempt,
            "agentv.execution_status": status,
        });
        let extra = [
            ("agentv.failure_stage", json!(stage)),
            ("agentv.failure_reason_code", json!(r.failure_reason_code)),
            ("agentv.trace.duration_ms", json!(metrics.and_then(|m| m.duration_ms))),
            ("agentv.trace.cost_usd", json!(metrics.and_then(|m| m.cost_usd))),
            (
                "gen_ai.usage.input_tokens",
                json!(metrics.and_then(|m| m.token_usage).map(|u| u.input)),
            ),
            (
                "gen_ai.usage.output_tokens",
                json!(metrics.and_then(|m| m.token_usage).map(|u| u.output)),
            ),
        ];
        for (key, value) in extra {
            if !value.is_null() {
                attributes[key] = value;
            }
        }
        let root_status = match &r.error {
            Some(e) if r.execution_status == ExecutionStatus::ExecutionError => json!({"code": "ERROR", "message": e}),
            _ => json!({"code": "OK"}),
        };
        let mut spans = vec![json!({
            "trace_id": self.trace_id, "span_id": self.root_span, "parent_span_id": null,
            "name": format!("invoke_agent {}", r.target), "kind": "INTERNAL",
            "start_time_unix_nano": start, "end_time_unix_nano": end,
            "status": root_status, "attributes": attributes, "events": [],
        })];
        spans.extend(self.tool_spans(messages, &start, &end));
        let mut artifacts = json!({"trace_path": "outputs/trace.json"});
        if files.answer {
            artifacts["answer_path"] = json!("outputs/answer.md");
            artifacts["response_path"] = json!("outputs/response.md");
        }
        if files.transcript {
            artifacts["transcript_path"] = json!("outputs/transcript.jsonl");
        }
        json!({
            "schema_version": "agentv.trace.v1",
            "artifact_id": self.artifact_id,
            "created_at": jiff::Timestamp::now().to_string(),
            "eval": {"eval_path": self.cx.eval_file, "suite": r.dataset, "test_id": r.eval_id, "target": r.target,
                     "source_target": r.target, "attempt": r.attempt, "variant": null, "run_id": self.cx.run_id,
                     "experiment": self.cx.experiment},
            "trace": {"format": "otlp_openinference_spans", "trace_id": self.trace_id, "root_span_id": self.root_span,
                      "resource": {"attributes": {"service.name": "agentv"}}, "scope": {"name": "agentv"}, "spans": spans},
            "source": {"kind": "agentv_run", "path": super::INDEX, "provider": r.target, "format": "agentv_result", "version": "1"},
            "capture": {"content": "full", "redaction_level": "none", "redacted_fields": []},
            "artifacts": artifacts,
            "scores": self.scores(r),
        })
    }

    /// A span per tool call, under the root span.
    fn tool_spans(&self, messages: &[OutputMessage], start: &str, end: &str) -> Vec<Value> {
        let mut spans = Vec::new();
        for (m, message) in messages.iter().enumerate() {
            for (t, call) in message.tool_calls.iter().enumerate() {
                let span = hash(
                    &[&self.trace_id, "tool", &m.to_string(), &t.to_string(), &call.tool],
                    16,
                );
                let failed = matches!(call.status.as_deref(), Some("error" | "timeout" | "cancelled"));
                let mut attributes = json!({
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.tool,
                    "openinference.span.kind": "TOOL", "tool.name": call.tool,
                    "agentv.message.index": m, "agentv.tool.index": t,
                });
                for (key, value) in [
                    ("gen_ai.tool.call.id", json!(call.id)),
                    ("gen_ai.tool.call.arguments", json!(call.input)),
                    ("gen_ai.tool.call.result", json!(call.output)),
                ] {
                    if !value.is_null() {
                        attributes[key] = value;
                    }
                }
                let from = call.start_time.as_deref().or(call.timestamp.as_deref());
                spans.push(json!({
                    "trace_id": self.trace_id, "span_id": span, "parent_span_id": self.root_span,
                    "name": format!("execute_tool {}", call.tool), "kind": "INTERNAL",
                    "start_time_unix_nano": from.map_or_else(|| start.to_owned(), |t| unix_nanos(Some(t))),
                    "end_time_unix_nano": call.end_time.as_deref().map_or_else(|| end.to_owned(), |t| unix_nanos(Some(t))),
                    "status": if failed { json!({"code": "ERROR", "message": call.status}) } else { json!({"code": "OK"}) },
                    "attributes": attributes, "events": [],
                }));
            }
        }
        spans
    }

    fn scores(&self, r: &EvaluationRecord) -> Vec<Value> {
        let scores = r.v4.scores.as_deref().unwrap_or_default();
        scores
            .iter()
            .map(|s| {
                let source = match s.kind.as_str() {
                    "code-grader" | "code_judge" | "code-judge" => "code",
                    "llm-grader" | "llm_judge" | "llm-judge" => "llm",
                    _ => "agentv",
                };
                json!({"name": s.name, "type": s.kind, "score": s.score, "weight": s.weight, "verdict": s.verdict,
                       "source": source, "evaluated_at": r.timestamp, "target_span_id": self.root_span,
                       "evidence": {"span_ids": [self.root_span], "assertions": s.assertions, "details": s.details}})
            })
            .collect()
    }

    /// One `outputs/transcript.jsonl` line (`agentv.transcript.v1`).
    fn transcript_row(&self, r: &EvaluationRecord, index: usize, m: &OutputMessage) -> Value {
        let metrics = r.execution_metrics.as_ref();
        let mut row = Map::new();
        let mut put = |key: &str, value: Value| {
            if !value.is_null() {
                row.insert(key.to_owned(), value);
            }
        };
        put("schema_version", json!("agentv.transcript.v1"));
        put("test_id", json!(r.eval_id));
        put("target", json!(r.target));
        put("message_index", json!(index));
        put("role", json!(m.role));
        put("name", json!(m.name));
        put("content", json!(m.content));
        if !m.tool_calls.is_empty() {
            put("tool_calls", json!(m.tool_calls));
        }
        put("start_time", json!(m.start_time));
        put("end_time", json!(m.end_time));
        put("duration_ms", json!(m.duration_ms));
        put("transcript_token_usage", json!(metrics.and_then(|x| x.token_usage)));
        put("transcript_duration_ms", json!(metrics.and_then(|x| x.duration_ms)));
        put("transcript_cost_usd", json!(metrics.and_then(|x| x.cost_usd)));
        put(
            "capture",
            json!({"content": "full", "redaction_level": "none", "redacted_fields": []}),
        );
        put(
            "trace",
            json!({"schema_version": "agentv.trace.v1", "artifact_id": self.artifact_id,
                   "trace_id": self.trace_id, "span_id": self.root_span}),
        );
        put(
            "source",
            json!({"kind": "agentv_run", "provider": r.target, "session_id": self.cx.run_id, "path": super::INDEX,
                   "format": "agentv_result", "timestamp": r.timestamp, "version": "1"}),
        );
        Value::Object(row)
    }
}
