//! Code and docs cite sections as `docs/<doc>.md#<anchor>` (and Markdown links as
//! `(<doc>.md#<anchor>)` or `(#<anchor>)`): every cited anchor must be a section of the document
//! it names, with the anchor GitHub gives the heading, so a renamed heading cannot leave a
//! dangling reference. Two headings of one document with one anchor are refused too: a citation
//! of either would reach the first.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// The anchor GitHub gives a heading: lower case, punctuation (`.`, `→`, backticks) dropped,
/// each space a hyphen.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchor of every heading of `doc`, in order (code blocks left out).
fn headings(doc: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && let Some(heading) = line.strip_prefix('#') {
            out.push(anchor(heading.trim_start_matches('#')));
        }
    }
    out
}

/// Source and documentation files that may cite a document.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                sources(&path, out);
            }
        } else if ["rs", "py", "ts", "js", "sh", "md", "toml", "yaml"]
            .iter()
            .any(|e| path.extension().is_some_and(|x| x == *e))
        {
            out.push(path);
        }
    }
}

/// Every `(document, anchor)` cited in `text`: `path/doc.md#anchor` with the document as
/// written, and `](#anchor)` with an empty document (the citing file itself).
fn citations(text: &str) -> Vec<(String, String)> {
    let is_anchor = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let is_path = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/');
    let mut out = Vec::new();
    for (at, _) in text.match_indices(".md#") {
        let start = text[..at].rfind(|c: char| !is_path(c)).map_or(0, |i| i + 1);
        let anchor: String = text[at + 4..].chars().take_while(|c| is_anchor(*c)).collect();
        out.push((text[start..at + 3].to_owned(), anchor));
    }
    for (at, m) in text.match_indices("](#") {
        let anchor: String = text[at + m.len()..].chars().take_while(|c| is_anchor(*c)).collect();
        out.push((String::new(), anchor));
    }
    out
}

/// The file a citation in `from` names: relative to the citing file, else to the repository,
/// else a document of `docs/` (code cites `architecture.md#…` for short).
fn document(root: &Path, from: &Path, cited: &str) -> Option<PathBuf> {
    if cited.is_empty() {
        return Some(from.to_path_buf());
    }
    let name = Path::new(cited).file_name()?;
    [
        from.parent()?.join(cited),
        root.join(cited),
        root.join("docs").join(name),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    sources(root, &mut files);
    files.retain(|f| f.extension().is_some_and(|e| e == "md"));
    files
}

#[test]
fn every_cited_doc_anchor_is_a_section() {
    let root = repo_root();
    let mut files = Vec::new();
    sources(&root, &mut files);
    // This file's own examples are not citations.
    files.retain(|f| !f.ends_with(file!()));
    let mut known: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut dangling = Vec::new();
    let mut cited = 0;
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let is_markdown = file.extension().is_some_and(|e| e == "md");
        for (doc, anchor) in citations(&text) {
            if doc.is_empty() && !is_markdown {
                continue;
            }
            cited += 1;
            let at = file.strip_prefix(&root).unwrap_or(file).display();
            let Some(path) = document(&root, file, &doc) else {
                dangling.push(format!("{at}: {doc}#{anchor} (no such document)"));
                continue;
            };
            let sections = known.entry(path.clone()).or_insert_with(|| {
                headings(&std::fs::read_to_string(&path).unwrap_or_default())
                    .into_iter()
                    .collect()
            });
            if !sections.contains(&anchor) {
                dangling.push(format!("{at}: {doc}#{anchor}"));
            }
        }
    }
    assert!(cited > 200, "the code and docs cite sections ({cited} citations found)");
    assert!(
        dangling.is_empty(),
        "citations without a section:\n  {}",
        dangling.join("\n  ")
    );
}

#[test]
fn no_document_has_two_sections_with_one_anchor() {
    let root = repo_root();
    let mut twice = Vec::new();
    for doc in documents(&root) {
        let mut seen = BTreeSet::new();
        for anchor in headings(&std::fs::read_to_string(&doc).expect("readable")) {
            if !seen.insert(anchor.clone()) {
                twice.push(format!(
                    "{}: #{anchor}",
                    doc.strip_prefix(&root).unwrap_or(&doc).display()
                ));
            }
        }
    }
    assert!(
        twice.is_empty(),
        "headings whose anchor another heading of the document has:\n  {}",
        twice.join("\n  ")
    );
}

#[test]
fn anchors_follow_the_markdown_rules() {
    assert_eq!(anchor(" Exit codes"), "exit-codes");
    assert_eq!(anchor("Add a provider"), "add-a-provider");
    assert_eq!(anchor("2.x → 4.x"), "2x--4x");
    assert_eq!(anchor("`agentv eval`"), "agentv-eval");
    let cited = citations("see docs/architecture.md#case-ids). [x](../judges.md#the-proxy) [y](#cost)");
    let cited: Vec<String> = cited.iter().map(|(d, a)| format!("{d}#{a}")).collect();
    assert_eq!(
        cited,
        ["docs/architecture.md#case-ids", "../judges.md#the-proxy", "#cost"]
    );
    let doc = "# Top\n```\n# not a heading\n```\n## Key tables\n";
    assert_eq!(headings(doc), ["top", "key-tables"]);
}
