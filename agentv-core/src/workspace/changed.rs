//! Which paths of a fresh template copy may have changed (`docs/workspaces.md#file-changes`):
//! a walk that compares what is on disk with what the copy wrote (the run's one reading of
//! the template), so git only ever looks at those paths instead of re-reading the tree.
//!
//! A file is a candidate when its type, size, mode or modification time (to the nanosecond)
//! differs from the template's, when its status changed after the copy ended (a tool that
//! restores the modification time still moves the change time; the copy ends on a tick of the
//! clock files are stamped with, [`super::copy::settle`], so nothing written later can carry
//! an earlier stamp), or when it is new; a template entry not found as a file or link is a
//! deleted candidate. The candidates are a superset of
//! what git would report: git then decides, on them alone, with its own rules.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::SystemTime;

use super::copy::{Entry, Template};

/// One path that may differ from the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Relative to the workspace.
    pub rel: PathBuf,
    /// Present now as a file or a symlink (else deleted, or no longer something git tracks).
    pub present: bool,
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Walk {
    /// Sorted by path.
    pub candidates: Vec<Candidate>,
    /// A `.gitignore` exists somewhere in the workspace.
    pub gitignore: bool,
    /// A `.git` exists somewhere in the workspace (a repository made inside it).
    pub git: bool,
}

/// Compares `dir`, a copy of `tree` that ended at `copied` (from [`super::copy::settle`]), with
/// the template. Directories are read by a few threads at once (the stat calls are most of
/// the cost).
pub fn walk(tree: &Template, dir: &Path, copied: SystemTime) -> io::Result<Walk> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4);
    let shared = Shared {
        tree,
        root: dir,
        copied_ns: nanos(copied),
        seen: tree.entries().iter().map(|_| AtomicBool::new(false)).collect(),
        queue: Mutex::new(Queue {
            dirs: vec![PathBuf::new()],
            busy: 0,
            failed: None,
        }),
        wake: Condvar::new(),
    };
    let parts: Vec<Walk> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads).map(|_| s.spawn(|| shared.work())).collect();
        workers.into_iter().filter_map(|w| w.join().ok()).collect()
    });
    let queue = shared
        .queue
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(e) = queue.failed {
        return Err(e);
    }
    let mut walk = Walk::default();
    for part in parts {
        walk.candidates.extend(part.candidates);
        walk.gitignore |= part.gitignore;
        walk.git |= part.git;
    }
    for (entry, seen) in tree.entries().iter().zip(&shared.seen) {
        if !seen.load(Ordering::Relaxed) {
            walk.candidates.push(Candidate {
                rel: entry.rel().to_path_buf(),
                present: false,
            });
        }
    }
    walk.candidates.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(walk)
}

/// The state the walking threads share.
struct Shared<'a> {
    tree: &'a Template,
    root: &'a Path,
    copied_ns: i128,
    /// Template entries found unchanged or changed (the others are deleted).
    seen: Vec<AtomicBool>,
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// Directories left to read, how many are being read, and the first error.
struct Queue {
    dirs: Vec<PathBuf>,
    busy: usize,
    failed: Option<io::Error>,
}

impl Shared<'_> {
    /// Reads directories until none is left (or one could not be read); returns what this
    /// thread found.
    fn work(&self) -> Walk {
        let mut found = Walk::default();
        let lock = || self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut queue = lock();
        loop {
            if queue.failed.is_some() {
                break;
            }
            if let Some(dir) = queue.dirs.pop() {
                queue.busy += 1;
                drop(queue);
                let mut subdirs = Vec::new();
                let read = self.visit(&dir, &mut subdirs, &mut found);
                queue = lock();
                queue.busy -= 1;
                queue.dirs.extend(subdirs);
                if let Err(e) = read {
                    queue.failed.get_or_insert(e);
                }
                self.wake.notify_all();
            } else if queue.busy == 0 {
                break;
            } else {
                queue = self.wake.wait(queue).unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
        found
    }

    /// Reads one directory: its subdirectories go to `subdirs`, its changed files to `found`.
    fn visit(&self, rel_dir: &Path, subdirs: &mut Vec<PathBuf>, found: &mut Walk) -> io::Result<()> {
        let known = self.tree.directory(rel_dir);
        for item in fs::read_dir(self.root.join(rel_dir))? {
            let item = item?;
            let name = item.file_name();
            let kind = item.file_type()?;
            if name == OsStr::new(".git") {
                found.git = true;
                continue;
            }
            if kind.is_dir() {
                subdirs.push(rel_dir.join(&name));
                continue;
            }
            if !(kind.is_file() || kind.is_symlink()) {
                // Sockets, fifos and devices: git does not track them; a template file
                // replaced by one is left unseen, hence deleted.
                continue;
            }
            if name == OsStr::new(".gitignore") {
                found.gitignore = true;
            }
            let position = known.and_then(|k| k.get(&name)).copied();
            let same = match position.map(|i| &self.tree.entries()[i]) {
                Some(Entry::File {
                    mode, modified, size, ..
                }) if kind.is_file() => {
                    let meta = item.metadata()?;
                    meta.mode() == *mode
                        && meta.len() == *size
                        && meta.modified().ok() == Some(*modified)
                        && i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()) < self.copied_ns
                }
                Some(Entry::Symlink { target, .. }) if kind.is_symlink() => {
                    fs::read_link(item.path()).is_ok_and(|now| now == *target)
                }
                _ => false,
            };
            if let Some(seen) = position.and_then(|i| self.seen.get(i)) {
                seen.store(true, Ordering::Relaxed);
            }
            if !same {
                found.candidates.push(Candidate {
                    rel: rel_dir.join(&name),
                    present: true,
                });
            }
        }
        Ok(())
    }
}

