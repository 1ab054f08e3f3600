//! promptfoo configs (`docs/promptfoo.md`), loaded into the same model as AgentV files: each
//! expanded test × prompt is a case (its row keys in the case's `metadata.promptfoo`), each
//! provider a target the suite runs against, each assertion a grader read with promptfoo's
//! names and scoring rules (`evaluators/rules.rs`).

mod grading;
pub(crate) mod prompts;
mod providers;
pub(crate) mod test_list;

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::eval_file::LoadedCase;
use super::invalid::InvalidCase;
use crate::config::{Diagnostics, Node, NodeValue, Severity};
use crate::evaluators::{ConfiguredGrader, Generation, ParseContext, parse_graders};
use crate::model::{Content, EvalCase, Message, Role, SourceRef};
use crate::paths::Workspace;
use crate::providers::TargetsFile;

pub(crate) use crate::nunjucks as template;
pub use providers::Provider;

/// What a config loads into.
pub struct Config {
    /// Every row's case (test × prompt), in promptfoo's order; an invalid case, with its
    /// errors, for a row that cannot run (reported).
    pub cases: Vec<Result<LoadedCase, InvalidCase>>,
    /// The providers, as targets.
    pub targets: TargetsFile,
    pub providers: Vec<Provider>,
    pub description: Option<String>,
    /// Why no row runs when a prompt or a provider could not be read (the rows are still
    /// checked).
    pub broken: Option<String>,
    /// `evaluateOptions` (`docs/promptfoo.md#evaluate-options`).
    pub evaluate: EvaluateOptions,
}

/// `evaluateOptions`: rows at once, runs of each row, and the pause after each call.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EvaluateOptions {
    pub max_concurrency: Option<usize>,
    pub repeat: Option<u32>,
    pub delay_ms: Option<u64>,
}

/// Top-level keys agentv reads.
const READ: &[&str] = &[
    "description",
    "prompts",
    "providers",
    "tests",
    "defaultTest",
    "scenarios",
    "evaluateOptions",
    "derivedMetrics",
];
/// Top-level keys that change nothing agentv computes, or that agentv sets another way.
pub(crate) const IGNORED: &[&str] = &[
    "outputPath",
    "sharing",
    "tags",
    "writeLatestResults",
    "metadata",
    "commandLineOptions",
    "$schema",
];
/// Top-level keys whose meaning agentv does not have yet: the config does not run rather
/// than run differently.
const UNSUPPORTED: &[&str] = &["extensions", "nunjucksFilters", "env", "redteam", "options"];

/// A config's parts before its rows are built: what `agentv convert` maps
/// (`docs/convert.md#from-promptfoo`).
pub(crate) struct Parts {
    pub prompts: Vec<prompts::Prompt>,
    pub providers: Vec<Provider>,
    pub targets: TargetsFile,
    /// Every test, expanded, in promptfoo's order (scenarios after the top-level tests).
    pub tests: Vec<test_list::Test>,
}

/// Reads the parts of the config `root` as [`load`] does; problems are reported.
pub(crate) fn parts(root: &Node, file: &Arc<Path>, dir: &Path, diags: &mut Diagnostics) -> Parts {
    check_keys(root, diags);
    let (prompts, providers, targets) = heads(root, file, dir, diags);
    Parts {
        prompts,
        providers,
        targets,
        tests: tests_of(root, dir, diags),
    }
}

/// The config's prompts, and its providers with the targets they make.
fn heads(
    root: &Node,
    file: &Arc<Path>,
    dir: &Path,
    diags: &mut Diagnostics,
) -> (Vec<prompts::Prompt>, Vec<Provider>, TargetsFile) {
    let prompts = root
        .get("prompts")
        .map_or_else(default_prompts, |n| prompts::read(n, dir, diags));
    let (providers, targets) = match root.get("providers") {
        Some(node) => providers::read(node, file, diags),
        None => {
            diags.error(
                root.pos,
                "the promptfoo config has no `providers`",
                Some("add `providers: [echo]`, or `providers: [openai:chat:gpt-4o-mini]`".to_owned()),
            );
            (Vec::new(), no_targets(file))
        }
    };
    (prompts, providers, targets)
}

/// Every test, expanded: the top-level tests, then the scenarios'.
fn tests_of(root: &Node, dir: &Path, diags: &mut Diagnostics) -> Vec<test_list::Test> {
    let mut tests = test_list::read(root.get("tests"), root.get("defaultTest"), dir, diags);
    if let Some(node) = root.get("scenarios") {
        tests.extend(test_list::scenarios(node, root.get("defaultTest"), dir, diags));
    }
    tests
}

