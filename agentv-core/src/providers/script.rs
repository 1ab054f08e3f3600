//! `python` and `javascript`: a promptfoo provider written as a script (`python:<file>`,
//! `file://<provider>.js`; `docs/promptfoo.md#providers`). A Python module's
//! `call_api(prompt, options, context)`, or a JavaScript module's class with
//! `callApi(prompt, context, options)`, answers `{output, error, tokenUsage, cost}`.
//!
//! The scripts run in warm workers, started once and reused through the pool and line protocol
//! of persistent judges (`docs/judges.md`), never a process per call: one python3 process per
//! call answered at the same time (a module's `call_api` may keep state that is not safe across
//! threads), and node workers that each take many calls at once (a few per run, one per CPU at
//! most), as promptfoo's own calls share one node process. The same node workers run promptfoo's
//! JavaScript transforms ([`run_js`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderError, ProviderFuture, ProviderKind,
    ProviderRequest, ProviderResponse, TargetSettings,
};
use crate::config::{DurationRange, Key, KeyTable, Kind};
use crate::judge_pool::{CaseRequest, JudgePool, Recycle};
use crate::model::TokenUsage;
use crate::redact::Secrets;

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&PYTHON, &JAVASCRIPT];

pub(crate) static PYTHON: ProviderEntry = ProviderEntry {
    name: "python",
    aliases: &[],
    doc: "A Python module's `call_api(prompt, options, context)` (promptfoo's `python:` provider), in warm python3 workers.",
    class: ProviderClass::Command,
    batch: false,
    cacheable: true,
    container: false,
    executable: None,
    keys: &PYTHON_KEYS,
    build: build_python,
};

pub(crate) static JAVASCRIPT: ProviderEntry = ProviderEntry {
    name: "javascript",
    aliases: &[],
    doc: "A JavaScript module's class with `callApi` (promptfoo's `file://provider.js`), in warm node workers.",
    class: ProviderClass::Command,
    batch: false,
    cacheable: true,
    container: false,
    executable: None,
    keys: &JAVASCRIPT_KEYS,
    build: build_javascript,
};

const COMMON: &[Key] = &[
    Key::new(
        "file",
        Kind::Text,
        "The module, relative to the file that declares the target.",
    )
    .required(),
    Key::new("config", Kind::Any, "Passed to the script as `options.config`."),
    Key::new(
        "timeout_seconds",
        Kind::Duration(DurationRange::TIMEOUT_SECONDS),
        "Per call (default 300; the run's `--timeout` applies too).",
    ),
];
const PYTHON_OWN: &[Key] = &[Key::new("function", Kind::Text, "The function to call (default `call_api`).")];
const PYTHON_KEYS: KeyTable = KeyTable::new("python", "Settings of a `python` target.", &[COMMON, PYTHON_OWN]);
const JAVASCRIPT_KEYS: KeyTable = KeyTable::new("javascript", "Settings of a `javascript` target.", &[COMMON]);

const PYTHON_WORKER: &str = concat!(include_str!("script_worker.py"), include_str!("../worker_loop.py"));
const JS_WORKER: &str = concat!(include_str!("../worker_loop.js"), include_str!("script_worker.js"));
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Which interpreter runs the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    Python,
    JavaScript,
}

/// A script provider: its module, function, config and the pool of warm workers.
#[derive(Debug)]
pub struct ScriptProvider {
    name: String,
    language: Language,
    file: PathBuf,
    function: Option<String>,
    config: Value,
    timeout: Duration,
    child_env: Arc<[(String, String)]>,
    secrets: Secrets,
    pool: Arc<JudgePool>,
}

fn build_python(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    build(s, ctx, Language::Python)
}

fn build_javascript(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    build(s, ctx, Language::JavaScript)
}

