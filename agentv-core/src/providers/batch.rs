//! Provider batch APIs (`docs/batch.md`): what a provider that sells batch processing offers the
//! run. The run collects a target's requests, gives each a custom id, asks the provider to
//! submit them as jobs within its limits, polls the jobs, and reads their results back by custom
//! id; a provider only speaks its own wire format.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use super::retry::RetryPolicy;
use super::{ProviderError, ProviderRequest, ProviderResponse};
use crate::redact::Secrets;

/// How large one job may be (`docs/batch.md#openai-and-azure-openai`, where the limits are).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    pub requests: usize,
    pub bytes: usize,
}

/// Where a job stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobState {
    /// The provider's own word (`in_progress`, `ended`, `JOB_STATE_SUCCEEDED`).
    pub status: String,
    /// No more change will come: the results (what there is of them) can be read.
    pub terminal: bool,
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
    /// Where the results are (a file id, a results URL), as the provider names them.
    pub results: Vec<String>,
    /// Why the whole job failed, when it did.
    pub error: Option<String>,
}

/// One result of a job: its custom id and the answer or why there is none.
pub type ItemResult = (String, Result<ProviderResponse, ProviderError>);

/// A future of a batch API.
pub type BatchFuture<'a, T> = BoxFuture<'a, Result<T, ProviderError>>;

/// A provider's batch API. Jobs are named by the provider's id; items by the custom id the run
/// gave them, never by their order (results may come back in any order).
pub trait BatchApi: Send + Sync {
    /// The largest job the provider takes.
    fn limits(&self) -> BatchLimits;

    /// The item for `request` as the job's input holds it (a JSONL line, a request object).
    fn item(&self, custom_id: &str, request: &ProviderRequest) -> Value;

    /// Submits `items` as one job; its id.
    fn submit<'a>(&'a self, items: &'a [Value]) -> BatchFuture<'a, String>;

    /// Submits the items `items` yields as one job; its id. A provider whose job input is a
    /// file writes each item out as it comes, so a large job is never held as JSON values; by
    /// default they are gathered and handed to [`BatchApi::submit`].
    fn submit_each<'a>(&'a self, items: &'a mut (dyn Iterator<Item = Value> + Send)) -> BatchFuture<'a, String> {
        let items: Vec<Value> = items.collect();
        Box::pin(async move { self.submit(&items).await })
    }

    /// Where job `id` stands.
    fn status<'a>(&'a self, id: &'a str) -> BatchFuture<'a, JobState>;

    /// The results of a terminal job, handed to `each` as they are read.
    fn results<'a>(&'a self, state: &'a JobState, each: &'a mut (dyn FnMut(ItemResult) + Send)) -> BatchFuture<'a, ()>;

    /// Asks the provider to cancel job `id`.
    fn cancel<'a>(&'a self, id: &'a str) -> BatchFuture<'a, ()>;

    /// The first wait between polls.
    fn poll_interval(&self) -> Duration;
}

/// An HTTP request of a batch API: the target's headers and retries, secrets kept out of
/// messages.
#[derive(Clone)]
pub struct BatchHttp {
    pub headers: Vec<(&'static str, String)>,
    pub retry: RetryPolicy,
    pub secrets: Secrets,
    pub timeout: Option<Duration>,
}

impl std::fmt::Debug for BatchHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchHttp").finish_non_exhaustive()
    }
}

