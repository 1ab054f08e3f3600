//! An AgentV 4.x suite to a promptfoo config (`docs/convert.md#to-promptfoo`).
//!
//! The suite is loaded by the loader's own code, so a file `agentv eval` refuses is refused
//! here with the same errors. Each case becomes one promptfoo test whose var `input` holds
//! exactly what the suite's target is sent (the question, or for an LLM API the whole chat with
//! AgentV's system prompt, which a promptfoo row sends as written), behind the one prompt
//! `{{ input }}`. The target becomes the provider whose id agentv maps back onto the same
//! target. An assertion is written only onto a promptfoo assertion that passes and scores alike
//! on every answer; the case's threshold (0.8 unless it says otherwise) becomes the test's, which
//! promptfoo judges the same way (the weighted mean meets it). Every other construct is an error
//! at its line, and nothing is written.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::Converted;
use super::from_promptfoo::json as json_text;
use crate::config::node::parse_yaml;
use crate::config::{Diagnostic, Diagnostics, Node, Pos, Severity};
use crate::evaluators::Generation;
use crate::load::{LoadedSuite, load_eval_file};
use crate::model::{DEFAULT_THRESHOLD, EvalCase};
use crate::paths::Workspace;
use crate::providers::{PromptMode, ProviderRequest, TargetDef};

/// Top-level keys that change no verdict or score: dropped with a warning.
const DROPPED: &[&str] = &["$schema", "name", "version", "author", "license", "tags", "category"];
/// Keys of a case the conversion carries.
const CASE_KEYS: &[&str] = &[
    "id",
    "input",
    "criteria",
    "expected_output",
    "assertions",
    "assert",
    "execution",
    "metadata",
    "note",
];
/// Keys of an assertion the conversion carries (the value keys are the type's).
const ASSERTION_KEYS: &[&str] = &["type", "value", "weight", "negate", "name", "flags"];
/// The one prompt of a converted config: each test's `input` var is the whole prompt.
const PROMPT: &str = "{{ input }}";

/// Converts the 4.x suite `file`; its target is looked up in the targets file `agentv eval`
/// would use (`targets`, else the one found from the suite's folder).
pub fn convert(file: &Path, targets: Option<&Path>, ws: &Workspace) -> Result<Converted, Vec<Diagnostic>> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let (root, mut diags) = super::parse(text, file)?;
    let suite = load_eval_file(file, ws);
    if suite.has_errors() || !suite.invalid.is_empty() {
        let mut errors: Vec<Diagnostic> = suite
            .diagnostics
            .into_iter()
            .filter(|d| d.severity == Severity::Error)
            .collect();
        // An invalid case's errors are the suite's own; said here when they are not.
        for invalid in suite.invalid.iter().filter(|_| errors.is_empty()) {
            let what = invalid
                .id
                .as_deref()
                .map_or_else(|| "a case".to_owned(), |id| format!("case `{id}`"));
            diags.error(
                Pos::new(invalid.line, 1),
                format!("{what} is invalid: {}", invalid.errors.join("; ")),
                None,
            );
        }
        errors.extend(only_errors(diags));
        return Err(errors);
    }
    if suite.generation != crate::model::Generation::V4 {
        diags.error(
            root.pos,
            "only an AgentV 4.x suite converts to a promptfoo config (2.x graders have no promptfoo equivalent)",
            Some("convert it to 4.x first: `agentv convert FILE --to v4`".to_owned()),
        );
        return Err(only_errors(diags));
    }
    let suite_asserts = check_suite_keys(&root, &mut diags);
    let mut target_diags = Vec::new();
    let provider = provider_of(&suite, file, targets, ws, &root, &mut diags, &mut target_diags);
    let mut tests = String::new();
    if let Some(provider) = &provider {
        let nodes = root.get("tests").and_then(Node::as_seq).unwrap_or_default();
        for case in suite.cases() {
            let node = nodes
                .iter()
                .find(|n| n.get("id").and_then(Node::scalar_text).as_deref() == Some(&case.case.id));
            let Some(node) = node else { continue };
            let test = test_of(&case.case, node, &suite_asserts, provider.sends, &mut diags);
            if let Some(test) = test {
                tests.push_str(&test);
            }
        }
    }
    if diags.error_count() > 0 || !target_diags.is_empty() {
        let mut errors = only_errors(diags);
        errors.extend(target_diags);
        return Err(errors);
    }
    let Some(provider) = provider else {
        return Err(only_errors(diags));
    };
    let config = header(file, &root, &provider) + &tests;
    if let Err(errors) = parse_yaml(&config) {
        let message = errors.first().map_or_else(String::new, |e| e.message.clone());
        diags.error(
            root.pos,
            format!("the converted config is not valid YAML: {message}"),
            None,
        );
        return Err(only_errors(diags));
    }
    Ok(Converted {
        text: config,
        from: Generation::V4,
        warnings: diags.into_vec(),
    })
}

