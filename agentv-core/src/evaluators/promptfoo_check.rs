//! What the promptfoo assertion types share (`docs/promptfoo.md#assertions`): the grading
//! result promptfoo computes (pass, score, reason), the `not-` inversion each type applies
//! itself, and the `threshold` and `value` keys.
//!
//! promptfoo has no generic inversion: every assertion type is given `inverse` and decides
//! what it means (a BLEU score becomes `1 − score`, `perplexity` without a threshold passes
//! either way, `is-valid-openai-tools-call` ignores it). The graders here take it at parse
//! time and compute promptfoo's result directly, so a `not-` entry must not be negated again.

use super::{Grade, GradeVerdict, ParseContext};
use crate::config::{Fields, Key, Kind, NumberRange, describe};
use crate::model::Assertion;

/// The reason promptfoo gives every passing check that has nothing more to say.
pub const PASSED: &str = "Assertion passed";

/// The `threshold` key of a metric assertion.
pub const THRESHOLD: Key = Key::new(
    "threshold",
    Kind::Number(NumberRange::NON_NEGATIVE),
    "The score (or distance) the answer must reach; see the type for its direction and default.",
);

/// One assertion's result, as promptfoo computes it.
#[derive(Debug, Clone, PartialEq)]
pub struct PfResult {
    pub pass: bool,
    pub score: f64,
    pub reason: String,
}

impl PfResult {
    /// A check scored 1 when it passes and 0 when it fails, the reason `Assertion passed` when
    /// it passes and `failed` otherwise: how most promptfoo types report.
    pub fn check(pass: bool, failed: impl FnOnce() -> String) -> Self {
        Self {
            pass,
            score: if pass { 1.0 } else { 0.0 },
            reason: if pass { PASSED.to_owned() } else { failed() },
        }
    }

    /// The grade agentv records: promptfoo's score (not clamped: promptfoo keeps it), its
    /// pass as the verdict, and its reason as the one assertion and the reasoning.
    pub fn grade(self) -> Grade {
        let verdict = if self.pass {
            GradeVerdict::Pass
        } else {
            GradeVerdict::Fail
        };
        Grade {
            reasoning: Some(self.reason.clone()),
            ..Grade::assessed(self.score, vec![Assertion::new(self.reason, self.pass)])
        }
        .with_verdict(verdict)
    }
}

/// promptfoo threw where agentv grades: the row is an error in promptfoo, a grader that could
/// not grade here (`docs/promptfoo.md#errors`).
pub fn thrown(message: impl Into<String>) -> Grade {
    Grade::failed(message)
}

/// Whether the entry being parsed was written `not-<type>`; taking it makes this grader
/// invert its own check (with promptfoo's wording), so the list parser does not negate it again.
pub fn inverse(cx: &mut ParseContext<'_>) -> bool {
    cx.take_inverse()
}

