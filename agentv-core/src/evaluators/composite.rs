//! `composite`: graders run together (in parallel) and combined by an aggregator (reference
//! §2.7): `weighted_average`, `threshold`, a `code-grader` program or an `llm-grader`. Members
//! may be composites themselves.
//!
//! As in AgentV 4.x (quirk 7), a member needs its own `name` and a built-in `type` spelled in
//! kebab-case (a 4.x file), and its `weight`, `required` and `negate` are ignored: weights
//! come from the aggregator only.

use std::path::PathBuf;
use std::sync::Arc;

use agentv_eval_sdk::Assertion;
use futures::future::{BoxFuture, join_all};
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Map, Value, json};

use super::llm_prompt::{FREEFORM_SYSTEM, js_number};
use super::llm_reply;
use super::{
    ConfiguredGrader, Generation, Grade, GradeContext, GradeVerdict, Grader, GraderEntry, Names, Need, ParseContext,
};
use crate::config::{Fields, Key, KeyTable, Kind, Node, NodeValue, NumberRange, describe};
use crate::process::{self, ProcessSpec};
use crate::providers::ProviderRequest;

mod aggregator_v2;

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "composite",
    names: Names {
        v2: &["composite"],
        v4: &["composite"],
        promptfoo: &[],
    },
    doc: "Runs its member graders together and combines their results with an aggregator.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new(
        "assertions",
        Kind::Ref("graders"),
        "The member graders; each needs a `name` and a kebab-case `type`.",
    )
    .aliases(&["assert", "evaluators"]),
    Key::new(
        "aggregator",
        Kind::Object(&AGGREGATOR_KEYS),
        "How member results combine: weighted_average, threshold, code-grader or llm-grader.",
    ),
];
const KEYS: KeyTable = KeyTable::new("composite", "A composite grader.", &[OWN]);

const AGGREGATOR_TYPES: &[&str] = &[
    "weighted_average",
    "threshold",
    "code-grader",
    "code_grader",
    "llm-grader",
    "llm_grader",
];

const AGGREGATOR_OWN: &[Key] = &[
    Key::new("type", Kind::Enum(AGGREGATOR_TYPES), "The aggregator.").required(),
    Key::new(
        "weights",
        Kind::Map(&Kind::Number(NumberRange::NON_NEGATIVE)),
        "weighted_average: each member's weight by name (default 1).",
    ),
    Key::new(
        "threshold",
        Kind::Number(NumberRange { min: 0.0, max: 1.0 }),
        "threshold: the share of passing members needed to pass.",
    ),
    Key::new(
        "path",
        Kind::Text,
        "code-grader: a shell command reading `{\"results\": {member: result}}` on stdin and printing `{score, verdict?, assertions?}`.",
    ),
    Key::new(
        "cwd",
        Kind::Text,
        "code-grader: where the command runs (default: the eval file's directory).",
    ),
    Key::new(
        "prompt",
        Kind::Text,
        "llm-grader: the prompt, inline or `file://<path>`; `{{EVALUATOR_RESULTS_JSON}}` is replaced by the member results.",
    ),
];
const AGGREGATOR_KEYS: KeyTable = KeyTable::new("aggregator", "A composite's aggregator.", &[AGGREGATOR_OWN]);

/// The default prompt of the LLM aggregator.
pub const DEFAULT_AGGREGATOR_PROMPT: &str = "Review the following evaluation results:\n{{EVALUATOR_RESULTS_JSON}}\n\nDecide the final score and verdict based on all grader results.\nReturn a JSON object with: score (0.0-1.0), verdict (pass/fail), and reasoning.";

/// How member results combine.
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregator {
    /// Σ score·weight / Σ weight over members not skipped; weights by member name, default 1.
    WeightedAverage(Map<String, Value>),
    /// The share of members (not skipped) whose verdict is pass; passes at `threshold`.
    Threshold(f64),
    /// A shell command reading the member results on stdin, in the shape of the file's
    /// generation (2.x: `hits`, `misses`, `reasoning`; 4.x: `assertions`).
    Code {
        command: String,
        cwd: PathBuf,
        generation: Generation,
    },
    /// The grader model, asked with `prompt` (`{{EVALUATOR_RESULTS_JSON}}` replaced).
    Llm { prompt: Option<String> },
}

