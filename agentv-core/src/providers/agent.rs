//! What the agent CLI providers share: finding the executable, the working directory, the
//! preread block, stream logs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, json};

use super::settings::node_text;
use super::{BuildContext, ExecutableNeed, ProviderError, ProviderRequest, ProviderResponse, TargetSettings};
use crate::config::{DurationRange, Key, Kind};
use crate::paths::TargetPath;
use crate::process::{self, ProcessError, ProcessSpec};
use crate::redact::{Secrets, StreamLog};

/// Keys every agent CLI target accepts (read by [`config`]).
pub const AGENT_KEYS: &[Key] = &[
    Key::new(
        "executable",
        Kind::Text,
        "The agent's program: a name on PATH, or a path relative to the targets file.",
    )
    .aliases(&["command", "binary"]),
    Key::new(
        "args",
        Kind::List(&Kind::Text),
        "Extra arguments after the built-in ones.",
    )
    .aliases(&["arguments"]),
    Key::new(
        "cwd",
        Kind::Text,
        "Working directory, relative to the eval file's directory (default: a fresh temporary workspace per call).",
    ),
    Key::new(
        "timeout_seconds",
        Kind::Duration(DurationRange::TIMEOUT_SECONDS),
        "Per call (the run's `--timeout` applies too).",
    ),
    Key::new("model", Kind::Text, "Model the agent uses."),
    Key::new(
        "system_prompt",
        Kind::Text,
        "Replaces the default instruction to answer in the response.",
    ),
    Key::new(
        "log_dir",
        Kind::Text,
        "Where stream logs go, relative to the targets file (default .agentv/logs/<provider>/).",
    )
    .aliases(&["log_directory", "stream_log_dir"]),
    Key::new("log_format", Kind::Text, "Accepted for compatibility; not used."),
];

/// The executable setting, as the provider entries name it.
pub const EXECUTABLE_SETTING: &str = "executable";

/// Claude Code's program, for the entry's [`ExecutableNeed`].
pub const CLAUDE_CODE: ExecutableNeed = ExecutableNeed {
    display: "Claude Code",
    setting: EXECUTABLE_SETTING,
};

/// Codex's program, for the entry's [`ExecutableNeed`].
pub const CODEX: ExecutableNeed = ExecutableNeed {
    display: "Codex",
    setting: EXECUTABLE_SETTING,
};

/// Told to agents when the target sets no system prompt: answer in the response itself.
pub const DEFAULT_AGENT_SYSTEM_PROMPT: &str = "Answer in your final response. Do not create or modify files in the workspace: put any code change in the response as `diff --git` unified diffs.";

/// The timeout of an agent or command when its target sets none: a day. The run's own
/// `--timeout` wraps every call, so this only bounds calls made outside a run.
pub const ONE_DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// Settings every agent CLI takes.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Name on PATH or a path.
    pub executable: String,
    /// Extra arguments after the built-in ones.
    pub args: Vec<String>,
    /// Working directory as written (relative: to the eval file's directory); `None` = a fresh
    /// temporary workspace per call.
    pub cwd: Option<TargetPath>,
    pub timeout: Option<Duration>,
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    /// Where stream logs go (default `.agentv/logs/<provider>/`).
    pub log_dir: Option<PathBuf>,
    /// Variables from `.env` files.
    pub env: std::sync::Arc<[(String, String)]>,
    /// Redacted from the stream logs.
    pub secrets: Secrets,
}

/// The executable's full path: `name` itself when it contains a `/`, else the first match on
/// `PATH`; only files the user may execute count.
pub fn find_executable(name: &str) -> Option<PathBuf> {
    which::which(name).ok()
}

