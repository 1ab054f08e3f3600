//! The summary's rules (unit tests) and its text as a user reads it (snapshots, colours off,
//! reviewed line by line: alignment, wording, 80 columns).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::text::width;
use super::*;

/// A record for the summary: `status` is `ok`, `execution_error` or `grader_error`.
struct Rec {
    value: Value,
    elapsed_ms: u64,
}

fn rec(id: &str, target: &str, score: f64, status: &str) -> Rec {
    Rec {
        value: json!({
            "timestamp": "t", "eval_id": id, "dataset": "d", "target": target, "attempt": 1,
            "execution_status": status, "score": score, "verdict": Verdict::from_score(score),
            "hits": [], "misses": [], "candidate_answer": "", "evaluator_results": []
        }),
        elapsed_ms: 1000,
    }
}

impl Rec {
    fn misses(mut self, misses: &[&str]) -> Self {
        self.value["misses"] = json!(misses);
        self
    }

    fn error(mut self, error: &str) -> Self {
        self.value["error"] = json!(error);
        self
    }

    fn reasoning(mut self, reasoning: &str) -> Self {
        self.value["reasoning"] = json!(reasoning);
        self
    }

    /// A grader named `name` that could not grade.
    fn grader_error(mut self, name: &str, error: &str) -> Self {
        let result = json!({"name": name, "type": "code_judge", "score": 0.0, "weight": 1.0,
                            "verdict": "fail", "hits": [], "misses": [], "error": error});
        self.value["evaluator_results"]
            .as_array_mut()
            .expect("a list")
            .push(result);
        self
    }

    fn usage(mut self, input: u64, output: u64, cost: f64) -> Self {
        self.value["execution_metrics"] = json!({"token_usage": {"input": input, "output": output}, "cost_usd": cost});
        self
    }

    fn took(mut self, ms: u64) -> Self {
        self.elapsed_ms = ms;
        self
    }

    /// The record, its case's time as the target's `duration_ms`.
    fn record(&self) -> EvaluationRecord {
        let mut value = self.value.clone();
        if !value["execution_metrics"].is_object() {
            value["execution_metrics"] = json!({});
        }
        value["execution_metrics"]["duration_ms"] = json!(self.elapsed_ms);
        serde_json::from_value(value).expect("record")
    }
}

/// The summary of some records, and the run statistics of the same records, which the summary
/// draws its per-target table from.
struct Fed {
    summary: Summary,
    targets: Vec<crate::report::TargetStats>,
}

impl std::ops::Deref for Fed {
    type Target = Summary;

    fn deref(&self) -> &Summary {
        &self.summary
    }
}

fn summary(records: impl IntoIterator<Item = Rec>) -> Fed {
    let mut s = Summary::default();
    let mut stats = crate::report::RunStats::default();
    for r in records {
        let record = r.record();
        s.add(&record);
        stats.add(&record);
    }
    Fed {
        summary: s,
        targets: stats.compute().targets,
    }
}

fn context() -> SummaryContext {
    SummaryContext {
        results: Some(PathBuf::from(
            "/home/dev/project/.agentv/results/eval_2026-11-22T10-00-00.jsonl",
        )),
        cwd: Some(PathBuf::from("/home/dev/project")),
        elapsed: Some(Duration::from_millis(83_400)),
        ..SummaryContext::default()
    }
}

/// The summary as printed, after checking that every line fits 80 columns.
fn rendered(s: &Fed, context: &SummaryContext) -> String {
    let context = SummaryContext {
        targets: s.targets.clone(),
        ..context.clone()
    };
    let text = s.render(&context, SummaryStyle::default(), &Secrets::default());
    for line in text.lines() {
        assert!(width(line) <= 80, "{} columns: {line}", width(line));
    }
    text
}

fn plain(s: &Fed) -> String {
    rendered(s, &SummaryContext::default())
}

fn snapshot(name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, text));
}

// ---------------------------------------------------------------------------------------------
// snapshots

