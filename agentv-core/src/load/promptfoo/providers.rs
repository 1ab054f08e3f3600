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
    };
    for item in items {
        let (id, label, config) = match &item.value {
            NodeValue::Str(id) => (id.clone(), None, None),
            NodeValue::Map(_) => match item.get("id").and_then(Node::as_str) {
                Some(id) => (
                    id.to_owned(),
                    item.get("label").and_then(Node::as_str).map(str::to_owned),
                    item.get("config"),
                ),
                None => {
                    diags.error(
                        item.pos,
                        "a provider entry needs `id` (e.g. `openai:chat:gpt-4o-mini`)",
                        Some("write `- id: echo` with an optional `label:` and `config:`".to_owned()),
                    );
                    continue;
                }
            },
            _ => {
                diags.error(
                    item.pos,
                    format!("a provider must be an id or a mapping, found {}", describe(item)),
                    Some("write `- echo` or `- id: openai:chat:gpt-4o-mini`".to_owned()),
                );
                continue;
            }
        };
        let Some(settings) = settings_of(&id, config, item.pos, diags) else {
            continue;
        };
        let base = label.clone().unwrap_or_else(|| id.clone());
        let mut target = base.clone();
        let mut n = 2;
        while providers.iter().any(|p| p.target == target) {
            target = format!("{base} #{n}");
            n += 1;
        }
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
        providers.push(Provider { id, label, target });
    }
    (providers, targets)
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
    let mut out: Vec<(Node, Node)> = Vec::new();
    let mut set = |k: &str, v: Option<Node>| {
        if let Some(v) = v {
            out.push((text_node(k.to_owned(), pos), v));
        }
    };
    let cfg = |k: &str| config_value(config, k);
    let text = |t: String| Some(text_node(t, pos));
    let env_ref = |vars: &[&str]| env_ref(vars).map(|t| text_node(t, pos));
    if id == "echo" {
        set("provider", text("echo".to_owned()));
    } else if let Some(command) = id.strip_prefix("exec:") {
        set("provider", text("cli".to_owned()));
        set(
            "command_template",
            text(format!("{} {{PROMPT}} > {{OUTPUT_FILE}}", command.trim())),
        );
    } else if let Some(model) = openai_model(id) {
        set("provider", text("openai".to_owned()));
        set("model", text(model.to_owned()));
        let host = cfg("apiHost")
            .and_then(|h| h.scalar_text())
            .and_then(|h| text(format!("https://{h}/v1")));
        set(
            "base_url",
            cfg("apiBaseUrl")
                .or(host)
                .or_else(|| env_ref(&["OPENAI_BASE_URL", "OPENAI_API_BASE_URL"])),
        );
        set("api_key", cfg("apiKey").or_else(|| env_ref(&["OPENAI_API_KEY"])));
        set("organization", cfg("organization"));
    } else if let Some(deployment) = ["azureopenai:chat:", "azure:chat:"]
        .iter()
        .find_map(|p| id.strip_prefix(p))
    {
        set("provider", text("azure".to_owned()));
        set("deployment_name", text(deployment.to_owned()));
        set(
            "endpoint",
            cfg("apiHost").or_else(|| env_ref(&["AZURE_OPENAI_API_HOST", "AZURE_API_HOST"])),
        );
        set(
            "api_key",
            cfg("apiKey").or_else(|| env_ref(&["AZURE_OPENAI_API_KEY", "AZURE_API_KEY"])),
        );
    } else if let Some(model) = id.strip_prefix("anthropic:messages:") {
        set("provider", text("anthropic".to_owned()));
        set("model", text(model.to_owned()));
        set(
            "base_url",
            cfg("apiBaseUrl").or_else(|| env_ref(&["ANTHROPIC_BASE_URL"])),
        );
        set("api_key", cfg("apiKey").or_else(|| env_ref(&["ANTHROPIC_API_KEY"])));
    } else {
        diags.error(
            pos,
            format!("provider `{id}` is not supported by agentv"),
            Some(
                "use echo, exec:<command>, openai:chat:<model>, azureopenai:chat:<deployment> or anthropic:messages:<model>"
                    .to_owned(),
            ),
        );
        return None;
    }
    if !id.starts_with("exec:") && id != "echo" {
        set("temperature", cfg("temperature"));
        set(
            "max_output_tokens",
            cfg("max_tokens").or_else(|| cfg("max_completion_tokens")),
        );
    }
    Some(out)
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
            "name=exec:python3 run.py provider=cli command_template=python3 run.py {PROMPT} > {OUTPUT_FILE}"
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
