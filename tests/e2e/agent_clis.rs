//! Claude Code, Codex and VS Code targets against fake executables that replay the recorded
//! real transcripts byte for byte and record the argv, stdin, working directory and environment
//! they were given.

use agentv_testkit::agents;
use agentv_testkit::{Project, Run, process};
use serde_json::json;

fn transcript(name: &str) -> String {
    agents::transcript(name).display().to_string()
}

const SUITE: &str = "evalcases:\n  - id: run\n    expected_outcome: runs a command\n    input_messages:\n      - role: user\n        content: [{type: text, value: Run the marker command.}, {type: file, value: notes.md}]\n";

fn project(targets: &str, evaluators: &str) -> Project {
    let suite = format!("execution:\n  evaluators:\n{evaluators}{SUITE}");
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("bin/fake-agent.sh", agents::REPLAY_AGENT)
        .file("notes.md", "some notes\n")
        .file("e.yaml", &suite);
    std::fs::create_dir_all(p.path().join("record")).expect("record dir");
    p
}

fn run(p: &Project, transcript_name: &str, mode: &str, exit: i32, args: &[&str]) -> Run {
    let mut all = vec!["eval", "e.yaml"];
    if !args.contains(&"--out") {
        all.extend(["--out", "r.jsonl"]);
    }
    all.extend_from_slice(args);
    p.output(
        p.command(&all)
            .env("FAKE_RECORD_DIR", p.path().join("record"))
            .env("FAKE_TRANSCRIPT", transcript(transcript_name))
            .env("FAKE_MODE", mode)
            .env("FAKE_EXIT", exit.to_string())
            .env("CLAUDECODE", "1"),
    )
}

fn recorded(p: &Project, name: &str) -> String {
    std::fs::read_to_string(p.path().join("record").join(name)).unwrap_or_default()
}

const CLAUDE: &str = "targets:\n  - name: default\n    provider: claude-code\n    executable: bin/fake-agent.sh\n    model: sonnet\n    args: [--max-turns, '3']\n    judge_target: judge\n  - name: judge\n    provider: mock\n    response: '{\"score\": 1}'\n";
const TRAJECTORY: &str = "    - {name: any, type: tool_trajectory, mode: any_order, minimums: {Bash: 1}}\n    - {name: order, type: tool_trajectory, mode: in_order, expected: [{tool: Bash, args: {command: echo fake-tool-output}}]}\n    - {name: exact, type: tool_trajectory, mode: exact, expected: [{tool: Bash}]}\n";

#[test]
fn claude_transcript_yields_answer_tool_calls_usage_and_cost() {
    let p = project(CLAUDE, TRAJECTORY);
    run(&p, "claude-stream.jsonl", "replay", 0, &[])
        .code(0)
        .stdout_has("Verdicts: 1 pass");
    assert_eq!(
        recorded(&p, "argv").lines().collect::<Vec<_>>(),
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "sonnet",
            "--max-turns",
            "3"
        ]
    );
    let stdin = recorded(&p, "stdin");
    assert!(
        stdin.contains("[[ ## user_query ## ]]\nRun the marker command."),
        "{stdin}"
    );
    assert!(stdin.contains("Read all input files:\n* ["), "{stdin}");
    assert!(
        stdin.contains(&format!("(file://{})", p.path().join("notes.md").display())),
        "{stdin}"
    );
    assert!(
        !recorded(&p, "env").lines().any(|l| l.starts_with("CLAUDECODE=")),
        "nested-run variables are removed"
    );
    assert!(
        recorded(&p, "cwd").contains("agentv-claude-"),
        "a fresh temporary workspace"
    );
    let r = p.result("r.jsonl", "run");
    assert_eq!(r["candidate_answer"], "Done: the tool ran and I read its output.");
    assert_eq!(r["score"], 1.0, "{r}");
    assert_eq!(r["trace_summary"]["tool_calls_by_name"], json!({"Bash": 1}));
    assert_eq!(
        r["execution_metrics"]["token_usage"],
        json!({"input": 3468, "output": 69, "cached": 0})
    );
    assert_eq!(r["execution_metrics"]["cost_usd"], 0.019065);
    assert_eq!(r["execution_metrics"]["duration_ms"], 183.0);
    let meta = &r["agent_provider_request"]["response_metadata"];
    assert_eq!(meta["num_turns"], 2);
    let log = meta["log_path"].as_str().expect("log path");
    assert!(log.starts_with(".agentv/logs/claude-code/run-1-"), "{log}");
    let logged = std::fs::read_to_string(p.path().join(log)).expect("stream log");
    assert_eq!(
        logged,
        std::fs::read_to_string(transcript("claude-stream.jsonl")).expect("fixture"),
        "byte for byte"
    );
}

