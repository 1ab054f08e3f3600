//! What `agentv compare BASE CANDIDATE --format json` prints (`docs/results.md#agentv-compare-base-candidate`),
//! typed so a program reading it deserializes one struct, and described by the committed
//! `schema/compare.schema.json` (generated from these types with the `schema` feature). Absent
//! values are omitted, never `null`, as in a results file.
//!
//! The texts are `Cow`s so the runtime can write a comparison of a million cases without copying
//! each id; a reader gets owned strings.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::ExecutionStatus;

/// The whole document. The four case lists are type parameters so the runtime can stream them
/// (each is any sequence that serializes as a JSON array); a reader uses the defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schema",
    schemars(
        title = "agentv compare output",
        description = "What `agentv compare BASE CANDIDATE --format json` prints."
    )
)]
pub struct CompareOutput<
    'a,
    Cases = Vec<Pair<'a>>,
    Errors = Vec<ErroredPair<'a>>,
    Added = Vec<Unmatched<'a>>,
    Removed = Vec<Unmatched<'a>>,
> {
    pub base: CompareInput<'a>,
    pub candidate: CompareInput<'a>,
    pub match_by: MatchBy,
    /// Deltas within ± this count as unchanged.
    pub epsilon: f64,
    pub counts: CompareCounts,
    /// The mean delta of the graded pairs; absent when no pair was graded in both runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_delta: Option<MeanDelta>,
    pub gate: GateOutcome,
    /// The pairs that dropped most, worst first (`--top` of them).
    pub largest_regressions: Vec<Pair<'a>>,
    /// Every pair graded in both runs, in the base file's order.
    pub cases: Cases,
    /// Pairs not graded in one run or both.
    pub errors: Errors,
    /// Cases of the candidate only.
    pub added: Added,
    /// Cases of the base only.
    pub removed: Removed,
}

/// One side of the comparison: the results file as read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CompareInput<'a> {
    pub path: Cow<'a, str>,
    /// Records read (the last line of each).
    pub cases: usize,
    /// Lines a later line of the same record replaced (a resumed run).
    pub superseded: usize,
    /// Which programs wrote the file: `agentv`, `AgentV 2.x`, `AgentV 4.x`.
    pub generations: Vec<Cow<'a, str>>,
}

/// How cases of the two runs are paired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MatchBy {
    /// Same case (dataset and eval id), same trial and same target (the usual case: one
    /// system, two versions).
    IdAndTarget,
    /// Same case and trial: each run has one target and they differ (two models compared).
    Id,
}

/// Where a matched case went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Improved,
    Regressed,
    Unchanged,
}

/// A case graded in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Pair<'a> {
    pub eval_id: Cow<'a, str>,
    /// The target (`base → candidate` when matched by id alone).
    pub target: Cow<'a, str>,
    pub dataset: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    pub base: f64,
    pub candidate: f64,
    pub delta: f64,
    pub change: Change,
}

/// A matched case that could not be graded in one run or both: left out of the deltas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErroredPair<'a> {
    pub eval_id: Cow<'a, str>,
    pub target: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    pub base_status: ExecutionStatus,
    pub candidate_status: ExecutionStatus,
}

impl ErroredPair<'_> {
    /// Graded in the base run, not in the candidate: the case's quality is now unknown.
    pub fn broken(&self) -> bool {
        self.base_status == ExecutionStatus::Ok && self.candidate_status != ExecutionStatus::Ok
    }
}

/// A case present in one run only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Unmatched<'a> {
    pub eval_id: Cow<'a, str>,
    pub target: Cow<'a, str>,
    pub dataset: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    pub score: f64,
    pub status: ExecutionStatus,
}

/// How many cases went where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CompareCounts {
    pub base_cases: usize,
    pub candidate_cases: usize,
    pub matched: usize,
    pub improved: usize,
    pub regressed: usize,
    pub unchanged: usize,
    /// Matched, but not graded in one run or both.
    pub errors: usize,
    pub added: usize,
    pub removed: usize,
    /// Removed cases the base run had graded: the candidate is missing them.
    pub missing: usize,
}

