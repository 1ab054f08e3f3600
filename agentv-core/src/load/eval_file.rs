//! Loads eval files: YAML suites and JSONL datasets (with an optional sidecar YAML), of either
//! AgentV generation (`docs/architecture.md#generations`). The suite is read here; each case
//! in `load::case`.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::cases_source::{self, CaseFile, CaseNode};
use super::guidelines::GuidelineMatcher;
use super::invalid::{InvalidCase, id_of_line, id_of_node};
use super::keys::{EXECUTION, NOT_HONOURED, SIDECAR, SUITE};
use crate::config::interpolate::interpolate_env;
use crate::config::node::parse_yaml;
use crate::config::{Diagnostic, Diagnostics, Fields, Node, Pos, Severity};
use crate::env::Env;
use crate::evaluators::{ConfiguredGrader, ParseContext, parse_graders};
use crate::model::{EvalCase, Generation};
use crate::paths::Workspace;

pub(super) use super::case::CaseIds;

/// A case and the graders that grade it.
#[derive(Debug, Clone)]
pub struct LoadedCase {
    pub case: EvalCase,
    pub graders: Arc<[ConfiguredGrader]>,
    /// The graders of each turn of a conversation case (empty otherwise).
    pub turn_graders: Arc<[Arc<[ConfiguredGrader]>]>,
    /// Where the case's `depends_on` is written, for the suite's check of the graph.
    pub depends_at: Option<crate::config::Pos>,
}

/// Which case ids to keep (`--eval-id`).
pub type CaseFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The suite's descriptive keys (4.x): metadata only, kept for reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SuiteInfo {
    pub description: Option<String>,
    pub version: Option<String>,
    pub author: Option<String>,
    pub license: Option<String>,
    pub tags: Vec<String>,
    pub category: Option<String>,
    /// `requires` as written.
    pub requires: Option<Value>,
}

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
    /// Those of them that pass the filter, each with its errors: the run records them.
    pub invalid: Vec<InvalidCase>,
    pub diagnostics: Vec<Diagnostic>,
    /// The file's generation.
    pub generation: Generation,
    /// A 4.x suite's `execution.threshold`: it gates the exit code of a run whose first file it
    /// is, when `--threshold` is not given (`docs/architecture.md#exit-codes`); case scoring
    /// never sees it.
    pub threshold: Option<f64>,
    /// `execution.workers`: cases at once (after `--workers`, before the target's).
    pub workers: Option<usize>,
    /// How many times each case runs when `--repeat` is not given (a promptfoo config's
    /// `evaluateOptions.repeat`).
    pub repeat: Option<u32>,
    /// `execution.cache: true`.
    pub cache: bool,
    /// `strict: true`: its warnings (and its targets') are errors; those of the file are already
    /// errors in `diagnostics`.
    pub strict: bool,
    /// `execution.targets` (a matrix run): kept; the suite runs on one target.
    pub matrix: Vec<String>,
    pub info: SuiteInfo,
    /// The targets a promptfoo config declares (its `providers`): the suite runs against each
    /// (`docs/promptfoo.md#providers`).
    pub inline_targets: Option<Arc<crate::providers::TargetsFile>>,
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
            JsonlLine::NotUtf8(_) | JsonlLine::TooLong(_) | JsonlLine::Unreadable(_) => None,
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
        generation: Generation::V2,
        jsonl: false,
        v2_cases_key: false,
        env: None,
        defaults: SuiteDefaults::default(),
        settings: SuiteSettings::default(),
        workspace: SuiteWorkspace::default(),
    };
    let is_jsonl = path.extension().is_some_and(|e| e == "jsonl");
    loader.jsonl = is_jsonl;
    let mut tally = Tally {
        cases: Vec::new(),
        count: 0,
        skipped: 0,
        invalid: Vec::new(),
        keep: !is_jsonl,
        filter: filter.clone(),
        broken: None,
        left_out: Default::default(),
    };
    let mut inline_targets = None;
    if is_jsonl {
        loader.load_jsonl(&mut diags, &mut extra, &mut tally);
    } else if let Some(text) = crate::config::source::read_text(&loader.file, "eval file", &mut diags) {
        inline_targets = loader.load_yaml(&text, &mut diags, &mut tally);
    }
    let mut diagnostics = extra;
    diagnostics.extend(diags.into_vec());
    let settings = std::mem::take(&mut loader.settings);
    if settings.strict {
        crate::config::promote_warnings(&mut diagnostics);
    }
    LoadedSuite {
        file: path.to_path_buf(),
        dataset: loader.dataset.clone(),
        target: loader.target.clone(),
        cases: tally.cases,
        case_count: tally.count,
        skipped: tally.skipped,
        invalid: tally.invalid,
        diagnostics,
        generation: loader.generation,
        threshold: loader.defaults.threshold,
        workers: settings.workers,
        repeat: settings.repeat,
        cache: settings.cache,
        strict: settings.strict,
        matrix: settings.matrix,
        info: settings.info,
        inline_targets,
        stream: (is_jsonl && tally.broken.is_none()).then(|| Arc::new(loader)),
        filter,
    }
}

