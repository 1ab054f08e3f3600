//! `llm-grader`: asks a grader model for a 4.x verdict (reference §2.5, prompt contract §4):
//! free-form (`{score, assertions, details}`), or per rubric item when it has `rubrics`
//! (see [`super::rubrics`]). An agent grader (claude-code, codex, …) gets one delegate prompt.
//!
//! The 2.x `llm_judge` is a different grader with its own prompt and reply.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::llm_prompt::{self, DEPRECATED_VARIABLES, FREEFORM_SYSTEM, Inputs, VARIABLES};
use super::llm_reply;
use super::rubrics::{self, RubricItem};
use super::{Grade, GradeContext, GradeVerdict, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, IntRange, Key, KeyTable, Kind, Node, NodeValue, NumberRange, describe};
use crate::process::{self, ProcessSpec};
use crate::providers::{Provider, ProviderClass, ProviderRequest};
use crate::template;

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "llm-grader",
    names: Names {
        v2: &[],
        v4: &["llm-grader"],
        promptfoo: &[],
    },
    doc: "Asks the grader target for `{score, assertions, details}` (AgentV 4.x), or to check `rubrics`; other keys reach prompt scripts as `config`.",
    keys: &KEYS,
    parse,
};

/// The keys every 4.x LLM grader has (`llm-grader`, `rubrics`).
pub(crate) const COMMON: &[Key] = &[
    Key::new(
        "prompt",
        Kind::OneOf(&[Kind::Str, Kind::Object(&SCRIPT_KEYS)]),
        "`file://<path>` (a template file), inline text (a template when it uses a 4.x variable, else the criteria), or `{command: [argv], config}` (a script printing the template).",
    ),
    Key::new(
        "target",
        Kind::Text,
        "The target that grades (default: the eval target's `grader_target`/`judge_target`, else the eval target).",
    ),
    Key::new(
        "temperature",
        Kind::Number(NumberRange { min: 0.0, max: 2.0 }),
        "Sampling temperature sent to the grader; honoured only with `target`, as in AgentV 4.x.",
    ),
    Key::new("model", Kind::Text, "Accepted and ignored, as in AgentV 4.x: the target decides the model."),
    Key::new(
        "max_steps",
        Kind::Int(IntRange { min: 1, max: 50 }),
        "The grader model may read the case's workspace (list, read, search files) for up to this many model calls before it answers.",
    ),
    Key::new("config", Kind::Map(&Kind::Any), "Passed to prompt scripts as `config`."),
    Key::new(
        "preprocessors",
        Kind::List(&Kind::Any),
        "AgentV 4.x content preprocessors; not supported by agentv, ignored.",
    ),
];

const OWN: &[Key] = &[Key::new(
    "rubrics",
    Kind::List(&Kind::Any),
    "Rubric items `{id, outcome, weight, required, operator, min_score, score_ranges}`: grade per item.",
)];
const KEYS: KeyTable = KeyTable::new(
    "llm-grader",
    "An AgentV 4.x LLM grader; keys not listed here are passed to prompt scripts in `config`.",
    &[OWN, COMMON],
)
.open();

const SCRIPT_OWN: &[Key] = &[
    Key::new(
        "command",
        Kind::List(&Kind::Text),
        "The argv of a program that reads the case on stdin and prints the prompt template.",
    )
    .aliases(&["script"]),
    Key::new("config", Kind::Map(&Kind::Any), "Passed to the script as `config`."),
];
const SCRIPT_KEYS: KeyTable = KeyTable::new("prompt script", "A prompt script.", &[SCRIPT_OWN]);

/// Where the user prompt comes from.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Prompt {
    /// The default template with the case's criteria.
    #[default]
    Default,
    /// The default template with this text as the criteria (an inline prompt without a 4.x
    /// variable, quirk 1).
    Criteria(String),
    /// A whole template: a `file://` file, or inline text using a 4.x variable.
    Template(String),
    /// A program that prints the template.
    Script(PromptScript),
}

