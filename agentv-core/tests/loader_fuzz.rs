//! Property tests over every loader: eval YAML, JSONL datasets with a sidecar, targets files,
//! `.agentv.yaml` and `.env`.
//!
//! Each property builds a plausible file from a strategy (a suite, a dataset, a targets list,
//! a config, a `.env`), optionally damages it (byte flips, truncation, inserted control
//! characters, a BOM, CRLF, huge numbers, bytes that are not UTF-8, YAML punctuation), writes
//! it to a temporary project and loads it. Whatever the input, the loader must not panic,
//! every problem it reports must carry a line (> 0), and no message may leak parser internals
//! or a `.env` value.
//!
//! `cargo test` runs a fixed number of cases per property (see [`cases`]). For a long run:
//!
//! ```text
//! AGENTV_FUZZ_CASES=20000 cargo test -p agentv-core --release --test loader_fuzz
//! ```
//!
//! A failure prints the minimized input. Save it under
//! `tests/fixtures/fuzz-regressions/<loader>/` (see `regressions_stay_fixed`) so it is checked
//! on every run from then on.

#![allow(
    clippy::too_many_lines,
    reason = "the property checker walks every rule of the loader in one place"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentv_core::load::{Diagnostic, Env, Secrets, Workspace, load_eval_file, load_targets_file};
use agentv_core::providers::TargetRegistry;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};

