//! What promptfoo's model-graded assertion types share (`docs/promptfoo.md#model-graded-assertions`):
//! the grading target and `rubricPrompt` keys, promptfoo's grading prompts rendered as promptfoo
//! renders them, one call to the grading target with exactly the messages promptfoo sends, and
//! the record of what was asked and what it cost.
//!
//! The prompts are promptfoo's wire format (`promptfoo_graded/prompts/`): the same text and
//! message layout, so a grader model answers agentv as it answers promptfoo. A prompt that is a
//! JSON list of `{role, content}` is sent as those messages (and nothing else: no system prompt
//! of agentv's); any other text is one user message.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Grade, GradeContext, ParseContext};
use crate::config::{Fields, Key, Kind, NodeValue};
use crate::providers::{ChatMessage, Provider, ProviderRequest};

/// The `provider` key: the target that grades. A promptfoo config's loader turns the
/// assertion's `provider` (else the test's `options.provider`, else `defaultTest`'s, else
/// promptfoo's default grader) into a target of the config and writes its name here.
pub const PROVIDER: Key = Key::new(
    "provider",
    Kind::Any,
    "The grading provider: a promptfoo provider id or `{id, config}` (default: the test's `options.provider`, else promptfoo's default grader).",
);

/// The `rubricPrompt` key: the grading prompt instead of promptfoo's.
pub const RUBRIC_PROMPT: Key = Key::new(
    "rubricPrompt",
    Kind::Any,
    "The grading prompt instead of promptfoo's: text, a chat (list of `{role, content}`) or `file://path`.",
);

/// The `threshold` key of the model-graded types.
pub const THRESHOLD: Key = super::promptfoo_check::THRESHOLD;

/// The `embeddingProvider` key the loader writes for the types that also embed text.
pub const EMBEDDING_PROVIDER: Key = Key::new(
    "embeddingProvider",
    Kind::Text,
    "The target that embeds text (written by the loader from `provider`'s `embedding`, else promptfoo's default embedding model).",
);

/// How a model-graded assertion is graded: by which target, with which prompt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grading {
    /// The grading target's name; `None`: the eval target's grader.
    pub target: Option<String>,
    /// The embedding target's name, for the types that embed.
    pub embedding: Option<String>,
    /// `rubricPrompt` as written (a `file://` file read): text, or a list or mapping a type
    /// reads its own way.
    pub rubric_prompt: Option<Value>,
}

impl Grading {
    /// Reads `provider` and `rubricPrompt`; `None` after reporting a bad value.
    pub fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Self> {
        let target = f.take("provider").map(|n| match &n.value {
            NodeValue::Str(s) => s.clone(),
            _ => n
                .to_json()
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        });
        let rubric_prompt = match f.take("rubricPrompt") {
            None => None,
            Some(n) => match n.as_str().and_then(|s| s.strip_prefix("file://")) {
                Some(path) => match cx.ws.resolve_file(path, cx.eval_dir) {
                    Ok(resolved) => match std::fs::read_to_string(&resolved) {
                        Ok(text) => Some(Value::String(text)),
                        Err(e) => {
                            cx.drop_grader(
                                n.pos,
                                format!("cannot read `rubricPrompt` file {}: {e}", resolved.display()),
                                None,
                            );
                            return None;
                        }
                    },
                    Err(_) => {
                        cx.drop_grader(
                            n.pos,
                            format!("`rubricPrompt` file `{path}` not found"),
                            Some("give a path relative to the config's folder".to_owned()),
                        );
                        return None;
                    }
                },
                None => Some(n.to_json()),
            },
        };
        Some(Self {
            target: target.filter(|t| !t.is_empty()),
            embedding: None,
            rubric_prompt,
        })
    }

