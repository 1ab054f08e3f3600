//! One line of the results JSONL file (`docs/architecture.md#results`). Absent values are omitted,
//! never `null`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Assertion, ExecutionMetrics, OutputMessage, TokenUsage, TraceEvent, TraceSummary};

/// How a score reads. A 2.x file's verdicts are `pass` ≥ 0.8, `borderline` ≥ 0.6, else `fail`
/// ([`Verdict::from_score`]); a 4.x file's are `pass` or `fail` against a threshold
/// ([`Verdict::pass_fail`]), and a 4.x grader that could not reach a conclusion says `skip`
/// (`docs/architecture.md#generations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Borderline,
    Fail,
    /// A 4.x grader could not grade (its judge's reply never parsed): the case scores 0.
    Skip,
}

impl Verdict {
    /// The 2.x verdict of a score.
    pub fn from_score(score: f64) -> Self {
        if score >= 0.8 {
            Self::Pass
        } else if score >= 0.6 {
            Self::Borderline
        } else {
            Self::Fail
        }
    }

    /// The 4.x verdict of a score: `pass` at or above `threshold`, else `fail`.
    pub fn pass_fail(score: f64, threshold: f64) -> Self {
        if score >= threshold { Self::Pass } else { Self::Fail }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Borderline => "borderline",
            Self::Fail => "fail",
            Self::Skip => "skip",
        }
    }

    /// The verdict of the negated score: pass and fail swap, the others stay.
    pub fn negated(self) -> Self {
        match self {
            Self::Pass => Self::Fail,
            Self::Fail => Self::Pass,
            other => other,
        }
    }
}

/// One grader's entry in a record's `scores` list: the shape an AgentV 4.x reader expects
/// (`docs/results.md#reading-agentv-results-as-an-agentv-4x-index`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraderScore {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub score: f64,
    pub weight: f64,
    pub verdict: Verdict,
    pub assertions: Vec<Assertion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Map<String, Value>>,
}

impl From<&EvaluatorResult> for GraderScore {
    /// The grader's own assertions, else its hits (passed) then its misses (failed).
    fn from(r: &EvaluatorResult) -> Self {
        Self {
            name: r.name.clone(),
            kind: r.kind.clone(),
            score: r.score,
            weight: r.weight,
            verdict: r.verdict,
            assertions: if r.assertions.is_empty() {
                assertions_of(&r.hits, &r.misses)
            } else {
                r.assertions.clone()
            },
            details: r.details.clone(),
        }
    }
}

/// Hits as passed assertions, then misses as failed ones (the mapping the reference gives for
/// 2.x results, `agentv-4.md` §3.4).
pub fn assertions_of(hits: &[String], misses: &[String]) -> Vec<Assertion> {
    hits.iter()
        .map(|h| Assertion::new(h.clone(), true))
        .chain(misses.iter().map(|m| Assertion::new(m.clone(), false)))
        .collect()
}

/// Whether a case was run and graded (`docs/architecture.md#grader-errors`). A case that ran and
/// was graded low is `ok`: the status says whether the score can be trusted, the verdict what it
/// says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// The target answered and every evaluator graded.
    Ok,
    /// The target could not answer (error, timeout, failed healthcheck); nothing was graded.
    ExecutionError,
    /// The target answered but an evaluator could not grade (its result carries `error`).
    GraderError,
    /// The case was not run: its definition has errors (the record's `error` holds them).
    Invalid,
}

impl ExecutionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ExecutionError => "execution_error",
            Self::GraderError => "grader_error",
            Self::Invalid => "invalid",
        }
    }
}

/// The miss listed for an evaluator that could not grade, as the spec words it:
/// `Evaluator '<name>' failed: <error>`.
pub fn failure_miss(name: &str, error: &str) -> String {
    format!("Evaluator '{name}' failed: {error}")
}

/// What one evaluator said about one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluatorResult {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub score: f64,
    pub weight: f64,
    pub verdict: Verdict,
    pub hits: Vec<String>,
    pub misses: Vec<String>,
    /// What a 4.x grader checked, each with its outcome and evidence, in order (the hits and
    /// misses are their texts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assertions: Vec<Assertion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Map<String, Value>>,
    /// Set when the evaluator could not grade (as opposed to grading 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the evaluator sent to a model or process, for debugging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluator_provider_request: Option<Value>,
}

