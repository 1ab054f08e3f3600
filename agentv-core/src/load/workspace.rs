//! The `workspace` block of a suite or a case, and the hooks of a suite's `execution.targets`
//! (`docs/workspaces.md`). Both file generations read it the same way. A string value names a
//! YAML file holding the block; paths inside that file are relative to it.

use std::path::{Path, PathBuf};

use crate::config::interpolate::interpolate_env;
use crate::config::node::parse_yaml;
use crate::config::{Diagnostics, Fields, IntRange, Key, KeyTable, Kind, Node, NodeValue, Pos, describe};
use crate::env::Env;
use crate::model::Generation;
use crate::model::workspace::{
    Docker, Hook, HookPoint, Hooks, Isolation, Mode, Preflight, Repo, Reset, TargetHooks, WorkspaceConfig,
};

/// The `workspace` key of suites and cases: a block, or the path of a YAML file holding one.
pub const WORKSPACE_KIND: Kind = Kind::OneOf(&[Kind::Str, Kind::Object(&WORKSPACE)]);

/// A hook's `timeout_ms`: at most a week.
const HOOK_TIMEOUT_MS: Kind = Kind::Int(IntRange {
    min: 0,
    max: 604_800_000,
});

const HOOK_KEYS: &[Key] = &[
    Key::new(
        "command",
        Kind::OneOf(&[Kind::Str, Kind::List(&Kind::Text)]),
        "An argv list, or a string split on whitespace (no quoting; use a list for arguments with spaces).",
    )
    .aliases(&["script"]),
    Key::new(
        "timeout_ms",
        HOOK_TIMEOUT_MS,
        "Milliseconds the command may run (default 60000 before a case, 30000 after).",
    ),
    Key::new(
        "cwd",
        Kind::Text,
        "Where the command runs, relative to the file declaring it (default: that file's directory).",
    ),
    Key::new(
        "reset",
        Kind::Enum(&["none", "fast", "strict"]),
        "Reset the workspace to its starting state: `fast` keeps ignored files, `strict` removes them too.",
    ),
];
const HOOK: KeyTable = KeyTable::new("hook", "A lifecycle hook: a command and/or a reset.", &[HOOK_KEYS]);

const HOOKS_KEYS: &[Key] = &[
    Key::new(
        "enabled",
        Kind::Bool,
        "`false` turns the workspace's hooks and resets off.",
    ),
    Key::new(
        "before_all",
        Kind::Object(&HOOK),
        "Once, after the shared workspace is made.",
    ),
    Key::new("before_each", Kind::Object(&HOOK), "Before each case's target runs."),
    Key::new(
        "after_each",
        Kind::Object(&HOOK),
        "After each case's target, before grading.",
    ),
    Key::new("after_all", Kind::Object(&HOOK), "Once, after the suite's last case."),
];
const HOOKS: KeyTable = KeyTable::new("hooks", "Commands run around the cases.", &[HOOKS_KEYS]);

const TARGET_HOOK_KEYS: &[Key] = &[
    Key::new(
        "command",
        Kind::OneOf(&[Kind::Str, Kind::List(&Kind::Text)]),
        "An argv list, or a string run by `sh -c`.",
    )
    .aliases(&["script"]),
    Key::new("timeout_ms", HOOK_TIMEOUT_MS, "Milliseconds the command may run.").aliases(&["timeoutMs"]),
    Key::new(
        "cwd",
        Kind::Text,
        "Where the command runs, relative to the working directory.",
    ),
];
const TARGET_HOOK: KeyTable = KeyTable::new("target hook", "A target's lifecycle hook.", &[TARGET_HOOK_KEYS]);
const TARGET_HOOKS_KEYS: &[Key] = &[
    Key::new(
        "before_all",
        Kind::Object(&TARGET_HOOK),
        "Once, after the shared workspace is made.",
    ),
    Key::new("before_each", Kind::Object(&TARGET_HOOK), "Before each case."),
    Key::new("after_each", Kind::Object(&TARGET_HOOK), "After each case."),
    Key::new("after_all", Kind::Object(&TARGET_HOOK), "Once, at the end."),
];
/// `execution.targets[].hooks`.
pub const TARGET_HOOKS: KeyTable = KeyTable::new(
    "target hooks",
    "Hooks of one target; they run only in a workspace.",
    &[TARGET_HOOKS_KEYS],
);