/// A request body.
#[derive(Debug, Clone)]
pub enum Body {
    None,
    Json(Value),
    /// A multipart form: text fields, then one file (name, file name, bytes).
    Multipart {
        fields: Vec<(&'static str, String)>,
        file: (&'static str, String, Vec<u8>),
    },
    /// Raw bytes of a content type (an upload's content).
    Bytes(&'static str, Vec<u8>),
}

/// The first wait between polls when a target sets no `batch_poll_ms`.
const DEFAULT_POLL: Duration = Duration::from_secs(5);

/// The first wait between polls of a target's jobs: its `batch_poll_ms`, else 5 s.
pub fn poll_interval(llm: &super::llm::LlmSettings) -> Duration {
    llm.batch_poll.unwrap_or(DEFAULT_POLL)
}

impl BatchHttp {
    /// The batch requests of a target: the headers of its online `call` (credentials, API
    /// version; the body's type is set per request), its retries, secrets and timeout.
    pub fn for_target(call: super::llm::HttpCall, llm: &super::llm::LlmSettings) -> Self {
        Self {
            headers: call
                .headers
                .into_iter()
                .filter(|(name, _)| *name != "content-type")
                .collect(),
            retry: llm.retry.clone(),
            secrets: llm.secrets.clone(),
            timeout: llm.timeout,
        }
    }

    /// Reads the JSONL results at `url` as they stream in and hands each item `parse` finds in
    /// a line to `each`; a line that is not JSON is logged and skipped.
    pub async fn each_item(
        &self,
        url: &str,
        parse: fn(&Value) -> Option<ItemResult>,
        each: &mut (dyn FnMut(ItemResult) + Send),
    ) -> Result<(), ProviderError> {
        let response = self.send(reqwest::Method::GET, url, &Body::None).await?;
        each_line(response, self.timeout, &mut |line| match line {
            Ok(line) => {
                if let Some(item) = parse(&line) {
                    each(item);
                }
            }
            Err(problem) => tracing::warn!("batch results: {problem}"),
        })
        .await
    }

    /// Sends with retries; the answer's body when its status is 2xx.
    pub async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        body: &Body,
    ) -> Result<reqwest::Response, ProviderError> {
        let (result, _) = self.retry.run(|| self.once(method.clone(), url, body)).await;
        result
    }

    /// Sends and reads a JSON answer.
    pub async fn json(&self, method: reqwest::Method, url: &str, body: &Body) -> Result<Value, ProviderError> {
        self.typed(method, url, body).await
    }

    /// Sends and reads a JSON answer into `T`: only the fields `T` names are built, the rest
    /// is skipped as it is read (a job's inline answers, when only its state is wanted).
    pub async fn typed<T: serde::de::DeserializeOwned>(
        &self,
        method: reqwest::Method,
        url: &str,
        body: &Body,
    ) -> Result<T, ProviderError> {
        let text = self.text(method, url, body).await?;
        self.parse(&text)
    }

    /// Sends and reads the answer's text.
    pub async fn text(&self, method: reqwest::Method, url: &str, body: &Body) -> Result<String, ProviderError> {
        let response = self.send(method, url, body).await?;
        response
            .text()
            .await
            .map_err(|e| super::retry::transport_error(e, self.timeout))
    }

    /// `text` read into `T`, or an error that quotes its end (secrets kept out).
    pub fn parse<T: serde::de::DeserializeOwned>(&self, text: &str) -> Result<T, ProviderError> {
        serde_json::from_str(text).map_err(|e| {
            ProviderError::malformed(
                "the provider's batch API",
                format!("{e}; it answered: {}", crate::process::tail(text, 300, &self.secrets)),
            )
        })
    }

    async fn once(&self, method: reqwest::Method, url: &str, body: &Body) -> Result<reqwest::Response, ProviderError> {
        let mut builder = crate::http::client()
            .request(method, url)
            .headers(super::llm::header_map(&self.headers)?);
        if let Some(t) = self.timeout {
            builder = builder.timeout(t);
        }
        builder = match body {
            Body::None => builder,
            Body::Json(value) => builder.json(value),
            Body::Multipart { fields, file } => {
                let (content_type, bytes) = multipart(fields, file);
                builder.header("content-type", content_type).body(bytes)
            }
            Body::Bytes(content_type, bytes) => builder.header("content-type", *content_type).body(bytes.clone()),
        };
        let response = builder
            .send()
            .await
            .map_err(|e| super::retry::transport_error(e, self.timeout))?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(super::retry::parse_retry_after);
        let text = response.text().await.unwrap_or_default();
        Err(ProviderError::Http {
            status,
            message: super::llm::error_message(&text, &self.secrets),
            retry_after,
        })
    }
}

/// A `multipart/form-data` body (RFC 7578): its content type and bytes.
fn multipart(fields: &[(&'static str, String)], file: &(&'static str, String, Vec<u8>)) -> (String, Vec<u8>) {
    let boundary = format!("agentv-{}", hex::encode(rand::random::<[u8; 12]>()));
    let mut out = Vec::with_capacity(file.2.len() + 512);
    for (name, value) in fields {
        out.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes(),
        );
    }
    let (name, file_name, bytes) = file;
    out.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\nContent-Type: application/jsonl\r\n\r\n"
        )
        .as_bytes(),
    );
    out.extend_from_slice(bytes);
    out.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), out)
}

/// Reads a JSONL answer line by line as it streams in, handing each parsed line to `each`:
/// a results file is never held whole.
pub async fn each_line(
    mut response: reqwest::Response,
    timeout: Option<Duration>,
    each: &mut (dyn FnMut(Result<Value, String>) + Send),
) -> Result<(), ProviderError> {
    let mut pending: Vec<u8> = Vec::new();
    let line = |bytes: &[u8], each: &mut (dyn FnMut(Result<Value, String>) + Send)| {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim();
        if !text.is_empty() {
            each(serde_json::from_str(text).map_err(|e| format!("a results line is not JSON ({e})")));
        }
    };
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| super::retry::transport_error(e, timeout))?
    {
        pending.extend_from_slice(&chunk);
        let mut start = 0;
        while let Some(end) = pending[start..].iter().position(|b| *b == b'\n') {
            line(&pending[start..start + end], each);
            start += end + 1;
        }
        pending.drain(..start);
    }
    line(&pending, each);
    Ok(())
}

