//! One function per section of the suite, plus the Rust-only cases.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentv_eval_sdk::{
    CodeJudgePayload, InvokeRequest, InvokeResponse, OutputMessage, ProxyInfo, TargetClient, TargetError,
    extract_json_object, parse_payload,
};
use serde_json::{Map, Value, json};

use crate::fake_proxy::{FakeProxy, refused_url};
use crate::judge::to_result;
use crate::matchers::{Failure, Outcome, json_equal, mismatch, run_checks, substitute};
use crate::{ROLE_ENV, conformance_dir};

const PROXY_VARS: [&str; 4] = [
    "AGENTV_TARGET_PROXY_URL",
    "AGENTV_TARGET_PROXY_TOKEN",
    "AGENTV_JUDGE_PROXY_URL",
    "AGENTV_JUDGE_PROXY_TOKEN",
];
const JUDGE_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Context {
    pub proxy: FakeProxy,
    refused: String,
    cases_dir: PathBuf,
    exe: PathBuf,
}

impl Context {
    pub fn new(proxy: FakeProxy, dir: PathBuf) -> Self {
        Self {
            proxy,
            refused: refused_url(),
            cases_dir: dir.join("cases"),
            exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("conformance")),
        }
    }

    fn table(&self) -> [(&str, &str); 2] {
        [
            ("$PROXY_URL", self.proxy.url.as_str()),
            ("$REFUSED_URL", self.refused.as_str()),
        ]
    }

    fn substitute(&self, value: &Value) -> Value {
        substitute(value, &self.table())
    }
}

type Run = Box<dyn Fn(&Context) -> Outcome>;
/// Runs one case of a case file: `(context, case, the file's token)`.
type SectionFn = fn(&Context, &Value, &str) -> Outcome;

pub struct Case {
    pub section: &'static str,
    pub name: String,
    pub skip: Option<String>,
    pub run: Run,
}

