//! Turns target definitions into providers: settings validated, `${{ VAR }}` resolved,
//! credentials checked before any call.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::agent::{AgentConfig, find_executable};
use super::anthropic::{ANTHROPIC_BASE_URL, ANTHROPIC_VERSION, AnthropicConfig, AnthropicProvider};
use super::cache::{CachedProvider, ResponseCache};
use super::claude_code::ClaudeCodeProvider;
use super::cli::{CliConfig, CliProvider, Healthcheck};
use super::codex::CodexProvider;
use super::gemini::{GEMINI_BASE_URL, GEMINI_DEFAULT_MODEL, GeminiConfig, GeminiProvider};
use super::mock::{Delay, MockProvider};
use super::openai::{AZURE_API_VERSION, Flavor, OPENAI_BASE_URL, OpenAiConfig, OpenAiProvider};
use super::retry::RetryPolicy;
use super::template::{check_template, unknown_placeholders};
use super::vscode::{VsCodeConfig, VsCodeProvider};
use super::{Provider, ProviderKind};
use crate::load::node::{Node, NodeValue, Pos};
use crate::load::{Diagnostic, Diagnostics, Env, Fields, Secrets, TargetDef, TargetsFile, describe, env_reference};

/// Keys every target may have; provider settings are the rest.
const COMMON_KEYS: &[&str] = &["name", "provider", "judge_target", "workers", "provider_batching"];

/// A `${{ VAR }}` a target needs but the environment lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingVar {
    pub var: String,
    pub target: String,
    pub setting: String,
}

/// Why a target cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ResolveError {
    #[error("unknown target `{name}`; available targets: {}", list_or_none(available))]
    Unknown { name: String, available: Vec<String> },
    #[error("{}", missing_message(.0))]
    MissingCredentials(Vec<MissingVar>),
    #[error("target `{name}` is misconfigured:\n{}", join_lines(problems))]
    Invalid { name: String, problems: Vec<Diagnostic> },
    #[error(
        "target `{name}`: {what} executable `{executable}` not found on PATH; install it or set `executable` to its path"
    )]
    MissingExecutable {
        name: String,
        what: &'static str,
        executable: String,
    },
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_owned()
    } else {
        names.join(", ")
    }
}

fn join_lines(problems: &[Diagnostic]) -> String {
    problems.iter().map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n")
}

fn missing_message(missing: &[MissingVar]) -> String {
    let lines: Vec<String> = missing
        .iter()
        .map(|m| format!("  {} (target `{}`, setting `{}`)", m.var, m.target, m.setting))
        .collect();
    format!(
        "missing environment variables:\n{}\nset them in the environment or in a .env file next to the eval file",
        lines.join("\n")
    )
}

/// A target ready to run cases: its provider, the judge provider, and run settings.
#[derive(Clone)]
pub struct ResolvedTarget {
    pub name: String,
    pub provider: Arc<dyn Provider>,
    pub judge_name: String,
    pub judge: Arc<dyn Provider>,
    pub workers: Option<usize>,
    pub batching: bool,
    /// Resolves other targets lazily (code judges may name one through the proxy).
    pub registry: Arc<TargetRegistry>,
}

impl fmt::Debug for ResolvedTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolvedTarget")
            .field("name", &self.name)
            .field("provider", &self.provider.kind())
            .field("judge", &self.judge_name)
            .finish()
    }
}

/// All targets of one targets file, resolved on first use.
pub struct TargetRegistry {
    file: Option<TargetsFile>,
    env: Arc<Env>,
    secrets: Secrets,
    child_env: Arc<[(String, String)]>,
    cache: Mutex<HashMap<String, Arc<dyn Provider>>>,
    warnings: Mutex<Vec<Diagnostic>>,
    /// `--cache`: answers of every provider but the mock are looked up here first.
    responses: Option<Arc<ResponseCache>>,
}

impl TargetRegistry {
    pub fn new(file: Option<TargetsFile>, env: Arc<Env>, secrets: Secrets) -> Self {
        let child_env: Vec<(String, String)> = env.child_vars().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
        Self {
            file,
            env,
            secrets,
            child_env: Arc::from(child_env),
            cache: Mutex::new(HashMap::new()),
            warnings: Mutex::new(Vec::new()),
            responses: None,
        }
    }

    /// Caches the answers of this registry's providers in `cache`.
    pub fn with_response_cache(mut self, cache: Option<Arc<ResponseCache>>) -> Self {
        self.responses = cache;
        self
    }

