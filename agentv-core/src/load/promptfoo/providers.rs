//! A config's `providers` (`docs/promptfoo.md#providers`), turned into agentv targets: each
//! promptfoo id maps onto the provider that speaks its wire protocol, its `config` keys and the
//! environment variables promptfoo reads onto that target's settings. Credentials stay
//! `${{ VAR }}` references, so they are resolved and redacted as every target's are.

use std::path::Path;
use std::sync::Arc;

use crate::config::{Diagnostics, Node, NodeValue, Pos, describe};
use crate::providers::{TargetDef, TargetsFile};

/// One provider of the config: the target it became and how promptfoo names it.
#[derive(Debug, Clone)]
pub struct Provider {
    /// promptfoo's provider id (`openai:chat:gpt-4o-mini`).
    pub id: String,
    /// Its `label`, when it has one.
    pub label: Option<String>,
    /// The agentv target's name: the label, else the id (made unique).
    pub target: String,
    /// Its `prompts`: the references (labels, ids, `Group:*`) of the only prompts it runs;
    /// `None` runs every prompt (`docs/promptfoo.md#providers`).
    pub prompts: Option<Vec<String>>,
}

impl Provider {
    /// Whether this provider runs `prompt`.
    pub fn runs(&self, prompt: &super::prompts::Prompt) -> bool {
        self.prompts
            .as_ref()
            .is_none_or(|list| list.iter().any(|s| prompt.is_selected_by(s)))
    }
}

/// A provider's `prompts`: a list of prompt references; `None` (reported) when it is not one.
fn selectors(node: &Node, id: &str, diags: &mut Diagnostics) -> Option<Vec<String>> {
    let list: Option<Vec<String>> = match &node.value {
        NodeValue::Seq(items) => items.iter().map(|n| n.as_str().map(str::to_owned)).collect(),
        NodeValue::Str(text) => Some(vec![text.clone()]),
        _ => None,
    };
    if list.is_none() {
        diags.error(
            node.pos,
            format!(
                "`prompts` of provider `{id}` must be a list of prompt labels or ids, found {}",
                describe(node)
            ),
            Some("write `prompts: [my-label, \"file.txt:*\"]`".to_owned()),
        );
        return None;
    }
    list
}

/// The providers of `node` (the `providers` value) and the targets file they make.
pub fn read(node: &Node, file: &Arc<Path>, diags: &mut Diagnostics) -> (Vec<Provider>, TargetsFile) {
    let items: Vec<&Node> = match &node.value {
        NodeValue::Seq(items) => items.iter().collect(),
        _ => vec![node],
    };
    let mut providers: Vec<Provider> = Vec::new();
    let mut targets = TargetsFile {
        path: file.to_path_buf(),
        targets: Vec::new(),
        diagnostics: Vec::new(),
        referenced_vars: Vec::new(),
        grading_only: Vec::new(),
        aliases: Vec::new(),
    };
    for item in items {
        let Some((id, label, config)) = id_label_config(item, diags) else {
            continue;
        };
        let prompts = match item.get("prompts").map(|n| selectors(n, &id, diags)) {
            Some(Some(list)) => Some(list),
            // A provider that would run prompts it was not given does not run.
            Some(None) => continue,
            None => None,
        };
        let Some(settings) = settings_of(&id, config, item.pos, diags) else {
            continue;
        };
        let target = unique_target(&providers, label.as_deref().unwrap_or(&id));
        let mut entries = vec![entry("name", &target, item.pos)];
        entries.extend(settings);
        let settings = Node::new(NodeValue::Map(entries), item.pos);
        targets.targets.push(TargetDef {
            name: target.clone(),
            provider: settings
                .get("provider")
                .and_then(Node::as_str)
                .unwrap_or_default()
                .to_owned(),
            provider_pos: item.pos,
            use_target: None,
            judge_target: None,
            workers: None,
            provider_batching: false,
            settings,
            pos: item.pos,
            file: file.clone(),
            source: diags.source(),
        });
        targets.aliases.push((id.clone(), target.clone()));
        if let Some(label) = &label {
            targets.aliases.push((label.clone(), target.clone()));
        }
        providers.push(Provider {
            id,
            label,
            target,
            prompts,
        });
    }
    (providers, targets)
}

