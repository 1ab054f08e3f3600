//! Batch mode (`docs/batch.md`) for Anthropic (Message Batches) and Gemini (batch mode)
//! against the kit's fakes of both: the same scores as online, failed and expired items
//! answered online once each (or errors under `--batch=strict`), `kill -9` then `--resume`
//! without a job submitted twice, `agentv batch list|cancel`, and the batch price. The cases
//! are graded by keywords only: what goes through the batch APIs here is the targets' answers.

use std::sync::atomic::Ordering;
use std::time::Duration;

use agentv_testkit::llm::batch::BatchCounters;
use agentv_testkit::llm::{Api, BatchBehaviour, FakeLlm};
use serde_json::Value;

use agentv_testkit::Project;

use super::batch_mode::{
    assert_half_price, assert_key_only_in_targets, kill_9_once_submitted, scores, suite, target_calls,
};

const APIS: [Api; 2] = [Api::Anthropic, Api::Gemini];

/// The fake batch API of `api`.
fn jobs(server: &FakeLlm, api: Api) -> &BatchCounters {
    match api {
        Api::Anthropic => &server.anthropic_batch().counters,
        _ => &server.gemini_batch().counters,
    }
}

/// `cases` cases graded by keywords, the target `default` of `api` at the fake.
fn project(api: Api, server: &FakeLlm, cases: usize, extra: &str) -> Project {
    let p = super::batch_mode::project(api, server, cases, extra);
    let keywords_only = suite(cases).replace("    - {name: judge, type: llm_judge}\n", "");
    assert_ne!(keywords_only, suite(cases), "the judge is left out");
    p.file("e.yaml", &keywords_only)
}

