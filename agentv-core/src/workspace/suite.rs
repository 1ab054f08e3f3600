//! One eval file × target: what its first case's configuration decides
//! (`docs/workspaces.md#what-a-case-gets`), each case's workspace, and the teardown.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Baseline, Fresh, HookOutcome, Owned, Runtime, Session, SetupError, pool};
use crate::model::EvalCase;
use crate::model::workspace::{CaseWorkspace, HookPoint, Hooks, Isolation, Mode, WorkspaceConfig};

/// What the cases of a suite get.
pub(super) enum SuiteKind {
    /// Each case that asks for a workspace gets its own directory.
    PerCase,
    /// One directory for every case: a temporary one (removed at the end unless kept) or the
    /// user's (`static`, never removed).
    Shared {
        dir: PathBuf,
        baseline: Option<Baseline>,
        temp: bool,
    },
    /// Slots kept between runs, one per case in flight.
    Pool(pool::Pool),
}

pub(super) struct Suite {
    pub(super) kind: SuiteKind,
    pub(super) eval_dir: PathBuf,
    /// The first case's configuration (hooks for `after_all`).
    config: WorkspaceConfig,
    pub(super) target_hooks: Option<Hooks>,
    /// Some case failed: a shared temporary workspace is kept.
    failed: AtomicBool,
}

impl Suite {
    pub(super) fn note_result(&self, failed: bool) {
        if failed {
            self.failed.store(true, Ordering::Relaxed);
        }
    }

    fn default_cwd(&self) -> PathBuf {
        self.config.file_dir.clone().unwrap_or_else(|| self.eval_dir.clone())
    }
}

/// The mode a suite runs in, from the flags and its first case (`docs/workspaces.md#modes`).
fn decide_mode(rt: &Runtime, config: &WorkspaceConfig) -> Result<(Mode, Option<PathBuf>), SetupError> {
    let error = |m: &str| Err(SetupError::new("setup_error", m));
    let per_test = config.isolation() == Isolation::PerTest;
    if let Some(path) = &rt.options.path {
        if per_test {
            return error(
                "static workspace mode is incompatible with isolation: per_test; use isolation: shared (the default)",
            );
        }
        return Ok((Mode::Static, Some(path.clone())));
    }
    let mode = rt.options.mode.or(config.mode).unwrap_or(if config.path.is_some() {
        Mode::Static
    } else {
        Mode::Pooled
    });
    if mode != Mode::Static && config.path.is_some() && (rt.options.mode.is_some() || config.mode.is_some()) {
        return error("workspace.path requires workspace.mode: static");
    }
    if mode == Mode::Static {
        if per_test {
            return error(
                "static workspace mode is incompatible with isolation: per_test; use isolation: shared (the default)",
            );
        }
        return match &config.path {
            Some(path) => Ok((Mode::Static, Some(path.clone()))),
            None if config.repos.as_ref().is_some_and(|r| !r.is_empty()) => {
                error("workspace.mode: static requires workspace.path or --workspace-path")
            }
            None => Ok((Mode::Temp, None)),
        };
    }
    Ok((mode, None))
}

