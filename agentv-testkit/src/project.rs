//! A temporary project, and the built `agentv` binary run in it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::process::{Run, Spawned, default_timeout};

/// The `agentv` binary under test: `CARGO_BIN_EXE_agentv` (Cargo sets it for the root
/// package's tests), else `agentv` beside the running test's `deps/` directory, where Cargo
/// puts the binaries of the same build.
pub fn agentv_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("CARGO_BIN_EXE_agentv") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test's own path");
    exe.parent()
        .and_then(Path::parent)
        .map(|profile| profile.join(format!("agentv{}", std::env::consts::EXE_SUFFIX)))
        .expect("the test runs from target/<profile>/deps")
}

/// The repository root (for the shipped examples).
pub fn repo_root() -> PathBuf {
    let kit = Path::new(env!("CARGO_MANIFEST_DIR"));
    kit.parent()
        .map(Path::to_path_buf)
        .expect("the kit sits in the repository")
}

/// `agentv` with `args`, in `dir`, with no `AGENTV_LOG` from the caller's environment.
pub fn agentv(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(agentv_bin());
    cmd.args(args).current_dir(dir).env_remove("AGENTV_LOG");
    cmd
}

/// A temporary project with files, run with the project as the working directory. It is a
/// repository root (it holds `.git`), so agentv's searches stop there.
pub struct Project {
    dir: tempfile::TempDir,
    timeout: Duration,
}

impl Default for Project {
    fn default() -> Self {
        Self::new()
    }
}

impl Project {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join(".git")).expect("marks the repo root");
        Self {
            dir,
            timeout: default_timeout(),
        }
    }

    /// How long each run of agentv in this project may take before it is killed and the test
    /// fails (default [`default_timeout`]).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit;
        self
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file (creating directories); `.sh` and `.py` files are made executable.
    pub fn file(self, rel: &str, text: &str) -> Self {
        self.bytes(rel, text.as_bytes())
    }

    /// Writes a file of raw bytes (for non-UTF-8 input).
    pub fn bytes(self, rel: &str, bytes: &[u8]) -> Self {
        let path = self.dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        std::fs::write(&path, bytes).expect("write");
        if rel.ends_with(".sh") || rel.ends_with(".py") {
            make_executable(&path);
        }
        self
    }

    /// `agentv` with `args` in this project, to adjust before running with [`Project::output`]
    /// or [`Project::spawn_command`].
    pub fn command(&self, args: &[&str]) -> Command {
        agentv(self.dir.path(), args)
    }

    /// Runs `agentv args` to the end within this project's timeout.
    pub fn run(&self, args: &[&str]) -> Run {
        self.output(&mut self.command(args))
    }

    /// Runs an adjusted `command` to the end within this project's timeout.
    pub fn output(&self, cmd: &mut Command) -> Run {
        Run::within(cmd, self.timeout)
    }

    /// Runs `cmd` on a blocking thread, for tests on a tokio runtime that serves fake servers.
    pub async fn output_async(&self, mut cmd: Command) -> Run {
        let limit = self.timeout;
        tokio::task::spawn_blocking(move || Run::within(&mut cmd, limit))
            .await
            .expect("the run's thread")
    }

    /// Starts `agentv args` with its output captured; wait for it with [`Spawned::wait`].
    pub fn spawn(&self, args: &[&str]) -> Spawned {
        self.spawn_command(&mut self.command(args))
    }

    /// Starts an adjusted `command`, stdin closed.
    pub fn spawn_command(&self, cmd: &mut Command) -> Spawned {
        cmd.stdin(std::process::Stdio::null());
        Spawned::start_within(cmd, self.timeout)
    }

    /// Starts `agentv args` with its stdout closed on our side from the start, as `| head`
    /// leaves it once it has its lines.
    pub fn spawn_with_stdout_closed(&self, args: &[&str]) -> Spawned {
        let mut cmd = self.command(args);
        cmd.stdin(std::process::Stdio::null());
        Spawned::start_with_stdout_closed(&mut cmd, self.timeout)
    }

    /// Result lines of a JSONL file in the project.
    pub fn results(&self, rel: &str) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.dir.path().join(rel)).expect("results file");
        text.lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect()
    }

    /// The result record of `id` in a JSONL file.
    #[track_caller]
    pub fn result(&self, rel: &str, id: &str) -> serde_json::Value {
        self.results(rel)
            .into_iter()
            .find(|r| r["eval_id"] == id)
            .unwrap_or_else(|| panic!("no result for {id}"))
    }
}

pub fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut perms = std::fs::metadata(path).expect("meta").permissions();
    perms.set_mode(0o755);
    std::fs::set_permissions(path, perms).expect("chmod");
}

/// A mock targets file: `default` answers `answer`; `judge` answers a fixed verdict.
pub fn mock_targets(answer: &str) -> String {
    format!(
        "targets:\n  - name: default\n    provider: mock\n    judge_target: judge\n    response: {answer:?}\n  - name: judge\n    provider: mock\n    response: '{{\"score\": 0.9, \"hits\": [\"h\"], \"misses\": [], \"reasoning\": \"r\"}}'\n"
    )
}

/// A suite of `n` cases (`c0`, `c1`, ...) graded by a keywords evaluator looking for `done`.
pub fn keyword_cases(n: usize) -> String {
    let mut yaml =
        String::from("execution:\n  evaluators: [{name: kw, type: keywords, expected: [done]}]\nevalcases:\n");
    for i in 0..n {
        yaml.push_str(&format!(
            "  - {{id: c{i}, expected_outcome: x, input_messages: [{{role: user, content: q{i}}}]}}\n"
        ));
    }
    yaml
}

/// Every file under `root`, recursively.
pub fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).expect("read dir").flatten() {
        let path = entry.path();
        if entry.file_type().expect("type").is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
