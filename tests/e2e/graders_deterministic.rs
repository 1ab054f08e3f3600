//! The deterministic graders end to end: a suite run through the binary against a mock target,
//! every grader once passing and once failing, with the scores, names, texts and evidence each
//! records.

#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test reads as one scenario, its table and checks in one place"
)]

use agentv_testkit::{Project, mock_targets};
use serde_json::Value;

const TARGETS: &str = r#"targets:
  - name: default
    provider: mock
    responses:
      paris-pass: "The capital of France is Paris."
      paris-fail: "The capital of France is Paris."
      json-pass: '{"city": "Paris", "population": 2102650}'
      json-fail: "The capital of France is Paris."
      invoice-pass: &invoice "Here it is:\n```json\n{\"invoice\": {\"number\": \"INV-1\", \"total\": \"1,234.50\", \"date\": \"01/15/2025\"}}\n```"
      invoice-fail: *invoice
      agent-pass: &agent
        output_messages:
          - role: assistant
            content: Loading the skill.
            tool_calls:
              - {tool: Skill, input: {skill: pdf}}
              - {tool: Read, input: {file_path: /repo/skills/pdf/SKILL.md}}
              - {tool: Bash, input: {command: ls}}
          - {role: assistant, content: Done.}
        token_usage: {input: 1000, output: 500, cached: 200}
        cost_usd: 0.0123
        duration_ms: 1200
      agent-fail: *agent
"#;

const SUITE: &str = r#"evalcases:
  - id: paris-pass
    input: Capital of France?
    evaluators:
      - {type: equals, value: "  The capital of France is Paris. "}
      - {type: contains, value: Paris}
      - {type: icontains, value: PARIS}
      - {type: contains-any, value: [London, Paris]}
      - {type: contains-all, value: [capital, Paris]}
      - {type: icontains-any, value: [LONDON, PARIS]}
      - {type: icontains-all, value: [CAPITAL, france]}
      - {type: starts-with, value: The}
      - {type: ends-with, value: Paris.}
      - {type: regex, value: '^the CAPITAL', flags: i}
      - {type: word-count, max: 10}
      - {type: contains, value: London, negate: true}
  - id: paris-fail
    input: Capital of France?
    evaluators:
      - {type: equals, value: the capital of france is paris.}
      - {type: contains, value: paris}
      - {type: icontains, value: berlin}
      - {type: contains_any, value: [london, paris]}
      - {type: contains_all, value: [capital, paris]}
      - {type: icontains_any, value: [london, berlin]}
      - {type: icontains_all, value: [capital, berlin]}
      - {type: starts_with, value: capital}
      - {type: ends_with, value: Paris}
      - {type: regex, value: '^Paris'}
      - {type: word_count, min: 10}
      - {type: is-json}
      - {type: icontains, value: paris, negate: true}
  - id: json-pass
    input: As JSON.
    evaluators:
      - {type: is-json}
      - {type: json-schema, schema: {type: object, required: [city], properties: {city: {type: string}}}}
  - id: json-fail
    input: As JSON.
    evaluators:
      - {type: is_json}
      - {type: json_schema, schema: {type: object}}
  - id: invoice-pass
    input: The invoice as JSON.
    expected_output: {invoice: {number: INV-1, total: 1, date: "2025-01-15"}}
    evaluators:
      - type: field-accuracy
        fields:
          - {path: invoice.number, match: exact}
          - {path: invoice.total, match: numeric_tolerance, tolerance: 0.01}
          - {path: invoice.date, match: date}
  - id: invoice-fail
    input: The invoice as JSON.
    expected_output: {invoice: {number: INV-2, total: 1234.5, date: "2025-01-16"}}
    evaluators:
      - type: field_accuracy
        fields:
          - {path: invoice.number, match: exact}
          - {path: invoice.total, match: numeric_tolerance, tolerance: 1}
          - {path: invoice.date, match: date}
          - {path: invoice.currency, match: exact, required: false}
  - id: agent-pass
    input: Fill the form.
    evaluators:
      - {type: latency, threshold: 5000}
      - {type: cost, budget: 0.05}
      - {type: token-usage, max_total: 2000}
      - {type: execution-metrics, max_tool_calls: 5, max_tokens: 1600}
      - {type: skill-trigger, skill: pdf}
  - id: agent-fail
    input: Fill the form.
    evaluators:
      - {type: latency, threshold: 1000}
      - {type: cost, budget: 0.01}
      - {type: token_usage, max_total: 1600}
      - {type: execution_metrics, max_tool_calls: 5, max_llm_calls: 1, target_exploration_ratio: 0.9}
      - {type: skill_trigger, skill: pdf, should_trigger: false}
