//! What the grader table holds and what crosses the `Grader` trait: a row per grader type,
//! the parsed grader, what it needs from a case, what it is given to grade and what it
//! concludes. See `docs/architecture.md#grader-table`.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use agentv_eval_sdk::Assertion;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::config::{Diagnostics, Fields, KeyTable, Node, Pos};
use crate::context::RunContext;
use crate::env::Env;
pub use crate::model::Generation;
use crate::model::{EvalCase, ExecutionMetrics, OutputMessage, TraceEvent, TraceSummary};
use crate::paths::Workspace;
use crate::providers::ResolvedTarget;

/// One row of the grader table.
pub struct GraderEntry {
    /// The `type` written in results.
    pub name: &'static str,
    /// The spellings a file of each generation may use; they decide a file's generation
    /// (`docs/architecture.md#generations`).
    pub names: Names,
    /// One line for the schema and the documentation.
    pub doc: &'static str,
    /// Its own keys; the common ones (`name`, `type`, `weight`) are read by the list parser.
    pub keys: &'static KeyTable,
    /// Reads its configuration from `fields` (positioned on the grader's mapping); `None` after
    /// reporting why in the context's diagnostics.
    pub parse: fn(&mut Fields<'_>, &mut ParseContext<'_>) -> Option<Arc<dyn Grader>>,
}

impl GraderEntry {
    /// The `type` written in results.
    pub fn type_name(&self) -> &'static str {
        self.name
    }

    /// The spellings AgentV eval files (2.x and 4.x) may use: the results type first, then the
    /// others as listed, each once (for schemas and messages).
    pub fn agentv_names(&self) -> Vec<&'static str> {
        let mut out = vec![self.name];
        for name in self.names.v2.iter().chain(self.names.v4) {
            if !out.contains(name) {
                out.push(name);
            }
        }
        out
    }
}

/// The spellings of one grader type, per file generation. A spelling listed only for 4.x makes
/// a file that uses it a 4.x file; one listed for 2.x never does, so adding a kebab-case alias
/// to a 2.x grader leaves 2.x files where they are (`docs/architecture.md#generations`). A 4.x
/// file may also write a 4.x spelling in snake_case (`llm_grader` for `llm-grader`).
#[derive(Debug, Clone, Copy)]
pub struct Names {
    /// AgentV 2.x eval files (and agentv's own graders in them).
    pub v2: &'static [&'static str],
    /// AgentV 4.x eval files.
    pub v4: &'static [&'static str],
    /// promptfoo configs (`assert` entries); a `not-` prefix is read by the list parser.
    pub promptfoo: &'static [&'static str],
}

impl Names {
    /// No spelling in any generation.
    pub const NONE: Self = Self {
        v2: &[],
        v4: &[],
        promptfoo: &[],
    };

    /// The spellings a file of `generation` may use.
    pub fn of(&self, generation: Generation) -> &'static [&'static str] {
        match generation {
            Generation::V2 => self.v2,
            Generation::V4 => self.v4,
            Generation::Promptfoo => self.promptfoo,
        }
    }

    /// Every spelling of every generation (with repeats).
    pub fn all(&self) -> impl Iterator<Item = &'static str> + use<> {
        self.v2.iter().chain(self.v4).chain(self.promptfoo).copied()
    }

    /// Whether a file of `generation` may write `written`: exactly, or for 4.x also in
    /// snake_case.
    pub fn spells(&self, generation: Generation, written: &str) -> bool {
        let list = self.of(generation);
        list.contains(&written)
            || (generation == Generation::V4
                && written.contains('_')
                && list.iter().any(|n| n.replace('-', "_") == written))
    }
}

impl fmt::Debug for GraderEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraderEntry")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// A grader with its configuration. Implementations must not panic on any answer: failures
/// become [`Grade::failed`].
pub trait Grader: Send + Sync + fmt::Debug {
    /// What every case it grades must have; the loader reports a case that lacks it.
    fn needs(&self) -> Vec<Need> {
        Vec::new()
    }

    /// The name its results carry when the list gives none: 4.x derives one from the
    /// configuration (`contains-Paris`, `regex-<pattern>`); `None` means the type.
    fn default_name(&self) -> Option<String> {
        None
    }

