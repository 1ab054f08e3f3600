//! Reading one target's settings: `${{ VAR }}` resolution, typed values, unknown-key warnings.
//! Each provider module parses its own settings with this reader (`from_settings`).

use std::path::PathBuf;
use std::time::Duration;

use super::registry::MissingVar;
use super::retry::RetryPolicy;
use crate::load::node::{Node, NodeValue, Pos};
use crate::load::{Diagnostics, Env, Fields, Secrets, describe, env_reference};

/// Keys every target may have; provider settings are the rest.
pub(crate) const COMMON_KEYS: &[&str] = &["name", "provider", "judge_target", "workers", "provider_batching"];

/// Reads one target's settings, resolving `${{ VAR }}` references.
pub(crate) struct Settings<'a> {
    pub(crate) fields: Fields<'a>,
    pub(crate) env: &'a Env,
    pub(crate) secrets: &'a Secrets,
    pub(crate) target: &'a str,
    pub(crate) base_dir: PathBuf,
    pub(crate) diags: Diagnostics,
    pub(crate) missing: Vec<MissingVar>,
}

impl Settings<'_> {
    pub(crate) fn node(&mut self, names: &[&str]) -> Option<&Node> {
        self.fields.take(names)
    }

    /// A string setting. A `${{ VAR }}` whose variable is unset makes an optional setting
    /// unset, and is recorded as missing when `required`.
    pub(crate) fn string(&mut self, names: &[&str], required: bool) -> Option<String> {
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

    pub(crate) fn resolve_text(&mut self, text: &str, setting: &str, required: bool) -> Option<String> {
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

    pub(crate) fn seconds(&mut self, names: &[&str]) -> Option<Duration> {
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

    pub(crate) fn millis(&mut self, names: &[&str]) -> Option<Duration> {
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

    pub(crate) fn boolean(&mut self, names: &[&str]) -> Option<bool> {
        self.fields.boolean(names, &mut self.diags)
    }

    pub(crate) fn number(&mut self, names: &[&str]) -> Option<f64> {
        self.fields.non_negative(names, &mut self.diags)
    }

    pub(crate) fn whole(&mut self, names: &[&str]) -> Option<u64> {
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
    pub(crate) fn credential(&mut self, names: &[&str], example: &str, pos: Pos) -> Option<String> {
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

    /// The settings every LLM API target shares.
    pub(crate) fn llm(&mut self) -> super::llm::LlmSettings {
        super::llm::LlmSettings {
            temperature: self.number(&["temperature"]),
            max_output_tokens: self.whole(&["max_output_tokens", "max_tokens"]),
            timeout: self.seconds(&["timeout_seconds"]),
            retry: self.retry(),
        }
    }

    /// The retry policy (D14) from `max_retries`, `initial_delay_ms`, `max_delay_ms`,
    /// `backoff_factor` and `retryable_status_codes` (also with a `retry_` prefix).
    pub(crate) fn retry(&mut self) -> RetryPolicy {
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
    pub(crate) fn dir(&mut self, names: &[&str]) -> Option<PathBuf> {
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

    pub(crate) fn finish(&mut self, known: &[&str]) {
        let mut all: Vec<&str> = COMMON_KEYS.to_vec();
        all.extend_from_slice(known);
        self.fields
            .warn_unknown(&format!("target `{}`", self.target), &all, &mut self.diags);
    }

    pub(crate) fn error(&mut self, pos: Pos, message: String, help: Option<String>) {
        self.diags.error(pos, message, help);
    }
}

/// Keys every LLM provider accepts besides its own.
pub(crate) const LLM_KEYS: &[&str] = &[
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

pub(crate) fn finish_llm(s: &mut Settings<'_>, own: &[&str]) {
    let mut known: Vec<&str> = own.to_vec();
    known.extend_from_slice(LLM_KEYS);
    s.finish(&known);
}