/// Cases per property: 256 by default (about two seconds for all of them), `AGENTV_FUZZ_CASES`
/// for long runs.
fn cases() -> u32 {
    std::env::var("AGENTV_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn config() -> Config {
    Config {
        cases: cases(),
        // Minimized failures are kept as fixture files instead (see the module docs).
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------------------------
// The loaders under test, and what every answer must satisfy.

/// Which loader reads a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loader {
    EvalYaml,
    Jsonl,
    Targets,
    AgentvConfig,
    Dotenv,
}

/// Words of parser internals that must never reach a message.
const LEAKS: &[&str] = &[
    "Policy",
    "Options",
    "from_str",
    "serde",
    "deserializ",
    "Budget",
    "budget breached",
    "Depth {",
    "Nodes {",
    "visitor",
    "Error {",
    "index:",
];

/// A marker in every generated `.env` value: it must never appear in a message.
const SECRET_MARK: &str = "SeCrEt";

/// Writes `main` (and `sidecar` beside a JSONL dataset) into a fresh project, runs the loader
/// and checks what it reports. `Err` describes the first broken rule.
fn check(loader: Loader, main: &[u8], sidecar: Option<&[u8]>) -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = tmp.path();
    std::fs::create_dir(root.join(".git")).map_err(|e| e.to_string())?;
    let ws = Workspace::from_cwd(root.to_path_buf());
    let write = |name: &str, bytes: &[u8]| std::fs::write(root.join(name), bytes).map_err(|e| e.to_string());
    let diagnostics: Vec<Diagnostic> = match loader {
        Loader::EvalYaml => {
            write("e.yaml", main)?;
            load_eval_file(Path::new("e.yaml"), &ws).diagnostics
        }
        Loader::Jsonl => {
            write("d.jsonl", main)?;
            if let Some(side) = sidecar {
                write("d.yaml", side)?;
            }
            let suite = load_eval_file(Path::new("d.jsonl"), &ws);
            let diagnostics = suite.diagnostics.clone();
            let counted = suite.case_count;
            let streamed = suite.into_cases().count();
            if streamed != counted {
                return Err(format!("validated {counted} cases but streamed {streamed}"));
            }
            diagnostics
        }
        Loader::Targets => {
            write("targets.yaml", main)?;
            let file = load_targets_file(&root.join("targets.yaml"));
            let mut diagnostics = file.diagnostics.clone();
            let registry = TargetRegistry::new(Some(file), Arc::new(Env::default()), Secrets::default());
            // Settings are validated as `agentv validate` does; those errors are messages
            // about a whole target, so only panics matter here.
            let _ = registry.check_all();
            diagnostics.extend(registry.take_warnings());
            diagnostics
        }
        Loader::AgentvConfig => {
            write(".agentv.yaml", main)?;
            write(
                "e.yaml",
                b"evalcases:\n  - {id: a, expected_outcome: x, input_messages: [{role: user, content: q}]}\n",
            )?;
            load_eval_file(Path::new("e.yaml"), &ws).diagnostics
        }
        Loader::Dotenv => {
            write(".env", main)?;
            let (env, diagnostics) = Env::load(&[root.to_path_buf()], &ws);
            drop(env.child_env());
            diagnostics
        }
    };
    // YAML counts `\r\n`, `\r` and `\n` as line breaks; JSONL and `.env` only `\n`.
    let lines = |bytes: &[u8], yaml: bool| {
        let mut n = 1;
        for (i, b) in bytes.iter().enumerate() {
            let cr_alone = *b == b'\r' && bytes.get(i + 1) != Some(&b'\n');
            if *b == b'\n' || (yaml && cr_alone) {
                n += 1;
            }
        }
        n
    };
    for d in &diagnostics {
        let text = d.to_string();
        let yaml = d.file.extension().is_some_and(|e| e == "yaml");
        let own = if yaml && loader == Loader::Jsonl {
            sidecar.unwrap_or_default()
        } else {
            main
        };
        if d.pos.line > lines(own, yaml) {
            return Err(format!(
                "position past the end of the file ({} lines): {text}",
                lines(own, yaml)
            ));
        }
        let printed = [d.message.as_str(), d.help.as_deref().unwrap_or_default()];
        if printed.iter().any(|t| t.chars().any(char::is_control)) {
            return Err(format!("a control character reaches the terminal: {text:?}"));
        }
        let summary = text.contains("the dataset is not run: its sidecar");
        if d.pos.line == 0 && !summary {
            return Err(format!("no position: {text}"));
        }
        if let Some(leak) = LEAKS.iter().find(|l| text.contains(*l)) {
            return Err(format!("parser internals (`{leak}`) in: {text}"));
        }
        if loader == Loader::Dotenv && text.contains(SECRET_MARK) {
            return Err(format!("a .env value in: {text}"));
        }
    }
    if summary_without_cause(&diagnostics) {
        return Err("a sidecar summary without the sidecar's own error".to_owned());
    }
    Ok(())
}

fn summary_without_cause(diagnostics: &[Diagnostic]) -> bool {
    let summary = diagnostics
        .iter()
        .any(|d| d.message.starts_with("the dataset is not run"));
    let cause = diagnostics
        .iter()
        .any(|d| d.file.extension().is_some_and(|e| e == "yaml") && d.pos.line > 0);
    summary && !cause
}

// ---------------------------------------------------------------------------------------------
// A small YAML writer: plain scalars are written verbatim (so `1e400` or `.inf` stay numbers),
// strings are double-quoted with escapes, and the style (block or flow) is chosen per node.

#[derive(Debug, Clone)]
enum Y {
    /// Written as is.
    Raw(String),
    /// Written double-quoted.
    Str(String),
    Seq(Vec<Y>, bool),
    Map(Vec<(String, Y)>, bool),
}

fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn flow(y: &Y) -> String {
    match y {
        Y::Raw(s) => s.clone(),
        Y::Str(s) => quoted(s),
        Y::Seq(items, _) => format!("[{}]", items.iter().map(flow).collect::<Vec<_>>().join(", ")),
        Y::Map(entries, _) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!("{k}: {}", flow(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn block(y: &Y, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match y {
        Y::Map(entries, false) if !entries.is_empty() => {
            for (k, v) in entries {
                match v {
                    Y::Map(e, false) if !e.is_empty() => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        block(v, indent + 2, out);
                    }
                    Y::Seq(i, false) if !i.is_empty() => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        block(v, indent + 2, out);
                    }
                    _ => out.push_str(&format!("{pad}{k}: {}\n", flow(v))),
                }
            }
        }
        Y::Seq(items, false) if !items.is_empty() => {
            for item in items {
                match item {
                    Y::Map(e, false) if !e.is_empty() => {
                        let mut inner = String::new();
                        block(item, indent + 2, &mut inner);
                        // The first key goes on the dash line.
                        out.push_str(&format!("{pad}- {}", &inner[indent + 2..]));
                    }
                    _ => out.push_str(&format!("{pad}- {}\n", flow(item))),
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", flow(other))),
    }
}

fn yaml(y: &Y) -> String {
    let mut out = String::new();
    block(y, 0, &mut out);
    out
}

// ---------------------------------------------------------------------------------------------
// Strategies for plausible content.

fn raw(s: &str) -> Y {
    Y::Raw(s.to_owned())
}

/// Numbers as a user might write them, including ones no field accepts.
fn number() -> impl Strategy<Value = Y> {
    prop::sample::select(vec![
        "0",
        "1",
        "2",
        "-1",
        "0.5",
        "3.0",
        "1e20",
        "1e400",
        "-1e400",
        ".inf",
        "-.inf",
        ".nan",
        "99999999999999999999",
        "0x1F",
        "0o17",
        "1_000",
        "'3'",
        "~",
        "true",
        "1e-400",
        "86401",
    ])
    .prop_map(raw)
}

/// Text: short words, unicode, YAML punctuation and control characters (quoted, so the YAML
/// stays valid until a mutation breaks it).
fn text() -> impl Strategy<Value = Y> {
    prop_oneof![
        "[a-z]{1,8}".prop_map(Y::Raw),
        prop::sample::select(vec![
            "hello world",
            "a: b",
            "# not a comment",
            "- dash",
            "{{ candidate_answer }}",
            "{{ expected_outcome }}",
            "{{ unknown }}",
            "日本語",
            "emoji 🚀",
            "tab\there",
            "nul\0byte",
            "esc\u{1b}[31m",
            "line1\nline2",
            "",
            " ",
            "'single'",
            "\"double\"",
            "${{ VAR }}",
            "*alias",
            "&anchor",
        ])
        .prop_map(|s| Y::Str(s.to_owned())),
        number(),
    ]
}

/// Case ids, often repeated, sometimes not file-name safe or empty.
fn id() -> impl Strategy<Value = Y> {
    prop_oneof![
        prop::sample::select(vec!["a", "b", "a/b", "a_b", "a.b", "A", "..", "x y", "ü"])
            .prop_map(|s| Y::Str(s.to_owned())),
        Just(Y::Str("z".repeat(300))),
        text(),
    ]
}

fn bool_or_junk() -> impl Strategy<Value = Y> {
    prop::sample::select(vec!["true", "false", "yes", "1", "maybe"]).prop_map(raw)
}

fn file_value() -> impl Strategy<Value = Y> {
    prop::sample::select(vec![
        "notes.md",
        "missing.txt",
        "docs/style.instructions.md",
        "../outside.txt",
        "/etc/hostname",
        "",
        "dir/",
    ])
    .prop_map(|s| Y::Str(s.to_owned()))
}

fn segment() -> impl Strategy<Value = Y> {
    (
        prop::sample::select(vec!["text", "file", "image", "bogus"]),
        any::<bool>(),
        file_value(),
        text(),
    )
        .prop_map(|(kind, has_value, path, words)| {
            let mut e = vec![("type".to_owned(), raw(kind))];
            if has_value {
                e.push(("value".to_owned(), if kind == "file" { path } else { words }));
            }
            Y::Map(e, true)
        })
}

fn content() -> impl Strategy<Value = Y> {
    prop_oneof![
        text(),
        prop::collection::vec(segment(), 0..3).prop_map(|s| Y::Seq(s, true)),
        Just(Y::Map(vec![("verdict".to_owned(), raw("ok"))], true)),
    ]
}

fn message() -> impl Strategy<Value = Y> {
    (
        prop::sample::select(vec!["user", "system", "assistant", "tool", "robot"]),
        prop::option::of(content()),
        any::<bool>(),
    )
        .prop_map(|(role, content, calls)| {
            let mut e = vec![("role".to_owned(), raw(role))];
            if let Some(c) = content {
                e.push(("content".to_owned(), c));
            }
            if calls {
                e.push((
                    "tool_calls".to_owned(),
                    Y::Seq(vec![Y::Map(vec![("tool".to_owned(), raw("search"))], true)], true),
                ));
            }
            Y::Map(e, false)
        })
}

/// One evaluator, with the keys of its type and some noise.
fn evaluator() -> impl Strategy<Value = Y> {
    (
        prop::sample::select(vec![
            "llm_judge",
            "code_judge",
            "code",
            "keywords",
            "tool_trajectory",
            "bogus",
        ]),
        prop::option::of(number()),
        prop::option::of(number()),
        prop::sample::select(vec!["any_order", "in_order", "exact", "sideways"]),
        prop::option::of(prop::sample::select(vec![
            "wieght",
            "timeout_secs",
            "threshold",
            "scirpt",
            "Weight",
        ])),
        prop::option::of(text()),
        bool_or_junk(),
    )
        .prop_map(|(kind, weight, timeout, mode, extra, prompt, flag)| {
            let mut e = vec![("type".to_owned(), raw(kind))];
            if let Some(w) = weight {
                e.push(("weight".to_owned(), w));
            }
            match kind {
                "code_judge" | "code" => {
                    e.push((
                        "script".to_owned(),
                        Y::Seq(vec![raw("echo"), Y::Str("{}".to_owned())], true),
                    ));
                    if let Some(t) = timeout.clone() {
                        e.push(("timeout_seconds".to_owned(), t));
                    }
                    e.push((
                        "target".to_owned(),
                        Y::Map(vec![("max_calls".to_owned(), timeout.unwrap_or(raw("3")))], true),
                    ));
                }
                "keywords" => {
                    e.push((
                        "expected".to_owned(),
                        Y::Seq(vec![raw("ok"), Y::Str("(".to_owned())], true),
                    ));
                    e.push(("case_sensitive".to_owned(), flag));
                }
                "tool_trajectory" => {
                    e.push(("mode".to_owned(), raw(mode)));
                    e.push((
                        "minimums".to_owned(),
                        Y::Map(vec![("search".to_owned(), timeout.unwrap_or(raw("1")))], true),
                    ));
                    e.push((
                        "expected".to_owned(),
                        Y::Seq(vec![Y::Map(vec![("tool".to_owned(), raw("search"))], true)], true),
                    ));
                }
                "llm_judge" => {
                    if let Some(p) = prompt {
                        e.push(("prompt".to_owned(), p));
                    }
                    e.push(("include_trace_summary".to_owned(), flag));
                }
                _ => {}
            }
            if let Some(k) = extra {
                e.push((k.to_owned(), raw("1")));
            }
            Y::Map(e, false)
        })
}

fn case() -> impl Strategy<Value = Y> {
    (
        prop::option::of(id()),
        prop::option::of(text()),
        prop_oneof![
            prop::collection::vec(message(), 0..3).prop_map(|m| ("input_messages", Y::Seq(m, false))),
            text().prop_map(|t| ("input", t)),
        ],
        prop::option::of(prop::collection::vec(message(), 0..2)),
        prop::option::of(prop::collection::vec(evaluator(), 0..3)),
        prop::option::of(prop::sample::select(vec![
            "expected_outcom",
            "note",
            "conversation_id",
            "evaluator",
        ])),
    )
        .prop_map(|(id, outcome, (input_key, input), expected, evaluators, extra)| {
            let mut e = Vec::new();
            if let Some(id) = id {
                e.push(("id".to_owned(), id));
            }
            if let Some(o) = outcome {
                e.push(("expected_outcome".to_owned(), o));
            }
            e.push((input_key.to_owned(), input));
            if let Some(m) = expected {
                e.push(("expected_messages".to_owned(), Y::Seq(m, false)));
            }
            if let Some(ev) = evaluators {
                e.push(("evaluators".to_owned(), Y::Seq(ev, false)));
            }
            if let Some(k) = extra {
                e.push((k.to_owned(), raw("x")));
            }
            Y::Map(e, false)
        })
}

/// The suite-level keys (also what a sidecar holds).
fn suite_keys() -> impl Strategy<Value = Vec<(String, Y)>> {
    (
        prop::option::of(text()),
        prop::option::of(text()),
        prop::option::of(prop::collection::vec(evaluator(), 0..2)),
        prop::option::of(prop::sample::select(vec!["evaluator", "targett", "descripton"])),
    )
        .prop_map(|(dataset, target, evaluators, extra)| {
            let mut e = Vec::new();
            if let Some(d) = dataset {
                e.push(("dataset".to_owned(), d));
            }
            let mut exec = Vec::new();
            if let Some(t) = target {
                exec.push(("target".to_owned(), t));
            }
            if let Some(ev) = evaluators {
                exec.push(("evaluators".to_owned(), Y::Seq(ev, false)));
            }
            if !exec.is_empty() {
                e.push(("execution".to_owned(), Y::Map(exec, false)));
            }
            if let Some(k) = extra {
                e.push((k.to_owned(), raw("llm_judge")));
            }
            e
        })
}

fn suite() -> impl Strategy<Value = String> {
    (suite_keys(), prop::collection::vec(case(), 0..5)).prop_map(|(mut keys, cases)| {
        keys.push(("evalcases".to_owned(), Y::Seq(cases, false)));
        yaml(&Y::Map(keys, false))
    })
}

/// A JSON value for one JSONL line (the YAML tree written as JSON: raw scalars that are not
/// JSON become strings).
fn json(y: &Y) -> serde_json::Value {
    match y {
        Y::Raw(s) => {
            serde_json::from_str::<serde_json::Value>(s).unwrap_or_else(|_| serde_json::Value::from(s.clone()))
        }
        Y::Str(s) => serde_json::Value::from(s.clone()),
        Y::Seq(items, _) => serde_json::Value::Array(items.iter().map(json).collect()),
        Y::Map(entries, _) => serde_json::Value::Object(entries.iter().map(|(k, v)| (k.clone(), json(v))).collect()),
    }
}

fn dataset() -> impl Strategy<Value = (String, Option<String>)> {
    (
        prop::collection::vec((case(), any::<bool>()), 0..5),
        prop::option::of(suite_keys()),
    )
        .prop_map(|(cases, sidecar)| {
            let mut lines = String::new();
            for (c, blank_after) in cases {
                lines.push_str(&json(&c).to_string());
                lines.push('\n');
                if blank_after {
                    lines.push('\n');
                }
            }
            (lines, sidecar.map(|keys| yaml(&Y::Map(keys, false))))
        })
}

/// A setting value: text, a number (often out of range), a `${{ VAR }}` reference, a template
/// or a mapping.
fn setting_value() -> impl Strategy<Value = Y> {
    prop_oneof![
        2 => text(),
        3 => number(),
        1 => Just(Y::Str("${{ AGENTV_FUZZ_UNSET }}".to_owned())),
        1 => Just(Y::Str("run {PROMPT} > {OUTPUT_FILE}".to_owned())),
        1 => Just(Y::Map(vec![("type".to_owned(), raw("http")), ("url".to_owned(), raw("x"))], true)),
        1 => Just(Y::Seq(vec![raw("a"), raw("1")], true)),
    ]
}

/// Settings each provider reads (and some typos), so most generated targets get far enough
/// for their numbers and durations to be checked.
fn target() -> impl Strategy<Value = Y> {
    let common = vec![
        "judge_target",
        "workers",
        "timeout_seconds",
        "max_retries",
        "initial_delay_ms",
        "max_delay_ms",
        "backoff_factor",
        "retryable_status_codes",
        "provider_batching",
        "modle",
    ];
    let llm = vec![
        "model",
        "api_key",
        "base_url",
        "endpoint",
        "deployment_name",
        "api_version",
        "temperature",
        "max_output_tokens",
        "thinking_budget",
        "thinking",
        "organization",
        "anthropic_version",
    ];
    let agent = vec![
        "executable",
        "args",
        "cwd",
        "log_dir",
        "log_format",
        "system_prompt",
        "approval_policy",
        "command_template",
        "healthcheck",
        "files_format",
        "keep_temp_files",
        "subagent_root",
        "dispatch",
        "wait",
        "vscode_cmd",
        "workspace",
        "dry_run",
        "verbose",
    ];
    let mock = vec!["response", "responses", "delay_ms", "delay_min_ms", "delay_max_ms"];
    let pool: Vec<&'static str> = common.into_iter().chain(llm).chain(agent).chain(mock).collect();
    (
        prop::sample::select(vec!["default", "judge", "a b", "default", ""]),
        prop::sample::select(vec![
            "mock",
            "cli",
            "openai",
            "azure",
            "anthropic",
            "gemini",
            "claude-code",
            "codex",
            "vscode",
            "bogus",
        ]),
        prop::collection::vec((prop::sample::select(pool), setting_value()), 0..7),
        any::<bool>(),
    )
        .prop_map(|(name, provider, settings, named)| {
            let mut e = Vec::new();
            if named {
                e.push(("name".to_owned(), Y::Str(name.to_owned())));
            }
            e.push(("provider".to_owned(), raw(provider)));
            for (k, v) in settings {
                if !e.iter().any(|(key, _)| key == k) {
                    e.push((k.to_owned(), v));
                }
            }
            Y::Map(e, false)
        })
}

fn targets_file() -> impl Strategy<Value = String> {
    prop::collection::vec(target(), 0..4)
        .prop_map(|targets| yaml(&Y::Map(vec![("targets".to_owned(), Y::Seq(targets, false))], false)))
}

fn agentv_config() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(
            prop::sample::select(vec!["**/*.md", "rules/*.md", "[", "{a,b", "**/[z-a]", "", "***", "\\"])
                .prop_map(|s| Y::Str(s.to_owned())),
            0..4,
        ),
        prop::option::of(number()),
        any::<bool>(),
    )
        .prop_map(|(patterns, junk, schema)| {
            let mut e = Vec::new();
            if schema {
                e.push(("$schema".to_owned(), raw("agentv-config-v2")));
            }
            e.push(("guideline_patterns".to_owned(), Y::Seq(patterns, false)));
            if let Some(j) = junk {
                e.push(("guideline_patterns_extra".to_owned(), j));
            }
            yaml(&Y::Map(e, false))
        })
}

/// A `.env` line, in one of the forms real files use (and some broken ones).
fn dotenv_line() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "KEY",
        "OTHER_KEY",
        "export KEY",
        "my.key",
        "9BAD",
        "",
        "KEY ",
        "  KEY",
    ]);
    let value = prop::sample::select(vec![
        format!("{SECRET_MARK}"),
        format!("{SECRET_MARK} with spaces"),
        format!("'{SECRET_MARK} single'"),
        format!("\"{SECRET_MARK} \\n double\""),
        format!("`{SECRET_MARK} back`"),
        format!("\"{SECRET_MARK} unclosed"),
        format!("'{SECRET_MARK}' trailing"),
        format!("{SECRET_MARK} # comment"),
        format!("{SECRET_MARK}#hash"),
        format!("${{KEY}}{SECRET_MARK}"),
        "${UNSET_VAR}".to_owned(),
        format!("${{NOPE:-{SECRET_MARK}}}"),
        format!("${{{SECRET_MARK}"),
        format!("${SECRET_MARK}"),
        String::new(),
    ]);
    let sep = prop::sample::select(vec!["=", " = ", " ", ":", "=="]);
    prop_oneof![
        (key, sep, value).prop_map(|(k, s, v)| format!("{k}{s}{v}")),
        Just("# comment".to_owned()),
        Just(String::new()),
        Just(format!("{SECRET_MARK} no key")),
    ]
}

fn dotenv() -> impl Strategy<Value = String> {
    (prop::collection::vec(dotenv_line(), 0..6), any::<bool>())
        .prop_map(|(lines, crlf)| lines.join(if crlf { "\r\n" } else { "\n" }))
}

// ---------------------------------------------------------------------------------------------
// Damage: what editors, copy-paste and encodings do to files.

#[derive(Debug, Clone)]
enum Mutation {
    /// Flip the bits of the byte at (index mod len) with the mask.
    Flip(usize, u8),
    /// Keep only the first (index mod len) bytes.
    Truncate(usize),
    /// Insert bytes at (index mod len).
    Insert(usize, Vec<u8>),
    /// Remove up to `n` bytes at (index mod len).
    Delete(usize, usize),
    /// Copy line (a mod lines) to before line (b mod lines): repeated keys and ids.
    CopyLine(usize, usize),
    /// Turn every `\n` into `\r\n`.
    Crlf,
    /// Start with a byte-order mark.
    Bom,
}

fn insertion() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::sample::select(vec![
            &b"\xEF\xBB\xBF"[..],
            b"\r\n",
            b"\r",
            b"\0",
            b"\x01",
            b"\x1b[31m",
            b"\x7f",
            b"\xff",
            b"\xc3",
            b"\xe2\x80",
            b"\xed\xa0\x80",
            b"1e400",
            b"-1e400",
            b"99999999999999999999999",
            b": ",
            b"- ",
            b"\t",
            b"    ",
            b"{",
            b"[",
            b"}",
            b"]",
            b"'",
            b"\"",
            b"&a ",
            b"*a",
            b"<<: *a\n",
            b"\n---\n",
            b"!!binary ",
            b"!!int ",
            b"~",
            b"#",
            b"%YAML 1.2\n",
            b"? ",
            b"|\n",
            b">-\n",
            b"\\",
            b"${",
            b"}}",
            b"\xe2\x80\xa8",
        ])
        .prop_map(<[u8]>::to_vec),
        prop::collection::vec(any::<u8>(), 1..4),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), any::<u8>()).prop_map(|(i, m)| Mutation::Flip(i, m | 1)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        5 => (any::<usize>(), insertion()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        2 => (any::<usize>(), 1..8usize).prop_map(|(i, n)| Mutation::Delete(i, n)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::CopyLine(a, b)),
        1 => Just(Mutation::Crlf),
        1 => Just(Mutation::Bom),
    ]
}

