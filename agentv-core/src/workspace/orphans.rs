//! Workspaces left behind by a run that was killed (`kill -9`, a crash, a power cut), and how
//! the next run knows them (`docs/workspaces.md#cleanup`).
//!
//! Each run's directory holds a marker, `.agentv-run`, naming the process that owns it: its
//! pid and its start time (field 22 of `/proc/<pid>/stat`, in clock ticks since boot), so a pid
//! reused by another process is not mistaken for the owner. A run removes its marker when it
//! ends, whatever it keeps. A later run removes every run directory whose marker names a
//! process that no longer exists, or exists with another start time: nothing else can still be
//! using it. Directories without a marker (runs that ended and kept workspaces) are never
//! touched.

use std::path::{Path, PathBuf};

/// The marker's file name inside a run directory.
pub const MARKER: &str = ".agentv-run";

/// Who owns a run directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// Clock ticks after boot at which the process started; 0 where unknown.
    pub started: u64,
}

impl Owner {
    /// This process.
    pub fn current() -> Self {
        let pid = std::process::id();
        Self {
            pid,
            started: start_time(pid).unwrap_or(0),
        }
    }

    fn text(self) -> String {
        format!("pid {}\nstarted {}\n", self.pid, self.started)
    }

    pub(super) fn parse(text: &str) -> Option<Self> {
        let mut pid = None;
        let mut started = None;
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("pid", v)) => pid = v.trim().parse().ok(),
                Some(("started", v)) => started = v.trim().parse().ok(),
                _ => {}
            }
        }
        Some(Self {
            pid: pid?,
            started: started?,
        })
    }

    /// True while the owning process runs (the same process, not a reuse of its pid).
    pub fn is_alive(self) -> bool {
        if self.pid == std::process::id() {
            return true;
        }
        // SAFETY: signal 0 only checks that the process exists.
        let exists = unsafe { libc::kill(self.pid as libc::pid_t, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        exists && (self.started == 0 || start_time(self.pid).is_none_or(|s| s == self.started))
    }
}

/// A process's start time from `/proc/<pid>/stat` (field 22, after the parenthesised name).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// Writes this process's marker into `run_dir`.
pub fn mark(run_dir: &Path) -> std::io::Result<()> {
    std::fs::write(run_dir.join(MARKER), Owner::current().text())
}

/// Removes the marker: the directory now holds only what the run chose to keep.
pub fn unmark(run_dir: &Path) {
    let _ = std::fs::remove_file(run_dir.join(MARKER));
}

/// Removes the run directories under `workspaces` whose owner is gone; returns them.
pub fn sweep(workspaces: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(workspaces) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let dir = entry.path();
        let Ok(text) = std::fs::read_to_string(dir.join(MARKER)) else {
            continue;
        };
        let Some(owner) = Owner::parse(&text) else { continue };
        if !owner.is_alive() && super::copy::remove_tree(&dir).is_ok() {
            removed.push(dir);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_owner_is_swept_and_a_live_one_kept() {
        let root = tempfile::tempdir().expect("tmp");
        let live = root.path().join("live");
        let dead = root.path().join("dead");
        let reused = root.path().join("reused");
        let finished = root.path().join("finished");
        for d in [&live, &dead, &reused, &finished] {
            std::fs::create_dir_all(d.join("case")).expect("dirs");
        }
        mark(&live).expect("mark");
        // A pid that cannot exist (above the kernel's pid_max).
        std::fs::write(dead.join(MARKER), "pid 2147483600\nstarted 5\n").expect("dead");
        // A running process (our parent) with another start time: its pid was reused.
        let parent = std::os::unix::process::parent_id();
        let started = start_time(parent).expect("parent's start time");
        std::fs::write(reused.join(MARKER), format!("pid {parent}\nstarted {}\n", started + 1)).expect("reused");
        let removed = sweep(root.path());
        assert!(live.exists(), "a running owner's directory stays");
        assert!(!dead.exists(), "a dead owner's directory goes");
        assert!(finished.exists(), "a directory without a marker stays");
        assert!(!reused.exists(), "a reused pid is not the owner");
        assert!(removed.contains(&dead));
    }

    #[test]
    fn reads_its_own_start_time() {
        let me = Owner::current();
        assert!(me.started > 0, "from /proc");
        assert_eq!(Owner::parse(&me.text()), Some(me));
        assert!(me.is_alive());
    }
}