    /// A registry whose only target is `provider` (dry runs, tests).
    pub fn with_provider(provider: Arc<dyn Provider>, env: Arc<Env>) -> Self {
        let registry = Self::new(None, env, Secrets::default());
        if let Ok(mut cache) = registry.cache.lock() {
            cache.insert(provider.target_name().to_owned(), provider);
        }
        registry
    }

    pub fn targets_path(&self) -> Option<&Path> {
        self.file.as_ref().map(|f| f.path.as_path())
    }

    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Variables from `.env` files, for child processes.
    pub fn child_env(&self) -> Arc<[(String, String)]> {
        self.child_env.clone()
    }

    /// Target names a caller may pick from.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.file.as_ref().map(TargetsFile::names).unwrap_or_default();
        if let Ok(cache) = self.cache.lock() {
            for name in cache.keys() {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
        names
    }

    /// Warnings found while resolving (unknown settings); drained by the caller.
    pub fn take_warnings(&self) -> Vec<Diagnostic> {
        self.warnings
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }

    /// The provider of target `name`, built on first use.
    pub fn resolve(&self, name: &str) -> Result<Arc<dyn Provider>, ResolveError> {
        if let Some(p) = self.cache.lock().ok().and_then(|c| c.get(name).cloned()) {
            return Ok(p);
        }
        let def = self
            .file
            .as_ref()
            .and_then(|f| f.get(name))
            .ok_or_else(|| ResolveError::Unknown {
                name: name.to_owned(),
                available: self.names(),
            })?;
        let provider = self.build(def)?;
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(name.to_owned(), provider.clone());
        }
        Ok(provider)
    }

    fn definition(&self, name: &str) -> Option<&TargetDef> {
        self.file.as_ref().and_then(|f| f.get(name))
    }

    /// Resolves `name` and its judge target together, so one error lists every missing
    /// variable of both.
    pub fn resolve_target(self: &Arc<Self>, name: &str) -> Result<ResolvedTarget, ResolveError> {
        let def = self.definition(name);
        let judge_name = def
            .and_then(|d| d.judge_target.clone())
            .unwrap_or_else(|| name.to_owned());
        let provider = self.resolve(name);
        let judge = if judge_name == name {
            provider.clone()
        } else {
            self.resolve(&judge_name)
        };
        let (provider, judge) = match (provider, judge) {
            (Ok(p), Ok(j)) => (p, j),
            (Err(ResolveError::MissingCredentials(mut a)), Err(ResolveError::MissingCredentials(b))) => {
                a.extend(b);
                return Err(ResolveError::MissingCredentials(a));
            }
            (Err(e), _) | (_, Err(e)) => return Err(e),
        };
        Ok(ResolvedTarget {
            name: name.to_owned(),
            provider,
            judge_name,
            judge,
            workers: def.and_then(|d| d.workers),
            batching: def.is_some_and(|d| d.provider_batching),
            registry: self.clone(),
        })
    }

    /// Checks every target's settings without needing its variables (for `agentv validate`).
    pub fn check_all(&self) -> Vec<ResolveError> {
        let Some(file) = &self.file else {
            return Vec::new();
        };
        file.targets
            .iter()
            .filter_map(|def| match self.build(def) {
                Err(e @ ResolveError::Invalid { .. }) => Some(e),
                _ => None,
            })
            .collect()
    }