#[test]
fn claude_text_run_and_api_error() {
    let p = project(CLAUDE, "    - {name: kw, type: keywords, expected: [fake]}\n");
    run(&p, "claude-stream-text.jsonl", "replay", 0, &[]).code(0);
    let r = p.result("r.jsonl", "run");
    assert_eq!(r["candidate_answer"], "Hello from the fake Anthropic server.");
    assert_eq!(r["execution_metrics"]["cost_usd"], 0.00874);
    run(
        &p,
        "claude-stream-api-error-400.jsonl",
        "replay",
        1,
        &["--out", "r2.jsonl"],
    )
    .code(3);
    let e = p.result("r2.jsonl", "run");
    let error = e["error"].as_str().expect("error");
    assert!(
        error.starts_with("claude exited with code 1: claude reported an error: API Error: 400 fake: injected error"),
        "{error}"
    );
}

#[test]
fn claude_garbage_non_zero_exit_and_hang() {
    let p = project(CLAUDE, "    - {name: kw, type: keywords, expected: [x]}\n");
    run(&p, "", "garbage", 0, &[]).code(3);
    let error = p.result("r.jsonl", "run")["error"].as_str().expect("error").to_owned();
    assert!(
        error.starts_with(
            "malformed response from claude: no JSON events; output was: Segmentation fault (core dumped)"
        ),
        "{error}"
    );

    run(&p, "claude-stream-text.jsonl", "garbage", 2, &["--out", "r2.jsonl"]).code(3);
    let error = p.result("r2.jsonl", "run")["error"].as_str().expect("error").to_owned();
    assert!(
        error.starts_with("claude exited with code 2")
            && error.contains(": last stdout lines:\nSegmentation fault (core dumped)\nstderr: "),
        "{error}"
    );

    let hanging = CLAUDE.replace("    model: sonnet\n", "    model: sonnet\n    timeout_seconds: 1\n");
    let p = project(&hanging, "    - {name: kw, type: keywords, expected: [x]}\n");
    run(&p, "", "hang", 0, &["--max-retries", "0"]).code(3);
    assert_eq!(p.result("r.jsonl", "run")["error"], "timed out after 1s");
    let pid = recorded(&p, "child.pid");
    if let Err(e) = process::gone_soon(&pid) {
        panic!("the agent's child survived: {e}");
    }
}

#[test]
fn missing_executable_is_a_configuration_error() {
    let targets = "targets:\n  - name: default\n    provider: claude-code\n    executable: agentv-no-such-claude\n";
    let p = project(targets, "    - {name: kw, type: keywords, expected: [x]}\n");
    run(&p, "", "replay", 0, &[])
        .code(2)
        .stderr_has("error: target `default`: Claude Code executable `agentv-no-such-claude` not found on PATH");
}

const CODEX: &str =
    "targets:\n  - name: default\n    provider: codex\n    executable: bin/fake-agent.sh\n    args: [--full-auto]\n";

#[test]
fn codex_transcripts_yield_answer_tool_calls_and_usage() {
    let evaluators = "    - {name: any, type: tool_trajectory, mode: any_order, minimums: {command_execution: 1}}\n    - {name: exact, type: tool_trajectory, mode: exact, expected: [{tool: command_execution, args: {command: \"/bin/bash -lc 'echo fake-tool-output'\"}}]}\n";
    let p = project(CODEX, evaluators);
    run(&p, "codex-exec.jsonl", "replay", 0, &[])
        .code(0)
        .stdout_has("Verdicts: 1 pass");
    assert_eq!(
        recorded(&p, "argv").lines().collect::<Vec<_>>(),
        [
            "--ask-for-approval",
            "never",
            "exec",
            "--json",
            "--color",
            "never",
            "--skip-git-repo-check",
            "--full-auto",
            "-"
        ]
    );
    let stdin = recorded(&p, "stdin");
    assert!(stdin.contains("Read all input files:"), "{stdin}");
    assert!(
        stdin.contains("[[ ## user_query ## ]]\nRun the marker command."),
        "{stdin}"
    );
    assert_eq!(
        recorded(&p, "prompt.md"),
        stdin,
        "the prompt is also written to prompt.md"
    );
    let r = p.result("r.jsonl", "run");
    assert_eq!(r["candidate_answer"], "Done: the command ran and I read its output.");
    assert_eq!(
        r["execution_metrics"]["token_usage"],
        json!({"input": 14396, "output": 181, "cached": 0})
    );
    assert_eq!(r["trace_summary"]["tool_names"], json!(["command_execution"]));
    assert!(
        r["agent_provider_request"]["response_metadata"]["log_path"]
            .as_str()
            .expect("log")
            .starts_with(".agentv/logs/codex/")
    );

    run(
        &p,
        "codex-exec-command-failed.jsonl",
        "replay",
        0,
        &["--out", "r2.jsonl"],
    )
    .code(0);
    let failed = p.result("r2.jsonl", "run");
    assert_eq!(
        failed["candidate_answer"],
        "Done: the command ran and I read its output."
    );
    assert!(failed.get("error").is_none(), "a failed command is not a failed turn");
}

