//! `code_judge`: runs an external program that reads the payload on stdin and prints a score.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentv_eval_sdk::proxy::{JUDGE_PROXY_TOKEN_ENV, JUDGE_PROXY_URL_ENV, PROXY_TOKEN_ENV, PROXY_URL_ENV};
use agentv_eval_sdk::{CodeJudgePayload, JudgeOutput, MAX_INLINE_OUTPUT_CHARS, OutputError};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::judge_pool::{CaseRequest, JudgePool, Recycle};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{DurationRange, Fields, IntRange, Key, KeyTable, Kind, Node, NodeValue, describe};
use crate::model::Message;
use crate::process::{self, ProcessError, ProcessSpec};
use crate::providers::proxy_invoker::ProviderInvoker;
use crate::redact::Secrets;

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "code_judge",
    names: Names {
        v2: &["code_judge", "code", "code-judge"],
        v4: &[],
        promptfoo: &[],
    },
    doc: "Runs a program that reads the case on stdin and prints `{score, hits?, misses?, reasoning?, details?}`; other keys reach it as `config`.",
    keys: &KEYS,
    parse,
};

/// How long a code judge may run: from a millisecond to a day.
pub const JUDGE_TIMEOUT_RANGE: DurationRange =
    DurationRange::seconds(Duration::from_millis(1), Duration::from_secs(86_400));

const OWN: &[Key] = &[
    Key::new(
        "script",
        Kind::OneOf(&[Kind::Str, Kind::List(&Kind::Text)]),
        "An argv list (`[python3, judge.py]`), or a command string run by `sh -c` (4.x spells it `command`).",
    )
    .aliases(&["command"])
    .required(),
    Key::new(
        "cwd",
        Kind::Text,
        "Working directory, relative to the eval file (default: the eval file's directory).",
    ),
    Key::new(
        "timeout_seconds",
        Kind::Duration(JUDGE_TIMEOUT_RANGE),
        "How long the judge may run (default: the run's `--timeout`).",
    )
    .aliases(&["timeoutSeconds"]),
    TARGET_KEY,
    PERSISTENT_KEY,
];

/// `target`: the target proxy of a grading program (code judges and 4.x code graders).
pub(crate) const TARGET_KEY: Key = Key::new(
    "target",
    Kind::OneOf(&[Kind::Bool, Kind::Object(&PROXY_KEYS)]),
    "Let the judge call targets through the proxy: `true`, or `{max_calls: N}` (default 50).",
)
.aliases(&["judge"]);
/// `persistent`: start the judge once per worker and send it one case per line.
pub(crate) const PERSISTENT_KEY: Key = Key::new(
    "persistent",
    Kind::OneOf(&[Kind::Bool, Kind::Object(&RECYCLE_KEYS)]),
    "Start the judge once per worker and send it one JSON line per case (the SDKs' persistent mode) instead of once per case: `true`, or `{max_cases: N, max_memory_mb: M}` to replace a process after N cases or once it uses more than M MB (default 1024).",
);
const RECYCLE_OWN: &[Key] = &[
    Key::new(
        "max_cases",
        Kind::Int(IntRange { min: 1, max: i64::MAX }),
        "Replace a judge process after this many cases (default: never).",
    )
    .aliases(&["maxCases"]),
    Key::new(
        "max_memory_mb",
        Kind::Int(IntRange {
            min: 1,
            max: 1 << 40,
        }),
        "Replace a judge process, between cases, once it and its children use more than this many MB of memory (default 1024).",
    )
    .aliases(&["maxMemoryMb"]),
];
const RECYCLE_KEYS: KeyTable = KeyTable::new(
    "persistent",
    "When a persistent judge's process is replaced by a fresh one.",
    &[RECYCLE_OWN],
);

