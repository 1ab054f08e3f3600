//! The documentation renders and its examples work: every table row is inside a rendered table,
//! the README's YAML examples pass `agentv validate` and its `cli` example runs, and the files
//! its commands name exist.

use std::ops::Range;
use std::path::{Path, PathBuf};

use agentv_testkit::{Project, repo_root};
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// A fenced code block: its language, its text and the line its fence opens on.
struct Fenced {
    lang: String,
    text: String,
    line: usize,
}

/// What a Markdown renderer made of a document: where its tables and code blocks are.
struct Rendered {
    tables: Vec<Range<usize>>,
    code: Vec<Range<usize>>,
    fenced: Vec<Fenced>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

fn render(text: &str) -> Rendered {
    let mut out = Rendered {
        tables: Vec::new(),
        code: Vec::new(),
        fenced: Vec::new(),
    };
    let mut open: Option<Fenced> = None;
    for (event, range) in Parser::new_ext(text, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Start(Tag::Table(_)) => out.tables.push(range),
            Event::Start(Tag::CodeBlock(kind)) => {
                out.code.push(range.clone());
                if let CodeBlockKind::Fenced(lang) = kind {
                    open = Some(Fenced {
                        lang: lang.to_string(),
                        text: String::new(),
                        line: line_of(text, range.start),
                    });
                }
            }
            Event::Text(t) => {
                if let Some(block) = open.as_mut() {
                    block.text.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => out.fenced.extend(open.take()),
            _ => {}
        }
    }
    out
}

/// The Markdown documentation we ship: every README.md and everything under docs/ (eval
/// data such as the examples' notes is not documentation).
fn documents() -> Vec<PathBuf> {
    fn visit(dir: &Path, in_docs: bool, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                    visit(&path, in_docs || name == "docs", out);
                }
            } else if name == "README.md" || (in_docs && name.ends_with(".md")) {
                out.push(path);
            }
        }
    }
    let mut docs = Vec::new();
    visit(&repo_root(), false, &mut docs);
    docs.sort();
    assert!(docs.contains(&repo_root().join("README.md")), "{docs:?}");
    docs
}

/// Lines that start like a table row but are not inside a rendered table (nor in code).
fn stray_table_rows(text: &str) -> Vec<usize> {
    let rendered = render(text);
    let inside = |offset: usize, ranges: &[Range<usize>]| ranges.iter().any(|r| r.contains(&offset));
    let mut offset = 0;
    let mut stray = Vec::new();
    for line in text.split_inclusive('\n') {
        let start = offset + (line.len() - line.trim_start().len());
        if line.trim_start().starts_with('|') && !inside(start, &rendered.code) && !inside(start, &rendered.tables) {
            stray.push(line_of(text, start));
        }
        offset += line.len();
    }
    stray
}

#[test]
fn a_table_split_by_a_paragraph_is_caught() {
    let broken = "| a | b |\n|---|---|\n| 1 | 2 |\n\nA paragraph.\n\n| 3 | 4 |\n";
    assert_eq!(stray_table_rows(broken), [7]);
    assert!(stray_table_rows("| a |\n|---|\n| 1 |\n\n```\n| not a table |\n```\n").is_empty());
}

#[test]
fn every_table_row_renders_inside_a_table() {
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("readable");
        let stray = stray_table_rows(&text);
        assert!(
            stray.is_empty(),
            "{}: lines {stray:?} start with `|` but do not render as part of a table",
            doc.display()
        );
    }
}

/// The README's YAML examples, each written to the path its first-line comment names
/// (`# evals/capitals.yaml`, `# targets.yaml, next to agent.py`).
fn readme_yaml_examples() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo_root().join("README.md")).expect("README");
    render(&text)
        .fenced
        .into_iter()
        .filter(|b| b.lang == "yaml")
        .map(|b| {
            let first = b.text.lines().next().unwrap_or_default();
            let path = first
                .strip_prefix("# ")
                .and_then(|rest| rest.split([',', ' ']).next())
                .unwrap_or_else(|| panic!("README line {}: a YAML example starts with `# <path>`", b.line));
            (path.to_owned(), b.text)
        })
        .collect()
}

/// A project made of the README's examples and the files they refer to.
fn readme_project() -> Project {
    let examples = readme_yaml_examples();
    let paths: Vec<&str> = examples.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        ["evals/capitals.yaml", "targets.yaml"],
        "the README's YAML examples"
    );
    let copy = |rel: &str| std::fs::read_to_string(repo_root().join(rel)).expect("example file");
    let mut p = Project::new()
        .file("agent.py", &copy("examples/cli-agent/agent.py"))
        .file(
            "evals/judges/expected_city.py",
            &copy("examples/mock/judges/expected_city.py"),
        )
        .file("evals/notes.md", "# Notes\n\nFix the login bug.\n");
    for (path, text) in &examples {
        p = p.file(path, text);
    }
    p
}

#[test]
fn readme_yaml_examples_pass_validate() {
    let p = readme_project();
    let run = p.run(&["validate", "."]);
    run.code(0).stderr_has("2 file(s) checked, 0 invalid");
    assert!(!run.stderr.contains("warning:"), "{}", run.stderr);
}

#[test]
fn readme_cli_example_runs_from_another_directory() {
    let p = readme_project();
    // The eval file is in evals/, the agent beside targets.yaml: `cwd: .` makes it work.
    p.run(&["eval", "evals/capitals.yaml", "--out", "r.jsonl"]);
    let record = p.result("r.jsonl", "capital-of-france");
    assert!(record.get("error").is_none(), "the cli target answered: {record}");
    let answer = record["candidate_answer"].as_str().expect("answer");
    assert!(
        answer.contains("notes.md"),
        "the agent read the attached file: {answer}"
    );
}

#[test]
fn files_named_in_readme_commands_exist() {
    let text = std::fs::read_to_string(repo_root().join("README.md")).expect("README");
    for block in render(&text).fenced.iter().filter(|b| b.lang == "sh") {
        for word in block.text.split_whitespace() {
            if [".yaml", ".yml", ".jsonl"].iter().any(|e| word.ends_with(e)) {
                assert!(
                    Path::new(&repo_root()).join(word).is_file(),
                    "README line {}: {word} does not exist",
                    block.line
                );
            }
        }
    }
}