    /// Whether it reads the answer's token log probabilities (`perplexity`): an
    /// OpenAI-compatible target asks for them only for a case with such a grader.
    fn wants_logprobs(&self) -> bool {
        false
    }

    /// Grades one answer.
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade>;

    /// Set for an assertion graded across the rows of a promptfoo test (`select-best`,
    /// `max-score`): the run compares the rows once they are all answered.
    fn across_rows(&self) -> Option<&dyn super::across_rows::AcrossRows> {
        None
    }
}

/// A part of a case a grader cannot do without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub field: CaseField,
    /// Why, for the message ("its default prompt grades the answer against it").
    pub why: &'static str,
    /// What would fix it.
    pub fix: &'static str,
}

/// The parts of a case a grader may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseField {
    ExpectedOutcome,
}

impl CaseField {
    /// The key that holds it in a case.
    pub fn key(self) -> &'static str {
        match self {
            Self::ExpectedOutcome => "expected_outcome",
        }
    }
}

/// A grader as a list configures it: the common keys and the grader itself.
#[derive(Debug, Clone)]
pub struct ConfiguredGrader {
    pub name: String,
    /// Share in the case score (≥ 0; 0 excludes the grader).
    pub weight: f64,
    /// A gate: when this grader scores below `min_score` (else the case's threshold), the case
    /// scores 0 (`docs/architecture.md#generations`).
    pub required: bool,
    /// The gate's threshold; without `required` it does nothing (as in AgentV 4.x).
    pub min_score: Option<f64>,
    /// Invert the result: score `1 − s`, pass and fail swapped, hits and misses swapped. Applied
    /// by the case score, not by a grader made of graders.
    pub negate: bool,
    /// promptfoo's `metric`: the named score this grader adds to (rendered with the test's
    /// `vars`).
    pub metric: Option<String>,
    pub entry: &'static GraderEntry,
    pub grader: Arc<dyn Grader>,
}

impl ConfiguredGrader {
    /// The `type` written in results.
    pub fn type_name(&self) -> &'static str {
        self.entry.type_name()
    }
}

/// What parsing a grader may use besides its own keys.
pub struct ParseContext<'p> {
    pub ws: &'p Workspace,
    /// The eval file's directory: relative paths in a grader resolve against it.
    pub eval_dir: &'p Path,
    pub diags: &'p mut Diagnostics,
    /// The file's generation (`docs/architecture.md#generations`); 2.x until the loader says.
    pub file_generation: Generation,
    /// The `type` of the grader being parsed, as written.
    pub(crate) current: Option<String>,
    /// A promptfoo assertion's `not-` prefix, until the grader being parsed takes it to invert
    /// its own check ([`ParseContext::take_inverse`]); the list parser negates the grade of a
    /// grader that leaves it.
    pub(crate) inverse: bool,
    /// Variables for `${{ VAR }}` in files a list includes (`{include: NAME}`, 4.x).
    pub env: Option<&'p Env>,
}

impl<'p> ParseContext<'p> {
    pub fn new(ws: &'p Workspace, eval_dir: &'p Path, diags: &'p mut Diagnostics) -> Self {
        Self {
            ws,
            eval_dir,
            diags,
            file_generation: Generation::V2,
            current: None,
            inverse: false,
            env: None,
        }
    }

    /// The same context for a file of `generation` (`docs/architecture.md#generations`).
    pub fn with_generation(self, generation: Generation) -> Self {
        Self {
            file_generation: generation,
            ..self
        }
    }

    /// The same context with the variables `${{ VAR }}` references in included files read.
    pub fn with_env(self, env: Option<&'p Env>) -> Self {
        Self { env, ..self }
    }

    /// A nested grader list (the members of a grader made of graders). `None` when any entry
    /// is invalid (reported).
    pub fn graders(&mut self, node: &Node) -> Option<Vec<ConfiguredGrader>> {
        let outer = self.current.take();
        let inverse = std::mem::take(&mut self.inverse);
        let graders = super::list::parse_graders(node, self);
        self.current = outer;
        self.inverse = inverse;
        graders
    }

