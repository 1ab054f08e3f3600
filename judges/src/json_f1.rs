//! **JSON field F1**: how many fields of a JSON answer match the expected JSON. No model call.
//!
//! Both documents are flattened into fields named by path (`invoice.lines[0].amount`: dots for
//! keys, `[i]` for list positions; a scalar, an empty object or an empty list is one field), or,
//! with `fields`, only the listed paths are compared (each as a whole value). Per field:
//!
//! | expected | answer | counts |
//! |---|---|---|
//! | present | equal | TP |
//! | present | different | FP and FN (a wrong value is both) |
//! | present | absent | FN |
//! | absent | present | FP |
//! | absent | absent (a listed field) | TN |
//!
//! ```text
//! precision = TP / (TP + FP)    recall = TP / (TP + FN)    F1 = 2·P·R / (P + R)
//! ```
//!
//! An empty denominator makes precision or recall 1 (nothing was wrong), and F1 is 0 when
//! P + R is 0; so two documents without fields score 1, and an answer with no fields against
//! a non-empty expectation scores 0. The score is F1 unless `metric` is `precision` or
//! `recall`. Per-field TP/FP/FN/TN are in `details.fields`.
//!
//! Normalisation, all on by default: `ignore_case` and `collapse_whitespace` for strings,
//! `numbers` (a number equals a string holding the same number: `42` = `"42"`, `1` = `1.0`;
//! two strings are compared as strings, so `"007"` ≠ `"7"`), `tolerance` (absolute, for
//! numbers; default 0) and `null_as_missing` (a `null` field counts as absent).
//!
//! The **answer** is the candidate's text parsed as JSON, else the first JSON object in it
//! (fences and prose around it are fine); an answer with no JSON has no fields (every expected
//! field is a FN) and a miss saying so. The **expected** JSON is the evaluator's `expected`
//! (a value, or JSON text), else the content of the last expected message (an object, or JSON
//! text; 2.x `expected_messages`, 4.x `expected_output`), else the 2.x `reference_answer`
//! text; none is a grader error.
//!
//! Example: expected `{"name": "Ada", "age": 36, "city": "London"}`, answer `{"name": "ada",
//! "age": 37, "email": "a@b.c"}`: TP name, FP+FN age, FN city, FP email → P = 1/3, R = 1/3,
//! F1 = 0.333.

use std::collections::BTreeMap;

use agentv_eval_sdk::{CodeJudgePayload, JudgeResult, TargetClient, extract_json_object};
use serde_json::{Map, Value, json};

use crate::Error;
use crate::config::{Config, describe};
use crate::context::message_text;
use crate::outcome::{Outcome, excerpt, round};
use crate::settings::Scoring;

pub const NAME: &str = "json_f1";

/// How values are compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalise {
    pub ignore_case: bool,
    pub collapse_whitespace: bool,
    pub numbers: bool,
    pub tolerance: f64,
    pub null_as_missing: bool,
}

impl Default for Normalise {
    fn default() -> Self {
        Self {
            ignore_case: true,
            collapse_whitespace: true,
            numbers: true,
            tolerance: 0.0,
            null_as_missing: true,
        }
    }
}

/// Which number is the score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreBy {
    F1,
    Precision,
    Recall,
}

/// One compared field.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub path: String,
    pub expected: Option<Value>,
    pub actual: Option<Value>,
    pub counts: Counts,
}

/// True/false positives and negatives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub tp: usize,
    pub fp: usize,
    pub fn_: usize,
    pub tn: usize,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.tp += other.tp;
        self.fp += other.fp;
        self.fn_ += other.fn_;
        self.tn += other.tn;
    }

    /// TP / (TP + FP); 1 when nothing was predicted.
    pub fn precision(&self) -> f64 {
        if self.tp + self.fp == 0 {
            1.0
        } else {
            self.tp as f64 / (self.tp + self.fp) as f64
        }
    }

    /// TP / (TP + FN); 1 when nothing was expected.
    pub fn recall(&self) -> f64 {
        if self.tp + self.fn_ == 0 {
            1.0
        } else {
            self.tp as f64 / (self.tp + self.fn_) as f64
        }
    }

    /// 2·P·R / (P + R); 0 when P + R is 0.
    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 { 0.0 } else { 2.0 * p * r / (p + r) }
    }
}

