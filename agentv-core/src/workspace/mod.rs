//! Workspaces at run time (`docs/workspaces.md`): the directory each case's target works in,
//! made from a template, repositories and hooks; what the target changed in it; and its
//! removal, or keeping, afterwards.
//!
//! One [`Runtime`] serves a run. Each eval file × target gets a suite state the first time one
//! of its cases asks (the first case's merged configuration decides it, as in AgentV 4.x):
//! a shared directory, a static one, pool slots, or a directory per case. Each case then opens
//! a [`Session`]: its directory, its `before_*` hooks, its starting state; after the target
//! answered, [`Session::after_agent`] takes the diff and runs the `after_each` hooks, and
//! [`Session::finish`] writes what happened into the record and removes or keeps the directory.
//! A session dropped unfinished (an interrupt) removes its directory unless told to keep it.

mod changed;
mod container;
mod copy;
mod git;
mod hooks;
pub(crate) mod orphans;
mod pool;
mod preflight;
mod repos;
mod suite;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use changed::{Candidate, Walk, walk as changed_paths};
pub use copy::{Method, Template, remove_tree, settle};
pub use git::{Among, Baseline, DiffStats, Git};
pub use hooks::{HookContext, HookOutcome};
pub use preflight::check as preflight;

use crate::model::EvaluationRecord;
use crate::model::workspace::{
    AgentContainer, CaseWorkspace, HookPoint, Hooks, Mode, Reset, WorkspaceConfig, WorkspaceView,
};
use crate::redact::Secrets;
use suite::Suite;

/// Most bytes of `file_changes` kept in a record: the same cap as a record's trace
/// (`docs/results.md#the-record-keys-trace-and-output_messages`).
pub const MAX_RECORD_DIFF: usize = 256 * 1024;

/// Below this score a case's own workspace is kept for inspection (AgentV 4.x's rule).
const KEEP_BELOW: f64 = 0.5;

/// The run's workspace flags (`agentv eval --workspace-mode`, `--workspace-path`,
/// `--keep-workspaces`).
#[derive(Debug, Clone, Default)]
pub struct WorkspaceOptions {
    /// Overrides every suite's `mode`.
    pub mode: Option<Mode>,
    /// A directory used as every suite's static workspace, as it is.
    pub path: Option<PathBuf>,
    /// Keep every workspace after the run.
    pub keep: bool,
    /// Where workspaces, pool slots and the git cache live (default [`data_dir`]).
    pub data_dir: Option<PathBuf>,
}

/// The run's workspaces, when any suite has one or `--workspace-path` gives every case one.
pub(crate) fn runtime_for<'a>(
    mut cases: impl Iterator<Item = &'a crate::model::EvalCase>,
    options: &WorkspaceOptions,
    env: &Arc<[(String, String)]>,
    secrets: &Secrets,
) -> Option<Arc<Runtime>> {
    let used = options.path.is_some() || cases.any(|c| c.workspace.is_some());
    used.then(|| Arc::new(Runtime::new(options.clone(), env.clone(), secrets.clone())))
}

/// The `workspace.env` requirements of every case of `suites` this machine misses, as one
/// message (`docs/workspaces.md#env`).
pub(crate) fn preflight_cases<'a>(cases: impl Iterator<Item = &'a crate::model::EvalCase> + Clone) -> Option<String> {
    let configs = cases.filter_map(|c| c.workspace.as_ref()?.config.as_ref());
    preflight(configs.clone().filter_map(|c| c.env.as_ref())).or_else(|| {
        container::prepare(configs.filter_map(|c| c.docker.as_ref()))
            .err()
            .map(|e| e.to_string())
    })
}

/// `$AGENTV_DATA_DIR`, else `$AGENTV_HOME`, else `~/.agentv`.
pub fn data_dir() -> PathBuf {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty() && v != "undefined")
            .map(PathBuf::from)
    };
    var("AGENTV_DATA_DIR")
        .or_else(|| var("AGENTV_HOME"))
        .or_else(|| var("HOME").map(|h| h.join(".agentv")))
        .unwrap_or_else(|| std::env::temp_dir().join("agentv"))
}