/// `prompt: {command, config}`.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptScript {
    /// The last element is the script, resolved to an absolute path.
    pub argv: Vec<String>,
    /// The script's directory: it runs there.
    pub dir: PathBuf,
    pub config: Map<String, Value>,
}

/// A 4.x LLM grader as configured (also what `rubrics` graders are).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmGrader {
    pub prompt: Prompt,
    /// Non-empty: grade per rubric item.
    pub rubrics: Vec<RubricItem>,
    /// The grader's own target, over the eval target's grader.
    pub target: Option<String>,
    /// Sent only with `target` (4.x ignores it otherwise).
    pub temperature: Option<f64>,
    /// `config` and the keys no table declares.
    pub config: Map<String, Value>,
    /// Set: the grader model may read the case's workspace with tools for up to this many model
    /// calls (`docs/workspaces.md#agentic-llm-grader`).
    pub max_steps: Option<u32>,
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let rubrics = match f.take("rubrics") {
        None => Vec::new(),
        Some(node) => rubrics::parse_items(node, "rubrics", false, cx).ok()?,
    };
    let grader = parse_common(f, cx)?;
    Some(Arc::new(LlmGrader { rubrics, ..grader }))
}

/// Reads the keys every 4.x LLM grader has ([`COMMON`]); in an open table, the keys no table
/// declares are collected into `config` (`config` wins). `None` when the grader is dropped or
/// the case is invalid (both reported).
pub(crate) fn parse_common(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<LlmGrader> {
    let mark = cx.mark();
    let target = f.string("target", cx.diags).filter(|t| !t.trim().is_empty());
    let temperature_pos = f.take("temperature").map(|n| n.pos);
    let temperature = f.number("temperature", cx.diags);
    let max_steps = f.integer("max_steps", cx.diags).and_then(|n| u32::try_from(n).ok());
    let config = match f.take("config") {
        None => Map::new(),
        Some(n) => match n.to_json() {
            Value::Object(map) => map,
            _ => {
                cx.diags.error(
                    n.pos,
                    format!("`config` must be a mapping, found {}", describe(n)),
                    None,
                );
                Map::new()
            }
        },
    };
    if cx.drop_grader_if_errors(mark) {
        return None;
    }
    let temperature = match (temperature, temperature_pos, &target) {
        (Some(t), _, Some(_)) => Some(t),
        (Some(_), Some(pos), None) => {
            cx.diags.warn(
                pos,
                "`temperature` is used only together with `target`, as in AgentV 4.x; it is ignored",
                Some("name the grading target with `target: <name>`, or drop `temperature`".to_owned()),
            );
            None
        }
        _ => None,
    };
    if let Some(n) = f.take("model") {
        cx.diags.warn(
            n.pos,
            "`model` is ignored, as in AgentV 4.x: the grader's model is its target's",
            Some("set `target: <a target with that model>`".to_owned()),
        );
    }
    if let Some(n) = f.take("preprocessors") {
        cx.diags.warn(n.pos, "`preprocessors` is not supported by agentv, ignored", None);
    }
    let prompt = match f.take("prompt") {
        None => Prompt::Default,
        Some(node) => parse_prompt(node, cx)?,
    };
    let mut grader = LlmGrader {
        prompt,
        target,
        temperature,
        max_steps,
        config: if f.is_open() { extra_keys(f, cx) } else { Map::new() },
        ..LlmGrader::default()
    };
    grader.config.extend(config);
    Some(grader)
}

/// The keys no table declares (an open table passes them to prompt scripts), with a warning
/// for those that look like a misspelled key of the grader.
fn extra_keys(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Map<String, Value> {
    let what = f.what().to_owned();
    f.rest_as_config("prompt scripts", &what, cx.diags)
}

/// What a template file or inline template is checked for: it must show the answer or the
/// reference (a file that does not makes the case invalid, as in 4.x); unknown and 2.x
/// variables are warnings.
fn check_template(text: &str, pos: crate::config::Pos, from_file: Option<&str>, cx: &mut ParseContext<'_>) -> bool {
    for name in template::variables(text) {
        if VARIABLES.contains(&name) {
            continue;
        }
        match DEPRECATED_VARIABLES.iter().find(|(old, _)| *old == name) {
            Some((old, new)) => cx.diags.warn(
                pos,
                format!("`{{{{ {old} }}}}` is a 2.x variable; llm-grader leaves it as written"),
                Some(format!("use `{{{{ {new} }}}}`")),
            ),
            None => cx.diags.warn(
                pos,
                format!("unknown variable `{{{{ {name} }}}}` in the llm-grader prompt; it is left as written"),
                Some(format!("known variables: {}", VARIABLES.join(", "))),
            ),
        }
    }
    let shows_answer = template::uses(text, "output") || template::uses(text, "expected_output");
    if let (false, Some(file)) = (shows_answer, from_file) {
        cx.diags.error(
            pos,
            format!("prompt file `{file}` uses neither `{{{{ output }}}}` nor `{{{{ expected_output }}}}`"),
            Some("a grader template must show the answer: add `{{ output }}`".to_owned()),
        );
        return false;
    }
    true
}

fn parse_prompt(node: &Node, cx: &mut ParseContext<'_>) -> Option<Prompt> {
    match &node.value {
        NodeValue::Str(s) if s.trim().is_empty() => Some(Prompt::Default),
        NodeValue::Str(s) => match s.strip_prefix("file://") {
            Some(path) => prompt_file(path, node, cx).map(Prompt::Template),
            None if llm_prompt::uses_known_variable(s) => {
                check_template(s, node.pos, None, cx);
                Some(Prompt::Template(s.clone()))
            }
            None => Some(Prompt::Criteria(s.clone())),
        },
        NodeValue::Map(_) => prompt_script(node, cx).map(Prompt::Script),
        _ => {
            cx.drop_grader(
                node.pos,
                format!("`prompt` must be text or `{{command: [...]}}`, found {}", describe(node)),
                Some("write `prompt: file://grader.md`, inline text, or `prompt: {command: [python3, prompt.py]}`".to_owned()),
            );
            None
        }
    }
}

/// A `file://` template: it must exist (through the search roots) and show the answer.
fn prompt_file(path: &str, node: &Node, cx: &mut ParseContext<'_>) -> Option<String> {
    let resolved = match cx.ws.resolve_file(path, cx.eval_dir) {
        Ok(p) => p,
        Err(tried) => {
            let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
            cx.diags.error(
                node.pos,
                format!("prompt file `{path}` not found"),
                Some(format!("looked in: {}", tried.join(", "))),
            );
            return None;
        }
    };
    let text = match std::fs::read(&resolved).map(String::from_utf8) {
        Ok(Ok(text)) => text.trim_start_matches('\u{feff}').to_owned(),
        Ok(Err(_)) => {
            cx.diags.error(
                node.pos,
                format!("prompt file {} is not UTF-8 text", resolved.display()),
                None,
            );
            return None;
        }
        Err(e) => {
            cx.diags.error(
                node.pos,
                format!("cannot read prompt file {}: {e}", resolved.display()),
                None,
            );
            return None;
        }
    };
    check_template(&text, node.pos, Some(path), cx).then_some(text)
}

/// `{command: [argv], config}`: the last argument must be a file found through the search
/// roots (else the case is invalid, as in 4.x).
fn prompt_script(node: &Node, cx: &mut ParseContext<'_>) -> Option<PromptScript> {
    let mut f = Fields::of_named(node, &SCRIPT_KEYS, "the prompt script".to_owned(), cx.diags)?;
    if f.written("command") == "script" {
        cx.diags.warn(
            f.take("command").map_or(node.pos, |n| n.pos),
            "`script` is deprecated",
            Some("write `command:`".to_owned()),
        );
    }
    let mark = cx.mark();
    let argv: Option<Vec<String>> = match f.take("command") {
        None => {
            cx.diags.error(
                node.pos,
                "the prompt script is missing `command`",
                Some("write `prompt: {command: [python3, prompt.py]}`".to_owned()),
            );
            None
        }
        Some(n) => match n.as_seq() {
            Some(items) if !items.is_empty() && items.iter().all(|i| i.scalar_text().is_some()) => {
                Some(items.iter().filter_map(Node::scalar_text).collect())
            }
            _ => {
                cx.diags.error(
                    n.pos,
                    format!("the prompt script's `command` must be a non-empty argv list, found {}", describe(n)),
                    Some("for example `command: [python3, prompt.py]`".to_owned()),
                );
                None
            }
        },
    };
    let config = match f.take("config").map(Node::to_json) {
        None => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            cx.diags
                .error(node.pos, "the prompt script's `config` must be a mapping", None);
            Map::new()
        }
    };
    f.warn_unknown(cx.diags);
    if cx.drop_grader_if_errors(mark) {
        return None;
    }
    let mut argv = argv?;
    let script = argv.last().cloned().unwrap_or_default();
    let resolved = match cx.ws.resolve_file(&script, cx.eval_dir) {
        Ok(p) => p,
        Err(tried) => {
            let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
            cx.diags.error(
                node.pos,
                format!("prompt script `{script}` not found"),
                Some(format!("looked in: {}", tried.join(", "))),
            );
            return None;
        }
    };
    let dir = resolved.parent().map(PathBuf::from).unwrap_or_else(|| cx.eval_dir.to_path_buf());
    if let Some(last) = argv.last_mut() {
        *last = resolved.display().to_string();
    }
    Some(PromptScript { argv, dir, config })
}

impl Grader for LlmGrader {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(run(self, ctx))
    }
}

