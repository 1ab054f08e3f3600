//! `cli`: runs a shell command template per case and reads the answer from `{OUTPUT_FILE}`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::OnceCell;

use super::answer::parse_answer;
use super::template::{render, shell_quote, unknown_cli_placeholders};
use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderError, ProviderFuture, ProviderKind,
    ProviderRequest, ProviderResponse, TargetSettings,
};
use crate::config::{DurationRange, Key, KeyTable, Kind, Pos};
use crate::model::workspace::AgentContainer;
use crate::paths::{TargetPath, target_cwd};
use crate::process::{self, ProcessError, ProcessSpec};
use crate::redact::Secrets;

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&ENTRY];

pub(crate) static ENTRY: ProviderEntry = ProviderEntry {
    name: "cli",
    aliases: &[],
    doc: "Runs a shell command per case; the answer is read from `{OUTPUT_FILE}`.",
    class: ProviderClass::Command,
    batch: true,
    cacheable: true,
    executable: None,
    container: true,
    keys: &KEYS,
    build,
};

const OWN: &[Key] = &[
    Key::new(
        "command_template",
        Kind::Text,
        "The command, run by `sh -c`, with {PROMPT}, {GUIDELINES}, {EVAL_ID}, {ATTEMPT}, {FILES}, {OUTPUT_FILE} \
         and {CONTEXT} (a promptfoo test's vars and prompt as JSON) (4.x spells it `command`).",
    )
    .aliases(&["command"])
    .required(),
    Key::new(
        "files_format",
        Kind::Text,
        "How each input file is written in {FILES}: {path} and {basename} (default {path}).",
    )
    .aliases(&["attachments_format"]),
    Key::new(
        "cwd",
        Kind::Text,
        "Working directory, relative to the eval file's directory (default: that directory).",
    ),
    Key::new(
        "timeout_seconds",
        Kind::Duration(DurationRange::TIMEOUT_SECONDS),
        "Per command (the run's `--timeout` applies too).",
    ),
    Key::new("keep_temp_files", Kind::Bool, "Keep the output files after reading them.").aliases(&["keep_output_files"]),
    Key::new(
        "clean_output",
        Kind::Bool,
        "promptfoo's `exec:` rules: the answer is the text printed (never read as structured JSON), trimmed, without ANSI escape codes; an empty answer with something on stderr fails (default false).",
    ),
    Key::new("verbose", Kind::Bool, "Accepted for compatibility; not used.").aliases(&["cli_verbose"]),
    Key::new(
        "healthcheck",
        Kind::Object(&HEALTHCHECK_KEYS),
        "A probe run once before the first case.",
    ),
];
const KEYS: KeyTable = KeyTable::new("cli", "Settings of a `cli` target.", &[OWN]);

const HEALTHCHECK_OWN: &[Key] = &[
    Key::new(
        "type",
        Kind::Text,
        "`http` (GET `url` must answer 2xx) or `command` (must exit 0); without it, the key given decides (4.x).",
    ),
    Key::new("url", Kind::Url, "For `type: http`."),
    Key::new("command_template", Kind::Text, "For `type: command`; run by `sh -c` (4.x: `command`).").aliases(&["command"]),
    Key::new(
        "cwd",
        Kind::Text,
        "For `type: command`: working directory, relative to the eval file's directory (default: the target's `cwd`).",
    ),
    Key::new(
        "timeout_seconds",
        Kind::Duration(DurationRange::TIMEOUT_SECONDS),
        "How long the probe may take (default 30).",
    ),
];
const HEALTHCHECK_KEYS: KeyTable = KeyTable::new("healthcheck", "A probe run once before the first case.", &[HEALTHCHECK_OWN]);

/// `dir` when it is a directory; else an error naming it and the rule it was resolved by.
fn existing(dir: PathBuf, target: &str) -> Result<PathBuf, ProviderError> {
    if dir.is_dir() {
        return Ok(dir);
    }
    Err(ProviderError::Setup(format!(
        "target `{target}`: working directory {} does not exist (a relative `cwd` is resolved against the eval file's directory)",
        dir.display()
    )))
}

