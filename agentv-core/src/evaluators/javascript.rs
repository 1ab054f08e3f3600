//! promptfoo's `javascript` assertion (`docs/promptfoo.md#javascript`): inline JavaScript
//! (`output.includes('Paris')`, or a multi-line function body) or `file://check.js[:name]`,
//! called with promptfoo's `output` and `context`, returning a boolean, a number or a grading
//! result `{pass, score, reason}`.
//!
//! Inline code that needs nothing from Node runs in an embedded engine ([`super::js_engine`]),
//! in microseconds and without a process; the rest, and whatever throws there, runs in warm
//! node workers through the same pool and line protocol as persistent code judges
//! ([`super::judge_pool`]), multiplexed: each node process takes many assertions at once
//! and answers them as they finish, and a run starts one process per CPU at most, never a
//! process per assertion. A worker that dies or hangs is replaced; node missing is a grader
//! error, never a pass.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::js_engine;
use super::judge_pool::{JudgePool, Recycle};
use super::promptfoo_check::{self, PfResult};
use super::script_assertion;
use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "javascript",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["javascript"],
    },
    doc: "Passes when the JavaScript in `value` (inline, or `file://check.js[:function]`) returns true, a score at `threshold`, or a passing grading result.",
    keys: &KEYS,
    parse,
};

const KEYS: KeyTable = KeyTable::new("javascript", "A JavaScript assertion.", &[script_assertion::KEYS]);

/// The worker node runs: announces the protocol, then answers one request per line.
const WORKER: &str = concat!(include_str!("../worker_loop.js"), include_str!("javascript_worker.js"));

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let script = script_assertion::read(f, cx)?;
    let code = match &script.file {
        Some((path, function)) => Code::File {
            path: path.clone(),
            function: function.clone(),
        },
        None => Code::inline(script.value.trim_end().to_owned()),
    };
    Some(Arc::new(Javascript {
        code,
        value: script.value,
        threshold: script.threshold,
        config: script.config,
        inverse: script.inverse,
        pool: JudgePool::multiplexed(&worker_argv(), cx.eval_dir, Recycle::default()),
    }))
}

fn worker_argv() -> Vec<String> {
    vec!["node".to_owned(), "-e".to_owned(), WORKER.to_owned()]
}

/// Where the code is.
#[derive(Debug, Clone, PartialEq)]
pub enum Code {
    /// Inline code: as written (end trimmed), the function body promptfoo makes of it, and
    /// whether the embedded engine may run it ([`js_engine::needs_node`]); decided once, when
    /// the assertion is read, not for every test graded.
    Inline { code: String, body: String, embedded: bool },
    /// A module and the export to call (its default export, or the module itself, when none).
    File { path: PathBuf, function: Option<String> },
}

impl Code {
    /// Inline `code`, with its function body and where it runs.
    pub fn inline(code: String) -> Self {
        let body = if code.contains('\n') { code.clone() } else { function_body(&code) };
        let embedded = !js_engine::needs_node(&body);
        Self::Inline { code, body, embedded }
    }
}

/// A `javascript` assertion as configured.
#[derive(Debug)]
pub struct Javascript {
    pub code: Code,
    /// `value` as written: promptfoo adds it to a failing reason.
    pub value: String,
    pub threshold: Option<f64>,
    pub config: Value,
    pub inverse: bool,
    pool: Arc<JudgePool>,
}

impl Grader for Javascript {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let output = candidate(ctx);
            let context = script_assertion::context(ctx, &output, &self.config);
            let code = match &self.code {
                Code::Inline { body, embedded, .. } => {
                    if *embedded {
                        let input = json!({"output": output, "context": context}).to_string();
                        if let Some(answer) = js_engine::evaluate(body, &input) {
                            return self.result(&answer).grade();
                        }
                    }
                    json!({"body": body})
                }
                Code::File { path, function } => json!({"file": path, "function": function}),
            };
            let payload = json!({"code": code, "output": output, "context": context});
            match script_assertion::send(&self.pool, ctx, payload).await {
                Ok(answer) => self.result(&answer).grade(),
                Err(e) => promptfoo_check::thrown(format!("javascript assertion: {e}")),
            }
        })
    }
}

