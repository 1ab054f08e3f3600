//! Resolved `${{ VAR }}` values never reach any output (`docs/architecture.md#secrets`).
//!
//! Every string setting of every provider kind is a `${{ VAR }}` whose value has quotes,
//! backslashes, spaces and non-ASCII characters around a unique marker. The fakes echo all they
//! receive: HTTP servers their request line, headers and body; agent CLIs and commands their
//! argv, stdin and `SECRET_*` environment, raw on both streams and JSON-escaped (Python's
//! ASCII escapes) in their answers; every answer is a judge verdict whose reasoning is the echo,
//! so the LLM judge quotes it again. Each kind runs twice with `--verbose --dump-prompts
//! --cache` (the second run answers from the cache), then every file the runs wrote and both
//! output streams are searched for each marker (which survives raw, JSON at any depth,
//! percent-encoding and shell quoting) and each value's base64.
//!
//! To cover a new setting (nested ones too: `healthcheck.url`), add a [`Setting`] to its kind.

#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test reads as one scenario, its table and checks in one place"
)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agentv_testkit::Project;
use agentv_testkit::agents::{ECHO_AGENT, ECHO_COMMAND, ECHO_JUDGE};
use agentv_testkit::llm::FakeLlm;
use agentv_testkit::make_executable;
use serde_json::{Map, Value, json};

/// The variables every setting's value is read from start with this; fakes echo them.
const PREFIX: &str = "SECRET_";

/// The suite every kind runs: an LLM judge and a code judge that echoes its payload.
const SUITE: &str = "execution:\n  evaluators:\n    - {name: judge, type: llm_judge}\n    - {name: echo, type: code_judge, script: [python3, echo_judge.py]}\nevalcases:\n  - id: run\n    expected_outcome: Echoes everything.\n    input_messages:\n      - role: user\n        content: [{type: text, value: Echo what you were given.}, {type: file, value: notes.md}]\n";

/// Decorations around each marker: what breaks naive redaction.
const TEXT: &str = " \"dq\" \\bs 'sq' é ☃ &a=b/c+d";
/// HTTP header values must be visible ASCII.
const HEADER: &str = " \"dq\" \\bs 'sq' &a=b+c";
/// URL paths: no `\`, `#`, `?` or `%`, which change what a URL means.
const URL_PATH: &str = " \"dq\" 'sq' é ☃ &a=b+c";
/// File names.
const FILE: &str = " \"dq\" \\bs 'sq' é";

/// One string setting read from `${{ SECRET_... }}`.
struct Setting {
    /// Dotted for nested settings: `healthcheck.url`.
    path: &'static str,
    value: String,
}

/// A provider kind's target with every string setting secret.
struct Kind {
    name: &'static str,
    /// Settings that are not secrets (provider, numbers, booleans).
    plain: Value,
    secrets: Vec<Setting>,
    /// Targets answered from the cache on the second run (mock answers are never cached).
    cached: bool,
    /// A separate judge target, for kinds whose answer is not a verdict.
    judge: Option<Value>,
}

fn marker(kind: &str, setting: &str) -> String {
    let tag: String = format!("{kind}{setting}")
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    format!("ZQ{tag}KX")
}

fn setting(kind: &str, path: &'static str, decor: &str) -> Setting {
    Setting {
        path,
        value: format!("{}{decor}", marker(kind, path)),
    }
}

fn with_value(path: &'static str, value: String) -> Setting {
    Setting { path, value }
}