/// `cli` target settings, validated.
#[derive(Debug, Clone)]
pub struct CliConfig {
    pub command_template: String,
    /// How each input file is written in `{FILES}`: `{path}` and `{basename}` placeholders.
    pub files_format: String,
    /// Working directory as written; see [`target_cwd`].
    pub cwd: Option<TargetPath>,
    pub timeout: Option<Duration>,
    pub healthcheck: Option<Healthcheck>,
    pub keep_temp_files: bool,
    /// promptfoo's `exec:` rules for the answer ([`clean`]).
    pub clean_output: bool,
    /// Redacted from the command's output before it is cut for an error message.
    pub secrets: Secrets,
}

/// A probe run once before the first request.
#[derive(Debug, Clone)]
pub enum Healthcheck {
    /// GET must answer 2xx.
    Http { url: String, timeout: Duration },
    /// The rendered command must exit 0.
    Command {
        template: String,
        cwd: Option<TargetPath>,
        timeout: Duration,
    },
}

/// A target that shells out to any command.
#[derive(Debug)]
pub struct CliProvider {
    name: String,
    config: CliConfig,
    /// Variables from `.env` files, passed to the command.
    env: Arc<[(String, String)]>,
    health: OnceCell<Result<(), String>>,
}

impl CliProvider {
    pub fn new(name: impl Into<String>, config: CliConfig, env: Arc<[(String, String)]>) -> Self {
        Self {
            name: name.into(),
            config,
            env,
            health: OnceCell::new(),
        }
    }

    /// Where the command runs for `request`: the case's workspace (`docs/workspaces.md`), else
    /// [`target_cwd`]; it must exist.
    fn cwd(&self, request: &ProviderRequest) -> Result<PathBuf, ProviderError> {
        let dir = match &request.workspace {
            Some(workspace) => workspace.clone(),
            None => target_cwd(self.config.cwd.as_ref(), request.eval_dir.as_deref()),
        };
        existing(dir, &self.name)
    }

    /// Runs the healthcheck once (the runner does it before the first case; this is for any
    /// other caller); its command runs where the main command would.
    async fn ensure_healthy(&self, request: &ProviderRequest) -> Result<(), ProviderError> {
        let default_cwd = request.eval_dir.clone().unwrap_or_else(|| PathBuf::from("."));
        self.health_once(&default_cwd)
            .await
            .map_err(|e| ProviderError::Unhealthy(format!("CLI healthcheck failed for '{}': {e}", self.name)))
    }

    /// The healthcheck's result, computed on first use.
    async fn health_once(&self, default_cwd: &Path) -> Result<(), String> {
        self.health
            .get_or_init(|| async {
                match &self.config.healthcheck {
                    None => Ok(()),
                    Some(check) => self.probe(check, default_cwd).await,
                }
            })
            .await
            .clone()
    }

