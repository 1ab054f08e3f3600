//! Routes a code judge's proxy calls to this run's providers: the [`TargetInvoker`] the proxy
//! crate calls, implemented over the registry.
//!
//! Two economies live here (`docs/judges.md#what-a-call-costs`). Under `--cache` the judge's
//! providers are [`super::CachedProvider`]s like the targets', so a call answered from disk
//! costs no model call; it is counted in `cached_calls`. And identical calls in flight at the
//! same time (two threads asking the same thing, or equal items of one batch) are made once:
//! the later ones wait for the first one's answer (single flight) and are counted in
//! `deduplicated_calls`. The proxy still counts every call against `max_calls`, so a judge
//! behaves the same whether its calls were cached, deduplicated or not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agentv_eval_sdk::{InvokeRequest, InvokeResponse, TokenUsage, last_assistant_text};
use agentv_proxy::{InvokeError, TargetInvoker};
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};

use crate::redact::Secrets;

use super::{AnswerSource, Provider, ProviderRequest, ResolvedTarget, TargetRegistry};

/// Usage of the calls made through one proxy, attributed to its evaluator.
///
/// Tokens and cost are those of the calls that reached a model: an answer from the cache or
/// shared with an identical call in flight adds nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProxyUsage {
    pub token_usage: Option<TokenUsage>,
    pub cost_usd: Option<f64>,
    /// Calls answered from `--cache`.
    pub cached_calls: u32,
    /// Calls that shared the answer of an identical call in flight.
    pub deduplicated_calls: u32,
}

type Answer = Result<InvokeResponse, InvokeError>;

/// A call in flight; every identical call awaits the same one.
type Flight = Shared<BoxFuture<'static, Answer>>;

/// What makes two calls identical: the target and everything of the request the provider sees.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FlightKey {
    target: String,
    eval_id: String,
    attempt: u32,
    question: String,
    system_prompt: Option<String>,
}

/// The [`TargetInvoker`] of one code-judge invocation.
pub struct ProviderInvoker {
    registry: Arc<TargetRegistry>,
    default_name: String,
    default: Arc<dyn Provider>,
    eval_target: String,
    eval_id: String,
    attempt: u32,
    /// The directory of the case's eval file: relative paths of the targets called resolve
    /// against it, as for the case's own target.
    eval_dir: Option<std::path::PathBuf>,
    usage: Arc<Mutex<ProxyUsage>>,
    in_flight: Arc<Mutex<HashMap<FlightKey, Flight>>>,
}

impl ProviderInvoker {
    /// The same invoker, calling targets for a case of the eval file in `dir`.
    pub fn with_eval_dir(self, dir: &std::path::Path) -> Self {
        Self {
            eval_dir: Some(dir.to_path_buf()),
            ..self
        }
    }

    /// Calls default to the target's judge (its `judge_target`, else the target itself).
    pub fn new(target: &ResolvedTarget, eval_id: String, attempt: u32) -> Self {
        Self {
            registry: target.registry.clone(),
            default_name: target.judge_name.clone(),
            default: target.judge.clone(),
            eval_target: target.name.clone(),
            eval_id,
            attempt,
            eval_dir: None,
            usage: Arc::default(),
            in_flight: Arc::default(),
        }
    }

    /// Tokens, cost and economies of the calls so far.
    pub fn usage(&self) -> ProxyUsage {
        self.usage.lock().map(|u| *u).unwrap_or_default()
    }

    fn secrets(&self) -> Secrets {
        self.registry.secrets().clone()
    }

    fn provider(&self, name: Option<&str>) -> Result<Arc<dyn Provider>, InvokeError> {
        match name {
            None => Ok(self.default.clone()),
            Some(n) if n == self.default_name => Ok(self.default.clone()),
            Some(n) => self
                .registry
                .resolve(n)
                .map_err(|e| InvokeError::BadTarget(e.to_string())),
        }
    }

    /// The call in flight for `key`, joined (and counted) when there is one, else a new one
    /// registered for the calls that follow.
    fn flight(&self, key: FlightKey, provider: Arc<dyn Provider>, request: ProviderRequest) -> Flight {
        let Ok(mut in_flight) = self.in_flight.lock() else {
            return call(provider, request, self.usage.clone(), self.secrets())
                .boxed()
                .shared();
        };
        if let Some(flight) = in_flight.get(&key) {
            if let Ok(mut usage) = self.usage.lock() {
                usage.deduplicated_calls += 1;
            }
            return flight.clone();
        }
        let (usage, registry, secrets) = (self.usage.clone(), self.in_flight.clone(), self.secrets());
        let done = key.clone();
        let flight = async move {
            let answer = call(provider, request, usage, secrets).await;
            // Landed: a later identical call is a new call (or a cache hit).
            if let Ok(mut in_flight) = registry.lock() {
                in_flight.remove(&done);
            }
            answer
        }
        .boxed()
        .shared();
        in_flight.insert(key, flight.clone());
        flight
    }
}

