//! Running a lifecycle hook (`docs/workspaces.md#hooks`): argv without a shell, `{{name}}`
//! placeholders, the JSON context on stdin, the `.env` variables in its environment, a timeout
//! that kills its whole process group, and its output captured, capped and redacted.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::workspace::{Hook, HookPoint};
use crate::process::{self, ProcessError, ProcessSpec};
use crate::redact::Secrets;

/// Most characters of a hook's stdout and stderr kept in the record.
pub const OUTPUT_TAIL: usize = 2000;

/// What a hook is told on stdin, keys in this order (AgentV 4.x's).
#[derive(Debug, Clone, Serialize)]
pub struct HookContext {
    pub workspace_path: String,
    /// The case's id, or `__before_all__`, `__after_all__`, `__target_before_all__`, ...
    pub test_id: String,
    pub eval_run_id: String,
    /// The case's question; `null` for suite hooks.
    pub case_input: Option<String>,
    /// The case's metadata; `null` when it has none.
    pub case_metadata: Option<Map<String, Value>>,
}

/// Where and how a hook runs.
pub struct HookCall<'a> {
    pub hook: &'a Hook,
    pub point: HookPoint,
    /// `before_each`, or `target before_each` for a target's hook: names it in messages.
    pub label: String,
    pub context: &'a HookContext,
    /// Where it runs when it sets no `cwd`.
    pub default_cwd: &'a Path,
    pub env: &'a [(String, String)],
    pub secrets: &'a Secrets,
}

/// How a hook ended, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookOutcome {
    pub hook: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub ok: bool,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub stdout: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// Why it failed: the exit code and stderr, a timeout, or why it could not start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Runs `call`'s command; `None` when the hook has no command (a reset only).
pub async fn run(call: &HookCall<'_>) -> Option<HookOutcome> {
    let command = call.hook.command.as_ref()?;
    let argv: Vec<String> = command.iter().map(|item| substitute(item, call.context)).collect();
    let cwd = call.hook.cwd.as_deref().unwrap_or(call.default_cwd);
    let timeout = Duration::from_millis(call.hook.timeout_ms.unwrap_or(match call.point.is_fatal() {
        true => 60_000,
        false => 30_000,
    }));
    let stdin = serde_json::to_vec(call.context).unwrap_or_default();
    let mut env = call.env.to_vec();
    env.push(("AGENTV_WORKSPACE_PATH".to_owned(), call.context.workspace_path.clone()));
    let started = Instant::now();
    let result = process::run(ProcessSpec {
        argv: &argv,
        cwd,
        env: &env,
        env_remove: &[],
        stdin: Some(&stdin),
        timeout,
        tee: None,
        keep_children: false,
    })
    .await;
    let duration_ms = started.elapsed().as_millis() as u64;
    let mut outcome = HookOutcome {
        hook: call.label.clone(),
        exit_code: None,
        ok: false,
        duration_ms,
        stdout: String::new(),
        stderr: String::new(),
        error: None,
    };
    match result {
        Ok(done) => {
            outcome.exit_code = done.status.code();
            outcome.ok = done.status.success();
            let stdout = String::from_utf8_lossy(&done.stdout).replace("\r\n", "\n");
            outcome.stdout = process::tail(&stdout, OUTPUT_TAIL, call.secrets);
            outcome.stderr = process::tail(&String::from_utf8_lossy(&done.stderr), OUTPUT_TAIL, call.secrets);
            if !outcome.ok {
                let said = if outcome.stderr.is_empty() {
                    String::new()
                } else {
                    format!(": {}", outcome.stderr)
                };
                outcome.error = Some(format!(
                    "{} hook failed with exit code {}{said}",
                    call.label,
                    done.code_text()
                ));
            }
        }
        Err(ProcessError::TimedOut(d)) => {
            outcome.error = Some(format!("{} hook timed out after {} ms", call.label, d.as_millis()));
        }
        Err(e) => {
            outcome.error = Some(format!(
                "{} hook could not run: {}",
                call.label,
                call.secrets.redact(&e.to_string())
            ));
        }
    }
    Some(outcome)
}

/// `{{workspace_path}}`, `{{test_id}}`, `{{eval_run_id}}`, `{{case_input}}` and
/// `{{case_metadata}}` in one argv item; other names stay as written.
fn substitute(item: &str, cx: &HookContext) -> String {
    if !item.contains("{{") {
        return item.to_owned();
    }
    let mut out = String::with_capacity(item.len());
    let mut rest = item;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..name_len];
        if name_len > 0 && after[name_len..].starts_with("}}") {
            let value = match name {
                "workspace_path" => Some(cx.workspace_path.clone()),
                "test_id" => Some(cx.test_id.clone()),
                "eval_run_id" => Some(cx.eval_run_id.clone()),
                "case_input" => Some(cx.case_input.clone().unwrap_or_default()),
                "case_metadata" => Some(
                    cx.case_metadata
                        .as_ref()
                        .map(|m| Value::Object(m.clone()).to_string())
                        .unwrap_or_default(),
                ),
                _ => None,
            };
            match value {
                Some(v) => out.push_str(&v),
                None => out.push_str(&rest[start..start + 2 + name_len + 2]),
            }
            rest = &after[name_len + 2..];
        } else {
            out.push_str("{{");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
#[allow(
    clippy::too_many_lines,
    reason = "a table-driven test keeps its rows and checks in one place"
)]
mod tests {
    use super::*;

