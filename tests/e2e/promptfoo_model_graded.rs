//! promptfoo's model-graded assertions in a config run end to end against the kit's fake
//! OpenAI server: the grading provider from `defaultTest.options.provider`, promptfoo's grading
//! prompts sent as its messages, promptfoo's pass and score, grader errors as incomplete rows.

use agentv_testkit::Project;
use agentv_testkit::llm::FakeLlm;
use serde_json::Value;

const KEY: &str = "sk-promptfoo-graded-secret";

/// The grading model answers by what its prompt holds; the target answers `Paris.`.
const SCRIPT: &str = r#"
- when: "Names Paris"
  steps: [{text: unused}]
  verdict: '{"reason": "names Paris", "pass": true, "score": 0.9}'
- when: "Names Lyon"
  steps: [{text: unused}]
  verdict: '{"reason": "no Lyon", "pass": false, "score": 0.1}'
- when: "says which city"
  steps: [{text: unused}]
  verdict: "It names Paris.\nY\nY"
- when: "Is garbled"
  steps: [{text: unused}]
  verdict: "I would rather not say."
- when: "capital of France"
  steps: [{text: "Paris."}]
"#;

fn config(base: &str, asserts: &str) -> String {
    format!(
        r#"prompts: ["{{{{ question }}}}"]
providers:
  - id: openai:chat:target-model
    config: {{apiBaseUrl: "{base}/v1"}}
defaultTest:
  options:
    provider:
      text: {{id: openai:chat:grader-model, config: {{apiBaseUrl: "{base}/v1"}}}}
      embedding: {{id: openai:embedding:embed-model, config: {{apiBaseUrl: "{base}/v1"}}}}
      moderation: {{id: openai:moderation:omni-moderation-latest, config: {{apiBaseUrl: "{base}/v1"}}}}
tests:
  - vars: {{question: "What is the capital of France?"}}
    assert:
{asserts}"#
    )
}

async fn server() -> FakeLlm {
    FakeLlm::scripted(SCRIPT).await
}

fn components(p: &Project) -> Vec<Value> {
    let text = std::fs::read_to_string(p.path().join("out.json")).expect("promptfoo JSON output");
    let doc: Value = serde_json::from_str(&text).expect("json");
    doc["results"]["results"][0]["gradingResult"]["componentResults"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn model_graded_assertions_send_promptfoos_prompts_to_the_tests_grading_provider() {
    let server = server().await;
    let asserts = "      - {type: llm-rubric, value: Names Paris}\n      - {type: llm-rubric, value: Names Lyon}\n      - {type: model-graded-closedqa, value: says which city}\n      - {type: similar, value: Paris., threshold: 0.99}\n      - {type: moderation}\n";
    let p = Project::new().file("promptfooconfig.yaml", &config(&server.uri(), asserts));
    let mut cmd = p.command(&["eval", "promptfooconfig.yaml", "--out", "out.json"]);
    cmd.env("OPENAI_API_KEY", KEY);
    let run = p.output_async(cmd).await;
    run.code(1);
    let got: Vec<(String, bool, f64)> = components(&p)
        .iter()
        .map(|c| {
            (
                c["assertion"]["type"].as_str().unwrap_or_default().to_owned(),
                c["pass"].as_bool().unwrap_or_default(),
                c["score"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("llm-rubric".to_owned(), true, 0.9),
            ("llm-rubric".to_owned(), false, 0.1),
            ("model-graded-closedqa".to_owned(), true, 1.0),
            ("similar".to_owned(), true, 1.0),
            ("moderation".to_owned(), true, 1.0),
        ],
        "{}",
        run.stdout
    );
    let requests = server.requests().await;
    let bodies: Vec<Value> = requests
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
        .collect();
    let graded: Vec<&Value> = bodies.iter().filter(|b| b["model"] == "grader-model").collect();
    assert_eq!(
        graded.len(),
        3,
        "two rubrics and one closed QA went to the grading provider"
    );
    let rubric = graded
        .iter()
        .find(|b| b.to_string().contains("Names Paris"))
        .expect("the rubric's request");
    let messages = rubric["messages"].as_array().expect("messages");
    assert_eq!(
        messages.len(),
        2,
        "promptfoo's system and user messages, nothing of agentv's"
    );
    assert_eq!(
        messages[1]["content"],
        "<Output>\nParis.\n</Output>\n<Rubric>\nNames Paris\n</Rubric>"
    );
    let embedded = requests
        .iter()
        .filter(|r| r.url.path().ends_with("/embeddings"))
        .count();
    assert_eq!(embedded, 2, "the answer and the value are embedded");
    let moderated: Vec<Value> = requests
        .iter()
        .filter(|r| r.url.path().ends_with("/moderations"))
        .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
        .collect();
    assert_eq!(moderated.len(), 1);
    assert_eq!(
        moderated[0]["input"][0]["text"], "Paris.",
        "the omni model takes text parts"
    );
}

#[tokio::test]
async fn a_grading_answer_promptfoo_cannot_read_makes_the_row_incomplete_never_passed() {
    let server = server().await;
    let p = Project::new().file(
        "promptfooconfig.yaml",
        &config(
            &server.uri(),
            "      - {type: model-graded-closedqa, value: Is garbled}\n",
        ),
    );
    let mut cmd = p.command(&["eval", "promptfooconfig.yaml", "--out", "out.json"]);
    cmd.env("OPENAI_API_KEY", KEY);
    let run = p.output_async(cmd).await;
    run.code(3);
}

#[test]
fn a_grading_provider_without_its_key_stops_the_run_before_anything_is_called() {
    let p = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: [hi]\nproviders: [echo]\ntests:\n  - assert: [{type: llm-rubric, value: polite}]\n",
    );
    let mut cmd = p.command(&["eval", "promptfooconfig.yaml"]);
    cmd.env_remove("OPENAI_API_KEY");
    let run = p.output(&mut cmd);
    run.code(2);
    assert!(
        run.stderr.contains("grader: openai:chat:gpt-5.5-2026-04-23"),
        "names promptfoo's default grader: {}",
        run.stderr
    );
}

#[test]
fn a_grading_provider_agentv_does_not_have_makes_the_rows_invalid_never_graded_by_another() {
    let p = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: [hi]\nproviders: [echo]\ntests:\n  - assert: [{type: factuality, value: hi, provider: 'bedrock:claude'}]\n  - assert: [{type: contains, value: hi}]\n",
    );
    let mut cmd = p.command(&["eval", "promptfooconfig.yaml", "--out", "out.json"]);
    let run = p.output(&mut cmd);
    run.code(3);
    assert!(
        run.stderr.contains("provider `bedrock:claude` is not supported"),
        "{}",
        run.stderr
    );
    let records = std::fs::read_to_string(p.path().join("out.jsonl")).expect("results");
    let lines: Vec<Value> = records.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(
        lines.len(),
        2,
        "one graded row, one invalid row recorded once: {records}"
    );
    assert!(
        lines.iter().all(|r| r["target"] == "echo"),
        "rows are recorded on the config's providers only, never on a grading target: {records}"
    );
}
