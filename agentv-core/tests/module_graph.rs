//! The top-level modules of `agentv-core` depend on each other one way: this test reads every
//! `src/**/*.rs`, builds the graph of top-level modules from the `crate::…` paths each one
//! uses, and fails on a cycle, listing it. See `docs/architecture.md#modules`.
//!
//! Test modules are left out (from a file's first `#[cfg(test)]` to its end, where this code
//! base keeps them): a test may use any module to build its fixtures.
//!
//! `cargo test -p agentv-core --test module_graph -- --nocapture` prints the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The top-level module a source file belongs to (`providers` for `src/providers/cli.rs`),
/// `None` for `lib.rs`.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
    match first.strip_suffix(".rs") {
        Some("lib") => None,
        Some(stem) => Some(stem.to_owned()),
        None => Some(first),
    }
}

/// The code of a file that counts: without its test modules and without `//` comment lines
/// (doc comments name modules without depending on them).
fn code_of(text: &str) -> String {
    text.lines()
        .take_while(|line| line.trim() != "#[cfg(test)]")
        .map(|line| if line.trim_start().starts_with("//") { "" } else { line })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first identifier of `text` (`load` in `load::keys::SUITE`).
fn ident(text: &str) -> Option<String> {
    let name: String = text
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The items of the brace group that starts `text` (`{a, b::{c, d}, e}` → `a`, `b`, `e`).
fn group_items(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut start = 1;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    items.extend(ident(&text[start..i]));
                    break;
                }
            }
            ',' if depth == 1 => {
                items.extend(ident(&text[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    items
}

/// The top-level modules `text` names through `crate::` paths.
fn dependencies(text: &str) -> BTreeSet<String> {
    let text = code_of(text);
    let mut deps = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        if text[..at].ends_with('$') {
            continue;
        }
        let rest = &text[at + "crate::".len()..];
        if rest.starts_with('{') {
            deps.extend(group_items(rest));
        } else {
            deps.extend(ident(rest));
        }
    }
    deps
}

fn source_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(source_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

fn graph(src: &Path) -> Graph {
    let mut graph = Graph::new();
    for file in source_files(src) {
        let Some(top) = top_module(src, &file) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("readable source");
        let deps = graph.entry(top.clone()).or_default();
        deps.extend(dependencies(&text).into_iter().filter(|d| *d != top));
    }
    // Only modules of the crate (a path such as `crate::foo!` of a macro is not one).
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for deps in graph.values_mut() {
        deps.retain(|d| modules.contains(d));
    }
    graph
}

/// Every elementary cycle through the graph's strongly connected parts, each listed once,
/// starting at its smallest module.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    fn walk(graph: &Graph, start: &str, node: &str, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        for next in graph.get(node).into_iter().flatten() {
            if next == start {
                let mut cycle = path.clone();
                cycle.push(start.to_owned());
                out.push(cycle);
            } else if next.as_str() > start && !path.contains(next) {
                path.push(next.clone());
                walk(graph, start, next, path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    for start in graph.keys() {
        walk(graph, start, start, &mut vec![start.clone()], &mut out);
    }
    out
}

fn render(graph: &Graph) -> String {
    graph
        .iter()
        .map(|(module, deps)| {
            let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
            format!(
                "{module} -> {}",
                if deps.is_empty() {
                    "(nothing)".to_owned()
                } else {
                    deps.join(", ")
                }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn top_level_modules_have_no_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph(&src);
    println!("{}", render(&graph));
    let found = cycles(&graph);
    let listed: Vec<String> = found.iter().map(|c| c.join(" -> ")).collect();
    assert!(
        found.is_empty(),
        "the modules of agentv-core depend on each other in a cycle:\n  {}\n\ngraph:\n{}",
        listed.join("\n  "),
        render(&graph)
    );
}

#[test]
fn paths_are_read_from_uses_groups_and_expressions() {
    let text = "use crate::config::{Fields, Key};\n// crate::commented\nuse crate::{\n    load::{LoadedSuite, keys},\n    model,\n};\nlet x = crate::paths::normalize(p);\nmacro_rules! m { () => { $crate::skipped } }\n#[cfg(test)]\nmod tests {\n    use crate::run::Job;\n}\n";
    let deps: Vec<String> = dependencies(text).into_iter().collect();
    assert_eq!(deps, ["config", "load", "model", "paths"]);
}

#[test]
fn a_cycle_is_found_and_listed() {
    let mut graph = Graph::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "d2")] {
        graph.entry(from.to_owned()).or_default().insert(to.to_owned());
        graph.entry(to.to_owned()).or_default();
    }
    let listed: Vec<String> = cycles(&graph).iter().map(|c| c.join(" -> ")).collect();
    assert_eq!(listed, ["a -> b -> c -> a"]);
}

/// The module table of `docs/architecture.md#modules`: each row's modules (first cell) and the
/// modules it says they use (the names in backticks of the last cell outside parentheses;
/// "nothing" is none).
fn documented(doc: &str) -> Graph {
    let backticked = |cell: &str| -> Vec<String> {
        let mut depth = 0;
        let outside: String = cell
            .chars()
            .filter(|c| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                depth == 0 && *c != ')'
            })
            .collect();
        outside.split('`').skip(1).step_by(2).map(str::to_owned).collect()
    };
    let mut table = Graph::new();
    let rows = doc
        .lines()
        .skip_while(|l| !l.starts_with("| module |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'));
    for row in rows {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").collect();
        let uses: BTreeSet<String> = backticked(cells.last().copied().unwrap_or_default())
            .into_iter()
            .collect();
        for module in backticked(cells[0]) {
            assert!(
                table.insert(module.clone(), uses.clone()).is_none(),
                "`{module}` has two rows in the module table"
            );
        }
    }
    table
}

#[test]
fn the_module_table_of_the_architecture_doc_is_the_module_graph() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("../docs/architecture.md")).expect("docs/architecture.md");
    let table = documented(&doc);
    let graph = graph(&root.join("src"));
    let mut wrong = Vec::new();
    for (module, deps) in &graph {
        match table.get(module) {
            None => wrong.push(format!("`{module}` has no row (it uses {deps:?})")),
            Some(said) if said != deps => wrong.push(format!(
                "`{module}`: the table says it uses {said:?}, the code uses {deps:?}"
            )),
            Some(_) => {}
        }
    }
    wrong.extend(
        table
            .keys()
            .filter(|m| !graph.contains_key(*m))
            .map(|m| format!("`{m}` has a row but is no module of agentv-core")),
    );
    assert!(
        wrong.is_empty(),
        "docs/architecture.md#modules does not match the code:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn the_module_table_is_read_from_its_cells() {
    let doc = "| module | what it is | uses |\n|---|---|---|\n| `a` | the `b`-less one | nothing |\n| `c`, `d` | two | `a` (for `x`), `b` |\n\nafter\n| `e` | not in the table | `a` |\n";
    let table = documented(doc);
    let rendered: Vec<String> = table.iter().map(|(m, d)| format!("{m}: {d:?}")).collect();
    assert_eq!(rendered, ["a: {}", "c: {\"a\", \"b\"}", "d: {\"a\", \"b\"}"]);
}

/// The package name of a `Cargo.toml` (the `name` of its `[package]` table).
fn package_name(manifest: &str) -> Option<String> {
    let package = &manifest[manifest.find("[package]")?..];
    let line = package.lines().find(|l| l.starts_with("name = "))?;
    Some(line.trim_start_matches("name = ").trim_matches('"').to_owned())
}

#[test]
fn the_architecture_doc_names_every_crate_of_the_workspace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let workspace = read(&root.join("Cargo.toml"));
    let members = &workspace[workspace.find("members = [").expect("members")..];
    let members = &members[..members.find(']').expect("the end of members")];
    let mut crates: Vec<String> = package_name(&workspace).into_iter().collect();
    for member in members.split('"').skip(1).step_by(2) {
        crates.extend(package_name(&read(&root.join(member).join("Cargo.toml"))));
    }
    assert!(crates.len() >= 7, "{crates:?}");
    let doc = read(&root.join("docs/architecture.md"));
    let modules = &doc[doc.find("## Modules").expect("## Modules")..];
    let modules = &modules[..modules.find("| module |").expect("the module table")];
    let words = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    let count = format!(
        "The workspace has {} crates",
        words.get(crates.len()).copied().unwrap_or("many")
    );
    assert!(
        modules.contains(&count),
        "docs/architecture.md#modules should say {count:?}"
    );
    let missing: Vec<&String> = crates.iter().filter(|c| !modules.contains(&format!("`{c}`"))).collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md#modules does not describe {missing:?}"
    );
}
