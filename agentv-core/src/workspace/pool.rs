//! Pooled workspaces (`docs/workspaces.md#pooled`): slots kept between runs under
//! `<data>/workspace-pool/<fingerprint>/slot-<i>`, so repositories are cloned once, not once per
//! run. A case takes a free slot and gives it back when it ends; a slot reused is reset first
//! (its repositories to their commit, the template copied over it). A lock file holding the
//! owner's pid and start time keeps two runs off one slot; a lock whose owner is gone is
//! taken over.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::orphans::Owner;
use super::suite::Suite;
use super::{Baseline, Runtime, SetupError};
use crate::model::workspace::{Repo, WorkspaceConfig};

/// Slots tried per fingerprint.
const MAX_SLOTS: usize = 10;

struct Slot {
    index: usize,
    dir: PathBuf,
    lock: PathBuf,
    busy: bool,
    baseline: Option<Baseline>,
}

struct Inner {
    root: PathBuf,
    config: WorkspaceConfig,
    target: String,
    slots: Mutex<Vec<Slot>>,
    freed: tokio::sync::Notify,
}

/// The slots of one suite in this run.
pub(super) struct Pool(Arc<Inner>);

/// A slot in use by one case; given back when dropped.
pub(super) struct SlotGuard {
    pool: Arc<Inner>,
    index: usize,
    dir: PathBuf,
    baseline: Option<Baseline>,
}

impl SlotGuard {
    pub(super) fn path(&self) -> &Path {
        &self.dir
    }

    pub(super) fn baseline(&self) -> Option<Baseline> {
        self.baseline.clone()
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if let Ok(mut slots) = self.pool.slots.lock()
            && let Some(slot) = slots.iter_mut().find(|s| s.index == self.index)
        {
            slot.busy = false;
        }
        self.pool.freed.notify_one();
    }
}

/// The pool's key: the repositories (sorted by path), not the template, as AgentV 4.x keys it.
pub fn fingerprint(repos: &[Repo]) -> String {
    let mut sorted: Vec<&Repo> = repos.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let value: Vec<serde_json::Value> = sorted
        .iter()
        .map(|r| {
            serde_json::json!({
                "path": r.path,
                "repo": super::repos::identity(&r.repo),
                "ref": r.commit.as_deref().unwrap_or("HEAD"),
                "ancestor": r.ancestor,
                "sparse": r.sparse,
            })
        })
        .collect();
    hex::encode(Sha256::digest(
        serde_json::json!({ "repos": value }).to_string().as_bytes(),
    ))
}

impl Pool {
    pub(super) fn new(rt: &Runtime, config: &WorkspaceConfig, target: &str) -> Self {
        let repos = config.repos.clone().unwrap_or_default();
        Self(Arc::new(Inner {
            root: rt.data.join("workspace-pool").join(fingerprint(&repos)),
            config: config.clone(),
            target: target.to_owned(),
            slots: Mutex::new(Vec::new()),
            freed: tokio::sync::Notify::new(),
        }))
    }

    /// A free slot, prepared for this run on first use.
    pub(super) async fn acquire(&self, rt: &Runtime, suite: &Suite) -> Result<SlotGuard, SetupError> {
        loop {
            let notified = self.0.freed.notified();
            if let Some(guard) = self.take_free() {
                return Ok(guard);
            }
            if let Some((index, dir, lock)) = self.claim_new()? {
                return self.prepare(rt, suite, index, dir, lock).await;
            }
            notified.await;
        }
    }

    fn take_free(&self) -> Option<SlotGuard> {
        let mut slots = self.0.slots.lock().ok()?;
        let slot = slots.iter_mut().find(|s| !s.busy)?;
        slot.busy = true;
        Some(SlotGuard {
            pool: self.0.clone(),
            index: slot.index,
            dir: slot.dir.clone(),
            baseline: slot.baseline.clone(),
        })
    }

    /// Locks the next slot no other run holds; `None` when every slot is in use by this run.
    fn claim_new(&self) -> Result<Option<(usize, PathBuf, PathBuf)>, SetupError> {
        let error = |e: std::io::Error| {
            SetupError::new(
                "setup_error",
                format!("cannot use the workspace pool {}: {e}", self.0.root.display()),
            )
        };
        std::fs::create_dir_all(&self.0.root).map_err(error)?;
        let mut slots = self
            .0
            .slots
            .lock()
            .map_err(|_| SetupError::new("setup_error", "the pool's lock is poisoned"))?;
        for index in 0..MAX_SLOTS {
            if slots.iter().any(|s| s.index == index) {
                continue;
            }
            let lock = self.0.root.join(format!("slot-{index}.lock"));
            if try_lock(&lock) {
                let dir = self.0.root.join(format!("slot-{index}"));
                slots.push(Slot {
                    index,
                    dir: dir.clone(),
                    lock: lock.clone(),
                    busy: true,
                    baseline: None,
                });
                return Ok(Some((index, dir, lock)));
            }
        }
        if slots.is_empty() {
            return Err(SetupError::new(
                "setup_error",
                format!(
                    "all {MAX_SLOTS} pool slots of {} are locked by other runs",
                    self.0.root.display()
                ),
            ));
        }
        Ok(None)
    }