/// The provider that grades, by the 4.x rule: the grader's own `target`, else the eval
/// target's grader (`grader_target`/`judge_target`, else the eval target itself).
fn grader_provider(spec: &LlmGrader, ctx: &GradeContext<'_>) -> Result<(String, Arc<dyn Provider>), String> {
    let t = ctx.target;
    match spec.target.as_deref() {
        None => Ok((t.judge_name.clone(), t.judge.clone())),
        Some(name) if name == t.judge_name => Ok((t.judge_name.clone(), t.judge.clone())),
        Some(name) if name == t.name => Ok((t.name.clone(), t.provider.clone())),
        Some(name) => t
            .registry
            .resolve(name)
            .map(|p| (name.to_owned(), p))
            .map_err(|e| format!("grader target `{name}`: {e}")),
    }
}

/// What the grader asks: the user prompt, the system prompt (none for agent graders) and how
/// the reply is read.
struct Question {
    user: String,
    system: Option<&'static str>,
    mode: Mode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Freeform,
    Checklist,
    ScoreRange,
}

async fn run(spec: &LlmGrader, ctx: &GradeContext<'_>) -> Grade {
    let (target_name, provider) = match grader_provider(spec, ctx) {
        Ok(found) => found,
        Err(e) => return Grade::failed_with(e),
    };
    let mut inputs = Inputs::of(ctx);
    if !spec.rubrics.is_empty() {
        inputs.rubrics = Some(rubrics::items_json(&spec.rubrics));
    }
    let template = match &spec.prompt {
        Prompt::Default => None,
        Prompt::Criteria(text) => {
            inputs.criteria = text.clone();
            None
        }
        Prompt::Template(text) => Some(text.clone()),
        Prompt::Script(script) => match run_prompt_script(script, ctx).await {
            Ok(text) => Some(text),
            Err(e) => return Grade::failed_with(e),
        },
    };
    let delegate = provider.kind().class() == ProviderClass::Agent;
    let question = if delegate {
        delegate_question(spec, &inputs, template.as_deref())
    } else {
        llm_question(spec, &inputs, template.as_deref())
    };
    let request = ProviderRequest {
        eval_id: ctx.case.id.clone(),
        attempt: ctx.attempt,
        question: question.user.clone(),
        system_prompt: question.system.map(str::to_owned),
        eval_dir: Some(ctx.case.eval_dir().to_path_buf()),
        temperature: spec.temperature,
        ..ProviderRequest::default()
    };
    if let Some(dumps) = &ctx.run.dump_prompts {
        let suffix = format!("grader-{target_name}");
        // Two graders of one case may share a target: each is told apart by its address.
        let grader = format!("{:p}", std::ptr::from_ref(spec));
        let dump_for = crate::report::DumpFor {
            eval_file: &ctx.case.source.file,
            grader: Some(&grader),
            suffix: Some(&suffix),
        };
        crate::report::dump_prompt(dumps, dump_for, provider.as_ref(), &request, &ctx.run.secrets);
    }
    let mut recorded = json!({"user_prompt": question.user, "target": target_name});
    if let Some(system) = question.system {
        recorded["system_prompt"] = json!(system);
    }
    if delegate {
        recorded["mode"] = json!("delegate");
    }
    if let Prompt::Script(script) = &spec.prompt {
        recorded["prompt_script"] = json!(script.argv);
    }
    let mut grade = if let (Some(steps), false) = (spec.max_steps, delegate) {
        let Some(workspace) = ctx.workspace else {
            return Grade::failed_with(
                "llm-grader with `max_steps` reads the case's workspace, and this case has none: declare `workspace:` in the suite or the case",
            );
        };
        recorded["mode"] = json!("built-in");
        match explore::explore(provider.as_ref(), request.clone(), steps, &workspace.path).await {
            Ok(explored) => explore::grade(explored, |v| grade_reply(v, question.mode, &spec.rubrics)),
            Err(e) => Grade::failed_with(format!("llm-grader evaluation failed: {e}")),
        }
    } else if delegate {
        ask_delegate(provider.as_ref(), &request, question.mode, &spec.rubrics).await
    } else {
        ask_llm(provider.as_ref(), &request, question.mode, &spec.rubrics).await
    };
    grade.request = Some(recorded);
    grade
}

