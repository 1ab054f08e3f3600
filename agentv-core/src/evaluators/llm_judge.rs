//! `llm_judge`: asks the judge target for one JSON object `{score, hits, misses, reasoning}`.

use std::collections::HashMap;
use std::sync::LazyLock;

use futures::future::BoxFuture;
use regex::Regex;
use serde_json::{Value, json};

use super::{EvalContext, Evaluator, Grade};
use crate::load::Diagnostics;
use crate::load::node::Pos;
use crate::model::{LlmJudgeSpec, Message};
use crate::providers::ProviderRequest;

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

static VARIABLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{\{\s*([a-zA-Z0-9_]+)\s*\}\}").expect("static regex"));

/// Load-time check of a custom template: unknown variables, and a template that cannot see the
/// answer, are warnings.
pub fn check_template(template: &str, pos: Pos, diags: &mut Diagnostics) {
    let mut seen_answer = false;
    for cap in VARIABLE.captures_iter(template) {
        let name = &cap[1];
        if name == "candidate_answer" || name == "output_messages" {
            seen_answer = true;
        }
        if !TEMPLATE_VARIABLES.contains(&name) {
            diags.warn(
                pos,
                format!("unknown variable `{{{{ {name} }}}}` in the llm_judge prompt; it is left as written"),
                Some(format!("known variables: {}", TEMPLATE_VARIABLES.join(", "))),
            );
        }
    }
    if !seen_answer {
        diags.warn(
            pos,
            "the llm_judge prompt never shows the answer",
            Some("add `{{ candidate_answer }}` (or `{{ output_messages }}`)".to_owned()),
        );
    }
}

/// Replaces `{{ name }}` with `values[name]`; unknown names stay as written.
pub fn substitute(template: &str, values: &HashMap<&str, String>) -> String {
    substitute_with(template, |name| values.get(name).cloned())
}

/// Replaces `{{ name }}` with `value(name)`, computed only for the names the template uses;
/// `None` leaves the placeholder as written.
pub fn substitute_with(template: &str, mut value: impl FnMut(&str) -> Option<String>) -> String {
    VARIABLE
        .replace_all(template, |cap: &regex::Captures<'_>| {
            value(&cap[1]).unwrap_or_else(|| cap[0].to_owned())
        })
        .into_owned()
}

impl Evaluator for LlmJudgeSpec {
    fn evaluate<'a>(&'a self, ctx: &'a EvalContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(run(self, ctx))
    }
}

fn pretty(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// The rendered user prompt for this case.
pub fn user_prompt(spec: &LlmJudgeSpec, ctx: &EvalContext<'_>) -> String {
    let mut prompt = substitute_with(spec.prompt.as_deref().unwrap_or(DEFAULT_TEMPLATE), |name| {
        variable(name, ctx)
    });
    if spec.include_trace_summary && !spec.prompt.as_deref().is_some_and(|p| p.contains("trace_summary")) {
        prompt.push_str("\n\n[[ ## trace_summary ## ]]\n");
        prompt.push_str(&pretty(ctx.trace_summary));
    }
    prompt
}

/// The value of one template variable. The JSON ones are rendered only when a template asks
/// for them: they can be large, and most templates do not use them.
fn variable(name: &str, ctx: &EvalContext<'_>) -> Option<String> {
    let case = ctx.case;
    Some(match name {
        "candidate_answer" => ctx.candidate_answer.to_owned(),
        "question" => case.question.clone(),
        "expected_outcome" => case.expected_outcome.clone(),
        "reference_answer" => case.reference_answer.clone(),
        "expected_messages" => pretty(&case.expected_messages.iter().map(Message::to_json).collect::<Vec<_>>()),
        "input_messages" => pretty(&case.raw_input_messages),
        "output_messages" => pretty(&ctx.output_messages),
        "trace_summary" => pretty(ctx.trace_summary),
        _ => return None,
    })
}

async fn run(spec: &LlmJudgeSpec, ctx: &EvalContext<'_>) -> Grade {
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
    if let Some(dir) = &ctx.settings.dump_prompts {
        crate::report::dump_prompt(
            dir,
            Some(&spec_name(ctx)),
            ctx.target.judge.as_ref(),
            &request,
            &ctx.settings.secrets,
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
fn spec_name(ctx: &EvalContext<'_>) -> String {
    format!("judge-{}", ctx.target.judge_name)
}

/// Parses a judge reply. No valid JSON object with a numeric score → score 0 with empty
/// hits/misses and `error` set (D8).
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
    Grade {
        score: agentv_eval_sdk::clamp_score(score),
        hits: items("hits"),
        misses: items("misses"),
        reasoning: obj.get("reasoning").and_then(Value::as_str).map(str::to_owned),
        ..Grade::default()
    }
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
    fn invalid_reply_scores_zero_with_error_and_no_items() {
        for reply in ["I think it is good.", r#"{"verdict": "pass"}"#] {
            let g = parse_reply(reply);
            assert_eq!((g.score, g.hits.len(), g.misses.len()), (0.0, 0, 0), "{reply}");
            assert!(g.error.expect("error").starts_with("no valid JSON in judge reply"));
        }
    }

    #[test]
    fn default_prompts_follow_the_json_contract() {
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

    #[test]
    fn substitution_allows_inner_whitespace_and_keeps_unknown() {
        let values = HashMap::from([("question", "Q".to_owned()), ("candidate_answer", "A".to_owned())]);
        assert_eq!(
            substitute("{{question}} {{  candidate_answer  }} {{ nope }}", &values),
            "Q A {{ nope }}"
        );
    }

    #[test]
    fn template_check_warns_about_unknown_variables_and_missing_answer() {
        let mut d = Diagnostics::new(std::path::Path::new("e.yaml"));
        check_template("Grade {{ questoin }}", Pos::new(2, 3), &mut d);
        let text: Vec<String> = d.into_vec().iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(text[0].contains("unknown variable `{{ questoin }}`"));
        assert!(text[1].contains("never shows the answer"));
    }
}
