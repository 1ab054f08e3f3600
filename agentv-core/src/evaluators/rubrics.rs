//! `rubrics` (and the deprecated `rubric`): an LLM grader that checks the answer against
//! rubric items, each satisfied or not (checklist mode) or scored 0–10 against score ranges
//! (score-range mode). Reference §2.6, prompts §4.3 and §4.4.
//!
//! The same items also come from an `llm-grader`'s `rubrics`, from bare strings in a grader
//! list and from the deprecated case-level `rubrics:` field ([`from_strings`],
//! [`from_case_rubrics`]); every form grades with [`super::llm_grader::LlmGrader`].

use std::sync::Arc;

use agentv_eval_sdk::Assertion;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::llm_grader::{self, LlmGrader};
use super::llm_prompt::{Inputs, js_number};
use super::llm_reply::{kind, object};
use super::{ConfiguredGrader, Grade, GradeVerdict, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, IntRange, Key, KeyTable, Kind, Node, NodeValue, NumberRange, Pos, describe};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "rubrics",
    names: Names {
        v2: &["rubric"],
        v4: &["rubrics", "rubric"],
        promptfoo: &[],
    },
    doc: "Asks the grader target whether the answer meets each rubric item (or scores each 0-10 against its score ranges).",
    keys: &KEYS,
    parse,
};

const ITEM: Kind = Kind::OneOf(&[Kind::Str, Kind::Object(&ITEM_KEYS)]);

const OWN: &[Key] = &[
    Key::new(
        "criteria",
        Kind::List(&ITEM),
        "The rubric items: a text (a required item) or `{id, outcome, weight, required, operator, min_score, score_ranges}`.",
    ),
    Key::new(
        "rubrics",
        Kind::List(&Kind::Object(&ITEM_KEYS)),
        "Deprecated spelling of `criteria` for `type: rubric` (objects only).",
    ),
];
const KEYS: KeyTable = KeyTable::new("rubrics", "A rubric grader.", &[OWN, llm_grader::COMMON]);

const ITEM_OWN: &[Key] = &[
    Key::new("id", Kind::Text, "The item's id in the grader's reply (default `rubric-<n>`)."),
    Key::new("outcome", Kind::Text, "What the answer must do.").aliases(&["criteria", "description"]),
    Key::new(
        "weight",
        Kind::Number(NumberRange::NON_NEGATIVE),
        "Share in the grader's score (default 1).",
    ),
    Key::new(
        "required",
        Kind::Bool,
        "An unmet required item fails the grader's verdict (default true without score ranges).",
    ),
    Key::new(
        "operator",
        Kind::Enum(OPERATORS),
        "correctness (the answer must support the outcome) or contradiction (it must not contradict it).",
    ),
    Key::new(
        "min_score",
        Kind::Number(NumberRange { min: 0.0, max: 1.0 }),
        "Score-range mode: the least score/10 the item needs (more than 0, at most 1).",
    ),
    Key::new(
        "required_min_score",
        Kind::Int(IntRange { min: 0, max: 10 }),
        "Deprecated: `min_score` times 10.",
    ),
    Key::new(
        "score_ranges",
        Kind::OneOf(&[
            Kind::List(&Kind::Object(&RANGE_KEYS)),
            Kind::Map(&Kind::Text),
        ]),
        "Score bands covering 0-10: `[{score_range: [0, 4], outcome}, ...]` or `{0: ..., 5: ..., 8: ...}`.",
    ),
];
const ITEM_KEYS: KeyTable = KeyTable::new("rubric item", "One rubric item.", &[ITEM_OWN]);

const RANGE_OWN: &[Key] = &[
    Key::new(
        "score_range",
        Kind::List(&Kind::Int(IntRange { min: 0, max: 10 })),
        "`[min, max]`, whole scores from 0 to 10.",
    )
    .required(),
    Key::new("outcome", Kind::Text, "What an answer in this band looks like.")
        .aliases(&["description"])
        .required(),
];
const RANGE_KEYS: KeyTable = KeyTable::new("score range", "One score band.", &[RANGE_OWN]);

const OPERATORS: &[&str] = &["correctness", "contradiction"];

/// How a rubric item is judged, besides its outcome (prompt guidance only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Operator {
    Correctness,
    Contradiction,
}

impl Operator {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "correctness" => Some(Self::Correctness),
            "contradiction" => Some(Self::Contradiction),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Correctness => "correctness",
            Self::Contradiction => "contradiction",
        }
    }

    fn guidance(self) -> &'static str {
        match self {
            Self::Correctness => {
                "Correctness: mark satisfied only when the answer positively supports or fulfills the outcome. Omission or contradiction should not satisfy it."
            }
            Self::Contradiction => {
                "Contradiction guard: mark satisfied when the answer does not make a claim that contradicts the outcome. Do not require the answer to mention the outcome; mark unsatisfied only for incompatible claims."
            }
        }
    }
}

/// One score band of a score-range item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreRange {
    pub score_range: [u8; 2],
    pub outcome: String,
}

/// One rubric item, as AgentV 4.x parses it (and shows it as `{{ rubrics }}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RubricItem {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(serialize_with = "as_js_number")]
    pub weight: f64,
    /// `Some(true)` by default for checklist items, unset for score-range items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<Operator>,
    /// The item's gate in score-range mode (`required_min_score` / 10 when written so).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "as_js_number_opt")]
    pub min_score: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub score_ranges: Vec<ScoreRange>,
}

fn as_js_number<S: serde::Serializer>(n: &f64, s: S) -> Result<S::Ok, S::Error> {
    js_number(*n).serialize(s)
}

fn as_js_number_opt<S: serde::Serializer>(n: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    n.map(js_number).serialize(s)
}

impl RubricItem {
    /// A required checklist item (a rubric written as a bare string).
    pub fn text(id: String, outcome: String) -> Self {
        Self {
            id,
            outcome: Some(outcome),
            weight: 1.0,
            required: Some(true),
            operator: None,
            min_score: None,
            score_ranges: Vec::new(),
        }
    }

