//! `field-accuracy` (4.x; 2.x `field_accuracy`, reference §2.8): compares fields of the
//! answer, read as JSON, with the same fields of the expected answer — exactly, as numbers
//! within a tolerance, or as dates.
//!
//! The answer is read leniently (fences dropped, the outermost `{…}`: [`parse_lenient`]);
//! the expected data is the content of the last expected assistant message that has some (an
//! object as it is, text read leniently).
//!
//! Dates: 4.x first hands the text to JavaScript's `Date`, which accepts far more than any
//! written rule (V8's loose parser) and reads times without an offset in the local time zone.
//! Here the forms suites use are read the way V8 reads them — ISO dates and date-times (an
//! offset converts to UTC), `M/D/YYYY` and `M-D-YYYY` month first when the month is at most
//! 12 (an overflowing day rolls into the next month, `02/30/2025` is 2 March), `YYYY/M/D`,
//! `15-Jan-2025`, `Jan 15, 2025`, `15 January 2025` — then 4.x's own fallbacks: `DD-MMM-YYYY`,
//! and `N/N/YYYY` or `N-N-YYYY` by the `formats` rule. Everything is compared in UTC (4.x
//! compares in the local zone: run it with `TZ=UTC` to agree). Other V8 forms are not read.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::candidate::parse_lenient;
use super::string_check::candidate;
use super::{Generation, Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::model::Assertion;
use crate::config::{Fields, Key, KeyTable, Kind, Node, NumberRange, describe};
use crate::model::{Content, EvalCase, Role};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "field-accuracy",
    names: Names {
        v2: &["field_accuracy"],
        v4: &["field-accuracy"],
        promptfoo: &[],
    },
    doc: "Compares fields of the JSON answer with the expected answer's (exact, numeric tolerance, date).",
    keys: &KEYS,
    parse,
};

const MATCHES: &[&str] = &["exact", "numeric_tolerance", "date"];
const AGGREGATIONS: &[&str] = &["weighted_average", "all_or_nothing"];

const OWN: &[Key] = &[
    Key::new("fields", Kind::List(&Kind::Object(&FIELD_KEYS)), "The fields to compare (at least one).").required(),
    Key::new(
        "aggregation",
        Kind::Enum(AGGREGATIONS),
        "weighted_average (default) or all_or_nothing.",
    ),
];
const KEYS: KeyTable = KeyTable::new("field-accuracy", "A structured-answer check.", &[OWN]);

const FIELD_OWN: &[Key] = &[
    Key::new("path", Kind::Str, "Dot path with [i] indexes: invoice.line_items[0].amount.").required(),
    Key::new("match", Kind::Enum(MATCHES), "exact, numeric_tolerance or date.").required(),
    Key::new("required", Kind::Bool, "A missing answer field fails (default true); else it is left out."),
    Key::new("weight", Kind::Number(NumberRange::NON_NEGATIVE), "Share in the score (default 1)."),
    Key::new(
        "tolerance",
        Kind::Number(NumberRange::NON_NEGATIVE),
        "numeric_tolerance: the largest accepted difference (default 0).",
    ),
    Key::new("relative", Kind::Bool, "numeric_tolerance: the tolerance is a share of the expected value."),
    Key::new(
        "formats",
        Kind::List(&Kind::Str),
        "date: the N/N/YYYY forms to expect (MM/DD/YYYY, DD/MM/YYYY, MM-DD-YYYY, DD-MM-YYYY).",
    ),
];
const FIELD_KEYS: KeyTable = KeyTable::new("a field", "One field to compare.", &[FIELD_OWN]);

/// How a field is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    Exact,
    NumericTolerance,
    Date,
}

/// One field as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldSpec {
    pub path: String,
    pub matcher: Match,
    pub required: bool,
    pub weight: f64,
    pub tolerance: f64,
    pub relative: bool,
    /// `None`: the default list, which has both US and EU forms.
    pub formats: Option<Vec<String>>,
}

impl FieldSpec {
    pub fn new(path: &str, matcher: Match) -> Self {
        Self {
            path: path.to_owned(),
            matcher,
            required: true,
            weight: 1.0,
            tolerance: 0.0,
            relative: false,
            formats: None,
        }
    }
}

