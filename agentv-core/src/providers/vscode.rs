//! `vscode` / `vscode-insiders`: writes a prompt document, dispatches it to VS Code's agent
//! through a command, and reads the answer from the response file the agent writes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::agent::{self, ONE_DAY};
use super::template::{render, unknown_placeholders};
use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderError, ProviderFuture, ProviderKind,
    ProviderRequest, ProviderResponse, TargetSettings, parse_answer,
};
use crate::config::{DurationRange, Key, KeyTable, Kind};
use crate::paths::TargetPath;
use crate::process::{self, ProcessSpec};
use crate::redact::Secrets;

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&VSCODE, &INSIDERS];

pub(crate) static VSCODE: ProviderEntry = ProviderEntry {
    name: "vscode",
    aliases: &[],
    doc: "VS Code's agent: a prompt document dispatched with `code chat`; the answer is the response file.",
    class: ProviderClass::Agent,
    batch: false,
    cacheable: true,
    executable: None,
    container: false,
    keys: &KEYS,
    build: build_vscode,
};

/// `vscode-insiders`: the same, with `code-insiders`.
pub(crate) static INSIDERS: ProviderEntry = ProviderEntry {
    name: "vscode-insiders",
    doc: "VS Code Insiders' agent, as `vscode` with `code-insiders`.",
    build: build_insiders,
    ..VSCODE
};

const OWN: &[Key] = &[
    Key::new(
        "vscode_cmd",
        Kind::Text,
        "The editor's command (default `code`, or `code-insiders`).",
    )
    .aliases(&["command"]),
    Key::new(
        "dispatch",
        Kind::Text,
        "A shell template that hands the document to the agent: {PROMPT_FILE}, {RESPONSE_FILE}, {WORKSPACE}, {EVAL_ID}.",
    )
    .aliases(&["dispatch_command"]),
    Key::new("wait", Kind::Bool, "Wait for the response file after dispatching (default true)."),
    Key::new("dry_run", Kind::Bool, "Write the prompt document and return without dispatching."),
    Key::new(
        "subagent_root",
        Kind::Text,
        "Where request directories are made, relative to the targets file (default .agentv/vscode).",
    ),
    Key::new("workspace", Kind::Text, "The workspace the agent works in, relative to the eval file's directory.")
        .aliases(&["workspace_template"]),
    Key::new(
        "timeout_seconds",
        Kind::Duration(DurationRange::TIMEOUT_SECONDS),
        "How long to wait for the answer.",
    ),
];
const KEYS: KeyTable = KeyTable::new("vscode", "Settings of a `vscode` target.", &[OWN]);

/// `vscode` target settings, validated.
#[derive(Debug, Clone)]
pub struct VsCodeConfig {
    /// `code` or `code-insiders` unless set.
    pub vscode_cmd: String,
    /// A shell template with `{PROMPT_FILE}`, `{RESPONSE_FILE}`, `{WORKSPACE}`, `{EVAL_ID}`;
    /// default: `<vscode_cmd> chat --mode agent --add-file {PROMPT_FILE} <instruction>`.
    pub dispatch: Option<String>,
    /// Wait for the response file after dispatching (default true).
    pub wait: bool,
    /// Write the prompt document and return without dispatching.
    pub dry_run: bool,
    /// Where request directories are created (default `.agentv/vscode`).
    pub subagent_root: PathBuf,
    pub workspace: Option<TargetPath>,
    pub timeout: Option<Duration>,
    pub env: Arc<[(String, String)]>,
    /// Redacted from the dispatch command's output before it is cut for an error message.
    pub secrets: Secrets,
}

/// VS Code's agent as a target. One case at a time: the editor has one chat.
#[derive(Debug)]
pub struct VsCodeProvider {
    name: String,
    kind: ProviderKind,
    config: VsCodeConfig,
}

impl VsCodeProvider {
    pub fn new(name: impl Into<String>, kind: ProviderKind, config: VsCodeConfig) -> Self {
        Self {
            name: name.into(),
            kind,
            config,
        }
    }

    /// The prompt document: the preread block, always present, then the user query.
    pub fn document(&self, request: &ProviderRequest, response_file: &Path) -> String {
        let base = response_file.parent().unwrap_or(response_file);
        let workspace = self.workspace(request);
        let cwd = workspace.as_deref().unwrap_or(base);
        let mut preread = agent::preread_block(&request.guideline_files, &request.input_files, cwd);
        if preread.is_empty() {
            preread = "There are no files to read first.".to_owned();
        }
        let instruction = format!(
            "When you are done, write your final answer, and nothing else, to {}",
            agent::file_url(response_file)
        );
        agent::prompt_document(Some(&instruction), &preread, &request.question)
    }

