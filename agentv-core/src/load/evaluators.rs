//! Parses `evaluators:` lists into [`EvaluatorSpec`]s.

use std::ops::RangeInclusive;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use super::diagnostics::{Diagnostics, Fields, describe, did_you_mean};
use super::node::{Node, NodeValue};
use super::paths::Workspace;
use crate::model::{
    ArgsMatch, CodeJudgeSpec, EvaluatorKind, EvaluatorSpec, ExpectedCall, KeywordPattern, KeywordsSpec, LlmJudgeSpec,
    ProxyBudget, TrajectoryMode, TrajectorySpec,
};

const TYPES: &str = "llm_judge, code_judge (alias code), tool_trajectory or keywords";

/// Keys a code judge reads itself; any other key is passed to the script in `config`.
const CODE_JUDGE_KEYS: &[&str] = &["name", "type", "weight", "script", "cwd", "timeout_seconds", "target"];

/// How long a code judge may run: from a millisecond to a day.
pub const JUDGE_TIMEOUT_RANGE: RangeInclusive<Duration> = Duration::from_millis(1)..=Duration::from_secs(86_400);

/// Parses a list of evaluators. `None` when any entry is invalid (errors are reported): a case
/// graded by an incomplete list would get a misleading score.
pub fn parse_evaluators(
    node: &Node,
    ws: &Workspace,
    eval_dir: &Path,
    diags: &mut Diagnostics,
) -> Option<Vec<EvaluatorSpec>> {
    let Some(items) = node.as_seq() else {
        diags.error(
            node.pos,
            format!("`evaluators` must be a list, found {}", node.type_name()),
            Some("write each evaluator as `- name: ...` with a `type`".to_owned()),
        );
        return None;
    };
    let before = diags.error_count();
    let specs: Vec<EvaluatorSpec> = items
        .iter()
        .filter_map(|item| parse_evaluator(item, ws, eval_dir, diags))
        .collect();
    (diags.error_count() == before).then_some(specs)
}

fn parse_evaluator(node: &Node, ws: &Workspace, eval_dir: &Path, diags: &mut Diagnostics) -> Option<EvaluatorSpec> {
    let mut f = Fields::of(node, "an evaluator", diags)?;
    let kind_name = f.required_string(&["type"], "evaluator", diags)?;
    let name = f.string(&["name"], diags);
    let weight = f.non_negative(&["weight"], diags).unwrap_or(1.0);
    let kind = match kind_name.as_str() {
        "llm_judge" => EvaluatorKind::LlmJudge(llm_judge(&mut f, ws, eval_dir, diags)),
        "code_judge" | "code" => EvaluatorKind::CodeJudge(code_judge(&mut f, eval_dir, diags)?),
        "tool_trajectory" => EvaluatorKind::ToolTrajectory(trajectory(&mut f, diags)?),
        "keywords" => EvaluatorKind::Keywords(keywords(&mut f, diags)?),
        other => {
            let pos = f.take(&["type"]).map_or(node.pos, |n| n.pos);
            diags.error(
                pos,
                format!("unknown evaluator type `{other}`"),
                Some(format!("use {TYPES}")),
            );
            return None;
        }
    };
    let name = name.unwrap_or_else(|| kind.type_name().to_owned());
    Some(EvaluatorSpec { name, weight, kind })
}