/// A `field-accuracy` check as configured.
#[derive(Debug, Clone)]
pub struct FieldAccuracy {
    pub fields: Vec<FieldSpec>,
    pub all_or_nothing: bool,
    pub generation: Generation,
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let generation = cx.generation();
    let what = f.what().to_owned();
    // Read before `fields` can stop the parse, so `fields` is never reported unknown.
    let aggregation = enum_value(f, "aggregation", AGGREGATIONS, cx);
    let Some(node) = f.take("fields").filter(|n| !n.is_null()) else {
        cx.diags.error(
            f.pos,
            format!("{what} is missing the required key `fields`"),
            Some("add `fields: [{path: total, match: exact}]`".to_owned()),
        );
        return None;
    };
    let Some(items) = node.as_seq().filter(|items| !items.is_empty()) else {
        cx.diags.error(
            node.pos,
            format!(
                "`fields` of {what} must be a non-empty list, found {}",
                if node.as_seq().is_some() { "an empty list".to_owned() } else { describe(node) }
            ),
            Some("list the fields: fields: [{path: total, match: exact}]".to_owned()),
        );
        return None;
    };
    let before = cx.diags.error_count();
    let fields: Vec<FieldSpec> = items.iter().filter_map(|item| field(item, cx)).collect();
    let all_or_nothing = aggregation? == Some("all_or_nothing");
    (cx.diags.error_count() == before).then(|| {
        Arc::new(FieldAccuracy {
            fields,
            all_or_nothing,
            generation,
        }) as Arc<dyn Grader>
    })
}

/// Reads key `name` as one of `allowed`; `Err` after reporting anything else.
fn enum_value(
    f: &mut Fields<'_>,
    name: &str,
    allowed: &'static [&'static str],
    cx: &mut ParseContext<'_>,
) -> Option<Option<&'static str>> {
    let Some(node) = f.take(name).filter(|n| !n.is_null()) else {
        return Some(None);
    };
    match node.as_str().and_then(|s| allowed.iter().find(|a| **a == s)) {
        Some(found) => Some(Some(*found)),
        None => {
            cx.diags.error(
                node.pos,
                format!("`{}` must be {}, found {}", f.shown(name), one_of(allowed), describe(node)),
                None,
            );
            None
        }
    }
}

/// `a, b or c`.
fn one_of(allowed: &[&str]) -> String {
    match allowed.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => allowed.concat(),
    }
}

fn field(node: &Node, cx: &mut ParseContext<'_>) -> Option<FieldSpec> {
    let mut f = Fields::of(node, &FIELD_KEYS, cx.diags)?;
    let path = f.required_string("path", "a field", cx.diags);
    let matcher = match enum_value(&mut f, "match", MATCHES, cx) {
        Some(Some("exact")) => Some(Match::Exact),
        Some(Some("numeric_tolerance")) => Some(Match::NumericTolerance),
        Some(Some(_)) => Some(Match::Date),
        Some(None) => {
            cx.diags.error(
                f.pos,
                "a field is missing the required key `match`",
                Some("add `match: exact`, `numeric_tolerance` or `date` (for fuzzy matching use a code grader)".to_owned()),
            );
            None
        }
        None => None,
    };
    let required = f.boolean("required", cx.diags);
    let weight = f.number("weight", cx.diags);
    let tolerance = f.number("tolerance", cx.diags);
    let relative = f.boolean("relative", cx.diags);
    let formats = f.take("formats").and_then(|n| strings(n, cx));
    f.warn_unknown(cx.diags);
    Some(FieldSpec {
        path: path?,
        matcher: matcher?,
        required: required.unwrap_or(true),
        weight: weight.unwrap_or(1.0),
        tolerance: tolerance.unwrap_or(0.0),
        relative: relative.unwrap_or(false),
        formats,
    })
}

fn strings(node: &Node, cx: &mut ParseContext<'_>) -> Option<Vec<String>> {
    let Some(items) = node.as_seq() else {
        cx.diags.error(node.pos, format!("`formats` must be a list of strings, found {}", describe(node)), None);
        return None;
    };
    Some(items.iter().filter_map(|i| i.as_str().map(str::to_owned)).collect())
}

