//! One eval case of either generation, read into the model (`docs/architecture.md#generations`):
//! the keys of both generations, the 4.x short forms of `input` and `expected_output`, `vars`,
//! the suite's defaults, the grader lists and how they combine, and the rules that decide
//! whether a case can run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::eval_file::{LoadedCase, Loader, SuiteEvaluators, not_honoured, object_of};
use super::keys::{CASE, EXECUTION, MESSAGE, SEGMENT, TURN};
use crate::config::interpolate::substitute_vars;
use crate::config::{Diagnostics, Fields, Node, NodeValue, Pos, describe};
use crate::evaluators::{CaseField, ConfiguredGrader, default_graders_for};
use crate::model::{
    Content, Conversation, EvalCase, FileRef, Generation, Message, Role, Segment, SourceRef, Turn, TurnAggregation,
};

/// Case keys `vars` apply to (`agentv-4.md` §1.6); never grader lists.
const VARS_KEYS: &[&str] = &[
    "criteria",
    "expected_outcome",
    "input",
    "input_files",
    "expected_output",
];

/// A case's input messages with guideline files split out.
#[derive(Default)]
struct Inputs {
    messages: Vec<Message>,
    /// As written, for judges.
    raw: Vec<Value>,
    guidelines: Vec<FileRef>,
    files: Vec<PathBuf>,
}

/// The case's own `execution` block.
#[derive(Default)]
struct CaseExecution<'a> {
    present: bool,
    evaluators: Option<&'a Node>,
    assertions: Option<&'a Node>,
    skip_defaults: bool,
    threshold: Option<f64>,
}

impl Loader {
    /// A case, or `None` when it has any error. `file` is the file it is written in.
    pub(super) fn checked_case(
        &self,
        node: &Node,
        file: &Arc<Path>,
        ids: &mut CaseIds,
        diags: &mut Diagnostics,
    ) -> Option<LoadedCase> {
        let before = diags.error_count();
        let case = self.parse_case(node, file, ids, diags);
        case.filter(|_| diags.error_count() == before)
    }

    fn parse_case(
        &self,
        node: &Node,
        file: &Arc<Path>,
        ids: &mut CaseIds,
        diags: &mut Diagnostics,
    ) -> Option<LoadedCase> {
        let v4 = self.generation == Generation::V4;
        // A JSONL line takes every key a YAML case takes, `vars` included.
        let vars = node.get("vars").filter(|_| v4);
        let substituted = vars.map(|vars| with_vars(node, vars));
        let node = substituted.as_ref().unwrap_or(node);
        let mut f = Fields::of(node, &CASE, diags)?;
        let id = f.required_string("id", "eval case", diags);
        if let (Some(id), Some(id_node)) = (&id, f.take("id")) {
            ids.check(id, id_node.pos, diags);
        }
        // Already applied (`vars`) or only informative.
        let _ = ["vars", "note", "suite"].map(|key| f.take(key));
        let outcome = case_outcome(&mut f, diags);
        let conversation_id = f.string("conversation_id", diags);
        let metadata = self.case_metadata(&mut f, diags);
        let tool_use = self.case_tool_use(&mut f, diags);

        let exec = self.case_execution(&mut f, diags);
        let inputs = self.case_inputs(&mut f, vars, v4 && !exec.skip_defaults, diags);
        let expected = self.case_expected(&mut f, diags);
        let assertions = f.take("assertions");
        let evaluators = f.take("evaluators");
        let rubrics = f.take("rubrics");
        let turns_node = f.take("turns");
        let conversation = self.conversation(&mut f, turns_node, vars, diags);
        let workspace = self.case_workspace(&mut f, diags);
        let (dependencies, depends_at) = self.case_dependencies(&mut f, diags)?;
        warn_legacy_evaluator(&mut f, diags);
        f.warn_unknown(diags);

        let own = assertions.or(exec.evaluators).or(evaluators);
        // A conversation case without graders of its own only grades its turns.
        let is_conversation = matches!(conversation, Some(Some(_)));
        let graders = self.case_graders(own, rubrics, &exec, is_conversation, f.pos, diags)?;
        let (conversation, turn_graders) = conversation
            .map_or(Some(None), |parsed| parsed.map(Some))?
            .map_or((None, Vec::new()), |(c, graders)| (Some(Arc::new(c)), graders));
        let inputs = inputs?;
        let expected_messages = expected?;
        let gradable = Gradable {
            id: id.as_deref(),
            outcome: outcome.text.is_some() || outcome.reported,
            expected: expected_messages
                .iter()
                .any(|m| m.content != Content::Empty || m.tool_calls.is_some()),
            turns: conversation.as_ref().is_some_and(|c| !c.turns.is_empty()),
            evaluators_key: evaluators.is_some() || exec.evaluators.is_some(),
            assertions_key: assertions.is_some(),
        };
        let outcome_pos = outcome.node.map_or(f.pos, |n| n.pos);
        self.check_gradable(&graders, &gradable, f.pos, outcome_pos, diags)?;
        let case = EvalCase {
            id: id?,
            dataset: self.dataset.clone(),
            conversation_id,
            expected_outcome: outcome.text.unwrap_or_default(),
            question: question_text(&inputs.messages),
            reference_answer: expected_messages.last().map(reference_text).unwrap_or_default(),
            input_messages: inputs.messages,
            raw_input_messages: inputs.raw,
            expected_messages,
            guidelines: inputs.guidelines,
            input_files: inputs.files,
            suite_target: self.target.clone(),
            source: SourceRef {
                file: file.clone(),
                line: node.pos.line,
            },
            generation: self.generation,
            metadata,
            // 4.x datasets have no per-case threshold (`agentv-4.md` §1.9).
            threshold: exec.threshold,
            suite_threshold: self.defaults.threshold,
            conversation,
            workspace: workspace?,
            dependencies,
            strict: self.settings.strict,
            tool_use,
            excluded_targets: None,
        };
        Some(LoadedCase {
            case,
            graders,
            turn_graders: Arc::from(turn_graders),
            depends_at,
        })
    }