    fn context() -> HookContext {
        HookContext {
            workspace_path: "/ws".into(),
            test_id: "case-1".into(),
            eval_run_id: "run".into(),
            case_input: Some("fix it".into()),
            case_metadata: None,
        }
    }

    fn call<'a>(
        hook: &'a Hook,
        point: HookPoint,
        cx: &'a HookContext,
        dir: &'a Path,
        secrets: &'a Secrets,
    ) -> HookCall<'a> {
        HookCall {
            hook,
            point,
            label: point.name().to_owned(),
            context: cx,
            default_cwd: dir,
            env: &[],
            secrets,
        }
    }

    fn sh(script: &str) -> Hook {
        Hook {
            command: Some(vec!["sh".into(), "-c".into(), script.into()]),
            ..Hook::default()
        }
    }

    #[test]
    fn placeholders_are_substituted_and_unknown_names_kept() {
        let cx = context();
        for (item, want) in [
            ("{{workspace_path}}/x", "/ws/x"),
            ("id={{test_id}} run={{eval_run_id}}", "id=case-1 run=run"),
            ("{{case_input}}", "fix it"),
            ("{{case_metadata}}", ""),
            ("{{ workspace_path }}", "{{ workspace_path }}"),
            ("{{nope}}", "{{nope}}"),
            ("{{", "{{"),
            ("plain", "plain"),
        ] {
            assert_eq!(substitute(item, &cx), want, "{item}");
        }
    }

    #[tokio::test]
    async fn every_hook_outcome_is_told_apart() {
        let dir = tempfile::tempdir().expect("tmp");
        let cx = context();
        let secrets = Secrets::default();
        secrets.add("s3cr3t-value-123");
        // (hook, ok, exit code, error contains, stdout)
        type Row = (Hook, bool, Option<i32>, Option<&'static str>, &'static str);
        let cases: Vec<Row> = vec![
            (
                sh("cat"),
                true,
                Some(0),
                None,
                r#"{"workspace_path":"/ws","test_id":"case-1","eval_run_id":"run","case_input":"fix it","case_metadata":null}"#,
            ),
            (
                sh("echo boom >&2; exit 3"),
                false,
                Some(3),
                Some("before_each hook failed with exit code 3: boom"),
                "",
            ),
            (
                sh("exit 4"),
                false,
                Some(4),
                Some("before_each hook failed with exit code 4"),
                "",
            ),
            (sh("echo s3cr3t-value-123 >&2; exit 1"), false, Some(1), Some("***"), ""),
            (sh("kill -9 $$"), false, None, Some("killed by a signal"), ""),
            (
                Hook {
                    timeout_ms: Some(200),
                    ..sh("sleep 30")
                },
                false,
                None,
                Some("before_each hook timed out after 200 ms"),
                "",
            ),
            (
                Hook {
                    command: Some(vec!["/nonexistent/hook".into()]),
                    ..Hook::default()
                },
                false,
                None,
                Some("before_each hook could not run: cannot start `/nonexistent/hook`"),
                "",
            ),
            (sh("printf 'a\\r\\nb'"), true, Some(0), None, "a\nb"),
            (sh("pwd"), true, Some(0), None, ""),
        ];
        for (hook, ok, code, error, stdout) in cases {
            let outcome = run(&call(&hook, HookPoint::BeforeEach, &cx, dir.path(), &secrets))
                .await
                .expect("has a command");
            assert_eq!(outcome.ok, ok, "{hook:?}: {outcome:?}");
            assert_eq!(outcome.exit_code, code, "{hook:?}: {outcome:?}");
            match error {
                Some(e) => assert!(
                    outcome.error.as_deref().is_some_and(|m| m.contains(e)),
                    "{hook:?}: {outcome:?}"
                ),
                None => assert_eq!(outcome.error, None, "{hook:?}"),
            }
            assert!(
                !format!("{outcome:?}").contains("s3cr3t-value-123"),
                "redacted: {outcome:?}"
            );
            if !stdout.is_empty() {
                assert_eq!(outcome.stdout, stdout);
            }
        }
        let pwd = run(&call(&sh("pwd"), HookPoint::AfterEach, &cx, dir.path(), &secrets))
            .await
            .expect("runs");
        assert_eq!(
            std::fs::canonicalize(pwd.stdout.trim()).ok(),
            std::fs::canonicalize(dir.path()).ok(),
            "a hook runs in its default directory, not the workspace"
        );
        let reset_only = Hook {
            reset: Some(crate::model::workspace::Reset::Fast),
            ..Hook::default()
        };
        assert!(
            run(&call(&reset_only, HookPoint::AfterEach, &cx, dir.path(), &secrets))
                .await
                .is_none()
        );
    }
}