/// Nanoseconds since the epoch (negative before it).
fn nanos(t: SystemTime) -> i128 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn fresh() -> (tempfile::TempDir, Template, PathBuf, SystemTime) {
        let t = tempfile::tempdir().expect("tmp");
        let src = t.path().join("tpl");
        fs::create_dir_all(src.join("src/deep")).expect("dirs");
        fs::write(src.join("src/deep/a.txt"), "alpha\n").expect("a");
        fs::write(src.join("src/b.txt"), "beta\n").expect("b");
        fs::write(src.join("keep.txt"), "keep\n").expect("keep");
        std::os::unix::fs::symlink("src/b.txt", src.join("link")).expect("link");
        let tree = Template::scan(&src).expect("scan");
        let ws = t.path().join("ws");
        tree.copy_to(&ws).expect("copy");
        let copied = super::super::copy::settle();
        (t, tree, ws, copied)
    }

    fn names(walk: &Walk) -> Vec<(String, bool)> {
        walk.candidates
            .iter()
            .map(|c| (c.rel.display().to_string(), c.present))
            .collect()
    }

    #[test]
    fn an_untouched_copy_has_no_candidates() {
        let (_t, tree, ws, copied) = fresh();
        let walk = walk(&tree, &ws, copied).expect("walk");
        assert_eq!(names(&walk), Vec::<(String, bool)>::new());
        assert!(!walk.git && !walk.gitignore);
    }

    #[test]
    fn edits_new_deleted_retyped_relinked_and_chmodded_paths_are_candidates() {
        let (_t, tree, ws, copied) = fresh();
        fs::write(ws.join("src/deep/a.txt"), "ALPHA\n").expect("edit, same size");
        fs::remove_file(ws.join("src/b.txt")).expect("delete");
        fs::create_dir_all(ws.join("new/dir")).expect("new dir");
        fs::write(ws.join("new/dir/c.txt"), "c").expect("new file");
        fs::remove_file(ws.join("link")).expect("unlink");
        std::os::unix::fs::symlink("keep.txt", ws.join("link")).expect("relink");
        fs::set_permissions(ws.join("keep.txt"), fs::Permissions::from_mode(0o755)).expect("chmod");
        let walk = walk(&tree, &ws, copied).expect("walk");
        assert_eq!(
            names(&walk),
            [
                ("keep.txt", true),
                ("link", true),
                ("new/dir/c.txt", true),
                ("src/b.txt", false),
                ("src/deep/a.txt", true),
            ]
            .map(|(n, p)| (n.to_owned(), p))
        );
    }

    #[test]
    fn an_edit_that_restores_size_and_modification_time_is_still_a_candidate() {
        let (_t, tree, ws, copied) = fresh();
        let file = ws.join("src/b.txt");
        let before = fs::metadata(&file).expect("meta").modified().expect("mtime");
        fs::write(&file, "BETA\n").expect("edit");
        fs::File::options()
            .write(true)
            .open(&file)
            .and_then(|f| f.set_modified(before))
            .expect("restore mtime");
        let walk = walk(&tree, &ws, copied).expect("walk");
        assert_eq!(names(&walk), [("src/b.txt".to_owned(), true)]);
    }

    #[test]
    fn a_file_replaced_by_a_directory_is_deleted_and_its_content_new() {
        let (_t, tree, ws, copied) = fresh();
        fs::remove_file(ws.join("keep.txt")).expect("rm");
        fs::create_dir(ws.join("keep.txt")).expect("dir");
        fs::write(ws.join("keep.txt/inner"), "x").expect("inner");
        fs::create_dir(ws.join("sub")).expect("sub");
        fs::create_dir(ws.join("sub/.git")).expect("nested repository");
        fs::write(ws.join("sub/.gitignore"), "*.log\n").expect("ignore");
        let walk = walk(&tree, &ws, copied).expect("walk");
        // Candidates are a superset of the changes: under load a file stamped on the copy's
        // last clock tick may be listed too, which costs git a look and changes no diff. Every
        // change must be there, and anything else must be an untouched template file.
        let found = names(&walk);
        let changes =
            [("keep.txt", false), ("keep.txt/inner", true), ("sub/.gitignore", true)].map(|(n, p)| (n.to_owned(), p));
        for change in &changes {
            assert!(found.contains(change), "{change:?} missing from {found:?}");
        }
        for extra in found.iter().filter(|f| !changes.contains(f)) {
            assert!(
                ["src/b.txt", "src/deep/a.txt", "link"].contains(&extra.0.as_str()) && extra.1,
                "{extra:?}"
            );
        }
        assert!(walk.git && walk.gitignore);
    }
}