    /// The `workspace` setting for `request`'s suite (relative: to its eval file's directory).
    /// The case's workspace (`docs/workspaces.md`), else the target's own.
    fn workspace(&self, request: &ProviderRequest) -> Option<PathBuf> {
        request
            .workspace
            .clone()
            .or_else(|| self.config.workspace.as_ref().map(|w| w.resolve(request.eval_dir.as_deref())))
    }

    fn dispatch_argv(
        &self,
        prompt_file: &Path,
        response_file: &Path,
        eval_id: &str,
        workspace: Option<&Path>,
    ) -> Vec<String> {
        match &self.config.dispatch {
            Some(template) => {
                let values = HashMap::from([
                    ("PROMPT_FILE", prompt_file.display().to_string()),
                    ("RESPONSE_FILE", response_file.display().to_string()),
                    (
                        "WORKSPACE",
                        workspace.map(|w| w.display().to_string()).unwrap_or_default(),
                    ),
                    ("EVAL_ID", eval_id.to_owned()),
                ]);
                vec![
                    "sh".to_owned(),
                    "-c".to_owned(),
                    render(template, &values, &HashMap::new()),
                ]
            }
            None => vec![
                self.config.vscode_cmd.clone(),
                "chat".to_owned(),
                "--mode".to_owned(),
                "agent".to_owned(),
                "--add-file".to_owned(),
                prompt_file.display().to_string(),
                format!("Follow the instructions in {}", prompt_file.display()),
            ],
        }
    }
}

impl Provider for VsCodeProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        self.kind
    }

    fn cost_basis(&self) -> super::CostBasis {
        super::CostBasis::Unknown("VS Code reports no cost; run it without --budget-usd".to_owned())
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move {
            let safe = crate::paths::file_name_safe(&request.eval_id);
            let dir = self.config.subagent_root.join(format!("{safe}-{}", request.attempt));
            std::fs::create_dir_all(&dir)
                .map_err(|e| ProviderError::io(format!("cannot create {}", dir.display()), e))?;
            let prompt_file = dir.join("prompt.md");
            let response_file = dir.join("response.md");
            let _ = std::fs::remove_file(&response_file);
            std::fs::write(&prompt_file, self.document(request, &response_file))
                .map_err(|e| ProviderError::io(format!("cannot write {}", prompt_file.display()), e))?;
            let workspace = self.workspace(request);
            let argv = self.dispatch_argv(&prompt_file, &response_file, &request.eval_id, workspace.as_deref());
            let mut metadata = Map::new();
            metadata.insert("prompt_file".to_owned(), json!(prompt_file.display().to_string()));
            metadata.insert("response_file".to_owned(), json!(response_file.display().to_string()));
            metadata.insert("command".to_owned(), json!(argv));
            if self.config.dry_run {
                metadata.insert("dry_run".to_owned(), json!(true));
                return Ok(ProviderResponse {
                    metadata: Some(metadata),
                    ..ProviderResponse::default()
                });
            }
            let started = Instant::now();
            let timeout = self.config.timeout.unwrap_or(ONE_DAY);
            let cwd = self.workspace(request).unwrap_or_else(|| dir.clone());
            let done = process::run(ProcessSpec {
                argv: &argv,
                cwd: &cwd,
                env: &self.config.env,
                env_remove: &[],
                stdin: None,
                timeout,
                tee: None,
                keep_children: true,
            })
            .await
            .map_err(|e| match e {
                process::ProcessError::TimedOut(d) => ProviderError::Timeout(d),
                other => ProviderError::Spawn(format!("VS Code dispatch failed: {other}")),
            })?;
            if !done.status.success() {
                return Err(ProviderError::Exited {
                    program: "VS Code dispatch".to_owned(),
                    code: done.code_text(),
                    output: done.output_tail(1000, &self.config.secrets),
                });
            }
            let text = if self.config.wait {
                wait_for(&response_file, timeout.saturating_sub(started.elapsed())).await?
            } else {
                std::fs::read_to_string(&response_file)
                    .map_err(|e| ProviderError::io(format!("no response file {}", response_file.display()), e))?
            };
            let mut response = parse_answer(&text);
            response.duration_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
            response.metadata = Some(metadata);
            Ok(response)
        })
    }

    fn public_settings(&self) -> Value {
        json!({"vscode_cmd": self.config.vscode_cmd, "dispatch": self.config.dispatch, "wait": self.config.wait})
    }

    fn max_workers(&self) -> Option<usize> {
        Some(1)
    }
}