fn llm_judge(f: &mut Fields<'_>, ws: &Workspace, eval_dir: &Path, diags: &mut Diagnostics) -> LlmJudgeSpec {
    let mut spec = LlmJudgeSpec {
        include_trace_summary: f
            .boolean(&["include_trace_summary", "trace_summary"], diags)
            .unwrap_or(false),
        ..LlmJudgeSpec::default()
    };
    let prompt_pos = f.take(&["prompt", "prompt_path", "promptPath"]).map(|n| n.pos);
    if let (Some(prompt), Some(pos)) = (f.string(&["prompt", "prompt_path", "promptPath"], diags), prompt_pos) {
        let looks_like_path = !prompt.contains('\n') && !prompt.contains("{{") && prompt.len() < 300;
        match looks_like_path.then(|| ws.resolve_file(&prompt, eval_dir)) {
            Some(Ok(path)) => match std::fs::read_to_string(&path) {
                Ok(text) => {
                    spec.prompt = Some(text.replace("\r\n", "\n"));
                    spec.prompt_path = Some(path);
                }
                Err(e) => diags.error(pos, format!("cannot read prompt file {}: {e}", path.display()), None),
            },
            Some(Err(_)) if prompt.ends_with(".md") || prompt.ends_with(".txt") => {
                diags.warn(
                    pos,
                    format!("prompt file `{prompt}` not found; the text is used as an inline template"),
                    Some("check the path (relative to the eval file or the repository root)".to_owned()),
                );
                spec.prompt = Some(prompt);
            }
            _ => spec.prompt = Some(prompt),
        }
        if let Some(template) = &spec.prompt {
            crate::evaluators::llm_judge::check_template(template, pos, diags);
        }
    }
    f.warn_unknown(
        "llm_judge",
        &["name", "type", "weight", "prompt", "include_trace_summary"],
        diags,
    );
    spec
}

fn code_judge(f: &mut Fields<'_>, eval_dir: &Path, diags: &mut Diagnostics) -> Option<CodeJudgeSpec> {
    let pos = f.pos;
    let script = match f.take(&["script"]) {
        None => {
            diags.error(
                pos,
                "code_judge is missing the required key `script`",
                Some("add `script: [python3, judge.py]` (an argv list) or a shell command string".to_owned()),
            );
            return None;
        }
        Some(node) => parse_script(node, diags)?,
    };
    let cwd = match f.string(&["cwd"], diags) {
        Some(dir) => {
            let path = super::paths::normalize(&eval_dir.join(&dir));
            if !path.is_dir() {
                let p = f.take(&["cwd"]).map_or(pos, |n| n.pos);
                diags.error(
                    p,
                    format!("code_judge cwd `{dir}` is not a directory ({})", path.display()),
                    None,
                );
                return None;
            }
            path
        }
        None => eval_dir.to_path_buf(),
    };
    let timeout = f.duration_secs(&["timeout_seconds", "timeoutSeconds"], JUDGE_TIMEOUT_RANGE, diags);
    let proxy = match f.take(&["target", "judge"]) {
        None => None,
        Some(node) => parse_proxy(node, diags)?,
    };
    let config: Map<String, Value> = f
        .rest()
        .filter(|(k, _)| !matches!(k.as_str(), Some("name" | "type" | "weight")))
        .map(|(k, v)| {
            let key = k.key_text();
            if let Some(guess) = did_you_mean(&key, CODE_JUDGE_KEYS) {
                diags.warn(
                    k.pos,
                    format!("key `{key}` is passed to the judge in `config`; did you mean `{guess}`?"),
                    Some(format!("code_judge keys: {}", CODE_JUDGE_KEYS.join(", "))),
                );
            }
            (key, v.to_json())
        })
        .collect();
    Some(CodeJudgeSpec {
        script,
        cwd,
        timeout,
        proxy,
        config,
    })
}

fn parse_script(node: &Node, diags: &mut Diagnostics) -> Option<Vec<String>> {
    match &node.value {
        NodeValue::Str(s) if !s.trim().is_empty() => Some(vec!["sh".into(), "-c".into(), s.clone()]),
        NodeValue::Seq(items) if !items.is_empty() => {
            let mut argv = Vec::with_capacity(items.len());
            for item in items {
                match &item.value {
                    NodeValue::Str(s) => argv.push(s.clone()),
                    NodeValue::Int(_) | NodeValue::Float(_) => argv.extend(item.scalar_text()),
                    _ => {
                        diags.error(
                            item.pos,
                            format!("script arguments must be strings, found {}", item.type_name()),
                            None,
                        );
                        return None;
                    }
                }
            }
            Some(argv)
        }
        _ => {
            diags.error(
                node.pos,
                format!(
                    "`script` must be a non-empty argv list or command string, found {}",
                    describe(node)
                ),
                Some("for example `script: [python3, judge.py]`".to_owned()),
            );
            None
        }
    }
}

