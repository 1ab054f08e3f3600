//! Batch mode (`docs/batch.md`) against the kit's fake OpenAI batch API: files, jobs, polling,
//! results out of order, failed items, expiry, a failed job, and reattaching after `kill -9`.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use agentv_testkit::Project;
use agentv_testkit::llm::{Api, BatchBehaviour, FakeLlm};
use serde_json::Value;

/// `n` cases graded by keywords and the LLM judge.
pub(super) fn suite(n: usize) -> String {
    let mut yaml = String::from(
        "execution:\n  evaluators:\n    - {name: kw, type: keywords, expected: ['4']}\n    - {name: judge, type: llm_judge}\nevalcases:\n",
    );
    for i in 0..n {
        yaml.push_str(&format!(
            "  - {{id: c{i}, expected_outcome: Answers 4., input_messages: [{{role: user, content: 'q{i}: what is 2+2?'}}]}}\n"
        ));
    }
    yaml
}

fn targets(api: Api, uri: &str, extra: &str) -> String {
    format!(
        "targets:\n{}    batch_poll_ms: 20\n{extra}",
        api.target("default", uri, "sk-batch-secret-value")
    )
}

pub(super) fn project(api: Api, server: &FakeLlm, cases: usize, extra: &str) -> Project {
    Project::new()
        .timeout(Duration::from_secs(300))
        .file("targets.yaml", &targets(api, &server.uri(), extra))
        .file("e.yaml", &suite(cases))
}

pub(super) fn scores(p: &Project, file: &str) -> HashMap<String, (Value, Value)> {
    p.results(file)
        .into_iter()
        .map(|r| {
            let id = r["eval_id"].as_str().expect("id").to_owned();
            (id, (r["score"].clone(), r["execution_status"].clone()))
        })
        .collect()
}

/// Starts `eval e.yaml --out r.jsonl` and kills it with SIGKILL as soon as its batch state
/// (the submitted job's id) is on disk.
pub(super) async fn kill_9_once_submitted(p: &Project) {
    kill_9_once_state_has(p, "\"jobs\"").await;
}

/// Starts `eval e.yaml --out r.jsonl` and kills it with SIGKILL as soon as its batch state
/// holds `text`.
async fn kill_9_once_state_has(p: &Project, text: &str) {
    let spawned = p.spawn(&["eval", "e.yaml", "--out", "r.jsonl"]);
    let state = p.path().join("r.jsonl.batches.json");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let holds = || std::fs::read_to_string(&state).is_ok_and(|t| t.contains(text));
    while !holds() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(holds(), "the job id is written before waiting");
    agentv_testkit::process::send_signal(spawned.pid(), "KILL");
    let killed = tokio::task::spawn_blocking(move || spawned.wait())
        .await
        .expect("joined");
    assert_eq!(killed.code, -1, "killed by a signal");
}

/// `record` (case `c7` of `batch.jsonl`) cost half what it did online (`online.jsonl`), the
/// saving recorded in its batch price.
pub(super) fn assert_half_price(p: &Project, record: &Value, what: &str) {
    let online_cost = p.result("online.jsonl", "c7")["execution_metrics"]["cost_usd"]
        .as_f64()
        .expect("priced online");
    let batch_cost = record["execution_metrics"]["cost_usd"]
        .as_f64()
        .expect("priced in batch");
    assert!(online_cost > 0.0, "{what}");
    assert!(
        (batch_cost - online_cost * 0.5).abs() < 1e-12,
        "{what}: {batch_cost} vs {online_cost}"
    );
    let price = &record["lm_provider_request"]["response_metadata"]["batch_price"];
    assert!(
        (price["saved_usd"].as_f64().expect("saved") - online_cost * 0.5).abs() < 1e-12,
        "{what}: {price}"
    );
}

