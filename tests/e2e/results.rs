//! Working from results: `agentv compare`, `agentv report` and `agentv eval --report`, on the
//! shipped example results and on the TypeScript AgentV's files. The JUnit report is checked
//! against `tests/fixtures/junit/junit.xsd` with `xmllint`, and the HTML report is opened in
//! headless Chromium (`tests/browser/report_check.mjs`); screenshots go to
//! `target/report-screenshots/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use agentv_testkit::toolchains::{require, skip_or_fail};
use agentv_testkit::{Project, Run, repo_root};
use serde_json::{Value, json};

fn agentv(args: &[&str]) -> Run {
    Run::of(&mut agentv_testkit::agentv(&repo_root(), args))
}

const BASE: &str = "examples/results/baseline.jsonl";
const CANDIDATE: &str = "examples/results/candidate.jsonl";
const TS2: &str = "tests/fixtures/results/agentv-2.jsonl";
const TS4: &str = "tests/fixtures/results/agentv-4-run/index.jsonl";

/// One results line in agentv's format.
fn line(id: &str, target: &str, score: f64, status: &str) -> String {
    json!({
        "timestamp": "2025-01-01T00:00:00Z", "eval_id": id, "dataset": "d", "target": target,
        "attempt": 1, "execution_status": status, "score": score,
        "verdict": if score >= 0.8 { "pass" } else if score >= 0.6 { "borderline" } else { "fail" },
        "hits": [], "misses": if score < 0.6 { vec!["missed it"] } else { vec![] },
        "candidate_answer": "a", "evaluator_results": []
    })
    .to_string()
}

fn results(scores: &[f64]) -> String {
    scores
        .iter()
        .enumerate()
        .map(|(i, s)| line(&format!("c{i}"), "m", *s, "ok") + "\n")
        .collect()
}

fn json_of(run: &Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", run.stdout))
}

#[test]
fn compare_shipped_examples_counts_changes_and_lists_regressions() {
    let run = agentv(&["compare", BASE, CANDIDATE]);
    run.code(0)
        .stdout_has("Matched 11 case(s) by case and target; 1 added, 1 removed (1 graded in the base: missing from the candidate)")
        .stdout_has("  improved        3\n  regressed       2\n  unchanged       4")
        .stdout_has("  errors          2")
        .stdout_has("Mean delta: +0.011  (95% CI -0.219 to +0.241, n=9)")
        .stdout_has("Graded in the base, not in the candidate:\n  order-status [support-bot]: execution_error");
    let refund = run.stdout.find(" refund-policy ").expect("listed");
    let escalation = run.stdout.find(" escalation ").expect("listed");
    assert!(refund < escalation, "largest drop first:\n{}", run.stdout);
    assert!(run.stdout.contains("0.900       0.400   -0.500"), "{}", run.stdout);
}

#[test]
fn compare_json_has_every_case_and_the_interval() {
    let run = agentv(&["compare", BASE, CANDIDATE, "--format", "json"]);
    run.code(0);
    let v = json_of(&run);
    assert_eq!(v["counts"]["matched"], 11);
    assert_eq!(v["counts"]["added"], 1);
    assert_eq!(v["added"][0]["eval_id"], "gift-cards");
    assert_eq!(v["removed"][0]["eval_id"], "invoice-copy");
    assert_eq!(v["cases"].as_array().expect("cases").len(), 9);
    assert_eq!(v["match_by"], "id_and_target");
    let ci = v["mean_delta"]["ci95"].as_array().expect("interval");
    assert!(
        ci[0].as_f64().expect("low") < 0.0 && ci[1].as_f64().expect("high") > 0.0,
        "{v}"
    );
    assert_eq!(v["gate"]["passed"], true);
    assert_eq!(v["largest_regressions"][0]["eval_id"], "refund-policy");
}