#[test]
fn codex_turn_failed_and_exit_code() {
    let p = project(CODEX, "    - {name: kw, type: keywords, expected: [x]}\n");
    let failed = p.path().join("failed.jsonl");
    std::fs::write(&failed, "{\"type\":\"turn.started\"}\n{\"type\":\"error\",\"message\":\"Reconnecting... 1/5\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":\"stream disconnected before completion\"}}\n").expect("write");
    let out = p.output(
        p.command(&["eval", "e.yaml", "--out", "r.jsonl"])
            .env("FAKE_RECORD_DIR", p.path().join("record"))
            .env("FAKE_TRANSCRIPT", &failed)
            .env("FAKE_EXIT", "1"),
    );
    out.code(3);
    let error = p.result("r.jsonl", "run")["error"].as_str().expect("error").to_owned();
    assert!(
        error.starts_with("codex exited with code 1: codex turn failed: stream disconnected before completion (log: "),
        "{error}"
    );
}

#[test]
fn vscode_dispatches_and_reads_the_response_file() {
    let targets = "targets:\n  - name: default\n    provider: vscode\n    dispatch: cp {PROMPT_FILE} dispatched.md; echo 'answer from vscode' > {RESPONSE_FILE}\n    subagent_root: .agentv/vs\n    workers: 4\n";
    let p = project(targets, "    - {name: kw, type: keywords, expected: [vscode]}\n");
    run(&p, "", "replay", 0, &[]).code(0).stderr_has("with 1 worker(s)");
    let r = p.result("r.jsonl", "run");
    assert_eq!(r["candidate_answer"], "answer from vscode");
    let prompt = std::fs::read_to_string(p.path().join(".agentv/vs/run-1/prompt.md")).expect("prompt document");
    assert!(
        prompt.contains(&format!("(file://{})", p.path().join("notes.md").display())),
        "{prompt}"
    );
    assert!(prompt.contains("[[ ## user_query ## ]]"));
}

#[test]
fn missing_executable_and_judge_credentials_are_reported_together() {
    let targets = "targets:\n  - name: default\n    provider: claude-code\n    executable: agentv-no-such-claude\n    judge_target: judge\n  - name: judge\n    provider: anthropic\n    model: m\n    api_key: ${{ AGENTV_E2E_NO_SUCH_KEY }}\n";
    let p = project(targets, "    - {name: kw, type: keywords, expected: [x]}\n");
    run(&p, "", "replay", 0, &[])
        .code(2)
        .stderr_has("Claude Code executable `agentv-no-such-claude` not found on PATH")
        .stderr_has("AGENTV_E2E_NO_SUCH_KEY (target `judge`, setting `api_key`)");
}

/// Stream logs are redacted as they are written: a secret the agent echoes (raw, or JSON-escaped
/// in its events) never lands in `.agentv/logs/`.
#[test]
fn stream_logs_are_redacted_as_they_are_written() {
    let secret = "sk-\"zq9marker\" \\ é";
    let escaped = serde_json::to_string(secret).expect("json");
    let transcript = std::fs::read_to_string(transcript("claude-stream-text.jsonl"))
        .expect("fixture")
        .replace(
            "Hello from the fake Anthropic server.",
            &format!("key {}", &escaped[1..escaped.len() - 1]),
        );
    let targets = CLAUDE.replace("model: sonnet", "model: ${{ AGENTV_E2E_STREAM_MODEL }}");
    let p = project(&targets, "    - {name: kw, type: keywords, expected: [key]}\n");
    let fixture = p.path().join("echo.jsonl");
    std::fs::write(&fixture, format!("raw model {secret}\n{transcript}")).expect("write");
    let out = p.output(
        p.command(&["eval", "e.yaml", "--out", "r.jsonl"])
            .env("FAKE_RECORD_DIR", p.path().join("record"))
            .env("FAKE_TRANSCRIPT", &fixture)
            .env("AGENTV_E2E_STREAM_MODEL", secret),
    );
    out.code(0);
    let r = p.result("r.jsonl", "run");
    assert_eq!(r["candidate_answer"], "key ***");
    let log = r["agent_provider_request"]["response_metadata"]["log_path"]
        .as_str()
        .expect("log path")
        .to_owned();
    let logged = std::fs::read_to_string(p.path().join(log)).expect("stream log");
    assert!(logged.starts_with("raw model ***\n"), "{logged}");
    assert!(logged.contains("key ***"), "{logged}");
    assert!(!logged.contains("zq9marker"), "{logged}");
}