impl Grader for FieldAccuracy {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(self, &candidate(ctx), expected_data(ctx.case).as_ref()) })
    }
}

/// The expected data: the content of the last expected assistant message with content (an
/// object or list as it is; text parsed leniently, the message skipped when that fails).
pub fn expected_data(case: &EvalCase) -> Option<Value> {
    case.expected_messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .find_map(|m| match &m.content {
            Content::Empty => None,
            Content::Text(t) if t.is_empty() => None,
            Content::Text(t) => parse_lenient(t),
            Content::Json(Value::String(t)) if !t.is_empty() => parse_lenient(t),
            Content::Json(v @ (Value::Object(_) | Value::Array(_))) => Some(v.clone()),
            Content::Json(_) => None,
            Content::Segments(_) => m.to_json().get("content").cloned(),
        })
}

/// One field's outcome.
#[derive(Debug, Clone, PartialEq)]
struct FieldResult {
    score: f64,
    weight: f64,
    hit: bool,
    message: String,
}

/// Grades `output` against `expected` field by field (reference §2.8).
pub fn grade(check: &FieldAccuracy, output: &str, expected: Option<&Value>) -> Grade {
    let Some(actual) = parse_lenient(output) else {
        return Grade::check(false, "Failed to parse candidate answer as JSON");
    };
    let Some(expected) = expected else {
        return Grade::check(false, "No expected data found in expected_output");
    };
    let results: Vec<FieldResult> = check.fields.iter().map(|f| compare(f, &actual, expected)).collect();
    let score = if check.all_or_nothing {
        f64::from(u8::from(results.iter().all(|r| r.hit)))
    } else {
        let total: f64 = results.iter().map(|r| r.weight).sum();
        if total == 0.0 {
            f64::from(u8::from(results.is_empty()))
        } else {
            results.iter().map(|r| r.score * r.weight).sum::<f64>() / total
        }
    };
    let score = agentv_eval_sdk::clamp_score(score);
    let assertions = results.iter().map(|r| Assertion::new(r.message.clone(), r.hit)).collect();
    let mut grade = Grade::assessed(score, assertions);
    if check.generation == Generation::V2 {
        // 2.x kept at most four of each and said how many fields matched.
        let matched = results.iter().filter(|r| r.hit).count();
        grade.reasoning = Some(format!("{matched}/{} fields matched", results.len()));
        grade.hits.truncate(4);
        grade.misses.truncate(4);
        // 2.x reads the verdict from the score (with its borderline band).
        grade.verdict = None;
    }
    grade
}

fn compare(spec: &FieldSpec, actual: &Value, expected: &Value) -> FieldResult {
    let path = spec.path.as_str();
    let result = |hit: bool, message: String| FieldResult {
        score: f64::from(u8::from(hit)),
        weight: spec.weight,
        hit,
        message,
    };
    let Some(want) = resolve(expected, path) else {
        return result(true, format!("{path}: no expected value"));
    };
    let Some(got) = resolve(actual, path) else {
        if spec.required {
            return result(false, format!("{path} (required, missing)"));
        }
        return FieldResult {
            weight: 0.0,
            ..result(true, format!("{path}: optional field missing"))
        };
    };
    match spec.matcher {
        Match::Exact if deep_equal(got, want) => result(true, path.to_owned()),
        Match::Exact if type_of(got) != type_of(want) => result(
            false,
            format!("{path} (type mismatch: got {}, expected {})", type_of(got), type_of(want)),
        ),
        Match::Exact => result(false, format!("{path} (value mismatch)")),
        Match::NumericTolerance => {
            let (Some(a), Some(e)) = (to_number(got), to_number(want)) else {
                return result(false, format!("{path} (non-numeric value)"));
            };
            if !a.is_finite() || !e.is_finite() {
                return result(false, format!("{path} (invalid numeric value)"));
            }
            let diff = (a - e).abs();
            let off = if spec.relative && e != 0.0 { diff / e.abs() } else { diff };
            let shown = super::js::to_fixed(diff, 2);
            if off <= spec.tolerance {
                result(true, format!("{path} (within tolerance: diff={shown})"))
            } else {
                let tolerance = super::js::number(spec.tolerance);
                result(false, format!("{path} (outside tolerance: diff={shown}, tolerance={tolerance})"))
            }
        }
        Match::Date => {
            let formats = spec.formats.as_deref();
            let Some(g) = parse_date(&super::js::string_of(got), formats) else {
                return result(false, format!("{path} (unparseable candidate date)"));
            };
            let Some(w) = parse_date(&super::js::string_of(want), formats) else {
                return result(false, format!("{path} (unparseable expected date)"));
            };
            if g == w {
                result(true, path.to_owned())
            } else {
                result(false, format!("{path} (date mismatch: got {g}, expected {w})"))
            }
        }
    }
}

