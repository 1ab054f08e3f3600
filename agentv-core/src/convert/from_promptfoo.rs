//! A promptfoo config to an AgentV 4.x suite (`docs/convert.md#from-promptfoo`).
//!
//! The config is read by the loader's own code ([`crate::load::promptfoo::parts`]): tests
//! expanded (list vars, `defaultTest`, `scenarios`, CSV and YAML files), prompts rendered per
//! test, assertion values rendered by its vars. Each row (test × prompt) becomes one 4.x case
//! whose `input` is the rendered prompt, so the suite sends exactly what promptfoo sends.
//! An assertion is mapped only onto a 4.x grader that gives the same pass and score on every
//! answer; a test's "every assertion passes" rule becomes `execution.threshold: 1` (every
//! mapped grader scores 0 or 1). Anything else is an error at its line: nothing is written.
//!
//! The suite is written anew (a promptfoo config has no 4.x layout to keep), with the
//! providers' targets as a comment for `.agentv/targets.yaml`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::Converted;
use crate::config::node::parse_yaml;
use crate::config::{Diagnostic, Diagnostics, Node, NodeValue, Pos};
use crate::evaluators::{Generation, ParseContext, parse_graders};
use crate::load::promptfoo::{self as pf, test_list::Test};
use crate::model::Role;

/// Keys of a test (inline, in `defaultTest` or a scenario) the conversion carries.
const TEST_KEYS: &[&str] = &["description", "vars", "assert", "threshold", "metadata"];
/// Keys of an assertion the conversion carries (the value keys are the type's).
const ASSERTION_KEYS: &[&str] = &["type", "value", "weight", "metric"];

/// Converts the promptfoo config `text` (file `file`, relative paths from `dir`).
pub fn convert(text: &str, file: &Path, dir: &Path) -> Result<Converted, Vec<Diagnostic>> {
    let (root, mut diags) = super::parse(text, file)?;
    let file: Arc<Path> = Arc::from(file);
    let parts = pf::parts(&root, &file, dir, &mut diags);
    let mut out = Problems::default();
    check_test_keys(&root, &mut out);
    warn_not_carried(&root, &mut out);
    check_env_reads(&root, &parts, &mut out);
    let providers_pos = root.get("providers").map_or(root.pos, |n| n.pos);
    for p in parts.providers.iter().filter(|p| p.prompts.is_some()) {
        // A 4.x suite runs every case on every target.
        out.error(
            providers_pos,
            format!(
                "provider `{}` runs only some prompts (`prompts`), which a 4.x suite cannot say",
                p.id
            ),
            Some("convert a config per provider, each with its own prompts"),
        );
    }
    let ws = crate::paths::Workspace::from_cwd(dir.to_path_buf());
    let mut cases = String::new();
    for (test_index, test) in parts.tests.iter().enumerate() {
        let Some(assertions) = test_assertions(test, &ws, dir, &mut diags, &mut out) else {
            continue;
        };
        for (prompt_index, prompt) in parts.prompts.iter().enumerate() {
            let id = pf::row_id(test_index, prompt_index, parts.prompts.len());
            match pf::template::render(&prompt.raw, &test.vars) {
                Ok(rendered) => write_case(&mut cases, &id, test, &prompt.label, &rendered, &assertions, &mut out),
                Err(e) => out.error(
                    test.pos,
                    format!("prompt `{}` does not render for this test: {e}", prompt.label),
                    None,
                ),
            }
        }
    }
    out.into_diags(&mut diags);
    if diags.error_count() > 0 {
        return Err(diags
            .into_vec()
            .into_iter()
            .filter(|d| d.severity == crate::config::Severity::Error)
            .collect());
    }
    let suite = header(&file, &parts, root.get("description").and_then(Node::scalar_text)) + &cases;
    if let Err(errors) = parse_yaml(&suite) {
        // The writer quotes every value; this would be a bug, said rather than written.
        let message = errors.first().map_or_else(String::new, |e| e.message.clone());
        diags.error(
            root.pos,
            format!("the converted suite is not valid YAML: {message}"),
            None,
        );
        return Err(diags.into_vec());
    }
    Ok(Converted {
        text: suite,
        from: Generation::Promptfoo,
        warnings: diags.into_vec(),
    })
}

