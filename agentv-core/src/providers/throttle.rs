//! Adaptive concurrency of one LLM target (`docs/running.md#rate-limits`): how many HTTP
//! requests may be in flight at once, learnt from the provider's answers.
//!
//! The window starts at `--workers`, is halved when the provider pushes back (a 429 or 503, or
//! rate-limit headers saying the budget is nearly spent) and grows by one per window's worth of
//! successes (AIMD), never above `--workers` nor below 1. Only requests sent after the last cut
//! can cut again, so one burst of rejections counts as one cut. A `retry-after`, or a budget at
//! its end with a known reset time, holds every new request of the target until then. `max_rps`
//! and `max_tpm` are hard ceilings kept locally, whatever the provider says.
//!
//! Time spent waiting for a slot is not the case's: [`within`] bounds a call by the run's
//! `--timeout` without counting the waits made inside it.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use reqwest::header::HeaderMap;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The share of a provider's budget below which it counts as nearly spent.
const NEARLY_SPENT: f64 = 0.05;
/// The longest a provider's `retry-after` or reset time holds a target.
const LONGEST_HOLD: Duration = Duration::from_secs(60);

/// The adaptive limit of one target; shared by every call to it (cases and judges).
#[derive(Debug)]
pub struct Throttle {
    state: Mutex<State>,
    freed: Notify,
    max_rps: Option<f64>,
    max_tpm: Option<f64>,
    /// `adaptive_concurrency: false`: the window stays at `--workers` whatever the provider
    /// answers (the ceilings still hold).
    adaptive: bool,
    /// The longest hold: the target's longest retry delay (`max_delay_ms`), at most 60 s. A
    /// provider must not stall a target longer than its own retries would wait.
    max_hold: Duration,
}

#[derive(Debug)]
struct State {
    /// `--workers`: the window never grows past it.
    ceiling: usize,
    window: f64,
    in_flight: usize,
    /// Counts the cuts; a request remembers the epoch it was sent in.
    epoch: u64,
    /// No new request before this (a `retry-after`, a spent budget's reset).
    hold_until: Option<Instant>,
    /// `max_rps`: the earliest start of the next request.
    next_start: Option<Instant>,
    /// `max_tpm`: tokens the minute still allows (refilled continuously, negative when a
    /// large answer overdrew it), and when it was last refilled.
    tokens: f64,
    tokens_at: Instant,
    /// Replies that were 429 or 503.
    rejected: u64,
    /// Times the window was cut.
    cuts: u64,
    /// Requests sent.
    sent: u64,
}

/// What a throttle saw over the run, for the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct ThrottleStats {
    /// Requests sent.
    pub sent: u64,
    /// Replies that were 429 or 503.
    pub rejected: u64,
    /// Times the window was cut.
    pub cuts: u64,
    /// The window at the end.
    pub settled: usize,
    /// `--workers`.
    pub ceiling: usize,
}

/// What one reply said about the provider's budget.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Signal {
    /// The reply was a 429 or 503.
    pub rejected: bool,
    /// Rate-limit headers said the budget is nearly spent.
    pub nearly_spent: bool,
    /// Hold new requests this long (`retry-after`, or the reset of a spent budget).
    pub hold: Option<Duration>,
    /// Tokens the request used (for `max_tpm`).
    pub tokens: Option<u64>,
}

impl Default for Throttle {
    fn default() -> Self {
        Self::new(None, None)
    }
}

impl Throttle {
    /// A throttle with these hard ceilings; its window opens at [`Throttle::start`].
    pub fn new(max_rps: Option<f64>, max_tpm: Option<f64>) -> Self {
        let now = Instant::now();
        Self {
            state: Mutex::new(State {
                ceiling: usize::MAX,
                window: f64::MAX,
                in_flight: 0,
                epoch: 0,
                hold_until: None,
                next_start: None,
                tokens: max_tpm.unwrap_or(0.0),
                tokens_at: now,
                rejected: 0,
                cuts: 0,
                sent: 0,
            }),
            freed: Notify::new(),
            max_rps: max_rps.filter(|r| r.is_finite() && *r > 0.0),
            max_tpm: max_tpm.filter(|t| t.is_finite() && *t > 0.0),
            adaptive: true,
            max_hold: LONGEST_HOLD,
        }
    }

    /// The same throttle holding a target at most `max_hold` (its retries' longest delay).
    pub fn max_hold(mut self, max_hold: Duration) -> Self {
        self.max_hold = max_hold.min(LONGEST_HOLD);
        self
    }

