//! The tool loop of an LLM API target (`docs/tools.md#tool-loops`): the model is called, its
//! tool calls are run and their results sent back, until it answers in text or `max_steps`
//! model calls are spent. Every step is one provider call (so `--cache` keys each step by the
//! tools and every call and result before it), and the answer holds every step: one assistant
//! message per step with its calls and their outputs, a trace with each step's latency and
//! tokens, and totals that add them up.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{Job, RunSetup};
use crate::model::{
    INPUT_ERROR, OutputMessage, TokenUsage, ToolChoice, ToolExchange, ToolOutcome, ToolReply, ToolRequest,
    ToolSettings, TraceEvent, TraceEventKind,
};
use crate::providers::{Provider, ProviderClass, ProviderError, ProviderRequest, ProviderResponse};
use crate::tools::ToolRunner;

/// The tool settings `job` runs with: its case's over its target's.
pub fn settings(job: &Job) -> ToolSettings {
    ToolSettings::effective(job.case.tool_use.as_deref(), job.target.provider.tool_settings())
}

/// What the first request of `job` carries about tools: `None` when no tools are declared, or
/// the target is not an LLM API (agents and commands have tools of their own).
pub fn first_request(job: &Job) -> Option<ToolRequest> {
    let settings = settings(job);
    let tools = settings.tools.clone().filter(|t| !t.is_empty())?;
    let kind = job.target.provider.kind();
    if kind.class() != ProviderClass::Llm {
        tracing::warn!(
            eval_id = %job.case.id,
            "target `{}` ({}) does not take `tools`: they go only to LLM API targets (openai, azure, anthropic, gemini)",
            job.target.name,
            kind.as_str()
        );
        return None;
    }
    Some(ToolRequest {
        tools,
        choice: settings.choice.clone(),
        parallel: settings.parallel,
        exchanges: Vec::new(),
    })
}

/// Answers `request`: one provider call without tools, else the tool loop. The run's
/// `--timeout` bounds each model call (a step of the loop is one); a tool's command has its own
/// timeout, so a tool that hangs is a tool error the model is told about, not a lost case.
/// `dump` is called with every request after the first (the first is dumped by the caller).
pub async fn answer(
    job: &Job,
    request: &ProviderRequest,
    setup: &RunSetup,
    dump: &(dyn Fn(&ProviderRequest, u32) + Sync),
) -> Result<ProviderResponse, ProviderError> {
    let provider = job.target.provider.as_ref();
    let timeout = setup.context.timeout;
    if request.tools.is_none() {
        return bounded(provider, request, timeout).await;
    }
    let settings = settings(job);
    let cwd = setup
        .context
        .cwd
        .clone()
        .unwrap_or_else(|| job.case.eval_dir().to_path_buf());
    let run = Loop {
        runner: ToolRunner {
            settings: &settings,
            cwd: &cwd,
            run: &setup.context,
        },
        max_steps: settings.max_steps(),
        timeout,
    };
    run.go(provider, request.clone(), dump).await
}

/// One provider call within `timeout`; time spent waiting for a slot of the target's
/// throttle does not count (`docs/running.md#rate-limits`).
async fn bounded(
    provider: &dyn Provider,
    request: &ProviderRequest,
    timeout: Duration,
) -> Result<ProviderResponse, ProviderError> {
    match crate::providers::throttle::within(timeout, provider.invoke(request)).await {
        Some(result) => result,
        None => Err(ProviderError::Timeout(timeout)),
    }
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
    /// Bounds each model call.
    timeout: Duration,
}

