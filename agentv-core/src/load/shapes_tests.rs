//! Every eval-file shape of both generations, loaded into the one model
//! (`docs/architecture.md#generations`): one table row per shape of `agentv-4.md` §1–§2 and the
//! 2.x spellings they alias. Each row loads a small project and compares a one-line summary of
//! every case (generation, id, criteria, messages, graders) with what the row expects.

use super::{LoadedCase, LoadedSuite};
use crate::config::Severity;
use crate::model::{Content, Generation, Message, Segment};

fn load(files: &[(&str, &str)]) -> (LoadedSuite, tempfile::TempDir) {
    let eval = files.first().map(|(p, _)| *p).unwrap_or("e.yaml");
    super::test_project::load(files, eval)
}

fn text(m: &Message) -> String {
    match &m.content {
        Content::Empty => String::new(),
        Content::Text(t) => t.clone(),
        Content::Json(v) => v.to_string(),
        Content::Segments(segments) => segments
            .iter()
            .map(|s| match s {
                Segment::Text(t) => t.clone(),
                Segment::File(f) => format!("file:{}", f.value),
                Segment::Other(v) => v.to_string(),
            })
            .collect::<Vec<_>>()
            .join("+"),
    }
}

/// `v4 id | criteria | role:text,... | role:text,... | name/type/weight[/req=x][/neg],...`.
fn summary(c: &LoadedCase) -> String {
    let generation = match c.case.generation {
        Generation::V2 => "v2",
        Generation::V4 => "v4",
        Generation::Promptfoo => "promptfoo",
    };
    let msgs = |ms: &[Message]| {
        ms.iter()
            .map(|m| format!("{}:{}", m.role.as_str(), text(m)))
            .collect::<Vec<_>>()
            .join(",")
    };
    let graders = c
        .graders
        .iter()
        .map(|g| {
            let mut s = format!("{}/{}/{}", g.name, g.type_name(), g.weight);
            if g.required {
                s.push_str(&format!(
                    "/req={}",
                    g.min_score.map_or("T".to_owned(), |m| m.to_string())
                ));
            } else if let Some(m) = g.min_score {
                s.push_str(&format!("/min={m}"));
            }
            if g.negate {
                s.push_str("/neg");
            }
            s
        })
        .collect::<Vec<_>>()
        .join(",");
    format!(
        "{generation} {} | {} | {} | {} | {graders}",
        c.case.id,
        c.case.expected_outcome,
        msgs(&c.case.input_messages),
        msgs(&c.case.expected_messages)
    )
}

fn diagnostics(suite: &LoadedSuite, severity: Severity) -> Vec<String> {
    suite
        .diagnostics
        .iter()
        .filter(|d| d.severity == severity)
        .map(ToString::to_string)
        .collect()
}

/// The files of a project; the first is the eval file.
type Files = &'static [(&'static str, &'static str)];

/// A 4.x case without graders is graded by `llm-grader` (the rows write the 2.x default judge,
/// `llm_judge`, and the check swaps it for 4.x cases).
const V4_JUDGE: &str = "llm-grader/llm-grader/1";

