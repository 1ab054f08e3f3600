//! Grader lists: the keys every grader has, parsed once here; the type looked up in the grader
//! table; running a configured grader into its result; the case score.

use std::sync::Arc;

use super::grader::{ConfiguredGrader, GradeContext, GradeVerdict, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind, Node, NumberRange};
use crate::model::{EvaluatorResult, Verdict};

const COMMON: &[Key] = &[
    Key::new("name", Kind::Text, "Shown in results (default: the type)."),
    Key::new("type", Kind::Text, "Which grader (see the grader table).").required(),
    Key::new(
        "weight",
        Kind::Number(NumberRange::NON_NEGATIVE),
        "Share in the case score (default 1; 0 reports without counting).",
    ),
    Key::new(
        "negate",
        Kind::Bool,
        "Invert the result: score 1 − s, pass and fail swapped.",
    ),
];

/// The keys every grader has, whatever its type.
pub const GRADER_KEYS: KeyTable = KeyTable::new("an evaluator", "One grader.", &[COMMON]);

/// Parses a list of graders. `None` when any entry is invalid (errors are reported): a case
/// graded by an incomplete list would get a misleading score.
pub fn parse_graders(node: &Node, cx: &mut ParseContext<'_>) -> Option<Vec<ConfiguredGrader>> {
    let Some(items) = node.as_seq() else {
        cx.diags.error(
            node.pos,
            format!("`evaluators` must be a list, found {}", node.type_name()),
            Some("write each evaluator as `- name: ...` with a `type`".to_owned()),
        );
        return None;
    };
    let before = cx.diags.error_count();
    let graders: Vec<ConfiguredGrader> = items.iter().filter_map(|item| parse_grader(item, cx)).collect();
    if !graders.is_empty() && graders.iter().all(|g| g.weight == 0.0) {
        cx.diags.warn(
            node.pos,
            "every evaluator has `weight: 0`, so every case they grade scores 0".to_owned(),
            Some("give at least one evaluator a weight above 0".to_owned()),
        );
    }
    (cx.diags.error_count() == before).then_some(graders)
}

fn parse_grader(node: &Node, cx: &mut ParseContext<'_>) -> Option<ConfiguredGrader> {
    let mut f = Fields::of(node, &GRADER_KEYS, cx.diags)?;
    let type_name = f.required_string("type", "evaluator", cx.diags)?;
    let name = f.string("name", cx.diags);
    let weight = f.number("weight", cx.diags).unwrap_or(1.0);
    let negate = f.boolean("negate", cx.diags).unwrap_or(false);
    let Some(entry) = super::find(&type_name) else {
        let pos = f.take("type").map_or(node.pos, |n| n.pos);
        cx.diags.error(
            pos,
            format!("unknown evaluator type `{type_name}`"),
            Some(format!("use {}", super::known_types())),
        );
        return None;
    };
    f.add(entry.keys);
    f.rename(entry.type_name());
    cx.current = Some((type_name.clone(), names_kebab_type(node)));
    let grader = (entry.parse)(&mut f, cx);
    cx.current = None;
    f.warn_unknown(cx.diags);
    let grader = grader?;
    Some(ConfiguredGrader {
        name: name
            .or_else(|| grader.default_name())
            .unwrap_or_else(|| entry.type_name().to_owned()),
        weight,
        negate,
        entry,
        grader,
    })
}

/// Whether `node` (a grader's mapping, members included) has a kebab-case `type` anywhere:
/// until the loader decides a file's generation, a grader spelled the same in both
/// generations (`composite`) follows 4.x when its members do.
fn names_kebab_type(node: &Node) -> bool {
    let Some(entries) = node.as_map() else {
        return node.as_seq().is_some_and(|items| items.iter().any(names_kebab_type));
    };
    entries.iter().any(|(k, v)| {
        (k.as_str() == Some("type") && v.as_str().is_some_and(|t| t.contains('-'))) || names_kebab_type(v)
    })
}

/// The graders of a case that configures none (and inherits none): the LLM judge with its
/// default prompt (`docs/architecture.md#default-grader`).
pub fn default_graders() -> Arc<[ConfiguredGrader]> {
    let entry = &super::llm_judge::ENTRY;
    Arc::from(vec![ConfiguredGrader {
        name: entry.type_name().to_owned(),
        weight: 1.0,
        negate: false,
        entry,
        grader: Arc::new(super::llm_judge::LlmJudge::default()),
    }])
}

/// Runs one grader and records its result. (Secrets are redacted where results leave the
/// run: the JSONL writer and the terminal.)
pub async fn evaluate(grader: &ConfiguredGrader, ctx: &GradeContext<'_>) -> EvaluatorResult {
    let grade = grader.grader.grade(ctx).await;
    let grade = if grader.negate { super::negate(grade) } else { grade };
    // Graders return scores in [0, 1] (the LLM judge clamps, the code judge rejects anything
    // else as a grader error); this only guards the weighted mean against a stray value.
    let score = agentv_eval_sdk::clamp_score(grade.score);
    let mut misses = grade.misses;
    if let Some(e) = &grade.error
        && grade.error_is_miss
        && misses.is_empty()
    {
        misses.push(agentv_eval_sdk::failure_miss(&grader.name, e));
    }
    let verdict = match grade.verdict {
        None => Verdict::from_score(score),
        Some(GradeVerdict::Pass) => Verdict::Pass,
        // Until results can say `skip`, a skipped grader reads as failed; its `error` says why.
        Some(GradeVerdict::Fail | GradeVerdict::Skip) => Verdict::Fail,
    };
    EvaluatorResult {
        name: grader.name.clone(),
        kind: grader.type_name().to_owned(),
        score,
        weight: grader.weight,
        verdict,
        hits: grade.hits,
        misses,
        assertions: grade.assertions,
        reasoning: grade.reasoning,
        details: grade.details,
        error: grade.error,
        evaluator_provider_request: grade.request,
    }
}

