//! What the provider table holds: per provider, its names, what it is, the keys it reads and
//! how it is built. See `docs/architecture.md#provider-table`.

use std::fmt;
use std::sync::Arc;

use super::Provider;
use super::settings::TargetSettings;
use crate::config::{KeyTable, Pos};

/// One row of the provider table.
pub struct ProviderEntry {
    /// The name written in results and messages (`claude-code`).
    pub name: &'static str,
    /// Other names a targets file may use (`claude`); matched ignoring letter case.
    pub aliases: &'static [&'static str],
    /// One line for the schema and the documentation.
    pub doc: &'static str,
    pub class: ProviderClass,
    /// Answers many requests in one call when a target sets `provider_batching`.
    pub batch: bool,
    /// `--cache` may store its answers (not a mock's: they cost nothing to make again).
    pub cacheable: bool,
    /// A program that must be installed; checked before any case runs.
    pub executable: Option<ExecutableNeed>,
    /// Runs its command in a container with `workspace.docker` and `docker.agent`
    /// (`docs/workspaces.md#containers`).
    pub container: bool,
    /// The keys it reads besides the common target keys.
    pub keys: &'static KeyTable,
    /// Builds the provider from its settings; `None` after reporting why in `settings`.
    pub build: fn(&mut TargetSettings<'_>, &BuildContext<'_>) -> Option<Arc<dyn Provider>>,
}

impl fmt::Debug for ProviderEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderEntry")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ProviderEntry {
    /// Every name the entry answers to: its name, then its aliases.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }
}

/// What kind of target a provider is; decides how prompts are built and recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderClass {
    /// An LLM API: file contents go into the prompt; requests are recorded as
    /// `lm_provider_request`.
    Llm,
    /// An agent CLI: files are referenced by path for the agent to read; requests are recorded
    /// as `agent_provider_request`.
    Agent,
    /// A shell command: files are referenced by path.
    Command,
    /// Canned answers, no external call.
    Mock,
}

/// A program a provider runs, looked up on `PATH` before the run.
#[derive(Debug, Clone, Copy)]
pub struct ExecutableNeed {
    /// How messages name it ("Claude Code").
    pub display: &'static str,
    /// The setting that overrides it (`executable`), for messages about its variable.
    pub setting: &'static str,
}

/// What building a provider needs besides its settings.
#[derive(Debug, Clone)]
pub struct BuildContext<'b> {
    /// The target's name.
    pub target: &'b str,
    /// Where the target's entry starts.
    pub pos: Pos,
    /// The provider name as the file writes it (`vscode-insiders`, `Google`).
    pub provider: &'b str,
    /// Variables from `.env` files, for the processes the provider starts.
    pub child_env: Arc<[(String, String)]>,
}

/// Which provider a target uses: a handle to its table entry.
#[derive(Clone, Copy)]
pub struct ProviderKind(&'static ProviderEntry);

impl ProviderKind {
    pub const fn of(entry: &'static ProviderEntry) -> Self {
        Self(entry)
    }

    /// The provider's name (`openai`, `claude-code`).
    pub fn as_str(self) -> &'static str {
        self.0.name
    }

    pub fn entry(self) -> &'static ProviderEntry {
        self.0
    }

    pub fn class(self) -> ProviderClass {
        self.0.class
    }

    /// Agent providers get file references instead of file contents, and their requests are
    /// recorded as `agent_provider_request`.
    pub fn is_agent(self) -> bool {
        self.0.class == ProviderClass::Agent
    }
}

impl PartialEq for ProviderKind {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for ProviderKind {}

impl fmt::Debug for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}
