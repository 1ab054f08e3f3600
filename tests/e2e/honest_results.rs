//! A results file tells the whole truth and every reader reads it the same way: gates count
//! every case, invalid cases are records, the last line of a record counts everywhere, results
//! files are told from datasets whatever their size, and a line's size is bounded
//! (`docs/results.md`).

use std::process::Command;

use agentv_testkit::{Project, mock_targets, repo_root};
use serde_json::{Value, json};

/// One results line in agentv's format.
fn line(id: &str, score: f64, status: &str) -> String {
    json!({
        "timestamp": "2025-01-01T00:00:00Z", "eval_id": id, "dataset": "d", "target": "m",
        "attempt": 1, "execution_status": status, "score": score,
        "verdict": if score >= 0.8 { "pass" } else if score >= 0.6 { "borderline" } else { "fail" },
        "hits": [], "misses": if score < 0.6 { vec!["missed it"] } else { vec![] },
        "candidate_answer": "a", "evaluator_results": []
    })
    .to_string()
        + "\n"
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"))
}

/// The support-bot story: a baseline of 25 graded cases, a candidate run that holds one.
#[test]
fn gate_counts_every_case_missing_from_the_candidate() {
    let base: String = (0..25).map(|i| line(&format!("case-{i:02}"), 0.9, "ok")).collect();
    let p = Project::new()
        .file("base.jsonl", &base)
        .file("cand.jsonl", &line("case-00", 0.9, "ok"));
    let run = p.run(&[
        "compare",
        "base.jsonl",
        "cand.jsonl",
        "--max-regression",
        "0.2",
        "--fail-on-regression",
    ]);
    run.code(1)
        .stdout_has("Matched 1 case(s) by case and target; 0 added, 24 removed (24 graded in the base: missing from the candidate)")
        .stdout_has("Gate: FAILED (--max-regression 0.2 --fail-on-regression): 24 case(s) graded in the base run are missing from the candidate (case-01, case-02, case-03, …)")
        .stdout_has("Graded in the base, missing from the candidate (24):\n  case-01 [m]");
    assert!(!run.stdout.contains("PASSED"), "{}", run.stdout);
    for gate in [&["--max-regression", "0.2"][..], &["--fail-on-regression"][..]] {
        let mut args = vec!["compare", "base.jsonl", "cand.jsonl", "--format", "json"];
        args.extend(gate);
        let run = p.run(&args);
        run.code(1);
        let v = json_of(&run.stdout);
        assert_eq!(v["counts"]["missing"], 24, "{gate:?}");
        assert_eq!(v["gate"]["passed"], false);
        assert_eq!(v["removed"].as_array().map(Vec::len), Some(24));
    }
    p.run(&[
        "compare",
        "base.jsonl",
        "cand.jsonl",
        "--max-regression",
        "0.2",
        "--allow-missing",
    ])
    .code(0)
    .stdout_has("Gate: PASSED (--max-regression 0.2)");
    // Without a gate, compare only reports.
    p.run(&["compare", "base.jsonl", "cand.jsonl"]).code(0);
}

