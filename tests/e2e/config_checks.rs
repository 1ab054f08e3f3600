//! Configuration a user gets wrong, as `eval` and `validate` see it: a typo never drops a grader
//! or a setting in silence, `--strict` makes every warning an error, `${{ VAR }}` works inside a
//! longer value, relative target paths follow the eval file, and a JSONL dataset takes what a
//! YAML suite takes.

use agentv_testkit::llm::{Api, FakeLlm};
use agentv_testkit::{Project, make_executable};

/// A mock target that answers "Paris is the capital of France."
const TARGETS: &str = "targets:\n  - {name: default, provider: mock, response: Paris is the capital of France.}\n";

/// A 4.x case whose code grader writes `command` as `comand`: it would pass on `contains`
/// alone if the grader were dropped.
const COMAND_TYPO: &str = "tests:\n  - id: c1\n    input: What is the capital of France?\n    criteria: Paris\n    assertions:\n      - {type: contains, value: Paris}\n      - type: code-grader\n        name: judge\n        comand: [python3, check.py]\n  - id: c2\n    input: What is the capital of France?\n    assertions: [{type: contains, value: Paris}]\n";

#[test]
fn typo_in_assertions_key_is_an_error_for_the_case() {
    // `asertions:` in a sidecar would drop the dataset's graders.
    let p = Project::new()
        .file("targets.yaml", TARGETS)
        .file(
            "d.jsonl",
            "{\"id\": \"j1\", \"input\": \"Capital of France?\", \"criteria\": \"Paris\"}\n",
        )
        .file(
            "d.yaml",
            "asertions:\n  - {type: contains, value: Paris}\n  - {type: llm-grader, prompt: Is it right?}\n",
        );
    p.run(&["validate", "d.jsonl"])
        .code(1)
        .stderr_has("d.yaml:1:1: error: unknown key `asertions` in the dataset sidecar: its graders would be dropped")
        .stderr_has("did you mean `assertions`?");
    let run = p.run(&["eval", "d.jsonl", "--out", "r.jsonl"]);
    assert_ne!(run.code, 0, "never green without the graders: {}", run.stderr);
    run.stderr_has("unknown key `asertions`");

    // `comand:` on a code grader: the grader cannot be used, so its case is invalid (exit 3),
    // and the diagnostic names the key written, never suggesting a key for itself.
    let p = Project::new()
        .file("targets.yaml", TARGETS)
        .file("e.eval.yaml", COMAND_TYPO);
    let run = p.run(&["validate", "e.eval.yaml"]);
    run.code(1)
        .stderr_has("error: code-grader is missing `command`; the grader cannot be used, so the case is invalid")
        .stderr_has("warning: unknown key `comand` in code-grader; it is ignored")
        .stderr_has("did you mean `command`?");
    assert!(!run.stderr.contains("did you mean `target`"), "{}", run.stderr);
    p.run(&["eval", "e.eval.yaml", "--out", "r.jsonl"]).code(3);
    assert_eq!(p.result("r.jsonl", "c2")["score"], 1.0, "the other case still runs");
}

#[test]
fn strict_flag_and_strict_key_make_warnings_errors() {
    // One unknown key (a warning): the run goes ahead without --strict.
    let suite = "tests:\n  - id: c1\n    input: Capital of France?\n    criteria: Paris\n    colour: blue\n    assertions: [{type: contains, value: Paris}]\n";
    let p = Project::new().file("targets.yaml", TARGETS).file("e.eval.yaml", suite);
    p.run(&["eval", "e.eval.yaml", "--out", "r.jsonl"])
        .code(0)
        .stderr_has("warning: unknown key `colour`");
    p.run(&["eval", "--strict", "e.eval.yaml", "--out", "s.jsonl"])
        .code(2)
        .stderr_has("error: unknown key `colour` in an eval case; it is ignored (an error under --strict)")
        .stderr_has("nothing ran");
    assert!(!p.path().join("s.jsonl").exists(), "nothing ran, nothing written");
    p.run(&["validate", "--strict", "e.eval.yaml"]).code(2);
    // The suite key does the same for its own file.
    let p = Project::new()
        .file("targets.yaml", TARGETS)
        .file("e.eval.yaml", &format!("strict: true\n{suite}"));
    p.run(&["eval", "e.eval.yaml", "--out", "r.jsonl"])
        .code(2)
        .stderr_has("nothing ran");
    p.run(&["validate", "e.eval.yaml"])
        .code(1)
        .stderr_has("(an error under --strict)");
    // A warning about the targets (an AgentV setting agentv does not read) stops a strict run.
    let p = Project::new()
        .file(
            "targets.yaml",
            "targets:\n  - {name: default, provider: mock, response: Paris, stream_log: raw}\n",
        )
        .file("e.eval.yaml", "tests:\n  - {id: c1, input: q, criteria: Paris}\n");
    p.run(&["eval", "e.eval.yaml", "--out", "r.jsonl", "--strict"])
        .code(2)
        .stderr_has(
            "`stream_log` in target `default` is an AgentV setting that agentv's `mock` provider does not implement",
        )
        .stderr_has("problem(s) with the targets");
}

