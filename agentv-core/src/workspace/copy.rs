//! Template copies (`docs/workspaces.md#how-a-template-is-copied`): every file, dotfiles
//! included, except `.git` at any depth; symlinks are copied as links with their target as
//! written and never followed; modes and modification times are kept (the diff's baseline
//! relies on them to skip unchanged files).
//!
//! Files are cloned (copy-on-write, `FICLONE`) where the file system offers it and copied
//! otherwise, by several threads at once. Hard links are never used: a tool that rewrites a
//! file in place (most editors, `fs.writeFile`) would change the template, and every other
//! workspace, through the shared inode.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::{self, File, FileTimes, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::SystemTime;

/// One entry of a template, relative to its root.
#[derive(Debug, Clone)]
pub(super) enum Entry {
    File {
        rel: PathBuf,
        /// `st_mode`, type bits included.
        mode: u32,
        modified: SystemTime,
        size: u64,
    },
    Symlink {
        rel: PathBuf,
        target: PathBuf,
    },
}

impl Entry {
    pub(super) fn rel(&self) -> &Path {
        match self {
            Self::File { rel, .. } | Self::Symlink { rel, .. } => rel,
        }
    }
}

/// A template read once: its directories and entries, copied as often as cases need.
#[derive(Debug)]
pub struct Template {
    pub root: PathBuf,
    dirs: Vec<PathBuf>,
    entries: Vec<Entry>,
    /// Entry indexes by directory and file name, built the first time a copy is compared with
    /// the template.
    by_dir: std::sync::OnceLock<ByDir>,
    /// Cleared when the file system refuses a clone: every later file is copied.
    reflink: AtomicBool,
}

/// Entry indexes by directory, then by file name.
type ByDir = HashMap<PathBuf, HashMap<OsString, usize>>;

/// How a copy was made, for the benchmark and `--verbose`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Copy-on-write clones.
    Reflink,
    /// Byte copies (`copy_file_range`), in parallel.
    Copy,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Self::Reflink => "copy-on-write clones",
            Self::Copy => "a parallel copy",
        }
    }
}

