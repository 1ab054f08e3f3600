//! `llm_judge`: asks the judge target for one JSON object `{score, hits, misses, reasoning}`.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{CaseField, Grade, GradeContext, Grader, GraderEntry, Names, Need, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};
use crate::model::Message;
use crate::providers::ProviderRequest;
use crate::template;

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "llm_judge",
    names: Names {
        v2: &["llm_judge", "llm-judge"],
        v4: &[],
        promptfoo: &[],
    },
    doc: "Asks the judge target to grade the answer against the expected outcome.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new(
        "prompt",
        Kind::Text,
        "A custom user prompt with {{ variable }} placeholders, or the path of a file holding one.",
    )
    .aliases(&["prompt_path", "promptPath"]),
    Key::new(
        "include_trace_summary",
        Kind::Bool,
        "Add the trace summary to the prompt.",
    )
    .aliases(&["trace_summary"]),
];
const KEYS: KeyTable = KeyTable::new("llm_judge", "An LLM judge.", &[OWN]);

/// An LLM judge as configured.
#[derive(Debug, Clone, Default)]
pub struct LlmJudge {
    /// Custom user-prompt template with `{{ variable }}` placeholders.
    pub prompt: Option<String>,
    /// Where the template was read from, if it came from a file.
    pub prompt_path: Option<std::path::PathBuf>,
    /// Adds a trace-summary section to the prompt.
    pub include_trace_summary: bool,
}

/// Variables a custom prompt may use as `{{ name }}`.
pub const TEMPLATE_VARIABLES: &[&str] = &[
    "candidate_answer",
    "question",
    "expected_outcome",
    "reference_answer",
    "expected_messages",
    "input_messages",
    "output_messages",
    "trace_summary",
    "file_changes",
];

/// At most this many hits and misses are kept.
pub const MAX_ITEMS: usize = 4;

/// The system prompt: the JSON contract the reply must follow.
pub const SYSTEM_PROMPT: &str = "You are an impartial evaluator grading a candidate answer against an expected outcome.\n\
Reply with exactly one JSON object and nothing else, with these keys:\n\
- \"score\": a number from 0.0 (fails the expected outcome) to 1.0 (fully meets it)\n\
- \"hits\": up to 4 short strings, each a specific way the answer meets the expected outcome\n\
- \"misses\": up to 4 short strings, each a specific way the answer falls short\n\
- \"reasoning\": one or two sentences explaining the score\n\
Example: {\"score\": 0.75, \"hits\": [\"names the root cause\"], \"misses\": [\"no fix proposed\"], \"reasoning\": \"Correct diagnosis, incomplete remedy.\"}";

/// The default user prompt; sections are filled with the case's values.
pub const DEFAULT_TEMPLATE: &str = "[[ ## expected_outcome ## ]]\n{{ expected_outcome }}\n\n\
[[ ## question ## ]]\n{{ question }}\n\n\
[[ ## reference_answer ## ]]\n{{ reference_answer }}\n\n\
[[ ## candidate_answer ## ]]\n{{ candidate_answer }}";

/// What a custom prompt is checked against when loaded.
const TEMPLATE_RULES: template::Rules<'static> = template::Rules {
    owner: "the llm_judge prompt",
    known: TEMPLATE_VARIABLES,
    answer: &["candidate_answer", "output_messages"],
};

/// Reads an `llm_judge`'s keys. A `prompt` that looks like a path and names a file is read
/// from it; a custom template is checked for unknown variables.
fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn super::Grader>> {
    let mut judge = LlmJudge {
        include_trace_summary: f.boolean("include_trace_summary", cx.diags).unwrap_or(false),
        ..LlmJudge::default()
    };
    let prompt_pos = f.take("prompt").map(|n| n.pos);
    if let (Some(prompt), Some(pos)) = (f.string("prompt", cx.diags), prompt_pos) {
        let looks_like_path = !prompt.contains('\n') && !prompt.contains("{{") && prompt.len() < 300;
        match looks_like_path.then(|| cx.ws.resolve_file(&prompt, cx.eval_dir)) {
            Some(Ok(path)) => match std::fs::read_to_string(&path) {
                Ok(text) => {
                    judge.prompt = Some(text.replace("\r\n", "\n"));
                    judge.prompt_path = Some(path);
                }
                Err(e) => cx
                    .diags
                    .error(pos, format!("cannot read prompt file {}: {e}", path.display()), None),
            },
            Some(Err(_)) if prompt.ends_with(".md") || prompt.ends_with(".txt") => {
                cx.diags.warn(
                    pos,
                    format!("prompt file `{prompt}` not found; the text is used as an inline template"),
                    Some("check the path (relative to the eval file or the repository root)".to_owned()),
                );
                judge.prompt = Some(prompt);
            }
            _ => judge.prompt = Some(prompt),
        }
        if let Some(text) = &judge.prompt {
            template::check(text, TEMPLATE_RULES, pos, cx.diags);
        }
    }
    Some(Arc::new(judge))
}

