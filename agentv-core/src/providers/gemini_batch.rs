//! The batch API of `gemini` targets, Gemini batch mode (`docs/batch.md#gemini`): a job is
//! created with `models/{model}:batchGenerateContent`, its requests inline
//! (`input_config.requests.requests[]`, each `{request, metadata: {key}}`) while the body stays
//! under the inline limit, else in a JSONL file of `{key, request}` lines uploaded through the
//! Files API (`input_config.file_name`). The job (`batches/{id}`) is polled until its state is
//! final; its answers come inline (`inlinedResponses`) or in a responses file read line by line,
//! each keyed by the custom id it was sent with.

use std::time::Duration;

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::batch::{BatchApi, BatchFuture, BatchHttp, BatchLimits, Body, ItemResult, JobState, same_origin};
use super::gemini::{GeminiProvider, parse_generation};
use super::llm;
use super::{ProviderError, ProviderRequest};

/// A job's input file may hold up to 2 GB (the Files API's limit); the documentation states no
/// count, and agentv keeps a job to 100,000 requests.
const LIMITS: BatchLimits = BatchLimits {
    requests: 100_000,
    bytes: 2 * 1000 * 1000 * 1000,
};
/// Requests go inline while the creation body stays under 1 MB (Gemini takes up to 20 MB);
/// above it they go in a file, so that a large job's answers come back in a responses file
/// read line by line instead of one JSON document held whole (`docs/batch.md#gemini`).
const INLINE_BYTES: usize = 1000 * 1000;
/// The states after which a job no longer changes (`BATCH_STATE_…`, or `JOB_STATE_…` as some
/// clients name them).
const FINAL: &[&str] = &["SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED"];

impl GeminiProvider {
    fn base(&self) -> &str {
        self.config.base_url.trim_end_matches('/')
    }

    /// `{base}/v1beta/batches/{id}{suffix}`; `id` as the API names it (`batches/…`) or bare.
    fn batch_url(&self, id: &str, suffix: &str) -> String {
        let name = if id.starts_with("batches/") {
            id.to_owned()
        } else {
            format!("batches/{id}")
        };
        format!("{}/v1beta/{name}{suffix}", self.base())
    }

    fn batch_http(&self) -> BatchHttp {
        BatchHttp::for_target(self.http_call(&ProviderRequest::default()), &self.config.llm)
    }

    /// Submits `items` inline when the creation body fits in `inline_limit` bytes, else as an
    /// uploaded file; the job's name.
    async fn submit_items(&self, items: &[Value], inline_limit: usize) -> Result<String, ProviderError> {
        let display_name = format!("agentv-{}", items.len());
        // An inline request is its file line with `key` moved into `metadata`: a few bytes more.
        let inline_bytes: usize = items.iter().map(|item| item.to_string().len() + 16).sum();
        let body = if inline_bytes + 200 > inline_limit {
            let file = self.upload(items).await?;
            json!({"batch": {"display_name": display_name, "input_config": {"file_name": file}}})
        } else {
            let inline: Vec<Value> = items
                .iter()
                .map(|item| json!({"request": item["request"], "metadata": {"key": item["key"]}}))
                .collect();
            json!({"batch": {"display_name": display_name, "input_config": {"requests": {"requests": inline}}}})
        };
        let url = format!(
            "{}/v1beta/models/{}:batchGenerateContent",
            self.base(),
            self.config.model
        );
        let operation = self.batch_http().json(Method::POST, &url, &Body::Json(body)).await?;
        llm::text_at(&operation, "/name")
            .or_else(|| llm::text_at(&operation, "/metadata/name"))
            .ok_or_else(|| llm::malformed(format!("batch creation answered {operation}")))
    }

