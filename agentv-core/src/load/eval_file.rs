//! Loads eval files: YAML suites and JSONL datasets (with an optional sidecar YAML).

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::guidelines::GuidelineMatcher;
use super::keys::{CASE, EXECUTION, MESSAGE, SEGMENT, SIDECAR, SUITE};
use crate::config::node::parse_yaml;
use crate::config::{Diagnostic, Diagnostics, Fields, Node, NodeValue, Pos, Severity, describe};
use crate::evaluators::{CaseField, ConfiguredGrader, ParseContext, default_graders, parse_graders};
use crate::model::{Content, EvalCase, FileRef, Message, Role, Segment, SourceRef};
use crate::paths::Workspace;

/// A case and the graders that grade it.
#[derive(Debug, Clone)]
pub struct LoadedCase {
    pub case: EvalCase,
    pub graders: Arc<[ConfiguredGrader]>,
}

/// Which case ids to keep (`--eval-id`).
pub type CaseFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The cases of one eval file and every problem found in it.
///
/// YAML suites hold their cases. JSONL datasets are validated line by line when loaded but their
/// cases are not kept: [`LoadedSuite::into_cases`] reads the file again as the run consumes it,
/// so memory stays flat however many cases a dataset has.
pub struct LoadedSuite {
    pub file: PathBuf,
    pub dataset: Arc<str>,
    /// Target named by the file (`execution.target`, or legacy `target`).
    pub target: Option<Arc<str>>,
    /// The cases of a YAML suite (empty for a JSONL dataset; see `case_count`).
    pub cases: Vec<LoadedCase>,
    /// Valid cases that pass the filter.
    pub case_count: usize,
    /// Cases left out because of errors.
    pub skipped: usize,
    pub diagnostics: Vec<Diagnostic>,
    /// Set for JSONL datasets: what is needed to read the cases again.
    stream: Option<Arc<Loader>>,
    filter: Option<CaseFilter>,
}

impl std::fmt::Debug for LoadedSuite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedSuite")
            .field("file", &self.file)
            .field("case_count", &self.case_count)
            .field("skipped", &self.skipped)
            .finish()
    }
}

impl LoadedSuite {
    /// True when the file has an error (a bad case or a broken file).
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }

    /// The suite's valid, filtered cases, in file order. JSONL datasets are read again, one line
    /// at a time (lines already reported as invalid are skipped silently).
    pub fn into_cases(self) -> Box<dyn Iterator<Item = LoadedCase> + Send> {
        match self.stream {
            None => Box::new(self.cases.into_iter()),
            Some(loader) => stream_cases(loader, self.filter),
        }
    }

    /// The same cases as [`LoadedSuite::into_cases`], leaving the suite as it is: a run that
    /// must know every case before it starts (`--shard`, `--resume`) reads them once more.
    pub fn cases(&self) -> Box<dyn Iterator<Item = LoadedCase> + Send + '_> {
        match &self.stream {
            None => Box::new(self.cases.iter().cloned()),
            Some(loader) => stream_cases(loader.clone(), self.filter.clone()),
        }
    }
}

/// The valid, filtered cases of a JSONL dataset, read again one line at a time.
fn stream_cases(loader: Arc<Loader>, filter: Option<CaseFilter>) -> Box<dyn Iterator<Item = LoadedCase> + Send> {
    let reader = match std::fs::File::open(&loader.file) {
        Ok(f) => std::io::BufReader::new(f),
        Err(e) => {
            tracing::warn!("cannot read {} again: {e}", loader.file.display());
            return Box::new(std::iter::empty());
        }
    };
    let mut diags = Diagnostics::new(&loader.file);
    let mut ids = CaseIds::default();
    Box::new(jsonl_lines(reader).filter_map(move |(line_no, line)| {
        let case = match line {
            JsonlLine::Text(text) => loader.jsonl_case(&text, line_no, &mut ids, &mut diags),
            JsonlLine::NotUtf8(_) | JsonlLine::Unreadable(_) => None,
        };
        // Already reported by the first pass.
        diags = Diagnostics::new(&loader.file);
        case.filter(|c| filter.as_ref().is_none_or(|f| f(&c.case.id)))
    }))
}

/// Loads one eval file. Never fails: problems become diagnostics, and good cases are kept.
pub fn load_eval_file(path: &Path, ws: &Workspace) -> LoadedSuite {
    load_eval_file_filtered(path, ws, None)
}

/// [`load_eval_file`] keeping only the cases whose id passes `filter`.
pub fn load_eval_file_filtered(path: &Path, ws: &Workspace, filter: Option<CaseFilter>) -> LoadedSuite {
    let file: Arc<Path> = Arc::from(crate::paths::normalize(&ws.cwd.join(path)));
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_else(|| ws.cwd.clone());
    let dataset: Arc<str> = Arc::from(
        file.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "dataset".to_owned()),
    );
    let mut diags = Diagnostics::new(path);
    let mut extra = Vec::new();
    let guidelines = GuidelineMatcher::for_dir(ws, &dir, &mut extra);
    let mut loader = Loader {
        ws: ws.clone(),
        dir,
        file,
        dataset,
        target: None,
        guidelines,
        suite_evaluators: SuiteEvaluators::Default,
    };
    let is_jsonl = path.extension().is_some_and(|e| e == "jsonl");
    let mut tally = Tally {
        cases: Vec::new(),
        count: 0,
        skipped: 0,
        keep: !is_jsonl,
        filter: filter.clone(),
        broken: false,
    };
    if is_jsonl {
        loader.load_jsonl(&mut diags, &mut extra, &mut tally);
    } else if let Some(text) = crate::config::source::read_text(&loader.file, "eval file", &mut diags) {
        loader.load_yaml(&text, &mut diags, &mut tally);
    }
    let mut diagnostics = extra;
    diagnostics.extend(diags.into_vec());
    LoadedSuite {
        file: path.to_path_buf(),
        dataset: loader.dataset.clone(),
        target: loader.target.clone(),
        cases: tally.cases,
        case_count: tally.count,
        skipped: tally.skipped,
        diagnostics,
        stream: (is_jsonl && !tally.broken).then(|| Arc::new(loader)),
        filter,
    }
}

