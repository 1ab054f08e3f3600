//! `workspace.docker` (`docs/workspaces.md#containers`): a case's code graders and command
//! checks run in a container of the suite's image, through the `docker` CLI (or `podman` when
//! that is what is installed), with the case's workspace mounted at its own path; with
//! `docker.agent`, so does the target's command, in a container of its own.
//!
//! Before any case runs, the engine must answer and every image must be present or pulled.
//! With `docker.agent`, each attempt of the target gets a container (`create`, `start`) whose
//! mounts add a directory for the command's files and the case's input files, read-only; it
//! is removed (`rm -f`) once the attempt ends, which also stops whatever the agent left
//! running in it (`docker exec` dying does not). After the target answered: `create`,
//! `start`; each grading program runs as `exec -i`; that container is removed when the case's
//! workspace session ends, however it ends.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::model::workspace::{AgentContainer, Docker};

/// The seconds `create`, `start` and the checks before the run may take.
const STEP: Duration = Duration::from_secs(30);
/// The image pull's default limit.
const PULL: Duration = Duration::from_secs(1800);

/// Why a container could not be had: the engine is missing or not answering, an image cannot
/// be pulled, or a `create`/`start` step failed. Before the run it stops the run; for a case,
/// the case's graders (or, with `docker.agent`, its target) cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    #[error(
        "`workspace.docker` is set, but neither `docker` nor `podman` is on PATH: install one of them (and start it), or remove `docker` from the workspace"
    )]
    NoEngine,
    /// The engine found before the run is gone.
    #[error("neither `docker` nor `podman` is on PATH any more")]
    EngineGone,
    #[error("`{engine} version` failed: {source}: is the engine running?")]
    NotAnswering { engine: String, source: StepError },
    #[error("`{engine} pull {image}` failed: {source}")]
    Pull {
        engine: String,
        image: String,
        source: StepError,
    },
    /// `create` or `start` of a case's container failed.
    #[error("docker {step} failed ({source})")]
    Step { step: &'static str, source: StepError },
}

/// Why one call of the engine's CLI failed.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error("cannot start {}: {source}", engine.display())]
    Start { engine: PathBuf, source: std::io::Error },
    #[error("did not finish within {}s", .0.as_secs())]
    TimedOut(Duration),
    #[error("cannot wait for it: {0}")]
    Wait(std::io::Error),
    /// It exited with a failure status: `exit N: <the end of its stderr>`.
    #[error("{0}")]
    Failed(String),
}

/// The engine [`prepare`] found answering, used for the rest of the run.
static CHOSEN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The container engine: the one that answered before the run, else `docker` on PATH, else
/// `podman`.
pub fn engine() -> Option<PathBuf> {
    CHOSEN.get().cloned().or_else(|| candidates().into_iter().next())
}

/// `docker` and `podman` as found on PATH, in that order.
fn candidates() -> Vec<PathBuf> {
    ["docker", "podman"]
        .into_iter()
        .filter_map(|name| which::which(name).ok())
        .collect()
}

/// The first of `docker` and `podman` whose `version` answers: a `docker` client whose daemon
/// is not running gives way to a working `podman`. The error is the first engine's.
fn answering() -> Result<PathBuf, ContainerError> {
    let found = candidates();
    let mut first_error = None;
    for engine in &found {
        let shown = engine.display().to_string();
        match run_blocking(engine, &["version", "--format", "{{.Server.Version}}"], STEP) {
            Ok(version) => {
                tracing::debug!("container engine {shown}: {}", version.trim());
                return Ok(engine.clone());
            }
            Err(source) => {
                first_error.get_or_insert(ContainerError::NotAnswering { engine: shown, source });
            }
        }
    }
    Err(first_error.unwrap_or(ContainerError::NoEngine))
}

/// Checks, before any case runs, that an engine is installed and answering (and chooses it)
/// and that every image of `dockers` is present (pulling the missing ones). The message says
/// what to fix.
pub fn prepare<'a>(dockers: impl IntoIterator<Item = &'a Docker>) -> Result<(), ContainerError> {
    let mut images: Vec<&Docker> = Vec::new();
    for d in dockers {
        if !images.iter().any(|seen| seen.image == d.image) {
            images.push(d);
        }
    }
    if images.is_empty() {
        return Ok(());
    }
    let engine = answering()?;
    let engine = CHOSEN.get_or_init(|| engine).clone();
    let shown = engine.display().to_string();
    for d in images {
        if run_blocking(&engine, &["image", "inspect", &d.image], STEP).is_ok() {
            continue;
        }
        let limit = d.timeout.map_or(PULL, Duration::from_secs);
        run_blocking(&engine, &["pull", &d.image], limit).map_err(|source| ContainerError::Pull {
            engine: shown.clone(),
            image: d.image.clone(),
            source,
        })?;
    }
    Ok(())
}