impl Template {
    /// Reads the tree under `root` without following symlinks.
    pub fn scan(root: &Path) -> io::Result<Self> {
        let meta = fs::metadata(root)?;
        if !meta.is_dir() {
            return Err(io::Error::other(format!(
                "the template {} is not a directory",
                root.display()
            )));
        }
        let mut dirs = Vec::new();
        let mut entries = Vec::new();
        let walk = walkdir::WalkDir::new(root)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.file_name() != ".git");
        for item in walk {
            let item = item.map_err(io::Error::other)?;
            let Ok(rel) = item.path().strip_prefix(root) else {
                continue;
            };
            if rel.as_os_str().is_empty() {
                continue;
            }
            let rel = rel.to_path_buf();
            let kind = item.file_type();
            if kind.is_dir() {
                dirs.push(rel);
            } else if kind.is_symlink() {
                entries.push(Entry::Symlink {
                    target: fs::read_link(item.path())?,
                    rel,
                });
            } else if kind.is_file() {
                let meta = item.metadata().map_err(io::Error::other)?;
                entries.push(Entry::File {
                    rel,
                    mode: meta.permissions().mode(),
                    modified: meta.modified()?,
                    size: meta.len(),
                });
            }
            // Sockets, fifos and devices are not copied.
        }
        Ok(Self {
            root: root.to_path_buf(),
            dirs,
            entries,
            by_dir: std::sync::OnceLock::new(),
            reflink: AtomicBool::new(true),
        })
    }

    /// The entries, in walk order.
    pub(super) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entries of the directory `rel` (relative to the root, empty for the root): file
    /// name → index in [`Template::entries`]. `None` when the template has no such directory.
    pub(super) fn directory(&self, rel: &Path) -> Option<&HashMap<OsString, usize>> {
        self.by_dir
            .get_or_init(|| {
                let mut by_dir: ByDir = self.dirs.iter().map(|d| (d.clone(), HashMap::new())).collect();
                by_dir.insert(PathBuf::new(), HashMap::new());
                for (i, entry) in self.entries.iter().enumerate() {
                    let rel = entry.rel();
                    if let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) {
                        by_dir
                            .entry(parent.to_path_buf())
                            .or_default()
                            .insert(name.to_owned(), i);
                    }
                }
                by_dir
            })
            .get(rel)
    }

    /// Number of files and links.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Copies the template into `dest` (created; it must not exist, or be an empty directory).
    pub fn copy_to(&self, dest: &Path) -> io::Result<Method> {
        fs::create_dir_all(dest)?;
        for dir in &self.dirs {
            fs::create_dir(dest.join(dir)).or_else(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    Ok(())
                } else {
                    Err(e)
                }
            })?;
        }
        self.copy_entries(dest, None)
    }

    /// Copies the template over an existing `dest`, replacing what is there: an entry of
    /// `dest` is removed before it is written, so a symlink left in its place is never
    /// written through. Directories named in `skip` (repositories), at any depth, are left
    /// alone with everything under them, as AgentV 4.x leaves them.
    pub fn copy_over(&self, dest: &Path, skip: &[String]) -> io::Result<Method> {
        let skipped = |rel: &Path| {
            rel.components()
                .any(|c| skip.iter().any(|s| c.as_os_str() == std::ffi::OsStr::new(s)))
        };
        for dir in self.dirs.iter().filter(|d| !skipped(d)) {
            let path = dest.join(dir);
            match fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    fs::remove_file(&path)?;
                    fs::create_dir(&path)?;
                }
                Err(_) => fs::create_dir_all(&path)?,
            }
        }
        self.copy_entries(dest, Some(&skipped))
    }

    /// Copies every entry but those `over` skips; with `over`, what is in `dest` is replaced.
    fn copy_entries(&self, dest: &Path, over: Option<&(dyn Fn(&Path) -> bool + Sync)>) -> io::Result<Method> {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
        let next = AtomicUsize::new(0);
        let failure: std::sync::Mutex<Option<io::Error>> = std::sync::Mutex::new(None);
        let work = || {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(entry) = self.entries.get(i) else { break };
                if over.is_some_and(|skipped| skipped(entry.rel())) {
                    continue;
                }
                if let Err(e) = self.copy_entry(entry, dest, over.is_some()) {
                    if let Ok(mut slot) = failure.lock() {
                        slot.get_or_insert(e);
                    }
                    next.store(usize::MAX / 2, Ordering::Relaxed);
                    break;
                }
            }
        };
        if self.entries.len() < 64 || threads == 1 {
            work();
        } else {
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(work);
                }
            });
        }
        if let Some(e) = failure.into_inner().ok().flatten() {
            return Err(e);
        }
        Ok(if self.reflink.load(Ordering::Relaxed) && !self.entries.is_empty() {
            Method::Reflink
        } else {
            Method::Copy
        })
    }

    fn copy_entry(&self, entry: &Entry, dest: &Path, replace: bool) -> io::Result<()> {
        let to = dest.join(entry.rel());
        if replace {
            match fs::symlink_metadata(&to) {
                Ok(m) if m.is_dir() => fs::remove_dir_all(&to)?,
                Ok(_) => fs::remove_file(&to)?,
                Err(_) => {}
            }
        }
        match entry {
            Entry::Symlink { target, .. } => std::os::unix::fs::symlink(target, &to),
            Entry::File {
                rel,
                mode,
                modified,
                size,
            } => {
                let from = File::open(self.root.join(rel))?;
                // Created with its final permission bits when the umask leaves them alone, which
                // saves a chmod per file.
                let out = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .mode(mode & 0o777)
                    .open(&to)?;
                if !(self.reflink.load(Ordering::Relaxed) && clone_file(&from, &out)) {
                    self.reflink.store(false, Ordering::Relaxed);
                    copy_bytes(&from, &out, *size)?;
                }
                if !created_with(*mode) {
                    out.set_permissions(fs::Permissions::from_mode(*mode))?;
                }
                out.set_times(FileTimes::new().set_modified(*modified))
            }
        }
    }
}

