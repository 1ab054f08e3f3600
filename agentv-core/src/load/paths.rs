//! Where relative paths in eval files are looked for, and which files are guidelines.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::diagnostics::Diagnostics;
use super::node::{Node, parse_yaml};

/// Guideline patterns used when no `.agentv.yaml` sets `guideline_patterns` (D4).
pub const DEFAULT_GUIDELINE_PATTERNS: &[&str] = &[
    "**/*.instructions.md",
    "**/instructions/**",
    "**/*.prompt.md",
    "**/prompts/**",
];

/// The directories a run resolves paths against.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// Nearest ancestor of the working directory that holds `.git` (else the working directory).
    pub repo_root: PathBuf,
    pub cwd: PathBuf,
}

impl Workspace {
    /// Discovers the repository root from the process's working directory.
    pub fn discover() -> std::io::Result<Self> {
        let cwd = std::env::current_dir()?;
        Ok(Self::from_cwd(cwd))
    }

    pub fn from_cwd(cwd: PathBuf) -> Self {
        let repo_root = cwd
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(&cwd)
            .to_path_buf();
        Self { repo_root, cwd }
    }

    /// `dir`, then each ancestor up to the repository root (or the filesystem root when `dir`
    /// is outside the repository).
    pub fn ancestors_to_root<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = &'a Path> + 'a {
        let inside = dir.starts_with(&self.repo_root);
        let mut done = false;
        dir.ancestors().take_while(move |d| {
            if done {
                return false;
            }
            if inside && *d == self.repo_root {
                done = true;
            }
            true
        })
    }

    /// Search roots for files named in an eval file: its directory, the ancestors up to the
    /// repository root, the repository root, then the working directory (D1, reference 2.a).
    pub fn search_roots(&self, eval_dir: &Path) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = self.ancestors_to_root(eval_dir).map(Path::to_path_buf).collect();
        for extra in [&self.repo_root, &self.cwd] {
            if !roots.contains(extra) {
                roots.push(extra.clone());
            }
        }
        roots
    }

    /// Finds `value` (absolute, or relative to a search root). On failure returns every path
    /// tried, for the warning.
    pub fn resolve_file(&self, value: &str, eval_dir: &Path) -> Result<PathBuf, Vec<PathBuf>> {
        let candidate = Path::new(value);
        if candidate.is_absolute() {
            return if candidate.is_file() {
                Ok(candidate.to_path_buf())
            } else {
                Err(vec![candidate.to_path_buf()])
            };
        }
        let tried: Vec<PathBuf> = self
            .search_roots(eval_dir)
            .into_iter()
            .map(|r| r.join(candidate))
            .collect();
        match tried.iter().find(|p| p.is_file()) {
            Some(found) => Ok(normalize(found)),
            None => Err(tried),
        }
    }

    /// The path relative to the repository root with `/` separators, as guideline globs see it.
    pub fn repo_relative(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.repo_root).unwrap_or(path);
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }
}

/// `text` as a file-name part: ASCII letters, digits, `-` and `_` kept, anything else `_`.
pub fn file_name_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Removes `.` components and resolves `..` lexically, so paths in results read cleanly.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Decides which attached files are guidelines.
#[derive(Debug, Clone)]
pub struct GuidelineMatcher {
    set: GlobSet,
}

impl GuidelineMatcher {
    pub fn new(patterns: &[String], diags: &mut Diagnostics) -> Self {
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            match GlobBuilder::new(pattern).literal_separator(true).build() {
                Ok(glob) => {
                    builder.add(glob);
                }
                Err(e) => diags.warn(
                    Default::default(),
                    format!("invalid guideline pattern `{pattern}`: {e}"),
                    None,
                ),
            }
        }
        let set = builder.build().unwrap_or_else(|_| GlobSet::empty());
        Self { set }
    }

    pub fn is_guideline(&self, repo_relative: &str) -> bool {
        self.set.is_match(repo_relative)
    }

    /// Reads `guideline_patterns` from the nearest `.agentv.yaml` or `.agentv/config.yaml`
    /// between `eval_dir` and the repository root; the defaults apply when there is none.
    pub fn for_dir(ws: &Workspace, eval_dir: &Path, warnings: &mut Vec<super::Diagnostic>) -> Self {
        for dir in ws.ancestors_to_root(eval_dir) {
            for name in [
                ".agentv.yaml",
                ".agentv.yml",
                ".agentv/config.yaml",
                ".agentv/config.yml",
            ] {
                let path = dir.join(name);
                if let Ok(text) = std::fs::read_to_string(&path) {
                    let mut diags = Diagnostics::new(&path);
                    let patterns = read_patterns(&text, &mut diags);
                    let matcher = Self::new(&patterns.unwrap_or_else(default_patterns), &mut diags);
                    warnings.extend(diags.into_vec());
                    return matcher;
                }
            }
        }
        let mut diags = Diagnostics::new(Path::new("<defaults>"));
        Self::new(&default_patterns(), &mut diags)
    }
}

fn default_patterns() -> Vec<String> {
    DEFAULT_GUIDELINE_PATTERNS.iter().map(|p| (*p).to_owned()).collect()
}

fn read_patterns(text: &str, diags: &mut Diagnostics) -> Option<Vec<String>> {
    let root: Node = match parse_yaml(text) {
        Ok(root) => root,
        Err(e) => {
            diags.yaml_syntax(&e);
            return None;
        }
    };
    let list = root.get("guideline_patterns")?;
    let Some(items) = list.as_seq() else {
        diags.error(list.pos, "`guideline_patterns` must be a list of globs", None);
        return None;
    };
    Some(items.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_patterns_match_like_the_spec() {
        let mut diags = Diagnostics::new(Path::new("x"));
        let m = GuidelineMatcher::new(&default_patterns(), &mut diags);
        let cases = [
            ("docs/python.instructions.md", true),
            ("a/instructions/style.md", true),
            ("x.prompt.md", true),
            ("prompts/deep/a.txt", true),
            ("src/main.py", false),
            ("docs/instructions.txt", false),
        ];
        for (path, want) in cases {
            assert_eq!(m.is_guideline(path), want, "{path}");
        }
    }

    #[test]
    fn resolve_file_walks_the_search_roots() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".git")).expect("git");
        std::fs::create_dir_all(root.join("evals/sub")).expect("dirs");
        std::fs::write(root.join("shared.txt"), "s").expect("file");
        std::fs::write(root.join("evals/local.txt"), "l").expect("file");
        let ws = Workspace::from_cwd(root.to_path_buf());
        let eval_dir = root.join("evals/sub");
        assert_eq!(ws.resolve_file("shared.txt", &eval_dir), Ok(root.join("shared.txt")));
        assert_eq!(
            ws.resolve_file("local.txt", &eval_dir),
            Ok(root.join("evals/local.txt"))
        );
        let tried = ws.resolve_file("nope.txt", &eval_dir).expect_err("missing");
        assert_eq!(
            tried,
            vec![
                eval_dir.join("nope.txt"),
                root.join("evals/nope.txt"),
                root.join("nope.txt")
            ]
        );
    }
}