    /// The same, with the `embeddingProvider` key of the types that embed.
    pub fn parse_embedding(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Self> {
        let embedding = f.take("embeddingProvider").and_then(|n| n.as_str().map(str::to_owned));
        Some(Self {
            embedding,
            ..Self::parse(f, cx)?
        })
    }

    /// The rubric prompt as one text (a list or mapping as JSON, as promptfoo's
    /// `loadRubricPrompt` makes it), else `default`.
    pub fn prompt_or(&self, default: &str) -> String {
        match &self.rubric_prompt {
            None | Some(Value::Null) => default.to_owned(),
            Some(Value::Object(m)) if m.is_empty() => default.to_owned(),
            Some(Value::String(s)) if s.is_empty() => default.to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        }
    }
}

/// The test's `vars`, as promptfoo gives them to templates.
pub fn vars(ctx: &GradeContext<'_>) -> Map<String, Value> {
    ctx.case
        .metadata
        .as_ref()
        .and_then(|m| m.get("promptfoo"))
        .and_then(|keys| keys.get("vars"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// promptfoo's `tryParse`: the answer read as JSON when it is JSON, else the text.
pub fn try_parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// promptfoo's `renderLlmRubricPrompt`: objects in `scope` are JSON text (lists keep their
/// items, objects among them as JSON text); a prompt that is JSON has each of its strings
/// rendered and is written again as compact JSON, any other prompt is rendered as a whole.
pub fn render(prompt: &str, scope: &Map<String, Value>) -> Result<String, String> {
    let scope: Map<String, Value> = scope
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::Array(items) => Value::Array(
                    items
                        .iter()
                        .map(|i| match i {
                            Value::Object(_) | Value::Array(_) => Value::String(i.to_string()),
                            other => other.clone(),
                        })
                        .collect(),
                ),
                Value::Object(_) => Value::String(v.to_string()),
                other => other.clone(),
            };
            (k.clone(), v)
        })
        .collect();
    if let Ok(parsed) = serde_json::from_str::<Json>(prompt) {
        let rendered = render_strings(parsed, &scope)?;
        return serde_json::to_string(&rendered).map_err(|e| e.to_string());
    }
    super::nunjucks::render(prompt, &scope).map_err(|e| e.to_string())
}

fn render_strings(value: Json, scope: &Map<String, Value>) -> Result<Json, String> {
    Ok(match value {
        Json::String(s) => Json::String(super::nunjucks::render(&s, scope).map_err(|e| e.to_string())?),
        Json::Array(items) => Json::Array(
            items
                .into_iter()
                .map(|i| render_strings(i, scope))
                .collect::<Result<_, _>>()?,
        ),
        Json::Object(entries) => Json::Object(
            entries
                .into_iter()
                .map(|(k, v)| Ok((k, render_strings(v, scope)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other,
    })
}

/// JSON that keeps its keys in the order written, as `JSON.parse` then `JSON.stringify` do
/// (agentv's `serde_json` sorts them); a whole number is written without a fraction.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> serde::de::Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }
    #[allow(clippy::cast_precision_loss)]
    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n as f64))
    }
    #[allow(clippy::cast_precision_loss)]
    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n as f64))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Json, E> {
        Ok(Json::Number(n))
    }
    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries: Vec<(String, Json)> = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            // A repeated key keeps its first place and its last value, as in JavaScript.
            match entries.iter_mut().find(|(seen, _)| *seen == k) {
                Some(slot) => slot.1 = v,
                None => entries.push((k, v)),
            }
        }
        Ok(Json::Object(entries))
    }
}

