//! Where a 4.x suite's cases come from (`agentv-4.md` §1.8): the `tests` list itself, with
//! `file://<path or glob>` items spliced in place, or `tests: <path>` naming a cases file (a YAML
//! list of cases, or JSONL) or a directory of `<case>/case.yaml`.
//!
//! Cases read from other files keep their own positions; their problems are reported against
//! those files ([`CaseFile`]).

use std::path::{Path, PathBuf};

use globset::GlobBuilder;
use walkdir::WalkDir;

use crate::config::interpolate::interpolate_env;
use crate::config::node::parse_yaml;
use crate::config::{Diagnostics, Node, NodeValue, Pos};
use crate::env::Env;

/// A case as written, and the file it is in (`None`: the eval file itself; else an index into
/// the case files).
pub struct CaseNode {
    pub node: Node,
    pub file: Option<usize>,
}

/// A file cases were read from, with the problems found in it.
pub struct CaseFile {
    pub path: PathBuf,
    pub diags: Diagnostics,
}

/// What reading the cases needs.
pub struct Source<'a> {
    pub eval_dir: &'a Path,
    /// For naming files in messages relative to the working directory.
    pub cwd: &'a Path,
    /// `${{ VAR }}` in case files (4.x); `None` leaves them as written.
    pub env: Option<&'a Env>,
}

/// The cases of `tests`, in order. Problems of the eval file go to `diags`, those of other
/// files to their [`CaseFile`].
pub fn cases(tests: &Node, src: &Source<'_>, diags: &mut Diagnostics, files: &mut Vec<CaseFile>) -> Vec<CaseNode> {
    match &tests.value {
        NodeValue::Seq(items) => {
            let mut out = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(text) => match text.strip_prefix("file://") {
                        Some(pattern) => out.extend(from_pattern(pattern, item.pos, src, diags, files)),
                        None => diags.warn(
                            item.pos,
                            "a text item in `tests` must be `file://<path or glob>`; it is ignored",
                            Some("write the case as a mapping with `id` and `input`".to_owned()),
                        ),
                    },
                    None => out.push(CaseNode {
                        node: item.clone(),
                        file: None,
                    }),
                }
            }
            out
        }
        NodeValue::Str(path) => {
            let full = src.eval_dir.join(path.strip_prefix("file://").unwrap_or(path));
            if full.is_dir() {
                from_directory(&full, tests.pos, src, diags, files)
            } else if full.is_file() {
                from_file(&full, src, files)
            } else {
                diags.error(
                    tests.pos,
                    format!("`tests` names `{path}`, which does not exist ({})", full.display()),
                    Some("give a cases file (.yaml, .jsonl) or a directory of `<case>/case.yaml`, relative to the eval file".to_owned()),
                );
                Vec::new()
            }
        }
        _ => {
            diags.error(
                tests.pos,
                format!("`tests` must be a list of cases or a path, found {}", tests.type_name()),
                Some("write `tests:` followed by `- id: ...` entries".to_owned()),
            );
            Vec::new()
        }
    }
}

/// The cases of the files a `file://` item names (a path or a glob, relative to the eval
/// file's directory; glob matches in name order).
fn from_pattern(
    pattern: &str,
    pos: Pos,
    src: &Source<'_>,
    diags: &mut Diagnostics,
    files: &mut Vec<CaseFile>,
) -> Vec<CaseNode> {
    let paths = if pattern.contains(['*', '?', '{', '[']) {
        match glob(pattern, src.eval_dir) {
            Ok(paths) => paths,
            Err(e) => {
                diags.error(pos, format!("invalid glob `{pattern}`: {}", e.kind()), None);
                return Vec::new();
            }
        }
    } else {
        vec![src.eval_dir.join(pattern)]
    };
    if paths.is_empty() {
        diags.error(
            pos,
            format!("`file://{pattern}` matches no file"),
            Some("paths are relative to the eval file's directory".to_owned()),
        );
    }
    let mut out = Vec::new();
    for path in paths {
        if path.is_file() {
            out.extend(from_file(&path, src, files));
        } else {
            diags.error(
                pos,
                format!("`file://{pattern}`: {} is not a file", path.display()),
                None,
            );
        }
    }
    out
}

/// Files under `dir` matching `pattern` (`*` stays within a directory), sorted; the error is a
/// pattern that is not a glob.
fn glob(pattern: &str, dir: &Path) -> Result<Vec<PathBuf>, globset::Error> {
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()?
        .compile_matcher();
    let prefix: PathBuf = Path::new(pattern)
        .components()
        .take_while(|c| !c.as_os_str().to_string_lossy().contains(['*', '?', '{', '[']))
        .collect();
    let mut found: Vec<PathBuf> = WalkDir::new(dir.join(&prefix))
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| e.path().strip_prefix(dir).is_ok_and(|rel| matcher.is_match(rel)))
        .map(|e| e.into_path())
        .collect();
    found.sort();
    Ok(found)
}