    fn build(&self, def: &TargetDef) -> Result<Arc<dyn Provider>, ResolveError> {
        let mut diags = Diagnostics::new(&def.file);
        let mut s = Settings {
            fields: Fields::of(&def.settings, "a target", &mut diags).ok_or_else(|| ResolveError::Invalid {
                name: def.name.clone(),
                problems: Vec::new(),
            })?,
            env: &self.env,
            secrets: &self.secrets,
            target: &def.name,
            base_dir: def.base_dir().to_path_buf(),
            diags,
            missing: Vec::new(),
        };
        for key in COMMON_KEYS {
            let _ = s.fields.take(&[key]);
        }
        let provider: Option<Arc<dyn Provider>> = match def.provider {
            ProviderKind::Mock => mock(def, &mut s).map(|p| Arc::new(p) as Arc<dyn Provider>),
            ProviderKind::Cli => cli(def, &mut s, self.child_env.clone()).map(|p| Arc::new(p) as Arc<dyn Provider>),
            ProviderKind::OpenAi | ProviderKind::Azure => {
                openai(def, &mut s).map(|p| Arc::new(OpenAiProvider::new(def.name.clone(), p)) as Arc<dyn Provider>)
            }
            ProviderKind::Anthropic => anthropic(def, &mut s)
                .map(|p| Arc::new(AnthropicProvider::new(def.name.clone(), p)) as Arc<dyn Provider>),
            ProviderKind::Gemini => {
                gemini(&mut s).map(|p| Arc::new(GeminiProvider::new(def.name.clone(), p)) as Arc<dyn Provider>)
            }
            ProviderKind::ClaudeCode => agent_config(&mut s, self.child_env.clone(), "claude", &[])
                .map(|c| Arc::new(ClaudeCodeProvider::new(def.name.clone(), c)) as Arc<dyn Provider>),
            ProviderKind::Codex => {
                let policy = s
                    .string(&["approval_policy", "ask_for_approval"], false)
                    .unwrap_or_else(|| "never".to_owned());
                agent_config(
                    &mut s,
                    self.child_env.clone(),
                    "codex",
                    &["approval_policy", "ask_for_approval"],
                )
                .map(|c| Arc::new(CodexProvider::new(def.name.clone(), c, policy)) as Arc<dyn Provider>)
            }
            ProviderKind::VsCode | ProviderKind::VsCodeInsiders => vscode(def, &mut s, self.child_env.clone())
                .map(|c| Arc::new(VsCodeProvider::new(def.name.clone(), def.provider, c)) as Arc<dyn Provider>),
        };
        let Settings { diags, missing, .. } = s;
        let all = diags.into_vec();
        let (errors, warnings): (Vec<_>, Vec<_>) = all
            .into_iter()
            .partition(|d| d.severity == crate::load::Severity::Error);
        if let Ok(mut w) = self.warnings.lock() {
            w.extend(warnings);
        }
        if !errors.is_empty() {
            return Err(ResolveError::Invalid {
                name: def.name.clone(),
                problems: errors,
            });
        }
        if !missing.is_empty() {
            return Err(ResolveError::MissingCredentials(missing));
        }
        let provider = provider.ok_or_else(|| ResolveError::Invalid {
            name: def.name.clone(),
            problems: Vec::new(),
        })?;
        if let Some(executable) = provider
            .public_settings()
            .get("executable")
            .and_then(serde_json::Value::as_str)
            && find_executable(executable).is_none()
        {
            return Err(ResolveError::MissingExecutable {
                name: def.name.clone(),
                what: if def.provider == ProviderKind::Codex {
                    "Codex"
                } else {
                    "Claude Code"
                },
                executable: executable.to_owned(),
            });
        }
        Ok(match &self.responses {
            Some(cache) if def.provider != ProviderKind::Mock => Arc::new(CachedProvider::new(provider, cache.clone())),
            _ => provider,
        })
    }
}

/// Reads one target's settings, resolving `${{ VAR }}` references.
struct Settings<'a> {
    fields: Fields<'a>,
    env: &'a Env,
    secrets: &'a Secrets,
    target: &'a str,
    base_dir: PathBuf,
    diags: Diagnostics,
    missing: Vec<MissingVar>,
}

