//! A config's `tests` and `defaultTest` (`docs/promptfoo.md#tests`): inline tests, `file://`
//! CSV, JSON, JSONL and YAML files spliced where they stand, `defaultTest` merged into each, and
//! `vars` holding lists expanded into one test per combination, in promptfoo's order.

use std::path::Path;

use serde_json::{Map, Value};

use crate::config::{Diagnostics, Node, NodeValue, Pos, describe, node::parse_yaml};

/// One expanded test: what each of its rows (× prompts × providers) is made of.
#[derive(Debug, Clone)]
pub struct Test {
    pub description: Option<String>,
    pub vars: Map<String, Value>,
    /// `defaultTest.assert` first, then the test's own, as written (rendered per test later).
    pub assert: Vec<Node>,
    pub threshold: Option<f64>,
    pub metadata: Option<Map<String, Value>>,
    /// `options` (`provider`, `rubricPrompt`, ...): the test's keys over `defaultTest`'s.
    pub grading_options: Option<Node>,
    /// `options`: `defaultTest`'s under the test's (`prefix`, `suffix`, `transform`, ...).
    pub options: Map<String, Value>,
    pub pos: Pos,
}

/// Every test of the config, expanded. Problems are reported.
pub fn read(tests: Option<&Node>, default_test: Option<&Node>, dir: &Path, diags: &mut Diagnostics) -> Vec<Test> {
    let mut raw: Vec<Node> = Vec::new();
    if let Some(node) = tests {
        match &node.value {
            NodeValue::Seq(_) | NodeValue::Str(_) => raw = raw_tests(node, dir, diags),
            NodeValue::Null => {}
            _ => diags.error(
                node.pos,
                format!("`tests` must be a list or a `file://` path, found {}", describe(node)),
                None,
            ),
        }
    }
    let defaults = default_test.filter(|d| d.as_map().is_some());
    let mut out = Vec::new();
    for node in &raw {
        if node.as_map().is_none() {
            diags.error(
                node.pos,
                format!("a test must be a mapping, found {}", describe(node)),
                Some("write `- vars: {...}` with `assert:`".to_owned()),
            );
            continue;
        }
        out.extend(expand(node, defaults, dir, diags));
    }
    out
}

/// The tests of `scenarios`, after the top-level ones: for each scenario, each of its `config`
/// entries with each of its `tests` (the entry's `vars` under the test's, its `assert` first).
pub fn scenarios(node: &Node, default_test: Option<&Node>, dir: &Path, diags: &mut Diagnostics) -> Vec<Test> {
    let Some(list) = node.as_seq() else {
        diags.error(
            node.pos,
            format!("`scenarios` must be a list, found {}", describe(node)),
            None,
        );
        return Vec::new();
    };
    let defaults = default_test.filter(|d| d.as_map().is_some());
    let mut out = Vec::new();
    for scenario in list {
        let (Some(config), Some(tests)) = (scenario.get("config").and_then(Node::as_seq), scenario.get("tests")) else {
            diags.error(
                scenario.pos,
                "a scenario needs `config` (a list of `vars` sets) and `tests`",
                Some("write `- config: [{vars: {...}}]` with `tests: [...]`".to_owned()),
            );
            continue;
        };
        let raw = raw_tests(tests, dir, diags);
        for data in config {
            for test in &raw {
                out.extend(expand(&merged(data, test), defaults, dir, diags));
            }
        }
    }
    out
}

/// A scenario's `config` entry under one of its tests: the test's keys win, `vars` merge
/// (the test's over the entry's) and `assert` lists join (the entry's first).
fn merged(data: &Node, test: &Node) -> Node {
    let mut entries: Vec<(Node, Node)> = data.as_map().map(<[_]>::to_vec).unwrap_or_default();
    for (k, v) in test.as_map().unwrap_or_default() {
        let joined = match (k.as_str(), entries.iter().find(|(dk, _)| dk.as_str() == k.as_str())) {
            (Some("vars"), Some((_, dv))) => {
                let mut m: Vec<(Node, Node)> = dv.as_map().map(<[_]>::to_vec).unwrap_or_default();
                for (vk, vv) in v.as_map().unwrap_or_default() {
                    m.retain(|(mk, _)| mk.as_str() != vk.as_str());
                    m.push((vk.clone(), vv.clone()));
                }
                Node::new(NodeValue::Map(m), v.pos)
            }
            (Some("assert"), Some((_, da))) => {
                let mut items: Vec<Node> = da.as_seq().map(<[_]>::to_vec).unwrap_or_default();
                items.extend(v.as_seq().map(<[_]>::to_vec).unwrap_or_default());
                Node::new(NodeValue::Seq(items), v.pos)
            }
            _ => v.clone(),
        };
        entries.retain(|(dk, _)| dk.as_str() != k.as_str());
        entries.push((k.clone(), joined));
    }
    Node::new(NodeValue::Map(entries), test.pos)
}

