//! What the 4.x string assertions (`contains`, `equals`, `regex`, … reference §2.4) share:
//! their `value` key, read at load, and the candidate they test.

use super::grader::{GradeContext, ParseContext};
use crate::config::{Fields, Key, Kind, NodeValue, describe};

/// `value` as one string.
pub const VALUE_TEXT: &[Key] =
    &[Key::new("value", Kind::Str, "The text to look for (a string; quote numbers).").required()];

/// `value` as a list of strings.
pub const VALUE_LIST: &[Key] = &[Key::new(
    "value",
    Kind::List(&Kind::Str),
    "The texts to look for (a list of strings).",
)
.required()];

/// The candidate a 4.x grader tests (reference §2.4); the record's answer when the output has
/// no messages to read it from.
pub fn candidate(ctx: &GradeContext<'_>) -> String {
    if ctx.output_messages.is_empty() {
        ctx.candidate_answer.to_owned()
    } else {
        super::candidate::text(ctx.output_messages)
    }
}

/// Reads `value` as a non-empty string. 4.x skips the grader when it is missing, empty or not a
/// string (`value: 4` is a number: quote it); here each is an error at its position.
pub fn value_text(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<String> {
    let what = f.what().to_owned();
    let Some(node) = f.take("value").filter(|n| !n.is_null()) else {
        cx.diags.error(
            f.pos,
            format!("{what} is missing the required key `value`"),
            Some("add `value: <text>` to it".to_owned()),
        );
        return None;
    };
    match &node.value {
        NodeValue::Str(s) if !s.is_empty() => Some(s.clone()),
        NodeValue::Str(_) => {
            cx.diags.error(
                node.pos,
                format!("{what} has an empty `value`"),
                Some("give the text to look for".to_owned()),
            );
            None
        }
        NodeValue::Int(_) | NodeValue::Float(_) | NodeValue::Bool(_) => {
            cx.diags.error(
                node.pos,
                format!("`value` of {what} must be a string, found {}", describe(node)),
                Some(format!("quote it: value: \"{}\"", node.key_text())),
            );
            None
        }
        _ => {
            cx.diags.error(
                node.pos,
                format!("`value` of {what} must be a string, found {}", node.type_name()),
                Some(if node.as_seq().is_some() {
                    format!("{what} checks one text; for several use {what}-any or {what}-all")
                } else {
                    "write the text to look for".to_owned()
                }),
            );
            None
        }
    }
}

/// Reads `value` as a list with at least one string, and the number of items written (4.x
/// names the grader by it). Items that are not strings are ignored with a warning, as 4.x
/// drops them.
pub fn value_list(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<(Vec<String>, usize)> {
    let what = f.what().to_owned();
    let Some(node) = f.take("value").filter(|n| !n.is_null()) else {
        cx.diags.error(
            f.pos,
            format!("{what} is missing the required key `value`"),
            Some("add `value: [text, ...]` to it".to_owned()),
        );
        return None;
    };
    let Some(items) = node.as_seq() else {
        cx.diags.error(
            node.pos,
            format!("`value` of {what} must be a list of strings, found {}", describe(node)),
            Some(format!("write it as a list: value: [{}]", node.key_text())),
        );
        return None;
    };
    let mut values = Vec::with_capacity(items.len());
    for item in items {
        match item.as_str() {
            Some(s) => values.push(s.to_owned()),
            None => cx.diags.warn(
                item.pos,
                format!(
                    "`value` of {what} holds {}, not a string; it is ignored",
                    describe(item)
                ),
                Some("quote it to look for its text".to_owned()),
            ),
        }
    }
    if values.is_empty() {
        cx.diags.error(
            node.pos,
            format!("`value` of {what} must hold at least one string"),
            Some("list the texts to look for: value: [a, b]".to_owned()),
        );
        return None;
    }
    Some((values, items.len()))
}

/// `"a", "b"`: how 4.x lists values in its texts.
pub fn quoted_list<'v>(values: impl IntoIterator<Item = &'v String>) -> String {
    values
        .into_iter()
        .map(|v| format!("\"{v}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
pub(crate) mod testing {
    //! Parsing one grader entry the way a suite does, for the graders' tests.

    use std::path::Path;

    use crate::config::Diagnostics;
    use crate::config::node::parse_yaml;
    use crate::evaluators::{ConfiguredGrader, Grade, GradeVerdict, ParseContext, negate, parse_graders};
    use crate::model::Assertion;
    use crate::paths::Workspace;

    /// Parses `yaml` (one grader mapping, flow style) as a one-entry list; returns the grader
    /// when valid and every diagnostic as text (`e.yaml:1:9: error: ...`).
    pub fn parse_one(yaml: &str) -> (Option<ConfiguredGrader>, Vec<String>) {
        parse_in(yaml, &std::env::temp_dir())
    }

    /// [`parse_one`] for an eval file in `dir`.
    pub fn parse_in(yaml: &str, dir: &Path) -> (Option<ConfiguredGrader>, Vec<String>) {
        let node = parse_yaml(&format!("- {yaml}\n")).expect("yaml");
        let ws = Workspace::from_cwd(dir.to_path_buf());
        let mut diags = Diagnostics::new(Path::new("e.yaml"));
        let generation = crate::evaluators::testkit::list_generation(&node);
        let mut cx = ParseContext::new(&ws, dir, &mut diags).with_generation(generation);
        let graders = parse_graders(&node, &mut cx);
        let shown = diags.into_vec().iter().map(ToString::to_string).collect();
        (graders.and_then(|mut g| g.pop()), shown)
    }

    /// Checks one-assertion grades against 4.x: score 1 or 0, the assertion text and outcome,
    /// hits or misses holding the text, and the negated grade flipping all of it.
    pub fn check_grades(cases: impl IntoIterator<Item = (Grade, bool, &'static str)>) {
        for (g, passed, text) in cases {
            let want = f64::from(u8::from(passed));
            assert_eq!(g.score, want, "{text}");
            assert_eq!(
                g.verdict4(),
                if passed { GradeVerdict::Pass } else { GradeVerdict::Fail },
                "{text}"
            );
            assert_eq!(g.assertions, [Assertion::new(text, passed)]);
            assert_eq!(if passed { &g.hits } else { &g.misses }, &[text.to_owned()]);
            let n = negate(g);
            assert_eq!(n.score, 1.0 - want, "negated {text}");
            assert_eq!(n.assertions, [Assertion::new(text, !passed)], "negated");
            assert_eq!(if passed { &n.misses } else { &n.hits }, &[text.to_owned()], "negated");
        }
    }

    /// The problems of an invalid entry, each as its first line.
    pub fn problems(yaml: &str) -> Vec<String> {
        let (grader, shown) = parse_one(yaml);
        assert!(grader.is_none(), "{yaml} should not load");
        shown
            .iter()
            .map(|s| s.lines().next().unwrap_or_default().to_owned())
            .collect()
    }
}