impl EvaluatorResult {
    /// A result for an evaluator that could not grade: score 0, verdict fail, `error` set and
    /// repeated as a miss so it shows in plain hit/miss listings.
    pub fn failed(name: &str, kind: &str, weight: f64, error: impl Into<String>) -> Self {
        let error = error.into();
        Self {
            name: name.to_owned(),
            kind: kind.to_owned(),
            score: 0.0,
            weight,
            verdict: Verdict::Fail,
            hits: Vec::new(),
            misses: vec![failure_miss(name, &error)],
            assertions: Vec::new(),
            reasoning: None,
            details: None,
            error: Some(error),
            evaluator_provider_request: None,
        }
    }
}

/// One graded case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluationRecord {
    /// RFC 3339 time at which grading finished.
    pub timestamp: String,
    pub eval_id: String,
    pub dataset: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    pub target: String,
    /// 1 for the first try; higher when the case was retried after a timeout; 0 for a case
    /// that was not run.
    pub attempt: u32,
    /// Which repeat of the case this is (1 to K), when the run repeats every case K times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    /// Whether the case ran and was graded; readers need not infer it from `error`.
    pub execution_status: ExecutionStatus,
    pub score: f64,
    pub verdict: Verdict,
    pub hits: Vec<String>,
    pub misses: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    pub candidate_answer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lm_provider_request: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_provider_request: Option<Value>,
    pub evaluator_results: Vec<EvaluatorResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_summary: Option<TraceSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_metrics: Option<ExecutionMetrics>,
    /// Set when the target could not answer; the case then scores 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why a case was not run at all ([`NOT_RUN_BUDGET`]); its status is then
    /// `execution_error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason_code: Option<String>,
    /// The messages the target produced, tool calls included, as it reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_messages: Option<Vec<OutputMessage>>,
    /// The full trace of the case: every step in order, tool calls with their inputs, outputs,
    /// timestamps and durations (the events a code judge receives as `candidate_trace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Vec<TraceEvent>>,
    /// Set when `trace` and `output_messages` were cut to keep the record within its size cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncation>,
    /// A workspace kept after the run (a failed case's, or every one with
    /// `--keep-workspaces`), or the shared workspace the target failed in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_path: Option<String>,
    /// What the case's workspace did: the changes and the hooks (`docs/results.md#workspace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceRecord>,
    /// The keys an AgentV 4.x reader looks for (`docs/results.md`), beside ours.
    #[serde(flatten)]
    pub v4: V4Fields,
}

/// What a case's workspace did: the summary of the target's changes, the diff itself (cut to
/// the record's cap), and every hook that ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceRecord {
    pub files_changed: u64,
    pub files_created: u64,
    pub files_deleted: u64,
    pub lines_added: u64,
    pub lines_removed: u64,
    /// The unified diff against the workspace's starting state; absent when nothing changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_changes: Option<String>,
    /// Set when `file_changes` was cut: the size of the whole diff in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_changes_bytes: Option<u64>,
    /// Each hook that ran: `{hook, exit_code?, ok, duration_ms, stdout?, stderr?, error?}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<Value>,
    /// Problems that changed nothing in the score (an `after_each` hook that failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The `failure_reason_code` of a case not run because the run's cost reached `--budget-usd`
/// (the code AgentV 4.x writes for the same reason).
pub const NOT_RUN_BUDGET: &str = "budget_exceeded";

impl EvaluationRecord {
    /// True for a record that stands for a case that was never run (its target was not
    /// called), as opposed to one whose target failed.
    pub fn is_not_run(&self) -> bool {
        self.failure_reason_code.as_deref() == Some(NOT_RUN_BUDGET)
    }

    /// The repeat this record is: its `trial`, 1 when the run did not repeat cases.
    pub fn trial_number(&self) -> u32 {
        self.trial.unwrap_or(1)
    }
}

/// What was cut from a record's `trace` and `output_messages` to keep it within its cap.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truncation {
    /// The cap: the most bytes of JSON `trace` and `output_messages` may take together.
    pub max_bytes: u64,
    /// How many bytes of JSON they took before cutting.
    pub original_bytes: u64,
    /// Longer strings inside them were cut to this many bytes (and end with `…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strings_cut_to: Option<u64>,
    /// `output_messages` was left out (the trace keeps the tool calls, `candidate_answer` the
    /// answer).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub output_messages_dropped: bool,
    /// Trace events left out at the end.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trace_events_dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The keys of an AgentV 4.x `index.jsonl` row that a 4.x reader (its `compare`, dashboards)
