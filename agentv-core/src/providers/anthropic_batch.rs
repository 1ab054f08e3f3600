//! The batch API of `anthropic` targets, Message Batches (`docs/batch.md#anthropic`): the
//! requests go in one JSON body `{requests: [{custom_id, params}]}` where `params` is the online
//! Messages request; the batch is polled until its `processing_status` is `ended`, and its
//! results are read line by line from its `results_url`, each keyed by its custom id.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::anthropic::{AnthropicProvider, message_response};
use super::batch::{BatchApi, BatchFuture, BatchHttp, BatchLimits, Body, ItemResult, JobState, same_origin};
use super::llm;
use super::{ProviderError, ProviderRequest};

/// At most 100,000 requests or 256 MB per batch.
const LIMITS: BatchLimits = BatchLimits {
    requests: 100_000,
    bytes: 256 * 1000 * 1000,
};

impl AnthropicProvider {
    fn batches_url(&self, rest: &str) -> String {
        format!(
            "{}/v1/messages/batches{rest}",
            self.config.base_url.trim_end_matches('/')
        )
    }

    fn batch_http(&self) -> BatchHttp {
        BatchHttp::for_target(self.http_call(&ProviderRequest::default()), &self.config.llm)
    }

    /// Where the results of batch `id` are read: the `results_url` the batch names when it is
    /// on the target's own server (it is sent the key), else the documented path.
    fn results_url(&self, id: &str, given: Option<String>) -> String {
        given
            .filter(|url| same_origin(url, &self.config.base_url))
            .unwrap_or_else(|| self.batches_url(&format!("/{id}/results")))
    }
}

impl BatchApi for AnthropicProvider {
    fn limits(&self) -> BatchLimits {
        LIMITS
    }

    fn item(&self, custom_id: &str, request: &ProviderRequest) -> Value {
        json!({"custom_id": custom_id, "params": self.http_call(request).body})
    }

    fn submit<'a>(&'a self, items: &'a [Value]) -> BatchFuture<'a, String> {
        Box::pin(async move {
            let body = Body::Json(json!({ "requests": items }));
            let batch = self
                .batch_http()
                .json(Method::POST, &self.batches_url(""), &body)
                .await?;
            llm::text_at(&batch, "/id").ok_or_else(|| llm::malformed(format!("batch creation answered {batch}")))
        })
    }

    fn status<'a>(&'a self, id: &'a str) -> BatchFuture<'a, JobState> {
        Box::pin(async move {
            let url = self.batches_url(&format!("/{id}"));
            let batch = self.batch_http().json(Method::GET, &url, &Body::None).await?;
            let mut state = job_state(&batch);
            if state.terminal {
                state.results = vec![self.results_url(id, llm::text_at(&batch, "/results_url"))];
            }
            Ok(state)
        })
    }

    fn results<'a>(&'a self, state: &'a JobState, each: &'a mut (dyn FnMut(ItemResult) + Send)) -> BatchFuture<'a, ()> {
        Box::pin(async move {
            let http = self.batch_http();
            for url in &state.results {
                http.each_item(url, item_result, each).await?;
            }
            Ok(())
        })
    }

    fn cancel<'a>(&'a self, id: &'a str) -> BatchFuture<'a, ()> {
        Box::pin(async move {
            let url = self.batches_url(&format!("/{id}/cancel"));
            self.batch_http().json(Method::POST, &url, &Body::None).await?;
            Ok(())
        })
    }

    fn poll_interval(&self) -> Duration {
        super::batch::poll_interval(&self.config.llm)
    }
}

/// A Message Batch as a job state: `processing_status` (`in_progress`, `canceling`, `ended`)
/// and `request_counts`. An item errored, canceled or expired counts as failed.
fn job_state(batch: &Value) -> JobState {
    let status = llm::text_at(batch, "/processing_status").unwrap_or_else(|| "unknown".to_owned());
    let count = |name: &str| llm::count(batch, &format!("/request_counts/{name}")).unwrap_or(0);
    let completed = count("succeeded");
    let failed = count("errored")
        .saturating_add(count("canceled"))
        .saturating_add(count("expired"));
    JobState {
        terminal: status == "ended",
        status,
        total: count("processing").saturating_add(completed).saturating_add(failed),
        completed,
        failed,
        results: Vec::new(),
        error: None,
    }
}

