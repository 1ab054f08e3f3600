//! `file_changes` (`docs/workspaces.md#file-changes`): the unified diff of a workspace against
//! its starting state, made by the git CLI as AgentV 4.x makes it, so the text is the same.
//!
//! Unlike AgentV 4.x, agentv never puts a `.git` into the workspace or commits in the user's
//! directory: one git directory per run, outside every workspace, holds the objects, and each
//! workspace has its own index file. A workspace copied from a template starts from the
//! template's index (made once per run): copies keep the template's sizes and modification
//! times, so git re-reads only the files the target touched (`core.checkStat=minimal`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::process::{self, ProcessSpec};

/// A starting state: the commit the diff is taken against, and the index that describes it.
#[derive(Debug, Clone)]
pub struct Baseline {
    pub commit: String,
    pub index: PathBuf,
}

/// The git directory of a run and the environment every call uses.
#[derive(Debug)]
pub struct Git {
    dir: PathBuf,
    init: tokio::sync::OnceCell<Result<(), String>>,
}

/// How long one git call may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(300);

/// Settings every call uses: stat checks that survive a copy, no compression (the objects live
/// as long as the run), and nothing from the user's configuration that would change the text.
const CONFIG: &[&str] = &[
    "-c",
    "core.checkStat=minimal",
    "-c",
    "core.trustctime=false",
    "-c",
    "core.compression=0",
    "-c",
    "core.looseCompression=0",
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "gc.auto=0",
    "-c",
    "user.name=agentv",
    "-c",
    "user.email=agentv@localhost",
    "-c",
    "commit.gpgsign=false",
];

impl Git {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            init: tokio::sync::OnceCell::new(),
        }
    }

    /// Runs git with `args` for `work_tree` and `index`; stdout on success.
    async fn run(&self, args: &[&str], work_tree: &Path, index: &Path) -> Result<Vec<u8>, String> {
        let env = [
            ("GIT_DIR".to_owned(), self.dir.display().to_string()),
            ("GIT_WORK_TREE".to_owned(), work_tree.display().to_string()),
            ("GIT_INDEX_FILE".to_owned(), index.display().to_string()),
        ];
        self.run_with(args, work_tree, &env).await
    }

    async fn run_with(&self, args: &[&str], cwd: &Path, extra: &[(String, String)]) -> Result<Vec<u8>, String> {
        let mut argv: Vec<&str> = CONFIG.to_vec();
        argv.extend_from_slice(args);
        let mut env = vec![
            ("GIT_CONFIG_NOSYSTEM".to_owned(), "1".to_owned()),
            ("GIT_CONFIG_GLOBAL".to_owned(), "/dev/null".to_owned()),
        ];
        env.extend_from_slice(extra);
        let done = run_git(&argv, cwd, &env, callers_git_vars()).await?;
        if done.status.success() {
            Ok(done.stdout)
        } else {
            Err(format!(
                "git {} failed with code {}: {}",
                args.first().copied().unwrap_or_default(),
                done.code_text(),
                String::from_utf8_lossy(&done.stderr).trim()
            ))
        }
    }

    async fn ensure_init(&self) -> Result<(), String> {
        self.init
            .get_or_init(|| async {
                std::fs::create_dir_all(&self.dir).map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
                let dir = self.dir.display().to_string();
                self.run_with(&["init", "--quiet", "--bare", &dir], &self.dir, &[])
                    .await
                    .map(|_| ())
            })
            .await
            .clone()
    }

    /// Records `work_tree` as a starting state. `start` is an index that already describes
    /// most of it (the template's): copied to `index` first, so only what differs is read.
    pub async fn snapshot(&self, work_tree: &Path, start: Option<&Path>, index: &Path) -> Result<Baseline, String> {
        self.ensure_init().await?;
        match start {
            Some(from) => std::fs::copy(from, index).map(|_| ()),
            None => match std::fs::remove_file(index) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
        }
        .map_err(|e| format!("cannot prepare the index {}: {e}", index.display()))?;
        self.run(&["add", "-A"], work_tree, index).await?;
        let tree = text(self.run(&["write-tree"], work_tree, index).await?);
        let commit = text(
            self.run(&["commit-tree", &tree, "-m", "agentv-baseline"], work_tree, index)
                .await?,
        );
        Ok(Baseline {
            commit,
            index: index.to_path_buf(),
        })
    }

    /// The diff of `work_tree` against `baseline`, its index at `index` (a copy of the
    /// baseline's, made when the workspace was). `None` when nothing changed. Repositories
    /// cloned inside the workspace show their own changes, as AgentV 4.x shows them.
    pub async fn changes(&self, work_tree: &Path, baseline: &Baseline, index: &Path) -> Result<Option<String>, String> {
        let nested = nested_repositories(work_tree);
        for repo in &nested {
            let _ = run_git(&["add", "-A"], repo, &[], callers_git_vars()).await;
        }
        self.run(&["add", "-A"], work_tree, index).await?;
        let diff = if nested.is_empty() {
            self.run(
                &["diff", "--cached", "--no-color", "--no-ext-diff", &baseline.commit],
                work_tree,
                index,
            )
            .await?
        } else {
            self.run(
                &[
                    "diff",
                    "--no-color",
                    "--no-ext-diff",
                    &baseline.commit,
                    "--submodule=diff",
                ],
                work_tree,
                index,
            )
            .await?
        };
        let text = String::from_utf8_lossy(&diff).trim().to_owned();
        Ok((!text.is_empty()).then_some(text))
    }

    /// Brings `work_tree` back to `baseline`: tracked files restored, new files removed
    /// (`strict` removes ignored ones too). Repositories inside it are reset on their own.
    pub async fn reset(&self, work_tree: &Path, baseline: &Baseline, index: &Path, strict: bool) -> Result<(), String> {
        self.run(&["reset", "--quiet", "--hard", &baseline.commit], work_tree, index)
            .await?;
        let clean = if strict { "-fdx" } else { "-fd" };
        self.run(&["clean", "--quiet", clean], work_tree, index).await?;
        Ok(())
    }
}

