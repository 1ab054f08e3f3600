//! The fake's Anthropic Message Batches API: `POST /v1/messages/batches` with
//! `{requests: [{custom_id, params}]}` (custom ids checked as the real API does, a key and a
//! version header required), polled at `GET …/{id}` (`in_progress`, then `ended` after
//! [`BatchBehaviour::ready_after`]), its results JSONL at the `results_url` it names, last item
//! first, and `POST …/{id}/cancel`. Chosen items are `errored`; an expiring job answers its first
//! half and leaves the rest `expired`; a job that fails validation is refused when created, as
//! the real API refuses a malformed batch.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

use super::batch::{BatchBehaviour, BatchCounters, lock, not_found};
use super::{Call, Reply};

#[derive(Debug)]
struct Job {
    requests: Vec<Value>,
    created: Instant,
    /// `in_progress`, `canceling` or `ended`.
    status: &'static str,
    cancelled: bool,
    results: Option<String>,
    counts: Counts,
}

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    processing: u64,
    succeeded: u64,
    errored: u64,
    canceled: u64,
    expired: u64,
}

/// The Message Batches API's state.
#[derive(Debug, Default)]
pub struct AnthropicBatchApi {
    pub behaviour: BatchBehaviour,
    pub counters: BatchCounters,
    jobs: Mutex<HashMap<String, Job>>,
    next: AtomicU64,
}

/// Whether a custom id is one the API takes: 1 to 64 of `[a-zA-Z0-9_-]`.
pub fn valid_custom_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl AnthropicBatchApi {
    pub fn new(behaviour: BatchBehaviour) -> Self {
        Self {
            behaviour,
            ..Self::default()
        }
    }

    /// The reply to a Message Batches request, or `None` when the call is not one. `answers`
    /// answers one Messages request body as the online API would.
    pub fn reply(&self, call: &Call<'_>, answers: &dyn Fn(&[u8]) -> Reply) -> Option<Reply> {
        let rest = call.path.strip_prefix("/v1/messages/batches")?;
        if (call.header)("x-api-key").is_none() || (call.header)("anthropic-version").is_none() {
            return Some(error(
                401,
                "authentication_error",
                "x-api-key and anthropic-version are required",
            ));
        }
        let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
        let reply = match (call.method, parts.as_slice()) {
            ("POST", []) => self.create(call.body, call.origin),
            ("GET", [id]) => self.poll(id, call.origin, answers),
            ("GET", [id, "results"]) => self.results(id),
            ("POST", [id, "cancel"]) => self.cancel(id, call.origin),
            _ => return None,
        };
        Some(reply)
    }

    fn create(&self, body: &[u8], origin: &str) -> Reply {
        let Ok(request) = serde_json::from_slice::<Value>(body) else {
            return error(400, "invalid_request_error", "not JSON");
        };
        let Some(requests) = request["requests"].as_array().filter(|r| !r.is_empty()) else {
            return error(400, "invalid_request_error", "requests: a non-empty list is required");
        };
        let mut seen = HashSet::new();
        for (i, r) in requests.iter().enumerate() {
            let id = r["custom_id"].as_str().unwrap_or("");
            if !valid_custom_id(id) {
                return error(
                    400,
                    "invalid_request_error",
                    &format!("requests.{i}.custom_id: must match ^[a-zA-Z0-9_-]{{1,64}}$"),
                );
            }
            if !seen.insert(id) {
                return error(
                    400,
                    "invalid_request_error",
                    &format!("requests.{i}.custom_id: duplicate {id}"),
                );
            }
            let p = &r["params"];
            if !p["model"].is_string() || !p["max_tokens"].is_u64() || !p["messages"].is_array() {
                return error(
                    400,
                    "invalid_request_error",
                    &format!("requests.{i}.params: model, max_tokens and messages are required"),
                );
            }
        }
        if self.behaviour.fail_job {
            return error(400, "invalid_request_error", "the batch could not be validated");
        }
        let total = requests.len() as u64;
        self.counters.jobs.fetch_add(1, Ordering::SeqCst);
        self.counters.items.fetch_add(total, Ordering::SeqCst);
        let id = format!("msgbatch_fake{}", self.next.fetch_add(1, Ordering::SeqCst) + 1);
        let job = Job {
            requests: requests.clone(),
            created: Instant::now(),
            status: "in_progress",
            cancelled: false,
            results: None,
            counts: Counts {
                processing: total,
                ..Counts::default()
            },
        };
        let reply = batch_object(&id, &job, origin);
        lock(&self.jobs).insert(id, job);
        Reply::json(reply)
    }

    fn poll(&self, id: &str, origin: &str, answers: &dyn Fn(&[u8]) -> Reply) -> Reply {
        self.counters.polls.fetch_add(1, Ordering::SeqCst);
        let mut jobs = lock(&self.jobs);
        let Some(job) = jobs.get_mut(id) else {
            return not_found("no such message batch");
        };
        let due = job.created.elapsed() >= self.behaviour.ready_after;
        if job.status == "canceling" || (job.status == "in_progress" && due) {
            self.finish(job, answers);
        }
        Reply::json(batch_object(id, job, origin))
    }

    /// Ends a job: answers its items (the last first), fails, expires or cancels the chosen ones.
    fn finish(&self, job: &mut Job, answers: &dyn Fn(&[u8]) -> Reply) {
        let b = &self.behaviour;
        let half = job.requests.len().div_ceil(2);
        let mut out = String::new();
        let mut counts = Counts::default();
        for (i, r) in job.requests.iter().enumerate().rev() {
            let id = &r["custom_id"];
            let result = if job.cancelled {
                counts.canceled += 1;
                json!({"type": "canceled"})
            } else if b.expire && i >= half {
                counts.expired += 1;
                json!({"type": "expired"})
            } else if b.fail_every.is_some_and(|n| n > 0 && i % n == 0) {
                counts.errored += 1;
                json!({"type": "errored", "error": {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}})
            } else {
                let reply = answers(r["params"].to_string().as_bytes());
                let message: Value = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
                counts.succeeded += 1;
                json!({"type": "succeeded", "message": message})
            };
            out.push_str(&format!("{}\n", json!({"custom_id": id, "result": result})));
        }
        job.results = Some(out);
        job.counts = counts;
        job.status = "ended";
    }

    fn results(&self, id: &str) -> Reply {
        self.counters.downloads.fetch_add(1, Ordering::SeqCst);
        match lock(&self.jobs).get(id) {
            Some(Job {
                results: Some(text), ..
            }) => Reply {
                status: 200,
                content_type: "application/binary",
                body: text.clone(),
            },
            Some(_) => error(400, "invalid_request_error", "the batch has not ended"),
            None => not_found("no such message batch"),
        }
    }

    fn cancel(&self, id: &str, origin: &str) -> Reply {
        self.counters.cancels.fetch_add(1, Ordering::SeqCst);
        let mut jobs = lock(&self.jobs);
        let Some(job) = jobs.get_mut(id) else {
            return not_found("no such message batch");
        };
        if job.status == "in_progress" {
            job.status = "canceling";
            job.cancelled = true;
        }
        Reply::json(batch_object(id, job, origin))
    }
}