    /// The same throttle with a fixed window (`adaptive_concurrency: false`).
    pub fn fixed(mut self) -> Self {
        self.adaptive = false;
        self
    }

    /// Opens the window at `workers` (the run's `--workers`), its ceiling.
    pub fn start(&self, workers: usize) {
        let mut s = self.lock();
        s.ceiling = workers.max(1);
        s.window = s.ceiling as f64;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the throttle saw.
    pub fn stats(&self) -> ThrottleStats {
        let s = self.lock();
        ThrottleStats {
            sent: s.sent,
            rejected: s.rejected,
            cuts: s.cuts,
            settled: s.limit(),
            ceiling: s.ceiling.min(usize::MAX / 2),
        }
    }

    /// Waits for a slot; the wait is not counted against the call's timeout ([`within`]).
    pub async fn acquire(self: &Arc<Self>) -> Permit {
        // Counted from the first wait on, so the deadline of [`within`] moves while it lasts.
        let mut waiting: Option<WaitGuard> = None;
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            let until = {
                let mut s = self.lock();
                match self.admit(&mut s, Instant::now()) {
                    Ok(epoch) => {
                        return Permit {
                            throttle: self.clone(),
                            epoch,
                            done: false,
                        };
                    }
                    Err(until) => until,
                }
            };
            if waiting.is_none() {
                waiting = Some(WaitGuard::begin());
            }
            match until {
                Some(at) => {
                    tokio::select! {
                        _ = &mut freed => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => freed.await,
            }
        }
    }

    /// Takes a slot now, or says until when to wait (`None`: until a slot frees).
    fn admit(&self, s: &mut State, now: Instant) -> Result<u64, Option<Instant>> {
        if let Some(at) = s.hold_until.filter(|at| *at > now) {
            return Err(Some(at));
        }
        if let Some(at) = s.next_start.filter(|at| *at > now) {
            return Err(Some(at));
        }
        if let Some(tpm) = self.max_tpm {
            let minutes = now.saturating_duration_since(s.tokens_at).as_secs_f64() / 60.0;
            s.tokens = (s.tokens + minutes * tpm).min(tpm);
            s.tokens_at = now;
            if s.tokens < 1.0 {
                let wait = (1.0 - s.tokens) / tpm * 60.0;
                return Err(Some(now + Duration::from_secs_f64(wait.min(60.0))));
            }
        }
        if s.in_flight >= s.limit() {
            return Err(None);
        }
        if let Some(rps) = self.max_rps {
            let base = s.next_start.map_or(now, |at| at.max(now));
            s.next_start = Some(base + Duration::from_secs_f64(1.0 / rps));
        }
        s.in_flight += 1;
        s.sent += 1;
        Ok(s.epoch)
    }
}

impl State {
    fn limit(&self) -> usize {
        (self.window.floor() as usize).clamp(1, self.ceiling)
    }

    fn hold(&mut self, wait: Duration, now: Instant) {
        let until = now + wait.min(LONGEST_HOLD);
        self.hold_until = Some(self.hold_until.map_or(until, |at| at.max(until)));
    }
}

/// A slot of a throttle; tell it how the request went with [`Permit::finish`]. Dropped
/// unfinished (a network error, a cancelled call), it frees the slot and changes nothing else.
#[derive(Debug)]
pub struct Permit {
    throttle: Arc<Throttle>,
    epoch: u64,
    done: bool,
}

impl Permit {
    /// Frees the slot and adapts the window to what the reply said.
    pub fn finish(mut self, signal: Signal) {
        self.done = true;
        let t = &self.throttle;
        let now = Instant::now();
        {
            let mut s = t.lock();
            s.in_flight = s.in_flight.saturating_sub(1);
            if signal.rejected {
                s.rejected += 1;
            }
            if !t.adaptive {
                // Counted, never acted on.
            } else if signal.rejected || signal.nearly_spent {
                // Requests sent before the last cut report the old congestion: one cut per burst.
                if self.epoch == s.epoch {
                    s.window = (s.limit() as f64 / 2.0).max(1.0);
                    s.epoch += 1;
                    s.cuts += 1;
                }
            } else {
                let limit = s.limit() as f64;
                s.window = (limit.max(s.window) + 1.0 / limit).min(s.ceiling as f64);
            }
            if let Some(wait) = signal.hold.filter(|_| t.adaptive) {
                s.hold(wait.min(t.max_hold), now);
            }
            if let (Some(_), Some(tokens)) = (t.max_tpm, signal.tokens) {
                s.tokens -= tokens as f64;
            }
        }
        t.freed.notify_waiters();
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.done {
            let mut s = self.throttle.lock();
            s.in_flight = s.in_flight.saturating_sub(1);
            drop(s);
            self.throttle.freed.notify_waiters();
        }
    }
}

impl Signal {
    /// What a reply with `status` and `headers` says: OpenAI's and Azure's
    /// `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, Anthropic's
    /// `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`,
    /// and `retry-after` (also `retry-after-ms`).
    pub fn from_reply(status: u16, headers: &HeaderMap) -> Self {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let rejected = matches!(status, 429 | 503);
        let mut hold = text("retry-after-ms")
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|ms| super::retry::capped_secs(ms / 1000.0, LONGEST_HOLD))
            .or_else(|| text("retry-after").and_then(super::retry::parse_retry_after));
        let mut nearly_spent = false;
        let budgets = [
            (
                "x-ratelimit-limit-requests",
                "x-ratelimit-remaining-requests",
                "x-ratelimit-reset-requests",
            ),
            (
                "x-ratelimit-limit-tokens",
                "x-ratelimit-remaining-tokens",
                "x-ratelimit-reset-tokens",
            ),
            (
                "anthropic-ratelimit-requests-limit",
                "anthropic-ratelimit-requests-remaining",
                "anthropic-ratelimit-requests-reset",
            ),
            (
                "anthropic-ratelimit-tokens-limit",
                "anthropic-ratelimit-tokens-remaining",
                "anthropic-ratelimit-tokens-reset",
            ),
            (
                "anthropic-ratelimit-input-tokens-limit",
                "anthropic-ratelimit-input-tokens-remaining",
                "anthropic-ratelimit-input-tokens-reset",
            ),
            (
                "anthropic-ratelimit-output-tokens-limit",
                "anthropic-ratelimit-output-tokens-remaining",
                "anthropic-ratelimit-output-tokens-reset",
            ),
        ];
        for (limit, remaining, reset) in budgets {
            let number = |name| text(name).and_then(|v| v.trim().parse::<f64>().ok());
            let (Some(limit), Some(remaining)) = (number(limit), number(remaining)) else {
                continue;
            };
            if limit <= 0.0 || remaining > (limit * NEARLY_SPENT).max(1.0) {
                continue;
            }
            nearly_spent = true;
            // Until one more request's worth is back: the reset is when the whole budget is,
            // and it comes back evenly.
            if let Some(full) = text(reset).and_then(parse_reset) {
                let missing = (limit - remaining).max(1.0);
                let wait = super::retry::capped_secs(full.as_secs_f64() / missing, LONGEST_HOLD);
                hold = Some(hold.map_or(wait, |h| h.max(wait)));
            }
        }
        Self {
            rejected,
            nearly_spent,
            hold,
            tokens: None,
        }
    }
}

/// A reset time: OpenAI writes a duration (`1s`, `6m0s`, `20ms`, `1h2m3.5s`), Anthropic an
/// RFC 3339 time.
pub fn parse_reset(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Ok(at) = text.parse::<jiff::Timestamp>() {
        let secs = at.duration_since(jiff::Timestamp::now()).as_secs_f64();
        return Some(super::retry::capped_secs(secs, LONGEST_HOLD));
    }
    let mut total = 0.0;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" | "" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            "ns" => 0.000_000_001,
            _ => return None,
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    Some(super::retry::capped_secs(total, LONGEST_HOLD))
}

/// Time a call spent waiting for slots, the wait in progress included.
#[derive(Debug, Default)]
struct Waits {
    state: Mutex<WaitState>,
}

#[derive(Debug, Default)]
struct WaitState {
    /// Waits that ended.
    total: Duration,
    /// Waits in progress (a call may wait for two throttles: its target's and a judge's).
    active: u32,
    /// When the oldest wait in progress began.
    since: Option<Instant>,
}

impl Waits {
    fn lock(&self) -> MutexGuard<'_, WaitState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn total(&self, now: Instant) -> Duration {
        let s = self.lock();
        let current = s.since.map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
        s.total.saturating_add(current)
    }
}