/// Sets a suite up from its first case's configuration: the shared, static or pooled
/// workspace, its repositories and `before_all` hooks. An error here fails every case of the
/// suite with `setup_error`.
pub(super) async fn set_up(
    rt: &Runtime,
    spec: &CaseWorkspace,
    target: &str,
    target_hooks: Option<&Hooks>,
) -> Result<Arc<Suite>, SetupError> {
    let eval_dir = spec
        .suite_file
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let config = spec.config.clone().unwrap_or_default();
    let as_setup = |e: SetupError| SetupError::new("setup_error", e.message);
    let (mode, static_dir) = decide_mode(rt, &config)?;
    let per_test = config.isolation() == Isolation::PerTest;
    let repos = config.repos.clone().unwrap_or_default();
    let mut suite = Suite {
        kind: SuiteKind::PerCase,
        eval_dir,
        config: config.clone(),
        target_hooks: target_hooks.cloned(),
        failed: AtomicBool::new(false),
    };
    suite.kind = if let Some(dir) = static_dir {
        let from_flag = rt.options.path.is_some();
        static_dir_ready(rt, &config, &dir, from_flag).await.map_err(as_setup)?;
        SuiteKind::Shared {
            dir,
            baseline: None,
            temp: false,
        }
    } else if mode == Mode::Pooled && !repos.is_empty() && !per_test {
        SuiteKind::Pool(pool::Pool::new(rt, &config, target))
    } else if !per_test && spec.config.as_ref().is_some_and(WorkspaceConfig::wants_directory) {
        rt.ensure_run_dir()?;
        let dir = rt.claim(&format!("shared-{target}"));
        let mut start = match &config.template {
            Some(t) => rt.copy_template(t, &dir).await.map_err(as_setup)?.baseline,
            None => {
                std::fs::create_dir_all(&dir)
                    .map_err(|e| SetupError::new("setup_error", format!("cannot create {}: {e}", dir.display())))?;
                None
            }
        };
        if !repos.is_empty() {
            super::repos::materialize(&rt.data, &repos, &dir)
                .await
                .map_err(|e| SetupError::new("setup_error", format!("cannot check out the repositories: {e}")))?;
            start = None;
        }
        SuiteKind::Shared {
            dir,
            baseline: start,
            temp: true,
        }
    } else {
        SuiteKind::PerCase
    };
    if let SuiteKind::Shared { dir, baseline, temp } = &mut suite.kind {
        let context = rt.hook_context(dir, "__before_all__", None);
        let cwd = suite.config.file_dir.clone().unwrap_or_else(|| suite.eval_dir.clone());
        let ran = before_all(rt, &suite.config, suite.target_hooks.as_ref(), &context, &cwd).await;
        if let Err(message) = ran {
            if *temp {
                let _ = super::remove_tree(dir);
            }
            return Err(SetupError::new("setup_error", message));
        }
        let start = if ran.is_ok_and(|ran| ran) {
            None
        } else {
            baseline.clone()
        };
        *baseline = match start {
            Some(b) => Some(b),
            None => rt.snapshot(dir, None).await,
        };
    }
    Ok(Arc::new(suite))
}

/// The workspace's `before_all` hook, then the target's. `Ok(true)` when a command ran.
pub(super) async fn before_all(
    rt: &Runtime,
    config: &WorkspaceConfig,
    target_hooks: Option<&Hooks>,
    context: &super::HookContext,
    default_cwd: &Path,
) -> Result<bool, String> {
    let mut ran = false;
    let hooks = [
        (config.hook(HookPoint::BeforeAll), "before_all"),
        (target_hooks.and_then(|h| h.before_all.as_ref()), "target before_all"),
    ];
    for (hook, label) in hooks {
        let Some(hook) = hook else { continue };
        let mut context = context.clone();
        if label.starts_with("target") {
            context.test_id = context.test_id.replace("__before_all__", "__target_before_all__");
        }
        if let Some(outcome) = rt
            .run_hook(hook, HookPoint::BeforeAll, label.to_owned(), &context, default_cwd)
            .await
        {
            if let Some(e) = outcome.error {
                return Err(e);
            }
            ran = true;
        }
    }
    Ok(ran)
}