    /// The generation whose semantics the grader being parsed follows: its file's.
    pub fn generation(&self) -> Generation {
        self.file_generation
    }

    /// Whether the promptfoo assertion being parsed is written `not-<type>`; a grader that
    /// calls this inverts its own check (with promptfoo's texts), and the list parser then
    /// leaves its grade as it is.
    pub fn take_inverse(&mut self) -> bool {
        std::mem::take(&mut self.inverse)
    }

    /// Where a check whose failure drops only this grader starts (see
    /// [`ParseContext::drop_grader_if_errors`]).
    pub fn mark(&self) -> usize {
        self.diags.len()
    }

    /// Says of the errors reported since `mark` that the grader cannot be used, so its case is
    /// invalid: a case is never graded without a grader it asked for
    /// (`docs/architecture.md#unknown-keys`). True when there were any.
    pub fn drop_grader_if_errors(&mut self, mark: usize) -> bool {
        self.diags.annotate_errors_since(mark, GRADER_DROPPED)
    }

    /// An error at `pos`: the grader cannot be used because of `why`, so its case is invalid.
    pub fn drop_grader(&mut self, pos: Pos, why: impl Into<String>, fix: Option<String>) {
        self.diags.error(pos, format!("{}{GRADER_DROPPED}", why.into()), fix);
    }
}

/// What a grader problem means for the case, added to its message.
pub const GRADER_DROPPED: &str = "; the grader cannot be used, so the case is invalid";

/// Everything known about one answered case.
pub struct GradeContext<'a> {
    pub case: &'a EvalCase,
    pub attempt: u32,
    pub candidate_answer: &'a str,
    pub output_messages: &'a [OutputMessage],
    pub trace: &'a [TraceEvent],
    pub trace_summary: &'a TraceSummary,
    pub metrics: &'a ExecutionMetrics,
    /// Why the model stopped (`stop`, `length`, `tool_calls`), when the provider says.
    pub finish_reason: Option<&'a str>,
    /// The answer's token log probabilities, when they were asked for and returned.
    pub logprobs: Option<&'a [f64]>,
    pub target: &'a ResolvedTarget,
    pub run: &'a RunContext,
    /// The case's workspace after the target ran, when it has one (`docs/workspaces.md`).
    pub workspace: Option<&'a crate::model::workspace::WorkspaceView>,
}

/// A 4.x grader's own verdict, when it decides one other than its score's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradeVerdict {
    Pass,
    Fail,
    /// The grader could not grade (an LLM reply that never parsed): AgentV 4.x makes the case
    /// an execution error.
    Skip,
}

impl GradeVerdict {
    /// 4.x's rule for a score: pass at 0.8 or more.
    pub fn of_score(score: f64) -> Self {
        if score >= 0.8 { Self::Pass } else { Self::Fail }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Skip => "skip",
        }
    }
}

impl GradeContext<'_> {
    /// The generation of the file the case was written in.
    pub fn generation(&self) -> Generation {
        self.case.generation
    }

    /// Whether the case is graded strictly (`--strict`, or its suite's `strict: true`): output
    /// a generation's lenient rule would still grade is a grader error instead.
    pub fn strict(&self) -> bool {
        self.run.strict || self.case.strict
    }
}

/// What one grader concluded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grade {
    pub score: f64,
    pub hits: Vec<String>,
    pub misses: Vec<String>,
    /// What a 4.x grader checked, in order; the hits and misses hold their texts.
    pub assertions: Vec<Assertion>,
    /// A verdict the grader decided itself (a failed required rubric, a composite's threshold,
    /// a skip); `None` means the score's.
    pub verdict: Option<GradeVerdict>,
    pub reasoning: Option<String>,
    pub details: Option<Map<String, Value>>,
    /// Set when the grader could not grade (`docs/architecture.md#grader-errors`).
    pub error: Option<String>,
    /// The error is also listed as the miss `Evaluator '<name>' failed: <error>`, as the spec
    /// reports a grader that crashed. Invalid judge output is not: the spec wants it scored 0
    /// with empty hits and misses, the reason kept in `error` only.
    pub error_is_miss: bool,
    /// The grading process crashed (died by a signal, exited non-zero with output on stderr,
    /// could not start, timed out): a grader error in either file generation, where another
    /// 4.x failure only scores 0 (`docs/architecture.md#grader-errors`).
    pub crashed: bool,
    /// What was sent to a judge, for the results file.
    pub request: Option<Value>,
}