    fn is_required(&self) -> bool {
        self.required == Some(true)
    }
}

/// `{{ rubrics }}` and `{{ rubrics_json }}`: the items as 4.x shows them, pretty and compact.
pub fn items_json(items: &[RubricItem]) -> (String, String) {
    (
        serde_json::to_string_pretty(items).unwrap_or_default(),
        serde_json::to_string(items).unwrap_or_default(),
    )
}

/// Why reading rubric items stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// An error was reported that makes the whole case invalid (bad score ranges or
    /// thresholds, as AgentV 4.x skips the case for them).
    Case,
    /// The grader cannot be used; the warnings say why and that it is dropped.
    Grader,
}

/// Reads a list of rubric items (`criteria` or `rubrics`); text items only when `texts`.
/// Items without an outcome, texts where only objects are allowed and unknown operators are
/// warnings (the item, or its operator, is left out).
pub fn parse_items(node: &Node, key: &str, texts: bool, cx: &mut ParseContext<'_>) -> Result<Vec<RubricItem>, Stop> {
    let Some(list) = node.as_seq() else {
        cx.drop_grader(
            node.pos,
            format!("`{key}` must be a list of rubric items, found {}", describe(node)),
            Some(format!("write `{key}:` with one `- ...` line per item")),
        );
        return Err(Stop::Grader);
    };
    let mut items = Vec::new();
    for (i, item) in list.iter().enumerate() {
        match &item.value {
            NodeValue::Str(s) if texts => {
                let text = s.trim();
                if text.is_empty() {
                    cx.diags
                        .warn(item.pos, format!("empty rubric item in `{key}` is left out"), None);
                } else {
                    items.push(RubricItem::text(format!("rubric-{}", i + 1), text.to_owned()));
                }
            }
            NodeValue::Map(_) => {
                if let Some(parsed) = parse_item(item, i, cx)? {
                    items.push(parsed);
                }
            }
            _ => cx.diags.warn(
                item.pos,
                format!(
                    "rubric item in `{key}` must be {}, found {}; it is left out",
                    if texts { "a text or a mapping" } else { "a mapping" },
                    describe(item)
                ),
                Some("write `{id: ..., outcome: ...}`".to_owned()),
            ),
        }
    }
    Ok(items)
}

/// One rubric object; `Ok(None)` when it is left out (warned).
fn parse_item(node: &Node, index: usize, cx: &mut ParseContext<'_>) -> Result<Option<RubricItem>, Stop> {
    let Some(mut f) = Fields::of(node, &ITEM_KEYS, cx.diags) else {
        return Err(Stop::Case);
    };
    let mark = cx.mark();
    let id = f
        .string("id", cx.diags)
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| format!("rubric-{}", index + 1));
    let outcome = f.string("outcome", cx.diags).filter(|s| !s.trim().is_empty());
    let weight = f.number("weight", cx.diags).unwrap_or(1.0);
    let required = f.boolean("required", cx.diags);
    let operator = match f.take("operator") {
        None => None,
        Some(n) => match n.as_str().and_then(Operator::parse) {
            Some(op) => Some(op),
            None => {
                cx.diags.warn(
                    n.pos,
                    format!("unknown rubric operator {}; it is ignored", describe(n)),
                    Some(format!("use {}", OPERATORS.join(" or "))),
                );
                None
            }
        },
    };
    if cx.drop_grader_if_errors(mark) {
        return Err(Stop::Grader);
    }
    // Thresholds and score ranges that cannot be right make the case invalid, as in 4.x.
    let before = cx.diags.error_count();
    let min_score = min_score(&mut f, cx);
    let score_ranges = match f.take("score_ranges") {
        None => Vec::new(),
        Some(n) => score_ranges(n, &id, cx).unwrap_or_default(),
    };
    f.warn_unknown(cx.diags);
    if cx.diags.error_count() > before {
        return Err(Stop::Case);
    }
    if outcome.is_none() && score_ranges.is_empty() {
        cx.diags.warn(
            node.pos,
            format!("rubric item `{id}` has no `outcome`; it is left out"),
            Some("add `outcome: <what the answer must do>`".to_owned()),
        );
        return Ok(None);
    }
    let required = required.or((score_ranges.is_empty()).then_some(true));
    Ok(Some(RubricItem {
        id,
        outcome,
        weight,
        required,
        operator,
        min_score,
        score_ranges,
    }))
}

