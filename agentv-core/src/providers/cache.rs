//! `--cache`: answers stored on disk under `.agentv/cache/<2 hex>/<sha256>.json`
//! (`docs/architecture.md#cache`).
//!
//! The key hashes everything that shapes the answer (provider kind, its public settings and
//! the request); API keys are not among them. Every successful answer is cached, whatever the
//! temperature: asking for the cache means wanting it. Errors are never cached. Entries are
//! written through the redaction layer like every other output, so a cached answer that held a
//! secret reads back with `***` in its place.
//!
//! A code judge's calls through the target proxy go through the same [`CachedProvider`]s (the
//! registry builds the judge's providers too); [`Provider::invoke_sourced`] tells the proxy a
//! hit from a model call, so it can report cached calls apart.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use sha2::{Digest, Sha256};

use super::{AnswerSource, Provider, ProviderFuture, ProviderRequest, ProviderResponse};
use crate::redact::{self, Secrets};

/// The on-disk store, shared by every target of a run (it counts hits and misses).
#[derive(Debug)]
pub struct ResponseCache {
    dir: PathBuf,
    secrets: Secrets,
    hits: AtomicUsize,
    misses: AtomicUsize,
}

/// Lookups so far: answers served from disk, and answers the provider had to give.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: usize,
    pub misses: usize,
}

impl fmt::Display for CacheStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
        write!(
            f,
            "Cache: {} {}, {} {}",
            self.hits,
            plural(self.hits, "hit", "hits"),
            self.misses,
            plural(self.misses, "miss", "misses")
        )
    }
}

