//! The fake's Gemini batch mode: `POST /v1beta/models/{model}:batchGenerateContent` with the
//! requests inline (`input_config.requests.requests[]` of `{request, metadata: {key}}`) or in
//! a JSONL file (`input_config.file_name`) uploaded through the Files API's resumable protocol
//! (`/upload/v1beta/files`); the job `GET /v1beta/batches/{id}` is an operation whose
//! `metadata.state` goes `BATCH_STATE_PENDING`, `…_RUNNING`, then after
//! [`BatchBehaviour::ready_after`] `…_SUCCEEDED` (or `…_EXPIRED` / `…_FAILED`), its answers
//! inline (`inlinedResponses`) or in a responses file (`/download/v1beta/files/…:download`),
//! last first; `POST /v1beta/batches/{id}:cancel`. Chosen items answer an error; a key header is
//! required.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

use super::batch::{BatchBehaviour, BatchCounters, lock, not_found};
use super::{Call, Reply};

#[derive(Debug)]
struct Job {
    model: String,
    /// `(key, request)` in input order.
    items: Vec<(Value, Value)>,
    /// The answers go in a file (the input came in one).
    to_file: bool,
    created: Instant,
    state: &'static str,
    output: Option<Value>,
    counts: (u64, u64, u64),
}

/// The batch mode's state.
#[derive(Debug, Default)]
pub struct GeminiBatchApi {
    pub behaviour: BatchBehaviour,
    pub counters: BatchCounters,
    files: Mutex<HashMap<String, Vec<u8>>>,
    /// Upload sessions started, by upload id: the declared length.
    uploads: Mutex<HashMap<String, usize>>,
    jobs: Mutex<HashMap<String, Job>>,
    next: AtomicU64,
}