/// Polls until `path` exists with content, or `timeout` passes.
async fn wait_for(path: &Path, timeout: Duration) -> Result<String, ProviderError> {
    // A timeout too long to add to now never expires.
    let deadline = Instant::now().checked_add(timeout);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && !text.trim().is_empty()
        {
            return Ok(text);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(ProviderError::Timeout(timeout));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn build_vscode(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let config = config(s, ctx, "code")?;
    Some(Arc::new(VsCodeProvider::new(ctx.target, ProviderKind::of(&VSCODE), config)))
}

fn build_insiders(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let config = config(s, ctx, "code-insiders")?;
    Some(Arc::new(VsCodeProvider::new(ctx.target, ProviderKind::of(&INSIDERS), config)))
}

/// A `vscode` or `vscode-insiders` target's settings; `default_cmd` opens the editor.
fn config(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>, default_cmd: &str) -> Option<VsCodeConfig> {
    let vscode_cmd = s
        .string("vscode_cmd", true)
        .unwrap_or_else(|| default_cmd.to_owned());
    let dispatch_pos = s.node("dispatch").map(|n| n.pos);
    let dispatch = s.string("dispatch", true);
    if let Some(template) = &dispatch {
        s.secrets().add_template_parts(template);
    }
    if let (Some(template), Some(pos)) = (&dispatch, dispatch_pos) {
        let allowed = ["PROMPT_FILE", "RESPONSE_FILE", "WORKSPACE", "EVAL_ID"];
        let unknown = unknown_placeholders(template, &allowed);
        if !unknown.is_empty() {
            s.error(
                pos,
                format!(
                    "unsupported placeholder {} in `dispatch`",
                    unknown
                        .iter()
                        .map(|u| format!("{{{u}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Some("use {PROMPT_FILE}, {RESPONSE_FILE}, {WORKSPACE}, {EVAL_ID}".to_owned()),
            );
        }
    }
    let wait = s.boolean("wait").unwrap_or(true);
    let dry_run = s.boolean("dry_run").unwrap_or(false);
    let subagent_root = s
        .string("subagent_root", false)
        .map(|d| s.path(&d))
        .unwrap_or_else(|| PathBuf::from(".agentv").join("vscode"));
    let workspace = s.dir("workspace");
    let timeout = s.duration("timeout_seconds");
    Some(VsCodeConfig {
        vscode_cmd,
        dispatch,
        wait,
        dry_run,
        subagent_root,
        workspace,
        timeout,
        env: ctx.child_env.clone(),
        secrets: s.secrets().clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(dispatch: Option<&str>, dry_run: bool, root: &Path) -> VsCodeProvider {
        VsCodeProvider::new(
            "vs",
            ProviderKind::of(&VSCODE),
            VsCodeConfig {
                vscode_cmd: "code".into(),
                dispatch: dispatch.map(str::to_owned),
                wait: true,
                dry_run,
                subagent_root: root.to_path_buf(),
                workspace: None,
                timeout: Some(Duration::from_secs(10)),
                env: Arc::from(Vec::new()),
                secrets: Secrets::default(),
            },
        )
    }

    fn request() -> ProviderRequest {
        ProviderRequest {
            eval_id: "case/1".into(),
            attempt: 1,
            question: "Summarize.".into(),
            guideline_files: vec![PathBuf::from("/repo/a.instructions.md")],
            input_files: vec![PathBuf::from("/repo/notes.md")],
            ..ProviderRequest::default()
        }
    }

    #[tokio::test]
    async fn document_links_files_and_dry_run_returns_metadata_only() {
        let root = tempfile::tempdir().expect("tmp");
        let r = provider(None, true, root.path())
            .invoke(&request())
            .await
            .expect("dry run");
        assert!(r.output_messages.is_empty(), "no text in a dry run");
        let meta = r.metadata.expect("metadata");
        let prompt = std::fs::read_to_string(meta["prompt_file"].as_str().expect("path")).expect("document");
        assert!(
            prompt.contains("* [/repo/a.instructions.md](file:///repo/a.instructions.md)"),
            "{prompt}"
        );
        assert!(prompt.contains("Read all input files:\n* [/repo/notes.md](file:///repo/notes.md)"));
        assert!(prompt.ends_with("[[ ## user_query ## ]]\nSummarize."));
        assert_eq!(meta["command"][1], "chat");
    }

    #[tokio::test]
    async fn dispatch_command_writes_the_response_file() {
        let root = tempfile::tempdir().expect("tmp");
        let p = provider(
            Some("(sleep 0.2; echo 'the answer' > {RESPONSE_FILE}) &"),
            false,
            root.path(),
        );
        let r = p.invoke(&request()).await.expect("answers");
        assert_eq!(r.output_messages[0].text().as_deref(), Some("the answer"));
        assert_eq!(p.max_workers(), Some(1));
    }
}
