//! A config's grading providers (`docs/promptfoo.md#grading-provider`): each model-graded
//! assertion is graded by the assertion's `provider`, else its test's `options.provider` (the
//! test's over `defaultTest`'s), else promptfoo's default grader. Each provider becomes a
//! target of the config that only grades (the provider loader's, so it has its keys,
//! environment variables and secrets rules); its name is written into the assertion, with the
//! `rubricPrompt` it uses, before the assertion is parsed.

use std::path::Path;
use std::sync::Arc;

use crate::config::{Diagnostics, Node, NodeValue, Pos};
use crate::providers::{TargetDef, TargetsFile};

/// promptfoo's default grader (0.121.20, with `OPENAI_API_KEY`).
pub const DEFAULT_TEXT: &str = "openai:chat:gpt-5.5-2026-04-23";
/// promptfoo's default moderation model.
pub const DEFAULT_MODERATION: &str = "openai:moderation:omni-moderation-latest";
/// promptfoo's default embedding model.
pub const DEFAULT_EMBEDDING: &str = "openai:embedding:text-embedding-3-large";

/// The types a grading model answers.
const TEXT: &[&str] = &[
    "llm-rubric",
    "model-graded-closedqa",
    "factuality",
    "g-eval",
    "answer-relevance",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "conversation-relevance",
    "select-best",
];
/// The types that embed text.
const EMBEDDING: &[&str] = &["similar", "answer-relevance"];

/// What a grading provider is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    Text,
    Embedding,
    Moderation,
}

impl Use {
    fn key(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Embedding => "embedding",
            Self::Moderation => "moderation",
        }
    }
}

/// The grading targets made so far.
pub struct GradingTargets {
    file: Arc<Path>,
    /// (the provider as written) → target name.
    made: Vec<(String, String)>,
    pub defs: Vec<TargetDef>,
}

impl GradingTargets {
    pub fn new(file: &Arc<Path>) -> Self {
        Self {
            file: file.clone(),
            made: Vec::new(),
            defs: Vec::new(),
        }
    }

    /// `list` (a test's assertions, rendered) with the grading keys of each model-graded one
    /// written: `provider` (a target name), `embeddingProvider`, `rubricPrompt`.
    pub fn prepare(&mut self, list: Vec<Node>, options: Option<&Node>, diags: &mut Diagnostics) -> Vec<Node> {
        list.into_iter().map(|n| self.prepare_one(n, options, diags)).collect()
    }

    fn prepare_one(&mut self, node: Node, options: Option<&Node>, diags: &mut Diagnostics) -> Node {
        let Some(written) = node.get("type").and_then(Node::as_str) else {
            return node;
        };
        let base = written.strip_prefix("not-").unwrap_or(written);
        // `similar:dot`, `similar:euclidean`: the same type with its metric.
        let base = base.split_once(':').map_or(base, |(b, _)| b).to_owned();
        let NodeValue::Map(mut entries) = node.value.clone() else {
            return node;
        };
        if base == "assert-set" {
            for (k, v) in &mut entries {
                if k.as_str() == Some("assert")
                    && let NodeValue::Seq(items) = &v.value
                {
                    let items = self.prepare(items.clone(), options, diags);
                    *v = Node::new(NodeValue::Seq(items), v.pos);
                }
            }
            return Node::new(NodeValue::Map(entries), node.pos);
        }
        let text = TEXT.contains(&base.as_str());
        let embedding = EMBEDDING.contains(&base.as_str());
        let moderation = base == "moderation";
        if !text && !embedding && !moderation {
            return node;
        }
        let spec = node.get("provider").or_else(|| options.and_then(|o| o.get("provider")));
        entries.retain(|(k, _)| !matches!(k.as_str(), Some("provider" | "embeddingProvider")));
        let pos = node.pos;
        let uses = [
            (text, Use::Text),
            (embedding, Use::Embedding),
            (moderation, Use::Moderation),
        ];
        for (wanted, key) in uses {
            if !wanted {
                continue;
            }
            if let Some(name) = self.target(spec, key, pos, diags) {
                let key = if key == Use::Embedding {
                    "embeddingProvider"
                } else {
                    "provider"
                };
                entries.push((text_node(key, pos), text_node(&name, pos)));
            }
        }
        let has_prompt = entries.iter().any(|(k, _)| k.as_str() == Some("rubricPrompt"));
        if let (false, Some(prompt)) = (has_prompt, options.and_then(|o| o.get("rubricPrompt"))) {
            entries.push((text_node("rubricPrompt", pos), prompt.clone()));
        }
        Node::new(NodeValue::Map(entries), pos)
    }