#[test]
fn summary_of_a_run_where_every_case_passes() {
    let s = summary([
        rec("greeting", "gpt-4o", 1.0, "ok").usage(812, 95, 0.0031).took(1200),
        rec("refund-policy", "gpt-4o", 0.9, "ok")
            .usage(1460, 210, 0.0058)
            .took(2300),
        rec("escalation", "gpt-4o", 0.85, "ok")
            .usage(990, 120, 0.0040)
            .took(1700),
        rec("order-status", "gpt-4o", 0.8, "ok")
            .usage(1020, 88, 0.0039)
            .took(900),
    ]);
    let context = SummaryContext {
        cache: Some(CacheStats { hits: 1, misses: 3 }),
        ..context()
    };
    snapshot("summary_all_pass", &rendered(&s, &context));
}

#[test]
fn summary_of_a_mixed_run_lists_failures_and_errors_first() {
    let s = summary([
        rec("capital", "default", 1.0, "ok"),
        rec("close", "default", 0.25, "ok").misses(&["missing France", "contains forbidden Lyon"]),
        rec("wrong", "default", 0.0, "ok").misses(&["missing Paris", "missing France", "contains forbidden Berlin"]),
        rec("borderline", "default", 0.7, "ok").misses(&["tone is curt"]),
        rec("vague", "default", 0.4, "ok").reasoning("The answer never names a city.\nIt hedges."),
        rec("crashes", "default", 0.0, "execution_error")
            .error("command failed with exit code 1: agent crashed\nTraceback (most recent call last):"),
        rec("judged", "default", 0.5, "grader_error").grader_error("style", "can't open file judges/chek.py"),
    ]);
    snapshot("summary_mixed", &rendered(&s, &context()));
}

#[test]
fn summary_of_many_failures_lists_the_worst_and_counts_the_rest() {
    let misses: Vec<String> = (1..=7)
        .map(|i| format!("step {i}: expected the tool `search_orders` to be called with order id 12345 but it was never called at all"))
        .collect();
    let misses: Vec<&str> = misses.iter().map(String::as_str).collect();
    let mut records: Vec<Rec> = (0..40)
        .map(|i| rec(&format!("case-{i:02}"), "default", f64::from(i % 5) / 10.0, "ok").misses(&misses))
        .collect();
    records
        .push(rec("timeout", "default", 0.0, "execution_error").error("target call timed out after 120s (3 attempts)"));
    records.extend((0..5).map(|i| rec(&format!("ok-{i}"), "default", 0.9, "ok")));
    let s = summary(records);
    snapshot("summary_many_failures", &rendered(&s, &context()));
}

#[test]
fn summary_fits_long_ids_targets_and_paths_in_80_columns() {
    let long = "customer-support/escalations/a-very-long-case-identifier-that-goes-on-and-on-until-it-no-longer-fits";
    let target = "azure-openai-gpt-4o-2024-08-06-deployment-eastus2";
    let s = summary([
        rec(long, target, 0.1, "ok").misses(&[&"x".repeat(300), "界".repeat(60).as_str()]),
        rec(&format!("{long}-2"), target, 1.0, "ok"),
        rec(&format!("{long}-3"), target, 0.0, "execution_error").error(&"connection refused ".repeat(20)),
        rec(&format!("{long}-4"), target, 0.0, "grader_error").grader_error(&"judge".repeat(20), "exit 1"),
        // A second target, so that each case's target is named beside it.
        rec("short", "mock", 0.9, "ok"),
    ]);
    let deep = format!(
        "/home/dev/project/{}results.jsonl",
        "nested-directory-with-a-long-name/".repeat(4)
    );
    let context = SummaryContext {
        results: Some(PathBuf::from(deep)),
        ..context()
    };
    let text = rendered(&s, &context);
    assert!(
        text.contains("Results written to: nested-directory"),
        "relative: {text}"
    );
    snapshot("summary_long_ids_and_paths", &text);
}

#[test]
fn summary_puts_two_targets_side_by_side() {
    let mut records = Vec::new();
    for (i, (a, b)) in [(1.0, 0.9), (0.8, 0.5), (0.9, 0.95), (0.3, 0.0), (1.0, 0.7)]
        .iter()
        .enumerate()
    {
        let id = format!("case-{i}");
        records.push(
            rec(&id, "gpt-4o", *a, "ok")
                .usage(1200, 300, 0.0125)
                .took(800 + 400 * i as u64),
        );
        let claude = if i == 3 {
            rec(&id, "claude-sonnet", 0.0, "execution_error").error("HTTP 529: overloaded")
        } else {
            rec(&id, "claude-sonnet", *b, "ok")
        };
        records.push(claude.usage(1500, 420, 0.021).took(1500 + 900 * i as u64));
    }
    let s = summary(records);
    let text = rendered(&s, &context());
    snapshot("summary_two_targets", &text);
}

