//! Targets: the `Provider` trait, the provider table, and what providers share (settings,
//! retries, the response cache, the registry that builds targets from their definitions).
//!
//! Adding a provider is one file `providers/<name>.rs` that exports `ENTRIES` (see
//! [`ProviderEntry`]) and one line in the table below; nothing else names providers.
//! See `docs/architecture.md#add-a-provider`.

mod agent;
mod answer;
mod anthropic_batch;
pub mod batch;
mod cache;
mod entry;
mod gemini_batch;
mod google_auth;
pub(crate) mod llm;
mod openai_batch;
mod openai_responses;
mod priced;
pub mod pricing;
mod provider;
pub mod proxy_invoker;
mod registry;
pub mod retry;
mod settings;
mod target;
mod template;
pub mod throttle;

use crate::config::schema::case_insensitive_pattern;

pub use answer::parse_answer;
pub use batch::{BatchApi, BatchLimits, JobState};
pub use cache::{CacheStats, CachedProvider, ResponseCache};
pub use cli::CliProvider;
pub use entry::{BuildContext, ExecutableNeed, ProviderClass, ProviderEntry, ProviderKind};
pub use mock::MockProvider;
pub use priced::{CostBasis, PricedProvider};
pub use provider::{
    AnswerSource, ChatMessage, Embedding, Moderation, PromptMode, Provider, ProviderError, ProviderFuture,
    ProviderRequest, ProviderResponse, ToolList,
};
pub use registry::{MissingVar, ResolveError, ResolvedTarget, TargetRegistry};
pub use settings::TargetSettings;
pub use target::{TARGET_KEYS, TargetDef, TargetsFile};
pub use template::{CLI_PLACEHOLDERS, shell_quote, unknown_cli_placeholders};
pub use throttle::{Throttle, ThrottleStats};

/// Declares the provider modules and lists their entries, in the order messages name them.
macro_rules! provider_table {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// The provider table: every provider's entries, by module.
        pub(crate) static PROVIDERS: &[&[&ProviderEntry]] = &[$($module::ENTRIES),*];
    };
}

provider_table! {
    openai,
    anthropic,
    gemini,
    vertex,
    claude_code,
    codex,
    vscode,
    cli,
    script,
    http,
    mock,
    echo,
}

/// Every provider, in table order.
pub fn entries() -> impl Iterator<Item = &'static ProviderEntry> {
    PROVIDERS.iter().flat_map(|module| module.iter().copied())
}

/// The provider a targets file names (`provider:`), by name or alias, ignoring letter case.
pub fn find(name: &str) -> Option<&'static ProviderEntry> {
    entries().find(|e| e.names().any(|n| n.eq_ignore_ascii_case(name)))
}

/// The providers this version knows, for messages: "openai, azure, … or mock".
pub fn known_providers() -> String {
    let names: Vec<&str> = entries().map(|e| e.name).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// A JSON Schema pattern matching every provider name and alias, in any letter case.
pub fn name_pattern() -> String {
    case_insensitive_pattern(entries().flat_map(ProviderEntry::names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_are_found_in_any_case() {
        for (written, want) in [
            ("openai", "openai"),
            ("Azure-OpenAI", "azure"),
            ("google", "gemini"),
            ("claude", "claude-code"),
            ("codex-cli", "codex"),
            ("vscode-insiders", "vscode-insiders"),
            ("MOCK", "mock"),
        ] {
            assert_eq!(find(written).map(|e| e.name), Some(want), "{written}");
        }
        assert!(find("warp-drive").is_none());
    }

    #[test]
    fn every_name_is_taken_once() {
        let mut seen: Vec<String> = Vec::new();
        for name in entries().flat_map(ProviderEntry::names) {
            let lower = name.to_ascii_lowercase();
            assert!(!seen.contains(&lower), "`{name}` names two providers");
            seen.push(lower);
        }
    }

    #[test]
    fn messages_list_the_table() {
        assert_eq!(
            known_providers(),
            "openai, azure, anthropic, gemini, vertex, claude-code, codex, vscode, vscode-insiders, cli, python, javascript, http, mock or echo"
        );
    }

    #[test]
    fn provider_keys_do_not_redeclare_the_common_target_keys() {
        for entry in entries() {
            let mut seen: Vec<&str> = TARGET_KEYS.keys().flat_map(|k| k.names()).collect();
            for name in entry.keys.keys().flat_map(|k| k.names()) {
                assert!(!seen.contains(&name), "{}: `{name}` is declared twice", entry.name);
                seen.push(name);
            }
        }
    }
}
