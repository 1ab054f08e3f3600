//! Where relative paths are looked for (the workspace's search roots), lexical normalisation,
//! and file names made from ids.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

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

    /// `dir`, then each ancestor up to the root of the repository `dir` is in (the nearest
    /// that holds `.git`, never above the user's home); a `dir` in no repository walks every
    /// ancestor up to the filesystem root, so a project that is not yet a repository still finds
    /// `../targets.yaml` (`docs/architecture.md#targets-files`).
    pub fn ancestors_to_root<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = &'a Path> + 'a {
        let root = repository_of(dir, home().as_deref());
        let mut done = false;
        dir.ancestors().take_while(move |d| {
            if done {
                return false;
            }
            done = root.is_some_and(|root| *d == root);
            true
        })
    }

    /// Why a walk up from `dir` ([`Workspace::ancestors_to_root`]) stops where it does, for
    /// messages that list what was searched.
    pub fn search_end(dir: &Path) -> String {
        match repository_of(dir, home().as_deref()) {
            Some(root) => format!(
                "the search stops at the repository root {} (it holds .git)",
                root.display()
            ),
            None => format!(
                "{} is in no git repository, so every ancestor up to {} was searched",
                dir.display(),
                dir.ancestors().last().unwrap_or(dir).display()
            ),
        }
    }

    /// Search roots for files named in an eval file: its directory, its ancestors up to the
    /// repository root, the working directory's repository root, then the working directory
    /// (`docs/architecture.md#file-resolution`).
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

/// The user's home directory, when set.
fn home() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

/// The root of the repository holding `dir`: its nearest ancestor with `.git`, looked for no
/// higher than `home` (a repository above the home directory is not the user's project).
fn repository_of<'a>(dir: &'a Path, home: Option<&Path>) -> Option<&'a Path> {
    for d in dir.ancestors() {
        if d.join(".git").exists() {
            return Some(d);
        }
        if Some(d) == home {
            return None;
        }
    }
    None
}

/// A path written in a target's settings (`cwd`, a healthcheck's `cwd`, a log directory). A
/// relative one resolves against the directory of the eval file the target runs for, as AgentV
/// 2.1 and 4.42.4 resolve it (`docs/architecture.md#relative-paths`): one targets file serves
/// suites in many directories, so it is kept as written until a case runs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct TargetPath(PathBuf);

impl TargetPath {
    pub fn new(written: impl Into<PathBuf>) -> Self {
        Self(written.into())
    }

    /// The path for a suite whose eval file is in `eval_dir` (the working directory when
    /// unknown).
    pub fn resolve(&self, eval_dir: Option<&Path>) -> PathBuf {
        if self.0.is_absolute() {
            return normalize(&self.0);
        }
        let base = eval_dir.unwrap_or(Path::new("."));
        let path = normalize(&base.join(&self.0));
        if path.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            path
        }
    }

    pub fn is_absolute(&self) -> bool {
        self.0.is_absolute()
    }
}

/// The directory a target's command runs in: its `cwd` setting resolved against the eval
/// file's directory, else that directory itself (`docs/architecture.md#relative-paths`). The one
/// place this is decided; a case's workspace, when it has one, comes before it.
pub fn target_cwd(setting: Option<&TargetPath>, eval_dir: Option<&Path>) -> PathBuf {
    match setting {
        Some(path) => path.resolve(eval_dir),
        None => eval_dir.map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    }
}

/// Longest id kept unchanged as a file name.
const PLAIN_MAX: usize = 64;
/// Longest readable part of a file name made from an id that needs a hash.
const PREFIX_MAX: usize = 48;