/// The caller's `GIT_*` variables (but `GIT_SSH_COMMAND`): removed from every git call, so a
/// `GIT_DIR` or `GIT_INDEX_FILE` of agentv's own environment never points git elsewhere.
/// Read once: the process environment does not change during a run.
pub(super) fn callers_git_vars() -> &'static [String] {
    static VARS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .filter(|k| k.starts_with("GIT_") && k != "GIT_SSH_COMMAND")
            .collect()
    });
    &VARS
}

/// Runs `git args` in `cwd` with `env` added, `remove` removed, no terminal prompt, and the
/// git timeout.
pub(super) async fn run_git(
    args: &[&str],
    cwd: &Path,
    env: &[(String, String)],
    remove: &[String],
) -> Result<process::Exited, String> {
    let mut argv: Vec<String> = vec!["git".into()];
    argv.extend(args.iter().map(|s| (*s).to_owned()));
    let mut env = env.to_vec();
    env.push(("GIT_TERMINAL_PROMPT".to_owned(), "0".to_owned()));
    let remove: Vec<&str> = remove.iter().map(String::as_str).collect();
    process::run(ProcessSpec {
        argv: &argv,
        cwd,
        env: &env,
        env_remove: &remove,
        stdin: None,
        timeout: GIT_TIMEOUT,
        tee: None,
        keep_children: false,
    })
    .await
    .map_err(|e| format!("git {}: {e}", args.join(" ")))
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).trim().to_owned()
}

/// Immediate subdirectories holding a `.git` directory (cloned repositories).
fn nested_repositories(work_tree: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(work_tree) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| p.file_name().is_none_or(|n| n != "node_modules") && p.join(".git").is_dir())
        .collect()
}

/// What a diff amounts to, for the record and the console.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiffStats {
    pub files_changed: u64,
    pub files_created: u64,
    pub files_deleted: u64,
    pub lines_added: u64,
    pub lines_removed: u64,
}

impl DiffStats {
    pub fn of(diff: &str) -> Self {
        let mut stats = Self::default();
        for line in diff.lines() {
            if line.starts_with("diff --git ") {
                stats.files_changed += 1;
            } else if line == "--- /dev/null" {
                stats.files_created += 1;
            } else if line == "+++ /dev/null" {
                stats.files_deleted += 1;
            } else if line.starts_with("+++ ") || line.starts_with("--- ") {
            } else if line.starts_with('+') {
                stats.lines_added += 1;
            } else if line.starts_with('-') {
                stats.lines_removed += 1;
            }
        }
        stats
    }
}

