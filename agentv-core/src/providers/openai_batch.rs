//! The batch API of `openai` and `azure` targets (`docs/batch.md#openai-and-azure-openai`):
//! the requests go as JSONL lines `{custom_id, method: POST, url, body}` in a file uploaded to
//! the files endpoint with `purpose=batch`; a batch is created on it with a 24 h completion
//! window, polled, and its output and error files are read back line by line.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::batch::{BatchApi, BatchFuture, BatchHttp, BatchLimits, Body, ItemResult, JobState};
use super::llm;
use super::openai::{Flavor, OpenAiProvider, parse_completion};
use super::{ProviderError, ProviderRequest};

/// OpenAI: at most 50,000 requests and 200 MB per input file.
const OPENAI_LIMITS: BatchLimits = BatchLimits {
    requests: 50_000,
    bytes: 200 * 1000 * 1000,
};
/// Azure OpenAI (global batch): at most 100,000 requests and 200 MB per input file.
const AZURE_LIMITS: BatchLimits = BatchLimits {
    requests: 100_000,
    bytes: 200 * 1000 * 1000,
};
/// The statuses after which a batch no longer changes.
const TERMINAL: &[&str] = &["completed", "failed", "expired", "cancelled"];

impl OpenAiProvider {
    /// `{base}/{path}` with Azure's `api-version` when the target is an Azure one.
    fn batch_url(&self, path: &str) -> String {
        match &self.config.flavor {
            Flavor::OpenAi { base_url, .. } => format!("{}/{path}", base_url.trim_end_matches('/')),
            Flavor::Azure {
                endpoint, api_version, ..
            } => format!(
                "{}/openai/{path}?api-version={api_version}",
                endpoint.trim_end_matches('/')
            ),
        }
    }

    fn batch_http(&self) -> BatchHttp {
        BatchHttp::for_target(self.http_call(&ProviderRequest::default()), &self.config.llm)
    }

    /// Uploads `jsonl` as a batch input file and creates a batch on it; the batch's id.
    fn submit_jsonl(&self, jsonl: Vec<u8>) -> BatchFuture<'_, String> {
        Box::pin(async move {
            let http = self.batch_http();
            let upload = Body::Multipart {
                fields: vec![("purpose", "batch".to_owned())],
                file: ("file", "agentv-batch.jsonl".to_owned(), jsonl),
            };
            let file = http.json(Method::POST, &self.batch_url("files"), &upload).await?;
            let file_id =
                llm::text_at(&file, "/id").ok_or_else(|| llm::malformed(format!("file upload answered {file}")))?;
            let create = json!({
                "input_file_id": file_id,
                "endpoint": self.line_url(),
                "completion_window": "24h",
                "metadata": {"created_by": "agentv"},
            });
            let batch = http
                .json(Method::POST, &self.batch_url("batches"), &Body::Json(create))
                .await?;
            llm::text_at(&batch, "/id").ok_or_else(|| llm::malformed(format!("batch creation answered {batch}")))
        })
    }

    /// The endpoint the lines name: Azure's has no `/v1`.
    fn line_url(&self) -> &'static str {
        match self.config.flavor {
            Flavor::OpenAi { .. } => "/v1/chat/completions",
            Flavor::Azure { .. } => "/chat/completions",
        }
    }
}

impl BatchApi for OpenAiProvider {
    fn limits(&self) -> BatchLimits {
        match self.config.flavor {
            Flavor::OpenAi { .. } => OPENAI_LIMITS,
            Flavor::Azure { .. } => AZURE_LIMITS,
        }
    }

    fn item(&self, custom_id: &str, request: &ProviderRequest) -> Value {
        let mut body = self.http_call(request).body;
        if let Flavor::Azure { deployment, .. } = &self.config.flavor {
            // A batch line names its deployment as the model.
            body["model"] = json!(deployment);
        }
        json!({"custom_id": custom_id, "method": "POST", "url": self.line_url(), "body": body})
    }

    fn submit<'a>(&'a self, items: &'a [Value]) -> BatchFuture<'a, String> {
        self.submit_jsonl(jsonl(items.iter()))
    }

    fn submit_each<'a>(&'a self, items: &'a mut (dyn Iterator<Item = Value> + Send)) -> BatchFuture<'a, String> {
        self.submit_jsonl(jsonl(items))
    }

    fn status<'a>(&'a self, id: &'a str) -> BatchFuture<'a, JobState> {
        Box::pin(async move {
            let url = self.batch_url(&format!("batches/{id}"));
            let batch = self.batch_http().json(Method::GET, &url, &Body::None).await?;
            Ok(job_state(&batch))
        })
    }

