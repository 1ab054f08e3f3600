//! `targets.yaml`: discovery and parsing into target definitions.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::diagnostics::{Diagnostic, Diagnostics, Fields, describe};
use super::node::{Node, NodeValue, Pos, parse_yaml};
use super::paths::Workspace;

/// The providers this version knows, for messages.
pub const KNOWN_PROVIDERS: &str = "openai, azure, anthropic, gemini, claude-code, codex, vscode, cli or mock";

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

/// The provider a target uses (`provider:`, case-insensitive, with aliases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    Mock,
    Cli,
    OpenAi,
    Azure,
    Anthropic,
    Gemini,
    ClaudeCode,
    Codex,
    VsCode,
    VsCodeInsiders,
}

impl ProviderKind {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "mock" => Self::Mock,
            "cli" => Self::Cli,
            "openai" => Self::OpenAi,
            "azure" | "azure-openai" => Self::Azure,
            "anthropic" => Self::Anthropic,
            "gemini" | "google" | "google-gemini" => Self::Gemini,
            "claude-code" | "claude" => Self::ClaudeCode,
            "codex" | "codex-cli" => Self::Codex,
            "vscode" => Self::VsCode,
            "vscode-insiders" => Self::VsCodeInsiders,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mock => "mock",
            Self::Cli => "cli",
            Self::OpenAi => "openai",
            Self::Azure => "azure",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::VsCode => "vscode",
            Self::VsCodeInsiders => "vscode-insiders",
        }
    }

    /// Agent providers get file references instead of file contents, and their requests are
    /// recorded as `agent_provider_request`.
    pub fn is_agent(self) -> bool {
        matches!(
            self,
            Self::ClaudeCode | Self::Codex | Self::VsCode | Self::VsCodeInsiders
        )
    }
}

/// One `targets:` entry, before its settings are resolved against the environment.
#[derive(Debug, Clone)]
pub struct TargetDef {
    pub name: String,
    pub provider: ProviderKind,
    pub judge_target: Option<String>,
    pub workers: Option<usize>,
    pub provider_batching: bool,
    /// The whole entry with keys converted to snake_case; provider settings are read from it.
    pub settings: Node,
    pub pos: Pos,
    pub file: Arc<Path>,
}

impl TargetDef {
    /// Directory of the file that declares the target: relative paths in its settings resolve
    /// against it (D11).
    pub fn base_dir(&self) -> &Path {
        match self.file.parent() {
            // `targets.yaml` named without a directory lives in the working directory.
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        }
    }
}

/// A target whose `provider` this version does not know. It does not make the file unusable
/// (a warning); only a run that uses the target fails.
#[derive(Debug, Clone, PartialEq)]
pub struct UnsupportedTarget {
    pub name: String,
    pub provider: String,
    /// Where `provider:` is written.
    pub pos: Pos,
}

/// A parsed targets file.
#[derive(Debug, Clone)]
pub struct TargetsFile {
    pub path: PathBuf,
    pub targets: Vec<TargetDef>,
    /// Targets with an unknown provider, kept so that using one names the real problem.
    pub unsupported: Vec<UnsupportedTarget>,
    pub diagnostics: Vec<Diagnostic>,
}

impl TargetsFile {
    pub fn get(&self, name: &str) -> Option<&TargetDef> {
        self.targets.iter().find(|t| t.name == name)
    }

    pub fn unsupported(&self, name: &str) -> Option<&UnsupportedTarget> {
        self.unsupported.iter().find(|t| t.name == name)
    }

    /// Every declared target name, in file order of each list.
    pub fn names(&self) -> Vec<String> {
        self.targets
            .iter()
            .map(|t| t.name.clone())
            .chain(self.unsupported.iter().map(|t| t.name.clone()))
            .collect()
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.severity == super::Severity::Error)
    }
}

/// Finds the targets file: `explicit` (a file, or a directory holding one), else the first hit
/// walking from `eval_dir` up to the repository root, then the working directory (D5).
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
    dirs.push(&ws.repo_root);
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
        unsupported: Vec::new(),
        diagnostics: Vec::new(),
    };
    if let Some(text) = super::source::read_text(path, "targets file", &mut diags) {
        match parse_yaml(&text) {
            Err(e) => diags.yaml_syntax(&e),
            Ok(root) => parse_root(&root, &file, &mut parsed, &mut diags),
        }
    }
    parsed.diagnostics = diags.into_vec();
    parsed
}