/// `invoice.line_items[0].amount`: parts split at `.`, `[` and `]`; a part of digits indexes
/// a list. `None` where JavaScript finds `undefined` (a JSON `null` is a value).
fn resolve<'v>(root: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        return None;
    }
    let mut current = root;
    for part in path.split(['.', '[', ']']).filter(|p| !p.is_empty()) {
        current = match current {
            Value::Array(items) if part.bytes().all(|b| b.is_ascii_digit()) => items.get(part.parse::<usize>().ok()?)?,
            Value::Object(map) => map.get(part)?,
            _ => return None,
        };
    }
    Some(current)
}

/// JavaScript's deep equality as 4.x writes it: numbers by value (`1` equals `1.0`), lists in
/// order, objects by their keys.
fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        _ => a == b,
    }
}

/// `typeof` of a JSON value.
fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Null | Value::Array(_) | Value::Object(_) => "object",
    }
}

/// A number, or text read with `parseFloat` (`"1,234"` is 1); anything else is not numeric.
fn to_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => super::js::parse_float(s),
        _ => None,
    }
}

/// A calendar day (UTC), written `YYYY-MM-DD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Day {
    year: i64,
    month: u32,
    day: u32,
}

impl std::fmt::Display for Day {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if (0..=9999).contains(&self.year) {
            write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
        } else {
            write!(f, "{:+07}-{:02}-{:02}", self.year, self.month, self.day)
        }
    }
}

const MONTHS: &[(&str, i64)] = &[
    ("jan", 0),
    ("january", 0),
    ("feb", 1),
    ("february", 1),
    ("mar", 2),
    ("march", 2),
    ("apr", 3),
    ("april", 3),
    ("may", 4),
    ("jun", 5),
    ("june", 5),
    ("jul", 6),
    ("july", 6),
    ("aug", 7),
    ("august", 7),
    ("sep", 8),
    ("sept", 8),
    ("september", 8),
    ("oct", 9),
    ("october", 9),
    ("nov", 10),
    ("november", 10),
    ("dec", 11),
    ("december", 11),
];

fn month_named(name: &str) -> Option<i64> {
    let name = name.to_ascii_lowercase();
    MONTHS.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
}

static ISO: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$",
    )
    .ok()
});
static NUMERIC: std::sync::LazyLock<Option<regex::Regex>> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"^(\d{1,2})[/-](\d{1,2})[/-](\d{4})$").ok());
static YEAR_FIRST: std::sync::LazyLock<Option<regex::Regex>> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"^(\d{4})/(\d{1,2})/(\d{1,2})$").ok());
static DAY_MONTH_YEAR: std::sync::LazyLock<Option<regex::Regex>> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"^(\d{1,2})[- ]([A-Za-z]{3,9})[- ](\d{4})$").ok());
static MONTH_DAY_YEAR: std::sync::LazyLock<Option<regex::Regex>> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"^([A-Za-z]{3,9})\.? (\d{1,2}),? (\d{4})$").ok());

/// Reads a date as 4.x does (module doc); `None` when it cannot.
pub fn parse_date(text: &str, formats: Option<&[String]>) -> Option<Day> {
    if text.is_empty() {
        return None;
    }
    let text = super::js::trim(text);
    like_v8(text).or_else(|| fallback(text, formats))
}

fn caps<'t>(re: &std::sync::LazyLock<Option<regex::Regex>>, text: &'t str) -> Option<Vec<Option<&'t str>>> {
    let c = re.as_ref()?.captures(text)?;
    Some(c.iter().map(|m| m.map(|m| m.as_str())).collect())
}

fn num(part: Option<&str>) -> Option<i64> {
    part?.parse().ok()
}