    /// The target grading as `spec` says (promptfoo's default without one); `None` when it
    /// cannot be made (reported).
    fn target(&mut self, spec: Option<&Node>, what: Use, pos: Pos, diags: &mut Diagnostics) -> Option<String> {
        let default = match what {
            Use::Text => DEFAULT_TEXT,
            Use::Embedding => DEFAULT_EMBEDDING,
            Use::Moderation => DEFAULT_MODERATION,
        };
        let chosen: Node = match spec {
            // promptfoo's default graders use OPENAI_API_KEY: without it nothing runs.
            None => default_provider(default, pos),
            Some(s) if s.as_map().is_some() && s.get("id").is_none() => match s.get(what.key()) {
                Some(inner) => inner.clone(),
                None if what != Use::Text => default_provider(default, pos),
                None => {
                    diags.error(
                        s.pos,
                        "a grading `provider` mapping needs `id`, or `text` / `embedding` naming a provider for each use",
                        Some("write `provider: openai:gpt-4.1-mini` or `provider: {id: ..., config: {...}}`".to_owned()),
                    );
                    return None;
                }
            },
            Some(s) => s.clone(),
        };
        // One target per provider as written, whatever it is used for.
        let key = chosen.to_json().to_string();
        if let Some((_, name)) = self.made.iter().find(|(k, _)| *k == key) {
            return Some(name.clone());
        }
        let (id, label) = match &chosen.value {
            NodeValue::Str(id) => (id.clone(), None),
            _ => (
                chosen.get("id").and_then(Node::as_str).unwrap_or_default().to_owned(),
                chosen.get("label").and_then(Node::as_str).map(str::to_owned),
            ),
        };
        let base = format!("grader: {}", label.unwrap_or_else(|| id.clone()));
        let mut name = base.clone();
        let mut n = 2;
        while self.made.iter().any(|(_, taken)| *taken == name) {
            name = format!("{base} #{n}");
            n += 1;
        }
        let mut entries: Vec<(Node, Node)> = match &chosen.value {
            NodeValue::Map(entries) => entries.clone(),
            _ => Vec::new(),
        };
        entries.retain(|(k, _)| !matches!(k.as_str(), Some("id" | "label")));
        entries.push((text_node("id", chosen.pos), text_node(&loader_id(&id), chosen.pos)));
        entries.push((text_node("label", chosen.pos), text_node(&name, chosen.pos)));
        let item = Node::new(
            NodeValue::Seq(vec![Node::new(NodeValue::Map(entries), chosen.pos)]),
            chosen.pos,
        );
        let (_, TargetsFile { targets, .. }) = super::providers::read(&item, &self.file, diags);
        let def = targets.into_iter().next()?;
        self.made.push((key, name.clone()));
        self.defs.push(def);
        Some(name)
    }
}

/// The provider loader's id for a grading provider id: an OpenAI embedding model is an
/// OpenAI target whose `embed` calls the embeddings API.
fn loader_id(id: &str) -> String {
    for prefix in ["openai:embedding:", "openai:embeddings:", "openai:moderation:"] {
        if let Some(model) = id.strip_prefix(prefix) {
            return format!("openai:{model}");
        }
    }
    id.to_owned()
}