impl Javascript {
    /// promptfoo's result from what the worker reported: `{threw, stack}`, or
    /// `{kind: boolean|number|result, value}`.
    pub fn result(&self, answer: &Value) -> PfResult {
        let suffix = |reason: String| match &self.code {
            Code::Inline { code, .. } if !code.is_empty() => format!("{reason}\n{code}"),
            Code::File { .. } => format!("{reason}\n{}", self.value),
            Code::Inline { .. } => reason,
        };
        if let Some(message) = answer.get("threw").and_then(Value::as_str) {
            let stack = answer.get("stack").and_then(Value::as_str).unwrap_or_default();
            return PfResult {
                pass: false,
                score: 0.0,
                reason: suffix(format!("Custom function threw error: {message}\nStack Trace: {stack}")),
            };
        }
        let value = &answer["value"];
        let returned = |raw: bool| suffix(format!("Custom function returned {raw}"));
        match answer["kind"].as_str() {
            Some("boolean") => {
                let raw = value.as_bool().unwrap_or(false);
                PfResult::check(raw != self.inverse, || returned(raw))
            }
            Some("number") => {
                let score = value.as_f64().unwrap_or(f64::NAN);
                let raw = match self.threshold {
                    Some(t) => score >= t,
                    None => score > 0.0,
                };
                let pass = raw != self.inverse;
                PfResult {
                    pass,
                    score,
                    reason: if pass { promptfoo_check::PASSED.to_owned() } else { returned(raw) },
                }
            }
            _ => {
                let raw = value["pass"].as_bool().unwrap_or(false);
                let pass = raw != self.inverse;
                let reason = if pass == raw {
                    value["reason"].as_str().unwrap_or_default().to_owned()
                } else if pass {
                    promptfoo_check::PASSED.to_owned()
                } else {
                    format!("Custom function returned {raw}")
                };
                PfResult {
                    pass,
                    score: value["score"].as_f64().unwrap_or(0.0),
                    reason,
                }
            }
        }
    }
}

/// promptfoo's function body for one line of code: `return <expression>`, or for code that
/// starts with a declaration, its statements up to the last `;` and then `return` the rest.
pub fn function_body(code: &str) -> String {
    let trimmed = super::js::trim(code).trim_end_matches(|c: char| c == ';' || super::js::is_whitespace(c));
    let declares = ["const", "let", "var"].iter().any(|k| {
        trimmed
            .strip_prefix(k)
            .and_then(|rest| rest.chars().next())
            .is_some_and(super::js::is_whitespace)
    });
    if !declares {
        return format!("return {trimmed}");
    }
    match last_statement_semicolon(trimmed) {
        Some(at) => {
            let expression = super::js::trim(&trimmed[at + 1..]);
            if expression.is_empty() {
                trimmed.to_owned()
            } else {
                format!("{} return {expression}", &trimmed[..=at])
            }
        }
        None => trimmed.to_owned(),
    }
}