    /// `expected_messages`, or the 4.x `expected_output` short forms; `None` after an error.
    fn case_expected(&self, f: &mut Fields<'_>, diags: &mut Diagnostics) -> Option<Vec<Message>> {
        match f.take("expected_messages") {
            Some(node) => self.expected_list(node, diags),
            None => f
                .take("expected_output")
                .map_or(Some(Vec::new()), |node| self.expected_output(node, diags)),
        }
    }

    /// The case's graders: its own, or the generation's defaults. (promptfoo configs have
    /// their own loader.)
    fn case_graders(
        &self,
        own: Option<&Node>,
        rubrics: Option<&Node>,
        exec: &CaseExecution<'_>,
        is_conversation: bool,
        pos: Pos,
        diags: &mut Diagnostics,
    ) -> Option<Arc<[ConfiguredGrader]>> {
        let own = match own {
            Some(list) => Some(self.graders(list, diags)?),
            None => None,
        };
        match self.generation {
            Generation::V2 => self.v2_graders(own, pos, diags),
            Generation::V4 | Generation::Promptfoo => self.v4_graders(own, rubrics, exec, !is_conversation, pos, diags),
        }
    }

    /// Whether the case has what its generation needs to be graded: in 2.x what each grader
    /// needs, in 4.x criteria, an expected output, turns or graders (`docs/architecture.md#generations`).
    /// `None` after an error.
    fn check_gradable(
        &self,
        graders: &[ConfiguredGrader],
        gradable: &Gradable<'_>,
        case_pos: Pos,
        outcome_pos: Pos,
        diags: &mut Diagnostics,
    ) -> Option<()> {
        match self.generation {
            Generation::V2 => {
                let has = |field: CaseField| match field {
                    // An `expected_outcome` already reported as invalid is not reported missing too.
                    CaseField::ExpectedOutcome => gradable.outcome,
                };
                check_needs(graders, has, outcome_pos, diags)
            }
            Generation::V4 | Generation::Promptfoo => {
                let complete = gradable.outcome
                    || gradable.expected
                    || gradable.turns
                    || (self.v2_cases_key && gradable.evaluators_key)
                    // A JSONL line takes every spelling a YAML case takes (AgentV 4.x reads
                    // only `assert` there; `docs/architecture.md#file-formats`).
                    || gradable.assertions_key;
                if complete {
                    return Some(());
                }
                let key = "assertions";
                diags.error(
                    case_pos,
                    format!(
                        "incomplete case `{}`: it needs `criteria`, `expected_output` or `{key}` (AgentV 4.x skips such a case)",
                        gradable.id.unwrap_or("?")
                    ),
                    Some(format!(
                        "add `criteria: ...` or `{key}:`{}",
                        if gradable.evaluators_key {
                            "; graders under `evaluators` do not count, rename the key"
                        } else {
                            ""
                        }
                    )),
                );
                None
            }
        }
    }

    /// `depends_on` and `on_dependency_failure` as written, and where `depends_on` is; the
    /// suite checks the graph once every case is read (`super::dependencies`). `None` after an
    /// error. A JSONL dataset's cases run in file order as they stream: the keys are a warning.
    #[allow(clippy::type_complexity)]
    fn case_dependencies(
        &self,
        f: &mut Fields<'_>,
        diags: &mut Diagnostics,
    ) -> Option<(Option<Arc<crate::model::Dependencies>>, Option<Pos>)> {
        use crate::model::OnDependencyFailure;
        let on = f.take("depends_on");
        let policy = f.take("on_dependency_failure");
        if self.jsonl {
            for (key, node) in [("depends_on", on), ("on_dependency_failure", policy)] {
                if let Some(node) = node {
                    let what = "case dependencies (a dataset's cases run in file order)";
                    diags.warn(node.pos, not_honoured(key, what), None);
                }
            }
            return Some((None, None));
        }
        let on_failure = match policy.map(|n| (n, n.as_str())) {
            None => OnDependencyFailure::Skip,
            Some((_, Some("skip"))) => OnDependencyFailure::Skip,
            Some((_, Some("fail"))) => OnDependencyFailure::Fail,
            Some((_, Some("run"))) => OnDependencyFailure::Run,
            Some((node, _)) => {
                diags.error(
                    node.pos,
                    format!(
                        "`on_dependency_failure` must be skip, fail or run, found {}",
                        describe(node)
                    ),
                    Some("write `skip` (the default), `fail` or `run`".to_owned()),
                );
                return None;
            }
        };
        let Some(node) = on else {
            return Some((None, None));
        };
        let items: Vec<&Node> = match (node.as_seq(), node.as_str()) {
            (Some(items), _) => items.iter().collect(),
            (None, Some(_)) => vec![node],
            (None, None) => {
                diags.error(
                    node.pos,
                    format!("`depends_on` must be a list of case ids, found {}", node.type_name()),
                    Some("write `depends_on: [other-case-id]`".to_owned()),
                );
                return None;
            }
        };
        let mut ids = Vec::with_capacity(items.len());
        for item in items {
            match item.as_str().filter(|t| !t.trim().is_empty()) {
                Some(id) if !ids.iter().any(|known| known == id) => ids.push(id.to_owned()),
                Some(_) => {}
                None => {
                    diags.error(
                        item.pos,
                        format!("a `depends_on` entry must be a case id, found {}", describe(item)),
                        Some("write the id of another case of this suite".to_owned()),
                    );
                    return None;
                }
            }
        }
        let dependencies = crate::model::Dependencies {
            on: ids,
            on_failure,
            wave: 0,
        };
        Some((Some(Arc::new(dependencies)), Some(node.pos)))
    }