fn mode(spec: &LlmGrader) -> Mode {
    if spec.rubrics.is_empty() {
        Mode::Freeform
    } else if rubrics::score_range_mode(&spec.rubrics) {
        Mode::ScoreRange
    } else {
        Mode::Checklist
    }
}

/// The prompts of LLM mode (reference §4.1–4.4): a custom template replaces the user prompt
/// (nothing appended); the system prompt is the mode's schema.
fn llm_question(spec: &LlmGrader, inputs: &Inputs, template: Option<&str>) -> Question {
    let mode = mode(spec);
    let (built, system) = match mode {
        Mode::Freeform => (inputs.default_prompt(), FREEFORM_SYSTEM),
        Mode::Checklist => (rubrics::checklist_prompt(inputs, &spec.rubrics), rubrics::CHECKLIST_SYSTEM),
        Mode::ScoreRange => (
            rubrics::score_range_prompt(inputs, &spec.rubrics),
            rubrics::SCORE_RANGE_SYSTEM,
        ),
    };
    Question {
        user: template.map_or(built, |t| inputs.render(t)),
        system: Some(system),
        mode,
    }
}

/// The one prompt of delegate mode (reference §4.6): the case blocks and the schema, or a
/// custom template followed by the schema. Rubric items are checked as a checklist.
fn delegate_question(spec: &LlmGrader, inputs: &Inputs, template: Option<&str>) -> Question {
    let (mode, schema) = if spec.rubrics.is_empty() {
        (Mode::Freeform, FREEFORM_SYSTEM)
    } else {
        (Mode::Checklist, rubrics::CHECKLIST_SYSTEM)
    };
    let user = match template {
        Some(t) => format!("{}\n\n{schema}", inputs.render(t)),
        None => {
            let mut lines = vec![llm_prompt::DELEGATE_HEADER.to_owned(), String::new()];
            lines.extend(inputs.case_lines());
            if !spec.rubrics.is_empty() {
                lines.extend(rubrics::delegate_lines(&spec.rubrics));
                lines.push(String::new());
            }
            lines.push(schema.to_owned());
            lines.join("\n")
        }
    };
    Question {
        user,
        system: None,
        mode,
    }
}

