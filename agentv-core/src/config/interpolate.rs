//! Substitutions over a value tree, as AgentV 4.x applies them to eval files
//! (`agentv-4.md` §1.2 and §1.6): `${{ VAR }}` environment references in every string, and
//! `{{ name }}` case variables (`vars`) in the fields that take them.
//!
//! Both keep the type of a value that is exactly one reference: `weight: "${{ W }}"` with
//! `W=3` is the number 3, and `expected_output: "{{ expected }}"` is whatever `expected` holds.
//! Inside a longer string the value is inserted as text. Keys are never rewritten.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::node::{Node, NodeValue, Pos};

/// The one `${{ VAR }}` grammar of the code base (eval files, targets files, `.env`-backed
/// settings): a POSIX variable name between `${{` and `}}`, spaces allowed inside.
static ENV_REF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}").expect("static regex"));

/// The variable named by a value that is exactly one `${{ VAR }}` (surrounding spaces allowed).
pub fn env_reference(value: &str) -> Option<&str> {
    let value = value.trim();
    let c = ENV_REF.captures(value)?;
    let all = c.get(0)?;
    (all.start() == 0 && all.end() == value.len()).then(|| c.get(1).map(|m| m.as_str()))?
}

/// Every variable `text` references, in order (a name used twice is listed twice).
pub fn env_references(text: &str) -> impl Iterator<Item = &str> {
    ENV_REF.captures_iter(text).filter_map(|c| c.get(1).map(|m| m.as_str()))
}

/// `text` with every `${{ VAR }}` replaced by `lookup(VAR)`; a reference without a value
/// becomes empty text and its name is returned.
pub fn substitute_env(text: &str, mut lookup: impl FnMut(&str) -> Option<String>) -> (String, Vec<String>) {
    let mut unset = Vec::new();
    let replaced = ENV_REF
        .replace_all(text, |c: &Captures<'_>| {
            lookup(&c[1]).unwrap_or_else(|| {
                unset.push(c[1].to_owned());
                String::new()
            })
        })
        .into_owned();
    (replaced, unset)
}

static VAR_REF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}").expect("static regex"));

static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^-?(0|[1-9]\d*)(\.\d+)?$").expect("static regex"));

/// A `${{ VAR }}` that named an unset variable: it reads as empty text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unset {
    pub pos: Pos,
    pub name: String,
}