    /// The case's workspace merged over the suite's (`docs/workspaces.md#case-and-suite`);
    /// `None` when either has errors. JSONL datasets have no workspaces (AgentV 4.x reads none).
    fn case_workspace(
        &self,
        f: &mut Fields<'_>,
        diags: &mut Diagnostics,
    ) -> Option<Option<Arc<crate::model::workspace::CaseWorkspace>>> {
        let own = match f.take("workspace") {
            Some(node) if self.jsonl => {
                diags.warn(
                    node.pos,
                    "a JSONL dataset's cases have no workspace: `workspace` is ignored",
                    None,
                );
                None
            }
            Some(node) => self.read_workspace(node, diags)?,
            None => None,
        };
        if self.workspace.broken {
            diags.error(
                f.pos,
                "the case is left out: the suite's `workspace` has errors",
                Some("fix the errors reported for the suite's `workspace`".to_owned()),
            );
            return None;
        }
        let config = crate::model::workspace::WorkspaceConfig::merge(self.workspace.config.as_ref(), own.as_ref());
        if config.is_none() && self.workspace.target_hooks.is_empty() {
            return Some(None);
        }
        Some(Some(Arc::new(crate::model::workspace::CaseWorkspace {
            config,
            suite_file: self.file.clone(),
            target_hooks: self.workspace.target_hooks.clone(),
        })))
    }

    /// 2.x (`docs/architecture.md#default-grader`): the case's own list, else the suite's, else
    /// the default judge.
    fn v2_graders(
        &self,
        own: Option<Vec<ConfiguredGrader>>,
        pos: Pos,
        diags: &mut Diagnostics,
    ) -> Option<Arc<[ConfiguredGrader]>> {
        if let Some(own) = own {
            return Some(Arc::from(own));
        }
        match &self.suite_evaluators {
            SuiteEvaluators::Valid(graders) => Some(graders.clone()),
            SuiteEvaluators::Default => Some(default_graders_for(Generation::V2)),
            SuiteEvaluators::Invalid => {
                diags.error(
                    pos,
                    "case inherits the eval file's invalid `evaluators`",
                    Some("fix the errors reported for `execution.evaluators`".to_owned()),
                );
                None
            }
        }
    }

    /// 4.x (`agentv-4.md` §2.1): deprecated inline `rubrics` first, then the case's own list,
    /// then the suite's (unless `skip_defaults`); none at all → the default grader. A dataset
    /// line's `execution` block, when it has one, replaces the sidecar's list (§1.9).
    fn v4_graders(
        &self,
        own: Option<Vec<ConfiguredGrader>>,
        rubrics: Option<&Node>,
        exec: &CaseExecution<'_>,
        default_if_none: bool,
        pos: Pos,
        diags: &mut Diagnostics,
    ) -> Option<Arc<[ConfiguredGrader]>> {
        let mut all: Vec<ConfiguredGrader> = Vec::new();
        if let Some(node) = rubrics {
            let named = inline_rubrics(node);
            all.extend(self.graders(&named, diags)?);
        }
        all.extend(own.unwrap_or_default());
        if !exec.skip_defaults {
            if self.jsonl && exec.present {
                if let Some(list) = exec.assertions.or(exec.evaluators) {
                    all.extend(self.graders(list, diags)?);
                }
            } else {
                match &self.suite_evaluators {
                    SuiteEvaluators::Valid(graders) => all.extend(graders.iter().cloned()),
                    SuiteEvaluators::Default => {}
                    SuiteEvaluators::Invalid => {
                        diags.error(
                            pos,
                            "case inherits the eval file's invalid `assertions`",
                            Some("fix the errors reported for the suite's `assertions`".to_owned()),
                        );
                        return None;
                    }
                }
            }
        }
        if all.is_empty() && default_if_none {
            return Some(default_graders_for(Generation::V4));
        }
        Some(Arc::from(all))
    }

