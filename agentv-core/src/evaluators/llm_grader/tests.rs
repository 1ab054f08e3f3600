use serde_json::json;

use super::*;
use crate::evaluators::GradeVerdict;
use crate::model::OutputMessage;
use crate::evaluators::llm_prompt::DEFAULT_TEMPLATE;
use crate::evaluators::testkit::{Answered, FakeProvider, one, parse, parse_in};

const ANSWER: &str = "Paris is the capital of France and home of the Eiffel Tower.";
const QUESTION: &str = "Tell me about Paris. [ans:paris]";

fn answered(grader: Arc<FakeProvider>) -> Answered {
    Answered::new(QUESTION, "Names PARIS and ROME", ANSWER, grader)
}

/// The default prompt 4.42.4 sent for the compat case `explicit-default-grader`.
const RECORDED_DEFAULT: &str = "You are an expert grader. Your goal is to grade the answer based on how well it achieves the criteria for the original task.\n\nUse the reference_answer as a gold standard for a high-quality response (if provided). The reference_answer may be a simple text response, or it may contain a sequence of expected agent messages including tool calls. When it contains multiple messages, the last message represents the final expected answer. The answer does not need to match it verbatim, but should capture the key points and follow the same spirit.\n\nBe concise and focused in your evaluation. Provide succinct, specific feedback rather than verbose explanations.\n\n[[ ## criteria ## ]]\nNames PARIS and ROME\n\n[[ ## question ## ]]\nTell me about Paris. [ans:paris]\n\n[[ ## reference_answer ## ]]\n\n\n[[ ## answer ## ]]\nParis is the capital of France and home of the Eiffel Tower.";

#[tokio::test]
async fn freeform_sends_the_recorded_default_prompt_and_reads_the_reply() {
    let judge = FakeProvider::llm(&[
        r#"{"score": 0.5, "assertions": [{"text": "keyword paris", "passed": true}, {"text": "keyword rome", "passed": false, "evidence": "no Rome"}], "details": {"found": ["paris"]}, "hits": ["ignored"]}"#,
    ]);
    let a = answered(judge.clone());
    let g = a.grade(&one("- {type: llm-grader}\n")).await;
    assert_eq!((g.score, g.verdict), (0.5, Some(GradeVerdict::Fail)));
    assert_eq!(g.hits, ["keyword paris"]);
    assert_eq!(g.misses, ["keyword rome"]);
    assert_eq!(g.assertions[1].evidence.as_deref(), Some("no Rome"));
    assert_eq!(g.details, json!({"found": ["paris"]}).as_object().cloned());
    assert_eq!(g.error, None);
    let requests = judge.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].question, RECORDED_DEFAULT);
    assert_eq!(requests[0].system_prompt.as_deref(), Some(FREEFORM_SYSTEM));
    assert_eq!(requests[0].temperature, None);
    let recorded = g.request.expect("recorded");
    assert_eq!(recorded["target"], "grader");
    assert_eq!(recorded["user_prompt"], RECORDED_DEFAULT);
}