impl serde::Serialize for Json {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Self::Null => serializer.serialize_unit(),
            Self::Bool(b) => serializer.serialize_bool(*b),
            #[allow(clippy::cast_possible_truncation)]
            Self::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => serializer.serialize_i64(*n as i64),
            Self::Number(n) => serializer.serialize_f64(*n),
            Self::String(s) => serializer.serialize_str(s),
            Self::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Self::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// The messages promptfoo sends for a rendered prompt: a JSON list of `{role, content}` is
/// those messages, anything else one user message.
pub fn messages(prompt: &str) -> Vec<ChatMessage> {
    let chat = prompt
        .trim_start()
        .starts_with('[')
        .then(|| serde_json::from_str::<Vec<Value>>(prompt).ok())
        .flatten()
        .and_then(|items| {
            items
                .iter()
                .map(|m| {
                    let role = m.get("role")?.as_str()?.to_owned();
                    let content = match m.get("content")? {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    Some(ChatMessage { role, content })
                })
                .collect::<Option<Vec<_>>>()
        });
    chat.filter(|m| !m.is_empty()).unwrap_or_else(|| {
        vec![ChatMessage {
            role: "user".to_owned(),
            content: prompt.to_owned(),
        }]
    })
}

/// The calls one assertion made to its grading targets: what was asked, and what it cost.
#[derive(Debug, Default)]
pub struct Calls {
    prompts: Vec<Value>,
    cost_usd: Option<f64>,
    tokens: u64,
    target: Option<String>,
}

impl Calls {
    /// Asks the grading target `prompt` (rendered); its answer's text, or why there is none
    /// (promptfoo's reason: the provider's error, or `No output`).
    pub async fn ask(&mut self, ctx: &GradeContext<'_>, grading: &Grading, prompt: &str) -> Result<String, String> {
        let (name, provider) = grader(ctx, grading.target.as_deref())?;
        self.target = Some(name);
        let chat = messages(prompt);
        self.prompts.push(json!(
            chat.iter()
                .map(|m| json!({"role": m.role, "content": m.content}))
                .collect::<Vec<_>>()
        ));
        let request = ProviderRequest {
            eval_id: ctx.case.id.clone(),
            attempt: ctx.attempt,
            question: prompt.to_owned(),
            chat_prompt: Some(chat),
            // promptfoo sends its messages and nothing else.
            system_prompt: Some(String::new()),
            eval_dir: Some(ctx.case.eval_dir().to_path_buf()),
            ..ProviderRequest::default()
        };
        let response = provider.invoke(&request).await.map_err(|e| e.to_string())?;
        self.count(
            response.cost_usd,
            response.token_usage.as_ref().map(|u| u.input + u.output),
        );
        let text = agentv_eval_sdk::last_assistant_text(&response.output_messages).unwrap_or_default();
        if text.is_empty() {
            return Err("No output".to_owned());
        }
        Ok(text)
    }

    /// Embeds `text` with the embedding target.
    pub async fn embed(&mut self, ctx: &GradeContext<'_>, grading: &Grading, text: &str) -> Result<Vec<f64>, String> {
        let (name, provider) = grader(ctx, grading.embedding.as_deref().or(grading.target.as_deref()))?;
        self.target.get_or_insert(name);
        self.prompts.push(json!({"embed": text}));
        let embedded = provider.embed(text).await.map_err(|e| e.to_string())?;
        self.count(embedded.cost_usd, Some(embedded.tokens));
        if embedded.vector.is_empty() {
            return Err("No embedding".to_owned());
        }
        Ok(embedded.vector)
    }

    /// Moderates `text` with the grading target's moderation API.
    pub async fn moderate(
        &mut self,
        ctx: &GradeContext<'_>,
        grading: &Grading,
        text: &str,
    ) -> Result<crate::providers::Moderation, String> {
        let (name, provider) = grader(ctx, grading.target.as_deref())?;
        self.target = Some(name);
        self.prompts.push(json!({"moderate": text}));
        provider.moderate(text).await.map_err(|e| e.to_string())
    }

    fn count(&mut self, cost: Option<f64>, tokens: Option<u64>) {
        if let Some(c) = cost {
            *self.cost_usd.get_or_insert(0.0) += c;
        }
        self.tokens += tokens.unwrap_or(0);
    }

    /// `grade` with what was asked (its `request`) and what it cost (`details.grading`).
    pub fn record(self, mut grade: Grade) -> Grade {
        // What is not known is left out, never null (docs/results.md).
        let mut request = Map::new();
        if let Some(target) = self.target {
            request.insert("target".to_owned(), Value::from(target));
        }
        request.insert("prompts".to_owned(), Value::Array(self.prompts));
        let calls = request.get("prompts").and_then(Value::as_array).map_or(0, Vec::len);
        grade.request = Some(Value::Object(request));
        let mut grading = Map::new();
        grading.insert("calls".to_owned(), json!(calls));
        if let Some(cost) = self.cost_usd {
            grading.insert("cost_usd".to_owned(), json!(cost));
        }
        grading.insert("tokens".to_owned(), json!(self.tokens));
        let details = grade.details.get_or_insert_with(Map::new);
        details.insert("grading".to_owned(), Value::Object(grading));
        grade
    }
}

/// The grading target `name` (the eval target's grader without one).
fn grader(ctx: &GradeContext<'_>, name: Option<&str>) -> Result<(String, Arc<dyn Provider>), String> {
    let t = ctx.target;
    match name {
        None => Ok((t.judge_name.clone(), t.judge.clone())),
        Some(name) if name == t.name => Ok((t.name.clone(), t.provider.clone())),
        Some(name) => t
            .registry
            .resolve(name)
            .map(|p| (name.to_owned(), p))
            .map_err(|e| format!("grading provider `{name}`: {e}")),
    }
}

/// promptfoo's `Number.EPSILON` slack on threshold comparisons.
pub const EPSILON: f64 = f64::EPSILON;

/// The context a `context-*` assertion grades against: the test's `context` var (a text or a
/// list of texts), else `fallback`.
#[derive(Debug, Clone, PartialEq)]
pub enum Context {
    Text(String),
    Chunks(Vec<String>),
}

impl Context {
    /// promptfoo's `resolveContext` without `contextTransform`.
    pub fn of(vars: &Map<String, Value>, fallback: Option<&str>) -> Result<Self, String> {
        let found = match vars.get("context") {
            Some(Value::String(s)) if !s.is_empty() => Some(Self::Text(s.clone())),
            Some(Value::Array(items)) if !items.is_empty() => {
                let mut chunks = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => chunks.push(s.clone()),
                        other => {
                            return Err(format!(
                                "Invalid context: expected an array of strings, but found {} at index {i}",
                                js_type(other)
                            ));
                        }
                    }
                }
                Some(Self::Chunks(chunks))
            }
            _ => fallback.map(|f| Self::Text(f.to_owned())),
        };
        match found {
            Some(Self::Text(t)) if !t.is_empty() => Ok(Self::Text(t)),
            Some(Self::Chunks(c)) if c.iter().all(|s| !s.is_empty()) => Ok(Self::Chunks(c)),
            _ => Err("Context is required for context-based assertions. Provide either a \"context\" variable (string or array of strings) in your test case or use \"contextTransform\" to extract context from the provider response.".to_owned()),
        }
    }