/// A suite where one case is invalid: the case is a record everywhere, and counted.
#[test]
fn invalid_cases_are_recorded_in_results_junit_and_every_report() {
    let yaml = "execution:\n  evaluators: [{name: kw, type: keywords, expected: [hi]}]\nevalcases:\n  - {id: good, input_messages: [{role: user, content: q}]}\n  - id: broken\n    input_messages: [{role: user, content: q}]\n    execution:\n      evaluators: [{name: kw, type: keywordz, expected: [hi]}]\n";
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file("e.yaml", yaml);
    let run = p.run(&[
        "eval", "e.yaml", "--out", "r.jsonl", "--report", "junit", "--report", "markdown", "--report", "html",
    ]);
    run.code(3)
        .stdout_has("  ✘ broken  invalid\n      error: e.yaml:8:37: error: unknown grader type `keywordz`")
        .stdout_has("  Invalid: 1   Not run: 0")
        .stderr_has("Run incomplete: 1 case(s) were skipped as invalid");
    let broken = p.result("r.jsonl", "broken");
    assert_eq!(broken["execution_status"], "invalid");
    assert_eq!(broken["score"], 0.0);
    assert!(
        broken["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("e.yaml:8:37: error: unknown grader type `keywordz`")),
        "{broken}"
    );
    assert_eq!(p.result("r.jsonl", "good")["execution_status"], "ok");
    let junit = std::fs::read_to_string(p.path().join("r.junit.xml")).expect("junit");
    assert!(junit.contains(r#"errors="1""#), "{junit}");
    assert!(
        junit.contains(r#"<error message="e.yaml:8:37: error: unknown grader type `keywordz`" type="invalid">"#),
        "{junit}"
    );
    let markdown = std::fs::read_to_string(p.path().join("r.md")).expect("markdown");
    assert!(
        markdown.contains("### Errors (1: 0 execution, 0 grader, 1 invalid)"),
        "{markdown}"
    );
    assert!(markdown.contains("| broken | default | invalid |"), "{markdown}");
    let html = std::fs::read_to_string(p.path().join("r.html")).expect("html");
    assert!(html.contains(r#""x":"invalid""#), "the index row says invalid");
    let summary = json_of(&std::fs::read_to_string(p.path().join("r.summary.json")).expect("summary"));
    assert_eq!(summary["by_status"]["invalid"], 1, "{summary}");
    // `-q` says how many.
    p.run(&["eval", "e.yaml", "--out", "q.jsonl", "-q"])
        .code(3)
        .stdout_has("2 case(s): 1 pass, 0 borderline, 0 fail, 0 error(s), 1 invalid; mean 1.000");
    // `agentv report` reads the record back the same way.
    p.run(&["report", "r.jsonl", "--markdown", "again.md"]).code(0);
    let again = std::fs::read_to_string(p.path().join("again.md")).expect("markdown");
    assert!(again.contains("1 invalid)"), "{again}");
    // A baseline that graded the case fails the gate: the candidate could not grade it.
    std::fs::write(
        p.path().join("base.jsonl"),
        line("broken", 1.0, "ok")
            .replace("\"d\"", "\"e\"")
            .replace("\"m\"", "\"default\""),
    )
    .expect("base");
    p.run(&["compare", "base.jsonl", "r.jsonl", "--max-regression", "0.5"])
        .code(1)
        .stdout_has("1 case(s) graded in the base run could not be graded in the candidate")
        .stdout_has("broken [default]: invalid");
}

/// `set -e` scripts as GitHub runs them (`bash -e`), with an `agentv` that exits 3.
#[test]
fn ci_workflow_fails_every_step_whose_agentv_exits_3() {
    let workflow =
        std::fs::read_to_string(repo_root().join("examples/ci/.github/workflows/agentv.yml")).expect("workflow");
    let dir = tempfile::tempdir().expect("tmp");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    let fake = bin.join("agentv");
    std::fs::write(&fake, "#!/bin/sh\necho \"agentv $*\" >> \"$LOG\"\nexit 3\n").expect("fake");
    agentv_testkit::make_executable(&fake);
    let scripts = run_blocks(&workflow);
    let with_agentv: Vec<&String> = scripts.iter().filter(|s| s.contains("agentv ")).collect();
    assert!(with_agentv.len() >= 3, "eval, merge and compare steps: {scripts:?}");
    for script in with_agentv {
        let script = script.replace("${{ matrix.shard }}", "1");
        let status = Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
            .current_dir(dir.path())
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("LOG", dir.path().join("log"))
            .env("SUITE", "s.yaml")
            .env("BASELINE", "b.jsonl")
            .env("SHARDS", "4")
            .env("GITHUB_STEP_SUMMARY", dir.path().join("summary"))
            .status()
            .expect("bash runs");
        assert!(!status.success(), "a step passed although agentv exited 3:\n{script}");
    }
}

/// The `run: |` blocks of a workflow, each as one script.
fn run_blocks(workflow: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut lines = workflow.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim_start() != "run: |" {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let mut script = String::new();
        while let Some(next) = lines.peek() {
            let next_indent = next.len() - next.trim_start().len();
            if !next.trim().is_empty() && next_indent <= indent {
                break;
            }
            script.push_str(next.trim_start());
            script.push('\n');
            lines.next();
        }
        blocks.push(script);
    }
    blocks
}

/// A resumed results file: an execution error, then the same case run again and graded.
#[test]
fn report_counts_the_last_line_of_a_resumed_results_file() {
    let mut text = String::new();
    for i in 0..4 {
        text.push_str(&line(&format!("c{i}"), 0.0, "execution_error"));
    }
    for i in 0..4 {
        text.push_str(&line(&format!("c{i}"), 0.9, "ok"));
    }
    text.push_str(&line("c9", 0.3, "ok"));
    let p = Project::new().file("r.jsonl", &text);
    let run = p.run(&[
        "report",
        "r.jsonl",
        "--markdown",
        "r.md",
        "--junit",
        "r.xml",
        "--html",
        "r.html",
    ]);
    run.code(0)
        .stderr_has("4 superseded line(s) left out: the last line of each case counts");
    let markdown = std::fs::read_to_string(p.path().join("r.md")).expect("md");
    assert!(
        markdown.contains("**❌ failures** · 5 case(s) · pass rate 80.0 % · mean score 0.780 · 0 error(s)"),
        "{markdown}"
    );
    let junit = std::fs::read_to_string(p.path().join("r.xml")).expect("junit");
    assert!(
        junit.contains(r#"<testsuites name="agentv" tests="5" failures="1" errors="0""#),
        "{junit}"
    );
    let html = std::fs::read_to_string(p.path().join("r.html")).expect("html");
    assert_eq!(html.matches("<script type=\"application/json\" id=\"c").count(), 5);
    // compare, merge and validate agree.
    let run = p.run(&["compare", "r.jsonl", "r.jsonl", "--format", "json"]);
    let v = json_of(&run.stdout);
    assert_eq!(
        (v["base"]["cases"].as_u64(), v["base"]["superseded"].as_u64()),
        (Some(5), Some(4))
    );
    assert_eq!(v["counts"]["errors"], 0, "the older error lines do not count");
    p.run(&["merge", "r.jsonl", "--out", "all.jsonl"])
        .code(0)
        .stderr_has("r.jsonl: 5 record(s) (4 older cop(ies) left out)");
    assert_eq!(p.results("all.jsonl").len(), 5);
    p.run(&["validate", "r.jsonl"]).code(0);
}

/// A results file whose first record is larger than any fixed read-ahead.
#[test]
fn a_results_file_with_a_first_record_over_4_mib_is_not_read_as_a_dataset() {
    let huge = line("big", 1.0, "ok").replace(
        "\"candidate_answer\":\"a\"",
        &format!("\"candidate_answer\":\"{}\"", "x".repeat(5 << 20)),
    );
    assert!(huge.len() > 5 << 20);
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hi"))
        .file(
            "evals/e.yaml",
            "execution:\n  evaluators: [{name: kw, type: keywords, expected: [hi]}]\nevalcases:\n  - {id: one, input_messages: [{role: user, content: q}]}\n",
        )
        .file("evals/last-run.jsonl", &(huge + &line("small", 1.0, "ok")));
    let run = p.run(&["validate", "evals"]);
    run.code(0);
    assert!(
        !run.stderr.contains("last-run.jsonl:1"),
        "read as results, not cases:\n{}",
        run.stderr
    );
    let run = p.run(&["eval", "evals", "--out", "r.jsonl"]);
    run.code(0).stderr_has("Running 1 case(s)");
    assert_eq!(p.results("r.jsonl").len(), 1);
}

/// Lines far larger than any sensible record: read whole only up to the cap, streamed
/// otherwise.
#[test]
fn a_line_over_the_cap_is_a_clear_error_and_compare_and_merge_stream_it() {
    let big = line("big", 0.5, "ok").replace(
        "\"hits\":[]",
        &format!("\"hits\":[{}]", vec!["\"h\""; 600_000].join(",")),
    );
    assert!(big.len() > 2 << 20);
    let text = big + &line("small", 1.0, "ok");
    let p = Project::new()
        .file("r.jsonl", &text)
        .file("targets.yaml", &mock_targets("hi"))
        .file(
            "d.jsonl",
            &format!(
                "{{\"id\": \"huge\", \"input\": \"{}\", \"expected_output\": \"hi\"}}\n{{\"id\": \"fine\", \"input\": \"q\", \"expected_output\": \"hi\"}}\n",
                "q".repeat(3 << 20)
            ),
        )
        .file("d.yaml", "execution:\n  evaluators: [{name: kw, type: keywords, expected: [hi]}]\n");
    let capped = |args: &[&str]| {
        let mut cmd = p.command(args);
        cmd.env("AGENTV_MAX_LINE_MB", "2");
        p.output(&mut cmd)
    };
    capped(&["report", "r.jsonl", "--junit", "r.xml"])
        .code(2)
        .stderr_has("r.jsonl:1: the line is over 2.0 MiB (the most one record may take to be read whole); set AGENTV_MAX_LINE_MB=<MiB> to read longer lines");
    let mut raised = p.command(&["report", "r.jsonl", "--junit", "r.xml"]);
    raised.env("AGENTV_MAX_LINE_MB", "8");
    p.output(&mut raised).code(0);
    // compare and merge read figures only: no cap applies.
    capped(&["compare", "r.jsonl", "r.jsonl"])
        .code(0)
        .stdout_has("Matched 2 case(s)");
    capped(&["merge", "r.jsonl", "--out", "all.jsonl"]).code(0);
    assert_eq!(
        std::fs::read(p.path().join("all.jsonl")).expect("merged"),
        text.as_bytes(),
        "copied as is"
    );
    // A dataset line over the cap is an error for its case, which is recorded as invalid.
    let run = capped(&["eval", "d.jsonl", "--out", "out.jsonl"]);
    run.code(3).stderr_has(
        "d.jsonl:1:1: error: this line is 3.0 MiB, over the 2.0 MiB one case may take; the line is skipped",
    );
    let statuses: Vec<(String, String)> = p
        .results("out.jsonl")
        .iter()
        .map(|r| {
            (
                r["eval_id"].as_str().unwrap_or("").to_owned(),
                r["execution_status"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("d.jsonl:1".to_owned(), "invalid".to_owned()),
            ("fine".to_owned(), "ok".to_owned())
        ]
    );
}

/// A code judge that returns a 9 MB list of hits.
#[test]
fn judge_hits_are_stored_once_in_a_record() {
    let judge = "cat > /dev/null\nawk 'BEGIN { printf \"{\\\"score\\\": 0.9, \\\"hits\\\": [\"; for (i = 0; i < 200000; i++) { if (i) printf \",\"; printf \"\\\"hit number %06d with some explanatory text\\\"\", i }; printf \"], \\\"misses\\\": [\\\"one miss\\\"]}\" }'\n";
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hello"))
        .file("judge.sh", judge)
        .file(
            "e.yaml",
            "execution:\n  evaluators: [{name: big, type: code_judge, script: [sh, judge.sh]}]\nevalcases:\n  - {id: a, input_messages: [{role: user, content: q}]}\n",
        );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    let text = std::fs::read_to_string(p.path().join("r.jsonl")).expect("results");
    let record = json_of(text.trim_end());
    let hits = record["evaluator_results"][0]["hits"].as_array().expect("hits");
    assert_eq!(hits.len(), 200_000, "the judge's list is kept whole");
    let list_bytes = serde_json::to_string(hits).expect("json").len();
    assert!(list_bytes > 9_000_000);
    assert!(
        text.len() < list_bytes + list_bytes / 10,
        "a {list_bytes}-byte list made a {}-byte record",
        text.len()
    );
    let case_hits = record["hits"].as_array().expect("case hits");
    assert!(case_hits.len() < 2_000, "{}", case_hits.len());
    assert!(
        case_hits
            .last()
            .and_then(Value::as_str)
            .is_some_and(|m| m.contains("more hits not repeated here")),
        "{:?}",
        case_hits.last()
    );
    assert!(
        record["scores"][0]["details"]["assertions_not_repeated"]
            .as_u64()
            .is_some_and(|n| n > 190_000)
    );
    assert_eq!(record["misses"], json!(["one miss"]));
}

/// Shards record each invalid case once, and the merged run is incomplete.
#[test]
fn invalid_cases_of_shards_are_merged_once_and_keep_the_run_incomplete() {
    let mut yaml = agentv_testkit::keyword_cases(6);
    for i in 0..4 {
        yaml.push_str(&format!("  - {{id: bad{i}, expected_outcome: x, input_messages: 5}}\n"));
    }
    let p = Project::new()
        .file("targets.yaml", &mock_targets("done"))
        .file("e.yaml", &yaml);
    let mut shards = Vec::new();
    let mut invalid = 0;
    for k in 1..=3 {
        let out = format!("s{k}.jsonl");
        let run = p.run(&["eval", "e.yaml", "--shard", &format!("{k}/3"), "--out", &out]);
        let mine = p
            .results(&out)
            .iter()
            .filter(|r| r["execution_status"] == "invalid")
            .count();
        run.code(if mine > 0 { 3 } else { 0 });
        invalid += mine;
        shards.push(out);
    }
    assert_eq!(invalid, 4, "each invalid case in one shard");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(String::as_str));
    args.extend(["--out", "all.jsonl"]);
    p.run(&args)
        .code(3)
        .stderr_has("Run incomplete: 4 record(s) are invalid cases");
    assert_eq!(p.results("all.jsonl").len(), 10);
}
