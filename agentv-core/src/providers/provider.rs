//! The `Provider` trait and what crosses it: requests, responses, errors.

use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{ProviderClass, ProviderKind};
use crate::model::{OutputMessage, TokenUsage, ToolRequest, ToolSettings, TraceEvent};

/// How case content is put into prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptMode {
    /// LLM APIs: file contents are embedded in the prompt.
    Lm,
    /// Agents and commands: files are referenced by path; the agent reads them.
    Agent,
}

/// One chat turn of a multi-turn prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

/// Everything a provider needs to answer one case.
#[derive(Debug, Clone, Default)]
pub struct ProviderRequest {
    pub eval_id: String,
    /// 1 for the first try.
    pub attempt: u32,
    /// The formatted user prompt.
    pub question: String,
    /// The guidelines block (file contents), empty when the case has none.
    pub guidelines: String,
    pub guideline_files: Vec<PathBuf>,
    pub input_files: Vec<PathBuf>,
    /// Set for multi-turn inputs sent to LLM providers.
    pub chat_prompt: Option<Vec<ChatMessage>>,
    /// A system prompt from the caller (LLM judges set one).
    pub system_prompt: Option<String>,
    /// A sampling temperature from the caller, over the target's own (a grader with its own
    /// `target` and `temperature`).
    pub temperature: Option<f64>,
    /// Directory of the eval file: the default working directory of commands.
    pub eval_dir: Option<PathBuf>,
    /// The case's workspace (`docs/workspaces.md`): where a command or an agent runs, over
    /// the target's own `cwd`.
    pub workspace: Option<PathBuf>,
    /// With `workspace.docker` and `docker.agent`: the container a `cli`, `claude-code` or
    /// `codex` target runs its command in (`docs/workspaces.md#containers`).
    pub container: Option<crate::model::workspace::AgentContainer>,
    /// Tools offered to an LLM and the tool turns so far (`docs/tools.md`); other providers
    /// ignore it.
    pub tools: Option<ToolRequest>,
    /// The promptfoo test's `vars`, for providers that read them as promptfoo passes them
    /// (`python`, `javascript`, `http`: `docs/promptfoo.md#providers`); `None` for other cases.
    pub vars: Option<Map<String, Value>>,
}

/// What a provider answered.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ProviderResponse {
    pub output_messages: Vec<OutputMessage>,
    /// An explicit trace (deprecated in favour of `output_messages`, still preferred when set).
    pub trace: Option<Vec<TraceEvent>>,
    /// A file holding a JSON array of trace events.
    pub trace_ref: Option<PathBuf>,
    pub token_usage: Option<TokenUsage>,
    pub cost_usd: Option<f64>,
    pub duration_ms: Option<f64>,
    /// Why the model stopped (`stop`, `length`, `tool_calls`, ...), as the API says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The answer's token log probabilities, when the request asked for them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<f64>>,
    /// The provider's raw answer, for debugging.
    pub raw: Option<Value>,
    /// Provider-specific facts (log file paths, session ids).
    pub metadata: Option<Map<String, Value>>,
    /// Problems that did not fail the call (dropped metric values, ...).
    pub warnings: Vec<String>,
}

impl ProviderResponse {
    /// A response with one assistant message.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            output_messages: vec![OutputMessage::assistant(text)],
            ..Self::default()
        }
    }
}

