//! The few JavaScript behaviours 4.x grader texts and checks depend on, written out so our
//! graders say and decide what AgentV 4.x says and decides: number formatting
//! (`String(n)`, `toFixed`), `trim`, `String(value)`, `JSON.stringify` and `parseFloat`.
//!
//! Known difference: objects are written with their keys sorted (our JSON values do not keep
//! key order), where `JSON.stringify` keeps the order of the source.

use serde_json::Value;

/// JavaScript's white space and line terminators (`String.prototype.trim`): unlike Rust's
/// `char::is_whitespace` it includes U+FEFF and excludes U+0085.
pub fn is_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// `s.trim()`.
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_whitespace)
}

/// `String(n)` for a number: shortest round-trip digits, exponent form below 1e-6 and from
/// 1e21 on (`1e+21`), `-0` as `0`.
pub fn number(n: f64) -> String {
    if n.is_nan() {
        return "NaN".to_owned();
    }
    if n.is_infinite() {
        return if n > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if n == 0.0 {
        return "0".to_owned();
    }
    let sign = if n < 0.0 { "-" } else { "" };
    // `{:e}` gives the shortest digits that round-trip: "1.2345e3".
    let sci = format!("{:e}", n.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i64;
    // The decimal point sits after `point` digits.
    let point = exp.parse::<i64>().unwrap_or(0) + 1;
    let body = if k <= point && point <= 21 {
        format!("{digits}{}", "0".repeat((point - k) as usize))
    } else if 0 < point && point <= 21 {
        format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
    } else if -6 < point && point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else {
        let e = point - 1;
        let e = if e >= 0 { format!("+{e}") } else { e.to_string() };
        match digits.split_at(1) {
            (first, "") => format!("{first}e{e}"),
            (first, rest) => format!("{first}.{rest}e{e}"),
        }
    };
    format!("{sign}{body}")
}

/// `n.toFixed(digits)`: the exact value of `n` rounded half away from zero (Rust's `{:.2}`
/// rounds exact ties to even: 0.125 gives "0.12" there, "0.13" here).
pub fn to_fixed(n: f64, digits: usize) -> String {
    if !n.is_finite() || n.abs() >= 1e21 {
        return number(n);
    }
    // Far more digits than a tie can hide behind (the gap to the nearest tie is at least an
    // ulp, ≫ 10^-25 of the last kept digit); the first dropped digit then decides.
    let wide = format!("{:.*}", digits + 25, n.abs());
    let (int_part, frac) = wide.split_once('.').unwrap_or((&wide, ""));
    let mut kept: Vec<u8> = int_part.bytes().chain(frac.bytes().take(digits)).collect();
    if frac.as_bytes().get(digits).is_some_and(|d| *d >= b'5') {
        let mut i = kept.len();
        loop {
            if i == 0 {
                kept.insert(0, b'1');
                break;
            }
            i -= 1;
            if kept[i] == b'9' {
                kept[i] = b'0';
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    let int_len = kept.len() - digits;
    let text = String::from_utf8_lossy(&kept);
    let sign = if n < 0.0 { "-" } else { "" };
    if digits == 0 {
        format!("{sign}{text}")
    } else {
        format!("{sign}{}.{}", &text[..int_len], &text[int_len..])
    }
}

/// `JSON.stringify(value)` (compact), numbers written as JavaScript writes them.
pub fn stringify(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => out.push_str(&if f.is_finite() { number(f) } else { "null".to_owned() }),
            _ => out.push_str(&n.to_string()),
        },
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_json(v, out);
            }
            out.push('}');
        }
        // Strings, booleans and null are written as JSON writes them.
        other => out.push_str(&other.to_string()),
    }
}

/// `String(value)`: strings as they are, numbers as [`number`], `null` as "null", arrays as
/// their items joined by commas (null items empty), objects as "[object Object]".
pub fn string_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), number),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_owned(),
        Value::Array(items) => items
            .iter()
            .map(|v| if v.is_null() { String::new() } else { string_of(v) })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_owned(),
    }
}

