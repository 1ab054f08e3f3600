//! The test kit every agentv test uses: the end-to-end tests (`tests/e2e/`), the core's own
//! tests and the benchmarks (`bench/tools`).
//!
//! - [`Project`]: a temporary project with files; runs the built `agentv` in it and reads its
//!   results ([`project`]).
//! - [`Run`], [`Spawned`]: children run under a deadline ([`process::default_timeout`], 60 s,
//!   `AGENTV_TEST_TIMEOUT` to change it): a hung child is killed with every process it
//!   started and the test fails saying so.
//! - [`llm`]: fake OpenAI, Azure OpenAI, Anthropic and Gemini services on 127.0.0.1.
//! - [`agents`]: fake agent CLIs replaying recorded Claude Code and Codex transcripts.
//! - [`terminal`]: a child with its stderr on a pseudo-terminal, to see what a user would.
//! - [`toolchains`]: whether node or cargo is installed; Rust judge crates built offline.
//! - [`assert_run_snapshot!`]: snapshots of a run with paths, durations and versions filtered.
//!
//! Nothing here reaches the internet.

pub mod agents;
pub mod google;
pub mod llm;
pub mod process;
pub mod project;
pub mod snapshot;
pub mod terminal;
pub mod toolchains;

pub use insta;
pub use process::{Run, Spawned};
pub use project::{Project, agentv, agentv_bin, keyword_cases, make_executable, mock_targets, repo_root, walk};