    /// Runs `check` for a suite in `eval_dir`.
    async fn probe(&self, check: &Healthcheck, eval_dir: &Path) -> Result<(), String> {
        match check {
            Healthcheck::Http { url, timeout } => {
                let response = crate::http::client()
                    .get(url)
                    .timeout(*timeout)
                    .send()
                    .await
                    .map_err(|e| format!("GET {url}: {e}"))?;
                if response.status().is_success() {
                    Ok(())
                } else {
                    Err(format!("GET {url} answered HTTP {}", response.status().as_u16()))
                }
            }
            Healthcheck::Command { template, cwd, timeout } => {
                let values = HashMap::from([("EVAL_ID", "healthcheck".to_owned()), ("ATTEMPT", "1".to_owned())]);
                let command = render(template, &values, &HashMap::new());
                // The healthcheck's own `cwd`, else the target's, else the eval file's directory.
                let setting = cwd.as_ref().or(self.config.cwd.as_ref());
                let cwd = existing(target_cwd(setting, Some(eval_dir)), &self.name).map_err(|e| e.to_string())?;
                let argv = [String::from("sh"), String::from("-c"), command];
                let spec = ProcessSpec {
                    argv: &argv,
                    cwd: &cwd,
                    env: &self.env,
                    env_remove: &[],
                    stdin: None,
                    timeout: *timeout,
                    tee: None,
                    keep_children: false,
                };
                match process::run(spec).await {
                    Ok(done) if done.status.success() => Ok(()),
                    Ok(done) => {
                        // stderr's tail, else stdout's: a check that explains itself on stdout
                        // (or not at all) still gets a readable reason.
                        let tail = done.output_tail(500, &self.config.secrets);
                        let hint = not_found_hint(done.status.code(), &tail, &cwd);
                        let output = if tail.is_empty() { "no output".to_owned() } else { tail };
                        Err(format!("command exited with code {}: {output}{hint}", done.code_text()))
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    }

    fn files_arg(&self, files: &[PathBuf]) -> String {
        let mut seen: Vec<&PathBuf> = Vec::new();
        for f in files {
            if !seen.contains(&f) {
                seen.push(f);
            }
        }
        seen.iter()
            .map(|path| {
                let basename = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                self.config
                    .files_format
                    .replace("{path}", &shell_quote(&path.display().to_string()))
                    .replace("{basename}", &shell_quote(&basename))
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Renders and runs the template once; returns the output file's text and the wall time.
    async fn run_command(&self, run: Invocation<'_>) -> Result<(String, f64), ProviderError> {
        let Invocation {
            eval_id,
            attempt,
            prompt,
            guidelines,
            files,
            cwd,
            extension,
            container,
            vars,
        } = run;
        // In a container, the output file is made in a directory the container sees.
        let output_dir = container.map_or_else(std::env::temp_dir, |c| c.io_dir.clone());
        let mut output_file = temp_output_path(&output_dir, eval_id, extension)
            .map_err(|e| ProviderError::io("cannot make a temporary output file", e))?;
        // Kept for debugging when asked; otherwise deleted when this call returns.
        output_file.disable_cleanup(self.config.keep_temp_files);
        let values = HashMap::from([
            ("PROMPT", prompt.to_owned()),
            ("GUIDELINES", guidelines.to_owned()),
            ("EVAL_ID", eval_id.to_owned()),
            ("ATTEMPT", attempt.to_string()),
            ("OUTPUT_FILE", output_file.display().to_string()),
            ("CONTEXT", context_json(prompt, vars)),
        ]);
        let raw = HashMap::from([("FILES", self.files_arg(files))]);
        let command = render(&self.config.command_template, &values, &raw);
        let mut argv = vec![String::from("sh"), String::from("-c"), command];
        if let Some(container) = container {
            argv = container.wrap(&argv, cwd, self.env.iter().map(|(name, _)| name.as_str()));
        }
        // Without `timeout_seconds` the run's own timeout (which wraps every call) applies.
        let timeout = self.config.timeout.unwrap_or(super::agent::ONE_DAY);
        let spec = ProcessSpec {
            argv: &argv,
            cwd,
            env: &self.env,
            env_remove: &[],
            stdin: None,
            timeout,
            tee: None,
            keep_children: false,
        };
        let started = Instant::now();
        let result = process::run(spec).await;
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        let done = match result {
            Ok(done) => done,
            Err(ProcessError::TimedOut(d)) => return Err(ProviderError::Timeout(d)),
            Err(e) => return Err(ProviderError::Spawn(e.to_string())),
        };
        if !done.status.success() {
            let output = done.output_tail(2000, &self.config.secrets);
            let hint = not_found_hint(done.status.code(), &output, cwd);
            return Err(ProviderError::Exited {
                program: "command".to_owned(),
                code: done.code_text(),
                output: format!("{output}{hint}"),
            });
        }
        let bytes = std::fs::read(&output_file).map_err(|e| {
            ProviderError::io(
                format!(
                    "cannot read the output file {} (the command must write its answer to {{OUTPUT_FILE}})",
                    output_file.display()
                ),
                e,
            )
        })?;
        // Bytes that are not UTF-8 are replaced, as a terminal shows them.
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if !self.config.clean_output {
            return Ok((text, elapsed_ms));
        }
        let answer = clean(&text);
        let errors = clean(&String::from_utf8_lossy(&done.stderr));
        if answer.is_empty() && !errors.is_empty() {
            return Err(ProviderError::Reported(self.config.secrets.redact(&errors).into_owned()));
        }
        Ok((answer, elapsed_ms))
    }
}

/// `{CONTEXT}`: the call context promptfoo gives a provider, as JSON (`{vars, prompt: {raw,
/// label}}`, as script providers get it: `script.rs`).
fn context_json(prompt: &str, vars: Option<&serde_json::Map<String, serde_json::Value>>) -> String {
    let vars = vars.cloned().map_or_else(|| serde_json::json!({}), serde_json::Value::Object);
    serde_json::json!({"vars": vars, "prompt": {"raw": prompt, "label": prompt}}).to_string()
}

/// promptfoo's `exec:` cleaning of what a command printed: trimmed (JavaScript's `trim`), then
/// without ANSI escape codes (`docs/promptfoo.md#providers`).
fn clean(text: &str) -> String {
    static ANSI: std::sync::LazyLock<Option<regex::Regex>> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])").ok());
    let trimmed = crate::js::trim(text);
    match ANSI.as_ref() {
        Some(ansi) => ansi.replace_all(trimmed, "").into_owned(),
        None => trimmed.to_owned(),
    }
}

/// When a command could not find a program or a file, says where it ran: a template written
/// for the targets file's directory fails in the eval file's directory unless `cwd` is set.
fn not_found_hint(code: Option<i32>, output: &str, cwd: &Path) -> String {
    let not_found = matches!(code, Some(126 | 127))
        || ["not found", "No such file or directory", "can't open file"]
            .iter()
            .any(|s| output.contains(s));
    if !not_found {
        return String::new();
    }
    format!(
        "\n  hint: the command ran in {}; relative paths in it are resolved there. Set `cwd` on the target (relative to the eval file's directory) or use absolute paths",
        cwd.display()
    )
}

/// The values one command run is rendered with.
struct Invocation<'a> {
    eval_id: &'a str,
    attempt: u32,
    prompt: &'a str,
    guidelines: &'a str,
    files: &'a [PathBuf],
    cwd: &'a Path,
    /// Of the output file: `json` per case, `jsonl` for a batch.
    extension: &'a str,
    /// With `docker.agent`: the container the command runs in (`docs/workspaces.md#containers`).
    container: Option<&'a AgentContainer>,
    /// A promptfoo test's `vars`, for `{CONTEXT}`.
    vars: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// A fresh path in `dir` for the command's answer, deleted when dropped. No file is created: a
/// command that writes nothing leaves none, which is reported.
fn temp_output_path(dir: &Path, eval_id: &str, extension: &str) -> std::io::Result<tempfile::TempPath> {
    let prefix = format!("agentv-{}-", crate::paths::file_name_safe(eval_id));
    let suffix = format!(".{extension}");
    let named = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(&suffix)
        .make_in(dir, |_| Ok(()))?;
    Ok(named.into_temp_path())
}

impl Provider for CliProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(&ENTRY)
    }

    fn healthcheck<'a>(&'a self, eval_dir: &'a Path) -> ProviderFuture<'a, ()> {
        Box::pin(async move { self.health_once(eval_dir).await.map_err(ProviderError::Unhealthy) })
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move {
            self.ensure_healthy(request).await?;
            let cwd = self.cwd(request)?;
            let (text, elapsed_ms) = self
                .run_command(Invocation {
                    eval_id: &request.eval_id,
                    attempt: request.attempt,
                    prompt: &request.question,
                    guidelines: &request.guidelines,
                    files: &request.input_files,
                    cwd: &cwd,
                    extension: "json",
                    container: request.container.as_ref(),
                    vars: request.vars.as_ref(),
                })
                .await?;
            // promptfoo's `exec:` answer is the text printed, whatever it looks like.
            let mut response = if self.config.clean_output {
                ProviderResponse::text(&text)
            } else {
                parse_answer(&text)
            };
            response.duration_ms = response.duration_ms.or(Some(elapsed_ms));
            Ok(response)
        })
    }

    fn invoke_batch<'a>(
        &'a self,
        requests: &'a [ProviderRequest],
    ) -> ProviderFuture<'a, Vec<Result<ProviderResponse, ProviderError>>> {
        Box::pin(async move {
            let Some(first) = requests.first() else {
                return Ok(Vec::new());
            };
            self.ensure_healthy(first).await?;
            let files: Vec<PathBuf> = requests.iter().flat_map(|r| r.input_files.iter().cloned()).collect();
            let cwd = self.cwd(first)?;
            let (text, elapsed_ms) = self
                .run_command(Invocation {
                    eval_id: "batch",
                    attempt: first.attempt,
                    prompt: "",
                    guidelines: "",
                    files: &files,
                    cwd: &cwd,
                    extension: "jsonl",
                    container: None,
                    vars: None,
                })
                .await?;
            let mut by_id = parse_batch_output(&text)?;
            let share = elapsed_ms / requests.len() as f64;
            Ok(requests
                .iter()
                .map(|r| match by_id.remove(&r.eval_id) {
                    Some(mut response) => {
                        response.duration_ms = response.duration_ms.or(Some(share));
                        Ok(response)
                    }
                    None => Err(ProviderError::malformed(
                        "the batch command",
                        format!("no answer for id '{}'", r.eval_id),
                    )),
                })
                .collect())
        })
    }