fn only_errors(diags: Diagnostics) -> Vec<Diagnostic> {
    diags
        .into_vec()
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .collect()
}

/// Checks the suite's top-level keys; returns its own assertions (`assertions`/`assert`, at
/// the top or under `execution`), which 4.x appends to every case without `skip_defaults`.
fn check_suite_keys<'n>(root: &'n Node, diags: &mut Diagnostics) -> Vec<&'n Node> {
    let mut asserts = Vec::new();
    for (k, v) in root.as_map().unwrap_or_default() {
        let key = k.key_text();
        match key.as_str() {
            "description" | "target" => {}
            "tests" if v.as_seq().is_some() => {}
            "tests" => diags.error(
                v.pos,
                "`tests` as a file: promptfoo would read the file by its own rules",
                Some("write the cases in the suite".to_owned()),
            ),
            "assertions" | "assert" => asserts.extend(v.as_seq().unwrap_or_default()),
            "execution" => {
                for (ek, ev) in v.as_map().unwrap_or_default() {
                    match ek.key_text().as_str() {
                        "target" => {}
                        "assertions" | "assert" => asserts.extend(ev.as_seq().unwrap_or_default()),
                        "threshold" | "workers" | "cache" | "cache_path" => diags.warn(
                            ek.pos,
                            format!(
                                "`execution.{}` is not carried over: it changes no verdict or score",
                                ek.key_text()
                            ),
                            None,
                        ),
                        other => diags.error(
                            ek.pos,
                            format!("`execution.{other}` has no promptfoo equivalent"),
                            Some("remove it, or keep running this suite with `agentv eval`".to_owned()),
                        ),
                    }
                }
            }
            k if DROPPED.contains(&k) => diags.warn(
                v.pos,
                format!("`{k}` is not carried over: it changes no verdict or score"),
                None,
            ),
            other => diags.error(
                v.pos,
                format!("`{other}` has no promptfoo equivalent"),
                Some("remove it, or keep running this suite with `agentv eval`".to_owned()),
            ),
        }
    }
    asserts
}

/// The suite's target as a promptfoo provider entry.
struct Provider {
    /// The YAML flow mapping of the entry.
    entry: String,
    /// What the target is sent of a case.
    sends: Sends,
}

/// What a target is sent of a case, which the test's `input` var must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sends {
    /// `echo`: the question of a single-turn input, which it answers with.
    EchoQuestion,
    /// An LLM API: the whole chat, AgentV's system prompt first.
    Chat,
}

/// The provider the suite's target maps onto; `None` (reported) when it has none.
fn provider_of(
    suite: &LoadedSuite,
    file: &Path,
    explicit: Option<&Path>,
    ws: &Workspace,
    root: &Node,
    diags: &mut Diagnostics,
    target_diags: &mut Vec<Diagnostic>,
) -> Option<Provider> {
    let name = suite.target.as_deref().unwrap_or("default");
    let at = root
        .get("execution")
        .and_then(|e| e.get("target"))
        .or_else(|| root.get("target"))
        .map_or(root.pos, |n| n.pos);
    let dir = file.parent().unwrap_or_else(|| Path::new("."));
    let targets = match &suite.inline_targets {
        Some(inline) => (**inline).clone(),
        None => match crate::load::find_targets_file(explicit, dir, ws) {
            Ok(path) => crate::load::load_targets_file(&path),
            Err(_) => {
                diags.error(
                    at,
                    format!("target `{name}`: no targets file found"),
                    Some("give one with `--targets FILE`".to_owned()),
                );
                return None;
            }
        },
    };
    let Some(def) = targets.targets.iter().find(|t| t.name == name) else {
        diags.error(
            at,
            format!("target `{name}` is not in {}", targets.path.display()),
            Some("name a target of the targets file in `execution.target`".to_owned()),
        );
        return None;
    };
    let mut tdiags = Diagnostics::new(&def.file);
    if let Some(source) = &def.source {
        tdiags.set_source(source.clone());
    }
    let provider = target_provider(def, &mut tdiags);
    target_diags.extend(only_errors(tdiags));
    provider
}

