//! `<results>.summary.json`: the run's metadata and statistics beside its results file
//! (`docs/running.md#run-summary`). Written when the run starts (with what it plans, so a run
//! killed outright still says what it meant to do) and again when it ends; `merge` writes one
//! for the merged file. Host-independent: no host name, no absolute path agentv chose itself,
//! and every secret redacted.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::stats::StatsReport;
use crate::redact::Secrets;

/// The format of the file, for readers to check.
pub const SUMMARY_SCHEMA: &str = "agentv-run-summary/1";

/// What a run (or a merge) was: who made it, from what, and what it set out to do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMetadata {
    pub agentv_version: String,
    /// The command line, secrets redacted.
    pub command: Vec<String>,
    pub started_at: String,
    /// Unset while the run goes (the file written at the start); set at the end, also after an
    /// interrupt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The commit checked out in the working directory's repository, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// The results file's name (no directory: the summary sits beside it).
    pub results_file: String,
    /// The run's targets, in order.
    #[serde(default)]
    pub targets: Vec<String>,
    /// Runs of each case against each target (1 without `--repeat`).
    #[serde(default = "one")]
    pub repeat: u32,
    /// Records the results file holds once every planned case has run: cases × targets ×
    /// repeats of the selection (after `--shard` and `--rerun-failed`), including those a
    /// resumed run carried over.
    #[serde(default)]
    pub planned: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    /// `--resume`: complete records the file already held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_records: Option<usize>,
    /// `--rerun-failed`: the results file the failures came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_failed_from: Option<String>,
    /// `merge`: the results files merged, in order, with their shard.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<MergedFile>,
}

fn one() -> u32 {
    1
}

/// A shard run (`--shard K/N`) and the selection it was cut from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// K, from 1.
    pub index: u32,
    /// N.
    pub count: u32,
    /// Cases selected before sharding (every shard agrees on it).
    pub selected_cases: usize,
    /// SHA-256 of the selected cases' datasets and ids, sorted (every shard agrees on it).
    pub selection_digest: String,
}

/// One input of `merge`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedFile {
    pub results_file: String,
    pub records: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
}

/// The file as written.
#[derive(Debug, Serialize)]
struct SummaryFile<'a> {
    schema: &'static str,
    metadata: &'a RunMetadata,
    #[serde(flatten)]
    stats: &'a StatsReport,
}

/// `run.jsonl` → `run.summary.json` (any other name gets `.summary.json` added).
pub fn summary_path(results: &Path) -> PathBuf {
    let name = results
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
    results.with_file_name(format!("{stem}.summary.json"))
}

/// Writes the summary to `path` atomically (a temporary file renamed over it), redacted.
pub fn write_summary(
    path: &Path,
    metadata: &RunMetadata,
    stats: &StatsReport,
    secrets: &Secrets,
) -> std::io::Result<()> {
    let file = SummaryFile {
        schema: SUMMARY_SCHEMA,
        metadata,
        stats,
    };
    let mut json = serde_json::to_vec_pretty(&file)?;
    json.push(b'\n');
    let clean = secrets.redact_bytes(&json);
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."));
    let mut out = super::sink::output_file(dir)?;
    out.write_all(&clean)?;
    crate::paths::persist(out, path)?;
    Ok(())
}

/// A run summary that cannot be read back, with its path.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: not a run summary: {source}", path.display())]
    NotASummary { path: PathBuf, source: serde_json::Error },
    #[error("{}: schema `{found}` is not `{SUMMARY_SCHEMA}`", path.display())]
    Schema { path: PathBuf, found: String },
}

/// The metadata of the summary at `path`.
pub fn read_metadata(path: &Path) -> Result<RunMetadata, SummaryError> {
    let text = std::fs::read_to_string(path).map_err(|source| SummaryError::Read {
        path: path.to_owned(),
        source,
    })?;
    #[derive(Deserialize)]
    struct Head {
        schema: String,
        metadata: RunMetadata,
    }
    let head: Head = serde_json::from_str(&text).map_err(|source| SummaryError::NotASummary {
        path: path.to_owned(),
        source,
    })?;
    if head.schema != SUMMARY_SCHEMA {
        return Err(SummaryError::Schema {
            path: path.to_owned(),
            found: head.schema,
        });
    }
    Ok(head.metadata)
}

