//! What the grader table holds and what crosses the `Grader` trait: a row per grader type,
//! the parsed grader, what it needs from a case, what it is given to grade and what it
//! concludes. See `docs/architecture.md#grader-table`.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::config::{Diagnostics, Fields, KeyTable, Node};
use crate::context::RunContext;
use crate::model::{EvalCase, ExecutionMetrics, OutputMessage, TraceEvent, TraceSummary};
use crate::paths::Workspace;
use crate::providers::ResolvedTarget;

/// One row of the grader table.
pub struct GraderEntry {
    /// The `type` written in results first, then every other spelling a file may use
    /// (`llm_judge`, `llm-judge`).
    pub names: &'static [&'static str],
    /// One line for the schema and the documentation.
    pub doc: &'static str,
    /// Its own keys; the common ones (`name`, `type`, `weight`) are read by the list parser.
    pub keys: &'static KeyTable,
    /// Reads its configuration from `fields` (positioned on the grader's mapping); `None` after
    /// reporting why in the context's diagnostics.
    pub parse: fn(&mut Fields<'_>, &mut ParseContext<'_>) -> Option<Arc<dyn Grader>>,
}

impl GraderEntry {
    /// The `type` written in results.
    pub fn type_name(&self) -> &'static str {
        self.names.first().copied().unwrap_or_default()
    }
}

impl fmt::Debug for GraderEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraderEntry")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// A grader with its configuration. Implementations must not panic on any answer: failures
/// become [`Grade::failed`].
pub trait Grader: Send + Sync + fmt::Debug {
    /// What every case it grades must have; the loader reports a case that lacks it.
    fn needs(&self) -> Vec<Need> {
        Vec::new()
    }

    /// Grades one answer.
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade>;
}

/// A part of a case a grader cannot do without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub field: CaseField,
    /// Why, for the message ("its default prompt grades the answer against it").
    pub why: &'static str,
    /// What would fix it.
    pub fix: &'static str,
}

/// The parts of a case a grader may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseField {
    ExpectedOutcome,
}

impl CaseField {
    /// The key that holds it in a case.
    pub fn key(self) -> &'static str {
        match self {
            Self::ExpectedOutcome => "expected_outcome",
        }
    }
}

/// A grader as a list configures it: the common keys and the grader itself.
#[derive(Debug, Clone)]
pub struct ConfiguredGrader {
    pub name: String,
    /// Share in the case score (≥ 0; 0 excludes the grader).
    pub weight: f64,
    pub entry: &'static GraderEntry,
    pub grader: Arc<dyn Grader>,
}

impl ConfiguredGrader {
    /// The `type` written in results.
    pub fn type_name(&self) -> &'static str {
        self.entry.type_name()
    }
}

/// What parsing a grader may use besides its own keys.
pub struct ParseContext<'p> {
    pub ws: &'p Workspace,
    /// The eval file's directory: relative paths in a grader resolve against it.
    pub eval_dir: &'p Path,
    pub diags: &'p mut Diagnostics,
}

impl ParseContext<'_> {
    /// A nested grader list (the members of a grader made of graders). `None` when any entry
    /// is invalid (reported).
    pub fn graders(&mut self, node: &Node) -> Option<Vec<ConfiguredGrader>> {
        super::list::parse_graders(node, self)
    }
}

/// Everything known about one answered case.
pub struct GradeContext<'a> {
    pub case: &'a EvalCase,
    pub attempt: u32,
    pub candidate_answer: &'a str,
    pub output_messages: &'a [OutputMessage],
    pub trace: &'a [TraceEvent],
    pub trace_summary: &'a TraceSummary,
    pub metrics: &'a ExecutionMetrics,
    pub target: &'a ResolvedTarget,
    pub run: &'a RunContext,
}

/// What one grader concluded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grade {
    pub score: f64,
    pub hits: Vec<String>,
    pub misses: Vec<String>,
    pub reasoning: Option<String>,
    pub details: Option<Map<String, Value>>,
    /// Set when the grader could not grade (`docs/architecture.md#grader-errors`).
    pub error: Option<String>,
    /// The error is also listed as the miss `Evaluator '<name>' failed: <error>`, as the spec
    /// reports a grader that crashed. Invalid judge output is not: the spec wants it scored 0
    /// with empty hits and misses, the reason kept in `error` only.
    pub error_is_miss: bool,
    /// What was sent to a judge, for the results file.
    pub request: Option<Value>,
}

impl Grade {
    /// A grade for a grader that could not grade: score 0 and `error` set, no miss.
    pub fn failed(error: impl Into<String>) -> Self {
        Self {
            error: Some(error.into()),
            ..Self::default()
        }
    }

    /// Like [`Grade::failed`], for a grader that crashed (could not start, exited non-zero,
    /// timed out): the error is also listed as a miss.
    pub fn crashed(error: impl Into<String>) -> Self {
        Self {
            error_is_miss: true,
            ..Self::failed(error)
        }
    }

    /// A score with its hits and misses.
    pub fn scored(score: f64, hits: Vec<String>, misses: Vec<String>) -> Self {
        Self {
            score,
            hits,
            misses,
            ..Self::default()
        }
    }
}