/// No file of the project but the targets file holds the API key.
pub(super) fn assert_key_only_in_targets(p: &Project, what: &str) {
    for file in agentv_testkit::walk(p.path())
        .into_iter()
        .filter(|f| !f.ends_with("targets.yaml"))
    {
        let text = std::fs::read(&file).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&text).contains("sk-batch-secret-value"),
            "{what}: {}",
            file.display()
        );
    }
}

pub(super) fn target_calls(server: &FakeLlm) -> u64 {
    let c = server.counters();
    c.requests.load(Ordering::SeqCst) - c.judge.load(Ordering::SeqCst)
}

/// Online judge calls (batch items are counted apart).
fn judge_calls(server: &FakeLlm) -> u64 {
    server.counters().judge.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_case_batch_run_scores_as_the_online_run_does() {
    let server = FakeLlm::builder().without_recording().start().await;
    let p = project(Api::OpenAi, &server, 500, "");
    p.output_async(p.command(&["eval", "e.yaml", "--out", "online.jsonl", "--workers", "16"]))
        .await
        .code(0);
    assert_eq!(target_calls(&server), 500);
    let run = p
        .output_async(p.command(&["eval", "e.yaml", "--out", "batch.jsonl", "--workers", "16", "--batch"]))
        .await;
    run.code(0)
        .stderr_has("batch job batch-2 of `default`: submitted, 500 request(s)")
        .stderr_has("completed, 500/500 done, 0 failed")
        .stderr_has("of judge `default`: submitted, 500 request(s)");
    let jobs = server.batch().counters.to_json();
    assert_eq!(
        (jobs["files"].as_u64(), jobs["jobs"].as_u64(), jobs["items"].as_u64()),
        (Some(2), Some(2), Some(1000)),
        "one job of answers, then one of judge requests, not capped at --workers"
    );
    assert_eq!(target_calls(&server), 500, "no online target call in batch mode");
    assert_eq!(judge_calls(&server), 500, "no online judge call in batch mode");
    let (online, batch) = (scores(&p, "online.jsonl"), scores(&p, "batch.jsonl"));
    assert_eq!(batch.len(), 500);
    assert_eq!(online, batch, "the same score for every case");
    let record = p.result("batch.jsonl", "c7");
    assert!(
        record["lm_provider_request"]["response_metadata"]["batch_job"].is_string(),
        "the record names its batch job: {record}"
    );
    assert_eq!(record["candidate_answer"], "2+2 is 4.");
    assert_eq!(record["lm_provider_request"]["response_metadata"]["batched"], true);
    let judge = &record["evaluator_results"][1];
    assert_eq!(judge["evaluator_provider_request"]["batched"], true, "{judge}");
    assert!(judge["evaluator_provider_request"]["batch_job"].is_string(), "{judge}");
    assert!(record["evaluator_results"][0]["evaluator_provider_request"].is_null());
    // The batch price: half the online price of gpt-4o-mini, the saving recorded and summed.
    assert_half_price(&p, &record, "openai");
    run.stderr_has("Batch price: 500 case(s) cost $");
    let state = std::fs::read_to_string(p.path().join("batch.jsonl.batches.json")).expect("the batch state");
    assert!(state.contains("\"target\": \"default\""), "{state}");
    assert_key_only_in_targets(&p, "openai");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_and_expired_items_are_answered_online_once_each() {
    for (what, behaviour, online) in [
        (
            "every third item fails",
            BatchBehaviour {
                fail_every: Some(3),
                ..BatchBehaviour::default()
            },
            10,
        ),
        (
            "the job expires half done",
            BatchBehaviour {
                expire: true,
                ..BatchBehaviour::default()
            },
            15,
        ),
        (
            "the job fails validation",
            BatchBehaviour {
                fail_job: true,
                ..BatchBehaviour::default()
            },
            30,
        ),
    ] {
        let server = FakeLlm::builder().without_recording().batch(behaviour).start().await;
        let p = project(Api::OpenAi, &server, 30, "    batch: true\n");
        let run = p.output_async(p.command(&["eval", "e.yaml", "--out", "r.jsonl"])).await;
        run.code(0)
            .stderr_has(&format!(
                "{online} case(s) of `default` had no batch answer; answering them online"
            ))
            .stderr_has(&format!(
                "{online} request(s) of judge `default` had no batch answer; answering them online"
            ));
        assert_eq!(target_calls(&server), online, "{what}");
        assert_eq!(
            judge_calls(&server),
            online,
            "{what}: each failed judge item online once"
        );
        let records = p.results("r.jsonl");
        assert_eq!(records.len(), 30, "{what}: each case once");
        assert!(records.iter().all(|r| r["execution_status"] == "ok"), "{what}");
        let online_judges = records
            .iter()
            .filter(|r| r["evaluator_results"][1]["evaluator_provider_request"]["batched"] == false)
            .count();
        assert_eq!(
            online_judges as u64, online,
            "{what}: the record says which judge went online"
        );
        assert_eq!(server.batch().counters.jobs.load(Ordering::SeqCst), 2, "{what}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_batch_makes_failed_items_execution_errors() {
    let server = FakeLlm::builder()
        .without_recording()
        .batch(BatchBehaviour {
            fail_every: Some(2),
            ..BatchBehaviour::default()
        })
        .start()
        .await;
    let p = project(Api::OpenAi, &server, 10, "");
    let run = p
        .output_async(p.command(&["eval", "e.yaml", "--out", "r.jsonl", "--batch=strict"]))
        .await;
    run.code(3);
    assert_eq!(target_calls(&server), 0, "nothing goes online under --batch=strict");
    assert_eq!(judge_calls(&server), 0, "no judge goes online under --batch=strict");
    let judged: Vec<Value> = p
        .results("r.jsonl")
        .into_iter()
        .filter(|r| r["execution_status"] == "grader_error")
        .collect();
    assert!(!judged.is_empty(), "failed judge items are grader errors");
    assert!(
        judged[0]["evaluator_results"][1]["error"]
            .as_str()
            .unwrap_or("")
            .contains("batch item failed"),
        "{}",
        judged[0]
    );
    let errors: Vec<Value> = p
        .results("r.jsonl")
        .into_iter()
        .filter(|r| r["execution_status"] == "execution_error")
        .collect();
    assert_eq!(errors.len(), 5);
    assert!(
        errors[0]["error"].as_str().unwrap_or("").contains("batch item"),
        "{}",
        errors[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_targets_batch_through_the_same_files_and_batches_shape() {
    let server = FakeLlm::builder().without_recording().start().await;
    let p = project(Api::Azure, &server, 20, "    batch: true\n");
    p.output_async(p.command(&["eval", "e.yaml", "--out", "r.jsonl"]))
        .await
        .code(0);
    assert_eq!(
        server.batch().counters.items.load(Ordering::SeqCst),
        40,
        "20 answers, then 20 judge requests"
    );
    assert_eq!(target_calls(&server), 0);
    assert_eq!(judge_calls(&server), 0);
    assert_eq!(p.results("r.jsonl").len(), 20);
}

/// `kill -9` while the job is pending, then `--resume`: the job is reattached, never submitted
/// twice (the server's counters), and every case is recorded once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_then_resume_reattaches_without_submitting_twice() {
    let server = FakeLlm::builder()
        .without_recording()
        .batch(BatchBehaviour {
            ready_after: Duration::from_secs(4),
            ..BatchBehaviour::default()
        })
        .start()
        .await;
    let p = project(Api::OpenAi, &server, 40, "    batch: true\n");
    kill_9_once_submitted(&p).await;
    assert_eq!(server.batch().counters.jobs.load(Ordering::SeqCst), 1);
    let run = p
        .output_async(p.command(&["eval", "e.yaml", "--resume", "r.jsonl"]))
        .await;
    run.code(0).stderr_has("reattached");
    assert_eq!(
        server.batch().counters.jobs.load(Ordering::SeqCst),
        2,
        "no job submitted twice: the answers' job reattached, then the judges' job"
    );
    assert_eq!(server.batch().counters.files.load(Ordering::SeqCst), 2);
    assert_eq!(target_calls(&server), 0, "no case paid twice online");
    assert_eq!(judge_calls(&server), 0);
    let records = p.results("r.jsonl");
    assert_eq!(records.len(), 40, "every case recorded once");
}

/// A new run (no `--resume`) writing the same results file starts afresh: it never takes the
/// answers of the jobs an earlier run left behind (its prompts may have changed since).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_run_without_resume_submits_its_own_jobs_instead_of_reattaching() {
    let server = FakeLlm::builder()
        .without_recording()
        .batch(BatchBehaviour {
            ready_after: Duration::from_secs(2),
            ..BatchBehaviour::default()
        })
        .start()
        .await;
    let p = project(Api::OpenAi, &server, 10, "    batch: true\n");
    kill_9_once_submitted(&p).await;
    assert_eq!(server.batch().counters.jobs.load(Ordering::SeqCst), 1);
    let run = p.output_async(p.command(&["eval", "e.yaml", "--out", "r.jsonl"])).await;
    run.code(0);
    assert!(!run.stderr.contains("reattached"), "{}", run.stderr);
    assert_eq!(
        server.batch().counters.jobs.load(Ordering::SeqCst),
        3,
        "the new run submits its answers' job and its judges' job"
    );
    assert_eq!(p.results("r.jsonl").len(), 10);
}

/// `kill -9` while the judges' job is pending, then `--resume`: both jobs are reattached,
/// none submitted twice, no judge called online, and every case graded and recorded once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_judges_wait_then_resume_reattaches_to_the_judge_job() {
    let server = FakeLlm::builder()
        .without_recording()
        .batch(BatchBehaviour {
            ready_after: Duration::from_secs(3),
            ..BatchBehaviour::default()
        })
        .start()
        .await;
    let p = project(Api::OpenAi, &server, 25, "    batch: true\n");
    kill_9_once_state_has(&p, "\"role\": \"judge\"").await;
    assert_eq!(server.batch().counters.jobs.load(Ordering::SeqCst), 2);
    assert!(p.results("r.jsonl").is_empty(), "no case was graded before the kill");
    let run = p
        .output_async(p.command(&["eval", "e.yaml", "--resume", "r.jsonl"]))
        .await;
    run.code(0).stderr_has("of judge `default`: reattached");
    assert_eq!(
        server.batch().counters.jobs.load(Ordering::SeqCst),
        2,
        "no job submitted twice"
    );
    assert_eq!(target_calls(&server), 0);
    assert_eq!(judge_calls(&server), 0, "no judge paid twice online");
    let records = p.results("r.jsonl");
    assert_eq!(records.len(), 25, "every case recorded once");
    assert!(
        records
            .iter()
            .all(|r| r["evaluator_results"][1]["evaluator_provider_request"]["batched"] == true),
        "every judge answered by the reattached job"
    );
}

/// `agentv batch list|cancel RESULTS`: the jobs of a run killed while they were pending, where
/// each stands at its provider, and cancelling them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_list_and_cancel_show_and_stop_a_runs_jobs() {
    let server = FakeLlm::builder()
        .without_recording()
        .batch(BatchBehaviour {
            ready_after: Duration::from_secs(600),
            ..BatchBehaviour::default()
        })
        .start()
        .await;
    let p = project(Api::OpenAi, &server, 5, "    batch: true\n");
    p.run(&["batch", "list", "r.jsonl"])
        .code(2)
        .stderr_has("no batch jobs recorded for r.jsonl");
    kill_9_once_submitted(&p).await;
    let list = p.output_async(p.command(&["batch", "list", "r.jsonl"])).await;
    list.code(0)
        .stdout_has("default  batch-2  5 request(s)")
        .stdout_has("in_progress, 0/5 done, 0 failed");
    let cancel = p.output_async(p.command(&["batch", "cancel", "r.jsonl"])).await;
    cancel.code(0).stdout_has("cancel requested");
    assert_eq!(server.batch().counters.cancels.load(Ordering::SeqCst), 1);
    let list = p.output_async(p.command(&["batch", "list", "r.jsonl"])).await;
    list.code(0).stdout_has("cancelled");
}

/// In a pipe, each job's submission, every change of its state or counts and its end are
/// plain lines, the targets' jobs and then the judges'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_jobs_in_a_pipe_are_plain_lines() {
    let server = FakeLlm::builder().without_recording().start().await;
    let p = project(Api::OpenAi, &server, 3, "    batch: true\n");
    let run = p
        .output_async(p.command(&["eval", "e.yaml", "--out", "r.jsonl", "--workers", "1"]))
        .await;
    agentv_testkit::assert_run_snapshot!("batch_jobs_in_a_pipe", Some(p.path()), run);
}

/// On a terminal, the bar's second line shows the jobs, their state and counts while they
/// run; only their submission and their end are lines above it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_jobs_on_a_terminal_show_in_the_progress_bar() {
    let server = FakeLlm::builder()
        .without_recording()
        .batch(BatchBehaviour {
            ready_after: Duration::from_millis(1500),
            ..BatchBehaviour::default()
        })
        .start()
        .await;
    let p = project(Api::OpenAi, &server, 3, "    batch: true\n");
    let mut cmd = p.command(&["eval", "e.yaml", "--out", "r.jsonl"]);
    cmd.env_remove("CI").env("TERM", "xterm-256color");
    let live =
        tokio::task::spawn_blocking(move || agentv_testkit::terminal::run_with_stderr_on_terminal(&mut cmd, 160, 24))
            .await
            .expect("joined");
    live.code(0);
    for shown in [
        "batch: 1 job(s) ░░░░░░░░░░░░ 0/3 done, 0 failed · batch-2 of `default`: in_progress 0/3",
        "of judge `default`: in_progress 0/3",
        "batch job batch-2 of `default`: submitted, 3 request(s)",
        "batch job batch-2 of `default`: completed, 3/3 done, 0 failed",
        "of judge `default`: completed, 3/3 done, 0 failed",
    ] {
        assert!(live.stderr.contains(shown), "{shown}:\n{}", live.stderr);
    }
    assert!(
        !live.stderr.contains("in_progress, 0/3 done"),
        "counts change on the bar, not as lines:\n{}",
        live.stderr
    );
}

/// The judge wave needs nothing of a provider but its batch API: Anthropic and Gemini judges
/// batch as OpenAI's do, and score as their online runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_and_gemini_judges_batch_in_the_second_wave() {
    for api in [Api::Anthropic, Api::Gemini] {
        let server = FakeLlm::builder().without_recording().start().await;
        let p = project(api, &server, 20, "");
        p.output_async(p.command(&["eval", "e.yaml", "--out", "online.jsonl"]))
            .await
            .code(0);
        assert_eq!(judge_calls(&server), 20, "{api:?}");
        let run = p
            .output_async(p.command(&["eval", "e.yaml", "--out", "batch.jsonl", "--batch"]))
            .await;
        run.code(0).stderr_has("of judge `default`: submitted, 20 request(s)");
        let jobs = match api {
            Api::Anthropic => &server.anthropic_batch().counters,
            _ => &server.gemini_batch().counters,
        };
        assert_eq!(jobs.jobs.load(Ordering::SeqCst), 2, "{api:?}: answers, then judges");
        assert_eq!(judge_calls(&server), 20, "{api:?}: no online judge call in batch mode");
        assert_eq!(scores(&p, "online.jsonl"), scores(&p, "batch.jsonl"), "{api:?}");
        let record = p.result("batch.jsonl", "c3");
        assert_eq!(
            record["evaluator_results"][1]["evaluator_provider_request"]["batched"], true,
            "{api:?}: {record}"
        );
    }
}