fn mutate(bytes: &mut Vec<u8>, m: &Mutation) {
    let len = bytes.len();
    let at = |i: usize| if len == 0 { 0 } else { i % (len + 1) };
    match m {
        Mutation::Flip(i, mask) if len > 0 => bytes[i % len] ^= mask,
        Mutation::Flip(..) => {}
        Mutation::Truncate(i) => bytes.truncate(at(*i)),
        Mutation::Insert(i, b) => {
            let i = at(*i);
            bytes.splice(i..i, b.iter().copied());
        }
        Mutation::Delete(i, n) => {
            let i = at(*i);
            let end = (i + n).min(len);
            bytes.drain(i..end);
        }
        Mutation::CopyLine(a, b) => {
            let mut lines: Vec<Vec<u8>> = bytes.split(|c| *c == b'\n').map(<[u8]>::to_vec).collect();
            let copy = lines[a % lines.len()].clone();
            let to = b % lines.len();
            lines.insert(to, copy);
            *bytes = lines.join(&b'\n');
        }
        Mutation::Crlf => {
            let text = std::mem::take(bytes);
            for b in text {
                if b == b'\n' {
                    bytes.push(b'\r');
                }
                bytes.push(b);
            }
        }
        Mutation::Bom => {
            bytes.splice(0..0, b"\xEF\xBB\xBF".iter().copied());
        }
    }
}

