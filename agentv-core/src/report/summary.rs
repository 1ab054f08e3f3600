//! Summary statistics and the score histogram.

use std::fmt::Write as _;
use std::path::Path;

use crate::model::{EvaluationRecord, Verdict};

/// How many best and worst cases are listed.
const RANKED: usize = 3;
/// Width of the longest histogram bar.
const BAR_WIDTH: usize = 30;

/// Statistics over the scores of cases that ran without error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n − 1); `None` below two scores.
    pub std_dev: Option<f64>,
}

impl Stats {
    /// `None` when there are no scores.
    pub fn compute(scores: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = scores.iter().copied().filter(|s| !s.is_nan()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let std_dev =
            (n >= 2).then(|| (sorted.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
        Some(Self {
            mean,
            median,
            min: sorted[0],
            max: sorted[n - 1],
            std_dev,
        })
    }
}

/// Counts per bin `0.0-0.2` … `0.8-1.0`; each bin includes its upper edge (0.8 is in `0.6-0.8`).
pub fn histogram_bins(scores: &[f64]) -> [usize; 5] {
    let mut bins = [0; 5];
    for &s in scores {
        let index = (0..5).find(|&i| s < (i as f64 + 1.0) * 0.2 + 1e-9).unwrap_or(4);
        bins[index] += 1;
    }
    bins
}

/// Accumulates what the end-of-run summary needs, without holding the records.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub total: usize,
    scores: Vec<f64>,
    /// `(eval_id, message)` of cases whose target failed.
    pub errors: Vec<(String, String)>,
    pub verdicts: [usize; 3],
    best: Vec<(f64, String)>,
    worst: Vec<(f64, String)>,
}

impl Summary {
    pub fn add(&mut self, record: &EvaluationRecord) {
        self.total += 1;
        if let Some(error) = &record.error {
            self.errors.push((record.eval_id.clone(), error.clone()));
            return;
        }
        self.scores.push(record.score);
        self.verdicts[match record.verdict {
            Verdict::Pass => 0,
            Verdict::Borderline => 1,
            Verdict::Fail => 2,
        }] += 1;
        rank(&mut self.best, record, |new, old| new > old);
        rank(&mut self.worst, record, |new, old| new < old);
    }

    pub fn scores(&self) -> &[f64] {
        &self.scores
    }

    pub fn stats(&self) -> Option<Stats> {
        Stats::compute(&self.scores)
    }

    /// Cases that scored below `threshold` or errored.
    pub fn below(&self, threshold: f64) -> usize {
        self.errors.len() + self.scores.iter().filter(|s| **s < threshold).count()
    }

    /// The summary as printed at the end of a run.
    pub fn render(&self, results: Option<&Path>) -> String {
        let mut out = String::new();
        if !self.errors.is_empty() {
            let _ = writeln!(out, "ERRORS ({})", self.errors.len());
            for (id, message) in &self.errors {
                let _ = writeln!(out, "  ✘ {id}: {}", first_line(message));
            }
            out.push('\n');
        }
        let _ = writeln!(out, "EVALUATION SUMMARY");
        let _ = writeln!(out, "  Total eval cases: {}", self.total);
        let _ = writeln!(out, "  Graded: {}   Errors: {}", self.scores.len(), self.errors.len());
        let [pass, borderline, fail] = self.verdicts;
        let _ = writeln!(out, "  Verdicts: {pass} pass, {borderline} borderline, {fail} fail");
        match self.stats() {
            None => {
                let _ = writeln!(out, "  No graded cases.");
            }
            Some(s) => {
                let _ = writeln!(out, "  Mean score:    {:.3}", s.mean);
                let _ = writeln!(out, "  Median score:  {:.3}", s.median);
                let _ = writeln!(out, "  Min score:     {:.3}", s.min);
                let _ = writeln!(out, "  Max score:     {:.3}", s.max);
                match s.std_dev {
                    Some(sd) => {
                        let _ = writeln!(out, "  Std deviation: {sd:.3}");
                    }
                    None => {
                        let _ = writeln!(out, "  Std deviation: n/a (fewer than 2 scores)");
                    }
                }
                out.push('\n');
                out.push_str(&self.render_histogram());
                out.push('\n');
                let _ = writeln!(out, "Top {} cases:", self.best.len());
                for (i, (score, id)) in self.best.iter().enumerate() {
                    let _ = writeln!(out, "  {}. {id}: {score:.3}", i + 1);
                }
                let _ = writeln!(out, "Bottom {} cases:", self.worst.len());
                for (i, (score, id)) in self.worst.iter().enumerate() {
                    let _ = writeln!(out, "  {}. {id}: {score:.3}", i + 1);
                }
            }
        }
        if let Some(path) = results {
            let _ = writeln!(out, "\nResults written to: {}", path.display());
        }
        out
    }

    fn render_histogram(&self) -> String {
        let bins = histogram_bins(&self.scores);
        let most = bins.iter().copied().max().unwrap_or(0).max(1);
        let mut out = String::from("Score distribution:\n");
        for (i, count) in bins.iter().enumerate() {
            let width = if *count == 0 {
                0
            } else {
                (count * BAR_WIDTH).div_ceil(most)
            };
            let lo = i as f64 * 0.2;
            let _ = writeln!(
                out,
                "  {lo:.1}-{:.1} │{:<BAR_WIDTH$} {count}",
                lo + 0.2,
                "█".repeat(width)
            );
        }
        out
    }
}

/// Keeps the `RANKED` best (or worst) cases; earlier cases win ties.
fn rank(list: &mut Vec<(f64, String)>, record: &EvaluationRecord, better: fn(f64, f64) -> bool) {
    let position = list
        .iter()
        .position(|(s, _)| better(record.score, *s))
        .unwrap_or(list.len());
    if position < RANKED {
        list.insert(position, (record.score, record.eval_id.clone()));
        list.truncate(RANKED);
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_use_sample_std_dev_and_middle_pair_median() {
        let s = Stats::compute(&[0.2, 0.4, 0.6, 0.8]).expect("stats");
        assert!((s.mean - 0.5).abs() < 1e-12);
        assert!((s.median - 0.5).abs() < 1e-12);
        assert_eq!((s.min, s.max), (0.2, 0.8));
        assert!((s.std_dev.expect("sd") - 0.258_198_889_747_161).abs() < 1e-9);
        assert_eq!(Stats::compute(&[0.7]).expect("one").std_dev, None);
        assert!(Stats::compute(&[]).is_none());
    }

    #[test]
    fn histogram_bins_include_upper_edges() {
        assert_eq!(
            histogram_bins(&[0.0, 0.2, 0.21, 0.4, 0.6, 0.8, 0.81, 1.0]),
            [2, 2, 1, 1, 2]
        );
    }

    fn record(id: &str, score: f64, error: Option<&str>) -> EvaluationRecord {
        serde_json::from_value(serde_json::json!({
            "timestamp": "t", "eval_id": id, "dataset": "d", "target": "t", "attempt": 1,
            "score": score, "verdict": Verdict::from_score(score), "hits": [], "misses": [],
            "candidate_answer": "", "evaluator_results": [], "error": error
        }))
        .expect("record")
    }

    #[test]
    fn summary_ranks_and_excludes_errors_from_stats() {
        let mut s = Summary::default();
        for (id, score) in [("a", 0.5), ("b", 0.9), ("c", 0.1), ("d", 0.9), ("e", 0.7)] {
            s.add(&record(id, score, None));
        }
        s.add(&record("x", 0.0, Some("target down")));
        let text = s.render(None);
        assert!(text.contains("ERRORS (1)\n  ✘ x: target down"), "{text}");
        assert!(text.contains("Total eval cases: 6"));
        assert!(text.contains("Mean score:    0.620"), "{text}");
        assert!(
            text.contains("Top 3 cases:\n  1. b: 0.900\n  2. d: 0.900\n  3. e: 0.700"),
            "{text}"
        );
        assert!(
            text.contains("Bottom 3 cases:\n  1. c: 0.100\n  2. a: 0.500\n  3. e: 0.700"),
            "{text}"
        );
        assert!(text.contains("0.8-1.0 │"), "{text}");
        assert_eq!(s.below(0.6), 3);
    }
}