/// promptfoo's prompt when a config has none: the test's `prompt` var.
fn default_prompts() -> Vec<prompts::Prompt> {
    vec![prompts::Prompt {
        raw: "{{prompt}}".to_owned(),
        label: "{{prompt}}".to_owned(),
        id: None,
    }]
}

fn no_targets(file: &Path) -> TargetsFile {
    TargetsFile {
        path: file.to_path_buf(),
        targets: Vec::new(),
        diagnostics: Vec::new(),
        referenced_vars: Vec::new(),
        grading_only: Vec::new(),
        aliases: Vec::new(),
    }
}

/// Why the config's prompts or providers stop it: the first error reported since `mark`.
fn first_error(diags: &Diagnostics, mark: usize, file: &Path) -> String {
    diags
        .since(mark)
        .iter()
        .find(|d| d.severity == Severity::Error)
        .map_or_else(
            || {
                format!(
                    "{}: error: the config's prompts or providers have errors",
                    file.display()
                )
            },
            ToString::to_string,
        )
}

/// The targets that do not run `prompt` (a provider's `prompts` leave it out of the rows of
/// the other prompts); `None` when no provider runs it: such a prompt makes no row.
fn excluded_targets(providers: &[providers::Provider], prompt: &prompts::Prompt) -> Option<Option<Arc<Vec<String>>>> {
    let excluded: Vec<String> = providers
        .iter()
        .filter(|p| !p.runs(prompt))
        .map(|p| p.target.clone())
        .collect();
    if !providers.is_empty() && excluded.len() == providers.len() {
        return None;
    }
    Some((!excluded.is_empty()).then(|| Arc::new(excluded)))
}

/// Loads the config whose YAML tree is `root`.
pub fn load(
    root: &Node,
    file: &Arc<Path>,
    dir: &Path,
    ws: &Workspace,
    dataset: &Arc<str>,
    diags: &mut Diagnostics,
) -> Config {
    // A key agentv cannot honour stops the config as a broken prompt or provider does.
    let before = diags.error_count();
    let mark = diags.len();
    check_keys(root, diags);
    let evaluate = root
        .get("evaluateOptions")
        .map(|n| evaluate_options(n, diags))
        .unwrap_or_default();
    let derived = root.get("derivedMetrics").map(|n| derived_metrics(n, diags));
    let (prompts, providers, targets) = heads(root, file, dir, diags);
    let broken = (diags.error_count() > before || providers.is_empty()).then(|| first_error(diags, mark, file));
    let tests = tests_of(root, dir, diags);
    let description = root.get("description").and_then(Node::scalar_text);
    let mut targets = targets;
    for target in &mut targets.targets {
        // Rows at once: each provider's `workers` (after `--workers`).
        target.workers = evaluate.max_concurrency;
    }
    let mut cases = Vec::with_capacity(tests.len() * prompts.len());
    let mut grading = grading::GradingTargets::new(file);
    for (test_index, test) in tests.iter().enumerate() {
        let test_mark = diags.len();
        let graders = graders_of(test, ws, dir, &mut grading, diags);
        let grader_errors = diags.since(test_mark).to_vec();
        for (prompt_index, prompt) in prompts.iter().enumerate() {
            let Some(excluded) = excluded_targets(&providers, prompt) else {
                continue;
            };
            let row = Row {
                test,
                test_index,
                prompt,
                prompt_index,
                prompts: &prompts,
                excluded: excluded.clone(),
                providers: &providers,
                description: description.as_deref(),
                delay_ms: evaluate.delay_ms,
                derived: derived.as_ref(),
            };
            let row_mark = diags.len();
            let case = graders
                .clone()
                .and_then(|g| row.case(file, dataset, diags).map(|case| (case, g)));
            cases.push(
                case.map(|(case, graders)| LoadedCase {
                    case,
                    graders,
                    turn_graders: Arc::from(Vec::new()),
                    depends_at: None,
                })
                .ok_or_else(|| {
                    let reported: Vec<_> = grader_errors.iter().chain(diags.since(row_mark)).cloned().collect();
                    let mut invalid = InvalidCase::new(Some(row.id()), file, test.pos.line, &reported);
                    invalid.excluded_targets = excluded;
                    let keys = row.keys(file, &row.prompt.raw);
                    invalid.metadata = Some(Map::from_iter([("promptfoo".to_owned(), keys)]));
                    invalid
                }),
            );
        }
    }
    for def in grading.defs {
        targets.grading_only.push(def.name.clone());
        targets.targets.push(def);
    }
    Config {
        cases,
        targets,
        providers,
        description,
        broken,
        evaluate,
    }
}