/// What loading found: kept cases (YAML), counts.
struct Tally {
    cases: Vec<LoadedCase>,
    count: usize,
    skipped: usize,
    invalid: Vec<InvalidCase>,
    /// Keep cases in memory (YAML) or only count them (JSONL, streamed later).
    keep: bool,
    filter: Option<CaseFilter>,
    /// Set when the whole file cannot run (a broken sidecar), to why: its cases are validated
    /// and reported, but all of them count as skipped.
    broken: Option<String>,
    /// Ids of valid cases the filter left out (for the dependency check).
    left_out: std::collections::HashSet<String>,
}

impl Tally {
    fn add(&mut self, case: Result<LoadedCase, InvalidCase>) {
        match case {
            Err(invalid) => {
                // An invalid case another `--eval-id` leaves out is no concern of this run.
                if let (Some(id), Some(filter)) = (&invalid.id, &self.filter)
                    && !filter(id)
                {
                    return;
                }
                self.skipped += 1;
                self.invalid.push(invalid);
            }
            Ok(case) if self.broken.is_some() => {
                if self.filter.as_ref().is_none_or(|f| f(&case.case.id)) {
                    self.skipped += 1;
                    let why = self.broken.clone().unwrap_or_default();
                    let (file, line) = (case.case.source.file.clone(), case.case.source.line);
                    self.invalid.push(InvalidCase {
                        id: Some(case.case.id),
                        file: file.to_path_buf(),
                        line,
                        errors: vec![why],
                        metadata: case.case.metadata,
                        excluded_targets: case.case.excluded_targets,
                    });
                }
            }
            Ok(case) => {
                if self.filter.as_ref().is_none_or(|f| f(&case.case.id)) {
                    self.count += 1;
                    if self.keep {
                        self.cases.push(case);
                    }
                } else if self.keep {
                    self.left_out.insert(case.case.id);
                }
            }
        }
    }
}

/// The suite-level grader list cases inherit (2.x: a case without its own list; 4.x: after
/// the case's own; `docs/architecture.md#generations`).
pub(super) enum SuiteEvaluators {
    /// None configured.
    Default,
    Valid(Arc<[ConfiguredGrader]>),
    /// Configured but invalid (already reported): inheriting cases are skipped.
    Invalid,
}

/// What a 4.x suite gives each of its cases (unless the case sets `execution.skip_defaults`).
#[derive(Default)]
pub(super) struct SuiteDefaults {
    /// `input`, as written (`vars` are applied per case).
    pub(super) input: Option<Node>,
    /// `input_files`, as written.
    pub(super) input_files: Option<Node>,
    /// `metadata` with `governance` placed in it.
    pub(super) metadata: Option<Map<String, Value>>,
    /// `execution.threshold`.
    pub(super) threshold: Option<f64>,
    /// `tools`, `tool_choice`, `parallel_tool_calls`, `max_steps` (both generations).
    pub(super) tool_use: crate::model::ToolSettings,
    /// The suite's tool settings had an error (reported): a case that inherits them cannot run.
    pub(super) tool_use_invalid: bool,
}

/// Suite settings that go to the [`LoadedSuite`].
#[derive(Default)]
pub(super) struct SuiteSettings {
    workers: Option<usize>,
    repeat: Option<u32>,
    cache: bool,
    pub(super) strict: bool,
    matrix: Vec<String>,
    info: SuiteInfo,
}

