//! Workspaces as a suite or a case configures them (`docs/workspaces.md`): plain data, read by
//! `load::workspace` and run by `crate::workspace`. Paths are absolute by the time they get here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `isolation`: whether cases share one workspace or each gets its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// One workspace for every case of the suite (the default).
    Shared,
    /// A fresh workspace for each case.
    PerTest,
}

/// `mode`: where a shared workspace comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Slots kept between runs, one per worker, reset between cases (only with `repos`).
    Pooled,
    /// A fresh directory per run, removed afterwards.
    Temp,
    /// The user's own directory (`path`), never removed.
    Static,
}

impl Mode {
    pub const NAMES: &[&str] = &["pooled", "temp", "static"];

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pooled" => Some(Self::Pooled),
            "temp" => Some(Self::Temp),
            "static" => Some(Self::Static),
            _ => None,
        }
    }
}

/// `reset`: how a workspace is brought back to its starting state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    None,
    /// Tracked files restored, new files removed; ignored files stay.
    Fast,
    /// As `fast`, and ignored files are removed too.
    Strict,
}

/// One hook: a command run at a point of the lifecycle, and/or a reset.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hook {
    /// argv, run without a shell.
    pub command: Option<Vec<String>>,
    /// Milliseconds; `None` = the hook's default (60 s before a case, 30 s after).
    pub timeout_ms: Option<u64>,
    /// Absolute; `None` = the directory of the file that declares the workspace.
    pub cwd: Option<PathBuf>,
    pub reset: Option<Reset>,
}

impl Hook {
    /// A case's hook over the suite's, key by key: `{before_each: {reset: fast}}` on a case
    /// keeps the suite's command, cwd and timeout.
    pub fn merge(suite: Option<&Hook>, case: Option<&Hook>) -> Option<Hook> {
        match (suite, case) {
            (None, None) => None,
            (Some(h), None) | (None, Some(h)) => Some(h.clone()),
            (Some(s), Some(c)) => Some(Hook {
                command: c.command.clone().or_else(|| s.command.clone()),
                timeout_ms: c.timeout_ms.or(s.timeout_ms),
                cwd: c.cwd.clone().or_else(|| s.cwd.clone()),
                reset: c.reset.or(s.reset),
            }),
        }
    }
}

/// The four lifecycle points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookPoint {
    BeforeAll,
    BeforeEach,
    AfterEach,
    AfterAll,
}

impl HookPoint {
    pub const ALL: [HookPoint; 4] = [Self::BeforeAll, Self::BeforeEach, Self::AfterEach, Self::AfterAll];

    pub fn name(self) -> &'static str {
        match self {
            Self::BeforeAll => "before_all",
            Self::BeforeEach => "before_each",
            Self::AfterEach => "after_each",
            Self::AfterAll => "after_all",
        }
    }

    /// A failing `before_*` hook stops its case(s); an `after_*` one is only recorded.
    pub fn is_fatal(self) -> bool {
        matches!(self, Self::BeforeAll | Self::BeforeEach)
    }
}

/// `hooks`: `enabled` and one [`Hook`] per lifecycle point.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hooks {
    pub enabled: Option<bool>,
    pub before_all: Option<Hook>,
    pub before_each: Option<Hook>,
    pub after_each: Option<Hook>,
    pub after_all: Option<Hook>,
}

impl Hooks {
    pub fn get(&self, point: HookPoint) -> Option<&Hook> {
        match point {
            HookPoint::BeforeAll => self.before_all.as_ref(),
            HookPoint::BeforeEach => self.before_each.as_ref(),
            HookPoint::AfterEach => self.after_each.as_ref(),
            HookPoint::AfterAll => self.after_all.as_ref(),
        }
    }

    /// Hooks run unless `enabled: false`.
    pub fn enabled(&self) -> bool {
        self.enabled != Some(false)
    }

    fn merge(suite: &Hooks, case: &Hooks) -> Hooks {
        Hooks {
            enabled: case.enabled.or(suite.enabled),
            before_all: Hook::merge(suite.before_all.as_ref(), case.before_all.as_ref()),
            before_each: Hook::merge(suite.before_each.as_ref(), case.before_each.as_ref()),
            after_each: Hook::merge(suite.after_each.as_ref(), case.after_each.as_ref()),
            after_all: Hook::merge(suite.after_all.as_ref(), case.after_all.as_ref()),
        }
    }
}

/// One entry of `repos`: a git repository checked out inside the workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Repo {
    /// Where in the workspace (relative to it).
    pub path: String,
    /// A clone URL, a GitHub `org/name`, or an absolute local path.
    pub repo: String,
    /// Branch, tag or commit (`commit` or `base_commit`); `None` = the default branch's head.
    pub commit: Option<String>,
    /// Walk this many first-parent steps back from `commit`.
    pub ancestor: Option<u32>,
    /// Sparse-checkout (cone mode) paths; empty = everything.
    pub sparse: Vec<String>,
}