#[tokio::test]
async fn typo_in_a_target_setting_is_an_error_and_network_errors_name_the_host() {
    let server = FakeLlm::start().await;
    let typo = Api::OpenAi
        .target("default", &server.uri(), "sk-typo-secret-key-1234")
        .replace("base_url:", "base_ulr:");
    let p = Project::new()
        .file("targets.yaml", &format!("targets:\n{typo}"))
        .file("e.eval.yaml", "tests:\n  - {id: c1, input: q, criteria: x}\n");
    let run = p
        .output_async(p.command(&["eval", "e.eval.yaml", "--out", "r.jsonl"]))
        .await;
    run.code(2)
        .stderr_has("error: unknown key `base_ulr` in target `default`")
        .stderr_has("did you mean `base_url`?");
    assert!(server.requests().await.is_empty());
    // A refused connection is retried, and its error names the host tried.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = closed.local_addr().expect("addr");
    drop(closed);
    let targets = format!(
        "targets:\n{}    max_retries: 1\n    initial_delay_ms: 1\n",
        Api::OpenAi.target("default", &format!("http://{addr}"), "sk-typo-secret-key-1234")
    );
    let p = Project::new().file("targets.yaml", &targets).file(
        "e.eval.yaml",
        "tests:\n  - {id: c1, input: q, criteria: x, assertions: [{type: contains, value: x}]}\n",
    );
    p.output_async(p.command(&["eval", "e.eval.yaml", "--out", "r.jsonl"]))
        .await
        .code(3);
    let error = p.result("r.jsonl", "c1")["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        error.contains(&format!("request to {addr}: the connection failed")),
        "{error}"
    );
    assert!(error.contains("gave up after 2 attempts"), "{error}");
}

#[tokio::test]
async fn env_reference_inside_a_longer_value_is_substituted_and_secret() {
    let server = FakeLlm::start().await;
    let port = server.uri().rsplit(':').next().unwrap_or_default().to_owned();
    let targets = "targets:\n  - name: default\n    provider: openai\n    base_url: http://127.0.0.1:${{ AGENTV_E2E_PORT }}/v1\n    model: gpt-4o-mini\n    api_key: sk-inner-value-secret-1\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file(".env", &format!("AGENTV_E2E_PORT={port}\n"))
        .file(
            "e.eval.yaml",
            "tests:\n  - {id: c1, input: What is 2+2?, criteria: says 4, assertions: [{type: contains, value: '4'}]}\n",
        );
    let run = p
        .output_async(p.command(&["eval", "e.eval.yaml", "--out", "r.jsonl"]))
        .await;
    run.code(0);
    assert_eq!(server.requests().await.len(), 1, "the substituted URL was called");
    let url = format!("http://127.0.0.1:{port}/v1");
    for path in agentv_testkit::walk(p.path()) {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(!text.contains(&url), "{} holds the resolved URL", path.display());
    }
    assert!(
        !run.stderr.contains(&url) && !run.stdout.contains(&url),
        "{}",
        run.stderr
    );

    // A bad port is a configuration error, reported once before any call, never retried.
    let p = Project::new()
        .file("targets.yaml", targets)
        .file(".env", "AGENTV_E2E_PORT=99999\n")
        .file("e.eval.yaml", &agentv_testkit::keyword_cases(5));
    let run = p
        .output_async(p.command(&["eval", "e.eval.yaml", "--out", "r.jsonl"]))
        .await;
    run.code(2).stderr_has(
        "`base_url` of target `default` is not a valid URL (invalid port number): the value of AGENTV_E2E_PORT",
    );
    assert_eq!(run.stderr.matches("is not a valid URL").count(), 1, "{}", run.stderr);
}