const REPO_KEYS: &[Key] = &[
    Key::new("path", Kind::Text, "Where in the workspace the repository goes.").required(),
    Key::new(
        "repo",
        Kind::Text,
        "A clone URL, a GitHub `org/name`, or a local repository (absolute, or `./` / `../` relative to the file).",
    )
    .required(),
    Key::new(
        "commit",
        Kind::Text,
        "Branch, tag or commit to check out (default: the remote's HEAD).",
    ),
    Key::new(
        "base_commit",
        Kind::Text,
        "Another spelling of `commit` (both must agree).",
    ),
    Key::new(
        "ancestor",
        Kind::Int(IntRange::at_least(0)),
        "Check out this many first-parent steps before `commit`.",
    ),
    Key::new("sparse", Kind::List(&Kind::Text), "Sparse-checkout paths (cone mode)."),
    Key::new("source", Kind::Any, "Removed: use `repo`."),
    Key::new(
        "checkout",
        Kind::Any,
        "Removed: use `commit`, `base_commit` and `ancestor`.",
    ),
    Key::new("clone", Kind::Any, "Removed: use `sparse`."),
];
const REPO: KeyTable = KeyTable::new(
    "repository",
    "A git repository checked out in the workspace.",
    &[REPO_KEYS],
);

const DOCKER_KEYS: &[Key] = &[
    Key::new(
        "image",
        Kind::Text,
        "The image, present locally or pulled before any case runs.",
    )
    .required(),
    Key::new(
        "timeout",
        Kind::Number(POSITIVE),
        "Seconds the image pull may take (default 1800).",
    ),
    Key::new(
        "memory",
        Kind::Text,
        "The container's memory limit (`--memory`), such as `512m`.",
    ),
    Key::new(
        "cpus",
        Kind::Number(POSITIVE),
        "The container's CPU limit (`--cpus`), such as 1.5.",
    ),
    Key::new(
        "agent",
        Kind::Bool,
        "Run the target's command (cli, claude-code, codex) in a container too; default true, false in a 4.x file.",
    ),
];

/// `docker.timeout` and `docker.cpus`.
const POSITIVE: crate::config::NumberRange = crate::config::NumberRange { min: 0.001, max: 1.0e9 };

const DOCKER: KeyTable = KeyTable::new(
    "docker",
    "The container code graders (and, with `agent`, the agent) run in.",
    &[DOCKER_KEYS],
);

const ENV_KEYS: &[Key] = &[
    Key::new(
        "required_commands",
        Kind::List(&Kind::Text),
        "Programs that must be on PATH; checked before any case runs.",
    ),
    Key::new(
        "required_python_modules",
        Kind::List(&Kind::Text),
        "Modules `python3` must import; checked before any case runs.",
    ),
];
const ENV: KeyTable = KeyTable::new("env", "What must be installed to run the suite.", &[ENV_KEYS]);

const WORKSPACE_KEYS: &[Key] = &[
    Key::new(
        "template",
        Kind::Text,
        "A directory copied into each fresh workspace (relative to the file declaring it).",
    ),
    Key::new(
        "isolation",
        Kind::Enum(&["shared", "per_test"]),
        "`shared` (default): one workspace for the suite; `per_test`: a fresh one per case.",
    ),
    Key::new(
        "mode",
        Kind::Enum(Mode::NAMES),
        "`pooled` (default; slots reused across runs, with `repos`), `temp` or `static` (`path`).",
    ),
    Key::new(
        "path",
        Kind::Text,
        "The directory of `mode: static`, relative to the working directory; implies `mode: static`.",
    ),
    Key::new(
        "repos",
        Kind::List(&Kind::Object(&REPO)),
        "Git repositories checked out in the workspace.",
    ),
    Key::new("hooks", Kind::Object(&HOOKS), "Commands run around the cases."),
    Key::new(
        "env",
        Kind::Object(&ENV),
        "What must be installed; checked before any case runs.",
    ),
    Key::new(
        "keep_workspaces",
        Kind::Bool,
        "Keep every workspace after the run (as `--keep-workspaces`); failed cases' are always kept.",
    ),
    Key::new(
        "docker",
        Kind::Object(&DOCKER),
        "Run the case's agent, code graders and command checks in containers of this image, the workspace mounted (docs/workspaces.md#containers).",
    ),
    Key::new("static_path", Kind::Any, "Removed: use `path` with `mode: static`."),
    Key::new("pool", Kind::Any, "Removed: use `mode: pooled` or `mode: temp`."),
    Key::new("static", Kind::Any, "Removed: use `mode: static`."),
];
/// A `workspace` block.
pub const WORKSPACE: KeyTable = KeyTable::new(
    "workspace",
    "Where each case's target runs: a template copy, repositories, hooks (docs/workspaces.md).",
    &[WORKSPACE_KEYS],
);

