//! Retries of provider HTTP calls (`docs/architecture.md#retries`): exponential backoff with ±25 %
//! jitter, `Retry-After` honoured, never on 401/403.
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
            // Timeouts are retried by the run; everything else would fail the same way again.
            ProviderError::Timeout(_)
            | ProviderError::Unreachable(_)
            | ProviderError::Setup(_)
            | ProviderError::Unsupported(_)
            | ProviderError::Unhealthy(_)
            | ProviderError::Workspace(_)
            | ProviderError::Io { .. }
            | ProviderError::Spawn(_)
            | ProviderError::Exited { .. }
            | ProviderError::Malformed { .. }
            | ProviderError::Reported(_)
            | ProviderError::Transform(_)
            | ProviderError::Unanswered(_)
            | ProviderError::BatchItem { .. }
            | ProviderError::InStep { .. }
            | ProviderError::Internal(_) => false,
        }
    }

    /// Delay before retry number `retry` (0-based): the server's `Retry-After` when it sent one,
    /// else min(max, initial × factor^retry) × `jitter` (0.75–1.25). Every delay, the server's
    /// included, is capped at `max_delay`: a server (or a typo in targets.yaml) must not stall or
    /// crash a run.
    pub fn delay(&self, retry: u32, error: &ProviderError, jitter: f64) -> Duration {
        if let ProviderError::Http {
            retry_after: Some(after),
            ..
        } = error
        {
            return (*after).min(self.max_delay);
        }
        let exponent = i32::try_from(retry).unwrap_or(i32::MAX);
        let base = self.initial_delay.as_secs_f64() * self.backoff_factor.powi(exponent);
        let capped = capped_secs(base, self.max_delay).as_secs_f64();
        capped_secs(capped * jitter.clamp(0.75, 1.25), self.max_delay)
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

/// A request that got no HTTP answer as a provider error, by the one network-error rule
/// ([`crate::http::classify`]): a timeout; a network error worth retrying; or one that fails at
/// once (an invalid URL, TLS, an unknown host), which [`RetryPolicy::should_retry`] never retries.
pub fn transport_error(error: reqwest::Error, timeout: Option<Duration>) -> ProviderError {
    match crate::http::classify(error) {
        None => ProviderError::Timeout(timeout.unwrap_or_default()),
        Some((crate::http::Failure::Transient, message)) => ProviderError::Network(message),
        Some((crate::http::Failure::Permanent, message)) => ProviderError::Unreachable(message),
    }
}

/// Parses a `Retry-After` header: delay seconds or an HTTP date. A value too large for a
/// `Duration` (`1e30`, a date in the year 9999) means "very long", which the policy caps; a
/// negative, NaN or unreadable one is ignored (the computed backoff applies).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs >= 0.0).then(|| capped_secs(secs, Duration::MAX));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// `secs` as a duration no longer than `cap`; NaN and negative values are zero. Never panics,
/// unlike `Duration::from_secs_f64`.
pub fn capped_secs(secs: f64, cap: Duration) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(secs).map_or(cap, |d| d.min(cap))
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

    #[test]
    fn retry_after_huge_value_is_capped() {
        let p = RetryPolicy::default();
        let cases = [
            ("1e30", Some(Duration::MAX)),
            ("1e400", Some(Duration::MAX)),
            ("inf", Some(Duration::MAX)),
            ("18446744073709551616", Some(Duration::MAX)),
            ("Fri, 31 Dec 9999 23:59:59 GMT", None),
            ("-1", None),
            ("-inf", None),
            ("NaN", None),
            ("", None),
        ];
        for (header, parsed) in cases {
            let after = parse_retry_after(header);
            if let Some(want) = parsed {
                assert_eq!(after, Some(want), "{header}");
            }
            let wait = p.delay(0, &http(429, after), 1.0);
            assert!(wait <= p.max_delay, "{header}: waits {wait:?}");
        }
        assert!(
            parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT").is_some_and(|d| d > Duration::from_secs(86_400)),
            "a far date is a long wait, capped by the policy"
        );
    }

    #[test]
    fn computed_delays_never_overflow() {
        let wild = RetryPolicy {
            initial_delay: Duration::MAX,
            max_delay: Duration::MAX,
            backoff_factor: f64::MAX,
            ..RetryPolicy::default()
        };
        for retry in [0, 1, 100, u32::MAX] {
            assert_eq!(wild.delay(retry, &http(500, None), 1.25), Duration::MAX);
        }
        let zero = RetryPolicy {
            initial_delay: Duration::ZERO,
            backoff_factor: f64::INFINITY,
            ..RetryPolicy::default()
        };
        assert_eq!(
            zero.delay(3, &http(500, None), 1.0),
            Duration::ZERO,
            "0 × inf is NaN, read as 0"
        );
        for (secs, want) in [
            (f64::NAN, Duration::ZERO),
            (-3.0, Duration::ZERO),
            (1e30, Duration::from_secs(60)),
            (2.5, Duration::from_millis(2500)),
        ] {
            assert_eq!(capped_secs(secs, Duration::from_secs(60)), want, "{secs}");
        }
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

    /// The one network-error rule reaches the retry policy: a bad port fails at once, a refused
    /// connection is retried.
    #[tokio::test]
    async fn configuration_errors_are_not_retried_and_refused_connections_are() {
        let client = crate::http::client();
        let bad_port = client
            .get("http://127.0.0.1:99999/v1")
            .send()
            .await
            .expect_err("bad port");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let refused = client
            .get(format!("http://{addr}/v1"))
            .send()
            .await
            .expect_err("refused");
        let p = RetryPolicy::default();
        let bad_port = transport_error(bad_port, None);
        assert!(!p.should_retry(&bad_port), "{bad_port}");
        assert!(
            bad_port
                .to_string()
                .contains("not retried: request: the request is invalid (check the URL)"),
            "{bad_port}"
        );
        let refused = transport_error(refused, None);
        assert!(p.should_retry(&refused), "{refused}");
    }
}