fn parse_root(root: &Node, file: &Arc<Path>, parsed: &mut TargetsFile, diags: &mut Diagnostics) {
    let Some(mut f) = Fields::of(root, "a targets file", diags) else {
        return;
    };
    let _ = f.take(&["$schema"]);
    let list = f.take(&["targets"]);
    f.warn_unknown("the targets file", &["$schema", "targets"], diags);
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
        let Some(entry) = parse_target(item, file, diags) else {
            continue;
        };
        let name = match &entry {
            Entry::Known(def) => &def.name,
            Entry::Unsupported(t) => &t.name,
        };
        if parsed.names().contains(name) {
            diags.error(
                item.pos,
                format!("target `{name}` is defined twice"),
                Some("give each target a unique name".to_owned()),
            );
            continue;
        }
        match entry {
            Entry::Known(def) => parsed.targets.push(def),
            Entry::Unsupported(t) => parsed.unsupported.push(t),
        }
    }
}

/// One parsed `targets:` entry.
enum Entry {
    Known(TargetDef),
    Unsupported(UnsupportedTarget),
}

fn parse_target(node: &Node, file: &Arc<Path>, diags: &mut Diagnostics) -> Option<Entry> {
    let settings = snake_case_keys(node);
    let mut f = Fields::of(&settings, "a target", diags)?;
    let name = f.required_string(&["name"], "target", diags)?;
    let provider_name = f.required_string(&["provider"], &format!("target `{name}`"), diags)?;
    let Some(provider) = ProviderKind::parse(&provider_name) else {
        let pos = f.take(&["provider"]).map_or(node.pos, |n| n.pos);
        diags.warn(
            pos,
            format!("target `{name}` has unknown provider `{provider_name}`; runs that use it will fail"),
            Some(format!("use {KNOWN_PROVIDERS}")),
        );
        return Some(Entry::Unsupported(UnsupportedTarget {
            name,
            provider: provider_name,
            pos,
        }));
    };
    let judge_target = f.string(&["judge_target"], diags);
    let workers = match f.take(&["workers"]) {
        None => None,
        Some(n) => match n.value {
            NodeValue::Int(w) if w >= 1 => Some(w as usize),
            _ => {
                diags.error(
                    n.pos,
                    format!("`workers` must be a whole number ≥ 1, found {}", describe(n)),
                    None,
                );
                return None;
            }
        },
    };
    let provider_batching = f.boolean(&["provider_batching"], diags).unwrap_or(false);
    Some(Entry::Known(TargetDef {
        name,
        provider,
        judge_target,
        workers,
        provider_batching,
        pos: node.pos,
        settings: settings.clone(),
        file: file.clone(),
    }))
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

/// `maxOutputTokens` → `max_output_tokens`; snake_case and other text are unchanged.
pub fn to_snake_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for (i, ch) in key.chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_conversion() {
        for (input, want) in [
            ("commandTemplate", "command_template"),
            ("timeout_seconds", "timeout_seconds"),
            ("maxOutputTokens", "max_output_tokens"),
            ("name", "name"),
        ] {
            assert_eq!(to_snake_case(input), want);
        }
    }

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
        assert_eq!(a.provider, ProviderKind::Mock);
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
    fn unknown_provider_is_a_warning_that_keeps_the_other_targets_usable() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("targets.yaml");
        std::fs::write(
            &path,
            "targets:\n  - name: a\n    provider: mock\n  - name: b\n    provider: warp-drive\n",
        )
        .expect("write");
        let file = load_targets_file(&path);
        assert!(!file.has_errors(), "{:?}", file.diagnostics);
        assert_eq!(file.names(), ["a", "b"]);
        assert_eq!(file.unsupported("b").map(|t| t.provider.as_str()), Some("warp-drive"));
        let text = file.diagnostics[0].to_string();
        assert!(
            text.contains(":5:15: warning: target `b` has unknown provider `warp-drive`"),
            "{text}"
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