fn kind(name: &'static str, root: &Path, server: &str) -> Kind {
    let dir = |path: &'static str| {
        let value = format!("{}{FILE}", marker(name, path));
        std::fs::create_dir_all(root.join(&value)).expect("secret dir");
        with_value(path, value)
    };
    let url = |path: &'static str| with_value(path, format!("{server}/{}{URL_PATH}", marker(name, path)));
    let program = |path: &'static str, script: &str| {
        let file = format!("bin/{}{FILE}.py", marker(name, path));
        std::fs::create_dir_all(root.join("bin")).expect("bin");
        let full = root.join(&file);
        std::fs::write(&full, script).expect("fake");
        make_executable(&full);
        file
    };
    // A template never appears whole once rendered: its literal parts are redacted instead. A
    // part the shell splits into words is beyond that (see the README), so the marker sits in a
    // part that reaches the program as one word.
    let command = |path: &'static str, placeholders: &str| {
        let script = root.join("fake_command.py");
        std::fs::write(&script, ECHO_COMMAND).expect("fake");
        with_value(
            path,
            format!(
                "python3 \"{}\" {placeholders} --tag={}",
                script.display(),
                marker(name, path)
            ),
        )
    };
    let agent = |exe: Setting| {
        vec![
            exe,
            setting(name, "args.0", TEXT),
            setting(name, "args.1", TEXT),
            dir("cwd"),
            setting(name, "model", TEXT),
            setting(name, "system_prompt", TEXT),
            with_value("log_dir", format!("logs/{}{FILE}", marker(name, "log_dir"))),
            setting(name, "log_format", TEXT),
        ]
    };
    match name {
        "mock" => Kind {
            name,
            plain: json!({"provider": "mock"}),
            secrets: vec![setting(name, "response", TEXT), setting(name, "responses.run", TEXT)],
            cached: false,
            judge: Some(json!({"name": "judge", "provider": "mock",
                               "response": r#"{"score": 1, "hits": ["h"], "misses": [], "reasoning": "r"}"#})),
        },
        "cli" => Kind {
            name,
            plain: json!({"provider": "cli", "healthcheck": {"type": "http"}}),
            secrets: vec![
                command("command_template", "{PROMPT} {OUTPUT_FILE} {FILES}"),
                with_value(
                    "files_format",
                    format!("--file={{path}} --ff={}", marker(name, "files_format")),
                ),
                dir("cwd"),
                url("healthcheck.url"),
            ],
            cached: true,
            judge: None,
        },
        "cli-probe" => Kind {
            name,
            plain: json!({"provider": "cli", "healthcheck": {"type": "command"}}),
            secrets: vec![
                command("command_template", "{PROMPT} {OUTPUT_FILE}"),
                dir("cwd"),
                with_value(
                    "healthcheck.command_template",
                    format!("test -n \"{}{FILE}\"", marker(name, "healthcheck.command_template")),
                ),
                dir("healthcheck.cwd"),
            ],
            cached: true,
            judge: None,
        },
        "openai" => Kind {
            name,
            plain: json!({"provider": "openai"}),
            secrets: vec![
                url("base_url"),
                setting(name, "model", TEXT),
                setting(name, "organization", HEADER),
                setting(name, "api_key", HEADER),
            ],
            cached: true,
            judge: None,
        },
        "azure" => Kind {
            name,
            plain: json!({"provider": "azure"}),
            secrets: vec![
                url("endpoint"),
                setting(name, "deployment_name", URL_PATH),
                setting(name, "api_version", URL_PATH),
                setting(name, "api_key", HEADER),
            ],
            cached: true,
            judge: None,
        },
        "anthropic" => Kind {
            name,
            plain: json!({"provider": "anthropic", "thinking": {"budget_tokens": 1024}}),
            secrets: vec![
                url("base_url"),
                setting(name, "model", TEXT),
                setting(name, "thinking.type", TEXT),
                setting(name, "api_key", HEADER),
                setting(name, "anthropic_version", HEADER),
            ],
            cached: true,
            judge: None,
        },
        "gemini" => Kind {
            name,
            plain: json!({"provider": "gemini"}),
            secrets: vec![
                url("base_url"),
                setting(name, "model", URL_PATH),
                setting(name, "api_key", HEADER),
            ],
            cached: true,
            judge: None,
        },
        "claude-code" => Kind {
            name,
            plain: json!({"provider": "claude-code"}),
            secrets: agent(with_value("executable", program("executable", ECHO_AGENT))),
            cached: true,
            judge: None,
        },
        "codex" => Kind {
            name,
            plain: json!({"provider": "codex"}),
            secrets: {
                let mut s = agent(with_value("executable", program("executable", ECHO_AGENT)));
                s.push(setting(name, "approval_policy", TEXT));
                s
            },
            cached: true,
            judge: None,
        },
        "vscode" => Kind {
            name,
            plain: json!({"provider": "vscode", "timeout_seconds": 30}),
            secrets: vec![
                command("dispatch", "{PROMPT_FILE} {RESPONSE_FILE} {WORKSPACE}"),
                with_value(
                    "subagent_root",
                    format!(".agentv/{}{FILE}", marker(name, "subagent_root")),
                ),
                dir("workspace"),
            ],
            cached: true,
            judge: None,
        },
        "vscode-insiders" => Kind {
            name,
            plain: json!({"provider": "vscode-insiders", "timeout_seconds": 30}),
            secrets: vec![
                with_value(
                    "vscode_cmd",
                    root.join(program("vscode_cmd", ECHO_COMMAND)).display().to_string(),
                ),
                with_value(
                    "subagent_root",
                    format!(".agentv/{}{FILE}", marker(name, "subagent_root")),
                ),
            ],
            cached: true,
            judge: None,
        },
        other => panic!("no settings for {other}"),
    }
}

fn var(kind: &str, path: &str) -> String {
    let tail: String = format!("{kind}_{path}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{PREFIX}{tail}")
}

/// Sets `path` (dotted; a numeric part is a list index) in `target` to `value`.
fn set_path(target: &mut Value, path: &str, value: Value) {
    let mut node = target;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i == parts.len() - 1;
        let next_is_index = !last && parts[i + 1].parse::<usize>().is_ok();
        let empty = || if next_is_index { json!([]) } else { json!({}) };
        node = match part.parse::<usize>() {
            Ok(index) => {
                let list = node.as_array_mut().expect("a list");
                while list.len() <= index {
                    list.push(Value::Null);
                }
                if last {
                    list[index] = value;
                    return;
                }
                if list[index].is_null() {
                    list[index] = empty();
                }
                &mut list[index]
            }
            Err(_) => {
                let map = node.as_object_mut().expect("a map");
                if last {
                    map.insert((*part).to_owned(), value);
                    return;
                }
                map.entry(*part).or_insert_with(empty)
            }
        };
    }
}

/// targets.yaml (JSON is YAML) with every secret setting as `${{ VAR }}`.
fn targets_file(kind: &Kind) -> String {
    let mut target = kind.plain.clone();
    set_path(&mut target, "name", json!("default"));
    for s in &kind.secrets {
        set_path(
            &mut target,
            s.path,
            json!(format!("${{{{ {} }}}}", var(kind.name, s.path))),
        );
    }
    let mut targets = vec![target];
    if let Some(judge) = &kind.judge {
        set_path(&mut targets[0], "judge_target", json!("judge"));
        targets.push(judge.clone());
    }
    json!({ "targets": targets }).to_string()
}

/// A `.env` line with the value double-quoted and escaped.
fn dotenv_line(name: &str, value: &str) -> String {
    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
    format!("{name}=\"{escaped}\"\n")
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Every file under `root` with its contents.
fn files(root: &Path) -> HashMap<PathBuf, Vec<u8>> {
    agentv_testkit::walk(root)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read");
            (p, bytes)
        })
        .collect()
}