/// A provider entry's id, label and `config`: `- echo` or `- id: ...` with an optional `label:`
/// and `config:`; `None` (reported) for anything else.
fn id_label_config<'a>(item: &'a Node, diags: &mut Diagnostics) -> Option<(String, Option<String>, Option<&'a Node>)> {
    match &item.value {
        NodeValue::Str(id) => Some((id.clone(), None, None)),
        NodeValue::Map(_) => match item.get("id").and_then(Node::as_str) {
            Some(id) => Some((
                id.to_owned(),
                item.get("label").and_then(Node::as_str).map(str::to_owned),
                item.get("config"),
            )),
            None => {
                diags.error(
                    item.pos,
                    "a provider entry needs `id` (e.g. `openai:chat:gpt-4o-mini`)",
                    Some("write `- id: echo` with an optional `label:` and `config:`".to_owned()),
                );
                None
            }
        },
        _ => {
            diags.error(
                item.pos,
                format!("a provider must be an id or a mapping, found {}", describe(item)),
                Some("write `- echo` or `- id: openai:chat:gpt-4o-mini`".to_owned()),
            );
            None
        }
    }
}

/// The target's name: `base` (the label, else the id), numbered when another provider has it.
fn unique_target(providers: &[Provider], base: &str) -> String {
    let mut target = base.to_owned();
    let mut n = 2;
    while providers.iter().any(|p| p.target == target) {
        target = format!("{base} #{n}");
        n += 1;
    }
    target
}

fn entry(key: &str, value: &str, pos: Pos) -> (Node, Node) {
    (
        Node::new(NodeValue::Str(key.to_owned()), pos),
        Node::new(NodeValue::Str(value.to_owned()), pos),
    )
}

/// The first of `vars` set in the environment, as a `${{ VAR }}` reference.
fn env_ref(vars: &[&str]) -> Option<String> {
    vars.iter()
        .find(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
        .map(|v| format!("${{{{ {v} }}}}"))
}

/// A `config` value as written; a string `{{ env.VAR }}` becomes the reference `${{ VAR }}`.
fn config_value(config: Option<&Node>, key: &str) -> Option<Node> {
    let node = config?.get(key)?;
    let var = node
        .as_str()
        .map(str::trim)
        .and_then(|t| t.strip_prefix("{{"))
        .and_then(|t| t.strip_suffix("}}"))
        .and_then(|t| t.trim().strip_prefix("env."));
    Some(match var {
        Some(var) => Node::new(NodeValue::Str(format!("${{{{ {var} }}}}")), node.pos),
        None => node.clone(),
    })
}

fn text_node(text: String, pos: Pos) -> Node {
    Node::new(NodeValue::Str(text), pos)
}

/// The target settings of provider `id` with `config`; `None` (reported) when agentv has no
/// provider for it.
fn settings_of(id: &str, config: Option<&Node>, pos: Pos, diags: &mut Diagnostics) -> Option<Vec<(Node, Node)>> {
    let mut s = Settings {
        out: Vec::new(),
        config,
        pos,
    };
    if let Some(model) = vertex_model(id) {
        vertex_target(id, model, &mut s, diags)?;
    } else if !local_settings(id, &mut s) && !llm_settings(id, &mut s) {
        diags.error(
            pos,
            format!("provider `{id}` is not supported by agentv"),
            Some(
                "use echo, exec:<command>, python:<file>, file://<provider>.js, http, webhook:<url>, google:<model>, \
                 vertex:<gemini model>, openai:chat:<model>, openai:responses:<model>, \
                 azureopenai:chat:<deployment> or anthropic:messages:<model>"
                    .to_owned(),
            ),
        );
        return None;
    }
    let llm = [
        "openai:",
        "azureopenai:",
        "azure:",
        "anthropic:",
        "google:",
        "gemini:",
        "vertex:",
    ];
    if llm.iter().any(|p| id.starts_with(p)) {
        let generation = |k: &str| config_value(config.and_then(|c| c.get("generationConfig")), k);
        s.set(
            "temperature",
            s.cfg("temperature").or_else(|| generation("temperature")),
        );
        s.set(
            "max_output_tokens",
            s.cfg("max_tokens")
                .or_else(|| s.cfg("max_completion_tokens"))
                .or_else(|| s.cfg("max_output_tokens"))
                .or_else(|| s.cfg("maxOutputTokens"))
                .or_else(|| generation("maxOutputTokens")),
        );
    }
    Some(s.out)
}

/// The settings of a target being made, with the provider entry's `config` to read from.
struct Settings<'a> {
    out: Vec<(Node, Node)>,
    config: Option<&'a Node>,
    pos: Pos,
}

