//! `command` (agentv's): runs a command in the case's workspace after the target, such as the
//! project's tests, and scores by its exit code: 1 when it is the expected one (0 unless
//! `expected_exit_code` says otherwise), else 0. The exit code, the time it took and the end of
//! its output are the evidence (`docs/workspaces.md#the-command-grader`). A command that does
//! not finish in time fails (score 0); one that cannot start, or a case without a workspace,
//! is a grader error.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::code_judge::JUDGE_TIMEOUT_RANGE;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, IntRange, Key, KeyTable, Kind, Node, NodeValue, describe};
use crate::model::Assertion;
use crate::process::{self, ProcessError, ProcessSpec};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "command",
    names: Names {
        v2: &["command"],
        v4: &["command"],
        promptfoo: &[],
    },
    doc: "Runs a command in the case's workspace after the target (e.g. the project's tests); passes when it exits with the expected code.",
    keys: &KEYS,
    parse,
};

/// Characters of output kept as evidence.
const OUTPUT_TAIL: usize = 2000;

const OWN: &[Key] = &[
    Key::new(
        "command",
        Kind::OneOf(&[Kind::Str, Kind::List(&Kind::Text)]),
        "An argv list (`[npm, test]`), or a string run by `sh -c`.",
    )
    .required(),
    Key::new(
        "cwd",
        Kind::Text,
        "Where it runs, relative to the workspace (default: the workspace itself).",
    ),
    Key::new(
        "timeout_seconds",
        Kind::Duration(JUDGE_TIMEOUT_RANGE),
        "How long it may run (default: the run's `--timeout`); past it the check fails.",
    ),
    Key::new(
        "expected_exit_code",
        Kind::Int(IntRange { min: 0, max: 255 }),
        "The exit code that passes (default 0).",
    ),
];
const KEYS: KeyTable = KeyTable::new("command", "A command run in the workspace, scored by its exit code.", &[OWN]);

/// A `command` check as configured.
#[derive(Debug, Clone)]
pub struct CommandCheck {
    pub argv: Vec<String>,
    /// Relative to the workspace.
    pub cwd: Option<String>,
    pub timeout: Option<Duration>,
    pub expected: i32,
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let what = f.what().to_owned();
    let Some(node) = f.take("command") else {
        cx.diags.error(
            f.pos,
            format!("{what} is missing the required key `command`"),
            Some("add `command: [npm, test]` (an argv list) or a shell command string".to_owned()),
        );
        return None;
    };
    let argv = argv(node, cx)?;
    let cwd_pos = f.take("cwd").map(|n| n.pos);
    let cwd = f.string("cwd", cx.diags);
    if let (Some(dir), Some(pos)) = (&cwd, cwd_pos)
        && (std::path::Path::new(dir).is_absolute() || crate::paths::normalize(std::path::Path::new(dir)).starts_with(".."))
    {
        cx.diags.error(
            pos,
            format!("the `cwd` of {what} must stay inside the workspace, found `{dir}`"),
            Some("write a path relative to the workspace, such as `cwd: backend`".to_owned()),
        );
        return None;
    }
    let timeout = f.duration("timeout_seconds", cx.diags);
    let expected = f.integer("expected_exit_code", cx.diags).map_or(0, |n| n as i32);
    f.warn_unknown(cx.diags);
    Some(Arc::new(CommandCheck {
        argv,
        cwd,
        timeout,
        expected,
    }))
}

fn argv(node: &Node, cx: &mut ParseContext<'_>) -> Option<Vec<String>> {
    let argv: Vec<String> = match &node.value {
        NodeValue::Str(s) => vec!["sh".into(), "-c".into(), s.clone()],
        NodeValue::Seq(items) => items.iter().filter_map(Node::scalar_text).collect(),
        _ => Vec::new(),
    };
    if argv.first().is_none_or(|p| p.trim().is_empty()) || argv.len() == 3 && argv[0] == "sh" && argv[2].trim().is_empty() {
        cx.diags.error(
            node.pos,
            format!("`command` must be a non-empty argv list or command string, found {}", describe(node)),
            Some("for example `command: [npm, test]`".to_owned()),
        );
        return None;
    }
    Some(argv)
}

impl Grader for CommandCheck {
    fn default_name(&self) -> Option<String> {
        Some(format!("command-{}", shown(&self.argv).chars().take(30).collect::<String>()))
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(run(self, ctx))
    }
}

/// The command as a user wrote it: a `sh -c` script as its script, an argv joined by spaces.
fn shown(argv: &[String]) -> String {
    match argv {
        [sh, c, script] if sh == "sh" && c == "-c" => script.clone(),
        argv => argv.join(" "),
    }
}