/// `env`: what must be installed for the suite to run, checked before any case.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Preflight {
    pub required_commands: Vec<String>,
    pub required_python_modules: Vec<String>,
}

impl Preflight {
    pub fn is_empty(&self) -> bool {
        self.required_commands.is_empty() && self.required_python_modules.is_empty()
    }
}

/// `docker`: the container a case's code graders and command checks run in, and its agent
/// with `agent` (`docs/workspaces.md#containers`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Docker {
    pub image: String,
    /// `agent`: the target's command runs in a container too. Its default depends on the
    /// file's generation ([`crate::evaluators::rules::docker_runs_agent`]).
    pub agent: bool,
    /// Seconds the image pull may take (default 1800).
    pub timeout: Option<u64>,
    /// `--memory=<value>`, as written (`512m`, `2g`).
    pub memory: Option<String>,
    /// `--cpus=<value>`.
    pub cpus: Option<f64>,
}

/// A `workspace` block (suite or case), or the two merged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkspaceConfig {
    /// A directory copied into each fresh workspace.
    pub template: Option<PathBuf>,
    pub isolation: Option<Isolation>,
    pub mode: Option<Mode>,
    /// The directory of `mode: static`.
    pub path: Option<PathBuf>,
    pub repos: Option<Vec<Repo>>,
    pub hooks: Option<Hooks>,
    pub env: Option<Preflight>,
    /// `keep_workspaces: true`: keep every workspace, as `--keep-workspaces` does.
    pub keep: Option<bool>,
    /// `docker`: code graders run in a container of this image.
    pub docker: Option<Docker>,
    /// The directory of the external file the block was read from (a string `workspace:`):
    /// where hooks run by default. `None` for a block written in the eval file, whose hooks run
    /// in the eval file's directory.
    pub file_dir: Option<PathBuf>,
}

impl WorkspaceConfig {
    /// The case's keys over the suite's (`docs/workspaces.md#case-and-suite`): each key of the
    /// case replaces the suite's, except hooks, which merge hook by hook and key by key.
    pub fn merge(suite: Option<&WorkspaceConfig>, case: Option<&WorkspaceConfig>) -> Option<WorkspaceConfig> {
        let (s, c) = match (suite, case) {
            (None, None) => return None,
            (Some(one), None) | (None, Some(one)) => return Some(one.clone()),
            (Some(s), Some(c)) => (s, c),
        };
        let hooks = match (&s.hooks, &c.hooks) {
            (Some(sh), Some(ch)) => Some(Hooks::merge(sh, ch)),
            (sh, ch) => ch.clone().or_else(|| sh.clone()),
        };
        Some(WorkspaceConfig {
            template: c.template.clone().or_else(|| s.template.clone()),
            isolation: c.isolation.or(s.isolation),
            mode: c.mode.or(s.mode),
            path: c.path.clone().or_else(|| s.path.clone()),
            repos: c.repos.clone().or_else(|| s.repos.clone()),
            hooks,
            env: c.env.clone().or_else(|| s.env.clone()),
            keep: c.keep.or(s.keep),
            docker: c.docker.clone().or_else(|| s.docker.clone()),
            file_dir: c.file_dir.clone().or_else(|| s.file_dir.clone()),
        })
    }

    /// True when the block asks for a directory of its own: a template, hooks or repos.
    pub fn wants_directory(&self) -> bool {
        self.template.is_some() || self.hooks.is_some() || self.repos.as_ref().is_some_and(|r| !r.is_empty())
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation.unwrap_or(Isolation::Shared)
    }

    pub fn hooks_enabled(&self) -> bool {
        self.hooks.as_ref().is_none_or(Hooks::enabled)
    }

    /// The hook at `point` when hooks are enabled.
    pub fn hook(&self, point: HookPoint) -> Option<&Hook> {
        self.hooks.as_ref().filter(|h| h.enabled()).and_then(|h| h.get(point))
    }
}

/// Hooks declared for one target in a suite's `execution.targets` list. They run after the
/// workspace's own hooks of the same point, even with `hooks.enabled: false`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetHooks {
    pub target: String,
    pub hooks: Hooks,
}

/// What a case carries about its workspace: its merged configuration, the eval file it belongs
/// to (the suite's shared workspace is one per eval file and target) and the suite's target
/// hooks.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseWorkspace {
    pub config: Option<WorkspaceConfig>,
    pub suite_file: Arc<Path>,
    pub target_hooks: Arc<[TargetHooks]>,
}

impl CaseWorkspace {
    /// The hooks of `target`, if the suite declares any.
    pub fn target_hooks(&self, target: &str) -> Option<&Hooks> {
        self.target_hooks.iter().find(|t| t.target == target).map(|t| &t.hooks)
    }
}

