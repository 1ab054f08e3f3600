use serde_json::json;

use super::*;
use crate::evaluators::testkit::{Answered, FakeProvider, one, parse};

const ANSWER: &str = "Paris is the capital of France and home of the Eiffel Tower.";

fn answered(grader: Arc<FakeProvider>) -> Answered {
    Answered::new("Tell me about Paris.", "", ANSWER, grader)
}

async fn grade(yaml: &str) -> Grade {
    answered(FakeProvider::llm(&[r#"{"score": 1}"#])).grade(&one(yaml)).await
}

/// [`grade`] as a 4.x file's list (`code-grader` is 4.x's aggregator).
async fn grade_v4(yaml: &str) -> Grade {
    let composite = crate::evaluators::testkit::graders_in(Generation::V4, yaml).remove(0);
    answered(FakeProvider::llm(&[r#"{"score": 1}"#])).grade(&composite).await
}

fn texts(g: &Grade) -> Vec<(String, bool)> {
    g.assertions.iter().map(|a| (a.text.clone(), a.passed)).collect()
}

fn owned(list: &[(&str, bool)]) -> Vec<(String, bool)> {
    list.iter().map(|(t, p)| ((*t).to_owned(), *p)).collect()
}

/// `keywords` members stand in for 4.x's `contains` (kebab-free names are built-in either way).
const A_PARIS: &str = "{name: a, type: keywords, expected: [Paris]}";
const B_LONDON: &str = "{name: b, type: keywords, expected: [London]}";

#[tokio::test]
async fn weighted_average_uses_the_aggregator_weights_only() {
    // weighted-average-weights: a 1 (weight 3), b 0 (weight 1) → 0.75
    let g = grade(&format!(
        "- type: composite\n  assertions: [{A_PARIS}, {B_LONDON}]\n  aggregator: {{type: weighted_average, weights: {{a: 3, b: 1}}}}\n"
    ))
    .await;
    assert_eq!((g.score, g.verdict), (0.75, Some(GradeVerdict::Fail)));
    assert_eq!(
        texts(&g),
        owned(&[("[a] contains Paris", true), ("[b] missing London", false)])
    );
    let scores = &g.details.as_ref().expect("details")["scores"];
    assert_eq!(scores[0]["name"], "a");
    assert_eq!(scores[0]["weight"], 3);
    assert_eq!(scores[1]["verdict"], "fail");
    assert_eq!(g.request.expect("request"), json!({"aggregator": "weighted_average", "weights": {"a": 3, "b": 1}}));

    // member-weight-ignored: a member's own weight does not count (a warning says so)
    let yaml = "- type: composite\n  assertions:\n    - {name: a, type: keywords, expected: [Paris], weight: 5}\n    - {name: b, type: keywords, expected: [Rome]}\n  aggregator: {type: weighted_average}\n";
    let (graders, problems) = parse(yaml);
    assert!(problems[0].contains("warning: `weight` of a composite member is ignored, as in AgentV 4.x"), "{problems:?}");
    let g = answered(FakeProvider::llm(&["{}"])).grade(&graders.expect("valid")[0]).await;
    assert_eq!(g.score, 0.5);
}

#[test]
fn members_need_a_name_and_a_kebab_case_built_in_type() {
    // unnamed-and-snake-case-members-dropped (a 4.x composite: one member is kebab-case)
    let yaml = "- type: composite\n  assertions:\n    - {type: keywords, expected: [Rome]}\n    - {name: j, type: code_judge, script: x}\n    - {name: t, type: tool-trajectory, mode: any_order, minimums: {}}\n    - {name: c, type: custom-thing}\n    - just a string\n  aggregator: {type: weighted_average}\n";
    let (graders, problems) = parse(yaml);
    let shown = problems.join("\n");
    for want in [
        "e.yaml:3:7: warning: a composite member needs a `name`; the member is left out, as AgentV 4.x does",
        "warning: composite member type `code_judge` must be written in kebab-case (`code-judge`); the member is left out",
        "warning: composite member type `custom-thing` is not a built-in grader; the member is left out",
        "warning: a composite member must be a mapping, found \"just a string\"; the member is left out",
    ] {
        assert!(shown.contains(want), "{want}\n--- got\n{shown}");
    }
    let composite = format!("{:?}", graders.expect("valid")[0].grader);
    assert!(composite.contains("name: \"t\"") && !composite.contains("name: \"j\""), "{composite}");
    // a 2.x composite (no kebab-case type anywhere) keeps snake_case members
    let (graders, problems) = parse(
        "- type: composite\n  assertions: [{name: j, type: code_judge, script: x}]\n  aggregator: {type: weighted_average}\n",
    );
    assert!(problems.is_empty() && graders.is_some(), "{problems:?}");
}

#[test]
fn a_composite_that_cannot_aggregate_is_dropped() {
    for (aggregator, want) in [
        ("", "error: composite is missing `aggregator`; the grader cannot be used, so the case is invalid"),
        ("  aggregator: {type: threshold}\n", "error: the threshold aggregator needs `threshold`; the grader cannot be used, so the case is invalid"),
        ("  aggregator: {type: threshold, threshold: 2}\n", "`threshold` must be a number from 0 to 1, found 2; the grader cannot be used, so the case is invalid"),
        ("  aggregator: {type: majority}\n", "error: unknown composite aggregator `majority`; the grader cannot be used, so the case is invalid"),
        ("  aggregator: {type: code-grader}\n", "error: the code-grader aggregator needs `path`; the grader cannot be used, so the case is invalid"),
        ("  aggregator: {type: weighted_average, weights: {a: x}}\n", "`weights` must map member names to numbers ≥ 0; the grader cannot be used, so the case is invalid"),
        // 4.x drops a composite with a 2.x judge as aggregator
        ("  aggregator: {type: llm_judge}\n", "error: unknown composite aggregator `llm_judge`; the grader cannot be used, so the case is invalid"),
    ] {
        let yaml = format!(
            "- type: composite\n  assertions: [{{name: t, type: tool-trajectory, mode: any_order, minimums: {{}}}}]\n{aggregator}- {{type: keywords, expected: [x]}}\n"
        );
        let (graders, problems) = parse(&yaml);
        assert!(graders.is_none(), "{yaml}: the case is invalid");
        assert!(problems.iter().any(|p| p.contains(want)), "{want}\n--- got\n{problems:?}");
    }
}

#[tokio::test]
async fn threshold_counts_passing_verdicts() {
    // threshold-share-passing: 2 of 3 pass at 0.6
    let g = grade(&format!(
        "- type: composite\n  assertions: [{A_PARIS}, {{name: b, type: keywords, expected: [Rome]}}, {{name: c, type: keywords, expected: [Eiffel]}}]\n  aggregator: {{type: threshold, threshold: 0.6}}\n"
    ))
    .await;
    assert!((g.score - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(g.verdict, Some(GradeVerdict::Pass));
    assert_eq!(
        texts(&g),
        owned(&[
            ("2/3 evaluators passed (threshold: 0.6)", true),
            ("[a] contains Paris", true),
            ("[b] missing Rome", false),
            ("[c] contains Eiffel", true),
        ])
    );
    // threshold-counts-verdicts: a rubric member scoring 0.5 fails its verdict
    let judge = FakeProvider::llm(&[
        r#"{"checks": [{"id": "rubric-1", "satisfied": true, "reasoning": "r"}, {"id": "rubric-2", "satisfied": false, "reasoning": "r"}], "overall_reasoning": "o"}"#,
    ]);
    let yaml = "- type: composite\n  assertions: [{name: r, type: rubrics, criteria: [Names PARIS, Names ROME]}, {name: c, type: keywords, expected: [Paris]}]\n  aggregator: {type: threshold, threshold: 0.5}\n";
    let g = answered(judge).grade(&one(yaml)).await;
    assert_eq!((g.score, g.verdict), (0.5, Some(GradeVerdict::Pass)));
    assert_eq!(g.assertions[0].text, "1/2 evaluators passed (threshold: 0.5)");
    assert_eq!(g.assertions[1].text, "[r] [rubric-1] Names PARIS");
}

#[tokio::test]
async fn composites_nest() {
    // nested-composite: inner threshold 1/2 (weight 2), d 1 (weight 1) → 2/3
    let g = grade(
        "- type: composite\n  assertions:\n    - name: inner\n      type: composite\n      assertions: [{name: x, type: keywords, expected: [Paris]}, {name: y, type: keywords, expected: [Rome]}]\n      aggregator: {type: threshold, threshold: 0.5}\n    - {name: d, type: keywords, expected: [Eiffel]}\n  aggregator: {type: weighted_average, weights: {inner: 2, d: 1}}\n",
    )
    .await;
    assert!((g.score - 2.0 / 3.0).abs() < 1e-12, "{}", g.score);
    assert_eq!(
        texts(&g),
        owned(&[
            ("[inner] 1/2 evaluators passed (threshold: 0.5)", true),
            ("[inner] [x] contains Paris", true),
            ("[inner] [y] missing Rome", false),
            ("[d] contains Eiffel", true),
        ])
    );
    let inner = &g.details.expect("details")["scores"][0];
    assert_eq!((inner["name"].as_str(), inner["weight"].as_f64()), (Some("inner"), Some(2.0)));
    assert_eq!(inner["details"]["scores"][1]["name"], "y", "the inner members are recorded too");
}

#[tokio::test]
async fn skipped_members_do_not_count_and_all_skipped_skips() {
    let judge = FakeProvider::llm(&["not json"]);
    let yaml = "- type: composite\n  assertions: [{name: j, type: llm-grader}, {name: a, type: keywords, expected: [Paris]}]\n  aggregator: {type: weighted_average}\n";
    let g = answered(judge).grade(&one(yaml)).await;
    assert_eq!((g.score, g.verdict), (1.0, Some(GradeVerdict::Pass)), "only `a` counts");
    let judge = FakeProvider::llm(&["not json"]);
    let yaml = "- type: composite\n  assertions: [{name: j, type: llm-grader}]\n  aggregator: {type: threshold, threshold: 0.5}\n";
    let g = answered(judge).grade(&one(yaml)).await;
    assert_eq!((g.score, g.verdict), (0.0, Some(GradeVerdict::Skip)));
    assert_eq!(texts(&g), owned(&[("All evaluators skipped (infrastructure failure)", false)]));
}

#[tokio::test]
async fn the_code_aggregator_reads_member_results_and_prints_the_grade() {
    let dir = tempfile::tempdir().expect("dir");
    let seen = dir.path().join("stdin.json");
    let yaml = format!(
        "- type: composite\n  assertions: [{A_PARIS}, {B_LONDON}]\n  aggregator:\n    type: code-grader\n    path: \"tee {} >/dev/null; echo '{{\\\"score\\\": 0.4, \\\"verdict\\\": \\\"pass\\\", \\\"assertions\\\": [{{\\\"text\\\": \\\"custom\\\", \\\"passed\\\": 1}}, {{\\\"passed\\\": true}}]}}'\"\n",
        seen.display()
    );
    let g = grade_v4(&yaml).await;
    assert_eq!((g.score, g.verdict), (0.4, Some(GradeVerdict::Pass)), "the printed verdict wins");
    assert_eq!(texts(&g), owned(&[("custom", true)]));
    let stdin = std::fs::read_to_string(&seen).expect("stdin kept");
    assert!(
        stdin.starts_with("{\n  \"results\": {\n    \"a\": {\n      \"score\": 1,\n      \"verdict\": \"pass\",\n      \"assertions\": [\n        {\n          \"text\": \"contains Paris\",\n          \"passed\": true\n        }\n      ],\n      \"expectedAspectCount\": 1"),
        "{stdin}"
    );
    // a failing command scores 0
    let g = grade_v4(&format!(
        "- type: composite\n  assertions: [{A_PARIS}]\n  aggregator: {{type: code_grader, path: 'echo boom >&2; exit 4'}}\n"
    ))
    .await;
    assert_eq!((g.score, g.verdict), (0.0, Some(GradeVerdict::Fail)));
    assert_eq!(
        texts(&g),
        owned(&[("Code aggregator failed: exited with code 4\nstderr: boom", false)])
    );
    assert!(g.crashed, "an aggregator that exits non-zero is a grader error");
    // output that is not JSON scores 0 without assertions
    let g = grade_v4(&format!(
        "- type: composite\n  assertions: [{A_PARIS}]\n  aggregator: {{type: code-grader, path: 'echo fine'}}\n"
    ))
    .await;
    assert_eq!((g.score, g.assertions.len(), g.error), (0.0, 0, None));
}

/// The aggregator prompt 4.42.4 sent for the compat case `llm-aggregator` (three `contains`
/// members), byte for byte.
#[tokio::test]
async fn the_llm_aggregator_sends_the_recorded_prompt() {
    let judge = FakeProvider::llm(&[r#"{"score": 0.6666666666666666, "assertions": [{"text": "mean of 3", "passed": false}]}"#]);
    let a = answered(judge.clone());
    let member = one(&format!("- {A_PARIS}\n"));
    let contains = |text: &str, passed: bool| {
        let score = if passed { 1.0 } else { 0.0 };
        Grade::assessed(score, vec![Assertion::new(text, passed)]).with_verdict(GradeVerdict::of_score(score))
    };
    let graders: Vec<ConfiguredGrader> = ["a", "b", "c"]
        .iter()
        .map(|n| ConfiguredGrader {
            name: (*n).to_owned(),
            ..member.clone()
        })
        .collect();
    let members = vec![
        Member {
            grader: &graders[0],
            grade: contains("Output contains \"Paris\"", true),
        },
        Member {
            grader: &graders[1],
            grade: contains("Output does not contain \"Rome\"", false),
        },
        Member {
            grader: &graders[2],
            grade: contains("Output contains \"France\"", true),
        },
    ];
    let g = aggregate(&Aggregator::Llm { prompt: None }, &members, &a.context()).await;
    assert!((g.score - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(texts(&g), owned(&[("mean of 3", false)]));
    let requests = judge.requests();
    assert_eq!(
        requests[0].question,
        "Review the following evaluation results:\n{\n  \"a\": {\n    \"score\": 1,\n    \"verdict\": \"pass\",\n    \"assertions\": [\n      {\n        \"text\": \"Output contains \\\"Paris\\\"\",\n        \"passed\": true\n      }\n    ],\n    \"expectedAspectCount\": 1\n  },\n  \"b\": {\n    \"score\": 0,\n    \"verdict\": \"fail\",\n    \"assertions\": [\n      {\n        \"text\": \"Output does not contain \\\"Rome\\\"\",\n        \"passed\": false\n      }\n    ],\n    \"expectedAspectCount\": 1\n  },\n  \"c\": {\n    \"score\": 1,\n    \"verdict\": \"pass\",\n    \"assertions\": [\n      {\n        \"text\": \"Output contains \\\"France\\\"\",\n        \"passed\": true\n      }\n    ],\n    \"expectedAspectCount\": 1\n  }\n}\n\nDecide the final score and verdict based on all grader results.\nReturn a JSON object with: score (0.0-1.0), verdict (pass/fail), and reasoning."
    );
    assert_eq!(requests[0].system_prompt.as_deref(), Some(FREEFORM_SYSTEM));
    // a custom prompt, and a reply that does not parse: 0, fail, no retry
    let judge = FakeProvider::llm(&["no"]);
    let a = answered(judge.clone());
    let g = aggregate(
        &Aggregator::Llm {
            prompt: Some("Results: {{EVALUATOR_RESULTS_JSON}} ({{ EVALUATOR_RESULTS_JSON }})".into()),
        },
        &members[..1],
        &a.context(),
    )
    .await;
    assert_eq!((g.score, g.verdict), (0.0, Some(GradeVerdict::Fail)));
    assert_eq!(texts(&g), owned(&[("LLM aggregator failed", false)]));
    let asked = judge.questions();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].starts_with("Results: {\n  \"a\": {") && asked[0].ends_with("} ({{ EVALUATOR_RESULTS_JSON }})"), "{}", asked[0]);
}

#[test]
fn the_llm_aggregator_reads_a_prompt_file() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("agg.md"), "Combine {{EVALUATOR_RESULTS_JSON}}").expect("write");
    let (graders, problems) = crate::evaluators::testkit::parse_in(
        dir.path(),
        &format!("- type: composite\n  assertions: [{A_PARIS}]\n  aggregator: {{type: llm-grader, prompt: 'file://agg.md'}}\n"),
    );
    assert!(problems.is_empty(), "{problems:?}");
    let shown = format!("{:?}", graders.expect("valid")[0].grader);
    assert!(shown.contains("prompt: Some(\"Combine {{EVALUATOR_RESULTS_JSON}}\")"), "{shown}");
}
