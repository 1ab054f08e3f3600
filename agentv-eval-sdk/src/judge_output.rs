//! Reading what a code judge printed: the one place the result contract is parsed, used by
//! the agentv runtime and by judges that build results from JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::judge_result::{JudgeResult, ResultError};
use crate::wire::kind;

/// The result keys a judge may print. `verdict` (4.x) is read and otherwise ignored.
pub(crate) const KNOWN_KEYS: &[&str] = &[
    "score",
    "hits",
    "misses",
    "reasoning",
    "details",
    "assertions",
    "pass",
    "verdict",
];

/// One 4.x assertion, `{text, passed, evidence?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assertion {
    pub text: String,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

impl Assertion {
    /// An assertion without evidence.
    pub fn new(text: impl Into<String>, passed: bool) -> Self {
        Self {
            text: text.into(),
            passed,
            evidence: None,
        }
    }

    /// The same assertion with `evidence`.
    pub fn with_evidence(self, evidence: impl Into<String>) -> Self {
        Self {
            evidence: Some(evidence.into()),
            ..self
        }
    }
}

/// Why a judge's stdout is not a result.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Not exactly one JSON document (no JSON, two documents, NaN, …).
    #[error("printed no valid JSON object on stdout: {0}")]
    NotJson(serde_json::Error),
    #[error("output must be a JSON object, got {0}")]
    NotObject(&'static str),
    /// An object that breaks the result rules (see [`ResultError`]).
    #[error(transparent)]
    Invalid(#[from] ResultError),
}

/// A judge's result as printed, in either generation's shape, normalised to a
/// [`JudgeResult`]:
///
/// - 2.x: `{score, hits?, misses?, reasoning?, details?}`;
/// - 4.x: `{score?, assertions: [{text, passed, evidence?}], verdict?, details?}`: passed
///   assertions become hits and the others misses, in order (after any `hits`/`misses`); the
///   score defaults to passed / total; the assertions themselves, with their evidence, stay in
///   [`assertions`](Self::assertions);
/// - `{pass: true|false}` (4.x `defineAssertion`): score 1 or 0.
///
/// The score must be a finite number in [0, 1] (`docs/architecture.md#scoring`), `details` an
/// object, `hits` and `misses` lists of strings. Unknown keys are listed, not rejected: agentv
/// ignores them, [`JudgeResult::from_value`] refuses them.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeOutput {
    pub result: JudgeResult,
    /// The 4.x assertions as printed (empty for a 2.x result).
    pub assertions: Vec<Assertion>,
    /// The 4.x `verdict`, when a string.
    pub verdict: Option<String>,
    /// Keys that are not part of the contract, in the order printed.
    pub unknown_keys: Vec<String>,
}

impl JudgeOutput {
    /// Reads a judge's stdout: exactly one JSON object, surrounding whitespace (and a UTF-8
    /// byte-order mark, which some runtimes print first) allowed.
    pub fn parse(stdout: &str) -> Result<Self, OutputError> {
        let text = stdout.trim_start_matches('\u{feff}').trim();
        match serde_json::from_str::<Value>(text).map_err(OutputError::NotJson)? {
            Value::Object(map) => Ok(Self::from_object(map)?),
            other => Err(OutputError::NotObject(kind(&other))),
        }
    }