/// The test nodes of a `tests` value: inline, `file://` files spliced in.
fn raw_tests(node: &Node, dir: &Path, diags: &mut Diagnostics) -> Vec<Node> {
    match &node.value {
        NodeValue::Seq(items) => items
            .iter()
            .flat_map(|item| match item.as_str() {
                Some(text) => from_file(text, item.pos, dir, diags),
                None => vec![item.clone()],
            })
            .collect(),
        NodeValue::Str(text) => from_file(text, node.pos, dir, diags),
        _ => Vec::new(),
    }
}

/// One test node with `defaultTest` merged, its list `vars` expanded.
fn expand(node: &Node, defaults: Option<&Node>, dir: &Path, diags: &mut Diagnostics) -> Vec<Test> {
    let vars = merged_vars(node, defaults, dir, diags);
    let assert = merged_assert(node, defaults, diags);
    let threshold = node
        .get("threshold")
        .or_else(|| defaults.and_then(|d| d.get("threshold")))
        .and_then(Node::as_f64);
    let metadata = [defaults.and_then(|d| d.get("metadata")), node.get("metadata")]
        .into_iter()
        .flatten()
        .filter_map(|m| m.to_json().as_object().cloned())
        .reduce(|mut a, b| {
            a.extend(b);
            a
        });
    let options = [defaults.and_then(|d| d.get("options")), node.get("options")]
        .into_iter()
        .flatten()
        .filter_map(|m| match m.to_json() {
            Value::Object(map) => Some(map),
            Value::Null => None,
            _ => {
                diags.error(
                    m.pos,
                    format!("`options` must be a mapping, found {}", describe(m)),
                    None,
                );
                None
            }
        })
        .fold(Map::new(), |mut a, b| {
            a.extend(b);
            a
        });
    let description = node.get("description").and_then(Node::scalar_text);
    let grading_options = merged_options(defaults.and_then(|d| d.get("options")), node.get("options"));
    combinations(&vars)
        .into_iter()
        .map(|vars| Test {
            description: description.clone(),
            vars,
            assert: assert.clone(),
            threshold,
            metadata: metadata.clone(),
            options: options.clone(),
            grading_options: grading_options.clone(),
            pos: node.pos,
        })
        .collect()
}

/// `defaultTest`'s `vars` with the test's over them, name by name.
fn merged_vars(node: &Node, defaults: Option<&Node>, dir: &Path, diags: &mut Diagnostics) -> Vec<(String, Value)> {
    let mut vars: Vec<(String, Value)> = Vec::new();
    for source in [defaults.and_then(|d| d.get("vars")), node.get("vars")]
        .into_iter()
        .flatten()
    {
        match source.as_map() {
            Some(entries) => {
                for (k, v) in entries {
                    let (k, v) = (k.key_text(), var_value(v, dir, diags));
                    match vars.iter_mut().find(|(name, _)| *name == k) {
                        Some(slot) => slot.1 = v,
                        None => vars.push((k, v)),
                    }
                }
            }
            None if source.is_null() => {}
            None => diags.error(
                source.pos,
                format!("`vars` must be a mapping, found {}", describe(source)),
                None,
            ),
        }
    }
    vars
}

/// `defaultTest`'s assertions, then the test's.
fn merged_assert(node: &Node, defaults: Option<&Node>, diags: &mut Diagnostics) -> Vec<Node> {
    let mut assert: Vec<Node> = Vec::new();
    for source in [defaults.and_then(|d| d.get("assert")), node.get("assert")]
        .into_iter()
        .flatten()
    {
        match source.as_seq() {
            Some(items) => assert.extend(items.iter().cloned()),
            None if source.is_null() => {}
            None => diags.error(
                source.pos,
                format!("`assert` must be a list, found {}", describe(source)),
                None,
            ),
        }
    }
    assert
}