/// Where each secret shows in `text`: its marker (raw, JSON at any depth, percent-encoded,
/// shell-quoted all keep it) or its base64.
fn leaks(kind: &Kind, text: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(text);
    let mut found = Vec::new();
    for s in &kind.secrets {
        let needles = [
            marker(kind.name, s.path),
            base64(s.value.as_bytes()).trim_end_matches('=').to_owned(),
        ];
        for needle in needles {
            if let Some(at) = text.find(&needle) {
                let start = text[..at].char_indices().rev().nth(60).map_or(0, |(i, _)| i);
                let context: String = text[start..].chars().take(160).collect();
                found.push(format!("{} ({needle}): …{context}…", s.path));
            }
        }
    }
    found
}

/// Files written by the agent under test rather than by agentv: the VS Code prompt document is
/// the agent's input and must name the real response path; the response file is the agent's.
fn agent_owned(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.components()
        .any(|c| c.as_os_str().to_string_lossy().contains("subagentroot"))
        && (name == "prompt.md" || name == "response.md")
}

async fn check(kind_name: &'static str) {
    let server = FakeLlm::builder().echo().start().await;
    let p = Project::new()
        .file("e.yaml", SUITE)
        .file("notes.md", "some notes\n")
        .file("echo_judge.py", ECHO_JUDGE);
    let kind = kind(kind_name, p.path(), &server.uri());
    std::fs::write(p.path().join("targets.yaml"), targets_file(&kind)).expect("targets");
    // Half the values come from a .env file, half from the process environment.
    let (from_file, from_env): (Vec<_>, Vec<_>) = kind.secrets.iter().enumerate().partition(|(i, _)| i % 2 == 1);
    let dotenv: String = from_file
        .iter()
        .map(|(_, s)| dotenv_line(&var(kind.name, s.path), &s.value))
        .collect();
    std::fs::write(p.path().join(".env"), dotenv).expect(".env");
    let before = files(p.path());

    let mut runs = Vec::new();
    for out in ["r1.jsonl", "r2.jsonl"] {
        // Every report format too: they are outputs like the results file.
        let reports = ["--report", "junit", "--report", "markdown", "--report", "html"];
        let mut cmd = p.command(&["eval", "e.yaml", "--verbose", "--dump-prompts", "--cache", "--out", out]);
        cmd.args(reports);
        for (_, s) in &from_env {
            cmd.env(var(kind.name, s.path), &s.value);
        }
        let run = p.output_async(cmd).await;
        run.stdout_has("Verdicts: 1 pass");
        runs.push(run);
    }

    // The runs worked: the fakes echoed, agentv redacted, the second run read the cache.
    let first = p.result("r1.jsonl", "run");
    assert!(first.get("error").is_none(), "{kind_name}: {first}");
    assert!(
        first.to_string().contains("***"),
        "{kind_name}: nothing was redacted: {first}"
    );
    if kind.cached {
        runs[0].stdout_has("Cache:         0 hits, 2 misses");
        // The answer comes from the cache, redacted (`docs/architecture.md#cache`): the judge's
        // prompt quoting it is new.
        runs[1].stdout_has("Cache:         1 hit, 1 miss");
    }

    let mut problems = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            for leak in leaks(&kind, text.as_bytes()) {
                problems.push(format!("run {} {stream}: {leak}", i + 1));
            }
        }
    }
    let mut written = 0;
    for (path, bytes) in files(p.path()) {
        if before.get(&path) == Some(&bytes) || agent_owned(&path) {
            continue;
        }
        written += 1;
        for leak in leaks(&kind, &bytes) {
            problems.push(format!("{}: {leak}", path.display()));
        }
    }
    assert!(written >= 4, "{kind_name}: results, dumps and cache were written");
    assert!(
        problems.is_empty(),
        "{kind_name}: secrets leaked:\n{}",
        problems.join("\n")
    );
}

