//! 4.x → 2.x (`docs/convert.md#to-2x`).

use super::edit::{indent, quote};
use super::{Context, Part, entries, entry};
use crate::config::{Node, NodeValue};

/// Suite keys 4.x has that change nothing a case scores: dropped with a warning.
const METADATA_ONLY: &[&str] = &["version", "author", "license", "tags", "requires", "category"];

/// Suite keys 4.x has and 2.x cannot express.
const SUITE_UNSUPPORTED: &[&str] = &[
    "input",
    "input_files",
    "metadata",
    "governance",
    "workspace",
    "preprocessors",
];

/// Case keys 4.x has and 2.x cannot express.
const CASE_UNSUPPORTED: &[&str] = &[
    "vars",
    "input_files",
    "metadata",
    "mode",
    "turns",
    "aggregation",
    "on_turn_failure",
    "window_size",
    "depends_on",
    "on_dependency_failure",
    "workspace",
];

/// `execution` keys that only change the summary, the exit code or speed.
const EXECUTION_DROPPABLE: &[&str] = &["threshold", "workers", "cache", "cache_path", "skip_defaults"];

/// Converts a 4.x suite or sidecar.
pub(super) fn suite(root: &Node, cx: &mut Context<'_>) {
    let top_list = ["assertions", "assert"].iter().find_map(|k| entry(root, k));
    let exec_list = root
        .get("execution")
        .and_then(|e| ["assertions", "assert", "evaluators"].iter().find_map(|k| entry(e, k)));
    if let (Some((k, _)), Some(_)) = (top_list, exec_list) {
        cx.error(
            k.pos,
            "the suite has graders both at the top level and under `execution`; 4.x reads only the top-level list: delete the other",
            None,
        );
    }
    let suite_list = top_list.is_some() || exec_list.is_some();
    let mut cases_seen = false;
    for (key, value) in entries(root) {
        let Some(name) = key.as_str() else { continue };
        match name {
            "tests" | "cases" | "eval_cases" | "evalcases" if cx.part == Part::Suite => {
                if cases_seen {
                    cx.error(key.pos, "a second list of cases; 4.x reads only the first of `tests`, `eval_cases`, `evalcases`: merge them", None);
                    continue;
                }
                cases_seen = true;
                let Some(cases) = value.as_seq() else {
                    cx.error(
                        value.pos,
                        "`tests` names a file or directory; 2.x has cases inline only",
                        Some("paste the cases into the file"),
                    );
                    continue;
                };
                if name != "evalcases" {
                    cx.rename(key, "evalcases");
                }
                for case in cases {
                    self::case(case, suite_list, cx);
                }
            }
            "name" => {
                if root.get("dataset").is_some() {
                    cx.warn(key.pos, "`name` dropped: the file already has `dataset`");
                    cx.delete_in(root, key);
                } else {
                    cx.rename(key, "dataset");
                }
            }
            // Moved under `execution` by `move_suite_list`, once the graders are converted.
            "assertions" | "assert" => grader_list(value, cx),
            "execution" => execution(value, cx),
            k if METADATA_ONLY.contains(&k) => {
                cx.warn(key.pos, format!("`{k}` dropped: 2.x has no suite metadata"));
                cx.delete_in(root, key);
            }
            k if SUITE_UNSUPPORTED.contains(&k) => {
                cx.error(key.pos, format!("suite `{k}` has no 2.x equivalent"), None)
            }
            _ => {}
        }
    }
}

fn execution(exec: &Node, cx: &mut Context<'_>) {
    for (key, value) in entries(exec) {
        let Some(name) = key.as_str() else { continue };
        match name {
            "assertions" | "assert" => {
                cx.rename(key, "evaluators");
                grader_list(value, cx);
            }
            "evaluators" => grader_list(value, cx),
            "target" => {}
            k if EXECUTION_DROPPABLE.contains(&k) => {
                cx.warn(
                    key.pos,
                    format!("`execution.{k}` dropped: 2.x has no such setting (scores are unchanged)"),
                );
                cx.delete_in(exec, key);
            }
            k => cx.error(key.pos, format!("`execution.{k}` has no 2.x equivalent"), None),
        }
    }
}

