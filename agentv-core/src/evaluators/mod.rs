//! Graders: each turns an answer into a score in [0, 1] with hits, misses and reasoning.
//!
//! Adding a grader is one file `evaluators/<name>.rs` that exports `ENTRIES` (see
//! [`GraderEntry`]) and one line in the table below; nothing else names grader types.
//! See `docs/architecture.md#add-a-grader`.

mod ajv;
pub mod candidate;
mod grader;
pub mod js;
pub mod js_regex;
pub mod judge_pool;
mod list;
mod llm_prompt;
mod llm_reply;
mod metric_check;
mod negate;
pub mod promptfoo;
mod promptfoo_check;
mod promptfoo_text;
mod score;
mod script_assertion;
mod string_check;
#[cfg(test)]
mod testkit;
mod text_metrics;
mod treebank;

pub use grader::{
    CaseField, ConfiguredGrader, Generation, Grade, GradeContext, GradeVerdict, Grader, GraderEntry, Need, ParseContext,
};
pub use list::{GRADER_KEYS, aggregate, default_graders, default_graders_for, evaluate, parse_graders};
pub use negate::negate;
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
}

/// Every grader type, in table order.
pub fn entries() -> impl Iterator<Item = &'static GraderEntry> {
    GRADERS.iter().flat_map(|module| module.iter().copied())
}

/// The grader a list entry's `type` names (any of its spellings).
pub fn find(type_name: &str) -> Option<&'static GraderEntry> {
    entries().find(|e| e.names.contains(&type_name))
}

/// The grader types, for messages: "llm_judge (alias llm-judge), …, or keywords".
pub fn known_types() -> String {
    let shown: Vec<String> = entries()
        .map(|e| match e.names.split_first() {
            Some((name, aliases)) if !aliases.is_empty() => format!("{name} (alias {})", aliases.join(", ")),
            _ => e.type_name().to_owned(),
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
        let mut seen: Vec<&str> = Vec::new();
        for name in entries().flat_map(|e| e.names.iter().copied()) {
            assert!(!seen.contains(&name), "`{name}` names two graders");
            seen.push(name);
        }
        for (written, want) in [
            ("llm_judge", "llm_judge"),
            ("llm-judge", "llm_judge"),
            ("code", "code_judge"),
            ("code-judge", "code_judge"),
            ("tool-trajectory", "tool_trajectory"),
            ("keywords", "keywords"),
        ] {
            assert_eq!(find(written).map(GraderEntry::type_name), Some(want), "{written}");
        }
        assert!(find("LLM_JUDGE").is_none(), "types are matched exactly");
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