/// Where a `workspace` block is read.
pub(super) struct Context<'a> {
    /// The eval file's directory: inline relative paths start here.
    pub eval_dir: &'a Path,
    /// Relative paths must stay inside it (the repository holding the eval file, else its
    /// directory).
    pub root: &'a Path,
    /// The working directory (`path` is relative to it).
    pub cwd: &'a Path,
    /// `${{ VAR }}` values for an external workspace file (4.x files).
    pub env: Option<&'a Env>,
    /// The eval file's generation: some defaults differ (`docker.agent`).
    pub generation: Generation,
}

/// A `workspace` value: `Some(None)` for an empty block, `None` when it has errors (reported).
pub(super) fn read(node: &Node, cx: &Context<'_>, diags: &mut Diagnostics) -> Option<Option<WorkspaceConfig>> {
    match &node.value {
        NodeValue::Null => Some(None),
        NodeValue::Str(raw) => read_file(raw, node.pos, cx, diags),
        NodeValue::Map(_) => read_block(node, cx.eval_dir, None, cx, diags),
        _ => {
            diags.error(
                node.pos,
                format!(
                    "`workspace` must be a mapping or the path of a YAML file, found {}",
                    describe(node)
                ),
                Some("for example `workspace: {template: ./template}`".to_owned()),
            );
            None
        }
    }
}

/// A workspace block held by a YAML file; its problems are reported against that file.
fn read_file(raw: &str, pos: Pos, cx: &Context<'_>, diags: &mut Diagnostics) -> Option<Option<WorkspaceConfig>> {
    let path = local_path(raw, cx.eval_dir, cx.root, "workspace file", pos, diags)?;
    if !path.is_file() {
        diags.error(
            pos,
            format!("workspace file not found: {raw} (resolved to {})", path.display()),
            Some("the path is relative to the eval file".to_owned()),
        );
        return None;
    }
    let mut file_diags = Diagnostics::new(&path);
    let result = read_file_text(&path, cx, &mut file_diags);
    let failed = file_diags.error_count() > 0;
    diags.absorb(file_diags);
    if failed {
        diags.error(pos, format!("the workspace file {} has errors", path.display()), None);
        return None;
    }
    result
}

fn read_file_text(path: &Path, cx: &Context<'_>, diags: &mut Diagnostics) -> Option<Option<WorkspaceConfig>> {
    let text = crate::config::source::read_text(path, "workspace file", diags)?;
    let mut root = match parse_yaml(&text) {
        Ok(root) => root,
        Err(e) => {
            diags.yaml_syntax(&e);
            return None;
        }
    };
    if let Some(env) = cx.env {
        for unset in interpolate_env(&mut root, &|name| env.get(name)) {
            diags.warn(unset.pos, super::cases_source::unset_message(&unset.name), None);
        }
    }
    if root.as_map().is_none() {
        diags.error(
            root.pos,
            format!(
                "a workspace file must hold a mapping (the workspace block), found {}",
                describe(&root)
            ),
            Some("write the keys of the block (`template:`, `hooks:`, ...) at the top level".to_owned()),
        );
        return None;
    }
    if let Some(inner) = root.get("workspace").filter(|n| n.as_map().is_some()) {
        diags.error(
            inner.pos,
            "a workspace file holds the block itself: remove the top-level `workspace:` wrapper",
            None,
        );
        return None;
    }
    let dir = path.parent().unwrap_or(cx.eval_dir).to_path_buf();
    read_block(&root, &dir, Some(dir.clone()), cx, diags)
}