macro_rules! secrets_test {
    ($($test:ident => $kind:literal,)*) => {$(
        #[tokio::test]
        async fn $test() {
            check($kind).await;
        }
    )*};
}

secrets_test! {
    no_secret_reaches_any_output_mock => "mock",
    no_secret_reaches_any_output_cli => "cli",
    no_secret_reaches_any_output_cli_command_healthcheck => "cli-probe",
    no_secret_reaches_any_output_openai => "openai",
    no_secret_reaches_any_output_azure => "azure",
    no_secret_reaches_any_output_anthropic => "anthropic",
    no_secret_reaches_any_output_gemini => "gemini",
    no_secret_reaches_any_output_claude_code => "claude-code",
    no_secret_reaches_any_output_codex => "codex",
    no_secret_reaches_any_output_vscode_dispatch => "vscode",
    no_secret_reaches_any_output_vscode_command => "vscode-insiders",
}

#[test]
fn every_setting_becomes_a_variable_reference() {
    let root = tempfile::tempdir().expect("tmp");
    let kind = kind("claude-code", root.path(), "http://127.0.0.1:1");
    let file: Value = serde_json::from_str(&targets_file(&kind)).expect("json");
    let target: &Map<String, Value> = file["targets"][0].as_object().expect("target");
    assert_eq!(target["args"][1], "${{ SECRET_CLAUDE_CODE_ARGS_1 }}");
    assert_eq!(target["model"], "${{ SECRET_CLAUDE_CODE_MODEL }}");
}