/// Replaces every `${{ NAME }}` in the string values of `node` with `lookup(NAME)` (unset:
/// empty). A string that is exactly one reference takes the type of its text: `true` and
/// `false` become booleans, decimal numbers numbers. Returns the unset names, with where they
/// were used.
pub fn interpolate_env(node: &mut Node, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<Unset> {
    let mut unset = Vec::new();
    walk_env(node, lookup, &mut unset);
    unset
}

fn walk_env(node: &mut Node, lookup: &dyn Fn(&str) -> Option<String>, unset: &mut Vec<Unset>) {
    match &mut node.value {
        NodeValue::Str(text) if text.contains("${{") => {
            let pos = node.pos;
            let mut value_of = |name: &str| {
                lookup(name).or_else(|| {
                    unset.push(Unset {
                        pos,
                        name: name.to_owned(),
                    });
                    None
                })
            };
            if let Some(whole) = whole_match(&ENV_REF, text) {
                node.value = typed(value_of(&whole).unwrap_or_default());
                return;
            }
            *text = substitute_env(text, value_of).0;
        }
        NodeValue::Seq(items) => items.iter_mut().for_each(|i| walk_env(i, lookup, unset)),
        NodeValue::Map(entries) => entries.iter_mut().for_each(|(_, v)| walk_env(v, lookup, unset)),
        _ => {}
    }
}

/// The name inside `text` when `text` is exactly one reference of `pattern`.
fn whole_match(pattern: &Regex, text: &str) -> Option<String> {
    let c = pattern.captures(text)?;
    let all = c.get(0)?;
    (all.start() == 0 && all.end() == text.len()).then(|| c[1].to_owned())
}

/// The value of a whole-value environment reference: `true`/`false` and decimal numbers are
/// typed, anything else stays text.
fn typed(text: String) -> NodeValue {
    match text.as_str() {
        "true" => return NodeValue::Bool(true),
        "false" => return NodeValue::Bool(false),
        _ => {}
    }
    if NUMBER.is_match(&text) {
        if let Ok(i) = text.parse::<i64>() {
            return NodeValue::Int(i);
        }
        if let Ok(f) = text.parse::<f64>() {
            return NodeValue::Float(f);
        }
    }
    NodeValue::Str(text)
}

/// Replaces `{{ path }}` in the string values of `node` with the value at `path` (dotted,
/// into nested mappings and lists) in `vars`. A string that is exactly one placeholder becomes
/// that value itself (a mapping stays a mapping); inside longer text a string is inserted as
/// is and anything else as compact JSON. Placeholders naming nothing in `vars` stay as written,
/// so a grader's own `{{ output }}` survives.
pub fn substitute_vars(node: &mut Node, vars: &Node) {
    match &mut node.value {
        NodeValue::Str(text) if text.contains("{{") => {
            if let Some(path) = whole_match(&VAR_REF, text)
                && let Some(value) = lookup_path(vars, &path)
            {
                let pos = node.pos;
                *node = value.clone();
                node.pos = pos;
                return;
            }
            let replaced = VAR_REF
                .replace_all(text, |c: &Captures<'_>| match lookup_path(vars, &c[1]) {
                    Some(value) => inline_text(value),
                    None => c[0].to_owned(),
                })
                .into_owned();
            *text = replaced;
        }
        NodeValue::Seq(items) => items.iter_mut().for_each(|i| substitute_vars(i, vars)),
        NodeValue::Map(entries) => entries.iter_mut().for_each(|(_, v)| substitute_vars(v, vars)),
        _ => {}
    }
}