/// A composite as configured.
#[derive(Debug, Clone)]
pub struct Composite {
    pub members: Vec<ConfiguredGrader>,
    pub aggregator: Aggregator,
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let pos = f.pos;
    let generation = cx.generation();
    let Some(members_node) = f.take("assertions") else {
        cx.drop_grader(
            pos,
            "composite has no members",
            Some("list them under `assertions:`, each with a `name` and a `type`".to_owned()),
        );
        return None;
    };
    let aggregator = match f.take("aggregator") {
        None => {
            cx.drop_grader(
                pos,
                "composite is missing `aggregator`",
                Some("add `aggregator: {type: weighted_average}` (or threshold, code-grader, llm-grader)".to_owned()),
            );
            return None;
        }
        Some(node) => parse_aggregator(node, generation, cx)?,
    };
    let kept = usable_members(members_node, generation, cx)?;
    let members = cx.graders(&kept)?;
    if members.is_empty() {
        cx.drop_grader(members_node.pos, "composite has no usable member", None);
        return None;
    }
    Some(Arc::new(Composite { members, aggregator }))
}

/// The members AgentV 4.x keeps: mappings with a `name` and a built-in `type` (written in
/// kebab-case in a 4.x file). The others are left out with a warning; member `weight`,
/// `required` and `negate` are ignored with a warning.
fn usable_members(node: &Node, generation: Generation, cx: &mut ParseContext<'_>) -> Option<Node> {
    let Some(items) = node.as_seq() else {
        cx.drop_grader(
            node.pos,
            format!("composite members must be a list, found {}", describe(node)),
            None,
        );
        return None;
    };
    let mut kept = Vec::new();
    for item in items {
        let name = item.get("name").and_then(Node::as_str).filter(|n| !n.trim().is_empty());
        let ty = item.get("type").and_then(Node::as_str);
        let problem = match (item.as_map(), name, ty) {
            (None, _, _) => Some(format!("a composite member must be a mapping, found {}", describe(item))),
            (Some(_), None, _) => Some("a composite member needs a `name`".to_owned()),
            (Some(_), Some(_), None) => Some("a composite member needs a `type`".to_owned()),
            (Some(_), Some(_), Some(t)) if super::find(Generation::V2, t).is_none() => {
                Some(format!("composite member type `{t}` is not a built-in grader"))
            }
            (Some(_), Some(_), Some(t)) if generation == Generation::V4 && t.contains('_') => Some(format!(
                "composite member type `{t}` must be written in kebab-case (`{}`)",
                t.replace('_', "-")
            )),
            _ => None,
        };
        if let Some(problem) = problem {
            cx.diags.warn(
                item.pos,
                format!("{problem}; the member is left out, as AgentV 4.x does"),
                None,
            );
            continue;
        }
        for key in ["weight", "required", "negate"] {
            if let Some(ignored) = item.get(key) {
                cx.diags.warn(
                    ignored.pos,
                    format!("`{key}` of a composite member is ignored, as in AgentV 4.x"),
                    Some("weigh members with `aggregator: {type: weighted_average, weights: {member: w}}`".to_owned()),
                );
            }
        }
        kept.push(item.clone());
    }
    Some(Node::new(NodeValue::Seq(kept), node.pos))
}

fn parse_aggregator(node: &Node, generation: Generation, cx: &mut ParseContext<'_>) -> Option<Aggregator> {
    let mark = cx.mark();
    let aggregator = read_aggregator(node, generation, cx);
    if cx.drop_grader_if_errors(mark) {
        return None;
    }
    aggregator
}

