//! promptfoo's `python` assertion (`docs/promptfoo.md#python`): inline Python (an expression,
//! or a function body) or `file://check.py[:function]` (default `get_assert`), called with
//! promptfoo's `output` and `context`, returning a boolean, a number, a grading result dict
//! (`pass`, `score`, `reason`, snake_case keys accepted) or its JSON text.
//!
//! The code runs in warm python3 workers through the persistent judges' pool
//! ([`super::judge_pool`]), multiplexed: each process takes many assertions at once and runs
//! them on a few threads, and a run starts one process per CPU at most.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::judge_pool::{JudgePool, Recycle};
use super::promptfoo_check::{self, PfResult};
use super::script_assertion;
use super::string_check::candidate;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, KeyTable};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "python",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["python"],
    },
    doc: "Passes when the Python in `value` (inline, or `file://check.py[:function]`) returns true, a score at `threshold`, or a passing grading result.",
    keys: &KEYS,
    parse,
};

const KEYS: KeyTable = KeyTable::new("python", "A Python assertion.", &[script_assertion::KEYS]);

const WORKER: &str = concat!(include_str!("python_worker.py"), include_str!("../worker_loop.py"));

fn worker_argv() -> Vec<String> {
    vec!["python3".to_owned(), "-c".to_owned(), WORKER.to_owned()]
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let script = script_assertion::read(f, cx)?;
    let code = match &script.file {
        Some((path, function)) => Code::File {
            path: path.clone(),
            function: function.clone(),
        },
        None => Code::Script(self::script(&script.value)),
    };
    Some(Arc::new(Python {
        code,
        value: script.value,
        threshold: script.threshold,
        config: script.config,
        inverse: script.inverse,
        pool: JudgePool::multiplexed(&worker_argv(), cx.eval_dir, Recycle::default()),
    }))
}

/// promptfoo's script for inline code: `def main(output, context):` around the code (each line
/// indented by the code's own first indentation, else four spaces), or `return <expression>`
/// for one line.
pub fn script(code: &str) -> String {
    let body = if code.contains('\n') {
        let indent = code
            .lines()
            .find(|l| !l.trim().is_empty() && l.starts_with(char::is_whitespace))
            .map(|l| &l[..l.len() - l.trim_start().len()])
            .unwrap_or("    ");
        code.split('\n').map(|l| format!("{indent}{l}")).collect::<Vec<_>>().join("\n")
    } else {
        format!("    return {code}")
    };
    format!("import json\n\ndef main(output, context):\n{body}\n")
}

/// Where the code is.
#[derive(Debug, Clone, PartialEq)]
pub enum Code {
    /// The script made of inline code (defines `main`).
    Script(String),
    File { path: PathBuf, function: Option<String> },
}

/// A `python` assertion as configured.
#[derive(Debug)]
pub struct Python {
    pub code: Code,
    /// `value` as written: promptfoo adds it to a failing reason.
    pub value: String,
    pub threshold: Option<f64>,
    pub config: Value,
    pub inverse: bool,
    pool: Arc<JudgePool>,
}

impl Grader for Python {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let output = candidate(ctx);
            let code = match &self.code {
                Code::Script(script) => json!({"script": script}),
                Code::File { path, function } => json!({"file": path, "function": function}),
            };
            match script_assertion::run(&self.pool, ctx, code, &output, &self.config).await {
                Ok(answer) => match answer.get("threw").and_then(Value::as_str) {
                    Some(error) => failed(&format!("Error running Python script: {error}")),
                    None => self.result(&answer["value"]).unwrap_or_else(|e| failed(&e)),
                }
                .grade(),
                Err(e) => promptfoo_check::thrown(format!("python assertion: {e}")),
            }
        })
    }
}

fn failed(error: &str) -> PfResult {
    PfResult {
        pass: false,
        score: 0.0,
        reason: format!("Python code execution failed: {error}"),
    }
}

const MUST: &str = "Python assertion must return a boolean, number, or {pass, score, reason} object.";

impl Python {
    /// promptfoo's `normalizeScriptResult` of what the function returned.
    pub fn result(&self, value: &Value) -> Result<PfResult, String> {
        let lower = value.as_str().map(str::to_lowercase);
        if value == &Value::Bool(true) || lower.as_deref() == Some("true") {
            return Ok(self.returned_bool(true));
        }
        if value.is_boolean() || lower.as_deref() == Some("false") {
            return Ok(self.returned_bool(false));
        }
        if let Some(text) = value.as_str().filter(|s| s.starts_with('{')) {
            let parsed = super::js::json_parse(text)
                .map_err(|e| format!("Invalid JSON: SyntaxError: {e} when parsing result: {text}"))?;
            if !parsed.is_object() {
                return Err(format!("{MUST} Got instead: {text}"));
            }
            return self.object(&parsed);
        }
        if value.is_object() {
            return self.object(value);
        }
        match super::js::parse_float(&super::js::string_of(value)) {
            Some(score) => Ok(self.returned_number(score)),
            None => Err(format!("{MUST} Instead got:\n{}", super::js::string_of(value))),
        }
    }