/// `persistent: true`, `false` or `{max_cases, max_memory_mb}`: `None` when the judge runs once
/// per case (or on error, reported).
pub(crate) fn parse_persistent(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Recycle> {
    let node = f.take("persistent")?;
    match &node.value {
        NodeValue::Bool(true) => Some(Recycle::default()),
        NodeValue::Bool(false) | NodeValue::Null => None,
        NodeValue::Map(_) => {
            let mut f = Fields::of(node, &RECYCLE_KEYS, cx.diags)?;
            let before = cx.diags.error_count();
            let max_cases = f.integer("max_cases", cx.diags);
            let max_memory_mb = f.integer("max_memory_mb", cx.diags);
            f.warn_unknown(cx.diags);
            if cx.diags.error_count() > before {
                return None;
            }
            Some(Recycle {
                max_cases: max_cases.map(|n| n as u64),
                max_rss_bytes: Some(max_memory_mb.map_or(Recycle::DEFAULT_MAX_MEMORY_MB, |n| n as u64) * 1024 * 1024),
            })
        }
        _ => {
            cx.diags.error(
                node.pos,
                format!(
                    "`persistent` must be true, false or {{max_cases: N, max_memory_mb: M}}, found {}",
                    describe(node)
                ),
                None,
            );
            None
        }
    }
}
const KEYS: KeyTable = KeyTable::new(
    "code_judge",
    "A code judge; keys not listed here are passed to it in `config`.",
    &[OWN],
)
.open();

const PROXY_OWN: &[Key] = &[Key::new(
    "max_calls",
    Kind::Int(IntRange {
        min: 0,
        max: u32::MAX as i64,
    }),
    "Most target calls the judge may make (default 50).",
)
.aliases(&["maxCalls"])];
const PROXY_KEYS: KeyTable = KeyTable::new("target", "The judge's target-proxy budget.", &[PROXY_OWN]);

/// A code judge as configured.
#[derive(Debug, Clone)]
pub struct CodeJudge {
    /// argv; a string script becomes `sh -c <script>`.
    pub script: Vec<String>,
    pub cwd: PathBuf,
    /// Overrides the run's timeout for this judge.
    pub timeout: Option<Duration>,
    /// Present when the judge may call targets through the proxy.
    pub proxy: Option<ProxyBudget>,
    /// The grader's other keys, passed to the judge untouched.
    pub config: Map<String, Value>,
    /// Set with `persistent: true`: the pool of long-lived processes of this judge.
    pub persistent: Option<Arc<JudgePool>>,
}

/// How many target calls a judge may make through the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyBudget {
    pub max_calls: u32,
}

impl Default for ProxyBudget {
    fn default() -> Self {
        Self { max_calls: 50 }
    }
}

impl Grader for CodeJudge {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(run(self, ctx))
    }
}

/// Reads a `code_judge`'s keys; every other key goes to `config`, with a warning when it looks
/// like a misspelled key of the judge.
fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let pos = f.pos;
    let script = match f.take("script") {
        None => {
            cx.diags.error(
                pos,
                "code_judge is missing the required key `script`",
                Some("add `script: [python3, judge.py]` (an argv list) or a shell command string".to_owned()),
            );
            return None;
        }
        Some(node) => (parse_script(node, cx)?, node.pos),
    };
    let (script, script_pos) = script;
    let cwd = match f.string("cwd", cx.diags) {
        Some(dir) => {
            let path = crate::paths::normalize(&cx.eval_dir.join(&dir));
            if !path.is_dir() {
                let p = f.take("cwd").map_or(pos, |n| n.pos);
                cx.diags.error(
                    p,
                    format!("code_judge cwd `{dir}` is not a directory ({})", path.display()),
                    None,
                );
                return None;
            }
            path
        }
        None => cx.eval_dir.to_path_buf(),
    };
    warn_missing_program(&script, &cwd, script_pos, cx);
    let timeout = f.duration("timeout_seconds", cx.diags);
    let proxy = match f.take("target") {
        None => None,
        Some(node) => parse_proxy(node, cx)?,
    };
    let persistent = parse_persistent(f, cx).map(|recycle| JudgePool::shared(&script, &cwd, recycle));
    let config = f.rest_as_config("the judge", "code_judge", cx.diags);
    Some(Arc::new(CodeJudge {
        script,
        cwd,
        timeout,
        proxy,
        config,
        persistent,
    }))
}

