//! `latency` (4.x and 2.x, reference §2.10): passes when the target answered within
//! `threshold` milliseconds.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::metric_check::required_number;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind, NumberRange};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "latency",
    names: Names {
        v2: &["latency"],
        v4: &["latency"],
        promptfoo: &[],
    },
    doc: "Passes when the target's answer took at most `threshold` milliseconds.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[Key::new(
    "threshold",
    Kind::Number(NumberRange::NON_NEGATIVE),
    "The longest acceptable duration, in milliseconds.",
)
.required()];
const KEYS: KeyTable = KeyTable::new("latency", "A duration check.", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(LatencyGrader {
        threshold_ms: required_number(f, "threshold", "milliseconds", cx)?,
    }))
}

/// A `latency` check as configured.
#[derive(Debug, Clone, Copy)]
pub struct LatencyGrader {
    pub threshold_ms: f64,
}

impl Grader for LatencyGrader {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(self.threshold_ms, ctx.metrics.duration_ms) })
    }
}

/// Score 1 when `duration_ms ≤ threshold_ms`, else 0; no duration known scores 0.
pub fn grade(threshold_ms: f64, duration_ms: Option<f64>) -> Grade {
    let Some(took) = duration_ms else {
        return Grade::check(false, "No duration data available in trace");
    };
    let (took_text, max) = (super::js::number(took), super::js::number(threshold_ms));
    if took <= threshold_ms {
        Grade::check(true, format!("Duration {took_text}ms <= {max}ms threshold"))
    } else {
        Grade::check(false, format!("Duration {took_text}ms > {max}ms threshold"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::{check_grades, parse_one, problems};

    #[test]
    fn latency_passes_at_the_threshold_inclusive() {
        let cases = [
            (5000.0, Some(1200.0), true, "Duration 1200ms <= 5000ms threshold"),
            (1000.0, Some(1000.0), true, "Duration 1000ms <= 1000ms threshold"),
            (1000.0, Some(1000.5), false, "Duration 1000.5ms > 1000ms threshold"),
            (0.0, Some(0.25), false, "Duration 0.25ms > 0ms threshold"),
            (1000.0, None, false, "No duration data available in trace"),
        ];
        check_grades(cases.map(|(max, took, passed, text)| (grade(max, took), passed, text)));
    }

    #[test]
    fn latency_threshold_is_checked_at_load() {
        let (grader, shown) = parse_one("{type: latency, threshold: 5000}");
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| g.name), Some("latency".to_owned()));
        assert_eq!(
            problems("{type: latency, threshold: -1}"),
            ["e.yaml:1:30: error: `threshold` must be a number ≥ 0, found -1"]
        );
        assert_eq!(
            problems("{type: latency, threshold: fast}"),
            ["e.yaml:1:30: error: `threshold` must be a number ≥ 0, found \"fast\""]
        );
        assert_eq!(problems("{type: latency}"), ["e.yaml:1:3: error: latency is missing the required key `threshold`"]);
    }
}