/// The context cases of one file are read in (kept to read a JSONL dataset again).
pub(super) struct Loader {
    pub(super) ws: Workspace,
    pub(super) dir: PathBuf,
    pub(super) file: Arc<Path>,
    pub(super) dataset: Arc<str>,
    pub(super) target: Option<Arc<str>>,
    pub(super) guidelines: GuidelineMatcher,
    pub(super) suite_evaluators: SuiteEvaluators,
    pub(super) generation: Generation,
    /// A JSONL dataset (4.x datasets follow their own rules, `agentv-4.md` §1.9).
    pub(super) jsonl: bool,
    /// The cases are under 2.x's `evalcases`: a case's `evaluators` then make it complete even
    /// when 4.x grader types make the file 4.x (AgentV 4.x itself would skip such a case).
    pub(super) v2_cases_key: bool,
    /// Variables for `${{ VAR }}` (4.x files).
    pub(super) env: Option<Arc<Env>>,
    pub(super) defaults: SuiteDefaults,
    pub(super) settings: SuiteSettings,
    /// The suite's `workspace` block and `execution.targets` hooks (`docs/workspaces.md`).
    pub(super) workspace: SuiteWorkspace,
}

/// What a suite says about workspaces, for its cases to merge with their own.
#[derive(Default)]
pub(super) struct SuiteWorkspace {
    pub(super) config: Option<crate::model::workspace::WorkspaceConfig>,
    /// The suite's block has errors (reported): every case is left out, as it would run in
    /// the wrong place.
    pub(super) broken: bool,
    pub(super) target_hooks: Arc<[crate::model::workspace::TargetHooks]>,
}

impl Loader {
    /// Reads a YAML eval file (or a promptfoo config: then its providers are returned, as
    /// targets).
    fn load_yaml(
        &mut self,
        text: &str,
        diags: &mut Diagnostics,
        tally: &mut Tally,
    ) -> Option<Arc<crate::providers::TargetsFile>> {
        let root = match parse_yaml(text) {
            Ok(root) => root,
            Err(e) => {
                diags.yaml_syntax(&e);
                return None;
            }
        };
        if super::generation::is_promptfoo_config(&self.file, &root) {
            return Some(self.load_promptfoo(&root, diags, tally));
        }
        self.load_agentv_yaml(root, diags, tally);
        None
    }

    /// A promptfoo config (`docs/promptfoo.md`): its rows are the cases, its providers the
    /// targets.
    fn load_promptfoo(
        &mut self,
        root: &Node,
        diags: &mut Diagnostics,
        tally: &mut Tally,
    ) -> Arc<crate::providers::TargetsFile> {
        self.generation = Generation::Promptfoo;
        let config = super::promptfoo::load(root, &self.file, &self.dir, &self.ws, &self.dataset, diags);
        tally.broken = config.broken;
        for case in config.cases {
            tally.add(case);
        }
        self.settings.info.description = config.description;
        self.settings.repeat = config.evaluate.repeat;
        Arc::new(config.targets)
    }