    /// The case's tool settings over its suite's, key by key (`docs/tools.md`).
    fn case_tool_use(&self, f: &mut Fields<'_>, diags: &mut Diagnostics) -> Option<Arc<crate::model::ToolSettings>> {
        let own = self.read_tool_use(f, diags);
        if self.defaults.tool_use_invalid {
            // Run without the suite's tools, a case would be graded on another task.
            diags.error(
                f.pos,
                "case inherits the eval file's invalid tool settings",
                Some("fix the errors reported for the suite's `tools`, `tool_choice` or `max_steps`".to_owned()),
            );
        }
        let merged = own.over(&self.defaults.tool_use);
        if let (Some(tools), Some(choice)) = (&merged.tools, &merged.choice)
            && own.tools.is_some() != own.choice.is_some()
        {
            crate::tools::read::check_choice(choice, tools, f.pos, diags);
        }
        if let Some(tools) = &merged.tools {
            crate::tools::read::check_results(&merged.results, tools, f.pos, diags);
        }
        (!merged.is_empty()).then(|| Arc::new(merged))
    }

    /// The case's `metadata` (4.x YAML: merged over the suite's).
    fn case_metadata(&self, f: &mut Fields<'_>, diags: &mut Diagnostics) -> Option<Map<String, Value>> {
        let own = f.take("metadata").and_then(|n| object_of(n, "metadata", diags));
        match (&self.defaults.metadata, own) {
            (Some(suite), Some(own)) => Some(super::metadata::merge(suite, &own)),
            (Some(suite), None) => Some(suite.clone()),
            (None, own) => own,
        }
    }

