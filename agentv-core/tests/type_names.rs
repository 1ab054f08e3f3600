//! One name, one type: within a crate of the workspace, two public types (`pub struct`,
//! `pub enum`, `pub trait`, `pub type`) in different modules never share a name, so a reader who
//! meets `TargetStats` or `RunOptions` knows which one it is. Where two concepts differ, their
//! names say how (`resolve::Resolved` and `facade::Plan`, `model::Generation` and
//! `report::ResultsFormat`). See `docs/architecture.md#modules`.
//!
//! The few pairs left are in [`ALLOWED`], each with why; the test also fails when an entry there
//! is no longer needed, so the list only shrinks. Test modules are left out (from a file's first
//! `#[cfg(test)]` to its end, where this code base keeps them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The source directories of the workspace's crates, from the repository root.
const CRATES: &[&str] = &[
    "agentv-core/src",
    "src",
    "agentv-proxy/src",
    "agentv-eval-sdk/src",
    "agentv-testkit/src",
    "judges/src",
    "bench/tools/src",
];

/// (crate directory, type name, why the two types keep the name).
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "agentv-core/src",
        "Code",
        "each code grader's `code` key (evaluators/python.rs, evaluators/javascript.rs): used only inside its grader's module",
    ),
    (
        "agentv-core/src",
        "Check",
        "a grader's own parsed check (evaluators/rubrics.rs, evaluators/promptfoo_text.rs): used only inside its module",
    ),
    (
        "agentv-core/src",
        "Metric",
        "a grader's `metric` key (evaluators/similar.rs, evaluators/promptfoo_text.rs): used only inside its module",
    ),
    (
        "agentv-core/src",
        "Prompt",
        "promptfoo's `prompts:` entry (load/promptfoo) against the llm grader's prompt key: each used only inside its module",
    ),
    (
        "agentv-core/src",
        "Provider",
        "promptfoo's `providers:` entry (load/promptfoo/providers.rs) against the provider trait; the loader's is private to load/promptfoo",
    ),
    (
        "agentv-core/src",
        "Source",
        "where a dataset's cases come from (load/cases_source.rs) and where a tool's code comes from (tools/exec.rs): each used only inside its module",
    ),
    (
        "agentv-testkit/src",
        "Call",
        "the fake LLM server's recorded request (llm.rs) and a script rule's view of it (llm/script.rs), one module inside the other",
    ),
];

/// The public type names declared in `text`, outside its test module.
fn public_types(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("pub ")?;
            let rest = ["struct ", "enum ", "trait ", "type "]
                .iter()
                .find_map(|kind| rest.strip_prefix(kind))?;
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

fn source_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(source_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// Per type name, the files of `dir` that declare a public type of that name.
fn declarations(dir: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut found: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for file in source_files(dir) {
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        for name in public_types(&text) {
            let rel = file.strip_prefix(dir).unwrap_or(&file).to_path_buf();
            found.entry(name).or_default().push(rel);
        }
    }
    found
}

#[test]
fn no_two_public_types_of_a_crate_share_a_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut wrong = Vec::new();
    let mut used = Vec::new();
    for krate in CRATES {
        let dir = root.join(krate);
        assert!(dir.is_dir(), "{krate} is no directory: update CRATES");
        for (name, files) in declarations(&dir).into_iter().filter(|(_, f)| f.len() > 1) {
            if ALLOWED.iter().any(|(c, n, _)| c == krate && *n == name) {
                used.push((*krate, name));
                continue;
            }
            let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            wrong.push(format!("{krate}: `{name}` in {}", files.join(", ")));
        }
    }
    assert!(
        wrong.is_empty(),
        "public types of the same name in one crate (merge them into one type, or rename them so \
         the names say the difference):\n  {}",
        wrong.join("\n  ")
    );
    let stale: Vec<String> = ALLOWED
        .iter()
        .filter(|(c, n, _)| !used.iter().any(|(uc, un)| uc == c && un == n))
        .map(|(c, n, _)| format!("{c}: `{n}`"))
        .collect();
    assert!(
        stale.is_empty(),
        "allowed pairs that no longer exist (remove them from ALLOWED):\n  {}",
        stale.join("\n  ")
    );
}

#[test]
fn public_types_are_read_outside_test_modules_only() {
    let text = "pub struct TargetStats {\n}\n    pub enum Generation { A }\npub(crate) struct Hidden;\nstruct Private;\npub trait Sink {}\npub type Row<'a> = &'a str;\npub fn not_a_type() {}\n#[cfg(test)]\nmod tests {\n    pub struct Fixture;\n}\n";
    assert_eq!(public_types(text), ["TargetStats", "Generation", "Sink", "Row"]);
}