/// `text` (an eval id) as a file-name part, unique per text and at most 65 bytes
/// (`docs/architecture.md#case-ids`).
///
/// Ids made of lowercase ASCII letters, digits, `-` and `_`, up to 64 bytes, are kept as they are,
/// so `.agentv/prompts/<eval_id>-<attempt>.json` reads as written (`docs/architecture.md#outputs`).
/// Any other id becomes a readable prefix (other characters replaced by `_`, at most 48 bytes), a
/// `.` and 16 hex digits of the SHA-256 of the whole id. A kept id never holds a `.`, so it cannot
/// collide with a hashed one; ids that differ only in characters a file name cannot hold (`a/b`,
/// `a.b`) or only in letter case (which some file systems ignore) get different hashes; and a very
/// long id cannot exceed the file system's name limit.
pub fn file_name_safe(text: &str) -> String {
    let plain = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_';
    if !text.is_empty() && text.len() <= PLAIN_MAX && text.bytes().all(plain) {
        return text.to_owned();
    }
    let mut prefix: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(PREFIX_MAX)
        .collect();
    if prefix.is_empty() {
        prefix.push_str("id");
    }
    let digest = Sha256::digest(text.as_bytes());
    let hash = hex::encode(&digest[..8]);
    format!("{prefix}.{hash}")
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

/// Puts a finished temporary output file at `path` the way a plain write would. A regular file (or a
/// new path) is replaced by an atomic rename; a symlink is written through to the file it names,
/// and a device, FIFO or other node is written into, since renaming over it would replace the
/// node itself (`report --html /dev/stdout` must not delete `/dev/stdout`).
pub(crate) fn persist(out: tempfile::NamedTempFile, path: &std::path::Path) -> std::io::Result<()> {
    let is_plain = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta.file_type().is_file(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(e),
    };
    if is_plain {
        return out.persist(path).map(drop).map_err(|e| e.error);
    }
    let mut from = out.reopen()?;
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    std::io::copy(&mut from, &mut to)?;
    std::io::Write::flush(&mut to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_from_ids_are_unique_and_bounded() {
        let ids = [
            "a/b".to_owned(),
            "a_b".to_owned(),
            "a.b".to_owned(),
            "a b".to_owned(),
            "A_b".to_owned(),
            "x".repeat(10_000),
            format!("{}y", "x".repeat(9_999)),
            "日本".to_owned(),
            String::new(),
            "..".to_owned(),
        ];
        let names: Vec<String> = ids.iter().map(|id| file_name_safe(id)).collect();
        for (id, name) in ids.iter().zip(&names) {
            assert!(name.len() <= 65, "{name}");
            assert!(!name.is_empty() && !name.starts_with('.'), "{name:?}");
            assert!(
                name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
                "{name}"
            );
            let others = names.iter().filter(|n| *n == name).count();
            assert_eq!(others, 1, "{id:?} shares the file name {name}");
        }
        assert_eq!(file_name_safe("case-1_b"), "case-1_b", "plain ids are kept");
        assert!(file_name_safe("a/b").starts_with("a_b."), "readable prefix");
    }

    #[test]
    fn ancestors_stop_at_the_repository_root_or_walk_to_the_filesystem_root() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        std::fs::create_dir_all(root.join("repo/.git")).expect("git");
        std::fs::create_dir_all(root.join("repo/a/b")).expect("dirs");
        std::fs::create_dir_all(root.join("loose/a")).expect("dirs");
        // The working directory is elsewhere; only the directory's own repository counts.
        let ws = Workspace::from_cwd(root.join("loose"));
        let walked = |dir: &Path| -> Vec<PathBuf> { ws.ancestors_to_root(dir).map(Path::to_path_buf).collect() };
        assert_eq!(
            walked(&root.join("repo/a/b")),
            [root.join("repo/a/b"), root.join("repo/a"), root.join("repo")]
        );
        let loose: Vec<PathBuf> = root.join("loose/a").ancestors().map(Path::to_path_buf).collect();
        assert_eq!(
            walked(&root.join("loose/a")),
            loose,
            "outside a repository: every ancestor"
        );
        assert!(Workspace::search_end(&root.join("repo/a")).contains("stops at the repository root"));
        assert!(
            Workspace::search_end(&root.join("loose/a")).contains("is in no git repository, so every ancestor up to /")
        );
    }

    #[test]
    fn the_repository_search_never_goes_above_home() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".git")).expect("git above home");
        std::fs::create_dir_all(root.join("home/me/proj/.git")).expect("git");
        std::fs::create_dir_all(root.join("home/me/proj/a")).expect("dirs");
        std::fs::create_dir_all(root.join("home/me/loose")).expect("dirs");
        let home = root.join("home/me");
        let cases = [
            (root.join("home/me/proj/a"), Some(root.join("home/me/proj"))),
            (root.join("home/me/loose"), None),
            (home.clone(), None),
            (root.join("home"), Some(root.to_path_buf())),
        ];
        for (dir, want) in cases {
            assert_eq!(repository_of(&dir, Some(&home)), want.as_deref(), "{}", dir.display());
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
