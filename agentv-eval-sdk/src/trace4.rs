//! The 4.x `trace` payload key: counts, the transcript and its events.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::wire::{Path, Reader, Wire, deserialize_from_wire};
use crate::{OutputMessage, TokenCounts};

/// The 4.x `trace` object.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Trace {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_count: Option<usize>,
    /// Calls per tool name; keys are the tool names exactly as called.
    pub tool_calls: BTreeMap<String, usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_count: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_call_count: Option<usize>,
    /// Duration of each call in ms, per tool name.
    pub tool_durations: BTreeMap<String, Vec<f64>>,
    /// The whole transcript: the prompt as sent, then the target's messages.
    pub messages: Vec<OutputMessage>,
    pub events: Vec<TraceStep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<TokenCounts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    /// `{provider, target, eval_case_id, …}`.
    pub metadata: Map<String, Value>,
    /// Keys this type does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Trace {
    pub(crate) fn from_wire(value: Value, path: Path<'_>) -> Wire<Self> {
        let mut r = Reader::new(value, path)?;
        Ok(Self {
            event_count: r.opt_usize("event_count")?,
            tool_calls: r.counts("tool_calls")?,
            error_count: r.opt_usize("error_count")?,
            llm_call_count: r.opt_usize("llm_call_count")?,
            tool_durations: r.opt_durations("tool_durations")?.unwrap_or_default(),
            messages: r.list("messages", OutputMessage::from_wire)?,
            events: r.list("events", TraceStep::from_wire)?,
            token_usage: r.nested("token_usage", TokenCounts::from_wire)?,
            cost_usd: r.opt_number("cost_usd")?,
            duration_ms: r.opt_number("duration_ms")?,
            start_time: r.opt_string("start_time")?,
            end_time: r.opt_string("end_time")?,
            metadata: r.object("metadata")?,
            extra: r.extra(),
        })
    }
}

deserialize_from_wire!(Trace);

/// One event of a 4.x `trace`: `message`, `tool_call`, `tool_result`, `final_response` or
/// `error`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TraceStep {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_event_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// The message of a `message` or `final_response` event, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<TraceTool>,
    pub metadata: Map<String, Value>,
    /// Keys this type does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TraceStep {
    pub(crate) fn from_wire(value: Value, path: Path<'_>) -> Wire<Self> {
        let mut r = Reader::new(value, path)?;
        Ok(Self {
            kind: r.required_string("type", None)?,
            event_id: r.opt_string("event_id")?,
            parent_event_id: r.opt_string("parent_event_id")?,
            ordinal: r.opt_count("ordinal")?,
            timestamp: r.opt_string("timestamp")?,
            duration_ms: r.opt_number("duration_ms")?,
            message: r.value("message"),
            tool: r.nested("tool", TraceTool::from_wire)?,
            metadata: r.object("metadata")?,
            extra: r.extra(),
        })
    }
}

deserialize_from_wire!(TraceStep);

/// The tool part of a 4.x trace event.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TraceTool {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Keys this type does not know, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TraceTool {
    pub(crate) fn from_wire(value: Value, path: Path<'_>) -> Wire<Self> {
        let mut r = Reader::new(value, path)?;
        Ok(Self {
            name: r.opt_string("name")?,
            call_id: r.opt_string("call_id")?,
            input: r.value("input"),
            output: r.value("output"),
            status: r.opt_string("status")?,
            extra: r.extra(),
        })
    }
}

deserialize_from_wire!(TraceTool);