/// Why a case's workspace could not be made: the case becomes an execution error with this
/// message and reason (`failure_reason_code`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SetupError {
    pub message: String,
    /// `setup_error` (the suite's setup), `template_error`, `clone_error`, `script_error`.
    pub reason: &'static str,
}

impl SetupError {
    fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            reason,
        }
    }
}

/// Why a case's workspace session could not do its part: read, copy or diff the workspace, or
/// give the target a container. Clone: a template is read once per run and every case sees
/// the same outcome.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: Arc<std::io::Error>,
    },
    /// A blocking task reading the workspace panicked or was cancelled.
    #[error("{0}")]
    Task(String),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    Git(#[from] git::GitError),
    #[error(transparent)]
    Container(Arc<container::ContainerError>),
}

impl WorkspaceError {
    fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| Self::Io {
            what,
            path,
            source: Arc::new(source),
        }
    }
}

/// A workspace kept after the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The case id (or `shared` for a suite's shared workspace).
    pub label: String,
    pub path: PathBuf,
}

/// A template read once per run, and its starting state (taken from its first copy) with the
/// paths git tracks in it.
struct TemplateEntry {
    tree: tokio::sync::OnceCell<Result<Arc<Template>, WorkspaceError>>,
    baseline: tokio::sync::OnceCell<Option<(Baseline, Option<Tracked>)>>,
}

/// The paths a baseline tracks.
type Tracked = Arc<HashSet<PathBuf>>;

/// A directory that is a plain copy of a template, nothing run in it yet: its diff looks only
/// at the paths a stat walk finds changed ([`changed`]) instead of the whole tree.
#[derive(Clone)]
pub(crate) struct Fresh {
    tree: Arc<Template>,
    tracked: Tracked,
    /// When the copy ended.
    copied: std::time::SystemTime,
    /// The template's baseline index, copied in when the whole tree must be looked at.
    index: PathBuf,
}

/// What copying a template gave: its starting state, and what a diff of the plain copy needs.
pub(crate) struct Copied {
    pub(crate) baseline: Option<Baseline>,
    pub(crate) fresh: Option<Fresh>,
}

/// A suite's state, set up once by its first case.
type SuiteCell = tokio::sync::OnceCell<Result<Arc<Suite>, SetupError>>;

/// Everything a run knows about its workspaces.
pub struct Runtime {
    options: WorkspaceOptions,
    data: PathBuf,
    run_id: String,
    run_dir: PathBuf,
    made: Mutex<Option<Result<(), WorkspaceError>>>,
    git: Option<Git>,
    env: Arc<[(String, String)]>,
    secrets: Secrets,
    templates: Mutex<HashMap<PathBuf, Arc<TemplateEntry>>>,
    suites: Mutex<HashMap<(PathBuf, String), Arc<SuiteCell>>>,
    names: Mutex<HashSet<String>>,
    /// Index files handed out (some are written only when first needed).
    indexes: Mutex<HashSet<PathBuf>>,
    kept: Mutex<Vec<Kept>>,
    removals: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    warned: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("run_dir", &self.run_dir).finish()
    }
}

impl Runtime {
    /// A run's workspaces. Orphans of killed runs are removed first ([`orphans`]).
    pub fn new(options: WorkspaceOptions, env: Arc<[(String, String)]>, secrets: Secrets) -> Self {
        let data = options.data_dir.clone().unwrap_or_else(data_dir);
        let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S%3f").to_string();
        let run_id = format!("{stamp}-{}", std::process::id());
        let run_dir = data.join("workspaces").join(&run_id);
        orphans::sweep(&data.join("workspaces"));
        let git = which::which("git")
            .is_ok()
            .then(|| Git::new(run_dir.join(".baseline.git")));
        Self {
            options,
            data,
            run_id,
            run_dir,
            made: Mutex::new(None),
            git,
            env,
            secrets,
            templates: Mutex::new(HashMap::new()),
            suites: Mutex::new(HashMap::new()),
            names: Mutex::new(HashSet::new()),
            indexes: Mutex::new(HashSet::new()),
            kept: Mutex::new(Vec::new()),
            removals: Mutex::new(Vec::new()),
            warned: Mutex::new(HashSet::new()),
        }
    }

