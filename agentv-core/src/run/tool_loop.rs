//! The tool loop of an LLM API target (`docs/tools.md#tool-loops`): the model is called, its
//! tool calls are run and their results sent back, until it answers in text or `max_steps`
//! model calls are spent. Every step is one provider call (so `--cache` keys each step by the
//! tools and every call and result before it), and the answer holds every step: one assistant
//! message per step with its calls and their outputs, a trace with each step's latency and
//! tokens, and totals that add them up.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{Job, RunOptions};
use crate::model::{
    INPUT_ERROR, OutputMessage, TokenUsage, ToolExchange, ToolOutcome, ToolReply, ToolRequest, ToolSettings,
    TraceEvent, TraceEventKind,
};
use crate::providers::{ProviderClass, ProviderError, ProviderRequest, ProviderResponse};
use crate::tools::ToolRunner;

/// The tool settings `job` runs with: its case's over its target's.
pub fn settings(job: &Job) -> ToolSettings {
    ToolSettings::effective(job.case.tool_use.as_deref(), job.target.provider.tool_settings())
}

/// What the first request of `job` carries about tools: `None` when no tools are declared, or
/// the target is not an LLM API (agents and commands have tools of their own).
pub fn first_request(job: &Job) -> Option<ToolRequest> {
    if job.target.provider.kind().class() != ProviderClass::Llm {
        return None;
    }
    let settings = settings(job);
    let tools = settings.tools.clone().filter(|t| !t.is_empty())?;
    Some(ToolRequest {
        tools,
        choice: settings.choice.clone(),
        parallel: settings.parallel,
        exchanges: Vec::new(),
    })
}

/// Answers `request`: one provider call without tools, else the tool loop. `dump` is called
/// with every request after the first (the first is dumped by the caller).
pub async fn answer(
    job: &Job,
    request: &ProviderRequest,
    options: &RunOptions,
    dump: &(dyn Fn(&ProviderRequest, u32) + Sync),
) -> Result<ProviderResponse, ProviderError> {
    let provider = job.target.provider.as_ref();
    if request.tools.is_none() {
        return provider.invoke(request).await;
    }
    let settings = settings(job);
    let cwd = options
        .context
        .cwd
        .clone()
        .unwrap_or_else(|| job.case.eval_dir().to_path_buf());
    let run = Loop {
        runner: ToolRunner {
            settings: &settings,
            cwd: &cwd,
            run: &options.context,
        },
        max_steps: settings.max_steps(),
    };
    run.go(job, request.clone(), dump).await
}

/// Why the loop stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The model answered without calling a tool.
    Answer,
    /// One step (`max_steps: 1`) and the model called tools: the calls are recorded, not run.
    ToolCalls,
    /// More than one step allowed, all spent, and the model still calling tools.
    MaxSteps,
}

impl Ended {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Answer => "answer",
            Self::ToolCalls => "tool_calls",
            Self::MaxSteps => "max_steps",
        }
    }
}

/// One model call of the loop, its calls run.
struct Step {
    response: ProviderResponse,
    message: OutputMessage,
    /// Time spent running this step's tools.
    tools_ms: f64,
}

struct Loop<'a> {
    runner: ToolRunner<'a>,
    max_steps: u32,
}