/// A test's `options` over `defaultTest`'s, key by key.
fn merged_options(defaults: Option<&Node>, own: Option<&Node>) -> Option<Node> {
    let mut entries: Vec<(Node, Node)> = defaults.and_then(Node::as_map).map(<[_]>::to_vec).unwrap_or_default();
    for (k, v) in own.and_then(Node::as_map).unwrap_or_default() {
        entries.retain(|(dk, _)| dk.as_str() != k.as_str());
        entries.push((k.clone(), v.clone()));
    }
    let pos = own.or(defaults)?.pos;
    Some(Node::new(NodeValue::Map(entries), pos))
}

/// Every combination of the list-valued vars, the first var (as written, `defaultTest`'s
/// first) varying slowest.
fn combinations(vars: &[(String, Value)]) -> Vec<Map<String, Value>> {
    let mut out = vec![Map::new()];
    for (k, v) in vars {
        // promptfoo expands a list whose first item is a text; any other list (a conversation
        // of message objects, numbers) is one value (`docs/promptfoo.md#tests`).
        let choices: Vec<&Value> = match v {
            Value::Array(items) if items.first().is_some_and(Value::is_string) => items.iter().collect(),
            other => vec![other],
        };
        out = out
            .into_iter()
            .flat_map(|base| {
                choices.iter().map(move |c| {
                    let mut next = base.clone();
                    next.insert(k.clone(), (*c).clone());
                    next
                })
            })
            .collect();
    }
    out
}

/// A var's value: as written, or the text of a `file://` file.
fn var_value(node: &Node, dir: &Path, diags: &mut Diagnostics) -> Value {
    match node.as_str().and_then(|t| t.strip_prefix("file://")) {
        Some(rel) => match std::fs::read_to_string(dir.join(rel)) {
            Ok(text) => Value::String(text),
            Err(e) => {
                diags.error(
                    node.pos,
                    format!("cannot read var file {}: {e}", dir.join(rel).display()),
                    Some("paths after `file://` are relative to the config's folder".to_owned()),
                );
                Value::Null
            }
        },
        None => match &node.value {
            NodeValue::Seq(items) => Value::Array(items.iter().map(|i| var_value(i, dir, diags)).collect()),
            _ => node.to_json(),
        },
    }
}

/// The tests of a `file://` path (CSV, JSON, JSONL or YAML), as test nodes placed at `pos`.
fn from_file(text: &str, pos: Pos, dir: &Path, diags: &mut Diagnostics) -> Vec<Node> {
    let Some(rel) = text.strip_prefix("file://") else {
        diags.error(
            pos,
            format!("a test entry that is a string must be a `file://` path, found `{text}`"),
            Some("write `- file://tests.csv`, or a mapping with `vars:`".to_owned()),
        );
        return Vec::new();
    };
    if rel.contains(['*', '?', '[', '{']) {
        return glob_files(rel, pos, dir, diags)
            .into_iter()
            .flat_map(|file| from_file(&format!("file://{file}"), pos, dir, diags))
            .collect();
    }
    let path = dir.join(rel);
    let content = match std::fs::read_to_string(&path) {
        Ok(c) => c,
        Err(e) => {
            diags.error(
                pos,
                format!("cannot read tests file {}: {e}", path.display()),
                Some("paths after `file://` are relative to the config's folder".to_owned()),
            );
            return Vec::new();
        }
    };
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let found = match ext.as_str() {
        "csv" => from_csv(&content, pos).map_err(TestsFileError::Csv),
        "jsonl" => content
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str::<Value>(l)
                    .map(|v| vec![Node::from_json(&v, pos)])
                    .map_err(|source| TestsFileError::Jsonl { line: i + 1, source })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|v| v.into_iter().flatten().collect()),
        _ => parse_yaml(&content)
            .map_err(|e| TestsFileError::Yaml(e.first().map(|e| e.message.clone()).unwrap_or_default()))
            .map(|root| match root.value {
                NodeValue::Seq(items) => items.into_iter().map(|i| placed(i, pos)).collect(),
                NodeValue::Null => Vec::new(),
                _ => vec![placed(root, pos)],
            }),
    };
    found.unwrap_or_else(|e| {
        diags.error(pos, format!("cannot read tests file {}: {e}", path.display()), None);
        Vec::new()
    })
}