    fn results<'a>(&'a self, state: &'a JobState, each: &'a mut (dyn FnMut(ItemResult) + Send)) -> BatchFuture<'a, ()> {
        Box::pin(async move {
            let http = self.batch_http();
            for file in &state.results {
                let url = self.batch_url(&format!("files/{file}/content"));
                http.each_item(&url, item_result, each).await?;
            }
            Ok(())
        })
    }

    fn cancel<'a>(&'a self, id: &'a str) -> BatchFuture<'a, ()> {
        Box::pin(async move {
            let url = self.batch_url(&format!("batches/{id}/cancel"));
            self.batch_http().json(Method::POST, &url, &Body::None).await?;
            Ok(())
        })
    }

    fn poll_interval(&self) -> Duration {
        super::batch::poll_interval(&self.config.llm)
    }
}

/// The input file of a job: one item per line, each written as it comes.
fn jsonl<V: std::borrow::Borrow<Value>>(items: impl Iterator<Item = V>) -> Vec<u8> {
    let mut out = Vec::new();
    for item in items {
        // Writing a `Value` into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut out, item.borrow());
        out.push(b'\n');
    }
    out
}

/// A batch object as a job state: status, request counts, output and error files.
fn job_state(batch: &Value) -> JobState {
    let status = llm::text_at(batch, "/status").unwrap_or_else(|| "unknown".to_owned());
    let count = |name: &str| {
        batch
            .pointer(&format!("/request_counts/{name}"))
            .and_then(Value::as_u64)
    };
    let results = ["/output_file_id", "/error_file_id"]
        .iter()
        .filter_map(|p| llm::text_at(batch, p))
        .collect();
    let error = batch
        .pointer("/errors/data")
        .and_then(Value::as_array)
        .map(|errors| {
            errors
                .iter()
                .filter_map(|e| llm::text_at(e, "/message"))
                .collect::<Vec<_>>()
                .join("; ")
        })
        .filter(|m| !m.is_empty());
    JobState {
        terminal: TERMINAL.contains(&status.as_str()),
        status,
        total: count("total").unwrap_or(0),
        completed: count("completed").unwrap_or(0),
        failed: count("failed").unwrap_or(0),
        results,
        error,
    }
}

/// One line of an output or error file: `{custom_id, response: {status_code, body}, error}`.
fn item_result(line: &Value) -> Option<ItemResult> {
    let id = llm::text_at(line, "/custom_id")?;
    let status = line.pointer("/response/status_code").and_then(Value::as_u64);
    let result = match (status, line.pointer("/response/body")) {
        (Some(200), Some(body)) => parse_completion(body)
            .map(|parsed| llm::response(parsed, body.clone(), 1, Duration::ZERO, false))
            .map_err(llm::malformed),
        (Some(status), body) => Err(ProviderError::Http {
            status: u16::try_from(status).unwrap_or(500),
            message: body
                .and_then(|b| llm::text_at(b, "/error/message"))
                .unwrap_or_else(|| "the batch item failed".to_owned()),
            retry_after: None,
        }),
        (None, _) => {
            let code = llm::text_at(line, "/error/code").unwrap_or_else(|| "error".to_owned());
            let message = llm::text_at(line, "/error/message").unwrap_or_default();
            Err(ProviderError::Reported(format!("batch item {code}: {message}")))
        }
    };
    Some((id, result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_objects_become_job_states() {
        let batch = json!({
            "id": "batch_1", "status": "expired",
            "request_counts": {"total": 3, "completed": 2, "failed": 1},
            "output_file_id": "file-out", "error_file_id": "file-err"
        });
        let s = job_state(&batch);
        assert!(s.terminal);
        assert_eq!((s.total, s.completed, s.failed), (3, 2, 1));
        assert_eq!(s.results, ["file-out", "file-err"]);
        let running = job_state(&json!({"status": "in_progress", "output_file_id": null}));
        assert!(!running.terminal && running.results.is_empty());
        let failed = job_state(&json!({"status": "failed", "errors": {"data": [{"message": "bad line 3"}]}}));
        assert_eq!(failed.error.as_deref(), Some("bad line 3"));
    }

    #[test]
    fn result_lines_are_answers_or_item_errors_by_custom_id() {
        let ok = json!({"custom_id": "a", "response": {"status_code": 200, "body": {
            "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1}}}});
        let (id, answer) = item_result(&ok).expect("an item");
        assert_eq!(id, "a");
        let answer = answer.expect("answered");
        assert_eq!(answer.output_messages[0].text().as_deref(), Some("hi"));
        let refused =
            json!({"custom_id": "b", "response": {"status_code": 400, "body": {"error": {"message": "bad"}}}});
        let (_, err) = item_result(&refused).expect("an item");
        assert_eq!(err.expect_err("an error").to_string(), "HTTP 400: bad");
        let expired = json!({"custom_id": "c", "response": null, "error": {"code": "batch_expired", "message": "not done in 24h"}});
        let (_, err) = item_result(&expired).expect("an item");
        assert!(err.expect_err("an error").to_string().contains("batch_expired"));
        assert!(item_result(&json!({"no": "id"})).is_none());
    }
}
