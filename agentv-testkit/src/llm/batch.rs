//! The fake's batch API, OpenAI's shape (also under Azure's `/openai/` paths): files uploaded
//! as multipart with `purpose=batch`, batches created on them, polled, cancelled, and their
//! output and error files downloaded. A job is `validating` when created, `in_progress` once
//! polled, and ends after [`BatchBehaviour::ready_after`]: `completed`, or `expired` / `failed`
//! as the behaviour says. Results come back in reverse order (matching by custom id is the
//! client's job), and chosen items fail. Counters say how many files and jobs were created, so a
//! test can tell a job submitted twice.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Reply;

/// How the fake's batch jobs behave.
#[derive(Debug, Clone)]
pub struct BatchBehaviour {
    /// A job ends this long after it was created (at the first poll after that).
    pub ready_after: Duration,
    /// Every item whose position in its job is a multiple of this fails (a 500 in the error
    /// file); `None`: none does.
    pub fail_every: Option<usize>,
    /// The job expires: only its first half is answered, the rest is `batch_expired`.
    pub expire: bool,
    /// The whole job fails validation.
    pub fail_job: bool,
}

impl Default for BatchBehaviour {
    fn default() -> Self {
        Self {
            ready_after: Duration::ZERO,
            fail_every: None,
            expire: false,
            fail_job: false,
        }
    }
}

/// What the fake's batch API saw.
#[derive(Debug, Default)]
pub struct BatchCounters {
    pub files: AtomicU64,
    pub jobs: AtomicU64,
    pub items: AtomicU64,
    pub polls: AtomicU64,
    pub cancels: AtomicU64,
    pub downloads: AtomicU64,
}

impl BatchCounters {
    pub fn to_json(&self) -> Value {
        let n = |c: &AtomicU64| c.load(Ordering::SeqCst);
        json!({
            "files": n(&self.files), "jobs": n(&self.jobs), "items": n(&self.items),
            "polls": n(&self.polls), "cancels": n(&self.cancels), "downloads": n(&self.downloads),
        })
    }
}

#[derive(Debug)]
struct Job {
    input: String,
    created: Instant,
    status: &'static str,
    output: Option<String>,
    error: Option<String>,
    counts: (u64, u64, u64),
}

/// The batch API's state.
#[derive(Debug, Default)]
pub struct BatchApi {
    pub behaviour: BatchBehaviour,
    pub counters: BatchCounters,
    files: Mutex<HashMap<String, Vec<u8>>>,
    jobs: Mutex<HashMap<String, Job>>,
    next: AtomicU64,
}

impl BatchApi {
    pub fn new(behaviour: BatchBehaviour) -> Self {
        Self {
            behaviour,
            ..Self::default()
        }
    }

    /// The reply to a batch API request, or `None` when `path` is not one.
    pub fn reply(&self, method: &str, path: &str, body: &[u8], answers: &dyn Fn(&[u8]) -> Reply) -> Option<Reply> {
        let rest = path.strip_prefix("/v1/").or_else(|| path.strip_prefix("/openai/"))?;
        let parts: Vec<&str> = rest.split('/').collect();
        let reply = match (method, parts.as_slice()) {
            ("POST", ["files"]) => self.upload(body),
            ("GET", ["files", id, "content"]) => self.download(id),
            ("POST", ["batches"]) => self.create(body),
            ("GET", ["batches", id]) => self.poll(id, answers),
            ("POST", ["batches", id, "cancel"]) => self.cancel(id),
            _ => return None,
        };
        Some(reply)
    }

