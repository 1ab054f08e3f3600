//! Repositories checked out in workspaces (`docs/workspaces.md#repositories`). Each is fetched
//! once into a mirror under `<data>/git-cache/<sha256 of its identity>` (a bare `--mirror`
//! clone, updated at most once per run) and cloned from there into each workspace, so fifty
//! cases do not clone fifty times. Every git call runs without a terminal prompt and without
//! the caller's `GIT_*` variables.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::git::GitError;
use crate::model::workspace::Repo;

/// Why a workspace's repositories (`docs/workspaces.md#repositories`) could not be checked out
/// or reset: the case fails with `clone_error`.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error(transparent)]
    Git(#[from] GitError),
    /// Another agentv held the mirror's lock for longer than the git timeout.
    #[error("timed out waiting for the git cache lock {}", .0.display())]
    Locked(PathBuf),
    /// The ref (`commit`) names no commit of the repository.
    #[error("cannot resolve ref '{reference}' of {repo} to a commit")]
    UnknownRef { reference: String, repo: String },
    /// The commit has fewer than `ancestor` parents.
    #[error("cannot resolve ancestor {ancestor} of ref '{reference}'")]
    NoAncestor { ancestor: u32, reference: String },
}

/// How long to wait for another process's lock on a mirror.
const GIT_TIMEOUT: Duration = Duration::from_secs(300);

/// The key of a repository: `host/path` for URLs (host in lower case, `.git` and slashes
/// trimmed), the path for local repositories.
pub fn identity(source: &str) -> String {
    let trimmed = source.trim().trim_end_matches('/');
    let trimmed = trimmed.strip_suffix(".git").unwrap_or(trimmed);
    if let Some(rest) = trimmed.strip_prefix("git@")
        && let Some((host, path)) = rest.split_once(':')
    {
        return format!("{}/{}", host.to_lowercase(), path.trim_matches('/'));
    }
    for scheme in ["https://", "http://", "ssh://"] {
        if let Some(rest) = trimmed.strip_prefix(scheme) {
            let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
            let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = host.to_lowercase();
            let path = if host == "github.com" {
                path.to_lowercase()
            } else {
                path.to_owned()
            };
            return format!("{host}/{}", path.trim_matches('/'));
        }
    }
    trimmed.to_owned()
}

/// Runs git with `args` in `cwd`; stdout (trimmed) on success.
async fn git(args: &[&str], cwd: &Path) -> Result<String, RepoError> {
    let env = [
        ("GIT_ASKPASS".to_owned(), String::new()),
        ("GIT_SSH_COMMAND".to_owned(), "ssh -o BatchMode=yes".to_owned()),
    ];
    let done = super::git::run_git(args, cwd, &env, super::git::callers_git_vars()).await?;
    if done.status.success() {
        Ok(String::from_utf8_lossy(&done.stdout).trim().to_owned())
    } else {
        Err(GitError::failed(args.join(" "), &done).into())
    }
}

/// Mirrors already brought up to date in this process.
fn fresh() -> &'static Mutex<Vec<PathBuf>> {
    static FRESH: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
    FRESH.get_or_init(|| Mutex::new(Vec::new()))
}

