//! promptfoo's string and metric checks, with promptfoo's own pass, score and reason
//! (`docs/promptfoo.md#string-checks`): `equals`, `contains`, `icontains`, `contains-any`,
//! `icontains-any`, `contains-all`, `icontains-all`, `starts-with`, `regex`, `word-count`,
//! `cost`, `latency`.
//!
//! agentv's own graders of the same names score and word their results as AgentV does, so
//! these are separate entries, reached through [`super::promptfoo::entry`] only; they are not
//! in the grader table. Each takes `not-` itself (promptfoo's reasons say "not").

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::promptfoo_check::{self, PfResult};
use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind, Node, NodeValue, describe};

const VALUE: Key = Key::new("value", Kind::Any, "What the answer is checked against.");
const THRESHOLD_KEYS: &[Key] = &[promptfoo_check::THRESHOLD];
const VALUE_KEYS: KeyTable = KeyTable::new("promptfoo check", "A promptfoo string check.", &[&[VALUE]]);
const METRIC_KEYS: KeyTable = KeyTable::new("promptfoo check", "A promptfoo metric check.", &[THRESHOLD_KEYS]);

macro_rules! entry {
    ($name:ident, $type:literal, $doc:literal, $keys:expr, $parse:expr) => {
        pub(crate) static $name: GraderEntry = GraderEntry {
            name: $type,
            names: Names {
                v2: &[],
                v4: &[],
                promptfoo: &[$type],
            },
            doc: $doc,
            keys: &$keys,
            parse: $parse,
        };
    };
}

entry!(
    EQUALS,
    "equals",
    "Passes when the answer equals `value` (as JSON when `value` is structured).",
    VALUE_KEYS,
    |f, cx| text(f, cx, Op::Equals)
);
entry!(
    CONTAINS,
    "contains",
    "Passes when the answer contains `value`.",
    VALUE_KEYS,
    |f, cx| text(f, cx, Op::Contains { fold: false })
);
entry!(
    ICONTAINS,
    "icontains",
    "Passes when the answer contains `value`, ignoring case.",
    VALUE_KEYS,
    |f, cx| text(f, cx, Op::Contains { fold: true })
);
entry!(
    CONTAINS_ANY,
    "contains-any",
    "Passes when the answer contains one of `value`.",
    VALUE_KEYS,
    |f, cx| list(f, cx, false, false)
);
entry!(
    ICONTAINS_ANY,
    "icontains-any",
    "Passes when the answer contains one of `value`, ignoring case.",
    VALUE_KEYS,
    |f, cx| list(f, cx, false, true)
);
entry!(
    CONTAINS_ALL,
    "contains-all",
    "Passes when the answer contains all of `value`.",
    VALUE_KEYS,
    |f, cx| list(f, cx, true, false)
);
entry!(
    ICONTAINS_ALL,
    "icontains-all",
    "Passes when the answer contains all of `value`, ignoring case.",
    VALUE_KEYS,
    |f, cx| list(f, cx, true, true)
);
entry!(
    STARTS_WITH,
    "starts-with",
    "Passes when the answer starts with `value`.",
    VALUE_KEYS,
    |f, cx| text(f, cx, Op::StartsWith)
);
entry!(
    REGEX,
    "regex",
    "Passes when the JavaScript regular expression `value` matches the answer.",
    VALUE_KEYS,
    |f, cx| text(f, cx, Op::Regex)
);
entry!(
    WORD_COUNT,
    "word-count",
    "Passes when the answer has `value` words, or between `value.min` and `value.max`.",
    VALUE_KEYS,
    word_count
);
entry!(
    COST,
    "cost",
    "Passes when the call cost at most `threshold` dollars.",
    METRIC_KEYS,
    |f, cx| metric(f, cx, Metric::Cost)
);
entry!(
    LATENCY,
    "latency",
    "Passes when the call took at most `threshold` milliseconds.",
    METRIC_KEYS,
    |f, cx| metric(f, cx, Metric::Latency)
);

/// A promptfoo check as configured, with its `not-`.
#[derive(Debug, Clone)]
pub struct PfCheck {
    pub check: Check,
    pub inverse: bool,
}

