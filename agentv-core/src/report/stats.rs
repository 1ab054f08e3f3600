//! Run statistics for the summary and `<results>.summary.json`: per target (side by side in a
//! matrix run), per grader and, when cases repeat, per case (mean and spread, pass@k and
//! pass^k, the flaky cases), with a 95 % confidence interval on each target's mean
//! (`docs/running.md#run-summary`).
//!
//! Fed one record at a time ([`RunStats::add`], or as a [`Sink`]), in any order: the same
//! records give the same statistics whatever order they come in, so a run merged from shards
//! has the statistics of the same run made on one machine. Scores and costs are summed in
//! fixed point (exact, hence order-free); the only floating-point sums run over sorted values.
//! Memory: a few numbers per record (latencies), plus a small entry per case when cases repeat.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::ci::t_quantile;
use super::sink::{Row, Sink};
use super::terminal::escape_line;
use crate::model::{EvaluationRecord, ExecutionStatus, Verdict};
use crate::redact::Secrets;

/// Scores are summed in units of 1e-9: exact for any score a judge can give.
const SCORE_UNIT: f64 = 1e9;
/// Costs are summed in units of 1e-12 dollars.
const COST_UNIT: f64 = 1e12;

/// An exact, order-independent sum of values in fixed point.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct FixedSum {
    n: u64,
    sum: i128,
    sum_sq: i128,
}

impl FixedSum {
    fn add(&mut self, value: f64, unit: f64) {
        // `as` saturates: a provider's absurd cost cannot wrap the sum.
        let v = (value * unit).round() as i128;
        self.n += 1;
        self.sum = self.sum.saturating_add(v);
        self.sum_sq = self.sum_sq.saturating_add(v.saturating_mul(v));
    }

    fn total(&self, unit: f64) -> f64 {
        self.sum as f64 / unit
    }

    fn mean(&self, unit: f64) -> Option<f64> {
        (self.n > 0).then(|| self.sum as f64 / self.n as f64 / unit)
    }

    /// Sample variance (n − 1), `None` below two values.
    fn variance(&self, unit: f64) -> Option<f64> {
        if self.n < 2 {
            return None;
        }
        let n = i128::from(self.n);
        let numerator = n
            .saturating_mul(self.sum_sq)
            .saturating_sub(self.sum.saturating_mul(self.sum));
        Some(numerator.max(0) as f64 / (n * (n - 1)) as f64 / (unit * unit))
    }
}

/// Token totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
}

impl Tokens {
    /// Adds the record's usage; false when it reports none.
    fn add(&mut self, r: &EvaluationRecord) -> bool {
        let Some(u) = r.execution_metrics.as_ref().and_then(|m| m.token_usage) else {
            return false;
        };
        self.input = self.input.saturating_add(u.input);
        self.output = self.output.saturating_add(u.output);
        self.cached = self.cached.saturating_add(u.cached.unwrap_or(0));
        true
    }

    fn plus(self, other: Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            cached: self.cached.saturating_add(other.cached),
        }
    }
}

/// Records by execution status; cases not run (`--budget-usd`) apart from execution errors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StatusCounts {
    pub ok: usize,
    pub execution_error: usize,
    pub grader_error: usize,
    pub not_run: usize,
    /// Cases not run because their definition has errors.
    pub invalid: usize,
}

impl StatusCounts {
    fn add(&mut self, r: &EvaluationRecord) {
        match r.execution_status {
            ExecutionStatus::Ok => self.ok += 1,
            ExecutionStatus::GraderError => self.grader_error += 1,
            ExecutionStatus::ExecutionError if r.is_not_run() => self.not_run += 1,
            ExecutionStatus::ExecutionError => self.execution_error += 1,
            ExecutionStatus::Invalid => self.invalid += 1,
        }
    }

    /// Every record counted.
    pub fn total(&self) -> usize {
        self.ok + self.execution_error + self.grader_error + self.not_run + self.invalid
    }

    fn plus(self, o: StatusCounts) -> StatusCounts {
        StatusCounts {
            ok: self.ok + o.ok,
            execution_error: self.execution_error + o.execution_error,
            grader_error: self.grader_error + o.grader_error,
            not_run: self.not_run + o.not_run,
            invalid: self.invalid + o.invalid,
        }
    }
}

