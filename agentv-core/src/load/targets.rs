//! `targets.yaml`: discovery and parsing into target definitions. The provider of each target
//! is kept as written; the provider table is consulted when the target is built.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::keys::to_snake_case;
use crate::config::node::parse_yaml;
use crate::config::{Diagnostics, Fields, Key, KeyTable, Kind, Node, NodeValue};
use crate::paths::Workspace;
use crate::providers::{TARGET_KEYS, TargetDef, TargetsFile};

const FILE_KEYS: &[Key] = &[
    Key::new("$schema", Kind::Str, "A JSON Schema for editors; not read."),
    Key::new("targets", Kind::List(&Kind::Ref("target")), "The targets.").required(),
];

/// The top level of a targets file.
pub const TARGETS_FILE: KeyTable = KeyTable::new("the targets file", "agentv targets.", &[FILE_KEYS]);

/// Whether `path` is named like a targets file: `targets.yaml` / `targets.yml` (also under
/// `.agentv/`), or `<anything>.targets.yaml` / `.yml` (a file meant for `--targets`).
pub fn is_targets_file_name(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let stem = name
        .strip_suffix(".yaml")
        .or_else(|| name.strip_suffix(".yml"))
        .unwrap_or_default();
    stem == "targets" || stem.ends_with(".targets")
}

/// Names a targets file may have, in the order they are tried in each directory.
pub const TARGET_FILE_NAMES: &[&str] = &[
    "targets.yaml",
    "targets.yml",
    ".agentv/targets.yaml",
    ".agentv/targets.yml",
];

/// Finds the targets file: `explicit` (a file, or a directory holding one), else the first hit
/// walking from `eval_dir` up to the repository root (every ancestor outside a repository), then
/// the working directory
/// (`docs/architecture.md#targets-files`).
pub fn find_targets_file(explicit: Option<&Path>, eval_dir: &Path, ws: &Workspace) -> Result<PathBuf, Vec<PathBuf>> {
    if let Some(path) = explicit {
        let path = ws.cwd.join(path);
        if path.is_file() {
            return Ok(path);
        }
        let tried: Vec<PathBuf> = TARGET_FILE_NAMES.iter().map(|n| path.join(n)).collect();
        return tried
            .iter()
            .find(|p| p.is_file())
            .cloned()
            .ok_or(if path.is_dir() { tried } else { vec![path] });
    }
    let mut dirs: Vec<&Path> = ws.ancestors_to_root(eval_dir).collect();
    dirs.push(&ws.cwd);
    let mut tried = Vec::new();
    for dir in dirs {
        for name in TARGET_FILE_NAMES {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
            if !tried.contains(&candidate) {
                tried.push(candidate);
            }
        }
    }
    Err(tried)
}

/// Parses a targets file; problems become diagnostics and bad entries are left out.
pub fn load_targets_file(path: &Path) -> TargetsFile {
    let mut diags = Diagnostics::new(path);
    let file: Arc<Path> = Arc::from(path);
    let mut parsed = TargetsFile {
        path: path.to_path_buf(),
        targets: Vec::new(),
        diagnostics: Vec::new(),
        referenced_vars: Vec::new(),
        grading_only: Vec::new(),
    };
    if let Some(text) = crate::config::source::read_text(path, "targets file", &mut diags) {
        let _ = crate::config::interpolate::substitute_env(&text, |var| {
            parsed.referenced_vars.push(var.to_owned());
            None
        });
        match parse_yaml(&text) {
            Err(e) => diags.yaml_syntax(&e),
            Ok(root) => parse_root(&root, &file, &mut parsed, &mut diags),
        }
    }
    parsed.diagnostics = diags.into_vec();
    parsed
}

fn parse_root(root: &Node, file: &Arc<Path>, parsed: &mut TargetsFile, diags: &mut Diagnostics) {
    let Some(mut f) = Fields::of(root, &TARGETS_FILE, diags) else {
        return;
    };
    let _ = f.take("$schema");
    let list = f.take("targets");
    f.warn_unknown(diags);
    let Some(list) = list else {
        diags.error(
            root.pos,
            "targets file is missing the `targets` list",
            Some("add `targets: [{name: default, provider: mock}]`".to_owned()),
        );
        return;
    };
    let Some(items) = list.as_seq() else {
        diags.error(
            list.pos,
            format!("`targets` must be a list, found {}", list.type_name()),
            None,
        );
        return;
    };
    for item in items {
        let Some(def) = parse_target(item, file, diags) else {
            continue;
        };
        if parsed.names().contains(&def.name) {
            diags.error(
                item.pos,
                format!("target `{}` is defined twice", def.name),
                Some("give each target a unique name".to_owned()),
            );
            continue;
        }
        parsed.targets.push(def);
    }
}