/// A reply and the headers it carries (an upload session's URL).
pub type Answer = (Reply, Vec<(&'static str, String)>);

impl GeminiBatchApi {
    pub fn new(behaviour: BatchBehaviour) -> Self {
        Self {
            behaviour,
            ..Self::default()
        }
    }

    fn id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The reply to a batch-mode or Files API request, or `None` when the call is not one.
    /// `answers` answers one generateContent request body as the online API would.
    pub fn reply(&self, call: &Call<'_>, answers: &dyn Fn(&[u8]) -> Reply) -> Option<Answer> {
        let path = call.path;
        let route = if path == "/upload/v1beta/files" {
            Route::Upload
        } else if let Some(file) = path
            .strip_prefix("/download/v1beta/")
            .and_then(|f| f.strip_suffix(":download"))
        {
            Route::Download(file)
        } else if let Some(model) = path
            .strip_prefix("/v1beta/models/")
            .and_then(|m| m.strip_suffix(":batchGenerateContent"))
        {
            Route::Create(model)
        } else if let Some(rest) = path.strip_prefix("/v1beta/batches/") {
            match rest.strip_suffix(":cancel") {
                Some(id) => Route::Cancel(id),
                None => Route::Poll(rest),
            }
        } else {
            return None;
        };
        if (call.header)("x-goog-api-key").is_none() && !matches!(route, Route::Upload) {
            return Some((error(401, "UNAUTHENTICATED", "API key required"), vec![]));
        }
        let plain = |reply| Some((reply, vec![]));
        match (call.method, route) {
            ("POST", Route::Upload) => Some(self.upload(call)),
            ("GET", Route::Download(file)) if call.query.contains("alt=media") => plain(self.download(file)),
            ("POST", Route::Create(model)) => plain(self.create(model, call.body)),
            ("GET", Route::Poll(id)) => plain(self.poll(id, answers)),
            ("POST", Route::Cancel(id)) => plain(self.cancel(id)),
            _ => None,
        }
    }

    /// The resumable upload: `start` opens a session (its URL in `x-goog-upload-url`), then
    /// `upload, finalize` to that URL sends the bytes and answers the file.
    fn upload(&self, call: &Call<'_>) -> Answer {
        let command = (call.header)("x-goog-upload-command").unwrap_or_default();
        if command == "start" {
            if (call.header)("x-goog-api-key").is_none() {
                return (error(401, "UNAUTHENTICATED", "API key required"), vec![]);
            }
            if (call.header)("x-goog-upload-protocol").as_deref() != Some("resumable") {
                return (
                    error(400, "INVALID_ARGUMENT", "x-goog-upload-protocol must be resumable"),
                    vec![],
                );
            }
            let Some(length) = (call.header)("x-goog-upload-header-content-length").and_then(|l| l.parse().ok()) else {
                return (
                    error(
                        400,
                        "INVALID_ARGUMENT",
                        "x-goog-upload-header-content-length is required",
                    ),
                    vec![],
                );
            };
            let session = format!("up{}", self.id());
            lock(&self.uploads).insert(session.clone(), length);
            let url = format!(
                "{}/upload/v1beta/files?upload_id={session}&upload_protocol=resumable",
                call.origin
            );
            return (Reply::json(json!({})), vec![("x-goog-upload-url", url)]);
        }
        if command != "upload, finalize" {
            return (error(400, "INVALID_ARGUMENT", "unknown x-goog-upload-command"), vec![]);
        }
        let session = call
            .query
            .split('&')
            .find_map(|kv| kv.strip_prefix("upload_id="))
            .unwrap_or("");
        let Some(length) = lock(&self.uploads).remove(session) else {
            return (not_found("no such upload session"), vec![]);
        };
        if length != call.body.len() {
            return (
                error(400, "INVALID_ARGUMENT", "the bytes differ from the declared length"),
                vec![],
            );
        }
        self.counters.files.fetch_add(1, Ordering::SeqCst);
        let name = format!("files/in{}", self.id());
        lock(&self.files).insert(name.clone(), call.body.to_vec());
        let file = json!({"file": {"name": name, "mimeType": "application/jsonl", "sizeBytes": length.to_string(), "state": "ACTIVE"}});
        (Reply::json(file), vec![])
    }

    fn download(&self, file: &str) -> Reply {
        self.counters.downloads.fetch_add(1, Ordering::SeqCst);
        match lock(&self.files).get(file) {
            Some(bytes) => Reply {
                status: 200,
                content_type: "application/jsonl",
                body: String::from_utf8_lossy(bytes).into_owned(),
            },
            None => not_found("no such file"),
        }
    }

    fn create(&self, model: &str, body: &[u8]) -> Reply {
        let Ok(request) = serde_json::from_slice::<Value>(body) else {
            return error(400, "INVALID_ARGUMENT", "not JSON");
        };
        let batch = &request["batch"];
        if !batch["display_name"].is_string() {
            return error(400, "INVALID_ARGUMENT", "batch.display_name is required");
        }
        let config = &batch["input_config"];
        let (items, to_file) = if let Some(file) = config["file_name"].as_str() {
            let Some(bytes) = lock(&self.files).get(file).cloned() else {
                return not_found("no such input file");
            };
            let lines = String::from_utf8_lossy(&bytes)
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str::<Value>(l).map(|v| (v["key"].clone(), v["request"].clone())))
                .collect::<Result<Vec<_>, _>>();
            let Ok(lines) = lines else {
                return error(400, "INVALID_ARGUMENT", "the input file holds a line that is not JSON");
            };
            (lines, true)
        } else if let Some(requests) = config.pointer("/requests/requests").and_then(Value::as_array) {
            let items = requests
                .iter()
                .map(|r| {
                    (
                        r.pointer("/metadata/key").cloned().unwrap_or(Value::Null),
                        r["request"].clone(),
                    )
                })
                .collect();
            (items, false)
        } else {
            return error(
                400,
                "INVALID_ARGUMENT",
                "batch.input_config needs requests or file_name",
            );
        };
        if items.is_empty() || items.iter().any(|(k, r)| !k.is_string() || !r["contents"].is_array()) {
            return error(400, "INVALID_ARGUMENT", "each request needs a key and contents");
        }
        let total = items.len() as u64;
        self.counters.jobs.fetch_add(1, Ordering::SeqCst);
        self.counters.items.fetch_add(total, Ordering::SeqCst);
        let name = format!("batches/fake{}", self.id());
        let job = Job {
            model: model.to_owned(),
            items,
            to_file,
            created: Instant::now(),
            state: "BATCH_STATE_PENDING",
            output: None,
            counts: (total, 0, 0),
        };
        let reply = operation(&name, &job);
        lock(&self.jobs).insert(name, job);
        Reply::json(reply)
    }

    fn poll(&self, id: &str, answers: &dyn Fn(&[u8]) -> Reply) -> Reply {
        self.counters.polls.fetch_add(1, Ordering::SeqCst);
        let name = format!("batches/{id}");
        let mut jobs = lock(&self.jobs);
        let Some(job) = jobs.get_mut(&name) else {
            return not_found("no such batch");
        };
        if job.state == "BATCH_STATE_PENDING" {
            job.state = "BATCH_STATE_RUNNING";
        } else if job.state == "BATCH_STATE_RUNNING" && job.created.elapsed() >= self.behaviour.ready_after {
            self.finish(job, answers);
        }
        Reply::json(operation(&name, job))
    }

    /// Ends a job: answers its items (the last first) inline or in a file, fails the chosen ones.
    fn finish(&self, job: &mut Job, answers: &dyn Fn(&[u8]) -> Reply) {
        let b = &self.behaviour;
        if b.fail_job || b.expire {
            job.state = if b.fail_job {
                "BATCH_STATE_FAILED"
            } else {
                "BATCH_STATE_EXPIRED"
            };
            return;
        }
        let (mut done, mut failed) = (0, 0);
        let mut answered = Vec::new();
        for (i, (key, request)) in job.items.iter().enumerate().rev() {
            let outcome = if b.fail_every.is_some_and(|n| n > 0 && i % n == 0) {
                failed += 1;
                (
                    "error",
                    json!({"code": 500, "message": "Internal error encountered.", "status": "INTERNAL"}),
                )
            } else {
                done += 1;
                let reply = answers(request.to_string().as_bytes());
                ("response", serde_json::from_str(&reply.body).unwrap_or(Value::Null))
            };
            answered.push((key.clone(), outcome));
        }
        let output = if job.to_file {
            let text: String = answered
                .iter()
                .map(|(key, (field, value))| format!("{}\n", json!({"key": key, *field: value})))
                .collect();
            let name = format!("files/out{}", self.id());
            lock(&self.files).insert(name.clone(), text.into_bytes());
            json!({"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",
                   "responsesFile": name})
        } else {
            let inline: Vec<Value> = answered
                .iter()
                .map(|(key, (field, value))| json!({"metadata": {"key": key}, *field: value}))
                .collect();
            json!({"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",
                   "inlinedResponses": {"inlinedResponses": inline}})
        };
        job.output = Some(output);
        job.counts = (job.counts.0, done, failed);
        job.state = "BATCH_STATE_SUCCEEDED";
    }

    fn cancel(&self, id: &str) -> Reply {
        self.counters.cancels.fetch_add(1, Ordering::SeqCst);
        let mut jobs = lock(&self.jobs);
        let Some(job) = jobs.get_mut(&format!("batches/{id}")) else {
            return not_found("no such batch");
        };
        if matches!(job.state, "BATCH_STATE_PENDING" | "BATCH_STATE_RUNNING") {
            job.state = "BATCH_STATE_CANCELLED";
        }
        Reply::json(json!({}))
    }
}

enum Route<'a> {
    Upload,
    Download(&'a str),
    Create(&'a str),
    Poll(&'a str),
    Cancel(&'a str),
}

/// The job as its long-running operation: the batch in `metadata`, its output in `response`
/// once it succeeded, an `error` when it failed or expired.
fn operation(name: &str, job: &Job) -> Value {
    let (total, done, failed) = job.counts;
    let finished = !matches!(job.state, "BATCH_STATE_PENDING" | "BATCH_STATE_RUNNING");
    let mut metadata = json!({
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
        "name": name, "model": format!("models/{}", job.model), "displayName": "batch",
        "state": job.state,
        "batchStats": {"requestCount": total.to_string(), "successfulRequestCount": done.to_string(),
                       "failedRequestCount": failed.to_string(),
                       "pendingRequestCount": (total - done - failed).to_string()},
    });
    let mut out = json!({"name": name, "done": finished});
    if let Some(output) = &job.output {
        metadata["output"] = output.clone();
        out["response"] = output.clone();
    }
    out["metadata"] = metadata;
    match job.state {
        "BATCH_STATE_FAILED" => {
            out["error"] = json!({"code": 3, "message": "the batch's input could not be validated"})
        }
        "BATCH_STATE_EXPIRED" => {
            out["error"] = json!({"code": 4, "message": "the batch expired before it was processed"})
        }
        _ => {}
    }
    out
}

fn error(status: u16, kind: &str, message: &str) -> Reply {
    Reply {
        status,
        content_type: "application/json",
        body: json!({"error": {"code": status, "message": message, "status": kind}}).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(_: &[u8]) -> Reply {
        Reply::json(json!({"candidates": [{"content": {"parts": [{"text": "ok"}]}}]}))
    }

    fn keyed(name: &str) -> Option<String> {
        (name == "x-goog-api-key").then(|| "k".to_owned())
    }

    fn send(api: &GeminiBatchApi, method: &str, path: &str, body: &Value) -> Value {
        let body = body.to_string();
        let call = Call {
            method,
            path,
            query: "alt=media",
            origin: "http://fake",
            header: &keyed,
            body: body.as_bytes(),
        };
        let (reply, _) = api.reply(&call, &answer).expect("a route");
        serde_json::from_str(&reply.body).unwrap_or(Value::Null)
    }

    #[test]
    fn an_inline_job_goes_from_pending_to_keyed_answers_in_reverse_order_with_failures() {
        let api = GeminiBatchApi::new(BatchBehaviour {
            fail_every: Some(2),
            ..BatchBehaviour::default()
        });
        let requests: Vec<Value> = (0..3)
            .map(|i| json!({"request": {"contents": [{"parts": [{"text": "q"}]}]}, "metadata": {"key": format!("k{i}")}}))
            .collect();
        let create = json!({"batch": {"display_name": "d", "input_config": {"requests": {"requests": requests}}}});
        let op = send(
            &api,
            "POST",
            "/v1beta/models/gemini-2.5-flash:batchGenerateContent",
            &create,
        );
        assert_eq!(op["metadata"]["state"], "BATCH_STATE_PENDING");
        let name = op["name"].as_str().expect("name").to_owned();
        let path = format!("/v1beta/{name}");
        assert_eq!(
            send(&api, "GET", &path, &Value::Null)["metadata"]["state"],
            "BATCH_STATE_RUNNING"
        );
        let done = send(&api, "GET", &path, &Value::Null);
        assert_eq!(done["metadata"]["state"], "BATCH_STATE_SUCCEEDED");
        assert_eq!(done["metadata"]["batchStats"]["failedRequestCount"], "2");
        let keys: Vec<&Value> = done["response"]["inlinedResponses"]["inlinedResponses"]
            .as_array()
            .expect("inline")
            .iter()
            .map(|r| &r["metadata"]["key"])
            .collect();
        assert_eq!(keys, [&json!("k2"), &json!("k1"), &json!("k0")], "last first");
        assert!(done["response"]["inlinedResponses"]["inlinedResponses"][0]["error"].is_object());
        let call = Call {
            method: "GET",
            path: &path,
            query: "",
            origin: "http://fake",
            header: &|_| None,
            body: b"",
        };
        assert_eq!(api.reply(&call, &answer).expect("a route").0.status, 401, "no key");
    }
}
