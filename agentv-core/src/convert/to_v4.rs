//! 2.x → 4.x (`docs/convert.md#to-4x`).

use super::{Context, Part, entries, entry};
use crate::config::Node;

/// Converts a 2.x suite or sidecar.
pub(super) fn suite(root: &Node, cx: &mut Context<'_>) {
    let suite_list = root.get("execution").and_then(|e| e.get("evaluators")).is_some();
    for (key, value) in entries(root) {
        match key.as_str() {
            Some("evalcases") if cx.part == Part::Suite => {
                cx.rename(key, "tests");
                for case in value.as_seq().unwrap_or_default() {
                    self::case(case, suite_list, cx);
                }
            }
            Some("execution") => {
                if let Some((k, list)) = entry(value, "evaluators") {
                    // 4.x reads `execution.assertions` as the suite's list (reference §2.1).
                    cx.rename(k, "assertions");
                    grader_list(list, cx);
                }
            }
            Some("evaluator") => drop_legacy_evaluator(root, key, value, cx),
            _ => {}
        }
    }
}

/// The legacy single-evaluator key: 2.x runs `llm_judge` whatever it names, 4.x runs its
/// default grader and rejects the 2.x names, so the key goes.
fn drop_legacy_evaluator(map: &Node, key: &Node, value: &Node, cx: &mut Context<'_>) {
    cx.warn(
        key.pos,
        format!(
            "`evaluator: {}` dropped: 4.x grades a case without graders with its default LLM grader, as 2.x's `llm_judge` did",
            value.as_str().unwrap_or("…")
        ),
    );
    cx.delete_in(map, key);
}

fn case(case: &Node, suite_list: bool, cx: &mut Context<'_>) {
    let mut own_list = false;
    let mut exec_kept = case.get("execution").is_some();
    // After the first key (usually `id`), so the case still opens with it.
    let first_key = entries(case).get(1).or_else(|| entries(case).first()).map(|(k, _)| k);
    for (key, value) in entries(case) {
        match key.as_str() {
            Some("expected_outcome" | "outcome") => cx.rename(key, "criteria"),
            Some("input_messages") => cx.rename(key, "input"),
            Some("expected_messages") => cx.rename(key, "expected_output"),
            Some("evaluators") => {
                own_list = true;
                cx.rename(key, "assertions");
                grader_list(value, cx);
            }
            Some("execution") => {
                if let Some((k, list)) = entry(value, "evaluators") {
                    own_list = true;
                    grader_list(list, cx);
                    exec_kept = !move_case_evaluators(key, value, k, cx);
                }
            }
            Some("evaluator") => drop_legacy_evaluator(case, key, value, cx),
            Some("rubrics") => rubric_items(value, cx),
            _ => {}
        }
    }
    if case.get("evaluators").is_some() && case.get("execution").and_then(|e| e.get("evaluators")).is_some() {
        cx.error(
            case.pos,
            "the case has both `evaluators` and `execution.evaluators`; 2.x reads only the latter: delete one first",
            None,
        );
    }
    // 2.x: a case's own list replaces the suite's; 4.x appends the suite's unless told not to.
    if own_list && suite_list {
        match case.get("execution") {
            Some(exec) if exec_kept => {
                if let Some((k, _)) = entries(exec).first() {
                    cx.insert_before(k, "skip_defaults: true");
                }
            }
            _ => {
                if let Some(k) = first_key {
                    cx.insert_before(k, "execution: {skip_defaults: true}");
                }
            }
        }
    }
}

/// A case's `execution: {evaluators: [...]}` becomes its `assertions`. When `execution` holds
/// other keys too, the list stays where it is (4.x reads a case's `execution.evaluators` as
/// its list, reference §2.1).
/// True when it moved.
fn move_case_evaluators(exec_key: &Node, exec: &Node, list_key: &Node, cx: &mut Context<'_>) -> bool {
    if entries(exec).len() == 1 && cx.editor.merge_keys(exec_key, list_key, "assertions").is_ok() {
        return true;
    }
    cx.warn(
        list_key.pos,
        "kept as `execution.evaluators` (4.x reads it as the case's list); move it to `assertions` by hand for the canonical form",
    );
    false
}

/// Converts every grader of a list.
fn grader_list(list: &Node, cx: &mut Context<'_>) {
    for entry in list.as_seq().unwrap_or_default() {
        grader(entry, cx);
    }
}