impl Loop<'_> {
    async fn go(
        &self,
        job: &Job,
        mut request: ProviderRequest,
        dump: &(dyn Fn(&ProviderRequest, u32) + Sync),
    ) -> Result<ProviderResponse, ProviderError> {
        let provider = job.target.provider.as_ref();
        let mut steps: Vec<Step> = Vec::new();
        let ended = loop {
            let number = u32::try_from(steps.len()).unwrap_or(u32::MAX).saturating_add(1);
            if number > 1 {
                dump(&request, number);
            }
            let response = provider.invoke(&request).await.map_err(|e| at_step(e, number))?;
            let mut message = response
                .output_messages
                .iter()
                .rev()
                .find(|m| m.role == "assistant")
                .cloned()
                .unwrap_or_else(|| OutputMessage::assistant(""));
            if message.tool_calls.is_empty() || number >= self.max_steps {
                let ended = match (message.tool_calls.is_empty(), self.max_steps) {
                    (true, _) => Ended::Answer,
                    (false, 1) => Ended::ToolCalls,
                    (false, _) => Ended::MaxSteps,
                };
                steps.push(Step {
                    response,
                    message,
                    tools_ms: 0.0,
                });
                break ended;
            }
            let (replies, tools_ms) = self.run_calls(&mut message).await;
            if let Some(tools) = request.tools.as_mut() {
                tools.exchanges.push(ToolExchange {
                    raw: response.raw.clone(),
                    message: message.clone(),
                    replies,
                });
            }
            steps.push(Step {
                response,
                message,
                tools_ms,
            });
        };
        Ok(assemble(steps, ended, self.max_steps))
    }

    /// Runs the calls of `message` one after the other, writing each one's output, status and
    /// duration into it; the replies for the model, and the time it took.
    async fn run_calls(&self, message: &mut OutputMessage) -> (Vec<ToolReply>, f64) {
        let mut replies = Vec::with_capacity(message.tool_calls.len());
        let mut total = 0.0;
        for call in &mut message.tool_calls {
            let done = self.runner.call(call).await;
            let ms = millis(done.duration);
            total += ms;
            let (content, is_error) = match done.outcome {
                ToolOutcome::Result(value) => (value, false),
                ToolOutcome::Error(message) => (Value::String(message), true),
            };
            call.output = Some(content.clone());
            call.status = Some(if is_error { "error" } else { "ok" }.to_owned());
            call.duration_ms = Some(ms);
            call.extra.insert("source".to_owned(), json!(done.source.as_str()));
            replies.push(ToolReply {
                id: call.id.clone(),
                name: call.tool.clone(),
                content,
                is_error,
            });
        }
        (replies, total)
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A failure after the first step says which step failed; a timeout stays a timeout (the
/// runner retries it).
fn at_step(error: ProviderError, step: u32) -> ProviderError {
    if step <= 1 {
        return error;
    }
    let prefix = format!("step {step} of the tool loop: ");
    match error {
        ProviderError::Http {
            status,
            message,
            retry_after,
        } => ProviderError::Http {
            status,
            message: format!("{prefix}{message}"),
            retry_after,
        },
        ProviderError::Network(m) => ProviderError::Network(format!("{prefix}{m}")),
        ProviderError::Failed(m) => ProviderError::Failed(format!("{prefix}{m}")),
        timeout @ ProviderError::Timeout(_) => timeout,
    }
}

/// The answer of the whole loop: one assistant message per step, the trace, the totals, and
/// in `metadata` how it ended.
fn assemble(steps: Vec<Step>, ended: Ended, max_steps: u32) -> ProviderResponse {
    let mut messages = Vec::with_capacity(steps.len());
    let mut trace = Vec::new();
    let mut usage: Option<TokenUsage> = None;
    let mut cost: Option<f64> = None;
    let mut duration = 0.0;
    let mut attempts = 0u64;
    let mut warnings = Vec::new();
    let mut finish_reason = None;
    let mut raw = None;
    let count = steps.len();
    for (i, step) in steps.into_iter().enumerate() {
        let Step {
            response,
            mut message,
            tools_ms,
        } = step;
        let model_ms = response.duration_ms.unwrap_or(0.0);
        duration += model_ms + tools_ms;
        if let Some(u) = response.token_usage {
            usage.get_or_insert_with(TokenUsage::default).add(&u);
            message.token_usage = Some(u.into());
        }
        if let Some(c) = response.cost_usd {
            *cost.get_or_insert(0.0) += c;
        }
        let metadata = response.metadata.unwrap_or_default();
        attempts += metadata.get("attempts").and_then(Value::as_u64).unwrap_or(1);
        finish_reason = metadata.get("finish_reason").cloned();
        message.duration_ms = Some(model_ms);
        let last = i + 1 == count;
        trace.push(model_step(
            i + 1,
            &message,
            response.token_usage,
            finish_reason.clone(),
            last.then_some(ended),
        ));
        trace.extend(call_events(i + 1, &message));
        warnings.extend(response.warnings);
        raw = response.raw;
        messages.push(message);
    }
    let mut metadata = Map::new();
    metadata.insert("attempts".to_owned(), json!(attempts));
    if let Some(reason) = finish_reason {
        metadata.insert("finish_reason".to_owned(), reason);
    }
    metadata.insert("steps".to_owned(), json!(count));
    metadata.insert("max_steps".to_owned(), json!(max_steps));
    metadata.insert("ended".to_owned(), json!(ended.as_str()));
    ProviderResponse {
        output_messages: messages,
        trace: Some(trace),
        trace_ref: None,
        token_usage: usage,
        cost_usd: cost,
        duration_ms: Some(duration),
        raw,
        metadata: Some(metadata),
        warnings,
    }
}

/// The `model_step` event of step `number`: its latency, tokens and finish reason; the last
/// one says how the loop ended.
fn model_step(
    number: usize,
    message: &OutputMessage,
    usage: Option<TokenUsage>,
    finish_reason: Option<Value>,
    ended: Option<Ended>,
) -> TraceEvent {
    let mut metadata = Map::new();
    metadata.insert("step".to_owned(), json!(number));
    if let Some(u) = usage {
        metadata.insert("token_usage".to_owned(), json!(u));
    }
    if let Some(reason) = finish_reason {
        metadata.insert("finish_reason".to_owned(), reason);
    }
    metadata.insert("tool_calls".to_owned(), json!(message.tool_calls.len()));
    if let Some(ended) = ended {
        metadata.insert("ended".to_owned(), json!(ended.as_str()));
    }
    let mut event = TraceEvent::new(TraceEventKind::ModelStep);
    event.text = message.text().filter(|t| !t.is_empty());
    event.duration_ms = message.duration_ms;
    event.metadata = Some(metadata);
    event
}

/// One `tool_call` event per call of step `number`, as [`crate::trace::extract`] makes them
/// for an agent, with the step, the result's source and any argument problem.
fn call_events(number: usize, message: &OutputMessage) -> Vec<TraceEvent> {
    let mut events = crate::trace::extract(std::slice::from_ref(message));
    for (event, call) in events.iter_mut().zip(&message.tool_calls) {
        let metadata = event.metadata.get_or_insert_with(Map::new);
        metadata.insert("step".to_owned(), json!(number));
        for key in [INPUT_ERROR, "source"] {
            if let Some(v) = call.extra.get(key) {
                metadata.insert(key.to_owned(), v.clone());
            }
        }
    }
    events
}