impl ResponseCache {
    pub fn new(dir: impl Into<PathBuf>, secrets: Secrets) -> Self {
        Self {
            dir: dir.into(),
            secrets,
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    /// The key of `request` to `provider`.
    pub fn key(provider: &dyn Provider, request: &ProviderRequest) -> String {
        let mut canonical = json!({
            "provider": provider.kind().as_str(),
            "settings": provider.public_settings(),
            "eval_id": request.eval_id,
            "question": request.question,
            "guidelines": request.guidelines,
            "chat_prompt": request.chat_prompt,
            "system_prompt": request.system_prompt,
            "input_files": request.input_files,
        });
        // Only when set, so keys of requests without one stay what they were.
        if let Some(t) = request.temperature {
            canonical["temperature"] = json!(t);
        }
        // A promptfoo test's vars reach script and HTTP providers besides the prompt.
        if let Some(vars) = &request.vars {
            canonical["vars"] = json!(vars);
        }
        // Tool definitions, and the calls and results of earlier steps, shape the answer.
        if let Some(tools) = &request.tools {
            canonical["tools"] = tools.cache_value();
        }
        // serde_json's maps are sorted, so equal requests serialize equally.
        hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(&key[..2]).join(format!("{key}.json"))
    }

    /// The cached answer of `key`, counted as a hit or a miss.
    pub fn get(&self, key: &str) -> Option<ProviderResponse> {
        let found = std::fs::read_to_string(self.path(key))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Stores `response` redacted and atomically, so concurrent runs never read half a file.
    pub fn put(&self, key: &str, response: &ProviderResponse) -> std::io::Result<()> {
        let text = serde_json::to_vec(response)?;
        redact::write_json_atomic(&self.path(key), &text, &self.secrets)
    }
}

/// A provider whose answers are looked up in the cache first.
#[derive(Debug)]
pub struct CachedProvider {
    inner: Arc<dyn Provider>,
    cache: Arc<ResponseCache>,
}

impl CachedProvider {
    pub fn new(inner: Arc<dyn Provider>, cache: Arc<ResponseCache>) -> Self {
        Self { inner, cache }
    }
}

impl Provider for CachedProvider {
    super::provider::pass_to_inner!(
        target_name,
        kind,
        prompt_mode,
        healthcheck,
        supports_batch,
        invoke_batch,
        public_settings,
        tool_settings,
        max_workers,
        executable,
        cost_basis,
        throttle,
        batch_api,
        embed,
        moderate,
        price_batched,
    );

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move { Ok(self.invoke_sourced(request).await?.0) })
    }

    fn invoke_sourced<'a>(
        &'a self,
        request: &'a ProviderRequest,
    ) -> ProviderFuture<'a, (ProviderResponse, AnswerSource)> {
        Box::pin(async move {
            let key = ResponseCache::key(self.inner.as_ref(), request);
            if let Some(hit) = self.cache.get(&key) {
                tracing::debug!(eval_id = %request.eval_id, "cache hit");
                return Ok((hit, AnswerSource::Cache));
            }
            let response = self.inner.invoke(request).await?;
            if let Err(e) = self.cache.put(&key, &response) {
                tracing::warn!("cannot write the response cache in {}: {e}", self.cache.dir().display());
            }
            Ok((response, AnswerSource::Model))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::mock::{Delay, MockProvider};
    use crate::providers::{ProviderError, ProviderKind};
    use serde_json::Value;

    #[derive(Debug)]
    struct Counting {
        calls: std::sync::atomic::AtomicUsize,
        temperature: f64,
        fail: bool,
    }

    impl Provider for Counting {
        fn target_name(&self) -> &str {
            "c"
        }
        fn kind(&self) -> ProviderKind {
            ProviderKind::of(&crate::providers::openai::OPENAI)
        }
        fn invoke<'a>(&'a self, r: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            let fail = self.fail;
            Box::pin(async move {
                if fail {
                    return Err(ProviderError::Reported("down".into()));
                }
                Ok(ProviderResponse::text(format!("{} #{n}", r.question)))
            })
        }
        fn public_settings(&self) -> Value {
            json!({"model": "m", "temperature": self.temperature})
        }
    }

    fn counting(temperature: f64, fail: bool) -> Arc<Counting> {
        Arc::new(Counting {
            calls: Default::default(),
            temperature,
            fail,
        })
    }

    fn request(q: &str) -> ProviderRequest {
        ProviderRequest {
            eval_id: "c1".into(),
            question: q.into(),
            ..ProviderRequest::default()
        }
    }

    fn cache(dir: &Path) -> Arc<ResponseCache> {
        Arc::new(ResponseCache::new(dir, Secrets::default()))
    }

    #[tokio::test]
    async fn second_identical_call_is_served_from_disk() {
        let dir = tempfile::tempdir().expect("tmp");
        let cache = cache(dir.path());
        let inner = counting(0.0, false);
        let p = CachedProvider::new(inner.clone(), cache.clone());
        let a = p.invoke(&request("q")).await.expect("first");
        let b = p.invoke(&request("q")).await.expect("second");
        assert_eq!(a.output_messages, b.output_messages);
        p.invoke(&request("other")).await.expect("third");
        assert_eq!(inner.calls.load(Ordering::SeqCst), 2);
        assert_eq!(cache.stats(), CacheStats { hits: 1, misses: 2 });
        // A fresh provider over the same directory (a second run) makes no call.
        let again = counting(0.0, false);
        CachedProvider::new(again.clone(), cache.clone())
            .invoke(&request("q"))
            .await
            .expect("hit");
        assert_eq!(again.calls.load(Ordering::SeqCst), 0);
        assert_eq!(cache.stats().to_string(), "Cache: 2 hits, 2 misses");
    }

    #[tokio::test]
    async fn errors_are_not_cached() {
        let dir = tempfile::tempdir().expect("tmp");
        let failing = counting(0.0, true);
        let p = CachedProvider::new(failing.clone(), cache(dir.path()));
        assert!(p.invoke(&request("q")).await.is_err());
        assert!(p.invoke(&request("q")).await.is_err());
        assert_eq!(failing.calls.load(Ordering::SeqCst), 2);
    }

    /// `--cache` caches every successful answer, whatever the temperature
    /// (`docs/architecture.md#cache`).
    #[tokio::test]
    async fn warm_temperature_answers_are_cached() {
        let dir = tempfile::tempdir().expect("tmp");
        let warm = counting(0.7, false);
        let p = CachedProvider::new(warm.clone(), cache(dir.path()));
        p.invoke(&request("q")).await.expect("1");
        p.invoke(&request("q")).await.expect("2");
        assert_eq!(warm.calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn cached_answers_are_redacted_on_disk() {
        let dir = tempfile::tempdir().expect("tmp");
        let secrets = Secrets::default();
        secrets.add("sk-\"quoted\" secret");
        let cache = Arc::new(ResponseCache::new(dir.path(), secrets));
        let echo = MockProvider::new("m", Some("echo sk-\"quoted\" secret".into()), Delay::None);
        let p = CachedProvider::new(Arc::new(echo), cache);
        p.invoke(&request("q")).await.expect("answers");
        let files: Vec<_> = walkdir::WalkDir::new(dir.path())
            .into_iter()
            .flatten()
            .filter(|e| e.file_type().is_file())
            .collect();
        assert_eq!(files.len(), 1);
        let text = std::fs::read_to_string(files[0].path()).expect("entry");
        assert!(text.contains("echo ***"), "{text}");
        assert!(!text.contains("quoted"), "{text}");
        let hit = p.invoke(&request("q")).await.expect("hit");
        assert_eq!(hit.output_messages[0].text().as_deref(), Some("echo ***"));
    }

    #[test]
    fn key_depends_on_settings_and_request_not_attempt() {
        let a = MockProvider::new("m", Some("x".into()), Delay::None);
        let b = MockProvider::new("m", Some("y".into()), Delay::None);
        let mut r = request("q");
        let k = ResponseCache::key(&a, &r);
        r.attempt = 3;
        assert_eq!(ResponseCache::key(&a, &r), k);
        assert_ne!(ResponseCache::key(&b, &r), k);
        assert_eq!(k.len(), 64);
    }
}
