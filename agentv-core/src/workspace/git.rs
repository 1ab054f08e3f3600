//! `file_changes` (`docs/workspaces.md#file-changes`): the unified diff of a workspace against
//! its starting state, made by the git CLI as AgentV 4.x makes it, so the text is the same.
//!
//! Unlike AgentV 4.x, agentv never puts a `.git` into the workspace or commits in the user's
//! directory: one git directory per run, outside every workspace, holds the objects, and each
//! workspace has its own index file. A workspace copied from a template starts from the
//! template's index (made once per run): copies keep the template's sizes and modification
//! times, so git re-reads only the files the target touched (`core.checkStat=minimal`).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::changed::Walk;
use crate::process::{self, ProcessSpec};

/// A starting state: the commit the diff is taken against, and the index that describes it.
/// Why a git call of `file_changes` or a workspace reset failed (`docs/workspaces.md#file-changes`).
/// Clone: a run's git directory is made once and every workspace sees the same outcome.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GitError {
    /// git did not run to an exit status (it is not installed, or it hung past the timeout).
    #[error("git {args}: {message}")]
    Run { args: String, message: String },
    /// git exited with a failure status; `stderr` is its own explanation.
    #[error("git {args} failed with code {code}: {stderr}")]
    Failed { args: String, code: String, stderr: String },
    /// A file of agentv's own beside git (the run's git directory, an index) could not be
    /// made, copied or removed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::sync::Arc<std::io::Error>,
    },
}

impl GitError {
    /// git's failed exit, with `args` as the message shows them.
    pub(super) fn failed(args: String, done: &process::Exited) -> Self {
        Self::Failed {
            args,
            code: done.code_text(),
            stderr: String::from_utf8_lossy(&done.stderr).trim().to_owned(),
        }
    }

