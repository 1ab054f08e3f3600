//! `code-grader`: the 4.x code grader (reference §2.12, output rules §6.2). It runs a program
//! the way `code_judge` does (the same payload with both key sets, process group, timeout,
//! target proxy), and reads its stdout by 4.x's rules: a JSON object's `score` is clamped
//! to [0, 1], else its assertions' pass rate; anything else follows the exit code.
//!
//! The generations differ on purpose (`docs/architecture.md#generations`): a 2.x `code_judge`
//! printing a score outside [0, 1] is a grader error, a 4.x `code-grader` is clamped.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentv_eval_sdk::Assertion;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::code_judge::{self, Execution, Program, ProxyBudget};
use super::judge_pool::JudgePool;
use super::{Grade, GradeContext, GradeVerdict, Grader, GraderEntry, Names, ParseContext};
use crate::config::keys::to_snake_case;
use crate::config::{Fields, Key, KeyTable, Kind, Node, NodeValue, describe};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "code-grader",
    names: Names {
        v2: &[],
        v4: &["code-grader"],
        promptfoo: &[],
    },
    doc: "Runs a program that reads the case on stdin (AgentV 4.x): a JSON `{score?, assertions?, details?}` on stdout, else the exit code, grades; other keys reach it as `config`.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new(
        "command",
        Kind::OneOf(&[Kind::Str, Kind::List(&Kind::Text)]),
        "An argv list (`[python3, grader.py]`), or a command string run by `sh -lc`.",
    )
    .aliases(&["script"]),
    Key::new(
        "cwd",
        Kind::Text,
        "Working directory, found through the search roots (default: the eval file's directory).",
    ),
    Key::new(
        "timeout_seconds",
        Kind::Duration(code_judge::JUDGE_TIMEOUT_RANGE),
        "How long the grader may run (default: the run's `--timeout`).",
    )
    .aliases(&["timeoutSeconds"]),
    code_judge::TARGET_KEY,
    code_judge::PERSISTENT_KEY,
    Key::new(
        "config",
        Kind::Map(&Kind::Any),
        "Passed to the grader as `config`, over the keys this table does not declare.",
    ),
    Key::new(
        "preprocessors",
        Kind::List(&Kind::Any),
        "Accepted (AgentV 4.x uses it for LLM graders only).",
    ),
];
const KEYS: KeyTable = KeyTable::new(
    "code-grader",
    "An AgentV 4.x code grader; keys not listed here are passed to it in `config`.",
    &[OWN],
)
.open();

/// A 4.x code grader as configured.
#[derive(Debug, Clone)]
pub struct CodeGrader {
    /// argv; a command string becomes `sh -lc <string>`.
    pub command: Vec<String>,
    pub cwd: PathBuf,
    pub timeout: Option<std::time::Duration>,
    pub proxy: Option<ProxyBudget>,
    /// Set with `persistent: true`: the pool of long-lived processes of this grader.
    pub persistent: Option<Arc<JudgePool>>,
    /// `config` over the other keys, with keys in snake_case as 4.x sends them.
    pub config: Map<String, Value>,
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let pos = f.pos;
    if f.written("command") == "script" {
        cx.diags.warn(
            f.take("command").map_or(pos, |n| n.pos),
            "`script` is deprecated in code-grader",
            Some("write `command:`".to_owned()),
        );
    }
    let command = match f.take("command") {
        None => {
            cx.drop_grader(
                pos,
                "code-grader is missing `command`",
                Some("add `command: [python3, grader.py]` (an argv list) or a shell command string".to_owned()),
            );
            return None;
        }
        Some(node) => parse_command(node, cx)?,
    };
    let mark = cx.mark();
    let timeout = f.duration("timeout_seconds", cx.diags);
    let proxy = match f.take("target") {
        None => None,
        Some(node) => code_judge::parse_proxy(node, cx).flatten(),
    };
    let explicit = match f.take("config").map(|n| (n, n.to_json())) {
        None => Map::new(),
        Some((_, Value::Object(map))) => map,
        Some((n, _)) => {
            cx.diags
                .error(n.pos, format!("`config` must be a mapping, found {}", describe(n)), None);
            Map::new()
        }
    };
    let persistent = code_judge::parse_persistent(f, cx);
    let _ = f.take("preprocessors");
    if cx.drop_grader_if_errors(mark) {
        return None;
    }
    let cwd = match f.take("cwd") {
        None => cx.eval_dir.to_path_buf(),
        Some(node) => resolve_cwd(node, cx),
    };
    let mut config = f.rest_as_config("the grader", "code-grader", cx.diags);
    config.extend(explicit);
    let persistent = persistent.map(|recycle| JudgePool::shared(&command, &cwd, recycle));
    Some(Arc::new(CodeGrader {
        command,
        cwd,
        timeout,
        proxy,
        persistent,
        config: snake_case_keys(config),
    }))
}