impl Settings<'_> {
    fn node(&mut self, names: &[&str]) -> Option<&Node> {
        self.fields.take(names)
    }

    /// A string setting. A `${{ VAR }}` whose variable is unset makes an optional setting
    /// unset, and is recorded as missing when `required`.
    fn string(&mut self, names: &[&str], required: bool) -> Option<String> {
        let node = self.fields.take(names)?;
        let text = match &node.value {
            NodeValue::Str(s) => s.clone(),
            NodeValue::Int(_) | NodeValue::Float(_) | NodeValue::Bool(_) => node.to_json().to_string(),
            NodeValue::Null => return None,
            _ => {
                self.diags.error(
                    node.pos,
                    format!("`{}` must be a string, found {}", names[0], node.type_name()),
                    None,
                );
                return None;
            }
        };
        self.resolve_text(&text, names[0], required)
    }

    fn resolve_text(&mut self, text: &str, setting: &str, required: bool) -> Option<String> {
        match env_reference(text) {
            None => Some(text.to_owned()),
            Some(var) => match self.env.get(var) {
                Some(value) => {
                    self.secrets.add(&value);
                    Some(value)
                }
                None => {
                    if required {
                        self.missing.push(MissingVar {
                            var: var.to_owned(),
                            target: self.target.to_owned(),
                            setting: setting.to_owned(),
                        });
                    }
                    None
                }
            },
        }
    }

    fn seconds(&mut self, names: &[&str]) -> Option<Duration> {
        let node = self.fields.take(names)?;
        match node.as_f64() {
            Some(v) if v.is_finite() && v > 0.0 => Some(Duration::from_secs_f64(v)),
            _ => {
                self.diags.error(
                    node.pos,
                    format!(
                        "`{}` must be a number of seconds > 0, found {}",
                        names[0],
                        describe(node)
                    ),
                    None,
                );
                None
            }
        }
    }

    fn millis(&mut self, names: &[&str]) -> Option<Duration> {
        let node = self.fields.take(names)?;
        match node.as_f64() {
            Some(v) if v.is_finite() && v >= 0.0 => Some(Duration::from_secs_f64(v / 1000.0)),
            _ => {
                self.diags.error(
                    node.pos,
                    format!("`{}` must be milliseconds ≥ 0, found {}", names[0], describe(node)),
                    None,
                );
                None
            }
        }
    }

    fn boolean(&mut self, names: &[&str]) -> Option<bool> {
        self.fields.boolean(names, &mut self.diags)
    }

    fn number(&mut self, names: &[&str]) -> Option<f64> {
        self.fields.non_negative(names, &mut self.diags)
    }

    fn whole(&mut self, names: &[&str]) -> Option<u64> {
        let node = self.fields.take(names)?;
        match node.value {
            NodeValue::Int(i) if i >= 0 => Some(i as u64),
            _ => {
                self.diags.error(
                    node.pos,
                    format!("`{}` must be a whole number ≥ 0, found {}", names[0], describe(node)),
                    None,
                );
                None
            }
        }
    }

    /// A credential: required, and recorded as missing when its variable is unset.
    fn credential(&mut self, names: &[&str], example: &str, pos: Pos) -> Option<String> {
        let present = self.fields.take(names).is_some();
        let value = self.string(names, true);
        if !present {
            self.error(
                pos,
                format!("target `{}` needs `{}`", self.target, names[0]),
                Some(format!(
                    "add `{}: ${{{{ {example} }}}}` and set {example} in the environment or a .env file",
                    names[0]
                )),
            );
        }
        value
    }

    /// The retry policy (D14) from `max_retries`, `initial_delay_ms`, `max_delay_ms`,
    /// `backoff_factor` and `retryable_status_codes` (also with a `retry_` prefix).
    fn retry(&mut self) -> RetryPolicy {
        let mut policy = RetryPolicy::default();
        if let Some(n) = self.whole(&["max_retries"]) {
            policy.max_retries = n.min(100) as u32;
        }
        if let Some(ms) = self.millis(&["initial_delay_ms", "retry_initial_delay_ms"]) {
            policy.initial_delay = ms;
        }
        if let Some(ms) = self.millis(&["max_delay_ms", "retry_max_delay_ms"]) {
            policy.max_delay = ms;
        }
        if let Some(f) = self.number(&["backoff_factor", "retry_backoff_factor"]) {
            policy.backoff_factor = f;
        }
        if let Some(node) = self.fields.take(&["retryable_status_codes", "retry_status_codes"]) {
            let codes: Option<Vec<u16>> = node
                .as_seq()
                .map(|items| items.iter().filter_map(|n| n.as_f64()).map(|c| c as u16).collect());
            match codes {
                Some(codes) => policy.retryable_status_codes = codes,
                None => self.diags.error(
                    node.pos,
                    "`retryable_status_codes` must be a list of HTTP statuses".to_owned(),
                    None,
                ),
            }
        }
        policy
    }

    /// A directory setting, relative to the targets file's directory (D11).
    fn dir(&mut self, names: &[&str]) -> Option<PathBuf> {
        let pos = self.fields.take(names).map(|n| n.pos);
        let text = self.string(names, false)?;
        let path = crate::load::normalize(&self.base_dir.join(&text));
        if !path.is_dir() {
            self.diags.error(
                pos.unwrap_or_default(),
                format!("`{}` directory does not exist: {}", names[0], path.display()),
                None,
            );
        }
        Some(path)
    }

    fn finish(&mut self, known: &[&str]) {
        let mut all: Vec<&str> = COMMON_KEYS.to_vec();
        all.extend_from_slice(known);
        self.fields
            .warn_unknown(&format!("target `{}`", self.target), &all, &mut self.diags);
    }

    fn error(&mut self, pos: Pos, message: String, help: Option<String>) {
        self.diags.error(pos, message, help);
    }
}