/// What is checked.
#[derive(Debug, Clone)]
pub enum Check {
    /// `value` as written: a string, or structured (compared as JSON).
    Equals(Value),
    Contains {
        value: String,
        fold: bool,
    },
    Many {
        values: Vec<String>,
        all: bool,
        fold: bool,
    },
    StartsWith(String),
    /// `Err` holds promptfoo's reason for a pattern JavaScript refuses.
    Regex {
        source: String,
        regex: Result<fancy_regex::Regex, String>,
    },
    WordCount(Count),
    Metric {
        metric: Metric,
        threshold: f64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Count {
    Exactly(f64),
    Between { min: Option<f64>, max: Option<f64> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Cost,
    Latency,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Equals,
    Contains { fold: bool },
    StartsWith,
    Regex,
}

fn built(check: Check, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(PfCheck {
        check,
        inverse: promptfoo_check::inverse(cx),
    }))
}

fn required<'f>(f: &mut Fields<'f>, cx: &mut ParseContext<'_>, hint: &str) -> Option<&'f Node> {
    let what = f.what().to_owned();
    let node = f.take("value").filter(|n| !n.is_null());
    if node.is_none() {
        cx.drop_grader(
            f.pos,
            format!("{what} is missing the required key `value`"),
            Some(hint.to_owned()),
        );
    }
    node
}

fn refuse(cx: &mut ParseContext<'_>, node: &Node, what: &str, must: &str, hint: &str) -> Option<Arc<dyn Grader>> {
    cx.drop_grader(
        node.pos,
        format!("`value` of {what} must be {must}, found {}", describe(node)),
        Some(hint.to_owned()),
    );
    None
}

fn text(f: &mut Fields<'_>, cx: &mut ParseContext<'_>, op: Op) -> Option<Arc<dyn Grader>> {
    let what = f.what().to_owned();
    let node = required(f, cx, "add `value: <text>`")?;
    let value = node.to_json();
    let as_text = match &value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) if matches!(op, Op::Contains { .. }) => n.as_f64().map(super::js::number),
        _ => None,
    };
    let check = match (op, as_text) {
        (Op::Equals, _) => Check::Equals(value),
        (Op::Contains { fold }, Some(value)) => Check::Contains { value, fold },
        (Op::StartsWith, Some(s)) => Check::StartsWith(s),
        (Op::Regex, Some(source)) => Check::Regex {
            regex: js_regex(&source)
                .map_err(|e| format!("Invalid regex pattern: Invalid regular expression: /{source}/: {e}")),
            source,
        },
        (Op::Contains { .. }, None) => return refuse(cx, node, &what, "a string or a number", "write `value: <text>`"),
        _ => return refuse(cx, node, &what, "a non-empty string", "write `value: <text>`"),
    };
    built(check, cx)
}

fn list(f: &mut Fields<'_>, cx: &mut ParseContext<'_>, all: bool, fold: bool) -> Option<Arc<dyn Grader>> {
    let what = f.what().to_owned();
    let node = required(f, cx, "add `value: [a, b]`")?;
    let values = match &node.value {
        NodeValue::Str(s) if s.is_empty() => None,
        NodeValue::Str(s) => match comma_separated(s) {
            Ok(values) => Some(values),
            Err(problem) => {
                cx.drop_grader(node.pos, format!("`value` of {what}: {problem}"), None);
                return None;
            }
        },
        NodeValue::Seq(items) => Some(items.iter().map(|i| super::js::string_of(&i.to_json())).collect()),
        _ => None,
    };
    let Some(values) = values else {
        return refuse(
            cx,
            node,
            &what,
            "a list or a comma-separated string",
            "write `value: [a, b]`",
        );
    };
    built(Check::Many { values, all, fold }, cx)
}

/// `new RegExp(source)`, refusing what V8 refuses with V8's words where agentv's engine
/// differs: inline flag groups like `(?i)`, and the common syntax errors' names.
fn js_regex(source: &str) -> Result<fancy_regex::Regex, String> {
    if has_inline_group(source) {
        return Err("Invalid group".to_owned());
    }
    super::js_regex::compile(source, "").map_err(|e| {
        let lower = e.to_lowercase();
        let v8 = if lower.contains("without closing parenthesis") || lower.contains("unclosed group") {
            "Unterminated group"
        } else if lower.contains("unmatched closing parenthesis") || lower.contains("end of string not reached") {
            "Unmatched ')'"
        } else if lower.contains("character class") {
            "Unterminated character class"
        } else if lower.contains("repeat") {
            "Nothing to repeat"
        } else {
            return e;
        };
        v8.to_owned()
    })
}