fn parse_script(node: &Node, cx: &mut ParseContext<'_>) -> Option<Vec<String>> {
    match &node.value {
        NodeValue::Str(s) if !s.trim().is_empty() => Some(vec!["sh".into(), "-c".into(), s.clone()]),
        NodeValue::Seq(items) if !items.is_empty() => {
            let mut argv = Vec::with_capacity(items.len());
            for item in items {
                match &item.value {
                    NodeValue::Str(s) => argv.push(s.clone()),
                    NodeValue::Int(_) | NodeValue::Float(_) => argv.extend(item.scalar_text()),
                    _ => {
                        cx.diags.error(
                            item.pos,
                            format!("script arguments must be strings, found {}", item.type_name()),
                            None,
                        );
                        return None;
                    }
                }
            }
            if argv[0].trim().is_empty() {
                cx.diags.error(
                    items[0].pos,
                    "the program of `script` (its first item) is empty",
                    Some("for example `script: [python3, judge.py]`".to_owned()),
                );
                return None;
            }
            Some(argv)
        }
        _ => {
            cx.diags.error(
                node.pos,
                format!(
                    "`script` must be a non-empty argv list or command string, found {}",
                    describe(node)
                ),
                Some("for example `script: [python3, judge.py]`".to_owned()),
            );
            None
        }
    }
}

/// A program named by a path (`./judge.py`, `bin/judge`) that is not there when the suite is
/// loaded will fail every case it grades; it may still be built before the run, so this warns.
fn warn_missing_program(script: &[String], cwd: &std::path::Path, pos: crate::config::Pos, cx: &mut ParseContext<'_>) {
    let Some(program) = script.first() else { return };
    if script.len() >= 2 && script[..2] == ["sh", "-c"] {
        return;
    }
    if program.contains('/') && !cwd.join(program).exists() {
        cx.diags.warn(
            pos,
            format!("the code judge's program `{program}` does not exist in {}", cwd.display()),
            Some("the path is relative to the judge's `cwd` (default: the eval file's directory)".to_owned()),
        );
    }
}

/// `target: true`, `target: false` or `target: {max_calls: N}`. The outer `Option` is `None` on
/// error; the inner one is `None` when the proxy is off.
pub(crate) fn parse_proxy(node: &Node, cx: &mut ParseContext<'_>) -> Option<Option<ProxyBudget>> {
    match &node.value {
        NodeValue::Bool(true) => Some(Some(ProxyBudget::default())),
        NodeValue::Bool(false) | NodeValue::Null => Some(None),
        NodeValue::Map(_) => {
            let mut f = Fields::of(node, &PROXY_KEYS, cx.diags)?;
            let before = cx.diags.error_count();
            let max_calls = f.integer("max_calls", cx.diags);
            f.warn_unknown(cx.diags);
            if cx.diags.error_count() > before {
                return None;
            }
            let max_calls = max_calls.map_or(ProxyBudget::default().max_calls, |n| n as u32);
            Some(Some(ProxyBudget { max_calls }))
        }
        _ => {
            cx.diags.error(
                node.pos,
                format!(
                    "`target` must be true, false or {{max_calls: N}}, found {}",
                    describe(node)
                ),
                None,
            );
            None
        }
    }
}

/// The stdin payload for this case: the 2.x keys and, with the same values, the 4.x keys, so
/// judges written for either generation run unchanged (`docs/architecture.md#code-judge-contract`).
pub fn payload(spec: &CodeJudge, ctx: &GradeContext<'_>) -> CodeJudgePayload {
    payload_with(spec.config.clone(), ctx)
}

/// [`payload`] with `config` as the grader's configuration: what every program that grades
/// a case reads (code judges, 4.x code graders, prompt scripts).
pub(crate) fn payload_with(config: Map<String, Value>, ctx: &GradeContext<'_>) -> CodeJudgePayload {
    let case = ctx.case;
    let mut payload = CodeJudgePayload {
        eval_id: case.id.clone(),
        question: case.question.clone(),
        expected_outcome: case.expected_outcome.clone(),
        expected_messages: case.expected_messages.iter().map(Message::to_json).collect(),
        reference_answer: case.reference_answer.clone(),
        candidate_answer: ctx.candidate_answer.to_owned(),
        output_messages: ctx.output_messages.to_vec(),
        guideline_files: case.guidelines.iter().map(|g| g.path.display().to_string()).collect(),
        input_files: case.input_files.iter().map(|p| p.display().to_string()).collect(),
        input_messages: case.raw_inputs().into_owned(),
        trace_summary: Some(ctx.trace_summary.clone()),
        candidate_trace: ctx.trace.to_vec(),
        execution_metrics: Some(ctx.metrics.clone()),
        config,
        input: case.input_messages.iter().map(Message::to_json).collect(),
        metadata: case.metadata.clone().unwrap_or_default(),
        file_changes: ctx.workspace.and_then(|w| w.file_changes.clone()),
        workspace_path: ctx.workspace.map(|w| w.path.display().to_string()),
        ..CodeJudgePayload::default()
    };
    payload.fill_v4_keys();
    payload
}

