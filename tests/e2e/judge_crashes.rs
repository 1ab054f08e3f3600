//! A judge that crashes is a grader error, never a grade (`docs/architecture.md#grader-errors`):
//! in both file generations a grading process that dies by a signal, exits non-zero with output
//! on stderr, cannot start or times out makes its case `grader_error` and the run exit 3, and the
//! console names the cause (the end of its stderr, where a traceback says what went wrong).

use agentv_testkit::{Project, mock_targets};
use serde_json::Value;

/// A Python judge that raises after reading the payload, as a judge with an off-by-one does.
const RAISES: &str = "import json, sys\np = json.load(sys.stdin)\nprint('debug: read the payload', file=sys.stderr)\nitems = []\nitems[3]\n";

/// A judge whose traceback ends with the HTTP error that made it fail.
const HTTP_429: &str = "import json, sys\njson.load(sys.stdin)\nclass HTTPError(Exception):\n    pass\ndef call_model():\n    raise HTTPError('HTTP Error 429: Too Many Requests')\ncall_model()\n";

/// The crashes each generation must report: (grader id, command, what the error says).
const CRASHES: &[(&str, &str, &str)] = &[
    (
        "raises",
        "[python3, judges/raises.py]",
        "IndexError: list index out of range",
    ),
    ("missing-script", "[python3, judges/nope.py]", "nope.py"),
    ("missing-program", "[./judges/not-there]", "cannot start"),
    (
        "signal",
        "[sh, -c, 'cat >/dev/null; kill -9 $$']",
        "none (killed by a signal)",
    ),
    (
        "timeout",
        "[sh, -c, 'cat >/dev/null; sleep 30'], timeout_seconds: 1",
        "timed out after 1s",
    ),
];

fn v4_suite() -> String {
    let mut yaml = String::from("tests:\n");
    for (id, command, _) in CRASHES {
        yaml.push_str(&format!(
            "  - id: {id}\n    input: Capital of France?\n    criteria: Names Paris\n    assertions:\n      - {{type: contains, value: Paris}}\n      - {{name: judge, type: code-grader, command: {command}}}\n"
        ));
    }
    yaml
}

fn v2_suite() -> String {
    let mut yaml = String::from("evalcases:\n");
    for (id, command, _) in CRASHES {
        yaml.push_str(&format!(
            "  - id: {id}\n    expected_outcome: Names Paris.\n    input_messages: [{{role: user, content: Capital of France?}}]\n    evaluators:\n      - {{name: kw, type: keywords, expected: [Paris]}}\n      - {{name: judge, type: code_judge, script: {command}}}\n"
        ));
    }
    yaml
}

fn project() -> Project {
    Project::new()
        .file("targets.yaml", &mock_targets("Paris is the capital of France."))
        .file("judges/raises.py", RAISES)
        .file("judges/http429.py", HTTP_429)
        .file("v4.yaml", &v4_suite())
        .file("v2.yaml", &v2_suite())
}

fn judge_result(record: &Value) -> &Value {
    record["evaluator_results"]
        .as_array()
        .and_then(|all| all.iter().find(|e| e["name"] == "judge"))
        .unwrap_or_else(|| panic!("no judge result in {record}"))
}

#[test]
fn crashed_judge_is_a_grader_error_in_both_generations() {
    let p = project();
    for file in ["v4.yaml", "v2.yaml"] {
        let out = format!("{file}.jsonl");
        let run = p.run(&["eval", file, "--out", &out]);
        run.code(3);
        for (id, _, says) in CRASHES {
            let record = p.result(&out, id);
            assert_eq!(record["execution_status"], "grader_error", "{file} {id}: {record}");
            let judge = judge_result(&record);
            assert_eq!(judge["score"], 0.0, "{file} {id}: {judge}");
            let error = judge["error"]
                .as_str()
                .unwrap_or_else(|| panic!("{file} {id}: no error in {judge}"));
            assert!(error.contains(says), "{file} {id}: {error}");
        }
        // A 4.x grader that crashed scores 0 as AgentV 4.x records it: a failed assertion, and
        // the case score is the mean with the grader that did grade.
        if file == "v4.yaml" {
            let record = p.result(&out, "raises");
            assert_eq!(record["score"], 0.5, "{record}");
            let judge = judge_result(&record);
            assert_eq!(judge["verdict"], "fail");
            assert!(
                judge["misses"][0]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Code evaluator failed:")),
                "{judge}"
            );
        }
    }
}