/// The files a `file://` glob names (relative to `dir`, `*` not crossing `/`), sorted; none is
/// a warning, as promptfoo loads no test from it and goes on.
fn glob_files(pattern: &str, pos: Pos, dir: &Path, diags: &mut Diagnostics) -> Vec<String> {
    let pattern = pattern.trim_start_matches("./");
    let matcher = match globset::GlobBuilder::new(pattern).literal_separator(true).build() {
        Ok(g) => g.compile_matcher(),
        Err(e) => {
            diags.error(pos, format!("`file://{pattern}` is not a valid glob: {e}"), None);
            return Vec::new();
        }
    };
    // Walk only below the pattern's fixed leading folders.
    let fixed: Vec<&str> = pattern
        .split('/')
        .take_while(|part| !part.contains(['*', '?', '[', '{']))
        .collect();
    let root = fixed[..fixed.len().min(pattern.split('/').count().saturating_sub(1))].join("/");
    let mut found: Vec<String> = walkdir::WalkDir::new(dir.join(&root))
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let rel = e.path().strip_prefix(dir).ok()?.to_string_lossy().replace('\\', "/");
            matcher.is_match(&rel).then_some(rel)
        })
        .collect();
    found.sort();
    if found.is_empty() {
        diags.warn(
            pos,
            format!("`file://{pattern}` matches no file in {}", dir.display()),
            Some("paths after `file://` are relative to the config's folder".to_owned()),
        );
    }
    found
}

/// A node of another file, placed at the `file://` entry that brought it in (messages point
/// there).
fn placed(node: Node, pos: Pos) -> Node {
    let value = match node.value {
        NodeValue::Seq(items) => NodeValue::Seq(items.into_iter().map(|i| placed(i, pos)).collect()),
        NodeValue::Map(entries) => NodeValue::Map(
            entries
                .into_iter()
                .map(|(k, v)| (placed(k, pos), placed(v, pos)))
                .collect(),
        ),
        other => other,
    };
    Node::new(value, pos)
}

/// Why a tests file read by `file://` has no tests, after "cannot read tests file PATH: ".
#[derive(Debug, thiserror::Error)]
enum TestsFileError {
    #[error("{0}")]
    Csv(csv::Error),
    #[error("line {line}: {source}")]
    Jsonl { line: usize, source: serde_json::Error },
    /// The YAML parser's first diagnostic, as it words it.
    #[error("{0}")]
    Yaml(String),
}

/// CSV tests: a column per var; `__expected` (and `__expected1`, …) assertions,
/// `__description`, `__threshold` and `__metadata:<key>` as promptfoo reads them.
fn from_csv(content: &str, pos: Pos) -> Result<Vec<Node>, csv::Error> {
    let content = content.strip_prefix('\u{feff}').unwrap_or(content);
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(content.as_bytes());
    let headers: Vec<String> = reader.headers()?.iter().map(str::to_owned).collect();
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record?;
        let mut test = Map::new();
        let mut vars = Map::new();
        let mut assert = Vec::new();
        let mut metadata = Map::new();
        for (header, cell) in headers.iter().zip(record.iter()) {
            let header = header.trim();
            if header.starts_with("__expected") {
                if !cell.trim().is_empty() {
                    assert.push(assertion_from_text(cell.trim()));
                }
            } else if header == "__description" {
                test.insert("description".into(), Value::String(cell.to_owned()));
            } else if header == "__threshold" {
                if let Ok(t) = cell.trim().parse::<f64>() {
                    test.insert("threshold".into(), Value::from(t));
                }
            } else if let Some(key) = header.strip_prefix("__metadata:") {
                metadata.insert(key.to_owned(), Value::String(cell.to_owned()));
            } else {
                vars.insert(header.to_owned(), Value::String(cell.to_owned()));
            }
        }
        test.insert("vars".into(), Value::Object(vars));
        if !assert.is_empty() {
            test.insert("assert".into(), Value::Array(assert));
        }
        if !metadata.is_empty() {
            test.insert("metadata".into(), Value::Object(metadata));
        }
        out.push(Node::from_json(&Value::Object(test), pos));
    }
    Ok(out)
}

