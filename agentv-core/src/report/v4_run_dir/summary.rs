//! The run directory's `benchmark.json` and `timing.json`: AgentV 4.x's summary of a run,
//! kept as running sums so it costs the same for ten cases or a million.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::RunInfo;
use crate::model::{DEFAULT_THRESHOLD, EvaluationRecord, ExecutionStatus};

/// Mean and population standard deviation, kept as they come (Welford).
#[derive(Debug, Clone, Copy, Default)]
struct Moments {
    n: u64,
    mean: f64,
    m2: f64,
}

impl Moments {
    fn add(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// `{mean, stddev}` rounded to three places, as AgentV writes them (0 and 0 when empty).
    fn to_json(self) -> Value {
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        if self.n == 0 {
            return json!({"mean": 0.0, "stddev": 0.0});
        }
        json!({"mean": round(self.mean), "stddev": round((self.m2 / self.n as f64).sqrt())})
    }
}

#[derive(Debug, Clone, Default)]
struct TargetSummary {
    pass_rate: Moments,
    time_seconds: Moments,
    tokens: Moments,
    tool_calls: Moments,
    any_tool_call: bool,
    cost_usd: Moments,
}

/// What `benchmark.json` and `timing.json` say, record by record.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    first_timestamp: Option<String>,
    tests: BTreeSet<String>,
    targets: BTreeMap<String, TargetSummary>,
    graders: BTreeMap<String, Moments>,
    execution_errors: usize,
    records: usize,
    input_tokens: u64,
    output_tokens: u64,
    duration_ms: f64,
}

impl RunSummary {
    pub fn add(&mut self, r: &EvaluationRecord) {
        self.records += 1;
        self.first_timestamp.get_or_insert_with(|| r.timestamp.clone());
        self.tests.insert(r.eval_id.clone());
        let metrics = r.execution_metrics.as_ref();
        let usage = metrics.and_then(|m| m.token_usage);
        let ms = metrics
            .and_then(|m| m.duration_ms)
            .filter(|d| d.is_finite() && *d >= 0.0);
        if let Some(u) = usage {
            self.input_tokens = self.input_tokens.saturating_add(u.input);
            self.output_tokens = self.output_tokens.saturating_add(u.output);
        }
        self.duration_ms += ms.unwrap_or(0.0);
        let t = self.targets.entry(r.target.clone()).or_default();
        if let Some(ms) = ms {
            t.time_seconds.add(ms / 1000.0);
        }
        if let Some(u) = usage {
            t.tokens.add(u.input.saturating_add(u.output) as f64);
        }
        let calls = r.trace_summary.as_ref().map_or(0, |s| s.tool_call_count());
        t.any_tool_call |= calls > 0;
        t.tool_calls.add(calls as f64);
        if let Some(cost) = metrics.and_then(|m| m.cost_usd) {
            t.cost_usd.add(cost);
        }
        // Quality figures leave out what could not run, as AgentV's do.
        if r.execution_status == ExecutionStatus::ExecutionError {
            self.execution_errors += 1;
            return;
        }
        t.pass_rate.add(case_pass_rate(r));
        for s in r.v4.scores.iter().flatten() {
            self.graders
                .entry(format!("{}:{}", s.name, s.kind))
                .or_default()
                .add(s.score);
        }
    }

    /// The run's `timing.json`.
    pub fn timing(&self) -> Value {
        timing_json(self.input_tokens, self.output_tokens, self.duration_ms)
    }

    /// The run's `benchmark.json` (before any record: the stub AgentV writes before dispatch).
    pub fn benchmark(&self, info: &RunInfo) -> Value {
        let mut run_summary = Map::new();
        for (name, t) in &self.targets {
            let mut entry = json!({
                "pass_rate": t.pass_rate.to_json(),
                "time_seconds": t.time_seconds.to_json(),
                "tokens": t.tokens.to_json(),
            });
            if t.any_tool_call {
                entry["tool_calls"] = t.tool_calls.to_json();
            }
            if t.cost_usd.n > 0 {
                entry["cost_usd"] = t.cost_usd.to_json();
            }
            run_summary.insert(name.clone(), entry);
        }
        let mut notes = Vec::new();
        if self.execution_errors > 0 {
            notes.push(format!(
                "{} test(s) had execution errors and are excluded from quality pass_rate",
                self.execution_errors
            ));
        }
        if self.records == 0 {
            notes.push("No results to summarize".to_owned());
        }
        let mut out = json!({
            "metadata": {
                "eval_file": info.eval_file,
                "timestamp": self.first_timestamp.clone().unwrap_or_else(|| jiff::Timestamp::now().to_string()),
                "targets": self.targets.keys().collect::<Vec<_>>(),
                "tests_run": self.tests,
                "experiment": info.experiment,
                "planned_test_count": info.planned,
            },
            "run_summary": run_summary,
            "notes": notes,
        });
        if !self.graders.is_empty() {
            let graders: Map<String, Value> = self.graders.iter().map(|(k, m)| (k.clone(), m.to_json())).collect();
            out["per_grader_summary"] = Value::Object(graders);
        }
        out
    }
}

/// A case's pass rate as AgentV's benchmark counts it: the share of its graders scoring at
/// least 0.8, or whether the case itself does when it has none.
fn case_pass_rate(r: &EvaluationRecord) -> f64 {
    let scores = r.v4.scores.as_deref().unwrap_or_default();
    if scores.is_empty() {
        return if r.score >= DEFAULT_THRESHOLD { 1.0 } else { 0.0 };
    }
    scores.iter().filter(|s| s.score >= DEFAULT_THRESHOLD).count() as f64 / scores.len() as f64
}

/// A `timing.json` body.
pub(super) fn timing_json(input: u64, output: u64, duration_ms: f64) -> Value {
    json!({
        "total_tokens": input.saturating_add(output),
        "duration_ms": duration_ms,
        "total_duration_seconds": (duration_ms / 1000.0 * 1000.0).round() / 1000.0,
        "token_usage": {"input": input, "output": output, "reasoning": 0},
    })
}
