use serde_json::{Value, json};

use super::*;

fn record(id: &str, target: &str, score: f64, extra: Value) -> EvaluationRecord {
    let mut v = json!({
        "timestamp": "2026-01-02T03:04:05Z", "eval_id": id, "dataset": "suite", "target": target, "attempt": 1,
        "execution_status": "ok", "score": score, "verdict": if score >= 0.8 { "pass" } else { "fail" },
        "hits": ["has 4"], "misses": [], "candidate_answer": "It is 4.",
        "lm_provider_request": {"question": "What is 2+2?", "guidelines": ""},
        "evaluator_results": [{"name": "kw", "type": "keywords", "score": score, "weight": 1.0,
                               "verdict": if score >= 0.8 { "pass" } else { "fail" }, "hits": ["has 4"], "misses": []}],
        "execution_metrics": {"token_usage": {"input": 20, "output": 5}, "cost_usd": 0.25, "duration_ms": 1500.0}
    });
    if let (Some(base), Value::Object(more)) = (v.as_object_mut(), extra) {
        base.extend(more);
    }
    let mut r: EvaluationRecord = serde_json::from_value(v).expect("record");
    r.fill_v4_fields(None);
    r
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .expect("json")
}

fn index(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join(INDEX))
        .expect("index")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect()
}

fn info() -> RunInfo {
    RunInfo {
        eval_file: "evals/e.yaml".into(),
        planned: 3,
        experiment: "default".into(),
    }
}

/// The layout of AgentV 4.x's run directory (reference §7.3): index rows with the 4.x keys
/// and the paths of each case's files, which exist.
#[test]
fn run_directory_has_the_agentv_4_layout() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("out");
    let mut sink = RunDirectory::create(&dir, info(), Secrets::default()).expect("created");
    let stub = read_json(&dir.join("benchmark.json"));
    assert_eq!(stub["metadata"]["planned_test_count"], 3);
    assert_eq!(stub["notes"], json!(["No results to summarize"]));
    sink.write(&Row::redact(&record("add", "gpt", 1.0, json!({})), &Secrets::default()))
        .expect("written");
    sink.write(&Row::redact(
        &record("add", "claude", 0.5, json!({})),
        &Secrets::default(),
    ))
    .expect("written");
    sink.finish().expect("finished");
    let rows = index(&dir);
    assert_eq!(rows.len(), 2);
    let first = &rows[0];
    for key in [
        "timestamp",
        "test_id",
        "suite",
        "score",
        "target",
        "token_usage",
        "cost_usd",
        "duration_ms",
        "start_time",
        "end_time",
        "scores",
        "execution_status",
        "artifact_dir",
        "grading_path",
        "timing_path",
        "output_path",
        "answer_path",
        "transcript_path",
        "input_path",
        "response_path",
        "experiment",
    ] {
        assert!(first.get(key).is_some(), "row lacks {key}: {first}");
    }
    assert_eq!(first["execution_status"], "ok");
    assert_eq!(rows[1]["execution_status"], "quality_failure");
    assert_eq!(first["artifact_dir"], "suite/add");
    assert_eq!(first["start_time"], "2026-01-02T03:04:03.5Z");
    assert_ne!(
        rows[1]["artifact_dir"], first["artifact_dir"],
        "the second target keeps its own files"
    );
    for row in &rows {
        for key in [
            "grading_path",
            "timing_path",
            "answer_path",
            "response_path",
            "transcript_path",
            "input_path",
        ] {
            let rel = row[key].as_str().expect("a path");
            assert!(dir.join(rel).is_file(), "{key} {rel} is missing");
        }
    }
    let grading = read_json(&dir.join(first["grading_path"].as_str().expect("path")));
    assert_eq!(
        grading["summary"],
        json!({"passed": 1, "failed": 0, "total": 1, "pass_rate": 1.0})
    );
    assert_eq!(grading["graders"][0]["name"], "kw");
    let input = std::fs::read_to_string(dir.join(first["input_path"].as_str().expect("path"))).expect("input");
    assert_eq!(input, "@[user]:\nWhat is 2+2?");
    let trace = read_json(&dir.join("suite/add/outputs/trace.json"));
    assert_eq!(trace["schema_version"], "agentv.trace.v1");
    assert_eq!(trace["eval"]["test_id"], "add");
    let transcript = std::fs::read_to_string(dir.join("suite/add/outputs/transcript.jsonl")).expect("transcript");
    let lines: Vec<Value> = transcript
        .lines()
        .map(|l| serde_json::from_str(l).expect("line"))
        .collect();
    assert_eq!(lines.len(), 2, "the question and the answer");
    assert_eq!(lines[1]["schema_version"], "agentv.transcript.v1");
    assert_eq!(
        (lines[0]["role"].clone(), lines[1]["content"].clone()),
        (json!("user"), json!("It is 4."))
    );
    let timing = read_json(&dir.join("timing.json"));
    assert_eq!(timing["total_tokens"], 50);
    assert_eq!(timing["total_duration_seconds"], 3.0);
    let bench = read_json(&dir.join("benchmark.json"));
    assert_eq!(bench["metadata"]["targets"], json!(["claude", "gpt"]));
    assert_eq!(bench["metadata"]["tests_run"], json!(["add"]));
    assert_eq!(
        bench["run_summary"]["gpt"]["pass_rate"],
        json!({"mean": 1.0, "stddev": 0.0})
    );
    assert_eq!(
        bench["run_summary"]["claude"]["cost_usd"],
        json!({"mean": 0.25, "stddev": 0.0})
    );
    assert_eq!(
        bench["per_grader_summary"]["kw:keywords"],
        json!({"mean": 0.75, "stddev": 0.25})
    );
}

/// Ids that are no file name (`..`, a path, control characters, a huge id) stay inside the
/// directory; secrets never reach any file.
#[test]
fn hostile_ids_stay_inside_and_secrets_never_reach_a_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("out");
    let secrets = Secrets::default();
    secrets.add("sk-run-dir-secret");
    let mut sink = RunDirectory::create(&dir, info(), secrets.clone()).expect("created");
    let long = "x".repeat(5000);
    for id in ["..", "../escape", "a/b", "tab\there", long.as_str()] {
        let leak = json!({"candidate_answer": "key sk-run-dir-secret", "error": "sk-run-dir-secret"});
        sink.write(&Row::redact(&record(id, "t", 1.0, leak), &secrets))
            .expect("written");
    }
    sink.finish().expect("finished");
    let mut files = 0;
    for entry in walkdir::WalkDir::new(tmp.path()).min_depth(1).into_iter().flatten() {
        let path = entry.path();
        assert!(path.starts_with(&dir), "{} escaped", path.display());
        if entry.file_type().is_file() {
            files += 1;
            let text = std::fs::read_to_string(path).expect("text");
            assert!(
                !text.contains("sk-run-dir-secret"),
                "{} holds the secret",
                path.display()
            );
        }
    }
    assert!(files > 20, "{files} files");
    let rows = index(&dir);
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[1]["artifact_dir"], "suite/.._escape");
    assert_eq!(rows[2]["artifact_dir"], "suite/a_b");
}

#[test]
fn a_file_where_the_directory_should_be_is_an_error() {
    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("taken");
    std::fs::write(&file, "x").expect("write");
    let err = RunDirectory::create(&file, info(), Secrets::default())
        .err()
        .expect("an error");
    assert!(err.to_string().contains("is a file, not a directory"), "{err}");
}
