//! promptfoo's `is-json` and `contains-json`: the whole answer is JSON (`JSON.parse`), or the
//! answer holds a JSON object (found as promptfoo finds them: each `{` read up to its balancing
//! `}`, leniently, as YAML flow text); either optionally conforming to the JSON Schema in
//! `value` (inline, YAML/JSON text, or `file://`) (`docs/promptfoo.md#is-json`).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::promptfoo_check::{self, PfResult};
use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&CONTAINS_JSON];

/// promptfoo's `is-json` (agentv's own `is-json` has no schema and other wording).
pub(crate) static IS_JSON: GraderEntry = GraderEntry {
    name: "is-json",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["is-json"],
    },
    doc: "Passes when the whole answer is JSON, conforming to the JSON Schema in `value` when given.",
    keys: &IS_KEYS,
    parse: parse_is,
};

pub(crate) static CONTAINS_JSON: GraderEntry = GraderEntry {
    name: "contains-json",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["contains-json"],
    },
    doc: "Passes when the answer holds a JSON object, one conforming to the JSON Schema in `value` when given.",
    keys: &CONTAINS_KEYS,
    parse: parse_contains,
};

const OWN: &[Key] = &[Key::new(
    "value",
    Kind::Any,
    "A JSON Schema the JSON must conform to: inline, as YAML or JSON text, or `file://<path>`.",
)];
const IS_KEYS: KeyTable = KeyTable::new("is-json", "A JSON check, with an optional schema.", &[OWN]);
const CONTAINS_KEYS: KeyTable = KeyTable::new("contains-json", "A check for JSON inside the answer.", &[OWN]);

fn parse_is(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    parse(f, cx, Scope::Whole)
}

fn parse_contains(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    parse(f, cx, Scope::Inside)
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>, scope: Scope) -> Option<Arc<dyn Grader>> {
    let schema = match f.take("value").filter(|n| !n.is_null()) {
        Some(node) => Some(super::ajv::read_schema(node, cx)?),
        None => None,
    };
    Some(Arc::new(JsonOutput {
        scope,
        schema: schema.map(Arc::new),
        inverse: promptfoo_check::inverse(cx),
    }))
}

/// Where the JSON must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `is-json`: the whole answer.
    Whole,
    /// `contains-json`: an object somewhere in it.
    Inside,
}

/// An `is-json` or `contains-json` check as configured.
#[derive(Debug, Clone)]
pub struct JsonOutput {
    pub scope: Scope,
    pub schema: Option<Arc<jsonschema::Validator>>,
    pub inverse: bool,
}

impl Grader for JsonOutput {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let output = candidate(ctx);
            match self.scope {
                Scope::Whole => whole(self, &output),
                Scope::Inside => inside(self, &output),
            }
            .grade()
        })
    }
}

/// promptfoo's `is-json` result.
pub fn whole(check: &JsonOutput, output: &str) -> PfResult {
    let parsed: Option<Value> = serde_json::from_str(output).ok();
    let mut pass = parsed.is_some() != check.inverse;
    if let (Some(value), Some(schema)) = (&parsed, &check.schema) {
        let verdict = super::ajv::check(schema, value);
        pass = verdict.is_ok() != check.inverse;
        if !pass {
            return PfResult {
                pass,
                score: 0.0,
                reason: match verdict {
                    Ok(()) => "Output is JSON that conforms to the provided schema".to_owned(),
                    Err(e) => format!("JSON does not conform to the provided schema. Errors: {e}"),
                },
            };
        }
    }
    PfResult::check(pass, || "Expected output to be valid JSON".to_owned())
}

/// promptfoo's `contains-json` result: the first conforming object decides.
pub fn inside(check: &JsonOutput, output: &str) -> PfResult {
    let objects = extract_objects(output);
    let mut pass = objects.is_empty() == check.inverse;
    let mut reason = "Expected output to contain valid JSON".to_owned();
    if let Some(schema) = &check.schema {
        for object in &objects {
            let verdict = super::ajv::check(schema, object);
            pass = verdict.is_ok() != check.inverse;
            match verdict {
                Ok(()) => {
                    if check.inverse {
                        reason = "Output contains JSON conforming to the provided schema".to_owned();
                    }
                    break;
                }
                Err(e) => reason = format!("JSON does not conform to the provided schema. Errors: {e}"),
            }
        }
    }
    PfResult::check(pass, || reason)
}