#[test]
fn every_shape_loads_into_one_model() {
    // (shape, files (the first is the eval file), expected case summaries)
    let rows: &[(&str, Files, &[&str])] = &[
        (
            "2.x evalcases with input_messages and expected_messages",
            &[(
                "e.yaml",
                "evalcases:\n  - id: a\n    expected_outcome: says hi\n    input_messages: [{role: user, content: hi}]\n    expected_messages: [{role: assistant, content: hello}]\n",
            )],
            &["v2 a | says hi | user:hi | assistant:hello | llm_judge/llm_judge/1"],
        ),
        (
            "4.x tests with criteria, string input and string expected_output",
            &[(
                "e.yaml",
                "tests:\n  - id: a\n    criteria: says hi\n    input: hi\n    expected_output: hello\n",
            )],
            &["v4 a | says hi | user:hi | assistant:hello | llm_judge/llm_judge/1"],
        ),
        (
            "cases is another spelling of tests",
            &[("e.yaml", "cases:\n  - {id: a, criteria: c, input: hi}\n")],
            &["v4 a | c | user:hi |  | llm_judge/llm_judge/1"],
        ),
        (
            "eval_cases is another spelling of tests",
            &[("e.yaml", "eval_cases:\n  - {id: a, criteria: c, input: hi}\n")],
            &["v4 a | c | user:hi |  | llm_judge/llm_judge/1"],
        ),
        (
            "evalcases with a 4.x case key is a 4.x file",
            &[("e.yaml", "evalcases:\n  - {id: a, criteria: c, input: hi}\n")],
            &["v4 a | c | user:hi |  | llm_judge/llm_judge/1"],
        ),
        (
            "expected_outcome is criteria in a 4.x file",
            &[("e.yaml", "tests:\n  - {id: a, expected_outcome: c, input: hi}\n")],
            &["v4 a | c | user:hi |  | llm_judge/llm_judge/1"],
        ),
        (
            "input as a message object, an object without role, and a message list",
            &[(
                "e.yaml",
                "tests:\n  - {id: a, criteria: c, input: {role: system, content: be brief}}\n  - {id: b, criteria: c, input: {q: 1}}\n  - id: c\n    criteria: c\n    input: [{role: system, content: s}, {role: user, content: u}]\n",
            )],
            &[
                "v4 a | c | system:be brief |  | llm_judge/llm_judge/1",
                "v4 b | c | user:{\"q\":1} |  | llm_judge/llm_judge/1",
                "v4 c | c | system:s,user:u |  | llm_judge/llm_judge/1",
            ],
        ),
        (
            "input_files with a text input become file segments before the text",
            &[
                (
                    "e.yaml",
                    "tests:\n  - {id: a, criteria: c, input: read it, input_files: [doc.txt]}\n",
                ),
                ("doc.txt", "DOC"),
            ],
            &["v4 a | c | user:file:doc.txt+read it |  | llm_judge/llm_judge/1"],
        ),
        (
            "expected_output as an object, as messages, and as a list",
            &[(
                "e.yaml",
                "tests:\n  - {id: a, input: q, expected_output: {k: 1}}\n  - {id: b, input: q, expected_output: [{role: assistant, content: x}]}\n  - {id: c, input: q, expected_output: [1, 2]}\n",
            )],
            &[
                "v4 a |  | user:q | assistant:{\"k\":1} | llm_judge/llm_judge/1",
                "v4 b |  | user:q | assistant:x | llm_judge/llm_judge/1",
                "v4 c |  | user:q | assistant:[1,2] | llm_judge/llm_judge/1",
            ],
        ),
        (
            "case assertions, then suite assertions; skip_defaults drops the suite's",
            &[(
                "e.yaml",
                "assertions: [{type: keywords, name: suite, expected: [x]}]\ntests:\n  - {id: a, input: q, assertions: [{type: keywords, name: own, expected: [y]}]}\n  - {id: b, input: q, criteria: c}\n  - {id: c, input: q, assertions: [{type: keywords, name: own, expected: [y]}], execution: {skip_defaults: true}}\n",
            )],
            &[
                "v4 a |  | user:q |  | own/keywords/1,suite/keywords/1",
                "v4 b | c | user:q |  | suite/keywords/1",
                "v4 c |  | user:q |  | own/keywords/1",
            ],
        ),
        (
            "case list precedence: assertions > assert > execution.evaluators > evaluators",
            &[(
                "e.yaml",
                "tests:\n  - id: a\n    input: q\n    criteria: c\n    assert: [{type: keywords, name: assert, expected: [x]}]\n    evaluators: [{type: keywords, name: evaluators, expected: [x]}]\n  - id: b\n    input: q\n    criteria: c\n    execution: {evaluators: [{type: keywords, name: exec, expected: [x]}]}\n    evaluators: [{type: keywords, name: evaluators, expected: [x]}]\n",
            )],
            &[
                "v4 a | c | user:q |  | assert/keywords/1",
                "v4 b | c | user:q |  | exec/keywords/1",
            ],
        ),
        (
            "suite list precedence: assertions > assert > execution.assertions > execution.evaluators",
            &[(
                "e.yaml",
                "assert: [{type: keywords, name: top-assert, expected: [x]}]\nexecution:\n  evaluators: [{type: keywords, name: exec, expected: [x]}]\ntests:\n  - {id: a, input: q, criteria: c}\n",
            )],
            &["v4 a | c | user:q |  | top-assert/keywords/1"],
        ),
        (
            "kebab-case and snake_case type names name one grader",
            &[(
                "e.yaml",
                "tests:\n  - id: a\n    input: q\n    assertions:\n      - {type: tool-trajectory, mode: any_order, minimums: {x: 1}}\n      - {type: tool_trajectory, mode: any_order, minimums: {x: 1}}\n",
            )],
            &["v4 a |  | user:q |  | tool_trajectory/tool_trajectory/1,tool_trajectory/tool_trajectory/1"],
        ),
        (
            "bare strings become one rubrics grader weighted by their number, at the first string",
            &[(
                "e.yaml",
                "tests:\n  - id: a\n    input: q\n    assertions: [{type: keywords, name: k, expected: [x]}, says A, says B]\n",
            )],
            &["v4 a |  | user:q |  | k/keywords/1,rubrics/rubrics/2"],
        ),
        (
            "required, numeric required, min_score and negate are read on every grader",
            &[(
                "e.yaml",
                "tests:\n  - id: a\n    input: q\n    assertions:\n      - {type: keywords, name: r, expected: [x], required: true}\n      - {type: keywords, name: n, expected: [x], required: 0.6}\n      - {type: keywords, name: m, expected: [x], min_score: 0.5}\n      - {type: keywords, name: g, expected: [x], negate: true}\n",
            )],
            &["v4 a |  | user:q |  | r/keywords/1/req=T,n/keywords/1/req=0.6,m/keywords/1/min=0.5,g/keywords/1/neg"],
        ),
        (
            "include templates are replaced by their assertions",
            &[
                (
                    "evals/e.yaml",
                    "tests:\n  - {id: a, input: q, assertions: [{include: base}]}\n",
                ),
                (
                    ".agentv/templates/base.yaml",
                    "assertions:\n  - {type: keywords, name: from-template, expected: [x]}\n",
                ),
            ],
            &["v4 a |  | user:q |  | from-template/keywords/1"],
        ),
        (
            "vars fill criteria, input and expected_output, keeping unknown placeholders",
            &[(
                "e.yaml",
                "tests:\n  - id: a\n    vars: {city: Paris, n: 3}\n    criteria: names {{ city }} and {{output}}\n    input: where is {{city}}?\n    expected_output: '{{n}}'\n",
            )],
            &["v4 a | names Paris and {{output}} | user:where is Paris? | assistant:3 | llm_judge/llm_judge/1"],
        ),
        (
            "suite input is placed before the case's",
            &[(
                "e.yaml",
                "input: [{role: system, content: be brief}]\ntests:\n  - {id: a, criteria: c, input: hi}\n",
            )],
            &["v4 a | c | system:be brief,user:hi |  | llm_judge/llm_judge/1"],
        ),
        (
            "tests as a path to a YAML file of cases",
            &[
                ("e.yaml", "tests: cases.yaml\n"),
                (
                    "cases.yaml",
                    "- {id: a, criteria: c, input: hi}\n- {id: b, criteria: c, input: ho}\n",
                ),
            ],
            &[
                "v4 a | c | user:hi |  | llm_judge/llm_judge/1",
                "v4 b | c | user:ho |  | llm_judge/llm_judge/1",
            ],
        ),
        (
            "tests as a path to a directory of case.yaml (id defaults to the directory)",
            &[
                ("e.yaml", "tests: cases\n"),
                ("cases/one/case.yaml", "criteria: c\ninput: hi\n"),
                ("cases/two/case.yaml", "id: second\ncriteria: c\ninput: ho\n"),
            ],
            &[
                "v4 one | c | user:hi |  | llm_judge/llm_judge/1",
                "v4 second | c | user:ho |  | llm_judge/llm_judge/1",
            ],
        ),
        (
            "file:// globs in an inline list are spliced in place",
            &[
                (
                    "e.yaml",
                    "tests:\n  - {id: first, criteria: c, input: x}\n  - file://more/*.yaml\n",
                ),
                ("more/b.yaml", "- {id: b, criteria: c, input: y}\n"),
                ("more/a.yaml", "- {id: a, criteria: c, input: z}\n"),
            ],
            &[
                "v4 first | c | user:x |  | llm_judge/llm_judge/1",
                "v4 a | c | user:z |  | llm_judge/llm_judge/1",
                "v4 b | c | user:y |  | llm_judge/llm_judge/1",
            ],
        ),
        (
            "a JSONL dataset line with criteria and assert",
            &[(
                "d.jsonl",
                "{\"id\": \"a\", \"input\": \"q\", \"criteria\": \"c\", \"assert\": [{\"type\": \"keywords\", \"name\": \"k\", \"expected\": [\"x\"]}]}\n",
            )],
            &["v4 a | c | user:q |  | k/keywords/1"],
        ),
        (
            "a 2.x JSONL line keeps its short forms",
            &[(
                "d.jsonl",
                "{\"id\": \"a\", \"input\": \"q\", \"expected_outcome\": \"c\"}\n",
            )],
            &["v2 a | c | user:q |  | llm_judge/llm_judge/1"],
        ),
    ];
    for (shape, files, want) in rows {
        let (suite, _tmp) = load(files);
        let errors = diagnostics(&suite, Severity::Error);
        assert!(errors.is_empty(), "{shape}: {errors:?}");
        let got: Vec<String> = suite.into_cases().map(|c| summary(&c)).collect();
        let want: Vec<String> = want
            .iter()
            .map(|w| match w.strip_prefix("v4 ") {
                Some(_) => w.replace("llm_judge/llm_judge/1", V4_JUDGE),
                None => (*w).to_owned(),
            })
            .collect();
        assert_eq!(got, want, "{shape}");
    }
}

