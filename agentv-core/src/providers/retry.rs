//! Retries of provider HTTP calls (D14): exponential backoff with ±25 % jitter, `Retry-After`
//! honoured, never on 401/403.
//!
//! Hand-written rather than taken from a crate because the semantics are specific: the jitter is
//! multiplicative (×0.75–1.25, not additive), a server's `Retry-After` replaces the computed
//! delay, and the attempt count is reported back to the caller.

use std::time::{Duration, SystemTime};

use super::ProviderError;

/// Statuses retried when a target does not configure its own list.
pub const DEFAULT_RETRYABLE: &[u16] = &[408, 429, 500, 502, 503, 504];

/// How a target retries failed HTTP calls.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    pub initial_delay: Duration,
    pub max_delay: Duration,
    pub backoff_factor: f64,
    pub retryable_status_codes: Vec<u16>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            initial_delay: Duration::from_millis(1000),
            max_delay: Duration::from_millis(60_000),
            backoff_factor: 2.0,
            retryable_status_codes: DEFAULT_RETRYABLE.to_vec(),
        }
    }
}

impl RetryPolicy {
    /// Whether `error` is worth another attempt: network errors and listed statuses, never
    /// 401/403. Timeouts are left to the run's own timeout retries.
    pub fn should_retry(&self, error: &ProviderError) -> bool {
        match error {
            ProviderError::Http { status, .. } => {
                !matches!(status, 401 | 403) && self.retryable_status_codes.contains(status)
            }
            ProviderError::Network(_) => true,
            ProviderError::Timeout(_) | ProviderError::Failed(_) => false,
        }
    }

    /// Delay before retry number `retry` (0-based): the server's `Retry-After` when it sent one,
    /// else min(max, initial × factor^retry) × `jitter` (0.75–1.25), capped at `max_delay`.
    pub fn delay(&self, retry: u32, error: &ProviderError, jitter: f64) -> Duration {
        if let ProviderError::Http {
            retry_after: Some(after),
            ..
        } = error
        {
            return (*after).min(self.max_delay);
        }
        let base = self.initial_delay.as_secs_f64() * self.backoff_factor.powi(retry as i32);
        let capped = base.min(self.max_delay.as_secs_f64());
        Duration::from_secs_f64((capped * jitter.clamp(0.75, 1.25)).min(self.max_delay.as_secs_f64()))
    }

    /// Runs `call` until it succeeds, fails for good, or retries run out. Returns the result and
    /// the number of attempts made.
    pub async fn run<T, F, Fut>(&self, mut call: F) -> (Result<T, ProviderError>, u32)
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, ProviderError>>,
    {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match call().await {
                Ok(value) => return (Ok(value), attempt),
                Err(error) if attempt <= self.max_retries && self.should_retry(&error) => {
                    let jitter = rand::random_range(0.75..=1.25);
                    let wait = self.delay(attempt - 1, &error, jitter);
                    // The error's text may echo a credential: log only its kind.
                    let status = match &error {
                        ProviderError::Http { status, .. } => status.to_string(),
                        _ => "network error".to_owned(),
                    };
                    tracing::debug!(attempt, ?wait, %status, "retrying provider call");
                    tokio::time::sleep(wait).await;
                }
                Err(error) => return (Err(error), attempt),
            }
        }
    }
}

/// Parses a `Retry-After` header: delay seconds or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, retry_after: Option<Duration>) -> ProviderError {
        ProviderError::Http {
            status,
            message: String::new(),
            retry_after,
        }
    }

    #[test]
    fn retries_listed_statuses_and_network_errors_only() {
        let p = RetryPolicy::default();
        for (error, want) in [
            (http(429, None), true),
            (http(500, None), true),
            (http(503, None), true),
            (http(400, None), false),
            (http(401, None), false),
            (http(403, None), false),
            (ProviderError::Network("reset".into()), true),
            (ProviderError::Timeout(Duration::from_secs(1)), false),
        ] {
            assert_eq!(p.should_retry(&error), want, "{error}");
        }
        let custom = RetryPolicy {
            retryable_status_codes: vec![401, 418],
            ..RetryPolicy::default()
        };
        assert!(!custom.should_retry(&http(401, None)), "401 is never retried");
        assert!(custom.should_retry(&http(418, None)));
    }

    #[test]
    fn delays_grow_exponentially_with_jitter_and_cap() {
        let p = RetryPolicy::default();
        let e = http(500, None);
        assert_eq!(p.delay(0, &e, 1.0), Duration::from_secs(1));
        assert_eq!(p.delay(3, &e, 1.0), Duration::from_secs(8));
        assert_eq!(p.delay(1, &e, 0.75), Duration::from_millis(1500));
        assert_eq!(p.delay(1, &e, 1.25), Duration::from_millis(2500));
        assert_eq!(p.delay(10, &e, 1.25), Duration::from_secs(60), "capped at max_delay");
        assert_eq!(
            p.delay(0, &http(429, Some(Duration::from_secs(7))), 1.2),
            Duration::from_secs(7)
        );
    }

    #[test]
    fn retry_after_accepts_seconds_and_dates() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO),
            "past dates mean now"
        );
        assert_eq!(parse_retry_after("soon"), None);
    }

    #[tokio::test]
    async fn run_counts_attempts_and_stops_on_permanent_errors() {
        let p = RetryPolicy {
            initial_delay: Duration::from_millis(1),
            ..RetryPolicy::default()
        };
        let mut calls = 0;
        let (result, attempts) = p
            .run(|| {
                calls += 1;
                let n = calls;
                async move { if n < 3 { Err(http(503, None)) } else { Ok(n) } }
            })
            .await;
        assert_eq!((result.ok(), attempts), (Some(3), 3));
        let (result, attempts) = p.run(|| async { Err::<(), _>(http(500, None)) }).await;
        assert_eq!((result.is_err(), attempts), (true, 4), "1 + max_retries attempts");
        let (_, attempts) = p.run(|| async { Err::<(), _>(http(401, None)) }).await;
        assert_eq!(attempts, 1);
    }
}
