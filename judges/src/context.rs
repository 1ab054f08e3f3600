//! Where a judge finds what it grades against: the retrieved context, the question and the
//! reference answer, from either payload generation.
//!
//! **Retrieved context** (`context_from`, default `auto`: the first of these that is present):
//!
//! 1. `config`: the evaluator's `context` key, a string or a list of strings (for a case with its
//!    own evaluators, or a fixed knowledge base);
//! 2. `metadata`: the case's `metadata.retrieval_context`, else `metadata.context` (4.x
//!    payloads carry the case's metadata);
//! 3. `tool`: the outputs of the retrieval tool calls in the target's transcript — tool calls
//!    named by `retrieval_tool` (default `retrieve`; a name or a list) in `output_messages`
//!    (2.x; else the 4.x `messages`), `role: tool` messages of that name, else the tool events of
//!    the 4.x `trace`. Every call counts, in order (ranks continue from one call to the next),
//!    unless `retrieval_calls: last` keeps only the last one;
//! 4. `files`: the files the case attaches to its input (`input_files`), one chunk per file,
//!    in order (a suite whose cases carry their documents).
//!
//! A tool output becomes chunks like this: a list gives one chunk per entry; a string is one
//! chunk (or, when it holds a JSON list or object, that value read again); an object with a
//! list under `results`, `documents`, `chunks`, `contexts`, `passages`, `items` or `hits` gives
//! that list; an object with `text`, `content`, `page_content`, `chunk`, `snippet` or `document`
//! is one chunk of that text. Anything else is an error naming the tool call.
//!
//! **Question**: the last `user` message of the input (`input_messages`, else the 4.x `input`),
//! else the 2.x `question` (all input text, system prompt included).
//!
//! **Reference answer**: `reference_answer` (2.x), else the text of the last message of
//! `expected_output` (4.x).

use agentv_eval_sdk::{CodeJudgePayload, OutputMessage, content_text};
use serde_json::{Map, Value};

use crate::Error;
use crate::config::Config;

/// Which source of context to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextFrom {
    Auto,
    Config,
    Metadata,
    Tool,
    Files,
}

/// Which retrieval calls count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetrievalCalls {
    All,
    Last,
}

/// The context settings: `context`, `context_from`, `retrieval_tool`, `retrieval_calls`.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextSettings {
    pub inline: Option<Vec<String>>,
    pub from: ContextFrom,
    pub tools: Vec<String>,
    pub calls: RetrievalCalls,
}

impl ContextSettings {
    pub fn read(config: &mut Config<'_>) -> Result<Self, Error> {
        Ok(Self {
            inline: config.strings("context")?,
            from: config.choice(
                "context_from",
                &[
                    ("auto", ContextFrom::Auto),
                    ("config", ContextFrom::Config),
                    ("metadata", ContextFrom::Metadata),
                    ("tool", ContextFrom::Tool),
                    ("files", ContextFrom::Files),
                ],
                ContextFrom::Auto,
            )?,
            tools: config
                .strings("retrieval_tool")?
                .unwrap_or_else(|| vec!["retrieve".to_owned()]),
            calls: config.choice(
                "retrieval_calls",
                &[("all", RetrievalCalls::All), ("last", RetrievalCalls::Last)],
                RetrievalCalls::All,
            )?,
        })
    }
}

/// The retrieved chunks, in rank order, and where they came from (`details.context_source`).
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    pub chunks: Vec<String>,
    pub source: String,
}

/// Finds the retrieved context (see the module documentation for the order).
pub fn retrieved_context(payload: &CodeJudgePayload, settings: &ContextSettings) -> Result<Context, Error> {
    let sources: &[ContextFrom] = match settings.from {
        ContextFrom::Auto => &[
            ContextFrom::Config,
            ContextFrom::Metadata,
            ContextFrom::Tool,
            ContextFrom::Files,
        ],
        ContextFrom::Config => &[ContextFrom::Config],
        ContextFrom::Metadata => &[ContextFrom::Metadata],
        ContextFrom::Tool => &[ContextFrom::Tool],
        ContextFrom::Files => &[ContextFrom::Files],
    };
    for source in sources {
        let found = match source {
            ContextFrom::Config => settings.inline.clone().map(|chunks| Context {
                chunks,
                source: "config.context".to_owned(),
            }),
            ContextFrom::Metadata => from_metadata(&payload.metadata)?,
            ContextFrom::Tool | ContextFrom::Auto => from_tools(payload, settings)?,
            ContextFrom::Files => from_files(&payload.input_files)?,
        };
        if let Some(context) = found {
            return Ok(context);
        }
    }
    Err(Error::Input(no_context_message(settings)))
}