    fn case_execution<'a>(&self, f: &mut Fields<'a>, diags: &mut Diagnostics) -> CaseExecution<'a> {
        let mut exec = CaseExecution::default();
        let Some(node) = f.take("execution") else {
            return exec;
        };
        let Some(mut ef) = Fields::of(node, &EXECUTION, diags) else {
            return exec;
        };
        exec.present = true;
        exec.evaluators = ef.take("evaluators");
        exec.assertions = ef.take("assertions");
        exec.skip_defaults = ef.boolean("skip_defaults", diags).unwrap_or(false);
        exec.threshold = ef.number("threshold", diags);
        if let Some(t) = ef.take("target") {
            diags.warn(
                t.pos,
                "a per-case `execution.target` is ignored",
                Some("set the target on the eval file or with --target".to_owned()),
            );
        }
        if let Some(t) = ef.take("targets") {
            diags.warn(
                t.pos,
                "a case's `execution.targets` applies to matrix runs, which agentv does not support yet; ignored",
                None,
            );
        }
        for key in [
            "workers",
            "trials",
            "cache",
            "cache_path",
            "budget_usd",
            "fail_on_error",
        ] {
            if let Some(n) = ef.take(key) {
                diags.warn(
                    n.pos,
                    format!(
                        "`execution.{}` is read on the suite only; ignored on a case",
                        ef.written(key)
                    ),
                    None,
                );
            }
        }
        ef.warn_unknown(diags);
        exec
    }

    /// The input messages: `input_messages`, or `input` in any of its forms with
    /// `input_files`, after the suite's `input` (4.x, unless `skip_defaults`).
    fn case_inputs(
        &self,
        f: &mut Fields<'_>,
        vars: Option<&Node>,
        use_defaults: bool,
        diags: &mut Diagnostics,
    ) -> Option<Inputs> {
        let files = f.take("input_files");
        let suite_files = self
            .defaults
            .input_files
            .as_ref()
            .filter(|_| use_defaults && files.is_none())
            .map(|n| substituted(n, vars));
        let (key, mut list) = match (f.take("input_messages"), f.take("input")) {
            (Some(node), _) => {
                if let Some(files) = files {
                    diags.error(
                        files.pos,
                        "`input_files` needs a text `input`",
                        Some("attach files as `{type: file, value: path}` segments of a message".to_owned()),
                    );
                    return None;
                }
                ("input_messages", node.clone())
            }
            (None, Some(input)) => ("input", input_list(input, files.or(suite_files.as_ref()), diags)?),
            (None, None) => {
                let key = if self.generation == Generation::V4 {
                    "input"
                } else {
                    "input_messages"
                };
                diags.error(
                    f.pos,
                    format!("eval case is missing the required key `{key}`"),
                    Some("add `input: \"question text\"` or `input_messages: [{role: user, content: ...}]`".to_owned()),
                );
                return None;
            }
        };
        if use_defaults && let Some(suite_input) = &self.defaults.input {
            let suite_list = input_list(&substituted(suite_input, vars), None, diags)?;
            if let (NodeValue::Seq(before), NodeValue::Seq(own)) = (suite_list.value, &mut list.value) {
                own.splice(0..0, before);
            }
        }
        self.messages(&list, key, diags)
    }

    /// Reads a list of input messages, splitting guideline files out.
    fn messages(&self, node: &Node, key: &str, diags: &mut Diagnostics) -> Option<Inputs> {
        let Some(items) = node.as_seq() else {
            diags.error(
                node.pos,
                format!("`{key}` must be a list of messages, found {}", node.type_name()),
                Some("write `input_messages: [{role: user, content: ...}]`, or `input: \"question text\"`".to_owned()),
            );
            return None;
        };
        let mut inputs = Inputs {
            raw: items.iter().map(Node::to_json).collect(),
            ..Inputs::default()
        };
        let before = diags.error_count();
        for item in items {
            if let Some(mut msg) = self.message(item, diags) {
                if let Content::Segments(segs) = &mut msg.content {
                    segs.retain(|seg| match seg {
                        Segment::File(file) if self.guidelines.is_guideline(&self.ws.repo_relative(&file.path)) => {
                            if !inputs.guidelines.iter().any(|g| g.path == file.path) {
                                inputs.guidelines.push(file.clone());
                            }
                            false
                        }
                        Segment::File(file) => {
                            if !inputs.files.contains(&file.path) {
                                inputs.files.push(file.path.clone());
                            }
                            true
                        }
                        _ => true,
                    });
                }
                inputs.messages.push(msg);
            }
        }
        if inputs.messages.is_empty() && diags.error_count() == before {
            diags.error(
                node.pos,
                format!("`{key}` is empty"),
                Some("add at least one `{role: user, content: ...}`".to_owned()),
            );
        }
        (diags.error_count() == before).then_some(inputs)
    }

    fn expected_list(&self, node: &Node, diags: &mut Diagnostics) -> Option<Vec<Message>> {
        let Some(items) = node.as_seq() else {
            diags.error(
                node.pos,
                format!("`expected_messages` must be a list, found {}", node.type_name()),
                None,
            );
            return None;
        };
        let before = diags.error_count();
        let messages: Vec<Message> = items.iter().filter_map(|m| self.message(m, diags)).collect();
        (diags.error_count() == before).then_some(messages)
    }

    /// `expected_output` (`agentv-4.md` §1.5): text or an object without `role` is the
    /// assistant's answer; a message, or a list starting with one, are messages; any other list
    /// is the answer as JSON.
    fn expected_output(&self, node: &Node, diags: &mut Diagnostics) -> Option<Vec<Message>> {
        let answer = |content| {
            Some(vec![Message {
                role: Role::Assistant,
                content,
                name: None,
                tool_calls: None,
            }])
        };
        match &node.value {
            NodeValue::Null => Some(Vec::new()),
            NodeValue::Str(s) => answer(Content::Text(s.clone())),
            NodeValue::Map(_) if node.get("role").is_some() => Some(vec![self.message(node, diags)?]),
            NodeValue::Seq(items) if items.first().is_some_and(|i| i.get("role").is_some()) => {
                self.expected_list(node, diags)
            }
            NodeValue::Map(_) | NodeValue::Seq(_) => answer(Content::Json(node.to_json())),
            _ => answer(Content::Text(node.scalar_text().unwrap_or_default())),
        }
    }

    /// `mode: conversation` with its `turns` (`agentv-4.md` §1.11): `None` when the case is
    /// not one; `Some(None)` after reporting an error.
    #[allow(clippy::type_complexity)]
    fn conversation(
        &self,
        f: &mut Fields<'_>,
        turns: Option<&Node>,
        vars: Option<&Node>,
        diags: &mut Diagnostics,
    ) -> Option<Option<(Conversation, Vec<Arc<[ConfiguredGrader]>>)>> {
        let mode_node = f.take("mode");
        let mode = f.string("mode", diags);
        let aggregation = match f.string("aggregation", diags).as_deref() {
            Some("min") => TurnAggregation::Min,
            Some("max") => TurnAggregation::Max,
            Some("mean") | None => TurnAggregation::Mean,
            Some(other) => {
                diags.error(
                    f.pos,
                    format!("unknown `aggregation: {other}`"),
                    Some("use mean, min or max".to_owned()),
                );
                TurnAggregation::Mean
            }
        };
        let stop_on_failure = f.string("on_turn_failure", diags).as_deref() == Some("stop");
        let window_size = f.integer("window_size", diags).and_then(|n| usize::try_from(n).ok());
        if mode.as_deref() != Some("conversation") {
            if let Some(turns) = turns {
                diags.warn(
                    turns.pos,
                    "`turns` is read only with `mode: conversation`; ignored",
                    Some("add `mode: conversation`".to_owned()),
                );
            }
            if let Some(mode) = mode {
                diags.error(
                    mode_node.map_or(f.pos, |n| n.pos),
                    format!("unknown `mode: {mode}`"),
                    Some("the only mode is `conversation`".to_owned()),
                );
                return Some(None);
            }
            return None;
        }
        let Some(items) = turns.and_then(Node::as_seq).filter(|t| !t.is_empty()) else {
            diags.error(
                turns.map_or(f.pos, |n| n.pos),
                "a conversation case needs a non-empty `turns` list",
                Some("add `turns: [{input: ...}]`".to_owned()),
            );
            return Some(None);
        };
        let before = diags.error_count();
        let mut parsed = Vec::new();
        let mut graders = Vec::new();
        for item in items {
            let item = match vars {
                Some(vars) => with_vars(item, vars),
                None => item.clone(),
            };
            if let Some((turn, turn_graders)) = self.turn(&item, diags) {
                parsed.push(turn);
                graders.push(turn_graders);
            }
        }
        if diags.error_count() > before {
            return Some(None);
        }
        Some(Some((
            Conversation {
                turns: parsed,
                aggregation,
                stop_on_failure,
                window_size,
            },
            graders,
        )))
    }

    fn turn(&self, node: &Node, diags: &mut Diagnostics) -> Option<(Turn, Arc<[ConfiguredGrader]>)> {
        let mut f = Fields::of(node, &TURN, diags)?;
        let input = match f.take("input") {
            Some(input) => self.messages(&input_list(input, None, diags)?, "input", diags)?,
            None => {
                diags.error(f.pos, "a turn is missing `input`", Some("add `input: ...`".to_owned()));
                return None;
            }
        };
        let expected = match f.take("expected_output") {
            Some(node) => self.expected_output(node, diags)?,
            None => Vec::new(),
        };
        let assertions = f.take("assertions");
        f.warn_unknown(diags);
        let graders: Arc<[ConfiguredGrader]> = match assertions {
            Some(list) => Arc::from(self.graders(&turn_rubrics(list), diags)?),
            // No graders: a turn with a reference answer is graded by the default grader, one
            // without scores 1.
            None if !expected.is_empty() => default_graders_for(Generation::V4),
            None => Arc::from(Vec::new()),
        };
        Some((
            Turn {
                input: input.messages,
                expected,
                line: node.pos.line,
            },
            graders,
        ))
    }

    // Messages and segments.
    fn message(&self, node: &Node, diags: &mut Diagnostics) -> Option<Message> {
        let mut f = Fields::of(node, &MESSAGE, diags)?;
        let role_node = f.take("role");
        let role = match role_node.and_then(Node::as_str).map(|r| (r, Role::parse(r))) {
            Some((_, Some(role))) => role,
            Some((text, None)) => {
                diags.error(
                    role_node.map_or(node.pos, |n| n.pos),
                    format!("unknown message role `{text}`"),
                    Some("use system, user, assistant or tool".to_owned()),
                );
                return None;
            }
            None => {
                diags.error(
                    node.pos,
                    "message is missing `role`",
                    Some("add `role: user` (or system, assistant, tool)".to_owned()),
                );
                return None;
            }
        };
        let name = f.string("name", diags);
        let tool_calls = f.take("tool_calls").map(Node::to_json);
        let content_node = f.take("content");
        f.warn_unknown(diags);
        let has_calls = tool_calls
            .as_ref()
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty());
        let content = match content_node.map(|n| (n, &n.value)) {
            None | Some((_, NodeValue::Null)) if role == Role::Assistant && has_calls => Content::Empty,
            None | Some((_, NodeValue::Null)) => {
                diags.error(
                    node.pos,
                    "message has no `content`",
                    Some("add `content: ...` (text, a mapping, or a list of segments)".to_owned()),
                );
                return None;
            }
            Some((_, NodeValue::Str(s))) => Content::Text(s.clone()),
            Some((n, NodeValue::Map(_))) => Content::Json(n.to_json()),
            Some((_, NodeValue::Seq(items))) => {
                Content::Segments(items.iter().filter_map(|s| self.segment(s, diags)).collect())
            }
            Some((n, _)) => Content::Text(n.scalar_text().unwrap_or_default()),
        };
        Some(Message {
            role,
            content,
            name,
            tool_calls,
        })
    }

    fn segment(&self, node: &Node, diags: &mut Diagnostics) -> Option<Segment> {
        if let Some(text) = node.as_str() {
            return Some(Segment::Text(text.to_owned()));
        }
        if node.as_map().is_none() {
            return Some(Segment::Other(node.to_json()));
        }
        // An open table: a segment of another type keeps its own keys for judges.
        let mut f = Fields::of(node, &SEGMENT, diags)?;
        let kind = f.take("type").and_then(Node::as_str);
        let value = f.take("value");
        match (kind, value) {
            (Some("text"), Some(v)) => Some(Segment::Text(
                v.scalar_text().unwrap_or_else(|| v.to_json().to_string()),
            )),
            (Some("file"), Some(v)) => {
                let Some(rel) = v.as_str() else {
                    diags.error(
                        v.pos,
                        format!("file segment `value` must be a path, found {}", describe(v)),
                        None,
                    );
                    return None;
                };
                self.file_segment(rel, v.pos, diags)
            }
            (Some("text" | "file"), None) => {
                diags.error(
                    node.pos,
                    "segment is missing `value`",
                    Some("write `{type: file, value: path/to/file}`".to_owned()),
                );
                None
            }
            _ => Some(Segment::Other(node.to_json())),
        }
    }

    fn file_segment(&self, rel: &str, pos: Pos, diags: &mut Diagnostics) -> Option<Segment> {
        match self.ws.resolve_file(rel, &self.dir) {
            Ok(path) => match std::fs::read(&path) {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
                    Some(Segment::File(FileRef {
                        value: rel.to_owned(),
                        path,
                        text: Arc::from(text),
                    }))
                }
                Err(e) => {
                    diags.error(
                        pos,
                        format!("cannot read file `{rel}` ({}): {e}", path.display()),
                        Some("the case is not run without the files it attaches".to_owned()),
                    );
                    None
                }
            },
            Err(tried) => {
                let list = tried
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                diags.error(
                    pos,
                    format!("file `{rel}` not found; the case is not run without it"),
                    Some(format!("tried: {list}")),
                );
                None
            }
        }
    }
}