/// The second pass of a conversion to 2.x: the top-level `assertions` (already converted)
/// moves under `execution` as `evaluators`, re-indented. A pass of its own because the move
/// rewrites the lines the first pass edited.
pub(super) fn move_suite_list_pass(root: &Node, cx: &mut Context<'_>) {
    if let Some((key, _)) = ["assertions", "assert"].iter().find_map(|k| entry(root, k)) {
        move_suite_list(root, key, cx);
    }
}

fn move_suite_list(root: &Node, key: &Node, cx: &mut Context<'_>) {
    let Some((start, end)) = cx.editor.entry_lines(key) else {
        cx.error(
            key.pos,
            "cannot move this list under `execution`; move it by hand",
            None,
        );
        return;
    };
    let body = cx.editor.lines_text(start, end);
    let written = key.as_str().unwrap_or_default();
    let Some(rest) = body.strip_prefix(written) else {
        cx.error(
            key.pos,
            "cannot move this list under `execution` (quoted key); move it by hand",
            None,
        );
        return;
    };
    let nl = cx.editor.newline();
    let moved = format!("evaluators{rest}");
    let moved = if moved.ends_with('\n') {
        moved
    } else {
        format!("{moved}{nl}")
    };
    match entry(root, "execution") {
        None => cx
            .editor
            .replace_lines(start, end, format!("execution:{nl}{}", indent(&moved, 2))),
        Some((exec_key, exec)) => {
            let child = entries(exec).first().map(|(k, _)| k);
            let span = cx.editor.entry_lines(exec_key);
            match (child, span) {
                (Some(child), Some((_, exec_end))) if cx.editor.entry_lines(child).is_some() => {
                    let by = usize::try_from(child.pos.column).unwrap_or(1).saturating_sub(1);
                    cx.editor.insert_at_line(exec_end, indent(&moved, by));
                    cx.editor.replace_lines(start, end, String::new());
                }
                _ => cx.error(
                    exec_key.pos,
                    "cannot move the suite's `assertions` into this `execution` (flow style or empty); write it in block style",
                    None,
                ),
            }
        }
    }
}

fn case(case: &Node, suite_list: bool, cx: &mut Context<'_>) {
    if case.as_map().is_none() {
        cx.error(
            case.pos,
            "2.x cases are written inline; this entry (a `file://` reference?) has no 2.x form",
            None,
        );
        return;
    }
    if case.get("criteria").is_some() && case.get("expected_outcome").is_some() {
        cx.error(
            case.pos,
            "the case has both `criteria` and `expected_outcome`; 4.x reads `criteria`: delete the other",
            None,
        );
    }
    let own_list = ["assertions", "assert", "evaluators"]
        .iter()
        .any(|k| case.get(k).is_some())
        || case.get("execution").and_then(|e| e.get("evaluators")).is_some();
    let skip_defaults = case
        .get("execution")
        .and_then(|e| e.get("skip_defaults"))
        .and_then(Node::as_bool)
        == Some(true);
    if suite_list && own_list && !skip_defaults {
        cx.error(
            case.pos,
            "4.x runs this case's graders and then the suite's; 2.x runs only the case's",
            Some("add `execution: {skip_defaults: true}` to the case (and copy the suite's graders into it if they should run)"),
        );
    }
    if suite_list && skip_defaults && !own_list {
        cx.error(
            case.pos,
            "4.x grades this case with the default grader (skip_defaults, no own graders); 2.x would run the suite's",
            Some("give the case its own graders"),
        );
    }
    for (key, value) in entries(case) {
        let Some(name) = key.as_str() else { continue };
        match name {
            "criteria" => cx.rename(key, "expected_outcome"),
            "input" => match &value.value {
                NodeValue::Seq(items) if items.iter().all(|m| m.get("role").is_some()) => {
                    cx.rename(key, "input_messages")
                }
                NodeValue::Str(_) | NodeValue::Seq(_) => {}
                _ => cx.error(
                    value.pos,
                    "a structured `input` object has no 2.x form",
                    Some("write the input as text or messages"),
                ),
            },
            "expected_output" => {
                if let Some(items) = value.as_seq()
                    && items.first().is_some_and(|m| m.get("role").is_some())
                {
                    cx.rename(key, "expected_messages");
                }
            }
            "assertions" | "assert" => {
                cx.rename(key, "evaluators");
                grader_list(value, cx);
            }
            "evaluators" => grader_list(value, cx),
            "execution" => case_execution(case, key, value, cx),
            "rubrics" => rubric_items(value, cx),
            "suite" => {
                cx.warn(key.pos, "`suite` dropped (4.x ignores it too)");
                cx.delete_in(case, key);
            }
            k if CASE_UNSUPPORTED.contains(&k) => {
                cx.error(key.pos, format!("case `{k}` has no 2.x equivalent"), None);
            }
            _ => {}
        }
    }
}