/// Why a provider call failed. Each kind says what failed, so that the runner and the retry
/// policy decide by kind (`docs/architecture.md#retries`) and the message in the results file
/// names the part to fix: the target's settings, the program, or the answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// The call did not finish in time; the runner may retry the case.
    #[error("timed out after {}s", .0.as_secs_f64())]
    Timeout(Duration),
    /// The provider answered with an HTTP error.
    #[error("HTTP {status}: {message}")]
    Http {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    /// The request never got an HTTP answer, and another attempt may get one (connection
    /// refused or reset).
    #[error("network error: {0}")]
    Network(String),
    /// The request never got an HTTP answer, and no retry will get one (an invalid URL, TLS,
    /// an unknown host).
    #[error("network error, not retried: {0}")]
    Unreachable(String),
    /// The target's settings cannot make this call (a header, URL or template; a missing
    /// executable or working directory): targets.yaml needs a fix.
    #[error("{0}")]
    Setup(String),
    /// This provider cannot do what was asked (batch, embed, moderate).
    #[error("{0}")]
    Unsupported(&'static str),
    /// The target's healthcheck failed, so no case is sent to it.
    #[error("{0}")]
    Unhealthy(String),
    /// The case's workspace could not be given to the provider (its container did not start).
    #[error("{0}")]
    Workspace(String),
    /// A file or directory the call needs could not be made, written or read.
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::sync::Arc<std::io::Error>,
    },
    /// The provider's program did not run to an exit status (it did not start, or waiting on
    /// it failed).
    #[error("{0}")]
    Spawn(String),
    /// The provider's program exited with a failure status; `output` is the end of what it
    /// printed, secrets redacted.
    #[error("{program} exited with code {code}: {output}")]
    Exited {
        program: String,
        code: String,
        output: String,
    },
    /// An answer came but is not the shape `from` speaks: `problem` names the field or the
    /// parse error.
    #[error("malformed response from {from}: {problem}")]
    Malformed { from: String, problem: String },
    /// The provider answered with an error of its own (a script's `error`, an agent's failed
    /// turn, a batch item's error), in its own words.
    #[error("{0}")]
    Reported(String),
    /// A request or response transform (JavaScript) failed.
    #[error("{0}")]
    Transform(String),
    /// A batch job ended without an answer for this request.
    #[error("{0}")]
    Unanswered(&'static str),
    /// A batch item failed and the run is strict about batches (`--batch strict`): the item's
    /// own error is the source.
    #[error("{}batch item{} failed: {source}", if case.is_some() { "" } else { "its " }, case.as_ref().map(|c| format!(" of `{c}`")).unwrap_or_default())]
    BatchItem {
        case: Option<String>,
        source: Box<ProviderError>,
    },
    /// A step after the first of a tool loop (`docs/tools.md#tool-loops`) failed.
    #[error("step {step} of the tool loop: {source}")]
    InStep { step: u32, source: Box<ProviderError> },
    /// agentv could not keep an answer it got (a batch answer held for its case).
    #[error("{0}")]
    Internal(String),
}

impl ProviderError {
    /// A local I/O failure, with what was being done and to which path.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            what: what.into(),
            source: std::sync::Arc::new(source),
        }
    }

    /// An answer that is not the shape `from` speaks.
    pub fn malformed(from: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::Malformed {
            from: from.into(),
            problem: problem.into(),
        }
    }
}

/// Where an answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerSource {
    /// The model was called.
    Model,
    /// `--cache` held the answer; no call was made.
    Cache,
}

/// A future returned by providers (dyn-compatible async).
pub type ProviderFuture<'a, T> = BoxFuture<'a, Result<T, ProviderError>>;

/// Which declarations [`Provider::declared_tools`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolList {
    /// OpenAI's `tools` (`[{type: function, function: {name, parameters}}]`).
    Tools,
    /// OpenAI's legacy `functions` (`[{name, parameters}]`).
    Functions,
}

