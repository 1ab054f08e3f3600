//! What grader unit tests share: a fake grader provider that answers from a script and keeps
//! what it was asked, a case with its answer, and parsing a grader list from YAML.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::Diagnostics;
use crate::config::node::parse_yaml;
use crate::context::RunContext;
use crate::env::Env;
use crate::model::{
    Content, EvalCase, ExecutionMetrics, Message, OutputMessage, Role, SourceRef, TraceEvent, TraceSummary,
};
use crate::paths::Workspace;
use crate::providers::{
    Provider, ProviderEntry, ProviderError, ProviderFuture, ProviderKind, ProviderRequest, ProviderResponse,
    ResolvedTarget, TargetRegistry,
};

use super::{ConfiguredGrader, Grade, GradeContext, ParseContext};

/// A grader provider answering from a script: each call takes the next reply (the last one
/// repeats), and every request is kept.
#[derive(Debug)]
pub struct FakeProvider {
    name: String,
    entry: &'static ProviderEntry,
    replies: Mutex<VecDeque<Result<String, String>>>,
    pub requests: Mutex<Vec<ProviderRequest>>,
    /// promptfoo's provider `config` (its `tools` and `functions` are declared).
    config: serde_json::Value,
}

impl FakeProvider {
    /// An LLM-like provider (the mock's kind) answering `replies` in turn.
    pub fn llm(replies: &[&str]) -> Arc<Self> {
        Self::of(
            &crate::providers::mock::ENTRY,
            replies.iter().map(|r| Ok((*r).to_owned())),
        )
    }

    /// An agent provider (claude-code's kind): LLM graders delegate to it.
    pub fn agent(replies: &[&str]) -> Arc<Self> {
        Self::of(
            &crate::providers::claude_code::ENTRY,
            replies.iter().map(|r| Ok((*r).to_owned())),
        )
    }

    /// A provider whose every call fails with `message`.
    pub fn failing(message: &str) -> Arc<Self> {
        Self::of(&crate::providers::mock::ENTRY, [Err(message.to_owned())])
    }

    fn of(entry: &'static ProviderEntry, replies: impl IntoIterator<Item = Result<String, String>>) -> Arc<Self> {
        Arc::new(Self {
            name: "grader".into(),
            entry,
            replies: Mutex::new(replies.into_iter().collect()),
            requests: Mutex::default(),
            config: serde_json::Value::Null,
        })
    }

    /// An LLM-like provider declaring the `tools` and `functions` of promptfoo's `config`.
    pub fn configured(config: serde_json::Value) -> Arc<Self> {
        Arc::new(Self {
            name: "target".into(),
            entry: &crate::providers::mock::ENTRY,
            replies: Mutex::new(VecDeque::from([Ok("unused".to_owned())])),
            requests: Mutex::default(),
            config,
        })
    }

    /// A copy of the requests received, in order (no lock held across awaits).
    pub fn requests(&self) -> Vec<ProviderRequest> {
        self.requests.lock().expect("lock").clone()
    }

    /// The user prompts received, in order.
    pub fn questions(&self) -> Vec<String> {
        self.requests
            .lock()
            .expect("lock")
            .iter()
            .map(|r| r.question.clone())
            .collect()
    }
}

impl Provider for FakeProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(self.entry)
    }

    fn declared_tools(&self, list: crate::providers::ToolList) -> Option<&serde_json::Value> {
        let key = match list {
            crate::providers::ToolList::Tools => "tools",
            crate::providers::ToolList::Functions => "functions",
        };
        self.config.get(key)
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        self.requests.lock().expect("lock").push(request.clone());
        let reply = {
            let mut replies = self.replies.lock().expect("lock");
            if replies.len() > 1 {
                replies.pop_front()
            } else {
                replies.front().cloned()
            }
        };
        Box::pin(async move {
            match reply {
                Some(Ok(text)) => Ok(ProviderResponse::text(text)),
                Some(Err(message)) => Err(ProviderError::Reported(message)),
                None => Err(ProviderError::Reported("no reply scripted".into())),
            }
        })
    }
}

/// One answered case: the case, the answer and the grader provider, ready to grade.
pub struct Answered {
    pub case: EvalCase,
    pub answer: String,
    pub messages: Vec<OutputMessage>,
    pub target: ResolvedTarget,
    pub run: RunContext,
    trace: Vec<TraceEvent>,
    summary: TraceSummary,
    metrics: ExecutionMetrics,
    finish_reason: Option<String>,
    logprobs: Option<Vec<f64>>,
}

impl Answered {
    /// A case asking `question` with `criteria`, answered `answer`, graded by `grader`.
    pub fn new(question: &str, criteria: &str, answer: &str, grader: Arc<dyn Provider>) -> Self {
        let case = EvalCase {
            id: "c1".into(),
            dataset: Arc::from("d"),
            conversation_id: None,
            expected_outcome: criteria.into(),
            input_messages: vec![Message {
                role: Role::User,
                content: Content::Text(question.into()),
                name: None,
                tool_calls: None,
            }],
            raw_input_messages: Vec::new(),
            expected_messages: Vec::new(),
            guidelines: Vec::new(),
            input_files: Vec::new(),
            question: question.into(),
            reference_answer: String::new(),
            suite_target: None,
            source: SourceRef {
                file: Arc::from(Path::new("/evals/e.yaml")),
                line: 1,
            },
            ..EvalCase::default()
        };
        let env = Arc::new(Env::from_pairs(Vec::new()));
        let target_provider: Arc<dyn Provider> = FakeProvider::llm(&["unused"]);
        let target = ResolvedTarget {
            name: "default".into(),
            provider: target_provider,
            judge_name: "grader".into(),
            judge: grader.clone(),
            workers: None,
            batching: false,
            registry: Arc::new(TargetRegistry::with_provider(grader, env)),
        };
        Self {
            case,
            answer: answer.into(),
            messages: vec![OutputMessage::assistant(answer)],
            target,
            run: RunContext {
                timeout: Duration::from_secs(30),
                child_env: Arc::from(Vec::new()),
                secrets: Default::default(),
                dump_prompts: None,
                strict: false,
                cwd: None,
                held_pools: Default::default(),
            },
            trace: Vec::new(),
            summary: TraceSummary::default(),
            metrics: ExecutionMetrics::default(),
            finish_reason: None,
            logprobs: None,
        }
    }

