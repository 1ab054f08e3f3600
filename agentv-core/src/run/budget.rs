//! `--budget-usd`: a run-wide spend guard. Once the cost the targets report (each record's
//! `execution_metrics.cost_usd`) adds up to the budget, no new case starts; cases already
//! running finish, and every case left is recorded as not run
//! (`docs/running.md#spend-guard`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::model::EvaluationRecord;

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

    /// Counts the cost `record` reports (a missing, negative or non-finite cost counts 0).
    pub(crate) fn add(&mut self, record: &EvaluationRecord) {
        let Some(limit) = self.limit else { return };
        let cost = record
            .execution_metrics
            .as_ref()
            .and_then(|m| m.cost_usd)
            .filter(|c| c.is_finite() && *c > 0.0)
            .unwrap_or(0.0);
        self.spent += cost;
        if self.spent >= limit {
            self.reached.store(true, Ordering::Relaxed);
        }
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

    #[test]
    fn no_budget_is_never_reached() {
        let mut s = Spending::new(None);
        s.add(&costing(Some(1e300)));
        assert!(!s.reached());
    }
}