impl Settings<'_> {
    fn set(&mut self, key: &str, value: Option<Node>) {
        if let Some(value) = value {
            self.out.push((text_node(key.to_owned(), self.pos), value));
        }
    }

    fn cfg(&self, key: &str) -> Option<Node> {
        config_value(self.config, key)
    }

    fn text(&self, text: String) -> Option<Node> {
        Some(text_node(text, self.pos))
    }

    /// A key none of whose variables is set is referenced anyway, so that `validate` warns and
    /// a run stops with the usual "variable is not set" error, as for any target.
    fn key_ref(&self, vars: &[&str]) -> Option<Node> {
        let var = env_ref(vars).unwrap_or_else(|| format!("${{{{ {} }}}}", vars[0]));
        Some(text_node(var, self.pos))
    }

    fn env_ref(&self, vars: &[&str]) -> Option<Node> {
        env_ref(vars).map(|t| text_node(t, self.pos))
    }
}

/// The providers that run here: echo, a command, a script, a webhook, an HTTP endpoint.
/// `false` when `id` is none of them.
fn local_settings(id: &str, s: &mut Settings<'_>) -> bool {
    if id == "echo" {
        s.set("provider", s.text("echo".to_owned()));
    } else if let Some(command) = id.strip_prefix("exec:") {
        s.set("provider", s.text("cli".to_owned()));
        s.set("command_template", s.text(exec_command(command)));
        s.set("clean_output", Some(Node::new(NodeValue::Bool(true), s.pos)));
    } else if let Some((provider, file, function)) = script_of(id) {
        s.set("provider", s.text(provider.to_owned()));
        s.set("file", s.text(file.to_owned()));
        s.set("function", function.and_then(|f| s.text(f.to_owned())));
        s.set("config", s.config.map(with_env_refs));
    } else if let Some(url) = id.strip_prefix("webhook:") {
        s.set("provider", s.text("http".to_owned()));
        s.set("url", s.text(url.to_owned()));
        s.set("method", s.text("POST".to_owned()));
        let mut body = vec![entry("prompt", "{{prompt}}", s.pos)];
        if let Some(c) = s.config {
            body.push((text_node("config".to_owned(), s.pos), with_env_refs(c)));
        }
        s.set("body", Some(Node::new(NodeValue::Map(body), s.pos)));
        s.set("transform_response", s.text("json.output".to_owned()));
    } else if id == "http" || id == "https" || id.starts_with("http://") || id.starts_with("https://") {
        s.set("provider", s.text("http".to_owned()));
        let url = s.cfg("url").map(|n| with_env_refs(&n));
        let from_id = (id.contains("://")).then(|| text_node(id.to_owned(), s.pos));
        s.set("url", url.or(from_id));
        for (key, setting) in HTTP_KEYS {
            s.set(setting, s.cfg(key).map(|n| with_env_refs(&n)));
        }
    } else {
        return false;
    }
    true
}

/// The `cli` command of an `exec:` provider, run as promptfoo runs it: the command split into
/// words as promptfoo splits it (a word, or a `"…"` or `'…'` group), with no shell between
/// (each word quoted, so `$HOME` and `|` are passed as written), then the prompt and promptfoo's
/// two JSON arguments: the provider's options (`{id}`) and the call context (`{vars, prompt}`).
/// Its standard output is the answer.
fn exec_command(command: &str) -> String {
    let mut words = Vec::new();
    let mut rest = command.trim_start();
    while let Some(first) = rest.chars().next() {
        let (word, after) = match first {
            '"' | '\'' => match rest[1..].find(first) {
                // promptfoo keeps an empty group as its two quotes.
                Some(0) => (&rest[..2], &rest[2..]),
                Some(end) => (&rest[1..=end], &rest[end + 2..]),
                None => {
                    // An unclosed quote starts a word of its own, as promptfoo reads it.
                    let end = rest[1..]
                        .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
                        .map_or(rest.len(), |e| e + 1);
                    (&rest[1..end], &rest[end..])
                }
            },
            _ => {
                let end = rest
                    .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
                    .unwrap_or(rest.len());
                (&rest[..end], &rest[end..])
            }
        };
        if !word.is_empty() {
            words.push(crate::providers::shell_quote(word));
        }
        rest = after.trim_start();
    }
    let options = crate::providers::shell_quote(&serde_json::json!({"id": format!("exec:{command}")}).to_string());
    format!("{} {{PROMPT}} {options} {{CONTEXT}} > {{OUTPUT_FILE}}", words.join(" "))
}