fn grader(g: &Node, cx: &mut Context<'_>) {
    let Some((type_key, type_node)) = entry(g, "type") else {
        return;
    };
    let Some(kind) = type_node.as_str() else { return };
    match kind {
        "llm_judge" | "llm-judge" => {
            cx.rename(type_node, "llm-grader");
            llm_prompt(g, cx);
            if let Some(items) = g.get("rubrics") {
                rubric_items(items, cx);
            }
        }
        "code_judge" | "code" | "code-judge" => {
            cx.rename(type_node, "code-grader");
            if let Some((k, _)) = entry(g, "script") {
                cx.rename(k, "command");
            }
            cx.warn(
                type_node.pos,
                "a 4.x code grader reads the 4.x payload (`output`, `input`, `criteria`, `expected_output`, … instead of `candidate_answer`, `question`, `expected_outcome`, `reference_answer`): check that the script reads those keys",
            );
            cx.warn(type_node.pos, V4_RESULT_KEYS);
        }
        "rubric" => {
            cx.rename(type_node, "rubrics");
            if let Some((k, items)) = entry(g, "rubrics") {
                cx.rename(k, "criteria");
                rubric_items(items, cx);
            }
        }
        "tool_trajectory" => {
            cx.rename(type_node, "tool-trajectory");
            trajectory(g, type_key, cx);
        }
        "field_accuracy" => cx.rename(type_node, "field-accuracy"),
        "token_usage" => cx.rename(type_node, "token-usage"),
        "execution_metrics" => cx.rename(type_node, "execution-metrics"),
        "composite" => composite(g, cx),
        "latency" | "cost" => {}
        "keywords" => cx.warn(
            type_node.pos,
            "`keywords` has no AgentV 4.x equivalent; kept as written (agentv runs it in a 4.x file, AgentV 4.x scores it 0)",
        ),
        other => cx.warn(type_node.pos, format!("grader type `{other}` kept as written")),
    }
}

/// What a 2.x judge's result loses under AgentV 4.x's reading (reference §6.2).
const V4_RESULT_KEYS: &str = "AgentV 4.x reads `score`, `assertions` and `details` from a code grader's result and ignores `hits`, `misses` and `reasoning` (agentv keeps them, as passed and failed assertions and as reasoning): to keep them under AgentV 4.x, print `assertions: [{text, passed}]`";

/// 2.x reads `prompt` as a file when one exists at that path, else as inline text; 4.x reads
/// a file only from `file://`.
fn llm_prompt(g: &Node, cx: &mut Context<'_>) {
    let Some(prompt) = g.get("prompt") else { return };
    let Some(text) = prompt.as_str() else { return };
    if text.contains('\n') || text.starts_with("file://") {
        return;
    }
    if cx.dir.join(text).is_file() {
        cx.rename(prompt, &format!("file://{text}"));
        cx.warn(
            prompt.pos,
            "4.x fills `{{output}}`, `{{input}}`, `{{criteria}}`, `{{expected_output}}` in prompt files and leaves 2.x names (`{{candidate_answer}}`, `{{question}}`, …) verbatim: check the template",
        );
    }
}

/// Rubric objects: 2.x `description` is 4.x `outcome`.
fn rubric_items(items: &Node, cx: &mut Context<'_>) {
    for item in items.as_seq().unwrap_or_default() {
        if let Some((k, _)) = entry(item, "description") {
            cx.rename(k, "outcome");
        }
    }
}

/// 2.x matches arguments partially (every listed key); 4.x compares them exactly unless
/// `args_match` says otherwise, so a trajectory with arguments gets `args_match: superset`.
fn trajectory(g: &Node, type_key: &Node, cx: &mut Context<'_>) {
    let has_args = g
        .get("expected")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .any(|item| item.get("args").is_some_and(|a| a.as_map().is_some()));
    if has_args && g.get("args_match").is_none() {
        cx.insert_before(type_key, "args_match: superset");
    }
    if let Some(mode) = g.get("mode").and_then(Node::as_str)
        && matches!(mode, "in_order" | "exact")
    {
        cx.warn(
            type_key.pos,
            format!(
                "`{mode}` scores all or nothing in 2.x and the share of expected calls found in 4.x: a partly matching trajectory scores differently"
            ),
        );
    }
}

fn composite(g: &Node, cx: &mut Context<'_>) {
    if let Some((k, members)) = entry(g, "evaluators") {
        cx.rename(k, "assertions");
        grader_list(members, cx);
        for m in members.as_seq().unwrap_or_default() {
            if m.get("name").is_none() {
                cx.error(
                    m.pos,
                    "a 4.x composite member needs a `name` (AgentV 4.x drops members without one)",
                    Some("add `name: ...` to the member"),
                );
            }
        }
    }
    if let Some(agg) = g.get("aggregator")
        && let Some(t) = agg.get("type")
    {
        match t.as_str() {
            Some("code_judge" | "code") => {
                cx.rename(t, "code-grader");
                cx.warn(
                    t.pos,
                    "a 4.x code aggregator receives 4.x member results (`{score, verdict, assertions, …}`, no `hits`, `misses` or `reasoning`) and is read for `score`, `verdict` and `assertions`: check that the script reads and prints those",
                );
            }
            Some("llm_judge") => cx.rename(t, "llm-grader"),
            _ => {}
        }
    }
}
