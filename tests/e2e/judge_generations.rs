//! Code judges written for AgentV 2.x and for 4.x grade the same suite unchanged
//! (`docs/architecture.md#code-judge-contract`): the payload carries both key sets, and both result
//! shapes are read.

use agentv_testkit::Project;
use serde_json::{Value, json};

/// A target whose answer calls a tool, then names Paris.
const TARGETS: &str = r#"targets:
  - name: default
    provider: mock
    response: '{"output_messages": [{"role": "assistant", "tool_calls": [{"tool": "searchDocs", "input": {"query_text": "capital of France"}, "output": ["Paris"]}]}, {"role": "assistant", "content": "Paris is the capital of France."}]}'
"#;

/// Two cases; the second expects a city the answer does not name.
const SUITE: &str = "\
execution:
  evaluators:
    - name: old
      type: code_judge
      script: [python3, judges/v2.py]
      keywords: [Paris]
    - name: new
      type: code_judge
      script: [python3, judges/v4.py]
      keywords: [Paris]
evalcases:
  - id: paris
    expected_outcome: Names Paris.
    input_messages: [{role: user, content: What is the capital of France?}]
  - id: lyon
    expected_outcome: Names Lyon.
    input_messages: [{role: user, content: What is the capital of France?}]
";

/// A 2.x judge: reads `candidate_answer` and `expected_outcome`, prints hits and misses.
const V2_JUDGE: &str = r#"import json, sys
p = json.load(sys.stdin)
answer, outcome = p["candidate_answer"], p["expected_outcome"]
hits, misses = [], []
for word in p["config"]["keywords"] + [outcome.split()[-1].rstrip(".")]:
    (hits if word in answer else misses).append("mentions " + word)
tools = sorted(p["trace_summary"]["tool_calls_by_name"])
print(json.dumps({"score": len(hits) / (len(hits) + len(misses)), "hits": hits, "misses": misses,
                  "reasoning": "2.x judge", "details": {"tools": tools}}))
"#;

/// A 4.x judge: reads `output`, `criteria`, `messages` and `trace_summary.tool_calls`, prints
/// assertions (with evidence) and no score.
const V4_JUDGE: &str = r#"import json, sys
p = json.load(sys.stdin)
out, criteria = p["output"], p["criteria"]
wanted = criteria.split()[-1].rstrip(".")
assertions = [
    {"text": "mentions " + w, "passed": w in out, "evidence": out[:40]}
    for w in p["config"]["keywords"] + [wanted]
]
first = p["messages"][0]
assertions.append({"text": "sees the question", "passed": first["role"] == "user" and "capital" in first["content"]})
assertions.append({"text": "sees the tool call", "passed": p["trace_summary"]["tool_calls"] == {"searchDocs": 1}})
passed = all(a["passed"] for a in assertions)
print(json.dumps({"assertions": assertions, "verdict": "pass" if passed else "fail"}))
"#;

fn project() -> Project {
    Project::new()
        .file("targets.yaml", TARGETS)
        .file("judges/v2.py", V2_JUDGE)
        .file("judges/v4.py", V4_JUDGE)
        .file("e.yaml", SUITE)
}

fn evaluator<'a>(record: &'a Value, name: &str) -> &'a Value {
    record["evaluator_results"]
        .as_array()
        .and_then(|all| all.iter().find(|e| e["name"] == name))
        .unwrap_or_else(|| panic!("no evaluator {name} in {record}"))
}

