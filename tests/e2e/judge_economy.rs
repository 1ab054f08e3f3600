//! A code judge's proxy calls are cached under `--cache` and made once when identical calls
//! are in flight together (`docs/judges.md#what-a-call-costs`). The judge target is an OpenAI
//! target on the kit's fake LLM, which counts what reaches it; the eval target is a mock, so
//! every request the fake sees is the judge's.

use std::time::Duration;

use agentv_testkit::llm::{Api, FakeLlm};
use agentv_testkit::{Project, Run, walk};
use serde_json::{Value, json};

const KEY: &str = "sk-judge-economy-secret-key";
const MODEL: &str = "model-name-secret-e2e";

/// Asks the proxy twice: from two threads at once (and a batch of two equal items) when the
/// evaluator says `concurrent: true`, else one call after the other. With `with_secret: true`
/// the prompt holds the judge target's key, read from the environment.
const JUDGE: &str = r#"import json, os, sys, threading, urllib.request
payload = json.load(sys.stdin)
cfg = payload.get("config") or {}
url, token = os.environ["AGENTV_TARGET_PROXY_URL"], os.environ["AGENTV_TARGET_PROXY_TOKEN"]
def post(route, body):
    req = urllib.request.Request(url + route, data=json.dumps(body).encode(), method="POST")
    req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)
question = "Is the answer right?"
if cfg.get("with_secret"):
    question += " key=" + os.environ["E2E_JUDGE_KEY"]
answers = []
if cfg.get("concurrent"):
    barrier, out = threading.Barrier(2), [None, None]
    def ask(i):
        barrier.wait()
        out[i] = post("/invoke", {"question": question})["rawText"]
    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for t in threads: t.start()
    for t in threads: t.join()
    answers += out
    batch = post("/invokeBatch", {"requests": [{"question": "batched"}, {"question": "batched"}]})
    answers += [r["rawText"] for r in batch["responses"]]
else:
    answers += [post("/invoke", {"question": question})["rawText"] for _ in range(2)]
score = 0.75 if all("4" in (a or "") for a in answers) else 0.25
print(json.dumps({"score": score, "details": {"answers": answers}}))
"#;

fn project(server: &FakeLlm, evaluator_keys: &str) -> Project {
    let judge = Api::OpenAi
        .target("judge", &server.uri(), "${{ E2E_JUDGE_KEY }}")
        .replace("model: gpt-4o-mini", "model: ${{ E2E_JUDGE_MODEL }}");
    let targets = format!(
        "targets:\n  - name: default\n    provider: mock\n    judge_target: judge\n    response: the answer is 4\n{judge}"
    );
    let suite = format!(
        "execution:\n  evaluators:\n    - {{name: economy, type: code_judge, script: [python3, judge.py], target: true{evaluator_keys}}}\nevalcases:\n  - {{id: c, expected_outcome: x, input_messages: [{{role: user, content: q}}]}}\n"
    );
    Project::new()
        .file("targets.yaml", &targets)
        .file("judge.py", JUDGE)
        .file("e.yaml", &suite)
}

async fn run(p: &Project, args: &[&str]) -> Run {
    let mut cmd = p.command(args);
    cmd.env("E2E_JUDGE_KEY", KEY).env("E2E_JUDGE_MODEL", MODEL);
    p.output_async(cmd).await
}

fn target_proxy(p: &Project, results: &str) -> Value {
    p.result(results, "c")["evaluator_results"][0]["details"]["target_proxy"].clone()
}