fn batch_object(id: &str, job: &Job, origin: &str) -> Value {
    let c = job.counts;
    let ended = job.status == "ended";
    json!({
        "id": id, "type": "message_batch", "processing_status": job.status,
        "request_counts": {"processing": c.processing, "succeeded": c.succeeded, "errored": c.errored,
                           "canceled": c.canceled, "expired": c.expired},
        "created_at": "2026-01-01T00:00:00Z", "expires_at": "2026-01-02T00:00:00Z",
        "ended_at": if ended { json!("2026-01-01T01:00:00Z") } else { Value::Null },
        "cancel_initiated_at": if job.cancelled { json!("2026-01-01T00:30:00Z") } else { Value::Null },
        "archived_at": null,
        "results_url": if ended { json!(format!("{origin}/v1/messages/batches/{id}/results")) } else { Value::Null },
    })
}

fn error(status: u16, kind: &str, message: &str) -> Reply {
    Reply {
        status,
        content_type: "application/json",
        body: json!({"type": "error", "error": {"type": kind, "message": message}}).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(_: &[u8]) -> Reply {
        Reply::json(json!({"type": "message", "content": [{"type": "text", "text": "ok"}]}))
    }

    fn call<'a>(
        method: &'a str,
        path: &'a str,
        body: &'a [u8],
        header: &'a dyn Fn(&str) -> Option<String>,
    ) -> Call<'a> {
        Call {
            method,
            path,
            query: "",
            origin: "http://fake",
            header,
            body,
        }
    }

    #[test]
    fn custom_ids_are_checked_as_the_api_does() {
        assert!(valid_custom_id("agentv-0123456789abcdef01234567"));
        assert!(valid_custom_id(&"a".repeat(64)));
        for bad in ["", "has space", "dot.ted", "ü", &"a".repeat(65)] {
            assert!(!valid_custom_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_batch_goes_from_creation_to_results_in_reverse_order_with_failures() {
        let api = AnthropicBatchApi::new(BatchBehaviour {
            fail_every: Some(2),
            ..BatchBehaviour::default()
        });
        let keyed = |name: &str| matches!(name, "x-api-key" | "anthropic-version").then(|| "v".to_owned());
        let none = |_: &str| None;
        let params = json!({"model": "m", "max_tokens": 5, "messages": []});
        let body = json!({"requests": (0..3).map(|i| json!({"custom_id": format!("c{i}"), "params": params})).collect::<Vec<_>>()});
        let body = body.to_string();
        let refused = api.reply(&call("POST", "/v1/messages/batches", body.as_bytes(), &none), &answer);
        assert_eq!(refused.expect("a route").status, 401, "no key");
        let created = api
            .reply(&call("POST", "/v1/messages/batches", body.as_bytes(), &keyed), &answer)
            .expect("a route");
        let batch: Value = serde_json::from_str(&created.body).expect("json");
        assert_eq!(batch["processing_status"], "in_progress");
        let id = batch["id"].as_str().expect("id").to_owned();
        let polled = api
            .reply(
                &call("GET", &format!("/v1/messages/batches/{id}"), b"", &keyed),
                &answer,
            )
            .expect("a route");
        let batch: Value = serde_json::from_str(&polled.body).expect("json");
        assert_eq!(batch["processing_status"], "ended");
        assert_eq!(batch["request_counts"]["errored"], 2);
        assert_eq!(
            batch["results_url"],
            format!("http://fake/v1/messages/batches/{id}/results")
        );
        let results = api
            .reply(
                &call("GET", &format!("/v1/messages/batches/{id}/results"), b"", &keyed),
                &answer,
            )
            .expect("a route");
        let ids: Vec<String> = results
            .body
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("line")["custom_id"].to_string())
            .collect();
        assert_eq!(ids, ["\"c2\"", "\"c1\"", "\"c0\""], "last first");
        let dup = json!({"requests": [{"custom_id": "a", "params": params}, {"custom_id": "a", "params": params}]});
        let dup = api
            .reply(
                &call("POST", "/v1/messages/batches", dup.to_string().as_bytes(), &keyed),
                &answer,
            )
            .expect("a route");
        assert_eq!(dup.status, 400);
        assert_eq!(api.counters.jobs.load(Ordering::SeqCst), 1);
    }
}
