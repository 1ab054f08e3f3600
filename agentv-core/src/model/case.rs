//! Eval cases and their messages, after loading and file resolution.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    /// Every role, as files write it.
    pub const NAMES: &[&str] = &["system", "user", "assistant", "tool"];

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "system" => Some(Self::System),
            "user" => Some(Self::User),
            "assistant" => Some(Self::Assistant),
            "tool" => Some(Self::Tool),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }

    /// The marker used when a prompt flattens several messages: `@[User]:`.
    pub fn marker(self) -> &'static str {
        match self {
            Self::System => "@[System]:",
            Self::User => "@[User]:",
            Self::Assistant => "@[Assistant]:",
            Self::Tool => "@[Tool]:",
        }
    }
}

/// A file attached to a message, read at load time.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRef {
    /// The path as written in the eval file.
    pub value: String,
    /// Where it was found.
    pub path: PathBuf,
    /// UTF-8 text with CRLF turned into LF.
    pub text: Arc<str>,
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    Text(String),
    File(FileRef),
    /// Any other object: kept for judges, not rendered into prompts.
    Other(Value),
}

/// A message's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// No content (an assistant turn that only calls tools).
    Empty,
    Text(String),
    /// Structured content, rendered as pretty JSON in prompts.
    Json(Value),
    Segments(Vec<Segment>),
}

/// One input or expected message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: Content,
    pub name: Option<String>,
    /// Tool calls of an expected assistant message, as written.
    pub tool_calls: Option<Value>,
}

impl Message {
    /// The message's own text parts (strings, text segments, JSON of objects); files excluded.
    pub fn text_parts(&self) -> Vec<String> {
        match &self.content {
            Content::Empty => Vec::new(),
            Content::Text(t) => vec![t.clone()],
            Content::Json(v) => vec![pretty_json(v)],
            Content::Segments(segs) => segs
                .iter()
                .filter_map(|s| match s {
                    Segment::Text(t) => Some(t.clone()),
                    _ => None,
                })
                .collect(),
        }
    }

    /// True when the message shows anything in a prompt.
    pub fn has_visible_content(&self) -> bool {
        match &self.content {
            Content::Empty => false,
            Content::Text(t) => !t.trim().is_empty(),
            Content::Json(_) => true,
            Content::Segments(segs) => segs.iter().any(|s| !matches!(s, Segment::Other(_))),
        }
    }

    /// The processed message as judges see it: file segments carry their text and resolved path.
    pub fn to_json(&self) -> Value {
        let mut obj = serde_json::Map::new();
        obj.insert("role".into(), Value::from(self.role.as_str()));
        if let Some(name) = &self.name {
            obj.insert("name".into(), Value::from(name.clone()));
        }
        let content = match &self.content {
            Content::Empty => None,
            Content::Text(t) => Some(Value::from(t.clone())),
            Content::Json(v) => Some(v.clone()),
            Content::Segments(segs) => Some(Value::Array(
                segs.iter()
                    .map(|s| match s {
                        Segment::Text(t) => json!({"type": "text", "value": t}),
                        Segment::File(f) => json!({
                            "type": "file",
                            "path": f.value,
                            "text": &*f.text,
                            "resolved_path": f.path.display().to_string(),
                        }),
                        Segment::Other(v) => v.clone(),
                    })
                    .collect(),
            )),
        };
        if let Some(content) = content {
            obj.insert("content".into(), content);
        }
        if let Some(calls) = &self.tool_calls {
            obj.insert("tool_calls".into(), calls.clone());
        }
        Value::Object(obj)
    }
}

/// Where a case was written.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRef {
    pub file: Arc<Path>,
    pub line: u64,
}

impl Default for SourceRef {
    fn default() -> Self {
        Self {
            file: Arc::from(Path::new("")),
            line: 0,
        }
    }
}