fn read_aggregator(node: &Node, generation: Generation, cx: &mut ParseContext<'_>) -> Option<Aggregator> {
    let mut f = Fields::of(node, &AGGREGATOR_KEYS, cx.diags)?;
    let pos = f.pos;
    let type_node = f.take("type");
    let ty = type_node.and_then(Node::as_str).unwrap_or_default().to_owned();
    let ty_pos = type_node.map_or(pos, |n| n.pos);
    // The contract of a code aggregator is the file's generation's.
    let code_generation = cx.file_generation;
    // 2.x spelled these aggregators after its judges; 4.x drops a composite that does.
    let ty = match ty.as_str() {
        "code_judge" | "llm_judge" if generation == Generation::V2 => ty.replace("_judge", "-grader"),
        "code" if generation == Generation::V2 => "code-grader".to_owned(),
        _ => ty,
    };
    let aggregator = match ty.as_str() {
        "weighted_average" => {
            let weights = match f.take("weights").map(|n| (n, n.to_json())) {
                None => Map::new(),
                Some((_, Value::Object(w))) if w.values().all(|v| v.as_f64().is_some_and(|x| x >= 0.0)) => w,
                Some((n, _)) => {
                    cx.diags.error(
                        n.pos,
                        "`weights` must map member names to numbers ≥ 0",
                        Some("for example `weights: {accuracy: 3, style: 1}`".to_owned()),
                    );
                    return None;
                }
            };
            Aggregator::WeightedAverage(weights)
        }
        "threshold" => {
            if f.take("threshold").is_none() {
                cx.diags.error(
                    pos,
                    "the threshold aggregator needs `threshold`",
                    Some("add `threshold: 0.5` (the share of members that must pass)".to_owned()),
                );
                return None;
            }
            Aggregator::Threshold(f.number("threshold", cx.diags)?)
        }
        "code-grader" | "code_grader" => {
            let Some(command) = f.string("path", cx.diags).filter(|p| !p.trim().is_empty()) else {
                cx.diags.error(
                    pos,
                    "the code-grader aggregator needs `path`",
                    Some("add `path: python3 aggregate.py` (a shell command)".to_owned()),
                );
                return None;
            };
            let cwd = match f.string("cwd", cx.diags) {
                Some(dir) => crate::paths::normalize(&cx.eval_dir.join(dir)),
                None => cx.eval_dir.to_path_buf(),
            };
            Aggregator::Code {
                command,
                cwd,
                generation: code_generation,
            }
        }
        "llm-grader" | "llm_grader" => {
            let prompt = match f.take("prompt") {
                None => None,
                Some(n) => Some(aggregator_prompt(n, cx)?),
            };
            Aggregator::Llm { prompt }
        }
        other => {
            cx.diags.error(
                ty_pos,
                format!("unknown composite aggregator `{other}`"),
                Some("use weighted_average, threshold, code-grader or llm-grader".to_owned()),
            );
            return None;
        }
    };
    f.warn_unknown(cx.diags);
    Some(aggregator)
}

/// The LLM aggregator's prompt: inline text, or the contents of a `file://` file (4.x sends
/// the path text instead; agentv reads the file).
fn aggregator_prompt(node: &Node, cx: &mut ParseContext<'_>) -> Option<String> {
    let text = node.scalar_text().unwrap_or_default();
    let Some(path) = text.strip_prefix("file://") else {
        return Some(text);
    };
    match cx.ws.resolve_file(path, cx.eval_dir) {
        Ok(found) => match std::fs::read_to_string(&found) {
            Ok(t) => Some(t.trim_start_matches('\u{feff}').to_owned()),
            Err(e) => {
                cx.diags
                    .error(node.pos, format!("cannot read aggregator prompt {}: {e}", found.display()), None);
                None
            }
        },
        Err(_) => {
            cx.diags
                .error(node.pos, format!("aggregator prompt file `{path}` not found"), None);
            None
        }
    }
}

impl Grader for Composite {
    fn needs(&self) -> Vec<Need> {
        self.members.iter().flat_map(|m| m.grader.needs()).collect()
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let grades = join_all(self.members.iter().map(|m| m.grader.grade(ctx))).await;
            let results: Vec<Member<'_>> = self
                .members
                .iter()
                .zip(grades)
                .map(|(grader, grade)| Member { grader, grade })
                .collect();
            aggregate(&self.aggregator, &results, ctx).await
        })
    }
}

/// One member and what it concluded.
pub struct Member<'a> {
    pub grader: &'a ConfiguredGrader,
    pub grade: Grade,
}