    fn suffix(&self, reason: String) -> String {
        if self.value.is_empty() { reason } else { format!("{reason}\n{}", self.value) }
    }

    fn returned_bool(&self, raw: bool) -> PfResult {
        PfResult::check(raw != self.inverse, || self.suffix(format!("Python code returned {raw}")))
    }

    fn returned_number(&self, score: f64) -> PfResult {
        let raw = self.threshold.map_or(score > 0.0, |t| score >= t);
        let pass = raw != self.inverse;
        PfResult {
            pass,
            score,
            reason: if pass { promptfoo_check::PASSED.to_owned() } else { self.suffix(format!("Python code returned {raw}")) },
        }
    }

    /// A grading result dict: `pass`, `score`, `reason` (after snake_case keys are read).
    fn object(&self, value: &Value) -> Result<PfResult, String> {
        let (Some(mut raw), Some(score), Some(reason)) =
            (value["pass"].as_bool(), value["score"].as_f64(), value["reason"].as_str())
        else {
            return Err(format!("{MUST} Got instead:\n{}", serde_json::to_string_pretty(value).unwrap_or_default()));
        };
        let mut reason = reason.to_owned();
        if let Some(t) = self.threshold.filter(|t| score < *t) {
            raw = false;
            let message = format!("Python score {} is less than threshold {}", super::js::number(score), super::js::number(t));
            reason = if reason.is_empty() { message } else { format!("{message}: {reason}") };
        }
        let pass = raw != self.inverse;
        let reason = if pass == raw {
            reason
        } else if pass {
            promptfoo_check::PASSED.to_owned()
        } else {
            format!("Python code returned {raw}")
        };
        Ok(PfResult { pass, score, reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::testkit::{Answered, FakeProvider};

    #[test]
    fn inline_python_becomes_promptfoos_main() {
        assert_eq!(
            script("'Paris' in output"),
            "import json\n\ndef main(output, context):\n    return 'Paris' in output\n"
        );
        assert_eq!(
            script("n = len(output)\nreturn n > 3"),
            "import json\n\ndef main(output, context):\n    n = len(output)\n    return n > 3\n"
        );
        assert_eq!(
            script("if output:\n  return True\nreturn False"),
            "import json\n\ndef main(output, context):\n  if output:\n    return True\n  return False\n"
        );
    }

    fn check(value: &str, threshold: Option<f64>, inverse: bool, dir: &std::path::Path) -> Python {
        Python {
            code: Code::Script(script(value)),
            value: value.to_owned(),
            threshold,
            config: json!({"limit": 5}),
            inverse,
            pool: JudgePool::multiplexed(&worker_argv(), dir, Recycle::default()),
        }
    }

    fn grade_in(rt: &tokio::runtime::Runtime, py: &Python, answer: &str) -> Grade {
        let answered = Answered::new("What is the capital?", "", answer, FakeProvider::llm(&["unused"]));
        rt.block_on(py.grade(&answered.context()))
    }

    /// Expectations checked against promptfoo 0.121.20.
    #[test]
    fn python_assertions_follow_promptfoos_return_conventions() {
        if !agentv_testkit::toolchains::require("python3", "Python assertions") {
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        for (code, threshold, inverse, pass, score, reason) in [
            ("'Paris' in output", None, false, true, 1.0, "Assertion passed"),
            ("'Rome' in output", None, false, false, 0.0, "Python code returned false\n'Rome' in output"),
            ("'Paris' in output", None, true, false, 0.0, "Python code returned true\n'Paris' in output"),
            ("len(output) / 100", None, false, true, 0.12, "Assertion passed"),
            ("len(output) / 100", Some(0.5), false, false, 0.12, "Python code returned false\nlen(output) / 100"),
            ("{'pass': True, 'score': 0.7, 'reason': 'fine'}", None, false, true, 0.7, "fine"),
            ("{'pass': True, 'score': 0.7, 'reason': 'fine'}", Some(0.9), false, false, 0.7, "Python score 0.7 is less than threshold 0.9: fine"),
            ("'true'", None, false, true, 1.0, "Assertion passed"),
            ("len(output) <= context['config']['limit']", None, false, false, 0.0, "Python code returned false\nlen(output) <= context['config']['limit']"),
            ("context['prompt'].startswith('What')", None, false, true, 1.0, "Assertion passed"),
            ("n = len(output.split())\nreturn n == 3", None, false, true, 1.0, "Assertion passed"),
            ("None", None, false, false, 0.0, "Python code execution failed: Python assertion must return a boolean, number, or {pass, score, reason} object. Instead got:\nnull"),
        ] {
            let got = grade_in(&rt, &check(code, threshold, inverse, dir.path()), "It is Paris.");
            assert_eq!(got.error, None, "{code}");
            assert_eq!(got.reasoning.as_deref(), Some(reason), "{code}");
            assert!((got.score - score).abs() < 1e-12, "{code}: {}", got.score);
            let verdict = if pass { super::super::GradeVerdict::Pass } else { super::super::GradeVerdict::Fail };
            assert_eq!(got.verdict, Some(verdict), "{code}");
        }
    }

    /// promptfoo adds a stack trace after the error; agentv gives the error alone.
    #[test]
    fn python_files_errors_and_warm_workers() {
        if !agentv_testkit::toolchains::require("python3", "Python assertions") {
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let file = dir.path().join("check.py");
        std::fs::write(
            &file,
            "def get_assert(output, context):\n    return len(output) > 3\n\ndef strict(output, context):\n    return {'pass': output == 'x', 'score': 0.25, 'reason': 'prompt ' + context['prompt']}\n",
        )
        .expect("write");
        let mut py = check("", None, false, dir.path());
        py.value = "file://check.py".to_owned();
        py.code = Code::File { path: file.clone(), function: None };
        assert_eq!(grade_in(&rt, &py, "long answer").reasoning.as_deref(), Some("Assertion passed"));
        py.code = Code::File { path: file, function: Some("strict".to_owned()) };
        let got = grade_in(&rt, &py, "long answer");
        assert_eq!((got.score, got.reasoning.as_deref()), (0.25, Some("prompt What is the capital?")));
        let got = grade_in(&rt, &check("1 / 0", None, false, dir.path()), "x");
        assert_eq!(got.reasoning.as_deref(), Some("Python code execution failed: Error running Python script: ZeroDivisionError: division by zero"));
        let warm = check("len(output) > 0", None, false, dir.path());
        for _ in 0..20 {
            assert_eq!(grade_in(&rt, &warm, "x").reasoning.as_deref(), Some("Assertion passed"));
        }
        assert_eq!(warm.pool.starts(), 1, "one python process serves every assertion in turn");
    }

    /// Python assertions graded at the same time run at the same time (threads of a few warm
    /// workers): each waits until all of them have started (a file as the barrier), which a
    /// worker answering one request after another never allows; and the pool starts at most one
    /// process per CPU.
    #[test]
    fn concurrent_python_assertions_share_a_few_workers_and_run_at_once() {
        if !agentv_testkit::toolchains::require("python3", "Python assertions") {
            return;
        }
        const AT_ONCE: usize = 12;
        let dir = tempfile::tempdir().expect("dir");
        let barrier = dir.path().join("arrived");
        let code = "import os, time\n\
            with open(context['config']['barrier'], 'a') as f:\n    f.write('x')\n\
            deadline = time.time() + 60\n\
            while os.path.getsize(context['config']['barrier']) < context['config']['n'] and time.time() < deadline:\n    time.sleep(0.005)\n\
            return os.path.getsize(context['config']['barrier']) >= context['config']['n']";
        let mut py = check(code, None, false, dir.path());
        py.config = json!({"barrier": barrier, "n": AT_ONCE});
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let answered: Vec<_> = (0..AT_ONCE)
            .map(|i| Answered::new("What is the capital?", "", &format!("Paris {i}"), FakeProvider::llm(&["unused"])))
            .collect();
        let contexts: Vec<_> = answered.iter().map(Answered::context).collect();
        let grades = rt.block_on(futures::future::join_all(contexts.iter().map(|cx| py.grade(cx))));
        for grade in &grades {
            assert_eq!(grade.error, None);
            assert_eq!(grade.reasoning.as_deref(), Some("Assertion passed"), "every assertion saw all the others start");
        }
        let most = py.pool.max_processes().expect("a multiplexed pool");
        assert!((1..=most as u64).contains(&py.pool.starts()), "{} processes for {AT_ONCE} assertions", py.pool.starts());
        assert_eq!(std::fs::read(&barrier).expect("barrier").len(), AT_ONCE, "each assertion ran once");
    }
}