impl Loop<'_> {
    async fn go(
        &self,
        provider: &dyn Provider,
        mut request: ProviderRequest,
        dump: &(dyn Fn(&ProviderRequest, u32) + Sync),
    ) -> Result<ProviderResponse, ProviderError> {
        let mut steps: Vec<Step> = Vec::new();
        let ended = loop {
            let number = u32::try_from(steps.len()).unwrap_or(u32::MAX).saturating_add(1);
            if number > 1 {
                dump(&request, number);
            }
            let response = bounded(provider, &request, self.timeout)
                .await
                .map_err(|e| at_step(e, number))?;
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
                // A forced choice (`required`, a named tool) holds for the call that made it:
                // sent again, it would force a tool call at every step and the model could never
                // answer (`docs/tools.md#tool-loops`).
                tools.choice = tools.choice.take().map(ToolChoice::after_calls);
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
    match error {
        // A timeout keeps its kind: the runner retries the case by it.
        timeout @ ProviderError::Timeout(_) => timeout,
        other => ProviderError::InStep {
            step,
            source: Box::new(other),
        },
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
    let mut stopped: Option<String> = None;
    let mut logprobs = None;
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
        // The last step's reason and log probabilities are the answer's.
        stopped = response.finish_reason;
        logprobs = response.logprobs;
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
        finish_reason: stopped,
        logprobs,
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

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    use agentv_testkit::llm::script::{Arguments, Call, Step as WireStep};
    use agentv_testkit::llm::{Api, Usage};
    use proptest::prelude::*;

    use super::*;
    use crate::context::RunContext;
    use crate::model::{ToolCall, ToolDef};
    use crate::providers::{ProviderFuture, ProviderKind};

    /// A provider answering its responses in turn, keeping the requests.
    #[derive(Debug)]
    struct Scripted {
        answers: Mutex<VecDeque<ProviderResponse>>,
        requests: Mutex<Vec<ProviderRequest>>,
    }

    impl Provider for Scripted {
        fn target_name(&self) -> &str {
            "t"
        }

        fn kind(&self) -> ProviderKind {
            ProviderKind::of(&crate::providers::openai::OPENAI)
        }

        fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
            self.requests.lock().expect("lock").push(request.clone());
            let next = self.answers.lock().expect("lock").pop_front();
            Box::pin(async move { next.ok_or_else(|| ProviderError::Reported("no more answers".into())) })
        }
    }

    const USAGE: Usage = Usage { input: 7, output: 3 };

    /// `body`, an answer of `api`, read by agentv's client for that API.
    fn read(api: Api, body: Value) -> ProviderResponse {
        let parsed = match api {
            Api::OpenAi | Api::Azure => crate::providers::openai::parse_completion(&body),
            Api::Anthropic => crate::providers::anthropic::parse_message(&body).map(|(p, _)| p),
            Api::Gemini => crate::providers::gemini::parse_generation(&body),
        }
        .expect("parses");
        let mut message = OutputMessage::assistant(parsed.text);
        message.tool_calls = parsed.calls;
        let mut metadata = Map::new();
        metadata.insert("finish_reason".into(), json!(parsed.finish_reason));
        ProviderResponse {
            output_messages: vec![message],
            token_usage: parsed.usage,
            duration_ms: Some(2.0),
            raw: Some(body),
            metadata: Some(metadata),
            ..ProviderResponse::default()
        }
    }

    /// Runs the loop over `answers` with `tools` (every call of them answered by a mock).
    fn run_loop(
        answers: Vec<ProviderResponse>,
        tools: Vec<ToolDef>,
        max_steps: u32,
    ) -> (ProviderResponse, Arc<Scripted>) {
        run_loop_choosing(answers, tools, max_steps, None)
    }

    /// [`run_loop`] with a `tool_choice`.
    fn run_loop_choosing(
        answers: Vec<ProviderResponse>,
        tools: Vec<ToolDef>,
        max_steps: u32,
        choice: Option<ToolChoice>,
    ) -> (ProviderResponse, Arc<Scripted>) {
        let provider = Arc::new(Scripted {
            answers: Mutex::new(answers.into()),
            requests: Mutex::default(),
        });
        let settings = ToolSettings {
            tools: Some(Arc::from(tools)),
            max_steps: Some(max_steps),
            ..ToolSettings::default()
        };
        let context = RunContext {
            timeout: Duration::from_secs(30),
            child_env: Arc::from(Vec::new()),
            secrets: Default::default(),
            dump_prompts: None,
            strict: false,
            cwd: None,
            held_pools: Default::default(),
        };
        let dir = std::env::temp_dir();
        let l = Loop {
            runner: ToolRunner {
                settings: &settings,
                cwd: &dir,
                run: &context,
            },
            max_steps,
            timeout: Duration::from_secs(30),
        };
        let request = ProviderRequest {
            tools: Some(ToolRequest {
                tools: settings.tools.clone().unwrap_or_else(|| Arc::from(Vec::new())),
                choice,
                ..ToolRequest::default()
            }),
            ..ProviderRequest::default()
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let response = runtime
            .block_on(l.go(provider.as_ref(), request, &|_: &ProviderRequest, _: u32| {}))
            .expect("answers");
        (response, provider)
    }

    fn mocked(name: &str) -> ToolDef {
        ToolDef {
            mock: Some(json!({"echo": "{{ arguments }}"})),
            ..ToolDef::new(name, json!({"type": "object"}))
        }
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            Just(Value::Null),
            "\\PC{0,12}".prop_map(Value::from),
        ]
    }

    fn arguments() -> impl Strategy<Value = Value> {
        let value = leaf().prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                prop::collection::btree_map("[a-z_]{1,6}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        prop::collection::btree_map("[a-zA-Z_][a-zA-Z0-9_]{0,8}", value, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    fn steps() -> impl Strategy<Value = Vec<Vec<(String, Value)>>> {
        let call = ("[a-zA-Z_][a-zA-Z0-9_-]{0,15}", arguments());
        prop::collection::vec(prop::collection::vec(call, 1..4), 0..4)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever a model calls, in each API's wire shape, comes out of the loop as the same
        /// calls in the same order, in `output_messages` and in the trace, and survives the
        /// JSON round trip the results file makes.
        #[test]
        fn any_sequence_of_tool_calls_survives_into_output_messages_and_the_trace(steps in steps()) {
            for api in [Api::OpenAi, Api::Anthropic, Api::Gemini] {
                let mut answers: Vec<ProviderResponse> = steps
                    .iter()
                    .enumerate()
                    .map(|(s, calls)| {
                        let wire = WireStep {
                            text: None,
                            calls: calls
                                .iter()
                                .map(|(name, args)| Call { name: name.clone(), arguments: Arguments::Json(args.clone()) })
                                .collect(),
                        };
                        read(api, wire.answer(api, s, USAGE))
                    })
                    .collect();
                answers.push(read(api, api.answer("done", USAGE)));
                let tools: Vec<ToolDef> = {
                    let mut names: Vec<&String> = steps.iter().flatten().map(|(n, _)| n).collect();
                    names.sort();
                    names.dedup();
                    names.into_iter().map(|n| mocked(n)).collect()
                };
                let max_steps = u32::try_from(steps.len() + 1).expect("small");
                let (response, provider) = run_loop(answers, tools, max_steps);
                let want: Vec<(String, Value, Option<String>)> = steps
                    .iter()
                    .enumerate()
                    .flat_map(|(s, calls)| calls.iter().enumerate().map(move |(i, (n, a))| {
                        let id = match api {
                            Api::OpenAi | Api::Azure => Some(format!("call_{s}_{i}")),
                            Api::Anthropic => Some(format!("toolu_{s}_{i}")),
                            Api::Gemini => None,
                        };
                        (n.clone(), a.clone(), id)
                    }))
                    .collect();
                let messages = &response.output_messages;
                prop_assert_eq!(messages.len(), steps.len() + 1);
                let from_messages: Vec<(String, Value, Option<String>)> = messages
                    .iter()
                    .flat_map(|m| &m.tool_calls)
                    .map(|c: &ToolCall| (c.tool.clone(), c.input.clone().unwrap_or(Value::Null), c.id.clone()))
                    .collect();
                prop_assert_eq!(&from_messages, &want, "{:?}", api);
                let trace = response.trace.clone().unwrap_or_default();
                let from_trace: Vec<(String, Value, Option<String>)> = trace
                    .iter()
                    .filter(|e| e.kind == TraceEventKind::ToolCall)
                    .map(|e| (e.name.clone().unwrap_or_default(), e.input.clone().unwrap_or(Value::Null), e.id.clone()))
                    .collect();
                prop_assert_eq!(&from_trace, &want, "{:?}", api);
                let model_steps = trace.iter().filter(|e| e.kind == TraceEventKind::ModelStep).count();
                prop_assert_eq!(model_steps, steps.len() + 1);
                let back: Vec<OutputMessage> = serde_json::from_value(serde_json::to_value(messages).expect("json")).expect("reads back");
                prop_assert_eq!(&back, messages);
                let back: Vec<TraceEvent> = serde_json::from_value(serde_json::to_value(&trace).expect("json")).expect("reads back");
                prop_assert_eq!(&back, &trace);
                // Every call was answered, and the model saw each answer.
                let requests = provider.requests.lock().expect("lock").clone();
                let sent: usize = requests.last().and_then(|r| r.tools.as_ref()).map_or(0, |t| t.exchanges.iter().map(|e| e.replies.len()).sum());
                prop_assert_eq!(sent, want.len());
                let total = response.token_usage.expect("usage");
                prop_assert_eq!((total.input, total.output), (7 * (steps.len() as u64 + 1), 3 * (steps.len() as u64 + 1)));
            }
        }
    }

    /// A model answer made only of one `lookup` call, with `usage` and `duration_ms`.
    fn calling_lookup() -> ProviderResponse {
        let mut m = OutputMessage::assistant("");
        m.content = None;
        m.tool_calls = vec![ToolCall {
            tool: "lookup".into(),
            input: Some(json!({"id": "A1"})),
            id: Some("c1".into()),
            ..ToolCall::default()
        }];
        ProviderResponse {
            output_messages: vec![m],
            token_usage: Some(TokenUsage {
                input: 10,
                output: 2,
                cached: None,
            }),
            duration_ms: Some(4.0),
            ..ProviderResponse::default()
        }
    }

    #[test]
    fn a_forced_tool_choice_holds_for_the_first_step_only() {
        let calling = calling_lookup;
        let cases = [
            (ToolChoice::Tool("lookup".into()), ToolChoice::Auto),
            (ToolChoice::Required, ToolChoice::Auto),
            (ToolChoice::Auto, ToolChoice::Auto),
            (ToolChoice::None, ToolChoice::None),
        ];
        for (first, later) in cases {
            let answers = vec![calling(), calling(), ProviderResponse::text("Shipped.")];
            let (_, p) = run_loop_choosing(answers, vec![mocked("lookup")], 3, Some(first.clone()));
            let sent: Vec<Option<ToolChoice>> = p
                .requests
                .lock()
                .expect("lock")
                .iter()
                .map(|r| r.tools.as_ref().and_then(|t| t.choice.clone()))
                .collect();
            assert_eq!(
                sent,
                vec![Some(first.clone()), Some(later.clone()), Some(later)],
                "{first:?}"
            );
        }
    }

    #[test]
    fn steps_end_in_an_answer_in_tool_calls_or_at_max_steps() {
        let calling = calling_lookup;
        let answer = || ProviderResponse {
            token_usage: Some(TokenUsage {
                input: 20,
                output: 5,
                cached: None,
            }),
            duration_ms: Some(6.0),
            ..ProviderResponse::text("Shipped.")
        };
        let tools = || vec![mocked("lookup")];
        let ended = |r: &ProviderResponse| r.metadata.as_ref().and_then(|m| m.get("ended")).cloned();

        let (r, _) = run_loop(vec![calling(), answer()], tools(), 1);
        assert_eq!(ended(&r), Some(json!("tool_calls")));
        assert_eq!(r.output_messages.len(), 1);
        assert!(
            r.output_messages[0].content.is_none(),
            "a call-only answer has no content"
        );
        assert!(
            r.output_messages[0].tool_calls[0].output.is_none(),
            "one step: recorded, not run"
        );

        let (r, p) = run_loop(vec![calling(), answer()], tools(), 5);
        assert_eq!(ended(&r), Some(json!("answer")));
        let call = &r.output_messages[0].tool_calls[0];
        assert_eq!(
            (call.output.clone(), call.status.as_deref()),
            (Some(json!({"echo": {"id": "A1"}})), Some("ok"))
        );
        assert_eq!(r.output_messages[1].text().as_deref(), Some("Shipped."));
        let usage = r.token_usage.expect("usage");
        assert_eq!((usage.input, usage.output), (30, 7), "steps add up");
        let tools_ms = call.duration_ms.expect("timed");
        assert!(
            (r.duration_ms.expect("total") - (4.0 + 6.0 + tools_ms)).abs() < 1e-9,
            "latencies add up"
        );
        let second = &p.requests.lock().expect("lock")[1];
        let exchange = &second.tools.as_ref().expect("tools").exchanges[0];
        assert_eq!(exchange.replies[0].content, json!({"echo": {"id": "A1"}}));

        let (r, _) = run_loop(vec![calling(), calling(), calling(), answer()], tools(), 3);
        assert_eq!(ended(&r), Some(json!("max_steps")));
        assert_eq!(r.output_messages.len(), 3);
        let trace = r.trace.expect("trace");
        let last_step = trace
            .iter()
            .rev()
            .find(|e| e.kind == TraceEventKind::ModelStep)
            .expect("steps");
        assert_eq!(
            last_step.metadata.as_ref().and_then(|m| m.get("ended")),
            Some(&json!("max_steps"))
        );
        assert_eq!(last_step.metadata.as_ref().and_then(|m| m.get("step")), Some(&json!(3)));
    }
}