/// Counts of one field from its two sides.
pub fn classify(expected: Option<&Value>, actual: Option<&Value>, norm: &Normalise) -> Counts {
    match (expected, actual) {
        (Some(e), Some(a)) if equal(e, a, norm) => Counts {
            tp: 1,
            ..Counts::default()
        },
        (Some(_), Some(_)) => Counts {
            fp: 1,
            fn_: 1,
            ..Counts::default()
        },
        (Some(_), None) => Counts {
            fn_: 1,
            ..Counts::default()
        },
        (None, Some(_)) => Counts {
            fp: 1,
            ..Counts::default()
        },
        (None, None) => Counts {
            tn: 1,
            ..Counts::default()
        },
    }
}

/// Compares the two documents field by field (see the module documentation).
pub fn compare(
    expected: &Value,
    actual: Option<&Value>,
    fields: Option<&[String]>,
    ignore: &[String],
    norm: &Normalise,
) -> Result<Vec<Field>, String> {
    let present = |v: Option<&Value>| v.filter(|v| !(norm.null_as_missing && v.is_null())).cloned();
    let mut out = Vec::new();
    match fields {
        Some(paths) => {
            for path in paths.iter().filter(|p| !ignored(p, ignore)) {
                let segments = parse_path(path)?;
                let e = present(lookup(expected, &segments));
                let a = present(actual.and_then(|v| lookup(v, &segments)));
                let counts = classify(e.as_ref(), a.as_ref(), norm);
                out.push(Field {
                    path: path.clone(),
                    expected: e,
                    actual: a,
                    counts,
                });
            }
        }
        None => {
            let mut both: BTreeMap<String, (Option<Value>, Option<Value>)> = BTreeMap::new();
            for (path, value) in flatten(expected) {
                both.entry(path).or_default().0 = present(Some(&value));
            }
            for (path, value) in actual.map(flatten).unwrap_or_default() {
                both.entry(path).or_default().1 = present(Some(&value));
            }
            for (path, (e, a)) in both {
                if ignored(&path, ignore) || (e.is_none() && a.is_none()) {
                    continue;
                }
                let counts = classify(e.as_ref(), a.as_ref(), norm);
                out.push(Field {
                    path,
                    expected: e,
                    actual: a,
                    counts,
                });
            }
        }
    }
    Ok(out)
}

fn ignored(path: &str, ignore: &[String]) -> bool {
    ignore.iter().any(|i| {
        path == i
            || path
                .strip_prefix(i.as_str())
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    })
}

/// Leaf fields of a document, by path.
pub fn flatten(value: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

fn walk(value: &Value, path: String, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                let child = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                walk(v, child, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                walk(v, format!("{path}[{i}]"), out);
            }
        }
        leaf => out.push((path, leaf.clone())),
    }
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// Parses `a.b[0].c` (an index on its own, `[2]`, selects from a top-level list).
pub fn parse_path(path: &str) -> Result<Vec<Segment>, String> {
    let bad = |why: &str| format!("field path `{path}`: {why}");
    let mut out = Vec::new();
    for (n, part) in path.split('.').enumerate() {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if key.is_empty() && (n > 0 || rest.is_empty()) {
            return Err(bad(
                "an empty key; write keys separated by `.` and list positions as `[0]`",
            ));
        }
        if !key.is_empty() {
            out.push(Segment::Key(key.to_owned()));
        }
        while let Some(inner) = rest.strip_prefix('[') {
            let close = inner.find(']').ok_or_else(|| bad("a `[` without `]`"))?;
            let index = inner[..close]
                .parse::<usize>()
                .map_err(|_| bad(&format!("`[{}]` is not a list position", &inner[..close])))?;
            out.push(Segment::Index(index));
            rest = &inner[close + 1..];
        }
        if !rest.is_empty() {
            return Err(bad(&format!("unexpected `{rest}` after a list position")));
        }
    }
    Ok(out)
}

/// The value at a parsed path.
pub fn lookup<'a>(value: &'a Value, path: &[Segment]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, segment| match segment {
        Segment::Key(k) => v.get(k.as_str()),
        Segment::Index(i) => v.get(*i),
    })
}