/// Which prompt (reference §2.5 and quirk 1), case by case, as the compat suite designs them.
#[tokio::test]
async fn the_prompt_key_picks_the_template_as_4x_does() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir(dir.path().join("graders")).expect("dir");
    std::fs::write(
        dir.path().join("graders/all-or-nothing.md"),
        "FAKE-RULE: all-or-nothing\n\n[[ ## criteria ## ]]\n{{ criteria }}\n\n[[ ## answer ## ]]\n{{output}}\n",
    )
    .expect("write");
    let criteria_section = |text: &str| format!("[[ ## criteria ## ]]\n{text}\n\n[[ ## question ## ]]");
    // (grader, what the prompt holds, whether it is a whole template)
    let cases: &[(&str, String, bool)] = &[
        // no assertions key at all in 4.x: the default prompt with the case criteria
        ("- {type: llm-grader}\n", criteria_section("Names PARIS and ROME"), false),
        // inline text without a variable replaces the criteria
        (
            "- {type: llm-grader, prompt: Names PARIS and FRANCE}\n",
            criteria_section("Names PARIS and FRANCE"),
            false,
        ),
        // a bare path is inline text, never a file (quirk 1)
        (
            "- {type: llm_grader, prompt: graders/all-or-nothing.md}\n",
            criteria_section("graders/all-or-nothing.md"),
            false,
        ),
        // inline text with a 4.x variable is the whole template
        (
            "- {type: llm-grader, prompt: \"Check {{ criteria }} in {{output}} ({{candidate_answer}})\"}\n",
            format!("Check Names PARIS and ROME in {ANSWER} ({{{{candidate_answer}}}})"),
            true,
        ),
        // file:// loads the template
        (
            "- {type: llm-grader, prompt: 'file://graders/all-or-nothing.md'}\n",
            format!("FAKE-RULE: all-or-nothing\n\n[[ ## criteria ## ]]\nNames PARIS and ROME\n\n[[ ## answer ## ]]\n{ANSWER}\n"),
            true,
        ),
    ];
    for (yaml, want, whole) in cases {
        let (graders, problems) = parse_in(dir.path(), yaml);
        let grader = graders.expect("valid").remove(0);
        assert!(problems.iter().all(|p| p.contains("2.x variable")), "{yaml}: {problems:?}");
        let judge = FakeProvider::llm(&[r#"{"score": 1}"#]);
        answered(judge.clone()).grade(&grader).await;
        let asked = judge.questions().remove(0);
        assert!(asked.contains(want.as_str()), "{yaml}\n--- asked\n{asked}");
        assert_eq!(!asked.starts_with("You are an expert grader."), *whole, "{yaml}");
    }
}

#[tokio::test]
async fn a_custom_template_gets_no_appended_blocks_the_default_gets_tool_calls() {
    let mut a = answered(FakeProvider::llm(&[r#"{"score": 1}"#]));
    let mut m = OutputMessage::assistant("");
    m.tool_calls
        .push(serde_json::from_value(json!({"tool": "Read", "input": {"file_path": "/a.md"}})).expect("call"));
    a.messages.insert(0, m);
    let judge = FakeProvider::llm(&[r#"{"score": 1}"#]);
    a.target.judge = judge.clone();
    a.grade(&one("- {type: llm-grader}\n")).await;
    a.grade(&one("- {type: llm-grader, prompt: 'Calls: {{tool_calls}}'}\n")).await;
    let asked = judge.questions();
    assert!(asked[0].ends_with(&format!("{ANSWER}\n\n[[ ## tool_calls ## ]]\n- Read: /a.md")), "{}", asked[0]);
    assert_eq!(asked[1], "Calls: - Read: /a.md");
}

#[tokio::test]
async fn a_bad_reply_is_asked_again_then_repaired_then_skipped() {
    // first unparsable, then valid: two calls
    let judge = FakeProvider::llm(&["I think it is fine.", r#"```json
{"score": 0.9, "assertions": [{"text": "ok", "passed": "true"}]}
```"#]);
    let g = answered(judge.clone()).grade(&one("- {type: llm-grader}\n")).await;
    assert_eq!((g.score, g.verdict, judge.questions().len()), (0.9, Some(GradeVerdict::Pass), 2));
    assert_eq!(g.hits, ["ok"], "\"true\" is read as true");

    // a score out of range is not clamped: it fails the schema, three times, then the
    // repair call fixes it
    let judge = FakeProvider::llm(&[r#"{"score": 1.5}"#, r#"{"score": 1.5}"#, r#"{"score": 1.5}"#, r#"{"score": 1}"#]);
    let g = answered(judge.clone()).grade(&one("- {type: llm-grader}\n")).await;
    let asked = judge.questions();
    assert_eq!((g.score, asked.len()), (1.0, 4));
    assert_eq!(
        asked[3],
        "The following evaluation response has useful grading content but invalid JSON structure.\nRepair it to satisfy the schema in the system prompt.\nPreserve the evaluation meaning, do not re-grade the answer, and return only a single JSON object.\n\nValidation error:\n`score` must be between 0 and 1, got 1.5\n\nInvalid response:\n{\"score\": 1.5}"
    );
    let requests = judge.requests();
    assert_eq!(requests[3].system_prompt.as_deref(), Some(FREEFORM_SYSTEM), "the repair keeps the schema");
}

#[tokio::test]
async fn a_reply_that_never_parses_skips_the_grader() {
    let judge = FakeProvider::llm(&["I refuse to answer in JSON."]);
    let g = answered(judge.clone()).grade(&one("- {type: llm-grader}\n")).await;
    assert_eq!(judge.questions().len(), 4, "three attempts and one repair");
    assert_eq!((g.score, g.verdict), (0.0, Some(GradeVerdict::Skip)));
    let text = &g.assertions[0].text;
    assert!(
        text.starts_with(
            "Grader parse failure after 3 attempts: Failed to parse evaluator response after 3 attempts and 1 structure-fix attempt: the reply is not valid JSON"
        ),
        "{text}"
    );
    assert!(!g.assertions[0].passed);
    assert_eq!(g.error.as_deref(), Some(text.as_str()));

    // empty replies cannot be repaired: three calls only
    let judge = FakeProvider::llm(&["  "]);
    let g = answered(judge.clone()).grade(&one("- {type: llm-grader}\n")).await;
    assert_eq!((judge.questions().len(), g.verdict), (3, Some(GradeVerdict::Skip)));

    // provider errors count as attempts and take the same path
    let judge = FakeProvider::failing("HTTP 500: boom");
    let g = answered(judge.clone()).grade(&one("- {type: llm-grader}\n")).await;
    assert_eq!(judge.questions().len(), 3);
    assert!(
        g.assertions[0].text.ends_with("1 structure-fix attempt: HTTP 500: boom"),
        "{}",
        g.assertions[0].text
    );
    assert_eq!(g.verdict, Some(GradeVerdict::Skip));
}

#[tokio::test]
async fn rubrics_of_an_llm_grader_grade_per_item() {
    let judge = FakeProvider::llm(&[
        r#"{"checks": [{"id": "r1", "satisfied": true, "reasoning": "names it"}, {"id": "r2", "satisfied": false, "reasoning": "no Madrid"}], "overall_reasoning": "1 of 2"}"#,
    ]);
    let grader = one("- type: llm-grader\n  rubrics:\n    - {id: r1, outcome: Names PARIS}\n    - {id: r2, outcome: Names MADRID}\n");
    let g = answered(judge.clone()).grade(&grader).await;
    assert_eq!((g.score, g.verdict), (0.5, Some(GradeVerdict::Fail)));
    assert_eq!(g.hits, ["[r1] Names PARIS"]);
    let requests = judge.requests();
    assert!(requests[0].question.contains("- [r1] (REQUIRED): Names PARIS\n- [r2] (REQUIRED): Names MADRID"));
    assert_eq!(requests[0].system_prompt.as_deref(), Some(rubrics::CHECKLIST_SYSTEM));
}

#[tokio::test]
async fn an_agent_grader_gets_one_delegate_prompt_and_fails_without_retries() {
    let judge = FakeProvider::agent(&["I looked around; all good."]);
    let a = answered(judge.clone()).with_reference("Paris.");
    let g = a.grade(&one("- {type: llm-grader}\n")).await;
    assert_eq!((g.score, g.verdict), (0.0, Some(GradeVerdict::Fail)), "fail, not skip");
    assert_eq!(g.assertions[0].text, "Failed to parse llm-grader agent response as valid evaluation JSON");
    let requests = judge.requests();
    assert_eq!(requests.len(), 1, "no retries");
    assert_eq!(requests[0].system_prompt, None);
    assert_eq!(
        requests[0].question,
        format!(
            "You are an expert grader. Investigate the workspace to verify the criteria are met.\n\n[[ ## question ## ]]\n{QUESTION}\n\n[[ ## criteria ## ]]\nNames PARIS and ROME\n\n[[ ## reference_answer ## ]]\nParis.\n\n[[ ## answer ## ]]\n{ANSWER}\n\n{FREEFORM_SYSTEM}"
        )
    );
    let judge = FakeProvider::agent(&[r#"Done. {"score": 0.85}"#]);
    let g = answered(judge).grade(&one("- {type: llm-grader}\n")).await;
    assert_eq!((g.score, g.verdict), (0.85, Some(GradeVerdict::Pass)));
}

#[tokio::test]
async fn the_graders_own_target_must_exist_and_gets_the_temperature() {
    let judge = FakeProvider::llm(&[r#"{"score": 0.35}"#]);
    let a = answered(judge.clone());
    let g = a.grade(&one("- {type: llm-grader, target: grader, temperature: 0.2}\n")).await;
    assert_eq!(g.score, 0.35);
    assert_eq!(judge.requests.lock().expect("lock")[0].temperature, Some(0.2));
    let g = a.grade(&one("- {type: llm-grader, target: nope}\n")).await;
    assert_eq!(g.score, 0.0);
    assert!(
        g.error.as_deref().is_some_and(|e| e.starts_with("grader target `nope`: unknown target `nope`")),
        "{:?}",
        g.error
    );
}

#[tokio::test]
async fn a_custom_prompt_sees_the_cases_metadata() {
    let judge = FakeProvider::llm(&[r#"{"score": 0.75}"#]);
    let a = answered(judge.clone()).with_metadata(serde_json::json!({"capital": "PARIS", "rival": "ROME"}));
    let g = a
        .grade(&one("- {type: llm-grader, prompt: \"criteria {{metadata_json}} / {{ metadata }}\"}\n"))
        .await;
    assert_eq!(g.score, 0.75);
    let asked = judge.questions();
    assert!(
        asked[0].starts_with("criteria {\"capital\":\"PARIS\",\"rival\":\"ROME\"} / {\n  \"capital\": \"PARIS\""),
        "{}",
        asked[0]
    );
}

#[test]
fn keys_are_checked_at_load_and_each_failure_drops_what_4x_drops() {
    // grader-level problems: the grader cannot be used, so the case is invalid
    for (yaml, want) in [
        (
            "- {type: llm-grader, temperature: 3}\n- {type: llm-grader}\n",
            "e.yaml:1:35: error: `temperature` must be a number from 0 to 2, found 3; the grader cannot be used, so the case is invalid",
        ),
        (
            "- {type: llm-grader, max_steps: 0}\n- {type: llm-grader}\n",
            "error: `max_steps` must be a whole number from 1 to 50, found 0; the grader cannot be used, so the case is invalid",
        ),
        (
            "- {type: llm-grader, prompt: [a]}\n- {type: llm-grader}\n",
            "error: `prompt` must be text or `{command: [...]}`, found a list; the grader cannot be used, so the case is invalid",
        ),
        (
            "- {type: llm-grader, prompt: {command: []}}\n- {type: llm-grader}\n",
            "`command` must be a non-empty argv list, found a list; the grader cannot be used, so the case is invalid",
        ),
    ] {
        let (graders, problems) = parse(yaml);
        assert!(graders.is_none(), "{yaml}: {problems:?}");
        assert!(problems.iter().any(|p| p.contains(want)), "{yaml}: {problems:?}");
    }
    // case-level problems: errors
    for (yaml, want) in [
        ("- {type: llm-grader, prompt: 'file://missing.md'}\n", "error: prompt file `missing.md` not found"),
        (
            "- {type: llm-grader, prompt: {command: [python3, missing_prompt.py]}}\n",
            "error: prompt script `missing_prompt.py` not found",
        ),
        (
            "- type: llm-grader\n  rubrics: [{id: a, outcome: o, score_ranges: {2: x}}]\n",
            "error: `score_ranges` of rubric `a` must start at 0",
        ),
    ] {
        let (graders, problems) = parse(yaml);
        assert!(graders.is_none(), "{yaml}");
        assert!(problems.iter().any(|p| p.contains(want)), "{yaml}: {problems:?}");
    }
    // temperature without target, model, preprocessors: warnings; other keys go to config
    let (graders, problems) = parse(
        "- {type: llm-grader, temperature: 0.5, model: gpt-4o, preprocessors: [], lang: fr, config: {lang: en, n: 1}}\n",
    );
    let grader = format!("{:?}", graders.expect("valid")[0].grader);
    assert!(grader.contains("temperature: None"), "{grader}");
    assert!(grader.contains(r#""lang": String("en")"#) && grader.contains(r#""n": Number(1)"#), "{grader}");
    let shown = problems.join("\n");
    assert!(shown.contains("`temperature` is used only together with `target`"), "{shown}");
    assert!(shown.contains("`model` is ignored, as in AgentV 4.x"), "{shown}");
    assert!(shown.contains("`preprocessors` is not supported by agentv, ignored"), "{shown}");
    let (_, problems) = parse("- {type: llm-grader, targt: x}\n");
    assert!(problems[0].contains("did you mean `target`?"), "{problems:?}");
}

#[test]
fn a_template_file_must_show_the_answer() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("blind.md"), "Grade {{ criteria }} and {{ question }}").expect("write");
    std::fs::write(dir.path().join("ok.md"), "Grade {{ expected_output }}").expect("write");
    let (graders, problems) = parse_in(dir.path(), "- {type: llm-grader, prompt: 'file://blind.md'}\n");
    assert!(graders.is_none());
    let shown = problems.join("\n");
    assert!(shown.contains("error: prompt file `blind.md` uses neither `{{ output }}` nor `{{ expected_output }}`"), "{shown}");
    assert!(shown.contains("warning: `{{ question }}` is a 2.x variable; llm-grader leaves it as written"), "{shown}");
    let (graders, problems) = parse_in(dir.path(), "- {type: llm-grader, prompt: 'file://ok.md'}\n");
    assert!(graders.is_some() && problems.is_empty(), "{problems:?}");
}

#[tokio::test]
async fn a_prompt_script_prints_the_template() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join("prompt.sh"),
        "input=$(cat)\ncase \"$input\" in *'\"answer\"'*'\"config\"'*) ;; *) echo missing keys; exit 1;; esac\nprintf '  Lang %s: grade {{output}} against {{criteria}}\\n' \"$(pwd | xargs basename)\"\n",
    )
    .expect("write");
    let (graders, problems) = parse_in(
        dir.path(),
        "- {type: llm-grader, prompt: {command: [sh, prompt.sh], config: {lang: fr}}}\n",
    );
    assert!(problems.is_empty(), "{problems:?}");
    let grader = graders.expect("valid").remove(0);
    let judge = FakeProvider::llm(&[r#"{"score": 1}"#]);
    let g = answered(judge.clone()).grade(&grader).await;
    assert_eq!(g.error, None, "{:?}", g.assertions);
    let here = dir.path().file_name().expect("name").to_string_lossy().into_owned();
    assert_eq!(
        judge.questions()[0],
        format!("Lang {here}: grade {ANSWER} against Names PARIS and ROME"),
        "trimmed, substituted, run in the script's directory"
    );
    // a failing script is a grader error
    std::fs::write(dir.path().join("prompt.sh"), "echo broken >&2; exit 2\n").expect("write");
    let g = answered(FakeProvider::llm(&[r#"{"score": 1}"#])).grade(&grader).await;
    assert_eq!(g.score, 0.0);
    assert_eq!(g.error.as_deref(), Some("prompt script exited with code 2: broken"));
}

#[test]
fn the_default_template_is_the_4x_one() {
    assert!(DEFAULT_TEMPLATE.ends_with("[[ ## answer ## ]]\n{{output}}"));
}