    /// Reads a result object.
    pub fn from_object(mut map: Map<String, Value>) -> Result<Self, ResultError> {
        let unknown_keys = map
            .keys()
            .filter(|k| !KNOWN_KEYS.contains(&k.as_str()))
            .cloned()
            .collect();
        let mut take = |key: &str| map.remove(key).filter(|v| !v.is_null());
        let mut hits = strings("hits", take("hits"))?;
        let mut misses = strings("misses", take("misses"))?;
        let mut score = take("score").map(|v| score_of(&v)).transpose()?;
        let assertions = match take("assertions") {
            None => Vec::new(),
            Some(list) => assertions(list)?,
        };
        if score.is_none() && !assertions.is_empty() {
            let passed = assertions.iter().filter(|a| a.passed).count();
            score = Some(passed as f64 / assertions.len() as f64);
        }
        for a in &assertions {
            if a.passed { &mut hits } else { &mut misses }.push(a.text.clone());
        }
        let pass = map.remove("pass");
        if score.is_none()
            && let Some(pass) = pass
        {
            score = match pass {
                Value::Bool(passed) => Some(if passed { 1.0 } else { 0.0 }),
                other => {
                    return Err(ResultError::Shape(format!(
                        "pass must be a boolean, got {}",
                        kind(&other)
                    )));
                }
            };
        }
        let reasoning = match map.remove("reasoning").filter(|v| !v.is_null()) {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                return Err(ResultError::Shape(format!(
                    "reasoning must be a string, got {}",
                    kind(&other)
                )));
            }
        };
        let details = match map.remove("details").filter(|v| !v.is_null()) {
            None => None,
            Some(Value::Object(d)) => Some(d),
            Some(other) => return Err(ResultError::DetailsNotObject(kind(&other))),
        };
        let verdict = map.remove("verdict").and_then(|v| v.as_str().map(str::to_owned));
        let score = score.ok_or(ResultError::MissingScore)?;
        Ok(Self {
            result: JudgeResult::from_checked_parts(score, hits, misses, reasoning, details)?,
            assertions,
            verdict,
            unknown_keys,
        })
    }
}

fn score_of(value: &Value) -> Result<f64, ResultError> {
    match value {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| ResultError::NotANumber(format!("a number: {n}"))),
        other => Err(ResultError::NotANumber(format!("{}: {other}", kind(other)))),
    }
}

fn strings(name: &str, value: Option<Value>) -> Result<Vec<String>, ResultError> {
    let items = match value {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(ResultError::Shape(format!(
                "{name} must be a list of strings, got {}",
                kind(&other)
            )));
        }
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(s),
            other => Err(ResultError::Shape(format!(
                "{name}[{i}] must be a string, got {}",
                kind(&other)
            ))),
        })
        .collect()
}

fn assertions(value: Value) -> Result<Vec<Assertion>, ResultError> {
    let Value::Array(items) = value else {
        return Err(ResultError::Shape(format!(
            "assertions must be a list, got {}",
            kind(&value)
        )));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let mut fields = match item {
                Value::Object(fields) => fields,
                _ => return Err(not_an_assertion(i)),
            };
            let Some(Value::String(text)) = fields.remove("text") else {
                return Err(not_an_assertion(i));
            };
            Ok(Assertion {
                text,
                passed: fields.get("passed").is_some_and(truthy),
                evidence: fields.remove("evidence").and_then(|e| e.as_str().map(str::to_owned)),
            })
        })
        .collect()
}

fn not_an_assertion(i: usize) -> ResultError {
    ResultError::Shape(format!("assertions[{i}] must be an object with a string `text`"))
}