/// The hosted models: OpenAI, Azure OpenAI, Google, Anthropic. `false` when `id` is none of
/// them.
fn llm_settings(id: &str, s: &mut Settings<'_>) -> bool {
    if let Some(model) = openai_model(id) {
        s.set("provider", s.text("openai".to_owned()));
        s.set("model", s.text(model.to_owned()));
        let host = s
            .cfg("apiHost")
            .and_then(|h| h.scalar_text())
            .and_then(|h| s.text(format!("https://{h}/v1")));
        s.set(
            "base_url",
            s.cfg("apiBaseUrl")
                .or(host)
                .or_else(|| s.env_ref(&["OPENAI_BASE_URL", "OPENAI_API_BASE_URL"])),
        );
        s.set("api_key", s.cfg("apiKey").or_else(|| s.key_ref(&["OPENAI_API_KEY"])));
        s.set("organization", s.cfg("organization"));
        if id.starts_with("openai:responses:") {
            s.set("api", s.text("responses".to_owned()));
            s.set("passthrough", passthrough_with(s.config, RESPONSES_KEYS, s.pos));
        } else {
            s.set("passthrough", passthrough(s.config, s.pos));
        }
        openai_tools(s);
    } else if let Some(deployment) = ["azureopenai:chat:", "azure:chat:"]
        .iter()
        .find_map(|p| id.strip_prefix(p))
    {
        s.set("provider", s.text("azure".to_owned()));
        s.set("deployment_name", s.text(deployment.to_owned()));
        s.set(
            "endpoint",
            s.cfg("apiHost")
                .or_else(|| s.env_ref(&["AZURE_OPENAI_API_HOST", "AZURE_API_HOST"])),
        );
        s.set(
            "api_key",
            s.cfg("apiKey")
                .or_else(|| s.key_ref(&["AZURE_OPENAI_API_KEY", "AZURE_API_KEY"])),
        );
        s.set("passthrough", passthrough(s.config, s.pos));
        openai_tools(s);
    } else if let Some(model) = ["google:", "gemini:"].iter().find_map(|p| id.strip_prefix(p)) {
        s.set("provider", s.text("gemini".to_owned()));
        s.set("model", s.text(model.to_owned()));
        let host = s
            .cfg("apiHost")
            .and_then(|h| h.scalar_text())
            .and_then(|h| s.text(format!("https://{h}")));
        s.set("base_url", s.cfg("apiBaseUrl").or(host));
        s.set(
            "api_key",
            s.cfg("apiKey")
                .or_else(|| s.env_ref(&["GOOGLE_API_KEY", "GEMINI_API_KEY", "PALM_API_KEY"])),
        );
    } else if let Some(model) = id.strip_prefix("anthropic:messages:") {
        s.set("provider", s.text("anthropic".to_owned()));
        s.set("model", s.text(model.to_owned()));
        s.set(
            "base_url",
            s.cfg("apiBaseUrl").or_else(|| s.env_ref(&["ANTHROPIC_BASE_URL"])),
        );
        s.set("api_key", s.cfg("apiKey").or_else(|| s.key_ref(&["ANTHROPIC_API_KEY"])));
    } else {
        return false;
    }
    true
}

/// OpenAI request fields promptfoo sends from `config` as written, with its `passthrough`.
const BODY_KEYS: &[&str] = &[
    "top_p",
    "seed",
    "stop",
    "response_format",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "user",
    "reasoning_effort",
];

/// Request fields of the Responses API promptfoo also sends from `config` as written
/// (`openai:responses:<model>`).
const RESPONSES_KEYS: &[&str] = &[
    "instructions",
    "reasoning",
    "max_tool_calls",
    "truncation",
    "metadata",
    "store",
    "previous_response_id",
];

/// The body fields of an OpenAI `config`: [`BODY_KEYS`], then `passthrough` over them.
fn passthrough(config: Option<&Node>, pos: Pos) -> Option<Node> {
    passthrough_with(config, &[], pos)
}

