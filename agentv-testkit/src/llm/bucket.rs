//! A provider's rate limit as the fake plays it: a token bucket of `burst` requests refilled at
//! `rate` a second. A request that finds a token is answered with OpenAI's rate-limit headers
//! (`x-ratelimit-limit-requests`, `-remaining-requests`, `-reset-requests`: the time until the
//! bucket is full again); one that finds none gets a 429 with `retry-after` (seconds until the
//! next token) and counts as rejected. Requests and rejections after a warm-up are counted apart
//! (a client may be forgiven its first burst, not its steady state).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A token bucket and what it saw.
#[derive(Debug)]
pub struct Bucket {
    rate: f64,
    burst: f64,
    warmup: Duration,
    state: Mutex<State>,
    pub requests: AtomicU64,
    pub rejected: AtomicU64,
    pub late_requests: AtomicU64,
    pub late_rejected: AtomicU64,
}

#[derive(Debug)]
struct State {
    tokens: f64,
    at: Instant,
    first: Option<Instant>,
    last: Option<Instant>,
}

/// The verdict on one request: the headers to send, and whether it was let through.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    pub allowed: bool,
    pub headers: Vec<(&'static str, String)>,
}

impl Bucket {
    /// `rate` requests a second, at most `burst` at once; counts after `warmup` apart.
    pub fn new(rate: f64, burst: u32, warmup: Duration) -> Self {
        Self {
            rate,
            burst: f64::from(burst),
            warmup,
            state: Mutex::new(State {
                tokens: f64::from(burst),
                at: Instant::now(),
                first: None,
                last: None,
            }),
            requests: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            late_requests: AtomicU64::new(0),
            late_rejected: AtomicU64::new(0),
        }
    }

    /// Takes a token for a request arriving now.
    pub fn admit(&self) -> Admission {
        let now = Instant::now();
        let mut s = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let first = *s.first.get_or_insert(now);
        s.last = Some(now);
        s.tokens = (s.tokens + now.duration_since(s.at).as_secs_f64() * self.rate).min(self.burst);
        s.at = now;
        let late = now.duration_since(first) >= self.warmup;
        self.requests.fetch_add(1, Ordering::SeqCst);
        if late {
            self.late_requests.fetch_add(1, Ordering::SeqCst);
        }
        let allowed = s.tokens >= 1.0;
        if allowed {
            s.tokens -= 1.0;
        } else {
            self.rejected.fetch_add(1, Ordering::SeqCst);
            if late {
                self.late_rejected.fetch_add(1, Ordering::SeqCst);
            }
        }
        let remaining = s.tokens.floor();
        let to_full = (self.burst - s.tokens) / self.rate;
        let mut headers = vec![
            ("x-ratelimit-limit-requests", format!("{}", self.burst)),
            ("x-ratelimit-remaining-requests", format!("{remaining}")),
            ("x-ratelimit-reset-requests", format!("{}ms", (to_full * 1000.0).ceil())),
        ];
        if !allowed {
            let next = (1.0 - s.tokens) / self.rate;
            headers.push(("retry-after", format!("{next:.3}")));
        }
        Admission { allowed, headers }
    }

    /// The counts, and the seconds from the first request to the last.
    pub fn to_json(&self) -> Value {
        let n = |c: &AtomicU64| c.load(Ordering::SeqCst);
        let s = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let span = match (s.first, s.last) {
            (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        json!({
            "rate": self.rate,
            "burst": self.burst,
            "requests": n(&self.requests),
            "rejected": n(&self.rejected),
            "late_requests": n(&self.late_requests),
            "late_rejected": n(&self.late_rejected),
            "span_seconds": span,
        })
    }

    /// The shortest time `n` accepted requests can take: the first `burst` at once, the rest
    /// at `rate`.
    pub fn ideal(&self, n: u64) -> Duration {
        Duration::from_secs_f64(((n as f64) - self.burst).max(0.0) / self.rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_lets_a_burst_through_then_rejects_with_retry_after() {
        let b = Bucket::new(10.0, 3, Duration::from_secs(60));
        let verdicts: Vec<bool> = (0..4).map(|_| b.admit().allowed).collect();
        assert_eq!(verdicts, [true, true, true, false]);
        let last = b.admit();
        let header = |name| last.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
        assert_eq!(header("x-ratelimit-remaining-requests").as_deref(), Some("0"));
        let after: f64 = header("retry-after").expect("retry-after").parse().expect("seconds");
        assert!(after > 0.0 && after <= 0.1, "{after}");
        std::thread::sleep(Duration::from_millis(120));
        assert!(b.admit().allowed, "a token came back");
        assert_eq!(b.to_json()["rejected"], 2);
    }
}
