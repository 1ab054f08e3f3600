//! `agentv convert` of promptfoo configs: a config and its AgentV 4.x conversion give the same
//! verdicts and scores on every row, what cannot be mapped is listed with its lines and
//! nothing is written.

use agentv_testkit::{Project, make_executable};

/// Deterministic checks on every construct the conversion maps: list vars, two prompts (one a
/// file), `defaultTest`, CSV tests, `not-`, `weight`, a test `threshold`, `equals` and
/// `starts-with` (which 4.x spells as anchored patterns), the `*-any`/`*-all` comma lists.
const CONFIG: &str = r#"description: capitals
prompts:
  - "What is the capital of {{country}}?"
  - file://terse.txt
providers:
  - PROVIDER
defaultTest:
  assert:
    - type: icontains
      value: "{{country}}"
      metric: on-topic
tests:
  - description: two countries
    vars: {country: [France, Spain]}
    assert:
      - type: contains
        value: capital
        weight: 2
      - type: not-equals
        value: "What is the capital of Spain?"
      - type: starts-with
        value: "What (is)"
  - vars: {country: Peru}
    threshold: 0.5
    assert:
      - {type: contains-any, value: "lima, LIMA"}
      - {type: regex, value: "c.p+ital"}
      - {type: is-json}
  - vars: {country: "a.b (c)"}
    assert:
      - {type: equals, value: "What is the capital of a.b (c)?"}
      - {type: not-contains, value: 42, weight: 0}
  - file://tests.csv
"#;

fn project(provider: &str) -> Project {
    let p = Project::new()
        .file("promptfooconfig.yaml", &CONFIG.replace("PROVIDER", provider))
        .file("terse.txt", "Answer tersely: {{country}}\n")
        .file(
            "tests.csv",
            "country,__expected\nChile,contains:Chile\nPeru,icontains-all:peru;x\n",
        )
        .file(
            "agent.sh",
            "#!/bin/sh\nprintf 'The capital you asked about: %s' \"$1\"\n",
        );
    make_executable(&p.path().join("agent.sh"));
    p
}

/// The targets the converted suite lists in its header comment, as a targets file.
fn targets_from_header(suite: &str) -> String {
    suite
        .lines()
        .skip_while(|l| *l != "# targets:")
        .take_while(|l| l.starts_with('#'))
        .map(|l| format!("{}\n", l.trim_start_matches('#').strip_prefix(' ').unwrap_or_default()))
        .collect()
}

