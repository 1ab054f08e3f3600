//! Graders: each turns an answer into a score in [0, 1] with hits, misses and reasoning.
//!
//! Adding a grader is one file `evaluators/<name>.rs` that exports `ENTRIES` (see
//! [`GraderEntry`]) and one line in the table below; nothing else names grader types.
//! See `docs/architecture.md#add-a-grader`.

pub mod across_rows;
mod ajv;
pub mod candidate;
mod custom_assertion;
mod grader;
pub use crate::js;
mod js_engine;
pub mod js_regex;
pub use crate::judge_pool;
mod list;
mod llm_prompt;
mod llm_reply;
mod metric_check;
mod negate;
pub use crate::nunjucks;
pub mod promptfoo;
mod promptfoo_check;
mod promptfoo_graded;
pub(crate) mod promptfoo_text;
pub mod rules;
mod score;
mod script_assertion;
mod string_check;
#[cfg(test)]
mod testkit;
mod text_metrics;
mod treebank;

pub use grader::{
    CaseField, ConfiguredGrader, Generation, Grade, GradeContext, GradeVerdict, Grader, GraderEntry, Names, Need,
    ParseContext,
};
pub use list::{
    Evaluated, GRADER_KEYS, aggregate, default_graders, default_graders_for, evaluate, parse_graders, result_of,
};
pub use negate::negate;
pub use rules::CaseThreshold;
pub use score::{CaseScore, score_case};

/// Declares the grader modules and lists their entries, in the order messages name them.
macro_rules! grader_table {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// The grader table: every grader's entries, by module.
        pub(crate) static GRADERS: &[&[&GraderEntry]] = &[$($module::ENTRIES),*];
    };
}

grader_table! {
    llm_judge,
    code_judge,
    tool_trajectory,
    keywords,
    llm_grader,
    rubrics,
    composite,
    code_grader,
    equals,
    contains,
    icontains,
    contains_any,
    contains_all,
    icontains_any,
    icontains_all,
    starts_with,
    ends_with,
    regex,
    is_json,
    latency,
    cost,
    token_usage,
    execution_metrics,
    skill_trigger,
    field_accuracy,
    json_schema,
    word_count,
    command,
    is_valid_tool_call,
    tool_call_f1,
    assert_set,
    levenshtein,
    bleu,
    gleu,
    rouge_n,
    perplexity,
    finish_reason,
    is_refusal,
    json_output,
    xml_output,
    html_output,
    sql_output,
    openai_tools,
    javascript,
    python,
    llm_rubric,
    model_graded_closedqa,
    factuality,
    g_eval,
    answer_relevance,
    context_faithfulness,
    context_recall,
    context_relevance,
    similar,
    webhook,
    moderation,
    select_best,
    max_score,
    conversation_relevance,
}

/// Every grader type, in table order.
pub fn entries() -> impl Iterator<Item = &'static GraderEntry> {
    GRADERS.iter().flat_map(|module| module.iter().copied())
}

/// The grader a list entry's `type` names in a file of `generation`
/// ([`rules::lookup_in`]).
/// A promptfoo config's types go through [`promptfoo::entry`], which prefers promptfoo's own
/// checks to agentv's graders of the same names.
pub fn find(generation: Generation, type_name: &str) -> Option<&'static GraderEntry> {
    match generation {
        Generation::Promptfoo => promptfoo::entry(type_name),
        _ => rules::lookup_in(GRADERS, generation, type_name),
    }
}

/// The grader types of AgentV files, for messages: "llm_judge (alias llm-judge), …, or
/// keywords".
pub fn known_types() -> String {
    known_types_of(&[Generation::V2, Generation::V4])
}

/// The grader types files of `generations` may write, for messages.
pub fn known_types_of(generations: &[Generation]) -> String {
    let shown: Vec<String> = entries()
        .chain(promptfoo::OWN.iter().copied())
        .filter_map(|e| {
            let mut spellings: Vec<&str> = Vec::new();
            for name in generations.iter().flat_map(|g| e.names.of(*g)) {
                if !spellings.contains(name) {
                    spellings.push(name);
                }
            }
            let first = match spellings.iter().position(|n| *n == e.type_name()) {
                Some(i) => spellings.remove(i),
                None if spellings.is_empty() => return None,
                None => spellings.remove(0),
            };
            Some(if spellings.is_empty() {
                first.to_owned()
            } else {
                format!("{first} (alias {})", spellings.join(", "))
            })
        })
        .collect();
    match shown.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => shown.concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_names_one_grader() {
        for generation in Generation::ALL {
            let mut seen: Vec<&str> = Vec::new();
            for name in entries().flat_map(|e| e.names.of(generation).iter().copied()) {
                assert!(
                    !seen.contains(&name),
                    "`{name}` names two graders in {}",
                    generation.as_str()
                );
                seen.push(name);
            }
        }
        let mut agentv: Vec<(&str, &str)> = Vec::new();
        for e in entries() {
            for name in e.names.v2.iter().chain(e.names.v4) {
                if let Some((_, other)) = agentv.iter().find(|(n, t)| n == name && *t != e.type_name()) {
                    panic!("`{name}` names {other} and {}", e.type_name());
                }
                agentv.push((name, e.type_name()));
            }
        }
        for (generation, written, want) in [
            (Generation::V2, "llm_judge", "llm_judge"),
            (Generation::V2, "llm-judge", "llm_judge"),
            (Generation::V2, "code", "code_judge"),
            (Generation::V2, "code-judge", "code_judge"),
            (Generation::V4, "tool-trajectory", "tool_trajectory"),
            (Generation::V4, "llm_grader", "llm-grader"),
            (Generation::V2, "keywords", "keywords"),
            (Generation::Promptfoo, "contains-any", "contains-any"),
        ] {
            assert_eq!(
                find(generation, written).map(GraderEntry::type_name),
                Some(want),
                "{written}"
            );
        }
        assert!(find(Generation::V2, "LLM_JUDGE").is_none(), "types are matched exactly");
        assert!(
            find(Generation::Promptfoo, "llm_judge").is_none(),
            "a promptfoo config uses promptfoo's names"
        );
    }

    #[test]
    fn every_grader_has_a_spelling_and_its_results_type_is_one_of_them() {
        for e in entries() {
            assert!(
                e.names.all().any(|n| n == e.type_name()),
                "{}: its results type is none of its spellings",
                e.type_name()
            );
        }
    }

    #[test]
    fn grader_keys_do_not_redeclare_the_common_grader_keys() {
        for entry in entries() {
            let mut seen: Vec<&str> = GRADER_KEYS.keys().flat_map(|k| k.names()).collect();
            for name in entry.keys.keys().flat_map(|k| k.names()) {
                assert!(
                    !seen.contains(&name),
                    "{}: `{name}` is declared twice",
                    entry.type_name()
                );
                seen.push(name);
            }
        }
    }
}