/// `min_score` (more than 0, at most 1), else `required_min_score` / 10 (whole 0–10).
fn min_score(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<f64> {
    let pos = f.take("min_score").map(|n| n.pos);
    if let Some(v) = f.number("min_score", cx.diags) {
        if v > 0.0 {
            return Some(v);
        }
        cx.diags.error(
            pos.unwrap_or(f.pos),
            format!("`min_score` must be more than 0 and at most 1, found {v}"),
            Some("it is a share of the best score: 0.7 needs 7/10".to_owned()),
        );
        return None;
    }
    f.integer("required_min_score", cx.diags).map(|v| v as f64 / 10.0)
}

/// Reads `score_ranges` in either form; `None` after reporting an error.
fn score_ranges(node: &Node, id: &str, cx: &mut ParseContext<'_>) -> Option<Vec<ScoreRange>> {
    let ranges = match &node.value {
        NodeValue::Seq(items) => items
            .iter()
            .map(|item| score_range(item, cx))
            .collect::<Option<Vec<_>>>()?,
        NodeValue::Map(entries) => shorthand(entries, node.pos, id, cx)?,
        _ => {
            cx.diags.error(
                node.pos,
                format!("`score_ranges` of rubric `{id}` must be a list or a mapping, found {}", describe(node)),
                Some("write `[{score_range: [0, 4], outcome: ...}, ...]` or `{0: ..., 5: ..., 8: ...}`".to_owned()),
            );
            return None;
        }
    };
    check_coverage(&ranges, node.pos, id, cx)?;
    Some(ranges)
}

fn score_range(node: &Node, cx: &mut ParseContext<'_>) -> Option<ScoreRange> {
    let mut f = Fields::of(node, &RANGE_KEYS, cx.diags)?;
    let outcome = f.required_string("outcome", "score range", cx.diags);
    let bounds = match f.take("score_range") {
        None => {
            cx.diags.error(
                node.pos,
                "score range is missing the required key `score_range`",
                Some("add `score_range: [min, max]`".to_owned()),
            );
            None
        }
        Some(n) => bounds(n, cx),
    };
    f.warn_unknown(cx.diags);
    Some(ScoreRange {
        score_range: bounds?,
        outcome: outcome?,
    })
}

fn bounds(node: &Node, cx: &mut ParseContext<'_>) -> Option<[u8; 2]> {
    let whole = |n: &Node| match n.value {
        NodeValue::Int(v) if (0..=10).contains(&v) => Some(v as u8),
        _ => None,
    };
    match node.as_seq() {
        Some([a, b]) => match (whole(a), whole(b)) {
            (Some(min), Some(max)) if min <= max => Some([min, max]),
            (Some(min), Some(max)) => {
                cx.diags.error(
                    node.pos,
                    format!("`score_range` [{min}, {max}] runs backwards"),
                    Some(format!("write [{max}, {min}]")),
                );
                None
            }
            _ => {
                cx.diags.error(
                    node.pos,
                    "`score_range` bounds must be whole numbers from 0 to 10",
                    None,
                );
                None
            }
        },
        _ => {
            cx.diags.error(
                node.pos,
                format!("`score_range` must be `[min, max]`, found {}", describe(node)),
                None,
            );
            None
        }
    }
}

/// `{0: "...", 5: "...", 8: "..."}`: each key is a band's lowest score; a band runs to the
/// next key minus one, the last to 10.
fn shorthand(entries: &[(Node, Node)], pos: Pos, id: &str, cx: &mut ParseContext<'_>) -> Option<Vec<ScoreRange>> {
    let mut lows: Vec<(u8, String)> = Vec::new();
    for (k, v) in entries {
        let low = match &k.value {
            NodeValue::Int(n) if (0..=10).contains(n) => Some(*n as u8),
            NodeValue::Str(s) => s.trim().parse::<u8>().ok().filter(|n| *n <= 10),
            _ => None,
        };
        let Some(low) = low else {
            cx.diags.error(
                k.pos,
                format!("`score_ranges` key {} of rubric `{id}` must be a whole score from 0 to 10", describe(k)),
                None,
            );
            return None;
        };
        let Some(outcome) = v.scalar_text().filter(|s| !s.trim().is_empty()) else {
            cx.diags.error(v.pos, format!("score band {low} of rubric `{id}` needs a text"), None);
            return None;
        };
        lows.push((low, outcome));
    }
    lows.sort_by_key(|(low, _)| *low);
    if lows.first().map(|(low, _)| *low) != Some(0) {
        cx.diags.error(
            pos,
            format!("`score_ranges` of rubric `{id}` must start at 0"),
            Some("add `0: <what the worst answers look like>`".to_owned()),
        );
        return None;
    }
    if let Some(w) = lows.windows(2).find(|w| w[0].0 == w[1].0) {
        cx.diags.error(pos, format!("`score_ranges` of rubric `{id}` lists {} twice", w[0].0), None);
        return None;
    }
    let highs: Vec<u8> = lows.iter().skip(1).map(|(low, _)| low - 1).chain([10]).collect();
    Some(
        lows.into_iter()
            .zip(highs)
            .map(|((low, outcome), high)| ScoreRange {
                score_range: [low, high],
                outcome,
            })
            .collect(),
    )
}

/// Bands must not overlap and must cover every score from 0 to 10.
fn check_coverage(ranges: &[ScoreRange], pos: Pos, id: &str, cx: &mut ParseContext<'_>) -> Option<()> {
    let mut owner: [Option<usize>; 11] = [None; 11];
    for (i, r) in ranges.iter().enumerate() {
        for score in r.score_range[0]..=r.score_range[1] {
            if let Some(first) = owner[score as usize] {
                cx.diags.error(
                    pos,
                    format!("score ranges {} and {} of rubric `{id}` overlap at {score}", first + 1, i + 1),
                    Some("make each score belong to one band".to_owned()),
                );
                return None;
            }
            owner[score as usize] = Some(i);
        }
    }
    let missing: Vec<String> = (0..=10)
        .filter(|s| owner[*s].is_none())
        .map(|s| s.to_string())
        .collect();
    if !missing.is_empty() {
        cx.diags.error(
            pos,
            format!("score ranges of rubric `{id}` leave out {}", missing.join(", ")),
            Some("together they must cover every whole score from 0 to 10".to_owned()),
        );
        return None;
    }
    Some(())
}

/// Reads a `rubrics` grader: `criteria` (texts or objects) or, for the deprecated `rubric`,
/// `rubrics` (objects). No usable item drops the grader.
fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let pos = f.pos;
    if written_type(cx) == Some("rubric") {
        cx.diags.warn(
            pos,
            "`type: rubric` is deprecated",
            Some("write `type: rubrics` with the items under `criteria`".to_owned()),
        );
    }
    let node = match (f.take("criteria"), f.take("rubrics")) {
        (Some(n), _) => Some(("criteria", n, true)),
        (None, Some(n)) => Some(("rubrics", n, false)),
        (None, None) => None,
    };
    let Some((key, node, texts)) = node else {
        cx.drop_grader(
            pos,
            "a rubrics grader needs `criteria`",
            Some("add `criteria: [<what a good answer does>, ...]`".to_owned()),
        );
        return None;
    };
    let items = parse_items(node, key, texts, cx).ok()?;
    if items.is_empty() {
        cx.drop_grader(node.pos, format!("`{key}` has no usable rubric item"), None);
        return None;
    }
    let grader = llm_grader::parse_common(f, cx)?;
    Some(Arc::new(LlmGrader { rubrics: items, ..grader }))
}

fn written_type<'a>(cx: &'a ParseContext<'_>) -> Option<&'a str> {
    cx.current.as_deref()
}

