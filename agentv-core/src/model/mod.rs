//! The typed model everything after loading works on.

mod case;
mod evaluator;

pub use agentv_eval_sdk::{
    EvaluationRecord, EvaluatorResult, ExecutionMetrics, ExecutionStatus, OutputMessage, TokenUsage, ToolCall,
    TraceEvent, TraceEventKind, TraceSummary, Verdict,
};
pub(crate) use case::pretty_json;
pub use case::{Content, EvalCase, FileRef, Message, Role, Segment, SourceRef};
pub use evaluator::{
    ArgsMatch, CodeJudgeSpec, EvaluatorKind, EvaluatorSpec, ExpectedCall, KeywordPattern, KeywordsSpec, LlmJudgeSpec,
    ProxyBudget, TrajectoryMode, TrajectorySpec,
};
