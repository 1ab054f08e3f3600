//! promptfoo's comparisons of a test's rows (`select-best`, `max-score`) run end to end
//! against the kit's fake OpenAI server: every prompt of a test is answered, then the rows are
//! compared, one wins, and the verdicts reach the results file and promptfoo's JSON output.

use agentv_testkit::Project;
use agentv_testkit::llm::FakeLlm;
use serde_json::Value;

const KEY: &str = "sk-promptfoo-compare-secret";

/// The target answers by the prompt's style; the grading model picks the second text.
const SCRIPT: &str = r#"
- when: "most complete"
  steps: [{text: unused}]
  verdict: "1"
- when: "nonsense criteria"
  steps: [{text: unused}]
  verdict: "I cannot choose."
- when: "Briefly:"
  steps: [{text: "Paris."}]
- when: "Fully:"
  steps: [{text: "The capital of France is Paris, on the Seine."}]
"#;

fn config(base: &str, asserts: &str) -> String {
    format!(
        r#"prompts: ["Briefly: {{{{ question }}}}", "Fully: {{{{ question }}}}"]
providers:
  - id: openai:chat:target-model
    config: {{apiBaseUrl: "{base}/v1"}}
defaultTest:
  options:
    provider: {{id: openai:chat:grader-model, config: {{apiBaseUrl: "{base}/v1"}}}}
tests:
  - vars: {{question: "What is the capital of France?"}}
    assert:
{asserts}"#
    )
}

async fn server() -> FakeLlm {
    FakeLlm::scripted(SCRIPT).await
}

/// (success, score, the comparison's (pass, score, reason)) of each row, in promptfoo's order.
/// The config with `asserts`, run against `server` with `--out out.json`.
async fn run_config(server: &FakeLlm, asserts: &str) -> (Project, agentv_testkit::process::Run) {
    let p = Project::new().file("promptfooconfig.yaml", &config(&server.uri(), asserts));
    let mut cmd = p.command(&["eval", "promptfooconfig.yaml", "--out", "out.json"]);
    cmd.env("OPENAI_API_KEY", KEY);
    let run = p.output_async(cmd).await;
    (p, run)
}

fn rows(p: &Project, kind: &str) -> Vec<(bool, f64, (bool, f64, String))> {
    let text = std::fs::read_to_string(p.path().join("out.json")).expect("promptfoo JSON output");
    let doc: Value = serde_json::from_str(&text).expect("json");
    doc["results"]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let c = r["gradingResult"]["componentResults"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["assertion"]["type"] == kind).cloned())
                .unwrap_or(Value::Null);
            (
                r["success"].as_bool().unwrap_or_default(),
                r["score"].as_f64().unwrap_or(-1.0),
                (
                    c["pass"].as_bool().unwrap_or_default(),
                    c["score"].as_f64().unwrap_or(-1.0),
                    c["reason"].as_str().unwrap_or_default().to_owned(),
                ),
            )
        })
        .collect()
}

#[tokio::test]
async fn select_best_marks_the_row_the_grading_model_picks_as_the_winner() {
    let server = server().await;
    let asserts = "      - {type: select-best, value: most complete}\n      - {type: contains, value: Paris}\n";
    let (p, run) = run_config(&server, asserts).await;
    run.code(1);
    assert_eq!(
        rows(&p, "select-best"),
        [
            (
                false,
                0.0,
                (false, 0.0, "Output not selected: most complete".to_owned())
            ),
            (
                true,
                1.0,
                (true, 1.0, "Output selected as the best: most complete".to_owned())
            ),
        ],
        "{}",
        run.stdout
    );
    let bodies: Vec<Value> = server
        .requests()
        .await
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
        .collect();
    let graded: Vec<&Value> = bodies.iter().filter(|b| b["model"] == "grader-model").collect();
    assert_eq!(graded.len(), 1, "one comparison for the test's two rows");
    let prompt = graded[0]["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(
        prompt.starts_with(
            "You are comparing multiple pieces of text to see which best fits the following criteria: most complete"
        ) && prompt.contains("<Text index=\"0\">\nParis.\n</Text>")
            && prompt.contains("<Text index=\"1\">\nThe capital of France is Paris, on the Seine.\n</Text>"),
        "{prompt}"
    );
    let results = std::fs::read_to_string(p.path().join("out.jsonl")).expect("results file");
    assert_eq!(results.lines().count(), 2, "both rows are written");
    assert!(!results.contains(KEY));
}