/// Which AgentV file format a case was written in (`docs/architecture.md#generations`).
/// Semantics follow it: verdicts, how the case score is made, which grader list applies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Generation {
    /// AgentV 2.x (the spec): `evalcases`, `expected_outcome`, `input_messages`, snake_case
    /// graders; verdicts pass / borderline / fail.
    #[default]
    V2,
    /// AgentV 4.x: `tests`, `criteria`, `input`, `assertions`, kebab-case graders; verdicts
    /// pass / fail against the case's threshold.
    V4,
    /// A promptfoo config: `prompts`, `providers`, `tests` with `vars` and `assert`; a row
    /// passes when every assertion passes, or its score meets the test's `threshold`
    /// (`docs/promptfoo.md`).
    Promptfoo,
}

impl Generation {
    /// Every generation, in the order messages list them.
    pub const ALL: [Self; 3] = [Self::V2, Self::V4, Self::Promptfoo];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2 => "2.x",
            Self::V4 => "4.x",
            Self::Promptfoo => "promptfoo",
        }
    }
}

/// How the turns of a conversation case are combined into its score (4.x `aggregation`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TurnAggregation {
    #[default]
    Mean,
    Min,
    Max,
}

/// One turn of a conversation case: what the user says, and how the answer is graded.
#[derive(Debug, Clone)]
pub struct Turn {
    pub input: Vec<Message>,
    /// The reference answer of the turn (`expected_output`).
    pub expected: Vec<Message>,
    /// Line of the turn in its file.
    pub line: u64,
}

/// A 4.x conversation case (`mode: conversation`): the target is called once per turn with the
/// growing history. The turns' graders travel with the case's (`load::LoadedCase`).
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    pub turns: Vec<Turn>,
    pub aggregation: TurnAggregation,
    /// `on_turn_failure: stop`: once a turn scores below the threshold, later turns score 0.
    pub stop_on_failure: bool,
    /// Send only the system messages and the last `2n` other messages (`window_size: n`).
    pub window_size: Option<usize>,
}

/// One eval case, ready to run: files read, guidelines split out.
#[derive(Debug, Clone, Default)]
pub struct EvalCase {
    pub id: String,
    pub dataset: Arc<str>,
    pub conversation_id: Option<String>,
    pub expected_outcome: String,
    /// Input messages with guideline files removed.
    pub input_messages: Vec<Message>,
    /// Input messages exactly as written (for judges); empty when they are the parsed ones
    /// (a promptfoo prompt): read them through [`EvalCase::raw_inputs`].
    pub raw_input_messages: Vec<Value>,
    pub expected_messages: Vec<Message>,
    /// Guideline files, in the order they appeared.
    pub guidelines: Vec<FileRef>,
    /// Other attached files (absolute paths), in order, without duplicates.
    pub input_files: Vec<PathBuf>,
    /// All input text joined by single spaces.
    pub question: String,
    /// Content of the last expected message.
    pub reference_answer: String,
    /// Target named by the eval file, if any.
    pub suite_target: Option<Arc<str>>,
    pub source: SourceRef,
    /// The file format the case was written in.
    pub generation: Generation,
    /// Free-form metadata (4.x), merged with the suite's; passed to graders and results.
    pub metadata: Option<Map<String, Value>>,
    /// The case's own pass threshold (4.x `execution.threshold`).
    pub threshold: Option<f64>,
    /// The suite's `execution.threshold` (4.x): it only gates the exit code, when
    /// `--threshold` is not given.
    pub suite_threshold: Option<f64>,
    /// Set for a 4.x conversation case (`mode: conversation`).
    pub conversation: Option<Arc<Conversation>>,
    /// The case's workspace (`docs/workspaces.md`), when its suite or itself declares one or
    /// the suite declares target hooks.
    pub workspace: Option<Arc<super::workspace::CaseWorkspace>>,
    /// Set on every case of a suite where some case has `depends_on` (`docs/workspaces.md#dependencies`).
    pub dependencies: Option<Arc<Dependencies>>,
    /// The suite says `strict: true`: its graders apply no generation's lenient rule (as
    /// `--strict` does for every suite).
    pub strict: bool,
    /// Tools, tool choice, steps and tool results of the case over its suite's
    /// (`docs/tools.md`); the target's fill in what neither sets.
    pub tool_use: Option<Arc<super::ToolSettings>>,
    /// Targets of its suite the case does not run against: the providers of a promptfoo config
    /// whose `prompts` leave its prompt out (`docs/promptfoo.md#providers`).
    pub excluded_targets: Option<Arc<Vec<String>>>,
}