/// The length of `item` encoded as JSON, without building the text.
pub fn encoded_len(item: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail, and a `Value` always serializes.
    let _ = serde_json::to_writer(&mut count, item);
    count.0
}

/// Whether `url` is on the server of `base` (scheme, host and port): only there may a URL the
/// provider hands back (a results URL, an upload URL) be sent the target's credentials.
pub fn same_origin(url: &str, base: &str) -> bool {
    match (reqwest::Url::parse(url), reqwest::Url::parse(base)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

/// Splits items (with their encoded sizes) into jobs within `limits`, in order.
pub fn split(sizes: &[usize], limits: BatchLimits) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (i, size) in sizes.iter().enumerate() {
        let count = i - start;
        if count > 0 && (count >= limits.requests || bytes + size > limits.bytes) {
            out.push(start..i);
            start = i;
            bytes = 0;
        }
        bytes += size;
    }
    if start < sizes.len() {
        out.push(start..sizes.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_suites_are_split_by_count_and_by_bytes() {
        let limits = BatchLimits {
            requests: 3,
            bytes: 100,
        };
        assert_eq!(split(&[10; 7], limits), vec![0..3, 3..6, 6..7]);
        assert_eq!(split(&[40, 40, 40, 10], limits), vec![0..2, 2..4]);
        assert_eq!(
            split(&[500, 1], limits),
            vec![0..1, 1..2],
            "an item over the limit goes alone"
        );
        assert!(split(&[], limits).is_empty());
    }

    #[tokio::test]
    async fn results_lines_that_are_not_json_are_skipped_and_the_rest_read() {
        use wiremock::{Mock, MockServer, ResponseTemplate, matchers::any};
        let server = MockServer::start().await;
        Mock::given(any())
            .respond_with(ResponseTemplate::new(200).set_body_string("{\"id\": \"a\"}\nnot json\n\n{\"id\": \"b\"}"))
            .mount(&server)
            .await;
        let http = BatchHttp {
            headers: Vec::new(),
            retry: RetryPolicy::default(),
            secrets: Secrets::default(),
            timeout: None,
        };
        let parse: fn(&Value) -> Option<ItemResult> = |line| {
            let id = line.get("id")?.as_str()?.to_owned();
            Some((id, Err(ProviderError::Reported("x".into()))))
        };
        let mut ids = Vec::new();
        http.each_item(&server.uri(), parse, &mut |(id, _)| ids.push(id))
            .await
            .expect("read");
        assert_eq!(ids, ["a", "b"]);
    }

    #[test]
    fn credentials_only_go_to_the_targets_own_server() {
        let base = "https://api.anthropic.com";
        assert!(same_origin(
            "https://api.anthropic.com/v1/messages/batches/b/results",
            base
        ));
        assert!(!same_origin(
            "https://files.example.com/v1/messages/batches/b/results",
            base
        ));
        assert!(!same_origin("http://api.anthropic.com/x", base), "another scheme");
        assert!(!same_origin("https://api.anthropic.com:8443/x", base), "another port");
        assert!(!same_origin("not a url", base));
    }

    #[test]
    fn encoded_lengths_are_those_of_the_json_text() {
        for item in [
            serde_json::json!({"custom_id": "a", "body": {"messages": [{"content": "é \"q\""}]}}),
            serde_json::json!([]),
            serde_json::json!(1.5),
        ] {
            assert_eq!(encoded_len(&item), item.to_string().len(), "{item}");
        }
    }

    #[test]
    fn multipart_bodies_hold_the_fields_and_the_file() {
        let (content_type, body) = multipart(
            &[("purpose", "batch".to_owned())],
            &("file", "batch.jsonl".to_owned(), b"{\"a\":1}\n".to_vec()),
        );
        let boundary = content_type.split("boundary=").nth(1).expect("boundary");
        let text = String::from_utf8(body).expect("utf-8");
        assert!(text.starts_with(&format!("--{boundary}\r\n")));
        assert!(text.contains("name=\"purpose\"\r\n\r\nbatch\r\n"));
        assert!(text.contains("filename=\"batch.jsonl\""));
        assert!(text.ends_with(&format!("{{\"a\":1}}\n\r\n--{boundary}--\r\n")));
    }
}
