//! Evaluator configurations, validated at load time.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

/// One configured evaluator.
#[derive(Debug, Clone)]
pub struct EvaluatorSpec {
    pub name: String,
    /// Share in the case score (≥ 0; 0 excludes the evaluator).
    pub weight: f64,
    pub kind: EvaluatorKind,
}

/// What an evaluator does, with its settings.
#[derive(Debug, Clone)]
pub enum EvaluatorKind {
    LlmJudge(LlmJudgeSpec),
    CodeJudge(CodeJudgeSpec),
    ToolTrajectory(TrajectorySpec),
    Keywords(KeywordsSpec),
}

impl EvaluatorKind {
    /// The `type` written in results.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::LlmJudge(_) => "llm_judge",
            Self::CodeJudge(_) => "code_judge",
            Self::ToolTrajectory(_) => "tool_trajectory",
            Self::Keywords(_) => "keywords",
        }
    }
}

/// `llm_judge`: asks the judge target for `{score, hits, misses, reasoning}`.
#[derive(Debug, Clone, Default)]
pub struct LlmJudgeSpec {
    /// Custom user-prompt template with `{{ variable }}` placeholders.
    pub prompt: Option<String>,
    /// Where the template was read from, if it came from a file.
    pub prompt_path: Option<PathBuf>,
    /// Adds a trace-summary section to the prompt.
    pub include_trace_summary: bool,
}

/// `code_judge`: an external program that reads the payload and prints a score.
#[derive(Debug, Clone)]
pub struct CodeJudgeSpec {
    /// argv; a string script becomes `sh -c <script>`.
    pub script: Vec<String>,
    pub cwd: PathBuf,
    /// Overrides the run's timeout for this judge.
    pub timeout: Option<Duration>,
    /// Present when the judge may call targets through the proxy.
    pub proxy: Option<ProxyBudget>,
    /// The evaluator's other YAML keys, passed to the judge untouched.
    pub config: Map<String, Value>,
}

/// How many target calls a judge may make through the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyBudget {
    pub max_calls: u32,
}

impl Default for ProxyBudget {
    fn default() -> Self {
        Self { max_calls: 50 }
    }
}

/// How `tool_trajectory` compares calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrajectoryMode {
    /// Each tool must be called at least its minimum number of times.
    AnyOrder,
    /// The expected calls appear in this order; other calls may come between.
    InOrder,
    /// Exactly the expected calls, in order, nothing else.
    Exact,
}

impl TrajectoryMode {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "any_order" => Some(Self::AnyOrder),
            "in_order" => Some(Self::InOrder),
            "exact" => Some(Self::Exact),
            _ => None,
        }
    }
}

/// `tool_trajectory` settings.
#[derive(Debug, Clone)]
pub struct TrajectorySpec {
    pub mode: TrajectoryMode,
    /// Tool name and minimum count, in file order (used by `any_order`).
    pub minimums: Vec<(String, u64)>,
    /// Expected calls (used by `in_order` and `exact`).
    pub expected: Vec<ExpectedCall>,
}

/// One expected tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedCall {
    pub tool: String,
    pub args: ArgsMatch,
}

/// How an expected call's arguments are checked.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgsMatch {
    /// Not checked (`args` absent or `any`).
    Any,
    /// Every listed key must deep-equal the call's input; other input keys are ignored.
    Partial(Map<String, Value>),
}

/// `keywords` settings (heuristic grading).
#[derive(Debug, Clone)]
pub struct KeywordsSpec {
    pub expected: Vec<KeywordPattern>,
    pub forbidden: Vec<KeywordPattern>,
    /// Flags answers that look like errors (stack traces, `Traceback`, `panicked at`, ...).
    pub detect_errors: bool,
}

/// A keyword, or a regex written as `{regex: ...}`.
#[derive(Debug, Clone)]
pub struct KeywordPattern {
    /// As written, for hit/miss messages.
    pub label: String,
    pub matcher: regex::Regex,
}