    /// Makes a new slot, or resets a reused one, then runs `before_all` in it and records its
    /// starting state.
    async fn prepare(
        &self,
        rt: &Runtime,
        suite: &Suite,
        index: usize,
        dir: PathBuf,
        lock: PathBuf,
    ) -> Result<SlotGuard, SetupError> {
        let repos = self.0.config.repos.clone().unwrap_or_default();
        let result = async {
            if dir.join(".agentv-slot.json").is_file() {
                super::repos::reset_all(&repos, &dir, false)
                    .await
                    .map_err(|e| SetupError::new("setup_error", format!("cannot reset pool slot {index}: {e}")))?;
                if let Some(template) = &self.0.config.template {
                    let tree = rt
                        .template_tree(template)
                        .await
                        .map_err(|e| SetupError::new("setup_error", e.to_string()))?;
                    let skip: Vec<String> = repos
                        .iter()
                        .filter_map(|r| r.path.trim_start_matches("./").split('/').next().map(str::to_owned))
                        .collect();
                    tree.copy_over(&dir, &skip)
                        .map_err(|e| SetupError::new("setup_error", format!("cannot refresh pool slot {index}: {e}")))?;
                }
            } else {
                let _ = super::remove_tree(&dir);
                match &self.0.config.template {
                    Some(template) => {
                        rt.copy_template(template, &dir).await?;
                    }
                    None => std::fs::create_dir_all(&dir)
                        .map_err(|e| SetupError::new("setup_error", format!("cannot create {}: {e}", dir.display())))?,
                }
                super::repos::materialize(&rt.data, &repos, &dir)
                    .await
                    .map_err(|e| SetupError::new("clone_error", format!("cannot check out the repositories: {e}")))?;
                let meta = serde_json::json!({ "fingerprint": fingerprint(&repos), "created_at": jiff::Timestamp::now().to_string() });
                let _ = std::fs::write(dir.join(".agentv-slot.json"), format!("{meta:#}\n"));
            }
            let context = rt.hook_context(&dir, "__before_all__", None);
            let cwd = self.0.config.file_dir.clone().unwrap_or_else(|| suite.eval_dir.clone());
            super::suite::before_all(rt, &self.0.config, suite.target_hooks.as_ref(), &context, &cwd)
                .await
                .map_err(|e| SetupError::new("setup_error", format!("on pool slot {index}: {e}")))?;
            rt.ensure_run_dir()?;
            Ok::<_, SetupError>(rt.snapshot(&dir, None).await)
        }
        .await;
        let mut slots = self
            .0
            .slots
            .lock()
            .map_err(|_| SetupError::new("setup_error", "the pool's lock is poisoned"))?;
        match result {
            Ok(baseline) => {
                if let Some(slot) = slots.iter_mut().find(|s| s.index == index) {
                    slot.baseline = baseline.clone();
                }
                Ok(SlotGuard {
                    pool: self.0.clone(),
                    index,
                    dir,
                    baseline,
                })
            }
            Err(e) => {
                slots.retain(|s| s.index != index);
                let _ = std::fs::remove_file(&lock);
                Err(e)
            }
        }
    }

    /// The slots this run used.
    pub(super) fn used_dirs(&self) -> Vec<PathBuf> {
        self.0
            .slots
            .lock()
            .map(|s| s.iter().map(|s| s.dir.clone()).collect())
            .unwrap_or_default()
    }

    /// Unlocks every slot this run held.
    pub(super) fn release_all(&self) {
        if let Ok(slots) = self.0.slots.lock() {
            for slot in slots.iter() {
                let _ = std::fs::remove_file(&slot.lock);
            }
        }
        let _ = &self.0.target;
    }
}

/// Takes the lock file at `path` for this process; a lock whose owner is gone is taken over.
fn try_lock(path: &Path) -> bool {
    for _ in 0..3 {
        match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(mut file) => {
                let me = Owner::current();
                let _ = std::io::Write::write_all(
                    &mut file,
                    format!("pid {}\nstarted {}\n", me.pid, me.started).as_bytes(),
                );
                return true;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let alive = std::fs::read_to_string(path)
                    .ok()
                    .and_then(|t| Owner::parse(&t))
                    .is_some_and(Owner::is_alive);
                if alive {
                    return false;
                }
                let _ = std::fs::remove_file(path);
            }
            Err(_) => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_ignores_the_order_of_repositories() {
        let a = Repo {
            path: "a".into(),
            repo: "https://example.com/a.git".into(),
            ..Repo::default()
        };
        let b = Repo {
            path: "b".into(),
            repo: "/tmp/b".into(),
            commit: Some("main".into()),
            ..Repo::default()
        };
        assert_eq!(
            fingerprint(&[a.clone(), b.clone()]),
            fingerprint(&[b.clone(), a.clone()])
        );
        let moved = Repo {
            commit: Some("dev".into()),
            ..b
        };
        assert_ne!(fingerprint(&[a.clone(), moved]), fingerprint(&[a]));
    }

    #[test]
    fn a_lock_of_a_dead_owner_is_taken_over() {
        let dir = tempfile::tempdir().expect("tmp");
        let lock = dir.path().join("slot-0.lock");
        assert!(try_lock(&lock), "free");
        assert!(!try_lock(&lock), "held by this run");
        std::fs::write(&lock, "pid 2147483600\nstarted 1\n").expect("dead owner");
        assert!(try_lock(&lock), "taken over");
    }
}