/// `command`: an argv list, or a string run by `sh -lc`. An empty one makes the case
/// invalid, as in 4.x.
fn parse_command(node: &Node, cx: &mut ParseContext<'_>) -> Option<Vec<String>> {
    let empty = |cx: &mut ParseContext<'_>| {
        cx.diags.error(
            node.pos,
            "code-grader has an empty `command`",
            Some("for example `command: [python3, grader.py]`".to_owned()),
        );
        None
    };
    match &node.value {
        NodeValue::Str(s) if s.trim().is_empty() => empty(cx),
        NodeValue::Str(s) => Some(vec!["sh".into(), "-lc".into(), s.clone()]),
        NodeValue::Seq(items) if items.is_empty() => empty(cx),
        NodeValue::Seq(items) => {
            let mut argv = Vec::with_capacity(items.len());
            for item in items {
                match item.value {
                    NodeValue::Str(_) | NodeValue::Int(_) | NodeValue::Float(_) => argv.extend(item.scalar_text()),
                    _ => {
                        cx.diags.error(
                            item.pos,
                            format!("`command` arguments must be strings, found {}", item.type_name()),
                            None,
                        );
                        return None;
                    }
                }
            }
            Some(argv)
        }
        _ => {
            cx.diags.error(
                node.pos,
                format!("`command` must be an argv list or a command string, found {}", describe(node)),
                Some("for example `command: [python3, grader.py]`".to_owned()),
            );
            None
        }
    }
}

/// `cwd` found through the search roots; when no root has it, a warning and the value as
/// written, relative to the working directory (4.x does the same).
fn resolve_cwd(node: &Node, cx: &mut ParseContext<'_>) -> PathBuf {
    let written = node.scalar_text().unwrap_or_default();
    let shown = written.trim_start_matches(['/', '\\']);
    let candidates: Vec<PathBuf> = if Path::new(&written).is_absolute() {
        vec![PathBuf::from(&written)]
    } else {
        cx.ws.search_roots(cx.eval_dir).into_iter().map(|r| r.join(shown)).collect()
    };
    if let Some(found) = candidates.iter().find(|p| p.is_dir()) {
        return crate::paths::normalize(found);
    }
    let fallback = crate::paths::normalize(&cx.ws.cwd.join(&written));
    cx.diags.warn(
        node.pos,
        format!("code-grader cwd `{written}` is not a directory under any search root; using {}", fallback.display()),
        Some("give a directory relative to the eval file or the repository root".to_owned()),
    );
    fallback
}

/// Every key at every depth in snake_case (`maxLen` → `max_len`), except keys starting with
/// a capital letter, as 4.x converts the payload it sends.
pub fn snake_case_keys(map: Map<String, Value>) -> Map<String, Value> {
    map.into_iter()
        .map(|(k, v)| {
            let key = if k.starts_with(|c: char| c.is_uppercase()) {
                k
            } else {
                to_snake_case(&k)
            };
            (key, snake_case_value(v))
        })
        .collect()
}

fn snake_case_value(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(snake_case_keys(map)),
        Value::Array(items) => Value::Array(items.into_iter().map(snake_case_value).collect()),
        other => other,
    }
}

impl Grader for CodeGrader {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(run(self, ctx))
    }
}

async fn run(spec: &CodeGrader, ctx: &GradeContext<'_>) -> Grade {
    let program = Program {
        argv: &spec.command,
        cwd: &spec.cwd,
        timeout: spec.timeout,
        proxy: spec.proxy,
        persistent: spec.persistent.as_deref(),
    };
    let payload = code_judge::payload_with(spec.config.clone(), ctx);
    let Execution { outcome, request, .. } = code_judge::execute(program, payload, ctx, |p| {
        serde_json::to_vec_pretty(p).map_err(|e| e.to_string())
    })
    .await;
    let mut grade = match outcome {
        Err(e) => crash(e.message()),
        // Redacted whole before anything is cut from them for a message.
        Ok(done) => grade_output(
            Exit {
                code: done.status.code(),
                text: &done.code_text(),
            },
            &ctx.run.secrets.redact(&String::from_utf8_lossy(&done.stdout)),
            &ctx.run.secrets.redact(&String::from_utf8_lossy(&done.stderr)),
            ctx.strict(),
        ),
    };
    grade.request = Some(request);
    grade
}