/// The forms V8's `Date` reads that suites use.
fn like_v8(text: &str) -> Option<Day> {
    if let Some(c) = caps(&ISO, text) {
        let (year, month, day) = (num(c[1])?, num(c[2]).unwrap_or(1), num(c[3]).unwrap_or(1));
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return None;
        }
        let (hour, minute) = (num(c[4]).unwrap_or(0), num(c[5]).unwrap_or(0));
        if hour > 24 || minute > 59 || num(c[6]).unwrap_or(0) > 59 {
            return None;
        }
        let offset = c[7].map_or(Some(0), offset_minutes)?;
        let minutes = days_from_civil(year, month - 1, day) * 1440 + hour * 60 + minute - offset;
        return Some(civil_from_days(minutes.div_euclid(1440)));
    }
    if let Some(c) = caps(&NUMERIC, text) {
        let (month, day, year) = (num(c[1])?, num(c[2])?, num(c[3])?);
        if (1..=12).contains(&month) && (1..=31).contains(&day) {
            return Some(civil_from_days(days_from_civil(year, month - 1, day)));
        }
        return None;
    }
    if let Some(c) = caps(&YEAR_FIRST, text) {
        let (year, month, day) = (num(c[1])?, num(c[2])?, num(c[3])?);
        if (1..=12).contains(&month) && (1..=31).contains(&day) {
            return Some(civil_from_days(days_from_civil(year, month - 1, day)));
        }
        return None;
    }
    let named = caps(&DAY_MONTH_YEAR, text)
        .and_then(|c| Some((num(c[1])?, month_named(c[2]?)?, num(c[3])?)))
        .or_else(|| caps(&MONTH_DAY_YEAR, text).and_then(|c| Some((num(c[2])?, month_named(c[1]?)?, num(c[3])?))));
    let (day, month, year) = named?;
    (1..=31)
        .contains(&day)
        .then(|| civil_from_days(days_from_civil(year, month, day)))
}

/// `Z` → 0, `+05:30` → 330, `-0500` → -300.
fn offset_minutes(zone: &str) -> Option<i64> {
    if zone == "Z" {
        return Some(0);
    }
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let digits: String = zone.chars().filter(char::is_ascii_digit).collect();
    let (h, m) = (digits.get(..2)?.parse::<i64>().ok()?, digits.get(2..)?.parse::<i64>().ok()?);
    Some(sign * (h * 60 + m))
}

/// 4.x's own fallbacks when `Date` fails: `DD-MMM-YYYY`, then `N/N/YYYY` or `N-N-YYYY` by
/// `formats` (only US forms: month first; only EU: day first; both or neither: a first number
/// over 12 is the day, a second over 12 the day, else month first).
fn fallback(text: &str, formats: Option<&[String]>) -> Option<Day> {
    let named = regex::Regex::new(r"^(\d{1,2})-([A-Za-z]{3,9})-(\d{4})$").ok()?;
    if let Some(c) = named.captures(text)
        && let Some(month) = month_named(&c[2])
    {
        return Some(civil_from_days(days_from_civil(c[3].parse().ok()?, month, c[1].parse().ok()?)));
    }
    let c = caps(&NUMERIC, text)?;
    let (a, b, year) = (num(c[1])?, num(c[2])?, num(c[3])?);
    let (us, eu) = match formats {
        None => (true, true),
        Some(list) => (
            list.iter().any(|f| f.contains("MM/DD") || f.contains("MM-DD")),
            list.iter().any(|f| f.contains("DD/MM") || f.contains("DD-MM")),
        ),
    };
    let day_of = |month: i64, day: i64| civil_from_days(days_from_civil(year, month - 1, day));
    match (us, eu) {
        (true, false) => ((1..=12).contains(&a) && (1..=31).contains(&b)).then(|| day_of(a, b)),
        (false, true) => ((1..=12).contains(&b) && (1..=31).contains(&a)).then(|| day_of(b, a)),
        _ if a > 12 && b <= 12 => Some(day_of(b, a)),
        _ if b > 12 && a <= 12 => Some(day_of(a, b)),
        _ if a <= 12 && b <= 31 => Some(day_of(a, b)),
        _ => None,
    }
}