/// The keys of one block; relative paths resolve against `base`.
fn read_block(
    node: &Node,
    base: &Path,
    file_dir: Option<PathBuf>,
    cx: &Context<'_>,
    diags: &mut Diagnostics,
) -> Option<Option<WorkspaceConfig>> {
    let before = diags.error_count();
    let mut f = Fields::of(node, &WORKSPACE, diags)?;
    for (key, message) in [
        (
            "static_path",
            "`workspace.static_path` has been removed: use `path` with `mode: static`",
        ),
        (
            "pool",
            "`workspace.pool` has been removed: use `mode: pooled` or `mode: temp`",
        ),
        ("static", "`workspace.static` has been removed: use `mode: static`"),
    ] {
        if let Some(n) = f.take(key) {
            diags.error(n.pos, message, None);
        }
    }
    let mut config = WorkspaceConfig {
        file_dir,
        ..WorkspaceConfig::default()
    };
    let template_pos = f.take("template").map(|n| n.pos);
    if let (Some(raw), Some(pos)) = (f.string("template", diags), template_pos) {
        config.template = template(&raw, base, cx, pos, diags);
    }
    config.isolation = choice(&mut f, "isolation", &["shared", "per_test"], diags).map(|v| match v.as_str() {
        "per_test" => Isolation::PerTest,
        _ => Isolation::Shared,
    });
    config.mode = choice(&mut f, "mode", Mode::NAMES, diags).and_then(|m| Mode::parse(&m));
    if let Some(raw) = f.string("path", diags) {
        config.path = Some(crate::paths::normalize(&cx.cwd.join(raw)));
        config.mode.get_or_insert(Mode::Static);
    }
    if let Some(list) = f.take("repos") {
        config.repos = Some(repos(list, base, cx, diags));
    }
    if let Some(hooks) = f.take("hooks") {
        config.hooks = workspace_hooks(hooks, base, cx, diags);
    }
    if let Some(env) = f.take("env") {
        config.env = preflight(env, diags).filter(|p| !p.is_empty());
    }
    config.keep = f.boolean("keep_workspaces", diags);
    if let Some(n) = f.take("docker") {
        config.docker = docker(n, cx.generation, diags);
    }
    f.warn_unknown(diags);
    if diags.error_count() > before {
        return None;
    }
    Some((config != WorkspaceConfig::default()).then_some(config))
}

/// A text key that must be one of `allowed`; anything else is an error naming them.
fn choice(f: &mut Fields<'_>, key: &str, allowed: &[&str], diags: &mut Diagnostics) -> Option<String> {
    let pos = f.take(key).map(|n| n.pos)?;
    let value = f.string(key, diags)?;
    if allowed.contains(&value.as_str()) {
        return Some(value);
    }
    diags.error(
        pos,
        format!("`{key}` must be one of {}, found `{value}`", allowed.join(", ")),
        crate::config::did_you_mean(&value, allowed).map(|g| format!("did you mean `{g}`?")),
    );
    None
}

fn template(raw: &str, base: &Path, cx: &Context<'_>, pos: Pos, diags: &mut Diagnostics) -> Option<PathBuf> {
    let path = local_path(raw, base, cx.root, "template", pos, diags)?;
    match std::fs::metadata(&path) {
        Ok(m) if m.is_dir() => Some(path),
        // A file names its directory (a VS Code `.code-workspace` file, AgentV 4.x's rule).
        Ok(_) => path.parent().map(Path::to_path_buf),
        Err(_) => {
            diags.error(
                pos,
                format!("template not found: {raw} (resolved to {})", path.display()),
                Some("the path is relative to the file declaring the workspace".to_owned()),
            );
            None
        }
    }
}

/// `raw` as an absolute path: absolute as written, else relative to `base`. A relative path
/// whose `..` leaves `root` is an error: a suite reaches outside its own tree only on purpose.
pub(super) fn local_path(
    raw: &str,
    base: &Path,
    root: &Path,
    what: &str,
    pos: Pos,
    diags: &mut Diagnostics,
) -> Option<PathBuf> {
    let written = Path::new(raw);
    if written.is_absolute() {
        return Some(crate::paths::normalize(written));
    }
    let path = crate::paths::normalize(&base.join(written));
    if !path.starts_with(crate::paths::normalize(root)) {
        diags.error(
            pos,
            format!(
                "the {what} `{raw}` leaves the suite's directory {} (resolved to {})",
                root.display(),
                path.display()
            ),
            Some("write an absolute path if the suite is meant to reach outside its own tree".to_owned()),
        );
        return None;
    }
    Some(path)
}

fn workspace_hooks(node: &Node, base: &Path, cx: &Context<'_>, diags: &mut Diagnostics) -> Option<Hooks> {
    let mut f = Fields::of(node, &HOOKS, diags)?;
    let mut hooks = Hooks {
        enabled: f.boolean("enabled", diags),
        ..Hooks::default()
    };
    for point in HookPoint::ALL {
        if let Some(n) = f.take(point.name()) {
            let hook = hook(n, point, base, cx, diags);
            match point {
                HookPoint::BeforeAll => hooks.before_all = hook,
                HookPoint::BeforeEach => hooks.before_each = hook,
                HookPoint::AfterEach => hooks.after_each = hook,
                HookPoint::AfterAll => hooks.after_all = hook,
            }
        }
    }
    f.warn_unknown(diags);
    Some(hooks)
}