/// What loading found: kept cases (YAML), counts.
struct Tally {
    cases: Vec<LoadedCase>,
    count: usize,
    skipped: usize,
    /// Keep cases in memory (YAML) or only count them (JSONL, streamed later).
    keep: bool,
    filter: Option<CaseFilter>,
    /// Set when the whole file cannot run (a broken sidecar): its cases are validated and
    /// reported, but all of them count as skipped.
    broken: bool,
}

impl Tally {
    fn add(&mut self, case: Option<LoadedCase>) {
        match case {
            None => self.skipped += 1,
            Some(_) if self.broken => self.skipped += 1,
            Some(case) => {
                if self.filter.as_ref().is_none_or(|f| f(&case.case.id)) {
                    self.count += 1;
                    if self.keep {
                        self.cases.push(case);
                    }
                }
            }
        }
    }
}

/// The suite-level grader list cases inherit (`docs/architecture.md#default-grader`).
enum SuiteEvaluators {
    /// None configured: cases without their own list get the default grader.
    Default,
    Valid(Arc<[ConfiguredGrader]>),
    /// Configured but invalid (already reported): inheriting cases are skipped.
    Invalid,
}

/// A case's input messages with guideline files split out.
#[derive(Default)]
struct Inputs {
    messages: Vec<Message>,
    /// As written, for judges.
    raw: Vec<Value>,
    guidelines: Vec<FileRef>,
    files: Vec<PathBuf>,
}

impl Inputs {
    /// The `input: "text"` short form: one user message.
    fn question(text: &str, raw: Value) -> Self {
        Self {
            messages: vec![Message {
                role: Role::User,
                content: Content::Text(text.to_owned()),
                name: None,
                tool_calls: None,
            }],
            raw: vec![serde_json::json!({"role": "user", "content": raw})],
            ..Self::default()
        }
    }
}

/// The context cases of one file are read in (kept to read a JSONL dataset again).
struct Loader {
    ws: Workspace,
    dir: PathBuf,
    file: Arc<Path>,
    dataset: Arc<str>,
    target: Option<Arc<str>>,
    guidelines: GuidelineMatcher,
    suite_evaluators: SuiteEvaluators,
}

impl Loader {
    fn load_yaml(&mut self, text: &str, diags: &mut Diagnostics, tally: &mut Tally) {
        let root = match parse_yaml(text) {
            Ok(root) => root,
            Err(e) => {
                diags.yaml_syntax(&e);
                return;
            }
        };
        if root.is_null() {
            diags.error(
                Pos::new(1, 1),
                "the eval file holds no YAML (it is empty or only comments)",
                Some("add `evalcases:` with one `- id: ...` entry per case".to_owned()),
            );
            return;
        }
        let Some(mut f) = Fields::of(&root, &SUITE, diags) else {
            return;
        };
        self.read_suite_keys(&mut f, diags);
        let cases = f.take("evalcases");
        f.warn_unknown(diags);
        match cases {
            None => diags.error(
                root.pos,
                "eval file is missing the `evalcases` list",
                Some("add `evalcases:` with one `- id: ...` entry per case".to_owned()),
            ),
            Some(node) => match node.as_seq() {
                Some(items) => {
                    let mut ids = CaseIds::default();
                    for item in items {
                        tally.add(self.checked_case(item, &mut ids, diags));
                    }
                }
                None => diags.error(
                    node.pos,
                    format!("`evalcases` must be a list, found {}", node.type_name()),
                    None,
                ),
            },
        }
    }

    /// Validates a JSONL dataset line by line (its cases are read again when the run consumes
    /// them). A line that is not UTF-8 or not valid JSON is an error for that line only.
    fn load_jsonl(&mut self, diags: &mut Diagnostics, extra: &mut Vec<Diagnostic>, tally: &mut Tally) {
        if let Some(sidecar) = self.sidecar_path() {
            let mut side = Diagnostics::new(&sidecar);
            self.load_sidecar(&sidecar, &mut side);
            if side.error_count() > 0 {
                tally.broken = true;
                diags.error(
                    Pos::default(),
                    format!(
                        "the dataset is not run: its sidecar {} has errors",
                        sidecar
                            .file_name()
                            .map_or_else(|| sidecar.display().to_string(), |n| n.to_string_lossy().into_owned())
                    ),
                    Some(
                        "fix the errors reported for the sidecar; it sets the dataset's target and evaluators"
                            .to_owned(),
                    ),
                );
            }
            extra.extend(side.into_vec());
        }
        let reader = match std::fs::File::open(&self.file) {
            Ok(f) => std::io::BufReader::new(f),
            Err(e) => {
                diags.error(Pos::default(), format!("cannot read the eval file: {e}"), None);
                return;
            }
        };
        let mut ids = CaseIds::default();
        for (line_no, line) in jsonl_lines(reader) {
            match line {
                JsonlLine::Text(text) => {
                    if !text.trim().is_empty() {
                        tally.add(self.jsonl_case(&text, line_no, &mut ids, diags));
                    }
                }
                JsonlLine::NotUtf8(column) => {
                    diags.error(
                        Pos::new(line_no, column),
                        "this line is not UTF-8 text: invalid byte here; the line is skipped",
                        Some("save the file as UTF-8".to_owned()),
                    );
                    tally.add(None);
                }
                JsonlLine::Unreadable(e) => {
                    diags.error(
                        Pos::new(line_no, 1),
                        format!("cannot read the eval file from here on: {e}"),
                        None,
                    );
                    return;
                }
            }
        }
    }