#[test]
fn summary_draws_a_borderline_0_800_score_with_the_passes() {
    let s = summary([
        rec("exactly-pass", "default", 0.8, "ok"),
        rec("just-below", "default", 0.799, "ok"),
        rec("exactly-borderline", "default", 0.6, "ok"),
        rec("low", "default", 0.2, "ok"),
    ]);
    let text = rendered(&s, &SummaryContext::default());
    assert!(text.contains("pass       [0.8, 1.0] │███████████████ 1"), "{text}");
    assert!(
        text.contains("borderline [0.6, 0.8) │██████████████████████████████ 2"),
        "{text}"
    );
    snapshot("summary_borderline_histogram", &text);
}

// ---------------------------------------------------------------------------------------------
// rules

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
fn histogram_bins_follow_the_verdicts() {
    let bins = |scores: &[f64]| {
        let mut bins = [0; 5];
        for &s in scores {
            bins[bin_for(s, Verdict::from_score(s))] += 1;
        }
        bins
    };
    assert_eq!(
        bins(&[0.0, 0.19, 0.2, 0.4, 0.599, 0.6, 0.799, 0.8, 0.81, 1.0]),
        [2, 1, 2, 2, 3]
    );
    // Every score lands in the bin its verdict names, including scores that are not exact
    // in binary (0.6 / 0.2 is 2.9999999999999996).
    for i in 0..=1000 {
        let score = f64::from(i) / 1000.0;
        let verdict = Verdict::from_score(score);
        assert_eq!(BINS[bin_of(score)].1, verdict.as_str(), "{score}");
        assert_eq!(bin_for(score, verdict), bin_of(score), "{score}");
    }
    assert_eq!(bin_of(-0.5), 0);
    assert_eq!(bin_of(f64::NAN), 0);
    assert_eq!(bin_of(7.0), 4);
}

#[test]
fn histogram_draws_a_case_with_its_verdict_when_the_score_says_otherwise() {
    // Results read from elsewhere may carry verdicts decided by other thresholds.
    let cases = [
        (0.8, Verdict::Borderline, 3),
        (0.79, Verdict::Pass, 4),
        (0.95, Verdict::Fail, 2),
        (0.5, Verdict::Borderline, 3),
        (0.1, Verdict::Fail, 0),
        (f64::NAN, Verdict::Pass, 4),
    ];
    for (score, verdict, bin) in cases {
        assert_eq!(bin_for(score, verdict), bin, "{score} {verdict:?}");
    }
    let mut r = rec("x", "t", 0.8, "ok");
    r.value["verdict"] = json!("borderline");
    let text = plain(&summary([r]));
    assert!(
        text.contains("borderline [0.6, 0.8) │██████████████████████████████ 1"),
        "{text}"
    );
    assert!(text.contains("pass       [0.8, 1.0] │ 0"), "{text}");
}

#[test]
fn summary_counts_graded_cases_only_in_the_stats() {
    let s = summary([
        rec("a", "t", 0.5, "ok"),
        rec("b", "t", 0.9, "ok"),
        rec("x", "t", 0.0, "execution_error").error("down"),
        rec("g", "t", 0.5, "grader_error").grader_error("j", "crashed"),
    ]);
    assert_eq!((s.execution_errors(), s.grader_errors()), (1, 1));
    let text = plain(&s);
    assert!(
        text.contains("Graded: 2   Execution errors: 1   Grader errors: 1"),
        "{text}"
    );
    assert!(text.contains("Mean score:    0.700"), "{text}");
    assert_eq!(
        s.below(0.6),
        1,
        "graded cases only; errors make the run incomplete instead"
    );
}