/// Problems found while mapping, each said once (an expanded test repeats its source's).
#[derive(Default)]
struct Problems {
    seen: BTreeSet<(u64, u64, String)>,
    list: Vec<(bool, Pos, String, Option<String>)>,
}

/// Warns about the top-level keys the suite does not carry over.
fn warn_not_carried(root: &Node, out: &mut Problems) {
    for key in pf::IGNORED {
        if let Some((k, _)) = root
            .as_map()
            .unwrap_or_default()
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
        {
            out.warn(
                k.pos,
                format!("`{key}` is not carried over: it changes no verdict or score"),
            );
        }
    }
    if let Some((k, _)) = root
        .as_map()
        .unwrap_or_default()
        .iter()
        .find(|(k, _)| k.as_str() == Some("derivedMetrics"))
    {
        out.warn(
            k.pos,
            "`derivedMetrics` is not carried over: a 4.x suite has no derived metrics",
        );
    }
}

impl Problems {
    fn error(&mut self, pos: Pos, message: impl Into<String>, help: Option<&str>) {
        self.add(true, pos, message.into(), help.map(str::to_owned));
    }

    fn warn(&mut self, pos: Pos, message: impl Into<String>) {
        self.add(false, pos, message.into(), None);
    }

    fn add(&mut self, error: bool, pos: Pos, message: String, help: Option<String>) {
        if self.seen.insert((pos.line, pos.column, message.clone())) {
            self.list.push((error, pos, message, help));
        }
    }

    fn into_diags(self, diags: &mut Diagnostics) {
        for (error, pos, message, help) in self.list {
            if error {
                diags.error(pos, message, help);
            } else {
                diags.warn(pos, message, help);
            }
        }
    }
}

/// Templates reading the environment (`{{ env.KEY }}`): rendering them would write the
/// variable's value, perhaps a secret, into the suite (`docs/convert.md#from-promptfoo`).
fn check_env_reads(root: &Node, parts: &pf::Parts, out: &mut Problems) {
    let reads_env = |t: &str| pf::template::is_template(t) && (t.contains("env.") || t.contains("env["));
    let prompts_pos = root.get("prompts").map_or(root.pos, |n| n.pos);
    for prompt in parts.prompts.iter().filter(|p| reads_env(&p.raw)) {
        out.error(
            prompts_pos,
            format!(
                "prompt `{}` reads the environment: its value would be written into the suite",
                prompt.label
            ),
            Some("pass the value as a test var instead"),
        );
    }
    for test in &parts.tests {
        for node in &test.assert {
            strings_reading_env(node, &reads_env, out);
        }
    }
}

fn strings_reading_env(node: &Node, reads_env: &dyn Fn(&str) -> bool, out: &mut Problems) {
    match &node.value {
        NodeValue::Str(text) if reads_env(text) => out.error(
            node.pos,
            "this value reads the environment: its value would be written into the suite",
            Some("pass the value as a test var instead"),
        ),
        NodeValue::Seq(items) => items.iter().for_each(|i| strings_reading_env(i, reads_env, out)),
        NodeValue::Map(entries) => entries.iter().for_each(|(_, v)| strings_reading_env(v, reads_env, out)),
        _ => {}
    }
}

