//! What a promptfoo run writes: its JSONL results follow agentv's record rule (an unknown value
//! is absent, never `null`: `docs/results.md`), while `--out x.json` keeps promptfoo's own shape.

use agentv_testkit::Project;
use agentv_testkit::llm::FakeLlm;
use serde_json::Value;

/// The target answers `Paris.`; the grading model passes the rubric. Neither model has a
/// price, so no call has a cost.
const SCRIPT: &str = r#"
- when: "Names Paris"
  steps: [{text: unused}]
  verdict: '{"reason": "names Paris", "pass": true, "score": 1}'
- when: "capital of France"
  steps: [{text: "Paris."}]
"#;

/// Every path in `value` that holds `null`.
fn nulls(value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Null => out.push(path.to_owned()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| nulls(v, &format!("{path}[{i}]"), out)),
        Value::Object(map) => map.iter().for_each(|(k, v)| nulls(v, &format!("{path}.{k}"), out)),
        _ => {}
    }
}

#[tokio::test]
async fn promptfoo_results_hold_no_nulls_for_unknown_costs_or_labels() {
    let server = FakeLlm::scripted(SCRIPT).await;
    let base = server.uri();
    let config = format!(
        r#"prompts: ["{{{{ question }}}}"]
providers:
  - id: openai:chat:target-model
    config: {{apiBaseUrl: "{base}/v1"}}
defaultTest:
  options:
    provider: {{id: openai:chat:grader-model, config: {{apiBaseUrl: "{base}/v1"}}}}
tests:
  - vars: {{question: "What is the capital of France?"}}
    assert:
      - {{type: llm-rubric, value: Names Paris}}
      - {{type: contains, value: Paris}}
"#
    );
    let p = Project::new().file("promptfooconfig.yaml", &config);
    let mut cmd = p.command(&["eval", "promptfooconfig.yaml", "--out", "results.jsonl"]);
    cmd.env("OPENAI_API_KEY", "sk-no-nulls-secret");
    p.output_async(cmd).await.code(0);
    let records = p.results("results.jsonl");
    assert_eq!(records.len(), 1, "{records:?}");
    let mut found = Vec::new();
    nulls(&records[0], "", &mut found);
    assert!(found.is_empty(), "null at {found:?} in {}", records[0]);
    let rubric = &records[0]["evaluator_results"][0];
    assert_eq!(rubric["details"]["grading"]["calls"], 1, "{rubric}");
    assert!(rubric["details"]["grading"].get("cost_usd").is_none(), "{rubric}");

    let mut cmd = p.command(&["eval", "promptfooconfig.yaml", "--out", "out.json"]);
    cmd.env("OPENAI_API_KEY", "sk-no-nulls-secret");
    p.output_async(cmd).await.code(0);
    let text = std::fs::read_to_string(p.path().join("out.json")).expect("promptfoo JSON output");
    let doc: Value = serde_json::from_str(&text).expect("json");
    let row = &doc["results"]["results"][0];
    assert_eq!(row["provider"]["id"], "openai:chat:target-model", "{row}");
    assert!(row["success"].as_bool().unwrap_or_default(), "{row}");
}

/// promptfoo reads a `python` or `javascript` assertion's result apart from what it prints;
/// agentv's warm workers keep their protocol on stdout and send what the code prints to
/// stderr, so an assertion that prints is graded as promptfoo grades it.
#[test]
fn python_and_javascript_assertions_that_print_are_graded_as_promptfoo_grades_them() {
    if !agentv_testkit::toolchains::require("python3", "python assertions")
        || !agentv_testkit::toolchains::require("node", "javascript assertions")
    {
        return;
    }
    let p = Project::new()
        .file(
            "promptfooconfig.yaml",
            r#"prompts: ["{{ fruit }}"]
providers: [echo]
tests:
  - vars: {fruit: Bananas}
    assert:
      - type: python
        value: file://assert.py
      - type: python
        value: |
          print("inline:", output)
          return output.startswith("Ban")
      - type: javascript
        value: |
          console.log('checking', output);
          console.info(output);
          return output.length > 3
  - vars: {fruit: Durian}
    assert:
      - type: python
        value: file://assert.py
"#,
        )
        .file(
            "assert.py",
            "def get_assert(output, context):\n    print('Prompt:', context['prompt'])\n    print('Vars', context['vars']['fruit'])\n    return 'bananas' in output.lower()\n",
        );
    p.run(&["eval", "promptfooconfig.yaml", "--out", "results.jsonl"])
        .code(1);
    let rows: Vec<(String, f64)> = p
        .results("results.jsonl")
        .iter()
        .map(|r| {
            (
                r["verdict"].as_str().unwrap_or_default().to_owned(),
                r["score"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    let mut rows = rows;
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(rows, vec![("fail".to_owned(), 0.0), ("pass".to_owned(), 1.0)]);
}

/// `--out suite.json` writes `suite.jsonl` beside the suite; running the suite again reads
/// it as the suite, not as the suite keys of a dataset named by the results file.
#[test]
fn a_suite_runs_again_beside_its_own_results() {
    let p = Project::new().file(
        "mytests.yaml",
        "prompts: ['hi {{x}}']\nproviders: [echo]\ntests:\n  - vars: {x: 1}\n    assert: [{type: contains, value: hi}]\n",
    );
    for _ in 0..2 {
        p.run(&["eval", "mytests.yaml", "--out", "mytests.json"]).code(0);
        assert!(p.path().join("mytests.jsonl").is_file());
    }
    p.run(&["validate", "mytests.yaml"]).code(0);
}