/// [`passthrough`] with the fields `extra` as well.
fn passthrough_with(config: Option<&Node>, extra: &[&str], pos: Pos) -> Option<Node> {
    let config = config?;
    let mut entries: Vec<(Node, Node)> = BODY_KEYS
        .iter()
        .chain(extra)
        .filter_map(|k| Some((text_node((*k).to_owned(), pos), with_env_refs(config.get(k)?))))
        .collect();
    for (k, v) in config.get("passthrough").and_then(Node::as_map).unwrap_or_default() {
        entries.retain(|(e, _)| e.key_text() != k.key_text());
        entries.push((k.clone(), with_env_refs(v)));
    }
    (!entries.is_empty()).then(|| Node::new(NodeValue::Map(entries), pos))
}

/// promptfoo's `tools` and `tool_choice` (OpenAI's shape, which agentv reads as written): the
/// model is called once, as promptfoo calls it, and its tool calls are the answer.
fn openai_tools(s: &mut Settings<'_>) {
    let Some(tools) = s.config.and_then(|c| c.get("tools")) else {
        return;
    };
    s.set("tools", Some(tools.clone()));
    s.set("tool_choice", s.config.and_then(|c| c.get("tool_choice")).cloned());
    s.set("max_steps", Some(Node::new(NodeValue::Int(1), tools.pos)));
}

/// promptfoo's `http` provider `config` keys, with the target setting each becomes.
const HTTP_KEYS: &[(&str, &str)] = &[
    ("method", "method"),
    ("headers", "headers"),
    ("body", "body"),
    ("queryParams", "query_params"),
    ("transformRequest", "transform_request"),
    ("transformResponse", "transform_response"),
];

/// A script provider id: `python:<file>[:<function>]` or `file://<file>.py[:<function>]`
/// (python), `file://<file>.js` (javascript, also `.mjs` and `.cjs`); with the agentv provider,
/// the file and the function.
fn script_of(id: &str) -> Option<(&'static str, &str, Option<&str>)> {
    let (python, spec) = match id.strip_prefix("python:") {
        Some(spec) => (true, spec),
        None => (false, id.strip_prefix("file://")?),
    };
    let (path, function) = match spec.rsplit_once(':') {
        Some((path, name)) if path.ends_with(".py") && !name.is_empty() && !name.contains(['/', '\\']) => {
            (path, Some(name))
        }
        _ => (spec, None),
    };
    if python || path.ends_with(".py") {
        Some(("python", path, function))
    } else if [".js", ".mjs", ".cjs"].iter().any(|e| path.ends_with(e)) {
        Some(("javascript", path, None))
    } else {
        None
    }
}

/// `node` with every `{{ env.VAR }}` in its strings written `${{ VAR }}`: the variable is then
/// resolved, checked and redacted as every target's are (`docs/architecture.md#secrets`).
fn with_env_refs(node: &Node) -> Node {
    let value = match &node.value {
        NodeValue::Str(text) => NodeValue::Str(env_refs_in(text)),
        NodeValue::Seq(items) => NodeValue::Seq(items.iter().map(with_env_refs).collect()),
        NodeValue::Map(entries) => NodeValue::Map(entries.iter().map(|(k, v)| (k.clone(), with_env_refs(v))).collect()),
        other => other.clone(),
    };
    Node::new(value, node.pos)
}