    /// The run's id, as hooks receive it (`eval_run_id`).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The run's directory of temporary workspaces.
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// Creates the run directory and its owner marker, once.
    fn ensure_run_dir(&self) -> Result<(), SetupError> {
        let mut made = self.made.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let result = made.get_or_insert_with(|| {
            std::fs::create_dir_all(self.run_dir.join(".index"))
                .and_then(|()| orphans::mark(&self.run_dir))
                .map_err(WorkspaceError::io(
                    "cannot create the workspace directory",
                    &self.run_dir,
                ))
        });
        result
            .clone()
            .map_err(|e| SetupError::new("setup_error", e.to_string()))
    }

    /// A directory name under the run directory, unique in the run.
    fn claim(&self, label: &str) -> PathBuf {
        let base = crate::paths::file_name_safe(label);
        let mut names = self.names.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut name = base.clone();
        let mut n = 1;
        while !names.insert(name.clone()) || name.starts_with('.') {
            n += 1;
            name = format!("{base}.{n}");
        }
        self.run_dir.join(name)
    }

    /// An index file for one workspace.
    fn index_path(&self, dir: &Path) -> PathBuf {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut indexes = self.indexes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut path = self.run_dir.join(".index").join(&name);
        let mut n = 1;
        while path.exists() || !indexes.insert(path.clone()) {
            n += 1;
            path = self.run_dir.join(".index").join(format!("{name}.{n}"));
        }
        path
    }

    fn warn_once(&self, message: String) {
        let mut warned = self.warned.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if warned.insert(message.clone()) {
            tracing::warn!("{message}");
        }
    }

    fn template_entry(&self, path: &Path) -> Arc<TemplateEntry> {
        let mut map = self.templates.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(path.to_path_buf())
            .or_insert_with(|| {
                Arc::new(TemplateEntry {
                    tree: tokio::sync::OnceCell::new(),
                    baseline: tokio::sync::OnceCell::new(),
                })
            })
            .clone()
    }

    /// The files of the template at `path`, read once per run (in a blocking task).
    async fn template_tree(&self, path: &Path) -> Result<Arc<Template>, WorkspaceError> {
        self.template_entry(path)
            .tree
            .get_or_init(|| async {
                let root = path.to_path_buf();
                tokio::task::spawn_blocking(move || Template::scan(&root).map(Arc::new))
                    .await
                    .map_err(|e| WorkspaceError::Task(e.to_string()))
                    .and_then(|r| r.map_err(WorkspaceError::io("cannot read the template", path)))
            })
            .await
            .clone()
    }

    /// Copies the template at `path` into `dest` (created). Returns the template's starting
    /// state, to be reused without reading it again while `dest` stays a plain copy of it.
    async fn copy_template(&self, path: &Path, dest: &Path) -> Result<Copied, SetupError> {
        let entry = self.template_entry(path);
        let tree = self
            .template_tree(path)
            .await
            .map_err(|e| SetupError::new("template_error", e.to_string()))?;
        let (to, copier) = (dest.to_path_buf(), tree.clone());
        let copied = tokio::task::spawn_blocking(move || copier.copy_to(&to).map(|m| (m, copy::settle()))).await;
        let copied = match copied {
            Ok(Ok((method, copied))) => {
                tracing::debug!(
                    "copied {} into {} with {}",
                    path.display(),
                    dest.display(),
                    method.name()
                );
                copied
            }
            Ok(Err(e)) => {
                return Err(SetupError::new(
                    "template_error",
                    format!("cannot copy the template into {}: {e}", dest.display()),
                ));
            }
            Err(e) => return Err(SetupError::new("template_error", e.to_string())),
        };
        let start = entry
            .baseline
            .get_or_init(|| async {
                let baseline = self.snapshot(dest, None).await?;
                let tracked = match &self.git {
                    Some(git) => git.tracked(dest, &baseline).await.ok().map(Arc::new),
                    None => None,
                };
                Some((baseline, tracked))
            })
            .await
            .clone();
        Ok(match start {
            Some((baseline, tracked)) => Copied {
                fresh: tracked.map(|tracked| Fresh {
                    tree,
                    tracked,
                    copied,
                    index: baseline.index.clone(),
                }),
                baseline: Some(baseline),
            },
            None => Copied {
                baseline: None,
                fresh: None,
            },
        })
    }

