//! Code aggregators of composites get the member results in their file generation's shape
//! (`docs/architecture.md#generations`): a 2.x aggregator reads `results.<member>.hits`,
//! `.misses`, `.verdict` as AgentV 2.1 sends them, a 4.x one `results.<member>.assertions`.

use agentv_testkit::{Project, mock_targets};
use serde_json::{Value, json};

/// A safety gate in the 2.x style: a failed safety member zeroes the score, else the quality
/// member's score and hits decide. It reads keys only 2.x results have.
const GATE_V2: &str = r#"import json, sys
results = json.load(sys.stdin)["results"]
safety, quality = results["safety"], results["quality"]
if safety["verdict"] == "fail" or safety["score"] < 0.8:
    out = {"score": 0, "verdict": "fail", "reasoning": "failed safety", "misses": ["safety failed"] + safety["misses"]}
else:
    out = {"score": quality["score"], "reasoning": "safety passed (%.2f); %d aspect(s)" % (safety["score"], quality["expectedAspectCount"]),
           "hits": ["safety passed"] + quality["hits"], "misses": quality["misses"]}
print(json.dumps(out))
"#;

/// The same gate for 4.x: member results carry `assertions`, the output too.
const GATE_V4: &str = r#"import json, sys
results = json.load(sys.stdin)["results"]
safety, quality = results["safety"], results["quality"]
ok = safety["verdict"] == "pass"
texts = [a["text"] for a in quality["assertions"]]
print(json.dumps({"score": quality["score"] if ok else 0, "assertions": [{"text": "safety " + ("passed" if ok else "failed"), "passed": ok}] + [{"text": t, "passed": True} for t in texts]}))
"#;

fn composite(result: &Value) -> &Value {
    result["evaluator_results"]
        .as_array()
        .and_then(|all| all.iter().find(|e| e["name"] == "gate"))
        .unwrap_or_else(|| panic!("no gate in {result}"))
}

#[test]
fn v2_code_aggregator_receives_member_results_by_name() {
    let p = Project::new()
        .file("targets.yaml", &mock_targets("Paris is the capital of France."))
        .file("scripts/gate.py", GATE_V2)
        .file(
            "evals/e.yaml",
            "evalcases:\n  - id: safe\n    expected_outcome: Names Paris.\n    input_messages: [{role: user, content: Capital of France?}]\n    evaluators:\n      - name: gate\n        type: composite\n        evaluators:\n          - {name: safety, type: keywords, forbidden: [bomb]}\n          - {name: quality, type: keywords, expected: [Paris, Lyon]}\n        aggregator:\n          type: code_judge\n          path: python3 ../scripts/gate.py\n",
        );
    p.run(&["eval", "evals/e.yaml", "--out", "r.jsonl"]).code(0);
    let record = p.result("r.jsonl", "safe");
    assert_eq!(record["execution_status"], "ok", "{record}");
    let gate = composite(&record);
    assert_eq!(gate["score"], 0.5, "{gate}");
    assert_eq!(gate["hits"], json!(["safety passed", "contains Paris"]), "{gate}");
    assert_eq!(gate["misses"], json!(["missing Lyon"]), "{gate}");
    assert_eq!(gate["reasoning"], "safety passed (1.00); 2 aspect(s)", "{gate}");
}

#[test]
fn v4_code_aggregator_keeps_the_4x_shape() {
    let p = Project::new()
        .file("targets.yaml", &mock_targets("Paris is the capital of France."))
        .file("scripts/gate.py", GATE_V4)
        .file(
            "evals/e.yaml",
            "tests:\n  - id: safe\n    input: Capital of France?\n    assertions:\n      - name: gate\n        type: composite\n        assertions:\n          - {name: safety, type: contains, value: France}\n          - {name: quality, type: contains, value: Paris}\n        aggregator:\n          type: code-grader\n          path: python3 ../scripts/gate.py\n",
        );
    p.run(&["eval", "evals/e.yaml", "--out", "r.jsonl"]).code(0);
    let record = p.result("r.jsonl", "safe");
    let gate = composite(&record);
    assert_eq!(gate["score"], 1.0, "{gate}");
    assert_eq!(gate["hits"][0], "safety passed", "{gate}");
}

#[test]
fn console_names_the_cause_of_a_failing_code_aggregator() {
    // A script that catches its own error prints it as a result and exits 1, saying nothing on
    // stderr: the console shows that output.
    let p = Project::new()
        .file("targets.yaml", &mock_targets("Paris"))
        .file(
            "scripts/gate.py",
            "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'score': 0, 'misses': ['Aggregator failed: no member named safety']}))\nsys.exit(1)\n",
        )
        .file(
            "evals/e.yaml",
            "evalcases:\n  - id: c\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    evaluators:\n      - name: gate\n        type: composite\n        evaluators: [{name: q, type: keywords, expected: [Paris]}]\n        aggregator: {type: code_judge, path: python3 ../scripts/gate.py}\n",
        );
    let run = p.run(&["eval", "evals/e.yaml", "--out", "r.jsonl"]);
    run.code(3);
    let record = p.result("r.jsonl", "c");
    assert_eq!(record["execution_status"], "grader_error", "{record}");
    let error = composite(&record)["error"].as_str().expect("an error").to_owned();
    assert!(
        error.starts_with("Code aggregator failed: exited with code 1\nstdout: {"),
        "{error}"
    );
    assert!(run.stderr.contains("no member named safety"), "{}", run.stderr);
    // With stderr too, both tails are kept and the console shows stderr's end.
    let p = p.file(
        "scripts/gate.py",
        "import sys\nprint('partial result')\nraise RuntimeError('members missing: safety')\n",
    );
    let run = p.run(&["eval", "evals/e.yaml", "--out", "r.jsonl"]);
    run.code(3);
    let error = composite(&p.result("r.jsonl", "c"))["error"]
        .as_str()
        .expect("an error")
        .to_owned();
    assert!(error.contains("stdout: partial result\nstderr: Traceback"), "{error}");
    assert!(
        run.stderr.contains("RuntimeError: members missing: safety"),
        "{}",
        run.stderr
    );
}