/// Deep equality under the normalisation.
pub fn equal(a: &Value, b: &Value, norm: &Normalise) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => normal_text(x, norm) == normal_text(y, norm),
        (Value::Number(_), Value::Number(_)) => numbers_equal(a, b, norm.tolerance),
        (Value::Number(_), Value::String(s)) | (Value::String(s), Value::Number(_)) if norm.numbers => {
            let n = if a.is_number() { a } else { b };
            number_in(s).is_some_and(|parsed| numbers_equal(n, &parsed, norm.tolerance))
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q, norm)),
        (Value::Object(x), Value::Object(y)) => {
            let keys = |m: &Map<String, Value>| {
                m.iter()
                    .filter(|(_, v)| !(norm.null_as_missing && v.is_null()))
                    .map(|(k, _)| k.clone())
                    .collect::<Vec<_>>()
            };
            keys(x) == keys(y) && keys(x).iter().all(|k| equal(&x[k], &y[k], norm))
        }
        _ => a == b,
    }
}

fn normal_text(s: &str, norm: &Normalise) -> String {
    let s = if norm.collapse_whitespace {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        s.to_owned()
    };
    if norm.ignore_case { s.to_lowercase() } else { s }
}

fn number_in(s: &str) -> Option<Value> {
    let n: f64 = s.trim().parse().ok()?;
    serde_json::Number::from_f64(n).map(Value::Number)
}

fn numbers_equal(a: &Value, b: &Value, tolerance: f64) -> bool {
    // Integers beyond f64 precision compare exactly.
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x.abs_diff(y) as f64 <= tolerance;
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return x.abs_diff(y) as f64 <= tolerance;
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= tolerance,
        _ => false,
    }
}

/// A document from a text: the whole text as JSON, else the first JSON object in it.
pub fn parse_document(text: &str) -> Option<Value> {
    let trimmed = text.trim().trim_start_matches('\u{feff}');
    serde_json::from_str::<Value>(trimmed)
        .ok()
        .or_else(|| extract_json_object(trimmed).map(Value::Object))
}

/// The expected document (see the module documentation).
fn expected_document(payload: &CodeJudgePayload, inline: Option<&Value>) -> Result<Value, Error> {
    if let Some(value) = inline {
        return match value {
            Value::String(text) => parse_document(text)
                .ok_or_else(|| Error::Input(format!("config `expected` is text but not JSON: {}", describe(value)))),
            other => Ok(other.clone()),
        };
    }
    let messages = if payload.expected_messages.is_empty() {
        &payload.expected_output
    } else {
        &payload.expected_messages
    };
    let content = messages
        .iter()
        .rev()
        .filter(|m| m.get("role").and_then(Value::as_str).is_none_or(|r| r == "assistant"))
        .find_map(|m| m.get("content").filter(|c| !c.is_null()));
    // A payload with only the 2.x `reference_answer` (the last expected message as text).
    let reference = Value::String(payload.reference_answer.clone());
    let content = content.or_else(|| (!payload.reference_answer.trim().is_empty()).then_some(&reference));
    match content {
        None => Err(Error::Input(
            "no expected JSON: give it as the content of the last expected message (an object, or JSON text) or \
             as `expected` in the evaluator's config"
                .to_owned(),
        )),
        Some(Value::Object(object)) => Ok(Value::Object(object.clone())),
        Some(other) => {
            let text = message_text(other);
            parse_document(&text)
                .ok_or_else(|| Error::Input(format!("the expected answer is not JSON: {}", excerpt(&text, 80))))
        }
    }
}

/// Settings of this judge.
struct Settings {
    fields: Option<Vec<String>>,
    ignore: Vec<String>,
    norm: Normalise,
    by: ScoreBy,
    scoring: Scoring,
}