/// The directory an agent runs in; a temporary one is deleted when this is dropped.
pub struct AgentDir {
    pub path: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

/// `cwd`, or a fresh temporary workspace named after `prefix`.
pub fn agent_dir(cwd: Option<&Path>, prefix: &str) -> std::io::Result<AgentDir> {
    match cwd {
        Some(dir) => Ok(AgentDir {
            path: dir.to_path_buf(),
            _temp: None,
        }),
        None => {
            let temp = tempfile::Builder::new().prefix(prefix).tempdir()?;
            Ok(AgentDir {
                path: temp.path().to_path_buf(),
                _temp: Some(temp),
            })
        }
    }
}

/// `file://` URL of an absolute path, every reserved character escaped. A relative path (which
/// has no URL) is shown as `file://` and the path.
pub fn file_url(path: &Path) -> String {
    url::Url::from_file_path(path).map_or_else(|()| format!("file://{}", path.display()), String::from)
}

/// How a file is named to the agent: relative to its working directory when inside it.
fn display(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

/// The preread block: the guideline and input files the agent must read first, as links.
/// Empty when there are no files.
pub fn preread_block(guidelines: &[PathBuf], inputs: &[PathBuf], cwd: &Path) -> String {
    let list = |files: &[PathBuf]| -> String {
        files
            .iter()
            .map(|f| format!("* [{}]({})", display(f, cwd), file_url(f)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut parts = Vec::new();
    if !guidelines.is_empty() {
        parts.push(format!("Read all guideline files:\n{}", list(guidelines)));
    }
    if !inputs.is_empty() {
        parts.push(format!("Read all input files:\n{}", list(inputs)));
    }
    if parts.is_empty() {
        return String::new();
    }
    parts.push("If any file is missing, fail with ERROR: missing-file <filename> and stop.".to_owned());
    parts.join("\n\n")
}

/// The prompt document: system prompt, preread block, then the user query.
pub fn prompt_document(system_prompt: Option<&str>, preread: &str, question: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(s) = system_prompt.filter(|s| !s.is_empty()) {
        parts.push(s.to_owned());
    }
    if !preread.is_empty() {
        parts.push(preread.to_owned());
    }
    parts.push(format!("[[ ## user_query ## ]]\n{question}"));
    parts.join("\n\n")
}

/// Where to stream an agent's output: `<log_dir or .agentv/logs/<kind>>/<eval_id>-<attempt>-<time>.log`,
/// unless `env_var` is `false`, `0` or `off`.
pub fn stream_log_path(
    kind: &str,
    env_var: &str,
    log_dir: Option<&Path>,
    eval_id: &str,
    attempt: u32,
) -> Option<PathBuf> {
    if std::env::var(env_var).is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "false" | "0" | "off")) {
        return None;
    }
    let dir = log_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".agentv").join("logs").join(kind));
    let safe = crate::paths::file_name_safe(eval_id);
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S%3f");
    Some(dir.join(format!("{safe}-{attempt}-{stamp}.log")))
}

/// What differs between agent CLIs when running one.
pub struct AgentProfile {
    /// For messages: `claude`, `codex`.
    pub program: &'static str,
    /// Log folder under `.agentv/logs/`.
    pub logs: &'static str,
    /// The variable that turns stream logs off.
    pub logs_env: &'static str,
    /// Variables removed from the agent's environment.
    pub env_remove: &'static [&'static str],
    /// Also write the prompt to `prompt.md` in a temporary workspace.
    pub prompt_md: bool,
    /// Variables passed into a container (`docker.agent`) when they are set: what the CLI
    /// reads to reach its model.
    pub container_env: &'static [&'static str],
}

/// Why an agent's output is not an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentOutputError {
    /// The agent reported a failure itself (an error result, a failed turn): its own words.
    #[error("{0}")]
    Reported(String),
    /// The output is not what the agent prints when it finishes (no result, no message).
    #[error("{0}")]
    Unreadable(String),
    /// The output holds no JSON event at all. The caller quotes the output, secrets redacted.
    #[error("the agent printed no JSON events")]
    NoEvents,
}