fn case_execution(case: &Node, exec_key: &Node, exec: &Node, cx: &mut Context<'_>) {
    let droppable = |k: &str| matches!(k, "skip_defaults" | "threshold");
    if entries(exec).iter().all(|(k, _)| k.as_str().is_some_and(droppable)) {
        for (k, _) in entries(exec) {
            if k.as_str() == Some("threshold") {
                cx.warn(
                    k.pos,
                    "`execution.threshold` dropped: it sets the case's verdict, 2.x uses `--threshold`",
                );
            }
        }
        cx.delete_in(case, exec_key);
        return;
    }
    for (key, value) in entries(exec) {
        match key.as_str() {
            Some("evaluators") => grader_list(value, cx),
            Some("skip_defaults") => cx.delete_in(exec, key),
            Some("threshold") => {
                cx.warn(
                    key.pos,
                    "`execution.threshold` dropped: it sets the case's verdict, 2.x uses `--threshold`",
                );
                cx.delete_in(exec, key);
            }
            Some("target") => {}
            Some(k) => cx.error(key.pos, format!("case `execution.{k}` has no 2.x equivalent"), None),
            None => {}
        }
    }
}

fn grader_list(list: &Node, cx: &mut Context<'_>) {
    let Some(items) = list.as_seq() else {
        cx.error(list.pos, "a grader list is a list", None);
        return;
    };
    for g in items {
        grader(g, cx);
    }
}

fn grader(g: &Node, cx: &mut Context<'_>) {
    if g.as_str().is_some() {
        cx.error(
            g.pos,
            "a bare-string assertion (a 4.x rubric) has no 2.x form",
            Some("write it as `{name: ..., type: rubrics, criteria: [...]}` first"),
        );
        return;
    }
    if g.get("include").is_some() {
        cx.error(
            g.pos,
            "`include` templates have no 2.x form; paste the template's graders",
            None,
        );
        return;
    }
    for common in ["required", "min_score"] {
        if let Some((k, _)) = entry(g, common) {
            cx.error(
                k.pos,
                format!("`{common}` (a 4.x gate on the case score) has no 2.x equivalent"),
                None,
            );
        }
    }
    let Some((type_key, type_node)) = entry(g, "type") else {
        return;
    };
    let Some(written) = type_node.as_str() else { return };
    match written.replace('_', "-").as_str() {
        "llm-grader" => {
            cx.rename(type_node, "llm_judge");
            llm_grader(g, cx);
        }
        "code-grader" => {
            cx.rename(type_node, "code_judge");
            if let Some((k, _)) = entry(g, "command") {
                cx.rename(k, "script");
            }
            cx.warn(
                type_node.pos,
                "a 2.x code judge reads the 2.x payload (`candidate_answer`, `question`, `expected_outcome`, `reference_answer`, … instead of `output`, `input`, `criteria`, `expected_output`): check that the script reads those keys",
            );
        }
        "rubrics" | "rubric" => rubrics(g, type_node, cx),
        "tool-trajectory" => {
            if written != "tool_trajectory" {
                cx.rename(type_node, "tool_trajectory");
            }
            trajectory(g, type_key, cx);
        }
        "field-accuracy" => cx.rename(type_node, "field_accuracy"),
        "token-usage" => cx.rename(type_node, "token_usage"),
        "execution-metrics" => cx.rename(type_node, "execution_metrics"),
        "composite" => composite(g, cx),
        "latency" | "cost" | "keywords" | "llm-judge" | "code-judge" | "code" => {}
        _ => cx.error(
            type_node.pos,
            format!("grader type `{written}` has no 2.x equivalent"),
            Some("2.x has llm_judge, code_judge, rubric, composite, tool_trajectory, field_accuracy, latency, cost, token_usage, execution_metrics and keywords"),
        ),
    }
}