/// The mirror of `source`, made or updated (once per process); the caller holds no lock.
async fn mirror(data: &Path, source: &str) -> Result<PathBuf, RepoError> {
    let cache = data.join("git-cache");
    std::fs::create_dir_all(&cache).map_err(GitError::io("cannot create", &cache))?;
    let path = cache.join(hex::encode(Sha256::digest(identity(source).as_bytes())));
    let lock = path.with_extension("lock");
    let mut waited = Duration::ZERO;
    while std::fs::create_dir(&lock).is_err() {
        if waited > GIT_TIMEOUT {
            return Err(RepoError::Locked(lock));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += Duration::from_millis(100);
    }
    let result = update_mirror(&path, source, &cache).await;
    let _ = std::fs::remove_dir(&lock);
    result.map(|()| path)
}

async fn update_mirror(path: &Path, source: &str, cache: &Path) -> Result<(), RepoError> {
    let already = fresh().lock().map(|f| f.contains(&path.to_path_buf())).unwrap_or(false);
    if already {
        return Ok(());
    }
    let valid = path.join("HEAD").is_file()
        && git(&["rev-parse", "--is-bare-repository"], path)
            .await
            .is_ok_and(|o| o == "true");
    if valid {
        let _ = git(&["remote", "set-url", "origin", source], path).await;
        if let Err(e) = git(&["fetch", "--prune", "--quiet", "origin"], path).await {
            tracing::warn!("git mirror fetch failed; using the cached copy: {e}");
        }
    } else {
        let _ = super::remove_tree(path);
        let tmp = cache.join(format!(".tmp-{}-{}", std::process::id(), rand::random::<u32>()));
        let tmp_text = tmp.display().to_string();
        git(&["clone", "--mirror", "--quiet", "--", source, &tmp_text], cache).await?;
        std::fs::rename(&tmp, path).map_err(GitError::io("cannot move the mirror into place at", path))?;
    }
    if let Ok(mut f) = fresh().lock() {
        f.push(path.to_path_buf());
    }
    Ok(())
}

/// Clones every repository of `repos` into `dest` and checks out its commit.
pub async fn materialize(data: &Path, repos: &[Repo], dest: &Path) -> Result<(), RepoError> {
    for repo in repos {
        let mirror = mirror(data, &repo.repo).await?;
        let target = dest.join(&repo.path);
        let target_text = target.display().to_string();
        let mirror_text = mirror.display().to_string();
        git(
            &["clone", "--quiet", "--no-checkout", "--", &mirror_text, &target_text],
            dest,
        )
        .await?;
        git(&["remote", "set-url", "origin", &repo.repo], &target).await?;
        if !repo.sparse.is_empty() {
            git(&["sparse-checkout", "init", "--cone"], &target).await?;
            let mut args = vec!["sparse-checkout", "set", "--"];
            args.extend(repo.sparse.iter().map(String::as_str));
            git(&args, &target).await?;
        }
        let sha = resolve(repo, &target).await?;
        git(&["checkout", "--quiet", "--detach", &sha], &target).await?;
    }
    Ok(())
}

/// The commit `repo` asks for, in its clone at `dir`.
async fn resolve(repo: &Repo, dir: &Path) -> Result<String, RepoError> {
    let reference = repo.commit.as_deref().unwrap_or("HEAD");
    let commit = format!("{reference}^{{commit}}");
    let sha = match git(&["rev-parse", "--verify", "--quiet", "--end-of-options", &commit], dir).await {
        Ok(sha) => sha,
        Err(_) => {
            let remote = format!("refs/remotes/origin/{reference}^{{commit}}");
            git(&["rev-parse", "--verify", "--quiet", "--end-of-options", &remote], dir)
                .await
                .map_err(|_| RepoError::UnknownRef {
                    reference: reference.to_owned(),
                    repo: repo.repo.clone(),
                })?
        }
    };
    match repo.ancestor.filter(|n| *n > 0) {
        None => Ok(sha),
        Some(n) => {
            let back = format!("{sha}~{n}");
            git(&["rev-parse", "--verify", "--quiet", "--end-of-options", &back], dir)
                .await
                .map_err(|_| RepoError::NoAncestor {
                    ancestor: n,
                    reference: reference.to_owned(),
                })
        }
    }
}

/// Resets every repository to its commit and removes what is not tracked (`strict`: ignored
/// files too).
pub async fn reset_all(repos: &[Repo], dest: &Path, strict: bool) -> Result<(), RepoError> {
    for repo in repos {
        let dir = dest.join(&repo.path);
        if !dir.join(".git").exists() {
            continue;
        }
        let sha = resolve(repo, &dir).await?;
        git(&["reset", "--quiet", "--hard", &sha], &dir).await?;
        git(&["clean", "--quiet", if strict { "-fdx" } else { "-fd" }], &dir).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_of_one_repository_agree() {
        for (a, b) in [
            ("https://GitHub.com/Org/Name.git", "https://github.com/org/name"),
            ("git@github.com:org/name.git", "https://github.com/org/name/"),
            ("/srv/repos/app.git", "/srv/repos/app"),
        ] {
            assert_eq!(identity(a), identity(b), "{a} vs {b}");
        }
        assert_ne!(
            identity("https://example.com/Org/A"),
            identity("https://example.com/org/a")
        );
    }
}