/// The mean delta of the graded pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MeanDelta {
    /// Graded pairs.
    pub n: usize,
    pub mean: f64,
    /// The 95 % confidence interval `[low, high]`; absent below two pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95: Option<[f64; 2]>,
}

/// The regression gates asked for, and what they found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GateOutcome {
    /// `--max-regression`; absent when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_regression: Option<f64>,
    pub fail_on_regression: bool,
    pub allow_missing: bool,
    pub passed: bool,
    /// Why the gate failed, one line each.
    pub failures: Vec<String>,
}

/// The JSON Schema of [`CompareOutput`], as committed under `schema/compare.schema.json`:
/// pretty JSON with a final newline. An absent value is omitted, never `null`, so no property
/// admits `null`.
#[cfg(feature = "schema")]
pub fn schema() -> String {
    use schemars::transform::{RecursiveTransform, Transform};
    let mut schema = schemars::schema_for!(CompareOutput<'static>);
    RecursiveTransform(drop_null).transform(&mut schema);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// `Option` fields are skipped when `None`: `"type": ["integer", "null"]` becomes
/// `"type": "integer"`, and `{"anyOf": [X, {"type": "null"}]}` becomes `X`.
#[cfg(feature = "schema")]
fn drop_null(schema: &mut schemars::Schema) {
    use serde_json::Value;
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            object.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(options)) = object.get_mut("anyOf") {
        options.retain(|o| o.get("type").is_none_or(|t| t != "null"));
        if options.len() == 1
            && let Value::Object(only) = options.remove(0)
        {
            object.remove("anyOf");
            object.extend(only);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document() -> CompareOutput<'static> {
        CompareOutput {
            base: CompareInput {
                path: "base.jsonl".into(),
                cases: 1,
                superseded: 0,
                generations: vec!["agentv".into()],
            },
            candidate: CompareInput {
                path: "candidate.jsonl".into(),
                cases: 1,
                superseded: 0,
                generations: vec!["agentv".into()],
            },
            match_by: MatchBy::IdAndTarget,
            epsilon: 0.001,
            counts: CompareCounts {
                base_cases: 1,
                candidate_cases: 1,
                matched: 1,
                unchanged: 1,
                ..CompareCounts::default()
            },
            mean_delta: Some(MeanDelta {
                n: 1,
                mean: 0.0,
                ci95: None,
            }),
            gate: GateOutcome {
                max_regression: None,
                fail_on_regression: false,
                allow_missing: false,
                passed: true,
                failures: Vec::new(),
            },
            largest_regressions: Vec::new(),
            cases: vec![Pair {
                eval_id: "a".into(),
                target: "t".into(),
                dataset: "d".into(),
                trial: None,
                base: 0.5,
                candidate: 0.5,
                delta: 0.0,
                change: Change::Unchanged,
            }],
            errors: Vec::new(),
            added: Vec::new(),
            removed: Vec::new(),
        }
    }

    #[test]
    fn compare_output_has_no_nulls_and_reads_back() {
        let doc = document();
        let text = serde_json::to_string(&doc).expect("serializes");
        assert!(!text.contains("null"), "{text}");
        let back: CompareOutput<'_> = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back, doc);
    }

    /// `schema/compare.schema.json` is what the types generate; regenerate it with
    /// `cargo run -q -- schema compare > schema/compare.schema.json`.
    #[cfg(feature = "schema")]
    #[test]
    fn compare_schema_is_committed_and_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/compare.schema.json");
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(!committed.contains("null"), "an absent value is omitted, never null");
        assert!(
            committed == schema(),
            "{} is stale: run `cargo run -q -- schema compare > schema/compare.schema.json`",
            path.display()
        );
    }
}