/// Test keys promptfoo reads that have no 4.x equivalent (`options`, `provider`, …), in
/// `defaultTest`, the inline tests and the scenarios' tests and configs.
fn check_test_keys(root: &Node, out: &mut Problems) {
    let mut tests: Vec<&Node> = Vec::new();
    tests.extend(root.get("defaultTest"));
    tests.extend(root.get("tests").and_then(Node::as_seq).unwrap_or_default());
    for scenario in root.get("scenarios").and_then(Node::as_seq).unwrap_or_default() {
        tests.extend(scenario.get("config").and_then(Node::as_seq).unwrap_or_default());
        tests.extend(scenario.get("tests").and_then(Node::as_seq).unwrap_or_default());
    }
    for test in tests {
        for (k, _) in test.as_map().unwrap_or_default() {
            let key = k.key_text();
            if !TEST_KEYS.contains(&key.as_str()) {
                out.error(
                    k.pos,
                    format!("`{key}` of a test has no AgentV 4.x equivalent"),
                    Some("remove it, or keep running this config with `agentv eval`"),
                );
            }
        }
    }
}

/// The 4.x grader lines of a test's assertions and its case threshold; `None` when one does
/// not map (reported).
fn test_assertions(
    test: &Test,
    ws: &crate::paths::Workspace,
    dir: &Path,
    diags: &mut Diagnostics,
    out: &mut Problems,
) -> Option<(Vec<String>, f64)> {
    let mut render_errors = Vec::new();
    let list: Vec<Node> = test
        .assert
        .iter()
        .map(|n| pf::rendered(n, &test.vars, &mut render_errors))
        .collect();
    for (pos, e) in render_errors {
        out.error(pos, format!("an assertion does not render for this test: {e}"), None);
    }
    let mut lines = Vec::new();
    let mut weight = 0.0;
    for node in &list {
        if let Some((line, w)) = assertion(node, out) {
            lines.push(line);
            weight += w;
        }
    }
    if lines.len() < list.len() {
        return None;
    }
    // Then the config's own rules: an assertion the config may not hold is not converted.
    let before = diags.error_count();
    let seq = Node::new(NodeValue::Seq(list), test.pos);
    let mut cx = ParseContext::new(ws, dir, diags).with_generation(Generation::Promptfoo);
    let _ = parse_graders(&seq, &mut cx);
    if diags.error_count() > before {
        return None;
    }
    let threshold = match test.threshold {
        Some(t) if (0.0..=1.0).contains(&t) => t,
        Some(t) => {
            out.error(
                test.pos,
                format!("a test `threshold` of {t}: AgentV 4.x thresholds are between 0 and 1"),
                None,
            );
            return None;
        }
        None if lines.is_empty() => {
            out.error(
                test.pos,
                "a test without assertions passes in promptfoo; an AgentV 4.x case without graders is judged by its default llm-grader",
                Some("add an assertion to the test"),
            );
            return None;
        }
        // Every mapped grader scores 0 or 1, so "all pass" is "the weighted mean is 1".
        None if weight > 0.0 => 1.0,
        None => {
            out.error(
                test.pos,
                "every assertion of this test has weight 0: promptfoo passes it, AgentV 4.x scores it 0",
                None,
            );
            return None;
        }
    };
    Some((lines, threshold))
}