/// The grader bare strings in a grader list become (quirk 2): one `rubrics` grader named
/// `rubrics` whose items are the strings (`rubric-1`, …, required) and whose weight is their
/// number, so each string weighs as much as any other grader.
pub fn from_strings(criteria: Vec<String>) -> ConfiguredGrader {
    let weight = criteria.len() as f64;
    let items = criteria
        .into_iter()
        .enumerate()
        .map(|(i, text)| RubricItem::text(format!("rubric-{}", i + 1), text))
        .collect();
    configured(items, weight)
}

/// The grader the deprecated case-level `rubrics:` field becomes (reference §2.6 form 4): an
/// LLM grader named `rubrics` with texts and objects as items. `None` when the field is
/// invalid or has no usable item (reported; an error when the case cannot run).
pub fn from_case_rubrics(node: &Node, cx: &mut ParseContext<'_>) -> Option<ConfiguredGrader> {
    let items = parse_items(node, "rubrics", true, cx).ok()?;
    if items.is_empty() {
        cx.diags
            .warn(node.pos, "`rubrics` has no usable rubric item; it is ignored", None);
        return None;
    }
    Some(configured(items, 1.0))
}

fn configured(items: Vec<RubricItem>, weight: f64) -> ConfiguredGrader {
    ConfiguredGrader {
        name: "rubrics".to_owned(),
        weight,
        required: false,
        min_score: None,
        negate: false,
        metric: None,
        entry: &ENTRY,
        grader: Arc::new(LlmGrader {
            rubrics: items,
            ..LlmGrader::default()
        }),
    }
}

/// Whether the items are scored 0–10 against score ranges (any item has ranges; then all
/// are, quirk 5).
pub fn score_range_mode(items: &[RubricItem]) -> bool {
    items.iter().any(|r| !r.score_ranges.is_empty())
}

fn operators(items: &[RubricItem]) -> Vec<Operator> {
    let mut seen = Vec::new();
    for op in items.iter().filter_map(|r| r.operator) {
        if !seen.contains(&op) {
            seen.push(op);
        }
    }
    seen
}

fn weight_label(weight: f64) -> String {
    if weight == 1.0 {
        String::new()
    } else {
        format!(" (weight: {weight})")
    }
}

/// The checklist user prompt (reference §4.3), byte for byte.
pub fn checklist_prompt(inputs: &Inputs, items: &[RubricItem]) -> String {
    let mut lines = vec![
        "You are an expert grader. Evaluate the candidate answer against each rubric item below.".to_owned(),
        String::new(),
    ];
    lines.extend(inputs.case_lines());
    lines.push("[[ ## rubrics ## ]]".to_owned());
    let ops = operators(items);
    if !ops.is_empty() {
        lines.extend([String::new(), "Operator guidance:".to_owned()]);
        lines.extend(ops.iter().map(|op| format!("- {}", op.guidance())));
        lines.push(String::new());
    }
    for r in items {
        lines.push(format!(
            "- [{}]{}{}{}: {}",
            r.id,
            if r.is_required() { " (REQUIRED)" } else { "" },
            weight_label(r.weight),
            r.operator.map(|op| format!(" (operator: {})", op.as_str())).unwrap_or_default(),
            r.outcome.as_deref().unwrap_or_default()
        ));
    }
    lines.extend([
        String::new(),
        "For each rubric, determine if it is satisfied and provide brief reasoning.".to_owned(),
    ]);
    lines.join("\n")
}

/// The checklist system prompt: the reply's schema.
pub const CHECKLIST_SYSTEM: &str = "You are an expert grader. Evaluate the candidate answer against each rubric item.
You must return a valid JSON object matching this schema:
{
  \"checks\": [
    {
      \"id\": \"string (rubric id)\",
      \"satisfied\": boolean,
      \"reasoning\": \"string (brief explanation)\"
    }
  ],
  \"overall_reasoning\": \"string (summary)\"
}";

/// The score-range system prompt: the reply's schema.
pub const SCORE_RANGE_SYSTEM: &str = "You are an expert grader. Score the candidate answer on each criterion.
You must return a valid JSON object matching this schema:
{
  \"checks\": [
    {
      \"id\": \"string (criterion id)\",
      \"score\": integer (0-10),
      \"reasoning\": \"string (brief explanation for score)\"
    }
  ],
  \"overall_reasoning\": \"string (summary, optional)\"
}

Important: The \"score\" must be an integer from 0 to 10 that falls within one of the defined score ranges for that criterion.";

/// The score-range user prompt (reference §4.4), byte for byte.
pub fn score_range_prompt(inputs: &Inputs, items: &[RubricItem]) -> String {
    let mut lines = vec![
        "You are an expert grader. Score the candidate answer on each criterion below using the provided score ranges.".to_owned(),
        "For each criterion, output an integer score from 0 to 10 based on which score range best matches the answer.".to_owned(),
        String::new(),
    ];
    lines.extend(inputs.case_lines());
    lines.push("[[ ## scoring_criteria ## ]]".to_owned());
    for r in items {
        let gate = r
            .min_score
            .map(|m| format!(" [REQUIRED: min score {m}]"))
            .unwrap_or_default();
        lines.push(String::new());
        lines.push(format!("### Criterion: {}{}{gate}", r.id, weight_label(r.weight)));
        if let Some(op) = r.operator {
            lines.push(format!("Operator: {}", op.as_str()));
        }
        if let Some(outcome) = &r.outcome {
            lines.push(format!("Description: {outcome}"));
        }
        if !r.score_ranges.is_empty() {
            lines.push("Score ranges:".to_owned());
            for band in &r.score_ranges {
                let [low, high] = band.score_range;
                let label = if low == high {
                    low.to_string()
                } else {
                    format!("{low}-{high}")
                };
                lines.push(format!("  - Score {label}: {}", band.outcome));
            }
        }
    }
    let ops = operators(items);
    if !ops.is_empty() {
        lines.push(String::new());
        lines.extend(ops.iter().map(|op| op.guidance().to_owned()));
    }
    lines.extend([
        String::new(),
        "For each criterion, provide an integer score 0-10 that matches one of its defined score ranges.".to_owned(),
    ]);
    lines.join("\n")
}