/// `parseFloat(s)`: the longest decimal prefix after leading white space (`"1,234"` → 1,
/// `"12px"` → 12, `"-Infinity"` → -∞); `None` where JavaScript gives NaN.
pub fn parse_float(s: &str) -> Option<f64> {
    let s = s.trim_start_matches(is_whitespace);
    let bytes = s.as_bytes();
    let mut end = usize::from(matches!(bytes.first(), Some(b'+' | b'-')));
    if s[end..].starts_with("Infinity") {
        return Some(if s.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    let digits = |from: usize| bytes[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let int_digits = digits(end);
    end += int_digits;
    let mut frac_digits = 0;
    if bytes.get(end) == Some(&b'.') {
        frac_digits = digits(end + 1);
        if int_digits + frac_digits > 0 {
            end += 1 + frac_digits;
        }
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
        let exp_digits = digits(end + 1 + sign);
        if exp_digits > 0 {
            end += 1 + sign + exp_digits;
        }
    }
    s[..end].parse::<f64>().ok()
}

/// JSON text a JavaScript program wrote (`JSON.stringify`), read: like serde_json, except that
/// a lone surrogate escape (`"\ud800"`, which JavaScript strings may hold and serde_json
/// refuses) reads as U+FFFD, the replacement character.
pub fn from_js_json(text: &str) -> serde_json::Result<Value> {
    serde_json::from_str(text).or_else(|e| match without_lone_surrogates(text) {
        Some(fixed) => serde_json::from_str(&fixed),
        None => Err(e),
    })
}

/// `text` with each `\uXXXX` escape of an unpaired surrogate written `\ufffd`; `None` when it
/// has none.
fn without_lone_surrogates(text: &str) -> Option<String> {
    let escape_at = |at: usize| -> Option<u32> {
        let hex = text.get(at + 2..at + 6)?;
        (text.get(at..at + 2) == Some("\\u"))
            .then(|| u32::from_str_radix(hex, 16).ok())
            .flatten()
    };
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    while i < text.len() {
        let Some(rest) = text.get(i..) else { break };
        if !rest.starts_with('\\') {
            let c = rest.chars().next()?;
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        match escape_at(i) {
            Some(0xD800..=0xDBFF) if escape_at(i + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) => {
                out.push_str(&text[i..i + 12]);
                i += 12;
            }
            Some(0xD800..=0xDFFF) => {
                out.push_str("\\ufffd");
                changed = true;
                i += 6;
            }
            _ => {
                // Any other escape: its two characters (the next one may be a quote or a backslash).
                let escaped = rest.chars().nth(1).map_or(0, char::len_utf8);
                out.push_str(&text[i..i + 1 + escaped]);
                i += 1 + escaped;
            }
        }
    }
    changed.then_some(out)
}

/// `JSON.parse(text)` as Node reads it: the value, or V8's error message (`Unexpected token
/// 'o', "not json" is not valid JSON`, `Unexpected end of JSON input`, …). Positions come from
/// serde_json's error, so a message may name a neighbouring position in rare texts.
pub fn json_parse(text: &str) -> Result<Value, String> {
    let e = match serde_json::from_str::<Value>(text) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let chars: Vec<char> = text.chars().collect();
    let at = error_index(text, e.line(), e.column());
    let message = e.to_string();
    if e.is_eof() || at >= chars.len() {
        return Err("Unexpected end of JSON input".to_owned());
    }
    if message.starts_with("trailing characters") {
        return Err(format!(
            "Unexpected non-whitespace character after JSON at position {at}"
        ));
    }
    if message.starts_with("key must be a string") {
        return Err(format!("Expected property name or '}}' in JSON at position {at}"));
    }
    if message.starts_with("control character") {
        return Err(format!(
            "Bad control character in string literal in JSON at position {at}"
        ));
    }
    let shown: String = if chars.len() <= 40 {
        format!("\"{text}\"")
    } else {
        let from = at.saturating_sub(10);
        let to = (at + 10).min(chars.len());
        let before = if from > 0 { "..." } else { "" };
        let after = if to < chars.len() { "..." } else { "" };
        format!("{before}\"{}\"{after}", chars[from..to].iter().collect::<String>())
    };
    Err(format!("Unexpected token '{}', {shown} is not valid JSON", chars[at]))
}

/// The character index serde_json's (1-based line, column) error points at.
fn error_index(text: &str, line: usize, column: usize) -> usize {
    let mut index = 0;
    for (n, l) in text.split('\n').enumerate() {
        if n + 1 == line {
            return index + column.saturating_sub(1).min(l.chars().count());
        }
        index += l.chars().count() + 1;
    }
    index
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_from_javascript_reads_lone_surrogates_as_replacement_characters() {
        for (text, want) in [
            (r#"{"reason": "\ud800"}"#, serde_json::json!({"reason": "\u{fffd}"})),
            (
                r#"{"reason": "a\udc00b\ud83d"}"#,
                serde_json::json!({"reason": "a\u{fffd}b\u{fffd}"}),
            ),
            (
                r#"{"reason": "\ud83d\ude00 ok"}"#,
                serde_json::json!({"reason": "\u{1f600} ok"}),
            ),
            (
                r#"{"reason": "\\ud800 is text"}"#,
                serde_json::json!({"reason": "\\ud800 is text"}),
            ),
            (
                r#"{"reason": "é \" \ud800"}"#,
                serde_json::json!({"reason": "é \" \u{fffd}"}),
            ),
        ] {
            assert_eq!(super::from_js_json(text).ok(), Some(want), "{text}");
        }
        assert!(super::from_js_json("{not json").is_err());
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        let cases = [
            (0.0, "0"),
            (-0.0, "0"),
            (1234.0, "1234"),
            (1234.5, "1234.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (123456789012345680000.0, "123456789012345680000"),
            (0.000001, "0.000001"),
            (0.0000001, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (-42.5, "-42.5"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
        ];
        for (n, want) in cases {
            assert_eq!(number(n), want, "{n:e}");
        }
    }

    #[test]
    fn to_fixed_rounds_ties_away_from_zero_on_the_exact_value() {
        let cases = [
            (0.125, 2, "0.13"),
            (0.375, 2, "0.38"),
            (1.005, 2, "1.00"), // 1.00499999999999989…
            (0.045, 2, "0.04"), // 0.04499999999999999…
            (2.5, 0, "3"),
            (0.0, 4, "0.0000"),
            (0.0123, 4, "0.0123"),
            (9.99995, 4, "10.0000"),
            (-0.001, 2, "-0.00"),
            (1e21, 2, "1e+21"),
            (0.3, 2, "0.30"),
        ];
        for (n, digits, want) in cases {
            assert_eq!(to_fixed(n, digits), want, "{n}.toFixed({digits})");
        }
    }

    #[test]
    fn parse_float_reads_the_longest_decimal_prefix() {
        let cases = [
            ("1,234", Some(1.0)),
            ("  42.5kg", Some(42.5)),
            ("\u{feff}7", Some(7.0)),
            (".5", Some(0.5)),
            ("5.", Some(5.0)),
            ("-1.5e3x", Some(-1500.0)),
            ("1e", Some(1.0)),
            ("1e+", Some(1.0)),
            ("0x10", Some(0.0)),
            ("-Infinity", Some(f64::NEG_INFINITY)),
            ("abc", None),
            (".", None),
            ("-", None),
            ("", None),
            ("$12", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_float(s), want, "{s:?}");
        }
    }

    #[test]
    fn trim_uses_javascript_white_space() {
        assert_eq!(trim("\u{feff} a \u{3000}"), "a");
        assert_eq!(trim("\u{85}a"), "\u{85}a", "NEL is not JavaScript white space");
    }

    #[test]
    fn string_and_stringify_follow_javascript() {
        assert_eq!(string_of(&json!("x")), "x");
        assert_eq!(string_of(&json!(5.0)), "5");
        assert_eq!(string_of(&json!([1, null, "a"])), "1,,a");
        assert_eq!(string_of(&json!({"a": 1})), "[object Object]");
        assert_eq!(
            stringify(&json!({"b": [1.0, 2.5, "é\n"], "a": null})),
            r#"{"a":null,"b":[1,2.5,"é\n"]}"#
        );
    }
}