#[test]
fn suite_keys_of_4x_name_the_suite_and_merge_metadata() {
    let (suite, _tmp) = load(&[(
        "e.yaml",
        "name: geo-suite\ntags: [smoke]\nmetadata: {team: a, labels: [x]}\ntests:\n  - {id: a, criteria: c, input: q, metadata: {labels: [y], owner: b}}\n",
    )]);
    assert!(
        diagnostics(&suite, Severity::Error).is_empty(),
        "{:?}",
        suite.diagnostics
    );
    assert_eq!(&*suite.dataset, "geo-suite");
    assert_eq!(suite.info.tags, vec!["smoke".to_owned()]);
    let case = suite.into_cases().next().expect("case").case;
    assert_eq!(
        serde_json::Value::Object(case.metadata.expect("metadata")),
        serde_json::json!({"team": "a", "labels": ["x", "y"], "owner": "b"})
    );
}

#[test]
fn case_threshold_and_conversation_turns_are_read() {
    let (suite, _tmp) = load(&[(
        "e.yaml",
        "tests:\n  - id: chat\n    mode: conversation\n    aggregation: min\n    window_size: 2\n    input: [{role: system, content: s}]\n    execution: {threshold: 0.6}\n    turns:\n      - {input: hi, expected_output: hello}\n      - input: bye\n        assertions: [says GOODBYE]\n      - {input: again}\n",
    )]);
    assert!(
        diagnostics(&suite, Severity::Error).is_empty(),
        "{:?}",
        suite.diagnostics
    );
    let loaded = suite.into_cases().next().expect("case");
    assert_eq!(loaded.case.threshold, Some(0.6));
    let conversation = loaded.case.conversation.as_ref().expect("conversation");
    assert_eq!(conversation.turns.len(), 3);
    assert_eq!(conversation.window_size, Some(2));
    assert_eq!(conversation.aggregation, crate::model::TurnAggregation::Min);
    assert!(loaded.graders.is_empty(), "a conversation case has no default grader");
    let per_turn: Vec<Vec<String>> = loaded
        .turn_graders
        .iter()
        .map(|g| g.iter().map(|g| g.name.clone()).collect())
        .collect();
    // A reference answer alone: the default grader; strings: one grader of criteria; nothing: none.
    assert_eq!(per_turn.len(), 3);
    assert_eq!(per_turn[0].len(), 1);
    assert_eq!(per_turn[1].len(), 1);
    assert!(per_turn[2].is_empty());
}