fn count(c: &std::sync::atomic::AtomicU64) -> u64 {
    c.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_and_gemini_batch_runs_score_as_the_online_runs_do() {
    for api in APIS {
        let server = FakeLlm::builder().without_recording().start().await;
        let p = project(api, &server, 200, "");
        p.output_async(p.command(&["eval", "e.yaml", "--out", "online.jsonl", "--workers", "16"]))
            .await
            .code(0);
        assert_eq!(target_calls(&server), 200, "{api:?}");
        let run = p
            .output_async(p.command(&["eval", "e.yaml", "--out", "batch.jsonl", "--workers", "16", "--batch"]))
            .await;
        run.code(0).stderr_has("submitted, 200 request(s)");
        let c = jobs(&server, api);
        assert_eq!((count(&c.jobs), count(&c.items)), (1, 200), "{api:?}");
        assert_eq!(
            target_calls(&server),
            200,
            "{api:?}: no online target call in batch mode"
        );
        let (online, batch) = (scores(&p, "online.jsonl"), scores(&p, "batch.jsonl"));
        assert_eq!(batch.len(), 200, "{api:?}");
        assert_eq!(online, batch, "{api:?}: the same score for every case");
        let record = p.result("batch.jsonl", "c7");
        let job = record["lm_provider_request"]["response_metadata"]["batch_job"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            job.starts_with(if api == Api::Anthropic { "msgbatch_" } else { "batches/" }),
            "{api:?}: the record names its job: {record}"
        );
        assert_eq!(record["candidate_answer"], "2+2 is 4.", "{api:?}");
        // The batch price: half the online price (the pricing table's discount), the saving
        // recorded and summed.
        assert_half_price(&p, &record, &format!("{api:?}"));
        run.stderr_has("Batch price: 200 case(s) cost $");
        assert_key_only_in_targets(&p, &format!("{api:?}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_and_expired_anthropic_and_gemini_items_are_answered_online_once_each() {
    for api in APIS {
        // Anthropic expires items one by one (the second half); a Gemini job expires whole.
        // Anthropic refuses an invalid batch when it is created; Gemini fails the job later.
        let (expired, refused_jobs) = if api == Api::Anthropic { (15, 0) } else { (30, 1) };
        for (what, behaviour, online, jobs_made) in [
            (
                "every third item fails",
                BatchBehaviour {
                    fail_every: Some(3),
                    ..BatchBehaviour::default()
                },
                10,
                1,
            ),
            (
                "the job expires",
                BatchBehaviour {
                    expire: true,
                    ..BatchBehaviour::default()
                },
                expired,
                1,
            ),
            (
                "the job fails validation",
                BatchBehaviour {
                    fail_job: true,
                    ..BatchBehaviour::default()
                },
                30,
                refused_jobs,
            ),
        ] {
            let server = FakeLlm::builder().without_recording().batch(behaviour).start().await;
            let p = project(api, &server, 30, "    batch: true\n");
            let run = p.output_async(p.command(&["eval", "e.yaml", "--out", "r.jsonl"])).await;
            run.code(0).stderr_has(&format!(
                "{online} case(s) of `default` had no batch answer; answering them online"
            ));
            assert_eq!(target_calls(&server), online, "{api:?}: {what}");
            let records = p.results("r.jsonl");
            assert_eq!(records.len(), 30, "{api:?}: {what}: each case once");
            assert!(records.iter().all(|r| r["execution_status"] == "ok"), "{api:?}: {what}");
            assert_eq!(count(&jobs(&server, api).jobs), jobs_made, "{api:?}: {what}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_batch_makes_failed_anthropic_and_gemini_items_execution_errors() {
    for api in APIS {
        let server = FakeLlm::builder()
            .without_recording()
            .batch(BatchBehaviour {
                fail_every: Some(2),
                ..BatchBehaviour::default()
            })
            .start()
            .await;
        let p = project(api, &server, 10, "");
        let run = p
            .output_async(p.command(&["eval", "e.yaml", "--out", "r.jsonl", "--batch=strict"]))
            .await;
        run.code(3);
        assert_eq!(
            target_calls(&server),
            0,
            "{api:?}: nothing goes online under --batch=strict"
        );
        let errors: Vec<Value> = p
            .results("r.jsonl")
            .into_iter()
            .filter(|r| r["execution_status"] == "execution_error")
            .collect();
        assert_eq!(errors.len(), 5, "{api:?}");
        assert!(
            errors[0]["error"].as_str().unwrap_or("").contains("batch item"),
            "{api:?}: {}",
            errors[0]
        );
    }
}

/// `kill -9` while the job is pending, then `--resume`: reattached, never submitted twice (the
/// fake's counters), every case recorded once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_then_resume_reattaches_anthropic_and_gemini_jobs_without_submitting_twice() {
    for api in APIS {
        let server = FakeLlm::builder()
            .without_recording()
            .batch(BatchBehaviour {
                ready_after: Duration::from_secs(3),
                ..BatchBehaviour::default()
            })
            .start()
            .await;
        let p = project(api, &server, 40, "    batch: true\n");
        kill_9_once_submitted(&p).await;
        assert_eq!(count(&jobs(&server, api).jobs), 1, "{api:?}");
        let run = p
            .output_async(p.command(&["eval", "e.yaml", "--resume", "r.jsonl"]))
            .await;
        run.code(0).stderr_has("reattached");
        assert_eq!(count(&jobs(&server, api).jobs), 1, "{api:?}: no job submitted twice");
        assert_eq!(count(&jobs(&server, api).items), 40, "{api:?}");
        assert_eq!(target_calls(&server), 0, "{api:?}: no case paid twice online");
        assert_eq!(p.results("r.jsonl").len(), 40, "{api:?}: every case recorded once");
    }
}

/// `agentv batch list|cancel RESULTS` on the jobs of a run killed while they were pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_list_and_cancel_show_and_stop_anthropic_and_gemini_jobs() {
    for (api, id, running, cancelled) in [
        (
            Api::Anthropic,
            "msgbatch_fake1",
            "in_progress, 0/5 done",
            "ended, 0/5 done, 5 failed",
        ),
        (
            Api::Gemini,
            "batches/fake1",
            "BATCH_STATE_RUNNING",
            "BATCH_STATE_CANCELLED",
        ),
    ] {
        let server = FakeLlm::builder()
            .without_recording()
            .batch(BatchBehaviour {
                ready_after: Duration::from_secs(600),
                ..BatchBehaviour::default()
            })
            .start()
            .await;
        let p = project(api, &server, 5, "    batch: true\n");
        kill_9_once_submitted(&p).await;
        let list = p.output_async(p.command(&["batch", "list", "r.jsonl"])).await;
        list.code(0)
            .stdout_has(&format!("default  {id}  5 request(s)"))
            .stdout_has(running);
        let cancel = p.output_async(p.command(&["batch", "cancel", "r.jsonl"])).await;
        cancel.code(0).stdout_has("cancel requested");
        assert_eq!(count(&jobs(&server, api).cancels), 1, "{api:?}");
        let list = p.output_async(p.command(&["batch", "list", "r.jsonl"])).await;
        list.code(0).stdout_has(cancelled);
        let again = p.output_async(p.command(&["batch", "cancel", "r.jsonl"])).await;
        again.code(0);
        assert_eq!(
            count(&jobs(&server, api).cancels),
            1,
            "{api:?}: a finished job is not cancelled again"
        );
    }
}