    /// Records `dir` as a starting state; `None` (with a warning) when git cannot.
    async fn snapshot(&self, dir: &Path, start: Option<&Baseline>) -> Option<Baseline> {
        let Some(git) = &self.git else {
            self.warn_once("git is not installed: cases in workspaces get no file_changes".to_owned());
            return None;
        };
        let index = self.index_path(dir);
        match git.snapshot(dir, start.map(|b| b.index.as_path()), &index).await {
            Ok(baseline) => Some(baseline),
            Err(e) => {
                self.warn_once(format!("cannot record the starting state of {}: {e}", dir.display()));
                None
            }
        }
    }

    /// The suite state of `spec`'s eval file and `target`, set up by its first case.
    async fn suite(&self, spec: &CaseWorkspace, target: &str, hooks: Option<&Hooks>) -> Result<Arc<Suite>, SetupError> {
        let key = (spec.suite_file.to_path_buf(), target.to_owned());
        let cell = {
            let mut map = self.suites.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            map.entry(key).or_default().clone()
        };
        cell.get_or_init(|| suite::set_up(self, spec, target, hooks))
            .await
            .clone()
    }

    /// Opens the workspace of one case against `target`; `None` when the case has none.
    pub async fn open(
        self: &Arc<Self>,
        case: &crate::model::EvalCase,
        target: &str,
    ) -> Result<Option<Session>, SetupError> {
        let flag_spec;
        let spec = match (case.workspace.as_deref(), &self.options.path) {
            (Some(spec), _) => spec,
            // `--workspace-path` gives every case the directory.
            (None, Some(_)) => {
                flag_spec = CaseWorkspace {
                    config: None,
                    suite_file: case.source.file.clone(),
                    target_hooks: Arc::from(Vec::new()),
                };
                &flag_spec
            }
            (None, None) => return Ok(None),
        };
        let target_hooks = spec.target_hooks(target).cloned();
        let suite = self.suite(spec, target, target_hooks.as_ref()).await?;
        suite::open(self, suite, spec, case, target_hooks).await
    }

    /// Ends the run's workspaces: the suites' `after_all` hooks, the shared directories removed
    /// (or kept), every removal finished, the marker gone. Returns what was kept.
    pub async fn finish(&self) -> Vec<Kept> {
        let suites: Vec<Arc<Suite>> = {
            let map = self.suites.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            map.values()
                .filter_map(|c| c.get().and_then(|r| r.as_ref().ok()).cloned())
                .collect()
        };
        for suite in suites {
            suite::tear_down(self, &suite).await;
        }
        let removals: Vec<_> =
            std::mem::take(&mut *self.removals.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        for handle in removals {
            let _ = handle.await;
        }
        let kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if self.run_dir.exists() {
            let _ = remove_tree(&self.run_dir.join(".index"));
            let _ = remove_tree(&self.run_dir.join(".baseline.git"));
            orphans::unmark(&self.run_dir);
            // Empty unless something was kept.
            let _ = std::fs::remove_dir(&self.run_dir);
        }
        kept
    }

    fn keep(&self, label: &str, path: &Path) {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Kept {
                label: label.to_owned(),
                path: path.to_path_buf(),
            });
    }

    /// Removes `dir` in the background; [`Runtime::finish`] waits for it.
    fn remove_later(&self, dir: PathBuf) {
        let handle = tokio::task::spawn_blocking(move || {
            if let Err(e) = remove_tree(&dir) {
                tracing::warn!("cannot remove the workspace {}: {e}", dir.display());
            }
        });
        self.removals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(handle);
    }