fn build(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>, language: Language) -> Option<Arc<dyn Provider>> {
    let pos = s.node("file").map_or(ctx.pos, |n| n.pos);
    let file = s.string("file", true).map(|f| s.path(f.trim()));
    let function = match language {
        Language::Python => s.string("function", false),
        Language::JavaScript => None,
    };
    let config = s.tree("config").map_or(Value::Null, |n| n.to_json());
    let timeout = s.duration("timeout_seconds").unwrap_or(DEFAULT_TIMEOUT);
    let file = file?;
    if !file.is_file() {
        s.error(
            pos,
            format!("target `{}`: script {} does not exist", ctx.target, file.display()),
            Some("the path is relative to the file that declares the target".to_owned()),
        );
        return None;
    }
    let cwd = file.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let pool = match language {
        Language::Python => {
            let argv = ["python3", "-c", PYTHON_WORKER].map(str::to_owned);
            JudgePool::shared(&argv, &cwd, Recycle::default())
        }
        Language::JavaScript => node_pool(&cwd),
    };
    Some(Arc::new(ScriptProvider {
        name: ctx.target.to_owned(),
        language,
        file,
        function,
        config,
        timeout,
        child_env: ctx.child_env.clone(),
        secrets: s.secrets().clone(),
        pool,
    }))
}

/// The warm node workers that run JavaScript providers and transforms in `cwd`: multiplexed,
/// as promptfoo's own calls are concurrent in one node process.
pub(crate) fn node_pool(cwd: &Path) -> Arc<JudgePool> {
    JudgePool::multiplexed(&["node", "-e", JS_WORKER].map(str::to_owned), cwd, Recycle::default())
}

/// One exchange with a warm worker: what the code returned, or why there is nothing.
async fn exchange(
    pool: &JudgePool,
    payload: Value,
    env: &[(String, String)],
    secrets: &Secrets,
    timeout: Duration,
) -> Result<Value, String> {
    let request = CaseRequest {
        env,
        payload,
        proxy: None,
        timeout,
        secrets,
    };
    let answer = pool.grade(request).await.map_err(|e| {
        // The pool speaks of judges; here the worker runs a provider or a transform.
        e.to_string().replace("code judge", "script worker")
    })?;
    match answer.get("threw").and_then(Value::as_str) {
        Some(message) => Err(message.to_owned()),
        None => Ok(answer.get("value").cloned().unwrap_or(Value::Null)),
    }
}

/// Runs promptfoo JavaScript in a warm node worker of `pool`: `code` (read as `form` says)
/// called with `params` bound to `args`, or a `file://` module's function. Returns what it
/// returned (awaited).
pub(crate) async fn run_js(pool: &JudgePool, js: JsCall<'_>, env: &[(String, String)], secrets: &Secrets) -> Result<Value, String> {
    let payload = match js.code.strip_prefix("file://") {
        Some(spec) => {
            let (path, function) = match spec.rsplit_once(':') {
                Some((path, name)) if !name.is_empty() && !name.contains(['/', '\\']) => (path, Some(name)),
                _ => (spec, None),
            };
            json!({"kind": "transform", "file": js.dir.join(path), "function": function, "args": js.args})
        }
        None => json!({
            "kind": "transform",
            "code": js.code,
            "params": js.params,
            "args": js.args,
            "form": js.form.as_str(),
        }),
    };
    exchange(pool, payload, env, secrets, DEFAULT_TIMEOUT).await
}

/// A piece of promptfoo JavaScript to run ([`run_js`]).
pub(crate) struct JsCall<'a> {
    /// The code as written, or `file://path[:function]`.
    pub code: &'a str,
    /// Where a `file://` path is relative to.
    pub dir: &'a Path,
    pub params: &'a [&'a str],
    pub args: Vec<Value>,
    pub form: JsForm,
}

/// How promptfoo reads a piece of inline JavaScript, by where it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsForm {
    /// An HTTP provider's `transformRequest`: a function expression, a body with `return`, or
    /// an expression.
    Request,
    /// An HTTP provider's `transformResponse`: a function expression or an expression.
    Response,
    /// A test's `options.transform`: a body when it has several lines, else an expression.
    Output,
}

impl JsForm {
    fn as_str(self) -> &'static str {
        match self {
            Self::Request => "request",
            Self::Response => "response",
            Self::Output => "output",
        }
    }
}

impl Provider for ScriptProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        match self.language {
            Language::Python => ProviderKind::of(&PYTHON),
            Language::JavaScript => ProviderKind::of(&JAVASCRIPT),
        }
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move {
            let started = Instant::now();
            let payload = self.payload(request);
            let value = exchange(&self.pool, payload, &self.child_env, &self.secrets, self.timeout)
                .await
                .map_err(|e| ProviderError::Reported(format!("{} provider {}: {e}", self.language_name(), self.file.display())))?;
            let mut response = answer(&value)?;
            response.duration_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
            Ok(response)
        })
    }

    fn public_settings(&self) -> Value {
        json!({"file": self.file, "function": self.function, "config": self.config})
    }
}