/// Moves an answer too long for the 4.x `output` key into a file named by `output_path`, as
/// 4.x does. The file lives as long as the returned handle: until the judge has finished.
pub(crate) fn move_long_answer(payload: &mut CodeJudgePayload) -> std::io::Result<Option<tempfile::NamedTempFile>> {
    // The JSON encoding is at most six characters per character, plus the quotes.
    if payload.candidate_answer.len() * 6 + 2 <= MAX_INLINE_OUTPUT_CHARS {
        return Ok(None);
    }
    let encoded = serde_json::to_string(&payload.candidate_answer).map_err(std::io::Error::other)?;
    if encoded.chars().count() <= MAX_INLINE_OUTPUT_CHARS {
        return Ok(None);
    }
    let mut file = tempfile::Builder::new()
        .prefix("agentv-answer-")
        .suffix(".json")
        .tempfile()?;
    std::io::Write::write_all(&mut file, encoded.as_bytes())?;
    payload.output = None;
    payload.output_path = Some(file.path().display().to_string());
    Ok(Some(file))
}

pub(crate) use crate::judge_pool::own_program;

/// How a grading program is run: what [`execute`] needs besides the case.
pub(crate) struct Program<'a> {
    pub argv: &'a [String],
    pub cwd: &'a std::path::Path,
    pub timeout: Option<Duration>,
    pub proxy: Option<ProxyBudget>,
    /// The program's pool when it runs persistent: the case goes to a long-lived process.
    pub persistent: Option<&'a JudgePool>,
}

/// A grading program that ran (or could not): its outcome, and what to record about the run.
pub(crate) struct Execution {
    /// `Err` holds why it could not run or finish, fit for the results file.
    pub outcome: Result<process::Exited, ProcessErrorText>,
    /// `{script, cwd, target_proxy?}` for the results file.
    pub request: Value,
    /// The proxy's usage, when the program had one.
    pub proxy_usage: Option<Value>,
}

/// Why a grading program did not finish by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProcessErrorText {
    TimedOut(String),
    Other(String),
}

impl ProcessErrorText {
    pub fn message(&self) -> &str {
        match self {
            Self::TimedOut(m) | Self::Other(m) => m,
        }
    }
}

