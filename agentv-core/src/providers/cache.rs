//! `--cache`: answers stored on disk under `.agentv/cache/<2 hex>/<sha256>.json` (D15).
//!
//! The key hashes everything that shapes the answer (provider kind, its public settings and
//! the request), never a secret. Errors are never cached. Answers from a target with
//! `temperature` above 0 are not cached either: they are meant to vary.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{PromptMode, Provider, ProviderError, ProviderFuture, ProviderKind, ProviderRequest, ProviderResponse};

/// The on-disk store.
#[derive(Debug, Clone)]
pub struct ResponseCache {
    dir: PathBuf,
}

impl ResponseCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of `request` to `provider`; `None` when its answers must not be cached.
    pub fn key(provider: &dyn Provider, request: &ProviderRequest) -> Option<String> {
        let settings = provider.public_settings();
        if settings
            .get("temperature")
            .and_then(Value::as_f64)
            .is_some_and(|t| t > 0.0)
        {
            return None;
        }
        let canonical = json!({
            "provider": provider.kind().as_str(),
            "settings": settings,
            "eval_id": request.eval_id,
            "question": request.question,
            "guidelines": request.guidelines,
            "chat_prompt": request.chat_prompt,
            "system_prompt": request.system_prompt,
            "input_files": request.input_files,
        });
        // serde_json's maps are sorted, so equal requests serialize equally.
        let digest = Sha256::digest(canonical.to_string().as_bytes());
        Some(digest.iter().map(|b| format!("{b:02x}")).collect())
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(&key[..2]).join(format!("{key}.json"))
    }

    pub fn get(&self, key: &str) -> Option<ProviderResponse> {
        let text = std::fs::read_to_string(self.path(key)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Stores atomically (write to a temporary file, then rename), so concurrent runs never
    /// read half a file.
    pub fn put(&self, key: &str, response: &ProviderResponse) -> std::io::Result<()> {
        let path = self.path(key);
        let parent = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(parent)?;
        let mut file = tempfile::NamedTempFile::new_in(parent)?;
        serde_json::to_writer(&mut file, response)?;
        file.persist(&path).map_err(|e| e.error)?;
        Ok(())
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
    fn target_name(&self) -> &str {
        self.inner.target_name()
    }

    fn kind(&self) -> ProviderKind {
        self.inner.kind()
    }

    fn prompt_mode(&self) -> PromptMode {
        self.inner.prompt_mode()
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move {
            let key = ResponseCache::key(self.inner.as_ref(), request);
            if let Some(hit) = key.as_deref().and_then(|k| self.cache.get(k)) {
                tracing::debug!(eval_id = %request.eval_id, "cache hit");
                return Ok(hit);
            }
            let response = self.inner.invoke(request).await?;
            if let Some(k) = key
                && let Err(e) = self.cache.put(&k, &response)
            {
                tracing::warn!("cannot write the response cache in {}: {e}", self.cache.dir().display());
            }
            Ok(response)
        })
    }

    fn healthcheck<'a>(&'a self, eval_dir: &'a std::path::Path) -> ProviderFuture<'a, ()> {
        self.inner.healthcheck(eval_dir)
    }

    fn supports_batch(&self) -> bool {
        self.inner.supports_batch()
    }

    fn invoke_batch<'a>(
        &'a self,
        requests: &'a [ProviderRequest],
    ) -> ProviderFuture<'a, Vec<Result<ProviderResponse, ProviderError>>> {
        self.inner.invoke_batch(requests)
    }

    fn public_settings(&self) -> Value {
        self.inner.public_settings()
    }

    fn max_workers(&self) -> Option<usize> {
        self.inner.max_workers()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::mock::{Delay, MockProvider};

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
            ProviderKind::OpenAi
        }
        fn invoke<'a>(&'a self, r: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
            let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let fail = self.fail;
            Box::pin(async move {
                if fail {
                    return Err(ProviderError::failed("down"));
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

    #[tokio::test]
    async fn second_identical_call_is_served_from_disk() {
        let dir = tempfile::tempdir().expect("tmp");
        let cache = Arc::new(ResponseCache::new(dir.path()));
        let inner = counting(0.0, false);
        let p = CachedProvider::new(inner.clone(), cache.clone());
        let a = p.invoke(&request("q")).await.expect("first");
        let b = p.invoke(&request("q")).await.expect("second");
        assert_eq!(a.output_messages, b.output_messages);
        p.invoke(&request("other")).await.expect("third");
        assert_eq!(inner.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
        // A fresh provider over the same directory (a second run) makes no call.
        let again = counting(0.0, false);
        CachedProvider::new(again.clone(), cache)
            .invoke(&request("q"))
            .await
            .expect("hit");
        assert_eq!(again.calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn errors_and_warm_temperatures_are_not_cached() {
        let dir = tempfile::tempdir().expect("tmp");
        let cache = Arc::new(ResponseCache::new(dir.path()));
        let failing = counting(0.0, true);
        let p = CachedProvider::new(failing.clone(), cache.clone());
        assert!(p.invoke(&request("q")).await.is_err());
        assert!(p.invoke(&request("q")).await.is_err());
        assert_eq!(failing.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
        let warm = counting(0.7, false);
        let p = CachedProvider::new(warm.clone(), cache);
        p.invoke(&request("q")).await.expect("1");
        p.invoke(&request("q")).await.expect("2");
        assert_eq!(warm.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn key_depends_on_settings_and_request_not_attempt() {
        let a = MockProvider::new("m", Some("x".into()), Delay::None);
        let b = MockProvider::new("m", Some("y".into()), Delay::None);
        let mut r = request("q");
        let k = ResponseCache::key(&a, &r).expect("key");
        r.attempt = 3;
        assert_eq!(ResponseCache::key(&a, &r).expect("key"), k);
        assert_ne!(ResponseCache::key(&b, &r).expect("key"), k);
        assert_eq!(k.len(), 64);
    }
}