#[derive(Debug, Clone, Default)]
struct TargetAcc {
    status: StatusCounts,
    verdicts: [usize; 3],
    scores: FixedSum,
    cost: FixedSum,
    tokens: Tokens,
    /// Records that reported their token usage.
    with_tokens: usize,
    /// `execution_metrics.duration_ms` of each record that has one.
    latencies: Vec<f64>,
}

#[derive(Debug, Clone, Default)]
struct GraderAcc {
    results: usize,
    errors: usize,
    pass: usize,
    scores: FixedSum,
}

/// One repeat of a case: its trial, and its score and verdict when graded.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Trial {
    trial: u32,
    graded: Option<(f64, Verdict)>,
}

/// Statistics of a run, built record by record.
#[derive(Debug, Clone, Default)]
pub struct RunStats {
    targets: BTreeMap<String, TargetAcc>,
    graders: BTreeMap<(String, String), GraderAcc>,
    /// Per (target, dataset, eval id), the repeats of the case: kept only for records that
    /// carry `trial` (a run with `--repeat`).
    cases: BTreeMap<(String, String, String), Vec<Trial>>,
}

impl Sink for RunStats {
    fn write(&mut self, row: &Row<'_>) -> std::io::Result<()> {
        self.add(row.record());
        Ok(())
    }

    fn describe(&self) -> String {
        "run statistics".to_owned()
    }
}

impl RunStats {
    pub fn add(&mut self, r: &EvaluationRecord) {
        let acc = self.targets.entry(r.target.clone()).or_default();
        acc.status.add(r);
        acc.with_tokens += usize::from(acc.tokens.add(r));
        if let Some(m) = &r.execution_metrics {
            if let Some(cost) = m.cost_usd.filter(|c| c.is_finite() && *c >= 0.0) {
                acc.cost.add(cost, COST_UNIT);
            }
            if let Some(ms) = m.duration_ms.filter(|d| d.is_finite() && *d >= 0.0) {
                acc.latencies.push(ms);
            }
        }
        let graded = r.execution_status == ExecutionStatus::Ok && r.score.is_finite();
        if graded {
            acc.scores.add(r.score, SCORE_UNIT);
            acc.verdicts[verdict_index(r.verdict)] += 1;
        }
        for g in &r.evaluator_results {
            let acc = self.graders.entry((g.name.clone(), g.kind.clone())).or_default();
            acc.results += 1;
            if g.error.is_some() {
                acc.errors += 1;
            } else if g.score.is_finite() {
                acc.scores.add(g.score, SCORE_UNIT);
                acc.pass += usize::from(g.verdict == Verdict::Pass);
            }
        }
        if let Some(trial) = r.trial {
            self.cases
                .entry((r.target.clone(), r.dataset.clone(), r.eval_id.clone()))
                .or_default()
                .push(Trial {
                    trial,
                    graded: graded.then_some((r.score, r.verdict)),
                });
        }
    }

    /// True before any record.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// The statistics, computed.
    pub fn compute(&self) -> StatsReport {
        let repeats = self.repeat_count();
        let targets: Vec<TargetStats> = self
            .targets
            .iter()
            .map(|(name, acc)| self.target_stats(name, acc, repeats))
            .collect();
        let graders = self
            .graders
            .iter()
            .map(|((name, kind), acc)| GraderStats {
                name: name.clone(),
                kind: kind.clone(),
                results: acc.results,
                graded: acc.results - acc.errors,
                errors: acc.errors,
                mean: acc.scores.mean(SCORE_UNIT),
                pass_rate: (acc.scores.n > 0).then(|| acc.pass as f64 / acc.scores.n as f64),
            })
            .collect();
        let mut totals = Totals::default();
        for (t, acc) in targets.iter().zip(self.targets.values()) {
            totals.records += t.records;
            totals.by_status = totals.by_status.plus(acc.status);
            totals.tokens = totals.tokens.plus(acc.tokens);
            totals.cost.sum = totals.cost.sum.saturating_add(acc.cost.sum);
            totals.cost.n = totals.cost.n.saturating_add(acc.cost.n);
        }
        let mut all_latencies: Vec<f64> = self
            .targets
            .values()
            .flat_map(|a| a.latencies.iter().copied())
            .collect();
        all_latencies.sort_by(f64::total_cmp);
        StatsReport {
            records: totals.records,
            by_status: totals.by_status,
            tokens: totals.tokens,
            cost_usd: (totals.cost.n > 0).then(|| totals.cost.total(COST_UNIT)),
            records_with_cost: usize::try_from(totals.cost.n).unwrap_or(usize::MAX),
            duration_ms: all_latencies.iter().sum(),
            repeat: (repeats > 0).then_some(repeats),
            targets,
            graders,
        }
    }