fn read_settings(config: &mut Config<'_>) -> Result<Settings, Error> {
    let defaults = Normalise::default();
    let fields = config.strings("fields")?;
    for path in fields.iter().flatten() {
        parse_path(path).map_err(|message| Error::Config {
            key: "fields".to_owned(),
            message,
        })?;
    }
    Ok(Settings {
        fields,
        ignore: config.strings("ignore_fields")?.unwrap_or_default(),
        norm: Normalise {
            ignore_case: config.boolean("ignore_case", defaults.ignore_case)?,
            collapse_whitespace: config.boolean("collapse_whitespace", defaults.collapse_whitespace)?,
            numbers: config.boolean("numbers", defaults.numbers)?,
            tolerance: config.non_negative("tolerance")?.unwrap_or(defaults.tolerance),
            null_as_missing: config.boolean("null_as_missing", defaults.null_as_missing)?,
        },
        by: config.choice(
            "metric",
            &[
                ("f1", ScoreBy::F1),
                ("precision", ScoreBy::Precision),
                ("recall", ScoreBy::Recall),
            ],
            ScoreBy::F1,
        )?,
        scoring: Scoring {
            threshold: config.unit("threshold")?,
            strict: config.boolean("strict_mode", false)?,
            include_reason: true,
            empty_score: 1.0,
        },
    })
}

fn show(value: &Value) -> String {
    excerpt(&value.to_string(), 60)
}

fn field_line(field: &Field) -> (bool, String) {
    let path = if field.path.is_empty() {
        "(the whole document)"
    } else {
        &field.path
    };
    match (&field.expected, &field.actual, field.counts.tp) {
        (_, _, 1) => (true, format!("`{path}`: matches")),
        (Some(e), Some(a), _) => (false, format!("`{path}`: expected {}, got {}", show(e), show(a))),
        (Some(e), None, _) => (false, format!("`{path}`: missing (expected {})", show(e))),
        (None, Some(a), _) => (false, format!("`{path}`: not expected (got {})", show(a))),
        (None, None, _) => (true, format!("`{path}`: absent from both")),
    }
}

pub fn grade(payload: &CodeJudgePayload) -> Result<JudgeResult, Error> {
    let mut config = Config::new(&payload.config, "agentv-json-f1");
    let inline = config.value("expected");
    let settings = read_settings(&mut config)?;
    config.finish()?;

    let expected = expected_document(payload, inline)?;
    let answer_text = payload.answer_text()?;
    let answer = parse_document(&answer_text);
    let fields = compare(
        &expected,
        answer.as_ref(),
        settings.fields.as_deref(),
        &settings.ignore,
        &settings.norm,
    )
    .map_err(Error::Input)?;
    let mut totals = Counts::default();
    for f in &fields {
        totals.add(f.counts);
    }
    let (p, r, f1) = (totals.precision(), totals.recall(), totals.f1());
    let value = match settings.by {
        ScoreBy::F1 => f1,
        ScoreBy::Precision => p,
        ScoreBy::Recall => r,
    };
    let reasoning = format!(
        "F1 = {} (precision {}/{} = {}, recall {}/{} = {}); TP {}, FP {}, FN {}{}",
        round(f1),
        totals.tp,
        totals.tp + totals.fp,
        round(p),
        totals.tp,
        totals.tp + totals.fn_,
        round(r),
        totals.tp,
        totals.fp,
        totals.fn_,
        match settings.by {
            ScoreBy::F1 => String::new(),
            ScoreBy::Precision => format!("; the score is the precision, {}", round(p)),
            ScoreBy::Recall => format!("; the score is the recall, {}", round(r)),
        }
    );
    let mut out = Outcome::new(NAME, value, reasoning);
    if answer.is_none() {
        out.misses
            .push(format!("the answer is not JSON: {}", excerpt(&answer_text, 80)));
    }
    let mut listed = Map::new();
    for field in &fields {
        let (passed, line) = field_line(field);
        out.check(passed, line);
        let c = field.counts;
        listed.insert(
            field.path.clone(),
            json!({"tp": c.tp, "fp": c.fp, "fn": c.fn_, "tn": c.tn, "expected": field.expected, "actual": field.actual}),
        );
    }
    out.detail("precision", p)
        .detail("recall", r)
        .detail("f1", f1)
        .detail("tp", totals.tp)
        .detail("fp", totals.fp)
        .detail("fn", totals.fn_)
        .detail("tn", totals.tn)
        .detail("fields", listed)
        .finish(&settings.scoring)
}

