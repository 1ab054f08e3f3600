//! Micro-benchmarks of the per-case hot paths: `cargo bench -p agentv-core`.

use std::path::Path;

use agentv_core::evaluators::aggregate;
use agentv_core::load::{Workspace, load_eval_file};
use agentv_core::model::{
    EvaluationRecord, EvaluatorResult, ExecutionStatus, TraceEvent, TraceEventKind, TraceSummary, Verdict,
};
use divan::{Bencher, black_box};

fn main() {
    divan::main();
}

/// A workspace with a 10 000-case YAML suite and the same as JSONL.
fn suites() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().expect("tmp");
    let mut yaml =
        String::from("execution:\n  evaluators: [{name: kw, type: keywords, expected: ['4']}]\nevalcases:\n");
    let mut jsonl = String::new();
    for i in 0..10_000 {
        yaml.push_str(&format!(
            "  - id: case-{i}\n    expected_outcome: Answers 4.\n    input_messages:\n      - {{role: system, content: Be terse.}}\n      - {{role: user, content: 'Case {i}: what is 2+2?'}}\n"
        ));
        jsonl.push_str(&format!(
            "{{\"id\": \"case-{i}\", \"expected_outcome\": \"Answers 4.\", \"input\": \"Case {i}: what is 2+2?\"}}\n"
        ));
    }
    std::fs::write(dir.path().join("suite.yaml"), yaml).expect("write");
    std::fs::write(dir.path().join("data.jsonl"), jsonl).expect("write");
    let ws = Workspace::from_cwd(dir.path().to_path_buf());
    (dir, ws)
}

#[divan::bench(sample_count = 10)]
fn load_10k_cases_yaml(bencher: Bencher) {
    let (_dir, ws) = suites();
    bencher.bench_local(|| {
        let suite = load_eval_file(Path::new("suite.yaml"), &ws);
        assert_eq!(suite.case_count, 10_000);
        black_box(suite)
    });
}

#[divan::bench(sample_count = 10)]
fn load_10k_cases_jsonl_streamed(bencher: Bencher) {
    let (_dir, ws) = suites();
    bencher.bench_local(|| {
        let suite = load_eval_file(Path::new("data.jsonl"), &ws);
        let n = suite
            .into_cases()
            .inspect(|c| {
                black_box(c);
            })
            .count();
        assert_eq!(n, 10_000);
    });
}

#[divan::bench]
fn trace_summary_1000_events(bencher: Bencher) {
    let events: Vec<TraceEvent> = (0..1000)
        .map(|i| {
            let mut e = TraceEvent::new(if i % 2 == 0 {
                TraceEventKind::ToolCall
            } else {
                TraceEventKind::ToolResult
            });
            e.name = Some(["read", "grep", "edit", "bash", "search"][i % 5].to_owned());
            e
        })
        .collect();
    bencher.bench_local(|| TraceSummary::from_events(black_box(&events)));
}

#[divan::bench(args = ["bare", "fenced", "prose"])]
fn judge_reply_json_extraction(bencher: Bencher, shape: &str) {
    let object = r#"{"score": 0.75, "hits": ["names the cause", "cites the log"], "misses": ["no fix"], "reasoning": "Correct diagnosis, incomplete remedy."}"#;
    let reply = match shape {
        "bare" => object.to_owned(),
        "fenced" => format!("Here is my evaluation:\n```json\n{object}\n```"),
        _ => format!("The answer {{mostly}} works. Verdict follows. {object} Thanks for asking {{again}}."),
    };
    bencher.bench_local(|| agentv_eval_sdk::extract_json_object(black_box(&reply)).expect("found"));
}

fn evaluator_result(i: usize) -> EvaluatorResult {
    EvaluatorResult {
        name: format!("e{i}"),
        kind: "keywords".into(),
        score: (i % 10) as f64 / 10.0,
        weight: 1.0 + (i % 3) as f64,
        verdict: Verdict::Pass,
        hits: vec!["contains 4".into()],
        misses: vec![],
        assertions: Vec::new(),
        reasoning: Some("1/1 expected found".into()),
        details: None,
        error: None,
        evaluator_provider_request: None,
    }
}

#[divan::bench]
fn aggregate_5_evaluators(bencher: Bencher) {
    let results: Vec<EvaluatorResult> = (0..5).map(evaluator_result).collect();
    bencher.bench_local(|| aggregate(black_box(&results)));
}