    fn public_settings(&self) -> Value {
        json!({
            "command_template": self.config.command_template,
            "files_format": self.config.files_format,
            "cwd": self.config.cwd,
            "timeout_seconds": self.config.timeout.map(|t| t.as_secs_f64()),
        })
    }
}

/// Parses batch JSONL output: one `{id, text?, output_messages?, ...}` per line. A bad line or
/// a duplicate id fails the whole batch (the runner then falls back to per-case calls).
fn parse_batch_output(text: &str) -> Result<HashMap<String, ProviderResponse>, ProviderError> {
    let mut by_id = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|e| ProviderError::malformed("the batch command", format!("line {}: invalid JSON: {e}", i + 1)))?;
        let id = value
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| ProviderError::malformed("the batch command", format!("line {}: missing string `id`", i + 1)))?
            .to_owned();
        if by_id.contains_key(&id) {
            return Err(ProviderError::malformed("the batch command", format!("id '{id}' twice")));
        }
        by_id.insert(id, parse_answer(line));
    }
    Ok(by_id)
}

/// A `cli` target from its settings.
fn build(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let template_pos = s.node("command_template").map(|n| n.pos);
    let command_template = s.shell_string("command_template", true);
    match (&command_template, template_pos) {
        (None, None) => s.error(
            ctx.pos,
            format!("cli target `{}` is missing `command_template`", ctx.target),
            Some("add `command_template: my-agent {PROMPT} > {OUTPUT_FILE}`".to_owned()),
        ),
        (Some(t), pos) if t.trim().is_empty() => {
            s.error(pos.unwrap_or(ctx.pos), "`command_template` is empty".to_owned(), None)
        }
        (Some(t), pos) => check_placeholders(s, t, pos.unwrap_or(ctx.pos)),
        (None, Some(_)) => {}
    }
    let files_format = s
        .string("files_format", false)
        .unwrap_or_else(|| "{path}".to_owned());
    for template in command_template.iter().chain([&files_format]) {
        s.secrets().add_template_parts(template);
    }
    let cwd = s.dir("cwd");
    let timeout = s.duration("timeout_seconds");
    let keep_temp_files = s.boolean("keep_temp_files").unwrap_or(false);
    let clean_output = s.boolean("clean_output").unwrap_or(false);
    let _ = s.boolean("verbose");
    let healthcheck = s.object("healthcheck", healthcheck).flatten();
    let config = CliConfig {
        command_template: command_template?,
        files_format,
        cwd,
        timeout,
        healthcheck,
        keep_temp_files,
        clean_output,
        secrets: s.secrets().clone(),
    };
    Some(Arc::new(CliProvider::new(ctx.target, config, ctx.child_env.clone())))
}

