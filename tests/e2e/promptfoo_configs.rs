//! promptfoo configs run as they are: prompts × providers × tests, against the kit's fake
//! OpenAI server, `echo` and an `exec:` script, with promptfoo's pass/fail, scores, exit codes
//! and JSON output.

#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test reads as one scenario, its table and checks in one place"
)]

use agentv_testkit::llm::FakeLlm;
use agentv_testkit::{Project, make_executable};
use serde_json::{Value, json};

const KEY: &str = "sk-promptfoo-e2e-secret";

/// A typical config: two prompts (one a file), three providers, inline and CSV tests with list
/// vars, `defaultTest`, and contains / icontains / equals / regex / not- / weight / metric /
/// threshold / assert-set.
fn config(base: &str) -> String {
    format!(
        r#"description: capitals
prompts:
  - "Answer: {{{{ question }}}}"
  - file://prompt.txt
providers:
  - id: openai:chat:gpt-4o-mini
    label: fake-gpt
    config:
      apiBaseUrl: {base}/v1
      temperature: 0
  - echo
  - exec:./agent.sh
defaultTest:
  assert:
    - type: icontains
      value: "{{{{ question }}}}"
      metric: mentions
tests:
  - vars:
      question: [2+2, What is 2+2]
    assert:
      - type: contains
        value: "4"
        weight: 2
      - type: not-equals
        value: nothing
  - description: thresholded
    threshold: 0.5
    vars: {{question: capital}}
    assert:
      - type: regex
        value: "cap.tal"
      - type: contains
        value: never-there
  - file://tests.csv
"#
    )
}

fn project(base: &str) -> Project {
    let p = Project::new()
        .file("promptfooconfig.yaml", &config(base))
        .file("prompt.txt", "Q: {{ question | upper }}\n")
        .file("tests.csv", "question,__expected\nhello,contains:hello\n")
        .file("agent.sh", "#!/bin/sh\nprintf 'agent says: %s' \"$1\"\n");
    make_executable(&p.path().join("agent.sh"));
    p
}

/// The rows of the promptfoo JSON output `name`.
pub(super) fn rows(p: &Project, name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(p.path().join(name)).expect("promptfoo JSON output");
    let doc: Value = serde_json::from_str(&text).expect("json");
    doc["results"]["results"].as_array().cloned().unwrap_or_default()
}

/// Each record's case id, target and execution status, in file order.
pub(super) fn statuses(p: &Project, results: &str) -> Vec<(Value, Value, Value)> {
    p.results(results)
        .iter()
        .map(|r| (r["eval_id"].clone(), r["target"].clone(), r["execution_status"].clone()))
        .collect()
}

