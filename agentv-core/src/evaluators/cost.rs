//! `cost` (4.x and 2.x, reference §2.10): passes when the target's answer cost at most
//! `budget` US dollars: the cost the target reported, or its tokens priced
//! (`docs/running.md#cost`). An answer whose cost is unknown never passes as free.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::metric_check::{dollars, required_number};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind, NumberRange};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "cost",
    names: Names {
        v2: &["cost"],
        v4: &["cost"],
        promptfoo: &[],
    },
    doc: "Passes when the target's answer cost at most `budget` US dollars.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[Key::new(
    "budget",
    Kind::Number(NumberRange::NON_NEGATIVE),
    "The most the answer may cost, in US dollars.",
)
.required()];
const KEYS: KeyTable = KeyTable::new("cost", "A cost check.", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(Cost {
        budget_usd: required_number(f, "budget", "US dollars", cx)?,
    }))
}

/// A `cost` check as configured.
#[derive(Debug, Clone, Copy)]
pub struct Cost {
    pub budget_usd: f64,
}

impl Grader for Cost {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(self.budget_usd, ctx.metrics.cost_usd) })
    }
}

/// Score 1 when `cost_usd ≤ budget_usd`, else 0; an unknown cost (a model agentv has no price
/// for, a command that reports none) scores 0 with the spec's miss.
pub fn grade(budget_usd: f64, cost_usd: Option<f64>) -> Grade {
    let Some(cost) = cost_usd else {
        return Grade::check(false, "No cost data available in trace");
    };
    if cost <= budget_usd {
        Grade::check(true, format!("Cost {} <= {} budget", dollars(cost), dollars(budget_usd)))
    } else {
        Grade::check(false, format!("Cost {} > {} budget", dollars(cost), dollars(budget_usd)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::{check_grades, problems};

    #[test]
    fn cost_passes_within_budget_and_writes_four_decimals() {
        let cases = [
            (0.05, Some(0.0123), true, "Cost $0.0123 <= $0.0500 budget"),
            (0.05, Some(0.05), true, "Cost $0.0500 <= $0.0500 budget"),
            (0.01, Some(0.012345), false, "Cost $0.0123 > $0.0100 budget"),
            (1.0, Some(0.00005), true, "Cost $0.0001 <= $1.0000 budget"),
            (1.0, None, false, "No cost data available in trace"),
        ];
        check_grades(cases.map(|(budget, cost, passed, text)| (grade(budget, cost), passed, text)));
    }

    #[test]
    fn cost_budget_is_checked_at_load() {
        assert_eq!(problems("{type: cost}"), ["e.yaml:1:3: error: cost is missing the required key `budget`"]);
        assert_eq!(problems("{type: cost, budget: .inf}"), ["e.yaml:1:24: error: `budget` must be a number ≥ 0, found a number out of range"]);
    }
}