/// Every case to run, in the suite's order.
pub fn plan(ctx: &Context) -> Result<Vec<Case>, Failure> {
    let mut plan = Vec::new();
    let files: [(&'static str, &str, SectionFn); 6] = [
        ("payloads", "payloads.json", payload_case),
        ("results", "results.json", result_case),
        ("extract_json", "extract_json.json", extract_case),
        ("proxy", "proxy.json", proxy_case),
        ("judges", "judges.json", judge_case),
        ("persistent", "persistent.json", persistent_case),
    ];
    for (section, file, run) in files {
        let path = ctx.cases_dir.join(file);
        let text = std::fs::read_to_string(&path).map_err(|e| Failure(format!("{}: {e}", path.display())))?;
        let data: Value = serde_json::from_str(&text).map_err(|e| Failure(format!("{}: {e}", path.display())))?;
        let token = data["token"].as_str().unwrap_or_default().to_owned();
        for case in data["cases"].as_array().cloned().unwrap_or_default() {
            let token = token.clone();
            plan.push(Case {
                section,
                name: case["name"].as_str().unwrap_or("?").to_owned(),
                skip: case["skip"]["rust"].as_str().map(str::to_owned),
                run: Box::new(move |ctx| run(ctx, &case, &token)),
            });
        }
    }
    let token = "conformance-token-0123456789abcdef";
    for (name, with_proxy, persistent) in [
        ("rust_judge_without_proxy", false, false),
        ("rust_judge_with_proxy", true, false),
        ("rust_judge_persistent_with_proxy", true, true),
    ] {
        plan.push(Case {
            section: "docs",
            name: name.to_owned(),
            skip: None,
            run: Box::new(move |ctx| docs_case(ctx, token, with_proxy, persistent)),
        });
    }
    plan.extend(rust_cases(token));
    Ok(plan)
}

// ---------------------------------------------------------------------------------------------
// payloads.json
// ---------------------------------------------------------------------------------------------

fn payload_case(_ctx: &Context, case: &Value, _token: &str) -> Outcome {
    let files = TempDir::new()?;
    for (name, text) in case["files"].as_object().into_iter().flatten() {
        std::fs::write(files.0.join(name), text.as_str().unwrap_or_default())?;
    }
    let dir = files.0.display().to_string();
    let bytes = match case.get("payload_text") {
        Some(text) => text.as_str().unwrap_or_default().as_bytes().to_vec(),
        None => serde_json::to_vec(&substitute(&case["payload"], &[("$FILES", &dir)]))?,
    };
    let parsed = parse_payload(&bytes);
    let payload = match (parsed, case.get("error")) {
        (Ok(payload), None) => payload,
        (Ok(_), Some(error)) => return Err(Failure(format!("expected an error {error}, parsed fine"))),
        (Err(e), Some(error)) => return error_contains(error, &e.to_string()),
        (Err(e), None) => return Err(Failure(format!("unexpected error: {e}"))),
    };
    let helper = |name: &str| -> Result<Value, Failure> {
        match name {
            "answer_text" => Ok(json!(payload.answer_text()?)),
            "criteria_text" => Ok(json!(payload.criteria_text())),
            other => Err(Failure(format!("no helper {other}"))),
        }
    };
    run_checks(
        &payload_view(&payload),
        case["checks"].as_array().map_or(&[], Vec::as_slice),
        &helper,
    )
}

fn error_contains(expected: &Value, got: &str) -> Outcome {
    match expected["contains"].as_str() {
        Some(want) if !got.contains(want) => {
            Err(Failure(format!("expected an error containing {want:?}, got {got:?}")))
        }
        _ => Ok(()),
    }
}

/// The payload as JSON with the Rust field names: the wire form, with each type's `extra`
/// under the key `extra` (on the wire its keys sit beside the known ones) and empty tool-call
/// lists present.
fn payload_view(p: &CodeJudgePayload) -> Value {
    let mut v = serde_json::to_value(p).unwrap_or_default();
    nest_extra(&mut v, &p.extra);
    for (key, messages) in [("output_messages", &p.output_messages), ("messages", &p.messages)] {
        for (i, m) in messages.iter().enumerate() {
            message_view(&mut v[key][i], m);
        }
    }
    if let Some(s) = &p.trace_summary {
        nest_extra(&mut v["trace_summary"], &s.extra);
    }
    if let Some(m) = &p.execution_metrics {
        nest_extra(&mut v["execution_metrics"], &m.extra);
    }
    for (i, e) in p.candidate_trace.iter().enumerate() {
        nest_extra(&mut v["candidate_trace"][i], &e.extra);
    }
    if let Some(u) = &p.token_usage {
        nest_extra(&mut v["token_usage"], &u.extra);
    }
    if let Some(t) = &p.trace {
        nest_extra(&mut v["trace"], &t.extra);
        for (i, m) in t.messages.iter().enumerate() {
            message_view(&mut v["trace"]["messages"][i], m);
        }
        for (i, e) in t.events.iter().enumerate() {
            nest_extra(&mut v["trace"]["events"][i], &e.extra);
            if let Some(tool) = &e.tool {
                nest_extra(&mut v["trace"]["events"][i]["tool"], &tool.extra);
            }
        }
    }
    v
}

fn message_view(v: &mut Value, m: &OutputMessage) {
    nest_extra(v, &m.extra);
    if let Value::Object(fields) = v {
        fields.entry("tool_calls").or_insert_with(|| json!([]));
    }
    for (j, call) in m.tool_calls.iter().enumerate() {
        nest_extra(&mut v["tool_calls"][j], &call.extra);
    }
    if let Some(u) = &m.token_usage {
        nest_extra(&mut v["token_usage"], &u.extra);
    }
}

fn nest_extra(v: &mut Value, extra: &Map<String, Value>) {
    if let Value::Object(fields) = v {
        fields.retain(|k, _| !extra.contains_key(k));
        fields.insert("extra".into(), Value::Object(extra.clone()));
    }
}

/// A temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<Self> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("agentv-conformance-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Self(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------------------
// results.json and extract_json.json
// ---------------------------------------------------------------------------------------------

fn result_case(_ctx: &Context, case: &Value, _token: &str) -> Outcome {
    match (to_result(case["input"].clone()), case.get("error")) {
        (Ok(result), None) => {
            let printed: Value = serde_json::from_str(&result.to_json_line())?;
            match mismatch(&case["output"], Some(&printed), "$") {
                None => Ok(()),
                Some(why) => Err(Failure(why)),
            }
        }
        (Ok(result), Some(error)) => Err(Failure(format!(
            "expected an error {error}, got {}",
            result.to_json_line()
        ))),
        (Err(e), Some(error)) => error_contains(error, &e.to_string()),
        (Err(e), None) => Err(Failure(format!("unexpected error: {e}"))),
    }
}

fn extract_case(_ctx: &Context, case: &Value, _token: &str) -> Outcome {
    let got = extract_json_object(case["text"].as_str().unwrap_or_default()).map_or(Value::Null, Value::Object);
    if json_equal(&case["expect"], &got) {
        Ok(())
    } else {
        Err(Failure(format!("expected {}, got {got}", case["expect"])))
    }
}

// ---------------------------------------------------------------------------------------------
// proxy.json
// ---------------------------------------------------------------------------------------------

fn proxy_case(ctx: &Context, case: &Value, token: &str) -> Outcome {
    ctx.proxy.load(token, &ctx.substitute(&case["exchanges"]))?;
    let spec = ctx.substitute(&case["client"]);
    let timeout = Duration::from_millis(spec["timeout_ms"].as_u64().unwrap_or(10_000));
    let expect = &case["expect"];
    let client = match spec.get("env") {
        Some(env) => {
            let lookup = |name: &str| env[name].as_str().map(str::to_owned);
            match TargetClient::from_lookup(lookup) {
                Ok(Some(client)) => client,
                Ok(None) if expect["client"] == "none" => return ctx.proxy.verify(),
                Ok(None) => return Err(Failure("from_lookup gave no client".into())),
                Err(e) => return proxy_error(ctx, expect, &e),
            }
        }
        None => TargetClient::new(
            spec["url"].as_str().unwrap_or(&ctx.proxy.url),
            spec["token"].as_str().unwrap_or(token),
        ),
    }
    .timeout(timeout);
    let call = &case["call"];
    let answer = match call["method"].as_str() {
        Some("get_info") => client.get_info().map(|info| info_view(&info)),
        Some("invoke") => {
            let request: InvokeRequest = serde_json::from_value(call["request"].clone())?;
            client.invoke(&request).map(|r| response_view(&r))
        }
        Some("invoke_batch") => {
            let requests: Vec<InvokeRequest> = serde_json::from_value(call["requests"].clone())?;
            client.invoke_batch(&requests).map(|items| {
                Value::Array(
                    items
                        .iter()
                        .map(|item| match item {
                            Ok(r) => response_view(r),
                            Err(e) => json!({"error": e.message()}),
                        })
                        .collect(),
                )
            })
        }
        other => return Err(Failure(format!("unknown method {other:?}"))),
    };
    match answer {
        Err(e) => proxy_error(ctx, expect, &e),
        Ok(value) if expect.get("checks").is_some() => {
            run_checks(
                &value,
                expect["checks"].as_array().map_or(&[], Vec::as_slice),
                &|name| Err(Failure(format!("no helper {name}"))),
            )?;
            ctx.proxy.verify()
        }
        Ok(value) => Err(Failure(format!("expected {expect}, got {value}"))),
    }
}

fn proxy_error(ctx: &Context, expect: &Value, error: &TargetError) -> Outcome {
    let want = expect
        .get("error")
        .ok_or_else(|| Failure(format!("unexpected error: {error}")))?;
    let got = json!({"kind": error.kind().as_str(), "status": error.status()});
    if !json_equal(&got, &json!({"kind": want["kind"], "status": want["status"]})) {
        return Err(Failure(format!("expected {want}, got {got} ({error})")));
    }
    if let Some(message) = want["message"].as_str()
        && error.message() != message
    {
        return Err(Failure(format!(
            "expected message {message:?}, got {:?}",
            error.message()
        )));
    }
    if let Some(part) = want["message_contains"].as_str()
        && !error.message().contains(part)
    {
        return Err(Failure(format!(
            "expected a message containing {part:?}, got {:?}",
            error.message()
        )));
    }
    ctx.proxy.verify()
}

/// A proxy answer with the Rust field names.
fn info_view(info: &ProxyInfo) -> Value {
    json!({"target_name": info.target_name, "max_calls": info.max_calls,
           "call_count": info.call_count, "available_targets": info.available_targets})
}

fn response_view(r: &InvokeResponse) -> Value {
    let messages = r
        .output_messages
        .iter()
        .map(|m| {
            let mut v = serde_json::to_value(m).unwrap_or_default();
            message_view(&mut v, m);
            v
        })
        .collect::<Vec<_>>();
    json!({"output_messages": messages, "raw_text": r.raw_text, "error": r.error,
           "token_usage": r.token_usage, "text": r.text()})
}

// ---------------------------------------------------------------------------------------------
// judges.json and persistent.json: the conformance judge as a process
// ---------------------------------------------------------------------------------------------

struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs this binary in `role` with `stdin`, an environment without proxy variables plus
/// `extra_env`, and a time limit.
fn run_judge_process(
    ctx: &Context,
    role: &str,
    extra_env: &[(String, String)],
    stdin: Vec<u8>,
) -> Result<Finished, Failure> {
    let mut command = Command::new(&ctx.exe);
    for name in PROXY_VARS.iter().chain(&["AGENTV_JUDGE_PERSISTENT"]) {
        command.env_remove(name);
    }
    command
        .env(ROLE_ENV, role)
        .envs(extra_env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn()?;
    let mut input = child.stdin.take().ok_or("no stdin")?;
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let mut out = child.stdout.take().ok_or("no stdout")?;
    let mut err = child.stderr.take().ok_or("no stderr")?;
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = out.read_to_end(&mut text);
        text
    });
    let err_reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = err.read_to_end(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > JUDGE_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Failure(format!("the judge did not finish within {JUDGE_TIMEOUT:?}")));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = writer.join();
    let stdout = reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Ok(Finished {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

fn case_env(ctx: &Context, case: &Value) -> Vec<(String, String)> {
    ctx.substitute(&case["env"])
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect()
}

fn check_exit(expect: &Value, done: &Finished) -> Outcome {
    let want = expect["exit_code"].as_i64();
    if done.code.map(i64::from) != want {
        return Err(Failure(format!(
            "exit code {:?}, expected {want:?}; stdout={:?} stderr={:?}",
            done.code,
            done.stdout,
            tail(&done.stderr)
        )));
    }
    Ok(())
}

fn check_stderr(expect: &Value, stderr: &str) -> Outcome {
    for text in expect["stderr_contains"].as_array().into_iter().flatten() {
        let text = text.as_str().unwrap_or_default();
        if !stderr.contains(text) {
            return Err(Failure(format!("stderr lacks {text:?}; stderr was {:?}", tail(stderr))));
        }
    }
    Ok(())
}

fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(1500);
    let start = (start..=text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    &text[start..]
}

fn judge_case(ctx: &Context, case: &Value, token: &str) -> Outcome {
    ctx.proxy.load(token, &ctx.substitute(&case["exchanges"]))?;
    let stdin = match case.get("payload_text") {
        Some(text) => text.as_str().unwrap_or_default().as_bytes().to_vec(),
        None => serde_json::to_vec(&case["payload"])?,
    };
    let done = run_judge_process(ctx, "judge", &case_env(ctx, case), stdin)?;
    let expect = &case["expect"];
    check_exit(expect, &done)?;
    let lines: Vec<&str> = done.stdout.lines().collect();
    let [line] = lines.as_slice() else {
        return Err(Failure(format!(
            "stdout must be exactly one line, got {:?}",
            done.stdout
        )));
    };
    let printed: Value = serde_json::from_str(line)?;
    if let Some(why) = mismatch(&expect["stdout"], Some(&printed), "$") {
        return Err(Failure(format!("{why}; stderr={:?}", tail(&done.stderr))));
    }
    check_stderr(expect, &done.stderr)?;
    ctx.proxy.verify()
}

fn persistent_case(ctx: &Context, case: &Value, token: &str) -> Outcome {
    ctx.proxy.load(token, &ctx.substitute(&case["exchanges"]))?;
    let mut env = case_env(ctx, case);
    env.push(("AGENTV_JUDGE_PERSISTENT".into(), "1".into()));
    let stdin: String = match case["send_raw"].as_array() {
        Some(lines) => lines
            .iter()
            .map(|l| format!("{}\n", l.as_str().unwrap_or_default()))
            .collect(),
        None => case["send"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| format!("{}\n", ctx.substitute(m)))
            .collect(),
    };
    let done = run_judge_process(ctx, "judge", &env, stdin.into_bytes())?;
    let expect = ctx.substitute(&case["expect"]);
    check_exit(&expect, &done)?;
    let Some(body) = done.stdout.strip_suffix('\n') else {
        return Err(Failure(format!(
            "stdout does not end with a newline: {:?}",
            done.stdout
        )));
    };
    let lines: Vec<&str> = body.split('\n').collect();
    let want = expect["lines"].as_array().cloned().unwrap_or_default();
    if lines.len() != want.len() {
        return Err(Failure(format!(
            "expected {} lines, got {}: {:?}; stderr={:?}",
            want.len(),
            lines.len(),
            done.stdout,
            tail(&done.stderr)
        )));
    }
    for (i, (want, line)) in want.iter().zip(&lines).enumerate() {
        let got: Value = serde_json::from_str(line).map_err(|e| Failure(format!("line {}: {e}: {line:?}", i + 1)))?;
        if let Some(why) = mismatch(want, Some(&got), &format!("line {}", i + 1)) {
            return Err(Failure(format!("{why}; stderr={:?}", tail(&done.stderr))));
        }
    }
    check_stderr(&expect, &done.stderr)?;
    ctx.proxy.verify()
}

// ---------------------------------------------------------------------------------------------
// docs/judges.md
// ---------------------------------------------------------------------------------------------

/// The fenced block right after `<!-- snippet: NAME -->` in docs/judges.md.
fn snippet(name: &str) -> Result<String, Failure> {
    let docs = conformance_dir().join("../../docs/judges.md");
    let text = std::fs::read_to_string(&docs).map_err(|e| Failure(format!("{}: {e}", docs.display())))?;
    let marker = format!("<!-- snippet: {name} -->");
    let after = text
        .split_once(&marker)
        .map(|(_, rest)| rest)
        .ok_or_else(|| Failure(format!("docs/judges.md has no snippet {name:?}")))?;
    let fence_start = after.find("```").ok_or("no fence after the snippet marker")?;
    let body = &after[fence_start..];
    let body = &body[body.find('\n').ok_or("unterminated fence")? + 1..];
    let end = body.find("\n```").ok_or("unterminated fence")?;
    Ok(format!("{}\n", &body[..end]))
}

const DOCS_PAYLOAD: &str = r#"{"eval_id": "capital", "question": "What is the capital of France?", "expected_outcome": "Names Paris.", "candidate_answer": "The capital of France is Paris.", "criteria": "Names Paris.", "output": "The capital of France is Paris.", "config": {"keywords": ["Paris", "France"]}}"#;

/// The Rust judge of docs/judges.md: the text there must be the judge compiled into this
/// runner, and that judge must grade as a judge author would expect.
fn docs_case(ctx: &Context, token: &str, with_proxy: bool, persistent: bool) -> Outcome {
    let compiled = include_str!("docs_judge.rs");
    if snippet("rust-judge")? != compiled {
        return Err(Failure(
            "the rust-judge snippet of docs/judges.md differs from agentv-eval-sdk/tests/conformance/docs_judge.rs"
                .into(),
        ));
    }
    let exchanges = if with_proxy {
        json!([{"request": {"method": "POST", "path": "/invoke"}, "response": {"status": 200, "body": {"outputMessages": [], "rawText": "{\"score\": 1, \"reason\": \"it names Paris\"}"}}}])
    } else {
        json!([])
    };
    ctx.proxy.load(token, &exchanges)?;
    let payload: Value = serde_json::from_str(DOCS_PAYLOAD)?;
    let result = if persistent {
        let proxy = with_proxy.then(|| json!({"url": ctx.proxy.url, "token": token, "max_calls": 5}));
        let request = json!({"id": 1, "payload": payload, "proxy": proxy});
        let env = [("AGENTV_JUDGE_PERSISTENT".to_owned(), "1".to_owned())];
        let done = run_judge_process(ctx, "docs-judge", &env, format!("{request}\n").into_bytes())?;
        let lines: Vec<&str> = done.stdout.lines().collect();
        if done.code != Some(0) || lines.len() != 2 {
            return Err(Failure(format!(
                "exit {:?}, stdout {:?}, stderr {:?}",
                done.code,
                done.stdout,
                tail(&done.stderr)
            )));
        }
        serde_json::from_str::<Value>(lines[1])?["result"].clone()
    } else {
        let env: Vec<(String, String)> = if with_proxy {
            vec![
                ("AGENTV_TARGET_PROXY_URL".into(), ctx.proxy.url.clone()),
                ("AGENTV_TARGET_PROXY_TOKEN".into(), token.into()),
            ]
        } else {
            Vec::new()
        };
        let done = run_judge_process(ctx, "docs-judge", &env, DOCS_PAYLOAD.as_bytes().to_vec())?;
        if done.code != Some(0) {
            return Err(Failure(format!(
                "exit {:?}, stdout {:?}, stderr {:?}",
                done.code,
                done.stdout,
                tail(&done.stderr)
            )));
        }
        serde_json::from_str(&done.stdout)?
    };
    if result["score"].as_f64() != Some(1.0) {
        return Err(Failure(format!("expected score 1, got {result}")));
    }
    if with_proxy && result["details"]["model_reason"] != "it names Paris" {
        return Err(Failure(format!("the model's reason is missing: {result}")));
    }
    ctx.proxy.verify()
}

// ---------------------------------------------------------------------------------------------
// Rust-only cases: what the shared files cannot say for every SDK
// ---------------------------------------------------------------------------------------------

fn rust_cases(token: &'static str) -> Vec<Case> {
    let case = |name: &str, run: Run| Case {
        section: "rust",
        name: name.to_owned(),
        skip: None,
        run,
    };
    vec![
        case(
            "http_proxy_variables_are_not_used",
            Box::new(move |ctx| {
                let case = json!({
                    "env": {"AGENTV_TARGET_PROXY_URL": "$PROXY_URL", "AGENTV_TARGET_PROXY_TOKEN": "judge-token",
                            "HTTP_PROXY": "$REFUSED_URL", "http_proxy": "$REFUSED_URL", "ALL_PROXY": "$REFUSED_URL"},
                    "payload": {"config": {"conformance": {"steps": [{"invoke": {"question": "Q"}}], "result": {"score": 1}}}},
                    "exchanges": [{"request": {"method": "POST", "path": "/invoke", "token": "judge-token", "body": {"question": "Q"}},
                                   "response": {"status": 200, "body": {"outputMessages": [], "rawText": "direct"}}}],
                    "expect": {"exit_code": 0, "stdout": {"score": 1, "details": {"invocations": [{"text": "direct"}]}}}
                });
                judge_case(ctx, &case, token)
            }),
        ),
        case(
            "a_panic_is_a_failed_result",
            Box::new(move |ctx| {
                let case = json!({
                    "payload": {"config": {"conformance": {"steps": [{"panic": "index out of bounds in the judge"}]}}},
                    "expect": {"exit_code": 1, "stdout": {"score": 0, "misses": ["the judge panicked: index out of bounds in the judge"],
                               "reasoning": {"$contains": "Evaluation failed: "}}, "stderr_contains": ["index out of bounds in the judge"]}
                });
                judge_case(ctx, &case, token)
            }),
        ),
        case(
            "a_panic_in_persistent_mode_is_an_error_line",
            Box::new(move |ctx| {
                let case = json!({
                    "send": [
                        {"id": 1, "payload": {"config": {"conformance": {"steps": [{"panic": "boom"}]}}}},
                        {"id": 2, "payload": {"config": {"conformance": {"result": {"score": 0.5}}}}}
                    ],
                    "expect": {"exit_code": 0, "lines": [
                        {"ready": true, "protocol": 1, "sdk": {"$contains": "rust/"}},
                        {"id": 1, "error": "the judge panicked: boom"},
                        {"id": 2, "result": {"score": 0.5}}
                    ]}
                });
                persistent_case(ctx, &case, token)
            }),
        ),
        case(
            "unreadable_payload_is_named_in_the_failed_result",
            Box::new(move |ctx| {
                let case = json!({
                    "payload_text": "{\"eval_id\": \"\u{e9}\", \"output_messages\": [{\"role\": 1}]}",
                    "expect": {"exit_code": 1, "stdout": {"score": 0,
                        "misses": ["payload key `output_messages[0].role`: expected a string, got a number"],
                        "reasoning": {"$any": true}}}
                });
                judge_case(ctx, &case, token)
            }),
        ),
    ]
}