/// Days since 1970-01-01 of `year`, `month0` (0-based, may overflow into later years) and
/// `day` (may overflow into later months), as JavaScript's `Date(year, month, day)` counts.
fn days_from_civil(year: i64, month0: i64, day: i64) -> i64 {
    let year = year + month0.div_euclid(12);
    let month = month0.rem_euclid(12) + 1;
    // Howard Hinnant's days_from_civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468 + (day - 1)
}

fn civil_from_days(days: i64) -> Day {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    Day { year, month, day }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::{GradeVerdict, negate};
    use crate::evaluators::string_check::testing::{parse_one, problems};
    use serde_json::json;

    /// (written date, formats, the day it reads as).
    type DateCase<'a> = (&'a str, Option<&'a [String]>, Option<Day>);

    fn check(fields: Vec<FieldSpec>) -> FieldAccuracy {
        FieldAccuracy {
            fields,
            all_or_nothing: false,
            generation: Generation::V4,
        }
    }

    fn with(mut spec: FieldSpec, edit: impl FnOnce(&mut FieldSpec)) -> FieldSpec {
        edit(&mut spec);
        spec
    }

    fn texts(g: &Grade) -> Vec<(&str, bool)> {
        g.assertions.iter().map(|a| (a.text.as_str(), a.passed)).collect()
    }

    fn invoice() -> Value {
        json!({"invoice": {"number": "INV-001", "total": 1234.5, "date": "2025-01-15",
               "line_items": [{"amount": 100, "sku": "A"}, {"amount": 200}], "vendor": {"name": "Acme"}}})
    }

    #[test]
    fn each_match_kind_gives_4x_messages() {
        let expected = invoice();
        let answer = r#"```json
{"invoice": {"number": "INV-001", "total": "1,234.50", "date": "01/15/2025",
 "line_items": [{"amount": 100.0, "sku": 7}, {"amount": 205}], "vendor": {"name": "ACME"}}}
```"#;
        let tol = |t: f64| move |s: &mut FieldSpec| s.tolerance = t;
        let cases: Vec<(FieldSpec, (&str, bool))> = vec![
            (FieldSpec::new("invoice.number", Match::Exact), ("invoice.number", true)),
            (FieldSpec::new("invoice.line_items[0].amount", Match::Exact), ("invoice.line_items[0].amount", true)),
            (
                FieldSpec::new("invoice.line_items[0].sku", Match::Exact),
                ("invoice.line_items[0].sku (type mismatch: got number, expected string)", false),
            ),
            (FieldSpec::new("invoice.vendor.name", Match::Exact), ("invoice.vendor.name (value mismatch)", false)),
            // parseFloat("1,234.50") is 1.
            (
                with(FieldSpec::new("invoice.total", Match::NumericTolerance), tol(1.0)),
                ("invoice.total (outside tolerance: diff=1233.50, tolerance=1)", false),
            ),
            (
                with(FieldSpec::new("invoice.line_items[1].amount", Match::NumericTolerance), tol(5.0)),
                ("invoice.line_items[1].amount (within tolerance: diff=5.00)", true),
            ),
            (
                with(FieldSpec::new("invoice.line_items[1].amount", Match::NumericTolerance), |s| {
                    s.tolerance = 0.02;
                    s.relative = true;
                }),
                ("invoice.line_items[1].amount (outside tolerance: diff=5.00, tolerance=0.02)", false),
            ),
            (FieldSpec::new("invoice.date", Match::Date), ("invoice.date", true)),
            (FieldSpec::new("invoice.currency", Match::Exact), ("invoice.currency: no expected value", true)),
            (FieldSpec::new("invoice.line_items[1].sku", Match::Exact), ("invoice.line_items[1].sku: no expected value", true)),
            (
                with(FieldSpec::new("invoice.vendor", Match::Exact), |_| {}),
                ("invoice.vendor (value mismatch)", false),
            ),
        ];
        for (spec, want) in cases {
            let g = grade(&check(vec![spec.clone()]), answer, Some(&expected));
            assert_eq!(texts(&g), [want], "{spec:?}");
        }
    }

    #[test]
    fn missing_fields_follow_required_and_weight() {
        let expected = json!({"a": 1, "b": 2, "c": 3});
        let answer = r#"{"a": 1}"#;
        let optional = |s: &mut FieldSpec| s.required = false;
        // a hits (1), b required missing (0), c optional missing (left out): 1/2.
        let g = grade(
            &check(vec![
                FieldSpec::new("a", Match::Exact),
                FieldSpec::new("b", Match::Exact),
                with(FieldSpec::new("c", Match::Exact), optional),
            ]),
            answer,
            Some(&expected),
        );
        assert_eq!(g.score, 0.5);
        assert_eq!(
            texts(&g),
            [("a", true), ("b (required, missing)", false), ("c: optional field missing", true)]
        );
        // Weights: a (3) hits, b (1) misses: 0.75; verdict fail below 0.8.
        let g = grade(
            &check(vec![
                with(FieldSpec::new("a", Match::Exact), |s| s.weight = 3.0),
                FieldSpec::new("b", Match::Exact),
            ]),
            answer,
            Some(&expected),
        );
        assert_eq!((g.score, g.verdict4()), (0.75, GradeVerdict::Fail));
        let n = negate(g);
        assert_eq!((n.score, n.verdict4()), (0.25, GradeVerdict::Pass));
        // Only an optional missing field: every weight 0 → 0.
        let g = grade(&check(vec![with(FieldSpec::new("c", Match::Exact), optional)]), answer, Some(&expected));
        assert_eq!(g.score, 0.0);
        // A field with no expected value counts as a hit with its weight.
        let g = grade(&check(vec![FieldSpec::new("z", Match::Exact), FieldSpec::new("b", Match::Exact)]), answer, Some(&expected));
        assert_eq!(g.score, 0.5);
    }

    #[test]
    fn all_or_nothing_needs_every_field() {
        let expected = json!({"a": 1, "b": 2});
        let mut c = check(vec![FieldSpec::new("a", Match::Exact), FieldSpec::new("b", Match::Exact)]);
        c.all_or_nothing = true;
        assert_eq!(grade(&c, r#"{"a": 1, "b": 2}"#, Some(&expected)).score, 1.0);
        assert_eq!(grade(&c, r#"{"a": 1, "b": 3}"#, Some(&expected)).score, 0.0);
        c.fields[1].required = false;
        assert_eq!(grade(&c, r#"{"a": 1}"#, Some(&expected)).score, 1.0, "an optional missing field passes");
    }

    #[test]
    fn unreadable_answers_and_missing_expectations_score_zero() {
        let c = check(vec![FieldSpec::new("a", Match::Exact)]);
        let g = grade(&c, "no json here", Some(&json!({"a": 1})));
        assert_eq!((g.score, texts(&g)), (0.0, vec![("Failed to parse candidate answer as JSON", false)]));
        let g = grade(&c, r#"{"a": 1}"#, None);
        assert_eq!((g.score, texts(&g)), (0.0, vec![("No expected data found in expected_output", false)]));
        // A number parses: its fields are all missing.
        let g = grade(&c, "42", Some(&json!({"a": 1})));
        assert_eq!(texts(&g), [("a (required, missing)", false)]);
    }

    #[test]
    fn dates_read_like_v8_then_by_the_formats_rule() {
        let us = vec!["MM/DD/YYYY".to_owned()];
        let eu = vec!["DD/MM/YYYY".to_owned()];
        let day = |y, m, d| Some(Day { year: y, month: m, day: d });
        let cases: Vec<DateCase<'_>> = vec![
            ("2025-01-15", None, day(2025, 1, 15)),
            ("  2025-01-15T10:00:00  ", None, day(2025, 1, 15)),
            ("2025-01-15T23:30:00-05:00", None, day(2025, 1, 16)),
            ("2025-01-15T01:00:00+02:00", None, day(2025, 1, 14)),
            ("2025-02-30", None, day(2025, 3, 2)),
            ("2025-13-01", None, None),
            ("2025", None, day(2025, 1, 1)),
            ("03/04/2025", None, day(2025, 3, 4)),
            // V8 reads month first whatever `formats` says.
            ("03/04/2025", Some(&eu), day(2025, 3, 4)),
            ("03-04-2025", None, day(2025, 3, 4)),
            ("02/30/2025", None, day(2025, 3, 2)),
            ("15/01/2025", None, day(2025, 1, 15)),
            ("15/01/2025", Some(&us), None),
            ("15-01-2025", Some(&eu), day(2025, 1, 15)),
            ("31/02/2025", Some(&eu), day(2025, 3, 3)),
            ("13/13/2025", None, None),
            ("15-Jan-2025", None, day(2025, 1, 15)),
            ("15-JAN-2025", None, day(2025, 1, 15)),
            ("15-Sept-2025", None, day(2025, 9, 15)),
            ("Jan 15, 2025", None, day(2025, 1, 15)),
            ("15 January 2025", None, day(2025, 1, 15)),
            ("2025/01/15", None, day(2025, 1, 15)),
            ("20250115", None, None),
            ("yesterday", None, None),
            ("", None, None),
        ];
        for (text, formats, want) in cases {
            assert_eq!(parse_date(text, formats), want, "{text:?} {formats:?}");
        }
        let g = grade(
            &check(vec![FieldSpec::new("d", Match::Date)]),
            r#"{"d": "15-Feb-2025"}"#,
            Some(&json!({"d": "2025-01-15"})),
        );
        assert_eq!(texts(&g), [("d (date mismatch: got 2025-02-15, expected 2025-01-15)", false)]);
        let g = grade(&check(vec![FieldSpec::new("d", Match::Date)]), r#"{"d": "soon"}"#, Some(&json!({"d": "2025-01-15"})));
        assert_eq!(texts(&g), [("d (unparseable candidate date)", false)]);
        let g = grade(&check(vec![FieldSpec::new("d", Match::Date)]), r#"{"d": "2025-01-15"}"#, Some(&json!({"d": 5})));
        assert_eq!(texts(&g), [("d (unparseable expected date)", false)]);
    }

    #[test]
    fn civil_day_arithmetic_round_trips() {
        for days in [-719_468, -1, 0, 59, 365, 11_016, 20_103, 2_932_896] {
            let d = civil_from_days(days);
            assert_eq!(days_from_civil(d.year, i64::from(d.month) - 1, i64::from(d.day)), days, "{d}");
        }
        assert_eq!(civil_from_days(days_from_civil(2024, 1, 29)).to_string(), "2024-02-29");
        assert_eq!(civil_from_days(days_from_civil(2025, 0, 0)).to_string(), "2024-12-31");
    }

    #[test]
    fn the_2x_spelling_keeps_2x_reasoning_and_caps() {
        let expected = json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5});
        let mut c = check(["a", "b", "c", "d", "e"].iter().map(|p| FieldSpec::new(p, Match::Exact)).collect());
        c.generation = Generation::V2;
        let g = grade(&c, "{}", Some(&expected));
        assert_eq!(g.reasoning.as_deref(), Some("0/5 fields matched"));
        assert_eq!((g.misses.len(), g.assertions.len()), (4, 5));
    }

    #[test]
    fn field_accuracy_config_is_checked_at_load() {
        let (grader, shown) = parse_one(
            "{type: field_accuracy, aggregation: all_or_nothing, fields: [{path: a.b, match: numeric_tolerance, tolerance: 0.5, relative: true, required: false, weight: 2, formats: [MM/DD/YYYY]}]}",
        );
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| (g.type_name(), g.name)), Some(("field-accuracy", "field-accuracy".to_owned())));
        assert_eq!(problems("{type: field-accuracy}"), ["e.yaml:1:3: error: field-accuracy is missing the required key `fields`"]);
        assert_eq!(
            problems("{type: field-accuracy, fields: []}"),
            ["e.yaml:1:34: error: `fields` of field-accuracy must be a non-empty list, found an empty list"]
        );
        assert_eq!(
            problems("{type: field-accuracy, fields: [{path: a, match: fuzzy}, {match: exact}]}"),
            [
                "e.yaml:1:52: error: `match` must be exact, numeric_tolerance or date, found \"fuzzy\"",
                "e.yaml:1:60: error: a field is missing the required key `path`"
            ]
        );
        assert_eq!(
            problems("{type: field-accuracy, aggregation: mean, fields: [{path: a, match: exact}]}"),
            ["e.yaml:1:39: error: `aggregation` must be weighted_average or all_or_nothing, found \"mean\""]
        );
    }
}