    /// `<name>.yaml` (or `.yml`) beside the dataset, if there is one.
    fn sidecar_path(&self) -> Option<PathBuf> {
        ["yaml", "yml"]
            .iter()
            .map(|ext| self.file.with_extension(ext))
            .find(|p| p.is_file())
    }

    /// Reads the suite keys of a dataset's sidecar; problems go to `side`.
    fn load_sidecar(&mut self, sidecar: &Path, side: &mut Diagnostics) {
        let Some(text) = crate::config::source::read_text(sidecar, "dataset sidecar", side) else {
            return;
        };
        match parse_yaml(&text) {
            Err(e) => side.yaml_syntax(&e),
            // An empty sidecar sets nothing.
            Ok(root) if root.is_null() => {}
            Ok(root) => {
                if let Some(mut f) = Fields::of(&root, &SIDECAR, side) {
                    self.read_suite_keys(&mut f, side);
                    if let Some(cases) = f.take("evalcases") {
                        side.error(
                            cases.pos,
                            "a dataset sidecar cannot hold `evalcases`",
                            Some("put the cases in the .jsonl file, one per line".to_owned()),
                        );
                    }
                    f.warn_unknown(side);
                }
            }
        }
    }

    /// One JSONL line as a case; `None` (reported) when the line is invalid, or blank.
    fn jsonl_case(&self, line: &str, line_no: u64, ids: &mut CaseIds, diags: &mut Diagnostics) -> Option<LoadedCase> {
        if line.trim().is_empty() {
            return None;
        }
        diags.set_source_line(line_no, line);
        match crate::config::node::parse_json_strict(line) {
            Ok(value) if !value.is_object() => {
                // The mapping check would suggest YAML's `key: value` lines.
                let found = Node::from_json(&value, Pos::new(line_no, 1)).type_name();
                diags.error(
                    Pos::new(line_no, 1),
                    format!("a JSONL line must be a JSON object, found {found}; the line is skipped"),
                    Some("write each case as one object: {\"id\": \"...\", \"input\": \"...\", ...}".to_owned()),
                );
                None
            }
            Ok(value) => self.checked_case(&Node::from_json(&value, Pos::new(line_no, 1)), ids, diags),
            Err(e) => {
                let text = e.to_string();
                let message = text.rfind(" at line ").map_or(text.as_str(), |i| &text[..i]);
                let help = if message.starts_with(crate::config::node::REPEATED_KEY) {
                    "keep one of them: keys of an object must be unique"
                } else if e.is_eof() {
                    "each line must be one complete JSON object"
                } else if message.contains("out of range") {
                    "JSON numbers must fit a 64-bit float; write huge values as strings"
                } else {
                    "each line must be one JSON object"
                };
                diags.error(
                    Pos::new(line_no, e.column().max(1) as u64),
                    format!("invalid JSON: {message}; the line is skipped"),
                    Some(help.to_owned()),
                );
                None
            }
        }
    }

    fn read_suite_keys(&mut self, f: &mut Fields<'_>, diags: &mut Diagnostics) {
        let _ = f.take("$schema");
        let _ = f.take("description");
        if let Some(name) = f.string("dataset", diags) {
            self.dataset = Arc::from(name);
        }
        let mut evaluators = None;
        if let Some(exec) = f.take("execution")
            && let Some(mut ef) = Fields::of(exec, &EXECUTION, diags)
        {
            self.target = ef.string("target", diags).map(Arc::from);
            evaluators = ef.take("evaluators");
            ef.warn_unknown(diags);
        }
        if self.target.is_none() {
            self.target = f.string("target", diags).map(Arc::from);
        }
        if let Some(node) = evaluators {
            self.suite_evaluators = match self.graders(node, diags) {
                Some(graders) => SuiteEvaluators::Valid(Arc::from(graders)),
                None => SuiteEvaluators::Invalid,
            };
        }
        if let Some(kind) = f.string("evaluator", diags)
            && kind != "llm_judge"
        {
            let pos = f.take("evaluator").map_or(f.pos, |n| n.pos);
            diags.warn(
                pos,
                format!("legacy `evaluator: {kind}` is not supported; llm_judge is used"),
                Some("list evaluators under `execution.evaluators`".to_owned()),
            );
        }
    }

    /// A grader list, read with the grader table.
    fn graders(&self, node: &Node, diags: &mut Diagnostics) -> Option<Vec<ConfiguredGrader>> {
        let mut cx = ParseContext::new(&self.ws, &self.dir, diags);
        parse_graders(node, &mut cx)
    }

    /// A case, or `None` when it has any error.
    fn checked_case(&self, node: &Node, ids: &mut CaseIds, diags: &mut Diagnostics) -> Option<LoadedCase> {
        let before = diags.error_count();
        let case = self.parse_case(node, ids, diags);
        case.filter(|_| diags.error_count() == before)
    }