fn no_context_message(settings: &ContextSettings) -> String {
    let tools = settings
        .tools
        .iter()
        .map(|t| format!("`{t}`"))
        .collect::<Vec<_>>()
        .join(" or ");
    match settings.from {
        ContextFrom::Config => "no retrieved context: `context_from: config` but the evaluator has no `context`".to_owned(),
        ContextFrom::Metadata => {
            "no retrieved context: `context_from: metadata` but the case's metadata has no `retrieval_context` or `context`"
                .to_owned()
        }
        ContextFrom::Tool => format!(
            "no retrieved context: the target's transcript has no {tools} tool call with an output; \
             name the retrieval tool with `retrieval_tool`"
        ),
        ContextFrom::Files => "no retrieved context: `context_from: files` but the case attaches no files".to_owned(),
        ContextFrom::Auto => format!(
            "no retrieved context: the target's transcript has no {tools} tool call with an output, there is \
             no `context` in the evaluator's config nor `retrieval_context` in the case's metadata, and the case \
             attaches no files; name the retrieval tool with `retrieval_tool`, or give the context as `context`"
        ),
    }
}

/// The case's attached files, one chunk each.
fn from_files(paths: &[String]) -> Result<Option<Context>, Error> {
    if paths.is_empty() {
        return Ok(None);
    }
    let chunks = paths
        .iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .map(|text| text.trim().to_owned())
                .map_err(|e| Error::Input(format!("cannot read the attached file {p}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(Context {
        chunks,
        source: "input_files".to_owned(),
    }))
}

fn from_metadata(metadata: &Map<String, Value>) -> Result<Option<Context>, Error> {
    for key in ["retrieval_context", "context"] {
        if let Some(value) = metadata.get(key).filter(|v| !v.is_null()) {
            let source = format!("metadata.{key}");
            let chunks = chunks_of(value).map_err(|e| Error::Input(format!("{source}: {e}")))?;
            return Ok(Some(Context { chunks, source }));
        }
    }
    Ok(None)
}

/// One tool output found in the transcript, with where it was.
struct Found<'a> {
    output: &'a Value,
    place: String,
}

fn from_tools(payload: &CodeJudgePayload, settings: &ContextSettings) -> Result<Option<Context>, Error> {
    let named = |name: &str| settings.tools.iter().any(|t| t == name);
    let (messages, key) = if payload.output_messages.is_empty() {
        (&payload.messages, "messages")
    } else {
        (&payload.output_messages, "output_messages")
    };
    let mut found = in_messages(messages, key, &named);
    if found.is_empty()
        && let Some(trace) = &payload.trace
    {
        found = trace
            .events
            .iter()
            .enumerate()
            .filter_map(|(i, event)| {
                let tool = event.tool.as_ref()?;
                let output = tool.output.as_ref().filter(|o| !o.is_null())?;
                named(tool.name.as_deref()?).then(|| Found {
                    output,
                    place: format!("trace.events[{i}].tool.output"),
                })
            })
            .collect();
    }
    if settings.calls == RetrievalCalls::Last && found.len() > 1 {
        found.drain(..found.len() - 1);
    }
    if found.is_empty() {
        return Ok(None);
    }
    let mut chunks = Vec::new();
    for f in &found {
        chunks.extend(chunks_of(f.output).map_err(|e| Error::Input(format!("{}: {e}", f.place)))?);
    }
    let source = found.iter().map(|f| f.place.as_str()).collect::<Vec<_>>().join(", ");
    Ok(Some(Context { chunks, source }))
}

fn in_messages<'a>(messages: &'a [OutputMessage], key: &str, named: &dyn Fn(&str) -> bool) -> Vec<Found<'a>> {
    let mut found = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        for (j, call) in message.tool_calls.iter().enumerate() {
            if let Some(output) = call.output.as_ref().filter(|o| !o.is_null() && named(&call.tool)) {
                found.push(Found {
                    output,
                    place: format!("{key}[{i}].tool_calls[{j}].output"),
                });
            }
        }
        let is_named_tool = message.role == "tool" && message.name.as_deref().is_some_and(named);
        if let Some(content) = message.content.as_ref().filter(|c| is_named_tool && !c.is_null()) {
            found.push(Found {
                output: content,
                place: format!("{key}[{i}].content"),
            });
        }
    }
    found
}

const LIST_KEYS: &[&str] = &[
    "results",
    "documents",
    "chunks",
    "contexts",
    "passages",
    "items",
    "hits",
];
const TEXT_KEYS: &[&str] = &["text", "content", "page_content", "chunk", "snippet", "document"];