    fn keep_all(&self, config: Option<&WorkspaceConfig>) -> bool {
        self.options.keep || config.is_some_and(|c| c.keep == Some(true))
    }

    fn hook_context(&self, dir: &Path, test_id: &str, case: Option<&crate::model::EvalCase>) -> HookContext {
        HookContext {
            workspace_path: dir.display().to_string(),
            test_id: test_id.to_owned(),
            eval_run_id: self.run_id.clone(),
            case_input: case.map(|c| c.question.trim().to_owned()),
            case_metadata: case.and_then(|c| c.metadata.clone()),
        }
    }

    /// Runs one hook; `None` when it has no command.
    async fn run_hook(
        &self,
        hook: &crate::model::workspace::Hook,
        point: HookPoint,
        label: String,
        context: &HookContext,
        default_cwd: &Path,
    ) -> Option<HookOutcome> {
        hooks::run(&hooks::HookCall {
            hook,
            point,
            label,
            context,
            default_cwd,
            env: &self.env,
            secrets: &self.secrets,
        })
        .await
    }
}

/// A directory this session made and must remove unless it is kept.
struct Owned {
    path: PathBuf,
    armed: bool,
}

impl Drop for Owned {
    fn drop(&mut self) {
        if self.armed {
            // An interrupted case: its processes were just killed.
            let _ = remove_tree(&self.path);
        }
    }
}

/// One case's workspace, from its `before_*` hooks to its removal.
pub struct Session {
    runtime: Arc<Runtime>,
    suite: Arc<Suite>,
    label: String,
    dir: PathBuf,
    owned: Option<Owned>,
    slot: Option<pool::SlotGuard>,
    config: WorkspaceConfig,
    target_hooks: Option<Hooks>,
    baseline: Option<Baseline>,
    index: Option<PathBuf>,
    context: HookContext,
    hooks: Vec<HookOutcome>,
    file_changes: Option<String>,
    warnings: Vec<String>,
    /// With `workspace.docker`: the case's container, removed with the session.
    container: Option<container::Container>,
    /// With `docker.agent`: the container of the target's running attempt.
    agent: Option<container::Container>,
    /// With `docker.agent`: the directory of the target's files (`{OUTPUT_FILE}`), seen by its
    /// container; removed with the session.
    io: Option<tempfile::TempDir>,
    /// Set while the directory is a plain template copy whose index is not written yet.
    fresh: Option<Fresh>,
}

impl Session {
    /// The directory the target works in.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// With `docker.agent` (`docs/workspaces.md#containers`): starts the container one attempt
    /// of the target runs in, the workspace, the attempt's file directory and `files` (the
    /// case's input files, read-only) mounted; `None` when the agent runs on this machine.
    /// [`Session::stop_agent`] removes it.
    pub async fn start_agent(&mut self, files: &[PathBuf]) -> Result<Option<AgentContainer>, WorkspaceError> {
        let Some(docker) = self.config.docker.clone().filter(|d| d.agent) else {
            return Ok(None);
        };
        self.stop_agent().await;
        let io = match &self.io {
            Some(io) => io.path().to_path_buf(),
            None => {
                self.runtime.ensure_run_dir()?;
                let made = tempfile::Builder::new()
                    .prefix(".io-")
                    .tempdir_in(&self.runtime.run_dir)
                    .map_err(WorkspaceError::io(
                        "cannot create a directory for the target's files in",
                        &self.runtime.run_dir,
                    ))?;
                self.io.insert(made).path().to_path_buf()
            }
        };
        let mut mounts = vec![container::Mount {
            path: &io,
            read_only: false,
        }];
        let mut seen: Vec<&Path> = Vec::new();
        // `-v` cannot name a path holding `:`: such a file stays unmounted.
        let mountable = |f: &&PathBuf| f.is_absolute() && f.exists() && !f.to_string_lossy().contains(':');
        for file in files.iter().filter(mountable) {
            if !seen.contains(&file.as_path()) {
                seen.push(file);
                mounts.push(container::Mount {
                    path: file,
                    read_only: true,
                });
            }
        }
        let started = container::Container::start(&docker, &self.dir, &mounts)
            .await
            .map_err(|e| WorkspaceError::Container(Arc::new(e)))?;
        let agent = started.for_agent(&io);
        self.agent = Some(started);
        Ok(Some(agent))
    }