/// One assertion as a 4.x grader (a flow mapping) and its weight; `None` (reported) when it
/// has no exact equivalent.
fn assertion(node: &Node, out: &mut Problems) -> Option<(String, f64)> {
    let written = node.get("type").and_then(Node::as_str).unwrap_or_default();
    let (negate, kind) = match written.strip_prefix("not-") {
        Some(kind) => (true, kind),
        None => (false, written),
    };
    let value = node.get("value");
    let (mapped, value) = match (kind, value.map(Node::to_json)) {
        ("contains" | "icontains", Some(v @ (Value::String(_) | Value::Number(_)))) => {
            (kind, Value::String(crate::evaluators::js::string_of(&v)))
        }
        ("contains-any" | "contains-all" | "icontains-any" | "icontains-all", Some(v)) => {
            (kind, Value::Array(list_value(&v, node, out)?))
        }
        ("starts-with", Some(Value::String(s))) => ("regex", Value::String(format!("^{}", js_escape(&s)))),
        ("equals", Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_)))) => {
            let text = crate::evaluators::js::string_of(&v);
            ("regex", Value::String(format!("^{}$", js_escape(&text))))
        }
        ("regex", Some(Value::String(s))) => ("regex", Value::String(regex_value(&s, node, out)?)),
        ("is-json", None) => ("is-json", Value::Null),
        _ => {
            let why = match kind {
                "equals" => "a structured `value` compares JSON; AgentV 4.x's `equals` compares text",
                "is-json" => "AgentV 4.x's `is-json` has no schema",
                "javascript" | "python" => "AgentV 4.x runs code as a `code-grader` with another contract",
                "llm-rubric" | "model-graded-closedqa" | "factuality" | "g-eval" => {
                    "AgentV 4.x's `llm-grader` sends another grading prompt"
                }
                "assert-set" => "AgentV 4.x's `composite` scores its members another way",
                _ => "no AgentV 4.x grader gives the same pass and score",
            };
            out.error(
                node.get("type").map_or(node.pos, |t| t.pos),
                format!("`{written}` cannot be converted: {why}"),
                Some("remove it, or keep running this config with `agentv eval`"),
            );
            return None;
        }
    };
    for (k, _) in node.as_map().unwrap_or_default() {
        let key = k.key_text();
        if !ASSERTION_KEYS.contains(&key.as_str()) {
            out.error(
                k.pos,
                format!("`{key}` of this `{written}` assertion has no AgentV 4.x equivalent"),
                Some("remove it, or keep running this config with `agentv eval`"),
            );
            return None;
        }
    }
    let weight = node.get("weight").map_or(Some(1.0), Node::as_f64);
    let weight = match weight {
        Some(w) if w.is_finite() && w >= 0.0 => w,
        _ => {
            out.error(node.pos, "an assertion's `weight` must be a number of 0 or more", None);
            return None;
        }
    };
    if let Some(metric) = node.get("metric") {
        out.warn(
            metric.pos,
            "`metric` is not carried over: AgentV 4.x has no named scores (the score is unchanged)",
        );
    }
    let mut line = format!("{{type: {mapped}");
    if !value.is_null() {
        let _ = write!(line, ", value: {}", json(&value));
    }
    if node.get("weight").is_some() {
        let _ = write!(line, ", weight: {}", json(&Value::from(weight)));
    }
    if negate {
        line.push_str(", negate: true");
    }
    line.push('}');
    Some((line, weight))
}

/// A `*-any` / `*-all` value as 4.x's list of non-empty strings.
fn list_value(value: &Value, node: &Node, out: &mut Problems) -> Option<Vec<Value>> {
    let items: Vec<String> = match value {
        Value::String(s) => crate::evaluators::promptfoo_text::comma_separated(s).ok()?,
        Value::Array(items) => items.iter().map(crate::evaluators::js::string_of).collect(),
        _ => return None,
    };
    if items.is_empty() || items.iter().any(String::is_empty) {
        out.error(
            node.pos,
            "an empty item (or an empty list) cannot be converted: AgentV 4.x drops empty items",
            None,
        );
        return None;
    }
    Some(items.into_iter().map(Value::String).collect())
}

/// A `regex` pattern both tools read alike: one that compiles and has no inline flag group,
/// which promptfoo (V8) refuses.
fn regex_value(pattern: &str, node: &Node, out: &mut Problems) -> Option<String> {
    if !is_js_pattern(pattern) {
        out.error(
            node.pos,
            format!("the pattern `{pattern}` is not a valid JavaScript regular expression"),
            Some("fix the pattern: promptfoo fails this assertion on every answer"),
        );
        return None;
    }
    Some(pattern.to_owned())
}

/// Whether promptfoo (V8) and agentv read `pattern` alike: it compiles and has no inline
/// flag group, which V8 refuses.
pub(super) fn is_js_pattern(pattern: &str) -> bool {
    let inline_group = pattern
        .match_indices("(?")
        .any(|(i, _)| !matches!(pattern.as_bytes().get(i + 2), Some(b':' | b'=' | b'!' | b'<')));
    !inline_group && crate::evaluators::js_regex::compile(pattern, "").is_ok()
}

