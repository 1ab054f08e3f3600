//! promptfoo providers and config options: choosing providers with `--target`, errored rows
//! in promptfoo's JSON output, script and HTTP providers against fake servers, transforms,
//! `evaluateOptions` and per-provider prompts.

use agentv_testkit::Project;
use serde_json::{Value, json};

fn rows(p: &Project, name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(p.path().join(name)).expect("promptfoo JSON output");
    let doc: Value = serde_json::from_str(&text).expect("json");
    doc["results"]["results"].as_array().cloned().unwrap_or_default()
}

const TWO_PROVIDERS: &str = r#"prompts: ['Hi {{name}}']
providers:
  - echo
  - id: 'exec:echo shouted'
    label: shout
tests:
  - vars: {name: Bob}
    assert: [{type: contains, value: Bob}]
  - vars: {name: Ann}
    assert: [{type: no-such-type}]
"#;

#[test]
fn target_on_a_promptfoo_config_selects_providers_by_id_or_label() {
    let p = Project::new().file("promptfooconfig.yaml", TWO_PROVIDERS);
    for chosen in ["shout", "exec:echo shouted"] {
        p.run(&["eval", "promptfooconfig.yaml", "--target", chosen, "--out", "out.json"])
            .code(3);
        let got: Vec<(Value, Value, Value)> = p
            .results("out.jsonl")
            .iter()
            .map(|r| (r["eval_id"].clone(), r["target"].clone(), r["execution_status"].clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (json!("test-2"), json!("shout"), json!("invalid")),
                (json!("test-1"), json!("shout"), json!("ok")),
            ],
            "--target {chosen}"
        );
    }
    p.run(&[
        "eval",
        "promptfooconfig.yaml",
        "--target",
        "echo",
        "--target",
        "shout",
        "--out",
        "both.jsonl",
    ])
    .code(3);
    assert_eq!(p.results("both.jsonl").len(), 4);
    p.run(&["eval", "promptfooconfig.yaml", "--target", "nope"])
        .code(2)
        .stderr_has("unknown target `nope`")
        .stderr_has("echo, shout");
}

#[test]
fn an_invalid_promptfoo_row_is_an_errored_row_of_the_json_output() {
    let p = Project::new().file("promptfooconfig.yaml", TWO_PROVIDERS);
    p.run(&["eval", "promptfooconfig.yaml", "--out", "out.json"]).code(3);
    let rows = rows(&p, "out.json");
    assert_eq!(rows.len(), 4, "{rows:?}");
    let errored: Vec<&Value> = rows.iter().filter(|r| r["testIdx"] == 1).collect();
    assert_eq!(errored.len(), 2);
    for row in errored {
        assert_eq!(row["success"], false);
        assert_eq!(row["failureReason"], 2, "promptfoo's ERROR reason");
        assert_eq!(row["score"], 0.0);
        assert_eq!(row["vars"], json!({"name": "Ann"}));
        let error = row["error"].as_str().unwrap_or_default();
        assert!(error.contains("no-such-type"), "{error}");
    }
}