/// Runs `engine args` to its end within `limit`; its stdout, or why it failed (exit code and
/// the tail of stderr).
fn run_blocking(engine: &Path, args: &[&str], limit: Duration) -> Result<String, StepError> {
    let mut child = std::process::Command::new(engine)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| StepError::Start {
            engine: engine.to_path_buf(),
            source,
        })?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(StepError::TimedOut(limit));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(StepError::Wait(e)),
        }
    }
    let out = child.wait_with_output().map_err(StepError::Wait)?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    Err(StepError::Failed(failure(out.status, &out.stderr)))
}

fn failure(status: std::process::ExitStatus, stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let tail: String = text
        .trim()
        .chars()
        .rev()
        .take(500)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    match status.code() {
        Some(code) => format!("exit {code}: {tail}"),
        None => format!("killed by a signal: {tail}"),
    }
}

/// A running container of one case; removed when dropped.
#[derive(Debug)]
pub struct Container {
    engine: PathBuf,
    id: String,
    workspace: PathBuf,
}

/// A host path the container sees at the same path.
#[derive(Debug, Clone, Copy)]
pub struct Mount<'a> {
    pub path: &'a Path,
    pub read_only: bool,
}

impl Container {
    /// Creates and starts a container of `docker.image` with `workspace` mounted at the same
    /// path (so the paths graders are given hold inside it too) and as its working directory,
    /// and each of `more` at its own path.
    pub async fn start(docker: &Docker, workspace: &Path, more: &[Mount<'_>]) -> Result<Self, ContainerError> {
        let engine = engine().ok_or(ContainerError::EngineGone)?;
        let dir = workspace.display().to_string();
        let mut args: Vec<String> = vec!["create".into()];
        if let Some(memory) = &docker.memory {
            args.push(format!("--memory={memory}"));
        }
        if let Some(cpus) = docker.cpus {
            args.push(format!("--cpus={cpus}"));
        }
        args.extend(["-v".into(), format!("{dir}:{dir}")]);
        for mount in more {
            let path = mount.path.display();
            let mode = if mount.read_only { ":ro" } else { "" };
            args.extend(["-v".into(), format!("{path}:{path}{mode}")]);
        }
        // `sleep` as the container's first process ignores SIGTERM: without this, podman's
        // `rm -f` waits 10 s for it before killing it.
        args.extend(["--stop-timeout=0".into(), "-w".into(), dir.clone()]);
        args.extend([docker.image.clone(), "sleep".into(), "infinity".into()]);
        let id = step(&engine, &args)
            .await
            .map_err(|source| ContainerError::Step { step: "create", source })?;
        let id = id.trim().to_owned();
        let container = Self {
            engine,
            id,
            workspace: workspace.to_path_buf(),
        };
        step(&container.engine, &["start".to_owned(), container.id.clone()])
            .await
            .map_err(|source| ContainerError::Step { step: "start", source })?;
        Ok(container)
    }

    /// `engine exec -i -e AGENTV_WORKSPACE_PATH=… <id>`: what runs a program in the container
    /// ([`WorkspaceView::container_argv`](crate::model::workspace::WorkspaceView::container_argv)
    /// adds the working directory before the id).
    pub fn exec(&self) -> Vec<String> {
        let dir = self.workspace.display().to_string();
        vec![
            self.engine.display().to_string(),
            "exec".into(),
            "-i".into(),
            "-e".into(),
            format!("AGENTV_WORKSPACE_PATH={dir}"),
            self.id.clone(),
        ]
    }

    /// What the target's command needs to run in this container.
    pub fn for_agent(&self, io_dir: &Path) -> AgentContainer {
        AgentContainer {
            engine: self.engine.clone(),
            id: self.id.clone(),
            io_dir: io_dir.to_path_buf(),
        }
    }

    /// Removes the container (`rm -f`), stopping everything running in it, and waits for it.
    /// Cut short (an interrupt), the removal goes on and `Drop` asks again.
    pub async fn remove(mut self) {
        let run = tokio::process::Command::from(self.rm()).status();
        match tokio::time::timeout(STEP, run).await {
            Ok(Ok(_)) => self.id.clear(),
            Ok(Err(e)) => tracing::warn!("cannot run `{} rm -f {}`: {e}", self.engine.display(), self.id),
            Err(_) => tracing::warn!(
                "`{} rm -f {}` did not finish within {}s",
                self.engine.display(),
                self.id,
                STEP.as_secs()
            ),
        }
    }

    /// `engine rm -f <id>`, quiet.
    fn rm(&self) -> std::process::Command {
        let mut rm = std::process::Command::new(&self.engine);
        rm.args(["rm", "-f", &self.id])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        rm
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if !self.id.is_empty() {
            let _ = self.rm().status();
        }
    }
}

/// One engine call of a case, within [`STEP`]; its stdout.
async fn step(engine: &Path, args: &[String]) -> Result<String, StepError> {
    let run = tokio::process::Command::new(engine)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(STEP, run).await {
        Err(_) => Err(StepError::TimedOut(STEP)),
        Ok(Err(source)) => Err(StepError::Start {
            engine: engine.to_path_buf(),
            source,
        }),
        Ok(Ok(out)) if out.status.success() => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        Ok(Ok(out)) => Err(StepError::Failed(failure(out.status, &out.stderr))),
    }
}
