//! Running a judge function: one-shot (one payload on stdin, one result on stdout) or
//! persistent (one request line per case), as docs/judges.md specifies.

use std::any::Any;
use std::error::Error;
use std::io::BufRead;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;

use serde_json::Value;

use crate::persistent::{self, CaseProxy, PERSISTENT_ENV};
use crate::stdio::{self, ProtocolOut};
use crate::{CodeJudgePayload, JudgeResult, PayloadError, TargetClient, TargetError, read_payload};

/// What a judge function returns: a result, or an error whose message agentv records.
pub type JudgeOutcome = Result<JudgeResult, Box<dyn Error>>;

/// The name and version a persistent judge announces.
pub const SDK_NAME: &str = concat!("rust/", env!("CARGO_PKG_VERSION"));

/// Why one case could not be graded.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error(transparent)]
    Payload(#[from] PayloadError),
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The judge function returned an error; this is its message.
    #[error("{0}")]
    Judge(String),
    #[error("the judge panicked: {0}")]
    Panicked(String),
}

/// Grades one case: calls `f`, turning its error or panic into a [`JudgeError`]. No stdin,
/// stdout or environment is touched, so a judge function can be tested with it directly.
///
/// ```
/// use agentv_eval_sdk::{CodeJudgePayload, JudgeResult, judge};
///
/// let payload: CodeJudgePayload = serde_json::from_str(r#"{"candidate_answer": "Paris"}"#).unwrap();
/// let graded = judge(&payload, None, |p, _| Ok(JudgeResult::new(if p.candidate_answer == "Paris" { 1.0 } else { 0.0 })?));
/// assert_eq!(graded.unwrap().score(), 1.0);
/// ```
pub fn judge<F>(payload: &CodeJudgePayload, target: Option<&TargetClient>, f: F) -> Result<JudgeResult, JudgeError>
where
    F: FnOnce(&CodeJudgePayload, Option<&TargetClient>) -> JudgeOutcome,
{
    match catch_unwind(AssertUnwindSafe(|| f(payload, target))) {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(error)) => Err(JudgeError::Judge(error.to_string())),
        Err(panic) => Err(JudgeError::Panicked(panic_text(panic.as_ref()))),
    }
}

/// Runs a judge and returns the process's exit code: `fn main() -> ExitCode { run_judge(…) }`.
///
/// `f(payload, target)` grades one case; `target` is the client for the current case's proxy,
/// or `None` when the evaluator has no `target`.
///
/// - **One-shot** (the default): reads the payload from stdin, prints the result as one JSON
///   line and returns 0. When the payload is unreadable, the proxy variables are incomplete,
///   or `f` fails or panics, prints a score-0 result whose miss and reasoning carry the message
///   and returns 1, so agentv records a grader error rather than a grade.
/// - **Persistent** (`AGENTV_JUDGE_PERSISTENT=1`): prints the ready line, then answers one JSON
///   line per request line until stdin closes, then returns 0. Each case's proxy reaches `f` as
///   `target`, a client for that case only; the process environment is never changed (the
///   proxy variables of the process, if any, belong to no case), so a judge may start threads
///   freely. Use `target`, not [`TargetClient::from_env`], in a persistent judge. A failing case
///   is an error line; the judge keeps serving.
///
/// In both modes stdout belongs to agentv: `println!` inside `f`, and child processes that
/// inherit stdout, write to stderr instead; in persistent mode stdin reads nothing. (A judge
/// that calls `std::process::exit` ends the run: return an error instead.)
pub fn run_judge<F>(mut f: F) -> ExitCode
where
    F: FnMut(&CodeJudgePayload, Option<&TargetClient>) -> JudgeOutcome,
{
    if std::env::var(PERSISTENT_ENV).as_deref() == Ok("1") {
        serve_persistent(&mut f)
    } else {
        run_once(&mut f)
    }
}

fn run_once<F>(f: &mut F) -> ExitCode
where
    F: FnMut(&CodeJudgePayload, Option<&TargetClient>) -> JudgeOutcome,
{
    let mut out = ProtocolOut::take();
    let (line, code) = match grade_stdin(f) {
        Ok(result) => (result.to_json_line(), 0),
        Err(error) => (JudgeResult::failed(&report(&error)).to_json_line(), 1),
    };
    match out.line(&line) {
        Ok(()) => ExitCode::from(code),
        Err(_) => ExitCode::from(1),
    }
}

fn grade_stdin<F>(f: &mut F) -> Result<JudgeResult, JudgeError>
where
    F: FnMut(&CodeJudgePayload, Option<&TargetClient>) -> JudgeOutcome,
{
    let payload = read_payload()?;
    let target = TargetClient::from_env()?;
    judge(&payload, target.as_ref(), f)
}

fn serve_persistent<F>(f: &mut F) -> ExitCode
where
    F: FnMut(&CodeJudgePayload, Option<&TargetClient>) -> JudgeOutcome,
{
    let requests = stdio::private_stdin();
    let mut out = ProtocolOut::take();
    match serve(requests, &mut out, f) {
        Ok(()) => ExitCode::SUCCESS,
        // Nobody reads the answers any more (agentv stopped): end quietly.
        Err(_) => ExitCode::from(1),
    }
}