/// A copy of `node` (a case or a turn) with `vars` substituted in the keys they apply to.
fn with_vars(node: &Node, vars: &Node) -> Node {
    let mut out = node.clone();
    if let NodeValue::Map(entries) = &mut out.value {
        for (key, value) in entries {
            if key.as_str().is_some_and(|k| VARS_KEYS.contains(&k)) {
                substitute_vars(value, vars);
            }
        }
    }
    out
}

/// A copy of a suite default with the case's `vars` substituted.
fn substituted(node: &Node, vars: Option<&Node>) -> Node {
    let mut out = node.clone();
    if let Some(vars) = vars {
        substitute_vars(&mut out, vars);
    }
    out
}

/// `input` in any of its forms as a list of messages (`agentv-4.md` §1.5): text is one user
/// message (after the `input_files`, if any); a mapping with `role` is one message; a mapping
/// without is a user message's structured content; a list is the messages themselves.
fn input_list(input: &Node, files: Option<&Node>, diags: &mut Diagnostics) -> Option<Node> {
    let pos = input.pos;
    let key = |k: &str| Node::new(NodeValue::Str(k.to_owned()), pos);
    let message = |content: Node| {
        Node::new(
            NodeValue::Map(vec![(key("role"), key("user")), (key("content"), content)]),
            pos,
        )
    };
    let list = |items: Vec<Node>| Node::new(NodeValue::Seq(items), pos);
    if let Some(files) = files
        && input.as_str().is_none()
    {
        diags.error(
            files.pos,
            "`input_files` needs a text `input`",
            Some("attach files as `{type: file, value: path}` segments of a message".to_owned()),
        );
        return None;
    }
    match &input.value {
        NodeValue::Str(text) => match files {
            None => Some(list(vec![message(input.clone())])),
            Some(files) => {
                let Some(paths) = files.as_seq() else {
                    diags.error(
                        files.pos,
                        format!("`input_files` must be a list of paths, found {}", files.type_name()),
                        None,
                    );
                    return None;
                };
                let segment = |kind: &str, value: Node| {
                    let at = value.pos;
                    Node::new(
                        NodeValue::Map(vec![(key("type"), key(kind)), (key("value"), value)]),
                        at,
                    )
                };
                let mut content: Vec<Node> = paths.iter().map(|p| segment("file", p.clone())).collect();
                content.push(segment("text", Node::new(NodeValue::Str(text.clone()), pos)));
                Some(list(vec![message(list(content))]))
            }
        },
        NodeValue::Map(_) if input.get("role").is_some() => Some(list(vec![input.clone()])),
        NodeValue::Map(_) => Some(list(vec![message(input.clone())])),
        NodeValue::Seq(_) => Some(input.clone()),
        NodeValue::Null => {
            diags.error(
                pos,
                "`input` is empty",
                Some("write the question as `input: \"...\"`".to_owned()),
            );
            None
        }
        _ => Some(list(vec![message(Node::new(
            NodeValue::Str(input.scalar_text().unwrap_or_default()),
            pos,
        ))])),
    }
}