/// `passed` as 4.x coerces it: `true`, a non-zero number, a non-empty string or list.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: Value) -> Result<JudgeOutput, ResultError> {
        JudgeOutput::from_object(value.as_object().cloned().expect("an object"))
    }

    fn wire(value: Value) -> Value {
        serde_json::to_value(read(value).expect("valid").result).expect("serializes")
    }

    #[test]
    fn both_generations_normalise_to_one_result() {
        let cases = [
            (json!({"score": 1}), json!({"score": 1.0})),
            (
                json!({"score": 0.5, "hits": [], "misses": [], "reasoning": null, "details": null}),
                json!({"score": 0.5}),
            ),
            (
                json!({"assertions": [{"text": "has title", "passed": true}, {"text": "has date", "passed": false, "evidence": "none"},
                                      {"text": "has body", "passed": true}, {"text": "short", "passed": true}]}),
                json!({"score": 0.75, "hits": ["has title", "has body", "short"], "misses": ["has date"]}),
            ),
            (
                json!({"score": 0.1, "assertions": [{"text": "a", "passed": true}], "verdict": "fail"}),
                json!({"score": 0.1, "hits": ["a"]}),
            ),
            (json!({"pass": true}), json!({"score": 1.0})),
            (
                json!({"pass": false, "reasoning": "no"}),
                json!({"score": 0.0, "reasoning": "no"}),
            ),
            (
                json!({"score": 1, "hits": ["old"], "assertions": [{"text": "new", "passed": 1}, {"text": "x", "passed": ""}]}),
                json!({"score": 1.0, "hits": ["old", "new"], "misses": ["x"]}),
            ),
        ];
        for (printed, want) in cases {
            assert_eq!(wire(printed.clone()), want, "{printed}");
        }
    }

    #[test]
    fn assertions_keep_their_evidence_and_verdict() {
        let out = read(json!({"score": 0.5, "verdict": "fail", "assertions": [
            {"text": "a", "passed": true, "evidence": "line 3"}, {"text": "b", "passed": false}
        ]}))
        .expect("valid");
        assert_eq!(out.verdict.as_deref(), Some("fail"));
        assert_eq!(
            serde_json::to_value(&out.assertions).expect("serializes"),
            json!([{"text": "a", "passed": true, "evidence": "line 3"}, {"text": "b", "passed": false}])
        );
    }

    #[test]
    fn rule_breaking_results_say_what_is_wrong() {
        let cases = [
            (
                json!({"score": "0.5"}),
                "score must be a number in [0, 1], got a string: \"0.5\"",
            ),
            (
                json!({"score": true}),
                "score must be a number in [0, 1], got a boolean",
            ),
            (
                json!({"hits": ["a"]}),
                "a judge result needs a `score` (a number in [0, 1])",
            ),
            (json!({"score": 2}), "score 2 is outside [0, 1]"),
            (
                json!({"score": 1, "details": [1, 2]}),
                "details must be a JSON object, got an array",
            ),
            (
                json!({"score": 1, "hits": ["ok", 3]}),
                "hits[1] must be a string, got a number",
            ),
            (
                json!({"score": 1, "misses": "one miss"}),
                "misses must be a list of strings, got a string",
            ),
            (
                json!({"score": 1, "reasoning": ["a"]}),
                "reasoning must be a string, got an array",
            ),
            (json!({"assertions": {}}), "assertions must be a list, got an object"),
            (
                json!({"assertions": [{"passed": true}]}),
                "assertions[0] must be an object with a string `text`",
            ),
            (json!({"pass": "yes"}), "pass must be a boolean, got a string"),
        ];
        for (printed, want) in cases {
            let error = read(printed.clone()).expect_err("invalid").to_string();
            assert!(error.starts_with(want), "{printed}: {error}");
        }
    }

    #[test]
    fn unknown_keys_are_listed_not_rejected() {
        let out = read(json!({"score": 1, "hit": ["a"], "name": "x"})).expect("valid");
        assert_eq!(out.unknown_keys, ["hit", "name"]);
    }

    #[test]
    fn stdout_must_hold_exactly_one_object() {
        assert!(JudgeOutput::parse("  {\"score\": 1}\n").is_ok());
        assert!(
            JudgeOutput::parse("\u{feff}{\"score\": 1}\r\n").is_ok(),
            "a byte-order mark is not an error"
        );
        for (stdout, want) in [
            ("not json", "printed no valid JSON object on stdout"),
            (
                "{\"score\": 1}\n{\"score\": 0}",
                "printed no valid JSON object on stdout",
            ),
            ("{\"score\": NaN}", "printed no valid JSON object on stdout"),
            ("[1, 2]", "output must be a JSON object, got an array"),
            ("0.5", "output must be a JSON object, got a number"),
        ] {
            let error = JudgeOutput::parse(stdout).expect_err("not a result").to_string();
            assert!(error.starts_with(want), "{stdout}: {error}");
        }
    }
}