/// Makes one call and adds what it cost to `usage`.
async fn call(
    provider: Arc<dyn Provider>,
    request: ProviderRequest,
    usage: Arc<Mutex<ProxyUsage>>,
    secrets: Secrets,
) -> Answer {
    let (response, source) = provider
        .invoke_sourced(&request)
        .await
        .map_err(|e| InvokeError::Failed(secrets.redact(&e.to_string()).into_owned()))?;
    if let Ok(mut total) = usage.lock() {
        match source {
            AnswerSource::Cache => total.cached_calls += 1,
            AnswerSource::Model => {
                if let Some(u) = response.token_usage {
                    total.token_usage.get_or_insert_with(TokenUsage::default).add(&u);
                }
                if let Some(c) = response.cost_usd {
                    *total.cost_usd.get_or_insert(0.0) += c;
                }
            }
        }
    }
    Ok(InvokeResponse {
        raw_text: last_assistant_text(&response.output_messages),
        output_messages: response.output_messages,
        error: None,
        token_usage: None,
    })
}

impl TargetInvoker for ProviderInvoker {
    fn default_target(&self) -> String {
        self.default_name.clone()
    }

    fn available_targets(&self) -> Vec<String> {
        let mut names = self.registry.names();
        for n in [&self.eval_target, &self.default_name] {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
        names
    }

    fn check_target(&self, name: &str) -> Result<(), InvokeError> {
        self.provider(Some(name)).map(|_| ())
    }

    fn invoke(&self, target: Option<String>, request: InvokeRequest) -> BoxFuture<'static, Answer> {
        let provider = match self.provider(target.as_deref()) {
            Ok(p) => p,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        let request = ProviderRequest {
            eval_id: request.eval_case_id.unwrap_or_else(|| self.eval_id.clone()),
            attempt: request.attempt.unwrap_or(self.attempt),
            question: request.question,
            system_prompt: request.system_prompt,
            eval_dir: self.eval_dir.clone(),
            ..ProviderRequest::default()
        };
        let key = FlightKey {
            target: target.unwrap_or_else(|| self.default_name.clone()),
            eval_id: request.eval_id.clone(),
            attempt: request.attempt,
            question: request.question.clone(),
            system_prompt: request.system_prompt.clone(),
        };
        self.flight(key, provider, request).boxed()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::sync::Semaphore;

    use super::*;
    use crate::env::Env;
    use crate::providers::cache::{CacheStats, CachedProvider, ResponseCache};
    use crate::providers::{ProviderError, ProviderFuture, ProviderKind, ProviderResponse};

    /// Counts calls; each call waits for a permit, so a test decides when calls land.
    #[derive(Debug)]
    struct Gated {
        calls: AtomicUsize,
        gate: Semaphore,
        fail: bool,
    }

    impl Provider for Gated {
        fn target_name(&self) -> &str {
            "judge"
        }
        fn kind(&self) -> ProviderKind {
            ProviderKind::of(&crate::providers::openai::OPENAI)
        }
        fn invoke<'a>(&'a self, r: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                let _permit = self
                    .gate
                    .acquire()
                    .await
                    .map_err(|e| ProviderError::Internal(e.to_string()))?;
                if self.fail {
                    return Err(ProviderError::Reported("model down".into()));
                }
                Ok(ProviderResponse {
                    token_usage: Some(TokenUsage {
                        input: 10,
                        output: 2,
                        ..TokenUsage::default()
                    }),
                    cost_usd: Some(0.5),
                    ..ProviderResponse::text(format!("{} #{n}", r.question))
                })
            })
        }
    }

    fn gated(open: bool, fail: bool) -> Arc<Gated> {
        Arc::new(Gated {
            calls: AtomicUsize::new(0),
            gate: Semaphore::new(if open { Semaphore::MAX_PERMITS } else { 0 }),
            fail,
        })
    }

    fn invoker(judge: Arc<dyn Provider>) -> ProviderInvoker {
        let env = Arc::new(Env::from_pairs(Vec::new()));
        let target = ResolvedTarget {
            name: "default".into(),
            provider: judge.clone(),
            judge_name: "judge".into(),
            judge: judge.clone(),
            workers: None,
            batching: false,
            registry: Arc::new(TargetRegistry::with_provider(judge, env)),
        };
        ProviderInvoker::new(&target, "case".into(), 1)
    }

    fn ask(question: &str) -> InvokeRequest {
        InvokeRequest::new(question)
    }

    fn text(answer: &Answer) -> Option<String> {
        answer.as_ref().ok().and_then(|r| r.raw_text.clone())
    }

    /// Both calls are in flight before the model answers: one model call, one answer for both.
    #[tokio::test]
    async fn identical_calls_in_flight_reach_the_model_once() {
        let model = gated(false, false);
        let invoker = invoker(model.clone());
        let first = invoker.invoke(None, ask("q"));
        let second = invoker.invoke(Some("judge".into()), ask("q"));
        let other = invoker.invoke(None, ask("q").system_prompt("strict"));
        model.gate.add_permits(Semaphore::MAX_PERMITS);
        let (a, b, c) = futures::join!(first, second, other);
        assert_eq!(text(&a).as_deref(), Some("q #0"));
        assert_eq!(text(&b), text(&a), "the second call got the first one's answer");
        assert!(text(&c).is_some_and(|t| t.starts_with("q #")));
        assert_eq!(
            model.calls.load(Ordering::SeqCst),
            2,
            "a different system prompt is a new call"
        );
        let usage = invoker.usage();
        assert_eq!(usage.deduplicated_calls, 1);
        assert_eq!(usage.cached_calls, 0);
        assert_eq!(
            usage.token_usage.map(|t| t.input),
            Some(20),
            "tokens of the two model calls"
        );
        assert_eq!(usage.cost_usd, Some(1.0));
    }

    /// Single flight is about calls in flight; it is not a cache.
    #[tokio::test]
    async fn a_call_after_an_identical_one_landed_is_made_again() {
        let model = gated(true, false);
        let invoker = invoker(model.clone());
        let a = invoker.invoke(None, ask("q")).await;
        let b = invoker.invoke(None, ask("q")).await;
        assert_eq!(text(&a).as_deref(), Some("q #0"));
        assert_eq!(text(&b).as_deref(), Some("q #1"));
        assert_eq!(invoker.usage().deduplicated_calls, 0);
    }

    /// A different attempt is a different request: a judge sampling twice on purpose varies it.
    #[tokio::test]
    async fn calls_differing_in_attempt_are_not_merged() {
        let model = gated(false, false);
        let invoker = invoker(model.clone());
        let mut again = ask("q");
        again.attempt = Some(2);
        let first = invoker.invoke(None, ask("q"));
        let second = invoker.invoke(None, again);
        model.gate.add_permits(Semaphore::MAX_PERMITS);
        let (a, b) = futures::join!(first, second);
        assert_ne!(text(&a), text(&b));
        assert_eq!(model.calls.load(Ordering::SeqCst), 2);
    }

    /// A failure is shared too (the calls were identical), and the next call tries again.
    #[tokio::test]
    async fn a_failed_call_fails_every_waiter_and_is_not_kept() {
        let model = gated(false, true);
        let invoker = invoker(model.clone());
        let first = invoker.invoke(None, ask("q"));
        let second = invoker.invoke(None, ask("q"));
        model.gate.add_permits(Semaphore::MAX_PERMITS);
        let (a, b) = futures::join!(first, second);
        assert_eq!(a, Err(InvokeError::Failed("model down".into())));
        assert_eq!(b, a);
        assert!(invoker.invoke(None, ask("q")).await.is_err());
        assert_eq!(model.calls.load(Ordering::SeqCst), 2);
    }

    /// Under `--cache` a hit makes no model call, is counted apart and costs nothing; hits and
    /// misses land in the run's cache counts.
    #[tokio::test]
    async fn cache_hits_are_counted_and_cost_nothing() {
        let dir = tempfile::tempdir().expect("tmp");
        let cache = Arc::new(ResponseCache::new(dir.path(), crate::redact::Secrets::default()));
        let model = gated(true, false);
        let judge: Arc<dyn Provider> = Arc::new(CachedProvider::new(model.clone(), cache.clone()));
        let first = invoker(judge.clone());
        assert_eq!(text(&first.invoke(None, ask("q")).await).as_deref(), Some("q #0"));
        let second = invoker(judge);
        assert_eq!(text(&second.invoke(None, ask("q")).await).as_deref(), Some("q #0"));
        assert_eq!(model.calls.load(Ordering::SeqCst), 1);
        assert_eq!(first.usage().cached_calls, 0);
        assert_eq!(first.usage().cost_usd, Some(0.5));
        let usage = second.usage();
        assert_eq!(usage.cached_calls, 1);
        assert_eq!((usage.token_usage, usage.cost_usd), (None, None));
        assert_eq!(cache.stats(), CacheStats { hits: 1, misses: 1 });
    }
}