/// Runs a grading program with `payload` on stdin: a long answer moved to a file, the target
/// proxy started when asked for and stopped after, the whole process group killed on timeout.
pub(crate) async fn execute(program: Program<'_>, mut payload: CodeJudgePayload, ctx: &GradeContext<'_>, encode: impl Fn(&CodeJudgePayload) -> Result<Vec<u8>, String>) -> Execution {
    let mut request = json!({ "script": program.argv, "cwd": program.cwd.display().to_string() });
    let failed = |message: String, request: Value| Execution {
        outcome: Err(ProcessErrorText::Other(message)),
        request,
        proxy_usage: None,
    };
    let _answer_file = match move_long_answer(&mut payload) {
        Ok(file) => file,
        Err(e) => return failed(format!("cannot write the long answer for the judge: {e}"), request),
    };
    // A persistent judge gets the payload inside its request line instead.
    let stdin = match program.persistent {
        Some(_) => Vec::new(),
        None => match encode(&payload) {
            Ok(bytes) => bytes,
            Err(e) => return failed(format!("cannot encode the judge payload: {e}"), request),
        },
    };
    let mut env: Vec<(String, String)> = ctx.run.child_env.to_vec();
    // In a workspace the program runs there, finding its own files as before (`docs/workspaces.md`).
    if let Some(e) = ctx.workspace.and_then(|w| w.container_error.as_ref()) {
        return failed(format!("the case's container did not start: {e}"), request);
    }
    let placed = Placement::of(&program, ctx);
    let (argv, cwd) = match &placed {
        Some(placed) => {
            env.push(("AGENTV_WORKSPACE_PATH".to_owned(), placed.dir.display().to_string()));
            request["cwd"] = Value::from(placed.dir.display().to_string());
            (placed.argv.as_slice(), placed.dir)
        }
        None => (program.argv, program.cwd),
    };
    let proxy = match program.proxy {
        None => None,
        Some(budget) => match CaseProxy::start(budget, ctx, &mut env).await {
            Ok(proxy) => Some(proxy),
            Err(e) => return failed(format!("cannot start the target proxy: {e}"), request),
        },
    };
    let timeout = program.timeout.unwrap_or(ctx.run.timeout);
    let outcome = match program.persistent {
        Some(pool) => {
            request["persistent"] = Value::Bool(true);
            // The process outlives this case: it gets the case's proxy in the request, not in
            // its environment.
            let env = &ctx.run.child_env;
            let case_proxy = proxy.as_ref().map(|p| p.request.clone());
            grade_persistent(pool, env, &payload, case_proxy, timeout, ctx).await
        }
        None => run_once(argv, cwd, &env, &stdin, timeout).await,
    };
    let mut proxy_usage = None;
    if let Some(proxy) = proxy {
        let target = proxy.stop(ctx).await;
        request["target_proxy"] = target.clone();
        proxy_usage = Some(target);
    }
    Execution {
        outcome,
        request,
        proxy_usage,
    }
}

/// Where a program runs inside the case's workspace: there, finding its own files as before,
/// or in its container as written, the image holding it (`docs/workspaces.md#containers`).
struct Placement<'w> {
    argv: Vec<String>,
    dir: &'w Path,
}

impl<'w> Placement<'w> {
    fn of(program: &Program<'_>, ctx: &GradeContext<'w>) -> Option<Self> {
        ctx.workspace.map(|w| Placement {
            argv: w
                .container_argv(program.argv, &w.path)
                .unwrap_or_else(|| w.program_argv(program.argv, program.cwd)),
            dir: w.path.as_path(),
        })
    }
}

/// The target proxy a program may call for this case (`docs/architecture.md#target-proxy`).
struct CaseProxy {
    handle: agentv_proxy::ProxyHandle,
    invoker: Arc<ProviderInvoker>,
    /// `{url, token, max_calls}`, for a persistent judge's request line.
    request: Value,
}

impl CaseProxy {
    /// Starts the proxy and puts its address and token in `env`.
    async fn start(budget: ProxyBudget, ctx: &GradeContext<'_>, env: &mut Vec<(String, String)>) -> Result<Self, String> {
        let invoker = Arc::new(
            ProviderInvoker::new(ctx.target, ctx.case.id.clone(), ctx.attempt).with_eval_dir(ctx.case.eval_dir()),
        );
        let config = agentv_proxy::ProxyConfig {
            max_calls: budget.max_calls,
        };
        let handle = agentv_proxy::TargetProxy::start(config, invoker.clone())
            .await
            .map_err(|e| e.to_string())?;
        for (name, value) in [
            (PROXY_URL_ENV, handle.url()),
            (PROXY_TOKEN_ENV, handle.token()),
            (JUDGE_PROXY_URL_ENV, handle.url()),
            (JUDGE_PROXY_TOKEN_ENV, handle.token()),
        ] {
            env.push((name.to_owned(), value.to_owned()));
        }
        let request = json!({
            "url": handle.url(),
            "token": handle.token(),
            "max_calls": budget.max_calls,
        });
        Ok(Self {
            handle,
            invoker,
            request,
        })
    }