/// `target: true`, `target: false` or `target: {max_calls: N}`. The outer `Option` is `None` on
/// error; the inner one is `None` when the proxy is off.
fn parse_proxy(node: &Node, diags: &mut Diagnostics) -> Option<Option<ProxyBudget>> {
    match &node.value {
        NodeValue::Bool(true) => Some(Some(ProxyBudget::default())),
        NodeValue::Bool(false) | NodeValue::Null => Some(None),
        NodeValue::Map(_) => {
            let mut f = Fields::of(node, "target", diags)?;
            let max_calls = match f.take(&["max_calls", "maxCalls"]) {
                None => ProxyBudget::default().max_calls,
                Some(n) => match n.value {
                    NodeValue::Int(i) if (0..=i64::from(u32::MAX)).contains(&i) => i as u32,
                    _ => {
                        diags.error(
                            n.pos,
                            format!("`max_calls` must be a whole number ≥ 0, found {}", describe(n)),
                            None,
                        );
                        return None;
                    }
                },
            };
            f.warn_unknown("target", &["max_calls"], diags);
            Some(Some(ProxyBudget { max_calls }))
        }
        _ => {
            diags.error(
                node.pos,
                format!(
                    "`target` must be true, false or {{max_calls: N}}, found {}",
                    describe(node)
                ),
                None,
            );
            None
        }
    }
}

fn trajectory(f: &mut Fields<'_>, diags: &mut Diagnostics) -> Option<TrajectorySpec> {
    let pos = f.pos;
    let mode_node = f.take(&["mode"]);
    let mode = match mode_node.and_then(Node::as_str) {
        Some(text) => match TrajectoryMode::parse(text) {
            Some(mode) => mode,
            None => {
                let p = mode_node.map_or(pos, |n| n.pos);
                diags.error(
                    p,
                    format!("unknown tool_trajectory mode `{text}`"),
                    Some("use any_order, in_order or exact".to_owned()),
                );
                return None;
            }
        },
        None => {
            diags.error(
                mode_node.map_or(pos, |n| n.pos),
                "tool_trajectory needs a `mode`",
                Some("use any_order, in_order or exact".to_owned()),
            );
            return None;
        }
    };
    let mut minimums = Vec::new();
    if let Some(node) = f.take(&["minimums"]) {
        let Some(entries) = node.as_map() else {
            diags.error(
                node.pos,
                "`minimums` must map tool names to counts",
                Some("for example `minimums: {search: 2}`".to_owned()),
            );
            return None;
        };
        for (k, v) in entries {
            match v.value {
                NodeValue::Int(n) if n >= 0 => minimums.push((k.key_text(), n as u64)),
                _ => {
                    diags.error(
                        v.pos,
                        format!(
                            "minimum for `{}` must be a whole number ≥ 0, found {}",
                            k.key_text(),
                            describe(v)
                        ),
                        None,
                    );
                    return None;
                }
            }
        }
    } else if mode == TrajectoryMode::AnyOrder {
        diags.error(
            pos,
            "tool_trajectory mode any_order needs `minimums`",
            Some("add `minimums: {toolName: count}`".to_owned()),
        );
        return None;
    }
    let mut expected = Vec::new();
    if let Some(node) = f.take(&["expected"]) {
        let Some(items) = node.as_seq() else {
            diags.error(
                node.pos,
                "`expected` must be a list of `{tool: name, args?: ...}`",
                None,
            );
            return None;
        };
        for item in items {
            expected.push(expected_call(item, diags)?);
        }
    } else if mode != TrajectoryMode::AnyOrder {
        diags.error(
            pos,
            "tool_trajectory modes in_order and exact need `expected`",
            Some("add `expected: [{tool: name}, ...]`".to_owned()),
        );
        return None;
    }
    f.warn_unknown(
        "tool_trajectory",
        &["name", "type", "weight", "mode", "minimums", "expected"],
        diags,
    );
    Some(TrajectorySpec {
        mode,
        minimums,
        expected,
    })
}

