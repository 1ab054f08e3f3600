//! AgentV 4.x custom assertion types (`.agentv/assertions/<type>.ts|.js`, written with
//! `defineAssertion` of `@agentv/sdk`) run as code graders under node or bun, with agentv's
//! stand-in for `@agentv/sdk` when the package is not installed
//! (`docs/judges.md#custom-assertion-types`).

use agentv_testkit::{Project, mock_targets};
use serde_json::Value;

/// A word-count assertion in the style of AgentV 4.42.4's `sdk-custom-assertion` example, with a
/// minimum from the entry's config.
const WORD_COUNT: &str = r#"import { defineAssertion } from '@agentv/sdk';

export default defineAssertion(({ output, config }) => {
  const minWords = config?.minWords ?? 3;
  const words = (output ?? '').trim().split(/\s+/).filter(Boolean).length;
  const pass = words >= minWords;
  return {
    pass,
    score: pass ? 1.0 : Math.min(words / minWords, 0.9),
    reasoning: pass ? `Output has ${words} words (>= ${minWords} required)` : `Output has only ${words} words (need >= ${minWords})`,
  };
});
"#;

/// Three cases as the example has them: one long answer, one short, one JSON.
const SUITE: &str = "name: sdk-custom-assertion\ntests:\n  - id: greeting-response\n    input: Say hello and introduce yourself\n    assertions:\n      - {type: contains, value: Hello}\n      - type: word-count\n  - id: short-answer\n    input: What is 2+2?\n    assertions:\n      - {type: contains, value: '4'}\n      - {type: word-count, min_words: 8}\n  - id: json-response\n    input: Return a JSON object with name and age fields.\n    assertions:\n      - {type: is-json, required: true}\n      - type: word-count\n";

const TARGETS: &str = "targets:\n  - name: default\n    provider: mock\n    responses:\n      greeting-response: Hello! I am an AI assistant here to help.\n      short-answer: 2 + 2 = 4\n      json-response: '{\"name\": \"Alice\", \"age\": 30}'\n";

fn word_count(record: &Value) -> &Value {
    record["evaluator_results"]
        .as_array()
        .and_then(|all| all.iter().find(|e| e["name"] == "word-count"))
        .unwrap_or_else(|| panic!("no word-count grader in {record}"))
}

fn node_present() -> bool {
    let found = std::process::Command::new("node").arg("--version").output().is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "node is needed for this test under CI"
        );
        eprintln!("skipped: node is not installed");
    }
    found
}

#[test]
fn custom_assertion_types_run_as_code_graders() {
    if !node_present() {
        return;
    }
    let p = Project::new()
        .file("targets.yaml", TARGETS)
        .file(".agentv/assertions/word-count.mjs", WORD_COUNT)
        .file("evals/dataset.eval.yaml", SUITE);
    p.run(&["eval", "evals/dataset.eval.yaml", "--out", "r.jsonl"]).code(0);
    let greeting = p.result("r.jsonl", "greeting-response");
    let wc = word_count(&greeting);
    assert_eq!(wc["score"], 1.0, "{wc}");
    assert_eq!(wc["hits"][0], "Output has 9 words (>= 3 required)", "{wc}");
    // The entry's other keys reach it as config (camelCased as @agentv/sdk reads them).
    let short = p.result("r.jsonl", "short-answer");
    let wc = word_count(&short);
    assert_eq!(wc["score"], 0.625, "5 words of 8: {wc}");
    assert_eq!(wc["misses"][0], "Output has only 5 words (need >= 8)", "{wc}");
    let json = p.result("r.jsonl", "json-response");
    assert_eq!(
        word_count(&json)["hits"][0],
        "Output has 4 words (>= 3 required)",
        "{json}"
    );
    assert_eq!(json["execution_status"], "ok");
}

#[test]
fn custom_assertion_that_throws_is_a_grader_error() {
    if !node_present() {
        return;
    }
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file(
            ".agentv/assertions/boom.js",
            "import { defineAssertion } from '@agentv/sdk';\nexport default defineAssertion(() => { throw new Error('no rubric file'); });\n",
        )
        .file("e.yaml", "tests:\n  - id: c\n    input: q\n    assertions: [{type: boom}]\n");
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl"]);
    run.code(3);
    let record = p.result("r.jsonl", "c");
    assert_eq!(record["execution_status"], "grader_error", "{record}");
    assert!(run.stderr.contains("no rubric file"), "{}", run.stderr);
}

#[test]
fn custom_assertion_in_typescript_runs_or_says_what_to_install() {
    if !node_present() {
        return;
    }
    let p = Project::new()
        .file("targets.yaml", TARGETS)
        .file(".agentv/assertions/word-count.ts", WORD_COUNT)
        .file("evals/dataset.eval.yaml", SUITE);
    let run = p.run(&["eval", "evals/dataset.eval.yaml", "--out", "r.jsonl"]);
    let greeting = p.result("r.jsonl", "greeting-response");
    let wc = word_count(&greeting);
    if wc.get("error").is_none() {
        run.code(0);
        assert_eq!(wc["score"], 1.0, "{wc}");
        return;
    }
    // No TypeScript runtime here (node < 22.6, no bun, no tsx): a grader error naming them.
    run.code(3);
    let error = wc["error"].as_str().expect("error");
    assert!(error.contains("cannot run the TypeScript assertion"), "{error}");
    assert!(
        error.contains("bun") && error.contains("node ≥ 22.6") && error.contains("tsx"),
        "{error}"
    );
}