    /// Uploads `items` as a JSONL file through the Files API's resumable protocol (a start
    /// request, then the bytes to the upload URL it answers); the file's name (`files/…`).
    async fn upload(&self, items: &[Value]) -> Result<String, ProviderError> {
        let mut jsonl = Vec::new();
        for item in items {
            jsonl.extend_from_slice(item.to_string().as_bytes());
            jsonl.push(b'\n');
        }
        let mut start = self.batch_http();
        start.headers.extend([
            ("x-goog-upload-protocol", "resumable".to_owned()),
            ("x-goog-upload-command", "start".to_owned()),
            ("x-goog-upload-header-content-length", jsonl.len().to_string()),
            ("x-goog-upload-header-content-type", "application/jsonl".to_owned()),
        ]);
        let url = format!("{}/upload/v1beta/files", self.base());
        let body = Body::Json(json!({"file": {"display_name": "agentv-batch-input"}}));
        let response = start.send(Method::POST, &url, &body).await?;
        let upload_url = response
            .headers()
            .get("x-goog-upload-url")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| llm::malformed("the file upload answered no x-goog-upload-url".to_owned()))?;
        let mut upload = self.batch_http();
        if !same_origin(&upload_url, &self.config.base_url) {
            // The key goes only to the target's own server.
            upload.headers.clear();
        }
        upload.headers.extend([
            ("x-goog-upload-offset", "0".to_owned()),
            ("x-goog-upload-command", "upload, finalize".to_owned()),
        ]);
        let file = upload
            .json(Method::POST, &upload_url, &Body::Bytes("application/jsonl", jsonl))
            .await?;
        llm::text_at(&file, "/file/name").ok_or_else(|| llm::malformed(format!("the file upload answered {file}")))
    }

    /// Hands each answer held inline in the job `name` to `each`. The operation is read twice
    /// at most, each time building only one copy of the answers: from `response` (or a bare
    /// batch's `output`), else from `metadata.output`.
    async fn inline_results(&self, name: &str, each: &mut (dyn FnMut(ItemResult) + Send)) -> Result<(), ProviderError> {
        let http = self.batch_http();
        let text = http.text(Method::GET, &self.batch_url(name, ""), &Body::None).await?;
        let top: InlineAnswers = http.parse(&text)?;
        let answers = match top.response.or(top.output) {
            Some(output) => output.inlined_responses,
            None => http.parse::<InlineInMetadata>(&text)?.metadata.output.inlined_responses,
        };
        drop(text);
        for response in &answers.inlined_responses {
            if let Some(item) = item_result(response) {
                each(item);
            }
        }
        Ok(())
    }
}

/// What a poll reads of an operation (or a bare batch): its name, state, counts, where its
/// answers are and why it failed. The answers themselves are skipped as they are read.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Operation {
    name: Option<String>,
    done: bool,
    state: Option<String>,
    batch_stats: Stats,
    metadata: Option<BatchMeta>,
    response: Option<Output>,
    output: Option<Output>,
    error: Option<Status>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct BatchMeta {
    state: Option<String>,
    batch_stats: Stats,
    output: Option<Output>,
}

/// `batchStats`: int64 counts, which JSON carries as strings.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Stats {
    request_count: Count,
    successful_request_count: Count,
    failed_request_count: Count,
}

#[derive(Debug, Default, Clone, Copy)]
struct Count(u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Number(u64),
            Text(String),
            Other(serde::de::IgnoredAny),
        }
        Ok(Count(match Either::deserialize(d)? {
            Either::Number(n) => n,
            Either::Text(t) => t.parse().unwrap_or(0),
            Either::Other(_) => 0,
        }))
    }
}

/// Where the answers are; the inline ones skipped.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Output {
    responses_file: Option<String>,
    inlined_responses: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Status {
    message: Option<String>,
}

/// The inline answers, from `response` or a bare batch's `output`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InlineAnswers {
    response: Option<InlineOutput>,
    output: Option<InlineOutput>,
}