/// Weighted mean of grader scores (`docs/architecture.md#scoring`): weight 0 excludes a
/// grader; all-zero → 0.
pub fn aggregate(results: &[EvaluatorResult]) -> f64 {
    // Weights are scaled by the largest, so huge ones (1e308) cannot overflow the sums to NaN.
    let largest = results.iter().map(|r| r.weight).fold(0.0, f64::max);
    if !(largest > 0.0 && largest.is_finite()) {
        return 0.0;
    }
    let total: f64 = results.iter().map(|r| r.weight / largest).sum();
    results.iter().map(|r| r.weight / largest * r.score).sum::<f64>() / total
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::Diagnostics;
    use crate::config::node::parse_yaml;
    use crate::paths::Workspace;

    /// Parses `yaml` (a grader list) the way a grader made of graders parses its members.
    fn nested(yaml: &str) -> (Option<Vec<ConfiguredGrader>>, Vec<String>) {
        let node = parse_yaml(yaml).expect("yaml");
        let ws = Workspace::from_cwd(std::env::temp_dir());
        let mut diags = Diagnostics::new(Path::new("e.yaml"));
        let mut cx = ParseContext::new(&ws, &ws.cwd, &mut diags);
        let graders = cx.graders(&node);
        (graders, diags.into_vec().iter().map(ToString::to_string).collect())
    }

    #[test]
    fn a_nested_list_is_parsed_like_any_list() {
        let (graders, problems) =
            nested("- {type: keywords, expected: [a], weight: 2}\n- {type: llm-judge, name: j}\n");
        assert!(problems.is_empty(), "{problems:?}");
        let graders = graders.expect("valid");
        let shown: Vec<(&str, &str, f64)> = graders
            .iter()
            .map(|g| (g.name.as_str(), g.type_name(), g.weight))
            .collect();
        assert_eq!(shown, [("keywords", "keywords", 2.0), ("j", "llm_judge", 1.0)]);
        let (graders, problems) = nested("- {type: keywords, expected: [a]}\n- {type: nope}\n");
        assert!(graders.is_none(), "an invalid member invalidates the list");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("e.yaml:2:10: error: unknown evaluator type `nope`"),
            "{}",
            problems[0]
        );
        assert!(
            problems[0].contains("help: use llm_judge (alias llm-judge), code_judge (alias code, code-judge)"),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn a_list_weighted_all_zero_is_a_warning() {
        let (graders, problems) =
            nested("- {type: keywords, expected: [a], weight: 0}\n- {type: keywords, expected: [b], weight: 0.0}\n");
        assert_eq!(graders.map(|g| g.len()), Some(2), "still valid");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("e.yaml:1:1: warning: every evaluator has `weight: 0`"),
            "{}",
            problems[0]
        );
        let (_, problems) = nested("- {type: keywords, expected: [a], weight: 0}\n- {type: keywords, expected: [b]}\n");
        assert!(problems.is_empty(), "{problems:?}");
    }

    fn result(score: f64, weight: f64) -> EvaluatorResult {
        EvaluatorResult {
            name: "e".into(),
            kind: "keywords".into(),
            score,
            weight,
            verdict: Verdict::from_score(score),
            hits: vec![],
            misses: vec![],
            assertions: vec![],
            reasoning: None,
            details: None,
            error: None,
            evaluator_provider_request: None,
        }
    }

    #[test]
    fn weighted_mean_follows_the_spec_and_survives_huge_weights() {
        let cases: &[(&[(f64, f64)], f64)] = &[
            (&[(0.8, 1.0), (0.4, 1.0)], 0.6),
            (&[(0.8, 3.0), (0.4, 1.0)], 0.7),
            (&[(0.8, 1.0), (0.0, 0.0)], 0.8),
            (&[(0.8, 0.0), (0.4, 0.0)], 0.0),
            (&[(1.0, 1.0), (0.0, 1.0)], 0.5),
            (&[], 0.0),
            // Huge weights: their sum overflows a float.
            (&[(1.0, 1e308), (1.0, 1e308)], 1.0),
            (&[(1.0, f64::MAX), (0.0, f64::MAX), (0.5, 1.0)], 0.5),
        ];
        for (inputs, want) in cases {
            let results: Vec<EvaluatorResult> = inputs.iter().map(|(s, w)| result(*s, *w)).collect();
            let got = aggregate(&results);
            assert!((got - want).abs() < 1e-12, "{inputs:?}: {got} != {want}");
        }
    }
}