/// Reads `evaluateOptions`; a value of the wrong kind is an error, other keys are warned about.
fn evaluate_options(node: &Node, diags: &mut Diagnostics) -> EvaluateOptions {
    let mut out = EvaluateOptions::default();
    let Some(entries) = node.as_map() else {
        diags.error(node.pos, "`evaluateOptions` must be a mapping", None);
        return out;
    };
    for (k, v) in entries {
        let key = k.key_text();
        let whole = v.to_json().as_u64();
        match (key.as_str(), whole) {
            ("maxConcurrency", Some(n)) if n > 0 => out.max_concurrency = usize::try_from(n).ok(),
            ("repeat", Some(n)) if n > 0 => out.repeat = u32::try_from(n.min(u64::from(u32::MAX))).ok(),
            ("delay", Some(n)) => out.delay_ms = Some(n),
            ("maxConcurrency" | "repeat" | "delay", _) => diags.error(
                v.pos,
                format!(
                    "`evaluateOptions.{key}` must be a whole number{}",
                    if key == "delay" { "" } else { " above 0" }
                ),
                None,
            ),
            ("cache" | "showProgressBar" | "timeoutMs" | "maxEvalTimeMs" | "interactiveProviders", _) => {}
            _ => diags.warn(
                k.pos,
                format!("unknown key `{key}` in `evaluateOptions`: ignored"),
                Some("agentv reads maxConcurrency, repeat and delay".to_owned()),
            ),
        }
    }
    out
}

/// Reads `derivedMetrics` (`docs/promptfoo.md#derived-metrics`): a list of `{name, value}`
/// whose value is an arithmetic expression, checked here so a mistake stops the config.
fn derived_metrics(node: &Node, diags: &mut Diagnostics) -> Value {
    let mut out = Vec::new();
    let Some(items) = node.as_seq() else {
        diags.error(
            node.pos,
            "`derivedMetrics` must be a list",
            Some("write `derivedMetrics: [{name: NAME, value: EXPRESSION}]`".to_owned()),
        );
        return Value::Array(out);
    };
    for item in items {
        let name = item.get("name").and_then(Node::as_str).filter(|n| !n.is_empty());
        let value = item.get("value");
        let (Some(name), Some(value)) = (name, value) else {
            diags.error(
                item.pos,
                "each of `derivedMetrics` needs a `name` and a `value`",
                Some("write `{name: NAME, value: EXPRESSION}`".to_owned()),
            );
            continue;
        };
        let Some(text) = value.as_str() else {
            diags.error(
                value.pos,
                format!("the value of derived metric `{name}` must be an expression in a string"),
                Some("write it as `value: 'accuracy / __count'`".to_owned()),
            );
            continue;
        };
        if let Err(e) = crate::derived_metrics::parse(text) {
            diags.error(
                value.pos,
                format!("the value of derived metric `{name}` is not an expression agentv reads: {e}"),
                Some("use numbers, metric names, + - * / ^, parentheses and min, max, abs, sqrt, round, floor, ceil, exp, log, pow".to_owned()),
            );
            continue;
        }
        out.push(json!({"name": name, "value": text}));
    }
    Value::Array(out)
}

/// Warns about keys agentv leaves alone and stops on those it cannot honour.
fn check_keys(root: &Node, diags: &mut Diagnostics) {
    let Some(entries) = root.as_map() else {
        diags.error(root.pos, "a promptfoo config must be a mapping", None);
        return;
    };
    for (k, _) in entries {
        let key = k.key_text();
        if READ.contains(&key.as_str()) || IGNORED.contains(&key.as_str()) {
            continue;
        }
        if UNSUPPORTED.contains(&key.as_str()) {
            diags.error(
                k.pos,
                format!("`{key}` in a promptfoo config is not supported by agentv yet"),
                Some(format!("remove `{key}` to run the rest of the config")),
            );
        } else {
            diags.warn(
                k.pos,
                format!("unknown key `{key}` in a promptfoo config: ignored"),
                Some(format!("use one of {}", READ.join(", "))),
            );
        }
    }
}