/// The assertion a CSV `__expected` cell stands for: `type:value`, `type(threshold):value`,
/// `fn:`/`eval:` (javascript), `grade:` (llm-rubric), `python:`, or else `equals` the text.
fn assertion_from_text(text: &str) -> Value {
    let mut out = Map::new();
    let prefixed = [
        ("fn:", "javascript"),
        ("eval:", "javascript"),
        ("grade:", "llm-rubric"),
        ("python:", "python"),
    ];
    if let Some((rest, kind)) = prefixed.iter().find_map(|(p, k)| text.strip_prefix(p).map(|r| (r, *k))) {
        out.insert("type".into(), Value::from(kind));
        out.insert("value".into(), Value::from(rest.trim()));
        return Value::Object(out);
    }
    let (head, value) = match text.split_once(':') {
        Some((h, v)) => (h, Some(v)),
        None => (text, None),
    };
    let (kind, threshold) = match head.strip_suffix(')').and_then(|h| h.split_once('(')) {
        Some((k, t)) => (k, t.parse::<f64>().ok()),
        None => (head, None),
    };
    let base = kind.strip_prefix("not-").unwrap_or(kind);
    if !CSV_TYPES.contains(&base) {
        out.insert("type".into(), Value::from("equals"));
        out.insert("value".into(), Value::from(text));
        return Value::Object(out);
    }
    out.insert("type".into(), Value::from(kind));
    match value {
        // A list type's cell is its items, comma-separated.
        Some(v) if base.ends_with("-any") || base.ends_with("-all") => {
            let items: Vec<Value> = v.split(',').map(|i| Value::from(i.trim())).collect();
            out.insert("value".into(), Value::Array(items));
        }
        Some(v) => {
            out.insert("value".into(), Value::from(v.trim_start()));
        }
        None => {}
    }
    if let Some(t) = threshold {
        out.insert("threshold".into(), Value::from(t));
    }
    Value::Object(out)
}