/// Every text the run wrote: both streams and every file under the project but `.env`.
fn everything(p: &Project, run: &agentv_testkit::Run) -> String {
    let mut all = format!("{}\n{}", run.stdout, run.stderr);
    for path in agentv_testkit::walk(p.path()) {
        if path.ends_with(".env") {
            continue;
        }
        all.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()));
    }
    all
}

#[test]
fn the_end_of_a_secret_never_survives_an_error_cut_short() {
    const SECRET: &str = "SUPERSECRETTOKEN_0123456789abcdef";
    let targets = "targets:\n  - name: default\n    provider: mock\n    response: ${{ TOK }}\n  - name: failing\n    provider: cli\n    command_template: \"printf '%s' \\\"$TOK\\\" >&2; head -c 1990 /dev/zero | tr '\\\\0' x >&2; exit 1\"\n";
    // The judge prints the answer and 190 more characters: not a result, so it is quoted.
    let judge = "import json, sys\nprint(json.load(sys.stdin)['candidate_answer'] + 'x' * 190)\n";
    let suite = |target: &str| {
        format!(
            "execution:\n  target: {target}\n  evaluators: [{{name: echo, type: code_judge, script: [python3, judge.py]}}]\nevalcases:\n  - {{id: c, expected_outcome: x, input_messages: [{{role: user, content: q}}]}}\n"
        )
    };
    let p = Project::new()
        .file(".env", &format!("TOK={SECRET}\n"))
        .file("targets.yaml", targets)
        .file("judge.py", judge)
        .file("mock.yaml", &suite("default"))
        .file("cli.yaml", &suite("failing"));
    // The cli target reads no `${{ TOK }}`; the mock's target registers the secret.
    let run = p.run(&["eval", "mock.yaml", "cli.yaml", "--out", "r.jsonl", "--verbose"]);
    run.code(3);
    let all = everything(&p, &run);
    assert!(all.contains("***x"), "the judge's output is quoted, redacted\n{all}");
    for start in 0..SECRET.len() - 6 {
        let piece = &SECRET[start..];
        assert!(!all.contains(piece), "{piece:?} leaked\n{all}");
    }
}

#[test]
fn a_secret_that_is_a_json_word_leaves_the_results_valid_json() {
    let targets = "targets:\n  - name: default\n    provider: mock\n    response: ${{ R }}\n";
    let p = Project::new()
        .file(".env", "R=false\n")
        .file("targets.yaml", targets)
        .file("e.yaml", &agentv_testkit::keyword_cases(1));
    p.run(&[
        "eval",
        "e.yaml",
        "--out",
        "r.jsonl",
        "--dump-prompts",
        "--report",
        "html=r.html",
    ])
    .code(0);
    // Every line parses (the kit panics otherwise); the answer is masked, the flags are not.
    let record = p.result("r.jsonl", "c0");
    assert_eq!(record["candidate_answer"], "***");
    let text = std::fs::read_to_string(p.path().join("r.jsonl")).expect("results");
    assert!(!text.contains(":***"), "{text}");
}
