//! `webhook` (promptfoo): POSTs `{output, context: {prompt, vars}}` as JSON to the URL `value`
//! and takes its answer `{pass, score, reason}` (`docs/promptfoo.md#webhook`). As in promptfoo,
//! an answer without `pass` passes, a missing `score` is the pass (1 or 0), and `not-webhook`
//! inverts pass and score. A webhook that cannot be reached, answers an error status or no JSON
//! is a grader error (promptfoo's reason `Webhook error: …`), never a pass.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::promptfoo_check::{self, PfResult};
use super::promptfoo_graded as graded;
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "webhook",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["webhook"],
    },
    doc: "POSTs the answer and the test's vars to the URL `value`, which answers `{pass, score, reason}`.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[Key::new("value", Kind::Str, "The webhook's URL.").required()];
const KEYS: KeyTable = KeyTable::new("webhook", "A webhook check.", &[OWN]);

/// promptfoo's default `WEBHOOK_TIMEOUT`.
const TIMEOUT: Duration = Duration::from_secs(5);
/// promptfoo retries a failed request; agentv tries this many times in all.
const ATTEMPTS: u32 = 3;

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let url = promptfoo_check::value_text(f, cx)?;
    Some(Arc::new(Webhook {
        url,
        inverse: cx.take_inverse(),
    }))
}

/// A `webhook` assertion as configured.
#[derive(Debug, Clone)]
pub struct Webhook {
    pub url: String,
    pub inverse: bool,
}

impl Grader for Webhook {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let body = json!({
                "output": ctx.candidate_answer,
                "context": {"prompt": ctx.case.question, "vars": graded::vars(ctx)},
            });
            match self.call(&body).await {
                Ok(answer) => verdict(&answer, self.inverse).grade(),
                Err(e) => graded::grader_error(format!("Webhook error: {e}")),
            }
        })
    }
}

impl Webhook {
    async fn call(&self, body: &Value) -> Result<Value, String> {
        let mut last = String::new();
        for attempt in 1..=ATTEMPTS {
            let sent = crate::http::client()
                .post(&self.url)
                .timeout(TIMEOUT)
                .json(body)
                .send()
                .await;
            match sent {
                Ok(response) if response.status().is_success() => {
                    return response.json::<Value>().await.map_err(|e| format!("the answer is not JSON: {e}"));
                }
                Ok(response) if response.status().is_server_error() && attempt < ATTEMPTS => {
                    last = format!("Webhook response status: {}", response.status().as_u16());
                }
                Ok(response) => return Err(format!("Webhook response status: {}", response.status().as_u16())),
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
        }
        Err(last)
    }
}

/// promptfoo's reading of the webhook's answer.
pub fn verdict(answer: &Value, inverse: bool) -> PfResult {
    let pass = match answer.get("pass") {
        Some(Value::Bool(b)) => *b != inverse,
        // promptfoo compares `pass !== inverse`: anything but a boolean equal to it passes.
        _ => true,
    };
    let score = match answer.get("score") {
        None => f64::from(u8::from(pass)),
        Some(s) => {
            let s = graded::js_number(s);
            if inverse { 1.0 - s } else { s }
        }
    };
    let reason = match answer.get("reason") {
        Some(Value::String(r)) if !r.is_empty() => r.clone(),
        _ if pass => "Assertion passed".to_owned(),
        _ => format!("Webhook returned {}", if inverse { "true" } else { "false" }),
    };
    PfResult { pass, score, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_reads_its_answer_as_promptfoo_does() {
        let r = verdict(&json!({"pass": false}), false);
        assert_eq!((r.pass, r.score, r.reason.as_str()), (false, 0.0, "Webhook returned false"));
        let r = verdict(&json!({"pass": true, "score": 0.25}), true);
        assert_eq!((r.pass, r.score, r.reason.as_str()), (false, 0.75, "Webhook returned true"));
        let r = verdict(&json!({"score": 0.4, "reason": "meh"}), false);
        assert_eq!((r.pass, r.score, r.reason.as_str()), (true, 0.4, "meh"));
    }

    #[test]
    fn webhook_posts_the_answer_and_vars_and_an_error_status_is_a_grader_error() {
        use wiremock::matchers::{body_partial_json, method};
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .and(body_partial_json(json!({"output": "It is Paris.", "context": {"vars": {"city": "Paris"}}})))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!({"pass": true, "score": 0.9, "reason": "ok"})))
                .mount(&server)
                .await;
            let grader = Webhook {
                url: format!("{}/hook", server.uri()),
                inverse: false,
            };
            let answered = crate::evaluators::testkit::Answered::text("It is Paris.")
                .with_metadata(json!({"promptfoo": {"vars": {"city": "Paris"}}}));
            let grade = grader.grade(&answered.context()).await;
            assert_eq!((grade.score, grade.reasoning.as_deref()), (0.9, Some("ok")));
            let answered = crate::evaluators::testkit::Answered::text("Lyon");
            let grade = grader.grade(&answered.context()).await;
            assert_eq!(grade.error.as_deref(), Some("Webhook error: Webhook response status: 404"));
        });
    }
}