/// With `workspace.docker` and `docker.agent` (`docs/workspaces.md#containers`): the
/// container one attempt of a case's agent runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentContainer {
    /// The engine's program, as found on PATH (`docker` or `podman`).
    pub engine: PathBuf,
    pub id: String,
    /// A directory of this attempt that the container sees at the same path: where a `cli`
    /// target's `{OUTPUT_FILE}` is made.
    pub io_dir: PathBuf,
}

impl AgentContainer {
    /// `engine exec -i -w <cwd> [-e NAME]… <id> <argv…>`: `argv` run in the container. Each
    /// variable (sorted, once) is passed by name only, its value taken from the exec's own environment, so no
    /// value (a secret) is ever in an argv.
    pub fn wrap<'a>(&self, argv: &[String], cwd: &Path, env: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut out = vec![
            self.engine.display().to_string(),
            "exec".to_owned(),
            "-i".to_owned(),
            "-w".to_owned(),
            cwd.display().to_string(),
        ];
        let mut names: Vec<&str> = env.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            out.extend(["-e".to_owned(), name.to_owned()]);
        }
        out.push(self.id.clone());
        out.extend(argv.iter().cloned());
        out
    }
}

/// What graders see of a case's workspace: where it is and what the target changed in it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkspaceView {
    pub path: PathBuf,
    /// The unified diff against the starting state; `None` when nothing changed or it could not
    /// be computed.
    pub file_changes: Option<String>,
    /// With `workspace.docker`: the argv that runs a program in the case's container, the
    /// program's own argv appended (`docs/workspaces.md#containers`); empty on this machine.
    pub exec: Vec<String>,
    /// Why the case's container could not start: its graders cannot run.
    pub container_error: Option<String>,
}

impl WorkspaceView {
    /// With `workspace.docker`: `argv` run in the case's container with `cwd` as its working
    /// directory; `None` on this machine.
    pub fn container_argv(&self, argv: &[String], cwd: &Path) -> Option<Vec<String>> {
        let (id, head) = self.exec.split_last()?;
        let mut out = head.to_vec();
        out.extend(["-w".to_owned(), cwd.display().to_string(), id.clone()]);
        out.extend(argv.iter().cloned());
        Some(out)
    }