    fn parse_case(&self, node: &Node, ids: &mut CaseIds, diags: &mut Diagnostics) -> Option<LoadedCase> {
        let mut f = Fields::of(node, &CASE, diags)?;
        let id = f.required_string("id", "eval case", diags);
        if let (Some(id), Some(id_node)) = (&id, f.take("id")) {
            ids.check(id, id_node.pos, diags);
        }
        let outcome_node = f.take("expected_outcome");
        let before_outcome = diags.error_count();
        let expected_outcome = f
            .string("expected_outcome", diags)
            .filter(|text| !text.trim().is_empty());
        let outcome_reported = diags.error_count() > before_outcome;
        let conversation_id = f.string("conversation_id", diags);
        let _ = f.take("note");

        let inputs = self.input_messages(&mut f, diags);
        let expected = self.expected_messages(&mut f, diags);

        let mut own_evaluators = f.take("evaluators");
        if let Some(exec) = f.take("execution")
            && let Some(mut ef) = Fields::of(exec, &EXECUTION, diags)
        {
            own_evaluators = ef.take("evaluators").or(own_evaluators);
            if let Some(t) = ef.take("target") {
                diags.warn(
                    t.pos,
                    "a per-case `execution.target` is ignored",
                    Some("set the target on the eval file or with --target".to_owned()),
                );
            }
            ef.warn_unknown(diags);
        }
        if let Some(kind) = f.string("evaluator", diags)
            && kind != "llm_judge"
        {
            diags.warn(
                f.pos,
                format!("legacy `evaluator: {kind}` is not supported; llm_judge is used"),
                None,
            );
        }
        f.warn_unknown(diags);

        let graders: Arc<[ConfiguredGrader]> = match own_evaluators {
            Some(list) => Arc::from(self.graders(list, diags)?),
            None => match &self.suite_evaluators {
                SuiteEvaluators::Valid(graders) => graders.clone(),
                SuiteEvaluators::Default => default_graders(),
                SuiteEvaluators::Invalid => {
                    diags.error(
                        f.pos,
                        "case inherits the eval file's invalid `evaluators`",
                        Some("fix the errors reported for `execution.evaluators`".to_owned()),
                    );
                    return None;
                }
            },
        };
        let Inputs {
            messages: input_messages,
            raw: raw_input_messages,
            guidelines,
            files: input_files,
        } = inputs?;
        let expected_messages = expected?;
        let has = |field: CaseField| match field {
            // An `expected_outcome` already reported as invalid is not reported missing too.
            CaseField::ExpectedOutcome => expected_outcome.is_some() || outcome_reported,
        };
        check_needs(&graders, has, outcome_node.map_or(f.pos, |n| n.pos), diags)?;
        let question = input_messages
            .iter()
            .flat_map(Message::text_parts)
            .collect::<Vec<_>>()
            .join(" ");
        let reference_answer = expected_messages.last().map(reference_text).unwrap_or_default();
        let case = EvalCase {
            id: id?,
            dataset: self.dataset.clone(),
            conversation_id,
            expected_outcome: expected_outcome.unwrap_or_default(),
            input_messages,
            raw_input_messages,
            expected_messages,
            guidelines,
            input_files,
            question,
            reference_answer,
            suite_target: self.target.clone(),
            source: SourceRef {
                file: self.file.clone(),
                line: node.pos.line,
            },
        };
        Some(LoadedCase { case, graders })
    }

    fn input_messages(&self, f: &mut Fields<'_>, diags: &mut Diagnostics) -> Option<Inputs> {
        let (key, node) = match (f.take("input_messages"), f.take("input")) {
            (Some(node), _) => ("input_messages", node),
            (None, Some(input)) => match input.as_str() {
                Some(text) => return Some(Inputs::question(text, input.to_json())),
                None => ("input", input),
            },
            (None, None) => {
                diags.error(
                    f.pos,
                    "eval case is missing the required key `input_messages`",
                    Some("add `input_messages: [{role: user, content: ...}]`".to_owned()),
                );
                return None;
            }
        };
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
                "`input_messages` is empty",
                Some("add at least one `{role: user, content: ...}`".to_owned()),
            );
        }
        (diags.error_count() == before).then_some(inputs)
    }

    fn expected_messages(&self, f: &mut Fields<'_>, diags: &mut Diagnostics) -> Option<Vec<Message>> {
        if let Some(node) = f.take("expected_messages") {
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
            return (diags.error_count() == before).then_some(messages);
        }
        if let Some(node) = f.take("expected_output") {
            let content = match &node.value {
                NodeValue::Str(s) => Content::Text(s.clone()),
                _ => Content::Json(node.to_json()),
            };
            return Some(vec![Message {
                role: Role::Assistant,
                content,
                name: None,
                tool_calls: None,
            }]);
        }
        Some(Vec::new())
    }

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

/// Case ids seen so far in one file (ids are unique within a suite;
/// `docs/architecture.md#case-ids`).
#[derive(Default)]
struct CaseIds {
    /// Id → line of the case that used it first.
    first: HashMap<String, u64>,
}