    /// The same case answered by `provider` (the target, not the grader).
    pub fn set_target_provider(&mut self, provider: Arc<dyn Provider>) {
        self.target.provider = provider;
    }

    /// The same case with `reference` as its expected answer.
    /// A row of a promptfoo config whose target answered `answer`.
    pub fn text(answer: &str) -> Self {
        let mut answered = Self::new("q", "", answer, FakeProvider::llm(&["unused"]));
        answered.case.generation = crate::model::Generation::Promptfoo;
        answered
    }

    pub fn with_reference(mut self, reference: &str) -> Self {
        self.case.reference_answer = reference.into();
        self
    }

    /// The same case with `metadata` (a 4.x file's merged suite and case metadata).
    pub fn with_metadata(mut self, metadata: serde_json::Value) -> Self {
        self.case.metadata = metadata.as_object().cloned();
        self
    }

    /// What the provider said besides the answer, written as promptfoo's provider response
    /// (`finishReason`, `logProbs`, `cost`), and the call's latency.
    pub fn set_response_facts(&mut self, response: &serde_json::Value, latency_ms: Option<f64>) {
        self.finish_reason = response.get("finishReason").and_then(|v| v.as_str()).map(str::to_owned);
        self.logprobs = response
            .get("logProbs")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect());
        self.metrics.cost_usd = response.get("cost").and_then(serde_json::Value::as_f64);
        self.metrics.duration_ms = latency_ms;
    }

    pub fn context(&self) -> GradeContext<'_> {
        GradeContext {
            workspace: None,
            case: &self.case,
            attempt: 1,
            candidate_answer: &self.answer,
            output_messages: &self.messages,
            trace: &self.trace,
            trace_summary: &self.summary,
            metrics: &self.metrics,
            finish_reason: self.finish_reason.as_deref(),
            logprobs: self.logprobs.as_deref(),
            target: &self.target,
            run: &self.run,
        }
    }

    /// Grades with `grader`.
    pub async fn grade(&self, grader: &ConfiguredGrader) -> Grade {
        grader.grader.grade(&self.context()).await
    }
}

/// The generation of an eval file whose only grader list is `list`, as the loader decides it
/// (its graders alone decide).
pub fn list_generation(list: &crate::config::Node) -> crate::model::Generation {
    use crate::config::{Node, NodeValue};
    let key = Node::new(NodeValue::Str("evaluators".to_owned()), list.pos);
    let root = Node::new(NodeValue::Map(vec![(key, list.clone())]), list.pos);
    if super::rules::has_v4_grader(&root, super::GRADERS) {
        crate::model::Generation::V4
    } else {
        crate::model::Generation::V2
    }
}

/// Parses `yaml` (a grader list) as a case's list, in directory `dir`; the graders (`None`
/// when the case would be invalid) and every problem as text.
pub fn parse_in(dir: &Path, yaml: &str) -> (Option<Vec<ConfiguredGrader>>, Vec<String>) {
    let node = parse_yaml(yaml).expect("yaml");
    let ws = Workspace::from_cwd(dir.to_path_buf());
    let mut diags = Diagnostics::new(Path::new("e.yaml"));
    let mut cx = ParseContext::new(&ws, dir, &mut diags).with_generation(list_generation(&node));
    let graders = super::parse_graders(&node, &mut cx);
    (graders, diags.into_vec().iter().map(ToString::to_string).collect())
}

/// [`parse_in`] the temporary directory.
pub fn parse(yaml: &str) -> (Option<Vec<ConfiguredGrader>>, Vec<String>) {
    parse_in(&std::env::temp_dir(), yaml)
}

/// The one grader of `yaml`, which must parse without problems.
pub fn one(yaml: &str) -> ConfiguredGrader {
    let (graders, problems) = parse(yaml);
    assert!(problems.is_empty(), "{problems:?}");
    let mut graders = graders.expect("valid");
    assert_eq!(graders.len(), 1);
    graders.remove(0)
}

/// Parses `yaml` (an `assert` list) as a promptfoo config's; panics on any problem.
pub fn promptfoo_graders(yaml: &str) -> Vec<ConfiguredGrader> {
    graders_in(crate::model::Generation::Promptfoo, yaml)
}

/// Parses `yaml` (a grader list) as a file of `generation` has it; panics on any problem.
pub fn graders_in(generation: crate::model::Generation, yaml: &str) -> Vec<ConfiguredGrader> {
    let node = parse_yaml(yaml).expect("yaml");
    let tmp = std::env::temp_dir();
    let dir = tmp.as_path();
    let ws = Workspace::from_cwd(dir.to_path_buf());
    let mut diags = Diagnostics::new(Path::new("e.yaml"));
    let mut cx = ParseContext::new(&ws, dir, &mut diags).with_generation(generation);
    let graders = super::parse_graders(&node, &mut cx);
    let problems: Vec<String> = diags.into_vec().iter().map(ToString::to_string).collect();
    assert!(problems.is_empty(), "{problems:?}");
    graders.expect("graders")
}