#[tokio::test]
async fn a_typical_promptfoo_config_runs_with_promptfoos_pass_fail_and_scores() {
    let server = FakeLlm::start().await;
    let p = project(&server.uri());
    let mut cmd = p.command(&["eval", "promptfooconfig.yaml", "--out", "out.json"]);
    cmd.env("OPENAI_API_KEY", KEY);
    let run = p.output_async(cmd).await;
    // Some rows fail: promptfoo's gate, exit 1.
    run.code(1);
    let rows = rows(&p, "out.json");
    // 4 tests (one list var of two, one thresholded, one from CSV) × 2 prompts × 3 providers.
    assert_eq!(rows.len(), 24);
    let got: Vec<(u64, u64, String, bool, f64)> = rows
        .iter()
        .map(|r| {
            let provider = match r["provider"]["label"].as_str() {
                Some(l) if !l.is_empty() => l.to_owned(),
                _ => r["provider"]["id"].as_str().unwrap_or_default().to_owned(),
            };
            (
                r["testIdx"].as_u64().unwrap_or(99),
                r["promptIdx"].as_u64().unwrap_or(99),
                provider,
                r["success"].as_bool().unwrap_or_default(),
                r["score"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    // The fake model answers "2+2 is 4." whatever it is asked; echo returns the prompt; the
    // script prefixes it. These are promptfoo 0.121.20's rows for this config and answers.
    let want: Vec<(u64, u64, &str, bool, f64)> = vec![
        (0, 0, "fake-gpt", true, 1.0),
        (0, 1, "fake-gpt", true, 1.0),
        (0, 2, "echo", false, 0.5),
        (0, 3, "echo", false, 0.5),
        (0, 4, "exec:./agent.sh", false, 0.5),
        (0, 5, "exec:./agent.sh", false, 0.5),
        (1, 0, "fake-gpt", false, 0.75),
        (1, 1, "fake-gpt", false, 0.75),
        (1, 2, "echo", false, 0.5),
        (1, 3, "echo", false, 0.5),
        (1, 4, "exec:./agent.sh", false, 0.5),
        (1, 5, "exec:./agent.sh", false, 0.5),
        (2, 0, "fake-gpt", false, 0.0),
        (2, 1, "fake-gpt", false, 0.0),
        (2, 2, "echo", true, 2.0 / 3.0),
        (2, 3, "echo", false, 1.0 / 3.0),
        (2, 4, "exec:./agent.sh", true, 2.0 / 3.0),
        (2, 5, "exec:./agent.sh", false, 1.0 / 3.0),
        (3, 0, "fake-gpt", false, 0.0),
        (3, 1, "fake-gpt", false, 0.0),
        (3, 2, "echo", true, 1.0),
        (3, 3, "echo", false, 0.5),
        (3, 4, "exec:./agent.sh", true, 1.0),
        (3, 5, "exec:./agent.sh", false, 0.5),
    ];
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((g.0, g.1, g.2.as_str(), g.3), (w.0, w.1, w.2, w.3), "{g:?}");
        assert!((g.4 - w.4).abs() < 1e-9, "{g:?} vs {w:?}");
    }
    // Rows carry promptfoo's keys: vars, prompt label, named scores, every assertion.
    assert_eq!(rows[0]["vars"], json!({"question": "2+2"}));
    assert_eq!(rows[0]["prompt"]["label"], "Answer: {{ question }}");
    assert_eq!(rows[1]["prompt"]["label"], "prompt.txt: Q: {{ question | upper }}");
    assert_eq!(rows[1]["prompt"]["raw"], "Q: 2+2");
    assert_eq!(rows[0]["namedScores"], json!({"mentions": 1.0}));
    let types: Vec<&str> = rows[0]["gradingResult"]["componentResults"]
        .as_array()
        .expect("components")
        .iter()
        .filter_map(|c| c["assertion"]["type"].as_str())
        .collect();
    assert_eq!(types, ["icontains", "contains", "not-equals"]);
    // The JSONL results beside it hold the same rows, and no secret is written anywhere.
    let records = p.results("out.jsonl");
    assert_eq!(records.len(), 24);
    assert_eq!(records[0]["metadata"]["promptfoo"]["config"], "promptfooconfig.yaml");
    for file in agentv_testkit::walk(p.path()) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "{} holds the key",
            file.display()
        );
    }
    let sent = server.requests().await;
    assert_eq!(sent.len(), 8, "one call per fake-gpt row");
    let body: Value = serde_json::from_slice(&sent[0].body).expect("body");
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["temperature"], 0.0);
    // A promptfoo row sends exactly its prompt, as promptfoo does: no system message of agentv's.
    for request in &sent {
        let body: Value = serde_json::from_slice(&request.body).expect("body");
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter_map(|m| m["role"].as_str())
            .collect();
        assert_eq!(roles, ["user"], "{body}");
    }
}

#[test]
fn a_promptfoo_config_whose_rows_all_pass_exits_0() {
    let p = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: ['Hi {{name}}']\nproviders: [echo]\ntests:\n  - vars: {name: [Bob, Ann]}\n    assert: [{type: icontains, value: '{{name}}'}]\n",
    );
    p.run(&["eval", "promptfooconfig.yaml", "--out", "r.jsonl"]).code(0);
    let records = p.results("r.jsonl");
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|r| r["verdict"] == "pass"), "{records:?}");
}

#[test]
fn an_unsupported_assertion_makes_its_rows_invalid_and_the_run_incomplete() {
    let p = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: ['Hi']\nproviders: [echo, 'exec:echo Hi']\ntests:\n  - assert: [{type: no-such-type}]\n  - assert: [{type: contains, value: Hi}]\n",
    );
    p.run(&["eval", "promptfooconfig.yaml", "--out", "r.jsonl"])
        .code(3)
        .stderr_has("promptfooconfig.yaml:4:")
        .stderr_has("assertion type `no-such-type` is not supported by agentv");
    assert_eq!(
        statuses(&p, "r.jsonl"),
        vec![
            (json!("test-1"), json!("echo"), json!("invalid")),
            (json!("test-1"), json!("exec:echo Hi"), json!("invalid")),
            (json!("test-2"), json!("echo"), json!("ok")),
            (json!("test-2"), json!("exec:echo Hi"), json!("ok")),
        ],
        "the invalid row is recorded on each provider, and the other test still runs"
    );
}