#[test]
fn summary_escapes_ids_targets_and_messages() {
    let s = summary([
        rec("a\n  1. forged: 1.000", "t\u{1b}[2J", 0.9, "ok"),
        rec("b\u{1b}[2J", "t", 0.0, "execution_error").error("bad\u{1b}[31m"),
    ]);
    let text = plain(&s);
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(
        text.contains("1. a\\n  1. forged: 1.000 [t\\u{1b}[2J]: 0.900"),
        "{text}"
    );
    assert!(
        text.contains("✘ b\\u{1b}[2J [t]  execution error\n      error: bad\\u{1b}[31m"),
        "{text}"
    );
}

#[test]
fn summary_redacts_a_secret_spanning_lines_before_cutting_them() {
    let secrets = Secrets::default();
    secrets.add("-----BEGIN KEY-----\nc2VjcmV0\n-----END KEY-----");
    let message = "bad key -----BEGIN KEY-----\nc2VjcmV0\n-----END KEY----- rejected";
    let s = summary([rec("k", "t", 0.0, "execution_error").error(message)]);
    let text = s.render(&SummaryContext::default(), SummaryStyle::default(), &secrets);
    assert!(text.contains("      error: bad key *** rejected\n"), "{text}");
    assert!(!text.contains("BEGIN KEY"), "{text}");
}

#[test]
fn summary_redacts_secrets_in_ids_targets_misses_and_paths() {
    let secrets = Secrets::default();
    secrets.add("sk-live-0123456789");
    let s = summary([rec("id-sk-live-0123456789", "t-sk-live-0123456789", 0.1, "ok")
        .misses(&["leaked sk-live-0123456789"])
        .grader_error("sk-live-0123456789", "x")]);
    let context = SummaryContext {
        results: Some(PathBuf::from("/tmp/sk-live-0123456789.jsonl")),
        ..SummaryContext::default()
    };
    let text = s.render(&context, SummaryStyle::default(), &secrets);
    assert!(!text.contains("0123456789"), "{text}");
    assert!(text.contains("id-***"), "{text}");
}

#[test]
fn failures_keep_errors_first_then_the_lowest_scores() {
    let mut records = vec![rec("late-error", "t", 0.0, "execution_error").error("down")];
    records.extend((0..15).map(|i| rec(&format!("f{i:02}"), "t", 0.5 - f64::from(i) * 0.01, "ok")));
    records.push(rec("graded-0", "t", 0.0, "ok"));
    let s = summary(records);
    let text = plain(&s);
    let listed: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  ✘ ") || l.starts_with("  ! "))
        .map(|l| l.split(' ').nth(3).unwrap_or_default())
        .collect();
    assert_eq!(
        listed,
        [
            "late-error",
            "graded-0",
            "f14",
            "f13",
            "f12",
            "f11",
            "f10",
            "f09",
            "f08",
            "f07"
        ],
        "{text}"
    );
    assert!(text.contains("FAILURES (17 of 17 cases)"), "{text}");
    assert!(
        text.contains("  … 7 more failing cases (every case is in the results file)"),
        "{text}"
    );
}

#[test]
fn colour_paints_only_our_words() {
    let s = summary([
        rec("red\u{1b}[31m", "t", 0.1, "ok").misses(&["m"]),
        rec("ok", "t", 1.0, "ok"),
    ]);
    let text = s.render(
        &SummaryContext::default(),
        SummaryStyle { width: 80, color: true },
        &Secrets::default(),
    );
    assert!(text.contains("\u{1b}[1mEVALUATION SUMMARY\u{1b}[0m"), "{text:?}");
    assert!(text.contains("\u{1b}[31m✘\u{1b}[0m red\\u{1b}[31m "), "{text:?}");
    let stripped = regex::Regex::new("\u{1b}\\[[0-9;]*m")
        .expect("regex")
        .replace_all(&text, "");
    assert_eq!(stripped, plain(&s), "colour changes nothing but colour");
}

#[test]
fn narrow_widths_still_fit() {
    let s = summary([
        rec(&"long-id-".repeat(30), &"target-".repeat(10), 0.1, "ok").misses(&[&"miss ".repeat(40)]),
        rec("b", "other", 1.0, "ok"),
    ]);
    for columns in [60, 70, 100] {
        let text = s.render(
            &context(),
            SummaryStyle {
                width: columns,
                color: false,
            },
            &Secrets::default(),
        );
        for line in text.lines() {
            assert!(width(line) <= columns, "{columns}: {} columns: {line}", width(line));
        }
    }
}