/// The rubric lines of the delegate prompt (reference §4.6): id, required, weight, outcome.
pub fn delegate_lines(items: &[RubricItem]) -> Vec<String> {
    let mut lines = vec!["[[ ## rubrics ## ]]".to_owned()];
    lines.extend(items.iter().map(|r| {
        format!(
            "- [{}]{}{}: {}",
            r.id,
            if r.is_required() { " (REQUIRED)" } else { "" },
            weight_label(r.weight),
            r.outcome.as_deref().unwrap_or(&r.id)
        )
    }));
    lines
}

fn checks(value: &Value) -> Result<&Vec<Value>, String> {
    match object(value)?.get("checks") {
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(format!("`checks` must be a list, got {}", kind(other))),
        None => Err("`checks` is missing".to_owned()),
    }
}

fn string_field(obj: &Map<String, Value>, key: &str, at: &str, required: bool) -> Result<Option<String>, String> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(Some(s.clone())),
        None if !required => Ok(None),
        None => Err(format!("{at}`{key}` is missing")),
        Some(other) => Err(format!("{at}`{key}` must be a string, got {}", kind(other))),
    }
}

/// One check of a checklist reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub id: String,
    pub satisfied: bool,
    pub reasoning: String,
}

/// A checklist reply (reference §4.3): `{checks: [{id, satisfied, reasoning}],
/// overall_reasoning}`, every part required.
pub fn checklist_reply(value: &Value) -> Result<Vec<Check>, String> {
    let obj = object(value)?;
    let items = checks(value)?;
    string_field(obj, "overall_reasoning", "", true)?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("`checks[{i}]`: ");
            let c = object(item).map_err(|e| format!("{at}{e}"))?;
            let satisfied = match c.get("satisfied") {
                Some(Value::Bool(b)) => *b,
                Some(other) => return Err(format!("{at}`satisfied` must be a boolean, got {}", kind(other))),
                None => return Err(format!("{at}`satisfied` is missing")),
            };
            Ok(Check {
                id: string_field(c, "id", &at, true)?.unwrap_or_default(),
                satisfied,
                reasoning: string_field(c, "reasoning", &at, true)?.unwrap_or_default(),
            })
        })
        .collect()
}

/// Scores checklist `checks` against `items` (`calculateRubricScore`): only checks of known
/// ids count, each with its item's weight; items the grader left out count for nothing
/// (quirk 5). An unsatisfied required item fails the verdict, not the score.
pub fn score_checklist(checks: &[Check], items: &[RubricItem]) -> Grade {
    let (mut total, mut earned, mut failed_required) = (0.0, 0.0, false);
    let mut assertions = Vec::new();
    for check in checks {
        let Some(item) = items.iter().find(|r| r.id == check.id) else {
            continue;
        };
        total += item.weight;
        assertions.push(
            Assertion::new(
                format!("[{}] {}", item.id, item.outcome.as_deref().unwrap_or_default()),
                check.satisfied,
            )
            .with_evidence(check.reasoning.clone()),
        );
        if check.satisfied {
            earned += item.weight;
        } else if item.is_required() {
            failed_required = true;
        }
    }
    let score = if total > 0.0 {
        (earned / total).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let verdict = if failed_required {
        GradeVerdict::Fail
    } else {
        GradeVerdict::of_score(score)
    };
    Grade::assessed(score, assertions).with_verdict(verdict)
}

/// One check of a score-range reply.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeCheck {
    pub id: String,
    pub score: i64,
    pub reasoning: Option<String>,
}

/// A score-range reply (reference §4.4): `{checks: [{id, score: integer 0-10, reasoning?}],
/// overall_reasoning?}`.
pub fn score_range_reply(value: &Value) -> Result<Vec<RangeCheck>, String> {
    let obj = object(value)?;
    let items = checks(value)?;
    string_field(obj, "overall_reasoning", "", false)?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("`checks[{i}]`: ");
            let c = object(item).map_err(|e| format!("{at}{e}"))?;
            let score = match c.get("score").and_then(Value::as_f64) {
                Some(s) if s.fract() == 0.0 && (0.0..=10.0).contains(&s) => s as i64,
                Some(s) => return Err(format!("{at}`score` must be a whole number from 0 to 10, got {s}")),
                None => return Err(format!("{at}`score` must be a whole number from 0 to 10")),
            };
            Ok(RangeCheck {
                id: string_field(c, "id", &at, true)?.unwrap_or_default(),
                score,
                reasoning: string_field(c, "reasoning", &at, false)?,
            })
        })
        .collect()
}