/// `text` as a JavaScript regular expression matching it literally.
pub(super) fn js_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\^$.*+?()[]{}|".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A value as YAML text: JSON, which YAML reads as written.
pub(super) fn json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Appends one 4.x case: a row of the config.
fn write_case(
    cases: &mut String,
    id: &str,
    test: &Test,
    prompt_label: &str,
    rendered: &str,
    (assertions, threshold): &(Vec<String>, f64),
    out: &mut Problems,
) {
    if rendered.contains("${{") {
        out.error(
            test.pos,
            "the rendered prompt holds `${{`, which AgentV 4.x reads as an environment reference",
            None,
        );
        return;
    }
    if let Some(d) = &test.description {
        let shown: String = d.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        let _ = writeln!(cases, "  # {shown}");
    }
    let _ = writeln!(cases, "  - id: {}", json(&Value::from(id)));
    let messages = pf::messages_of(rendered);
    let input = match messages.as_slice() {
        [only] if only.role == Role::User => json(&Value::from(rendered)),
        _ => json(&Value::Array(
            messages.iter().map(crate::model::Message::to_json).collect(),
        )),
    };
    let _ = writeln!(cases, "    input: {input}");
    let mut metadata: Map<String, Value> = test.metadata.clone().unwrap_or_default();
    let mut origin = Map::new();
    if let Some(d) = &test.description {
        origin.insert("description".into(), Value::from(d.clone()));
    }
    origin.insert("prompt".into(), Value::from(prompt_label));
    origin.insert("vars".into(), Value::Object(test.vars.clone()));
    metadata.insert("promptfoo".into(), Value::Object(origin));
    let _ = writeln!(cases, "    metadata: {}", json(&Value::Object(metadata)));
    let _ = writeln!(
        cases,
        "    execution: {{threshold: {}}}",
        json(&Value::from(*threshold))
    );
    cases.push_str("    assertions:\n");
    for a in assertions {
        let _ = writeln!(cases, "      - {a}");
    }
}