"#;

/// One grader's (name, type, score, [(assertion text, passed)]).
type Graded = (String, String, f64, Vec<(String, bool)>);

/// (name, type, score, [(assertion text, passed)]) of each grader of `record`.
fn graded(record: &Value) -> Vec<Graded> {
    record["evaluator_results"]
        .as_array()
        .expect("evaluator_results")
        .iter()
        .map(|r| {
            let assertions = r["assertions"]
                .as_array()
                .expect("assertions recorded")
                .iter()
                .map(|a| (a["text"].as_str().unwrap_or_default().to_owned(), a["passed"] == true))
                .collect();
            (
                r["name"].as_str().unwrap_or_default().to_owned(),
                r["type"].as_str().unwrap_or_default().to_owned(),
                r["score"].as_f64().unwrap_or(-1.0),
                assertions,
            )
        })
        .collect()
}

type Want<'a> = (&'a str, &'a str, f64, &'a [(&'a str, bool)]);

fn check(record: &Value, want: &[Want<'_>]) {
    let got = graded(record);
    assert_eq!(got.len(), want.len(), "{}: {got:#?}", record["eval_id"]);
    for (g, (name, kind, score, assertions)) in got.iter().zip(want) {
        let shown: Vec<(&str, bool)> = g.3.iter().map(|(t, p)| (t.as_str(), *p)).collect();
        assert_eq!(
            (g.0.as_str(), g.1.as_str(), shown.as_slice()),
            (*name, *kind, *assertions),
            "{}",
            record["eval_id"]
        );
        assert!(
            (g.2 - score).abs() < 1e-9,
            "{} {name}: score {} != {score}",
            record["eval_id"],
            g.2
        );
    }
    // Hits and misses are the texts of the assertions that passed and failed.
    let hits: Vec<&str> = got
        .iter()
        .flat_map(|g| &g.3)
        .filter(|a| a.1)
        .map(|a| a.0.as_str())
        .collect();
    let recorded: Vec<&str> = record["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(recorded, hits);
}

#[test]
fn every_deterministic_grader_passes_and_fails_with_4x_scores_and_texts() {
    let p = Project::new().file("targets.yaml", TARGETS).file("suite.yaml", SUITE);
    p.run(&["eval", "suite.yaml", "--out", "r.jsonl"]).code(0);
    let r = |id: &str| p.result("r.jsonl", id);

    check(
        &r("paris-pass"),
        &[
            (
                "equals-  The capital of France is Paris. ",
                "equals",
                1.0,
                &[("Output equals \"  The capital of France is Paris. \"", true)],
            ),
            (
                "contains-Paris",
                "contains",
                1.0,
                &[("Output contains \"Paris\"", true)],
            ),
            (
                "icontains-PARIS",
                "icontains",
                1.0,
                &[("Output contains \"PARIS\" (case-insensitive)", true)],
            ),
            (
                "contains-any-2",
                "contains-any",
                1.0,
                &[("Output contains \"Paris\"", true)],
            ),
            (
                "contains-all-2",
                "contains-all",
                1.0,
                &[("Output contains all 2 expected strings", true)],
            ),
            (
                "icontains-any-2",
                "icontains-any",
                1.0,
                &[("Output contains \"PARIS\" (case-insensitive)", true)],
            ),
            (
                "icontains-all-2",
                "icontains-all",
                1.0,
                &[("Output contains all 2 expected strings (case-insensitive)", true)],
            ),
            (
                "starts-with-The",
                "starts-with",
                1.0,
                &[("Output starts with \"The\"", true)],
            ),
            (
                "ends-with-Paris.",
                "ends-with",
                1.0,
                &[("Output ends with \"Paris.\"", true)],
            ),
            (
                "regex-^the CAPITAL",
                "regex",
                1.0,
                &[("Output matches pattern /^the CAPITAL/i (flags: i)", true)],
            ),
            (
                "word-count",
                "word-count",
                1.0,
                &[("Word count 6 is within bounds", true)],
            ),
            // `negate: true` flips the score and the assertion's outcome, not its text.
            (
                "contains-London",
                "contains",
                1.0,
                &[("Output does not contain \"London\"", true)],
            ),
        ],
    );
    check(
        &r("paris-fail"),
        &[
            (
                "equals-the capital of france is paris.",
                "equals",
                0.0,
                &[("Output does not equal \"the capital of france is paris.\"", false)],
            ),
            (
                "contains-paris",
                "contains",
                0.0,
                &[("Output does not contain \"paris\"", false)],
            ),
            (
                "icontains-berlin",
                "icontains",
                0.0,
                &[("Output does not contain \"berlin\" (case-insensitive)", false)],
            ),
            (
                "contains-any-2",
                "contains-any",
                0.0,
                &[("Output does not contain any of: \"london\", \"paris\"", false)],
            ),
            (
                "contains-all-2",
                "contains-all",
                0.0,
                &[("Output missing: \"paris\"", false)],
            ),
            (
                "icontains-any-2",
                "icontains-any",
                0.0,
                &[(
                    "Output does not contain any of: \"london\", \"berlin\" (case-insensitive)",
                    false,
                )],
            ),
            (
                "icontains-all-2",
                "icontains-all",
                0.0,
                &[("Output missing (case-insensitive): \"berlin\"", false)],
            ),
            (
                "starts-with-capital",
                "starts-with",
                0.0,
                &[("Output does not start with \"capital\"", false)],
            ),
            (
                "ends-with-Paris",
                "ends-with",
                0.0,
                &[("Output does not end with \"Paris\"", false)],
            ),
            (
                "regex-^Paris",
                "regex",
                0.0,
                &[("Output does not match pattern /^Paris/", false)],
            ),
            (
                "word-count",
                "word-count",
                0.0,
                &[("Word count 6 is below the minimum 10", false)],
            ),
            ("is-json", "is-json", 0.0, &[("Output is not valid JSON", false)]),
            (
                "icontains-paris",
                "icontains",
                0.0,
                &[("Output contains \"paris\" (case-insensitive)", false)],
            ),
        ],
    );
    let paris_fail = r("paris-fail");
    assert_eq!(paris_fail["score"], 0.0);
    assert_eq!(
        paris_fail["evaluator_results"][10]["assertions"][0]["evidence"], "6 words; bounds: at least 10",
        "evidence is recorded"
    );

    check(
        &r("json-pass"),
        &[
            ("is-json", "is-json", 1.0, &[("Output is valid JSON", true)]),
            (
                "json-schema",
                "json-schema",
                1.0,
                &[("Output matches the JSON schema", true)],
            ),
        ],
    );
    check(
        &r("json-fail"),
        &[
            ("is-json", "is-json", 0.0, &[("Output is not valid JSON", false)]),
            (
                "json-schema",
                "json-schema",
                0.0,
                &[("Output is not valid JSON", false)],
            ),
        ],
    );

    // parseFloat("1,234.50") is 1: within 0.01 of 1, far from 1234.5.
    check(
        &r("invoice-pass"),
        &[(
            "field-accuracy",
            "field-accuracy",
            1.0,
            &[
                ("invoice.number", true),
                ("invoice.total (within tolerance: diff=0.00)", true),
                ("invoice.date", true),
            ],
        )],
    );
    check(
        &r("invoice-fail"),
        &[(
            "field-accuracy",
            "field-accuracy",
            // A field with no expected value counts as a hit, with its weight (as in 4.x).
            0.25,
            &[
                ("invoice.number (value mismatch)", false),
                ("invoice.total (outside tolerance: diff=1233.50, tolerance=1)", false),
                (
                    "invoice.date (date mismatch: got 2025-01-15, expected 2025-01-16)",
                    false,
                ),
                ("invoice.currency: no expected value", true),
            ],
        )],
    );
    // The file is 4.x (its kebab-case types), so the 2.x spelling reads as 4.x's
    // field-accuracy, without 2.x's reasoning (`docs/architecture.md#generations`).
    assert!(
        r("invoice-fail")["evaluator_results"][0]["reasoning"].is_null(),
        "{}",
        r("invoice-fail")
    );

    check(
        &r("agent-pass"),
        &[
            (
                "latency",
                "latency",
                1.0,
                &[("Duration 1200ms <= 5000ms threshold", true)],
            ),
            ("cost", "cost", 1.0, &[("Cost $0.0123 <= $0.0500 budget", true)]),
            // 1000 + 500 + 200 cached.
            (
                "token-usage",
                "token-usage",
                1.0,
                &[("Total tokens 1700 <= 2000", true)],
            ),
            // 1000 + 500: cached tokens do not count here.
            (
                "execution-metrics",
                "execution-metrics",
                1.0,
                &[("Tool calls 3 <= 5 max", true), ("Total tokens 1500 <= 1600 max", true)],
            ),
            (
                "skill-trigger-pdf",
                "skill-trigger",
                1.0,
                &[("Skill tool invoked with skill=\"pdf\"", true)],
            ),
        ],
    );
    check(
        &r("agent-fail"),
        &[
            (
                "latency",
                "latency",
                0.0,
                &[("Duration 1200ms > 1000ms threshold", false)],
            ),
            ("cost", "cost", 0.0, &[("Cost $0.0123 > $0.0100 budget", false)]),
            (
                "token-usage",
                "token-usage",
                0.0,
                &[("Total tokens 1700 > 1600", false)],
            ),
            (
                "execution-metrics",
                "execution-metrics",
                1.0 / 3.0,
                &[
                    ("Tool calls 3 <= 5 max", true),
                    ("LLM calls 2 > 1 max", false),
                    (
                        "Exploration ratio 0.33 outside tolerance of target 0.9 (diff: 0.57, tolerance: 0.2)",
                        false,
                    ),
                ],
            ),
            (
                "skill-trigger-pdf",
                "skill-trigger",
                0.0,
                &[("Skill tool invoked with skill=\"pdf\"", false)],
            ),
        ],
    );
}

#[test]
fn grader_config_mistakes_are_reported_at_load_with_positions() {
    let suite = r#"evalcases:
  - id: bad
    input: hi
    evaluators:
      - {type: contains, value: 4}
      - {type: contains-any, value: Paris}
      - {type: regex, value: '(unclosed'}
      - {type: latency}
      - {type: token-usage}
      - {type: field-accuracy, fields: [{path: a, match: fuzzy}]}
      - {type: skill-trigger}
"#;
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file("suite.yaml", suite);
    let run = p.run(&["validate", "suite.yaml"]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    for line in [
        "suite.yaml:5:33: error: `value` of contains must be a string, found 4",
        "suite.yaml:6:37: error: `value` of contains-any must be a list of strings, found \"Paris\"",
        "suite.yaml:7:30: error: invalid regular expression /(unclosed/",
        "suite.yaml:8:9: error: latency is missing the required key `threshold`",
        "suite.yaml:9:9: error: token-usage needs at least one of `max_total`, `max_input` and `max_output`",
        "suite.yaml:10:58: error: `match` must be exact, numeric_tolerance or date, found \"fuzzy\"",
        "suite.yaml:11:9: error: skill-trigger is missing the required key `skill`",
    ] {
        run.stderr_has(line);
    }
}