/// Runs an agent CLI once: finds the executable, prepares the workspace, sends the prompt on
/// stdin, streams the output to the log, then turns the outcome into a response with `parse`.
/// A non-zero exit is an error with the exit code and the agent's own report when `parse` found
/// one ([`AgentOutputError::Reported`]), else the last stdout lines and stderr.
pub async fn run(
    config: &AgentConfig,
    profile: &AgentProfile,
    request: &ProviderRequest,
    args: Vec<String>,
    prompt: impl FnOnce(&Path) -> String,
    parse: impl FnOnce(&str) -> Result<ProviderResponse, AgentOutputError>,
) -> Result<ProviderResponse, ProviderError> {
    let executable = agent_executable(config, profile, request)?;
    let cwd = agent_cwd(config, request)?;
    let dir = agent_dir(cwd.as_deref(), &format!("agentv-{}-", profile.program))
        .map_err(|e| ProviderError::io("cannot create the agent workspace", e))?;
    let prompt = prompt(&dir.path);
    if profile.prompt_md && cwd.is_none() {
        let _ = std::fs::write(dir.path.join("prompt.md"), &prompt);
    }
    let mut argv = vec![executable.display().to_string()];
    argv.extend(args);
    if let Some(container) = &request.container {
        argv = container.wrap(&argv, &dir.path, container_env(config, profile));
    }
    let (log, stream_log) = open_stream_log(config, profile, request)?;
    let started = Instant::now();
    let outcome = process::run(ProcessSpec {
        argv: &argv,
        cwd: &dir.path,
        env: &config.env,
        env_remove: profile.env_remove,
        stdin: Some(prompt.as_bytes()),
        timeout: config.timeout.unwrap_or(ONE_DAY),
        tee: stream_log.as_ref(),
        keep_children: false,
    })
    .await;
    let log_note = log
        .as_ref()
        .map(|p| format!(" (log: {})", p.display()))
        .unwrap_or_default();
    let done = match outcome {
        Ok(done) => done,
        Err(ProcessError::TimedOut(d)) => return Err(ProviderError::Timeout(d)),
        Err(e) => return Err(ProviderError::Spawn(format!("{e}{log_note}"))),
    };
    let parsed = parse(&String::from_utf8_lossy(&done.stdout));
    if !done.status.success() {
        return Err(exit_error(config, profile, &done, &parsed, &log_note));
    }
    let mut response = parsed.map_err(|e| match e {
        AgentOutputError::Reported(report) => ProviderError::Reported(format!("{report}{log_note}")),
        AgentOutputError::Unreadable(problem) => {
            ProviderError::malformed(profile.program, format!("{problem}{log_note}"))
        }
        AgentOutputError::NoEvents => ProviderError::Malformed {
            from: profile.program.to_owned(),
            problem: format!(
                "no JSON events; output was: {}{log_note}",
                process::tail(&String::from_utf8_lossy(&done.stdout), 300, &config.secrets)
            ),
        },
    })?;
    response.duration_ms = response.duration_ms.or(Some(started.elapsed().as_secs_f64() * 1000.0));
    if let Some(path) = log {
        response
            .metadata
            .get_or_insert_with(Map::new)
            .insert("log_path".to_owned(), json!(path.display().to_string()));
    }
    Ok(response)
}

/// The agent's executable. In a container the program is the image's, named as written
/// (`docs/workspaces.md#containers`); elsewhere it must be found on `PATH`.
fn agent_executable(
    config: &AgentConfig,
    profile: &AgentProfile,
    request: &ProviderRequest,
) -> Result<PathBuf, ProviderError> {
    match &request.container {
        Some(_) => Ok(PathBuf::from(&config.executable)),
        None => find_executable(&config.executable).ok_or_else(|| {
            ProviderError::Setup(format!(
                "{} executable `{}` not found; install it or set `executable` on the target",
                profile.program,
                config.secrets.redact(&config.executable)
            ))
        }),
    }
}

/// The directory the agent runs in, when it is given one: a case's workspace wins over the
/// target's own `cwd` (`docs/workspaces.md`), which must exist.
fn agent_cwd(config: &AgentConfig, request: &ProviderRequest) -> Result<Option<PathBuf>, ProviderError> {
    let cwd = match &request.workspace {
        Some(workspace) => Some(workspace.clone()),
        None => config.cwd.as_ref().map(|c| c.resolve(request.eval_dir.as_deref())),
    };
    if let Some(cwd) = cwd.as_ref().filter(|c| !c.is_dir()) {
        return Err(ProviderError::Setup(format!(
            "working directory {} does not exist (a relative `cwd` is resolved against the eval file's directory)",
            cwd.display()
        )));
    }
    Ok(cwd)
}

/// The stream log's path, when logs are on, and the log itself. It is opened before spawning,
/// so a log that cannot be written does not start the agent.
fn open_stream_log(
    config: &AgentConfig,
    profile: &AgentProfile,
    request: &ProviderRequest,
) -> Result<(Option<PathBuf>, Option<StreamLog>), ProviderError> {
    let log = stream_log_path(
        profile.logs,
        profile.logs_env,
        config.log_dir.as_deref(),
        &request.eval_id,
        request.attempt,
    );
    let stream_log = match &log {
        Some(path) => Some(
            StreamLog::create(path, &config.secrets)
                .map_err(|e| ProviderError::io(format!("cannot open the stream log {}", path.display()), e))?,
        ),
        None => None,
    };
    Ok((log, stream_log))
}

/// A non-zero exit: the exit code and the agent's own report when it made one, else the last
/// stdout lines and stderr.
fn exit_error(
    config: &AgentConfig,
    profile: &AgentProfile,
    done: &process::Exited,
    parsed: &Result<ProviderResponse, AgentOutputError>,
    log_note: &str,
) -> ProviderError {
    let why = match parsed {
        Err(AgentOutputError::Reported(report)) => report.clone(),
        // stderr last: where a crash says why (the end of a traceback), which the console
        // shows of a multi-line error.
        _ => format!(
            "last stdout lines:\n{}\nstderr: {}",
            last_lines(&done.stdout, 5, &config.secrets),
            process::tail(&String::from_utf8_lossy(&done.stderr), 1000, &config.secrets)
        ),
    };
    ProviderError::Exited {
        program: profile.program.to_owned(),
        code: done.code_text(),
        output: format!("{why}{log_note}"),
    }
}

