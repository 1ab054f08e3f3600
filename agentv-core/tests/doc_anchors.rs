//! Code cites the decisions it relies on as `docs/architecture.md#<anchor>`: every cited anchor
//! must be a section of that document, so a renamed heading cannot leave a dangling reference.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// The anchor a Markdown renderer gives a heading: lower case, punctuation dropped, spaces as
/// hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(doc: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut out = BTreeSet::new();
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && let Some(heading) = line.strip_prefix('#') {
            out.insert(anchor(heading.trim_start_matches('#')));
        }
    }
    out
}

/// Source files that may cite the document.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                sources(&path, out);
            }
        } else if ["rs", "py", "ts", "js", "sh", "md"]
            .iter()
            .any(|e| path.extension().is_some_and(|x| x == *e))
        {
            out.push(path);
        }
    }
}

/// The anchor of every `architecture.md#anchor` in `text`.
fn citations(text: &str) -> Vec<String> {
    citations_of(text, "architecture.md#")
}

/// The anchor of every `<doc>#anchor` in `text` (`doc` ends with `#`).
fn citations_of(text: &str, doc: &str) -> Vec<String> {
    text.match_indices(doc)
        .map(|(at, m)| {
            text[at + m.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect()
        })
        .collect()
}

#[test]
fn every_cited_architecture_anchor_is_a_section() {
    let root = repo_root();
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).expect("docs/architecture.md");
    let known = anchors(&doc);
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut dangling = Vec::new();
    let mut cited = 0;
    // This file's own examples are not citations.
    files.retain(|f| !f.ends_with(file!()));
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for anchor in citations(&text) {
            cited += 1;
            if !known.contains(&anchor) {
                dangling.push(format!(
                    "{}: #{anchor}",
                    file.strip_prefix(&root).unwrap_or(&file).display()
                ));
            }
        }
    }
    assert!(cited > 20, "the code cites the document ({cited} citations found)");
    assert!(
        dangling.is_empty(),
        "citations of docs/architecture.md without a section:\n  {}\nsections: {known:?}",
        dangling.join("\n  ")
    );
}

#[test]
fn every_cited_tools_anchor_is_a_section() {
    let root = repo_root();
    let known = anchors(&std::fs::read_to_string(root.join("docs/tools.md")).expect("docs/tools.md"));
    let mut files = Vec::new();
    sources(&root.join("agentv-core/src"), &mut files);
    let dangling: Vec<String> = files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            citations_of(&text, "tools.md#")
                .into_iter()
                .filter(|a| !known.contains(a))
                .map(|a| format!("{}: #{a}", f.display()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        dangling.is_empty(),
        "citations of docs/tools.md without a section:\n  {}",
        dangling.join("\n  ")
    );
}

#[test]
fn anchors_follow_the_markdown_rules() {
    assert_eq!(anchor(" Exit codes"), "exit-codes");
    assert_eq!(anchor("Add a provider"), "add-a-provider");
    assert_eq!(citations("see docs/architecture.md#case-ids)."), ["case-ids"]);
    let doc = "# Top\n```\n# not a heading\n```\n## Key tables\n";
    assert_eq!(anchors(doc).into_iter().collect::<Vec<_>>(), ["key-tables", "top"]);
}