    /// The context of a `context-*` assertion, as promptfoo's `resolveContext` finds it: the
    /// `context` var (else `fallback`), replaced by what `transform` (`contextTransform`)
    /// returns for the answer when there is one. The transform runs in the warm node workers
    /// of script providers; one that throws or returns neither a text nor a list of texts is
    /// a grader error.
    pub async fn resolve(
        ctx: &GradeContext<'_>,
        vars: &Map<String, Value>,
        fallback: Option<&str>,
        transform: Option<&str>,
    ) -> Result<Self, String> {
        let Some(code) = transform else {
            return Self::of(vars, fallback);
        };
        let label = ctx
            .case
            .metadata
            .as_ref()
            .and_then(|m| m.get("promptfoo"))
            .and_then(|k| k.get("prompt"))
            .cloned()
            .unwrap_or(Value::Null);
        let call = crate::providers::script::JsCall {
            code,
            dir: ctx.case.eval_dir(),
            params: &["output", "context"],
            args: vec![
                Value::String(ctx.candidate_answer.to_owned()),
                json!({"vars": vars, "prompt": {"label": label}}),
            ],
            form: crate::providers::script::JsForm::Output,
        };
        let pool = crate::providers::script::node_pool(ctx.case.eval_dir());
        let failed = |why: String| format!("Failed to transform context using expression '{code}': {why}");
        let value = crate::providers::script::run_js(&pool, call, &ctx.run.child_env, &ctx.run.secrets)
            .await
            .map_err(failed)?;
        let transformed = match value {
            Value::String(s) => Value::String(s),
            Value::Array(items) if items.iter().all(Value::is_string) => Value::Array(items),
            other => {
                return Err(failed(format!(
                    "contextTransform must return a string or array of strings. Got {}. Check your transform expression: {code}",
                    js_type(&other)
                )));
            }
        };
        let mut vars = vars.clone();
        vars.insert("context".to_owned(), transformed);
        Self::of(&vars, None)
    }

    /// The context in one text: chunks joined by blank lines.
    pub fn joined(&self) -> String {
        match self {
            Self::Text(t) => t.clone(),
            Self::Chunks(c) => c.join("\n\n"),
        }
    }
}

/// JavaScript's `typeof` of a JSON value.
fn js_type(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        _ => "object",
    }
}