    fn load_agentv_yaml(&mut self, mut root: Node, diags: &mut Diagnostics, tally: &mut Tally) {
        if root.is_null() {
            diags.error(
                Pos::new(1, 1),
                "the eval file holds no YAML (it is empty or only comments)",
                Some("add `tests:` (or `evalcases:`) with one `- id: ...` entry per case".to_owned()),
            );
            return;
        }
        self.generation = super::generation::of_suite(&root);
        if self.generation == Generation::V4 {
            self.use_env(&mut root, diags);
        }
        let Some(mut f) = Fields::of(&root, &SUITE, diags) else {
            return;
        };
        self.read_suite_keys(&mut f, diags);
        let written = f.written("tests").to_owned();
        self.v2_cases_key = written == "evalcases";
        let cases = f.take("tests");
        f.warn_unknown(diags);
        let Some(node) = cases else {
            let key = if self.generation == Generation::V4 {
                "tests"
            } else {
                "evalcases"
            };
            diags.error(
                root.pos,
                format!("eval file is missing the `{key}` list"),
                Some(format!("add `{key}:` with one `- id: ...` entry per case")),
            );
            return;
        };
        if self.generation == Generation::V4 && written == "evalcases" || written == "eval_cases" {
            diags.warn(
                root.get(&written).map_or(root.pos, |_| node.pos),
                format!("`{written}` is a deprecated spelling of `tests`"),
                Some("rename it `tests`".to_owned()),
            );
        }
        let mut files: Vec<CaseFile> = Vec::new();
        let sources = self.case_nodes(node, &written, &mut files, diags);
        let mut ids = CaseIds::default();
        for source in &sources {
            let case = match source.file {
                None => self.case_or_invalid(&source.node, &self.file.clone(), &mut ids, diags),
                Some(i) => {
                    let path: Arc<Path> = Arc::from(files[i].path.as_path());
                    self.case_or_invalid(&source.node, &path, &mut ids, &mut files[i].diags)
                }
            };
            tally.add(case);
        }
        if !super::dependencies::order(&mut tally.cases, &tally.left_out, &self.file, diags) {
            tally.skipped += std::mem::take(&mut tally.count);
            tally.cases.clear();
        }
        for file in files {
            diags.absorb(file.diags);
        }
    }

    /// The nodes of the cases list: in 4.x its entries may be files and globs of cases
    /// (`cases_source`, which fills `files`); in 2.x it is a list of cases.
    fn case_nodes(
        &self,
        node: &Node,
        written: &str,
        files: &mut Vec<CaseFile>,
        diags: &mut Diagnostics,
    ) -> Vec<CaseNode> {
        if self.generation == Generation::V4 {
            let src = cases_source::Source {
                eval_dir: &self.dir,
                cwd: &self.ws.cwd,
                env: self.env.as_deref(),
            };
            return cases_source::cases(node, &src, diags, files);
        }
        match node.as_seq() {
            Some(items) => items
                .iter()
                .map(|item| CaseNode {
                    node: item.clone(),
                    file: None,
                })
                .collect(),
            None => {
                diags.error(
                    node.pos,
                    format!("`{written}` must be a list, found {}", node.type_name()),
                    None,
                );
                Vec::new()
            }
        }
    }

    /// Loads the variables of the eval file's directory and replaces `${{ VAR }}` in `root`
    /// (4.x files; `agentv-4.md` §1.2). An unset variable reads as empty text, with a warning.
    fn use_env(&mut self, root: &mut Node, diags: &mut Diagnostics) {
        // Problems of `.env` files are reported when targets are resolved.
        let (env, _) = Env::load(std::slice::from_ref(&self.dir), &self.ws);
        for unset in interpolate_env(root, &|name| env.get(name)) {
            diags.warn(unset.pos, cases_source::unset_message(&unset.name), None);
        }
        self.env = Some(Arc::new(env));
    }

