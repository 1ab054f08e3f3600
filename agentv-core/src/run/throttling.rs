//! The run's side of adaptive concurrency (`docs/running.md#rate-limits`): every LLM target's
//! (and judge's) throttle opens at `--workers` before the first case, and what each saw is
//! reported at the end.

use std::sync::Arc;

use super::Probe;
use crate::providers::{Throttle, ThrottleStats};

/// What one target's throttle saw over the run.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetThrottling {
    pub target: String,
    pub stats: ThrottleStats,
}

impl TargetThrottling {
    /// Whether the provider pushed back at all (otherwise there is nothing to tell).
    pub fn throttled(&self) -> bool {
        self.stats.rejected > 0 || self.stats.cuts > 0
    }

    /// `target `x`: 35 of 2040 requests rejected (429/503), concurrency cut 12 times, settled at
    /// 3 of 64`.
    pub fn describe(&self) -> String {
        let s = &self.stats;
        format!(
            "target `{}`: {} of {} request(s) rejected (429/503), concurrency cut {} time(s), settled at {} of {}",
            crate::report::escape_line(&self.target),
            s.rejected,
            s.sent,
            s.cuts,
            s.settled,
            s.ceiling
        )
    }
}

/// The throttles of the probed targets and their judges, each once, opened at `workers`.
pub fn open(probes: &[Probe], workers: usize) -> Vec<(String, Arc<Throttle>)> {
    let mut out: Vec<(String, Arc<Throttle>)> = Vec::new();
    for probe in probes {
        let t = &probe.target;
        for (name, provider) in [(&t.name, &t.provider), (&t.judge_name, &t.judge)] {
            if let Some(throttle) = provider.throttle()
                && !out.iter().any(|(_, seen)| Arc::ptr_eq(seen, throttle))
            {
                throttle.start(workers);
                out.push((name.clone(), throttle.clone()));
            }
        }
    }
    out
}

/// What each throttle saw, for targets that sent requests.
pub fn report(throttles: &[(String, Arc<Throttle>)]) -> Vec<TargetThrottling> {
    throttles
        .iter()
        .map(|(target, t)| TargetThrottling {
            target: target.clone(),
            stats: t.stats(),
        })
        .filter(|t| t.stats.sent > 0)
        .collect()
}