    /// Stops the proxy; what it served, for the results file.
    async fn stop(self, ctx: &GradeContext<'_>) -> Value {
        let (stats, usage) = (self.handle.shutdown().await, self.invoker.usage());
        let mut target = json!({
            "target_name": ctx.target.judge_name,
            "call_count": stats.call_count,
            "max_calls": stats.max_calls,
            "batch_used": stats.batch_used,
            "cached_calls": usage.cached_calls,
            "deduplicated_calls": usage.deduplicated_calls,
        });
        if let Some(tokens) = usage.token_usage {
            target["token_usage"] = json!(tokens);
        }
        if let Some(cost) = usage.cost_usd {
            target["cost_usd"] = json!(cost);
        }
        target
    }
}

/// Runs a one-shot program to its exit, its whole process group killed on timeout.
async fn run_once(
    argv: &[String],
    cwd: &Path,
    env: &[(String, String)],
    stdin: &[u8],
    timeout: Duration,
) -> Result<process::Exited, ProcessErrorText> {
    process::run(ProcessSpec {
        argv: &own_program(argv),
        cwd,
        env,
        env_remove: &[],
        stdin: Some(stdin),
        timeout,
        tee: None,
        keep_children: false,
    })
    .await
    .map_err(|e| match e {
        ProcessError::TimedOut(d) => ProcessErrorText::TimedOut(format!("timed out after {}s", d.as_secs_f64())),
        e => ProcessErrorText::Other(e.to_string()),
    })
}

/// Sends the case to a pooled persistent judge. Its `result` reads like the stdout of a
/// one-shot judge that exited 0, so both generations keep their own reading of results.
async fn grade_persistent(
    pool: &JudgePool,
    env: &[(String, String)],
    payload: &CodeJudgePayload,
    proxy: Option<Value>,
    timeout: Duration,
    ctx: &GradeContext<'_>,
) -> Result<process::Exited, ProcessErrorText> {
    use std::os::unix::process::ExitStatusExt as _;
    let payload = serde_json::to_value(payload)
        .map_err(|e| ProcessErrorText::Other(format!("cannot encode the judge payload: {e}")))?;
    let case = CaseRequest {
        env,
        payload,
        proxy,
        timeout,
        secrets: &ctx.run.secrets,
    };
    match pool.grade(case).await {
        Ok(result) => Ok(process::Exited {
            status: std::process::ExitStatus::from_raw(0),
            stdout: serde_json::to_vec(&result).unwrap_or_default(),
            stderr: Vec::new(),
        }),
        Err(e) if e.is_timeout() => Err(ProcessErrorText::TimedOut(e.to_string())),
        Err(e) => Err(ProcessErrorText::Other(e.to_string())),
    }
}

async fn run(spec: &CodeJudge, ctx: &GradeContext<'_>) -> Grade {
    let program = Program {
        argv: &spec.script,
        cwd: &spec.cwd,
        timeout: spec.timeout,
        proxy: spec.proxy,
        persistent: spec.persistent.as_deref(),
    };
    let ran = execute(program, payload(spec, ctx), ctx, |p| {
        serde_json::to_vec(p).map_err(|e| e.to_string())
    })
    .await;
    let mut grade = match ran.outcome {
        Err(ProcessErrorText::TimedOut(m)) if m.starts_with("code judge") => Grade::crashed(m),
        Err(ProcessErrorText::TimedOut(m)) => Grade::crashed(format!("code judge {m}")),
        Err(ProcessErrorText::Other(m)) => Grade::crashed(m),
        Ok(done) if !done.status.success() => {
            let tail = done.output_tail(2000, &ctx.run.secrets);
            let said = if tail.trim().is_empty() {
                " and printed nothing".to_owned()
            } else {
                format!(": {tail}")
            };
            Grade::crashed(format!("code judge exited with code {}{said}", done.code_text()))
        }
        Ok(done) => parse_output(&String::from_utf8_lossy(&done.stdout), &ctx.run.secrets),
    };
    if let Some(target) = ran.proxy_usage {
        grade
            .details
            .get_or_insert_with(Map::new)
            .insert("target_proxy".to_owned(), target);
    }
    grade.request = Some(ran.request);
    grade
}