/// One row of the config before its provider: a test with one prompt.
struct Row<'r> {
    test: &'r test_list::Test,
    test_index: usize,
    prompt: &'r prompts::Prompt,
    prompt_index: usize,
    /// Every prompt of the config.
    prompts: &'r [prompts::Prompt],
    /// The targets of the providers that do not run this prompt.
    excluded: Option<Arc<Vec<String>>>,
    providers: &'r [Provider],
    /// The config's `description`.
    description: Option<&'r str>,
    /// `evaluateOptions.delay`.
    delay_ms: Option<u64>,
    /// `derivedMetrics`, as `[{name, value}]`.
    derived: Option<&'r Value>,
}

impl Row<'_> {
    fn id(&self) -> String {
        row_id(self.test_index, self.prompt_index, self.prompts.len())
    }

    /// The case of this row; `None` (reported) when its prompt does not render.
    fn case(&self, file: &Arc<Path>, dataset: &Arc<str>, diags: &mut Diagnostics) -> Option<EvalCase> {
        let rendered = match template::render(&self.template(), &self.test.vars) {
            Ok(text) => text,
            Err(e) => {
                diags.error(
                    self.test.pos,
                    format!("prompt `{}` does not render for this test: {e}", self.prompt.label),
                    Some("fix the Nunjucks template in the prompt".to_owned()),
                );
                return None;
            }
        };
        let input_messages = messages_of(&rendered);
        let id = self.id();
        let mut metadata = self.test.metadata.clone().unwrap_or_default();
        metadata.insert("promptfoo".to_owned(), self.keys(file, &rendered));
        Some(EvalCase {
            id,
            dataset: dataset.clone(),
            question: rendered,
            input_messages,
            source: SourceRef {
                file: file.clone(),
                line: self.test.pos.line,
            },
            generation: Generation::Promptfoo,
            metadata: Some(metadata),
            threshold: self.test.threshold,
            excluded_targets: self.excluded.clone(),
            ..EvalCase::default()
        })
    }

    /// The prompt's template with the test's `options.prefix` and `options.suffix`.
    fn template(&self) -> String {
        let option = |k: &str| self.test.options.get(k).and_then(Value::as_str).unwrap_or_default();
        format!("{}{}{}", option("prefix"), self.prompt.raw, option("suffix"))
    }

    /// The row keys results carry (`docs/promptfoo.md#results`).
    fn keys(&self, file: &Path, rendered: &str) -> Value {
        let mut keys = Map::new();
        if let Some(d) = self.description {
            keys.insert("config_description".into(), Value::from(d));
        }
        keys.insert("prompt_rendered".into(), Value::from(rendered));
        keys.insert(
            "config".into(),
            Value::from(
                file.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ),
        );
        keys.insert("test_index".into(), json!(self.test_index));
        if let Some(d) = &self.test.description {
            keys.insert("description".into(), Value::from(d.clone()));
        }
        keys.insert("prompt".into(), Value::from(self.prompt.label.clone()));
        keys.insert("prompt_index".into(), json!(self.prompt_index));
        keys.insert("prompt_count".into(), json!(self.prompts.len()));
        keys.insert("prompt_raw".into(), Value::from(self.prompt.raw.clone()));
        // Which target is which provider: the rows' `provider` and `promptIdx`.
        keys.insert(
            "providers".into(),
            Value::Array(
                self.providers
                    .iter()
                    .map(|p| {
                        let mut entry = json!({"id": p.id, "target": p.target});
                        // Absent rather than null (docs/results.md).
                        if let (Some(label), Some(map)) = (&p.label, entry.as_object_mut()) {
                            map.insert("label".into(), Value::from(label.clone()));
                        }
                        if p.prompts.is_some() {
                            // promptfoo numbers only the prompts a provider runs (`promptIdx`).
                            let runs: Vec<usize> = self
                                .prompts
                                .iter()
                                .enumerate()
                                .filter(|(_, prompt)| p.runs(prompt))
                                .map(|(i, _)| i)
                                .collect();
                            entry["prompt_indices"] = json!(runs);
                        }
                        entry
                    })
                    .collect(),
            ),
        );
        keys.insert("vars".into(), Value::Object(self.test.vars.clone()));
        if let Some(t) = self.test.threshold {
            keys.insert("threshold".into(), json!(t));
        }
        // What the run does between the provider and the assertions (`run/promptfoo.rs`).
        let transform = ["transform", "postprocess"]
            .iter()
            .find_map(|k| self.test.options.get(*k).and_then(Value::as_str));
        if let Some(code) = transform {
            keys.insert("transform".into(), Value::from(code));
        }
        if let Some(ms) = self.delay_ms.filter(|ms| *ms > 0) {
            keys.insert("delay_ms".into(), json!(ms));
        }
        // Computed over each prompt's rows when the results are written (`report/promptfoo.rs`).
        if let Some(derived) = self.derived {
            keys.insert("derived_metrics".into(), derived.clone());
        }
        Value::Object(keys)
    }
}