    /// A grading program's argv when it runs in this workspace instead of `own_dir` (its own
    /// working directory): each relative argument naming a file or directory that exists in
    /// `own_dir` becomes absolute, so `[python3, ../check.py]` finds the same script it would
    /// without a workspace. A command string (`sh -c`) is left as written.
    pub fn program_argv(&self, argv: &[String], own_dir: &Path) -> Vec<String> {
        if argv.len() >= 2 && argv[0] == "sh" && argv[1] == "-c" {
            return argv.to_vec();
        }
        argv.iter()
            .map(|item| {
                let path = Path::new(item);
                let looks_like_path = !item.starts_with('-') && !item.is_empty() && path.is_relative();
                match looks_like_path.then(|| own_dir.join(path)).filter(|p| p.exists()) {
                    Some(found) => found.display().to_string(),
                    None => item.clone(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(command: Option<&str>, timeout_ms: Option<u64>, reset: Option<Reset>) -> Hook {
        Hook {
            command: command.map(|c| vec![c.to_owned()]),
            timeout_ms,
            cwd: None,
            reset,
        }
    }

    #[test]
    fn agent_container_argv_passes_variables_by_name_only() {
        let container = AgentContainer {
            engine: PathBuf::from("/usr/bin/podman"),
            id: "c1".into(),
            io_dir: PathBuf::from("/d/.io-1"),
        };
        let argv = ["sh".to_owned(), "-c".to_owned(), "run 'x'".to_owned()];
        assert_eq!(
            container.wrap(&argv, Path::new("/ws"), ["TOKEN", "A_KEY", "TOKEN"]),
            [
                "/usr/bin/podman",
                "exec",
                "-i",
                "-w",
                "/ws",
                "-e",
                "A_KEY",
                "-e",
                "TOKEN",
                "c1",
                "sh",
                "-c",
                "run 'x'"
            ]
        );
        assert_eq!(
            container.wrap(&argv[..1], Path::new("/ws"), []),
            ["/usr/bin/podman", "exec", "-i", "-w", "/ws", "c1", "sh"]
        );
    }

    #[test]
    fn a_case_hook_merges_key_by_key_over_the_suite_hook() {
        let cases = [
            // (suite, case, merged)
            (None, None, None),
            (
                Some(hook(Some("s"), Some(5), None)),
                None,
                Some(hook(Some("s"), Some(5), None)),
            ),
            (
                None,
                Some(hook(Some("c"), None, None)),
                Some(hook(Some("c"), None, None)),
            ),
            (
                Some(hook(Some("s"), Some(5), None)),
                Some(hook(None, None, Some(Reset::Fast))),
                Some(hook(Some("s"), Some(5), Some(Reset::Fast))),
            ),
            (
                Some(hook(Some("s"), Some(5), Some(Reset::Strict))),
                Some(hook(Some("c"), None, None)),
                Some(hook(Some("c"), Some(5), Some(Reset::Strict))),
            ),
        ];
        for (suite, case, want) in cases {
            assert_eq!(Hook::merge(suite.as_ref(), case.as_ref()), want, "{suite:?} + {case:?}");
        }
    }

    #[test]
    fn case_keys_replace_the_suite_keys_and_hooks_merge_per_hook() {
        let suite = WorkspaceConfig {
            template: Some("/s/tpl".into()),
            isolation: Some(Isolation::PerTest),
            repos: Some(vec![Repo {
                path: "r".into(),
                repo: "/s/repo".into(),
                ..Repo::default()
            }]),
            hooks: Some(Hooks {
                enabled: Some(false),
                before_all: Some(hook(Some("setup"), None, None)),
                before_each: Some(hook(Some("each"), Some(100), None)),
                ..Hooks::default()
            }),
            env: Some(Preflight {
                required_commands: vec!["git".into()],
                ..Preflight::default()
            }),
            file_dir: Some("/s".into()),
            ..WorkspaceConfig::default()
        };
        let case = WorkspaceConfig {
            template: Some("/c/tpl".into()),
            repos: Some(Vec::new()),
            hooks: Some(Hooks {
                enabled: Some(true),
                before_each: Some(hook(None, None, Some(Reset::Fast))),
                after_each: Some(hook(Some("after"), None, None)),
                ..Hooks::default()
            }),
            file_dir: None,
            ..WorkspaceConfig::default()
        };
        let merged = WorkspaceConfig::merge(Some(&suite), Some(&case)).expect("merged");
        assert_eq!(merged.template.as_deref(), Some(Path::new("/c/tpl")), "case replaces");
        assert_eq!(merged.isolation, Some(Isolation::PerTest), "suite fills");
        assert_eq!(merged.repos, Some(Vec::new()), "repos replace as a whole");
        assert_eq!(merged.env, suite.env, "env is kept (AgentV 4.x loses it here)");
        let hooks = merged.hooks.expect("hooks");
        assert_eq!(hooks.enabled, Some(true));
        assert_eq!(hooks.before_all, Some(hook(Some("setup"), None, None)));
        assert_eq!(
            hooks.before_each,
            Some(hook(Some("each"), Some(100), Some(Reset::Fast)))
        );
        assert_eq!(hooks.after_each, Some(hook(Some("after"), None, None)));
        assert_eq!(
            merged.file_dir,
            Some(PathBuf::from("/s")),
            "an inline case block keeps the suite file's directory"
        );
        assert_eq!(WorkspaceConfig::merge(Some(&suite), None), Some(suite.clone()));
        assert_eq!(WorkspaceConfig::merge(None, Some(&case)), Some(case));
        assert_eq!(WorkspaceConfig::merge(None, None), None);
    }

    #[test]
    fn a_grading_program_keeps_finding_its_own_files_from_the_workspace() {
        let own = tempfile::tempdir().expect("tmp");
        std::fs::write(own.path().join("check.py"), "").expect("script");
        let view = WorkspaceView {
            path: "/ws".into(),
            file_changes: None,
            ..Default::default()
        };
        let argv: Vec<String> = ["python3", "check.py", "--flag", "missing.py", "/abs"]
            .map(String::from)
            .to_vec();
        let got = view.program_argv(&argv, own.path());
        assert_eq!(got[0], "python3", "a program on PATH stays a name");
        assert_eq!(got[1], own.path().join("check.py").display().to_string());
        assert_eq!(&got[2..], ["--flag", "missing.py", "/abs"]);
        let shell: Vec<String> = ["sh", "-c", "python3 check.py"].map(String::from).to_vec();
        assert_eq!(view.program_argv(&shell, own.path()), shell);
    }

    #[test]
    fn disabled_hooks_hide_every_hook() {
        let mut config = WorkspaceConfig {
            hooks: Some(Hooks {
                enabled: Some(false),
                before_each: Some(hook(Some("x"), None, None)),
                ..Hooks::default()
            }),
            ..WorkspaceConfig::default()
        };
        assert!(config.hook(HookPoint::BeforeEach).is_none());
        assert!(config.wants_directory(), "hooks alone ask for a directory");
        if let Some(h) = config.hooks.as_mut() {
            h.enabled = None;
        }
        assert!(config.hook(HookPoint::BeforeEach).is_some());
    }
}
