//! Reading configuration files: the position-keeping value tree, problems with file:line:col,
//! key tables and the reader they drive, and the JSON Schema generated from the tables.
//!
//! Neutral ground: the loaders (`load`), the graders (`evaluators`) and the providers all read
//! their sections with these, and none of them depends on another for it.

mod diagnostics;
mod fields;
pub mod interpolate;
pub mod keys;
pub mod node;
pub mod schema;
pub mod source;

pub use diagnostics::{Diagnostic, Diagnostics, Severity, describe, did_you_mean, promote_warnings};
pub use fields::{Fields, UnknownKeys, text_of};
pub use keys::{DurationRange, IntRange, Key, KeyTable, Kind, NumberRange, TimeUnit};
pub use node::{Node, NodeValue, Pos};