/// The chunks of one tool output or context value (see the module documentation).
pub fn chunks_of(value: &Value) -> Result<Vec<String>, String> {
    match value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| chunk_text(item).ok_or_else(|| no_text(i + 1, item)))
            .collect(),
        Value::String(s) => match parse_json_text(s) {
            Some(inner) => chunks_of(&inner),
            None => Ok(vec![s.clone()]),
        },
        Value::Object(object) => {
            if let Some(list) = LIST_KEYS.iter().find_map(|k| object.get(*k).filter(|v| v.is_array())) {
                return chunks_of(list);
            }
            chunk_text(value).map(|t| vec![t]).ok_or_else(|| {
                format!(
                    "an object without a list ({}) or a text ({}): {}",
                    LIST_KEYS.join(", "),
                    TEXT_KEYS.join(", "),
                    crate::config::describe(value)
                )
            })
        }
        other => Err(format!(
            "expected a list of chunks, got {}",
            crate::config::describe(other)
        )),
    }
}

fn no_text(n: usize, item: &Value) -> String {
    format!(
        "chunk {n} has no text (a string, or an object with {}): {}",
        TEXT_KEYS.join(", "),
        crate::config::describe(item)
    )
}

/// A string that holds a JSON list or object (tools often return JSON as text).
fn parse_json_text(s: &str) -> Option<Value> {
    let trimmed = s.trim();
    if !(trimmed.starts_with('[') || trimmed.starts_with('{')) {
        return None;
    }
    serde_json::from_str::<Value>(trimmed)
        .ok()
        .filter(|v| v.is_array() || v.is_object())
}

fn chunk_text(item: &Value) -> Option<String> {
    match item {
        Value::String(s) => Some(s.clone()),
        Value::Object(object) => TEXT_KEYS.iter().find_map(|k| object.get(*k)).and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Array(_) => Some(content_text(v)),
            _ => None,
        }),
        _ => None,
    }
}

/// The question the answer answers (see the module documentation).
pub fn question(payload: &CodeJudgePayload) -> String {
    let input = if payload.input_messages.is_empty() {
        &payload.input
    } else {
        &payload.input_messages
    };
    input
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content"))
        .map(message_text)
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| payload.question.clone())
}

/// The reference answer (see the module documentation).
pub fn reference_answer(payload: &CodeJudgePayload) -> String {
    if !payload.reference_answer.is_empty() {
        return payload.reference_answer.clone();
    }
    payload
        .expected_output
        .last()
        .and_then(|m| m.get("content"))
        .map(message_text)
        .unwrap_or_default()
}