fn damaged(text: &str, mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for m in mutations {
        mutate(&mut bytes, m);
    }
    bytes
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(mutation(), 0..4)
}

// ---------------------------------------------------------------------------------------------
// The properties.

proptest! {
    #![proptest_config(config())]

    #[test]
    fn eval_yaml_never_panics_and_positions_every_problem(text in suite(), damage in mutations()) {
        let bytes = damaged(&text, &damage);
        if let Err(e) = check(Loader::EvalYaml, &bytes, None) {
            prop_assert!(false, "{e}\n--- input\n{}", String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn jsonl_and_sidecar_never_panic_and_position_every_problem(
        (lines, sidecar) in dataset(),
        damage in mutations(),
        side_damage in mutations(),
    ) {
        let bytes = damaged(&lines, &damage);
        let side = sidecar.map(|s| damaged(&s, &side_damage));
        if let Err(e) = check(Loader::Jsonl, &bytes, side.as_deref()) {
            prop_assert!(
                false,
                "{e}\n--- jsonl\n{}\n--- sidecar\n{}",
                String::from_utf8_lossy(&bytes),
                side.map(|s| String::from_utf8_lossy(&s).into_owned()).unwrap_or_default()
            );
        }
    }

    #[test]
    fn targets_never_panic_and_position_every_problem(text in targets_file(), damage in mutations()) {
        let bytes = damaged(&text, &damage);
        if let Err(e) = check(Loader::Targets, &bytes, None) {
            prop_assert!(false, "{e}\n--- input\n{}", String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn agentv_config_never_panics_and_positions_every_problem(text in agentv_config(), damage in mutations()) {
        let bytes = damaged(&text, &damage);
        if let Err(e) = check(Loader::AgentvConfig, &bytes, None) {
            prop_assert!(false, "{e}\n--- input\n{}", String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn dotenv_never_panics_positions_every_problem_and_hides_values(text in dotenv(), damage in mutations()) {
        let bytes = damaged(&text, &damage);
        if let Err(e) = check(Loader::Dotenv, &bytes, None) {
            prop_assert!(false, "{e}\n--- input\n{:?}", String::from_utf8_lossy(&bytes));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs that once broke a rule, kept as files.

fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz-regressions")
}

/// Every file under `fuzz-regressions/<loader>/` is loaded by that loader: `eval-yaml/*.yaml`,
/// `jsonl/<name>.jsonl` (with `<name>.sidecar.yaml` when present), `targets/*.yaml`,
/// `agentv-config/*.yaml`, `dotenv/*.env`.
#[test]
fn regressions_stay_fixed() {
    let loaders = [
        ("eval-yaml", Loader::EvalYaml),
        ("jsonl", Loader::Jsonl),
        ("targets", Loader::Targets),
        ("agentv-config", Loader::AgentvConfig),
        ("dotenv", Loader::Dotenv),
    ];
    let mut checked = 0;
    let mut failures = Vec::new();
    for (dir, loader) in loaders {
        let Ok(entries) = std::fs::read_dir(regressions_dir().join(dir)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for file in files {
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.ends_with(".sidecar.yaml") {
                continue;
            }
            let main = std::fs::read(&file).expect("fixture");
            let sidecar = std::fs::read(file.with_extension("sidecar.yaml")).ok();
            if let Err(e) = check(loader, &main, sidecar.as_deref()) {
                failures.push(format!("{dir}/{name}: {e}"));
            }
            checked += 1;
        }
    }
    assert!(checked > 0, "no fixtures found under {}", regressions_dir().display());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
