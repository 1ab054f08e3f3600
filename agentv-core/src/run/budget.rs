//! `--budget-usd`: a run-wide spend guard. Once what the run spent (each record's
//! `execution_metrics.cost_usd`, and what its code judges' calls through the target proxy
//! cost) adds up to the budget, no new case starts; cases already running finish, and every
//! case left is recorded as not run (`docs/running.md#spend-guard`). A target whose cost cannot
//! be known is refused before any call: a budget that cannot count is no guard.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::model::{EvaluationRecord, ExecutionStatus};
use crate::providers::{CostBasis, ResolvedTarget};

/// Why `--budget-usd` cannot guard a run of `targets`: one message per target, or judge target
/// (LLM judges and code judges' proxy calls are spent too), whose cost cannot be known
/// (`docs/running.md#cost`). Empty when every one's can.
pub fn uncountable(targets: &[Arc<ResolvedTarget>]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for t in targets {
        let judge = (t.judge_name != t.name).then(|| {
            (
                t.judge_name.as_str(),
                t.judge.as_ref(),
                format!("judge target `{}` (of `{}`)", t.judge_name, t.name),
            )
        });
        let own = (t.name.as_str(), t.provider.as_ref(), format!("target `{}`", t.name));
        for (name, provider, what) in std::iter::once(own).chain(judge) {
            if !seen.insert(name.to_owned()) {
                continue;
            }
            if let CostBasis::Unknown(why) = provider.cost_basis() {
                out.push(format!(
                    "--budget-usd cannot count {what}, whose cost cannot be known: {why}"
                ));
            }
        }
    }
    out
}

/// The most a run may spend, in US dollars (finite, above 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub limit_usd: f64,
}

/// What a run has spent against its budget, kept on the dispatcher; the flag tells the job
/// source to stop handing out cases.
#[derive(Debug, Default)]
pub(crate) struct Spending {
    limit: Option<f64>,
    spent: f64,
    reached: Arc<AtomicBool>,
    /// Cases that ran but whose target reported no cost (a command that writes none).
    uncounted: usize,
}

impl Spending {
    pub(crate) fn new(budget: Option<Budget>) -> Self {
        Self {
            limit: budget.map(|b| b.limit_usd),
            ..Self::default()
        }
    }

    /// Raised once the budget is reached; the job source reads it before each case.
    pub(crate) fn flag(&self) -> Arc<AtomicBool> {
        self.reached.clone()
    }

    /// Counts what `record` cost: its target's answer and its code judges' proxy calls (a
    /// missing, negative or non-finite cost counts 0; a case that ran without one is noted).
    pub(crate) fn add(&mut self, record: &EvaluationRecord) {
        let Some(limit) = self.limit else { return };
        let counted = |c: Option<f64>| c.filter(|c| c.is_finite() && *c > 0.0).unwrap_or(0.0);
        let answer = record.execution_metrics.as_ref().and_then(|m| m.cost_usd);
        let ran = record.execution_status != ExecutionStatus::ExecutionError;
        if ran && answer.is_none() {
            self.uncounted += 1;
        }
        let judges: f64 = record
            .evaluator_results
            .iter()
            .flat_map(|r| {
                // Code judges' proxy calls, and promptfoo's model-graded assertions' own calls.
                ["target_proxy", "grading"]
                    .iter()
                    .filter_map(|k| r.details.as_ref()?.get(*k)?.get("cost_usd")?.as_f64())
                    .collect::<Vec<_>>()
            })
            .map(|c| counted(Some(c)))
            .sum();
        self.spent += counted(answer) + judges;
        if self.spent >= limit {
            self.reached.store(true, Ordering::Relaxed);
        }
    }

    /// A warning when cases ran whose cost the budget could not count.
    pub(crate) fn uncounted_warning(&self) -> Option<String> {
        (self.limit.is_some() && self.uncounted > 0).then(|| {
            format!(
                "{} case(s) ran without a known cost: --budget-usd counted them as $0 (an LLM API that sent no token usage cannot be priced; a command target reports cost by writing `cost_usd`; docs/running.md#cost)",
                self.uncounted
            )
        })
    }

    pub(crate) fn reached(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }

    /// The error a case not run for lack of budget carries.
    pub(crate) fn not_run_message(&self) -> String {
        format!(
            "not run: the run's reported cost reached --budget-usd {} (spent ${:.4})",
            self.limit.unwrap_or(0.0),
            self.spent
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ExecutionMetrics;

    fn costing(cost: Option<f64>) -> EvaluationRecord {
        let mut r: EvaluationRecord = serde_json::from_value(serde_json::json!({
            "timestamp": "t", "eval_id": "a", "dataset": "d", "target": "t", "attempt": 1,
            "execution_status": "ok", "score": 1.0, "verdict": "pass", "hits": [], "misses": [],
            "candidate_answer": "", "evaluator_results": []
        }))
        .expect("record");
        r.execution_metrics = Some(ExecutionMetrics {
            cost_usd: cost,
            ..ExecutionMetrics::default()
        });
        r
    }

    #[test]
    fn budget_is_reached_when_reported_costs_add_up_to_it() {
        let mut s = Spending::new(Some(Budget { limit_usd: 0.3 }));
        let flag = s.flag();
        for (cost, reached) in [
            (Some(0.1), false),
            (None, false),
            (Some(f64::NAN), false),
            (Some(-5.0), false),
            (Some(0.1), false),
            (Some(0.1), true),
        ] {
            s.add(&costing(cost));
            assert_eq!(s.reached(), reached, "after {cost:?}");
        }
        assert!(flag.load(Ordering::Relaxed));
        assert!(
            s.not_run_message().contains("--budget-usd 0.3"),
            "{}",
            s.not_run_message()
        );
    }

    /// The judges' proxy calls count toward the budget, and a case that ran with no reported
    /// cost is said to be uncounted.
    #[test]
    fn budget_counts_judge_calls_and_says_what_it_could_not_count() {
        let mut s = Spending::new(Some(Budget { limit_usd: 1.0 }));
        let mut judged = costing(Some(0.25));
        judged.evaluator_results = serde_json::from_value(serde_json::json!([
            {"name": "j", "type": "code_judge", "score": 1.0, "weight": 1.0, "verdict": "pass", "hits": [], "misses": [],
             "details": {"target_proxy": {"call_count": 2, "cost_usd": 0.5}}}
        ]))
        .expect("results");
        s.add(&judged);
        assert!(!s.reached());
        assert_eq!(s.uncounted_warning(), None);
        s.add(&costing(None));
        let warning = s.uncounted_warning().expect("one case was not counted");
        assert!(warning.starts_with("1 case(s) ran without a known cost"), "{warning}");
        s.add(&costing(Some(0.25)));
        assert!(s.reached(), "0.25 + 0.5 + 0.25 reaches 1.0");
    }

    #[test]
    fn no_budget_is_never_reached() {
        let mut s = Spending::new(None);
        s.add(&costing(Some(1e300)));
        assert!(!s.reached());
    }
}