/// The deprecated case field `rubrics: [...]` as a grader list: one `rubrics` grader named
/// `rubrics` (`agentv-4.md` §2.6, form 4).
fn inline_rubrics(node: &Node) -> Node {
    let pos = node.pos;
    let key = |k: &str| Node::new(NodeValue::Str(k.to_owned()), pos);
    let criteria = node
        .as_seq()
        .map(<[Node]>::to_vec)
        .unwrap_or_else(|| vec![node.clone()]);
    Node::new(
        NodeValue::Seq(vec![Node::new(
            NodeValue::Map(vec![
                (key("name"), key("rubrics")),
                (key("type"), key("rubrics")),
                (key("criteria"), Node::new(NodeValue::Seq(criteria), pos)),
            ]),
            pos,
        )]),
        pos,
    )
}

/// A turn's grader list: its bare strings become one `llm-grader` whose rubrics are
/// `criterion-1..N` (weight 1), at the first string's place (`agentv-4.md` §1.11).
fn turn_rubrics(list: &Node) -> Node {
    let Some(items) = list.as_seq() else {
        return list.clone();
    };
    let strings: Vec<&Node> = items
        .iter()
        .filter(|i| i.as_str().is_some_and(|s| !s.trim().is_empty()))
        .collect();
    let Some(first) = strings.first() else {
        return list.clone();
    };
    let pos = first.pos;
    let key = |k: &str| Node::new(NodeValue::Str(k.to_owned()), pos);
    let rubrics: Vec<Node> = strings
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Node::new(
                NodeValue::Map(vec![
                    (key("id"), key(&format!("criterion-{}", i + 1))),
                    (key("outcome"), key(s.as_str().unwrap_or_default().trim())),
                ]),
                s.pos,
            )
        })
        .collect();
    let grader = Node::new(
        NodeValue::Map(vec![
            (key("type"), key("llm-grader")),
            (key("rubrics"), Node::new(NodeValue::Seq(rubrics), pos)),
        ]),
        pos,
    );
    let mut out = Vec::new();
    let mut placed = false;
    for item in items {
        match item.as_str() {
            Some(_) if !placed => {
                out.push(grader.clone());
                placed = true;
            }
            Some(_) => {}
            None => out.push(item.clone()),
        }
    }
    Node::new(NodeValue::Seq(out), list.pos)
}

