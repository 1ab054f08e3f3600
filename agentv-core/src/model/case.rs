//! Eval cases and their messages, after loading and file resolution.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

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

/// One eval case, ready to run: files read, guidelines split out.
#[derive(Debug, Clone)]
pub struct EvalCase {
    pub id: String,
    pub dataset: Arc<str>,
    pub conversation_id: Option<String>,
    pub expected_outcome: String,
    /// Input messages with guideline files removed.
    pub input_messages: Vec<Message>,
    /// Input messages exactly as written (for judges).
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
}

impl EvalCase {
    /// Directory of the eval file the case comes from.
    pub fn eval_dir(&self) -> &Path {
        self.source.file.parent().unwrap_or_else(|| Path::new("."))
    }
}

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
}