/// One `targets:` entry: the keys every target has (its provider's own keys are read when it
/// is built).
fn parse_target(node: &Node, file: &Arc<Path>, diags: &mut Diagnostics) -> Option<TargetDef> {
    let settings = snake_case_keys(node);
    let mut f = Fields::of(&settings, &TARGET_KEYS, diags)?;
    let name = f.required_string("name", "target", diags)?;
    let use_target = f.take("use_target").map(|n| n.pos).zip(f.string("use_target", diags));
    let provider = match (&use_target, f.take("provider")) {
        (Some(_), None) => String::new(),
        _ => f.required_string("provider", &format!("target `{name}`"), diags)?,
    };
    let use_target = use_target.map(|(pos, text)| (text.trim().to_owned(), pos));
    let provider_pos = f.take("provider").map_or(node.pos, |n| n.pos);
    let judge_target = f.string("judge_target", diags);
    let before = diags.error_count();
    let workers = f.integer("workers", diags).map(|w| w as usize);
    if diags.error_count() > before {
        return None;
    }
    // `batch: true` asks for the provider's batch API; both keys batch the target's cases.
    let batch = f.boolean("batch", diags).unwrap_or(false);
    let provider_batching = f.boolean("provider_batching", diags).unwrap_or(false) || batch;
    Some(TargetDef {
        name,
        provider,
        provider_pos,
        use_target,
        judge_target,
        workers,
        provider_batching,
        pos: node.pos,
        settings: settings.clone(),
        file: file.clone(),
        source: diags.source(),
    })
}

/// The same mapping with camelCase keys turned into snake_case (`commandTemplate` →
/// `command_template`); nested values are user data and stay as written.
fn snake_case_keys(node: &Node) -> Node {
    match &node.value {
        NodeValue::Map(entries) => Node::new(
            NodeValue::Map(
                entries
                    .iter()
                    .map(|(k, v)| {
                        let key = match &k.value {
                            NodeValue::Str(s) => Node::new(NodeValue::Str(to_snake_case(s)), k.pos),
                            _ => k.clone(),
                        };
                        let value = if key.as_str() == Some("healthcheck") {
                            snake_case_keys(v)
                        } else {
                            v.clone()
                        };
                        (key, value)
                    })
                    .collect(),
            ),
            node.pos,
        ),
        _ => node.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets_and_reports_bad_entries() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("targets.yaml");
        std::fs::write(
            &path,
            "targets:\n  - name: a\n    provider: MOCK\n    judgeTarget: b\n    workers: 4\n  - name: a\n    provider: mock\n",
        )
        .expect("write");
        let file = load_targets_file(&path);
        assert_eq!(file.names(), ["a"]);
        let a = file.get("a").expect("a");
        assert_eq!(a.provider, "MOCK", "the provider is kept as written");
        assert_eq!(a.judge_target.as_deref(), Some("b"));
        assert_eq!(a.workers, Some(4));
        let errors: Vec<String> = file.diagnostics.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].contains(":6:5: error: target `a` is defined twice"),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn targets_file_names() {
        for (path, want) in [
            ("targets.yaml", true),
            ("a/targets.yml", true),
            (".agentv/targets.yaml", true),
            ("openai.targets.yaml", true),
            ("foo.targets.yml", true),
            ("mytargets.yaml", false),
            ("targets.jsonl", false),
            ("evals/capitals.yaml", false),
        ] {
            assert_eq!(is_targets_file_name(Path::new(path)), want, "{path}");
        }
    }

    #[test]
    fn a_targets_file_named_without_a_directory_resolves_against_the_working_directory() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("targets.yaml");
        std::fs::write(&path, "targets:\n  - {name: a, provider: mock}\n").expect("write");
        let mut file = load_targets_file(&path);
        let mut def = file.targets.remove(0);
        def.file = Arc::from(Path::new("targets.yaml"));
        assert_eq!(def.base_dir(), Path::new("."));
    }

    #[test]
    fn discovery_walks_up_then_cwd() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".git")).expect("git");
        std::fs::create_dir_all(root.join("a/b/.agentv")).expect("dirs");
        std::fs::write(root.join("a/targets.yml"), "targets: []").expect("write");
        let ws = Workspace::from_cwd(root.to_path_buf());
        assert_eq!(
            find_targets_file(None, &root.join("a/b"), &ws),
            Ok(root.join("a/targets.yml"))
        );
        std::fs::write(root.join("a/b/.agentv/targets.yaml"), "targets: []").expect("write");
        assert_eq!(
            find_targets_file(None, &root.join("a/b"), &ws),
            Ok(root.join("a/b/.agentv/targets.yaml"))
        );
        assert!(find_targets_file(Some(Path::new("missing.yaml")), root, &ws).is_err());
    }
}