/// A static directory ready for use: `--workspace-path` as it is; a configured `path` that is
/// missing or empty gets the template and the repositories, one in use gets only the
/// repositories it lacks.
async fn static_dir_ready(
    rt: &Runtime,
    config: &WorkspaceConfig,
    dir: &Path,
    from_flag: bool,
) -> Result<(), SetupError> {
    if from_flag {
        return Ok(());
    }
    let empty = std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_none());
    let repos = config.repos.clone().unwrap_or_default();
    if empty {
        std::fs::create_dir_all(dir)
            .map_err(|e| SetupError::new("setup_error", format!("cannot create {}: {e}", dir.display())))?;
        if let Some(template) = &config.template {
            let _ = std::fs::remove_dir(dir);
            rt.copy_template(template, dir).await?;
        }
    }
    let missing: Vec<_> = repos.into_iter().filter(|r| !dir.join(&r.path).exists()).collect();
    if !missing.is_empty() {
        super::repos::materialize(&rt.data, &missing, dir)
            .await
            .map_err(|e| SetupError::new("clone_error", format!("cannot check out the repositories: {e}")))?;
    }
    Ok(())
}

/// Opens one case's workspace in `suite` (`docs/workspaces.md#each-case`).
pub(super) async fn open(
    rt: &Arc<Runtime>,
    suite: Arc<Suite>,
    spec: &CaseWorkspace,
    case: &EvalCase,
    target_hooks: Option<Hooks>,
) -> Result<Option<Session>, SetupError> {
    let config = spec.config.clone().unwrap_or_default();
    let mut owned = None;
    let mut slot = None;
    let mut fresh = None;
    let (dir, start) = match &suite.kind {
        SuiteKind::Shared { dir, baseline, .. } => (dir.clone(), baseline.clone()),
        SuiteKind::Pool(pool) => {
            let guard = pool.acquire(rt, &suite).await?;
            let found = (guard.path().to_path_buf(), guard.baseline());
            slot = Some(guard);
            found
        }
        SuiteKind::PerCase => {
            if !config.wants_directory() {
                return Ok(None);
            }
            rt.ensure_run_dir()?;
            let dir = rt.claim(&case.id);
            owned = Some(Owned {
                path: dir.clone(),
                armed: true,
            });
            let (start, plain) = own_directory(rt, &config, &suite, case, &dir).await?;
            fresh = plain;
            (dir, start)
        }
    };
    let label = case.id.clone();
    let context = rt.hook_context(&dir, &case.id, Some(case));
    let mut session = Session {
        runtime: rt.clone(),
        suite,
        label,
        dir,
        owned,
        slot,
        config,
        target_hooks,
        baseline: start.clone(),
        index: start.as_ref().map(|b| b.index.clone()),
        context,
        hooks: Vec::new(),
        file_changes: None,
        warnings: Vec::new(),
        container: None,
        agent: None,
        io: None,
        fresh: None,
    };
    if !matches!(session.suite.kind, SuiteKind::PerCase)
        && let Some(reset) = session.config.hook(HookPoint::BeforeEach).and_then(|h| h.reset)
    {
        session.reset(reset).await;
    }
    let ran = before_each(&mut session).await?;
    session.baseline = if ran || start.is_none() {
        rt.snapshot(&session.dir, start.as_ref()).await
    } else if let Some(fresh) = fresh {
        // A plain copy: its index is written only if the whole tree must be looked at.
        session.fresh = Some(fresh);
        start.map(|b| Baseline {
            index: rt.index_path(&session.dir),
            ..b
        })
    } else {
        start.and_then(|b| {
            let index = rt.index_path(&session.dir);
            std::fs::copy(&b.index, &index).ok().map(|_| Baseline { index, ..b })
        })
    };
    session.index = session.baseline.as_ref().map(|b| b.index.clone());
    Ok(Some(session))
}