/// The types a CSV `__expected` cell may name before a colon.
const CSV_TYPES: &[&str] = &[
    "equals",
    "contains",
    "icontains",
    "contains-all",
    "contains-any",
    "icontains-all",
    "icontains-any",
    "starts-with",
    "regex",
    "is-json",
    "contains-json",
    "is-xml",
    "contains-xml",
    "is-sql",
    "contains-sql",
    "javascript",
    "python",
    "similar",
    "llm-rubric",
    "model-graded-closedqa",
    "factuality",
    "levenshtein",
    "rouge-n",
    "bleu",
    "gleu",
    "answer-relevance",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "perplexity",
    "perplexity-score",
    "cost",
    "latency",
    "word-count",
    "is-refusal",
    "finish-reason",
    "webhook",
];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn load(yaml: &str, default_test: Option<&str>, dir: &Path) -> (Vec<Test>, Vec<String>) {
        let node = parse_yaml(yaml).expect("yaml");
        let defaults = default_test.map(|d| parse_yaml(d).expect("yaml"));
        let mut diags = Diagnostics::new(Path::new("promptfooconfig.yaml"));
        let got = read(Some(&node), defaults.as_ref(), dir, &mut diags);
        (got, diags.into_vec().iter().map(ToString::to_string).collect())
    }

    #[test]
    fn list_vars_expand_into_one_test_per_combination_in_promptfoo_order() {
        let (tests, problems) = load(
            "- vars: {a: ['1', '2'], b: [x, y], c: k}\n- vars: {a: 3}\n",
            Some("vars: {c: default, d: d}\nassert: [{type: contains, value: k}]"),
            Path::new("."),
        );
        assert!(problems.is_empty(), "{problems:?}");
        let vars: Vec<Value> = tests.iter().map(|t| Value::Object(t.vars.clone())).collect();
        assert_eq!(
            vars,
            vec![
                json!({"c": "k", "d": "d", "a": "1", "b": "x"}),
                json!({"c": "k", "d": "d", "a": "1", "b": "y"}),
                json!({"c": "k", "d": "d", "a": "2", "b": "x"}),
                json!({"c": "k", "d": "d", "a": "2", "b": "y"}),
                json!({"c": "default", "d": "d", "a": 3}),
            ]
        );
        assert!(
            tests.iter().all(|t| t.assert.len() == 1),
            "defaultTest assertions reach every test"
        );
    }

    #[test]
    fn lists_that_do_not_start_with_a_text_stay_one_value_as_in_promptfoo() {
        let (tests, problems) = load(
            "- vars:\n    _conversation: [{input: hi, output: hello}, {input: bye, output: ciao}]\n    n: [1, 2]\n    e: []\n    q: [a, b]\n",
            None,
            Path::new("."),
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(tests.len(), 2, "only the list of texts expands");
        assert_eq!(
            tests[0].vars["_conversation"],
            json!([{"input": "hi", "output": "hello"}, {"input": "bye", "output": "ciao"}])
        );
        assert_eq!(tests[0].vars["n"], json!([1, 2]));
        assert_eq!(tests[0].vars["e"], json!([]));
        assert_eq!((&tests[0].vars["q"], &tests[1].vars["q"]), (&json!("a"), &json!("b")));
    }

    #[test]
    fn file_tests_csv_yaml_and_jsonl_are_spliced_where_they_stand() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(
            dir.path().join("t.csv"),
            "\u{feff}question,__expected,__expected2,__description\nWhat?,contains:Paris,not-icontains:london,first\n\"A, B\",plain answer,,second\n",
        )
        .expect("write");
        std::fs::write(dir.path().join("t.yaml"), "- vars: {question: y}\n").expect("write");
        std::fs::write(dir.path().join("t.jsonl"), "{\"vars\": {\"question\": \"j\"}}\n\n").expect("write");
        std::fs::write(dir.path().join("q.txt"), "from a file").expect("write");
        let (tests, problems) = load(
            "- vars: {question: first}\n- file://t.csv\n- file://t.yaml\n- file://t.jsonl\n- vars: {question: file://q.txt}\n",
            None,
            dir.path(),
        );
        assert!(problems.is_empty(), "{problems:?}");
        let questions: Vec<&str> = tests.iter().filter_map(|t| t.vars["question"].as_str()).collect();
        assert_eq!(questions, ["first", "What?", "A, B", "y", "j", "from a file"]);
        let csv_assert: Vec<Value> = tests[1].assert.iter().map(Node::to_json).collect();
        assert_eq!(
            csv_assert,
            vec![
                json!({"type": "contains", "value": "Paris"}),
                json!({"type": "not-icontains", "value": "london"})
            ]
        );
        assert_eq!(tests[1].description.as_deref(), Some("first"));
        assert_eq!(
            tests[2].assert.iter().map(Node::to_json).collect::<Vec<_>>(),
            vec![json!({"type": "equals", "value": "plain answer"})]
        );
    }

    #[test]
    fn scenarios_run_each_config_entry_with_each_test() {
        let node = parse_yaml(
            "- config: [{vars: {lang: fr}}, {vars: {lang: de}, assert: [{type: contains, value: x}]}]\n  tests:\n    - {vars: {word: hi}}\n    - {vars: {word: bye, lang: es}, assert: [{type: equals, value: y}]}\n",
        )
        .expect("yaml");
        let defaults = parse_yaml("vars: {tone: warm}").expect("yaml");
        let mut diags = Diagnostics::new(Path::new("promptfooconfig.yaml"));
        let tests = scenarios(&node, Some(&defaults), Path::new("."), &mut diags);
        assert!(diags.into_vec().is_empty());
        let got: Vec<(Value, usize)> = tests
            .iter()
            .map(|t| (Value::Object(t.vars.clone()), t.assert.len()))
            .collect();
        assert_eq!(
            got,
            vec![
                (json!({"tone": "warm", "lang": "fr", "word": "hi"}), 0),
                (json!({"tone": "warm", "lang": "es", "word": "bye"}), 1),
                (json!({"tone": "warm", "lang": "de", "word": "hi"}), 1),
                (json!({"tone": "warm", "lang": "es", "word": "bye"}), 2),
            ]
        );
    }

    #[test]
    fn a_missing_tests_file_is_an_error_and_the_other_tests_load() {
        let (tests, problems) = load("- file://nope.csv\n- vars: {a: 1}\n", None, Path::new("/nonexistent"));
        assert_eq!(tests.len(), 1);
        assert!(
            problems[0].contains("cannot read tests file") && problems[0].contains(":1:"),
            "{problems:?}"
        );
    }

    #[test]
    fn csv_expected_cells_read_as_promptfoo_reads_them() {
        for (cell, want) in [
            ("contains:Paris", json!({"type": "contains", "value": "Paris"})),
            ("is-json", json!({"type": "is-json"})),
            (
                "icontains-any:lima, cusco",
                json!({"type": "icontains-any", "value": ["lima", "cusco"]}),
            ),
            (
                "levenshtein(3):abc",
                json!({"type": "levenshtein", "value": "abc", "threshold": 3.0}),
            ),
            ("grade: is polite", json!({"type": "llm-rubric", "value": "is polite"})),
            (
                "Paris: the capital",
                json!({"type": "equals", "value": "Paris: the capital"}),
            ),
        ] {
            assert_eq!(assertion_from_text(cell), want, "{cell}");
        }
    }
}