/// Reads a parsed reply in `mode` into a grade.
fn grade_reply(value: &Value, mode: Mode, items: &[RubricItem]) -> Result<Grade, String> {
    match mode {
        Mode::Freeform => llm_reply::freeform(value).map(|reply| Grade {
            details: reply.details,
            ..Grade::assessed(reply.score, reply.assertions).with_verdict(GradeVerdict::of_score(reply.score))
        }),
        Mode::Checklist => rubrics::checklist_reply(value).map(|checks| rubrics::score_checklist(&checks, items)),
        Mode::ScoreRange => {
            rubrics::score_range_reply(value).map(|checks| rubrics::score_ranges_result(&checks, items))
        }
    }
}

/// LLM mode: three attempts and a repair call; a reply that never parses skips the grader
/// (and 4.x makes the case an execution error).
async fn ask_llm(provider: &dyn Provider, request: &ProviderRequest, mode: Mode, items: &[RubricItem]) -> Grade {
    match llm_reply::ask(provider, request, |v| grade_reply(v, mode, items)).await {
        Ok(grade) => grade,
        Err(e) => Grade::skipped(format!("Grader parse failure after 3 attempts: {e}")),
    }
}

/// Delegate mode: one call, no retries; any failure scores 0 with verdict fail.
async fn ask_delegate(provider: &dyn Provider, request: &ProviderRequest, mode: Mode, items: &[RubricItem]) -> Grade {
    let response = match provider.invoke(request).await {
        Ok(r) => r,
        Err(e) => return Grade::failed_with(format!("llm-grader delegate evaluation failed: {e}")),
    };
    let text = agentv_eval_sdk::last_assistant_text(&response.output_messages).unwrap_or_default();
    if text.trim().is_empty() {
        return Grade::failed_with("llm-grader delegate returned no assistant response");
    }
    match llm_reply::parse_json_from_text(&text).and_then(|v| grade_reply(&v, mode, items)) {
        Ok(grade) => grade,
        Err(e) => {
            let mut grade = Grade::failed_with("Failed to parse llm-grader agent response as valid evaluation JSON");
            grade.error = Some(format!("agent grader reply: {e}"));
            grade
        }
    }
}