#[divan::bench]
fn result_record_serialization(bencher: Bencher) {
    let record = EvaluationRecord {
        timestamp: "2026-11-22T00:00:00.000000000Z".into(),
        eval_id: "case-000001".into(),
        dataset: "bench".into(),
        conversation_id: None,
        target: "default".into(),
        attempt: 1,
        execution_status: ExecutionStatus::Ok,
        score: 0.9,
        verdict: Verdict::Pass,
        hits: vec!["contains 4".into(), "answers 4".into()],
        misses: vec![],
        reasoning: Some("kw: 1/1 expected found | judge: correct".into()),
        candidate_answer: "The answer is 4.".into(),
        lm_provider_request: Some(serde_json::json!({"question": "Case 1: what is 2+2?", "guidelines": ""})),
        agent_provider_request: None,
        evaluator_results: (0..2).map(evaluator_result).collect(),
        trace_summary: Some(TraceSummary::default()),
        execution_metrics: None,
        error: None,
        trial: None,
        failure_reason_code: None,
        output_messages: None,
        trace: None,
        truncated: None,
        workspace_path: None,
        workspace: None,
        v4: Default::default(),
    };
    let mut buf = Vec::with_capacity(4096);
    bencher.bench_local(|| {
        buf.clear();
        serde_json::to_writer(&mut buf, black_box(&record)).expect("serializes");
        buf.len()
    });
}

/// Twenty secrets with quotes, backslashes, spaces and non-ASCII characters (hundreds of forms
/// each), as a run with many `${{ VAR }}` settings registers.
fn many_secrets() -> agentv_core::Secrets {
    let secrets = agentv_core::Secrets::default();
    for i in 0..20 {
        secrets.add(&format!("sk-{i:02}-\"dq\" \\bs 'sq' é ☃ &a=b/c+d"));
    }
    secrets
}

/// A 4 KB result line, clean or holding two secrets: what every case pays to be written.
#[divan::bench(args = ["clean", "two_secrets"])]
fn redact_4kb_result_line(bencher: Bencher, shape: &str) {
    let secrets = many_secrets();
    let mut answer = "The answer is 4. ".repeat(230);
    if shape == "two_secrets" {
        answer.push_str("sk-03-\"dq\" \\bs 'sq' é ☃ &a=b/c+d and sk-17-\"dq\" \\bs 'sq' é ☃ &a=b/c+d");
    }
    let line = serde_json::json!({"eval_id": "case-1", "candidate_answer": answer}).to_string();
    bencher.bench_local(|| secrets.redact(black_box(&line)).len());
}

/// Registering twenty secrets, then the one automaton build the first redaction pays.
#[divan::bench(sample_count = 10)]
fn register_20_secrets_and_build(bencher: Bencher) {
    bencher.bench_local(|| many_secrets().redact("x").len());
}

/// The messages, trace and metrics of a typical agent answer: six messages, four tool calls.
fn judged_answer() -> (
    Vec<agentv_core::model::OutputMessage>,
    Vec<TraceEvent>,
    agentv_core::model::ExecutionMetrics,
) {
    use agentv_core::model::{OutputMessage, ToolCall};
    let mut messages = Vec::new();
    for i in 0..4 {
        let mut turn = OutputMessage::assistant(format!("Let me check file {i}."));
        turn.tool_calls.push(ToolCall {
            tool: ["Read", "Grep", "Edit", "Bash"][i].to_owned(),
            input: Some(serde_json::json!({"file_path": format!("/repo/src/module_{i}.rs"), "limit": 200})),
            output: Some(serde_json::json!("fn main() {}\n".repeat(20))),
            id: Some(format!("call_{i}")),
            duration_ms: Some(12.5),
            ..ToolCall::default()
        });
        messages.push(turn);
    }
    messages.push(OutputMessage::assistant(
        "The bug is in module_2.rs: the loop never ends. ".repeat(8),
    ));
    let trace = agentv_core::trace::extract(&messages);
    let metrics = agentv_core::model::ExecutionMetrics {
        token_usage: Some(agentv_core::model::TokenUsage {
            input: 1200,
            output: 300,
            cached: Some(800),
        }),
        cost_usd: Some(0.012),
        duration_ms: Some(8400.0),
        tool_call_count: Some(4),
        ..Default::default()
    };
    (messages, trace, metrics)
}

/// What every code-judge invocation pays before the process starts: building the stdin payload from
/// the case and the answer, and encoding it. `v2_keys` is the payload of the 2.x keys alone,
/// `both_generations` the one agentv sends (`docs/architecture.md#code-judge-contract`).
#[divan::bench(args = ["v2_keys", "both_generations"])]
fn code_judge_payload(bencher: Bencher, keys: &str) {
    let (messages, trace, metrics) = judged_answer();
    let summary = TraceSummary::from_events(&trace);
    let input = vec![
        serde_json::json!({"role": "system", "content": "Be terse."}),
        serde_json::json!({"role": "user", "content": "Why does the build hang? See the attached log."}),
    ];
    let expected = vec![serde_json::json!({"role": "assistant", "content": "The loop in module_2.rs never ends."})];
    let mut config = serde_json::Map::new();
    config.insert("keywords".into(), serde_json::json!(["module_2", "loop"]));
    let both = keys == "both_generations";
    let mut buf = Vec::with_capacity(64 * 1024);
    bencher.bench_local(|| {
        let mut payload = agentv_eval_sdk::CodeJudgePayload {
            eval_id: "case-000001".into(),
            question: "Why does the build hang? See the attached log.".into(),
            expected_outcome: "Names the endless loop in module_2.rs.".into(),
            expected_messages: expected.clone(),
            reference_answer: "The loop in module_2.rs never ends.".into(),
            candidate_answer: "The bug is in module_2.rs: the loop never ends.".into(),
            output_messages: messages.clone(),
            guideline_files: vec!["/repo/guidelines/debug.instructions.md".into()],
            input_files: vec!["/repo/logs/build.log".into()],
            input_messages: input.clone(),
            trace_summary: Some(summary.clone()),
            candidate_trace: trace.clone(),
            execution_metrics: Some(metrics.clone()),
            config: config.clone(),
            ..Default::default()
        };
        if both {
            payload.fill_v4_keys();
        }
        buf.clear();
        serde_json::to_writer(&mut buf, black_box(&payload)).expect("serializes");
        buf.len()
    });
}