    /// The most repeats a case had (0 when cases did not repeat).
    fn repeat_count(&self) -> u32 {
        self.cases
            .values()
            .flat_map(|trials| trials.iter().map(|t| t.trial))
            .max()
            .unwrap_or(0)
    }

    fn target_stats(&self, name: &str, acc: &TargetAcc, repeats: u32) -> TargetStats {
        let mut latencies = acc.latencies.clone();
        latencies.sort_by(f64::total_cmp);
        let graded = acc.scores.n as usize;
        let [pass, borderline, fail] = acc.verdicts;
        let cases: Vec<CaseStats> = if repeats > 0 {
            self.cases
                .range((name.to_owned(), String::new(), String::new())..)
                .take_while(|((t, _, _), _)| t == name)
                .map(|((t, d, id), trials)| case_stats(t, d, id, trials))
                .collect()
        } else {
            Vec::new()
        };
        let mean_ci95 = if repeats > 0 {
            let means: Vec<f64> = cases.iter().filter_map(|c| c.mean).collect();
            ci95(&means)
        } else {
            acc.scores
                .mean(SCORE_UNIT)
                .zip(acc.scores.variance(SCORE_UNIT))
                .map(|(mean, var)| interval(mean, var, graded))
        };
        TargetStats {
            target: name.to_owned(),
            records: acc.status.total(),
            graded,
            pass,
            borderline,
            fail,
            execution_errors: acc.status.execution_error,
            grader_errors: acc.status.grader_error,
            not_run: acc.status.not_run,
            invalid: acc.status.invalid,
            mean: acc.scores.mean(SCORE_UNIT),
            mean_ci95,
            pass_rate: (graded > 0).then(|| pass as f64 / graded as f64),
            cost_usd: acc.cost.total(COST_UNIT),
            records_with_cost: usize::try_from(acc.cost.n).unwrap_or(usize::MAX),
            tokens: acc.tokens,
            records_with_tokens: acc.with_tokens,
            latency_ms: Latency::of(&latencies),
            repeats: (repeats > 0).then(|| repeat_stats(repeats, cases)),
        }
    }
}

fn verdict_index(v: Verdict) -> usize {
    match v {
        Verdict::Pass => 0,
        Verdict::Borderline => 1,
        // A skipped grader's case does not pass.
        Verdict::Fail | Verdict::Skip => 2,
    }
}

/// Everything the statistics say, ready to print or write as JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatsReport {
    /// Records counted (cases × targets × repeats that have a record).
    pub records: usize,
    pub by_status: StatusCounts,
    pub tokens: Tokens,
    /// Sum of the known costs; absent when no record's cost is known (never a made-up $0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Records whose cost is known (the others' is unknown).
    pub records_with_cost: usize,
    /// Sum of the records' `execution_metrics.duration_ms`.
    pub duration_ms: f64,
    /// Repeats per case, when the run repeated cases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// One entry per target, by name.
    pub targets: Vec<TargetStats>,
    /// One entry per grader (name and type), by name.
    pub graders: Vec<GraderStats>,
}

#[derive(Debug, Default)]
struct Totals {
    records: usize,
    by_status: StatusCounts,
    tokens: Tokens,
    cost: FixedSum,
}

