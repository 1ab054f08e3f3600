//! Tools for LLM API targets (`docs/tools.md`): reading tool settings from eval and targets
//! files, and running the model's tool calls (a case's `tool_results`, a tool's `mock` or its
//! `command`). The providers translate the definitions to their wire shapes; the runner's tool
//! loop (`run::tool_loop`) sends the results back.

mod exec;
pub mod keys;
mod mock;
pub mod read;

pub use exec::{Executed, Source, ToolRunner};
pub use mock::render as render_mock;
