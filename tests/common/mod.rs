//! Test harness: a temporary project directory and the built `agentv` binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary project with files, run with the project as the working directory.
pub struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join(".git")).expect("marks the repo root");
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file (creating directories); returns `self` for chaining.
    pub fn file(self, rel: &str, text: &str) -> Self {
        let path = self.dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        std::fs::write(&path, text).expect("write");
        if rel.ends_with(".sh") || rel.ends_with(".py") {
            make_executable(&path);
        }
        self
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentv"));
        cmd.args(args).current_dir(self.dir.path()).env_remove("AGENTV_LOG");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().expect("agentv runs"))
    }

    /// Result lines of a JSONL file in the project.
    pub fn results(&self, rel: &str) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.dir.path().join(rel)).expect("results file");
        text.lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect()
    }

    /// The result record of `id` in a JSONL file.
    pub fn result(&self, rel: &str, id: &str) -> serde_json::Value {
        self.results(rel)
            .into_iter()
            .find(|r| r["eval_id"] == id)
            .unwrap_or_else(|| panic!("no result for {id}"))
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut perms = std::fs::metadata(path).expect("meta").permissions();
    perms.set_mode(0o755);
    std::fs::set_permissions(path, perms).expect("chmod");
}

/// A finished run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Self {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Run {
    /// Asserts the exit code, printing both streams when it differs.
    pub fn code(&self, want: i32) -> &Self {
        assert_eq!(
            self.code, want,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    pub fn stderr_has(&self, text: &str) -> &Self {
        assert!(
            self.stderr.contains(text),
            "stderr lacks {text:?}\n--- stderr\n{}",
            self.stderr
        );
        self
    }

    pub fn stdout_has(&self, text: &str) -> &Self {
        assert!(
            self.stdout.contains(text),
            "stdout lacks {text:?}\n--- stdout\n{}",
            self.stdout
        );
        self
    }
}

/// The repository root (for running the shipped examples).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A mock targets file: `default` answers `answer`; `judge` answers a fixed verdict.
pub fn mock_targets(answer: &str) -> String {
    format!(
        "targets:\n  - name: default\n    provider: mock\n    judge_target: judge\n    response: {answer:?}\n  - name: judge\n    provider: mock\n    response: '{{\"score\": 0.9, \"hits\": [\"h\"], \"misses\": [], \"reasoning\": \"r\"}}'\n"
    )
}