/// What one target did in a run: the figures of its column in the console summary and of its
/// entry in `<results>.summary.json` (`docs/running.md#run-summary`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetStats {
    pub target: String,
    pub records: usize,
    /// Records that ran and were graded (`execution_status: ok`).
    pub graded: usize,
    pub pass: usize,
    pub borderline: usize,
    pub fail: usize,
    pub execution_errors: usize,
    pub grader_errors: usize,
    /// Records of cases not run because of `--budget-usd`.
    pub not_run: usize,
    /// Records of cases not run because their definition has errors.
    pub invalid: usize,
    /// Mean score of the graded records.
    pub mean: Option<f64>,
    /// Two-sided 95 % t interval of the mean, over cases (each case's mean across its repeats
    /// when cases repeat); `None` below two cases.
    pub mean_ci95: Option<[f64; 2]>,
    /// Share of graded records whose verdict is `pass`.
    pub pass_rate: Option<f64>,
    /// Sum of the known costs; `records_with_cost` records had one (the others' is unknown).
    pub cost_usd: f64,
    pub records_with_cost: usize,
    /// Sum of the reported token usages; `records_with_tokens` records reported one.
    pub tokens: Tokens,
    pub records_with_tokens: usize,
    /// Over the records' `execution_metrics.duration_ms`; `None` when none reports one.
    pub latency_ms: Option<Latency>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<RepeatStats>,
}

impl TargetStats {
    /// Execution and grader errors, cases not run and invalid cases.
    pub fn errors(&self) -> usize {
        self.execution_errors + self.grader_errors + self.not_run + self.invalid
    }
}

/// Latency percentiles (nearest rank).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

impl Latency {
    fn of(sorted: &[f64]) -> Option<Self> {
        let last = *sorted.last()?;
        Some(Self {
            p50: nearest_rank(sorted, 50.0),
            p95: nearest_rank(sorted, 95.0),
            max: last,
        })
    }
}

/// The `p`th percentile of `sorted` (not empty) by the nearest-rank method.
fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One grader (by name and type) across the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraderStats {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// Results it gave (one per graded record it was on).
    pub results: usize,
    /// Results without an error.
    pub graded: usize,
    pub errors: usize,
    pub mean: Option<f64>,
    pub pass_rate: Option<f64>,
}

/// A target's cases across repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatStats {
    /// Repeats per case (`--repeat`).
    pub k: u32,
    /// pass@k and pass^k for k = 1 to `k`.
    pub pass_at: Vec<PassAtK>,
    /// Cases whose graded repeats do not all have the same verdict.
    pub flaky: Vec<CaseRef>,
    /// Every case: its repeats' mean and spread.
    pub cases: Vec<CaseStats>,
}

/// pass@k (at least one of k repeats passes) and pass^k (all k pass), each the mean over the
/// cases with at least k graded repeats of the unbiased estimator from that case's n graded
/// repeats, c of them passing: pass@k = 1 − C(n−c, k) / C(n, k), pass^k = C(c, k) / C(n, k).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PassAtK {
    pub k: u32,
    /// Cases with at least k graded repeats.
    pub cases: usize,
    pub pass_at_k: Option<f64>,
    pub pass_hat_k: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseRef {
    pub dataset: String,
    pub eval_id: String,
}

/// One case (of one target) across its repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseStats {
    pub dataset: String,
    pub eval_id: String,
    /// Repeats with a record.
    pub trials: usize,
    /// Repeats that were graded.
    pub graded: usize,
    /// Graded repeats that passed.
    pub passes: usize,
    pub mean: Option<f64>,
    /// Sample standard deviation of the graded scores; `None` below two.
    pub std_dev: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Scores in trial order (`null` for a repeat that was not graded).
    pub scores: Vec<Option<f64>>,
    pub flaky: bool,
}

