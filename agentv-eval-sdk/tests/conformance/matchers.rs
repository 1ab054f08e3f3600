//! The suite's comparison rules (sdk/conformance/README.md, "Checks" and "Matchers").

use serde_json::{Map, Value};

/// A case that did not pass, with the reason.
#[derive(Debug)]
pub struct Failure(pub String);

impl<T: std::fmt::Display> From<T> for Failure {
    fn from(reason: T) -> Self {
        Self(reason.to_string())
    }
}

pub type Outcome = Result<(), Failure>;

/// JSON equality: numbers by value, but `true` is not `1`.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| json_equal(v, w)),
        _ => a == b,
    }
}

/// `None` when `actual` matches `expected` (exact JSON, except `{"$contains": TEXT}` and
/// `{"$any": true}`); else where and why it does not. `actual` is `None` when missing.
pub fn mismatch(expected: &Value, actual: Option<&Value>, at: &str) -> Option<String> {
    if let Some(text) = single(expected, "$contains") {
        let want = text.as_str().unwrap_or_default();
        return match actual {
            Some(Value::String(s)) if s.contains(want) => None,
            other => Some(format!("{at}: expected a string containing {want:?}, got {other:?}")),
        };
    }
    if single(expected, "$any").is_some() {
        return actual.is_none().then(|| format!("{at}: missing"));
    }
    match (expected, actual) {
        (Value::Object(want), Some(Value::Object(got))) => {
            let mut want_keys: Vec<&String> = want.keys().collect();
            let mut got_keys: Vec<&String> = got.keys().collect();
            want_keys.sort();
            got_keys.sort();
            if want_keys != got_keys {
                return Some(format!("{at}: expected keys {want_keys:?}, got {got_keys:?}"));
            }
            want.iter()
                .find_map(|(k, v)| mismatch(v, got.get(k), &format!("{at}.{k}")))
        }
        (Value::Array(want), Some(Value::Array(got))) if want.len() == got.len() => want
            .iter()
            .zip(got)
            .enumerate()
            .find_map(|(i, (v, g))| mismatch(v, Some(g), &format!("{at}[{i}]"))),
        (_, Some(got)) if json_equal(expected, got) => None,
        (_, got) => Some(format!("{at}: expected {expected}, got {got:?}")),
    }
}

fn single<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) if map.len() == 1 => map.get(key),
        _ => None,
    }
}

/// The value at `path` (keys and indexes); `None` when missing.
pub fn resolve<'a>(value: &'a Value, path: &[Value]) -> Option<&'a Value> {
    path.iter().try_fold(value, |at, step| match step {
        Value::Number(i) => at.as_array()?.get(usize::try_from(i.as_u64()?).ok()?),
        Value::String(key) => at.as_object()?.get(key),
        _ => None,
    })
}

/// Applies a case's `checks` to `value`; `helper` checks call `helper(name)`.
pub fn run_checks(value: &Value, checks: &[Value], helper: &dyn Fn(&str) -> Result<Value, Failure>) -> Outcome {
    for check in checks {
        let (label, actual) = match check.get("helper").and_then(Value::as_str) {
            Some(name) => (format!("{name}()"), Some(helper(name)?)),
            None => {
                let path = check["path"].as_array().cloned().unwrap_or_default();
                let label = path.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(".");
                (label, resolve(value, &path).cloned())
            }
        };
        if check.get("absent") == Some(&Value::Bool(true)) {
            if actual.as_ref().is_some_and(|v| !v.is_null()) {
                return Err(Failure(format!("{label}: expected absent, got {actual:?}")));
            }
        } else if let Some(want) = check.get("length").and_then(Value::as_u64) {
            let len = match &actual {
                Some(Value::Array(items)) => Some(items.len()),
                Some(Value::String(s)) => Some(s.chars().count()),
                _ => None,
            };
            if len != usize::try_from(want).ok() {
                return Err(Failure(format!("{label}: expected length {want}, got {actual:?}")));
            }
        } else if let Some(want) = check.get("equals")
            && !actual.as_ref().is_some_and(|got| json_equal(want, got))
        {
            return Err(Failure(format!("{label}: expected {want}, got {actual:?}")));
        }
    }
    Ok(())
}

/// Replaces the placeholders (`$PROXY_URL`, …) in every string of `value`.
pub fn substitute(value: &Value, table: &[(&str, &str)]) -> Value {
    match value {
        Value::String(s) => Value::String(
            table
                .iter()
                .fold(s.clone(), |text, (key, replacement)| text.replace(key, replacement)),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, table)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, table)))
                .collect::<Map<_, _>>(),
        ),
        other => other.clone(),
    }
}

/// The number a `"$NaN"`-style stand-in means, if `value` is one.
pub fn special_number(value: &Value) -> Option<f64> {
    match value.as_str()? {
        "$NaN" => Some(f64::NAN),
        "$Infinity" => Some(f64::INFINITY),
        "$-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}