/// A row's case id: `test-<n>`, and `-prompt-<n>` when the config has several prompts.
pub(crate) fn row_id(test_index: usize, prompt_index: usize, prompt_count: usize) -> String {
    if prompt_count > 1 {
        format!("test-{}-prompt-{}", test_index + 1, prompt_index + 1)
    } else {
        format!("test-{}", test_index + 1)
    }
}

/// The messages a rendered prompt stands for: a JSON list of `{role, content}` is a chat;
/// anything else one user message.
pub(crate) fn messages_of(rendered: &str) -> Vec<Message> {
    let chat: Option<Vec<Message>> = rendered
        .trim_start()
        .starts_with('[')
        .then(|| serde_json::from_str::<Vec<Value>>(rendered).ok())
        .flatten()
        .and_then(|items| {
            items
                .iter()
                .map(|m| {
                    let role = Role::parse(m.get("role")?.as_str()?)?;
                    let content = m.get("content")?.as_str()?.to_owned();
                    Some(Message {
                        role,
                        content: Content::Text(content),
                        name: None,
                        tool_calls: None,
                    })
                })
                .collect()
        });
    chat.filter(|m| !m.is_empty()).unwrap_or_else(|| {
        vec![Message {
            role: Role::User,
            content: Content::Text(rendered.to_owned()),
            name: None,
            tool_calls: None,
        }]
    })
}

/// A test's graders: its assertions with their templates rendered by its `vars`, read with
/// promptfoo's names. `None` (reported) when one cannot be used: the test's rows do not run.
fn graders_of(
    test: &test_list::Test,
    ws: &Workspace,
    dir: &Path,
    grading: &mut grading::GradingTargets,
    diags: &mut Diagnostics,
) -> Option<Arc<[ConfiguredGrader]>> {
    let mut errors = Vec::new();
    let list: Vec<Node> = test
        .assert
        .iter()
        .map(|n| rendered(n, &test.vars, &mut errors))
        .collect();
    for (pos, e) in errors {
        diags.error(pos, format!("an assertion does not render for this test: {e}"), None);
    }
    let before = diags.error_count();
    let list = grading.prepare(list, test.grading_options.as_ref(), diags);
    // A grading provider that cannot be made leaves its assertions ungradable: the rows do not
    // run rather than run with another grader.
    let provider_errors = diags.error_count() > before;
    let node = Node::new(NodeValue::Seq(list), test.pos);
    let mut cx = ParseContext::new(ws, dir, diags).with_generation(Generation::Promptfoo);
    let graders = parse_graders(&node, &mut cx).map(Arc::from);
    graders.filter(|_| !provider_errors)
}

/// `node` with every string rendered as a template of `vars`. Kept as written: `type`, a
/// grading `provider` (its `{{ env.X }}` keys become secrets references) and `rubricPrompt`
/// (rendered when it grades, with the answer).
pub(crate) fn rendered(node: &Node, vars: &Map<String, Value>, errors: &mut Vec<(crate::config::Pos, String)>) -> Node {
    let value = match &node.value {
        NodeValue::Str(text) if template::is_template(text) => match template::render(text, vars) {
            Ok(text) => NodeValue::Str(text),
            Err(e) => {
                errors.push((node.pos, e.to_string()));
                node.value.clone()
            }
        },
        NodeValue::Seq(items) => NodeValue::Seq(items.iter().map(|i| rendered(i, vars, errors)).collect()),
        NodeValue::Map(entries) => NodeValue::Map(
            entries
                .iter()
                .map(|(k, v)| {
                    let v = if matches!(k.as_str(), Some("type" | "provider" | "rubricPrompt")) {
                        v.clone()
                    } else {
                        rendered(v, vars, errors)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    };
    Node::new(value, node.pos)
}