/// A `(?` group JavaScript does not know (anything but `(?:`, `(?=`, `(?!`, `(?<=`, `(?<!`
/// and `(?<name>`), outside character classes and escapes.
fn has_inline_group(source: &str) -> bool {
    let chars: Vec<char> = source.chars().collect();
    let (mut i, mut in_class) = (0, false);
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' => in_class = true,
            ']' => in_class = false,
            '(' if !in_class
                && chars.get(i + 1) == Some(&'?')
                && !matches!(chars.get(i + 2), Some(':' | '=' | '!' | '<')) =>
            {
                return true;
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// promptfoo's comma-separated values: fields split at commas, trimmed; a field in double
/// quotes may hold commas (`\"`, `\\` and `""` escape).
pub fn comma_separated(value: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = value.chars().collect();
    let ws = |c: char| super::js::is_whitespace(c);
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && (ws(chars[i]) || chars[i] == ',') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        if chars[i] != '"' {
            let start = i;
            while i < chars.len() && chars[i] != ',' {
                i += 1;
            }
            let field: String = chars[start..i].iter().collect();
            out.push(super::js::trim(&field).to_owned());
            continue;
        }
        let mut field = String::new();
        let mut closed = false;
        i += 1;
        while i < chars.len() {
            match (chars[i], chars.get(i + 1)) {
                ('\\', Some(&c)) if c == '"' || c == '\\' => {
                    field.push(c);
                    i += 2;
                }
                ('"', Some('"')) => {
                    field.push('"');
                    i += 2;
                }
                ('"', _) => {
                    i += 1;
                    closed = true;
                    break;
                }
                (c, _) => {
                    field.push(c);
                    i += 1;
                }
            }
        }
        if !closed {
            return Err("a quoted field is not closed".to_owned());
        }
        out.push(field);
        while i < chars.len() && ws(chars[i]) {
            i += 1;
        }
        if i < chars.len() && chars[i] != ',' {
            return Err("a quoted field must be followed by a comma".to_owned());
        }
    }
    Ok(out)
}

fn word_count(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let what = f.what().to_owned();
    let node = required(f, cx, "add `value: 50` or `value: {min: 20, max: 50}`")?;
    let bound = |key: &str| node.get(key).filter(|n| !n.is_null()).map(|n| n.to_json().as_f64());
    let count = match node.to_json() {
        Value::Number(n) => n.as_f64().map(Count::Exactly),
        Value::String(s) => js_number(&s).map(Count::Exactly),
        Value::Object(_) => match (bound("min"), bound("max")) {
            (None, None) | (Some(None), _) | (_, Some(None)) => None,
            (min, max) => {
                let (min, max) = (min.flatten(), max.flatten());
                if let (Some(lo), Some(hi)) = (min, max)
                    && lo > hi
                {
                    cx.drop_grader(
                        node.pos,
                        format!(
                            "{what}: min ({}) must be at most max ({})",
                            super::js::number(lo),
                            super::js::number(hi)
                        ),
                        None,
                    );
                    return None;
                }
                Some(Count::Between { min, max })
            }
        },
        _ => None,
    };
    match count {
        Some(count) => built(Check::WordCount(count), cx),
        None => refuse(
            cx,
            node,
            &what,
            "a number or {min, max}",
            "write `value: 50` or `value: {min: 20, max: 50}`",
        ),
    }
}

/// `Number(s)` for a text: white space trimmed, empty is 0, else a decimal number.
fn js_number(s: &str) -> Option<f64> {
    let t = super::js::trim(s);
    if t.is_empty() {
        return Some(0.0);
    }
    t.parse::<f64>()
        .ok()
        .filter(|_| !t.contains(['e', 'E']) || t.parse::<f64>().is_ok())
}

fn metric(f: &mut Fields<'_>, cx: &mut ParseContext<'_>, metric: Metric) -> Option<Arc<dyn Grader>> {
    let what = f.what().to_owned();
    let threshold = promptfoo_check::threshold(f, cx).ok()?;
    let Some(threshold) = threshold else {
        let unit = if metric == Metric::Cost {
            "dollars"
        } else {
            "milliseconds"
        };
        cx.drop_grader(
            f.pos,
            format!("{what} is missing the required key `threshold`"),
            Some(format!("add `threshold: <{unit}>`")),
        );
        return None;
    };
    built(Check::Metric { metric, threshold }, cx)
}

impl Grader for PfCheck {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            if let Check::Metric { metric, threshold } = self.check {
                let measured = match metric {
                    Metric::Cost => ctx.metrics.cost_usd,
                    Metric::Latency => ctx.metrics.duration_ms,
                };
                return match measured {
                    Some(v) => metric_result(metric, v, threshold, self.inverse).grade(),
                    None => promptfoo_check::thrown(match metric {
                        Metric::Cost => "Cost assertion does not support providers that do not return cost",
                        Metric::Latency => {
                            "Latency assertion does not support cached results. Rerun the eval with --no-cache"
                        }
                    }),
                };
            }
            self.result(&candidate(ctx)).grade()
        })
    }
}