/// A case's own directory: the template, the repositories, the case's `before_all` hook.
/// Returns the template's starting state when the directory is a plain copy of it, and what
/// its diff needs while it stays one.
async fn own_directory(
    rt: &Runtime,
    config: &WorkspaceConfig,
    suite: &Suite,
    case: &EvalCase,
    dir: &Path,
) -> Result<(Option<Baseline>, Option<Fresh>), SetupError> {
    let (mut start, mut fresh) = match &config.template {
        Some(t) => {
            let copied = rt.copy_template(t, dir).await?;
            (copied.baseline, copied.fresh)
        }
        None => {
            std::fs::create_dir_all(dir)
                .map_err(|e| SetupError::new("template_error", format!("cannot create {}: {e}", dir.display())))?;
            (None, None)
        }
    };
    if let Some(repos) = config.repos.as_ref().filter(|r| !r.is_empty()) {
        super::repos::materialize(&rt.data, repos, dir)
            .await
            .map_err(|e| SetupError::new("clone_error", format!("cannot check out the repositories: {e}")))?;
        (start, fresh) = (None, None);
    }
    let context = rt.hook_context(dir, &case.id, Some(case));
    let cwd = config.file_dir.clone().unwrap_or_else(|| suite.eval_dir.clone());
    if let Some(hook) = config.hook(HookPoint::BeforeAll)
        && let Some(outcome) = rt
            .run_hook(hook, HookPoint::BeforeAll, "before_all".into(), &context, &cwd)
            .await
    {
        if let Some(e) = outcome.error {
            return Err(SetupError::new("script_error", e));
        }
        (start, fresh) = (None, None);
    }
    Ok((start, fresh))
}

/// The workspace's `before_each` hook, then the target's; `Ok(true)` when one ran.
async fn before_each(session: &mut Session) -> Result<bool, SetupError> {
    let cwd = session.default_cwd();
    let hooks = [
        (session.config.hook(HookPoint::BeforeEach).cloned(), "before_each"),
        (
            session.target_hooks.as_ref().and_then(|h| h.before_each.clone()),
            "target before_each",
        ),
    ];
    let mut ran = false;
    for (hook, label) in hooks {
        let Some(hook) = hook else { continue };
        let Some(outcome) = session
            .runtime
            .run_hook(&hook, HookPoint::BeforeEach, label.to_owned(), &session.context, &cwd)
            .await
        else {
            continue;
        };
        let failed = outcome.error.clone();
        session.hooks.push(outcome);
        if let Some(message) = failed {
            return Err(SetupError::new("script_error", message));
        }
        ran = true;
    }
    Ok(ran)
}

/// The suite's `after_all` hooks (target's, then the workspace's), then its shared temporary
/// directory removed, or kept when a case failed or workspaces are kept.
pub(super) async fn tear_down(rt: &Runtime, suite: &Suite) {
    let dirs: Vec<PathBuf> = match &suite.kind {
        SuiteKind::Shared { dir, .. } => vec![dir.clone()],
        SuiteKind::Pool(pool) => pool.used_dirs(),
        SuiteKind::PerCase => Vec::new(),
    };
    let cwd = suite.default_cwd();
    for dir in &dirs {
        let context = rt.hook_context(dir, "__target_after_all__", None);
        if let Some(hook) = suite.target_hooks.as_ref().and_then(|h| h.after_all.as_ref()) {
            warn_failed(
                rt.run_hook(hook, HookPoint::AfterAll, "target after_all".into(), &context, &cwd)
                    .await,
            );
        }
        if let Some(hook) = suite.config.hook(HookPoint::AfterAll) {
            let context = super::HookContext {
                test_id: "__after_all__".to_owned(),
                ..context
            };
            warn_failed(
                rt.run_hook(hook, HookPoint::AfterAll, "after_all".into(), &context, &cwd)
                    .await,
            );
        }
    }
    if let SuiteKind::Pool(pool) = &suite.kind {
        pool.release_all();
    }
    if let SuiteKind::Shared { dir, temp: true, .. } = &suite.kind {
        if rt.keep_all(Some(&suite.config)) || suite.failed.load(Ordering::Relaxed) {
            rt.keep("shared", dir);
        } else {
            let _ = super::remove_tree(dir);
        }
    }
}

fn warn_failed(outcome: Option<HookOutcome>) {
    if let Some(e) = outcome.and_then(|o| o.error) {
        tracing::warn!("{e}");
    }
}
