//! Routes a code judge's proxy calls to this run's providers: the [`TargetInvoker`] the proxy
//! crate calls, implemented over the registry.

use std::sync::{Arc, Mutex};

use agentv_eval_sdk::{InvokeRequest, InvokeResponse, TokenUsage, last_assistant_text};
use agentv_proxy::{InvokeError, TargetInvoker};
use futures::future::BoxFuture;

use super::{Provider, ProviderRequest, ResolvedTarget, TargetRegistry};

/// Usage of the calls made through one proxy, attributed to its evaluator.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProxyUsage {
    pub token_usage: Option<TokenUsage>,
    pub cost_usd: Option<f64>,
}

/// The [`TargetInvoker`] of one code-judge invocation.
pub struct ProviderInvoker {
    registry: Arc<TargetRegistry>,
    default_name: String,
    default: Arc<dyn Provider>,
    eval_target: String,
    eval_id: String,
    attempt: u32,
    usage: Arc<Mutex<ProxyUsage>>,
}

impl ProviderInvoker {
    /// Calls default to the target's judge (its `judge_target`, else the target itself).
    pub fn new(target: &ResolvedTarget, eval_id: String, attempt: u32) -> Self {
        Self {
            registry: target.registry.clone(),
            default_name: target.judge_name.clone(),
            default: target.judge.clone(),
            eval_target: target.name.clone(),
            eval_id,
            attempt,
            usage: Arc::default(),
        }
    }

    /// Tokens and cost of the calls so far.
    pub fn usage(&self) -> ProxyUsage {
        self.usage.lock().map(|u| *u).unwrap_or_default()
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

    fn invoke(
        &self,
        target: Option<String>,
        request: InvokeRequest,
    ) -> BoxFuture<'static, Result<InvokeResponse, InvokeError>> {
        let provider = self.provider(target.as_deref());
        let usage = self.usage.clone();
        let secrets = self.registry.secrets().clone();
        let request = ProviderRequest {
            eval_id: request.eval_case_id.unwrap_or_else(|| self.eval_id.clone()),
            attempt: request.attempt.unwrap_or(self.attempt),
            question: request.question,
            system_prompt: request.system_prompt,
            ..ProviderRequest::default()
        };
        Box::pin(async move {
            let provider = provider?;
            let response = provider
                .invoke(&request)
                .await
                .map_err(|e| InvokeError::Failed(secrets.redact(&e.to_string()).into_owned()))?;
            if let Ok(mut total) = usage.lock() {
                if let Some(u) = response.token_usage {
                    total.token_usage.get_or_insert_with(TokenUsage::default).add(&u);
                }
                if let Some(c) = response.cost_usd {
                    *total.cost_usd.get_or_insert(0.0) += c;
                }
            }
            Ok(InvokeResponse {
                raw_text: last_assistant_text(&response.output_messages),
                output_messages: response.output_messages,
                error: None,
                token_usage: None,
            })
        })
    }
}