fn expected_call(node: &Node, diags: &mut Diagnostics) -> Option<ExpectedCall> {
    let mut f = Fields::of(node, "an expected tool call", diags)?;
    let tool = f.required_string(&["tool"], "expected tool call", diags)?;
    let args = match f.take(&["args"]) {
        None => ArgsMatch::Any,
        Some(n) if n.as_str() == Some("any") => ArgsMatch::Any,
        Some(n) => match n.to_json() {
            Value::Object(map) => ArgsMatch::Partial(map),
            _ => {
                diags.error(
                    n.pos,
                    format!("`args` must be `any` or a mapping, found {}", describe(n)),
                    None,
                );
                return None;
            }
        },
    };
    // `input`/`output` appear in some suites as documentation; they are not checked.
    let _ = f.take(&["input"]);
    let _ = f.take(&["output"]);
    f.warn_unknown("expected tool call", &["tool", "args"], diags);
    Some(ExpectedCall { tool, args })
}

fn keywords(f: &mut Fields<'_>, diags: &mut Diagnostics) -> Option<KeywordsSpec> {
    let case_sensitive = f.boolean(&["case_sensitive", "caseSensitive"], diags).unwrap_or(false);
    let detect_errors = f.boolean(&["detect_errors", "detectErrors"], diags).unwrap_or(true);
    let before = diags.error_count();
    let expected = f
        .take(&["expected"])
        .map(|n| patterns(n, case_sensitive, diags))
        .unwrap_or_default();
    let forbidden = f
        .take(&["forbidden"])
        .map(|n| patterns(n, case_sensitive, diags))
        .unwrap_or_default();
    if diags.error_count() > before {
        return None;
    }
    if expected.is_empty() && forbidden.is_empty() {
        diags.error(
            f.pos,
            "keywords needs `expected` or `forbidden`",
            Some("add `expected: [word, ...]`".to_owned()),
        );
        return None;
    }
    f.warn_unknown(
        "keywords",
        &[
            "name",
            "type",
            "weight",
            "expected",
            "forbidden",
            "case_sensitive",
            "detect_errors",
        ],
        diags,
    );
    Some(KeywordsSpec {
        expected,
        forbidden,
        detect_errors,
    })
}

fn patterns(node: &Node, case_sensitive: bool, diags: &mut Diagnostics) -> Vec<KeywordPattern> {
    let Some(items) = node.as_seq() else {
        diags.error(
            node.pos,
            "keyword lists must be lists of strings or `{regex: ...}`",
            None,
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        let (label, source) = match (&item.value, item.get("regex").and_then(Node::as_str)) {
            (NodeValue::Str(s), _) => (s.clone(), regex::escape(s)),
            (_, Some(re)) => (format!("/{re}/"), re.to_owned()),
            _ => {
                diags.error(
                    item.pos,
                    format!(
                        "a keyword must be a string or `{{regex: ...}}`, found {}",
                        describe(item)
                    ),
                    None,
                );
                continue;
            }
        };
        match regex::RegexBuilder::new(&source)
            .case_insensitive(!case_sensitive)
            .build()
        {
            Ok(matcher) => out.push(KeywordPattern { label, matcher }),
            Err(e) => diags.error(item.pos, format!("invalid regex {label}: {e}"), None),
        }
    }
    out
}
