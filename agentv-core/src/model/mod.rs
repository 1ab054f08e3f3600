//! The typed model everything after loading works on: cases and their messages, and the result
//! and trace types shared with judges (`agentv-eval-sdk`). Graders are not part of it: a case's
//! graders travel beside it (`load::LoadedCase`), so the model depends on nothing.

mod case;
mod tool;
pub mod workspace;

pub use agentv_eval_sdk::{
    Assertion, EvaluationRecord, EvaluatorResult, ExecutionMetrics, ExecutionStatus, GraderScore, OutputMessage,
    TokenUsage, ToolCall, TraceEvent, TraceEventKind, TraceSummary, V4Fields, Verdict,
};
pub(crate) use case::pretty_json;
pub use case::{
    Content, Conversation, DEFAULT_THRESHOLD, Dependencies, EvalCase, FileRef, Generation, Message,
    OnDependencyFailure, Role, Segment, SourceRef, Turn, TurnAggregation,
};
pub use tool::{
    INPUT_ERROR, ToolChoice, ToolCommand, ToolDef, ToolDialect, ToolExchange, ToolOutcome, ToolReply, ToolRequest,
    ToolResultRule, ToolSettings,
};