#[test]
fn keys_agentv_cannot_honour_are_warnings_that_say_so() {
    let rows: &[(&str, Files, &str)] = &[(
        "preprocessors",
        &[(
            "e.yaml",
            "preprocessors: [{type: xlsx, command: [x]}]\ntests:\n  - {id: a, criteria: c, input: q}\n",
        )],
        "preprocessors",
    )];
    for (shape, files, key) in rows {
        let (suite, _tmp) = load(files);
        assert!(
            diagnostics(&suite, Severity::Error).is_empty(),
            "{shape}: {:?}",
            suite.diagnostics
        );
        let warnings = diagnostics(&suite, Severity::Warning);
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(key) && w.contains("not supported by agentv")),
            "{shape}: {warnings:?}"
        );
        assert!(suite.into_cases().count() > 0, "{shape}: the cases still load");
    }
}

#[test]
fn workspace_docker_is_read_and_its_mistakes_are_errors() {
    let (suite, _tmp) = load(&[
        (
            "e.yaml",
            "workspace: {template: ./ws, docker: {image: node:20, timeout: 60, memory: 1g, cpus: 2}}\ntests:\n  - {id: a, criteria: c, input: q}\n",
        ),
        ("ws/a.txt", "a"),
    ]);
    assert!(
        diagnostics(&suite, Severity::Error).is_empty(),
        "{:?}",
        suite.diagnostics
    );
    let case = suite.into_cases().next().expect("case").case;
    let config = case
        .workspace
        .as_ref()
        .and_then(|w| w.config.clone())
        .expect("workspace");
    assert_eq!(
        config.docker,
        Some(crate::model::workspace::Docker {
            image: "node:20".into(),
            timeout: Some(60),
            memory: Some("1g".into()),
            cpus: Some(2.0),
            agent: false,
        })
    );
    for (docker, expected) in [
        ("{memory: 1g}", "image"),
        ("{image: node:20, cpus: 0}", "cpus"),
        ("{image: ' '}", "empty `image`"),
        ("{image: --privileged}", "must name an image"),
        ("node:20", "docker"),
    ] {
        let eval =
            format!("workspace: {{template: ./ws, docker: {docker}}}\ntests:\n  - {{id: a, criteria: c, input: q}}\n");
        let (suite, _tmp) = load(&[("e.yaml", &eval), ("ws/a.txt", "a")]);
        let errors = diagnostics(&suite, Severity::Error);
        assert!(errors.iter().any(|e| e.contains(expected)), "{docker}: {errors:?}");
        assert_eq!(suite.case_count, 0, "{docker}");
    }
}