#[test]
fn an_unknown_provider_stops_the_run_before_anything_is_called() {
    let p = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: ['Hi']\nproviders: [bedrock:anything]\ntests: [{vars: {}}]\n",
    );
    p.run(&["eval", "promptfooconfig.yaml"])
        .code(2)
        .stderr_has("provider `bedrock:anything` is not supported by agentv");
}

#[test]
fn the_deterministic_promptfoo_example_runs_offline_with_promptfoos_rows() {
    let p = Project::new();
    let out = p.path().join("out.json");
    let out = out.to_str().expect("utf-8 path");
    let run = p.output(&mut agentv_testkit::agentv(
        &agentv_testkit::repo_root(),
        &[
            "eval",
            "examples/promptfoo/deterministic/promptfooconfig.yaml",
            "--out",
            out,
        ],
    ));
    run.code(1);
    // promptfoo 0.121.20's rows for this config: (testIdx, promptIdx, success, score).
    let want: [(u64, u64, bool, f64); 24] = [
        (0, 0, true, 1.0),
        (0, 1, true, 1.0),
        (0, 2, false, 0.5),
        (0, 3, false, 0.5),
        (1, 0, true, 1.0),
        (1, 1, true, 1.0),
        (1, 2, false, 0.0),
        (1, 3, false, 0.0),
        (2, 0, true, 1.0),
        (2, 1, true, 1.0),
        (2, 2, false, 0.0),
        (2, 3, false, 0.0),
        (3, 0, true, 0.5),
        (3, 1, true, 0.5),
        (3, 2, false, 0.0),
        (3, 3, false, 0.0),
        (4, 0, true, 1.0),
        (4, 1, true, 1.0),
        (4, 2, false, 0.0),
        (4, 3, false, 0.0),
        (5, 0, false, 0.0),
        (5, 1, false, 0.0),
        (5, 2, false, 0.0),
        (5, 3, false, 0.0),
    ];
    let rows = rows(&p, "out.json");
    let got: Vec<(u64, u64, bool, f64)> = rows
        .iter()
        .map(|r| {
            (
                r["testIdx"].as_u64().unwrap_or(99),
                r["promptIdx"].as_u64().unwrap_or(99),
                r["success"].as_bool().unwrap_or_default(),
                r["score"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(rows[0]["namedScores"], json!({"on-topic": 0.0, "correct": 1.0}));
}

#[test]
fn scenarios_run_after_the_tests_with_each_config_entry() {
    let p = Project::new().file(
        "promptfooconfig.yaml",
        r#"prompts: ["Say {{word}} in {{lang}} ({{tone}})"]
providers: [echo]
defaultTest:
  vars: {tone: warm}
  assert: [{type: icontains, value: "{{tone}}"}]
tests:
  - vars: {word: top, lang: en}
scenarios:
  - config:
      - vars: {lang: fr}
      - vars: {lang: de}
        assert: [{type: contains, value: de}]
    tests:
      - vars: {word: hi}
      - description: es override
        vars: {word: bye, lang: es}
        assert: [{type: equals, value: y}]
"#,
    );
    p.run(&["eval", "promptfooconfig.yaml", "--out", "out.json"]).code(1);
    // promptfoo 0.121.20's rows for this config.
    let got: Vec<(u64, Value, bool, f64)> = rows(&p, "out.json")
        .iter()
        .map(|r| {
            (
                r["testIdx"].as_u64().unwrap_or(99),
                r["vars"].clone(),
                r["success"].as_bool().unwrap_or_default(),
                r["score"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    let want = vec![
        (0, json!({"tone": "warm", "word": "top", "lang": "en"}), true, 1.0),
        (1, json!({"tone": "warm", "lang": "fr", "word": "hi"}), true, 1.0),
        (2, json!({"tone": "warm", "lang": "es", "word": "bye"}), false, 0.5),
        (3, json!({"tone": "warm", "lang": "de", "word": "hi"}), true, 1.0),
        (
            4,
            json!({"tone": "warm", "lang": "es", "word": "bye"}),
            false,
            1.0 / 3.0,
        ),
    ];
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((g.0, &g.1, g.2), (w.0, &w.1, w.2), "{g:?}");
        assert!((g.3 - w.3).abs() < 1e-9, "{g:?} vs {w:?}");
    }
}

/// Script, JSON, SQL and HTML assertions in one config: `javascript` and `python` read the
/// test's `vars` from promptfoo's `context`, and `not-` inverts each check once.
#[test]
fn script_and_structured_assertions_read_the_tests_vars() {
    if !agentv_testkit::toolchains::require("node", "the javascript assertions")
        || !agentv_testkit::toolchains::require("python3", "the python assertions")
    {
        return;
    }
    let p = Project::new().file(
        "promptfooconfig.yaml",
        r#"prompts: ["{{answer}}"]
providers: [echo]
tests:
  - description: json
    vars:
      answer: '{"city": "Paris", "n": 2}'
      city: Paris
    assert:
      - type: is-json
        value: {type: object, required: [city, n]}
      - type: javascript
        value: JSON.parse(output).city === context.vars.city
      - type: python
        value: "json.loads(output)['n'] == 2 and context['vars']['city'] in output"
      - type: not-is-sql
  - description: sql
    vars:
      answer: SELECT id FROM users WHERE id = 1
      city: Rome
    assert:
      - type: is-sql
      - type: not-contains-html
      - type: javascript
        value: output.includes(context.vars.city)
  - description: html
    vars:
      answer: <div><p>Hello</p></div>
      city: Oslo
    assert:
      - type: contains-html
      - type: python
        value: "context['vars']['city'] == 'Oslo'"
      - type: not-javascript
        value: output.includes(context.vars.city)
"#,
    );
    p.run(&["eval", "promptfooconfig.yaml", "--out", "out.json"]).code(1);
    let rows = rows(&p, "out.json");
    let got: Vec<(bool, f64)> = rows
        .iter()
        .map(|r| {
            (
                r["success"].as_bool().unwrap_or_default(),
                r["score"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    assert_eq!(got.len(), 3, "{rows:?}");
    assert_eq!(got[0], (true, 1.0), "{}", rows[0]["gradingResult"]);
    assert!(!got[1].0, "Rome is not in the SQL answer: {}", rows[1]["gradingResult"]);
    assert!((got[1].1 - 2.0 / 3.0).abs() < 1e-9, "{}", rows[1]["gradingResult"]);
    assert_eq!(got[2], (true, 1.0), "{}", rows[2]["gradingResult"]);
    let reasons: Vec<String> = rows[1]["gradingResult"]["componentResults"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["reason"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        reasons.iter().any(|r| r.starts_with("Custom function returned false")),
        "{reasons:?}"
    );
}

/// promptfoo 0.121.20's `results.prompts[].metrics.namedScores` for
/// `compat/promptfoo/derived-metrics/promptfooconfig.yaml`, derived metrics among them.
#[test]
fn derived_metrics_are_computed_per_prompt_as_promptfoo_computes_them() {
    let config = std::fs::read_to_string(
        agentv_testkit::repo_root().join("compat/promptfoo/derived-metrics/promptfooconfig.yaml"),
    )
    .expect("the compat config");
    let p = Project::new().file("promptfooconfig.yaml", &config);
    p.run(&["eval", "promptfooconfig.yaml", "--out", "out.json"]).code(1);
    let text = std::fs::read_to_string(p.path().join("out.json")).expect("promptfoo JSON output");
    let doc: Value = serde_json::from_str(&text).expect("json");
    let named: Vec<&Value> = doc["results"]["prompts"]
        .as_array()
        .expect("prompts")
        .iter()
        .map(|p| &p["metrics"]["namedScores"])
        .collect();
    assert_eq!(
        named,
        [
            &json!({"accuracy": 3.0, "tone": 3.0, "mean_accuracy": 1.0, "blend": 0.5625,
                    "uses_mean": 99.0, "unknown_name": 0.0, "rows": 3.0}),
            &json!({"accuracy": 3.0, "tone": 1.0, "mean_accuracy": 1.0, "blend": 0.3125,
                    "uses_mean": 99.0, "unknown_name": 0.0, "rows": 3.0}),
        ]
    );
}

#[test]
fn a_derived_metric_that_is_not_an_expression_stops_the_config_at_its_line() {
    let p = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: ['Hi']\nproviders: [echo]\ntests: [{vars: {}}]\nderivedMetrics:\n  - name: bad\n    value: 'accuracy % 2'\n",
    );
    p.run(&["eval", "promptfooconfig.yaml"])
        .code(2)
        .stderr_has("promptfooconfig.yaml:6:")
        .stderr_has("derived metric `bad` is not an expression agentv reads: `%` is not allowed");
}