/// The value at a dotted `path` (`a.b.0`) in `vars`.
fn lookup_path<'v>(vars: &'v Node, path: &str) -> Option<&'v Node> {
    path.split('.').try_fold(vars, |node, part| match &node.value {
        NodeValue::Map(_) => node.get(part),
        NodeValue::Seq(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// A value inside longer text: strings as they are, anything else as compact JSON.
fn inline_text(value: &Node) -> String {
    match &value.value {
        NodeValue::Str(s) => s.clone(),
        _ => value.to_json().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::node::parse_yaml;

    /// Another reader of `${{ VAR }}` (a second regex, a `find("${{")` and a hand-made scan)
    /// would accept another grammar: a reference one file takes and another leaves as text.
    #[test]
    fn the_env_reference_grammar_is_defined_once() {
        fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).expect("readable").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    sources(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        sources(&root.join("src"), &mut files);
        sources(&root.join("../src"), &mut files);
        assert!(files.len() > 50, "{} files", files.len());
        let parsers = [
            r"\$\{\{",
            "find(\"${{",
            "split(\"${{",
            "split_once(\"${{",
            "strip_prefix(\"${{",
        ];
        let mut found = Vec::new();
        for file in files.iter().filter(|f| !f.ends_with("config/interpolate.rs")) {
            let text = std::fs::read_to_string(file).expect("source");
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for parser in parsers.iter().filter(|p| code.contains(*p)) {
                found.push(format!("{}: {parser}", file.display()));
            }
        }
        assert!(
            found.is_empty(),
            "read `${{{{ VAR }}}}` with config::interpolate:\n{}",
            found.join("\n")
        );
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "CITY" => Some("Paris".into()),
            "W" => Some("3".into()),
            "HALF" => Some("0.5".into()),
            "YES" => Some("true".into()),
            "ZIP" => Some("007".into()),
            _ => None,
        }
    }

    #[test]
    fn env_references_are_replaced_and_whole_values_typed() {
        let cases = [
            ("v: ${{ CITY }}", serde_json::json!({"v": "Paris"})),
            ("v: '${{W}}'", serde_json::json!({"v": 3})),
            ("v: '${{ HALF }}'", serde_json::json!({"v": 0.5})),
            ("v: '${{ YES }}'", serde_json::json!({"v": true})),
            ("v: '${{ ZIP }}'", serde_json::json!({"v": "007"})),
            ("v: 'w=${{ W }}'", serde_json::json!({"v": "w=3"})),
            ("v: 'a ${{ NOPE }} b'", serde_json::json!({"v": "a  b"})),
            (
                "v: [x, {k: '${{ CITY }}!'}]",
                serde_json::json!({"v": ["x", {"k": "Paris!"}]}),
            ),
            (
                "'${{ CITY }}': keys stay",
                serde_json::json!({"${{ CITY }}": "keys stay"}),
            ),
        ];
        for (yaml, want) in cases {
            let mut node = parse_yaml(yaml).expect("yaml");
            interpolate_env(&mut node, &env);
            assert_eq!(node.to_json(), want, "{yaml}");
        }
        let mut node = parse_yaml("a: ${{ NOPE }}\nb: ${{ CITY }}\n").expect("yaml");
        let unset = interpolate_env(&mut node, &env);
        assert_eq!(
            unset,
            [Unset {
                pos: Pos::new(1, 4),
                name: "NOPE".into()
            }]
        );
    }

    /// One grammar: what names a whole value is what is found and replaced inside one.
    #[test]
    fn one_env_reference_grammar_for_whole_values_and_inner_text() {
        let cases = [
            ("${{ CITY }}", Some("CITY"), vec!["CITY"], "Paris"),
            ("  ${{W}} ", Some("W"), vec!["W"], "  3 "),
            ("http://h:${{ W }}/v1", None, vec!["W"], "http://h:3/v1"),
            ("${{ W }}${{ CITY }}", None, vec!["W", "CITY"], "3Paris"),
            ("${{ 1X }}", None, vec![], "${{ 1X }}"),
            ("${{ A-B }}", None, vec![], "${{ A-B }}"),
            ("${ CITY }", None, vec![], "${ CITY }"),
            ("${{ NOPE }}!", None, vec!["NOPE"], "!"),
        ];
        for (text, whole, names, replaced) in cases {
            assert_eq!(env_reference(text), whole, "{text}");
            assert_eq!(env_references(text).collect::<Vec<_>>(), names, "{text}");
            assert_eq!(substitute_env(text, env).0, replaced, "{text}");
        }
    }

    #[test]
    fn vars_keep_the_type_of_a_whole_value_and_leave_unknown_names() {
        let vars = parse_yaml("city: Paris\nn: 2\nexpected: {city: Paris, tags: [a, b]}\n").expect("yaml");
        let cases = [
            ("v: '{{ city }}'", serde_json::json!({"v": "Paris"})),
            ("v: '{{n}}'", serde_json::json!({"v": 2})),
            (
                "v: '{{ expected }}'",
                serde_json::json!({"v": {"city": "Paris", "tags": ["a", "b"]}}),
            ),
            ("v: 'in {{ expected.city }}'", serde_json::json!({"v": "in Paris"})),
            ("v: '{{ expected.tags.1 }}'", serde_json::json!({"v": "b"})),
            (
                "v: 'x={{ expected }}'",
                serde_json::json!({"v": "x={\"city\":\"Paris\",\"tags\":[\"a\",\"b\"]}"}),
            ),
            (
                "v: '{{ output }} {{ city }}'",
                serde_json::json!({"v": "{{ output }} Paris"}),
            ),
            (
                "v: '{{ expected.nope }}'",
                serde_json::json!({"v": "{{ expected.nope }}"}),
            ),
        ];
        for (yaml, want) in cases {
            let mut node = parse_yaml(yaml).expect("yaml");
            substitute_vars(&mut node, &vars);
            assert_eq!(node.to_json(), want, "{yaml}");
        }
    }
}