/// The reference answer: the last expected message's text, else its content (or tool calls)
/// as pretty JSON. File segments are shown as AgentV writes them:
/// `{type, value, path, text, resolvedPath}`.
fn reference_text(msg: &Message) -> String {
    match &msg.content {
        Content::Text(t) => t.clone(),
        Content::Empty => msg
            .tool_calls
            .as_ref()
            .map(crate::model::pretty_json)
            .unwrap_or_default(),
        Content::Json(v) => crate::model::pretty_json(v),
        Content::Segments(segments) => {
            let shown: Vec<Value> = segments
                .iter()
                .map(|s| match s {
                    Segment::Text(t) => json!({"type": "text", "value": t}),
                    Segment::File(f) => json!({
                        "type": "file",
                        "value": f.value,
                        "path": f.value.trim_start_matches(['/', '\\']),
                        "text": &*f.text,
                        "resolvedPath": f.path.display().to_string(),
                    }),
                    Segment::Other(v) => v.clone(),
                })
                .collect();
            crate::model::pretty_json(&Value::Array(shown))
        }
    }
}

/// Case ids seen so far in one file (ids are unique within a suite;
/// `docs/architecture.md#case-ids`).
#[derive(Default)]
pub(super) struct CaseIds {
    /// Id → line of the case that used it first.
    first: HashMap<String, u64>,
}

impl CaseIds {
    /// The line of the first case that used `id`.
    pub(super) fn first_line(&self, id: &str) -> Option<u64> {
        self.first.get(id).copied()
    }

    /// Reports `id` at `pos` when an earlier case already uses it.
    pub(super) fn check(&mut self, id: &str, pos: Pos, diags: &mut Diagnostics) {
        match self.first.get(id) {
            Some(line) => diags.error(
                pos,
                format!("duplicate case id `{id}`: the case at line {line} already uses it"),
                Some("give each case a unique id; this case is skipped".to_owned()),
            ),
            None => {
                self.first.insert(id.to_owned(), pos.line);
            }
        }
    }
}

/// What a case has that makes it gradable (`Loader::check_gradable`).
struct Gradable<'a> {
    id: Option<&'a str>,
    /// `criteria` or `expected_outcome`, or either already reported as invalid (so it is not
    /// reported missing too).
    outcome: bool,
    /// An expected message with content or tool calls.
    expected: bool,
    /// A conversation with at least one turn.
    turns: bool,
    /// Graders under `evaluators` (the case's or its `execution`'s).
    evaluators_key: bool,
    assertions_key: bool,
}

/// The case's `criteria` (or 2.x `expected_outcome`), blank counting as absent.
struct Outcome<'a> {
    text: Option<String>,
    /// Where it is written.
    node: Option<&'a Node>,
    /// Whether it was reported as invalid.
    reported: bool,
}

fn case_outcome<'a>(f: &mut Fields<'a>, diags: &mut Diagnostics) -> Outcome<'a> {
    let node = f.take("criteria").or_else(|| f.take("expected_outcome"));
    let before = diags.error_count();
    let criteria = f.string("criteria", diags).filter(|t| !t.trim().is_empty());
    let outcome = f.string("expected_outcome", diags).filter(|t| !t.trim().is_empty());
    Outcome {
        text: criteria.or(outcome),
        node,
        reported: diags.error_count() > before,
    }
}

/// A legacy case-level `evaluator:` is read but not honoured: the default judge grades.
fn warn_legacy_evaluator(f: &mut Fields<'_>, diags: &mut Diagnostics) {
    if let Some(kind) = f.string("evaluator", diags)
        && kind != "llm_judge"
        && kind != "llm-grader"
    {
        diags.warn(
            f.pos,
            format!("legacy `evaluator: {kind}` is not supported; llm_judge is used"),
            None,
        );
    }
}

/// The text of the input messages, for judges that ask about "the question".
fn question_text(messages: &[Message]) -> String {
    messages
        .iter()
        .flat_map(Message::text_parts)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Errors when the case lacks what one of its graders needs (`has` says what the case has):
/// the first grader in need is named, with its reason and a fix.
fn check_needs(
    graders: &[ConfiguredGrader],
    has: impl Fn(CaseField) -> bool,
    pos: Pos,
    diags: &mut Diagnostics,
) -> Option<()> {
    let Some((grader, need)) = graders
        .iter()
        .find_map(|g| g.grader.needs().into_iter().find(|n| !has(n.field)).map(|n| (g, n)))
    else {
        return Some(());
    };
    let who = if grader.name == grader.type_name() {
        format!("the {} evaluator", grader.type_name())
    } else {
        format!("{} `{}`", grader.type_name(), grader.name)
    };
    diags.error(
        pos,
        format!(
            "eval case is missing `{}`, which {who} needs ({})",
            need.field.key(),
            need.why
        ),
        Some(need.fix.to_owned()),
    );
    None
}