/// The variables an agent in a container gets, by name: the `.env` ones, then those of
/// `profile.container_env` set here (its API key and endpoint).
fn container_env<'a>(config: &'a AgentConfig, profile: &AgentProfile) -> Vec<&'a str> {
    let mut names: Vec<&str> = config.env.iter().map(|(name, _)| name.as_str()).collect();
    names.extend(
        profile
            .container_env
            .iter()
            .copied()
            .filter(|name| std::env::var_os(name).is_some()),
    );
    names
}

/// The last `n` non-empty lines of `output`, secrets redacted, for error messages.
pub fn last_lines(output: &[u8], n: usize, secrets: &Secrets) -> String {
    let text = String::from_utf8_lossy(output);
    // Redacted whole, before lines are picked and cut: a secret may span lines.
    let text = secrets.redact(&text);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    lines[start..]
        .iter()
        .map(|l| crate::process::tail(l, 400, secrets))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Settings of an agent CLI target ([`AGENT_KEYS`]); `default_exe` runs when none is set.
pub(crate) fn config(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>, default_exe: &str) -> AgentConfig {
    let executable = s.string("executable", true).unwrap_or_else(|| default_exe.to_owned());
    // A relative path (not a bare name looked up on PATH) is relative to the targets file.
    let executable = if executable.contains('/') && !executable.starts_with('/') {
        s.path(&executable).display().to_string()
    } else {
        executable
    };
    let mut args = Vec::new();
    if let Some(node) = s.tree("args") {
        match node.as_seq() {
            // An item whose variable is unset is null here and already recorded as missing.
            Some(items) => args.extend(items.iter().filter_map(node_text)),
            None => s.error(node.pos, "`args` must be a list of strings".to_owned(), None),
        }
    }
    let cwd = s.dir("cwd");
    let timeout = s.duration("timeout_seconds");
    let model = s.string("model", true);
    let system_prompt = s.string("system_prompt", true);
    let log_dir = s.string("log_dir", false).map(|d| s.path(&d));
    let _ = s.string("log_format", false);
    AgentConfig {
        executable,
        args,
        cwd,
        timeout,
        model,
        system_prompt,
        log_dir,
        env: ctx.child_env.clone(),
        secrets: s.secrets().clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preread_links_files_relative_to_the_workspace() {
        let block = preread_block(
            &[PathBuf::from("/repo/style.instructions.md")],
            &[PathBuf::from("/repo/src/my file.py"), PathBuf::from("/elsewhere/x.md")],
            Path::new("/repo"),
        );
        assert_eq!(
            block,
            "Read all guideline files:\n* [style.instructions.md](file:///repo/style.instructions.md)\n\nRead all input files:\n* [src/my file.py](file:///repo/src/my%20file.py)\n* [/elsewhere/x.md](file:///elsewhere/x.md)\n\nIf any file is missing, fail with ERROR: missing-file <filename> and stop."
        );
        assert_eq!(preread_block(&[], &[], Path::new("/")), "");
    }

    #[test]
    fn prompt_document_orders_its_parts() {
        assert_eq!(
            prompt_document(Some("S"), "P", "Q"),
            "S\n\nP\n\n[[ ## user_query ## ]]\nQ"
        );
        assert_eq!(prompt_document(None, "", "Q"), "[[ ## user_query ## ]]\nQ");
    }

    #[test]
    fn finds_executables_on_path_or_by_path() {
        assert!(find_executable("sh").is_some());
        assert!(find_executable("/bin/sh").is_some());
        assert!(find_executable("agentv-no-such-binary").is_none());
        assert!(find_executable("/no/such/claude").is_none());
    }

    #[test]
    fn a_file_without_the_execute_bit_is_not_an_executable() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("claude");
        std::fs::write(&path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(find_executable(&path.display().to_string()).is_none(), "not executable");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert_eq!(find_executable(&path.display().to_string()), Some(path));
    }

    #[test]
    fn file_urls_escape_every_reserved_character() {
        for (path, want) in [
            ("/repo/my file.py", "file:///repo/my%20file.py"),
            ("/repo/a#b?c%d.md", "file:///repo/a%23b%3Fc%25d.md"),
            ("/repo/[x]{y}<z>.md", "file:///repo/[x]%7By%7D%3Cz%3E.md"),
            ("/repo/café.md", "file:///repo/caf%C3%A9.md"),
        ] {
            assert_eq!(file_url(Path::new(path)), want, "{path}");
        }
    }
}