/// Runs a prompt script: the case on stdin (4.x keys), the trimmed stdout is the template.
async fn run_prompt_script(script: &PromptScript, ctx: &GradeContext<'_>) -> Result<String, String> {
    let payload = super::code_judge::payload_with(script.config.clone(), ctx);
    let all = serde_json::to_value(&payload).unwrap_or(Value::Null);
    let mut input = Map::new();
    for key in [
        "criteria",
        "expected_output",
        "output",
        "messages",
        "input_files",
        "input",
        "metadata",
        "trace",
        "file_changes",
        "workspace_path",
        "config",
    ] {
        input.insert(key.to_owned(), all.get(key).cloned().unwrap_or(Value::Null));
    }
    input.insert("answer".to_owned(), all.get("output").cloned().unwrap_or(Value::Null));
    let stdin = serde_json::to_vec_pretty(&input).map_err(|e| format!("cannot encode the prompt script's input: {e}"))?;
    let done = process::run(ProcessSpec {
        argv: &script.argv,
        cwd: &script.dir,
        env: &ctx.run.child_env,
        env_remove: &[],
        stdin: Some(&stdin),
        timeout: ctx.run.timeout,
        tee: None,
        keep_children: false,
    })
    .await
    .map_err(|e| format!("prompt script failed: {e}"))?;
    if !done.status.success() {
        return Err(format!(
            "prompt script exited with code {}: {}",
            done.code_text(),
            done.output_tail(2000, &ctx.run.secrets)
        ));
    }
    let text = String::from_utf8_lossy(&done.stdout).trim().to_owned();
    if text.is_empty() {
        return Err("prompt script printed no prompt".to_owned());
    }
    Ok(text)
}

mod explore;
#[cfg(test)]
mod tests;