/// A target that answers eval cases.
///
/// LLM APIs, agent CLIs, commands and mocks all implement it; the runner knows nothing else
/// about them.
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// The target's name in targets.yaml.
    fn target_name(&self) -> &str;

    fn kind(&self) -> ProviderKind;

    /// How prompts for this provider are formatted.
    fn prompt_mode(&self) -> PromptMode {
        match self.kind().class() {
            ProviderClass::Agent | ProviderClass::Command => PromptMode::Agent,
            ProviderClass::Llm | ProviderClass::Mock => PromptMode::Lm,
        }
    }

    /// Answers one request.
    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse>;

    /// Answers one request and says where the answer came from: only `--cache`
    /// ([`super::CachedProvider`]) answers without the model. The target proxy reports such
    /// calls apart, since they cost nothing.
    fn invoke_sourced<'a>(
        &'a self,
        request: &'a ProviderRequest,
    ) -> ProviderFuture<'a, (ProviderResponse, AnswerSource)> {
        Box::pin(async move { Ok((self.invoke(request).await?, AnswerSource::Model)) })
    }

    /// Checks once, before the run, that the target can answer (a `cli` target's
    /// `healthcheck`); `eval_dir` is where its commands run by default. The error says why
    /// not, fit for the terminal. Most providers have nothing to check.
    fn healthcheck<'a>(&'a self, _eval_dir: &'a std::path::Path) -> ProviderFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }

    /// The tool or function declarations the target sends with its requests, as configured
    /// (promptfoo's `config.tools` and `config.functions`): the `is-valid-openai-*` graders
    /// check calls against them. Most providers declare none.
    fn declared_tools(&self, _list: ToolList) -> Option<&serde_json::Value> {
        None
    }

    /// True when [`Provider::invoke_batch`] sends many requests in one call.
    fn supports_batch(&self) -> bool {
        self.kind().entry().batch
    }

    /// Answers many requests at once, one result per request in order. An `Err` means the
    /// whole batch failed and the runner falls back to per-case calls.
    fn invoke_batch<'a>(
        &'a self,
        _requests: &'a [ProviderRequest],
    ) -> ProviderFuture<'a, Vec<Result<ProviderResponse, ProviderError>>> {
        Box::pin(async { Err(ProviderError::Unsupported("this provider cannot batch")) })
    }

    /// Settings that shape the answer, without secrets (for prompt dumps and cache keys).
    fn public_settings(&self) -> Value {
        Value::Object(Map::new())
    }

    /// The tool settings of the target itself (`tools`, `tool_choice`, ... in targets.yaml),
    /// which a case's and its suite's complete (`docs/tools.md`).
    fn tool_settings(&self) -> Option<&ToolSettings> {
        None
    }

    /// The adaptive concurrency of the target's HTTP calls (LLM APIs), which the run opens at
    /// `--workers` and reports on (`docs/running.md#rate-limits`).
    fn throttle(&self) -> Option<&std::sync::Arc<super::Throttle>> {
        None
    }

    /// The provider's batch API (`docs/batch.md`), when it sells batch processing.
    fn batch_api(&self) -> Option<&dyn super::BatchApi> {
        None
    }

    /// An answer of the provider's batch API, priced at its batch price (`docs/batch.md#cost`);
    /// the pricing wrapper sets its cost and what it would have cost online.
    fn price_batched(&self, response: ProviderResponse) -> ProviderResponse {
        response
    }

    /// A cap on concurrent cases (some agents cannot run in parallel).
    fn max_workers(&self) -> Option<usize> {
        None
    }

    /// How this target's cost is known before any call (`docs/running.md#cost`): agents and
    /// commands report it, a mock costs nothing, an LLM API is priced from its tokens (the
    /// registry wraps it in a [`super::PricedProvider`], which says at what price).
    fn cost_basis(&self) -> super::CostBasis {
        match self.kind().class() {
            ProviderClass::Agent | ProviderClass::Command => super::CostBasis::Reported,
            ProviderClass::Mock => super::CostBasis::Free,
            ProviderClass::Llm => super::CostBasis::Unknown(
                "it reports no cost and has no price; give the target a price with `pricing:`".to_owned(),
            ),
        }
    }

    /// The program this provider runs as configured (a name on `PATH` or a path), when its
    /// entry needs one ([`super::ExecutableNeed`]); checked before the run.
    fn executable(&self) -> Option<&str> {
        None
    }

    /// Embeds `text` as a vector (promptfoo's `similar` and `answer-relevance`,
    /// `docs/promptfoo.md#similar`). Only OpenAI-compatible APIs embed.
    fn embed<'a>(&'a self, _text: &'a str) -> ProviderFuture<'a, Embedding> {
        Box::pin(async { Err(ProviderError::Unsupported("this provider cannot embed text")) })
    }

    /// Asks the provider's moderation API about `text` (promptfoo's `moderation`,
    /// `docs/promptfoo.md#moderation`). Only OpenAI-compatible APIs moderate.
    fn moderate<'a>(&'a self, _text: &'a str) -> ProviderFuture<'a, Moderation> {
        Box::pin(async { Err(ProviderError::Unsupported("this provider has no moderation API")) })
    }
}

