//! A config's `prompts` (`docs/promptfoo.md#prompts`): inline strings, `{raw|id, label}`
//! entries and `file://` files (text split on `---` lines, JSON chats, Markdown), each with the
//! label promptfoo gives it.

use std::path::Path;

use crate::config::{Diagnostics, Node, NodeValue, describe};

/// One prompt: its template, its label, and the `id` its entry was written with (a provider's
/// `prompts` select prompts by label or id: `docs/promptfoo.md#providers`).
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub raw: String,
    pub label: String,
    pub id: Option<String>,
}

impl Prompt {
    /// Whether the reference `selector` (of a provider's `prompts`) picks this prompt, by
    /// promptfoo's rules: its label or id exactly; `Group:*` any label or id starting with
    /// `Group:`; `Group` any label or id starting with `Group:`.
    pub fn is_selected_by(&self, selector: &str) -> bool {
        let names = [Some(self.label.as_str()), self.id.as_deref()];
        names.into_iter().flatten().any(|name| {
            name == selector
                || selector
                    .strip_suffix('*')
                    .is_some_and(|prefix| name.starts_with(prefix))
                || name.strip_prefix(selector).is_some_and(|rest| rest.starts_with(':'))
        })
    }
}

/// Every prompt of `node` (the `prompts` value), in order. Problems are reported.
pub fn read(node: &Node, dir: &Path, diags: &mut Diagnostics) -> Vec<Prompt> {
    let items: Vec<&Node> = match &node.value {
        NodeValue::Seq(items) => items.iter().collect(),
        NodeValue::Null => Vec::new(),
        _ => vec![node],
    };
    let mut out = Vec::new();
    for item in items {
        match &item.value {
            NodeValue::Str(text) => out.extend(from_text(text, None, item, dir, diags)),
            NodeValue::Map(_) => {
                let label = item.get("label").and_then(Node::as_str);
                let id = item.get("id").and_then(Node::as_str);
                match item.get("raw").or_else(|| item.get("id")).and_then(Node::as_str) {
                    Some(text) => out.extend(from_text(text, label, item, dir, diags).into_iter().map(|p| Prompt {
                        id: id.map(str::to_owned),
                        ..p
                    })),
                    None => diags.error(
                        item.pos,
                        "a prompt entry needs `raw` (the template) or `id` (a `file://` path)",
                        Some("write `- raw: \"...\"` with an optional `label:`".to_owned()),
                    ),
                }
            }
            _ => diags.error(
                item.pos,
                format!("a prompt must be a string or a mapping, found {}", describe(item)),
                Some("write the prompt as a string, or `file://prompt.txt`".to_owned()),
            ),
        }
    }
    out
}

/// An inline prompt, or the prompts of a `file://` path.
fn from_text(text: &str, label: Option<&str>, at: &Node, dir: &Path, diags: &mut Diagnostics) -> Vec<Prompt> {
    let Some(rel) = text.strip_prefix("file://") else {
        return vec![Prompt {
            raw: text.to_owned(),
            label: label.unwrap_or(text).to_owned(),
            id: None,
        }];
    };
    let path = dir.join(rel);
    let content = match std::fs::read_to_string(&path) {
        Ok(c) => c.replace("\r\n", "\n"),
        Err(e) => {
            diags.error(
                at.pos,
                format!("cannot read prompt file {}: {e}", path.display()),
                Some("paths after `file://` are relative to the config's folder".to_owned()),
            );
            return Vec::new();
        }
    };
    let shown = rel.trim_start_matches("./");
    let label_of = |raw: &str| match label {
        Some(l) => format!("{l}: {shown}: {raw}"),
        None => format!("{shown}: {raw}"),
    };
    let is_text = Path::new(rel).extension().is_none_or(|e| e.eq_ignore_ascii_case("txt"));
    if !is_text {
        // JSON chats, Markdown and other files are one prompt each.
        return vec![Prompt {
            label: label_of(&content),
            raw: content,
            id: None,
        }];
    }
    split_text(&content)
        .into_iter()
        .map(|raw| Prompt {
            label: label_of(&raw),
            raw,
            id: None,
        })
        .collect()
}

/// A text file's prompts: parts separated by a line holding only `---`.
fn split_text(content: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    for line in content.split_inclusive('\n') {
        if line.trim_end() == "---" {
            parts.push(String::new());
        } else if let Some(last) = parts.last_mut() {
            last.push_str(line);
        }
    }
    parts
        .into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::node::parse_yaml;

    #[test]
    fn prompt_labels_follow_promptfoo_rules() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("p.txt"), "One {{x}}\n---\nTwo\n").expect("write");
        std::fs::write(
            dir.path().join("chat.json"),
            "[{\"role\": \"user\", \"content\": \"hi\"}]",
        )
        .expect("write");
        let yaml = "- Say {{x}}\n- {raw: Hello, label: greeting}\n- file://p.txt\n- {id: file://chat.json, label: c}\n";
        let node = parse_yaml(yaml).expect("yaml");
        let mut diags = Diagnostics::new(Path::new("promptfooconfig.yaml"));
        let got: Vec<(String, String)> = read(&node, dir.path(), &mut diags)
            .into_iter()
            .map(|p| (p.raw, p.label))
            .collect();
        let chat = "[{\"role\": \"user\", \"content\": \"hi\"}]";
        let want = vec![
            ("Say {{x}}".to_owned(), "Say {{x}}".to_owned()),
            ("Hello".to_owned(), "greeting".to_owned()),
            ("One {{x}}".to_owned(), "p.txt: One {{x}}".to_owned()),
            ("Two".to_owned(), "p.txt: Two".to_owned()),
            (chat.to_owned(), format!("c: chat.json: {chat}")),
        ];
        assert_eq!(got, want);
        assert!(diags.into_vec().is_empty());
    }

    #[test]
    fn provider_prompts_select_by_label_id_wildcard_and_group() {
        let prompt = |label: &str, id: Option<&str>| Prompt {
            raw: String::new(),
            label: label.to_owned(),
            id: id.map(str::to_owned),
        };
        let cases = [
            (prompt("greeting", None), "greeting", true),
            (prompt("greeting", None), "greet", false),
            (prompt("greeting", None), "greet*", true),
            (prompt("p.txt: One", None), "p.txt", true),
            (prompt("p.txt: One", None), "p.tx", false),
            (prompt("p.txt: One", None), "p.txt:*", true),
            (prompt("x", Some("file://chat.json")), "file://chat.json", true),
            (prompt("x", Some("file://chat.json")), "file://*", true),
            (prompt("x", None), "*", true),
            (prompt("x", None), "y", false),
        ];
        for (prompt, selector, want) in cases {
            assert_eq!(prompt.is_selected_by(selector), want, "{selector} on {prompt:?}");
        }
    }

    #[test]
    fn a_missing_prompt_file_is_an_error_at_its_line() {
        let node = parse_yaml("- ok\n- file://nope.txt\n").expect("yaml");
        let mut diags = Diagnostics::new(Path::new("promptfooconfig.yaml"));
        let got = read(&node, Path::new("/nonexistent"), &mut diags);
        assert_eq!(got.len(), 1);
        let shown: Vec<String> = diags.into_vec().iter().map(ToString::to_string).collect();
        assert!(
            shown[0].contains(":2:") && shown[0].contains("cannot read prompt file"),
            "{shown:?}"
        );
    }
}