/// The suite's top: where it came from, the targets it needs, its target(s), `tests:`.
fn header(file: &Path, parts: &pf::Parts, description: Option<String>) -> String {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut s = format!("# AgentV 4.x suite converted from the promptfoo config {name} (docs/convert.md).\n");
    s.push_str("# Its providers as targets, for .agentv/targets.yaml (or `agentv eval --targets FILE`):\n#\n");
    s.push_str("# targets:\n");
    for t in &parts.targets.targets {
        let _ = writeln!(s, "#   - {}", json(&t.settings.to_json()));
    }
    s.push('\n');
    if let Some(d) = description {
        let _ = writeln!(s, "description: {}", json(&Value::from(d)));
    }
    let names: Vec<Value> = parts.providers.iter().map(|p| Value::from(p.target.clone())).collect();
    match names.as_slice() {
        [one] => {
            let _ = writeln!(s, "execution:\n  target: {}", json(one));
        }
        many => {
            let _ = writeln!(s, "execution:\n  targets: {}", json(&Value::Array(many.to_vec())));
        }
    }
    s.push_str("tests:\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert_text(yaml: &str) -> Result<String, Vec<String>> {
        let dir = std::env::temp_dir();
        convert(yaml, &dir.join("promptfooconfig.yaml"), &dir)
            .map(|c| c.text)
            .map_err(|problems| {
                problems
                    .iter()
                    .map(|d| format!("{}:{} {}", d.pos.line, d.pos.column, d.message))
                    .collect()
            })
    }

    fn config(assert: &str) -> String {
        format!("prompts: [\"Q: {{{{q}}}}\"]\nproviders: [echo]\ntests:\n  - vars: {{q: a}}\n    assert:\n{assert}")
    }

    #[test]
    fn each_assertion_maps_onto_the_4x_grader_with_the_same_pass_and_score() {
        let cases: &[(&str, &str)] = &[
            ("- {type: contains, value: 4}", r#"{type: contains, value: "4"}"#),
            (
                "- {type: not-icontains, value: X}",
                r#"{type: icontains, value: "X", negate: true}"#,
            ),
            (
                "- {type: contains-all, value: 'a, \"b, c\"'}",
                r#"{type: contains-all, value: ["a","b, c"]}"#,
            ),
            (
                "- {type: icontains-any, value: [1, b]}",
                r#"{type: icontains-any, value: ["1","b"]}"#,
            ),
            (
                "- {type: starts-with, value: 'a.b*'}",
                r#"{type: regex, value: "^a\\.b\\*"}"#,
            ),
            ("- {type: equals, value: '(x)'}", r#"{type: regex, value: "^\\(x\\)$"}"#),
            ("- {type: equals, value: 4}", r#"{type: regex, value: "^4$"}"#),
            (
                "- {type: regex, value: 'a+', weight: 3}",
                r#"{type: regex, value: "a+", weight: 3.0}"#,
            ),
            ("- {type: is-json}", "{type: is-json}"),
        ];
        for (written, want) in cases {
            let text =
                convert_text(&config(&format!("      {written}\n"))).unwrap_or_else(|e| panic!("{written}: {e:?}"));
            assert!(text.contains(&format!("      - {want}\n")), "{written}:\n{text}");
            assert!(text.contains("execution: {threshold: 1.0}"), "{text}");
        }
    }

    #[test]
    fn assertions_without_an_exact_4x_equivalent_are_errors_at_their_lines() {
        let cases: &[(&str, &str)] = &[
            (
                "- {type: javascript, value: 'output'}",
                "6:16 `javascript` cannot be converted",
            ),
            (
                "- {type: llm-rubric, value: kind}",
                "6:16 `llm-rubric` cannot be converted",
            ),
            (
                "- {type: levenshtein, value: abc}",
                "6:16 `levenshtein` cannot be converted",
            ),
            (
                "- {type: equals, value: {a: 1}}",
                "6:16 `equals` cannot be converted: a structured `value`",
            ),
            (
                "- {type: is-json, value: {type: object}}",
                "6:16 `is-json` cannot be converted",
            ),
            (
                "- {type: contains, value: a, transform: x}",
                "6:36 `transform` of this `contains` assertion",
            ),
            ("- {type: regex, value: '(?i)a'}", "6:9 the pattern `(?i)a`"),
            ("- {type: contains-any, value: [a, '']}", "6:9 an empty item"),
            (
                "- {type: contains, value: a, weight: 0}",
                "4:5 every assertion of this test has weight 0",
            ),
        ];
        for (written, want) in cases {
            let problems = convert_text(&config(&format!("      {written}\n"))).expect_err(written);
            assert!(problems.iter().any(|p| p.starts_with(want)), "{written}: {problems:?}");
        }
    }

    #[test]
    fn several_unmappable_assertions_are_each_reported() {
        let problems = convert_text(&config(
            "      - {type: javascript, value: 'output'}\n      - {type: llm-rubric, value: kind}\n",
        ))
        .expect_err("unmappable");
        assert_eq!(problems.len(), 2, "{problems:?}");
    }

    #[test]
    fn templates_reading_the_environment_are_not_converted() {
        let problems = convert_text(&config("      - {type: contains, value: '{{ env.HOME }}'}\n")).expect_err("env");
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("6:33 this value reads the environment")),
            "{problems:?}"
        );
        let yaml = "prompts: ['Key: {{ env.HOME }} {{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: a}\n    assert: [{type: contains, value: a}]\n";
        let problems = convert_text(yaml).expect_err("env in a prompt");
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("1:10 prompt `Key: {{ env.HOME }} {{q}}` reads the environment")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_description_with_control_characters_is_a_clean_comment() {
        let yaml = "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n  - description: \"a\\x07b\\nc\"\n    vars: {q: a}\n    assert: [{type: contains, value: a}]\n";
        let text = convert_text(yaml).expect("converts");
        assert!(text.contains("  # a b c\n"), "{text}");
    }
}