#[test]
fn depends_on_gives_each_case_its_wave_and_a_bad_graph_stops_the_suite_before_any_case_runs() {
    let (suite, _tmp) = load(&[(
        "e.yaml",
        "tests:\n  - {id: c, criteria: c, input: q, depends_on: [b, a], on_dependency_failure: run}\n  - {id: a, criteria: c, input: q}\n  - {id: b, criteria: c, input: q, depends_on: a}\n  - {id: d, criteria: c, input: q}\n",
    )]);
    assert!(
        diagnostics(&suite, Severity::Error).is_empty(),
        "{:?}",
        suite.diagnostics
    );
    let got: Vec<(String, u32, Vec<String>, crate::model::OnDependencyFailure)> = suite
        .into_cases()
        .map(|l| {
            let d = l.case.dependencies.expect("every case of the suite has its wave");
            (l.case.id, d.wave, d.on.clone(), d.on_failure)
        })
        .collect();
    use crate::model::OnDependencyFailure::{Run, Skip};
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        got,
        vec![
            ("c".to_owned(), 2, s(&["b", "a"]), Run),
            ("a".to_owned(), 0, s(&[]), Skip),
            ("b".to_owned(), 1, s(&["a"]), Skip),
            ("d".to_owned(), 0, s(&[]), Skip),
        ]
    );

    let bad: &[(&str, &str)] = &[
        (
            "  - {id: a, criteria: c, input: q, depends_on: [x]}\n",
            "e.yaml:2:48: error: case `a` depends on `x`, but the suite has no case with that id",
        ),
        (
            "  - {id: a, criteria: c, input: q, depends_on: [a]}\n",
            "case `a` depends on itself",
        ),
        (
            "  - {id: a, criteria: c, input: q, depends_on: [b]}\n  - {id: b, criteria: c, input: q, depends_on: [c]}\n  - {id: c, criteria: c, input: q, depends_on: [a]}\n",
            "circular dependency: a → b → c → a; no case of the suite runs",
        ),
        (
            "  - {id: a, criteria: c, input: q, depends_on: [{id: b}]}\n",
            "a `depends_on` entry must be a case id",
        ),
        (
            "  - {id: a, criteria: c, input: q, depends_on: [b], on_dependency_failure: later}\n  - {id: b, criteria: c, input: q}\n",
            "on_dependency_failure",
        ),
    ];
    for (cases, expected) in bad {
        let (suite, _tmp) = load(&[("e.yaml", &format!("tests:\n{cases}"))]);
        let errors = diagnostics(&suite, Severity::Error);
        assert!(errors.iter().any(|e| e.contains(expected)), "{cases}: {errors:?}");
        // A bad policy leaves out its case; the graph of what is left is fine.
        let left = usize::from(expected.starts_with("on_dependency"));
        assert_eq!(suite.case_count, left, "{cases}: no case of a broken graph runs");
    }
}