/// Marks a wait of the current call; the wait ends when it is dropped.
struct WaitGuard(Option<Arc<Waits>>);

impl WaitGuard {
    fn begin() -> Self {
        let waits = WAITS.try_with(Arc::clone).ok();
        if let Some(w) = &waits {
            let mut s = w.lock();
            s.active += 1;
            s.since.get_or_insert_with(Instant::now);
        }
        Self(waits)
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        if let Some(w) = &self.0 {
            let mut s = w.lock();
            s.active = s.active.saturating_sub(1);
            if s.active == 0
                && let Some(at) = s.since.take()
            {
                s.total = s.total.saturating_add(at.elapsed());
            }
        }
    }
}

tokio::task_local! {
    static WAITS: Arc<Waits>;
}

/// Runs `call` within `timeout`, not counting the time it waited for throttle slots: `None`
/// when time ran out.
pub async fn within<F: Future>(timeout: Duration, call: F) -> Option<F::Output> {
    let waits = Arc::new(Waits::default());
    let call = WAITS.scope(waits.clone(), call);
    tokio::pin!(call);
    let started = Instant::now();
    loop {
        let now = Instant::now();
        let Some(deadline) = started.checked_add(timeout.saturating_add(waits.total(now))) else {
            return Some(call.await);
        };
        if deadline <= now {
            return None;
        }
        tokio::select! {
            out = &mut call => return Some(out),
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(HeaderName::from_static(k), HeaderValue::from_str(v).expect("value"));
        }
        h
    }

    #[test]
    fn reset_times_in_both_forms_are_read() {
        for (text, want) in [
            ("1s", Some(1000)),
            ("6m0s", Some(60_000)),
            ("20ms", Some(20)),
            ("1m30.5s", Some(60_000)),
            ("0.5s", Some(500)),
            ("2", Some(2000)),
            ("soon", None),
            ("", None),
            ("1x", None),
        ] {
            assert_eq!(parse_reset(text).map(|d| d.as_millis()), want, "{text}");
        }
        let past = parse_reset("2020-01-01T00:00:00Z").expect("a time");
        assert_eq!(past, Duration::ZERO, "a reset in the past means now");
    }

    #[test]
    fn rate_limit_headers_say_when_the_budget_is_nearly_spent() {
        // Status, headers, then: rejected, nearly spent, hold in ms.
        type Row<'a> = (u16, &'a [(&'static str, &'a str)], bool, bool, Option<u128>);
        let table: &[Row<'_>] = &[
            (200, &[], false, false, None),
            (429, &[("retry-after", "2")], true, false, Some(2000)),
            (503, &[], true, false, None),
            (200, &[("retry-after-ms", "250")], false, false, Some(250)),
            (
                200,
                &[
                    ("x-ratelimit-limit-requests", "100"),
                    ("x-ratelimit-remaining-requests", "50"),
                ],
                false,
                false,
                None,
            ),
            (
                200,
                &[
                    ("x-ratelimit-limit-requests", "20"),
                    ("x-ratelimit-remaining-requests", "1"),
                    ("x-ratelimit-reset-requests", "950ms"),
                ],
                false,
                true,
                Some(50),
            ),
            (
                200,
                &[
                    ("x-ratelimit-limit-tokens", "10000"),
                    ("x-ratelimit-remaining-tokens", "400"),
                ],
                false,
                true,
                None,
            ),
            (
                200,
                &[
                    ("anthropic-ratelimit-requests-limit", "50"),
                    ("anthropic-ratelimit-requests-remaining", "0"),
                ],
                false,
                true,
                None,
            ),
            (
                200,
                &[
                    ("anthropic-ratelimit-input-tokens-limit", "1000"),
                    ("anthropic-ratelimit-input-tokens-remaining", "999"),
                ],
                false,
                false,
                None,
            ),
            (
                200,
                &[
                    ("x-ratelimit-limit-requests", "junk"),
                    ("x-ratelimit-remaining-requests", "0"),
                ],
                false,
                false,
                None,
            ),
        ];
        for (status, pairs, rejected, nearly_spent, hold) in table {
            let s = Signal::from_reply(*status, &headers(pairs));
            assert_eq!(
                (s.rejected, s.nearly_spent, s.hold.map(|h| h.as_millis())),
                (*rejected, *nearly_spent, *hold),
                "{status} {pairs:?}"
            );
        }
    }

    fn ok() -> Signal {
        Signal::default()
    }

    fn rejected() -> Signal {
        Signal {
            rejected: true,
            ..Signal::default()
        }
    }

    #[tokio::test]
    async fn the_window_halves_on_rejection_and_grows_back_by_one_per_window() {
        let t = Arc::new(Throttle::new(None, None));
        t.start(16);
        assert_eq!(t.stats().settled, 16);
        // A burst of rejections sent in one epoch cuts once.
        let permits = [t.acquire().await, t.acquire().await, t.acquire().await];
        for p in permits {
            p.finish(rejected());
        }
        let s = t.stats();
        assert_eq!((s.settled, s.cuts, s.rejected), (8, 1, 3));
        // A rejection of a request sent after the cut cuts again.
        t.acquire().await.finish(rejected());
        assert_eq!(t.stats().settled, 4);
        // Four successes (one window) add one.
        for _ in 0..4 {
            t.acquire().await.finish(ok());
        }
        assert_eq!(t.stats().settled, 5);
        for _ in 0..1000 {
            t.acquire().await.finish(ok());
        }
        assert_eq!(t.stats().settled, 16, "never above --workers");
        for _ in 0..10 {
            t.acquire().await.finish(rejected());
        }
        assert_eq!(t.stats().settled, 1, "never below one");
        let fixed = Arc::new(Throttle::new(None, None).fixed());
        fixed.start(16);
        for _ in 0..3 {
            fixed.acquire().await.finish(rejected());
        }
        let s = fixed.stats();
        assert_eq!(
            (s.settled, s.cuts, s.rejected),
            (16, 0, 3),
            "adaptive_concurrency: false"
        );
    }

    #[tokio::test]
    async fn no_more_requests_than_the_window_are_in_flight() {
        let t = Arc::new(Throttle::new(None, None));
        t.start(2);
        let a = t.acquire().await;
        let _b = t.acquire().await;
        let third = tokio::time::timeout(Duration::from_millis(50), t.acquire()).await;
        assert!(third.is_err(), "a third request waits");
        a.finish(ok());
        let third = tokio::time::timeout(Duration::from_millis(500), t.acquire()).await;
        assert!(third.is_ok(), "a freed slot lets it go");
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_holds_every_new_request_of_the_target() {
        let t = Arc::new(Throttle::new(None, None));
        t.start(8);
        t.acquire().await.finish(Signal {
            hold: Some(Duration::from_secs(3)),
            ..rejected()
        });
        let before = Instant::now();
        let _p = t.acquire().await;
        assert!(before.elapsed() >= Duration::from_secs(3), "{:?}", before.elapsed());
        // A hostile retry-after holds no longer than the target's own longest retry delay.
        let t = Arc::new(Throttle::new(None, None).max_hold(Duration::from_millis(20)));
        t.start(8);
        t.acquire().await.finish(Signal {
            hold: Some(Duration::MAX),
            ..rejected()
        });
        let before = Instant::now();
        let _p = t.acquire().await;
        assert_eq!(before.elapsed(), Duration::from_millis(20));
    }

    #[tokio::test(start_paused = true)]
    async fn max_rps_spaces_requests_and_max_tpm_waits_for_tokens() {
        let t = Arc::new(Throttle::new(Some(4.0), None));
        t.start(64);
        let before = Instant::now();
        for _ in 0..9 {
            t.acquire().await.finish(ok());
        }
        assert_eq!(before.elapsed(), Duration::from_secs(2), "9 starts at 4 a second");
        let t = Arc::new(Throttle::new(None, Some(600.0)));
        t.start(64);
        let before = Instant::now();
        t.acquire().await.finish(Signal {
            tokens: Some(1200),
            ..ok()
        });
        let _p = t.acquire().await;
        let waited = before.elapsed();
        assert!(
            waited >= Duration::from_secs(60) && waited <= Duration::from_secs(61),
            "600 tokens a minute, 600 overdrawn: about a minute, waited {waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_a_slot_does_not_count_against_the_timeout() {
        let t = Arc::new(Throttle::new(None, None));
        t.start(1);
        let held = t.acquire().await;
        let waiter = {
            let t = t.clone();
            tokio::spawn(async move {
                within(Duration::from_secs(5), async {
                    let p = t.acquire().await;
                    tokio::time::sleep(Duration::from_secs(4)).await;
                    p.finish(ok());
                })
                .await
            })
        };
        // The slot frees after 10 s: the call then takes 4 s of its 5.
        tokio::time::sleep(Duration::from_secs(10)).await;
        held.finish(ok());
        assert_eq!(waiter.await.expect("joined"), Some(()));
        let late = within(Duration::from_secs(5), tokio::time::sleep(Duration::from_secs(6))).await;
        assert_eq!(late, None, "time spent calling still counts");
    }
}