/// The commit checked out in the repository at `repo_root`, read from `.git` without running
/// git: `HEAD` holds a commit or names a ref, found loose or in `packed-refs` (a worktree's
/// `.git` file points to its git directory, whose `commondir` holds the shared refs).
pub fn git_commit(repo_root: &Path) -> Option<String> {
    let dot_git = repo_root.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let dir = text.trim().strip_prefix("gitdir:")?.trim();
        repo_root.join(dir)
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref:").map(str::trim) else {
        return is_commit(head).then(|| head.to_owned());
    };
    let common = std::fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map_or_else(|| git_dir.clone(), |c| git_dir.join(c.trim()));
    for dir in [&git_dir, &common] {
        if let Ok(text) = std::fs::read_to_string(dir.join(reference)) {
            let commit = text.trim();
            if is_commit(commit) {
                return Some(commit.to_owned());
            }
        }
    }
    for dir in [&git_dir, &common] {
        let Ok(packed) = std::fs::read_to_string(dir.join("packed-refs")) else {
            continue;
        };
        for line in packed.lines() {
            if let Some((commit, name)) = line.split_once(' ')
                && name.trim() == reference
                && is_commit(commit)
            {
                return Some(commit.to_owned());
            }
        }
    }
    None
}

/// A SHA-1 or SHA-256 object name.
fn is_commit(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_sits_beside_the_results_file() {
        for (results, want) in [
            ("out/run.jsonl", "out/run.summary.json"),
            ("r.json", "r.json.summary.json"),
            ("results", "results.summary.json"),
        ] {
            assert_eq!(summary_path(Path::new(results)), PathBuf::from(want), "{results}");
        }
    }

    #[test]
    fn git_commit_is_read_from_head_loose_refs_packed_refs_and_worktrees() {
        let a = "0123456789abcdef0123456789abcdef01234567";
        let b = "89abcdef0123456789abcdef0123456789abcdef";
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path();
        let git = root.join(".git");
        std::fs::create_dir_all(git.join("refs/heads")).expect("dirs");
        assert_eq!(git_commit(root), None, "no HEAD");
        std::fs::write(git.join("HEAD"), format!("{a}\n")).expect("write");
        assert_eq!(git_commit(root).as_deref(), Some(a), "detached");
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").expect("write");
        assert_eq!(git_commit(root), None, "unborn branch");
        std::fs::write(git.join("packed-refs"), format!("# pack-refs\n{b} refs/heads/main\n")).expect("write");
        assert_eq!(git_commit(root).as_deref(), Some(b), "packed");
        std::fs::write(git.join("refs/heads/main"), format!("{a}\n")).expect("write");
        assert_eq!(git_commit(root).as_deref(), Some(a), "loose wins");
        // A worktree: `.git` is a file naming its git directory, whose commondir is the main one.
        let wt = root.join("wt");
        let wt_git = git.join("worktrees/wt");
        std::fs::create_dir_all(&wt_git).expect("dirs");
        std::fs::create_dir_all(&wt).expect("dirs");
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", wt_git.display())).expect("write");
        std::fs::write(wt_git.join("HEAD"), "ref: refs/heads/main\n").expect("write");
        std::fs::write(wt_git.join("commondir"), "../..\n").expect("write");
        assert_eq!(git_commit(&wt).as_deref(), Some(a));
        std::fs::write(git.join("HEAD"), "not a commit\n").expect("write");
        assert_eq!(git_commit(root), None);
    }

    #[test]
    fn summary_is_written_redacted_and_read_back() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("r.summary.json");
        let secrets = Secrets::default();
        secrets.add("sk-secret-value");
        let metadata = RunMetadata {
            agentv_version: "1.0".into(),
            command: vec![
                "agentv".into(),
                "eval".into(),
                "--target".into(),
                "sk-secret-value".into(),
            ],
            started_at: "t".into(),
            results_file: "r.jsonl".into(),
            repeat: 1,
            ..RunMetadata::default()
        };
        let stats = super::super::stats::RunStats::default().compute();
        write_summary(&path, &metadata, &stats, &secrets).expect("writes");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(!text.contains("sk-secret"), "{text}");
        assert!(text.contains("\"schema\": \"agentv-run-summary/1\""), "{text}");
        let back = read_metadata(&path).expect("reads");
        assert_eq!(back.command[3], "***");
        assert_eq!(back.results_file, "r.jsonl");
    }
}