/// Scores score-range `checks` (`calculateScoreRangeResult`): each known id's score/10 times
/// its weight, over the weights of the checks returned. An item's gate is its `min_score`, or
/// 10/10 for a required item without one; an item passes its assertion at 7/10 and its gate.
pub fn score_ranges_result(checks: &[RangeCheck], items: &[RubricItem]) -> Grade {
    let (mut total, mut sum, mut failed_gate) = (0.0, 0.0, false);
    let mut assertions = Vec::new();
    let mut raw_scores = Map::new();
    for check in checks {
        let Some(item) = items.iter().find(|r| r.id == check.id) else {
            continue;
        };
        let raw = check.score.clamp(0, 10);
        let normalized = raw as f64 / 10.0;
        raw_scores.insert(item.id.clone(), json!(raw));
        total += item.weight;
        sum += normalized * item.weight;
        let gate = item.min_score.or(item.is_required().then_some(1.0));
        let below_gate = gate.is_some_and(|g| normalized < g);
        failed_gate |= below_gate;
        let band = item
            .score_ranges
            .iter()
            .find(|b| (b.score_range[0] as i64..=b.score_range[1] as i64).contains(&raw))
            .map_or("", |b| b.outcome.as_str());
        let label = item.outcome.as_deref().unwrap_or(&item.id);
        let mut assertion = Assertion::new(
            format!("[{}] {label} - Score: {raw}/10 ({band})", item.id),
            !below_gate && raw >= 7,
        );
        assertion.evidence = check.reasoning.clone();
        assertions.push(assertion);
    }
    let score = if total > 0.0 {
        (sum / total).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let verdict = if failed_gate {
        GradeVerdict::Fail
    } else {
        GradeVerdict::of_score(score)
    };
    let mut details = Map::new();
    details.insert("raw_scores".into(), Value::Object(raw_scores));
    details.insert("normalization".into(), json!("score / 10"));
    details.insert("aggregation".into(), json!("weighted_average"));
    Grade {
        details: Some(details),
        ..Grade::assessed(score, assertions).with_verdict(verdict)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::Diagnostics;
    use crate::config::node::parse_yaml;
    use crate::paths::Workspace;

    fn items(yaml: &str) -> (Result<Vec<RubricItem>, Stop>, Vec<String>) {
        let node = parse_yaml(yaml).expect("yaml");
        let ws = Workspace::from_cwd(std::env::temp_dir());
        let mut diags = Diagnostics::new(Path::new("e.yaml"));
        let mut cx = ParseContext::new(&ws, &ws.cwd, &mut diags);
        let got = parse_items(&node, "criteria", true, &mut cx);
        (got, diags.into_vec().iter().map(ToString::to_string).collect())
    }

    fn item(id: &str, outcome: &str, weight: f64, required: Option<bool>) -> RubricItem {
        RubricItem {
            weight,
            required,
            ..RubricItem::text(id.into(), outcome.into())
        }
    }

    #[test]
    fn items_are_read_with_4x_defaults() {
        let (got, problems) = items(
            "- Names PARIS\n- {id: r, outcome: Names ROME, weight: 2, required: false, operator: contradiction}\n- {criteria: Via alias}\n- {id: bands, score_ranges: {0: bad, 5: ok, 8: good}, required_min_score: 7}\n",
        );
        assert!(problems.is_empty(), "{problems:?}");
        let got = got.expect("valid");
        assert_eq!(got[0], item("rubric-1", "Names PARIS", 1.0, Some(true)));
        assert_eq!(
            got[1],
            RubricItem {
                operator: Some(Operator::Contradiction),
                ..item("r", "Names ROME", 2.0, Some(false))
            }
        );
        assert_eq!(got[2].id, "rubric-3", "ids count every item");
        assert_eq!(got[2].outcome.as_deref(), Some("Via alias"));
        let bands = &got[3];
        assert_eq!((bands.required, bands.min_score, bands.outcome.as_deref()), (None, Some(0.7), None));
        let shown: Vec<([u8; 2], &str)> = bands
            .score_ranges
            .iter()
            .map(|b| (b.score_range, b.outcome.as_str()))
            .collect();
        assert_eq!(shown, [([0, 4], "bad"), ([5, 7], "ok"), ([8, 10], "good")]);
        assert_eq!(
            items_json(&got[..2]).1,
            r#"[{"id":"rubric-1","outcome":"Names PARIS","weight":1,"required":true},{"id":"r","outcome":"Names ROME","weight":2,"required":false,"operator":"contradiction"}]"#
        );
    }

    #[test]
    fn bad_items_are_left_out_and_bad_ranges_invalidate_the_case() {
        let (got, problems) = items("- ''\n- {id: x}\n- 42\n- {outcome: o, operator: maybe}\n");
        assert_eq!(got.expect("the list stays usable").len(), 1);
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems[0].contains("warning: empty rubric item in `criteria` is left out"));
        assert!(problems[1].contains("warning: rubric item `x` has no `outcome`; it is left out"));
        assert!(problems[2].contains("warning: rubric item in `criteria` must be a text or a mapping, found 42"));
        assert!(problems[3].contains("warning: unknown rubric operator \"maybe\"; it is ignored"));
        let case_errors = [
            (
                "- {id: a, outcome: o, score_ranges: [{score_range: [0, 4], outcome: w}, {score_range: [6, 10], outcome: r}]}\n",
                "e.yaml:1:37: error: score ranges of rubric `a` leave out 5",
            ),
            (
                "- {id: a, outcome: o, score_ranges: [{score_range: [0, 5], outcome: w}, {score_range: [5, 10], outcome: r}]}\n",
                "error: score ranges 1 and 2 of rubric `a` overlap at 5",
            ),
            (
                "- {id: a, outcome: o, score_ranges: [{score_range: [4, 0], outcome: w}]}\n",
                "error: `score_range` [4, 0] runs backwards",
            ),
            ("- {id: a, outcome: o, score_ranges: {3: w, 8: r}}\n", "error: `score_ranges` of rubric `a` must start at 0"),
            ("- {id: a, outcome: o, min_score: 0}\n", "error: `min_score` must be more than 0 and at most 1, found 0"),
            ("- {id: a, outcome: o, min_score: 1.5}\n", "error: `min_score` must be a number from 0 to 1, found 1.5"),
            (
                "- {id: a, outcome: o, required_min_score: 11}\n",
                "error: `required_min_score` must be a whole number from 0 to 10, found 11",
            ),
        ];
        for (yaml, want) in case_errors {
            let (got, problems) = items(yaml);
            assert_eq!(got.err(), Some(Stop::Case), "{yaml}");
            assert!(problems.iter().any(|p| p.contains(want)), "{yaml}: {problems:?}");
        }
        let (got, problems) = items("- {outcome: o, weight: -1}\n");
        assert_eq!(got.err(), Some(Stop::Grader));
        assert!(
            problems[0].contains("error: `weight` must be a number ≥ 0, found -1; the grader cannot be used, so the case is invalid"),
            "{problems:?}"
        );
    }

    fn check(id: &str, satisfied: bool) -> Check {
        Check {
            id: id.into(),
            satisfied,
            reasoning: format!("why {id}"),
        }
    }

    #[test]
    fn checklist_scores_follow_calculate_rubric_score() {
        let rubric = [
            item("city", "Names PARIS", 3.0, Some(true)),
            item("river", "Names the SEINE", 1.0, Some(true)),
            item("ghost", "Names ROME", 1.0, Some(true)),
            item("opt", "Is short", 1.0, Some(false)),
        ];
        // (checks, score, verdict, passed texts)
        let cases: &[(&[Check], f64, GradeVerdict)] = &[
            // rubrics-object-weights: 3 of 4
            (&[check("city", true), check("river", false)], 0.75, GradeVerdict::Fail),
            // rubrics-omitted-id-not-counted: the grader leaves `ghost` out → 1.0
            (&[check("city", true)], 1.0, GradeVerdict::Pass),
            // unknown ids are ignored; no known check → 0
            (&[check("nope", true)], 0.0, GradeVerdict::Fail),
            // an unsatisfied optional item keeps the verdict
            (&[check("city", true), check("river", true), check("opt", false)], 0.8, GradeVerdict::Pass),
            // an unsatisfied required item fails the verdict, not the score
            (&[check("city", true), check("river", true), check("ghost", false), check("opt", true)], 5.0 / 6.0, GradeVerdict::Fail),
        ];
        for (checks, score, verdict) in cases {
            let g = score_checklist(checks, &rubric);
            assert!((g.score - score).abs() < 1e-12, "{checks:?}: {}", g.score);
            assert_eq!(g.verdict, Some(*verdict), "{checks:?}");
        }
        let g = score_checklist(&[check("city", true), check("river", false)], &rubric);
        assert_eq!(
            g.assertions,
            [
                Assertion::new("[city] Names PARIS", true).with_evidence("why city"),
                Assertion::new("[river] Names the SEINE", false).with_evidence("why river"),
            ]
        );
        assert_eq!((g.hits, g.misses), (vec!["[city] Names PARIS".to_owned()], vec!["[river] Names the SEINE".to_owned()]));
    }

    #[test]
    fn score_ranges_follow_calculate_score_range_result() {
        let accuracy = RubricItem {
            required: None,
            score_ranges: vec![
                ScoreRange {
                    score_range: [0, 4],
                    outcome: "wrong".into(),
                },
                ScoreRange {
                    score_range: [5, 10],
                    outcome: "right".into(),
                },
            ],
            ..item("accuracy", "Names PARIS", 1.0, None)
        };
        let towers = item("towers", "Names the EIFFEL TOWER and the LOUVRE", 2.0, Some(true));
        let rc = |id: &str, score: i64| RangeCheck {
            id: id.into(),
            score,
            reasoning: Some(format!("{score} found")),
        };
        // score-range-mixed-items: accuracy 10/10 (weight 1), towers 6/10 (weight 2).
        let g = score_ranges_result(&[rc("accuracy", 10), rc("towers", 6)], &[accuracy.clone(), towers.clone()]);
        assert!((g.score - 2.2 / 3.0).abs() < 1e-12, "{}", g.score);
        assert_eq!(g.verdict, Some(GradeVerdict::Fail), "towers misses its 10/10 gate");
        assert_eq!(
            g.assertions,
            [
                Assertion::new("[accuracy] Names PARIS - Score: 10/10 (right)", true).with_evidence("10 found"),
                Assertion::new("[towers] Names the EIFFEL TOWER and the LOUVRE - Score: 6/10 ()", false)
                    .with_evidence("6 found"),
            ]
        );
        assert_eq!(
            Value::Object(g.details.expect("details")),
            json!({"raw_scores": {"accuracy": 10, "towers": 6}, "normalization": "score / 10", "aggregation": "weighted_average"})
        );
        // score-range-shorthand: 5/10 on one item.
        let g = score_ranges_result(&[rc("accuracy", 5)], std::slice::from_ref(&accuracy));
        assert_eq!((g.score, g.verdict), (0.5, Some(GradeVerdict::Fail)));
        assert!(!g.assertions[0].passed, "below 7/10");
        // A min_score gate: 8/10 passes the assertion but 0.8 < 0.9 fails the gate.
        let gated = RubricItem {
            min_score: Some(0.9),
            ..accuracy.clone()
        };
        let g = score_ranges_result(&[rc("accuracy", 8)], &[gated]);
        assert_eq!((g.score, g.verdict, g.assertions[0].passed), (0.8, Some(GradeVerdict::Fail), false));
        let g = score_ranges_result(&[rc("accuracy", 9)], std::slice::from_ref(&accuracy));
        assert_eq!((g.score, g.verdict, g.assertions[0].passed), (0.9, Some(GradeVerdict::Pass), true));
    }

    #[test]
    fn replies_are_checked_against_their_schemas() {
        let ok = checklist_reply(&json!({"checks": [{"id": "a", "satisfied": true, "reasoning": "r"}], "overall_reasoning": "o"}))
            .expect("valid");
        assert_eq!(ok, [check("a", true)].map(|c| Check { reasoning: "r".into(), ..c }));
        for (value, want) in [
            (json!({"checks": []}), "`overall_reasoning` is missing"),
            (
                json!({"checks": [{"id": "a", "satisfied": "yes", "reasoning": "r"}], "overall_reasoning": "o"}),
                "`checks[0]`: `satisfied` must be a boolean, got a string",
            ),
            (
                json!({"checks": [{"id": "a", "satisfied": true}], "overall_reasoning": "o"}),
                "`checks[0]`: `reasoning` is missing",
            ),
            (json!({"score": 1}), "`checks` is missing"),
        ] {
            assert_eq!(checklist_reply(&value).map(|_| ()), Err(want.to_owned()), "{value}");
        }
        assert_eq!(
            score_range_reply(&json!({"checks": [{"id": "a", "score": 7.0}]})).expect("valid")[0].score,
            7
        );
        for (value, want) in [
            (json!({"checks": [{"id": "a", "score": 7.5}]}), "`checks[0]`: `score` must be a whole number from 0 to 10, got 7.5"),
            (json!({"checks": [{"id": "a", "score": 11}]}), "`checks[0]`: `score` must be a whole number from 0 to 10, got 11"),
            (json!({"checks": [{"id": "a"}]}), "`checks[0]`: `score` must be a whole number from 0 to 10"),
        ] {
            assert_eq!(score_range_reply(&value).map(|_| ()), Err(want.to_owned()), "{value}");
        }
    }

    fn prompt_inputs() -> Inputs {
        Inputs {
            question: "Tell me about Paris. [ans:paris]".into(),
            candidate: "Paris is the capital of France and home of the Eiffel Tower.".into(),
            ..Inputs::default()
        }
    }

    /// The prompts AgentV 4.42.4 sent for the compat suite's rubric cases, as it recorded them.
    #[test]
    fn prompts_are_the_ones_4_42_4_sends() {
        let items = [
            RubricItem {
                operator: Some(Operator::Correctness),
                ..item("paris", "Names PARIS", 1.0, Some(true))
            },
            RubricItem {
                operator: Some(Operator::Contradiction),
                ..item("oslo", "Names OSLO", 1.0, Some(true))
            },
        ];
        assert_eq!(
            checklist_prompt(&prompt_inputs(), &items),
            "You are an expert grader. Evaluate the candidate answer against each rubric item below.\n\n[[ ## question ## ]]\nTell me about Paris. [ans:paris]\n\n[[ ## criteria ## ]]\n\n\n[[ ## answer ## ]]\nParis is the capital of France and home of the Eiffel Tower.\n\n[[ ## rubrics ## ]]\n\nOperator guidance:\n- Correctness: mark satisfied only when the answer positively supports or fulfills the outcome. Omission or contradiction should not satisfy it.\n- Contradiction guard: mark satisfied when the answer does not make a claim that contradicts the outcome. Do not require the answer to mention the outcome; mark unsatisfied only for incompatible claims.\n\n- [paris] (REQUIRED) (operator: correctness): Names PARIS\n- [oslo] (REQUIRED) (operator: contradiction): Names OSLO\n\nFor each rubric, determine if it is satisfied and provide brief reasoning."
        );
        let with_reference = Inputs {
            reference: "Paris.".into(),
            criteria: "Names the city".into(),
            ..prompt_inputs()
        };
        assert!(
            checklist_prompt(&with_reference, &[item("r", "o", 2.0, Some(false))]).contains(
                "[[ ## criteria ## ]]\nNames the city\n\n[[ ## reference_answer ## ]]\nParis.\n\n[[ ## answer ## ]]\nParis is the capital of France and home of the Eiffel Tower.\n\n[[ ## rubrics ## ]]\n- [r] (weight: 2): o\n\nFor each"
            )
        );
        let ranged = [
            RubricItem {
                required: None,
                score_ranges: vec![
                    ScoreRange {
                        score_range: [0, 4],
                        outcome: "wrong".into(),
                    },
                    ScoreRange {
                        score_range: [5, 10],
                        outcome: "right".into(),
                    },
                ],
                ..item("accuracy", "Names PARIS", 1.0, None)
            },
            item("towers", "Names the EIFFEL TOWER and the LOUVRE", 2.0, Some(true)),
        ];
        assert_eq!(
            score_range_prompt(&prompt_inputs(), &ranged),
            "You are an expert grader. Score the candidate answer on each criterion below using the provided score ranges.\nFor each criterion, output an integer score from 0 to 10 based on which score range best matches the answer.\n\n[[ ## question ## ]]\nTell me about Paris. [ans:paris]\n\n[[ ## criteria ## ]]\n\n\n[[ ## answer ## ]]\nParis is the capital of France and home of the Eiffel Tower.\n\n[[ ## scoring_criteria ## ]]\n\n### Criterion: accuracy\nDescription: Names PARIS\nScore ranges:\n  - Score 0-4: wrong\n  - Score 5-10: right\n\n### Criterion: towers (weight: 2)\nDescription: Names the EIFFEL TOWER and the LOUVRE\n\nFor each criterion, provide an integer score 0-10 that matches one of its defined score ranges."
        );
        let gated = [RubricItem {
            min_score: Some(0.7),
            operator: Some(Operator::Correctness),
            score_ranges: vec![ScoreRange {
                score_range: [0, 10],
                outcome: "any".into(),
            }],
            ..item("g", "o", 1.0, None)
        }];
        assert!(score_range_prompt(&prompt_inputs(), &gated).ends_with(
            "### Criterion: g [REQUIRED: min score 0.7]\nOperator: correctness\nDescription: o\nScore ranges:\n  - Score 0-10: any\n\nCorrectness: mark satisfied only when the answer positively supports or fulfills the outcome. Omission or contradiction should not satisfy it.\n\nFor each criterion, provide an integer score 0-10 that matches one of its defined score ranges."
        ));
        assert_eq!(
            CHECKLIST_SYSTEM,
            "You are an expert grader. Evaluate the candidate answer against each rubric item.\nYou must return a valid JSON object matching this schema:\n{\n  \"checks\": [\n    {\n      \"id\": \"string (rubric id)\",\n      \"satisfied\": boolean,\n      \"reasoning\": \"string (brief explanation)\"\n    }\n  ],\n  \"overall_reasoning\": \"string (summary)\"\n}"
        );
        assert_eq!(
            SCORE_RANGE_SYSTEM,
            "You are an expert grader. Score the candidate answer on each criterion.\nYou must return a valid JSON object matching this schema:\n{\n  \"checks\": [\n    {\n      \"id\": \"string (criterion id)\",\n      \"score\": integer (0-10),\n      \"reasoning\": \"string (brief explanation for score)\"\n    }\n  ],\n  \"overall_reasoning\": \"string (summary, optional)\"\n}\n\nImportant: The \"score\" must be an integer from 0 to 10 that falls within one of the defined score ranges for that criterion."
        );
    }

    #[test]
    fn bare_strings_become_one_grader_weighted_by_their_number() {
        let g = from_strings(vec!["Names PARIS".into(), "Names FRANCE".into(), "Names LONDON".into()]);
        assert_eq!((g.name.as_str(), g.weight, g.type_name()), ("rubrics", 3.0, "rubrics"));
        let shown = format!("{:?}", g.grader);
        assert!(shown.contains("rubric-3") && shown.contains("Names LONDON"), "{shown}");
    }
}
