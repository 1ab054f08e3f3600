//! Prompt templates with `{{ variable }}` placeholders: substitution (unknown names stay as
//! written, as AgentV does) and the load-time check of a template against the variables its
//! grader provides.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::config::{Diagnostics, Pos};

static VARIABLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{\{\s*([a-zA-Z0-9_]+)\s*\}\}").expect("static regex"));

/// The variable names `template` uses, in order (repeats included).
pub fn variables(template: &str) -> impl Iterator<Item = &str> {
    VARIABLE
        .captures_iter(template)
        .filter_map(|cap| cap.get(1).map(|m| m.as_str()))
}

/// Whether `template` uses `{{ name }}`.
pub fn uses(template: &str, name: &str) -> bool {
    variables(template).any(|v| v == name)
}

/// Replaces `{{ name }}` with `values[name]`; unknown names stay as written.
pub fn substitute(template: &str, values: &HashMap<&str, String>) -> String {
    substitute_with(template, |name| values.get(name).cloned())
}

/// Replaces `{{ name }}` with `value(name)`, computed only for the names the template uses;
/// `None` leaves the placeholder as written.
pub fn substitute_with(template: &str, mut value: impl FnMut(&str) -> Option<String>) -> String {
    VARIABLE
        .replace_all(template, |cap: &regex::Captures<'_>| {
            value(&cap[1]).unwrap_or_else(|| cap[0].to_owned())
        })
        .into_owned()
}

/// What a template may use, for [`check`].
#[derive(Debug, Clone, Copy)]
pub struct Rules<'r> {
    /// How messages name the template ("the llm_judge prompt").
    pub owner: &'r str,
    /// Every variable the grader provides.
    pub known: &'r [&'r str],
    /// Variables that show the answer; a template that uses none of them grades blind.
    pub answer: &'r [&'r str],
}

/// Load-time check of a custom template: unknown variables, and a template that cannot see the
/// answer, are warnings at `pos`.
pub fn check(template: &str, rules: Rules<'_>, pos: Pos, diags: &mut Diagnostics) {
    let mut seen_answer = false;
    for name in variables(template) {
        seen_answer |= rules.answer.contains(&name);
        if !rules.known.contains(&name) {
            diags.warn(
                pos,
                format!(
                    "unknown variable `{{{{ {name} }}}}` in {}; it is left as written",
                    rules.owner
                ),
                Some(format!("known variables: {}", rules.known.join(", "))),
            );
        }
    }
    if !seen_answer && let Some((first, others)) = rules.answer.split_first() {
        let mut fix = format!("add `{{{{ {first} }}}}`");
        for other in others {
            fix.push_str(&format!(" (or `{{{{ {other} }}}}`)"));
        }
        diags.warn(pos, format!("{} never shows the answer", rules.owner), Some(fix));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitution_allows_inner_whitespace_and_keeps_unknown() {
        let values = HashMap::from([("question", "Q".to_owned()), ("candidate_answer", "A".to_owned())]);
        assert_eq!(
            substitute("{{question}} {{  candidate_answer  }} {{ nope }}", &values),
            "Q A {{ nope }}"
        );
    }

    #[test]
    fn template_check_warns_about_unknown_variables_and_missing_answer() {
        let rules = Rules {
            owner: "the llm_judge prompt",
            known: &["question", "candidate_answer", "output_messages"],
            answer: &["candidate_answer", "output_messages"],
        };
        let mut d = Diagnostics::new(std::path::Path::new("e.yaml"));
        check("Grade {{ questoin }}", rules, Pos::new(2, 3), &mut d);
        let text: Vec<String> = d.into_vec().iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(text[0].contains("unknown variable `{{ questoin }}` in the llm_judge prompt"));
        assert!(text[1].contains("the llm_judge prompt never shows the answer"));
        assert!(text[1].contains("add `{{ candidate_answer }}` (or `{{ output_messages }}`)"));
        assert!(uses("x {{ expected_outcome }}", "expected_outcome"));
        assert!(!uses("x {{ expected_outcomes }}", "expected_outcome"));
    }
}