/// Whether a file created with `mode & 0o777` already has `mode`: no special bits, and the
/// process's umask (read once) clears none of the bits.
fn created_with(mode: u32) -> bool {
    static UMASK: std::sync::LazyLock<Option<u32>> = std::sync::LazyLock::new(|| {
        let status = fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
        u32::from_str_radix(line.trim(), 8).ok()
    });
    UMASK.is_some_and(|umask| mode & 0o7000 == 0 && mode & 0o777 & umask == 0)
}

/// `size` bytes of `from` into `to` by `copy_file_range` (the kernel copies, nothing passes
/// through this process), or by reads and writes where the file systems cannot.
fn copy_bytes(from: &File, to: &File, size: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    let mut left = size;
    while left > 0 {
        let chunk = usize::try_from(left.min(1 << 30)).unwrap_or(1 << 30);
        // SAFETY: both descriptors are open for the call; null offsets make the kernel use and
        // advance the files' own offsets.
        let n = unsafe {
            libc::copy_file_range(
                from.as_raw_fd(),
                std::ptr::null_mut(),
                to.as_raw_fd(),
                std::ptr::null_mut(),
                chunk,
                0,
            )
        };
        match u64::try_from(n) {
            // The file shrank since the template was read.
            Ok(0) => break,
            Ok(n) => left = left.saturating_sub(n),
            Err(_) => {
                let e = io::Error::last_os_error();
                let unsupported = matches!(
                    e.raw_os_error(),
                    Some(libc::EXDEV | libc::ENOSYS | libc::EOPNOTSUPP | libc::EINVAL | libc::EPERM)
                );
                if !(unsupported && left == size) {
                    return Err(e);
                }
                let (mut from, mut to) = (from, to);
                io::copy(&mut from, &mut to)?;
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Waits for the next tick of the coarse clock the kernel stamps files with, and returns it:
/// every file written before the call has an older change time, every change made after it
/// has this one or a later one. A few milliseconds at most, asleep.
pub fn settle() -> SystemTime {
    let start = coarse_now();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(100);
    loop {
        let now = coarse_now();
        if now > start || std::time::Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
}

/// `CLOCK_REALTIME_COARSE`: the clock behind file time stamps.
fn coarse_now() -> SystemTime {
    // SAFETY: `timespec` is plain integers, for which all zeros is a valid value.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: clock_gettime writes into the struct we own, valid for the call.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) } == 0;
    match (ok, u64::try_from(ts.tv_sec), u32::try_from(ts.tv_nsec)) {
        (true, Ok(secs), Ok(nanos)) => SystemTime::UNIX_EPOCH + std::time::Duration::new(secs, nanos),
        _ => SystemTime::now(),
    }
}

/// A copy-on-write clone of `from` into `to` (`FICLONE`); false when the file system cannot.
#[cfg(target_os = "linux")]
fn clone_file(from: &File, to: &File) -> bool {
    use std::os::fd::AsRawFd as _;
    // _IOW(0x94, 9, int)
    const FICLONE: libc::c_ulong = 0x4004_9409;
    // SAFETY: both descriptors are open for the duration of the call; FICLONE reads the source
    // descriptor number passed by value and touches no memory of ours.
    unsafe { libc::ioctl(to.as_raw_fd(), FICLONE as _, from.as_raw_fd()) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn clone_file(_from: &File, _to: &File) -> bool {
    false
}

/// Removes `dir` and everything in it without following symlinks; retries while a process
/// that was just killed may still be creating files in it.
pub fn remove_tree(dir: &Path) -> io::Result<()> {
    let mut last = Ok(());
    for attempt in 0..5 {
        match fs::remove_dir_all(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => last = Err(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(20 * (attempt + 1)));
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().expect("tmp");
        let root = t.path();
        fs::create_dir_all(root.join("src/deep")).expect("dirs");
        fs::create_dir_all(root.join(".git/objects")).expect("git");
        fs::create_dir_all(root.join("sub/.git")).expect("nested git");
        fs::create_dir_all(root.join("empty")).expect("empty");
        fs::write(root.join(".env.example"), "A=1").expect("dotfile");
        fs::write(root.join("src/deep/a.txt"), "hello").expect("file");
        fs::write(root.join(".git/HEAD"), "ref").expect("git file");
        fs::write(root.join("run.sh"), "#!/bin/sh\n").expect("script");
        fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).expect("mode");
        std::os::unix::fs::symlink("/etc", root.join("outside")).expect("link");
        std::os::unix::fs::symlink("src/deep/a.txt", root.join("inside")).expect("link");
        t
    }

    #[test]
    fn copies_everything_but_git_and_keeps_links_as_links() {
        let src = tree();
        let dest = tempfile::tempdir().expect("dest");
        let to = dest.path().join("ws");
        let template = Template::scan(src.path()).expect("scan");
        template.copy_to(&to).expect("copy");
        assert_eq!(fs::read_to_string(to.join("src/deep/a.txt")).expect("a"), "hello");
        assert_eq!(fs::read_to_string(to.join(".env.example")).expect("dotfile"), "A=1");
        assert!(to.join("empty").is_dir(), "empty directories are kept");
        assert!(
            !to.join(".git").exists() && !to.join("sub/.git").exists(),
            "no .git at any depth"
        );
        assert_eq!(fs::read_link(to.join("outside")).expect("link"), Path::new("/etc"));
        assert!(fs::symlink_metadata(to.join("outside")).expect("meta").is_symlink());
        assert_eq!(
            fs::read_link(to.join("inside")).expect("link"),
            Path::new("src/deep/a.txt")
        );
        let mode = fs::metadata(to.join("run.sh")).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        let (a, b) = (
            fs::metadata(src.path().join("src/deep/a.txt")).expect("src"),
            fs::metadata(to.join("src/deep/a.txt")).expect("dst"),
        );
        assert_eq!(a.modified().ok(), b.modified().ok(), "modification time kept");
    }

    #[test]
    fn copying_over_a_reused_slot_leaves_files_under_a_repository_alone() {
        let src = tree();
        fs::create_dir_all(src.path().join("app/lib")).expect("dirs");
        fs::write(src.path().join("app/tracked.txt"), "from the template").expect("file");
        fs::write(src.path().join("app/lib/x.txt"), "from the template").expect("file");
        std::os::unix::fs::symlink("/etc", src.path().join("app/link")).expect("link");
        let dest = tempfile::tempdir().expect("dest");
        let slot = dest.path().join("slot");
        let template = Template::scan(src.path()).expect("scan");
        template.copy_to(&slot).expect("first copy");
        // The slot's repository checkout, then the agent's edit outside it.
        fs::remove_dir_all(slot.join("app")).expect("rm");
        fs::create_dir_all(slot.join("app")).expect("repo");
        fs::write(slot.join("app/tracked.txt"), "the repository's").expect("tracked");
        fs::write(slot.join("src/deep/a.txt"), "edited").expect("edit");
        template.copy_over(&slot, &["app".to_owned()]).expect("copy over");
        assert_eq!(
            fs::read_to_string(slot.join("app/tracked.txt")).expect("tracked"),
            "the repository's"
        );
        assert!(!slot.join("app/lib").exists(), "nothing written under the repository");
        assert!(fs::symlink_metadata(slot.join("app/link")).is_err(), "no link either");
        assert_eq!(fs::read_to_string(slot.join("src/deep/a.txt")).expect("a"), "hello");
    }

    #[test]
    fn copying_over_never_writes_through_a_symlink() {
        let src = tree();
        let outside = tempfile::tempdir().expect("outside");
        let victim = outside.path().join("victim.txt");
        fs::write(&victim, "untouched").expect("victim");
        let dest = tempfile::tempdir().expect("dest");
        let to = dest.path().join("ws");
        let template = Template::scan(src.path()).expect("scan");
        template.copy_to(&to).expect("copy");
        fs::remove_file(to.join("src/deep/a.txt")).expect("rm");
        std::os::unix::fs::symlink(&victim, to.join("src/deep/a.txt")).expect("planted link");
        template.copy_over(&to, &[]).expect("copy over");
        assert_eq!(fs::read_to_string(&victim).expect("victim"), "untouched");
        assert_eq!(fs::read_to_string(to.join("src/deep/a.txt")).expect("a"), "hello");
    }
}