fn llm_grader(g: &Node, cx: &mut Context<'_>) {
    if let Some(prompt) = g.get("prompt")
        && let Some(text) = prompt.as_str()
        && let Some(path) = text.strip_prefix("file://")
    {
        cx.rename(prompt, path);
        cx.warn(
            prompt.pos,
            "2.x fills `{{candidate_answer}}`, `{{question}}`, `{{expected_outcome}}`, `{{reference_answer}}` in prompt files: check the template",
        );
    }
    if let Some(items) = g.get("rubrics") {
        rubric_items(items, cx);
    }
    for key in ["target", "preprocessors", "max_steps"] {
        if let Some((k, _)) = entry(g, key) {
            cx.error(k.pos, format!("llm-grader `{key}` has no 2.x equivalent"), None);
        }
    }
}

/// `{type: rubrics, criteria: [...]}` → `{type: rubric, rubrics: [...]}`; string items become
/// `{description: ...}` (2.x's rubric grader takes objects only).
fn rubrics(g: &Node, type_node: &Node, cx: &mut Context<'_>) {
    cx.rename(type_node, "rubric");
    let Some((k, items)) = entry(g, "criteria").or_else(|| entry(g, "rubrics")) else {
        return;
    };
    if k.as_str() == Some("criteria") {
        cx.rename(k, "rubrics");
    }
    for item in items.as_seq().unwrap_or_default() {
        if let Some(text) = item.as_str() {
            cx.replace_raw(item, &format!("{{description: {}}}", quote_flow(text)));
        }
    }
    rubric_items(items, cx);
}

/// A scalar for a flow mapping: always JSON-quoted unless plain and free of flow indicators.
fn quote_flow(s: &str) -> String {
    let q = quote(s);
    if q.contains([',', '{', '}', '[', ']']) {
        serde_json::Value::String(s.to_owned()).to_string()
    } else {
        q
    }
}

/// Rubric objects: 4.x `outcome` (alias `criteria`) is 2.x `description`.
fn rubric_items(items: &Node, cx: &mut Context<'_>) {
    for item in items.as_seq().unwrap_or_default() {
        if let Some((k, _)) = entry(item, "outcome").or_else(|| entry(item, "criteria")) {
            cx.rename(k, "description");
        }
        if let Some((k, _)) = entry(item, "score_ranges") {
            cx.error(k.pos, "score-range rubrics have no 2.x equivalent", None);
        }
    }
}

/// 4.x compares arguments exactly by default, 2.x partially; `args_match: superset` (what a
/// 2.x file converted to 4.x gets) is 2.x's default and goes, an unstated exact match is
/// written out.
fn trajectory(g: &Node, type_key: &Node, cx: &mut Context<'_>) {
    let has_args = g
        .get("expected")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .any(|item| item.get("args").is_some_and(|a| a.as_map().is_some()));
    match entry(g, "args_match") {
        Some((k, v)) if v.as_str() == Some("superset") => cx.delete_in(g, k),
        None if has_args => cx.insert_before(type_key, "args_match: exact"),
        _ => {}
    }
    if let Some(mode) = g.get("mode").and_then(Node::as_str)
        && matches!(mode, "in_order" | "exact")
    {
        cx.warn(
            type_key.pos,
            format!(
                "`{mode}` scores the share of expected calls found in 4.x and all or nothing in 2.x: a partly matching trajectory scores differently"
            ),
        );
    }
}

fn composite(g: &Node, cx: &mut Context<'_>) {
    if let Some((k, members)) = entry(g, "assertions").or_else(|| entry(g, "assert")) {
        cx.rename(k, "evaluators");
        grader_list(members, cx);
    } else if let Some(members) = g.get("evaluators") {
        grader_list(members, cx);
    }
    if let Some(agg) = g.get("aggregator")
        && let Some(t) = agg.get("type")
    {
        match t.as_str().map(|s| s.replace('_', "-")).as_deref() {
            Some("code-grader") => cx.rename(t, "code_judge"),
            Some("llm-grader") => cx.rename(t, "llm_judge"),
            Some("threshold") => cx.error(t.pos, "the `threshold` aggregator has no 2.x equivalent", None),
            _ => {}
        }
    }
}