/// `diff` cut to at most `max` bytes at a line boundary, with a marker line saying how much was
/// left out; unchanged when it fits.
pub fn cap(diff: &str, max: usize) -> String {
    if diff.len() <= max {
        return diff.to_owned();
    }
    let mut end = max;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    let end = diff[..end].rfind('\n').unwrap_or(end);
    format!(
        "{}\n... file_changes truncated: {} of {} bytes shown",
        &diff[..end],
        end,
        diff.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_count_files_and_lines_but_not_headers() {
        let diff = "diff --git a/a.txt b/a.txt\nindex 1..2 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n-old\n+new\n+more\ndiff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+x\ndiff --git a/d.txt b/d.txt\ndeleted file mode 100644\n--- a/d.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n--- not a header\n";
        assert_eq!(
            DiffStats::of(diff),
            DiffStats {
                files_changed: 3,
                files_created: 1,
                files_deleted: 1,
                lines_added: 3,
                lines_removed: 1,
            }
        );
    }

    #[test]
    fn cap_cuts_at_a_line_and_says_so() {
        let diff = "line one\nline two\nline three";
        assert_eq!(cap(diff, 100), diff);
        let cut = cap(diff, 12);
        assert_eq!(cut, "line one\n... file_changes truncated: 8 of 28 bytes shown");
        assert_eq!(cap("ééé", 3), "é\n... file_changes truncated: 2 of 6 bytes shown");
    }

    #[tokio::test]
    async fn diffs_edits_new_deleted_renamed_and_binary_files_as_git_does() {
        if which::which("git").is_err() {
            assert!(std::env::var_os("CI").is_none(), "git is required under CI");
            eprintln!("skipped: git is not installed");
            return;
        }
        let t = tempfile::tempdir().expect("tmp");
        let ws = t.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).expect("dirs");
        std::fs::write(ws.join("src/a.txt"), "one\ntwo\n").expect("a");
        std::fs::write(ws.join("gone.txt"), "bye\n").expect("gone");
        std::fs::write(
            ws.join("moved.txt"),
            "a long enough line to be recognised as a rename\n",
        )
        .expect("moved");
        let git = Git::new(t.path().join("base.git"));
        let base = git
            .snapshot(&ws, None, &t.path().join("base.index"))
            .await
            .expect("baseline");
        let index = t.path().join("case.index");
        std::fs::copy(&base.index, &index).expect("index");
        assert_eq!(
            git.changes(&ws, &base, &index).await.expect("diff"),
            None,
            "nothing changed"
        );
        std::fs::write(ws.join("src/a.txt"), "one\nTWO\n").expect("edit");
        std::fs::remove_file(ws.join("gone.txt")).expect("delete");
        std::fs::rename(ws.join("moved.txt"), ws.join("renamed.txt")).expect("rename");
        std::fs::write(ws.join("new.txt"), "fresh\n").expect("new");
        std::fs::write(ws.join("blob.bin"), [0u8, 1, 2, 0, 255]).expect("binary");
        let diff = git.changes(&ws, &base, &index).await.expect("diff").expect("changed");
        for needle in [
            "diff --git a/src/a.txt b/src/a.txt",
            "-two\n+TWO",
            "deleted file mode 100644\nindex ",
            "+++ /dev/null",
            "rename from moved.txt\nrename to renamed.txt",
            "new file mode 100644",
            "--- /dev/null\n+++ b/new.txt",
            "Binary files /dev/null and b/blob.bin differ",
        ] {
            assert!(diff.contains(needle), "missing {needle:?} in:\n{diff}");
        }
        assert!(!ws.join(".git").exists(), "no .git in the workspace");
        git.reset(&ws, &base, &index, false).await.expect("reset");
        assert_eq!(std::fs::read_to_string(ws.join("src/a.txt")).expect("a"), "one\ntwo\n");
        assert!(ws.join("gone.txt").exists() && !ws.join("new.txt").exists());
    }
}