fn hook(node: &Node, point: HookPoint, base: &Path, cx: &Context<'_>, diags: &mut Diagnostics) -> Option<Hook> {
    let mut f = Fields::of(node, &HOOK, diags)?;
    if f.written("command") == "script" {
        diags.warn(
            f.pos,
            format!("`{}.script` is deprecated: use `command`", point.name()),
            None,
        );
    }
    let command = f.take("command").and_then(|n| command(n, false, diags));
    let timeout_ms = f.integer("timeout_ms", diags).and_then(|t| u64::try_from(t).ok());
    let cwd_pos = f.take("cwd").map(|n| n.pos);
    let cwd = match (f.string("cwd", diags), cwd_pos) {
        (Some(raw), Some(pos)) => Some(local_path(&raw, base, cx.root, "hook cwd", pos, diags)?),
        _ => None,
    };
    let reset = choice(&mut f, "reset", &["none", "fast", "strict"], diags).map(|r| match r.as_str() {
        "fast" => Reset::Fast,
        "strict" => Reset::Strict,
        _ => Reset::None,
    });
    f.warn_unknown(diags);
    if command.is_none() && reset.is_none() {
        diags.warn(
            f.pos,
            format!(
                "the `{}` hook has neither `command` nor `reset`: it does nothing",
                point.name()
            ),
            None,
        );
        return None;
    }
    Some(Hook {
        command,
        timeout_ms,
        cwd,
        reset,
    })
}

/// A hook's argv. A string is split on whitespace for workspace hooks (AgentV 4.x does, without
/// quoting) and run by `sh -c` for target hooks.
fn command(node: &Node, shell: bool, diags: &mut Diagnostics) -> Option<Vec<String>> {
    let argv: Vec<String> = match &node.value {
        NodeValue::Str(s) if shell => vec!["sh".into(), "-c".into(), s.clone()],
        NodeValue::Str(s) => s.split_whitespace().map(str::to_owned).collect(),
        NodeValue::Seq(items) => items.iter().filter_map(Node::scalar_text).collect(),
        _ => Vec::new(),
    };
    if argv.first().is_none_or(|p| p.trim().is_empty()) {
        diags.error(
            node.pos,
            format!(
                "a hook's `command` must be a non-empty argv list or string, found {}",
                describe(node)
            ),
            Some("for example `command: [python3, setup.py]`".to_owned()),
        );
        return None;
    }
    Some(argv)
}

fn repos(node: &Node, base: &Path, cx: &Context<'_>, diags: &mut Diagnostics) -> Vec<Repo> {
    let Some(items) = node.as_seq() else {
        diags.error(
            node.pos,
            format!("`repos` must be a list, found {}", describe(node)),
            None,
        );
        return Vec::new();
    };
    items.iter().filter_map(|item| repo(item, base, cx, diags)).collect()
}

fn repo(node: &Node, base: &Path, cx: &Context<'_>, diags: &mut Diagnostics) -> Option<Repo> {
    let before = diags.error_count();
    let mut f = Fields::of(node, &REPO, diags)?;
    for (key, message) in [
        ("source", "`repos[].source` has been removed: use `repo`"),
        (
            "checkout",
            "`repos[].checkout` has been removed: use `commit`, `base_commit` and `ancestor`",
        ),
        ("clone", "`repos[].clone` has been removed: use `sparse`"),
    ] {
        if let Some(n) = f.take(key) {
            diags.error(n.pos, message, None);
        }
    }
    let path = f.required_string("path", "a repository", diags);
    let repo_pos = f.take("repo").map_or(f.pos, |n| n.pos);
    let repo = f.required_string("repo", "a repository", diags);
    let commit = f.string("commit", diags);
    let base_commit_pos = f.take("base_commit").map_or(f.pos, |n| n.pos);
    let base_commit = f.string("base_commit", diags);
    if let (Some(a), Some(b)) = (&commit, &base_commit)
        && a != b
    {
        diags.error(
            base_commit_pos,
            "`commit` and `base_commit` must match when both are set",
            None,
        );
    }
    let ancestor = f.integer("ancestor", diags).and_then(|n| u32::try_from(n).ok());
    let sparse: Vec<String> = f
        .take("sparse")
        .and_then(Node::as_seq)
        .map(|items| items.iter().filter_map(Node::scalar_text).collect())
        .unwrap_or_default();
    f.warn_unknown(diags);
    let commit = commit.or(base_commit);
    for value in commit.iter().chain(&sparse).chain(&repo) {
        if value.starts_with('-') || value.contains('\0') || value.trim().is_empty() {
            diags.error(
                f.pos,
                format!("`{value}` is not a valid git argument here (empty, or starts with `-`)"),
                None,
            );
        }
    }
    if let Some(p) = &path
        && (Path::new(p).is_absolute() || crate::paths::normalize(Path::new(p)).starts_with(".."))
    {
        diags.error(
            f.pos,
            format!("the repository `path` `{p}` must stay inside the workspace"),
            None,
        );
    }
    let repo = repo.map(|r| repo_source(&r, base, cx, repo_pos, diags));
    if diags.error_count() > before {
        return None;
    }
    Some(Repo {
        path: path?,
        repo: repo??,
        commit,
        ancestor,
        sparse,
    })
}