#[tokio::test]
async fn max_score_picks_the_row_whose_other_assertions_score_highest() {
    let server = server().await;
    let asserts =
        "      - {type: max-score}\n      - {type: contains, value: Seine}\n      - {type: contains, value: Paris}\n";
    let (p, run) = run_config(&server, asserts).await;
    run.code(1);
    assert_eq!(
        rows(&p, "max-score"),
        [
            (
                false,
                0.0,
                (false, 0.0, "Not selected (score: 0.500, max: 1.000)".to_owned())
            ),
            (
                true,
                1.0,
                (
                    true,
                    1.0,
                    "Selected as highest scoring output (score: 1.000)".to_owned()
                )
            ),
        ],
        "{}",
        run.stdout
    );
    let text = std::fs::read_to_string(p.path().join("out.json")).expect("out.json");
    let doc: Value = serde_json::from_str(&text).expect("json");
    // As promptfoo: max-score's named scores are in the row's grading result, not its own.
    let row = &doc["results"]["results"][1];
    assert_eq!(row["gradingResult"]["namedScores"]["maxScore"], 1.0);
    assert_eq!(row["namedScores"].get("maxScore"), None);
    assert!(
        server
            .requests()
            .await
            .iter()
            .all(|r| !String::from_utf8_lossy(&r.body).contains("grader-model")),
        "max-score asks no model"
    );
}

#[tokio::test]
async fn a_select_best_reply_without_an_index_makes_the_rows_incomplete_never_passed() {
    let server = server().await;
    let asserts = "      - {type: select-best, value: nonsense criteria}\n";
    let (p, run) = run_config(&server, asserts).await;
    run.code(3);
    for (success, _, (pass, _, reason)) in rows(&p, "select-best") {
        assert!(!success && !pass);
        assert_eq!(reason, "Invalid select-best verdict: NaN");
    }
}

#[test]
fn a_row_that_errored_is_never_the_winner() {
    let config = r#"prompts: ["Briefly: {{q}}", "Fully: {{q}}", "Third: {{q}}"]
providers: ["exec: sh answer.sh"]
tests:
  - vars: {q: capital}
    assert:
      - {type: max-score}
      - {type: contains, value: Paris}
"#;
    // The second prompt's call fails; the third's answer scores lowest.
    let script =
        "case \"$1\" in\n  Fully*) echo broken >&2; exit 1;;\n  Third*) echo Lyon;;\n  *) echo Paris;;\nesac\n";
    let p = Project::new()
        .file("promptfooconfig.yaml", config)
        .file("answer.sh", script);
    let run = p.run(&["eval", "promptfooconfig.yaml", "--out", "out.json"]);
    run.code(3);
    let got = rows(&p, "max-score");
    assert_eq!(got.len(), 3, "{}", run.stdout);
    assert_eq!(
        got[0],
        (
            true,
            1.0,
            (
                true,
                1.0,
                "Selected as highest scoring output (score: 1.000)".to_owned()
            )
        )
    );
    assert!(
        !got[1].0 && !got[1].2.0,
        "the row that errored neither passes nor wins: {:?}",
        got[1]
    );
    assert_eq!(
        got[2],
        (
            false,
            0.0,
            (false, 0.0, "Not selected (score: 0.000, max: 1.000)".to_owned())
        )
    );
}