/// A target's settings as a promptfoo provider: `echo`, `openai` and `anthropic`.
fn target_provider(def: &TargetDef, diags: &mut Diagnostics) -> Option<Provider> {
    let kind = crate::providers::find(&def.provider).map_or(def.provider.as_str(), |e| e.name);
    let settings = def.settings.as_map().unwrap_or_default();
    let allowed: &[&str] = match kind {
        "echo" => &[],
        "openai" | "anthropic" => &["model", "base_url", "api_key", "temperature", "max_output_tokens"],
        other => {
            // promptfoo's `exec:` trims the command's answer, a `cli` target keeps it as written.
            let why = match other {
                "cli" => "a `cli` target's answer is kept as written, promptfoo's `exec:` trims it".to_owned(),
                _ => format!("(provider `{other}`) has no promptfoo provider agentv runs alike"),
            };
            diags.error(
                def.provider_pos,
                format!("target `{}`: {why}", def.name),
                Some("convert a suite run on an echo, openai or anthropic target".to_owned()),
            );
            return None;
        }
    };
    let mut ok = true;
    for (k, _) in settings {
        let key = k.key_text();
        if !matches!(key.as_str(), "name" | "provider") && !allowed.contains(&key.as_str()) {
            diags.error(
                k.pos,
                format!("`{key}` of target `{}` has no promptfoo equivalent", def.name),
                None,
            );
            ok = false;
        }
    }
    let label = json_text(&Value::from(def.name.clone()));
    let (id, config, mode) = match kind {
        "echo" => ("echo".to_owned(), Map::new(), Sends::EchoQuestion),
        _ => llm_provider(def, kind, diags)?,
    };
    if !ok {
        return None;
    }
    let mut entry = format!("{{id: {}, label: {label}", json_text(&Value::from(id)));
    if !config.is_empty() {
        let _ = write!(entry, ", config: {}", json_text(&Value::Object(config)));
    }
    entry.push('}');
    Some(Provider { entry, sends: mode })
}

/// `openai:chat:MODEL` / `anthropic:messages:MODEL` with the settings promptfoo reads; a key
/// is only written as a reference (`{{ env.VAR }}`), never its value.
fn llm_provider(def: &TargetDef, kind: &str, diags: &mut Diagnostics) -> Option<(String, Map<String, Value>, Sends)> {
    let text = |k: &str| def.settings.get(k).and_then(Node::scalar_text);
    let Some(model) = text("model") else {
        diags.error(
            def.pos,
            format!("target `{}` needs `model` to name a promptfoo provider", def.name),
            None,
        );
        return None;
    };
    let mut config = Map::new();
    if let Some(url) = text("base_url") {
        config.insert("apiBaseUrl".into(), Value::from(env_template(&url)));
    }
    if let Some(key) = def.settings.get("api_key") {
        match key.as_str().and_then(crate::config::interpolate::env_reference) {
            Some(var) => {
                config.insert("apiKey".into(), Value::from(format!("{{{{ env.{var} }}}}")));
            }
            None => {
                diags.error(
                    key.pos,
                    format!(
                        "target `{}`: a literal `api_key` would be written into the config",
                        def.name
                    ),
                    Some("write it as `${{ VAR }}`".to_owned()),
                );
                return None;
            }
        }
    }
    for (setting, key) in [("temperature", "temperature"), ("max_output_tokens", "max_tokens")] {
        if let Some(v) = def.settings.get(setting) {
            config.insert(key.into(), v.to_json());
        }
    }
    let id = match kind {
        "openai" => format!("openai:chat:{model}"),
        _ => format!("anthropic:messages:{model}"),
    };
    Some((id, config, Sends::Chat))
}