    /// Validates a JSONL dataset line by line (its cases are read again when the run consumes
    /// them). A line that is not UTF-8 or not valid JSON is an error for that line only.
    fn load_jsonl(&mut self, diags: &mut Diagnostics, extra: &mut Vec<Diagnostic>, tally: &mut Tally) {
        let sidecar = self.sidecar_path();
        let sidecar_root = sidecar.as_deref().and_then(|p| {
            let mut side = Diagnostics::new(p);
            let root = read_sidecar(p, &mut side);
            (side.error_count() == 0).then_some(root).flatten()
        });
        self.generation = match &sidecar_root {
            Some(root) if super::generation::of_dataset_part(root) == Generation::V4 => Generation::V4,
            _ => self.dataset_generation(),
        };
        if self.generation == Generation::V4 {
            let (env, _) = Env::load(std::slice::from_ref(&self.dir), &self.ws);
            self.env = Some(Arc::new(env));
        }
        if let Some(sidecar) = sidecar {
            let mut side = Diagnostics::new(&sidecar);
            self.load_sidecar(&sidecar, &mut side);
            if side.error_count() > 0 {
                let message = format!(
                    "the dataset is not run: its sidecar {} has errors",
                    sidecar
                        .file_name()
                        .map_or_else(|| sidecar.display().to_string(), |n| n.to_string_lossy().into_owned())
                );
                tally.broken = Some(format!("{}: error: {message}", self.file.display()));
                diags.error(
                    Pos::default(),
                    message,
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
                        let mark = diags.len();
                        let case = self.jsonl_case(&text, line_no, &mut ids, diags).ok_or_else(|| {
                            let id = id_of_line(&text).filter(|id| ids.first_line(id) == Some(line_no));
                            InvalidCase::new(id, &self.file, line_no, diags.since(mark))
                        });
                        tally.add(case);
                    }
                }
                JsonlLine::NotUtf8(column) => {
                    let mark = diags.len();
                    diags.error(
                        Pos::new(line_no, column),
                        "this line is not UTF-8 text: invalid byte here; the line is skipped",
                        Some("save the file as UTF-8".to_owned()),
                    );
                    tally.add(Err(InvalidCase::new(None, &self.file, line_no, diags.since(mark))));
                }
                JsonlLine::TooLong(bytes) => {
                    let mark = diags.len();
                    diags.error(Pos::new(line_no, 1), too_long(bytes), Some(too_long_help()));
                    tally.add(Err(InvalidCase::new(None, &self.file, line_no, diags.since(mark))));
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

    /// A dataset is 4.x when any of its lines uses a 4.x spelling (one more pass over the
    /// file, a line at a time).
    fn dataset_generation(&self) -> Generation {
        let Ok(file) = std::fs::File::open(&self.file) else {
            return Generation::V2;
        };
        let v4 = jsonl_lines(std::io::BufReader::new(file)).any(|(line_no, line)| match line {
            JsonlLine::Text(text) => serde_json::from_str::<Value>(&text).is_ok_and(|value| {
                super::generation::of_dataset_part(&Node::from_json(&value, Pos::new(line_no, 1))) == Generation::V4
            }),
            _ => false,
        });
        if v4 { Generation::V4 } else { Generation::V2 }
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
        let Some(mut root) = read_sidecar(sidecar, side) else {
            return;
        };
        if let Some(env) = self.env.clone() {
            for unset in interpolate_env(&mut root, &|name| env.get(name)) {
                side.warn(unset.pos, cases_source::unset_message(&unset.name), None);
            }
        }
        if let Some(mut f) = Fields::of(&root, &SIDECAR, side) {
            self.read_suite_keys(&mut f, side);
            if let Some(cases) = f.take("tests") {
                side.error(
                    cases.pos,
                    "a dataset sidecar cannot hold cases",
                    Some("put the cases in the .jsonl file, one per line".to_owned()),
                );
            }
            f.warn_unknown(side);
        }
    }

    /// [`Loader::checked_case`], or what the run records for the case when it is invalid.
    fn case_or_invalid(
        &self,
        node: &Node,
        file: &Arc<Path>,
        ids: &mut CaseIds,
        diags: &mut Diagnostics,
    ) -> Result<LoadedCase, InvalidCase> {
        let mark = diags.len();
        self.checked_case(node, file, ids, diags).ok_or_else(|| {
            // An id another case used first names that case, not this one.
            let line = node.get("id").map_or(node.pos.line, |n| n.pos.line);
            let id = id_of_node(node).filter(|id| ids.first_line(id) == Some(line));
            InvalidCase::new(id, file, node.pos.line, diags.since(mark))
        })
    }

    /// One JSONL line as a case; `None` (reported) when the line is invalid, or blank.
    pub(super) fn jsonl_case(
        &self,
        line: &str,
        line_no: u64,
        ids: &mut CaseIds,
        diags: &mut Diagnostics,
    ) -> Option<LoadedCase> {
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
            Ok(value) => {
                let mut node = Node::from_json(&value, Pos::new(line_no, 1));
                if let Some(env) = &self.env {
                    for unset in interpolate_env(&mut node, &|name| env.get(name)) {
                        diags.warn(unset.pos, cases_source::unset_message(&unset.name), None);
                    }
                }
                self.checked_case(&node, &self.file.clone(), ids, diags)
            }
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
        self.settings.strict = f.boolean("strict", diags).unwrap_or(false);
        // Read leniently: a description is never worth an error.
        self.settings.info.description = f.take("description").and_then(Node::scalar_text);
        if let Some(name) = f.string("dataset", diags) {
            self.dataset = Arc::from(name);
        } else if self.generation == Generation::V4 {
            self.dataset = Arc::from(default_suite_name(&self.file));
        }
        let name_node = f.take("name");
        if let Some(name) = f.string("name", diags) {
            if !valid_suite_name(&name) {
                diags.warn(
                    name_node.map_or(f.pos, |n| n.pos),
                    format!("suite name `{name}` is not valid in AgentV 4.x, which rejects the file"),
                    Some("use lowercase letters, digits and dashes (at most 64)".to_owned()),
                );
            }
            self.dataset = Arc::from(name);
        }
        self.read_suite_v4_keys(f, diags);
        if f.known().contains(&"workspace")
            && let Some(node) = f.take("workspace")
        {
            match self.read_workspace(node, diags) {
                Some(config) => self.workspace.config = config,
                None => self.workspace.broken = true,
            }
        }
        let before = diags.error_count();
        self.defaults.tool_use = self.read_tool_use(f, diags);
        self.defaults.tool_use_invalid = diags.error_count() > before;
        let mut lists: Vec<&Node> = Vec::new();
        if f.known().contains(&"assertions")
            && let Some(node) = f.take("assertions")
        {
            lists.push(node);
        }
        if let Some(exec) = f.take("execution")
            && let Some(mut ef) = Fields::of(exec, &EXECUTION, diags)
        {
            self.target = ef.string("target", diags).map(Arc::from);
            if let Some(node) = ef.take("assertions") {
                lists.push(node);
            }
            if let Some(node) = ef.take("evaluators") {
                lists.push(node);
            }
            self.read_suite_execution(&mut ef, diags);
            ef.warn_unknown(diags);
        }
        if self.target.is_none() {
            self.target = f.string("target", diags).map(Arc::from);
        }
        // The first list present: top-level `assertions` (`assert`), then
        // `execution.assertions` (`assert`), then `execution.evaluators`.
        if let Some(node) = lists.first() {
            self.suite_evaluators = match self.graders(node, diags) {
                Some(graders) => SuiteEvaluators::Valid(Arc::from(graders)),
                None => SuiteEvaluators::Invalid,
            };
        }
        if let Some(kind) = f.string("evaluator", diags)
            && kind != "llm_judge"
            && kind != "llm-grader"
        {
            let pos = f.take("evaluator").map_or(f.pos, |n| n.pos);
            diags.warn(
                pos,
                format!("legacy `evaluator: {kind}` is not supported; llm_judge is used"),
                Some("list evaluators under `execution.evaluators`".to_owned()),
            );
        }
    }

    /// The 4.x suite keys: metadata, defaults for cases, and keys agentv cannot honour.
    fn read_suite_v4_keys(&mut self, f: &mut Fields<'_>, diags: &mut Diagnostics) {
        if !f.known().contains(&"version") {
            // A sidecar has none of them.
            return;
        }
        let info = &mut self.settings.info;
        info.version = f.string("version", diags);
        info.author = f.string("author", diags);
        info.license = f.string("license", diags);
        info.category = f.string("category", diags);
        info.requires = f.take("requires").map(Node::to_json);
        if let Some(tags) = f.take("tags") {
            match tags.as_seq() {
                Some(items) => info.tags = items.iter().filter_map(Node::scalar_text).collect(),
                None => diags.error(
                    tags.pos,
                    format!("`tags` must be a list of strings, found {}", tags.type_name()),
                    None,
                ),
            }
        }
        let mut metadata = f.take("metadata").and_then(|n| object_of(n, "metadata", diags));
        if let Some(governance) = f.take("governance") {
            metadata
                .get_or_insert_with(Map::new)
                .insert("governance".to_owned(), governance.to_json());
        }
        self.defaults.metadata = metadata;
        self.defaults.input = f.take("input").cloned();
        self.defaults.input_files = f.take("input_files").cloned();
        let known = f.known();
        for (key, what) in NOT_HONOURED {
            if known.contains(key)
                && let Some(node) = f.take(key)
            {
                diags.warn(node.pos, not_honoured(key, what), None);
            }
        }
    }

    /// The 4.x `execution` keys of a suite.
    fn read_suite_execution(&mut self, ef: &mut Fields<'_>, diags: &mut Diagnostics) {
        self.defaults.threshold = ef.number("threshold", diags);
        self.settings.workers = ef.integer("workers", diags).and_then(|w| usize::try_from(w).ok());
        self.settings.cache = ef.boolean("cache", diags).unwrap_or(false);
        if let Some(node) = ef.take("cache_path") {
            diags.warn(
                node.pos,
                "`cache_path` is ignored: agentv caches under .agentv/cache",
                None,
            );
        }
        if let Some(node) = ef.take("targets") {
            self.workspace.target_hooks = Arc::from(super::workspace::target_hooks(node, &self.ws.cwd, diags));
            self.settings.matrix = node
                .as_seq()
                .unwrap_or_default()
                .iter()
                .filter_map(|t| t.scalar_text().or_else(|| t.get("name").and_then(Node::scalar_text)))
                .collect();
            diags.warn(
                node.pos,
                "`execution.targets` (a matrix run) is not supported by agentv yet: the suite runs once, on `--target` or `execution.target`",
                Some("run the suite once per target with `--target NAME`".to_owned()),
            );
        }
        if let Some(node) = ef.take("trials") {
            let count = node.get("count").and_then(Node::as_f64).unwrap_or(1.0);
            if count > 1.0 {
                diags.warn(
                    node.pos,
                    "`execution.trials` is not supported by agentv yet: each case runs once",
                    None,
                );
            }
        }
        for (key, what) in [
            ("budget_usd", "a suite cost budget"),
            ("fail_on_error", "stopping after the first execution error"),
        ] {
            if let Some(node) = ef.take(key) {
                diags.warn(node.pos, not_honoured(ef.written(key), what), None);
            }
        }
        if let Some(node) = ef.take("skip_defaults") {
            diags.warn(
                node.pos,
                "`skip_defaults` is read on cases only; here it is ignored",
                None,
            );
        }
    }

    /// A `workspace` value of this file (the suite's or a case's); `None` when it has errors.
    pub(super) fn read_workspace(
        &self,
        node: &Node,
        diags: &mut Diagnostics,
    ) -> Option<Option<crate::model::workspace::WorkspaceConfig>> {
        // The suite's tree: the repository holding the eval file; outside any repository, the
        // working directory when the eval file is under it, else the eval file's directory.
        let repo = self
            .ws
            .ancestors_to_root(&self.dir)
            .find(|d| d.join(".git").exists())
            .map(Path::to_path_buf);
        let root = match repo {
            Some(repo) => repo,
            None if self.dir.starts_with(&self.ws.cwd) => self.ws.cwd.clone(),
            None => self.dir.clone(),
        };
        let cx = super::workspace::Context {
            eval_dir: &self.dir,
            root: &root,
            cwd: &self.ws.cwd,
            env: self.env.as_deref(),
            generation: self.generation,
        };
        super::workspace::read(node, &cx, diags)
    }

    /// The tool settings of a suite or a case (`docs/tools.md`); a tools file is found as every
    /// file an eval names.
    pub(super) fn read_tool_use(&self, f: &mut Fields<'_>, diags: &mut Diagnostics) -> crate::model::ToolSettings {
        let find = |path: &str| self.ws.resolve_file(path, &self.dir);
        crate::tools::read::read_fields(f, &find, diags)
    }

    /// A grader list, read with the grader table.
    pub(super) fn graders(&self, node: &Node, diags: &mut Diagnostics) -> Option<Vec<ConfiguredGrader>> {
        let mut cx = ParseContext::new(&self.ws, &self.dir, diags)
            .with_generation(self.generation)
            .with_env(self.env.as_deref());
        parse_graders(node, &mut cx)
    }
}

/// The sidecar's tree; `None` (reported) when it cannot be read, or is empty.
fn read_sidecar(path: &Path, side: &mut Diagnostics) -> Option<Node> {
    let text = crate::config::source::read_text(path, "dataset sidecar", side)?;
    match parse_yaml(&text) {
        Err(e) => {
            side.yaml_syntax(&e);
            None
        }
        // An empty sidecar sets nothing.
        Ok(root) if root.is_null() => None,
        Ok(root) => Some(root),
    }
}

/// The warning for a key agentv reads but cannot honour.
pub(super) fn not_honoured(key: &str, what: &str) -> String {
    format!("`{key}` ({what}) is not supported by agentv, ignored")
}

/// A mapping as JSON; `None` (reported) for anything else.
pub(super) fn object_of(node: &Node, key: &str, diags: &mut Diagnostics) -> Option<Map<String, Value>> {
    match node.to_json() {
        Value::Object(map) => Some(map),
        Value::Null => None,
        _ => {
            diags.error(
                node.pos,
                format!("`{key}` must be a mapping, found {}", node.type_name()),
                None,
            );
            None
        }
    }
}

/// A 4.x suite's default name: the file name without `.eval.yaml` / `.yaml` (or `.yml`).
fn default_suite_name(file: &Path) -> String {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for suffix in [".eval.yaml", ".eval.yml", ".yaml", ".yml", ".jsonl"] {
        if let Some(stem) = name.strip_suffix(suffix).filter(|s| !s.is_empty()) {
            return stem.to_owned();
        }
    }
    if name.is_empty() { "eval".to_owned() } else { name }
}

/// AgentV 4.x suite names: lowercase letters, digits and dashes, at most 64.
fn valid_suite_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// One line of a JSONL file.
enum JsonlLine {
    Text(String),
    /// Not UTF-8: the column of the first bad byte.
    NotUtf8(u64),
    /// Longer than the cap on one line (`crate::report::max_line_bytes`): this many bytes,
    /// read without being kept.
    TooLong(u64),
    /// The file could not be read from this line on.
    Unreadable(std::io::Error),
}

/// The lines of a JSONL file, numbered from 1, without line endings (`\n` or `\r\n`) or a
/// byte-order mark. Reads one line at a time, so memory stays flat; a line over the cap on one
/// line is read to its end without being kept.
fn jsonl_lines(mut reader: impl BufRead) -> impl Iterator<Item = (u64, JsonlLine)> {
    let limit = crate::report::max_line_bytes();
    let mut failed = false;
    let mut line_no = 0u64;
    let mut bytes = Vec::new();
    std::iter::from_fn(move || {
        if failed {
            return None;
        }
        line_no += 1;
        let line = match crate::report::read_line_capped(&mut reader, &mut bytes, limit) {
            Ok(None) => return None,
            Err(e) => {
                failed = true;
                JsonlLine::Unreadable(e)
            }
            Ok(Some(crate::report::Capped::TooLong { bytes })) => JsonlLine::TooLong(bytes),
            Ok(Some(crate::report::Capped::Line)) => {
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

/// The error for a dataset line over the cap on one line.
fn too_long(bytes: u64) -> String {
    format!(
        "this line is {}, over the {} one case may take; the line is skipped",
        crate::report::size_text(bytes),
        crate::report::size_text(crate::report::max_line_bytes())
    )
}

fn too_long_help() -> String {
    format!(
        "keep large inputs in files (`{{type: file, value: path}}`), or set {}=<MiB> to allow longer lines",
        crate::report::MAX_LINE_ENV
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Segment;
    use crate::model::{Content, Role};

    use crate::load::test_project::{errors, load};

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
    fn outside_a_repository_a_template_beside_the_suite_under_the_working_directory_loads() {
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(tmp.path().join("tpl")).expect("tpl");
        std::fs::create_dir_all(tmp.path().join("evals")).expect("evals");
        let eval = "workspace: {template: ../tpl}\ntests:\n  - {id: a, input: q, criteria: x}\n";
        std::fs::write(tmp.path().join("evals/e.yaml"), eval).expect("write");
        let ws = Workspace::from_cwd(tmp.path().to_path_buf());
        let suite = load_eval_file(Path::new("evals/e.yaml"), &ws);
        assert_eq!(errors(&suite), Vec::<String>::new());

        let escaping = eval.replace("../tpl", "../../tpl");
        std::fs::write(tmp.path().join("evals/e.yaml"), escaping).expect("write");
        let suite = load_eval_file(Path::new("evals/e.yaml"), &ws);
        assert!(
            errors(&suite)
                .iter()
                .any(|e| e.contains("leaves the suite's directory")),
            "{:?}",
            errors(&suite)
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