/// Parses a judge's stdout with the SDK's reading of the result contract (2.x `{score, hits?,
/// misses?, reasoning?, details?}` or 4.x `{score?, assertions, verdict?, details?}`). Output that
/// breaks the contract fails the evaluator with empty hits and misses: no JSON object, a missing or
/// non-numeric score, a score outside [0, 1] (docs/architecture.md#scoring: a judge answering 2 has
/// a bug, and clamping it would turn the bug into a pass), non-object `details`. Keys outside the
/// contract are ignored. 4.x assertions with `evidence` are kept in `details.assertions`.
///
/// Output quoted in an error is redacted with `secrets` before it is cut.
pub fn parse_output(stdout: &str, secrets: &Secrets) -> Grade {
    let output = match JudgeOutput::parse(stdout) {
        Ok(output) => output,
        Err(OutputError::NotJson(_)) => {
            return Grade::failed(format!(
                "code judge printed no valid JSON object on stdout (got: {:?})",
                crate::process::tail(stdout.trim(), 200, secrets)
            ));
        }
        Err(e @ OutputError::NotObject(_)) => return Grade::failed(format!("code judge {e}")),
        Err(OutputError::Invalid(e)) => return Grade::failed(format!("code judge output: {e}")),
    };
    let mut details = output.result.details().cloned();
    if output.assertions.iter().any(|a| a.evidence.is_some()) {
        let assertions = serde_json::to_value(&output.assertions).unwrap_or(Value::Null);
        details
            .get_or_insert_with(Map::new)
            .entry("assertions")
            .or_insert(assertions);
    }
    let listed = |items: &[String]| -> Vec<String> {
        items
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };
    Grade {
        score: output.result.score(),
        hits: listed(output.result.hits()),
        misses: listed(output.result.misses()),
        reasoning: output.result.reasoning().map(str::to_owned),
        details,
        ..Grade::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(stdout: &str) -> Grade {
        parse_output(stdout, &Secrets::default())
    }

    fn load_problems(yaml: &str) -> (bool, Vec<String>) {
        let node = crate::config::node::parse_yaml(yaml).expect("yaml");
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("judge.py"), "").expect("judge");
        let ws = crate::paths::Workspace::from_cwd(dir.path().to_path_buf());
        let mut diags = crate::config::Diagnostics::new(std::path::Path::new("e.yaml"));
        let mut cx = ParseContext::new(&ws, &ws.cwd, &mut diags);
        let ok = crate::evaluators::parse_graders(&node, &mut cx).is_some();
        (ok, diags.into_vec().iter().map(ToString::to_string).collect())
    }

    #[test]
    fn an_empty_or_missing_script_program_is_reported_at_load() {
        let (ok, problems) = load_problems("- {type: code_judge, script: ['']}\n");
        assert!(!ok);
        assert!(problems[0].contains("error: the program of `script` (its first item) is empty"), "{problems:?}");
        let (ok, problems) = load_problems("- {type: code_judge, script: [./nope.py]}\n");
        assert!(ok, "a missing program may be built before the run");
        assert!(problems[0].contains("warning: the code judge's program `./nope.py` does not exist"), "{problems:?}");
        let (ok, problems) = load_problems("- {type: code_judge, script: [./judge.py]}\n");
        assert!(ok && problems.is_empty(), "{problems:?}");
        let (ok, problems) = load_problems("- {type: code_judge, script: [python3, judge.py]}\n");
        assert!(ok && problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn parses_valid_output() {
        let g = parse(
            r#" {"score": 0.75, "hits": ["a", " ", " b "], "misses": [], "reasoning": "r", "details": {"k": [1]}} "#,
        );
        assert_eq!(g.score, 0.75);
        assert_eq!(g.hits, ["a", "b"], "items are trimmed and blank ones dropped");
        assert_eq!(g.reasoning.as_deref(), Some("r"));
        assert_eq!(g.details.expect("details")["k"], json!([1]));
        assert!(g.error.is_none());
    }

    #[test]
    fn a_4x_result_grades_with_its_assertions() {
        let g = parse(
            r#"{"score": 0.5, "verdict": "fail", "assertions": [{"text": "has title", "passed": true}, {"text": "has date", "passed": false, "evidence": "no date line"}], "details": {"n": 2}}"#,
        );
        assert_eq!((g.score, g.error.as_deref()), (0.5, None));
        assert_eq!(
            (g.hits.as_slice(), g.misses.as_slice()),
            (&["has title".to_owned()][..], &["has date".to_owned()][..])
        );
        let details = g.details.expect("details");
        assert_eq!(details["n"], 2);
        assert_eq!(
            details["assertions"][1],
            json!({"text": "has date", "passed": false, "evidence": "no date line"})
        );
        let scored_by_assertions =
            parse(r#"{"assertions": [{"text": "a", "passed": true}, {"text": "b", "passed": false}]}"#);
        assert_eq!((scored_by_assertions.score, scored_by_assertions.details), (0.5, None));
    }

    #[test]
    fn keys_outside_the_contract_are_ignored() {
        let g = parse(r#"{"score": 1, "name": "my judge", "passed": true}"#);
        assert_eq!((g.score, g.error), (1.0, None));
    }

    #[test]
    fn rejects_what_is_not_a_result() {
        let cases = [
            (
                "not json at all",
                "code judge printed no valid JSON object on stdout (got: \"not json at all\")",
            ),
            (
                "{\"score\": 1}\n{\"score\": 0}",
                "code judge printed no valid JSON object on stdout",
            ),
            ("[1, 2]", "code judge output must be a JSON object, got an array"),
            (
                r#"{"hits": []}"#,
                "code judge output: a judge result needs a `score` (a number in [0, 1])",
            ),
            (
                r#"{"score": "high"}"#,
                "code judge output: score must be a number in [0, 1], got a string",
            ),
            (
                r#"{"score": 1, "hits": ["a", 3]}"#,
                "code judge output: hits[1] must be a string, got a number",
            ),
            (
                r#"{"score": 1, "details": [1]}"#,
                "code judge output: details must be a JSON object, got an array",
            ),
        ];
        for (stdout, want) in cases {
            let g = parse(stdout);
            let error = g.error.expect("error");
            assert!(error.starts_with(want), "{stdout}: {error}");
            assert_eq!(g.score, 0.0);
            assert!(!g.error_is_miss, "invalid output is not listed as a miss: {stdout}");
        }
    }

    #[test]
    fn code_judge_score_out_of_range_is_a_grader_error() {
        for (stdout, shown) in [
            (r#"{"score": 2, "hits": ["all good"]}"#, "2"),
            (r#"{"score": 1.0000001}"#, "1.0000001"),
            (r#"{"score": -0.5}"#, "-0.5"),
            (r#"{"score": 1e308}"#, "1e308"),
            (r#"{"score": -1e-9}"#, "-1e-9"),
        ] {
            let g = parse(stdout);
            assert_eq!(
                g.error.as_deref(),
                Some(
                    format!(
                        "code judge output: score {shown} is outside [0, 1]; agentv does not clamp code judge scores, so scale it in the judge (e.g. passed / total)"
                    )
                    .as_str()
                ),
                "{stdout}"
            );
            assert_eq!((g.score, g.hits.len()), (0.0, 0), "{stdout}");
        }
        for edge in [r#"{"score": 0}"#, r#"{"score": 1}"#, r#"{"score": 1.0}"#] {
            assert!(parse(edge).error.is_none(), "{edge}");
        }
    }

    #[test]
    fn long_answers_move_to_a_file_as_4x_does() {
        let mut short = CodeJudgePayload {
            candidate_answer: "short".into(),
            ..CodeJudgePayload::default()
        };
        short.fill_v4_keys();
        assert!(move_long_answer(&mut short).expect("no file needed").is_none());
        assert_eq!(short.output.as_deref(), Some("short"));

        let answer = "é\"".repeat(30_000);
        let mut long = CodeJudgePayload {
            candidate_answer: answer.clone(),
            ..CodeJudgePayload::default()
        };
        long.fill_v4_keys();
        let file = move_long_answer(&mut long).expect("written").expect("a file");
        assert_eq!(long.output, None);
        assert_eq!(
            long.output_path.as_deref(),
            Some(file.path().to_str().expect("utf-8 path"))
        );
        assert_eq!(long.answer_text().expect("read back"), answer);
        let wire = serde_json::to_value(&long).expect("serializes");
        assert_eq!(wire["output"], Value::Null);
        assert_eq!(
            wire["candidate_answer"].as_str(),
            Some(answer.as_str()),
            "2.x judges still get it inline"
        );
    }
}