#[test]
fn an_unknown_type_in_a_4x_file_warns_and_an_incomplete_case_is_an_error() {
    let (suite, _tmp) = load(&[(
        "e.yaml",
        "tests:\n  - {id: a, input: q, assertions: [{type: not-a-grader, value: x}]}\n  - {id: b, input: q, evaluators: [{type: keywords, expected: [x]}]}\n",
    )]);
    let warnings = diagnostics(&suite, Severity::Warning);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("unknown grader type `not-a-grader`")),
        "{warnings:?}"
    );
    let errors = diagnostics(&suite, Severity::Error);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("incomplete case `b`"), "{errors:?}");
    let got: Vec<String> = suite.into_cases().map(|c| summary(&c)).collect();
    assert_eq!(got, vec!["v4 a |  | user:q |  | not-a-grader/custom/1"]);
}

#[test]
fn an_unknown_type_in_a_2x_file_stays_an_error() {
    let (suite, _tmp) = load(&[(
        "e.yaml",
        "evalcases:\n  - id: a\n    expected_outcome: c\n    input_messages: [{role: user, content: q}]\n    evaluators: [{type: nope}]\n",
    )]);
    let errors = diagnostics(&suite, Severity::Error);
    assert!(
        errors.iter().any(|e| e.contains("unknown grader type `nope`")),
        "{errors:?}"
    );
}