    /// An I/O error on `path` while doing `what`.
    pub(super) fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| Self::Io {
            what,
            path,
            source: std::sync::Arc::new(source),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Baseline {
    pub commit: String,
    pub index: PathBuf,
}

/// The git directory of a run and the environment every call uses.
#[derive(Debug)]
pub struct Git {
    dir: PathBuf,
    init: tokio::sync::OnceCell<Result<(), GitError>>,
    /// [`Git::excludes_outside`], once known.
    outside: std::sync::OnceLock<bool>,
}

/// What [`Git::changes_among`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Among {
    /// The diff (`None`: nothing changed).
    Diff(Option<String>),
    /// The candidates cannot decide it: take the diff of the whole tree.
    WholeTree,
}

/// Most candidate paths given to git on one command line, and their bytes.
const MAX_PATHS: usize = 4096;
const MAX_PATH_BYTES: usize = 512 * 1024;

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
            outside: std::sync::OnceLock::new(),
        }
    }

    /// Runs git with `args` for `work_tree` and `index`; stdout on success. Pathspecs are
    /// literal: a file name holding `*` or `:` names that file.
    async fn run(&self, args: &[&str], work_tree: &Path, index: &Path) -> Result<Vec<u8>, GitError> {
        self.run_input(args, work_tree, index, None).await
    }

    async fn run_input(
        &self,
        args: &[&str],
        work_tree: &Path,
        index: &Path,
        stdin: Option<&[u8]>,
    ) -> Result<Vec<u8>, GitError> {
        let env = [
            ("GIT_DIR".to_owned(), self.dir.display().to_string()),
            ("GIT_WORK_TREE".to_owned(), work_tree.display().to_string()),
            ("GIT_INDEX_FILE".to_owned(), index.display().to_string()),
            ("GIT_LITERAL_PATHSPECS".to_owned(), "1".to_owned()),
        ];
        self.run_with(args, work_tree, &env, stdin).await
    }

    async fn run_with(
        &self,
        args: &[&str],
        cwd: &Path,
        extra: &[(String, String)],
        stdin: Option<&[u8]>,
    ) -> Result<Vec<u8>, GitError> {
        let mut argv: Vec<&str> = CONFIG.to_vec();
        argv.extend_from_slice(args);
        let mut env = vec![
            ("GIT_CONFIG_NOSYSTEM".to_owned(), "1".to_owned()),
            ("GIT_CONFIG_GLOBAL".to_owned(), "/dev/null".to_owned()),
        ];
        env.extend_from_slice(extra);
        let done = run_git_input(&argv, cwd, &env, callers_git_vars(), stdin).await?;
        if done.status.success() {
            Ok(done.stdout)
        } else {
            Err(GitError::failed(
                args.first().copied().unwrap_or_default().to_owned(),
                &done,
            ))
        }
    }

    async fn ensure_init(&self) -> Result<(), GitError> {
        self.init
            .get_or_init(|| async {
                std::fs::create_dir_all(&self.dir).map_err(GitError::io("cannot create", &self.dir))?;
                let dir = self.dir.display().to_string();
                self.run_with(&["init", "--quiet", "--bare", &dir], &self.dir, &[], None)
                    .await
                    .map(|_| ())
            })
            .await
            .clone()
    }

    /// Records `work_tree` as a starting state. `start` is an index that already describes
    /// most of it (the template's): copied to `index` first, so only what differs is read.
    pub async fn snapshot(&self, work_tree: &Path, start: Option<&Path>, index: &Path) -> Result<Baseline, GitError> {
        self.ensure_init().await?;
        match start {
            Some(from) => std::fs::copy(from, index).map(|_| ()),
            None => match std::fs::remove_file(index) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
        }
        .map_err(GitError::io("cannot prepare the index", index))?;
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
    pub async fn changes(
        &self,
        work_tree: &Path,
        baseline: &Baseline,
        index: &Path,
    ) -> Result<Option<String>, GitError> {
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

    /// The paths `baseline` (at `work_tree`) tracks: the files its tree holds.
    pub async fn tracked(&self, work_tree: &Path, baseline: &Baseline) -> Result<HashSet<PathBuf>, GitError> {
        let out = self.run(&["ls-files", "-z"], work_tree, &baseline.index).await?;
        Ok(out
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| PathBuf::from(OsStr::from_bytes(s)))
            .collect())
    }

    /// The diff of a fresh template copy at `work_tree` against `baseline` (which tracks
    /// `tracked`), with git looking only at `walk`'s candidates; the text is the one
    /// [`Git::changes`] gives. [`Among::WholeTree`] when git must look at everything: a
    /// repository or a `.gitignore` among the changes (ignore rules that changed may bring in
    /// files nobody touched), or more paths than a command line holds. `scratch` is an index
    /// file of the workspace's own, overwritten.
    pub async fn changes_among(
        &self,
        work_tree: &Path,
        baseline: &Baseline,
        tracked: &HashSet<PathBuf>,
        walk: &Walk,
        scratch: &Path,
    ) -> Result<Among, GitError> {
        let candidates = &walk.candidates;
        let gitignore = candidates
            .iter()
            .any(|c| c.rel.file_name() == Some(OsStr::new(".gitignore")));
        if walk.git || gitignore {
            return Ok(Among::WholeTree);
        }
        if candidates.is_empty() {
            return Ok(Among::Diff(None));
        }
        let paths: Option<Vec<&str>> = candidates.iter().map(|c| c.rel.to_str()).collect();
        let Some(paths) =
            paths.filter(|p| p.len() <= MAX_PATHS && p.iter().map(|p| p.len() + 1).sum::<usize>() <= MAX_PATH_BYTES)
        else {
            return Ok(Among::WholeTree);
        };
        remove_if_present(scratch)?;
        let present = candidates.iter().zip(&paths).filter(|(c, _)| c.present);
        let (known, new): (Vec<_>, Vec<_>) = present.partition(|(c, _)| tracked.contains(&c.rel));
        let mut add: Vec<&str> = known.into_iter().map(|(_, p)| *p).collect();
        let new: Vec<&str> = new.into_iter().map(|(_, p)| *p).collect();
        if !new.is_empty() && (walk.gitignore || self.excludes_outside()) {
            // New files as `git add -A` sees them: those no ignore rule leaves out.
            let mut args = vec!["ls-files", "-z", "--others", "--exclude-standard", "--"];
            args.extend_from_slice(&new);
            let kept = self.run(&args, work_tree, scratch).await?;
            let kept: HashSet<&[u8]> = kept.split(|b| *b == 0).collect();
            add.extend(new.into_iter().filter(|p| kept.contains(p.as_bytes())));
        } else {
            add.extend(new);
        }
        if !add.is_empty() {
            let mut input = Vec::with_capacity(add.iter().map(|p| p.len() + 1).sum());
            for path in &add {
                input.extend_from_slice(path.as_bytes());
                input.push(0);
            }
            self.run_input(
                &["update-index", "--add", "-z", "--stdin"],
                work_tree,
                scratch,
                Some(&input),
            )
            .await?;
        }
        let mut args = vec![
            "diff",
            "--cached",
            "--no-color",
            "--no-ext-diff",
            &baseline.commit,
            "--",
        ];
        args.extend_from_slice(&paths);
        let diff = self.run(&args, work_tree, scratch).await?;
        let text = String::from_utf8_lossy(&diff).trim().to_owned();
        Ok(Among::Diff((!text.is_empty()).then_some(text)))
    }

    /// Whether ignore rules outside the work tree exist: the run's `info/exclude` with a rule,
    /// or the user's `git/ignore` (`$XDG_CONFIG_HOME`, else `~/.config`), which git reads even
    /// without the user's configuration. Read once per run.
    fn excludes_outside(&self) -> bool {
        *self.outside.get_or_init(|| {
            let has_rule = |path: &Path| {
                std::fs::read_to_string(path)
                    .is_ok_and(|t| t.lines().any(|l| !l.trim().is_empty() && !l.starts_with('#')))
            };
            let xdg = std::env::var_os("XDG_CONFIG_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
            has_rule(&self.dir.join("info/exclude"))
                || xdg.is_none_or(|x| std::fs::symlink_metadata(x.join("git/ignore")).is_ok())
        })
    }

    /// Brings `work_tree` back to `baseline`: tracked files restored, new files removed
    /// (`strict` removes ignored ones too). Repositories inside it are reset on their own.
    pub async fn reset(
        &self,
        work_tree: &Path,
        baseline: &Baseline,
        index: &Path,
        strict: bool,
    ) -> Result<(), GitError> {
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
) -> Result<process::Exited, GitError> {
    run_git_input(args, cwd, env, remove, None).await
}

async fn run_git_input(
    args: &[&str],
    cwd: &Path,
    env: &[(String, String)],
    remove: &[String],
    stdin: Option<&[u8]>,
) -> Result<process::Exited, GitError> {
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
        stdin,
        timeout: GIT_TIMEOUT,
        tee: None,
        keep_children: false,
    })
    .await
    .map_err(|e| GitError::Run {
        args: args.join(" "),
        message: e.to_string(),
    })
}