#[test]
fn relative_target_paths_resolve_against_the_eval_file_directory() {
    // The targets file is at the root; the suite, its agent and its healthcheck live below.
    let agent = "#!/bin/sh\npwd > \"$1\"\n";
    let p = Project::new()
        .file(
            "targets.yaml",
            "targets:\n  - name: here\n    provider: cli\n    command_template: sh ./agent.sh {OUTPUT_FILE}\n    healthcheck: {command: test -f agent.sh}\n  - name: up\n    provider: cli\n    command_template: sh ./tools/agent.sh {OUTPUT_FILE}\n    cwd: ..\n    healthcheck: {command: test -f marker, cwd: ../checks}\n",
        )
        .file("suite/evals/agent.sh", agent)
        .file("suite/tools/agent.sh", agent)
        .file("suite/checks/marker", "")
        .file("suite/evals/e.eval.yaml", "tests:\n  - {id: c1, input: q, criteria: x, assertions: [{type: contains, value: evals}]}\n");
    make_executable(&p.path().join("suite/evals/agent.sh"));
    p.run(&[
        "eval",
        "suite/evals/e.eval.yaml",
        "--target",
        "here",
        "--out",
        "r.jsonl",
    ])
    .code(0);
    let answer = p.result("r.jsonl", "c1")["candidate_answer"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(answer.trim_end().ends_with("/suite/evals"), "default cwd: {answer}");
    p.run(&["eval", "suite/evals/e.eval.yaml", "--target", "up", "--out", "u.jsonl"])
        .code(0);
    let answer = p.result("u.jsonl", "c1")["candidate_answer"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        answer.trim_end().ends_with("/suite"),
        "`cwd: ..` from the eval file: {answer}"
    );
}

#[test]
fn jsonl_dataset_accepts_every_yaml_case_key_and_suite_key() {
    let p = Project::new()
        .file("targets.yaml", TARGETS)
        .file(
            "d.jsonl",
            "{\"id\": \"a\", \"input\": \"Capital?\", \"assertions\": [{\"type\": \"contains\", \"value\": \"Paris\"}]}\n{\"id\": \"b\", \"input\": \"Capital of {{ country }}?\", \"vars\": {\"country\": \"France\"}, \"criteria\": \"x\", \"metadata\": {\"own\": 1}}\n",
        )
        .file(
            "d.yaml",
            "metadata: {suite: yes}\nassertions:\n  - {type: contains, value: capital}\n",
        );
    p.run(&["validate", "d.jsonl"]).code(0).stderr_has("✔ d.jsonl");
    p.run(&["eval", "d.jsonl", "--out", "r.jsonl"]).code(0);
    let a = p.result("r.jsonl", "a");
    let graders: Vec<&str> = a["evaluator_results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["type"].as_str())
        .collect();
    assert_eq!(graders.len(), 2, "the line's own and the sidecar's: {a}");
    assert_eq!(a["score"], 1.0, "{a}");
    let b = p.result("r.jsonl", "b");
    assert!(b.to_string().contains("Capital of France?"), "vars applied: {b}");
}

#[test]
fn diagnostics_are_capped_with_a_count_of_the_rest() {
    let lines: String = (0..300)
        .map(|i| format!("{{\"id\": \"c{i}\", \"input\": \"q\", \"criteria\": \"x\", \"colour\": 1}}\n"))
        .collect();
    let p = Project::new().file("targets.yaml", TARGETS).file("d.jsonl", &lines);
    let run = p.run(&["validate", "d.jsonl"]);
    run.code(0)
        .stderr_has("… 0 more error(s) and 250 more warning(s) not shown (--verbose shows them all)");
    assert_eq!(run.stderr.matches("unknown key `colour`").count(), 50, "{}", run.stderr);
    let all = p.run(&["--verbose", "validate", "d.jsonl"]);
    assert_eq!(all.stderr.matches("unknown key `colour`").count(), 300);
}

/// A secret holding a quote, `$(...)`, backquotes or `;` is one word of a `command_template`
/// (shell-quoted, as placeholders are): it never runs as a command, and it is still redacted.
#[test]
fn env_reference_in_a_command_template_is_shell_quoted() {
    let secret = r#"abc"; touch injected-1; echo "$(touch injected-2)`touch injected-3`"#;
    let targets = "targets:\n  - name: default\n    provider: cli\n    command_template: printf '%s' ${{ AGENTV_E2E_KEY }} > key.txt && echo ok > {OUTPUT_FILE}\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file(".env", &format!("AGENTV_E2E_KEY='{secret}'\n"))
        .file(
            "e.yaml",
            "evalcases:\n  - id: c1\n    expected_outcome: ok\n    input_messages: [{role: user, content: q}]\n    evaluators: [{name: k, type: keywords, expected: [ok]}]\n",
        );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    for name in ["injected-1", "injected-2", "injected-3"] {
        assert!(
            !p.path().join(name).exists(),
            "{name} was created: the secret ran as a command"
        );
    }
    let written = std::fs::read_to_string(p.path().join("key.txt")).expect("the command ran");
    assert_eq!(written, secret, "the command received the value as one word");
    let results = std::fs::read_to_string(p.path().join("r.jsonl")).expect("results");
    assert!(!results.contains("injected-1"), "{results}");
}

/// A key written for a target this run does not use is still a key: redacted from every output.
#[test]
fn a_key_of_a_target_the_run_does_not_use_is_still_a_secret() {
    let secret = "sk-other-target-key-4242";
    let targets = "targets:\n  - name: default\n    provider: cli\n    command_template: printf 'key=%s' \"$AGENTV_E2E_OTHER\" > {OUTPUT_FILE}\n  - name: other\n    provider: openai\n    model: gpt-4o\n    api_key: ${{ AGENTV_E2E_OTHER }}\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file(".env", &format!("AGENTV_E2E_OTHER={secret}\n"))
        .file(
            "e.yaml",
            "evalcases:\n  - id: c1\n    expected_outcome: key\n    input_messages: [{role: user, content: q}]\n    evaluators: [{name: k, type: keywords, expected: [key]}]\n",
        );
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl", "--report", "html"]);
    run.code(0);
    for path in agentv_testkit::walk(p.path()) {
        if path.ends_with(".env") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned();
        assert!(
            !text.contains(secret),
            "{} holds the other target's key",
            path.display()
        );
    }
    assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret));
}