/// Each sub-directory of `dir` (in name order) holding `case.yaml` (or `case.yml`) is one case;
/// its `id` defaults to the directory's name.
fn from_directory(
    dir: &Path,
    pos: Pos,
    src: &Source<'_>,
    diags: &mut Diagnostics,
    files: &mut Vec<CaseFile>,
) -> Vec<CaseNode> {
    let mut subdirs: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect(),
        Err(e) => {
            diags.error(
                pos,
                format!("cannot read the cases directory {}: {e}", dir.display()),
                None,
            );
            return Vec::new();
        }
    };
    subdirs.sort();
    let mut out = Vec::new();
    for sub in subdirs {
        let Some(file) = ["case.yaml", "case.yml"]
            .iter()
            .map(|n| sub.join(n))
            .find(|p| p.is_file())
        else {
            diags.warn(
                pos,
                format!("{} holds no case.yaml; it is skipped", shown(&sub, src.cwd).display()),
                None,
            );
            continue;
        };
        let mut case_diags = Diagnostics::new(&shown(&file, src.cwd));
        let Some(mut node) = read_yaml(&file, src, &mut case_diags) else {
            files.push(CaseFile {
                path: file,
                diags: case_diags,
            });
            continue;
        };
        if node.as_map().is_some() && node.get("id").is_none() {
            let name = sub
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let NodeValue::Map(entries) = &mut node.value {
                let at = node.pos;
                entries.insert(
                    0,
                    (
                        Node::new(NodeValue::Str("id".into()), at),
                        Node::new(NodeValue::Str(name), at),
                    ),
                );
            }
        }
        // A `workspace/` directory beside `case.yaml` is the case's template
        // (`docs/workspaces.md#keys`).
        let template = sub.join("workspace");
        if template.is_dir()
            && node.get("workspace").is_none()
            && let NodeValue::Map(entries) = &mut node.value
        {
            let at = node.pos;
            let key = |text: &str| Node::new(NodeValue::Str(text.into()), at);
            let block = Node::new(
                NodeValue::Map(vec![(key("template"), key(&template.display().to_string()))]),
                at,
            );
            entries.push((key("workspace"), block));
        }
        files.push(CaseFile {
            path: file,
            diags: case_diags,
        });
        out.push(CaseNode {
            node,
            file: Some(files.len() - 1),
        });
    }
    out
}

/// The cases of one file: a YAML list of cases, or JSONL (one case per line).
fn from_file(path: &Path, src: &Source<'_>, files: &mut Vec<CaseFile>) -> Vec<CaseNode> {
    let mut diags = Diagnostics::new(&shown(path, src.cwd));
    let nodes = if path.extension().is_some_and(|e| e == "jsonl") {
        read_jsonl(path, src, &mut diags)
    } else {
        match read_yaml(path, src, &mut diags) {
            Some(Node {
                value: NodeValue::Seq(items),
                ..
            }) => items,
            Some(other) => {
                diags.error(
                    other.pos,
                    format!("a cases file must hold a list of cases, found {}", other.type_name()),
                    Some("write one `- id: ...` entry per case".to_owned()),
                );
                Vec::new()
            }
            None => Vec::new(),
        }
    };
    files.push(CaseFile {
        path: path.to_path_buf(),
        diags,
    });
    let index = files.len() - 1;
    nodes
        .into_iter()
        .map(|node| CaseNode {
            node,
            file: Some(index),
        })
        .collect()
}

fn read_yaml(path: &Path, src: &Source<'_>, diags: &mut Diagnostics) -> Option<Node> {
    let text = crate::config::source::read_text(path, "cases file", diags)?;
    let mut root = match parse_yaml(&text) {
        Ok(root) => root,
        Err(e) => {
            diags.yaml_syntax(&e);
            return None;
        }
    };
    interpolate(&mut root, src, diags);
    Some(root)
}

fn read_jsonl(path: &Path, src: &Source<'_>, diags: &mut Diagnostics) -> Vec<Node> {
    let text = match std::fs::read(path) {
        Ok(bytes) => crate::config::source::decode(&bytes, "cases file", diags),
        Err(e) => {
            diags.error(Pos::default(), format!("cannot read the cases file: {e}"), None);
            None
        }
    };
    let mut out = Vec::new();
    for (i, line) in text.unwrap_or_default().lines().enumerate() {
        let line_no = i as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        // Parsed, a line takes many times its size: one over the cap is not parsed at all.
        let limit = crate::report::max_line_bytes();
        if line.len() as u64 > limit {
            diags.error(
                Pos::new(line_no, 1),
                format!(
                    "this line is {}, over the {} one case may take; the line is skipped",
                    crate::report::size_text(line.len() as u64),
                    crate::report::size_text(limit)
                ),
                Some(format!(
                    "keep large inputs in files, or set {}=<MiB> to allow longer lines",
                    crate::report::MAX_LINE_ENV
                )),
            );
            continue;
        }
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(value) => {
                let mut node = Node::from_json(&value, Pos::new(line_no, 1));
                interpolate(&mut node, src, diags);
                out.push(node);
            }
            Err(e) => diags.error(
                Pos::new(line_no, e.column().max(1) as u64),
                format!("invalid JSON: {e}; the line is skipped"),
                Some("each line must be one JSON object".to_owned()),
            ),
        }
    }
    out
}

fn interpolate(node: &mut Node, src: &Source<'_>, diags: &mut Diagnostics) {
    if let Some(env) = src.env {
        for unset in interpolate_env(node, &|name| env.get(name)) {
            diags.warn(unset.pos, unset_message(&unset.name), None);
        }
    }
}

/// The warning for a `${{ NAME }}` whose variable is not set.
pub fn unset_message(name: &str) -> String {
    format!("`${{{{ {name} }}}}` is not set; it reads as empty text")
}

/// `path` relative to the working directory when it is inside it.
fn shown(path: &Path, cwd: &Path) -> PathBuf {
    path.strip_prefix(cwd)
        .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}
