//! Summary statistics and the score histogram.

use std::fmt::Write as _;
use std::path::Path;

use super::terminal::escape_line;
use crate::model::{EvaluationRecord, ExecutionStatus, Verdict};
use crate::redact::Secrets;

/// How many best and worst cases are listed.
const RANKED: usize = 3;
/// How many errors of each kind the summary lists (the results file has them all).
const LISTED_ERRORS: usize = 20;
/// Width of the longest histogram bar.
const BAR_WIDTH: usize = 30;

/// Statistics over the scores of cases that ran and were graded without error.
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
    /// Scores of the cases that ran and were graded (`execution_status: ok`).
    scores: Vec<f64>,
    /// `(eval_id, message)` of cases whose target failed.
    pub errors: Vec<(String, String)>,
    /// `(eval_id, "evaluator 'name': message")` of cases an evaluator could not grade.
    pub grader_errors: Vec<(String, String)>,
    pub verdicts: [usize; 3],
    best: Vec<(f64, String)>,
    worst: Vec<(f64, String)>,
}

impl Summary {
    pub fn add(&mut self, record: &EvaluationRecord) {
        self.total += 1;
        match record.execution_status {
            ExecutionStatus::ExecutionError => {
                let message = record.error.clone().unwrap_or_default();
                self.errors.push((record.eval_id.clone(), message));
                return;
            }
            ExecutionStatus::GraderError => {
                self.grader_errors.push((record.eval_id.clone(), grader_error(record)));
                return;
            }
            ExecutionStatus::Ok => {}
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

    /// Graded cases that scored below `threshold`.
    pub fn below(&self, threshold: f64) -> usize {
        self.scores.iter().filter(|s| **s < threshold).count()
    }

    /// The summary as printed at the end of a run. Ids and messages are redacted, cut to their
    /// first line and escaped for the terminal, in that order (a secret is found whole).
    pub fn render(&self, results: Option<&Path>, secrets: &Secrets) -> String {
        let mut out = String::new();
        list_errors(&mut out, "EXECUTION ERRORS", '✘', &self.errors, secrets);
        list_errors(&mut out, "GRADER ERRORS", '!', &self.grader_errors, secrets);
        let _ = writeln!(out, "EVALUATION SUMMARY");
        let _ = writeln!(out, "  Total eval cases: {}", self.total);
        let _ = writeln!(
            out,
            "  Graded: {}   Execution errors: {}   Grader errors: {}",
            self.scores.len(),
            self.errors.len(),
            self.grader_errors.len()
        );
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
                    let _ = writeln!(out, "  {}. {}: {score:.3}", i + 1, id_shown(secrets, id));
                }
                let _ = writeln!(out, "Bottom {} cases:", self.worst.len());
                for (i, (score, id)) in self.worst.iter().enumerate() {
                    let _ = writeln!(out, "  {}. {}: {score:.3}", i + 1, id_shown(secrets, id));
                }
            }
        }
        if let Some(path) = results {
            let _ = writeln!(
                out,
                "\nResults written to: {}",
                id_shown(secrets, &path.display().to_string())
            );
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

/// Lists up to `LISTED_ERRORS` errors under `title`, one line each.
fn list_errors(out: &mut String, title: &str, mark: char, errors: &[(String, String)], secrets: &Secrets) {
    if errors.is_empty() {
        return;
    }
    let _ = writeln!(out, "{title} ({})", errors.len());
    for (id, message) in errors.iter().take(LISTED_ERRORS) {
        let _ = writeln!(
            out,
            "  {mark} {}: {}",
            id_shown(secrets, id),
            message_shown(secrets, message)
        );
    }
    if errors.len() > LISTED_ERRORS {
        let _ = writeln!(
            out,
            "  … and {} more (see the results file)",
            errors.len() - LISTED_ERRORS
        );
    }
    out.push('\n');
}

/// The first failed evaluator of `record`, as `evaluator 'name': message`.
fn grader_error(record: &EvaluationRecord) -> String {
    record
        .evaluator_results
        .iter()
        .find_map(|r| r.error.as_ref().map(|e| format!("evaluator '{}': {e}", r.name)))
        .unwrap_or_else(|| "an evaluator could not grade".to_owned())
}

/// An id (or a path) as the terminal shows it: secrets redacted, escaped onto one line.
fn id_shown(secrets: &Secrets, id: &str) -> String {
    escape_line(&secrets.redact(id)).into_owned()
}

/// A message as the terminal shows it: secrets redacted, first line only, escaped.
fn message_shown(secrets: &Secrets, text: &str) -> String {
    let redacted = secrets.redact(text);
    escape_line(redacted.lines().next().unwrap_or_default()).into_owned()
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

    fn record(id: &str, score: f64, status: &str, error: Option<&str>) -> EvaluationRecord {
        let failed = (status == "grader_error").then(|| {
            serde_json::json!([{"name": "j", "type": "code_judge", "score": 0.0, "weight": 1.0,
                                "verdict": "fail", "hits": [], "misses": [], "error": error}])
        });
        serde_json::from_value(serde_json::json!({
            "timestamp": "t", "eval_id": id, "dataset": "d", "target": "t", "attempt": 1,
            "execution_status": status, "score": score, "verdict": Verdict::from_score(score),
            "hits": [], "misses": [], "candidate_answer": "",
            "evaluator_results": failed.unwrap_or_else(|| serde_json::json!([])),
            "error": if status == "execution_error" { error } else { None }
        }))
        .expect("record")
    }

    #[test]
    fn summary_ranks_and_excludes_errors_from_stats() {
        let mut s = Summary::default();
        for (id, score) in [("a", 0.5), ("b", 0.9), ("c", 0.1), ("d", 0.9), ("e", 0.7)] {
            s.add(&record(id, score, "ok", None));
        }
        s.add(&record("x", 0.0, "execution_error", Some("target down")));
        let text = s.render(None, &Secrets::default());
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
        assert_eq!(
            s.below(0.6),
            2,
            "graded cases only; errors make the run incomplete instead"
        );
    }

    #[test]
    fn summary_counts_and_lists_grader_errors() {
        let mut s = Summary::default();
        s.add(&record("ok", 1.0, "ok", None));
        s.add(&record(
            "judged",
            0.5,
            "grader_error",
            Some("can't open file judges/chek.py"),
        ));
        s.add(&record("down", 0.0, "execution_error", Some("HTTP 503: busy\nbody")));
        let text = s.render(None, &Secrets::default());
        assert!(
            text.contains("Graded: 1   Execution errors: 1   Grader errors: 1"),
            "{text}"
        );
        assert!(
            text.contains("GRADER ERRORS (1)\n  ! judged: evaluator 'j': can't open file judges/chek.py"),
            "{text}"
        );
        assert!(
            text.contains("EXECUTION ERRORS (1)\n  ✘ down: HTTP 503: busy\n"),
            "{text}"
        );
        assert!(text.contains("Verdicts: 1 pass, 0 borderline, 0 fail"), "{text}");
        assert!(
            text.contains("Mean score:    1.000"),
            "grader errors are not in the stats: {text}"
        );
    }

    #[test]
    fn summary_escapes_ids_and_messages() {
        let mut s = Summary::default();
        s.add(&record("a\n  1. forged: 1.000", 0.9, "ok", None));
        s.add(&record("b\u{1b}[2J", 0.0, "execution_error", Some("bad\u{1b}[31m")));
        let text = s.render(None, &Secrets::default());
        assert!(!text.contains('\u{1b}'), "{text:?}");
        assert!(text.contains("  1. a\\n  1. forged: 1.000: 0.900"), "{text}");
        assert!(text.contains("✘ b\\u{1b}[2J: bad\\u{1b}[31m"), "{text}");
    }

    #[test]
    fn summary_redacts_a_secret_spanning_lines_before_cutting_them() {
        let secrets = Secrets::default();
        secrets.add("-----BEGIN KEY-----\nc2VjcmV0\n-----END KEY-----");
        let mut s = Summary::default();
        let message = "bad key -----BEGIN KEY-----\nc2VjcmV0\n-----END KEY----- rejected";
        s.add(&record("k", 0.0, "execution_error", Some(message)));
        let text = s.render(None, &secrets);
        assert!(text.contains("  ✘ k: bad key *** rejected\n"), "{text}");
        assert!(!text.contains("BEGIN KEY"), "{text}");
    }

    #[test]
    fn summary_lists_a_bounded_number_of_errors() {
        let mut s = Summary::default();
        for i in 0..25 {
            s.add(&record(&format!("c{i}"), 0.0, "execution_error", Some("down")));
        }
        let text = s.render(None, &Secrets::default());
        assert!(text.contains("EXECUTION ERRORS (25)"), "{text}");
        assert!(
            text.contains("  ✘ c19: down\n  … and 5 more (see the results file)"),
            "{text}"
        );
        assert!(!text.contains("c20"), "{text}");
    }
}