/// needs and our keys do not already give under the same name
/// (`docs/results.md#reading-agentv-results-as-an-agentv-4x-index`). Filled from the rest of the
/// record when it is written; absent in files written before they existed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct V4Fields {
    /// `eval_id` under its 4.x name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_id: Option<String>,
    /// `dataset` under its 4.x name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    /// One entry per grader, as `evaluator_results` in the 4.x shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scores: Option<Vec<GraderScore>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<TokenUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// The case's merged `metadata` (4.x files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl EvaluationRecord {
    /// A record of case `eval_id` of `dataset` against `target` with nothing in it yet: status
    /// `ok`, score 0, verdict `fail`, every list empty and every optional key absent.
    pub fn empty(eval_id: String, dataset: String, target: String) -> Self {
        Self {
            timestamp: String::new(),
            eval_id,
            dataset,
            conversation_id: None,
            target,
            attempt: 0,
            trial: None,
            execution_status: ExecutionStatus::Ok,
            score: 0.0,
            verdict: Verdict::Fail,
            hits: Vec::new(),
            misses: Vec::new(),
            reasoning: None,
            candidate_answer: String::new(),
            lm_provider_request: None,
            agent_provider_request: None,
            evaluator_results: Vec::new(),
            trace_summary: None,
            execution_metrics: None,
            error: None,
            failure_reason_code: None,
            output_messages: None,
            trace: None,
            truncated: None,
            workspace_path: None,
            workspace: None,
            v4: V4Fields::default(),
        }
    }

    /// Fills the 4.x keys from the rest of the record (and the case's `metadata`), then keeps
    /// each grader's evidence whole in one place only ([`EvaluationRecord::keep_evidence_once`]).
    pub fn fill_v4_fields(&mut self, metadata: Option<Map<String, Value>>) {
        let metrics = self.execution_metrics.as_ref();
        self.v4 = V4Fields {
            test_id: Some(self.eval_id.clone()),
            suite: Some(self.dataset.clone()),
            scores: Some(self.evaluator_results.iter().map(repeated_score).collect()),
            token_usage: metrics.and_then(|m| m.token_usage),
            cost_usd: metrics.and_then(|m| m.cost_usd),
            duration_ms: metrics.and_then(|m| m.duration_ms),
            metadata,
        };
        self.keep_evidence_once();
    }

    /// A grader's evidence is written whole once: in `evaluator_results`, as its `assertions`
    /// when it has them (4.x graders), else as its `hits` and `misses`. The lists that repeat it
    /// (the case's `hits` and `misses`, `scores[].assertions`, a 4.x grader's `hits` and
    /// `misses`) keep at most [`REPEATED_EVIDENCE_BYTES`] of text each and then one entry that
    /// says how many more there are and where (`docs/results.md#evidence-is-stored-once`), so a
    /// judge that returns a huge list does not make a record several times its size.
    pub fn keep_evidence_once(&mut self) {
        cap_strings(&mut self.hits, "hits", "every grader's hits are in evaluator_results");
        cap_strings(
            &mut self.misses,
            "misses",
            "every grader's misses are in evaluator_results",
        );
        for r in self.evaluator_results.iter_mut().filter(|r| !r.assertions.is_empty()) {
            cap_strings(&mut r.hits, "hits", "the grader's assertions hold them all");
            cap_strings(&mut r.misses, "misses", "the grader's assertions hold them all");
        }
    }
}

/// The most text a list that repeats a grader's evidence keeps (see
/// [`EvaluationRecord::keep_evidence_once`]).
pub const REPEATED_EVIDENCE_BYTES: usize = 16 * 1024;

/// How many of `texts` fit in [`REPEATED_EVIDENCE_BYTES`].
fn fitting<'a>(texts: impl Iterator<Item = &'a str>) -> usize {
    let mut used = 0;
    texts
        .take_while(|t| {
            used += t.len();
            used <= REPEATED_EVIDENCE_BYTES
        })
        .count()
}

/// Cuts a list that repeats evidence to what fits, then says what was left out and where.
fn cap_strings(list: &mut Vec<String>, what: &str, whole: &str) {
    let keep = fitting(list.iter().map(String::as_str));
    if keep < list.len() {
        let more = list.len() - keep;
        list.truncate(keep);
        list.push(format!("… {more} more {what} not repeated here: {whole}"));
    }
}