fn serve<F>(mut requests: Box<dyn BufRead>, out: &mut ProtocolOut, f: &mut F) -> std::io::Result<()>
where
    F: FnMut(&CodeJudgePayload, Option<&TargetClient>) -> JudgeOutcome,
{
    out.line(&persistent::ready_line(SDK_NAME))?;
    let mut raw = Vec::new();
    loop {
        raw.clear();
        if requests.read_until(b'\n', &mut raw)? == 0 {
            return Ok(());
        }
        let answer = match std::str::from_utf8(&raw) {
            Err(e) => Some(persistent::error_line(
                &Value::Null,
                &format!("request line is not valid UTF-8 (byte {})", e.valid_up_to()),
            )),
            Ok(line) => {
                let line = line.trim();
                (!line.is_empty()).then(|| serve_line(line, f))
            }
        };
        if let Some(answer) = answer {
            out.line(&answer)?;
        }
    }
}

/// The answer to one request line.
fn serve_line<F>(line: &str, f: &mut F) -> String
where
    F: FnMut(&CodeJudgePayload, Option<&TargetClient>) -> JudgeOutcome,
{
    let request = match persistent::parse_request(line) {
        Ok(request) => request,
        Err(bad) => {
            eprintln!("judge: bad request line: {bad}");
            return persistent::error_line(&bad.id, &bad.message);
        }
    };
    let graded = CodeJudgePayload::from_value(request.payload)
        .map_err(JudgeError::from)
        .and_then(|payload| {
            let target = case_client(request.proxy.as_ref())?;
            judge(&payload, target.as_ref(), &mut *f)
        });
    match graded {
        Ok(result) => persistent::result_line(&request.id, &result),
        Err(error) => persistent::error_line(&request.id, &report(&error)),
    }
}

/// Logs a failure on stderr and returns its message.
fn report(error: &JudgeError) -> String {
    let message = error.to_string();
    eprintln!("judge failed: {message}");
    message
}

fn panic_text(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// The client of one persistent case: that case's proxy, or none. Built from the request alone,
/// so no case ever sees another's token through the environment.
fn case_client(proxy: Option<&CaseProxy>) -> Result<Option<TargetClient>, TargetError> {
    match proxy {
        None => Ok(None),
        Some(proxy) => TargetClient::from_vars(Some(proxy.url.clone()), Some(proxy.token.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload() -> CodeJudgePayload {
        serde_json::from_str(r#"{"candidate_answer": "Paris is the capital."}"#).expect("valid")
    }

    #[test]
    fn judge_returns_the_result_or_the_reason() {
        let graded = judge(&payload(), None, |p, target| {
            assert!(target.is_none());
            Ok(JudgeResult::new(1.0)?.hit(format!("saw {}", p.candidate_answer)))
        });
        assert_eq!(graded.expect("graded").hits(), ["saw Paris is the capital."]);
        let failed = judge(&payload(), None, |_, _| Err("cannot grade".into())).expect_err("failed");
        assert_eq!(failed.to_string(), "cannot grade");
        let bad_score = judge(&payload(), None, |_, _| Ok(JudgeResult::new(1.5)?)).expect_err("out of range");
        assert!(bad_score.to_string().starts_with("score 1.5 is outside [0, 1]"));
    }

    #[test]
    fn a_panicking_judge_is_a_failure_not_a_crash() {
        let failed = judge(&payload(), None, |_, _| panic!("boom in the judge")).expect_err("panicked");
        assert_eq!(failed.to_string(), "the judge panicked: boom in the judge");
    }

    #[test]
    fn a_persistent_case_gets_its_proxy_as_an_argument_and_the_environment_is_untouched() {
        let mut seen = Vec::new();
        let mut f = |_: &CodeJudgePayload, target: Option<&TargetClient>| -> JudgeOutcome {
            seen.push((
                target.map(|t| format!("{t:?}")),
                std::env::var_os(crate::proxy::PROXY_URL_ENV),
                std::env::var_os(crate::proxy::JUDGE_PROXY_TOKEN_ENV),
            ));
            Ok(JudgeResult::default())
        };
        let with_proxy = r#"{"id": 1, "payload": {}, "proxy": {"url": "http://127.0.0.1:9/", "token": "tok-1"}}"#;
        serve_line(with_proxy, &mut f);
        serve_line(r#"{"id": 2, "payload": {}, "proxy": null}"#, &mut f);
        let (client, url, token) = &seen[0];
        assert!(
            client.as_deref().is_some_and(|c| c.contains("http://127.0.0.1:9")),
            "{client:?}"
        );
        assert_eq!(
            (url, token),
            (&None, &None),
            "the proxy must not be mirrored into the environment"
        );
        assert_eq!(seen[1], (None, None, None));
    }

    #[test]
    fn bad_request_lines_are_answered_without_calling_the_judge() {
        let mut calls = 0;
        let mut f = |_: &CodeJudgePayload, _: Option<&TargetClient>| -> JudgeOutcome {
            calls += 1;
            Ok(JudgeResult::default())
        };
        let answer: Value = serde_json::from_str(&serve_line("[1]", &mut f)).expect("json");
        assert_eq!(
            answer,
            serde_json::json!({"id": null, "error": "request line must be a JSON object, got an array"})
        );
        let answer: Value =
            serde_json::from_str(&serve_line(r#"{"id": 7, "payload": {"question": 42}}"#, &mut f)).expect("json");
        assert_eq!(answer["id"], 7);
        assert_eq!(
            answer["error"],
            "payload key `question`: expected a string, got a number"
        );
        assert_eq!(calls, 0);
    }
}
