//! A project on disk for the loader's tests: files written under a temporary git root, one eval
//! file loaded from it.

use std::path::Path;

use super::{LoadedSuite, load_eval_file};
use crate::config::Severity;
use crate::paths::Workspace;

/// Writes `files` (path relative to the root, text) under a fresh temporary repository root
/// and loads the eval file `eval` from it; the directory lives as long as the returned guard.
pub fn load(files: &[(&str, &str)], eval: &str) -> (LoadedSuite, tempfile::TempDir) {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::create_dir(tmp.path().join(".git")).expect("git");
    for (rel, text) in files {
        let path = tmp.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        std::fs::write(path, text).expect("write");
    }
    let ws = Workspace::from_cwd(tmp.path().to_path_buf());
    (load_eval_file(Path::new(eval), &ws), tmp)
}

/// The error diagnostics of `suite`, rendered.
pub fn errors(suite: &LoadedSuite) -> Vec<String> {
    suite
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(ToString::to_string)
        .collect()
}