/// `compare --format json` is the SDK's typed `CompareOutput` and, like a results file, omits
/// what is absent (one pair: no interval; no `--max-regression`; no graded pair: no mean).
#[test]
fn compare_json_is_the_typed_output_without_nulls() {
    let p = Project::new()
        .file("base.jsonl", &results(&[0.9]))
        .file("cand.jsonl", &results(&[0.5]))
        .file("other.jsonl", &line("x", "m", 0.5, "ok"));
    for candidate in ["cand.jsonl", "other.jsonl"] {
        let run = p.run(&["compare", "base.jsonl", candidate, "--format", "json"]);
        assert!(!run.stdout.contains("null"), "{}", run.stdout);
        let typed: agentv_eval_sdk::compare::CompareOutput<'_> =
            serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not a CompareOutput ({e}):\n{}", run.stdout));
        assert_eq!(typed.gate.max_regression, None);
        match candidate {
            "cand.jsonl" => {
                let mean = typed.mean_delta.expect("one graded pair has a mean");
                assert_eq!((mean.n, mean.ci95), (1, None));
                assert_eq!(typed.cases.len(), 1);
            }
            _ => assert_eq!((typed.mean_delta, typed.counts.matched), (None, 0)),
        }
    }
}

/// `report --report FORMAT[=PATH]` takes every format of the table, by name or alias, as
/// `eval --report` does; an unknown one is a usage error naming the known ones.
#[test]
fn report_takes_any_format_of_the_table_by_name() {
    let p = Project::new().file("r.jsonl", &results(&[0.9, 0.4]));
    p.run(&["report", "r.jsonl", "--report", "md", "--report", "XML=out.xml"])
        .code(0)
        .stderr_has("Markdown report written to r.md")
        .stderr_has("JUnit report written to out.xml");
    let read = |name: &str| std::fs::read_to_string(p.path().join(name)).expect("report written");
    assert!(read("r.md").contains("c1"), "{}", read("r.md"));
    assert!(read("out.xml").contains("<testsuite"), "{}", read("out.xml"));
    p.run(&["report", "r.jsonl", "--report", "pdf"])
        .code(2)
        .stderr_has("unknown report format `pdf`; expected junit, markdown or html");
}

#[test]
fn compare_markdown_is_a_pr_comment() {
    let run = agentv(&[
        "compare",
        BASE,
        CANDIDATE,
        "--format",
        "markdown",
        "--max-regression",
        "0.3",
    ]);
    run.code(1)
        .stdout_has("## agentv compare: baseline.jsonl → candidate.jsonl")
        .stdout_has("❌ **Gate FAILED")
        .stdout_has("| regressed | 2 |")
        .stdout_has("| refund\\-policy | support\\-bot | 0.900 | 0.400 | -0.500 |")
        .stderr_has("regression gate failed: 1 case(s) dropped by more than 0.3");
}

#[test]
fn compare_max_regression_gates_on_the_largest_drop() {
    let p = Project::new()
        .file("base.jsonl", &results(&[0.9, 0.9, 0.9, 0.9]))
        .file("cand.jsonl", &results(&[0.9, 0.7, 0.95, 0.9]));
    p.run(&["compare", "base.jsonl", "cand.jsonl", "--max-regression", "0.25"])
        .code(0)
        .stdout_has("Gate: PASSED (--max-regression 0.25)");
    p.run(&["compare", "base.jsonl", "cand.jsonl", "--max-regression", "0.1"])
        .code(1)
        .stdout_has("Gate: FAILED (--max-regression 0.1): 1 case(s) dropped by more than 0.1 (worst: c1 by 0.200)");
}