/// A setting as promptfoo writes it: a reference `${{ VAR }}` becomes `{{ env.VAR }}`.
fn env_template(text: &str) -> String {
    crate::config::interpolate::env_reference(text)
        .map_or_else(|| text.to_owned(), |var| format!("{{{{ env.{var} }}}}"))
}

/// One case as a promptfoo test (YAML text); `None` (reported) when a part does not map.
fn test_of(
    case: &EvalCase,
    node: &Node,
    suite_asserts: &[&Node],
    sends: Sends,
    diags: &mut Diagnostics,
) -> Option<String> {
    let before = diags.error_count();
    let mut skip_defaults = false;
    for (k, v) in node.as_map().unwrap_or_default() {
        let key = k.key_text();
        if !CASE_KEYS.contains(&key.as_str()) {
            diags.error(
                k.pos,
                format!("`{key}` of a case has no promptfoo equivalent"),
                Some("remove it, or keep running this suite with `agentv eval`".to_owned()),
            );
        }
        if key == "execution" {
            for (ek, ev) in v.as_map().unwrap_or_default() {
                match ek.key_text().as_str() {
                    "threshold" => {}
                    "skip_defaults" => skip_defaults = ev.as_bool() == Some(true),
                    other => diags.error(
                        ek.pos,
                        format!("`execution.{other}` of a case has no promptfoo equivalent"),
                        None,
                    ),
                }
            }
        }
    }
    let own: Vec<&Node> = ["assertions", "assert"]
        .iter()
        .filter_map(|k| node.get(k))
        .flat_map(|n| n.as_seq().unwrap_or_default())
        .collect();
    let mut list: Vec<&Node> = own.clone();
    // `skip_defaults` leaves the suite's out (a case left without any is judged by 4.x's
    // default llm-grader: an error below).
    if !skip_defaults {
        list.extend(suite_asserts.iter().copied());
    }
    let mut asserts = Vec::new();
    let mut weight = 0.0;
    for a in &list {
        if let Some((line, w)) = assertion(a, diags) {
            asserts.push(line);
            weight += w;
        }
    }
    let input = input_of(case, sends, node, diags);
    if list.is_empty() {
        diags.error(
            node.pos,
            format!(
                "case `{}` has no assertions: AgentV 4.x judges it with its default llm-grader",
                case.id
            ),
            Some("add a deterministic assertion".to_owned()),
        );
    } else if weight <= 0.0 && asserts.len() == list.len() {
        diags.error(
            node.pos,
            format!("every assertion of case `{}` has weight 0", case.id),
            None,
        );
    }
    let threshold = case.threshold.unwrap_or(DEFAULT_THRESHOLD);
    if threshold <= 0.0 {
        let at = node
            .get("execution")
            .and_then(|e| e.get("threshold"))
            .map_or(node.pos, |n| n.pos);
        diags.error(
            at,
            "a threshold of 0 always passes in AgentV 4.x; promptfoo reads 0 as \"no threshold\" (every assertion must pass)",
            None,
        );
    }
    if diags.error_count() > before {
        return None;
    }
    Some(write_test(case, input?, threshold, &asserts))
}

/// The YAML of one test.
fn write_test(case: &EvalCase, input: String, threshold: f64, asserts: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  - description: {}", json_text(&Value::from(case.id.clone())));
    let _ = writeln!(out, "    vars: {}", json_text(&json!({ "input": input })));
    let _ = writeln!(out, "    threshold: {}", json_text(&Value::from(threshold)));
    let mut metadata = case.metadata.clone().unwrap_or_default();
    if !case.expected_outcome.is_empty() {
        metadata.insert("criteria".into(), Value::from(case.expected_outcome.clone()));
    }
    if !metadata.is_empty() {
        let _ = writeln!(out, "    metadata: {}", json_text(&Value::Object(metadata)));
    }
    out.push_str("    assert:\n");
    for a in asserts {
        let _ = writeln!(out, "      - {a}");
    }
    out
}