/// (id, verdict, score) of every record of a results file, by id.
fn verdicts(p: &Project, rel: &str) -> Vec<(String, String, f64)> {
    let mut rows: Vec<(String, String, f64)> = p
        .results(rel)
        .iter()
        .map(|r| {
            (
                r["eval_id"].as_str().unwrap_or_default().to_owned(),
                r["verdict"].as_str().unwrap_or_default().to_owned(),
                r["score"].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

fn assert_same_verdicts(provider: &str) {
    let p = project(provider);
    let converted = p.run(&["convert", "promptfooconfig.yaml", "--out", "suite.yaml"]);
    converted
        .code(0)
        .stderr_has("promptfooconfig.yaml:11:15: warning: `metric` is not carried over");
    let suite = std::fs::read_to_string(p.path().join("suite.yaml")).expect("converted suite");
    assert!(
        suite.contains("\ntests:\n") && suite.contains("execution: {threshold: 1.0}"),
        "{suite}"
    );
    std::fs::write(p.path().join("targets.yaml"), targets_from_header(&suite)).expect("targets");

    p.run(&["eval", "promptfooconfig.yaml", "--out", "pf.jsonl"]).code(1);
    p.run(&["eval", "suite.yaml", "--targets", "targets.yaml", "--out", "v4.jsonl"])
        .code(0);
    let (config, suite_rows) = (verdicts(&p, "pf.jsonl"), verdicts(&p, "v4.jsonl"));
    assert_eq!(config.len(), 12, "{provider}: {config:?}");
    assert_eq!(
        config, suite_rows,
        "{provider}: the config's rows, then the converted suite's"
    );
    let passes = config.iter().filter(|r| r.1 == "pass").count();
    assert!(
        passes > 0 && passes < config.len(),
        "{provider}: both verdicts occur: {config:?}"
    );
}

#[test]
fn a_promptfoo_config_and_its_4x_conversion_give_the_same_verdicts_with_echo() {
    assert_same_verdicts("echo");
}

#[test]
fn a_promptfoo_config_and_its_4x_conversion_give_the_same_verdicts_with_exec() {
    assert_same_verdicts("exec:./agent.sh");
}

#[test]
fn constructs_without_an_exact_4x_equivalent_are_listed_and_nothing_is_written() {
    let p = Project::new().file(
        "promptfooconfig.yaml",
        r#"prompts: ["Q: {{q}}"]
providers: [echo]
tests:
  - vars: {q: a}
    options: {provider: echo}
    assert:
      - type: javascript
        value: output.length > 1
      - type: llm-rubric
        value: is kind
      - type: assert-set
        assert: [{type: contains, value: a}]
      - type: contains
        value: a
        transform: output.trim()
      - type: equals
        value: {a: 1}
      - type: regex
        value: "(?i)q"
  - vars: {q: b}
"#,
    );
    let run = p.run(&["convert", "promptfooconfig.yaml", "--out", "suite.yaml"]);
    run.code(1)
        .stderr_has("promptfooconfig.yaml:5:5: error: `options` of a test has no AgentV 4.x equivalent")
        .stderr_has("promptfooconfig.yaml:7:15: error: `javascript` cannot be converted")
        .stderr_has("promptfooconfig.yaml:9:15: error: `llm-rubric` cannot be converted")
        .stderr_has("promptfooconfig.yaml:11:15: error: `assert-set` cannot be converted")
        .stderr_has("promptfooconfig.yaml:15:9: error: `transform` of this `contains` assertion")
        .stderr_has("promptfooconfig.yaml:16:15: error: `equals` cannot be converted: a structured `value`")
        .stderr_has(
            "promptfooconfig.yaml:18:9: error: the pattern `(?i)q` is not a valid JavaScript regular expression",
        )
        .stderr_has("promptfooconfig.yaml:20:5: error: a test without assertions passes in promptfoo")
        .stderr_has("nothing was written");
    assert!(!p.path().join("suite.yaml").exists(), "nothing is written");
}

#[test]
fn a_promptfoo_config_converts_to_4x_only() {
    let p = project("echo");
    p.run(&["convert", "promptfooconfig.yaml", "--to", "v2"])
        .code(2)
        .stderr_has("a promptfoo config converts to AgentV 4.x");
    p.run(&["convert", "promptfooconfig.yaml", "--to", "v4"]).code(0);
}

#[test]
fn the_deterministic_promptfoo_example_says_its_assertion_set_does_not_convert() {
    let root = agentv_testkit::repo_root();
    let run = agentv_testkit::Run::of(&mut agentv_testkit::agentv(
        &root,
        &["convert", "examples/promptfoo/deterministic/promptfooconfig.yaml"],
    ));
    run.code(1)
        .stderr_has("promptfooconfig.yaml:46:15: error: `assert-set` cannot be converted");
}

/// A 4.x suite on an `echo` target with every construct `--to promptfoo` maps: suite
/// assertions (and `skip_defaults`), `negate`, `weight`, `name`, a case threshold, the default
/// threshold, `equals`/`starts-with`/`ends-with` (trimmed, so written as anchored patterns).
const SUITE: &str = r#"description: capitals
execution:
  target: echo
assertions:
  - type: icontains
    value: capital
tests:
  - id: c1
    input: "  What is the capital of France?  "
    criteria: Paris
    assertions:
      - {type: contains, value: France, weight: 2}
      - {type: equals, value: "What is the capital of Spain?", negate: true}
      - {type: starts-with, value: "What (is)"}
  - id: c2
    input: "Peru (c.p)?"
    execution: {threshold: 0.5}
    assertions:
      - {type: contains-any, value: [lima, LIMA]}
      - {type: regex, value: "c.p+"}
      - {type: is-json}
  - id: c3
    input: "The capital of Chile "
    execution: {skip_defaults: true}
    assertions:
      - {type: ends-with, value: "Chile"}
      - {type: icontains-all, value: [CHI, le], name: parts}
      - {type: equals, value: " The capital of Chile"}
  - id: c4
    input: '{"capital": "Lima"}'
    assertions:
      - {type: is-json, weight: 3}
      - {type: contains, value: Quito, negate: true}
"#;

#[test]
fn a_4x_suite_and_its_promptfoo_conversion_give_the_same_verdicts_and_scores() {
    let p = Project::new()
        .file("suite.yaml", SUITE)
        .file(".agentv/targets.yaml", "targets:\n  - name: echo\n    provider: echo\n");
    p.run(&[
        "convert",
        "suite.yaml",
        "--to",
        "promptfoo",
        "--out",
        "promptfooconfig.yaml",
    ])
    .code(0)
    .stderr_has("wrote promptfooconfig.yaml (a promptfoo config)");
    let config = std::fs::read_to_string(p.path().join("promptfooconfig.yaml")).expect("config");
    assert!(
        config.contains("  - \"{{ input }}\"\n") && config.contains("threshold: 0.5"),
        "{config}"
    );
    p.run(&["eval", "suite.yaml", "--out", "v4.jsonl"]);
    p.run(&["eval", "promptfooconfig.yaml", "--out", "pf.jsonl"]);
    let strip = |rows: Vec<(String, String, f64)>| rows.into_iter().map(|(_, v, s)| (v, s)).collect::<Vec<_>>();
    let (suite, converted) = (verdicts(&p, "v4.jsonl"), verdicts(&p, "pf.jsonl"));
    assert_eq!(suite.len(), 4, "{suite:?}");
    assert_eq!(
        strip(suite.clone()),
        strip(converted),
        "the suite's rows, then its conversion's"
    );
    let passes = suite.iter().filter(|r| r.1 == "pass").count();
    assert!(passes > 0 && passes < suite.len(), "both verdicts occur: {suite:?}");
}

#[test]
fn a_suite_without_an_exact_promptfoo_equivalent_lists_its_lines_and_writes_nothing() {
    let p = Project::new()
        .file(
            "suite.yaml",
            r#"execution:
  target: agent
tests:
  - id: a
    input: "Hi {{ name }}"
    assertions:
      - type: llm-grader
        prompt: Is it kind?
      - {type: contains, value: a, required: true}
      - {type: regex, value: a, flags: i}
    execution: {threshold: 0}
"#,
        )
        .file(
            ".agentv/targets.yaml",
            "targets:\n  - name: agent\n    provider: cli\n    command_template: ./a.sh {PROMPT} > {OUTPUT_FILE}\n",
        );
    p.run(&[
        "convert",
        "suite.yaml",
        "--to",
        "promptfoo",
        "--out",
        "promptfooconfig.yaml",
    ])
    .code(1)
    .stderr_has("targets.yaml:3:15: error: target `agent`: a `cli` target's answer is kept as written")
    .stderr_has("nothing was written");
    assert!(!p.path().join("promptfooconfig.yaml").exists(), "nothing is written");
    std::fs::write(
        p.path().join(".agentv/targets.yaml"),
        "targets:\n  - name: agent\n    provider: echo\n",
    )
    .expect("targets");
    p.run(&["convert", "suite.yaml", "--to", "promptfoo"])
        .code(1)
        .stderr_has("suite.yaml:5:12: error: the input holds a template tag")
        .stderr_has("suite.yaml:7:15: error: `llm-grader` cannot be converted")
        .stderr_has("suite.yaml:9:36: error: `required` of this `contains` assertion")
        .stderr_has("suite.yaml:10:33: error: `flags` of this `regex` assertion")
        .stderr_has("suite.yaml:11:28: error: a threshold of 0 always passes");
    p.run(&["convert", "suite.yaml", "--to", "promptfoo", "--in-place"])
        .code(2)
        .stderr_has("`--in-place` would replace the suite");
}

#[test]
fn converting_a_config_with_derived_metrics_says_they_are_not_carried_over() {
    let p = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: ['Hi']\nproviders: [echo]\ntests: [{assert: [{type: contains, value: Hi}]}]\nderivedMetrics:\n  - {name: m, value: 'a / __count'}\n",
    );
    p.run(&["convert", "promptfooconfig.yaml", "--out", "suite.yaml"])
        .code(0)
        .stderr_has("promptfooconfig.yaml:4:1: warning: `derivedMetrics` is not carried over");
}