/// Reads `threshold` when present; `Err(())` after reporting a bad value.
pub fn threshold(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Result<Option<f64>, ()> {
    super::metric_check::optional_number(f, "threshold", cx)
}

/// Reads `value` as one string or a list of strings (the references of `bleu` and `gleu`).
pub fn value_texts(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Vec<String>> {
    let what = f.what().to_owned();
    let Some(node) = f.take("value").filter(|n| !n.is_null()) else {
        cx.drop_grader(
            f.pos,
            format!("{what} is missing the required key `value`"),
            Some("add `value: <reference text>` (or a list of them)".to_owned()),
        );
        return None;
    };
    if let Some(s) = node.as_str() {
        return Some(vec![s.to_owned()]);
    }
    if let Some(items) = node.as_seq()
        && let Some(texts) = items
            .iter()
            .map(|i| i.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
    {
        return Some(texts);
    }
    cx.drop_grader(
        node.pos,
        format!(
            "`value` of {what} must be a string or a list of strings, found {}",
            describe(node)
        ),
        Some("quote it: value: \"...\"".to_owned()),
    );
    None
}

/// Reads `value` as one string.
pub fn value_text(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<String> {
    let what = f.what().to_owned();
    let Some(node) = f.take("value").filter(|n| !n.is_null()) else {
        cx.drop_grader(
            f.pos,
            format!("{what} is missing the required key `value`"),
            Some("add `value: <text>`".to_owned()),
        );
        return None;
    };
    match node.as_str() {
        Some(s) => Some(s.to_owned()),
        None => {
            cx.drop_grader(
                node.pos,
                format!("`value` of {what} must be a string, found {}", describe(node)),
                Some("quote it: value: \"...\"".to_owned()),
            );
            None
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Runs the cases of `compat/promptfoo-assertions/expected.json` (inputs and the results
    //! promptfoo 0.121.20 computed for them, written by `oracle.mjs` there) through agentv's
    //! graders.

    use std::path::Path;
    use std::sync::Arc;

    use serde_json::Value;

    use crate::config::node::parse_yaml;
    use crate::config::{Diagnostics, Fields};
    use crate::evaluators::testkit::{Answered, FakeProvider};
    use crate::evaluators::{Grade, GradeVerdict, Grader, GraderEntry, ParseContext};
    use crate::paths::Workspace;

    /// Reasons that end with a parser's own message (saxes's `line:column: what`,
    /// node-sql-parser's): agentv's parsers word it differently, so only what comes before it
    /// is compared.
    fn library_prefix(reason: &str) -> Option<&'static str> {
        const XML: &str = "XML parsing failed: ";
        const SQL: &str = "SQL statement does not conform";
        if reason
            .strip_prefix(XML)
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        {
            return Some(XML);
        }
        reason.starts_with(SQL).then_some(SQL)
    }

    const EXPECTED: &str = include_str!("../../../compat/promptfoo-assertions/expected.json");

    /// Every case whose type (without `not-`) is `base`: (case, what promptfoo gave).
    fn cases(base: &str) -> Vec<Value> {
        let all: Vec<Value> = serde_json::from_str(EXPECTED).expect("expected.json");
        all.into_iter()
            .filter(|c| {
                let t = c["assert"]["type"].as_str().unwrap_or_default();
                t.strip_prefix("not-").unwrap_or(t) == base
            })
            .collect()
    }

    /// Parses the case's assertion with its entry, as the list parser would for the type as
    /// written (`not-` included).
    fn parse(assert: &Value, entry: Option<&'static GraderEntry>) -> Result<Arc<dyn Grader>, Vec<String>> {
        let written = assert["type"].as_str().unwrap_or_default();
        let base = written.strip_prefix("not-").unwrap_or(written);
        let entry = entry
            .or_else(|| crate::evaluators::promptfoo::entry(base))
            .ok_or_else(|| vec![format!("unknown type {base}")])?;
        let mut own = assert.clone();
        if let Some(map) = own.as_object_mut() {
            map.remove("type");
        }
        let node = parse_yaml(&serde_json::to_string(&own).expect("json")).expect("yaml");
        let dir = std::env::temp_dir();
        let ws = Workspace::from_cwd(dir.clone());
        let mut diags = Diagnostics::new(Path::new("e.yaml"));
        let mut fields = Fields::of(&node, entry.keys, &mut diags).expect("a mapping");
        let mut cx = ParseContext::new(&ws, &dir, &mut diags);
        cx.current = Some(written.to_owned());
        cx.inverse = written.starts_with("not-");
        let grader = (entry.parse)(&mut fields, &mut cx);
        let errors = cx.diags.error_count() > 0;
        let shown: Vec<String> = diags.into_vec().iter().map(ToString::to_string).collect();
        match grader {
            Some(g) if !errors => Ok(g),
            _ => Err(shown),
        }
    }

    /// Grades the case the way a run would: the answer (text, or the tool calls of an
    /// assistant message), the provider's finish reason, log probabilities, cost, latency.
    async fn grade(case: &Value, grader: &Arc<dyn Grader>) -> Grade {
        let output = &case["output"];
        let text = match output {
            Value::String(s) => s.clone(),
            other => crate::evaluators::js::stringify(other),
        };
        let mut answered = Answered::new("q", "", &text, FakeProvider::llm(&["unused"]));
        answered.set_response_facts(&case["response"], case.get("latency_ms").and_then(Value::as_f64));
        if let Some(config) = case.get("provider_config") {
            answered.set_target_provider(FakeProvider::configured(config.clone()));
        }
        let calls = match output {
            Value::Array(calls) => Some(calls),
            Value::Object(o) => o.get("tool_calls").and_then(Value::as_array),
            _ => None,
        };
        match calls {
            Some(calls) if !calls.is_empty() => {
                let message = &mut answered.messages[0];
                message.content = output.get("content").cloned();
                message.tool_calls = calls.iter().map(tool_call).collect();
            }
            _ if !output.is_string() => answered.messages[0].content = Some(output.clone()),
            _ => {}
        }
        grader.grade(&answered.context()).await
    }

    /// An OpenAI tool call as agentv keeps it: the name, and the arguments text as sent.
    fn tool_call(call: &Value) -> crate::model::ToolCall {
        crate::model::ToolCall {
            tool: call["function"]["name"].as_str().unwrap_or_default().to_owned(),
            input: call["function"].get("arguments").cloned(),
            id: call.get("id").and_then(Value::as_str).map(str::to_owned),
            ..crate::model::ToolCall::default()
        }
    }

    /// Checks agentv's grade of every `base` case against promptfoo's result: pass, score
    /// (within 1e-12), reason; where promptfoo threw, a grader error (or a load error).
    pub fn agrees_with_promptfoo(base: &str) {
        check(base, None);
    }

    /// [`agrees_with_promptfoo`] with `entry` parsing the cases.
    pub fn agrees_with_promptfoo_as(base: &str, entry: &'static GraderEntry) {
        check(base, Some(entry));
    }

    fn check(base: &str, entry: Option<&'static GraderEntry>) {
        let cases = cases(base);
        assert!(!cases.is_empty(), "no promptfoo cases for {base}");
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        for case in &cases {
            let want = &case["expected"];
            let label = format!(
                "{} {} on {}",
                case["assert"],
                case.get("response").unwrap_or(&Value::Null),
                case["output"]
            );
            let grader = match parse(&case["assert"], entry) {
                Ok(g) => g,
                Err(problems) => {
                    assert!(want.get("error").is_some(), "{label}: does not load: {problems:?}");
                    continue;
                }
            };
            let got = runtime.block_on(grade(case, &grader));
            if let Some(error) = want.get("error") {
                assert!(
                    got.error.is_some(),
                    "{label}: promptfoo threw {error}, agentv gave {got:?}"
                );
                continue;
            }
            let pass = want["pass"].as_bool().expect("pass");
            let score = want["score"].as_f64().expect("score");
            let reason = want["reason"].as_str().expect("reason");
            assert_eq!(got.error, None, "{label}");
            assert_eq!(
                got.verdict,
                Some(if pass { GradeVerdict::Pass } else { GradeVerdict::Fail }),
                "{label}"
            );
            assert!(
                (got.score - score).abs() <= 1e-12 * score.abs().max(1.0),
                "{label}: score {} != {score}",
                got.score
            );
            let got_reason = got.reasoning.as_deref().unwrap_or_default();
            match library_prefix(reason) {
                Some(prefix) => assert!(got_reason.starts_with(prefix), "{label}: {got_reason:?} for {reason:?}"),
                None => assert_eq!(got_reason, reason, "{label}"),
            }
        }
    }
}