    /// Removes the container of the target's last attempt, if any: whatever the agent started
    /// in it stops, as a process group on this machine does.
    pub async fn stop_agent(&mut self) {
        if let Some(agent) = self.agent.take() {
            agent.remove().await;
        }
    }

    /// After the target answered: the diff, then the target's `after_each` hook, the
    /// `after_each` reset and the workspace's `after_each` hook (all before grading, as in
    /// AgentV 4.x). Returns what graders see.
    pub async fn after_agent(&mut self) -> WorkspaceView {
        let mut container_error = None;
        match self.changes().await {
            Ok(diff) => self.file_changes = diff,
            Err(e) => self.warnings.push(format!("cannot compute file_changes: {e}")),
        }
        let default_cwd = self.default_cwd();
        if let Some(hook) = self.target_hooks.as_ref().and_then(|h| h.after_each.clone())
            && let Some(outcome) = self
                .runtime
                .run_hook(
                    &hook,
                    HookPoint::AfterEach,
                    "target after_each".into(),
                    &self.context,
                    &default_cwd,
                )
                .await
        {
            self.note(outcome);
        }
        if let Some(reset) = self.config.hook(HookPoint::AfterEach).and_then(|h| h.reset) {
            self.reset(reset).await;
        }
        if let Some(hook) = self.config.hook(HookPoint::AfterEach).cloned()
            && let Some(outcome) = self
                .runtime
                .run_hook(
                    &hook,
                    HookPoint::AfterEach,
                    "after_each".into(),
                    &self.context,
                    &default_cwd,
                )
                .await
        {
            self.note(outcome);
        }
        let mut exec = Vec::new();
        if let Some(docker) = self.config.docker.clone() {
            match container::Container::start(&docker, &self.dir, &[]).await {
                Ok(c) => {
                    exec = c.exec();
                    self.container = Some(c);
                }
                Err(e) => container_error = Some(e.to_string()),
            }
        }
        WorkspaceView {
            path: self.dir.clone(),
            file_changes: self.file_changes.clone(),
            exec,
            container_error,
        }
    }

    /// The diff against the starting state: of the paths a stat walk finds changed in a plain
    /// template copy, else of the whole tree.
    async fn changes(&mut self) -> Result<Option<String>, WorkspaceError> {
        let runtime = self.runtime.clone();
        let (Some(git), Some(baseline), Some(index)) = (&runtime.git, self.baseline.clone(), self.index.clone()) else {
            return Ok(None);
        };
        if let Some(fresh) = &self.fresh {
            let (tree, dir, copied) = (fresh.tree.clone(), self.dir.clone(), fresh.copied);
            let walk = tokio::task::spawn_blocking(move || changed::walk(&tree, &dir, copied))
                .await
                .map_err(|e| WorkspaceError::Task(e.to_string()))?
                .map_err(WorkspaceError::io("cannot read the workspace", &self.dir))?;
            let found = git
                .changes_among(&self.dir, &baseline, &fresh.tracked, &walk, &index)
                .await?;
            if let Among::Diff(diff) = found {
                return Ok(diff);
            }
        }
        self.full_index()?;
        Ok(git.changes(&self.dir, &baseline, &index).await?)
    }

    /// Writes the session's whole index (the template's) when it was left unwritten.
    fn full_index(&mut self) -> Result<(), WorkspaceError> {
        if let (Some(fresh), Some(index)) = (self.fresh.take(), &self.index) {
            std::fs::copy(&fresh.index, index).map_err(WorkspaceError::io("cannot prepare the index", index))?;
        }
        Ok(())
    }