    fn id(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.next.fetch_add(1, Ordering::SeqCst) + 1)
    }

    fn upload(&self, body: &[u8]) -> Reply {
        let Some(content) = multipart_file(body) else {
            return Reply::bad_request("no file part in the upload");
        };
        if !contains(body, b"name=\"purpose\"\r\n\r\nbatch\r\n") {
            return Reply::bad_request("purpose must be batch");
        }
        self.counters.files.fetch_add(1, Ordering::SeqCst);
        let id = self.id("file");
        let bytes = content.len();
        lock(&self.files).insert(id.clone(), content);
        Reply::json(json!({"id": id, "object": "file", "purpose": "batch", "bytes": bytes}))
    }

    fn download(&self, id: &str) -> Reply {
        self.counters.downloads.fetch_add(1, Ordering::SeqCst);
        match lock(&self.files).get(id) {
            Some(bytes) => Reply {
                status: 200,
                content_type: "application/jsonl",
                body: String::from_utf8_lossy(bytes).into_owned(),
            },
            None => not_found("no such file"),
        }
    }

    fn create(&self, body: &[u8]) -> Reply {
        let Ok(request) = serde_json::from_slice::<Value>(body) else {
            return Reply::bad_request("not JSON");
        };
        let Some(file) = request["input_file_id"].as_str() else {
            return Reply::bad_request("input_file_id is required");
        };
        if request["completion_window"] != "24h" {
            return Reply::bad_request("completion_window must be 24h");
        }
        let Some(input) = lock(&self.files)
            .get(file)
            .map(|b| String::from_utf8_lossy(b).into_owned())
        else {
            return not_found("no such input file");
        };
        let total = input.lines().filter(|l| !l.trim().is_empty()).count() as u64;
        self.counters.jobs.fetch_add(1, Ordering::SeqCst);
        self.counters.items.fetch_add(total, Ordering::SeqCst);
        let id = self.id("batch");
        let job = Job {
            input,
            created: Instant::now(),
            status: "validating",
            output: None,
            error: None,
            counts: (total, 0, 0),
        };
        let reply = batch_object(&id, &job);
        lock(&self.jobs).insert(id, job);
        Reply::json(reply)
    }

    fn poll(&self, id: &str, answers: &dyn Fn(&[u8]) -> Reply) -> Reply {
        self.counters.polls.fetch_add(1, Ordering::SeqCst);
        let mut jobs = lock(&self.jobs);
        let Some(job) = jobs.get_mut(id) else {
            return not_found("no such batch");
        };
        if job.status == "validating" {
            job.status = "in_progress";
        } else if job.status == "in_progress" && job.created.elapsed() >= self.behaviour.ready_after {
            self.finish(job, answers);
        }
        Reply::json(batch_object(id, job))
    }

    /// Ends a job: answers its items (the last first), fails the chosen ones.
    fn finish(&self, job: &mut Job, answers: &dyn Fn(&[u8]) -> Reply) {
        let b = &self.behaviour;
        if b.fail_job {
            job.status = "failed";
            return;
        }
        let lines: Vec<Value> = job.input.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let (mut output, mut errors) = (String::new(), String::new());
        let (mut done, mut failed) = (0, 0);
        let half = lines.len().div_ceil(2);
        for (i, line) in lines.iter().enumerate().rev() {
            let id = line["custom_id"].clone();
            if b.expire && i >= half {
                errors.push_str(&format!("{}\n", json!({"id": format!("req-{i}"), "custom_id": id, "response": null, "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}})));
                failed += 1;
                continue;
            }
            if b.fail_every.is_some_and(|n| n > 0 && i % n == 0) {
                errors.push_str(&format!("{}\n", json!({"id": format!("req-{i}"), "custom_id": id, "response": {"status_code": 500, "request_id": "r", "body": {"error": {"message": "The server had an error", "type": "server_error"}}}, "error": null})));
                failed += 1;
                continue;
            }
            let body = line["body"].to_string();
            let reply = answers(body.as_bytes());
            let body: Value = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
            output.push_str(&format!("{}\n", json!({"id": format!("req-{i}"), "custom_id": id, "response": {"status_code": reply.status, "request_id": "r", "body": body}, "error": null})));
            done += 1;
        }
        let mut files = lock(&self.files);
        for (text, slot) in [(output, &mut job.output), (errors, &mut job.error)] {
            if !text.is_empty() {
                let id = self.id("file");
                files.insert(id.clone(), text.into_bytes());
                *slot = Some(id);
            }
        }
        job.counts = (job.counts.0, done, failed);
        job.status = if b.expire { "expired" } else { "completed" };
    }

    fn cancel(&self, id: &str) -> Reply {
        self.counters.cancels.fetch_add(1, Ordering::SeqCst);
        let mut jobs = lock(&self.jobs);
        let Some(job) = jobs.get_mut(id) else {
            return not_found("no such batch");
        };
        if matches!(job.status, "validating" | "in_progress") {
            job.status = "cancelled";
        }
        Reply::json(batch_object(id, job))
    }
}

fn batch_object(id: &str, job: &Job) -> Value {
    let mut out = json!({
        "id": id, "object": "batch", "endpoint": "/v1/chat/completions", "completion_window": "24h",
        "status": job.status, "output_file_id": job.output, "error_file_id": job.error,
        "request_counts": {"total": job.counts.0, "completed": job.counts.1, "failed": job.counts.2},
    });
    if job.status == "failed" {
        out["errors"] = json!({"object": "list", "data": [{"code": "invalid_request", "message": "the input file could not be validated", "line": 1}]});
    }
    out
}

pub(super) fn not_found(message: &str) -> Reply {
    Reply {
        status: 404,
        content_type: "application/json",
        body: json!({"error": {"type": "invalid_request_error", "message": message}}).to_string(),
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The content of the part with a `filename` in a multipart body.
fn multipart_file(body: &[u8]) -> Option<Vec<u8>> {
    let boundary_end = body.windows(2).position(|w| w == b"\r\n")?;
    let boundary = &body[..boundary_end];
    let at = body.windows(9).position(|w| w == b"filename=")?;
    let start = at + body[at..].windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let mut closing = b"\r\n".to_vec();
    closing.extend_from_slice(boundary);
    let end = start
        + body[start..]
            .windows(closing.len())
            .position(|w| w == closing.as_slice())?;
    Some(body[start..end].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(_: &[u8]) -> Reply {
        Reply::json(json!({"choices": [{"message": {"role": "assistant", "content": "ok"}}]}))
    }

    fn upload(api: &BatchApi, lines: &str) -> String {
        let body = format!(
            "--b\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.jsonl\"\r\n\r\n{lines}\r\n--b--\r\n"
        );
        let reply = api
            .reply("POST", "/v1/files", body.as_bytes(), &answer)
            .expect("a route");
        let file: Value = serde_json::from_str(&reply.body).expect("json");
        file["id"].as_str().expect("id").to_owned()
    }

    #[test]
    fn a_job_goes_from_upload_to_results_in_reverse_order_with_failures() {
        let api = BatchApi::new(BatchBehaviour {
            fail_every: Some(2),
            ..BatchBehaviour::default()
        });
        let lines: String = (0..3)
            .map(|i| {
                format!(
                    "{}\n",
                    json!({"custom_id": format!("c{i}"), "method": "POST", "url": "/v1/chat/completions", "body": {}})
                )
            })
            .collect();
        let file = upload(&api, &lines);
        let create = json!({"input_file_id": file, "endpoint": "/v1/chat/completions", "completion_window": "24h"});
        let reply = api
            .reply("POST", "/v1/batches", create.to_string().as_bytes(), &answer)
            .expect("route");
        let batch: Value = serde_json::from_str(&reply.body).expect("json");
        let id = batch["id"].as_str().expect("id").to_owned();
        let poll = |api: &BatchApi| -> Value {
            let r = api
                .reply("GET", &format!("/v1/batches/{id}"), b"", &answer)
                .expect("route");
            serde_json::from_str(&r.body).expect("json")
        };
        assert_eq!(poll(&api)["status"], "in_progress");
        let done = poll(&api);
        assert_eq!(done["status"], "completed");
        assert_eq!(done["request_counts"], json!({"total": 3, "completed": 1, "failed": 2}));
        let out = api
            .reply(
                "GET",
                &format!("/v1/files/{}/content", done["output_file_id"].as_str().expect("out")),
                b"",
                &answer,
            )
            .expect("route");
        assert!(out.body.contains("\"c1\""));
        let err = api
            .reply(
                "GET",
                &format!("/openai/files/{}/content", done["error_file_id"].as_str().expect("err")),
                b"",
                &answer,
            )
            .expect("route");
        let ids: Vec<String> = err
            .body
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("line")["custom_id"].to_string())
            .collect();
        assert_eq!(ids, ["\"c2\"", "\"c0\""], "last first");
        assert_eq!(api.counters.jobs.load(Ordering::SeqCst), 1);
    }
}