/// A grader whose process crashed: score 0 and verdict fail as AgentV 4.x records it (`Code
/// evaluator failed: <why>`), and a grader error (`docs/architecture.md#grader-errors`).
fn crash(why: &str) -> Grade {
    Grade {
        crashed: true,
        ..Grade::failed_with(format!("Code evaluator failed: {why}")).with_verdict(GradeVerdict::Fail)
    }
}

/// How a grader process ended: its exit code (`None` when a signal ended it) and how messages
/// show it.
#[derive(Debug, Clone, Copy)]
pub struct Exit<'a> {
    pub code: Option<i32>,
    pub text: &'a str,
}

/// stderr as 4.x quotes it: trimmed, the last 2000 characters when longer.
pub(crate) fn stderr_text(stderr: &str) -> String {
    const MAX: usize = 2000;
    let trimmed = stderr.trim();
    let count = trimmed.chars().count();
    if count <= MAX {
        return trimmed.to_owned();
    }
    let tail: String = trimmed.chars().skip(count - MAX).collect();
    format!("...(truncated, last {MAX} chars)\n{tail}")
}

/// JavaScript's truthiness of a JSON value (`Boolean(x)`).
pub(crate) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// Reads a finished code grader by the rules of reference §6.2, except that a process that
/// crashed (killed by a signal, or a non-zero exit with output on stderr or JSON-looking stdout)
/// is a grader error, and under `strict` so is stdout that is not a result object (the
/// exit-code convention is off). A result's `hits`, `misses` and `reasoning`, which 4.x
/// ignores, are kept: hits and misses as passed and failed assertions after the score is
/// decided, `reasoning` as the grade's.
pub fn grade_output(exit: Exit<'_>, stdout: &str, stderr: &str, strict: bool) -> Grade {
    let stdout = stdout.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    let code_text = exit.text;
    let success = exit.code == Some(0);
    let looks_like_json = stdout.starts_with('{') || stdout.starts_with('[');
    if exit.code.is_none() || (!success && (looks_like_json || !stderr.trim().is_empty())) {
        let err = stderr_text(stderr);
        return crash(&if err.is_empty() {
            format!("Code evaluator exited with code {code_text}")
        } else {
            format!("Code evaluator exited with code {code_text}: {err}")
        });
    }
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(stdout) else {
        if strict {
            return crash(&format!(
                "Code evaluator exited with code {code_text} without a JSON result object on stdout (got: {:?}); --strict turns off the exit-code convention",
                crate::process::tail(stdout, 200, &crate::redact::Secrets::default())
            ));
        }
        // Not a JSON object: the exit code decides, the output is the assertion.
        let text = if stdout.is_empty() {
            format!("exit {code_text}")
        } else {
            stdout.to_owned()
        };
        let score = if success { 1.0 } else { 0.0 };
        return Grade::assessed(score, vec![Assertion::new(text, success)]).with_verdict(GradeVerdict::of_score(score));
    };
    let mut assertions = assertions_of(&obj);
    let score = match obj.get("score").and_then(Value::as_f64) {
        Some(s) => agentv_eval_sdk::clamp_score(s),
        None if !assertions.is_empty() => {
            assertions.iter().filter(|a| a.passed).count() as f64 / assertions.len() as f64
        }
        None => 0.0,
    };
    for (key, passed) in [("hits", true), ("misses", false)] {
        let items = obj.get(key).and_then(Value::as_array).into_iter().flatten();
        let texts = items.filter_map(Value::as_str).map(str::trim).filter(|t| !t.is_empty());
        assertions.extend(texts.map(|t| Assertion::new(t, passed)));
    }
    Grade {
        details: obj.get("details").and_then(Value::as_object).cloned(),
        reasoning: obj.get("reasoning").and_then(Value::as_str).map(str::to_owned),
        ..Grade::assessed(score, assertions).with_verdict(GradeVerdict::of_score(score))
    }
}