/// A grader's 4.x `scores` entry: its own assertions, else its hits as passed then its misses
/// as failed, as many as fit in [`REPEATED_EVIDENCE_BYTES`] (the rest stays in
/// `evaluator_results` alone; `details.assertions_not_repeated` counts it).
fn repeated_score(r: &EvaluatorResult) -> GraderScore {
    let (assertions, total): (Vec<Assertion>, usize) = if r.assertions.is_empty() {
        let keep = fitting(r.hits.iter().chain(&r.misses).map(String::as_str));
        let all = r
            .hits
            .iter()
            .map(|h| Assertion::new(h.clone(), true))
            .chain(r.misses.iter().map(|m| Assertion::new(m.clone(), false)));
        (all.take(keep).collect(), r.hits.len() + r.misses.len())
    } else {
        let keep = fitting(r.assertions.iter().map(|a| a.text.as_str()));
        (r.assertions[..keep].to_vec(), r.assertions.len())
    };
    let mut details = r.details.clone();
    if assertions.len() < total {
        details
            .get_or_insert_with(Map::new)
            .insert("assertions_not_repeated".into(), Value::from(total - assertions.len()));
    }
    GraderScore {
        name: r.name.clone(),
        kind: r.kind.clone(),
        score: r.score,
        weight: r.weight,
        verdict: r.verdict,
        assertions,
        details,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_thresholds() {
        for (score, want) in [
            (1.0, "pass"),
            (0.8, "pass"),
            (0.79, "borderline"),
            (0.6, "borderline"),
            (0.59, "fail"),
            (0.0, "fail"),
        ] {
            assert_eq!(Verdict::from_score(score).as_str(), want, "{score}");
        }
    }

    #[test]
    fn execution_status_is_written_in_snake_case() {
        for (status, want) in [
            (ExecutionStatus::Ok, "ok"),
            (ExecutionStatus::ExecutionError, "execution_error"),
            (ExecutionStatus::GraderError, "grader_error"),
            (ExecutionStatus::Invalid, "invalid"),
        ] {
            assert_eq!(serde_json::to_value(status).expect("serializes"), want);
            assert_eq!(status.as_str(), want);
        }
    }

    #[test]
    fn judge_hits_are_stored_once_in_a_record() {
        let hits: Vec<String> = (0..200_000)
            .map(|i| format!("hit number {i:06} with some text"))
            .collect();
        let mut grader = EvaluatorResult::failed("big", "code_judge", 1.0, "x");
        grader.error = None;
        grader.hits = hits.clone();
        grader.misses = vec!["one miss".into()];
        let mut small = EvaluatorResult::failed("small", "keywords", 1.0, "x");
        small.error = None;
        small.misses = vec!["missing Paris".into()];
        let record: EvaluationRecord = serde_json::from_value(serde_json::json!({
            "timestamp": "t", "eval_id": "a", "dataset": "d", "target": "m", "attempt": 1,
            "execution_status": "ok", "score": 0.9, "verdict": "pass", "hits": hits,
            "misses": ["one miss", "missing Paris"], "candidate_answer": "", "evaluator_results": []
        }))
        .expect("record");
        let mut record = EvaluationRecord {
            evaluator_results: vec![grader, small],
            ..record
        };
        record.fill_v4_fields(None);
        let list_bytes = serde_json::to_string(&hits).expect("json").len();
        let record_bytes = serde_json::to_string(&record).expect("json").len();
        assert!(
            record_bytes < list_bytes + 4 * REPEATED_EVIDENCE_BYTES,
            "a {list_bytes}-byte list makes a {record_bytes}-byte record"
        );
        assert_eq!(
            record.evaluator_results[0].hits, hits,
            "kept whole where the grader put it"
        );
        assert!(record.hits.len() < 1000);
        assert!(
            record.hits.last().is_some_and(
                |m| m.ends_with("more hits not repeated here: every grader's hits are in evaluator_results")
            ),
            "{:?}",
            record.hits.last()
        );
        assert_eq!(
            record.misses,
            ["one miss", "missing Paris"],
            "small lists are repeated whole"
        );
        let scores = record.v4.scores.as_ref().expect("scores");
        assert_eq!(scores[1].assertions.len(), 1);
        let big = &scores[0];
        assert!(big.assertions.len() < 1000);
        let left = big.details.as_ref().and_then(|d| d.get("assertions_not_repeated"));
        assert_eq!(
            left.and_then(Value::as_u64),
            Some((200_001 - big.assertions.len()) as u64)
        );
    }

    #[test]
    fn failed_result_carries_error_and_miss() {
        let r = EvaluatorResult::failed("kw", "code_judge", 2.0, "boom");
        let v = serde_json::to_value(&r).expect("serializes");
        assert_eq!(v["score"], 0.0);
        assert_eq!(v["verdict"], "fail");
        assert_eq!(v["error"], "boom");
        assert_eq!(v["weight"], 2.0);
        assert_eq!(v["misses"][0], "Evaluator 'kw' failed: boom");
        assert!(v.get("details").is_none());
    }
}