/// What to clone: a URL as written, `org/name` as a GitHub URL, or a local repository as an
/// absolute path (`./` and `../` paths are relative to the file declaring the workspace).
fn repo_source(raw: &str, base: &Path, cx: &Context<'_>, pos: Pos, diags: &mut Diagnostics) -> Option<String> {
    if raw.contains("://") || raw.starts_with("git@") {
        return Some(raw.to_owned());
    }
    let local = raw.starts_with("./") || raw.starts_with("../") || Path::new(raw).is_absolute();
    if !local && is_github_shorthand(raw) {
        return Some(format!("https://github.com/{raw}.git"));
    }
    let path = local_path(raw, base, cx.root, "repository", pos, diags)?;
    if !path.exists() {
        diags.error(
            pos,
            format!("repository not found: {raw} (resolved to {})", path.display()),
            Some("write a clone URL, a GitHub `org/name`, or the path of a local repository".to_owned()),
        );
        return None;
    }
    Some(path.display().to_string())
}

/// `org/name`, as AgentV 4.x recognises it.
fn is_github_shorthand(raw: &str) -> bool {
    let part = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    raw.split_once('/').is_some_and(|(org, name)| part(org) && part(name))
}

/// `docker: {image, timeout, memory, cpus, agent}`; `None` after an error.
fn docker(node: &Node, generation: Generation, diags: &mut Diagnostics) -> Option<Docker> {
    let mut f = Fields::of(node, &DOCKER, diags)?;
    let before = diags.error_count();
    let image = f.required_string("image", "workspace.docker", diags);
    let timeout = f.number("timeout", diags);
    let cpus = f.number("cpus", diags);
    let memory = f.string("memory", diags);
    let agent = f
        .boolean("agent", diags)
        .unwrap_or_else(|| crate::evaluators::rules::docker_runs_agent(generation));
    if let Some(image) = image.as_ref().filter(|i| i.trim().is_empty() || i.starts_with('-')) {
        diags.error(
            node.pos,
            format!("`docker.image` must name an image, found `{image}`"),
            None,
        );
    }
    f.warn_unknown(diags);
    (diags.error_count() == before).then(|| Docker {
        image: image.unwrap_or_default(),
        timeout: timeout.map(|t| t.ceil() as u64),
        memory,
        cpus,
        agent,
    })
}

fn preflight(node: &Node, diags: &mut Diagnostics) -> Option<Preflight> {
    let mut f = Fields::of(node, &ENV, diags)?;
    let list = |f: &mut Fields<'_>, key: &str| -> Vec<String> {
        f.take(key)
            .and_then(Node::as_seq)
            .map(|items| items.iter().filter_map(Node::scalar_text).collect())
            .unwrap_or_default()
    };
    let p = Preflight {
        required_commands: list(&mut f, "required_commands"),
        required_python_modules: list(&mut f, "required_python_modules"),
    };
    f.warn_unknown(diags);
    Some(p)
}