fn mock(def: &TargetDef, s: &mut Settings<'_>) -> Option<MockProvider> {
    let response = match s.node(&["response"]).map(|n| (n.value.clone(), n.to_json())) {
        Some((NodeValue::Map(_) | NodeValue::Seq(_), json)) => Some(json.to_string()),
        Some(_) => s.string(&["response"], true),
        None => None,
    };
    let mut responses = HashMap::new();
    if let Some(node) = s.node(&["responses"]).cloned() {
        match node.as_map() {
            Some(entries) => {
                for (k, v) in entries {
                    let text = match &v.value {
                        NodeValue::Str(t) => t.clone(),
                        _ => v.to_json().to_string(),
                    };
                    responses.insert(k.key_text(), text);
                }
            }
            None => s.error(node.pos, "`responses` must map eval ids to answers".to_owned(), None),
        }
    }
    let fixed = s.millis(&["delay_ms"]);
    let min = s.millis(&["delay_min_ms"]);
    let max = s.millis(&["delay_max_ms"]);
    let delay = match (min, max, fixed) {
        (Some(lo), Some(hi), _) => Delay::Between(lo, hi.max(lo)),
        (_, _, Some(d)) => Delay::Fixed(d),
        _ => Delay::None,
    };
    s.finish(&["response", "responses", "delay_ms", "delay_min_ms", "delay_max_ms"]);
    Some(MockProvider::new(def.name.clone(), response, delay).with_responses(responses))
}

/// Keys every LLM provider accepts besides its own.
const LLM_KEYS: &[&str] = &[
    "temperature",
    "max_output_tokens",
    "max_tokens",
    "timeout_seconds",
    "max_retries",
    "initial_delay_ms",
    "retry_initial_delay_ms",
    "max_delay_ms",
    "retry_max_delay_ms",
    "backoff_factor",
    "retry_backoff_factor",
    "retryable_status_codes",
    "retry_status_codes",
];

fn finish_llm(s: &mut Settings<'_>, own: &[&str]) {
    let mut known: Vec<&str> = own.to_vec();
    known.extend_from_slice(LLM_KEYS);
    s.finish(&known);
}

fn openai(def: &TargetDef, s: &mut Settings<'_>) -> Option<OpenAiConfig> {
    let temperature = s.number(&["temperature"]);
    let max_output_tokens = s.whole(&["max_output_tokens", "max_tokens"]);
    let timeout = s.seconds(&["timeout_seconds"]);
    let retry = s.retry();
    if def.provider == ProviderKind::Azure {
        let endpoint = s.string(&["endpoint", "resource_name", "resource"], true);
        let deployment = s.string(&["deployment_name", "deployment", "model"], true);
        let version = s
            .string(&["api_version", "version"], false)
            .map(|v| v.trim_start_matches("api-version=").to_owned())
            .unwrap_or_else(|| AZURE_API_VERSION.to_owned());
        let api_key = s.credential(&["api_key"], "AZURE_OPENAI_API_KEY", def.pos);
        finish_llm(
            s,
            &[
                "endpoint",
                "resource_name",
                "resource",
                "deployment_name",
                "deployment",
                "model",
                "api_version",
                "version",
                "api_key",
            ],
        );
        if endpoint.is_none() && s.missing.is_empty() {
            s.error(
                def.pos,
                format!("azure target `{}` needs `endpoint` or `resource_name`", def.name),
                None,
            );
        }
        if deployment.is_none() && s.missing.is_empty() {
            s.error(
                def.pos,
                format!("azure target `{}` needs `deployment_name`", def.name),
                None,
            );
        }
        let endpoint = endpoint?;
        let endpoint = if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
            endpoint
        } else {
            format!("https://{endpoint}.openai.azure.com")
        };
        return Some(OpenAiConfig {
            flavor: Flavor::Azure {
                endpoint,
                deployment: deployment?,
                api_version: version,
            },
            api_key: Some(api_key?),
            temperature,
            max_output_tokens,
            retry,
            timeout,
        });
    }
    let base_url = s
        .string(&["base_url"], true)
        .unwrap_or_else(|| OPENAI_BASE_URL.to_owned());
    let model = s.string(&["model"], true);
    let organization = s.string(&["organization"], false);
    let key_configured = s.fields.take(&["api_key"]).is_some();
    let api_key = if base_url == OPENAI_BASE_URL || key_configured {
        s.credential(&["api_key"], "OPENAI_API_KEY", def.pos)
    } else {
        None
    };
    finish_llm(s, &["base_url", "model", "organization", "api_key"]);
    if model.is_none() && s.missing.is_empty() {
        s.error(
            def.pos,
            format!("openai target `{}` needs `model`", def.name),
            Some("for example `model: gpt-4o-mini`".to_owned()),
        );
    }
    Some(OpenAiConfig {
        flavor: Flavor::OpenAi {
            base_url,
            model: model?,
            organization,
        },
        api_key,
        temperature,
        max_output_tokens,
        retry,
        timeout,
    })
}

