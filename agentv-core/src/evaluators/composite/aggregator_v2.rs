//! The AgentV 2.x code aggregator's contract (`docs/architecture.md#generations`): it reads
//! `{"results": {<member name>: <its result>}}` with each result as 2.x's evaluators produce
//! it (`score`, `verdict` of pass/borderline/fail, `hits`, `misses`, `expectedAspectCount`,
//! `reasoning?`, `evaluatorRawRequest?`, `evaluatorResults?`, `details?`), and prints
//! `{score, verdict?, hits?, misses?, reasoning?}`. 4.x aggregators get and print the 4.x shape.

use serde_json::{Map, Value, json};

use super::Member;
use crate::evaluators::Grade;
use crate::evaluators::llm_prompt::js_number;
use crate::evaluators::GradeVerdict;
use crate::model::Verdict;

/// `{member name: result}` in member order; a repeated name keeps its first place and its last
/// result, as a JavaScript object built from the entries does.
pub(super) fn results(members: &[Member<'_>]) -> Value {
    let mut out = Map::new();
    for m in members {
        out.insert(m.name().to_owned(), result(m));
    }
    Value::Object(out)
}

/// One member's result as 2.x hands it over.
fn result(m: &Member<'_>) -> Value {
    let grade = &m.grade;
    let mut misses = grade.misses.clone();
    if let Some(e) = &grade.error
        && misses.is_empty()
    {
        misses.push(agentv_eval_sdk::failure_miss(m.name(), e));
    }
    let verdict = match grade.verdict {
        Some(GradeVerdict::Pass) => "pass",
        Some(GradeVerdict::Fail | GradeVerdict::Skip) => "fail",
        None => Verdict::from_score(grade.score).as_str(),
    };
    let mut r = json!({
        "score": js_number(grade.score),
        "verdict": verdict,
        "hits": grade.hits,
        "misses": misses,
        "expectedAspectCount": (grade.hits.len() + misses.len()).max(1),
    });
    if let Some(reasoning) = &grade.reasoning {
        r["reasoning"] = json!(reasoning);
    }
    if let Some(request) = &grade.request {
        r["evaluatorRawRequest"] = request.clone();
    }
    let mut details = grade.details.clone();
    if m.grader.type_name() == "composite"
        && let Some(scores) = details.as_mut().and_then(|d| d.remove("scores"))
    {
        r["evaluatorResults"] = scores;
    }
    if let Some(details) = details.filter(|d| !d.is_empty()) {
        r["details"] = Value::Object(details);
    }
    r
}

/// What a 2.x aggregator printed: the score (clamped to [0, 1]; 0 when there is none), the
/// non-empty hits and misses, the reasoning, and the verdict it names (`borderline` is the
/// score's own 2.x verdict).
pub(super) fn grade(obj: Option<&Map<String, Value>>) -> Grade {
    let get = |key: &str| obj.and_then(|o| o.get(key));
    let score = agentv_eval_sdk::clamp_score(get("score").and_then(Value::as_f64).unwrap_or(0.0));
    let texts = |key: &str| -> Vec<String> {
        get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|t| !t.trim().is_empty())
            .map(str::to_owned)
            .collect()
    };
    let verdict = match get("verdict").and_then(Value::as_str) {
        Some("pass") => Some(GradeVerdict::Pass),
        Some("fail") => Some(GradeVerdict::Fail),
        _ => None,
    };
    Grade {
        reasoning: get("reasoning").and_then(Value::as_str).map(str::to_owned),
        verdict,
        ..Grade::scored(score, texts("hits"), texts("misses"))
    }
}