/// The inline answers from `metadata.output`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InlineInMetadata {
    metadata: InlineMeta,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InlineMeta {
    output: InlineOutput,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct InlineOutput {
    inlined_responses: InlineList,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct InlineList {
    inlined_responses: Vec<Value>,
}

impl BatchApi for GeminiProvider {
    fn limits(&self) -> BatchLimits {
        LIMITS
    }

    fn item(&self, custom_id: &str, request: &ProviderRequest) -> Value {
        json!({"key": custom_id, "request": self.http_call(request).body})
    }

    fn submit<'a>(&'a self, items: &'a [Value]) -> BatchFuture<'a, String> {
        Box::pin(self.submit_items(items, INLINE_BYTES))
    }

    fn status<'a>(&'a self, id: &'a str) -> BatchFuture<'a, JobState> {
        Box::pin(async move {
            let url = self.batch_url(id, "");
            let operation: Operation = self.batch_http().typed(Method::GET, &url, &Body::None).await?;
            Ok(job_state(id, operation))
        })
    }

    fn results<'a>(&'a self, state: &'a JobState, each: &'a mut (dyn FnMut(ItemResult) + Send)) -> BatchFuture<'a, ()> {
        Box::pin(async move {
            let http = self.batch_http();
            for place in &state.results {
                if !place.starts_with("files/") {
                    self.inline_results(place, each).await?;
                    continue;
                }
                let url = format!("{}/download/v1beta/{place}:download?alt=media", self.base());
                http.each_item(&url, item_result, each).await?;
            }
            Ok(())
        })
    }

    fn cancel<'a>(&'a self, id: &'a str) -> BatchFuture<'a, ()> {
        Box::pin(async move {
            let url = self.batch_url(id, ":cancel");
            self.batch_http().json(Method::POST, &url, &Body::None).await?;
            Ok(())
        })
    }

    fn poll_interval(&self) -> Duration {
        super::batch::poll_interval(&self.config.llm)
    }
}

/// The job `id` as its operation (or the bare batch) describes it: `metadata.state` (or
/// `state`), `batchStats`, and where its answers are: inline in the job, or a responses file.
fn job_state(id: &str, operation: Operation) -> JobState {
    let meta = operation.metadata.unwrap_or_default();
    let status = meta.state.or(operation.state).unwrap_or_else(|| "unknown".to_owned());
    let terminal = FINAL.iter().any(|s| status.ends_with(s)) || operation.done;
    let output = [operation.response, meta.output, operation.output]
        .into_iter()
        .flatten()
        .find(|o| o.responses_file.is_some() || o.inlined_responses.is_some());
    let name = operation.name.unwrap_or_else(|| id.to_owned());
    let results = match output {
        _ if !terminal => Vec::new(),
        Some(o) => vec![o.responses_file.unwrap_or(name)],
        None => Vec::new(),
    };
    let stats = if operation.batch_stats.request_count.0 > 0 {
        operation.batch_stats
    } else {
        meta.batch_stats
    };
    JobState {
        terminal,
        total: stats.request_count.0,
        completed: stats.successful_request_count.0,
        failed: stats.failed_request_count.0,
        results,
        error: operation.error.and_then(|e| e.message),
        status,
    }
}