#[test]
fn crashed_judge_plain_text_exit_code_convention_stays_for_4x() {
    // AgentV 4.x's own suites grade by exit code: plain text and exit 0 is a pass, a non-zero
    // exit without stderr is a fail; neither is a grader error.
    let p = Project::new().file("targets.yaml", &mock_targets("Paris")).file(
        "v4.yaml",
        "tests:\n  - id: plain-pass\n    input: q\n    assertions:\n      - {name: judge, type: code-grader, command: [sh, -c, 'cat >/dev/null; echo score=0.1']}\n  - id: plain-fail\n    input: q\n    assertions:\n      - {name: judge, type: code-grader, command: [sh, -c, 'cat >/dev/null; echo 0 of 1 checks; exit 1']}\n",
    );
    p.run(&["eval", "v4.yaml", "--out", "r.jsonl"]).code(0);
    let pass = p.result("r.jsonl", "plain-pass");
    assert_eq!(
        (pass["execution_status"].as_str(), pass["score"].as_f64()),
        (Some("ok"), Some(1.0))
    );
    let fail = p.result("r.jsonl", "plain-fail");
    assert_eq!(
        (fail["execution_status"].as_str(), fail["score"].as_f64()),
        (Some("ok"), Some(0.0))
    );
}

/// Under `--strict` (or a suite's `strict: true`) a judge that prints `score=0.1` and exits 0 is
/// a grader error, not a pass.
#[test]
fn strict_makes_plain_text_grader_output_a_grader_error() {
    let cases = "tests:\n  - id: plain-pass\n    input: q\n    assertions:\n      - {name: judge, type: code-grader, command: [sh, -c, 'cat >/dev/null; echo score=0.1']}\n";
    let p = Project::new()
        .file("targets.yaml", &mock_targets("Paris"))
        .file("v4.yaml", cases)
        .file("strict.yaml", &format!("strict: true\n{cases}"));
    for (args, out) in [
        (&["eval", "--strict", "v4.yaml", "--out", "a.jsonl"][..], "a.jsonl"),
        (&["eval", "strict.yaml", "--out", "b.jsonl"][..], "b.jsonl"),
    ] {
        p.run(args).code(3);
        let record = p.result(out, "plain-pass");
        assert_eq!(
            (record["execution_status"].as_str(), record["score"].as_f64()),
            (Some("grader_error"), Some(0.0)),
            "{args:?}: {record}"
        );
    }
}

#[test]
fn code_grader_hits_misses_and_reasoning_are_kept_as_evidence() {
    let p = Project::new().file("targets.yaml", &mock_targets("Paris")).file(
        "v4.yaml",
        "tests:\n  - id: c\n    input: q\n    assertions:\n      - name: judge\n        type: code-grader\n        command: [sh, -c, 'cat >/dev/null; echo \"{\\\"score\\\": 0.5, \\\"hits\\\": [\\\"names Paris\\\"], \\\"misses\\\": [\\\"no source\\\"], \\\"reasoning\\\": \\\"1 of 2\\\"}\"']\n",
    );
    p.run(&["eval", "v4.yaml", "--out", "r.jsonl"]).code(0);
    let record = p.result("r.jsonl", "c");
    let judge = judge_result(&record);
    assert_eq!(judge["score"], 0.5, "{judge}");
    assert_eq!(judge["hits"], serde_json::json!(["names Paris"]), "{judge}");
    assert_eq!(judge["misses"], serde_json::json!(["no source"]), "{judge}");
    assert_eq!(judge["reasoning"], "1 of 2", "{judge}");
}

#[test]
fn console_names_the_cause_of_a_crashed_judge() {
    let p = project().file(
        "http.yaml",
        "evalcases:\n  - id: rate-limited\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    evaluators:\n      - {name: judge, type: code_judge, script: [python3, judges/http429.py]}\n",
    );
    let run = p.run(&["eval", "http.yaml", "--out", "r.jsonl"]);
    run.code(3);
    // The per-case line and the failures section both show the end of the traceback.
    let shown = run
        .stderr
        .matches("HTTPError: HTTP Error 429: Too Many Requests")
        .count()
        + run
            .stdout
            .matches("HTTPError: HTTP Error 429: Too Many Requests")
            .count();
    assert!(shown >= 2, "stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
}

#[test]
fn console_names_the_cause_of_a_crashed_agent() {
    let p = Project::new()
        .file(
            "targets.yaml",
            "targets:\n  - name: default\n    provider: cli\n    command_template: python3 agent.py {PROMPT} {OUTPUT_FILE}\n",
        )
        .file("agent.py", &HTTP_429.replace("json.load(sys.stdin)\n", ""))
        .file(
            "e.yaml",
            "evalcases:\n  - id: rate-limited\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    evaluators: [{name: kw, type: keywords, expected: [x]}]\n",
        );
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    run.code(3);
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("rate-limited") && l.contains("ERROR"))
        .unwrap_or_else(|| panic!("no case line:\n{}", run.stderr));
    assert!(line.contains("HTTPError: HTTP Error 429: Too Many Requests"), "{line}");
    assert!(
        run.stdout.contains("HTTPError: HTTP Error 429: Too Many Requests"),
        "the failures section names it too:\n{}",
        run.stdout
    );
}