impl Member<'_> {
    fn name(&self) -> &str {
        &self.grader.name
    }

    fn prefixed(&self) -> impl Iterator<Item = Assertion> + '_ {
        self.grade.assertion_list().into_iter().map(|a| Assertion {
            text: format!("[{}] {}", self.name(), a.text),
            ..a
        })
    }

    /// The member as the composite's result lists it (`details.scores[]`).
    fn record(&self, weight: Option<f64>) -> Value {
        let mut r = json!({
            "name": self.name(),
            "type": self.grader.type_name(),
            "score": js_number(self.grade.score),
            "verdict": self.grade.verdict4().as_str(),
            "assertions": self.grade.assertion_list(),
        });
        if let Some(w) = weight {
            r["weight"] = js_number(w);
        }
        if let Some(details) = &self.grade.details {
            r["details"] = Value::Object(details.clone());
        }
        if let Some(e) = &self.grade.error {
            r["error"] = json!(e);
        }
        r
    }
}

/// A member result as 4.x hands it to code and LLM aggregators: camelCase, in its key order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ScoreJson<'a> {
    score: Value,
    verdict: &'static str,
    assertions: Vec<Assertion>,
    expected_aspect_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    grader_raw_request: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scores: Option<Value>,
}

/// `{member name: result}` in member order; a repeated name keeps its first place and its last
/// result, as a JavaScript object built from the entries does.
struct ResultsJson<'a>(Vec<(&'a str, ScoreJson<'a>)>);

impl Serialize for ResultsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, result) in &self.0 {
            map.serialize_entry(name, result)?;
        }
        map.end()
    }
}