#[test]
fn judges_of_both_generations_grade_the_same_suite() {
    let p = project();
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);

    let paris = p.result("r.jsonl", "paris");
    assert_eq!(paris["execution_status"], "ok");
    let old = evaluator(&paris, "old");
    assert_eq!(old["score"], 1.0);
    assert_eq!(old["hits"], json!(["mentions Paris", "mentions Paris"]));
    assert_eq!(old["details"], json!({"tools": ["searchDocs"]}));
    assert!(old.get("error").is_none(), "{old}");
    let new = evaluator(&paris, "new");
    assert_eq!(new["score"], 1.0, "no score printed: passed / total of the assertions");
    assert_eq!(
        new["hits"],
        json!([
            "mentions Paris",
            "mentions Paris",
            "sees the question",
            "sees the tool call"
        ])
    );
    assert_eq!(new["misses"], json!([]));
    assert_eq!(
        new["details"]["assertions"][0],
        json!({"text": "mentions Paris", "passed": true, "evidence": "Paris is the capital of France."}),
        "4.x evidence is kept"
    );

    let lyon = p.result("r.jsonl", "lyon");
    assert_eq!(lyon["execution_status"], "ok", "a low grade is still a grade");
    let old = evaluator(&lyon, "old");
    assert_eq!(
        (old["score"].as_f64(), &old["misses"]),
        (Some(0.5), &json!(["mentions Lyon"]))
    );
    let new = evaluator(&lyon, "new");
    assert_eq!(new["score"], 0.75);
    assert_eq!(new["misses"], json!(["mentions Lyon"]));
    assert!(new.get("error").is_none(), "{new}");
}

#[test]
fn the_payload_carries_both_key_sets_with_the_same_values() {
    let p = project()
        .file("judges/dump.sh", "cat > payload.json; echo '{\"score\": 1}'\n")
        .file(
            "e.yaml",
            &SUITE.replace("script: [python3, judges/v2.py]", "script: [sh, judges/dump.sh]"),
        );
    p.run(&["eval", "e.yaml", "--eval-id", "paris", "--out", "r.jsonl"])
        .code(0);
    let sent: Value = serde_json::from_str(&std::fs::read_to_string(p.path().join("payload.json")).expect("dumped"))
        .expect("one JSON object");
    assert_eq!(sent["criteria"], sent["expected_outcome"]);
    assert_eq!(sent["output"], sent["candidate_answer"]);
    assert_eq!(sent["output"], "Paris is the capital of France.");
    assert_eq!(sent["expected_output"], sent["expected_messages"]);
    assert_eq!(
        sent["input"],
        json!([{"role": "user", "content": "What is the capital of France?"}])
    );
    assert_eq!(
        sent["messages"][0], sent["input"][0],
        "the transcript starts with the prompt"
    );
    let transcript = sent["messages"].as_array().expect("a list");
    assert_eq!(transcript[1..], sent["output_messages"].as_array().expect("a list")[..]);
    assert_eq!(sent["trace_summary"]["tool_calls"], json!({"searchDocs": 1}));
    assert_eq!(sent["trace_summary"]["tool_calls_by_name"], json!({"searchDocs": 1}));
    assert_eq!(sent["trace"]["events"][0]["tool"]["name"], "searchDocs");
    assert_eq!(
        sent["trace"]["events"][0]["tool"]["input"],
        json!({"query_text": "capital of France"})
    );
    for unknown in ["start_time", "end_time", "file_changes", "workspace_path"] {
        assert_eq!(sent[unknown], Value::Null, "{unknown} is sent as null");
    }
    assert_eq!(sent["metadata"], json!({}));
}

#[test]
fn a_long_answer_reaches_4x_judges_through_output_path() {
    let answer = "Paris. ".repeat(10_000);
    let targets = format!("targets:\n  - name: default\n    provider: mock\n    response: {answer:?}\n");
    let judge = r#"import json, sys
p = json.load(sys.stdin)
assert p["output"] is None, "a long answer is not inline"
with open(p["output_path"], encoding="utf-8") as f:
    stored = json.load(f)
same = stored == p["candidate_answer"]
print(json.dumps({"score": 1 if same else 0, "hits": [str(len(stored))]}))
"#;
    let suite = "execution:\n  evaluators: [{name: long, type: code_judge, script: [python3, judges/long.py]}]\nevalcases:\n  - id: long\n    expected_outcome: Names Paris.\n    input_messages: [{role: user, content: q}]\n";
    let p = Project::new()
        .file("targets.yaml", &targets)
        .file("judges/long.py", judge)
        .file("e.yaml", suite);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    let r = p.result("r.jsonl", "long");
    let ev = evaluator(&r, "long");
    assert_eq!((ev["score"].as_f64(), ev.get("error")), (Some(1.0), None), "{ev}");
    let sent = r["candidate_answer"].as_str().expect("the answer");
    assert!(sent.len() > 50_000, "the answer is long: {}", sent.len());
    assert_eq!(ev["hits"], json!([sent.chars().count().to_string()]));
}