fn check_placeholders(s: &mut TargetSettings<'_>, template: &str, pos: Pos) {
    let unknown = unknown_cli_placeholders(template);
    if !unknown.is_empty() {
        let list: Vec<String> = unknown.iter().map(|u| format!("{{{u}}}")).collect();
        s.error(
            pos,
            format!("unsupported placeholder {} in `command_template`", list.join(", ")),
            Some(format!(
                "use {}",
                super::CLI_PLACEHOLDERS
                    .iter()
                    .map(|p| format!("{{{p}}}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        );
    }
}

/// How long a healthcheck may take when it does not say.
const HEALTHCHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// Reads the `healthcheck` object; `s` is positioned inside it.
fn healthcheck(s: &mut TargetSettings<'_>) -> Option<Healthcheck> {
    let pos = s.pos();
    // AgentV 4.x writes no `type`: the key given says which probe it is.
    let kind = s.string("type", false).or_else(|| {
        if s.has("url") {
            Some("http".to_owned())
        } else if s.has("command_template") {
            Some("command".to_owned())
        } else {
            None
        }
    });
    let timeout = s.duration("timeout_seconds").unwrap_or(HEALTHCHECK_TIMEOUT);
    match kind.as_deref() {
        Some("http") => {
            let url = s.string("url", true);
            if url.is_none() && !s.is_missing("url") {
                s.error(pos, "http healthcheck needs `url`".to_owned(), None);
            }
            Some(Healthcheck::Http { url: url?, timeout })
        }
        Some("command") => {
            let template_pos = s.node("command_template").map_or(pos, |n| n.pos);
            let template = s.shell_string("command_template", true);
            let cwd = s.dir("cwd");
            match template {
                Some(template) => {
                    check_placeholders(s, &template, template_pos);
                    Some(Healthcheck::Command { template, cwd, timeout })
                }
                None => {
                    if !s.is_missing("command_template") {
                        s.error(pos, "command healthcheck needs `command_template`".to_owned(), None);
                    }
                    None
                }
            }
        }
        None if s.is_missing("type") => None,
        None => {
            s.error(
                pos,
                "healthcheck needs `url` or `command`".to_owned(),
                Some("write `healthcheck: {url: http://...}` or `healthcheck: {command: ...}`".to_owned()),
            );
            None
        }
        other => {
            s.error(
                pos,
                format!("unsupported healthcheck type `{}`", other.unwrap_or("(none)")),
                Some("use `url: ...` (http) or `command: ...`; `type` may be left out".to_owned()),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(template: &str, healthcheck: Option<Healthcheck>) -> CliProvider {
        CliProvider::new(
            "agent",
            CliConfig {
                command_template: template.to_owned(),
                files_format: "{path}".to_owned(),
                cwd: None,
                timeout: Some(Duration::from_secs(10)),
                healthcheck,
                keep_temp_files: false,
                clean_output: false,
                secrets: Secrets::default(),
            },
            Arc::from(vec![("AGENTV_CLI_TEST_VAR".to_owned(), "from-dotenv".to_owned())]),
        )
    }

    fn request(id: &str, question: &str) -> ProviderRequest {
        ProviderRequest {
            eval_id: id.to_owned(),
            attempt: 1,
            question: question.to_owned(),
            ..ProviderRequest::default()
        }
    }

    #[tokio::test]
    async fn output_files_are_deleted_unless_kept() {
        for keep in [false, true] {
            let mut p = provider("printf %s {OUTPUT_FILE} > {OUTPUT_FILE}", None);
            p.config.keep_temp_files = keep;
            let r = p.invoke(&request("c", "q")).await.expect("runs");
            let path = PathBuf::from(r.output_messages[0].text().expect("the path"));
            assert_eq!(path.exists(), keep, "keep_temp_files: {keep}");
            let _ = std::fs::remove_file(&path);
        }
    }

    #[tokio::test]
    async fn answer_comes_from_the_output_file() {
        let p = provider(
            "printf '%s / %s / %s' {PROMPT} {EVAL_ID} \"$AGENTV_CLI_TEST_VAR\" > {OUTPUT_FILE}",
            None,
        );
        let r = p.invoke(&request("c-1", "it's a test")).await.expect("runs");
        assert_eq!(
            r.output_messages[0].text().as_deref(),
            Some("it's a test / c-1 / from-dotenv")
        );
        assert!(r.duration_ms.is_some());
    }

    /// promptfoo's `exec:` rules apply only when asked: trimmed, without ANSI codes, and an
    /// empty answer with something on stderr is the command's error.
    #[tokio::test]
    async fn the_answer_is_cleaned_only_when_asked() {
        for (command, clean, want) in [
            ("printf '\\357\\273\\277 The answer: hi \\n\\n' > {OUTPUT_FILE}", false, Ok("\u{feff} The answer: hi ")),
            ("printf '\\357\\273\\277 The answer: hi \\n\\n' > {OUTPUT_FILE}", true, Ok("The answer: hi")),
            ("printf ' \\033[32mgreen\\033[0m \\n' > {OUTPUT_FILE}", true, Ok("green")),
            ("printf 'caf\\351 ok' > {OUTPUT_FILE}", false, Ok("caf\u{fffd} ok")),
            ("echo 'it broke' >&2; : > {OUTPUT_FILE}", true, Err("it broke")),
            ("echo 'a warning' >&2; echo fine > {OUTPUT_FILE}", true, Ok("fine")),
            ("echo 'it broke' >&2; : > {OUTPUT_FILE}", false, Ok("")),
            ("echo '{\"text\": \"x\"}' > {OUTPUT_FILE}", true, Ok("{\"text\": \"x\"}")),
            ("echo '{\"text\": \"x\"}' > {OUTPUT_FILE}", false, Ok("x")),
        ] {
            let mut p = provider(command, None);
            p.config.clean_output = clean;
            let got = p.invoke(&request("c", "q")).await;
            let got = got
                .map(|r| r.output_messages[0].text().unwrap_or_default())
                .map_err(|e| e.to_string());
            assert_eq!(got.as_deref(), want.map_err(str::to_owned).as_deref(), "{command} (clean: {clean})");
        }
    }

    /// `{CONTEXT}` is promptfoo's call context: the test's vars and the prompt, as JSON.
    #[tokio::test]
    async fn the_context_placeholder_gives_the_vars_and_prompt_as_json() {
        let p = provider("printf '%s' {CONTEXT} > {OUTPUT_FILE}", None);
        let mut req = request("c", "it's \"quoted\"");
        req.vars = serde_json::json!({"country": "France", "n": 1}).as_object().cloned();
        let r = p.invoke(&req).await.expect("runs");
        let context: serde_json::Value =
            serde_json::from_str(&r.output_messages[0].text().unwrap_or_default()).expect("JSON");
        let prompt = "it's \"quoted\"";
        assert_eq!(
            context,
            serde_json::json!({"vars": {"country": "France", "n": 1}, "prompt": {"raw": prompt, "label": prompt}})
        );
    }

    #[tokio::test]
    async fn non_zero_exit_reports_code_and_stderr() {
        let p = provider("echo 'model exploded' >&2; exit 7", None);
        let err = p.invoke(&request("c", "q")).await.expect_err("fails");
        assert_eq!(err.to_string(), "command exited with code 7: model exploded");
    }

    #[tokio::test]
    async fn command_not_found_hints_at_cwd() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut p = provider("python3 no-such-agent-file.py > {OUTPUT_FILE}; ./no-such-agent", None);
        p.config.cwd = Some(TargetPath::new(dir.path()));
        let err = p.invoke(&request("c", "q")).await.expect_err("fails").to_string();
        assert!(err.starts_with("command exited with code 127:"), "{err}");
        let hint = format!(
            "hint: the command ran in {}; relative paths in it are resolved there. Set `cwd` on the target",
            dir.path().display()
        );
        assert!(err.contains(&hint), "{err}");
        let plain = provider("echo 'model exploded' >&2; exit 7", None);
        let err = plain.invoke(&request("c", "q")).await.expect_err("fails").to_string();
        assert!(!err.contains("hint"), "{err}");
    }

    #[tokio::test]
    async fn missing_output_file_is_an_error() {
        let p = provider("true", None);
        let err = p.invoke(&request("c", "q")).await.expect_err("fails");
        assert!(err.to_string().starts_with("cannot read the output file"), "{err}");
    }

    #[tokio::test]
    async fn failing_healthcheck_fails_every_request_and_runs_once() {
        let dir = tempfile::tempdir().expect("tmp");
        let counter = dir.path().join("count");
        let check = Healthcheck::Command {
            template: format!("echo x >> {}; exit 1", counter.display()),
            cwd: None,
            timeout: Duration::from_secs(5),
        };
        let p = provider("echo ok > {OUTPUT_FILE}", Some(check));
        for _ in 0..2 {
            let err = p.invoke(&request("c", "q")).await.expect_err("unhealthy");
            assert!(
                err.to_string()
                    .starts_with("CLI healthcheck failed for 'agent': command exited with code 1"),
                "{err}"
            );
        }
        assert_eq!(std::fs::read_to_string(&counter).expect("ran").lines().count(), 1);
    }

    #[tokio::test]
    async fn healthcheck_reason_names_the_output_or_says_there_was_none() {
        let dir = tempfile::tempdir().expect("tmp");
        for (script, want) in [
            ("exit 3", "command exited with code 3: no output"),
            (
                "echo 'port 8080 closed'; exit 3",
                "command exited with code 3: port 8080 closed",
            ),
            (
                "echo out; echo 'on stderr' >&2; exit 2",
                "command exited with code 2: on stderr",
            ),
        ] {
            let check = Healthcheck::Command {
                template: script.to_owned(),
                cwd: None,
                timeout: Duration::from_secs(5),
            };
            let p = provider("echo ok > {OUTPUT_FILE}", Some(check));
            let err = p.healthcheck(dir.path()).await.expect_err("unhealthy");
            assert_eq!(err.to_string(), want, "{script}");
        }
    }

    /// Serves one fixed HTTP status on 127.0.0.1 for every connection; returns the URL.
    fn status_server(status: &'static str) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/health", listener.local_addr().expect("addr"));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                use std::io::{Read, Write};
                let mut stream = stream;
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
            }
        });
        url
    }

    #[tokio::test]
    async fn http_healthcheck_needs_a_2xx_answer() {
        let ok = Healthcheck::Http {
            url: status_server("200 OK"),
            timeout: Duration::from_secs(5),
        };
        let p = provider("echo fine > {OUTPUT_FILE}", Some(ok));
        assert!(p.invoke(&request("c", "q")).await.is_ok());
        let url = status_server("503 Service Unavailable");
        let down = Healthcheck::Http {
            url: url.clone(),
            timeout: Duration::from_secs(5),
        };
        let err = provider("echo fine > {OUTPUT_FILE}", Some(down))
            .invoke(&request("c", "q"))
            .await
            .expect_err("unhealthy");
        assert_eq!(
            err.to_string(),
            format!("CLI healthcheck failed for 'agent': GET {url} answered HTTP 503")
        );
    }

    #[tokio::test]
    async fn files_placeholder_uses_files_format() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("my notes.txt");
        std::fs::write(&file, "x").expect("write");
        let mut p = provider("printf '%s|' {FILES} > {OUTPUT_FILE}", None);
        p.config.files_format = "--file={path}:{basename}".to_owned();
        let mut req = request("c", "q");
        req.input_files = vec![file.clone(), file.clone()];
        let r = p.invoke(&req).await.expect("runs");
        let want = format!("--file={}:my notes.txt|", file.display());
        assert_eq!(r.output_messages[0].text().as_deref(), Some(want.as_str()));
    }

    #[tokio::test]
    async fn batch_maps_answers_by_id_and_reports_missing_ones() {
        let script = r#"printf '{"id":"a","text":"A"}\n{"id":"b","text":"B"}\n' > {OUTPUT_FILE}"#;
        let p = provider(script, None);
        let reqs = [request("b", ""), request("a", ""), request("c", "")];
        let out = p.invoke_batch(&reqs).await.expect("batch runs");
        let texts: Vec<String> = out
            .iter()
            .map(|r| match r {
                Ok(resp) => resp.output_messages[0].text().unwrap_or_default(),
                Err(e) => e.to_string(),
            })
            .collect();
        assert_eq!(texts, ["B", "A", "malformed response from the batch command: no answer for id 'c'"]);
    }

    #[tokio::test]
    async fn batch_with_duplicate_ids_fails_whole() {
        let script = r#"printf '{"id":"a","text":"A"}\n{"id":"a","text":"B"}\n' > {OUTPUT_FILE}"#;
        let err = provider(script, None)
            .invoke_batch(&[request("a", "")])
            .await
            .expect_err("fails");
        assert_eq!(err.to_string(), "malformed response from the batch command: id 'a' twice");
    }
}