impl CaseIds {
    /// Reports `id` at `pos` when an earlier case already uses it.
    fn check(&mut self, id: &str, pos: Pos, diags: &mut Diagnostics) {
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

/// One line of a JSONL file.
enum JsonlLine {
    Text(String),
    /// Not UTF-8: the column of the first bad byte.
    NotUtf8(u64),
    /// The file could not be read from this line on.
    Unreadable(std::io::Error),
}

/// The lines of a JSONL file, numbered from 1, without line endings (`\n` or `\r\n`) or a
/// byte-order mark. Reads one line at a time, so memory stays flat.
fn jsonl_lines(reader: impl BufRead) -> impl Iterator<Item = (u64, JsonlLine)> {
    let mut failed = false;
    reader.split(b'\n').enumerate().map_while(move |(i, bytes)| {
        if failed {
            return None;
        }
        let line_no = i as u64 + 1;
        let line = match bytes {
            Err(e) => {
                failed = true;
                JsonlLine::Unreadable(e)
            }
            Ok(mut bytes) => {
                if bytes.last() == Some(&b'\r') {
                    bytes.pop();
                }
                let bytes = crate::config::source::strip_bom(&bytes);
                match std::str::from_utf8(bytes) {
                    Ok(text) => JsonlLine::Text(text.to_owned()),
                    Err(_) => JsonlLine::NotUtf8(crate::config::source::invalid_utf8_at(bytes).map_or(1, |p| p.column)),
                }
            }
        };
        Some((line_no, line))
    })
}

/// The reference answer: the last expected message's text, else its content or tool calls as
/// pretty JSON.
fn reference_text(msg: &Message) -> String {
    match &msg.content {
        Content::Text(t) => t.clone(),
        Content::Empty => msg
            .tool_calls
            .as_ref()
            .map(crate::model::pretty_json)
            .unwrap_or_default(),
        _ => crate::model::pretty_json(msg.to_json().get("content").unwrap_or(&Value::Null)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Segment;

    fn load(files: &[(&str, &str)], eval: &str) -> (LoadedSuite, tempfile::TempDir) {
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::create_dir(tmp.path().join(".git")).expect("git");
        for (rel, text) in files {
            let path = tmp.path().join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            std::fs::write(path, text).expect("write");
        }
        let ws = Workspace::from_cwd(tmp.path().to_path_buf());
        (load_eval_file(Path::new(eval), &ws), tmp)
    }

    fn errors(suite: &LoadedSuite) -> Vec<String> {
        suite
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn derives_question_reference_and_splits_guidelines() {
        let yaml = "evalcases:\n  - id: c\n    outcome: ok\n    input_messages:\n      - {role: system, content: Be brief.}\n      - role: user\n        content:\n          - {type: file, value: docs/style.instructions.md}\n          - {type: text, value: Review}\n          - {type: file, value: src/a.py}\n          - {type: image, url: x.png}\n    expected_messages:\n      - {role: assistant, content: {verdict: ok}}\n";
        let (suite, _t) = load(
            &[
                ("evals/e.yaml", yaml),
                ("docs/style.instructions.md", "Tabs.\r\n"),
                ("src/a.py", "print(1)\r\n"),
            ],
            "evals/e.yaml",
        );
        assert!(errors(&suite).is_empty(), "{:?}", suite.diagnostics);
        let case = &suite.cases[0].case;
        assert_eq!(case.expected_outcome, "ok", "`outcome` is an alias");
        assert_eq!(case.question, "Be brief. Review");
        assert_eq!(case.reference_answer, "{\n  \"verdict\": \"ok\"\n}");
        assert_eq!(case.guidelines.len(), 1);
        assert_eq!(&*case.guidelines[0].text, "Tabs.\n", "CRLF becomes LF");
        assert_eq!(case.input_files.len(), 1);
        assert!(case.input_files[0].ends_with("src/a.py"));
        let Content::Segments(segs) = &case.input_messages[1].content else {
            panic!("segments")
        };
        assert_eq!(segs.len(), 3, "guideline removed; text, file and other kept");
        assert!(matches!(&segs[2], Segment::Other(v) if v["url"] == "x.png"));
        assert_eq!(
            case.raw_input_messages[1]["content"][0]["value"], "docs/style.instructions.md",
            "raw input keeps file segments as written"
        );
        assert_eq!(&*case.dataset, "e");
    }

    #[test]
    fn custom_guideline_patterns_from_agentv_yaml() {
        let yaml = "evalcases:\n  - id: c\n    expected_outcome: x\n    input_messages:\n      - role: user\n        content: [{type: file, value: rules/r.md}, {type: text, value: go}]\n";
        let (suite, _t) = load(
            &[
                ("e.yaml", yaml),
                ("rules/r.md", "rule"),
                (".agentv.yaml", "guideline_patterns: ['rules/*.md']\n"),
            ],
            "e.yaml",
        );
        assert_eq!(suite.cases[0].case.guidelines.len(), 1);
        assert!(suite.cases[0].case.input_files.is_empty());
    }

    #[test]
    fn evaluator_inheritance_follows_d2() {
        let yaml = "execution:\n  target: t1\n  evaluators: [{name: kw, type: keywords, expected: [a]}]\nevalcases:\n  - {id: inherits, expected_outcome: x, input_messages: [{role: user, content: q}]}\n  - id: own\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    evaluators: [{type: code, script: 'echo {}'}]\n";
        let (suite, _t) = load(&[("e.yaml", yaml)], "e.yaml");
        assert!(errors(&suite).is_empty(), "{:?}", suite.diagnostics);
        assert_eq!(suite.target.as_deref(), Some("t1"));
        assert_eq!(suite.cases[0].graders[0].name, "kw");
        let own = &suite.cases[1].graders[0];
        assert_eq!(own.name, "code_judge", "name defaults to the type");
        assert_eq!(own.type_name(), "code_judge");
        let shown = format!("{:?}", own.grader);
        assert!(shown.contains(r#"script: ["sh", "-c", "echo {}"]"#), "{shown}");
        let (plain, _t) = load(
            &[(
                "e.yaml",
                "evalcases:\n  - {id: a, expected_outcome: x, input_messages: [{role: user, content: q}]}\n",
            )],
            "e.yaml",
        );
        assert_eq!(
            plain.cases[0].graders[0].type_name(),
            "llm_judge",
            "no evaluators → llm_judge"
        );
    }

    #[test]
    fn every_error_of_a_file_is_reported_and_good_cases_kept() {
        let yaml = "evalcases:\n  - id: ok\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n  - id: bad-weight\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    evaluators: [{type: keywords, expected: [a], weight: -1}]\n  - id: no-traj\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    evaluators: [{type: tool_trajectory, mode: in_order}]\n  - expected_outcome: x\n    input_messages: {role: user}\n";
        let (suite, _t) = load(&[("e.yaml", yaml)], "e.yaml");
        assert_eq!(suite.cases.len(), 1);
        assert_eq!(suite.skipped, 3);
        let errs = errors(&suite);
        let want = [
            "e.yaml:8:58: error: `weight` must be a number ≥ 0, found -1",
            "e.yaml:12:18: error: tool_trajectory mode in_order needs `expected`",
            "e.yaml:13:5: error: eval case is missing the required key `id`",
            "e.yaml:14:21: error: `input_messages` must be a list of messages, found a mapping",
        ];
        for (got, want) in errs.iter().zip(want) {
            assert!(got.starts_with(want), "{got}\n  !=\n{want}");
        }
        assert_eq!(errs.len(), want.len(), "{errs:#?}");
    }

    #[test]
    fn jsonl_is_validated_then_streamed_with_the_filter() {
        let jsonl = "{\"id\": \"a1\", \"expected_outcome\": \"x\", \"input\": \"q\"}\nnot json\n{\"id\": \"b1\", \"expected_outcome\": \"x\", \"input\": \"q\"}\n{\"id\": \"a2\", \"expected_outcome\": \"x\", \"input\": \"q\"}\n";
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::write(tmp.path().join("d.jsonl"), jsonl).expect("write");
        let ws = Workspace::from_cwd(tmp.path().to_path_buf());
        let filter: CaseFilter = Arc::new(|id: &str| id.starts_with('a'));
        let suite = load_eval_file_filtered(Path::new("d.jsonl"), &ws, Some(filter));
        assert!(suite.cases.is_empty(), "JSONL cases are not held");
        assert_eq!((suite.case_count, suite.skipped), (2, 1));
        assert_eq!(errors(&suite).len(), 1);
        let ids: Vec<String> = suite.into_cases().map(|c| c.case.id).collect();
        assert_eq!(ids, ["a1", "a2"]);
    }

    fn warnings(suite: &LoadedSuite) -> Vec<String> {
        suite
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .map(ToString::to_string)
            .collect()
    }

    const Q: &str = "input_messages: [{role: user, content: q}]";

    #[test]
    fn duplicate_case_ids_are_an_error_naming_both_lines() {
        let yaml = format!(
            "evalcases:\n  - {{id: a, expected_outcome: x, {Q}}}\n  - {{id: b, expected_outcome: x, {Q}}}\n  - {{id: a, expected_outcome: x, {Q}}}\n"
        );
        let (suite, _t) = load(&[("e.yaml", &yaml)], "e.yaml");
        assert_eq!(
            errors(&suite),
            [
                "e.yaml:4:10: error: duplicate case id `a`: the case at line 2 already uses it\n  help: give each case a unique id; this case is skipped"
            ]
        );
        assert_eq!((suite.case_count, suite.skipped), (2, 1));
        let jsonl = "{\"id\": \"a\", \"expected_outcome\": \"x\", \"input\": \"q\"}\n{\"id\": \"a\", \"expected_outcome\": \"y\", \"input\": \"q\"}\n";
        let (suite, _t) = load(&[("d.jsonl", jsonl)], "d.jsonl");
        assert_eq!(errors(&suite).len(), 1, "{:?}", suite.diagnostics);
        assert!(errors(&suite)[0].starts_with("d.jsonl:2:1: error: duplicate case id `a`: the case at line 1"));
        let cases: Vec<EvalCase> = suite.into_cases().map(|c| c.case).collect();
        assert_eq!(cases.len(), 1, "the streamed pass skips the duplicate too");
        assert_eq!(cases[0].expected_outcome, "x");
    }

    #[test]
    fn jsonl_line_that_is_not_an_object_gets_a_json_hint() {
        let jsonl = "[1,2]\n{\"id\": \"d\", \"expected_outcome\": \"x\", \"input\": \"q\"}\n";
        let (suite, _t) = load(&[("d.jsonl", jsonl)], "d.jsonl");
        let errs = errors(&suite);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with("d.jsonl:1:1: error: a JSONL line must be a JSON object"),
            "{}",
            errs[0]
        );
        assert!(!errs[0].contains("key: value"), "{}", errs[0]);
        let ids: Vec<String> = suite.into_cases().map(|c| c.case.id).collect();
        assert_eq!(ids, ["d"]);
    }

    #[test]
    fn jsonl_line_with_a_repeated_key_is_an_error_like_in_yaml() {
        let jsonl = "{\"id\": \"a\", \"expected_outcome\": \"x\", \"input\": \"q\", \"id\": \"b\"}\n{\"id\": \"c\", \"expected_outcome\": \"x\", \"input\": {\"k\": 1, \"k\": 2}}\n{\"id\": \"d\", \"expected_outcome\": \"x\", \"input\": \"q\"}\n";
        let (suite, _t) = load(&[("d.jsonl", jsonl)], "d.jsonl");
        assert_eq!(
            errors(&suite),
            [
                "d.jsonl:1:55: error: invalid JSON: key `id` appears twice; the line is skipped\n  help: keep one of them: keys of an object must be unique",
                "d.jsonl:2:58: error: invalid JSON: key `k` appears twice; the line is skipped\n  help: keep one of them: keys of an object must be unique"
            ]
        );
        let ids: Vec<String> = suite.into_cases().map(|c| c.case.id).collect();
        assert_eq!(ids, ["d"]);
    }

    #[test]
    fn jsonl_line_that_is_not_utf8_is_reported_and_the_rest_run() {
        let mut bytes = b"{\"id\": \"a\", \"expected_outcome\": \"x\", \"input\": \"q\"}\n".to_vec();
        bytes.extend(b"{\"id\": \"b\", \"expected_outcome\": \"caf\xe9\", \"input\": \"q\"}\r\n");
        bytes.extend(b"{\"id\": \"c\", \"expected_outcome\": \"x\", \"input\": \"q\"}\r\n");
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::write(tmp.path().join("d.jsonl"), bytes).expect("write");
        let ws = Workspace::from_cwd(tmp.path().to_path_buf());
        let suite = load_eval_file(Path::new("d.jsonl"), &ws);
        assert_eq!(
            errors(&suite),
            [
                "d.jsonl:2:37: error: this line is not UTF-8 text: invalid byte here; the line is skipped\n  help: save the file as UTF-8"
            ]
        );
        assert_eq!((suite.case_count, suite.skipped), (2, 1));
        let ids: Vec<String> = suite.into_cases().map(|c| c.case.id).collect();
        assert_eq!(ids, ["a", "c"]);
    }

    #[test]
    fn files_starting_with_a_bom_load() {
        let jsonl = "\u{feff}{\"id\": \"a\", \"expected_outcome\": \"x\", \"input\": \"q\"}\n";
        let yaml = format!("\u{feff}evalcases:\n  - {{id: a, expected_outcome: x, {Q}}}\n");
        let side = "\u{feff}dataset: named\n";
        let (suite, _t) = load(&[("d.jsonl", jsonl), ("d.yaml", side)], "d.jsonl");
        assert!(suite.diagnostics.is_empty(), "{:?}", suite.diagnostics);
        assert_eq!(&*suite.dataset, "named");
        assert_eq!(suite.into_cases().count(), 1);
        let (suite, _t) = load(&[("e.yaml", &yaml)], "e.yaml");
        assert!(suite.diagnostics.is_empty(), "{:?}", suite.diagnostics);
        assert_eq!(suite.cases.len(), 1);
    }

    #[test]
    fn broken_sidecar_stops_its_dataset() {
        let jsonl = "{\"id\": \"a\", \"expected_outcome\": \"x\", \"input\": \"q\"}\n";
        for (name, side) in [
            ("syntax", &b"execution: [target: x\n"[..]),
            ("not utf-8", &b"dataset: caf\xe9\n"[..]),
            ("not a mapping", &b"- a\n"[..]),
            ("bad execution", &b"execution: 3\n"[..]),
        ] {
            let tmp = tempfile::tempdir().expect("tmp");
            std::fs::write(tmp.path().join("d.jsonl"), jsonl).expect("write");
            std::fs::write(tmp.path().join("d.yaml"), side).expect("write");
            let ws = Workspace::from_cwd(tmp.path().to_path_buf());
            let suite = load_eval_file(Path::new("d.jsonl"), &ws);
            let errs = errors(&suite);
            assert!(
                errs.iter().any(|e| e.contains("d.yaml:1:")),
                "{name}: the sidecar's own error has a position: {errs:?}"
            );
            assert!(
                errs.iter()
                    .any(|e| e.contains("the dataset is not run: its sidecar d.yaml has errors")),
                "{name}: {errs:?}"
            );
            assert_eq!((suite.case_count, suite.skipped), (0, 1), "{name}");
            assert_eq!(suite.into_cases().count(), 0, "{name}");
        }
    }

    #[test]
    fn missing_file_segment_makes_its_case_an_error() {
        let yaml = "evalcases:\n  - id: a\n    expected_outcome: x\n    input_messages:\n      - role: user\n        content: [{type: file, value: nope.txt}, {type: text, value: q}]\n  - {id: b, expected_outcome: x, input_messages: [{role: user, content: q}]}\n";
        let (suite, _t) = load(&[("e.yaml", yaml)], "e.yaml");
        let errs = errors(&suite);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with("e.yaml:6:39: error: file `nope.txt` not found; the case is not run without it"),
            "{}",
            errs[0]
        );
        assert_eq!((suite.case_count, suite.skipped), (1, 1));
        assert_eq!(suite.cases[0].case.id, "b");
    }

    #[test]
    fn expected_outcome_is_required_only_by_an_llm_judge_that_uses_it() {
        let yaml = "evalcases:\n  - id: kw\n    input: q\n    evaluators: [{type: keywords, expected: [a]}]\n  - id: custom\n    input: q\n    evaluators: [{type: llm_judge, prompt: 'Grade {{ candidate_answer }}'}]\n  - id: default-judge\n    input: q\n  - id: uses-it\n    input: q\n    evaluators: [{name: strict, type: llm_judge, prompt: 'Want {{ expected_outcome }} got {{ candidate_answer }}'}]\n";
        let (suite, _t) = load(&[("e.yaml", yaml)], "e.yaml");
        let errs = errors(&suite);
        assert_eq!(errs.len(), 2, "{errs:#?}");
        assert!(
            errs[0].starts_with("e.yaml:8:5: error: eval case is missing `expected_outcome`, which the llm_judge evaluator needs (its default prompt grades the answer against it)"),
            "{}",
            errs[0]
        );
        assert!(
            errs[1].contains("which llm_judge `strict` needs (its prompt uses `{{ expected_outcome }}`)"),
            "{}",
            errs[1]
        );
        let ids: Vec<&str> = suite.cases.iter().map(|c| c.case.id.as_str()).collect();
        assert_eq!(ids, ["kw", "custom"]);
        let jsonl = "{\"id\": \"a\", \"input\": \"q\", \"expected_output\": \"4\", \"evaluators\": [{\"type\": \"keywords\", \"expected\": [\"4\"]}]}\n";
        let (suite, _t) = load(&[("d.jsonl", jsonl)], "d.jsonl");
        assert!(
            errors(&suite).is_empty(),
            "the README's short form loads: {:?}",
            suite.diagnostics
        );
    }

    #[test]
    fn code_judge_timeout_out_of_range_is_a_diagnostic_not_a_panic() {
        for value in ["1e20", "1e400", "-1", "0", ".inf", "'10s'", "~"] {
            let yaml = format!(
                "evalcases:\n  - {{id: a, expected_outcome: x, {Q}, evaluators: [{{type: code_judge, script: x, timeout_seconds: {value}}}]}}\n"
            );
            let line = yaml.lines().nth(1).expect("line 2");
            let col = line.find(value).expect("value") + 1;
            let (suite, _t) = load(&[("e.yaml", &yaml)], "e.yaml");
            let errs = errors(&suite);
            assert_eq!(errs.len(), 1, "{value}: {errs:?}");
            let want = format!(
                "e.yaml:2:{col}: error: `timeout_seconds` must be a number of seconds from 0.001 to 86400, found"
            );
            assert!(errs[0].starts_with(&want), "{value}: {}", errs[0]);
        }
    }

    #[test]
    fn code_judge_config_keys_close_to_known_keys_warn() {
        let yaml = format!(
            "evalcases:\n  - {{id: a, expected_outcome: x, {Q}, evaluators: [{{type: code_judge, script: x, wieght: 2, timeout_secs: 5, threshold: 0.5}}]}}\n"
        );
        let (suite, _t) = load(&[("e.yaml", &yaml)], "e.yaml");
        let warns = warnings(&suite);
        assert_eq!(warns.len(), 2, "{warns:#?}");
        assert!(
            warns[0].contains("key `wieght` is passed to the judge in `config`; did you mean `weight`?"),
            "{}",
            warns[0]
        );
        assert!(warns[1].contains("did you mean `timeout_seconds`?"), "{}", warns[1]);
        let shown = format!("{:?}", suite.cases[0].graders[0].grader);
        for key in ["\"wieght\"", "\"timeout_secs\"", "\"threshold\""] {
            assert!(shown.contains(key), "the keys still reach the judge: {shown}");
        }
    }

    #[test]
    fn yaml_errors_speak_the_users_language() {
        let cases = [
            (
                "a: 1\na: 2\n",
                "e.yaml:2:1: error: invalid YAML: key `a` appears twice (first at line 1)",
            ),
            (
                "a: 1\n---\nb: 2\n",
                "e.yaml:3:1: error: invalid YAML: the file holds several YAML documents; it must hold exactly one",
            ),
            ("evalcases: [\n", "e.yaml:"),
            (
                "a: *nope\n",
                "e.yaml:1:4: error: invalid YAML: an alias (`*name`) refers to an anchor",
            ),
        ];
        for (yaml, want) in cases {
            let (suite, _t) = load(&[("e.yaml", yaml)], "e.yaml");
            let errs = errors(&suite);
            assert_eq!(errs.len(), 1, "{yaml:?}: {errs:?}");
            assert!(errs[0].starts_with(want), "{yaml:?}: {}", errs[0]);
            for leak in ["Policy", "Options", "from_str", "serde", "deserializ"] {
                assert!(!errs[0].contains(leak), "{yaml:?} leaks `{leak}`: {}", errs[0]);
            }
        }
    }

    #[test]
    fn huge_numbers_are_a_field_error_not_a_file_error() {
        let yaml = format!(
            "description: 1e400\nevalcases:\n  - {{id: a, expected_outcome: x, {Q}, evaluators: [{{type: keywords, expected: [k], weight: 1e400}}]}}\n  - {{id: 1e400, expected_outcome: x, {Q}}}\n  - {{id: c, expected_outcome: x, input_messages: [{{role: user, content: -1e400}}]}}\n"
        );
        let (suite, _t) = load(&[("e.yaml", &yaml)], "e.yaml");
        let errs = errors(&suite);
        assert_eq!(errs.len(), 2, "{errs:#?}");
        assert!(
            errs[0].starts_with("e.yaml:3:131: error: `weight` must be a number ≥ 0, found a number out of range"),
            "{}",
            errs[0]
        );
        assert!(
            errs[1].starts_with("e.yaml:4:10: error: `id` must be a string, found a number out of range"),
            "{}",
            errs[1]
        );
        assert_eq!(suite.cases.len(), 1, "the other case still loads");
        assert_eq!(
            suite.cases[0].case.question, "-inf",
            "read as infinity where any scalar is text"
        );
    }

    #[test]
    fn jsonl_lines_accept_short_forms() {
        let jsonl =
            "{\"id\": \"a\", \"expected_outcome\": \"x\", \"input\": \"hello\", \"expected_output\": {\"k\": 1}}\n";
        let (suite, _t) = load(&[("d.jsonl", jsonl)], "d.jsonl");
        assert!(errors(&suite).is_empty(), "{:?}", suite.diagnostics);
        let cases: Vec<EvalCase> = suite.into_cases().map(|c| c.case).collect();
        let case = &cases[0];
        assert_eq!(case.question, "hello");
        assert_eq!(case.input_messages[0].role, Role::User);
        assert_eq!(case.reference_answer, "{\n  \"k\": 1\n}");
    }
}