/// Every deterministic 4.x grader once on one typical agent answer (six messages, four tool
/// calls, metrics) and a JSON answer: the cost a case pays for its deterministic graders, all
/// nineteen of them at once (agentv's budget is 0.1 ms of CPU per case).
#[divan::bench]
fn deterministic_graders_per_case(bencher: Bencher) {
    use agentv_core::evaluators::{
        candidate, contains, contains_all, contains_any, cost, ends_with, equals, execution_metrics, field_accuracy,
        icontains, icontains_all, icontains_any, is_json, js_regex, json_schema, latency, regex, skill_trigger,
        starts_with, token_usage, word_count,
    };
    let (messages, _, metrics) = judged_answer();
    let json_answer = "```json\n{\"invoice\": {\"number\": \"INV-1\", \"total\": \"1,234.50\", \"date\": \"01/15/2025\", \"lines\": [{\"amount\": 100}, {\"amount\": 200}]}}\n```";
    let expected = serde_json::json!({"invoice": {"number": "INV-1", "total": 1234.5, "date": "2025-01-15", "lines": [{"amount": 100}, {"amount": 200}]}});
    let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let (any, all) = (strings(&["loop", "deadlock"]), strings(&["module_2", "loop"]));
    let re = regex::RegexCheck {
        pattern: r"module_\d+\.rs".into(),
        flags: Some("i".into()),
        matcher: js_regex::compile(r"module_\d+\.rs", "i").expect("pattern"),
    };
    let schema =
        jsonschema::validator_for(&serde_json::json!({"type": "object", "required": ["invoice"]})).expect("schema");
    let fields = field_accuracy::FieldAccuracy {
        fields: vec![
            field_accuracy::FieldSpec::new("invoice.number", field_accuracy::Match::Exact),
            field_accuracy::FieldSpec::new("invoice.total", field_accuracy::Match::NumericTolerance),
            field_accuracy::FieldSpec::new("invoice.date", field_accuracy::Match::Date),
            field_accuracy::FieldSpec::new("invoice.lines[1].amount", field_accuracy::Match::Exact),
        ],
        all_or_nothing: false,
        generation: agentv_core::evaluators::Generation::V4,
    };
    let limits = token_usage::Limits {
        max_total: Some(4000.0),
        ..Default::default()
    };
    let thresholds = execution_metrics::Thresholds {
        max_tool_calls: Some(10.0),
        max_tokens: Some(4000.0),
        target_exploration_ratio: Some(0.5),
        ..Default::default()
    };
    let skill = skill_trigger::SkillTrigger {
        skill: "pdf".into(),
        should_trigger: false,
    };
    bencher.bench_local(|| {
        let out = candidate::text(black_box(&messages));
        let grades = [
            equals::grade("The bug is in module_2.rs.", &out),
            contains::grade("module_2", &out),
            icontains::grade("MODULE_2", &out),
            contains_any::grade(&any, &out),
            contains_all::grade(&all, &out),
            icontains_any::grade(&any, &out),
            icontains_all::grade(&all, &out),
            starts_with::grade("The bug", &out),
            ends_with::grade("never ends.", &out),
            regex::grade(&re, &out),
            is_json::grade(json_answer),
            json_schema::grade(&schema, json_answer),
            word_count::grade(
                &word_count::Bounds {
                    min: None,
                    max: Some(200),
                },
                &out,
            ),
            field_accuracy::grade(&fields, json_answer, Some(&expected)),
            latency::grade(10_000.0, metrics.duration_ms),
            cost::grade(0.05, metrics.cost_usd),
            token_usage::grade(&limits, metrics.token_usage.as_ref()),
            execution_metrics::grade(&thresholds, &execution_metrics::Observed::of(&messages, &metrics)),
            skill_trigger::grade(&skill, &messages.iter().flat_map(|m| &m.tool_calls).collect::<Vec<_>>()),
        ];
        black_box(grades)
    });
}

/// The memory check after each case of a persistent judge: this process's tree read from /proc
/// (a judge run through `sh -c` is two processes).
#[divan::bench]
fn persistent_judge_memory_check(bencher: Bencher) {
    let pid = std::process::id();
    bencher.bench_local(|| black_box(agentv_core::evaluators::judge_pool::tree_rss_bytes(black_box(pid))));
}
