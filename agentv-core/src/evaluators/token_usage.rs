//! `token-usage` (4.x; 2.x `token_usage`, reference §2.10): passes when every configured
//! token limit holds. The total counts cached input tokens too (4.x does; `execution-metrics`
//! does not).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::metric_check::{counts, optional_number};
use super::{Grade, GradeContext, GradeVerdict, Grader, GraderEntry, Names, ParseContext};
use crate::model::Assertion;
use crate::config::{Fields, Key, KeyTable, Kind, NumberRange};
use crate::model::TokenUsage;

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "token-usage",
    names: Names {
        v2: &["token_usage"],
        v4: &["token-usage"],
        promptfoo: &[],
    },
    doc: "Passes when the answer's input, output and total tokens are within their limits.",
    keys: &KEYS,
    parse,
};

const LIMIT: Kind = Kind::Number(NumberRange::NON_NEGATIVE);
const OWN: &[Key] = &[
    Key::new("max_total", LIMIT, "Most tokens in all: input + output + cached.").aliases(&["maxTotal"]),
    Key::new("max_input", LIMIT, "Most input tokens.").aliases(&["maxInput"]),
    Key::new("max_output", LIMIT, "Most output tokens.").aliases(&["maxOutput"]),
];
const KEYS: KeyTable = KeyTable::new("token-usage", "Token limits (at least one).", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let limits = Limits {
        max_total: optional_number(f, "max_total", cx),
        max_input: optional_number(f, "max_input", cx),
        max_output: optional_number(f, "max_output", cx),
    };
    let limits = Limits {
        max_total: limits.max_total.ok()?,
        max_input: limits.max_input.ok()?,
        max_output: limits.max_output.ok()?,
    };
    if limits.max_total.is_none() && limits.max_input.is_none() && limits.max_output.is_none() {
        let what = f.what().to_owned();
        cx.diags.error(
            f.pos,
            format!("{what} needs at least one of `max_total`, `max_input` and `max_output`"),
            Some("add a limit, e.g. `max_total: 4000`".to_owned()),
        );
        return None;
    }
    Some(Arc::new(TokenLimits(limits)))
}

/// The configured limits.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits<T = Option<f64>> {
    pub max_total: T,
    pub max_input: T,
    pub max_output: T,
}

/// A `token-usage` check as configured.
#[derive(Debug, Clone, Copy)]
pub struct TokenLimits(pub Limits);

impl Grader for TokenLimits {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(&self.0, ctx.metrics.token_usage.as_ref()) })
    }
}

/// One assertion per configured limit (input, output, total); score 1 only when all hold.
/// No usage reported scores 0.
pub fn grade(limits: &Limits, usage: Option<&TokenUsage>) -> Grade {
    let Some(usage) = usage else {
        return Grade::check(false, "No token usage data available in trace");
    };
    let (input, output, cached) = counts(usage);
    let total = input.saturating_add(output).saturating_add(cached);
    let mut assertions = Vec::new();
    for (label, limit, actual) in [
        ("Input", limits.max_input, input),
        ("Output", limits.max_output, output),
        ("Total", limits.max_total, total),
    ] {
        if let Some(limit) = limit {
            let max = super::js::number(limit);
            let within = actual as f64 <= limit;
            let op = if within { "<=" } else { ">" };
            assertions.push(Assertion::new(format!("{label} tokens {actual} {op} {max}"), within));
        }
    }
    let passed = assertions.iter().all(|a| a.passed);
    let mut grade = if passed {
        Grade::assessed(1.0, assertions).with_verdict(GradeVerdict::Pass)
    } else {
        Grade::assessed(0.0, assertions).with_verdict(GradeVerdict::Fail)
    };
    let mut details = Map::new();
    details.insert(
        "token_usage".into(),
        json!({"input": input, "output": output, "cached": cached, "total": total}),
    );
    grade.details = Some(details);
    grade
}

impl Limits {
    /// The limits as JSON, for messages and tests.
    pub fn to_json(&self) -> Value {
        json!({"max_total": self.max_total, "max_input": self.max_input, "max_output": self.max_output})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::negate;
    use crate::evaluators::string_check::testing::{parse_one, problems};

    /// (limits, usage, score, [(assertion text, passed)]).
    type Case<'a> = (Limits, Option<TokenUsage>, f64, &'a [(&'a str, bool)]);

    fn usage(input: u64, output: u64, cached: Option<u64>) -> TokenUsage {
        TokenUsage { input, output, cached }
    }

    #[test]
    fn every_configured_limit_must_hold_and_the_total_counts_cached_tokens() {
        let all = Limits {
            max_total: Some(1000.0),
            max_input: Some(800.0),
            max_output: Some(300.0),
        };
        let total_only = Limits {
            max_total: Some(1000.0),
            ..Limits::default()
        };
        let cases: [Case<'_>; 4] = [
            (
                all,
                Some(usage(700, 200, None)),
                1.0,
                &[("Input tokens 700 <= 800", true), ("Output tokens 200 <= 300", true), ("Total tokens 900 <= 1000", true)],
            ),
            (
                all,
                Some(usage(700, 400, Some(50))),
                0.0,
                &[("Input tokens 700 <= 800", true), ("Output tokens 400 > 300", false), ("Total tokens 1150 > 1000", false)],
            ),
            // 700 + 200 + 150 cached = 1050: the cached tokens tip it over.
            (total_only, Some(usage(700, 200, Some(150))), 0.0, &[("Total tokens 1050 > 1000", false)]),
            (total_only, None, 0.0, &[("No token usage data available in trace", false)]),
        ];
        for (limits, used, score, want) in cases {
            let g = grade(&limits, used.as_ref());
            let got: Vec<(&str, bool)> = g.assertions.iter().map(|a| (a.text.as_str(), a.passed)).collect();
            assert_eq!((g.score, got.as_slice()), (score, want), "{}", limits.to_json());
            let n = negate(g.clone());
            assert_eq!(n.score, 1.0 - score);
            assert!(n.assertions.iter().zip(&g.assertions).all(|(a, b)| a.passed != b.passed && a.text == b.text));
        }
    }

    #[test]
    fn token_limits_are_checked_at_load() {
        let (grader, shown) = parse_one("{type: token_usage, maxTotal: 10}");
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| (g.type_name(), g.name)), Some(("token-usage", "token-usage".to_owned())));
        assert_eq!(
            problems("{type: token-usage}"),
            ["e.yaml:1:3: error: token-usage needs at least one of `max_total`, `max_input` and `max_output`"]
        );
        assert_eq!(
            problems("{type: token-usage, max_input: -5}"),
            ["e.yaml:1:34: error: `max_input` must be a number ≥ 0, found -5"]
        );
    }
}