/// The judge function for [`agentv_eval_sdk::run_judge`]; it never calls the model.
pub fn judge(payload: &CodeJudgePayload, _target: Option<&TargetClient>) -> agentv_eval_sdk::JudgeOutcome {
    Ok(grade(payload)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(tp: usize, fp: usize, fn_: usize) -> Counts {
        Counts { tp, fp, fn_, tn: 0 }
    }

    #[test]
    fn precision_recall_f1_worked_numbers() {
        // (TP, FP, FN) → (P, R, F1)
        let cases = [
            ((1, 2, 2), (1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0)),
            ((3, 1, 2), (0.75, 0.6, 2.0 * 0.75 * 0.6 / 1.35)),
            ((2, 0, 0), (1.0, 1.0, 1.0)),
            ((0, 0, 3), (1.0, 0.0, 0.0)),
            ((0, 2, 0), (0.0, 1.0, 0.0)),
            ((0, 0, 0), (1.0, 1.0, 1.0)),
        ];
        for ((tp, fp, fn_), (p, r, f1)) in cases {
            let c = counts(tp, fp, fn_);
            assert!((c.precision() - p).abs() < 1e-12, "{c:?}");
            assert!((c.recall() - r).abs() < 1e-12, "{c:?}");
            assert!((c.f1() - f1).abs() < 1e-12, "{c:?}");
        }
    }

    #[test]
    fn normalisation() {
        let on = Normalise::default();
        let off = Normalise {
            ignore_case: false,
            collapse_whitespace: false,
            numbers: false,
            tolerance: 0.0,
            null_as_missing: false,
        };
        // (a, b, equal by default, equal with everything off)
        let cases = [
            (json!("Ada  Lovelace "), json!("ada lovelace"), true, false),
            (json!(42), json!("42"), true, false),
            (json!(1), json!(1.0), true, true),
            (json!("007"), json!("7"), false, false),
            (json!(true), json!("true"), false, false),
            (json!([1, "A"]), json!([1.0, "a"]), true, false),
            (json!({"a": 1, "b": null}), json!({"a": "1"}), true, false),
            (json!(9007199254740993_u64), json!(9007199254740992_u64), false, false),
            (json!("ÉCOLE"), json!("école"), true, false),
        ];
        for (a, b, by_default, strictly) in cases {
            assert_eq!(equal(&a, &b, &on), by_default, "{a} ~ {b}");
            assert_eq!(equal(&a, &b, &off), strictly, "{a} == {b}");
        }
        let tolerant = Normalise {
            tolerance: 0.05,
            ..Normalise::default()
        };
        assert!(equal(&json!(9.99), &json!("10"), &tolerant));
        assert!(!equal(&json!(9.9), &json!(10), &tolerant));
    }

    #[test]
    fn paths() {
        assert_eq!(
            parse_path("invoice.lines[0].amount"),
            Ok(vec![
                Segment::Key("invoice".into()),
                Segment::Key("lines".into()),
                Segment::Index(0),
                Segment::Key("amount".into())
            ])
        );
        assert_eq!(parse_path("[1][2]"), Ok(vec![Segment::Index(1), Segment::Index(2)]));
        for (bad, why) in [
            (
                "a..b",
                "field path `a..b`: an empty key; write keys separated by `.` and list positions as `[0]`",
            ),
            ("a[x]", "field path `a[x]`: `[x]` is not a list position"),
            ("a[0", "field path `a[0`: a `[` without `]`"),
            ("a[0]b", "field path `a[0]b`: unexpected `b` after a list position"),
            (
                "",
                "field path ``: an empty key; write keys separated by `.` and list positions as `[0]`",
            ),
        ] {
            assert_eq!(parse_path(bad), Err(why.to_owned()));
        }
        let doc = json!({"a": {"b": [{"c": 1}, {}], "e": []}, "d": null});
        let flat: Vec<String> = flatten(&doc).into_iter().map(|(p, _)| p).collect();
        assert_eq!(flat, ["a.b[0].c", "a.b[1]", "a.e", "d"]);
    }

    fn payload(expected: Value, answer: &str, config: Value) -> CodeJudgePayload {
        CodeJudgePayload::from_value(json!({
            "expected_messages": [{"role": "assistant", "content": expected}],
            "candidate_answer": answer,
            "config": config
        }))
        .expect("payload")
    }

    #[test]
    fn the_worked_example_of_the_docs() {
        let expected = json!({"name": "Ada", "age": 36, "city": "London"});
        let answer = "```json\n{\"name\": \"ada\", \"age\": 37, \"email\": \"a@b.c\"}\n```";
        let r = grade(&payload(expected, answer, json!({}))).expect("graded");
        assert!((r.score() - 1.0 / 3.0).abs() < 1e-12, "{}", r.score());
        assert_eq!(
            r.reasoning(),
            Some("F1 = 0.333 (precision 1/3 = 0.333, recall 1/3 = 0.333); TP 1, FP 2, FN 2")
        );
        assert_eq!(r.hits(), ["`name`: matches"]);
        assert_eq!(
            r.misses(),
            [
                "`age`: expected 36, got 37",
                "`city`: missing (expected \"London\")",
                "`email`: not expected (got \"a@b.c\")"
            ]
        );
        let d = r.details().expect("details");
        assert_eq!(
            d["fields"]["age"],
            json!({"tp": 0, "fp": 1, "fn": 1, "tn": 0, "expected": 36, "actual": 37})
        );
        assert_eq!(
            (d["tp"].clone(), d["fp"].clone(), d["fn"].clone()),
            (json!(1), json!(2), json!(2))
        );
    }

    #[test]
    fn listed_fields_ignored_fields_and_the_score_choice() {
        let expected = json!({"name": "Ada", "age": 36, "meta": {"id": 1}, "nick": null});
        let answer = r#"{"name": "Ada", "age": 37, "meta": {"id": 2}, "extra": true}"#;
        let r = grade(&payload(
            expected.clone(),
            answer,
            json!({"fields": ["name", "age", "nick"]}),
        ))
        .expect("graded");
        // TP name, FP+FN age, TN nick: P = 1/2, R = 1/2.
        assert_eq!(r.score(), 0.5);
        assert_eq!(r.details().expect("details")["fields"]["nick"]["tn"], 1);
        let r = grade(&payload(
            expected.clone(),
            answer,
            json!({"ignore_fields": ["meta", "extra"]}),
        ))
        .expect("graded");
        assert_eq!(r.score(), 0.5, "name TP, age FP+FN");
        let r = grade(&payload(expected, answer, json!({"metric": "recall"}))).expect("graded");
        // TP name; FP+FN age, meta.id; FP extra → P = 1/4, R = 1/3.
        assert!((r.score() - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn unparseable_answers_and_expectations() {
        let r = grade(&payload(json!({"a": 1}), "no json here", json!({}))).expect("graded");
        assert_eq!(r.score(), 0.0);
        assert_eq!(r.misses()[0], "the answer is not JSON: no json here");
        let r = grade(&payload(json!("{\"a\": 1}"), "{\"a\": \"1\"}", json!({}))).expect("graded");
        assert_eq!(r.score(), 1.0, "expected JSON given as text");
        let r = grade(&payload(json!("x"), "{}", json!({"expected": {"a": 1}}))).expect("graded");
        assert_eq!(r.score(), 0.0, "config.expected wins");
        let error = grade(&payload(json!("plain words"), "{}", json!({})))
            .expect_err("not JSON")
            .to_string();
        assert_eq!(error, "the expected answer is not JSON: plain words");
        let none = CodeJudgePayload::from_value(json!({"candidate_answer": "{}"})).expect("payload");
        assert!(
            grade(&none)
                .expect_err("no expectation")
                .to_string()
                .starts_with("no expected JSON")
        );
        let reference_only = CodeJudgePayload::from_value(json!({
            "candidate_answer": "{\"a\": 1}",
            "reference_answer": "{\"a\": 1, \"b\": 2}"
        }))
        .expect("payload");
        let r = grade(&reference_only).expect("the reference answer is the expectation");
        assert!((r.score() - 2.0 / 3.0).abs() < 1e-12, "{}", r.score());
        let error = grade(&payload(json!({}), "{}", json!({"fields": ["a..b"]})))
            .expect_err("bad path")
            .to_string();
        assert!(error.starts_with("config `fields`: field path `a..b`"), "{error}");
    }

    #[test]
    fn empty_documents_agree() {
        let r = grade(&payload(json!({}), "{}", json!({}))).expect("graded");
        assert_eq!(r.score(), 1.0);
    }
}