impl ScriptProvider {
    fn language_name(&self) -> &'static str {
        match self.language {
            Language::Python => "python",
            Language::JavaScript => "javascript",
        }
    }

    /// What the worker is sent: the prompt as promptfoo renders it (a chat as its JSON), the
    /// provider's `options` (`id`, `config`) and the `context` (`vars`, `prompt`).
    fn payload(&self, request: &ProviderRequest) -> Value {
        let prompt = match &request.chat_prompt {
            Some(messages) if messages.len() > 1 => serde_json::to_string(messages).unwrap_or_default(),
            _ => request.question.clone(),
        };
        let vars = request.vars.clone().map_or_else(|| json!({}), Value::Object);
        let options = json!({"id": self.name, "config": if self.config.is_null() { json!({}) } else { self.config.clone() }});
        let context = json!({"vars": vars, "prompt": {"raw": prompt, "label": prompt}});
        match self.language {
            Language::Python => json!({
                "file": self.file,
                "function": self.function,
                "prompt": prompt,
                "options": options,
                "context": context,
            }),
            Language::JavaScript => json!({
                "kind": "provider",
                "file": self.file,
                "prompt": prompt,
                "options": options,
                "context": context,
            }),
        }
    }
}

/// The response a script returned, read as promptfoo reads a provider response: `error` fails
/// the call; `output` (text, or anything else as its JSON) is the answer; `tokenUsage` and
/// `cost` are its metrics.
pub(crate) fn answer(value: &Value) -> Result<ProviderResponse, ProviderError> {
    let Some(obj) = value.as_object() else {
        return Err(ProviderError::malformed(
            "the script provider",
            format!(
            "it returned {}, not an object with `output`",
            match value {
                Value::Null => "nothing",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                Value::Array(_) => "a list",
                Value::Object(_) => "an object",
            }
        ),
        ));
    };
    if let Some(error) = obj.get("error").filter(|e| !e.is_null() && *e != &Value::Bool(false)) {
        let text = error.as_str().map_or_else(|| error.to_string(), str::to_owned);
        return Err(ProviderError::Reported(text));
    }
    let output = match obj.get("output") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    let mut response = ProviderResponse::text(output);
    response.token_usage = obj.get("tokenUsage").and_then(usage);
    response.cost_usd = obj.get("cost").and_then(Value::as_f64);
    let mut metadata = Map::new();
    if let Some(m) = obj.get("metadata") {
        metadata.insert("promptfoo_metadata".to_owned(), m.clone());
    }
    response.metadata = (!metadata.is_empty()).then_some(metadata);
    Ok(response)
}

/// promptfoo's `tokenUsage` (`prompt`, `completion`, `total`, `cached`).
fn usage(value: &Value) -> Option<TokenUsage> {
    let count = |k: &str| value.get(k).and_then(Value::as_u64);
    let input = count("prompt");
    let output = count("completion");
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(TokenUsage {
        input: input.unwrap_or(0),
        output: output.unwrap_or(0),
        cached: count("cached"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_response_reads_as_promptfoo_reads_it() {
        let r = answer(&json!({"output": "hi", "tokenUsage": {"prompt": 3, "completion": 2, "total": 5}, "cost": 0.5}))
            .expect("answer");
        assert_eq!(r.output_messages[0].text().as_deref(), Some("hi"));
        assert_eq!(r.token_usage.map(|u| (u.input, u.output)), Some((3, 2)));
        assert_eq!(r.cost_usd, Some(0.5));
        let structured = answer(&json!({"output": {"a": 1}})).expect("answer");
        assert_eq!(structured.output_messages[0].text().as_deref(), Some("{\"a\":1}"));
        let failed = answer(&json!({"error": "backend down"})).expect_err("error");
        assert_eq!(failed.to_string(), "backend down");
        let wrong = answer(&json!("just text")).expect_err("not an object");
        assert!(wrong.to_string().contains("not an object with `output`"), "{wrong}");
        assert!(answer(&json!({"output": "x", "error": null})).is_ok());
    }
}