/// The `input` var of a case: exactly what its target is sent, as the one prompt `{{ input }}`
/// renders it and as agentv reads a rendered promptfoo prompt back
/// ([`crate::load::promptfoo::messages_of`]).
fn input_of(case: &EvalCase, sends: Sends, node: &Node, diags: &mut Diagnostics) -> Option<String> {
    let at = node.get("input").map_or(node.pos, |n| n.pos);
    if !case.guidelines.is_empty() || !case.input_files.is_empty() {
        diags.error(at, "guideline and input files have no promptfoo equivalent", None);
        return None;
    }
    let inputs = crate::prompt::build(case, PromptMode::Lm);
    let (text, messages) = match sends {
        Sends::EchoQuestion if inputs.chat_prompt.is_none() => (inputs.question, None),
        Sends::EchoQuestion => {
            diags.error(
                at,
                "an `echo` target answers a multi-turn input with its own JSON; only a single-turn input converts",
                None,
            );
            return None;
        }
        Sends::Chat => {
            let list = chat_of(inputs);
            (json_text(&Value::Array(list.clone())), Some(list))
        }
    };
    check_input(&text, messages.as_deref(), at, diags).then_some(text)
}

/// The messages an LLM target is sent ([`crate::providers::llm::conversation`]).
fn chat_of(inputs: crate::prompt::PromptInputs) -> Vec<Value> {
    let request = ProviderRequest {
        question: inputs.question,
        guidelines: inputs.guidelines,
        chat_prompt: inputs.chat_prompt,
        ..ProviderRequest::default()
    };
    let chat = crate::providers::llm::conversation(&request);
    let mut list = Vec::new();
    if !chat.system.is_empty() {
        list.push(json!({"role": "system", "content": chat.system}));
    }
    for (speaker, content) in &chat.turns {
        let role = match speaker {
            crate::providers::llm::Speaker::User => "user",
            crate::providers::llm::Speaker::Assistant => "assistant",
        };
        list.push(json!({"role": role, "content": content}));
    }
    list
}

/// The input reads back as the messages it stands for and holds nothing promptfoo would
/// expand (a template tag, a `file://` reference).
fn check_input(text: &str, messages: Option<&[Value]>, at: Pos, diags: &mut Diagnostics) -> bool {
    if let Some(why) = expanded_by_promptfoo(text) {
        diags.error(at, format!("the input {why}"), None);
        return false;
    }
    let read: Vec<Value> = crate::load::promptfoo::messages_of(text)
        .iter()
        .map(|m| json!({"role": m.role.as_str(), "content": crate::prompt::render_content(m, PromptMode::Lm)}))
        .collect();
    let want = messages.map_or_else(|| vec![json!({"role": "user", "content": text})], <[Value]>::to_vec);
    if read != want {
        diags.error(
            at,
            "the input reads as a promptfoo chat prompt (a JSON list of messages)",
            None,
        );
        return false;
    }
    true
}

/// Why promptfoo would not take `text` as written: it renders `{{ }}`, `{% %}`, `{# #}` in vars
/// and assertion values and reads a value starting with `file://` from that file.
fn expanded_by_promptfoo(text: &str) -> Option<&'static str> {
    if ["{{", "{%", "{#"].iter().any(|t| text.contains(t)) {
        Some("holds a template tag (`{{`, `{%` or `{#`), which promptfoo renders")
    } else if text.starts_with("file://") {
        Some("starts with `file://`: promptfoo reads that file instead")
    } else {
        None
    }
}