/// `cost` and `latency`: at most `threshold`.
fn metric_result(metric: Metric, value: f64, threshold: f64, inverse: bool) -> PfResult {
    let pass = (value <= threshold) != inverse;
    let cmp = if inverse {
        "less than or equal to"
    } else {
        "greater than"
    };
    let t = super::js::number(threshold);
    PfResult::check(pass, || match metric {
        Metric::Cost => format!("Cost {} is {cmp} threshold {t}", to_precision(value, 2)),
        Metric::Latency => format!("Latency {}ms is {cmp} threshold {t}ms", super::js::number(value)),
    })
}

/// `Number.prototype.toPrecision(digits)` for finite numbers.
pub fn to_precision(x: f64, digits: usize) -> String {
    if x == 0.0 {
        return format!("{:.*}", digits.saturating_sub(1), 0.0);
    }
    let sci = format!("{:.*e}", digits.saturating_sub(1), x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -6 || exp >= digits as i32 {
        let sign = if exp < 0 { "-" } else { "+" };
        return format!("{mantissa}e{sign}{}", exp.abs());
    }
    let decimals = (digits as i32 - 1 - exp).max(0) as usize;
    format!("{x:.decimals$}")
}

impl PfCheck {
    /// promptfoo's result for the answer text (every check but `cost` and `latency`).
    pub fn result(&self, output: &str) -> PfResult {
        let not = if self.inverse { "not " } else { "" };
        let fold = |s: &str, on: bool| if on { s.to_lowercase() } else { s.to_owned() };
        match &self.check {
            Check::Equals(value) => {
                let (equal, shown) = match value {
                    Value::String(s) => (s == output, s.clone()),
                    Value::Number(_) | Value::Bool(_) => {
                        (super::js::string_of(value) == output, super::js::string_of(value))
                    }
                    structured => (
                        serde_json::from_str::<Value>(output).is_ok_and(|parsed| deep_equal(structured, &parsed)),
                        super::js::stringify(structured),
                    ),
                };
                PfResult::check(equal != self.inverse, || {
                    format!("Expected output \"{output}\" to {not}equal \"{shown}\"")
                })
            }
            Check::Contains { value, fold: f } => {
                let hit = fold(output, *f).contains(&fold(value, *f));
                PfResult::check(hit != self.inverse, || {
                    format!("Expected output to {not}contain \"{value}\"")
                })
            }
            Check::Many { values, all, fold: f } => {
                let haystack = fold(output, *f);
                let missing: Vec<&str> = values
                    .iter()
                    .filter(|v| !haystack.contains(&fold(v, *f)))
                    .map(String::as_str)
                    .collect();
                let hit = if *all {
                    missing.is_empty()
                } else {
                    missing.len() < values.len()
                };
                PfResult::check(hit != self.inverse, || {
                    if *all {
                        format!(
                            "Expected output to {not}contain all of [{}]. Missing: [{}]",
                            values.join(", "),
                            missing.join(", ")
                        )
                    } else {
                        format!("Expected output to {not}contain one of \"{}\"", values.join(", "))
                    }
                })
            }
            Check::StartsWith(value) => PfResult::check(output.starts_with(value.as_str()) != self.inverse, || {
                format!("Expected output to {not}start with \"{value}\"")
            }),
            Check::Regex { source, regex } => match regex {
                Err(reason) => PfResult::check(false, || reason.clone()),
                Ok(re) => PfResult::check(re.is_match(output).unwrap_or(false) != self.inverse, || {
                    format!("Expected output to {not}match regex \"{source}\"")
                }),
            },
            Check::WordCount(count) => word_count_result(*count, output, self.inverse),
            Check::Metric { .. } => PfResult::check(false, || "no answer metric".to_owned()),
        }
    }
}

/// Node's `util.isDeepStrictEqual` on JSON values: numbers by value, objects by their keys.
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

fn word_count_result(count: Count, output: &str, inverse: bool) -> PfResult {
    let words = output.split(super::js::is_whitespace).filter(|w| !w.is_empty()).count();
    let words_f = words as f64;
    let n = super::js::number;
    let (base, reason) = match count {
        Count::Exactly(want) => (
            words_f == want,
            if inverse {
                format!("Expected word count to not equal {}, but got {words}", n(want))
            } else {
                format!("Word count {words} does not equal expected {}", n(want))
            },
        ),
        Count::Between {
            min: Some(lo),
            max: Some(hi),
        } => (
            words_f >= lo && words_f <= hi,
            if inverse {
                format!(
                    "Expected word count to not be between {} and {}, but got {words}",
                    n(lo),
                    n(hi)
                )
            } else {
                format!("Word count {words} is not between {} and {}", n(lo), n(hi))
            },
        ),
        Count::Between {
            min: None,
            max: Some(hi),
        } => (
            words_f <= hi,
            if inverse {
                format!("Expected word count to be greater than {}, but got {words}", n(hi))
            } else {
                format!("Word count {words} is greater than maximum {}", n(hi))
            },
        ),
        Count::Between { min, .. } => {
            let lo = min.unwrap_or(0.0);
            (
                words_f >= lo,
                if inverse {
                    format!("Expected word count to be less than {}, but got {words}", n(lo))
                } else {
                    format!("Word count {words} is less than minimum {}", n(lo))
                },
            )
        }
    };
    PfResult::check(base != inverse, || reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::promptfoo_check::testing::agrees_with_promptfoo_as;

    #[test]
    fn promptfoo_string_checks_agree_with_promptfoo() {
        for (base, entry) in [
            ("equals", &EQUALS),
            ("contains", &CONTAINS),
            ("icontains", &ICONTAINS),
            ("contains-any", &CONTAINS_ANY),
            ("icontains-any", &ICONTAINS_ANY),
            ("contains-all", &CONTAINS_ALL),
            ("icontains-all", &ICONTAINS_ALL),
            ("starts-with", &STARTS_WITH),
            ("regex", &REGEX),
            ("word-count", &WORD_COUNT),
            ("cost", &COST),
            ("latency", &LATENCY),
        ] {
            agrees_with_promptfoo_as(base, entry);
        }
    }

    /// `toPrecision(2)` as Node writes it.
    #[test]
    fn cost_reasons_write_numbers_as_to_precision_does() {
        for (x, want) in [
            (0.002, "0.0020"),
            (0.00123456, "0.0012"),
            (12.345, "12"),
            (123.0, "1.2e+2"),
            (0.0000001234, "1.2e-7"),
            (0.0, "0.0"),
            (0.999, "1.0"),
        ] {
            assert_eq!(to_precision(x, 2), want, "{x}");
        }
    }

    /// Expectations checked against promptfoo 0.121.20.
    /// V8's messages, checked against Node 20.
    #[test]
    fn regex_refuses_patterns_as_javascript_does() {
        for (source, want) in [
            ("(unclosed", Some("Unterminated group")),
            ("(?i)paris", Some("Invalid group")),
            ("[(?i)]", None),
            ("\\(?i", None),
            ("(?<year>\\d{4})", None),
            ("a)", Some("Unmatched ')'")),
            ("[a", Some("Unterminated character class")),
            ("*a", Some("Nothing to repeat")),
        ] {
            assert_eq!(js_regex(source).err().as_deref(), want, "{source}");
        }
    }

    /// Expectations checked against promptfoo 0.121.20.
    #[test]
    fn contains_any_splits_values_as_promptfoo_does() {
        for (value, want) in [
            ("a, b,,c", Ok(vec!["a", "b", "c"])),
            ("\"x, y\", z", Ok(vec!["x, y", "z"])),
            ("\"say \"\"hi\"\"\", \"a\\\\b\"", Ok(vec!["say \"hi\"", "a\\b"])),
            ("\"open", Err("a quoted field is not closed".to_owned())),
            ("\"a\" b", Err("a quoted field must be followed by a comma".to_owned())),
        ] {
            let want = want.map(|v| v.into_iter().map(str::to_owned).collect::<Vec<_>>());
            assert_eq!(comma_separated(value), want, "{value}");
        }
    }
}