impl Grade {
    /// A grade for a grader that could not grade: score 0 and `error` set, no miss.
    pub fn failed(error: impl Into<String>) -> Self {
        Self {
            error: Some(error.into()),
            ..Self::default()
        }
    }

    /// Like [`Grade::failed`], for a grader that crashed (could not start, exited non-zero,
    /// timed out): the error is also listed as a miss.
    pub fn crashed(error: impl Into<String>) -> Self {
        Self {
            error_is_miss: true,
            crashed: true,
            ..Self::failed(error)
        }
    }

    /// A score with its hits and misses.
    pub fn scored(score: f64, hits: Vec<String>, misses: Vec<String>) -> Self {
        Self {
            score,
            hits,
            misses,
            ..Self::default()
        }
    }

    /// A 4.x result: a score and its assertions; passed ones are the hits, failed ones the
    /// misses.
    pub fn assessed(score: f64, assertions: Vec<Assertion>) -> Self {
        let (mut hits, mut misses) = (Vec::new(), Vec::new());
        for a in &assertions {
            if a.passed { &mut hits } else { &mut misses }.push(a.text.clone());
        }
        Self {
            score,
            hits,
            misses,
            assertions,
            ..Self::default()
        }
    }

    /// A grader that could not grade and is skipped (4.x verdict `skip`, score 0): `reason` is
    /// its one failed assertion and its `error`.
    pub fn skipped(reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Self {
            verdict: Some(GradeVerdict::Skip),
            error: Some(reason.clone()),
            ..Self::assessed(0.0, vec![Assertion::new(reason, false)])
        }
    }

    /// A 4.x grader that failed on its own terms (a script that crashed, an agent grader whose
    /// reply did not parse): score 0, verdict fail, `reason` as its one failed assertion and
    /// its `error`, so reports can tell it from a low grade.
    pub fn failed_with(reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Self {
            error: Some(reason.clone()),
            verdict: Some(GradeVerdict::Fail),
            ..Self::assessed(0.0, vec![Assertion::new(reason, false)])
        }
    }

    /// The same grade with the verdict `verdict`.
    pub fn with_verdict(self, verdict: GradeVerdict) -> Self {
        Self {
            verdict: Some(verdict),
            ..self
        }
    }

    /// The assertions of this grade; for a 2.x grader (hits and misses only), its hits as
    /// passed assertions then its misses as failed ones, as 4.x reads 2.x results.
    pub fn assertion_list(&self) -> Vec<Assertion> {
        if !self.assertions.is_empty() {
            return self.assertions.clone();
        }
        let hits = self.hits.iter().map(|h| Assertion::new(h.clone(), true));
        hits.chain(self.misses.iter().map(|m| Assertion::new(m.clone(), false)))
            .collect()
    }

    /// The verdict in 4.x terms: the grader's own, else pass at a score of 0.8 or more.
    pub fn verdict4(&self) -> GradeVerdict {
        self.verdict.unwrap_or_else(|| GradeVerdict::of_score(self.score))
    }

    /// A pass/fail check with one assertion: score 1 and `pass`, or 0 and `fail`.
    pub fn check(passed: bool, text: impl Into<String>) -> Self {
        let verdict = if passed { GradeVerdict::Pass } else { GradeVerdict::Fail };
        Self::assessed(f64::from(u8::from(passed)), vec![Assertion::new(text, passed)]).with_verdict(verdict)
    }

    /// Rewrites hits and misses from the assertions.
    pub(crate) fn list_assertions(&mut self) {
        let (passed, failed): (Vec<&Assertion>, Vec<&Assertion>) = self.assertions.iter().partition(|a| a.passed);
        self.hits = passed.into_iter().map(|a| a.text.clone()).collect();
        self.misses = failed.into_iter().map(|a| a.text.clone()).collect();
    }
}