/// The text of message content as an eval file writes it: a string, or parts whose text is
/// under `text` (4.x, providers) or `value` (2.x eval files); file parts give their text.
/// Other values are their JSON.
pub fn message_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| match part {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => ["text", "value"]
                    .iter()
                    .find_map(|k| o.get(*k).and_then(Value::as_str))
                    .map(str::to_owned),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload(value: Value) -> CodeJudgePayload {
        CodeJudgePayload::from_value(value).expect("a payload")
    }

    fn settings(config: Value) -> ContextSettings {
        let map = config.as_object().cloned().expect("object");
        let mut c = Config::new(&map, "test");
        let s = ContextSettings::read(&mut c).expect("valid");
        c.finish().expect("known keys");
        s
    }

    #[test]
    fn chunk_shapes() {
        let cases: &[(Value, Result<&[&str], &str>)] = &[
            (json!(["a", "b"]), Ok(&["a", "b"])),
            (
                json!([{"text": "a"}, {"page_content": "b"}, {"content": [{"type": "text", "text": "c"}]}]),
                Ok(&["a", "b", "c"]),
            ),
            (json!("one chunk"), Ok(&["one chunk"])),
            (json!("[\"from\", \"json text\"]"), Ok(&["from", "json text"])),
            (json!({"results": [{"snippet": "s"}]}), Ok(&["s"])),
            (json!({"text": "single"}), Ok(&["single"])),
            (json!([]), Ok(&[])),
            (json!("[not json"), Ok(&["[not json"])),
            (
                json!([{"score": 1}]),
                Err(
                    "chunk 1 has no text (a string, or an object with text, content, page_content, chunk, snippet, document): {\"score\":1}",
                ),
            ),
            (json!(3), Err("expected a list of chunks, got 3")),
        ];
        for (value, want) in cases {
            let got = chunks_of(value);
            match want {
                Ok(chunks) => assert_eq!(got.expect("chunks"), *chunks, "{value}"),
                Err(message) => assert_eq!(got.expect_err("no chunks"), *message, "{value}"),
            }
        }
    }

    #[test]
    fn attached_files_are_the_context_when_nothing_else_is() {
        let dir = tempfile::tempdir().expect("tmp");
        let (a, b) = (dir.path().join("a.md"), dir.path().join("b.md"));
        std::fs::write(&a, "Refunds take 30 days.\n").expect("a");
        std::fs::write(&b, "Stores open at 9.").expect("b");
        let files = json!({"input_files": [a.display().to_string(), b.display().to_string()]});
        let got = retrieved_context(&payload(files.clone()), &settings(json!({}))).expect("found");
        assert_eq!(
            (got.chunks.as_slice(), got.source.as_str()),
            (
                &["Refunds take 30 days.".to_owned(), "Stores open at 9.".to_owned()][..],
                "input_files"
            )
        );
        let only = retrieved_context(&payload(files), &settings(json!({"context_from": "files"}))).expect("found");
        assert_eq!(only.chunks.len(), 2);
        let none = retrieved_context(&payload(json!({})), &settings(json!({"context_from": "files"})));
        assert!(none.is_err());
        let missing = json!({"input_files": [dir.path().join("gone.md").display().to_string()]});
        let error = retrieved_context(&payload(missing), &settings(json!({}))).expect_err("unreadable");
        assert!(error.to_string().contains("cannot read the attached file"), "{error}");
    }

    #[test]
    fn context_sources_in_order() {
        let transcript = json!({
            "output_messages": [
                {"role": "assistant", "tool_calls": [
                    {"tool": "search", "output": ["ignored"]},
                    {"tool": "retrieve", "output": ["r1", "r2"]}
                ]},
                {"role": "tool", "name": "retrieve", "content": "r3"},
                {"role": "assistant", "content": "answer"}
            ],
            "metadata": {"retrieval_context": ["m1"]}
        });
        let p = payload(transcript.clone());
        let got = retrieved_context(&p, &settings(json!({}))).expect("found");
        assert_eq!(got.chunks, ["m1"], "metadata before tools");
        assert_eq!(got.source, "metadata.retrieval_context");
        let got = retrieved_context(&p, &settings(json!({"context_from": "tool"}))).expect("found");
        assert_eq!(got.chunks, ["r1", "r2", "r3"]);
        assert_eq!(
            got.source,
            "output_messages[0].tool_calls[1].output, output_messages[1].content"
        );
        let got = retrieved_context(
            &p,
            &settings(json!({"context_from": "tool", "retrieval_calls": "last"})),
        )
        .expect("found");
        assert_eq!(got.chunks, ["r3"]);
        let got = retrieved_context(
            &p,
            &settings(json!({"context_from": "tool", "retrieval_tool": ["search", "retrieve"]})),
        )
        .expect("found");
        assert_eq!(got.chunks, ["ignored", "r1", "r2", "r3"]);
        let got = retrieved_context(&p, &settings(json!({"context": "inline"}))).expect("found");
        assert_eq!(
            (got.chunks, got.source.as_str()),
            (vec!["inline".to_owned()], "config.context")
        );
    }

    #[test]
    fn context_from_a_4x_trace_and_its_absence() {
        let p = payload(json!({
            "messages": [{"role": "user", "content": "q"}],
            "trace": {"events": [
                {"type": "tool", "tool": {"name": "retrieve", "output": {"documents": [{"text": "d1"}]}}}
            ]}
        }));
        let got = retrieved_context(&p, &settings(json!({}))).expect("found");
        assert_eq!(
            (got.chunks, got.source.as_str()),
            (vec!["d1".to_owned()], "trace.events[0].tool.output")
        );
        let none = payload(json!({"output_messages": [{"role": "assistant", "content": "a"}]}));
        let error = retrieved_context(&none, &settings(json!({})))
            .expect_err("nothing")
            .to_string();
        assert!(
            error.starts_with("no retrieved context: the target's transcript has no `retrieve` tool call"),
            "{error}"
        );
        let bad = payload(
            json!({"output_messages": [{"role": "assistant", "tool_calls": [{"tool": "retrieve", "output": 7}]}]}),
        );
        let error = retrieved_context(&bad, &settings(json!({})))
            .expect_err("bad")
            .to_string();
        assert_eq!(
            error,
            "output_messages[0].tool_calls[0].output: expected a list of chunks, got 7"
        );
    }

    #[test]
    fn question_and_reference_from_either_generation() {
        let v2 = payload(json!({
            "question": "You are terse. What is X?",
            "input_messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": [{"type": "text", "value": "What is X?"}]}],
            "reference_answer": "X is Y."
        }));
        assert_eq!(
            (question(&v2), reference_answer(&v2)),
            ("What is X?".to_owned(), "X is Y.".to_owned())
        );
        let v4 = payload(json!({
            "input": [{"role": "user", "content": "Q4?"}],
            "expected_output": [{"role": "assistant", "content": [{"type": "text", "text": "R4."}]}]
        }));
        assert_eq!(
            (question(&v4), reference_answer(&v4)),
            ("Q4?".to_owned(), "R4.".to_owned())
        );
        let bare = payload(json!({"question": "only this"}));
        assert_eq!(
            (question(&bare), reference_answer(&bare)),
            ("only this".to_owned(), String::new())
        );
    }
}