/// The `assertions` of a result object: entries with a string `text`.
fn assertions_of(obj: &Map<String, Value>) -> Vec<Assertion> {
    let Some(Value::Array(items)) = obj.get("assertions") else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|a| {
            let text = a.get("text")?.as_str()?;
            Some(Assertion {
                text: text.to_owned(),
                passed: a.get("passed").is_some_and(truthy),
                evidence: a.get("evidence").and_then(Value::as_str).map(str::to_owned),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(g: &Grade) -> Vec<(String, bool)> {
        g.assertions.iter().map(|a| (a.text.clone(), a.passed)).collect()
    }

    /// Reference §6.2, case by case (the compat suite's code-grader cases among them).
    #[test]
    fn stdout_and_exit_code_grade_by_the_4x_rules() {
        type Case<'a> = (Option<i32>, &'a str, &'a str, f64, &'a [(&'a str, bool)], bool);
        let cases: &[Case<'_>] = &[
            // JSON object with a score
            (Some(0), r#"{"score": 0.5, "assertions": [{"text": "a", "passed": true}]}"#, "", 0.5, &[("a", true)], false),
            // cg-score-clamped: 1.7 → 1
            (Some(0), r#"{"score": 1.7}"#, "", 1.0, &[], false),
            (Some(0), r#"{"score": -2}"#, "", 0.0, &[], false),
            // cg-score-from-assertions: 3 of 4
            (
                Some(0),
                r#"{"assertions": [{"text": "p", "passed": true}, {"text": "r", "passed": false}, {"text": "f", "passed": 1}, {"text": "t", "passed": "yes"}, {"passed": true}, 7]}"#,
                "",
                0.75,
                &[("p", true), ("r", false), ("f", true), ("t", true)],
                false,
            ),
            // no score, no assertions: 0; hits and misses are kept as evidence, not scored
            (Some(0), r#"{"hits": ["h"], "misses": [" m ", 3, ""], "reasoning": "r"}"#, "", 0.0, &[("h", true), ("m", false)], false),
            (Some(0), r#"{"score": 0.5, "assertions": [{"text": "a", "passed": true}], "misses": ["m"]}"#, "", 0.5, &[("a", true), ("m", false)], false),
            // a non-numeric score falls back to the assertions
            (Some(0), r#"{"score": "high", "assertions": [{"text": "a", "passed": true}]}"#, "", 1.0, &[("a", true)], false),
            // cg-exit-code-pass / -fail: plain text follows the exit code
            (Some(0), "1 of 1 checks passed\n", "", 1.0, &[("1 of 1 checks passed", true)], false),
            (Some(1), "0 of 1 checks passed", "", 0.0, &[("0 of 1 checks passed", false)], false),
            (Some(0), "", "", 1.0, &[("exit 0", true)], false),
            (Some(3), "  ", "", 0.0, &[("exit 3", false)], false),
            // a JSON scalar or array exiting 0 is plain output
            (Some(0), "42", "", 1.0, &[("42", true)], false),
            (Some(0), "[1, 2]", "", 1.0, &[("[1, 2]", true)], false),
            // cg-crash-scores-zero: non-zero with stderr is an error
            (
                Some(3),
                "",
                "check.py: crashing on purpose\n",
                0.0,
                &[("Code evaluator failed: Code evaluator exited with code 3: check.py: crashing on purpose", false)],
                true,
            ),
            // non-zero with JSON-looking stdout is an error even with a score
            (
                Some(2),
                r#"{"score": 1}"#,
                "",
                0.0,
                &[("Code evaluator failed: Code evaluator exited with code 2", false)],
                true,
            ),
            // a byte-order mark before the JSON is whitespace, as JavaScript trims it
            (Some(0), "\u{feff}{\"score\": 0.25}", "", 0.25, &[], false),
            // killed by a signal: a crash whatever it printed
            (None, "", "", 0.0, &[("Code evaluator failed: Code evaluator exited with code none", false)], true),
            (None, "partial", "", 0.0, &[("Code evaluator failed: Code evaluator exited with code none", false)], true),
        ];
        for (code, stdout, stderr, score, assertions, error) in cases {
            let code_text = code.map_or("none".to_owned(), |c| c.to_string());
            let g = grade_output(Exit { code: *code, text: &code_text }, stdout, stderr, false);
            assert_eq!(g.score, *score, "{stdout:?}");
            let want: Vec<(String, bool)> = assertions.iter().map(|(t, p)| ((*t).to_owned(), *p)).collect();
            assert_eq!(texts(&g), want, "{stdout:?}");
            assert_eq!(g.error.is_some(), *error, "{stdout:?}");
            assert_eq!(g.crashed, *error, "every error here is a crashed process: {stdout:?}");
            assert_eq!(g.verdict, Some(GradeVerdict::of_score(*score)), "{stdout:?}");
        }
    }

    fn exit(code: i32) -> Exit<'static> {
        const TEXTS: [&str; 4] = ["0", "1", "2", "3"];
        Exit {
            code: Some(code),
            text: TEXTS[code as usize],
        }
    }

    #[test]
    fn crashed_judge_is_a_grader_error_in_4x() {
        // A traceback on stderr and a non-zero exit (python3 with a missing script does the same).
        let g = grade_output(
            exit(1),
            "",
            "Traceback (most recent call last):\n  File \"check.py\", line 3\nIndexError: list index out of range\n",
            false,
        );
        assert!(g.crashed && g.error.is_some(), "{g:?}");
        assert!(g.error.as_deref().is_some_and(|e| e.ends_with("IndexError: list index out of range")), "{g:?}");
        assert_eq!((g.score, g.verdict), (0.0, Some(GradeVerdict::Fail)), "scored as AgentV 4.x records it");
        // The exit-code convention stays for plain text without --strict ...
        let lenient = grade_output(exit(0), "score=0.1", "", false);
        assert_eq!((lenient.score, lenient.crashed), (1.0, false));
        let lenient = grade_output(exit(1), "score=0.1", "", false);
        assert_eq!((lenient.score, lenient.crashed), (0.0, false));
        // ... and under --strict, stdout that is not a result object is a grader error.
        for (code, stdout) in [(0, "score=0.1"), (1, "score=0.1"), (0, ""), (0, "[1, 2]"), (0, "0.9")] {
            let strict = grade_output(exit(code), stdout, "", true);
            assert!(strict.crashed, "{code} {stdout:?}");
            let error = strict.error.expect("an error");
            assert!(error.contains("without a JSON result object on stdout"), "{error}");
            assert!(error.contains("--strict"), "{error}");
        }
        let strict_ok = grade_output(exit(0), r#"{"score": 0.1}"#, "", true);
        assert_eq!((strict_ok.score, strict_ok.crashed), (0.1, false));
    }

    #[test]
    fn code_grader_keeps_hits_misses_and_reasoning_as_evidence() {
        let g = grade_output(
            exit(0),
            r#"{"score": 0.5, "hits": ["names Paris"], "misses": ["no source"], "reasoning": "1 of 2"}"#,
            "",
            false,
        );
        assert_eq!(g.score, 0.5, "the score is the one printed");
        assert_eq!(texts(&g), [("names Paris".to_owned(), true), ("no source".to_owned(), false)]);
        assert_eq!((g.hits.as_slice(), g.misses.as_slice()), (&["names Paris".to_owned()][..], &["no source".to_owned()][..]));
        assert_eq!(g.reasoning.as_deref(), Some("1 of 2"));
    }

    #[test]
    fn evidence_and_details_are_kept_when_well_formed() {
        let g = grade_output(
            exit(0),
            r#"{"score": 1, "assertions": [{"text": "a", "passed": true, "evidence": "e"}, {"text": "b", "passed": true, "evidence": 3}], "details": {"n": 1}}"#,
            "",
            false,
        );
        assert_eq!(g.assertions[0].evidence.as_deref(), Some("e"));
        assert_eq!(g.assertions[1].evidence, None);
        assert_eq!(g.details, json!({"n": 1}).as_object().cloned());
        let not_object = grade_output(exit(0), r#"{"score": 1, "details": [1]}"#, "", false);
        assert_eq!(not_object.details, None);
    }

    #[test]
    fn long_stderr_is_cut_to_its_last_2000_characters() {
        let stderr = format!("{}END", "x".repeat(3000));
        let g = grade_output(exit(1), "", &stderr, false);
        let text = &g.assertions[0].text;
        assert!(
            text.starts_with("Code evaluator failed: Code evaluator exited with code 1: ...(truncated, last 2000 chars)\n"),
            "{text}"
        );
        let (_, tail) = text.split_once('\n').expect("the tail follows the note");
        assert_eq!(tail, format!("{}END", "x".repeat(1997)));
    }

    #[test]
    fn config_keys_are_snake_cased_at_every_depth() {
        let config = json!({"maxLen": 5, "nested": {"innerKey": [{"deepKey": 1}]}, "Read": {"keepMe": 1}, "already_snake": true});
        let Value::Object(map) = config else { unreachable!() };
        assert_eq!(
            Value::Object(snake_case_keys(map)),
            json!({"max_len": 5, "nested": {"inner_key": [{"deep_key": 1}]}, "Read": {"keep_me": 1}, "already_snake": true})
        );
    }
}