async fn run(check: &CommandCheck, ctx: &GradeContext<'_>) -> Grade {
    let Some(workspace) = ctx.workspace else {
        return Grade::crashed(
            "the command grader runs in the case's workspace, and this case has none: declare `workspace:` in the suite or the case",
        );
    };
    if let Some(e) = &workspace.container_error {
        return Grade::crashed(format!("the case's container did not start: {e}"));
    }
    let cwd = match &check.cwd {
        Some(rel) => workspace.path.join(rel),
        None => workspace.path.clone(),
    };
    let mut env = ctx.run.child_env.to_vec();
    env.push(("AGENTV_WORKSPACE_PATH".to_owned(), workspace.path.display().to_string()));
    let timeout = check.timeout.unwrap_or(ctx.run.timeout);
    let argv = workspace
        .container_argv(&check.argv, &cwd)
        .unwrap_or_else(|| check.argv.clone());
    let started = Instant::now();
    let result = process::run(ProcessSpec {
        argv: &argv,
        cwd: &cwd,
        env: &env,
        env_remove: &[],
        stdin: None,
        timeout,
        tee: None,
        keep_children: false,
    })
    .await;
    let duration_ms = started.elapsed().as_millis() as u64;
    let shown = ctx.run.secrets.redact(&shown(&check.argv)).into_owned();
    let mut details = Map::new();
    details.insert("command".into(), Value::from(shown.clone()));
    details.insert("cwd".into(), Value::from(cwd.display().to_string()));
    details.insert("duration_ms".into(), json!(duration_ms));
    let mut grade = match result {
        Err(ProcessError::TimedOut(d)) => {
            details.insert("timed_out".into(), Value::Bool(true));
            let text = format!("`{shown}` did not finish within {}s", d.as_secs_f64());
            Grade::check(false, text)
        }
        Err(e) => return Grade::crashed(format!("the command grader could not run `{shown}`: {}", ctx.run.secrets.redact(&e.to_string()))),
        Ok(done) => {
            let code = done.status.code();
            details.insert("exit_code".into(), code.map_or(Value::Null, Value::from));
            let stdout = process::tail(&String::from_utf8_lossy(&done.stdout), OUTPUT_TAIL, &ctx.run.secrets);
            let stderr = process::tail(&String::from_utf8_lossy(&done.stderr), OUTPUT_TAIL, &ctx.run.secrets);
            let passed = code == Some(check.expected);
            let text = format!(
                "`{shown}` exited with code {} (expected {})",
                done.code_text(),
                check.expected
            );
            let evidence = [stdout.as_str(), stderr.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join("\n");
            details.insert("stdout".into(), Value::from(stdout.clone()));
            details.insert("stderr".into(), Value::from(stderr.clone()));
            let mut assertion = Assertion::new(text, passed);
            if !evidence.is_empty() {
                assertion = assertion.with_evidence(process::tail(&evidence, OUTPUT_TAIL, &ctx.run.secrets));
            }
            let mut grade = Grade::assessed(f64::from(u8::from(passed)), vec![assertion]);
            grade.verdict = Some(if passed {
                super::GradeVerdict::Pass
            } else {
                super::GradeVerdict::Fail
            });
            grade
        }
    };
    grade.details = Some(details);
    grade
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::testkit::{Answered, FakeProvider};
    use crate::model::workspace::WorkspaceView;

    fn check(argv: &[&str]) -> CommandCheck {
        CommandCheck {
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            cwd: None,
            timeout: Some(Duration::from_secs(10)),
            expected: 0,
        }
    }

    #[tokio::test]
    async fn scores_by_the_exit_code_in_the_workspace() {
        let ws = tempfile::tempdir().expect("ws");
        std::fs::write(ws.path().join("ok.txt"), "fine").expect("file");
        let view = WorkspaceView {
            path: ws.path().to_path_buf(),
            file_changes: None,
            ..Default::default()
        };
        let answered = Answered::new("q", "c", "answer", FakeProvider::llm(&[]));
        let mut ctx = answered.context();
        ctx.workspace = Some(&view);
        let passing = check(&["sh", "-c", "cat ok.txt; test \"$AGENTV_WORKSPACE_PATH\" = \"$PWD\""]).grade(&ctx).await;
        assert_eq!(passing.score, 1.0, "{passing:?}");
        assert_eq!(passing.assertions[0].evidence.as_deref(), Some("fine"));
        let failing = check(&["sh", "-c", "echo 'assert failed' >&2; exit 2"]).grade(&ctx).await;
        assert_eq!(failing.score, 0.0);
        assert!(failing.error.is_none(), "a failing command is a failed check, not a grader error");
        assert!(failing.assertions[0].text.contains("exited with code 2 (expected 0)"), "{failing:?}");
        assert_eq!(failing.assertions[0].evidence.as_deref(), Some("assert failed"));
        let expected_two = CommandCheck {
            expected: 2,
            ..check(&["sh", "-c", "exit 2"])
        };
        assert_eq!(expected_two.grade(&ctx).await.score, 1.0);
        let slow = CommandCheck {
            timeout: Some(Duration::from_millis(200)),
            ..check(&["sleep", "30"])
        };
        let timed_out = slow.grade(&ctx).await;
        assert_eq!(timed_out.score, 0.0);
        assert!(timed_out.assertions[0].text.contains("did not finish within 0.2s"), "{timed_out:?}");
        let missing = check(&["/nonexistent/test-runner"]).grade(&ctx).await;
        assert!(missing.error.is_some(), "cannot start: a grader error");
    }

    #[tokio::test]
    async fn without_a_workspace_it_is_a_grader_error() {
        let answered = Answered::new("q", "c", "answer", FakeProvider::llm(&[]));
        let ctx = answered.context();
        let grade = check(&["true"]).grade(&ctx).await;
        assert!(grade.error.as_deref().is_some_and(|e| e.contains("has none")), "{grade:?}");
    }
}