/// The hooks of the targets listed in `execution.targets` (entries `{name, hooks}`). A string
/// command runs by `sh -c`, and `cwd` is relative to the working directory, as AgentV 4.x reads
/// them.
pub(super) fn target_hooks(list: &Node, cwd: &Path, diags: &mut Diagnostics) -> Vec<TargetHooks> {
    let mut out = Vec::new();
    for entry in list.as_seq().unwrap_or_default() {
        let (Some(name), Some(node)) = (entry.get("name").and_then(Node::scalar_text), entry.get("hooks")) else {
            continue;
        };
        let Some(mut f) = Fields::of(node, &TARGET_HOOKS, diags) else {
            continue;
        };
        let mut hooks = Hooks::default();
        for point in HookPoint::ALL {
            let Some(n) = f.take(point.name()) else { continue };
            let Some(mut hf) = Fields::of(n, &TARGET_HOOK, diags) else {
                continue;
            };
            let hook = Hook {
                command: hf.take("command").and_then(|c| command(c, true, diags)),
                timeout_ms: hf.integer("timeout_ms", diags).and_then(|t| u64::try_from(t).ok()),
                cwd: hf.string("cwd", diags).map(|c| crate::paths::normalize(&cwd.join(c))),
                reset: None,
            };
            hf.warn_unknown(diags);
            let hook = hook.command.is_some().then_some(hook);
            match point {
                HookPoint::BeforeAll => hooks.before_all = hook,
                HookPoint::BeforeEach => hooks.before_each = hook,
                HookPoint::AfterEach => hooks.after_each = hook,
                HookPoint::AfterAll => hooks.after_all = hook,
            }
        }
        f.warn_unknown(diags);
        out.push(TargetHooks { target: name, hooks });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_shorthand_is_org_slash_name_only() {
        for (raw, want) in [
            ("EntityProcess/agentv", true),
            ("a.b/c-d_e", true),
            ("a/b/c", false),
            ("/abs/path", false),
            ("name", false),
            ("org/", false),
        ] {
            assert_eq!(is_github_shorthand(raw), want, "{raw}");
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::too_many_lines,
    reason = "a table-driven test keeps its rows and checks in one place"
)]
mod loader_tests {
    use crate::load::LoadedSuite;
    use crate::model::Generation;
    use crate::model::workspace::{Isolation, Mode, Reset};

    use crate::load::test_project::errors;

    fn load(files: &[(&str, &str)]) -> (LoadedSuite, tempfile::TempDir) {
        crate::load::test_project::load(files, "evals/e.yaml")
    }

    #[test]
    fn a_case_block_merges_over_an_external_suite_file() {
        let (suite, tmp) = load(&[
            (
                "shared/workspace.yaml",
                "template: ./tpl\nisolation: per_test\nhooks:\n  before_each: {command: echo hi there, timeout_ms: 500}\n",
            ),
            ("shared/tpl/a.txt", "a"),
            (
                "evals/e.yaml",
                "workspace: ../shared/workspace.yaml\ntests:\n  - id: a\n    criteria: c\n    input: q\n    workspace:\n      hooks:\n        before_each: {reset: fast}\n  - {id: b, criteria: c, input: q}\n",
            ),
        ]);
        assert!(errors(&suite).is_empty(), "{:?}", suite.diagnostics);
        let config = suite.cases[0]
            .case
            .workspace
            .as_ref()
            .and_then(|w| w.config.clone())
            .expect("workspace");
        assert_eq!(
            config.template.as_deref(),
            Some(tmp.path().join("shared/tpl").as_path())
        );
        assert_eq!(config.isolation, Some(Isolation::PerTest));
        assert_eq!(config.file_dir.as_deref(), Some(tmp.path().join("shared").as_path()));
        let hook = config.hooks.and_then(|h| h.before_each).expect("before_each");
        assert_eq!(
            hook.command,
            Some(vec!["echo".into(), "hi".into(), "there".into()]),
            "split on whitespace"
        );
        assert_eq!(hook.timeout_ms, Some(500), "kept from the suite");
        assert_eq!(hook.reset, Some(Reset::Fast), "added by the case");
        let other = suite.cases[1]
            .case
            .workspace
            .as_ref()
            .and_then(|w| w.config.clone())
            .expect("workspace");
        assert_eq!(other.hooks.and_then(|h| h.before_each).and_then(|h| h.reset), None);
    }

    #[test]
    fn docker_agent_defaults_to_true_in_agentv_files_and_false_in_4x_files() {
        let suite_2x = "evalcases:\n  - {id: a, expected_outcome: x, input_messages: [{role: user, content: q}]}\n";
        let suite_4x = "tests:\n  - {id: a, criteria: x, input: q}\n";
        for (docker, cases, agent) in [
            ("{image: i}", suite_2x, true),
            ("{image: i}", suite_4x, false),
            ("{image: i, agent: false}", suite_2x, false),
            ("{image: i, agent: true}", suite_4x, true),
        ] {
            let eval = format!("workspace: {{template: ./tpl, docker: {docker}}}\n{cases}");
            let (suite, _t) = load(&[("evals/tpl/a.txt", "a"), ("evals/e.yaml", &eval)]);
            assert!(errors(&suite).is_empty(), "{:?}", suite.diagnostics);
            let config = suite.cases[0].case.workspace.as_ref().and_then(|w| w.config.clone());
            let found = config.and_then(|c| c.docker).map(|d| d.agent);
            assert_eq!(found, Some(agent), "{eval}");
        }
        let (suite, _t) = load(&[
            ("evals/tpl/a.txt", "a"),
            (
                "evals/e.yaml",
                &format!("workspace: {{template: ./tpl, docker: {{image: i, agent: yes-please}}}}\n{suite_4x}"),
            ),
        ]);
        assert!(
            errors(&suite).iter().any(|e| e.contains("agent")),
            "{:?}",
            suite.diagnostics
        );
    }

    #[test]
    fn a_2x_file_keeps_its_generation_with_a_workspace() {
        let (suite, _t) = load(&[
            ("evals/tpl/a.txt", "a"),
            (
                "evals/e.yaml",
                "workspace: {template: ./tpl, path: ./here}\nevalcases:\n  - {id: a, expected_outcome: x, input_messages: [{role: user, content: q}]}\n",
            ),
        ]);
        assert!(errors(&suite).is_empty(), "{:?}", suite.diagnostics);
        assert_eq!(suite.generation, Generation::V2);
        let config = suite.cases[0]
            .case
            .workspace
            .as_ref()
            .and_then(|w| w.config.clone())
            .expect("workspace");
        assert_eq!(config.mode, Some(Mode::Static), "a path implies static");
    }

    #[test]
    fn workspace_mistakes_are_errors_at_their_line() {
        type Files<'a> = &'a [(&'a str, &'a str)];
        let rows: &[(&str, Files<'_>, &str)] = &[
            (
                "removed static_path",
                &[(
                    "evals/e.yaml",
                    "workspace: {static_path: /x}\ntests: [{id: a, criteria: c, input: q}]\n",
                )],
                "e.yaml:1:26: error: `workspace.static_path` has been removed",
            ),
            (
                "removed pool",
                &[(
                    "evals/e.yaml",
                    "workspace: {pool: true}\ntests: [{id: a, criteria: c, input: q}]\n",
                )],
                "`workspace.pool` has been removed",
            ),
            (
                "removed repo source",
                &[(
                    "evals/e.yaml",
                    "workspace: {repos: [{path: r, repo: a/b, source: x}]}\ntests: [{id: a, criteria: c, input: q}]\n",
                )],
                "`repos[].source` has been removed",
            ),
            (
                "commits disagree",
                &[(
                    "evals/e.yaml",
                    "workspace: {repos: [{path: r, repo: a/b, commit: x, base_commit: y}]}\ntests: [{id: a, criteria: c, input: q}]\n",
                )],
                "`commit` and `base_commit` must match",
            ),
            (
                "missing template",
                &[(
                    "evals/e.yaml",
                    "workspace: {template: ./nope}\ntests: [{id: a, criteria: c, input: q}]\n",
                )],
                "template not found: ./nope",
            ),
            (
                "template escapes",
                &[(
                    "evals/e.yaml",
                    "workspace: {template: ../../../etc}\ntests: [{id: a, criteria: c, input: q}]\n",
                )],
                "leaves the suite's directory",
            ),
            (
                "hook cwd escapes",
                &[(
                    "evals/e.yaml",
                    "workspace: {hooks: {before_all: {command: [x], cwd: ../../..}}}\ntests: [{id: a, criteria: c, input: q}]\n",
                )],
                "the hook cwd `../../..` leaves the suite's directory",
            ),
            (
                "wrapper in a file",
                &[
                    ("evals/w.yaml", "workspace:\n  template: ./t\n"),
                    (
                        "evals/e.yaml",
                        "workspace: ./w.yaml\ntests: [{id: a, criteria: c, input: q}]\n",
                    ),
                ],
                "remove the top-level `workspace:` wrapper",
            ),
            (
                "file not found",
                &[(
                    "evals/e.yaml",
                    "workspace: ./none.yaml\ntests: [{id: a, criteria: c, input: q}]\n",
                )],
                "workspace file not found: ./none.yaml",
            ),
            (
                "wrong isolation",
                &[(
                    "evals/e.yaml",
                    "workspace: {isolation: per-test}\ntests: [{id: a, criteria: c, input: q}]\n",
                )],
                "isolation",
            ),
            (
                "case block wrong type",
                &[(
                    "evals/e.yaml",
                    "tests: [{id: a, criteria: c, input: q, workspace: [1]}]\n",
                )],
                "`workspace` must be a mapping or the path of a YAML file",
            ),
            (
                "missing repo path",
                &[(
                    "evals/e.yaml",
                    "workspace: {repos: [{repo: a/b}]}\ntests: [{id: a, criteria: c, input: q}]\n",
                )],
                "missing the required key `path`",
            ),
        ];
        for (what, files, want) in rows {
            let (suite, _t) = load(files);
            let errors = errors(&suite);
            assert!(errors.iter().any(|e| e.contains(want)), "{what}: {errors:#?}");
            assert!(suite.cases.is_empty(), "{what}: the case is left out");
        }
    }
}