/// Two threads ask the same thing at once and a batch holds two equal items: the fake answers
/// slowly, so each pair is in flight together and reaches the model once. Every call still
/// counts against the budget.
#[tokio::test]
async fn identical_concurrent_judge_calls_reach_the_model_once() {
    let server = FakeLlm::builder().latency(Duration::from_millis(800)).start().await;
    let p = project(&server, ", concurrent: true");
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl"]).await.code(0);
    assert_eq!(server.requests().await.len(), 2, "one call per distinct question");
    let r = p.result("r.jsonl", "c");
    assert_eq!(r["evaluator_results"][0]["score"], 0.75, "all four got the answer: {r}");
    assert_eq!(
        target_proxy(&p, "r.jsonl"),
        json!({"target_name": "judge", "call_count": 4, "max_calls": 50, "batch_used": true,
               "cached_calls": 0, "deduplicated_calls": 2,
               "token_usage": {"input": 40, "output": 10}})
    );
}

/// A second `--cache` run answers every judge call from disk: no model call, the same score.
/// Within the first run the repeated question is already a hit.
#[tokio::test]
async fn second_cached_run_makes_no_judge_model_call_and_scores_the_same() {
    let server = FakeLlm::start().await;
    let p = project(&server, "");
    run(&p, &["eval", "e.yaml", "--out", "r1.jsonl", "--cache"])
        .await
        .code(0)
        .stdout_has(" 1 hit, 1 miss");
    assert_eq!(server.requests().await.len(), 1);
    let first = target_proxy(&p, "r1.jsonl");
    assert_eq!(first["call_count"], 2);
    assert_eq!(first["cached_calls"], 1);
    assert_eq!(
        first["token_usage"],
        json!({"input": 20, "output": 5}),
        "only the model call"
    );
    run(&p, &["eval", "e.yaml", "--out", "r2.jsonl", "--cache"])
        .await
        .code(0)
        .stdout_has(" 2 hits, 0 misses");
    assert_eq!(
        server.requests().await.len(),
        1,
        "the second run made no judge model call"
    );
    let second = target_proxy(&p, "r2.jsonl");
    assert_eq!(
        second,
        json!({"target_name": "judge", "call_count": 2, "max_calls": 50, "batch_used": false,
               "cached_calls": 2, "deduplicated_calls": 0})
    );
    let score = |f: &str| p.result(f, "c")["evaluator_results"][0]["score"].clone();
    assert_eq!(score("r1.jsonl"), 0.75);
    assert_eq!(score("r2.jsonl"), score("r1.jsonl"));
}

/// Without `--cache` nothing is cached: the repeated question reaches the model again.
#[tokio::test]
async fn without_cache_every_judge_call_reaches_the_model() {
    let server = FakeLlm::start().await;
    let p = project(&server, "");
    for out in ["r1.jsonl", "r2.jsonl"] {
        run(&p, &["eval", "e.yaml", "--out", out]).await.code(0);
        let proxy = target_proxy(&p, out);
        assert_eq!(
            (proxy["cached_calls"].clone(), proxy["deduplicated_calls"].clone()),
            (json!(0), json!(0))
        );
    }
    assert_eq!(server.requests().await.len(), 4);
    assert!(!p.path().join(".agentv/cache").exists());
}

/// The fake echoes the request (the key in its headers, the model and the prompt in its body)
/// into its answer, which the cache stores: the stored answer is redacted, and neither the key,
/// the model setting nor the prompt's copy of the key is in any cache file.
#[tokio::test]
async fn judge_secrets_never_reach_the_cache_files() {
    let server = FakeLlm::builder().echo().start().await;
    let p = project(&server, ", with_secret: true");
    for out in ["r1.jsonl", "r2.jsonl"] {
        run(&p, &["eval", "e.yaml", "--out", out, "--cache"]).await.code(0);
    }
    assert_eq!(server.requests().await.len(), 1, "the rest were answered from disk");
    let files: Vec<_> = walk(&p.path().join(".agentv/cache"))
        .into_iter()
        .filter(|f| f.is_file())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = String::from_utf8_lossy(&std::fs::read(&files[0]).expect("cache file")).into_owned();
    assert!(text.contains("***"), "the echo was stored, redacted: {text}");
    for secret in [KEY, MODEL] {
        assert!(!text.contains(secret), "{secret} in {}", files[0].display());
        assert!(!files[0].to_string_lossy().contains(secret));
    }
}