/// promptfoo's default grading provider `id`, with its key required.
fn default_provider(id: &str, pos: Pos) -> Node {
    let key = Node::new(
        NodeValue::Map(vec![(
            text_node("apiKey", pos),
            text_node("{{ env.OPENAI_API_KEY }}", pos),
        )]),
        pos,
    );
    Node::new(
        NodeValue::Map(vec![
            (text_node("id", pos), text_node(id, pos)),
            (text_node("config", pos), key),
        ]),
        pos,
    )
}

fn text_node(text: &str, pos: Pos) -> Node {
    Node::new(NodeValue::Str(text.to_owned()), pos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::node::parse_yaml;

    fn prepared(assert: &str, options: Option<&str>) -> (Vec<serde_json::Value>, Vec<String>, Vec<String>) {
        let file: Arc<Path> = Arc::from(Path::new("/x/promptfooconfig.yaml"));
        let mut targets = GradingTargets::new(&file);
        let mut diags = Diagnostics::new(Path::new("promptfooconfig.yaml"));
        let list = parse_yaml(assert).expect("yaml").as_seq().expect("a list").to_vec();
        let options = options.map(|o| parse_yaml(o).expect("yaml"));
        let out = targets.prepare(list, options.as_ref(), &mut diags);
        let names = targets.defs.iter().map(|d| d.name.clone()).collect();
        let problems = diags.into_vec().iter().map(ToString::to_string).collect();
        (out.iter().map(Node::to_json).collect(), names, problems)
    }

    #[test]
    fn a_model_graded_assertion_is_graded_by_its_provider_else_the_tests_else_promptfoos_default() {
        let (out, names, problems) = prepared(
            "- {type: llm-rubric, value: a, provider: openai:gpt-4o-mini}\n- {type: not-llm-rubric, value: b}\n- {type: contains, value: c}\n- {type: similar, value: d}\n",
            Some("{provider: {id: openai:chat:judge, config: {temperature: 0}}, rubricPrompt: 'P {{ output }}'}"),
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(out[0]["provider"], "grader: openai:gpt-4o-mini");
        assert_eq!(out[0]["rubricPrompt"], "P {{ output }}", "the test's rubricPrompt");
        assert_eq!(out[1]["provider"], "grader: openai:chat:judge");
        assert!(
            out[2].get("provider").is_none(),
            "a check that asks no model is left alone"
        );
        assert_eq!(
            out[3]["embeddingProvider"], "grader: openai:chat:judge",
            "the test's provider embeds too (agentv's OpenAI targets call the embeddings API)"
        );
        assert_eq!(names, ["grader: openai:gpt-4o-mini", "grader: openai:chat:judge"]);
        let (out, _, _) = prepared("- {type: similar, value: d}\n", None);
        assert_eq!(out[0]["embeddingProvider"], format!("grader: {DEFAULT_EMBEDDING}"));
        let (out, names, _) = prepared("- {type: factuality, value: x}\n- {type: factuality, value: y}\n", None);
        assert_eq!(out[0]["provider"], format!("grader: {DEFAULT_TEXT}"));
        assert_eq!(names.len(), 1, "one target per provider");
    }

    #[test]
    fn a_provider_mapping_by_use_names_each_use() {
        let (out, _, problems) = prepared(
            "- {type: answer-relevance}\n",
            Some("{provider: {text: openai:gpt-4o, embedding: openai:embedding:small}}"),
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(out[0]["provider"], "grader: openai:gpt-4o");
        assert_eq!(out[0]["embeddingProvider"], "grader: openai:embedding:small");
        let (_, _, problems) = prepared("- {type: llm-rubric, value: x, provider: {config: {}}}\n", None);
        assert!(problems.iter().any(|p| p.contains("needs `id`")), "{problems:?}");
        let (_, _, problems) = prepared("- {type: llm-rubric, value: x, provider: bedrock:x}\n", None);
        assert!(
            problems
                .iter()
                .any(|p| p.contains("provider `bedrock:x` is not supported")),
            "{problems:?}"
        );
    }
}