#[test]
fn compare_fail_on_regression_needs_a_significant_mean_drop() {
    let base = results(&[0.9; 10]);
    // Every case a little lower: significant.
    let p = Project::new()
        .file("base.jsonl", &base)
        .file(
            "small.jsonl",
            &results(&[0.85, 0.84, 0.86, 0.85, 0.85, 0.83, 0.87, 0.85, 0.85, 0.86]),
        )
        .file(
            "one.jsonl",
            &results(&[0.9, 0.9, 0.5, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]),
        );
    p.run(&["compare", "base.jsonl", "small.jsonl", "--fail-on-regression"])
        .code(1)
        .stdout_has("the mean delta -0.049 is below 0 with 95 % confidence (CI -0.057 to -0.041, n=10)");
    // One case dropped a lot: not significant on the mean, caught by --max-regression.
    p.run(&["compare", "base.jsonl", "one.jsonl", "--fail-on-regression"])
        .code(0);
    p.run(&[
        "compare",
        "base.jsonl",
        "one.jsonl",
        "--fail-on-regression",
        "--max-regression",
        "0.2",
    ])
    .code(1);
}

#[test]
fn compare_gate_fails_when_the_candidate_breaks_a_case() {
    let p = Project::new()
        .file(
            "base.jsonl",
            &(line("a", "m", 0.9, "ok") + "\n" + &line("b", "m", 0.9, "ok") + "\n"),
        )
        .file(
            "cand.jsonl",
            &(line("a", "m", 0.9, "ok") + "\n" + &line("b", "m", 0.0, "execution_error") + "\n"),
        );
    p.run(&["compare", "base.jsonl", "cand.jsonl"]).code(0);
    p.run(&["compare", "base.jsonl", "cand.jsonl", "--max-regression", "1"])
        .code(1)
        .stdout_has("1 case(s) graded in the base run could not be graded in the candidate");
}

#[test]
fn compare_reads_the_typescript_agentv_generations() {
    let run = agentv(&["compare", TS2, TS4, "--format", "json"]);
    run.code(0);
    let v = json_of(&run);
    assert_eq!(v["base"]["generations"], json!(["AgentV 2.x"]));
    assert_eq!(v["candidate"]["generations"], json!(["AgentV 4.x"]));
    assert_eq!(v["match_by"], "id", "one target each side: matched by id");
    let n = &v["counts"];
    assert_eq!(
        (n["matched"].as_u64(), n["improved"].as_u64(), n["regressed"].as_u64()),
        (Some(5), Some(2), Some(1))
    );
    assert_eq!(n["errors"], 2, "2.x error and 4.x grader skip");
    assert_eq!(v["largest_regressions"][0]["eval_id"], "shipping-times");
    assert_eq!(v["largest_regressions"][0]["target"], "azure-gpt4o → claude-sonnet");
    // And ours against theirs.
    agentv(&["compare", BASE, TS4])
        .code(0)
        .stdout_has("(6 case(s), AgentV 4.x)");
}

#[test]
fn compare_reports_bad_files_with_file_and_line_and_exits_2() {
    let p = Project::new()
        .file("good.jsonl", &results(&[0.5]))
        .file(
            "bad.jsonl",
            &(results(&[0.5]) + "{\"eval_id\": \"x\", \"score\": oops}\n" + "[]\n"),
        )
        .file("empty.jsonl", "\n\n")
        .file("noscore.jsonl", "{\"test_id\": \"t\"}\n");
    p.run(&["compare", "good.jsonl", "bad.jsonl"])
        .code(2)
        .stderr_has("error: bad.jsonl:2:27: not valid JSON: expected value")
        .stderr_has("error: bad.jsonl:3: expected a JSON object (one result per line), found an array");
    p.run(&["compare", "good.jsonl", "missing.jsonl"])
        .code(2)
        .stderr_has("missing.jsonl: cannot open the results file");
    p.run(&["compare", "good.jsonl", "empty.jsonl"])
        .code(2)
        .stderr_has("empty.jsonl: no results in this file");
    p.run(&["compare", "good.jsonl", "noscore.jsonl"])
        .code(2)
        .stderr_has("noscore.jsonl:1: missing `score`");
    p.run(&["compare", "good.jsonl", "."])
        .code(2)
        .stderr_has("it is a directory");
    p.run(&["compare", "good.jsonl", "good.jsonl", "--max-regression", "2"])
        .code(2);
    p.run(&["compare", "good.jsonl"]).code(2);
}