/// The byte index of the last `;` outside string and template literals.
fn last_statement_semicolon(code: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut last = None;
    for (i, c) in code.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some(_), '\\') => escaped = true,
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"' | '`') => quote = Some(c),
            (None, ';') => last = Some(i),
            _ => {}
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::testkit::{Answered, FakeProvider};

    #[test]
    fn one_line_code_becomes_promptfoos_function_body() {
        for (code, want) in [
            ("output.includes('Paris')", "return output.includes('Paris')"),
            ("output.length > 3;", "return output.length > 3"),
            ("const n = output.length; n > 3", "const n = output.length; return n > 3"),
            ("let s = 'a;b'; s.length", "let s = 'a;b'; return s.length"),
            ("const x = 1;", "const x = 1"),
            ("constant > 1", "return constant > 1"),
        ] {
            assert_eq!(function_body(code), want, "{code}");
        }
    }

    fn check(code: &str, threshold: Option<f64>, inverse: bool, dir: &std::path::Path) -> Javascript {
        Javascript {
            code: Code::inline(code.to_owned()),
            value: code.to_owned(),
            threshold,
            config: json!({"limit": 5}),
            inverse,
            pool: JudgePool::multiplexed(&worker_argv(), dir, Recycle::default()),
        }
    }

    /// One runtime per test: a warm worker's pipes belong to the runtime that started it, as
    /// in a run.
    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
    }

    fn grade_in(rt: &tokio::runtime::Runtime, js: &Javascript, answer: &str) -> Grade {
        let answered = Answered::new("What is the capital?", "", answer, FakeProvider::llm(&["unused"]));
        rt.block_on(js.grade(&answered.context()))
    }

    fn grade(js: &Javascript, answer: &str) -> Grade {
        grade_in(&runtime(), js, answer)
    }

    /// Expectations checked against promptfoo 0.121.20.
    #[test]
    fn javascript_assertions_follow_promptfoos_return_conventions() {
        if !agentv_testkit::toolchains::require("node", "JavaScript assertions") {
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        for (code, threshold, inverse, pass, score, reason) in [
            ("output.includes('Paris')", None, false, true, 1.0, "Assertion passed"),
            ("output.includes('Rome')", None, false, false, 0.0, "Custom function returned false\noutput.includes('Rome')"),
            ("output.includes('Paris')", None, true, false, 0.0, "Custom function returned true\noutput.includes('Paris')"),
            ("output.length / 100", None, false, true, 0.12, "Assertion passed"),
            ("output.length / 100", Some(0.5), false, false, 0.12, "Custom function returned false\noutput.length / 100"),
            ("({pass: true, score: 0.7, reason: 'fine'})", None, false, true, 0.7, "fine"),
            ("({pass: true, score: 0.7, reason: 'fine'})", None, true, false, 0.7, "Custom function returned true"),
            ("output.length <= context.config.limit", None, false, false, 0.0, "Custom function returned false\noutput.length <= context.config.limit"),
            ("context.prompt.startsWith('What')", None, false, true, 1.0, "Assertion passed"),
            ("const n = output.split(' ').length; n === 3", None, false, true, 1.0, "Assertion passed"),
            ("if (output.length > 3) {\n  return true;\n}\nreturn false;", None, false, true, 1.0, "Assertion passed"),
            ("Promise.resolve(true)", None, false, true, 1.0, "Assertion passed"),
        ] {
            let got = grade(&check(code, threshold, inverse, dir.path()), "It is Paris.");
            assert_eq!(got.error, None, "{code}");
            assert_eq!(got.reasoning.as_deref(), Some(reason), "{code}");
            assert!((got.score - score).abs() < 1e-12, "{code}: {}", got.score);
            let verdict = if pass { super::super::GradeVerdict::Pass } else { super::super::GradeVerdict::Fail };
            assert_eq!(got.verdict, Some(verdict), "{code}");
        }
    }

    #[test]
    fn javascript_errors_and_wrong_returns_fail_with_promptfoos_reason() {
        if !agentv_testkit::toolchains::require("node", "JavaScript assertions") {
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        let got = grade(&check("nope.x", None, false, dir.path()), "x");
        let reason = got.reasoning.unwrap_or_default();
        assert!(reason.starts_with("Custom function threw error: nope is not defined\nStack Trace: ReferenceError"), "{reason}");
        assert_eq!(got.score, 0.0);
        let got = grade(&check("'text'", None, false, dir.path()), "x");
        let reason = got.reasoning.unwrap_or_default();
        assert!(
            reason.starts_with("Custom function threw error: Custom function must return a boolean, number, or GradingResult object. Got type string: \"text\""),
            "{reason}"
        );
    }

    #[test]
    fn javascript_files_are_called_with_output_and_context() {
        if !agentv_testkit::toolchains::require("node", "JavaScript assertions") {
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("check.js");
        std::fs::write(
            &file,
            "module.exports = (output) => output.length > 3;\nmodule.exports.strict = (output, context) => ({pass: output === 'x', score: 0.25, reason: 'prompt ' + context.prompt});\n",
        )
        .expect("write");
        let rt = runtime();
        let mut js = check("", None, false, dir.path());
        js.code = Code::File { path: file.clone(), function: None };
        js.value = "file://check.js".to_owned();
        assert_eq!(grade_in(&rt, &js, "long answer").reasoning.as_deref(), Some("Assertion passed"));
        js.code = Code::File { path: file, function: Some("strict".to_owned()) };
        let got = grade_in(&rt, &js, "long answer");
        assert_eq!((got.score, got.reasoning.as_deref()), (0.25, Some("prompt What is the capital?")));
    }

    #[test]
    fn javascript_workers_stay_warm_across_assertions() {
        if !agentv_testkit::toolchains::require("node", "JavaScript assertions") {
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        // `process` is Node's: the code runs in node, not in the embedded engine.
        let js = check("process.pid > 0 && output.length > 0", None, false, dir.path());
        let rt = runtime();
        for _ in 0..20 {
            assert_eq!(grade_in(&rt, &js, "x").reasoning.as_deref(), Some("Assertion passed"));
        }
        assert_eq!(js.pool.starts(), 1, "one node process serves every assertion in turn");
    }

    /// Inline code that needs nothing from Node never starts node, and needs no node installed.
    #[test]
    fn inline_assertions_run_in_process_without_node() {
        let dir = tempfile::tempdir().expect("dir");
        let js = check("output.includes('Paris') && context.prompt.length > 3", None, false, dir.path());
        let rt = runtime();
        for _ in 0..20 {
            assert_eq!(grade_in(&rt, &js, "It is Paris.").reasoning.as_deref(), Some("Assertion passed"));
        }
        let got = grade_in(&rt, &js, "It is Rome.");
        assert_eq!(got.verdict, Some(super::super::GradeVerdict::Fail));
        assert_eq!(js.pool.starts(), 0, "no node process");
    }

    /// The embedded engine and node give the same verdict, score and reason for the same code
    /// (`void process;` sends a copy of each to node).
    #[test]
    fn the_embedded_engine_and_node_agree() {
        if !agentv_testkit::toolchains::require("node", "JavaScript assertions") {
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        let rt = runtime();
        for code in [
            "output.includes('Paris')",
            "output.length / 100",
            "output.split(' ').map((w) => w.length).reduce((a, b) => a + b, 0) / 10",
            "({pass: output.length > 50, score: 0.25, reason: `length ${output.length}`})",
            "JSON.stringify({a: [1, 2.5, 1e21, -0, 1 / 3]}) === '{\"a\":[1,2.5,1e+21,0,0.3333333333333333]}'",
            "(0.1 + 0.2).toFixed(20).length + Math.max(...[3, 9, 2])",
            "/^It is (\\p{Lu}\\p{Ll}+)\\.$/u.exec(output)[1] === 'Paris'",
            "output.toUpperCase().normalize('NFD').replaceAll('I', 'i').at(-2) === 'S'",
            "[3, 1, 2].map((x) => x * 2).join() === '6,2,4' && Number.parseFloat('3.14abc') === 3.14",
            "const words = output.split(/\\s+/); words.length >= 3",
            "async function f() {\n  return output.endsWith('.');\n}\nreturn f();",
        ] {
            let in_process = check(code, None, false, dir.path());
            let embedded = grade_in(&rt, &in_process, "It is Paris.");
            assert_eq!(in_process.pool.starts(), 0, "{code}: ran in the embedded engine");
            let body = if code.contains('\n') { code.to_owned() } else { function_body(code) };
            let forced = format!("void process;\n{body}");
            let js = check(&forced, None, false, dir.path());
            let node = grade_in(&rt, &js, "It is Paris.");
            assert_eq!(js.pool.starts(), 1, "{code}: ran in node");
            assert_eq!(embedded.error, None, "{code}");
            assert_eq!((embedded.verdict, embedded.score), (node.verdict, node.score), "{code}");
            if embedded.verdict == Some(super::super::GradeVerdict::Pass) {
                assert_eq!(embedded.reasoning, node.reasoning, "{code}");
            }
        }
    }

    /// A reason holding half of a surrogate pair (a JavaScript string may) reads with U+FFFD
    /// in its place, in the embedded engine and in node alike; it never breaks the worker.
    #[test]
    fn a_lone_surrogate_in_a_reason_is_read_not_a_broken_worker() {
        if !agentv_testkit::toolchains::require("node", "JavaScript assertions") {
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        let rt = runtime();
        for code in ["({pass: true, score: 1, reason: 'half \\ud800'})", "void process;\nreturn {pass: true, score: 1, reason: 'half \\ud800'};"] {
            let got = grade_in(&rt, &check(code, None, false, dir.path()), "x");
            assert_eq!(got.error, None, "{code}");
            assert_eq!(got.reasoning.as_deref(), Some("half \u{fffd}"), "{code}");
        }
    }

    /// Code on which the embedded engine and node (promptfoo 0.121.20 on node 20) once
    /// answered differently: each now gets node's verdict and reason.
    #[test]
    fn where_engines_differ_the_verdict_is_nodes() {
        if !agentv_testkit::toolchains::require("node", "JavaScript assertions") {
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        let rt = runtime();
        for (code, output, pass) in [
            ("JSON.stringify(JSON.parse(output).sort((a, b) => a > b)) === '[1,2,3]'", "[3,1,2]", false),
            ("Number(output) === 10 ** -5", "0.00001", false),
            ("/answer: (\\d+)/.test(output) && RegExp.$1 === '42'", "answer: 42", true),
            ("output.split('\\n').values().filter((l) => l.trim()).toArray().length === 2", "a\nb", false),
            ("new RegExp(RegExp.escape('$5.00')).test(output)", "$5.00", false),
            ("arguments.length === 2", "x", false),
            ("/(?<y>\\d{4})-\\d\\d|\\d\\d\\/(?<y>\\d{4})/.test(output)", "2024-01", false),
        ] {
            let js = check(code, None, false, dir.path());
            let got = grade_in(&rt, &js, output);
            let want = if pass { super::super::GradeVerdict::Pass } else { super::super::GradeVerdict::Fail };
            assert_eq!(got.verdict, Some(want), "{code}: {:?}", got.reasoning);
        }
        let caught = "try { JSON.parse(output); return true } catch (e) { return {pass: false, score: 0, reason: 'Invalid JSON: ' + e.message} }";
        let got = grade_in(&rt, &check(&format!("{caught}\n"), None, false, dir.path()), "not json");
        assert_eq!(got.reasoning.as_deref(), Some("Invalid JSON: Unexpected token 'o', \"not json\" is not valid JSON"));
    }

    /// Assertions graded at the same time run at the same time, on a few warm workers: each
    /// one waits (a file as the barrier, shared by every process) until all of them have
    /// started, so a pool that runs them one after another, or one per worker process in turn,
    /// never lets any pass; and the pool starts at most one process per CPU, never one per
    /// assertion.
    #[test]
    fn concurrent_javascript_assertions_share_a_few_workers_and_run_at_once() {
        if !agentv_testkit::toolchains::require("node", "JavaScript assertions") {
            return;
        }
        const AT_ONCE: usize = 24;
        let dir = tempfile::tempdir().expect("dir");
        let barrier = dir.path().join("arrived");
        let code = "const fs = require('fs');\n\
            fs.appendFileSync(context.config.barrier, 'x');\n\
            const deadline = Date.now() + 60000;\n\
            return new Promise((resolve) => {\n\
              const tick = () => {\n\
                const all = fs.statSync(context.config.barrier).size >= context.config.n;\n\
                if (all || Date.now() > deadline) resolve(all); else setTimeout(tick, 5);\n\
              };\n\
              tick();\n\
            });";
        let mut js = check(code, None, false, dir.path());
        js.config = json!({"barrier": barrier, "n": AT_ONCE});
        let rt = runtime();
        let answered: Vec<_> = (0..AT_ONCE)
            .map(|i| Answered::new("What is the capital?", "", &format!("Paris {i}"), FakeProvider::llm(&["unused"])))
            .collect();
        let contexts: Vec<_> = answered.iter().map(Answered::context).collect();
        let grades = rt.block_on(futures::future::join_all(contexts.iter().map(|cx| js.grade(cx))));
        for grade in &grades {
            assert_eq!(grade.error, None);
            assert_eq!(grade.reasoning.as_deref(), Some("Assertion passed"), "every assertion saw all the others start");
        }
        let most = js.pool.max_processes().expect("a multiplexed pool");
        assert!(most < AT_ONCE, "at most one process per CPU: {most}");
        assert!((1..=most as u64).contains(&js.pool.starts()), "{} processes for {AT_ONCE} assertions", js.pool.starts());
        assert_eq!(std::fs::read(&barrier).expect("barrier").len(), AT_ONCE, "each assertion ran once");
    }
}