fn anthropic(def: &TargetDef, s: &mut Settings<'_>) -> Option<AnthropicConfig> {
    let base_url = s
        .string(&["base_url"], true)
        .unwrap_or_else(|| ANTHROPIC_BASE_URL.to_owned());
    let model = s.string(&["model", "deployment", "variant"], true);
    let api_key = s.credential(&["api_key"], "ANTHROPIC_API_KEY", def.pos);
    let anthropic_version = s
        .string(&["anthropic_version"], false)
        .unwrap_or_else(|| ANTHROPIC_VERSION.to_owned());
    let temperature = s.number(&["temperature"]);
    let max_output_tokens = s.whole(&["max_output_tokens", "max_tokens"]);
    let thinking_budget = s.whole(&["thinking_budget"]);
    let thinking = s.node(&["thinking"]).map(Node::to_json);
    let timeout = s.seconds(&["timeout_seconds"]);
    let retry = s.retry();
    finish_llm(
        s,
        &[
            "base_url",
            "model",
            "deployment",
            "variant",
            "api_key",
            "anthropic_version",
            "thinking_budget",
            "thinking",
        ],
    );
    if model.is_none() && s.missing.is_empty() {
        s.error(
            def.pos,
            format!("anthropic target `{}` needs `model`", def.name),
            Some("for example `model: claude-sonnet-4-5`".to_owned()),
        );
    }
    Some(AnthropicConfig {
        base_url,
        model: model?,
        api_key: api_key?,
        anthropic_version,
        temperature,
        max_output_tokens,
        thinking_budget,
        thinking,
        retry,
        timeout,
    })
}

fn gemini(s: &mut Settings<'_>) -> Option<GeminiConfig> {
    let base_url = s
        .string(&["base_url"], true)
        .unwrap_or_else(|| GEMINI_BASE_URL.to_owned());
    let model = s
        .string(&["model", "deployment", "variant"], false)
        .unwrap_or_else(|| GEMINI_DEFAULT_MODEL.to_owned());
    let pos = s.fields.pos;
    let api_key = s.credential(&["api_key"], "GOOGLE_API_KEY", pos);
    let temperature = s.number(&["temperature"]);
    let max_output_tokens = s.whole(&["max_output_tokens", "max_tokens"]);
    let timeout = s.seconds(&["timeout_seconds"]);
    let retry = s.retry();
    finish_llm(s, &["base_url", "model", "deployment", "variant", "api_key"]);
    Some(GeminiConfig {
        base_url,
        model,
        api_key: api_key?,
        temperature,
        max_output_tokens,
        retry,
        timeout,
    })
}

/// Settings of `claude-code` and `codex`.
fn agent_config(
    s: &mut Settings<'_>,
    env: Arc<[(String, String)]>,
    default_exe: &str,
    own: &[&str],
) -> Option<AgentConfig> {
    let executable = s
        .string(&["executable", "command", "binary"], true)
        .unwrap_or_else(|| default_exe.to_owned());
    // A relative path (not a bare name looked up on PATH) is relative to the targets file (D11).
    let executable = if executable.contains('/') && !executable.starts_with('/') {
        crate::load::normalize(&s.base_dir.join(&executable))
            .display()
            .to_string()
    } else {
        executable
    };
    let mut args = Vec::new();
    if let Some(node) = s.node(&["args", "arguments"]).cloned() {
        match node.as_seq() {
            Some(items) => {
                for item in items {
                    let text = match &item.value {
                        NodeValue::Str(t) => t.clone(),
                        _ => item.to_json().to_string(),
                    };
                    if let Some(value) = s.resolve_text(&text, "args", true) {
                        args.push(value);
                    }
                }
            }
            None => s.error(node.pos, "`args` must be a list of strings".to_owned(), None),
        }
    }
    let cwd = s.dir(&["cwd"]);
    let timeout = s.seconds(&["timeout_seconds"]);
    let model = s.string(&["model"], true);
    let system_prompt = s.string(&["system_prompt"], true);
    let log_dir = s
        .string(&["log_dir", "log_directory", "stream_log_dir"], false)
        .map(|d| crate::load::normalize(&s.base_dir.join(d)));
    let _ = s.string(&["log_format"], false);
    let mut known = vec![
        "executable",
        "command",
        "binary",
        "args",
        "arguments",
        "cwd",
        "timeout_seconds",
        "model",
        "system_prompt",
        "log_dir",
        "log_directory",
        "stream_log_dir",
        "log_format",
    ];
    known.extend_from_slice(own);
    s.finish(&known);
    Some(AgentConfig {
        executable,
        args,
        cwd,
        timeout,
        model,
        system_prompt,
        log_dir,
        env,
    })
}