#[test]
fn compare_skips_a_cut_off_last_line_with_a_warning() {
    let full = results(&[0.5, 0.6]);
    let cut = &full[..full.len() - 20];
    let p = Project::new().file("base.jsonl", &full).file("cut.jsonl", cut);
    p.run(&["compare", "base.jsonl", "cut.jsonl"])
        .code(0)
        .stderr_has("warning: cut.jsonl:2: the last line is cut off")
        .stdout_has("Matched 1 case(s)");
}

/// Validates a JUnit file against the committed schema with `xmllint` (`.ci/run` installs it).
fn validate_junit(path: &Path) {
    let schema = repo_root().join("tests/fixtures/junit/junit.xsd");
    let out = match Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&schema)
        .arg(path)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            skip_or_fail(&format!(
                "the JUnit schema check needs xmllint ({e}; apt-get install libxml2-utils)"
            ));
            return;
        }
    };
    assert!(
        out.status.success(),
        "{} does not validate:\n{}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn report_writes_html_junit_and_markdown_from_a_results_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let html = dir.path().join("r.html");
    let junit = dir.path().join("r.junit.xml");
    let md = dir.path().join("r.md");
    let run = agentv(&[
        "report",
        CANDIDATE,
        "--html",
        html.to_str().expect("utf-8"),
        "--junit",
        junit.to_str().expect("utf-8"),
        "--markdown",
        md.to_str().expect("utf-8"),
    ]);
    run.code(0)
        .stderr_has("HTML report written to")
        .stderr_has("JUnit report written to");
    validate_junit(&junit);
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(
        xml.contains(r#"<testsuites name="agentv" tests="12" failures="2" errors="1""#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testsuite id="0" name="support (support-bot)""#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testcase classname="support.support-bot" name="refund-policy" time="0.800">"#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<failure message="score 0.400 (fail): does not mention the 30-day window" type="fail">"#),
        "{xml}"
    );
    assert!(
        xml.contains(
            r#"<error message="HTTP 503 from the order service: upstream unavailable" type="execution_error">"#
        ),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<property name="verdict" value="borderline"/>"#),
        "{xml}"
    );
    assert!(xml.contains("&lt;/script&gt;"), "answers are escaped: {xml}");
    let summary = std::fs::read_to_string(&md).expect("markdown");
    assert!(
        summary.contains("| support\\-bot | 12 | 11 | 7 | 2 | 2 | 63.6 % | 0.786 | 1 | 0 |"),
        "{summary}"
    );
    assert!(
        summary.contains("| escalation | support\\-bot | 0.200 | does not apologise properly |"),
        "{summary}"
    );
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(page.starts_with("<!DOCTYPE html>"), "{}", &page[..100]);
}

#[test]
fn html_report_keeps_hostile_answers_as_data() {
    let dir = tempfile::tempdir().expect("tmp");
    let html = dir.path().join("r.html");
    agentv(&["report", CANDIDATE, "--html", html.to_str().expect("utf-8")]).code(0);
    let page = std::fs::read_to_string(&html).expect("html");
    // One data block per case, the meta and the index, and the app: nothing from an answer.
    assert_eq!(page.matches("<script").count(), 12 + 3, "{page}");
    assert_eq!(page.matches("</script>").count(), 12 + 3);
    assert!(!page.contains("<img"), "an answer's <img> stays data");
    assert!(
        page.contains(r"Paste \u003cscript src="),
        "answers are JSON with < escaped"
    );
    assert!(!page.contains('\u{2028}'), "U+2028 is escaped");
    assert!(page.contains("Content-Security-Policy"), "no network by policy");
    assert!(
        !page.contains("http://") || !page.contains("src=\"http"),
        "no external resource"
    );
}

#[test]
fn report_reads_typescript_agentv_files() {
    let dir = tempfile::tempdir().expect("tmp");
    let junit = dir.path().join("ts4.xml");
    agentv(&["report", TS4, "--junit", junit.to_str().expect("utf-8")]).code(0);
    validate_junit(&junit);
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(
        xml.contains("Refunds are accepted within **30 days**"),
        "answer read from answer_path: {xml}"
    );
    assert!(
        xml.contains(r#"type="grader_error""#),
        "a 4.x grader skip is a grader error: {xml}"
    );
}

#[test]
fn report_usage_errors_exit_2() {
    let p = Project::new().file("r.jsonl", &results(&[0.5]));
    p.run(&["report", "r.jsonl", "--html", "r.jsonl"])
        .code(2)
        .stderr_has("would overwrite the results file");
    p.run(&["report", "r.jsonl", "--html", "x", "--junit", "x"])
        .code(2)
        .stderr_has("the html and junit reports would both be written to x");
    p.run(&["report", "missing.jsonl"])
        .code(2)
        .stderr_has("cannot open the results file");
    p.run(&["report", "--compare", "r.jsonl", "r.jsonl", "--junit"])
        .code(2)
        .stderr_has("--compare builds an HTML report only");
    p.run(&["report"]).code(2);
    p.run(&["report", "r.jsonl"]).code(0);
    assert!(p.path().join("r.html").is_file(), "HTML by default, beside the results");
}

#[test]
fn eval_report_flags_write_each_format_beside_the_results() {
    let p = Project::new();
    let out = p.path().join("out").join("run.jsonl");
    let run = Run::of(
        agentv_testkit::agentv(&repo_root(), &["eval", "examples/mock/evals/capitals.yaml", "--out"])
            .arg(&out)
            .args(["--report", "junit", "--report", "markdown", "--report"])
            .arg(format!("html={}", p.path().join("page.html").display())),
    );
    run.code(0)
        .stderr_has("junit report written to")
        .stderr_has("markdown report written to");
    let junit = p.path().join("out").join("run.junit.xml");
    validate_junit(&junit);
    let xml = std::fs::read_to_string(&junit).expect("junit");
    let cases = std::fs::read_to_string(&out).expect("results").lines().count();
    assert_eq!(xml.matches("<testcase ").count(), cases, "{xml}");
    assert!(p.path().join("out").join("run.md").is_file());
    assert!(p.path().join("page.html").is_file());
}

#[test]
fn eval_report_paths_are_checked_before_anything_runs() {
    let p = Project::new();
    let out = p.path().join("run.jsonl");
    let run = Run::of(
        agentv_testkit::agentv(&repo_root(), &["eval", "examples/mock/evals/capitals.yaml", "--out"])
            .arg(&out)
            .arg("--report")
            .arg(format!("html={}", out.display())),
    );
    run.code(2).stderr_has("would overwrite the results file");
    assert!(!out.exists(), "nothing ran");
    let bad = agentv(&["eval", "examples/mock/evals/capitals.yaml", "--report", "pdf"]);
    bad.code(2).stderr_has("unknown report format `pdf`");
}

/// Runs the browser check on `html`; `None` (after saying why) when no browser is installed
/// outside CI.
fn browser_check(spec: Value) -> Option<Value> {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    if !require("node", "the browser check") {
        return None;
    }
    let Some(chromium) = chromium else {
        skip_or_fail("the browser check needs chromium (apt-get install chromium)");
        return None;
    };
    let dir = tempfile::tempdir().expect("tmp");
    let mut spec = spec;
    spec["chromium"] = json!(chromium);
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).expect("spec");
    let out = Command::new("node")
        .arg(repo_root().join("tests/browser/report_check.mjs"))
        .arg(&spec_path)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "browser check output ({e}):\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(result.get("error").is_none(), "browser check failed: {result}");
    assert_eq!(result["failures"], json!([]), "{result}");
    Some(result)
}

fn screenshots() -> PathBuf {
    repo_root().join("target").join("report-screenshots")
}

#[test]
fn html_report_works_in_headless_chromium() {
    let dir = tempfile::tempdir().expect("tmp");
    let html = dir.path().join("candidate.html");
    agentv(&["report", CANDIDATE, "--html", html.to_str().expect("utf-8")]).code(0);
    let Some(r) = browser_check(json!({
        "html": html, "screenshots": screenshots(), "prefix": "report",
        "filter": "capital", "open": "refund-policy",
    })) else {
        return;
    };
    assert_eq!(r["cases"], 12, "{r}");
    assert_eq!(r["rows"], 12, "one table row per case: {r}");
    assert_eq!(r["filtered_rows"], 2, "{r}");
    assert_eq!(r["filtered_ids"], json!(["capital-of-france", "capital-of-australia"]));
    assert_eq!(r["detail_open"], true, "{r}");
    assert_eq!(r["detail_title"], "refund-policy");
    let detail = r["detail_text"].as_str().expect("text");
    assert!(
        detail.contains("Please contact support for refunds."),
        "the answer: {detail}"
    );
    assert!(
        detail.contains("does not mention the 30-day window"),
        "a grader's miss: {detail}"
    );
    let unfolded = r["detail_unfolded"].as_str().expect("text");
    assert!(
        unfolded.contains("[[ ## candidate_answer ## ]]"),
        "the judge prompt: {unfolded}"
    );
    assert_eq!(r["requests"], json!([]), "no network request: {r}");
    assert_eq!(r["injected"]["pwned"], false, "{r}");
    assert_eq!(r["injected"]["imgs"], 0, "{r}");
    assert_eq!(r["injected"]["scripts"], 1, "only the report's own script runs: {r}");
}

#[test]
fn compare_html_report_puts_runs_side_by_side_in_chromium() {
    let dir = tempfile::tempdir().expect("tmp");
    let html = dir.path().join("compare.html");
    agentv(&[
        "report",
        "--compare",
        BASE,
        CANDIDATE,
        "--html",
        html.to_str().expect("utf-8"),
    ])
    .code(0);
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(page.contains("base baseline.jsonl") && page.contains("candidate candidate.jsonl"));
    let Some(r) = browser_check(json!({
        "html": html, "screenshots": screenshots(), "prefix": "compare",
        "filter": "refund", "open": "escalation",
    })) else {
        return;
    };
    assert_eq!(r["cases"], 24, "{r}");
    assert_eq!(r["rows"], 13, "one row per case across both runs: {r}");
    assert_eq!(r["filtered_rows"], 1, "{r}");
    let detail = r["detail_text"].as_str().expect("text");
    assert!(
        detail.contains("I have opened ticket #4411") && detail.contains("Sorry to hear that."),
        "both answers side by side: {detail}"
    );
    assert_eq!(r["requests"], json!([]), "{r}");
}

/// Reports and merged results are written through a symlink to the file it names, never by
/// replacing the link (a rename would also replace a device such as `/dev/stdout`).
#[cfg(unix)]
#[test]
fn reports_and_merges_write_through_a_symlink() {
    let dir = tempfile::tempdir().expect("tmp");
    let real = dir.path().join("real.html");
    let link = dir.path().join("link.html");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    agentv(&["report", CANDIDATE, "--html", link.to_str().expect("utf-8")]).code(0);
    assert!(std::fs::symlink_metadata(&link).expect("link").file_type().is_symlink());
    assert!(std::fs::read_to_string(&real).expect("report").contains("<html"));
    let merged = dir.path().join("merged.jsonl");
    let mlink = dir.path().join("mlink.jsonl");
    std::fs::write(&merged, "").expect("write");
    std::os::unix::fs::symlink(&merged, &mlink).expect("symlink");
    // 3: the candidate run holds an execution error, which a merge reports as incomplete.
    agentv(&["merge", CANDIDATE, "--out", mlink.to_str().expect("utf-8")]).code(3);
    assert!(
        std::fs::symlink_metadata(&mlink)
            .expect("link")
            .file_type()
            .is_symlink()
    );
    let text = std::fs::read_to_string(&merged).expect("merged");
    assert_eq!(text.lines().count(), 12, "{text}");
}