/// What a moderation call answered: each flagged category (its code) with its score, the
/// highest over the API's results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Moderation {
    pub flags: Vec<(String, f64)>,
}

/// What an embeddings call answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Embedding {
    pub vector: Vec<f64>,
    /// Input tokens the API counted.
    pub tokens: u64,
    pub cost_usd: Option<f64>,
}

/// Writes the [`Provider`] methods a wrapper (the response cache, pricing) passes unchanged to
/// the provider it wraps, `self.inner`; the wrapper writes the others itself.
macro_rules! pass_to_inner {
    (@ target_name) => {
        fn target_name(&self) -> &str {
            self.inner.target_name()
        }
    };
    (@ kind) => {
        fn kind(&self) -> $crate::providers::ProviderKind {
            self.inner.kind()
        }
    };
    (@ prompt_mode) => {
        fn prompt_mode(&self) -> $crate::providers::PromptMode {
            self.inner.prompt_mode()
        }
    };
    (@ healthcheck) => {
        fn healthcheck<'a>(&'a self, eval_dir: &'a std::path::Path) -> $crate::providers::ProviderFuture<'a, ()> {
            self.inner.healthcheck(eval_dir)
        }
    };
    (@ supports_batch) => {
        fn supports_batch(&self) -> bool {
            self.inner.supports_batch()
        }
    };
    (@ invoke_batch) => {
        fn invoke_batch<'a>(
            &'a self,
            requests: &'a [$crate::providers::ProviderRequest],
        ) -> $crate::providers::ProviderFuture<
            'a,
            Vec<Result<$crate::providers::ProviderResponse, $crate::providers::ProviderError>>,
        > {
            self.inner.invoke_batch(requests)
        }
    };
    (@ public_settings) => {
        fn public_settings(&self) -> serde_json::Value {
            self.inner.public_settings()
        }
    };
    (@ tool_settings) => {
        fn tool_settings(&self) -> Option<&$crate::model::ToolSettings> {
            self.inner.tool_settings()
        }
    };
    (@ max_workers) => {
        fn max_workers(&self) -> Option<usize> {
            self.inner.max_workers()
        }
    };
    (@ executable) => {
        fn executable(&self) -> Option<&str> {
            self.inner.executable()
        }
    };
    (@ embed) => {
        fn embed<'a>(&'a self, text: &'a str) -> $crate::providers::ProviderFuture<'a, $crate::providers::Embedding> {
            self.inner.embed(text)
        }
    };
    (@ moderate) => {
        fn moderate<'a>(&'a self, text: &'a str) -> $crate::providers::ProviderFuture<'a, $crate::providers::Moderation> {
            self.inner.moderate(text)
        }
    };
    (@ throttle) => {
        fn throttle(&self) -> Option<&std::sync::Arc<$crate::providers::Throttle>> {
            self.inner.throttle()
        }
    };
    (@ batch_api) => {
        fn batch_api(&self) -> Option<&dyn $crate::providers::BatchApi> {
            self.inner.batch_api()
        }
    };
    (@ price_batched) => {
        fn price_batched(&self, response: $crate::providers::ProviderResponse) -> $crate::providers::ProviderResponse {
            self.inner.price_batched(response)
        }
    };
    (@ cost_basis) => {
        fn cost_basis(&self) -> $crate::providers::CostBasis {
            self.inner.cost_basis()
        }
    };
    ($($method:ident),* $(,)?) => {
        $($crate::providers::provider::pass_to_inner!(@ $method);)*
    };
}
pub(crate) use pass_to_inner;