impl Grader for LlmJudge {
    /// The default prompt grades against `expected_outcome`; a custom one needs it only when it
    /// uses it.
    fn needs(&self) -> Vec<Need> {
        let (why, fix) = match &self.prompt {
            None => (
                "its default prompt grades the answer against it",
                "add `expected_outcome: <what a good answer does>`, or grade with other evaluators (keywords, code_judge, tool_trajectory) under `evaluators`",
            ),
            Some(prompt) if template::uses(prompt, "expected_outcome") => (
                "its prompt uses `{{ expected_outcome }}`",
                "add `expected_outcome: <what a good answer does>`",
            ),
            Some(_) => return Vec::new(),
        };
        vec![Need {
            field: CaseField::ExpectedOutcome,
            why,
            fix,
        }]
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(run(self, ctx))
    }
}

fn pretty(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// The rendered user prompt for this case.
pub fn user_prompt(spec: &LlmJudge, ctx: &GradeContext<'_>) -> String {
    let mut prompt = template::substitute_with(spec.prompt.as_deref().unwrap_or(DEFAULT_TEMPLATE), |name| {
        variable(name, ctx)
    });
    // The workspace diff, when the default prompt grades a case that changed files.
    if let Some(diff) = ctx.workspace.and_then(|w| w.file_changes.as_deref())
        && spec.prompt.is_none()
    {
        prompt.push_str("\n\n[[ ## file_changes ## ]]\n");
        prompt.push_str(diff);
    }
    if spec.include_trace_summary && !spec.prompt.as_deref().is_some_and(|p| p.contains("trace_summary")) {
        prompt.push_str("\n\n[[ ## trace_summary ## ]]\n");
        prompt.push_str(&pretty(ctx.trace_summary));
    }
    prompt
}

/// The value of one template variable. The JSON ones are rendered only when a template asks
/// for them: they can be large, and most templates do not use them.
fn variable(name: &str, ctx: &GradeContext<'_>) -> Option<String> {
    let case = ctx.case;
    Some(match name {
        "candidate_answer" => ctx.candidate_answer.to_owned(),
        "question" => case.question.clone(),
        "expected_outcome" => case.expected_outcome.clone(),
        "reference_answer" => case.reference_answer.clone(),
        "expected_messages" => pretty(&case.expected_messages.iter().map(Message::to_json).collect::<Vec<_>>()),
        "input_messages" => pretty(&case.raw_inputs()),
        "output_messages" => pretty(&ctx.output_messages),
        "trace_summary" => pretty(ctx.trace_summary),
        "file_changes" => ctx.workspace.and_then(|w| w.file_changes.clone()).unwrap_or_default(),
        _ => return None,
    })
}

async fn run(spec: &LlmJudge, ctx: &GradeContext<'_>) -> Grade {
    let user = user_prompt(spec, ctx);
    let request = ProviderRequest {
        eval_id: ctx.case.id.clone(),
        attempt: ctx.attempt,
        question: user.clone(),
        system_prompt: Some(SYSTEM_PROMPT.to_owned()),
        eval_dir: Some(ctx.case.eval_dir().to_path_buf()),
        ..ProviderRequest::default()
    };
    let recorded = json!({
        "user_prompt": user,
        "system_prompt": SYSTEM_PROMPT,
        "target": ctx.target.judge_name,
    });
    if let Some(dumps) = &ctx.run.dump_prompts {
        // Two judges of one case may share a judge target: each is told apart by its address.
        let grader = format!("{:p}", std::ptr::from_ref(spec));
        let suffix = dump_suffix(ctx);
        let dump_for = crate::report::DumpFor {
            eval_file: &ctx.case.source.file,
            grader: Some(&grader),
            suffix: Some(&suffix),
        };
        crate::report::dump_prompt(
            dumps,
            dump_for,
            ctx.target.judge.as_ref(),
            &request,
            &ctx.run.secrets,
        );
    }
    let mut grade = match ctx.target.judge.invoke(&request).await {
        Err(e) => Grade::failed(format!("judge target `{}` failed: {e}", ctx.target.judge_name)),
        Ok(response) => {
            let reply = agentv_eval_sdk::last_assistant_text(&response.output_messages).unwrap_or_default();
            parse_reply(&reply)
        }
    };
    grade.request = Some(recorded);
    grade
}

/// Suffix of judge prompt dumps, so they do not overwrite the case's own dump.
fn dump_suffix(ctx: &GradeContext<'_>) -> String {
    format!("judge-{}", ctx.target.judge_name)
}

/// Parses a judge reply. No valid JSON object with a numeric score → score 0 with empty
/// hits/misses and `error` set (`docs/architecture.md#grader-errors`).
pub fn parse_reply(reply: &str) -> Grade {
    let Some(obj) = agentv_eval_sdk::extract_json_object(reply) else {
        return Grade::failed("no valid JSON in judge reply");
    };
    let Some(score) = obj.get("score").and_then(Value::as_f64) else {
        return Grade::failed("no valid JSON in judge reply: the object has no numeric `score`");
    };
    let items = |key: &str| -> Vec<String> {
        obj.get(key)
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .take(MAX_ITEMS)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let clamped = agentv_eval_sdk::clamp_score(score);
    Grade {
        score: clamped,
        hits: items("hits"),
        misses: items("misses"),
        reasoning: obj.get("reasoning").and_then(Value::as_str).map(str::to_owned),
        details: clamp_note(score, clamped),
        ..Grade::default()
    }
}

/// Where the judge's score was outside [0, 1]: the clamp is the 2.x contract
/// (`docs/architecture.md#scoring`), but a judge answering 5 is worth seeing, so the result's
/// `details` keep what it said.
fn clamp_note(reported: f64, used: f64) -> Option<serde_json::Map<String, Value>> {
    if (0.0..=1.0).contains(&reported) {
        return None;
    }
    let mut details = serde_json::Map::new();
    details.insert("reported_score".to_owned(), serde_json::json!(reported));
    details.insert(
        "note".to_owned(),
        Value::String(format!(
            "the judge's score {reported} is outside [0, 1]; clamped to {used}"
        )),
    );
    Some(details)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_json_is_found_in_prose_and_fences() {
        let cases = [
            (r#"{"score": 0.5}"#, Some(0.5)),
            (
                "Here you go:\n```json\n{\"score\": 0.9, \"hits\": [\"a\"]}\n```\nthanks",
                Some(0.9),
            ),
            ("first {not json} then {\"score\": 0.2}", Some(0.2)),
            ("no json here", None),
            ("{\"score\": 1", None),
        ];
        for (text, want) in cases {
            let g = parse_reply(text);
            assert_eq!(g.error.is_none().then_some(g.score), want, "{text}");
        }
    }

    #[test]
    fn reply_is_clamped_trimmed_and_capped() {
        let g = parse_reply(
            r#"{"score": 1.5, "hits": [" a ", "", "b", "c", "d", "e"], "misses": [1, "m"], "reasoning": "ok"}"#,
        );
        assert_eq!(g.score, 1.0);
        assert_eq!(g.hits, ["a", "b", "c", "d"]);
        assert_eq!(g.misses, ["m"]);
        assert_eq!(g.reasoning.as_deref(), Some("ok"));
        assert!(g.error.is_none());
        assert_eq!(parse_reply(r#"{"score": -2}"#).score, 0.0);
    }

    #[test]
    fn a_clamped_judge_score_is_recorded_in_details() {
        let g = parse_reply(r#"{"score": 5}"#);
        assert_eq!(g.score, 1.0);
        let details = g.details.expect("details");
        assert_eq!(details["reported_score"], 5.0);
        assert_eq!(
            details["note"],
            "the judge's score 5 is outside [0, 1]; clamped to 1"
        );
        assert_eq!(parse_reply(r#"{"score": 0.5}"#).details, None);
        assert_eq!(parse_reply(r#"{"score": 1}"#).details, None);
    }

    #[test]
    fn invalid_reply_scores_zero_with_error_and_no_items() {
        for reply in ["I think it is good.", r#"{"verdict": "pass"}"#] {
            let g = parse_reply(reply);
            assert_eq!((g.score, g.hits.len(), g.misses.len()), (0.0, 0, 0), "{reply}");
            assert!(g.error.expect("error").starts_with("no valid JSON in judge reply"));
        }
    }

    #[test]
    fn default_prompts_follow_the_json_contract() {
        use std::collections::HashMap;

        use crate::template::substitute;
        let values = HashMap::from([
            ("expected_outcome", "EO".to_owned()),
            ("question", "Q".to_owned()),
            ("reference_answer", "RA".to_owned()),
            ("candidate_answer", "CA".to_owned()),
        ]);
        assert_eq!(
            substitute(DEFAULT_TEMPLATE, &values),
            "[[ ## expected_outcome ## ]]\nEO\n\n[[ ## question ## ]]\nQ\n\n[[ ## reference_answer ## ]]\nRA\n\n[[ ## candidate_answer ## ]]\nCA"
        );
        for needle in [
            "exactly one JSON object",
            "\"score\"",
            "\"hits\": up to 4",
            "\"misses\": up to 4",
            "\"reasoning\"",
        ] {
            assert!(SYSTEM_PROMPT.contains(needle), "system prompt lacks {needle}");
        }
    }
}