/// promptfoo's `splitIntoSentences`: the non-blank lines.
pub fn lines(text: &str) -> Vec<String> {
    text.split('\n')
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// promptfoo's `splitTextIntoSentences`: the lines of a text of two or more non-blank lines,
/// else its sentences (split after `.`, `!` or `?` and white space); trimmed, without bare list
/// markers (`1.`).
pub fn sentences(text: &str) -> Vec<String> {
    let lines = lines(text);
    let parts: Vec<String> = if lines.len() > 1 {
        lines
    } else {
        let mut out = Vec::new();
        let mut start = 0;
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let mut k = 0;
        while k < chars.len() {
            let (i, c) = chars[k];
            if matches!(c, '.' | '!' | '?') && chars.get(k + 1).is_some_and(|(_, n)| super::js::is_whitespace(*n)) {
                out.push(text[start..i + c.len_utf8()].to_owned());
                k += 1;
                while chars.get(k).is_some_and(|(_, n)| super::js::is_whitespace(*n)) {
                    k += 1;
                }
                start = chars.get(k).map_or(text.len(), |(j, _)| *j);
                continue;
            }
            k += 1;
        }
        out.push(text[start..].to_owned());
        out
    };
    parts
        .into_iter()
        .map(|s| super::js::trim(&s).to_owned())
        .filter(|s| !s.is_empty() && !is_list_marker(s))
        .collect()
}

/// `^\d+[.)]$`
fn is_list_marker(s: &str) -> bool {
    let digits = s.trim_end_matches(['.', ')']);
    s.len() == digits.len() + 1 && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The reason a ratio assertion gives: `<what> 0.50 is >= 0.5`.
pub fn ratio_result(what: &str, score: f64, threshold: f64) -> super::promptfoo_check::PfResult {
    let pass = score >= threshold - EPSILON;
    let op = if pass { ">=" } else { "<" };
    super::promptfoo_check::PfResult {
        pass,
        score,
        reason: format!(
            "{what} {} is {op} {}",
            super::js::to_fixed(score, 2),
            super::js::number(threshold)
        ),
    }
}

/// promptfoo's cosine similarity (0 when either vector is all zeros).
pub fn cosine(a: &[f64], b: &[f64]) -> Result<f64, String> {
    if a.len() != b.len() {
        return Err("Vectors must be of equal length".to_owned());
    }
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    Ok(if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na * nb) })
}

/// A grader that could not grade (no answer from the grading model, or one promptfoo cannot
/// read): the case is incomplete, never passed. promptfoo's reason is kept as the reasoning.
pub fn grader_error(reason: impl Into<String>) -> Grade {
    let reason = reason.into();
    Grade {
        reasoning: Some(reason.clone()),
        ..Grade::failed(reason)
    }
}

/// promptfoo's `extractJsonObjects`, first object only: from each `{`, the text up to where
/// its braces balance (closed at the end when they never do), read as JSON, else as YAML (as
/// promptfoo reads it, so `{pass: true}` is an object too).
pub fn first_json_object(text: &str) -> Option<Map<String, Value>> {
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices('{') {
        let (mut open, mut close) = (1usize, 0usize);
        let mut j = i + 1;
        while j < bytes.len() && open > close {
            match bytes[j] {
                b'{' => open += 1,
                b'}' => close += 1,
                _ => {}
            }
            j += 1;
            if open == close || j == bytes.len() {
                let mut candidate = text.get(i..j).unwrap_or_default().to_owned();
                candidate.push_str(&"}".repeat(open - close));
                if let Some(found) = read_object(&candidate) {
                    return Some(found);
                }
                if open == close {
                    break;
                }
            }
        }
    }
    None
}