/// promptfoo's `extractJsonObjects`: from each `{`, braces are counted (strings ignored) and the
/// text up to the balancing `}` (or the end, the missing braces added; at most 100,000
/// characters) read as YAML flow text with `//` comments removed; a mapping is kept and the
/// search goes on after it.
pub fn extract_objects(text: &str) -> Vec<Value> {
    const MAX: usize = 100_000;
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '{' {
            i += 1;
            continue;
        }
        let (mut open, mut close, mut j) = (1usize, 0usize, i + 1);
        let limit = (i + MAX).min(chars.len());
        let mut next = i + 1;
        while j < limit && open > close {
            match chars[j] {
                '{' => open += 1,
                '}' => close += 1,
                _ => {}
            }
            j += 1;
            if open == close || j == chars.len() || j == i + MAX {
                let mut slice: String = chars[i..j].iter().collect();
                slice.push_str(&"}".repeat(open - close));
                match read_flow(&slash_comments_to_hash(&slice)) {
                    Some(v @ (Value::Object(_) | Value::Array(_))) => {
                        found.push(v);
                        next = j;
                        break;
                    }
                    _ if open == close => break,
                    _ => {}
                }
            }
        }
        i = next;
    }
    found
}

/// The YAML reading of one candidate; `None` when it is not YAML.
fn read_flow(text: &str) -> Option<Value> {
    crate::config::node::parse_yaml(text).ok().map(|n| n.to_json())
}

/// promptfoo's `convertSlashCommentsToHash`: `//` outside quotes (and not in a `://` URL) starts
/// a `#` comment, each pair of slashes one `#`.
fn slash_comments_to_hash(text: &str) -> String {
    text.split('\n').map(line_comments).collect::<Vec<_>>().join("\n")
}

fn line_comments(line: &str) -> String {
    #[derive(PartialEq)]
    enum State {
        Normal,
        Single,
        Double,
    }
    let chars: Vec<char> = line.chars().collect();
    let escaped = |i: usize| chars[..i].iter().rev().take_while(|&&c| c == '\\').count() % 2 == 1;
    let letter = |c: Option<&char>| c.is_some_and(char::is_ascii_alphabetic);
    let mut out = String::with_capacity(line.len());
    let mut state = State::Normal;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match state {
            State::Normal if c == '\'' && !letter(i.checked_sub(1).and_then(|p| chars.get(p))) => state = State::Single,
            State::Normal if c == '"' => state = State::Double,
            State::Normal if c == '/' && chars.get(i + 1) == Some(&'/') => {
                let token_start = chars[..i].iter().rposition(|&c| super::js::is_whitespace(c)).map_or(0, |p| p + 1);
                let token: String = chars[token_start..(i + 2).min(chars.len())].iter().collect();
                if !token.contains("://") {
                    let slashes = chars[i..].iter().take_while(|&&c| c == '/').count();
                    out.push_str(&"#".repeat(slashes / 2));
                    out.extend(&chars[i + slashes..]);
                    return out;
                }
            }
            State::Single if c == '\'' && !escaped(i) && !letter(chars.get(i + 1)) => state = State::Normal,
            State::Double if c == '"' && !escaped(i) => state = State::Normal,
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::promptfoo_check::testing::{agrees_with_promptfoo, agrees_with_promptfoo_as};
    use serde_json::json;

    #[test]
    fn contains_json_agrees_with_promptfoo() {
        agrees_with_promptfoo("contains-json");
    }

    #[test]
    fn is_json_agrees_with_promptfoo() {
        agrees_with_promptfoo_as("is-json", &IS_JSON);
    }

    #[test]
    fn objects_are_found_as_promptfoo_finds_them() {
        let cases: Vec<(&str, Vec<Value>)> = vec![
            ("a {\"x\": 1} b {\"y\": [2]}", vec![json!({"x": 1}), json!({"y": [2]})]),
            ("open {\"x\": 1", vec![json!({"x": 1})]),
            ("{x: 1, // note\n y: 'two'}", vec![json!({"x": 1, "y": "two"})]),
            ("url {\"u\": \"http://a.b/c\"}", vec![json!({"u": "http://a.b/c"})]),
            ("{\"s\": \"}\"}", vec![]),
            ("no braces", vec![]),
        ];
        for (text, want) in cases {
            assert_eq!(extract_objects(text), want, "{text}");
        }
    }
}