fn vscode(def: &TargetDef, s: &mut Settings<'_>, env: Arc<[(String, String)]>) -> Option<VsCodeConfig> {
    let default_cmd = if def.provider == ProviderKind::VsCodeInsiders {
        "code-insiders"
    } else {
        "code"
    };
    let vscode_cmd = s
        .string(&["vscode_cmd", "command"], true)
        .unwrap_or_else(|| default_cmd.to_owned());
    let dispatch_pos = s.node(&["dispatch", "dispatch_command"]).map(|n| n.pos);
    let dispatch = s.string(&["dispatch", "dispatch_command"], true);
    if let (Some(template), Some(pos)) = (&dispatch, dispatch_pos) {
        let allowed = ["PROMPT_FILE", "RESPONSE_FILE", "WORKSPACE", "EVAL_ID"];
        let unknown = unknown_placeholders(template, &allowed);
        if !unknown.is_empty() {
            s.error(
                pos,
                format!(
                    "unsupported placeholder {} in `dispatch`",
                    unknown
                        .iter()
                        .map(|u| format!("{{{u}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Some("use {PROMPT_FILE}, {RESPONSE_FILE}, {WORKSPACE}, {EVAL_ID}".to_owned()),
            );
        }
    }
    let wait = s.boolean(&["wait"]).unwrap_or(true);
    let dry_run = s.boolean(&["dry_run"]).unwrap_or(false);
    let subagent_root = s
        .string(&["subagent_root"], false)
        .map(|d| crate::load::normalize(&s.base_dir.join(d)))
        .unwrap_or_else(|| PathBuf::from(".agentv").join("vscode"));
    let workspace = s.dir(&["workspace", "workspace_template"]);
    let timeout = s.seconds(&["timeout_seconds"]);
    s.finish(&[
        "vscode_cmd",
        "command",
        "dispatch",
        "dispatch_command",
        "wait",
        "dry_run",
        "subagent_root",
        "workspace",
        "workspace_template",
        "timeout_seconds",
    ]);
    Some(VsCodeConfig {
        vscode_cmd,
        dispatch,
        wait,
        dry_run,
        subagent_root,
        workspace,
        timeout,
        env,
    })
}

fn cli(def: &TargetDef, s: &mut Settings<'_>, env: Arc<[(String, String)]>) -> Option<CliProvider> {
    let template_pos = s.node(&["command_template"]).map(|n| n.pos);
    let command_template = s.string(&["command_template"], true);
    match (&command_template, template_pos) {
        (None, None) => s.error(
            def.pos,
            format!("cli target `{}` is missing `command_template`", def.name),
            Some("add `command_template: my-agent {PROMPT} > {OUTPUT_FILE}`".to_owned()),
        ),
        (Some(t), pos) if t.trim().is_empty() => {
            s.error(pos.unwrap_or(def.pos), "`command_template` is empty".to_owned(), None)
        }
        (Some(t), pos) => check_placeholders(s, t, pos.unwrap_or(def.pos)),
        (None, Some(_)) => {}
    }
    let files_format = s
        .string(&["files_format", "attachments_format"], false)
        .unwrap_or_else(|| "{path}".to_owned());
    let cwd = s.dir(&["cwd"]);
    let timeout = s.seconds(&["timeout_seconds"]);
    let keep_temp_files = s.boolean(&["keep_temp_files", "keep_output_files"]).unwrap_or(false);
    let _ = s.boolean(&["verbose", "cli_verbose"]);
    let healthcheck = match s.node(&["healthcheck"]).cloned() {
        None => None,
        Some(node) => healthcheck(&node, s),
    };
    s.finish(&[
        "command_template",
        "files_format",
        "attachments_format",
        "cwd",
        "timeout_seconds",
        "healthcheck",
        "verbose",
        "cli_verbose",
        "keep_temp_files",
        "keep_output_files",
    ]);
    let config = CliConfig {
        command_template: command_template?,
        files_format,
        cwd,
        timeout,
        healthcheck,
        keep_temp_files,
    };
    Some(CliProvider::new(def.name.clone(), config, env))
}

fn check_placeholders(s: &mut Settings<'_>, template: &str, pos: Pos) {
    let unknown = check_template(template);
    if !unknown.is_empty() {
        let list: Vec<String> = unknown.iter().map(|u| format!("{{{u}}}")).collect();
        s.error(
            pos,
            format!("unsupported placeholder {} in `command_template`", list.join(", ")),
            Some(format!(
                "use {}",
                super::CLI_PLACEHOLDERS
                    .iter()
                    .map(|p| format!("{{{p}}}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        );
    }
}

fn healthcheck(node: &Node, s: &mut Settings<'_>) -> Option<Healthcheck> {
    let mut f = Fields::of(node, "`healthcheck`", &mut s.diags)?;
    let kind = f.string(&["type"], &mut s.diags);
    let timeout = match f.non_negative(&["timeout_seconds"], &mut s.diags) {
        Some(t) if t > 0.0 => Duration::from_secs_f64(t),
        _ => Duration::from_secs(30),
    };
    match kind.as_deref() {
        Some("http") => {
            let url = f
                .string(&["url"], &mut s.diags)
                .and_then(|u| s.resolve_text(&u, "healthcheck.url", true));
            f.warn_unknown("`healthcheck`", &["type", "url", "timeout_seconds"], &mut s.diags);
            match url {
                Some(url) => Some(Healthcheck::Http { url, timeout }),
                None => {
                    s.error(node.pos, "http healthcheck needs `url`".to_owned(), None);
                    None
                }
            }
        }
        Some("command") => {
            let pos = f.take(&["command_template"]).map_or(node.pos, |n| n.pos);
            let template = f.string(&["command_template"], &mut s.diags);
            let cwd = f
                .string(&["cwd"], &mut s.diags)
                .map(|c| crate::load::normalize(&s.base_dir.join(c)));
            f.warn_unknown(
                "`healthcheck`",
                &["type", "command_template", "cwd", "timeout_seconds"],
                &mut s.diags,
            );
            match template {
                Some(template) => {
                    check_placeholders(s, &template, pos);
                    Some(Healthcheck::Command { template, cwd, timeout })
                }
                None => {
                    s.error(
                        node.pos,
                        "command healthcheck needs `command_template`".to_owned(),
                        None,
                    );
                    None
                }
            }
        }
        other => {
            s.error(
                node.pos,
                format!("unsupported healthcheck type `{}`", other.unwrap_or("(none)")),
                Some("use `type: http` with `url`, or `type: command` with `command_template`".to_owned()),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::load_targets_file;

    fn registry(yaml: &str, vars: &[(&str, &str)]) -> (Arc<TargetRegistry>, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("targets.yaml");
        std::fs::write(&path, yaml).expect("write");
        let file = load_targets_file(&path);
        assert!(!file.has_errors(), "{:?}", file.diagnostics);
        let env = Env::from_pairs(vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        (
            Arc::new(TargetRegistry::new(Some(file), Arc::new(env), Secrets::default())),
            dir,
        )
    }

    #[test]
    fn unknown_target_lists_the_available_ones() {
        let (reg, _d) = registry(
            "targets:\n  - {name: a, provider: mock}\n  - {name: b, provider: mock}\n",
            &[],
        );
        let err = reg.resolve_target("c").expect_err("unknown");
        assert_eq!(err.to_string(), "unknown target `c`; available targets: a, b");
    }

    #[test]
    fn every_missing_variable_of_target_and_judge_is_listed() {
        let yaml = "targets:\n  - name: agent\n    provider: cli\n    judge_target: judge\n    command_template: ${{ AGENTV_T_CMD }}\n  - name: judge\n    provider: mock\n    response: ${{ AGENTV_T_JUDGE }}\n";
        let (reg, _d) = registry(yaml, &[]);
        let err = reg.resolve_target("agent").expect_err("missing");
        assert_eq!(
            err.to_string(),
            "missing environment variables:\n  AGENTV_T_CMD (target `agent`, setting `command_template`)\n  AGENTV_T_JUDGE (target `judge`, setting `response`)\nset them in the environment or in a .env file next to the eval file"
        );
    }

    #[test]
    fn resolved_values_are_registered_as_secrets() {
        let yaml = "targets:\n  - {name: m, provider: mock, response: '${{ AGENTV_T_SECRET }}'}\n";
        let (reg, _d) = registry(yaml, &[("AGENTV_T_SECRET", "hunter2-secret")]);
        reg.resolve("m").expect("resolves");
        assert_eq!(reg.secrets().redact("x hunter2-secret y"), "x *** y");
    }

    #[test]
    fn unsupported_placeholder_is_a_configuration_error() {
        let (reg, _d) = registry(
            "targets:\n  - name: c\n    provider: cli\n    commandTemplate: run {PROMPT} {MODEL}\n",
            &[],
        );
        let err = reg.resolve("c").expect_err("invalid");
        let text = err.to_string();
        assert!(
            text.contains("targets.yaml:4:22: error: unsupported placeholder {MODEL} in `command_template`"),
            "{text}"
        );
    }

    #[test]
    fn unknown_settings_warn_with_position() {
        let (reg, _d) = registry("targets:\n  - name: m\n    provider: mock\n    respones: hi\n", &[]);
        reg.resolve("m").expect("resolves");
        let warnings = reg.take_warnings();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0]
                .to_string()
                .contains(":4:5: warning: unknown key `respones` in target `m`"),
            "{}",
            warnings[0]
        );
    }
}
