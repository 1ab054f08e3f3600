//! The per-invocation loopback target proxy.
//!
//! A code judge that needs model calls gets a URL and a bearer token for one of these, valid for
//! its own run only. The proxy holds no provider knowledge: it authenticates, enforces the call
//! budget, validates bodies and routes each call through a [`TargetInvoker`] that the runtime
//! implements over its providers. Provider credentials never reach the judge.
//!
//! Routes (`docs/architecture.md#target-proxy`): `GET /info`, `POST /invoke`,
//! `POST /invokeBatch`. Status codes: 401 for a
//! missing or wrong token (checked before anything else), 400 for a bad body or an unknown
//! target, 404 for an unknown route, 405 for a wrong method, 413 for a body over 1 MiB, 429 when
//! the budget is spent, 503 once the proxy is closing.

mod server;

use std::sync::Arc;

use agentv_eval_sdk::{InvokeRequest, InvokeResponse};
use futures::future::BoxFuture;

pub use server::{ProxyHandle, ProxyStats, TargetProxy};

/// Why a routed call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvokeError {
    /// The named target cannot be used (unknown, or its credentials are missing): HTTP 400.
    #[error("{0}")]
    BadTarget(String),
    /// The provider failed: HTTP 500 for `/invoke`, a per-item error in `/invokeBatch`.
    #[error("{0}")]
    Failed(String),
}

/// Routes proxy calls to model targets. The runtime implements it over its providers.
pub trait TargetInvoker: Send + Sync + 'static {
    /// The target used when a call names none.
    fn default_target(&self) -> String;

    /// Every target a call may name.
    fn available_targets(&self) -> Vec<String>;

    /// Checks that `name` can be used, before the call is counted.
    fn check_target(&self, name: &str) -> Result<(), InvokeError>;

    /// Makes one call on `target` (the default when `None`).
    fn invoke(
        &self,
        target: Option<String>,
        request: InvokeRequest,
    ) -> BoxFuture<'static, Result<InvokeResponse, InvokeError>>;
}

/// Settings of one proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyConfig {
    /// Calls the judge may make; each batch item counts as one.
    pub max_calls: u32,
}

/// Convenience alias for the invoker shared with the server.
pub type SharedInvoker = Arc<dyn TargetInvoker>;