/// Where a case stands in its suite's dependency graph: the cases it waits for, its wave, and
/// what it does when one of them could not run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dependencies {
    /// The ids of `depends_on`, as written.
    pub on: Vec<String>,
    pub on_failure: OnDependencyFailure,
    /// The case's level in the graph: 0 for a case without dependencies, else one more than
    /// the highest wave of its dependencies. A wave starts once the one before has finished.
    pub wave: u32,
}

/// `on_dependency_failure`: what a case does when a dependency ended in an execution error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnDependencyFailure {
    /// An execution error `Skipped: dependency failed (…)`; the target is not called.
    #[default]
    Skip,
    /// The same, worded `Failed: dependency failed (…)`.
    Fail,
    /// Runs as if the dependency had succeeded.
    Run,
}

impl EvalCase {
    /// The input messages as written; for a case that keeps only the parsed messages (a
    /// promptfoo prompt: one less copy of every prompt held for the whole run), their JSON.
    pub fn raw_inputs(&self) -> std::borrow::Cow<'_, [Value]> {
        if self.raw_input_messages.is_empty() && !self.input_messages.is_empty() {
            std::borrow::Cow::Owned(self.input_messages.iter().map(Message::to_json).collect())
        } else {
            std::borrow::Cow::Borrowed(&self.raw_input_messages)
        }
    }

    /// The threshold the case's verdict (and a 4.x required grader without `min_score`) is
    /// judged against: its own (4.x), else `--threshold`, else 0.8
    /// (`docs/architecture.md#generations`).
    pub fn pass_threshold(&self, cli: Option<f64>) -> f64 {
        self.threshold.or(cli).unwrap_or(DEFAULT_THRESHOLD)
    }

    /// Whether the case runs against target `name` (see `excluded_targets`).
    pub fn runs_on(&self, name: &str) -> bool {
        self.excluded_targets
            .as_ref()
            .is_none_or(|ex| !ex.iter().any(|t| t == name))
    }

    /// Directory of the eval file the case comes from.
    pub fn eval_dir(&self) -> &Path {
        self.source.file.parent().unwrap_or_else(|| Path::new("."))
    }
}

/// The score at or above which a case passes when nothing says otherwise.
pub const DEFAULT_THRESHOLD: f64 = 0.8;

pub(crate) fn pretty_json(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_name_parses_back_to_itself() {
        for name in Role::NAMES {
            assert_eq!(Role::parse(name).map(Role::as_str), Some(*name));
        }
        assert_eq!(Role::parse("robot"), None);
    }

    #[test]
    fn raw_inputs_are_the_written_messages_else_the_parsed_ones() {
        let message = Message {
            role: Role::User,
            content: Content::Text("What is 2+2?".into()),
            name: None,
            tool_calls: None,
        };
        let parsed_only = EvalCase {
            input_messages: vec![message.clone()],
            ..EvalCase::default()
        };
        assert_eq!(
            parsed_only.raw_inputs().as_ref(),
            [json!({"role": "user", "content": "What is 2+2?"})]
        );
        let written = EvalCase {
            input_messages: vec![message],
            raw_input_messages: vec![json!({"role": "user", "content": [{"type": "text", "value": "What is 2+2?"}]})],
            ..EvalCase::default()
        };
        assert_eq!(written.raw_inputs().as_ref(), written.raw_input_messages.as_slice());
        assert!(EvalCase::default().raw_inputs().is_empty());
    }
}