/// One 4.x assertion as a promptfoo assertion (a flow mapping) and its weight; `None`
/// (reported) when it has no exact equivalent.
fn assertion(node: &Node, diags: &mut Diagnostics) -> Option<(String, f64)> {
    let Some(kind) = node.get("type").and_then(Node::as_str) else {
        diags.error(node.pos, "only an assertion with a `type` converts to promptfoo", None);
        return None;
    };
    let type_pos = node.get("type").map_or(node.pos, |t| t.pos);
    let text = |k: &str| node.get(k).and_then(Node::as_str).map(str::to_owned);
    let value = text("value").unwrap_or_default();
    let trimmed = crate::evaluators::js::trim(&value);
    let (mapped, value) = match kind {
        "contains" | "icontains" => (kind, Value::from(value)),
        "contains-any" | "contains-all" | "icontains-any" | "icontains-all" => (kind, list_value(node, diags)?),
        "regex" => (kind, Value::from(value)),
        "is-json" => (kind, Value::Null),
        "starts-with" => (
            "regex",
            Value::from(format!("^\\s*{}", super::from_promptfoo::js_escape(trimmed))),
        ),
        "ends-with" => (
            "regex",
            Value::from(format!("{}\\s*$", super::from_promptfoo::js_escape(trimmed))),
        ),
        "equals" => (
            "regex",
            Value::from(format!("^\\s*{}\\s*$", super::from_promptfoo::js_escape(trimmed))),
        ),
        _ => {
            diags.error(
                type_pos,
                format!("`{kind}` cannot be converted: no promptfoo assertion gives the same pass and score"),
                Some("remove it, or keep running this suite with `agentv eval`".to_owned()),
            );
            return None;
        }
    };
    check_assertion_keys(node, kind, diags)?;
    if mapped == "regex" && !super::from_promptfoo::is_js_pattern(value.as_str().unwrap_or_default()) {
        diags.error(
            node.get("value").map_or(node.pos, |v| v.pos),
            "this pattern is not one JavaScript reads alike (an inline flag group, or it does not compile)",
            None,
        );
        return None;
    }
    let strings: Vec<&str> = match &value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if let Some(why) = strings.iter().find_map(|s| expanded_by_promptfoo(s)) {
        diags.error(
            node.get("value").map_or(node.pos, |v| v.pos),
            format!("this value {why}"),
            None,
        );
        return None;
    }
    let weight = node
        .get("weight")
        .map_or(Some(1.0), Node::as_f64)
        .filter(|w| w.is_finite() && *w >= 0.0)?;
    let negate = node.get("negate").and_then(Node::as_bool) == Some(true);
    let mut line = format!("{{type: {}{mapped}", if negate { "not-" } else { "" });
    if !value.is_null() {
        let _ = write!(line, ", value: {}", json_text(&value));
    }
    if node.get("weight").is_some() {
        let _ = write!(line, ", weight: {}", json_text(&Value::from(weight)));
    }
    if let Some(name) = text("name") {
        let _ = write!(line, ", metric: {}", json_text(&Value::from(name)));
    }
    line.push('}');
    Some((line, weight))
}

/// The keys of an assertion: only those promptfoo has alike (`flags` only when empty).
fn check_assertion_keys(node: &Node, kind: &str, diags: &mut Diagnostics) -> Option<()> {
    let mut ok = true;
    for (k, v) in node.as_map().unwrap_or_default() {
        let key = k.key_text();
        let flags_set = key == "flags" && v.as_str().is_some_and(|f| !f.is_empty());
        let value_less = key == "value" && kind == "is-json";
        if !ASSERTION_KEYS.contains(&key.as_str()) || flags_set || value_less {
            diags.error(
                k.pos,
                format!("`{key}` of this `{kind}` assertion has no promptfoo equivalent"),
                Some("remove it, or keep running this suite with `agentv eval`".to_owned()),
            );
            ok = false;
        }
    }
    ok.then_some(())
}

/// A `*-any`/`*-all` list: strings, none empty (4.x drops what promptfoo would count).
fn list_value(node: &Node, diags: &mut Diagnostics) -> Option<Value> {
    let items = node.get("value").and_then(Node::as_seq).unwrap_or_default();
    let texts: Vec<&str> = items.iter().filter_map(Node::as_str).collect();
    if texts.is_empty() || texts.len() < items.len() || texts.iter().any(|t| t.is_empty()) {
        diags.error(
            node.get("value").map_or(node.pos, |v| v.pos),
            "only a list of non-empty strings converts (4.x drops other items, promptfoo counts them)",
            None,
        );
        return None;
    }
    Some(Value::from(texts))
}