fn read_object(candidate: &str) -> Option<Map<String, Value>> {
    if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(candidate) {
        return Some(map);
    }
    match crate::config::node::parse_yaml(candidate).ok()?.to_json() {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// JavaScript's `Number(value)` for what a grader model may write as a score.
pub fn js_number(value: &Value) -> f64 {
    match value {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Null => 0.0,
        Value::String(s) => {
            let t = s.trim();
            if t.is_empty() {
                0.0
            } else {
                t.parse::<f64>()
                    .ok()
                    .filter(|_| !t.contains(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E'))
                    .unwrap_or(f64::NAN)
            }
        }
        Value::Array(items) if items.is_empty() => 0.0,
        Value::Array(items) if items.len() == 1 => js_number(&items[0]),
        _ => f64::NAN,
    }
}

/// JavaScript's `String(value)`.
pub fn js_string(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), super::js::number),
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => items
            .iter()
            .map(|i| if i.is_null() { String::new() } else { js_string(i) })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_owned(),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Grades one promptfoo assertion against a scripted grading model.

    use serde_json::Value;

    use crate::evaluators::Grade;
    use crate::evaluators::testkit::{Answered, FakeProvider, promptfoo_graders};
    use crate::providers::ProviderRequest;

    /// Grades the one assertion of `yaml` on a row whose prompt was `prompt`, with `vars`,
    /// answered `answer`; the grading model answers `replies` in turn. The grade and what the
    /// grading model was sent.
    pub fn graded(
        yaml: &str,
        prompt: &str,
        vars: Value,
        answer: &str,
        replies: &[&str],
    ) -> (Grade, Vec<ProviderRequest>) {
        let grader = FakeProvider::llm(replies);
        let mut answered = Answered::new(prompt, "", answer, grader.clone());
        answered.case.generation = crate::model::Generation::Promptfoo;
        // A folder that exists: script workers (`contextTransform`) start there.
        answered.case.source.file = std::sync::Arc::from(std::env::temp_dir().join("promptfooconfig.yaml"));
        let answered = answered.with_metadata(serde_json::json!({"promptfoo": {"vars": vars}}));
        let mut list = promptfoo_graders(yaml);
        assert_eq!(list.len(), 1, "one assertion");
        let configured = list.remove(0);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let grade = runtime.block_on(answered.grade(&configured));
        (grade, grader.requests())
    }

    /// The problems parsing `yaml` (an `assert` list) as a promptfoo config's reports.
    pub fn problems(yaml: &str) -> Vec<String> {
        use crate::config::Diagnostics;
        use crate::evaluators::ParseContext;
        let node = crate::config::node::parse_yaml(yaml).expect("yaml");
        let dir = std::env::temp_dir();
        let ws = crate::paths::Workspace::from_cwd(dir.clone());
        let mut diags = Diagnostics::new(std::path::Path::new("promptfooconfig.yaml"));
        let mut cx = ParseContext::new(&ws, &dir, &mut diags).with_generation(crate::model::Generation::Promptfoo);
        let _ = crate::evaluators::parse_graders(&node, &mut cx);
        diags.into_vec().iter().map(ToString::to_string).collect()
    }

    /// The messages of a request as `role: content` lines.
    pub fn sent(request: &ProviderRequest) -> Vec<(String, String)> {
        request
            .chat_prompt
            .iter()
            .flatten()
            .map(|m| (m.role.clone(), m.content.clone()))
            .collect()
    }
}

/// `impl Grader` for a model-graded assertion whose `$method(ctx, calls)` gives promptfoo's
/// result: every call it made is recorded, and an error is a grader error, never a pass.
macro_rules! grader_asking {
    ($ty:ty, $method:ident) => {
        impl $crate::evaluators::Grader for $ty {
            fn grade<'a>(
                &'a self,
                ctx: &'a $crate::evaluators::GradeContext<'a>,
            ) -> futures::future::BoxFuture<'a, $crate::evaluators::Grade> {
                Box::pin(async move {
                    let mut calls = $crate::evaluators::promptfoo_graded::Calls::default();
                    let grade = match self.$method(ctx, &mut calls).await {
                        Ok(result) => result.grade(),
                        Err(reason) => $crate::evaluators::promptfoo_graded::grader_error(reason),
                    };
                    calls.record(grade)
                })
            }
        }
    };
}
pub(crate) use grader_asking;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_prompt_is_rendered_string_by_string_and_sent_as_its_messages() {
        let scope: Map<String, Value> = serde_json::from_value(json!({
            "output": "say \"hi\"\nnow",
            "rubric": {"a": 1},
        }))
        .expect("map");
        let rendered = render(
            r#"[{"role":"system","content":"S"},{"role":"user","content":"{{ output }}|{{ rubric }}"}]"#,
            &scope,
        )
        .expect("renders");
        assert_eq!(
            rendered,
            r#"[{"role":"system","content":"S"},{"role":"user","content":"say \"hi\"\nnow|{\"a\":1}"}]"#
        );
        let sent = messages(&rendered);
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[1].content, "say \"hi\"\nnow|{\"a\":1}");
        let plain = render("Answer:{{answer}}\nQuestion:", &scope).expect("renders");
        assert_eq!(plain, "Answer:\nQuestion:", "an unknown variable renders as nothing");
        assert_eq!(messages(&plain)[0].role, "user");
    }

    #[test]
    fn try_parse_reads_json_answers_only() {
        assert_eq!(try_parse("{\"a\": 1}"), json!({"a": 1}));
        assert_eq!(try_parse("Paris"), json!("Paris"));
    }
}