/// One results line: `{custom_id, result: {type: succeeded, message} | {type: errored, error}
/// | {type: canceled} | {type: expired}}`.
fn item_result(line: &Value) -> Option<ItemResult> {
    let id = llm::text_at(line, "/custom_id")?;
    let kind = llm::text_at(line, "/result/type").unwrap_or_default();
    let result = match (kind.as_str(), line.pointer("/result/message")) {
        ("succeeded", Some(message)) => message_response(message.clone(), 1, Duration::ZERO, false),
        ("errored", _) => {
            // The error is the API's error body: `{type: error, error: {type, message}}`.
            let error = line
                .pointer("/result/error/error")
                .or_else(|| line.pointer("/result/error"));
            let what = error
                .and_then(|e| llm::text_at(e, "/type"))
                .unwrap_or_else(|| "error".to_owned());
            let message = error.and_then(|e| llm::text_at(e, "/message")).unwrap_or_default();
            Err(ProviderError::Reported(format!(
                "batch item errored: {what}: {message}"
            )))
        }
        (other, _) => Err(ProviderError::Reported(format!(
            "batch item {}",
            if other.is_empty() { "without a result" } else { other }
        ))),
    };
    Some((id, result))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::anthropic::{ANTHROPIC_VERSION, AnthropicConfig};
    use crate::providers::llm::LlmSettings;
    use crate::redact::Secret;

    fn provider(base_url: &str) -> AnthropicProvider {
        AnthropicProvider::new(
            "t",
            AnthropicConfig {
                base_url: base_url.into(),
                model: "claude-haiku-4-5".into(),
                api_key: Secret::new("k"),
                anthropic_version: ANTHROPIC_VERSION.into(),
                llm: LlmSettings::default(),
                thinking_budget: None,
                thinking: None,
                tools: crate::model::ToolSettings::default(),
            },
        )
    }

    #[test]
    fn message_batches_become_job_states() {
        let running = job_state(&json!({"id": "msgbatch_1", "processing_status": "in_progress",
            "request_counts": {"processing": 3, "succeeded": 1, "errored": 0, "canceled": 0, "expired": 0}}));
        assert!(!running.terminal);
        assert_eq!((running.total, running.completed, running.failed), (4, 1, 0));
        let ended = job_state(&json!({"processing_status": "ended",
            "request_counts": {"processing": 0, "succeeded": 5, "errored": 1, "canceled": 2, "expired": 3}}));
        assert!(ended.terminal);
        assert_eq!((ended.total, ended.completed, ended.failed), (11, 5, 6));
        assert!(!job_state(&json!({"processing_status": "canceling"})).terminal);
    }

    #[test]
    fn results_are_read_from_the_targets_own_server_only() {
        let p = provider("https://api.anthropic.com/");
        let own = "https://api.anthropic.com/v1/messages/batches/b1/results".to_owned();
        assert_eq!(p.results_url("b1", Some(own.clone())), own);
        assert_eq!(
            p.results_url("b1", Some("https://elsewhere.example/steal".to_owned())),
            own,
            "the key never goes to another server"
        );
        assert_eq!(p.results_url("b1", None), own);
    }

    #[test]
    fn items_hold_the_online_messages_request_under_their_custom_id() {
        let p = provider("http://127.0.0.1:9");
        let request = ProviderRequest {
            question: "What is 2+2?".into(),
            ..ProviderRequest::default()
        };
        let item = p.item("agentv-0123", &request);
        assert_eq!(item["custom_id"], "agentv-0123");
        assert_eq!(item["params"], p.http_call(&request).body);
        assert_eq!(item["params"]["model"], "claude-haiku-4-5");
    }

    #[test]
    fn result_lines_are_answers_or_item_errors_by_custom_id() {
        let ok = json!({"custom_id": "a", "result": {"type": "succeeded", "message": {
            "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "4"}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 1}}}});
        let (id, answer) = item_result(&ok).expect("an item");
        assert_eq!(id, "a");
        let answer = answer.expect("answered");
        assert_eq!(answer.output_messages[0].text().as_deref(), Some("4"));
        assert_eq!(answer.metadata.expect("metadata")["thinking"], "hmm");
        let errored = json!({"custom_id": "b", "result": {"type": "errored", "error": {"type": "error",
            "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}}}});
        let (_, err) = item_result(&errored).expect("an item");
        assert_eq!(
            err.expect_err("an error").to_string(),
            "batch item errored: invalid_request_error: max_tokens: too large"
        );
        for kind in ["canceled", "expired"] {
            let line = json!({"custom_id": "c", "result": {"type": kind}});
            let (_, err) = item_result(&line).expect("an item");
            assert!(err.expect_err("an error").to_string().contains(kind), "{kind}");
        }
        assert!(
            item_result(&json!({"result": {"type": "expired"}})).is_none(),
            "no custom id"
        );
    }
}