    /// Removes the session's own index file: with a large template, one per case adds up.
    fn drop_index(&mut self) {
        if let Some(index) = self.index.take() {
            let _ = std::fs::remove_file(index);
        }
    }

    /// An `after_*` hook's outcome: recorded, and a warning when it failed.
    fn note(&mut self, outcome: HookOutcome) {
        if let Some(e) = &outcome.error {
            self.warnings.push(e.clone());
        }
        self.hooks.push(outcome);
    }

    fn default_cwd(&self) -> PathBuf {
        self.config
            .file_dir
            .clone()
            .unwrap_or_else(|| self.suite.eval_dir.clone())
    }

    async fn reset(&mut self, reset: Reset) {
        if reset == Reset::None {
            return;
        }
        let strict = reset == Reset::Strict;
        if let Err(e) = self.full_index() {
            self.warnings.push(format!("cannot reset the workspace: {e}"));
            return;
        }
        let (Some(git), Some(baseline), Some(index)) = (&self.runtime.git, &self.baseline, &self.index) else {
            return;
        };
        if let Err(e) = git.reset(&self.dir, baseline, index, strict).await {
            self.warnings.push(format!("cannot reset the workspace: {e}"));
        }
        if let Some(repos) = &self.config.repos
            && let Err(e) = repos::reset_all(repos, &self.dir, strict).await
        {
            self.warnings.push(format!("cannot reset the repositories: {e}"));
        }
    }

    /// Writes what the workspace did into `record`, then removes the case's own directory or
    /// keeps it (a failed case's is kept, as with AgentV 4.x, and so is every one with
    /// `--keep-workspaces`); a kept directory is named in `workspace_path`.
    pub fn finish(mut self, record: &mut EvaluationRecord) {
        let stats = self.file_changes.as_deref().map(DiffStats::of).unwrap_or_default();
        let diff = self.file_changes.as_deref().map(|d| git::cap(d, MAX_RECORD_DIFF));
        let cut = self
            .file_changes
            .as_ref()
            .filter(|d| d.len() > MAX_RECORD_DIFF)
            .map(|d| d.len() as u64);
        for w in &self.warnings {
            tracing::warn!(eval_id = %record.eval_id, "{w}");
        }
        record.workspace = Some(agentv_eval_sdk::WorkspaceRecord {
            files_changed: stats.files_changed,
            files_created: stats.files_created,
            files_deleted: stats.files_deleted,
            lines_added: stats.lines_added,
            lines_removed: stats.lines_removed,
            file_changes: diff,
            file_changes_bytes: cut,
            hooks: self.hooks.iter().filter_map(|h| serde_json::to_value(h).ok()).collect(),
            warnings: std::mem::take(&mut self.warnings),
        });
        let failed = record.error.is_some() || record.score < KEEP_BELOW;
        self.suite.note_result(failed);
        self.drop_index();
        let keep_all = self.runtime.keep_all(Some(&self.config));
        if let Some(mut owned) = self.owned.take() {
            owned.armed = false;
            if keep_all || failed {
                self.runtime.keep(&self.label, &owned.path);
                record.workspace_path = Some(owned.path.display().to_string());
            } else {
                self.runtime.remove_later(owned.path.clone());
            }
        } else if record.error.is_some() {
            // A shared, static or pooled workspace: named when the target failed in it.
            record.workspace_path = Some(self.dir.display().to_string());
        }
        self.slot.take();
    }

    /// Ends a session whose case timed out or was cut short: its own directory is removed
    /// unless every workspace is kept.
    pub fn discard(mut self, record: &mut EvaluationRecord) {
        self.drop_index();
        if let Some(mut owned) = self.owned.take() {
            owned.armed = false;
            if self.runtime.keep_all(Some(&self.config)) {
                self.runtime.keep(&self.label, &owned.path);
                record.workspace_path = Some(owned.path.display().to_string());
            } else {
                self.runtime.remove_later(owned.path.clone());
            }
        }
        self.suite.note_result(true);
    }
}