fn case_stats(_target: &str, dataset: &str, id: &str, trials: &[Trial]) -> CaseStats {
    let mut ordered = trials.to_vec();
    ordered.sort_by(|a, b| {
        a.trial.cmp(&b.trial).then_with(|| {
            a.graded
                .map(|g| g.0)
                .unwrap_or(-1.0)
                .total_cmp(&b.graded.map(|g| g.0).unwrap_or(-1.0))
        })
    });
    let mut scores: Vec<f64> = ordered.iter().filter_map(|t| t.graded.map(|g| g.0)).collect();
    scores.sort_by(f64::total_cmp);
    let n = scores.len();
    let mean = (n > 0).then(|| scores.iter().sum::<f64>() / n as f64);
    let std_dev = mean
        .filter(|_| n >= 2)
        .map(|m| (scores.iter().map(|s| (s - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
    let verdicts: Vec<Verdict> = ordered.iter().filter_map(|t| t.graded.map(|g| g.1)).collect();
    CaseStats {
        dataset: dataset.to_owned(),
        eval_id: id.to_owned(),
        trials: ordered.len(),
        graded: n,
        passes: verdicts.iter().filter(|v| **v == Verdict::Pass).count(),
        mean,
        std_dev,
        min: scores.first().copied(),
        max: scores.last().copied(),
        scores: ordered.iter().map(|t| t.graded.map(|g| g.0)).collect(),
        flaky: verdicts.windows(2).any(|w| w[0] != w[1]),
    }
}

fn repeat_stats(k: u32, cases: Vec<CaseStats>) -> RepeatStats {
    let pass_at = (1..=k)
        .map(|k| {
            let eligible: Vec<&CaseStats> = cases.iter().filter(|c| c.graded >= k as usize).collect();
            let mean_of = |f: fn(usize, usize, usize) -> f64| {
                (!eligible.is_empty()).then(|| {
                    eligible.iter().map(|c| f(c.graded, c.passes, k as usize)).sum::<f64>() / eligible.len() as f64
                })
            };
            PassAtK {
                k,
                cases: eligible.len(),
                pass_at_k: mean_of(pass_at_k),
                pass_hat_k: mean_of(pass_hat_k),
            }
        })
        .collect();
    RepeatStats {
        k,
        pass_at,
        flaky: cases
            .iter()
            .filter(|c| c.flaky)
            .map(|c| CaseRef {
                dataset: c.dataset.clone(),
                eval_id: c.eval_id.clone(),
            })
            .collect(),
        cases,
    }
}

/// The unbiased estimator of pass@k from `n` samples with `c` passes (Chen et al. 2021):
/// 1 − C(n−c, k)/C(n, k), as the stable product 1 − Π_{i=n−c+1..n} (1 − k/i). Requires k ≤ n.
pub fn pass_at_k(n: usize, c: usize, k: usize) -> f64 {
    if k == 0 || k > n {
        return f64::NAN;
    }
    if n - c < k {
        return 1.0;
    }
    1.0 - ((n - c + 1)..=n).map(|i| 1.0 - k as f64 / i as f64).product::<f64>()
}

/// The unbiased estimator of pass^k (all k of k tries pass) from `n` samples with `c` passes:
/// C(c, k)/C(n, k) = Π_{i=0..k} (c−i)/(n−i). Requires k ≤ n.
pub fn pass_hat_k(n: usize, c: usize, k: usize) -> f64 {
    if k == 0 || k > n {
        return f64::NAN;
    }
    if c < k {
        return 0.0;
    }
    (0..k).map(|i| (c - i) as f64 / (n - i) as f64).product()
}

/// The 95 % t interval of the mean of `values` (summed sorted, so the order they came in does
/// not matter).
fn ci95(values: &[f64]) -> Option<[f64; 2]> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mean = sorted.iter().sum::<f64>() / n as f64;
    let var = sorted.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some(interval(mean, var, n))
}

fn interval(mean: f64, variance: f64, n: usize) -> [f64; 2] {
    if n < 2 {
        return [mean, mean];
    }
    let half = t_quantile(0.975, (n - 1) as f64) * (variance / n as f64).sqrt();
    [mean - half, mean + half]
}

impl StatsReport {
    /// The repeats (when cases repeated), as the console prints them after the summary (whose
    /// own per-target table is [`super::summary::targets_table`]'s); empty otherwise. Names are
    /// redacted and escaped.
    pub fn render_repeats(&self, secrets: &Secrets) -> String {
        let mut out = String::new();
        if self.repeat.is_some() {
            self.render_repeats_into(&mut out, secrets);
        }
        out
    }

    /// The per-target table (several targets, as the console summary draws it) and the
    /// repeats, for `agentv merge`, which prints no summary of its own.
    pub fn render(&self, secrets: &Secrets) -> String {
        let mut out = String::new();
        if self.targets.len() > 1 {
            out.push_str(&super::summary::targets_table(&self.targets, secrets));
            out.push('\n');
        }
        if self.repeat.is_some() {
            self.render_repeats_into(&mut out, secrets);
        }
        out
    }

    fn render_repeats_into(&self, out: &mut String, secrets: &Secrets) {
        let k = self.repeat.unwrap_or(1);
        let _ = writeln!(out, "REPEATS ({k} per case)");
        let mut rows = vec![vec![
            "target".to_owned(),
            "pass@1".to_owned(),
            format!("pass@{k}"),
            format!("pass^{k}"),
            "flaky".to_owned(),
        ]];
        for t in &self.targets {
            let Some(r) = &t.repeats else { continue };
            let at = |k: u32| r.pass_at.iter().find(|p| p.k == k);
            rows.push(vec![
                shown(secrets, &t.target),
                opt(at(1).and_then(|p| p.pass_at_k), |v| format!("{v:.3}")),
                opt(at(k).and_then(|p| p.pass_at_k), |v| format!("{v:.3}")),
                opt(at(k).and_then(|p| p.pass_hat_k), |v| format!("{v:.3}")),
                r.flaky.len().to_string(),
            ]);
        }
        table(out, &rows);
        for t in &self.targets {
            let Some(r) = &t.repeats else { continue };
            for c in r.cases.iter().filter(|c| c.flaky).take(20) {
                let scores: Vec<String> = c.scores.iter().map(|s| opt(*s, |v| format!("{v:.2}"))).collect();
                let _ = writeln!(
                    out,
                    "  flaky: {} {}/{}: {} (mean {})",
                    shown(secrets, &t.target),
                    shown(secrets, &c.dataset),
                    shown(secrets, &c.eval_id),
                    scores.join(", "),
                    opt(c.mean, |m| format!("{m:.3}"))
                );
            }
        }
        out.push('\n');
    }
}

fn opt<T>(value: Option<T>, f: impl Fn(T) -> String) -> String {
    value.map_or_else(|| "-".to_owned(), f)
}

fn shown(secrets: &Secrets, text: &str) -> String {
    escape_line(&secrets.redact(text)).into_owned()
}

/// Left-aligned columns, two spaces apart, indented by two.
fn table(out: &mut String, rows: &[Vec<String>]) {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}", w = *w))
            .collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn record(target: &str, id: &str, trial: Option<u32>, score: f64, status: &str) -> EvaluationRecord {
        let mut r: EvaluationRecord = serde_json::from_value(json!({
            "timestamp": "t", "eval_id": id, "dataset": "d", "target": target, "attempt": 1,
            "execution_status": status, "score": score, "verdict": Verdict::from_score(score),
            "hits": [], "misses": [], "candidate_answer": "",
            "evaluator_results": [{"name": "kw", "type": "keywords", "score": score, "weight": 1.0,
                                   "verdict": Verdict::from_score(score), "hits": [], "misses": []}],
            "execution_metrics": {"cost_usd": 0.1, "duration_ms": score * 1000.0,
                                  "token_usage": {"input": 10, "output": 5}}
        }))
        .expect("record");
        r.trial = trial;
        r
    }

    #[test]
    fn an_unknown_cost_is_absent_from_the_totals_never_zero() {
        let mut s = RunStats::default();
        let mut r = record("a", "c1", None, 1.0, "ok");
        if let Some(m) = r.execution_metrics.as_mut() {
            m.cost_usd = None;
        }
        s.add(&r);
        let report = s.compute();
        assert_eq!((report.cost_usd, report.records_with_cost), (None, 0));
        let json = serde_json::to_value(&report).expect("json");
        assert!(json.get("cost_usd").is_none(), "{json}");
        s.add(&record("a", "c2", None, 1.0, "ok"));
        let report = s.compute();
        assert_eq!(report.records_with_cost, 1);
        assert!(report.cost_usd.is_some_and(|c| (c - 0.1).abs() < 1e-12));
    }

    #[test]
    fn targets_are_counted_side_by_side() {
        let mut s = RunStats::default();
        for (target, id, score, status) in [
            ("a", "c1", 1.0, "ok"),
            ("a", "c2", 0.5, "ok"),
            ("b", "c1", 0.9, "ok"),
            ("b", "c2", 0.0, "execution_error"),
        ] {
            s.add(&record(target, id, None, score, status));
        }
        let mut not_run = record("b", "c3", None, 0.0, "execution_error");
        not_run.failure_reason_code = Some(agentv_eval_sdk::NOT_RUN_BUDGET.into());
        not_run.execution_metrics = None;
        not_run.evaluator_results.clear();
        s.add(&not_run);
        let r = s.compute();
        assert_eq!(r.records, 5);
        assert_eq!(
            r.by_status,
            StatusCounts {
                ok: 3,
                execution_error: 1,
                grader_error: 0,
                not_run: 1,
                invalid: 0
            }
        );
        let [a, b] = [&r.targets[0], &r.targets[1]];
        assert_eq!(
            (a.target.as_str(), a.graded, a.mean, a.pass_rate),
            ("a", 2, Some(0.75), Some(0.5))
        );
        assert_eq!((b.graded, b.execution_errors, b.not_run, b.errors()), (1, 1, 1, 2));
        assert!((a.cost_usd - 0.2).abs() < 1e-12);
        assert!(r.cost_usd.is_some_and(|c| (c - 0.4).abs() < 1e-12), "{:?}", r.cost_usd);
        assert_eq!(
            a.tokens,
            Tokens {
                input: 20,
                output: 10,
                cached: 0
            }
        );
        assert_eq!(
            a.latency_ms,
            Some(Latency {
                p50: 500.0,
                p95: 1000.0,
                max: 1000.0
            })
        );
        let [lo, hi] = a.mean_ci95.expect("two cases");
        // mean 0.75, s = 0.353553, t(1) = 12.7062: half = 12.7062 · 0.353553 / √2 = 3.17655
        assert!((hi - 0.75 - 3.176_551).abs() < 1e-5 && (0.75 - lo - 3.176_551).abs() < 1e-5);
        assert_eq!(r.graders[0].results, 4);
        let text = r.render(&Secrets::default());
        assert!(text.contains("BY TARGET"), "the console summary's table: {text}");
        let line = |label: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(label))
                .unwrap_or_default()
                .split_whitespace()
                .skip(label.split(' ').count())
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().eq(["BY", "TARGET", "a", "b"])),
            "a column per target: {text}"
        );
        assert_eq!(line("cases"), "2 3", "{text}");
        assert_eq!(
            line("pass rate"),
            "50% 100%",
            "pass verdicts among graded cases: {text}"
        );
        assert_eq!(line("errors"), "0 2", "{text}");
    }

    #[test]
    fn repeats_give_per_case_spread_flaky_cases_and_pass_at_k() {
        let mut s = RunStats::default();
        for (id, trial, score) in [
            ("steady", 1, 1.0),
            ("steady", 2, 0.9),
            ("steady", 3, 1.0),
            ("flaky", 1, 1.0),
            ("flaky", 2, 0.2),
            ("flaky", 3, 0.9),
            ("broken", 1, 0.0),
            ("broken", 2, 0.1),
            ("broken", 3, 0.0),
        ] {
            s.add(&record("m", id, Some(trial), score, "ok"));
        }
        let r = s.compute();
        assert_eq!(r.repeat, Some(3));
        let rep = r.targets[0].repeats.as_ref().expect("repeats");
        assert_eq!(
            rep.flaky,
            [CaseRef {
                dataset: "d".into(),
                eval_id: "flaky".into()
            }]
        );
        let flaky = rep.cases.iter().find(|c| c.eval_id == "flaky").expect("case");
        assert_eq!(flaky.scores, [Some(1.0), Some(0.2), Some(0.9)]);
        assert_eq!((flaky.passes, flaky.min, flaky.max), (2, Some(0.2), Some(1.0)));
        assert!((flaky.mean.expect("mean") - 0.7).abs() < 1e-12);
        // pass@1 = mean of c/n = (3/3 + 2/3 + 0/3) / 3; pass@3 = (1 + 1 + 0)/3; pass^3 = (1 + 0 + 0)/3.
        let at = |k: u32| rep.pass_at.iter().find(|p| p.k == k).copied().expect("k");
        assert!((at(1).pass_at_k.expect("p") - 5.0 / 9.0).abs() < 1e-12);
        assert!((at(3).pass_at_k.expect("p") - 2.0 / 3.0).abs() < 1e-12);
        assert!((at(3).pass_hat_k.expect("p") - 1.0 / 3.0).abs() < 1e-12);
        let text = r.render(&Secrets::default());
        assert!(text.contains("REPEATS (3 per case)"), "{text}");
        assert!(
            text.contains("flaky: m d/flaky: 1.00, 0.20, 0.90 (mean 0.700)"),
            "{text}"
        );
    }

    #[test]
    fn order_of_records_does_not_change_the_statistics() {
        let records: Vec<EvaluationRecord> = (0..50)
            .map(|i| {
                let score = f64::from((i * 37) % 101) / 100.0 + 1e-7;
                record(
                    ["a", "b"][i as usize % 2],
                    &format!("c{}", i / 3),
                    Some(i % 3 + 1),
                    score,
                    "ok",
                )
            })
            .collect();
        let mut forward = RunStats::default();
        records.iter().for_each(|r| forward.add(r));
        let mut backward = RunStats::default();
        records.iter().rev().for_each(|r| backward.add(r));
        let (f, b) = (forward.compute(), backward.compute());
        // Everything but the duration sum, which runs over latencies as floats.
        assert_eq!(
            serde_json::to_string(&f.targets).expect("json"),
            serde_json::to_string(&b.targets).expect("json")
        );
        assert_eq!(f.cost_usd.map(f64::to_bits), b.cost_usd.map(f64::to_bits));
    }

    #[test]
    fn pass_estimators_match_their_definitions_on_small_cases() {
        // n = 5, c = 2, k = 2: pass@2 = 1 − C(3,2)/C(5,2) = 1 − 3/10; pass^2 = C(2,2)/C(5,2) = 1/10.
        assert!((pass_at_k(5, 2, 2) - 0.7).abs() < 1e-12);
        assert!((pass_hat_k(5, 2, 2) - 0.1).abs() < 1e-12);
        assert_eq!(pass_at_k(3, 0, 3), 0.0);
        assert_eq!(pass_at_k(3, 1, 3), 1.0);
        assert_eq!(pass_hat_k(3, 3, 3), 1.0);
        assert!(pass_at_k(2, 1, 3).is_nan());
    }

    fn binomial(n: usize, k: usize) -> f64 {
        if k > n {
            return 0.0;
        }
        (0..k).map(|i| (n - i) as f64 / (i + 1) as f64).product()
    }

    proptest! {
        #[test]
        fn pass_at_k_is_unbiased_for_k_of_n(n in 1usize..40, c_frac in 0.0f64..=1.0, k_frac in 0.0f64..=1.0) {
            let c = (c_frac * n as f64).round() as usize;
            let k = ((k_frac * (n - 1) as f64).round() as usize) + 1;
            let est = pass_at_k(n, c, k);
            // The expectation over every k-subset of the n samples: the share with a pass.
            let exact = 1.0 - binomial(n - c, k) / binomial(n, k);
            prop_assert!((est - exact).abs() < 1e-9, "n {} c {} k {}: {} vs {}", n, c, k, est, exact);
            prop_assert!((0.0..=1.0).contains(&est));
            let hat = pass_hat_k(n, c, k);
            prop_assert!((hat - binomial(c, k) / binomial(n, k)).abs() < 1e-9);
            // All must pass is never likelier than one passing; k = 1 is the pass rate.
            prop_assert!(hat <= est + 1e-12);
            if k == 1 {
                prop_assert!((est - c as f64 / n as f64).abs() < 1e-12);
                prop_assert!((hat - c as f64 / n as f64).abs() < 1e-12);
            }
        }

        #[test]
        fn pass_at_k_grows_and_pass_hat_k_shrinks_with_k(n in 2usize..30, c_frac in 0.0f64..=1.0) {
            let c = (c_frac * n as f64).round() as usize;
            for k in 1..n {
                prop_assert!(pass_at_k(n, c, k + 1) >= pass_at_k(n, c, k) - 1e-12);
                prop_assert!(pass_hat_k(n, c, k + 1) <= pass_hat_k(n, c, k) + 1e-12);
            }
        }

        #[test]
        fn fixed_point_mean_and_interval_match_the_plain_ones(xs in proptest::collection::vec(0.0f64..=1.0, 2..100)) {
            let mut sum = FixedSum::default();
            xs.iter().for_each(|x| sum.add(*x, SCORE_UNIT));
            let plain = super::super::ci::mean_ci95(&xs).expect("ci");
            let mean = sum.mean(SCORE_UNIT).expect("mean");
            prop_assert!((mean - plain.mean).abs() < 1e-8);
            let [lo, hi] = interval(mean, sum.variance(SCORE_UNIT).expect("var"), xs.len());
            let (plo, phi) = plain.interval.expect("n >= 2");
            prop_assert!((lo - plo).abs() < 1e-6 && (hi - phi).abs() < 1e-6);
        }
    }
}