/// The config's top: where it came from, its description, prompt and provider, `tests:`.
fn header(file: &Path, root: &Node, provider: &Provider) -> String {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut s =
        format!("# promptfoo config converted from the AgentV 4.x suite {name} (docs/convert.md#to-promptfoo).\n");
    if let Some(d) = root.get("description").and_then(Node::scalar_text) {
        let _ = writeln!(s, "description: {}", json_text(&Value::from(d)));
    }
    let _ = writeln!(s, "prompts:\n  - {}", json_text(&Value::from(PROMPT)));
    let _ = writeln!(s, "providers:\n  - {}", provider.entry);
    s.push_str("tests:\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGETS: &str = "targets:\n  - {name: echo, provider: echo}\n  - {name: sh, provider: cli, command_template: './a.sh {PROMPT} > {OUTPUT_FILE}'}\n  - {name: gpt, provider: openai, model: gpt-4o-mini, base_url: '${{ BASE }}', api_key: '${{ KEY }}', temperature: 0}\n  - {name: leaky, provider: openai, model: m, api_key: sk-literal}\n";

    /// Converts `suite` (written beside a targets file) and gives the config or the problems
    /// as `line:col message`.
    fn convert_suite(suite: &str) -> Result<String, Vec<String>> {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("targets.yaml"), TARGETS).expect("targets");
        let file = dir.path().join("suite.yaml");
        std::fs::write(&file, suite).expect("suite");
        let ws = Workspace::from_cwd(dir.path().to_path_buf());
        convert(&file, None, &ws).map(|c| c.text).map_err(|problems| {
            problems
                .iter()
                .map(|d| format!("{}:{} {}", d.pos.line, d.pos.column, d.message))
                .collect()
        })
    }

    fn suite(assertions: &str) -> String {
        format!("execution:\n  target: echo\ntests:\n  - id: a\n    input: Hi\n    assertions:\n{assertions}")
    }

    #[test]
    fn each_4x_assertion_maps_onto_the_promptfoo_assertion_with_the_same_pass_and_score() {
        let cases: &[(&str, &str)] = &[
            ("- {type: contains, value: '4'}", r#"{type: contains, value: "4"}"#),
            (
                "- {type: icontains, value: X, negate: true}",
                r#"{type: not-icontains, value: "X"}"#,
            ),
            (
                "- {type: contains-all, value: [a, 'b, c']}",
                r#"{type: contains-all, value: ["a","b, c"]}"#,
            ),
            (
                "- {type: starts-with, value: ' a.b* '}",
                r#"{type: regex, value: "^\\s*a\\.b\\*"}"#,
            ),
            (
                "- {type: ends-with, value: 'x?'}",
                r#"{type: regex, value: "x\\?\\s*$"}"#,
            ),
            (
                "- {type: equals, value: '(x)'}",
                r#"{type: regex, value: "^\\s*\\(x\\)\\s*$"}"#,
            ),
            (
                "- {type: regex, value: 'a+', weight: 3, name: shape}",
                r#"{type: regex, value: "a+", weight: 3.0, metric: "shape"}"#,
            ),
            ("- {type: is-json}", "{type: is-json}"),
        ];
        for (written, want) in cases {
            let text =
                convert_suite(&suite(&format!("      {written}\n"))).unwrap_or_else(|e| panic!("{written}: {e:?}"));
            assert!(text.contains(&format!("      - {want}\n")), "{written}:\n{text}");
            assert!(text.contains("    threshold: 0.8\n"), "{text}");
            assert!(text.contains("  - {id: \"echo\", label: \"echo\"}\n"), "{text}");
            assert!(text.contains(r#"    vars: {"input":"Hi"}"#), "{text}");
        }
    }

    #[test]
    fn constructs_without_an_exact_promptfoo_equivalent_are_errors_at_their_lines() {
        let cases: &[(&str, &str)] = &[
            (
                "      - {type: llm-grader, prompt: x}\n",
                "7:16 `llm-grader` cannot be converted",
            ),
            (
                "      - {type: code-grader, command: [x]}\n",
                "7:16 `code-grader` cannot be converted",
            ),
            (
                "      - {type: contains, value: a, required: true}\n",
                "7:36 `required` of this `contains` assertion",
            ),
            (
                "      - {type: regex, value: a, flags: i}\n",
                "7:33 `flags` of this `regex` assertion",
            ),
            (
                "      - {type: contains, value: '{{ x }}'}\n",
                "7:33 this value holds a template tag",
            ),
            (
                "      - {type: contains, value: 'file://a.txt'}\n",
                "7:33 this value starts with `file://`",
            ),
            (
                "      - {type: regex, value: '(?i)a'}\n",
                "7:30 this pattern is not one JavaScript reads alike",
            ),
            (
                "      - {type: contains, value: a, weight: 0}\n",
                "4:5 every assertion of case `a` has weight 0",
            ),
            (
                "      - {type: contains, value: a}\n    execution: {threshold: 0}\n",
                "8:28 a threshold of 0 always passes",
            ),
            (
                "      - {type: contains, value: a}\n    workspace: {}\n",
                "8:5 `workspace` of a case",
            ),
        ];
        for (written, want) in cases {
            let problems = convert_suite(&suite(written)).expect_err(written);
            assert!(problems.iter().any(|p| p.starts_with(want)), "{written}: {problems:?}");
        }
    }

    #[test]
    fn a_case_without_assertions_or_with_a_template_in_its_input_is_an_error() {
        let problems = convert_suite("execution: {target: echo}\ntests:\n  - id: a\n    input: Hi\n    criteria: x\n")
            .expect_err("no assertions");
        assert!(
            problems.iter().any(|p| p.starts_with("3:5 case `a` has no assertions")),
            "{problems:?}"
        );
        let problems = convert_suite(
            "execution: {target: echo}\ntests:\n  - id: a\n    input: 'Hi {{ name }}'\n    assertions: [{type: contains, value: a}]\n",
        )
        .expect_err("template");
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("4:12 the input holds a template tag")),
            "{problems:?}"
        );
    }

    #[test]
    fn targets_without_an_exact_promptfoo_provider_are_errors_in_the_targets_file() {
        for (target, want) in [
            ("sh", "3:26 target `sh`: a `cli` target's answer is kept as written"),
            ("leaky", "5:56 target `leaky`: a literal `api_key`"),
            ("nowhere", "2:11 target `nowhere` is not in"),
        ] {
            let text =
                suite("      - {type: contains, value: a}\n").replace("target: echo", &format!("target: {target}"));
            let problems = convert_suite(&text).expect_err(target);
            assert!(problems.iter().any(|p| p.contains(want)), "{target}: {problems:?}");
            assert!(problems.iter().all(|p| !p.contains("sk-literal")), "{problems:?}");
        }
    }

    #[test]
    fn an_llm_target_is_sent_the_chat_with_agentvs_system_prompt_and_keys_stay_references() {
        let text = convert_suite(
            "execution: {target: gpt}\nassertions: [{type: contains, value: a}]\ntests:\n  - id: a\n    input: [{role: system, content: Be brief.}, {role: user, content: Hi}]\n    criteria: x\n",
        )
        .expect("converts");
        let provider = r#"{id: "openai:chat:gpt-4o-mini", label: "gpt", config: {"apiBaseUrl":"{{ env.BASE }}","apiKey":"{{ env.KEY }}","temperature":0}}"#;
        assert!(text.contains(provider), "{text}");
        let system = format!("{}\n\nBe brief.", crate::providers::llm::DEFAULT_SYSTEM_PROMPT);
        let chat = json!([{"role": "system", "content": system}, {"role": "user", "content": "Hi"}]);
        let vars = format!("    vars: {}\n", json_text(&json!({"input": json_text(&chat)})));
        assert!(text.contains(&vars), "{text}");
    }

    #[test]
    fn a_2x_suite_is_told_to_convert_to_4x_first() {
        let problems = convert_suite(
            "evalcases:\n  - id: a\n    expected_outcome: x\n    input_messages: [{role: user, content: Hi}]\n",
        )
        .expect_err("2.x");
        assert!(
            problems.iter().any(|p| p.contains("only an AgentV 4.x suite converts")),
            "{problems:?}"
        );
    }
}