fn results_json<'a>(members: &'a [Member<'a>]) -> ResultsJson<'a> {
    let mut entries: Vec<(&str, ScoreJson<'_>)> = Vec::new();
    for m in members {
        let mut details = m.grade.details.clone();
        let scores = match m.grader.type_name() {
            "composite" => details.as_mut().and_then(|d| d.remove("scores")),
            _ => None,
        };
        let assertions = m.grade.assertion_list();
        let json = ScoreJson {
            score: js_number(m.grade.score),
            verdict: m.grade.verdict4().as_str(),
            expected_aspect_count: assertions.len().max(1),
            assertions,
            grader_raw_request: m.grade.request.as_ref(),
            details: details.filter(|d| !d.is_empty()),
            scores,
        };
        match entries.iter_mut().find(|(n, _)| *n == m.name()) {
            Some(entry) => entry.1 = json,
            None => entries.push((m.name(), json)),
        }
    }
    ResultsJson(entries)
}

/// The composite's grade from its members' (reference §2.7).
/// A member whose process crashed makes the composite's result a grader error too.
pub async fn aggregate(aggregator: &Aggregator, members: &[Member<'_>], ctx: &GradeContext<'_>) -> Grade {
    let mut grade = match aggregator {
        Aggregator::WeightedAverage(weights) => weighted_average(weights, members),
        Aggregator::Threshold(t) => threshold(*t, members),
        Aggregator::Code {
            command,
            cwd,
            generation,
        } => code_aggregator(command, cwd, *generation, members, ctx).await,
        Aggregator::Llm { prompt } => llm_aggregator(prompt.as_deref(), members, ctx).await,
    };
    grade.crashed |= members.iter().any(|m| m.grade.crashed);
    grade
}

fn with_members(mut grade: Grade, records: Vec<Value>, request: Value) -> Grade {
    grade
        .details
        .get_or_insert_with(Map::new)
        .insert("scores".to_owned(), Value::Array(records));
    grade.request = Some(request);
    grade
}

fn all_skipped(records: Vec<Value>, request: Value) -> Grade {
    let mut grade = Grade::skipped("All evaluators skipped (infrastructure failure)");
    grade.error = Some("every member of the composite was skipped".to_owned());
    with_members(grade, records, request)
}

fn weighted_average(weights: &Map<String, Value>, members: &[Member<'_>]) -> Grade {
    let mut request = json!({"aggregator": "weighted_average"});
    if !weights.is_empty() {
        request["weights"] = Value::Object(weights.clone());
    }
    let (mut total, mut sum, mut evaluated) = (0.0, 0.0, 0);
    let mut assertions = Vec::new();
    let mut records = Vec::new();
    for m in members {
        let w = weights.get(m.name()).and_then(Value::as_f64).unwrap_or(1.0);
        records.push(m.record(Some(w)));
        if m.grade.verdict4() == GradeVerdict::Skip {
            continue;
        }
        evaluated += 1;
        total += w;
        sum += m.grade.score * w;
        assertions.extend(m.prefixed());
    }
    if evaluated == 0 && !members.is_empty() {
        return all_skipped(records, request);
    }
    let score = if total > 0.0 { sum / total } else { 0.0 };
    let score = agentv_eval_sdk::clamp_score(score);
    with_members(
        Grade::assessed(score, assertions).with_verdict(GradeVerdict::of_score(score)),
        records,
        request,
    )
}

fn threshold(threshold: f64, members: &[Member<'_>]) -> Grade {
    let request = json!({"aggregator": "threshold", "threshold": js_number(threshold)});
    let (mut passing, mut evaluated) = (0usize, 0usize);
    let mut assertions = Vec::new();
    let mut records = Vec::new();
    for m in members {
        records.push(m.record(None));
        match m.grade.verdict4() {
            GradeVerdict::Skip => continue,
            GradeVerdict::Pass => passing += 1,
            GradeVerdict::Fail => {}
        }
        evaluated += 1;
        assertions.extend(m.prefixed());
    }
    if evaluated == 0 && !members.is_empty() {
        return all_skipped(records, request);
    }
    let score = if evaluated > 0 {
        passing as f64 / evaluated as f64
    } else {
        0.0
    };
    let pass = score >= threshold;
    assertions.insert(
        0,
        Assertion::new(
            format!("{passing}/{evaluated} evaluators passed (threshold: {threshold})"),
            pass,
        ),
    );
    let verdict = if pass { GradeVerdict::Pass } else { GradeVerdict::Fail };
    with_members(
        Grade::assessed(agentv_eval_sdk::clamp_score(score), assertions).with_verdict(verdict),
        records,
        request,
    )
}

/// Runs the aggregator command (`sh -c`) with `{"results": {member: result}}` on stdin, the
/// results in the shape of the file's generation, and reads what it prints the same way
/// (`aggregator_v2` for 2.x). A command that cannot run or exits non-zero crashed: score 0,
/// `Code aggregator failed: …` with the end of its stdout and stderr, and a grader error.
async fn code_aggregator(
    command: &str,
    cwd: &std::path::Path,
    generation: Generation,
    members: &[Member<'_>],
    ctx: &GradeContext<'_>,
) -> Grade {
    let records: Vec<Value> = members.iter().map(|m| m.record(Some(1.0))).collect();
    let request = match generation {
        Generation::V2 => json!({"aggregator": "code_judge", "script": command}),
        Generation::V4 | Generation::Promptfoo => json!({"aggregator": "code-grader", "script": command}),
    };
    let failed = |why: String, records: Vec<Value>| {
        let mut request = request.clone();
        request["error"] = json!(why);
        let reason = format!("Code aggregator failed: {why}");
        let grade = match generation {
            Generation::V2 => Grade::crashed(reason),
            Generation::V4 | Generation::Promptfoo => Grade {
                crashed: true,
                ..Grade::failed_with(reason).with_verdict(GradeVerdict::Fail)
            },
        };
        with_members(grade, records, request)
    };
    #[derive(Serialize)]
    struct Input<R: Serialize> {
        results: R,
    }
    let input = match generation {
        Generation::V2 => serde_json::to_vec_pretty(&Input {
            results: aggregator_v2::results(members),
        }),
        Generation::V4 | Generation::Promptfoo => serde_json::to_vec_pretty(&Input {
            results: results_json(members),
        }),
    };
    let stdin = match input {
        Ok(bytes) => bytes,
        Err(e) => return failed(format!("cannot encode the member results: {e}"), records),
    };
    let argv = ["sh".to_owned(), "-c".to_owned(), command.to_owned()];
    let done = process::run(ProcessSpec {
        argv: &argv,
        cwd,
        env: &ctx.run.child_env,
        env_remove: &[],
        stdin: Some(&stdin),
        timeout: ctx.run.timeout,
        tee: None,
        keep_children: false,
    })
    .await;
    let done = match done {
        Ok(done) => done,
        Err(e) => return failed(e.to_string(), records),
    };
    if !done.status.success() {
        return failed(exit_report(&done, &ctx.run.secrets), records);
    }
    let stdout = String::from_utf8_lossy(&done.stdout);
    let parsed = serde_json::from_str::<Value>(stdout.trim()).ok();
    let obj = parsed.as_ref().and_then(Value::as_object);
    let grade = match generation {
        Generation::V2 => aggregator_v2::grade(obj),
        Generation::V4 | Generation::Promptfoo => v4_aggregate_grade(obj),
    };
    with_members(grade, records, request)
}

/// How an aggregator that exited non-zero ended, with the end of its stdout and of its stderr
/// (the last line is what the console shows of it): a script that catches its own error often
/// prints the reason on stdout as a result and exits 1.
fn exit_report(done: &process::Exited, secrets: &crate::redact::Secrets) -> String {
    let mut why = format!("exited with code {}", done.code_text());
    for (name, bytes) in [("stdout", &done.stdout), ("stderr", &done.stderr)] {
        let tail = process::tail(&String::from_utf8_lossy(bytes), 1000, secrets);
        if !tail.is_empty() {
            why.push_str(&format!("\n{name}: {tail}"));
        }
    }
    why
}

/// A 4.x aggregator's result: `{score, verdict?, assertions?}` (reference §2.7).
fn v4_aggregate_grade(obj: Option<&Map<String, Value>>) -> Grade {
    let score = agentv_eval_sdk::clamp_score(obj.and_then(|o| o.get("score")).and_then(Value::as_f64).unwrap_or(0.0));
    let assertions: Vec<Assertion> = obj
        .and_then(|o| o.get("assertions"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|a| {
                    let a = a.as_object()?;
                    Some(Assertion {
                        text: a.get("text")?.as_str()?.to_owned(),
                        passed: a.get("passed").is_some_and(super::code_grader::truthy),
                        evidence: a.get("evidence").and_then(Value::as_str).map(str::to_owned),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let verdict = match obj.and_then(|o| o.get("verdict")).and_then(Value::as_str) {
        Some("pass") => GradeVerdict::Pass,
        Some("fail") => GradeVerdict::Fail,
        _ => GradeVerdict::of_score(score),
    };
    Grade::assessed(score, assertions).with_verdict(verdict)
}

/// Asks the grader model to combine the member results (free-form reply, one call); any
/// failure scores 0 with `LLM aggregator failed`.
async fn llm_aggregator(prompt: Option<&str>, members: &[Member<'_>], ctx: &GradeContext<'_>) -> Grade {
    let records: Vec<Value> = members.iter().map(|m| m.record(None)).collect();
    let results = serde_json::to_string_pretty(&results_json(members)).unwrap_or_default();
    let user = prompt
        .unwrap_or(DEFAULT_AGGREGATOR_PROMPT)
        .replace("{{EVALUATOR_RESULTS_JSON}}", &results);
    let request = json!({
        "aggregator": "llm-grader",
        "user_prompt": user,
        "system_prompt": FREEFORM_SYSTEM,
        "target": ctx.target.judge_name,
    });
    let call = ProviderRequest {
        eval_id: ctx.case.id.clone(),
        attempt: ctx.attempt,
        question: user,
        system_prompt: Some(FREEFORM_SYSTEM.to_owned()),
        eval_dir: Some(ctx.case.eval_dir().to_path_buf()),
        ..ProviderRequest::default()
    };
    let reply = match ctx.target.judge.invoke(&call).await {
        Ok(response) => agentv_eval_sdk::last_assistant_text(&response.output_messages).unwrap_or_default(),
        Err(e) => {
            let mut grade = Grade::failed_with("LLM aggregator failed").with_verdict(GradeVerdict::Fail);
            grade.error = Some(format!("LLM aggregator: grader target `{}` failed: {e}", ctx.target.judge_name));
            return with_members(grade, records, request);
        }
    };
    let grade = match llm_reply::parse_json_from_text(&reply).and_then(|v| llm_reply::freeform(&v)) {
        Ok(r) => Grade {
            details: r.details,
            ..Grade::assessed(r.score, r.assertions).with_verdict(GradeVerdict::of_score(r.score))
        },
        Err(e) => {
            let mut grade = Grade::failed_with("LLM aggregator failed").with_verdict(GradeVerdict::Fail);
            grade.error = Some(format!("LLM aggregator reply: {e}"));
            grade
        }
    };
    with_members(grade, records, request)
}

#[cfg(test)]
mod tests;