/// One answer, inline (`{metadata: {key}, response | error}`) or a responses-file line
/// (`{key, response | error}`).
fn item_result(line: &Value) -> Option<ItemResult> {
    let key = llm::text_at(line, "/key").or_else(|| llm::text_at(line, "/metadata/key"))?;
    let result = match (line.get("response"), line.get("error")) {
        (Some(body), None) => parse_generation(body)
            .map(|parsed| llm::response(parsed, body.clone(), 1, Duration::ZERO, false))
            .map_err(llm::malformed),
        (_, error) => {
            let status = error
                .and_then(|e| llm::text_at(e, "/status"))
                .unwrap_or_else(|| "error".to_owned());
            let message = error.and_then(|e| llm::text_at(e, "/message")).unwrap_or_default();
            Err(ProviderError::Reported(format!("batch item {status}: {message}")))
        }
    };
    Some((key, result))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::gemini::GeminiConfig;
    use crate::providers::llm::LlmSettings;
    use crate::redact::Secret;
    use agentv_testkit::llm::FakeLlm;

    fn provider(base_url: &str) -> GeminiProvider {
        GeminiProvider::new(
            "t",
            GeminiConfig {
                base_url: base_url.into(),
                model: "gemini-2.5-flash".into(),
                api_key: Secret::new("gm-key"),
                llm: LlmSettings {
                    batch_poll: Some(Duration::from_millis(1)),
                    ..LlmSettings::default()
                },
                tools: crate::model::ToolSettings::default(),
            },
        )
    }

    fn state(id: &str, operation: &Value) -> JobState {
        job_state(id, serde_json::from_value(operation.clone()).expect("an operation"))
    }

    #[test]
    fn operations_become_job_states_with_where_their_answers_are() {
        let running = json!({"name": "batches/b1", "metadata": {"state": "BATCH_STATE_RUNNING",
            "batchStats": {"requestCount": "3", "pendingRequestCount": "3"}}, "done": false});
        let s = state("batches/b1", &running);
        assert!(!s.terminal && s.results.is_empty());
        assert_eq!((s.status.as_str(), s.total), ("BATCH_STATE_RUNNING", 3));
        let inline = json!({"name": "batches/b1", "done": true,
            "metadata": {"state": "BATCH_STATE_SUCCEEDED", "batchStats": {"requestCount": "3",
                "successfulRequestCount": "2", "failedRequestCount": 1}},
            "response": {"inlinedResponses": {"inlinedResponses": []}}});
        let s = state("batches/b1", &inline);
        assert!(s.terminal);
        assert_eq!((s.total, s.completed, s.failed), (3, 2, 1));
        assert_eq!(s.results, ["batches/b1"]);
        let file = json!({"name": "batches/b2", "state": "BATCH_STATE_SUCCEEDED",
            "output": {"responsesFile": "files/out-1"}});
        assert_eq!(state("batches/b2", &file).results, ["files/out-1"], "a bare batch");
        let expired = json!({"name": "batches/b3", "metadata": {"state": "BATCH_STATE_EXPIRED"}, "done": true,
            "error": {"code": 4, "message": "the batch expired"}});
        let s = state("batches/b3", &expired);
        assert!(s.terminal && s.results.is_empty());
        assert_eq!(s.error.as_deref(), Some("the batch expired"));
        assert!(state("b", &json!({"metadata": {"state": "JOB_STATE_CANCELLED"}})).terminal);
        let odd = state(
            "b",
            &json!({"metadata": {"batchStats": {"requestCount": -1, "failedRequestCount": "x"}}}),
        );
        assert_eq!(
            (odd.total, odd.failed),
            (0, 0),
            "odd counts are no counts, not a failed poll"
        );
        assert!(!state("b", &json!({"metadata": {"state": "BATCH_STATE_PENDING"}})).terminal);
    }

    #[test]
    fn answers_are_matched_by_their_key_inline_or_in_a_file() {
        let body = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "4"}]}}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}});
        for line in [
            json!({"metadata": {"key": "a"}, "response": body}),
            json!({"key": "a", "response": body}),
        ] {
            let (key, answer) = item_result(&line).expect("an item");
            assert_eq!(key, "a");
            assert_eq!(
                answer.expect("answered").output_messages[0].text().as_deref(),
                Some("4")
            );
        }
        let failed = json!({"key": "b", "error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}});
        let (_, err) = item_result(&failed).expect("an item");
        assert!(err.expect_err("an error").to_string().contains("INVALID_ARGUMENT: bad"));
        assert!(item_result(&json!({"response": body})).is_none(), "no key");
    }

    /// Above the inline limit the requests go in an uploaded file, and the answers come back
    /// in a responses file, out of order, matched by key.
    #[tokio::test]
    async fn a_large_job_goes_through_an_uploaded_file() {
        let server = FakeLlm::start().await;
        let p = provider(&server.uri());
        let items: Vec<Value> = (0..3)
            .map(|i| {
                let request = ProviderRequest {
                    question: format!("q{i}"),
                    ..ProviderRequest::default()
                };
                p.item(&format!("k{i}"), &request)
            })
            .collect();
        let id = p.submit_items(&items, 0).await.expect("submitted");
        assert!(id.starts_with("batches/"), "{id}");
        let state = loop {
            let s = p.status(&id).await.expect("polled");
            if s.terminal {
                break s;
            }
        };
        assert_eq!(state.status, "BATCH_STATE_SUCCEEDED");
        assert!(state.results[0].starts_with("files/"), "{:?}", state.results);
        let mut keys = Vec::new();
        p.results(&state, &mut |(key, answer)| {
            assert!(answer.is_ok());
            keys.push(key);
        })
        .await
        .expect("read");
        assert_eq!(keys, ["k2", "k1", "k0"]);
        let counters = server.gemini_batch().counters.to_json();
        assert_eq!(
            (counters["files"].as_u64(), counters["jobs"].as_u64()),
            (Some(1), Some(1))
        );
        let uploads: Vec<_> = server
            .requests()
            .await
            .into_iter()
            .filter(|r| r.url.path().starts_with("/upload/"))
            .collect();
        assert_eq!(uploads.len(), 2, "a start and the bytes");
        assert!(
            uploads.iter().all(|r| r.headers.get("x-goog-api-key").is_some()),
            "the fake's upload URL is on the target's server"
        );
    }
}