fn remove_if_present(path: &Path) -> Result<(), GitError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(GitError::io("cannot remove", path)(e)),
        _ => Ok(()),
    }
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

    /// A template copy as a run makes it: the template read, copied, its baseline and the
    /// paths it tracks.
    async fn fresh_copy(
        t: &Path,
    ) -> (
        super::super::Template,
        PathBuf,
        Git,
        Baseline,
        HashSet<PathBuf>,
        std::time::SystemTime,
    ) {
        use std::os::unix::fs::PermissionsExt as _;
        let tpl = t.join("tpl");
        std::fs::create_dir_all(tpl.join("src/deep")).expect("dirs");
        std::fs::write(tpl.join(".gitignore"), "*.log\n").expect("ignore");
        std::fs::write(tpl.join(".gitattributes"), "*.dat binary\n").expect("attributes");
        std::fs::write(tpl.join("src/a.txt"), "one\ntwo\nthree\n").expect("a");
        std::fs::write(tpl.join("src/deep/b.txt"), "bee\n").expect("b");
        std::fs::write(tpl.join("gone.txt"), "bye\n").expect("gone");
        std::fs::write(
            tpl.join("moved.txt"),
            "a long enough line to be recognised as a rename\n",
        )
        .expect("moved");
        std::fs::write(tpl.join("old.log"), "ignored from the start\n").expect("log");
        std::fs::write(tpl.join("data.dat"), "text, but binary by attribute\n").expect("dat");
        std::fs::write(tpl.join("run.sh"), "#!/bin/sh\n").expect("script");
        std::os::unix::fs::symlink("src/a.txt", tpl.join("link")).expect("link");
        std::fs::set_permissions(tpl.join("run.sh"), std::fs::Permissions::from_mode(0o644)).expect("mode");
        let tree = super::super::Template::scan(&tpl).expect("scan");
        let ws = t.join("ws");
        tree.copy_to(&ws).expect("copy");
        let copied = super::super::copy::settle();
        let git = Git::new(t.join("base.git"));
        let base = git.snapshot(&ws, None, &t.join("base.index")).await.expect("baseline");
        let tracked = git.tracked(&ws, &base).await.expect("tracked");
        (tree, ws, git, base, tracked, copied)
    }

    fn has_git() -> bool {
        if which::which("git").is_err() {
            assert!(std::env::var_os("CI").is_none(), "git is required under CI");
            eprintln!("skipped: git is not installed");
            return false;
        }
        true
    }

    #[tokio::test]
    async fn the_diff_of_the_changed_paths_is_the_diff_of_the_whole_tree() {
        use std::os::unix::fs::PermissionsExt as _;
        if !has_git() {
            return;
        }
        let t = tempfile::tempdir().expect("tmp");
        let (tree, ws, git, base, tracked, copied) = fresh_copy(t.path()).await;
        assert!(!tracked.contains(Path::new("old.log")) && tracked.contains(Path::new("src/a.txt")));
        let scratch = t.path().join("scratch.index");
        let untouched = super::super::changed::walk(&tree, &ws, copied).expect("walk");
        assert_eq!(
            git.changes_among(&ws, &base, &tracked, &untouched, &scratch)
                .await
                .expect("diff"),
            Among::Diff(None)
        );
        std::fs::write(ws.join("src/a.txt"), "one\nTWO\nthree\n").expect("edit");
        std::fs::remove_file(ws.join("gone.txt")).expect("delete");
        std::fs::rename(ws.join("moved.txt"), ws.join("src/renamed.txt")).expect("rename");
        std::fs::create_dir_all(ws.join("new/dir")).expect("new dir");
        std::fs::write(ws.join("new/dir/fresh.txt"), "fresh\n").expect("new");
        std::fs::write(ws.join("new/debug.log"), "ignored\n").expect("new ignored");
        std::fs::write(ws.join("old.log"), "ignored, edited\n").expect("edit ignored");
        std::fs::write(ws.join("we*rd:name [1].txt"), "odd name\n").expect("odd name");
        std::fs::write(ws.join("blob.bin"), [0u8, 1, 2, 0, 255]).expect("binary");
        std::fs::write(ws.join("data.dat"), "changed text, binary by attribute\n").expect("dat");
        std::fs::set_permissions(ws.join("run.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::remove_file(ws.join("link")).expect("unlink");
        std::os::unix::fs::symlink("src/deep/b.txt", ws.join("link")).expect("relink");
        let walk = super::super::changed::walk(&tree, &ws, copied).expect("walk");
        let Among::Diff(Some(among)) = git
            .changes_among(&ws, &base, &tracked, &walk, &scratch)
            .await
            .expect("diff")
        else {
            panic!("a diff of the candidates was expected");
        };
        let full_index = t.path().join("full.index");
        std::fs::copy(&base.index, &full_index).expect("index");
        let whole = git
            .changes(&ws, &base, &full_index)
            .await
            .expect("diff")
            .expect("changed");
        assert_eq!(among, whole);
        for needle in [
            "rename from moved.txt\nrename to src/renamed.txt",
            "Binary files a/data.dat and b/data.dat differ",
            "old mode 100644\nnew mode 100755",
            "diff --git a/we*rd:name [1].txt b/we*rd:name [1].txt",
            "+++ b/new/dir/fresh.txt",
        ] {
            assert!(among.contains(needle), "missing {needle:?} in:\n{among}");
        }
        assert!(!among.contains("debug.log") && !among.contains("old.log"), "{among}");
    }

    #[tokio::test]
    async fn a_changed_gitignore_or_a_repository_made_inside_takes_the_whole_tree() {
        if !has_git() {
            return;
        }
        let t = tempfile::tempdir().expect("tmp");
        let (tree, ws, git, base, tracked, copied) = fresh_copy(t.path()).await;
        let scratch = t.path().join("scratch.index");
        // `old.log` is untouched but no longer ignored: only the whole tree shows it.
        std::fs::write(ws.join(".gitignore"), "").expect("unignore");
        let walk = super::super::changed::walk(&tree, &ws, copied).expect("walk");
        assert_eq!(
            git.changes_among(&ws, &base, &tracked, &walk, &scratch)
                .await
                .expect("diff"),
            Among::WholeTree
        );
        let t = tempfile::tempdir().expect("tmp");
        let (tree, ws, git, base, tracked, copied) = fresh_copy(t.path()).await;
        std::fs::create_dir_all(ws.join("sub/.git")).expect("repository");
        let walk = super::super::changed::walk(&tree, &ws, copied).expect("walk");
        assert_eq!(
            git.changes_among(&ws, &base, &tracked, &walk, &scratch)
                .await
                .expect("diff"),
            Among::WholeTree
        );
    }
}