/// `text` with each `{{ env.VAR }}` (spaces optional) written `${{ VAR }}`.
fn env_refs_in(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let (before, after) = rest.split_at(start);
        out.push_str(before);
        let inner = after[2..].split_once("}}").and_then(|(inner, tail)| {
            let var = inner.trim().strip_prefix("env.")?;
            (!var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some((var, tail))
        });
        // `${{` is already a reference: leave it as written.
        match inner {
            Some((var, tail)) if !before.ends_with('$') => {
                out.push_str(&format!("${{{{ {var} }}}}"));
                rest = tail;
            }
            _ => {
                out.push_str("{{");
                rest = &after[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The model of a Vertex AI id: `vertex:<model>` or `vertex:chat:<model>` (not the
/// `vertex:embedding:`, `vertex:video:` and other kinds).
fn vertex_model(id: &str) -> Option<&str> {
    let rest = id.strip_prefix("vertex:")?;
    let model = rest.strip_prefix("chat:").unwrap_or(rest);
    (!model.is_empty() && !model.contains(':')).then_some(model)
}

/// The first of `vars` set in the environment, as its value (for settings that are not
/// secrets: a project, a region, a host).
fn env_text(vars: &[&str]) -> Option<String> {
    vars.iter()
        .find_map(|v| std::env::var(v).ok().filter(|x| !x.is_empty()))
}

/// A `vertex:` provider's settings, read as promptfoo 0.121 reads them: express mode with an
/// API key (`apiKey`, `VERTEX_API_KEY`, `GOOGLE_API_KEY`) unless `expressMode: false` or
/// credentials are configured; otherwise an OAuth access token for `projectId` in `region`,
/// which the credentials give (`credentials`, `keyFilename`, `googleAuthOptions`, else the
/// application default credentials: `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's file) or
/// `VERTEX_ACCESS_TOKEN` holds (`docs/promptfoo.md#vertex-ai`).
fn vertex_settings(s: &mut Settings<'_>) -> Option<()> {
    let credentials = vertex_credentials(s);
    let express_off = s
        .config
        .and_then(|c| c.get("expressMode"))
        .is_some_and(|n| n.to_json() == serde_json::Value::Bool(false));
    let key = s
        .cfg("apiKey")
        .or_else(|| s.env_ref(&["VERTEX_API_KEY", "GOOGLE_API_KEY"]));
    match (key, credentials, express_off) {
        (Some(key), None, false) => s.set("api_key", Some(key)),
        (_, Some((setting, value)), _) => s.set(setting, Some(value)),
        _ => match application_default_credentials() {
            Some(file) if std::env::var_os("VERTEX_ACCESS_TOKEN").is_none() => {
                s.set("credentials_file", s.text(file.display().to_string()));
            }
            _ => s.set("access_token", s.text("${{ VERTEX_ACCESS_TOKEN }}".to_owned())),
        },
    }
    let from_env = |s: &Settings<'_>, vars: &[&str]| env_text(vars).and_then(|t| s.text(t));
    let project = s
        .cfg("projectId")
        .or_else(|| from_env(s, &["VERTEX_PROJECT_ID", "GOOGLE_PROJECT_ID", "GOOGLE_CLOUD_PROJECT"]));
    s.set("project", project);
    let region = s
        .cfg("region")
        .or_else(|| from_env(s, &["VERTEX_REGION", "GOOGLE_CLOUD_LOCATION"]));
    s.set("region", region);
    let host = s
        .cfg("apiHost")
        .and_then(|h| h.scalar_text())
        .or_else(|| env_text(&["VERTEX_API_HOST"]))
        .and_then(|h| s.text(format!("https://{h}")));
    // `apiBaseUrl` (a whole URL, `http://` allowed) is agentv's, for proxies and tests.
    s.set("base_url", s.cfg("apiBaseUrl").or(host));
    let version = s.cfg("apiVersion").or_else(|| from_env(s, &["VERTEX_API_VERSION"]));
    s.set("api_version", version);
    let publisher = s.cfg("publisher").or_else(|| from_env(s, &["VERTEX_PUBLISHER"]));
    s.set("publisher", publisher);
    Some(())
}

/// The credentials a `vertex:` config names, as the target setting that takes them:
/// `credentials` (the key's JSON, as text or an object, or `file://<path>`), `keyFilename`,
/// or either inside `googleAuthOptions`.
fn vertex_credentials(s: &Settings<'_>) -> Option<(&'static str, Node)> {
    let options = s.cfg("googleAuthOptions");
    let from = |key: &str| s.cfg(key).or_else(|| config_value(options.as_ref(), key));
    if let Some(file) = from("keyFilename") {
        return Some(("credentials_file", file));
    }
    let node = from("credentials")?;
    if let Some(path) = node.as_str().and_then(|t| t.trim().strip_prefix("file://")) {
        return Some(("credentials_file", text_node(path.to_owned(), node.pos)));
    }
    match &node.value {
        NodeValue::Map(_) => Some(("credentials", text_node(node.to_json().to_string(), node.pos))),
        _ => Some(("credentials", node)),
    }
}

/// Google's application default credentials file: `GOOGLE_APPLICATION_CREDENTIALS`, else
/// gcloud's when it exists.
fn application_default_credentials() -> Option<std::path::PathBuf> {
    if let Some(file) = std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS").filter(|f| !f.is_empty()) {
        return Some(file.into());
    }
    let config = match std::env::var_os("CLOUDSDK_CONFIG") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => std::path::PathBuf::from(std::env::var_os("HOME")?).join(".config/gcloud"),
    };
    Some(config.join("application_default_credentials.json")).filter(|f| f.is_file())
}

/// A Gemini model on Vertex AI (`docs/promptfoo.md#vertex-ai`); `None` (reported) for the
/// other models Vertex serves.
fn vertex_target(id: &str, model: &str, s: &mut Settings<'_>, diags: &mut Diagnostics) -> Option<()> {
    if !model.contains("gemini") {
        diags.error(
            s.pos,
            format!("provider `{id}`: agentv runs Gemini models on Vertex AI, not `{model}`"),
            Some("use a `vertex:gemini-…` model, or `anthropic:messages:<model>` for Claude".to_owned()),
        );
        return None;
    }
    s.set("provider", s.text("vertex".to_owned()));
    s.set("model", s.text(model.to_owned()));
    vertex_settings(s)
}

/// The model of an OpenAI id: `openai:chat:<m>`, `openai:responses:<m>` or `openai:<m>`.
fn openai_model(id: &str) -> Option<&str> {
    let rest = id.strip_prefix("openai:")?;
    let model = rest
        .strip_prefix("chat:")
        .or_else(|| rest.strip_prefix("responses:"))
        .unwrap_or(rest);
    (!model.is_empty() && !model.contains(':')).then_some(model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::node::parse_yaml;

    fn settings(def: &TargetDef) -> String {
        def.settings
            .as_map()
            .unwrap_or_default()
            .iter()
            .map(|(k, v)| format!("{}={}", k.key_text(), v.scalar_text().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn promptfoo_provider_ids_become_targets() {
        let yaml = r#"
- echo
- id: openai:chat:gpt-4o-mini
  label: small
  config: {apiBaseUrl: "http://127.0.0.1:9/v1", apiKey: "{{ env.MY_KEY }}", temperature: 0, max_tokens: 20}
- openai:gpt-4o
- exec: python3 run.py
- exec:python3 run.py
- anthropic:messages:claude-x
- echo
"#;
        let node = parse_yaml(yaml).expect("yaml");
        let file: Arc<Path> = Arc::from(Path::new("/x/promptfooconfig.yaml"));
        let mut diags = Diagnostics::new(Path::new("promptfooconfig.yaml"));
        let (providers, targets) = read(&node, &file, &mut diags);
        let shown: Vec<String> = targets.targets.iter().map(settings).collect();
        assert_eq!(shown[0], "name=echo provider=echo");
        assert_eq!(
            shown[1],
            "name=small provider=openai model=gpt-4o-mini base_url=http://127.0.0.1:9/v1 api_key=${{ MY_KEY }} temperature=0 max_output_tokens=20"
        );
        assert!(
            shown[2].starts_with("name=openai:gpt-4o provider=openai model=gpt-4o"),
            "{}",
            shown[2]
        );
        assert_eq!(
            shown[3],
            "name=exec:python3 run.py provider=cli command_template='python3' 'run.py' {PROMPT} '{\"id\":\"exec:python3 run.py\"}' {CONTEXT} > {OUTPUT_FILE} clean_output=true"
        );
        assert!(shown[4].starts_with("name=anthropic:messages:claude-x provider=anthropic"));
        assert_eq!(
            shown[5], "name=echo #2 provider=echo",
            "a repeated id gets a unique target name"
        );
        assert_eq!(providers[1].label.as_deref(), Some("small"));
        assert_eq!(providers[1].id, "openai:chat:gpt-4o-mini");
        let problems: Vec<String> = diags.into_vec().iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("a provider entry needs `id`"), "{problems:?}");
    }

    #[test]
    fn exec_commands_are_split_into_words_as_promptfoo_splits_them() {
        for (command, want) in [
            ("python3 run.py", "'python3' 'run.py'"),
            (
                "  echo $HOME \"a  b\" it's | cat",
                "'echo' '$HOME' 'a  b' 'it' 's' '|' 'cat'",
            ),
            (
                "node 'my script.js' --flag=\"x y\"",
                "'node' 'my script.js' '--flag=' 'x y'",
            ),
            ("say \"\" done", "'say' '\"\"' 'done'"),
        ] {
            let options =
                crate::providers::shell_quote(&format!("{{\"id\":\"exec:{}\"}}", command.replace('"', "\\\"")));
            assert_eq!(
                exec_command(command),
                format!("{want} {{PROMPT}} {options} {{CONTEXT}} > {{OUTPUT_FILE}}"),
                "{command}"
            );
        }
    }

    #[test]
    fn responses_and_vertex_ids_become_their_targets() {
        let yaml = r#"
- id: openai:responses:gpt-x
  config: {apiBaseUrl: "http://127.0.0.1:9/v1", apiKey: k, instructions: Be brief., max_output_tokens: 9}
- id: vertex:gemini-2.5-flash
  config: {apiKey: "{{ env.VK }}", region: europe-west4, apiHost: proxy.example:8443}
- id: vertex:chat:gemini-2.5-pro
  config: {projectId: proj, expressMode: false, apiKey: unused, generationConfig: {temperature: 0.3}}
- vertex:embedding:text-embedding-005
- id: vertex:gemini-2.5-flash
  label: keyfile
  config: {keyFilename: sa.json}
- id: vertex:gemini-2.5-flash
  label: inline
  config: {googleAuthOptions: {credentials: {type: service_account, private_key: k}}, projectId: p2}
- id: vertex:gemini-2.5-flash
  label: from-file
  config: {credentials: 'file://keys/sa.json'}
"#;
        let node = parse_yaml(yaml).expect("yaml");
        let file: Arc<Path> = Arc::from(Path::new("/x/promptfooconfig.yaml"));
        let mut diags = Diagnostics::new(Path::new("promptfooconfig.yaml"));
        let (_, targets) = read(&node, &file, &mut diags);
        let shown: Vec<String> = targets.targets.iter().map(settings).collect();
        assert_eq!(
            shown[0],
            "name=openai:responses:gpt-x provider=openai model=gpt-x base_url=http://127.0.0.1:9/v1 api_key=k \
             api=responses passthrough= max_output_tokens=9"
        );
        let passthrough = targets.targets[0].settings.get("passthrough").map(Node::to_json);
        assert_eq!(passthrough, Some(serde_json::json!({"instructions": "Be brief."})));
        assert_eq!(
            shown[1],
            "name=vertex:gemini-2.5-flash provider=vertex model=gemini-2.5-flash api_key=${{ VK }} \
             region=europe-west4 base_url=https://proxy.example:8443"
        );
        assert!(
            shown[2].starts_with(
                "name=vertex:chat:gemini-2.5-pro provider=vertex model=gemini-2.5-pro \
                 access_token=${{ VERTEX_ACCESS_TOKEN }} project=proj"
            ),
            "`expressMode: false` asks for a token: {}",
            shown[2]
        );
        assert!(shown[2].ends_with("temperature=0.3"), "{}", shown[2]);
        // Credentials, as promptfoo's Google auth library reads them.
        assert_eq!(
            shown[3],
            "name=keyfile provider=vertex model=gemini-2.5-flash credentials_file=sa.json"
        );
        assert_eq!(
            shown[4],
            "name=inline provider=vertex model=gemini-2.5-flash credentials={\"private_key\":\"k\",\"type\":\"service_account\"} project=p2"
        );
        assert_eq!(
            shown[5],
            "name=from-file provider=vertex model=gemini-2.5-flash credentials_file=keys/sa.json"
        );
        assert_eq!(shown.len(), 6, "the embedding model makes no target");
        let problems: Vec<String> = diags.into_vec().iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("provider `vertex:embedding:text-embedding-005` is not supported"));
    }

    #[test]
    fn an_unknown_provider_is_an_error_naming_the_ones_agentv_has() {
        let node = parse_yaml("- bedrock:claude\n").expect("yaml");
        let file: Arc<Path> = Arc::from(Path::new("/x/promptfooconfig.yaml"));
        let mut diags = Diagnostics::new(Path::new("promptfooconfig.yaml"));
        let (providers, _) = read(&node, &file, &mut diags);
        assert!(providers.is_empty());
        let shown = diags.into_vec()[0].to_string();
        assert!(
            shown.contains("provider `bedrock:claude` is not supported by agentv"),
            "{shown}"
        );
    }
}
