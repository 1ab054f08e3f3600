//! Errors are types (`docs/architecture.md#errors`): this test reads the non-test code of every
//! crate that ships (`agentv-core`, the binary, `agentv-proxy`, `agentv-eval-sdk`, the
//! ready-made judges) and fails on a `Result<_, String>` or `Result<_, ()>` that the list
//! below does not allow. A string carries no kind to match on and no source to follow; a `()`
//! carries nothing at all.
//!
//! The list is a ratchet: each entry allows a file exactly its count of such results, with the
//! reason they stay strings. A new one fails the test (give it a `thiserror` enum of its
//! module's concept); one removed fails it too until the count goes down, so the list never
//! allows more than the code has.
//!
//! Test modules are left out (from a file's first `#[cfg(test)]` to its end, where this code
//! base keeps them, and files declared as `#[cfg(test)] mod name;`), and so are `//` comment
//! lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A grader's failure reason: made at one place, shown as the grade's `error`/`reason` (in
/// promptfoo's words where promptfoo has them), matched by nothing.
const GRADER_REASON: &str = "grader reason";
/// A ready-made judge's problem with a model's reply, shown in the judge's `reason`.
const JUDGE_REASON: &str = "judge reason";
/// `Err(())` after the problem was pushed, with its file, line and column, into the load's
/// diagnostics: the `()` says "already reported", and the caller only skips the key.
const DIAGNOSED: &str = "already in the diagnostics";
/// The text of a problem that becomes one field of a typed error (`ProviderError::Malformed`'s
/// `problem`, `ProviderError::Transform`, `ProviderError::Unhealthy`), or the message of an
/// HTTP 400 answer: produced at one place, only displayed.
const CARRIED: &str = "carried into a typed error or an answer";
/// A user's hook or script error, recorded as it is in the results.
const USER_TEXT: &str = "a user's own error text";

/// Files allowed string or unit errors: (path from the repository root, how many, why).
const ALLOWED: &[(&str, usize, &str)] = &[
    ("agentv-core/src/evaluators/ajv.rs", 3, GRADER_REASON),
    ("agentv-core/src/evaluators/answer_relevance.rs", 1, GRADER_REASON),
    ("agentv-core/src/evaluators/code_judge.rs", 2, GRADER_REASON),
    ("agentv-core/src/evaluators/context_faithfulness.rs", 2, GRADER_REASON),
    ("agentv-core/src/evaluators/context_recall.rs", 2, GRADER_REASON),
    ("agentv-core/src/evaluators/context_relevance.rs", 2, GRADER_REASON),
    ("agentv-core/src/evaluators/conversation_relevance.rs", 4, GRADER_REASON),
    ("agentv-core/src/evaluators/custom_assertion.rs", 3, GRADER_REASON),
    ("agentv-core/src/evaluators/factuality.rs", 4, GRADER_REASON),
    ("agentv-core/src/evaluators/g_eval.rs", 4, GRADER_REASON),
    ("agentv-core/src/evaluators/is_valid_tool_call.rs", 2, GRADER_REASON),
    ("agentv-core/src/js.rs", 1, GRADER_REASON),
    ("agentv-core/src/evaluators/js_regex.rs", 2, GRADER_REASON),
    ("agentv-core/src/evaluators/llm_grader.rs", 3, GRADER_REASON),
    ("agentv-core/src/evaluators/llm_grader/explore.rs", 6, GRADER_REASON),
    ("agentv-core/src/evaluators/llm_reply.rs", 6, GRADER_REASON),
    ("agentv-core/src/evaluators/llm_rubric.rs", 2, GRADER_REASON),
    ("agentv-core/src/evaluators/max_score.rs", 2, GRADER_REASON),
    ("agentv-core/src/evaluators/metric_check.rs", 1, DIAGNOSED),
    ("agentv-core/src/evaluators/model_graded_closedqa.rs", 2, GRADER_REASON),
    ("agentv-core/src/evaluators/openai_tools.rs", 4, GRADER_REASON),
    ("agentv-core/src/evaluators/promptfoo_check.rs", 1, DIAGNOSED),
    ("agentv-core/src/evaluators/promptfoo_graded.rs", 10, GRADER_REASON),
    ("agentv-core/src/evaluators/promptfoo_text.rs", 3, GRADER_REASON),
    ("agentv-core/src/evaluators/python.rs", 2, GRADER_REASON),
    ("agentv-core/src/evaluators/rubrics.rs", 4, GRADER_REASON),
    ("agentv-core/src/evaluators/select_best.rs", 2, GRADER_REASON),
    ("agentv-core/src/evaluators/similar.rs", 2, GRADER_REASON),
    ("agentv-core/src/evaluators/sql_output.rs", 1, GRADER_REASON),
    ("agentv-core/src/evaluators/webhook.rs", 1, GRADER_REASON),
    ("agentv-core/src/evaluators/xml_output.rs", 1, GRADER_REASON),
    ("agentv-core/src/providers/anthropic.rs", 1, CARRIED),
    ("agentv-core/src/providers/batch.rs", 2, CARRIED),
    ("agentv-core/src/providers/cli.rs", 3, CARRIED),
    ("agentv-core/src/providers/gemini.rs", 1, CARRIED),
    ("agentv-core/src/providers/http.rs", 1, CARRIED),
    ("agentv-core/src/providers/openai.rs", 2, CARRIED),
    ("agentv-core/src/providers/openai_responses.rs", 2, CARRIED),
    ("agentv-core/src/providers/script.rs", 2, CARRIED),
    ("agentv-core/src/workspace/suite.rs", 1, USER_TEXT),
    ("agentv-proxy/src/server.rs", 1, CARRIED),
    ("judges/src/context.rs", 1, JUDGE_REASON),
    ("judges/src/contextual_relevancy.rs", 1, JUDGE_REASON),
    ("judges/src/json_f1.rs", 2, JUDGE_REASON),
    ("judges/src/model.rs", 7, JUDGE_REASON),
    ("judges/src/statements.rs", 1, JUDGE_REASON),
];

/// The source directories scanned, from the repository root.
const SOURCES: &[&str] = &[
    "agentv-core/src",
    "src",
    "agentv-proxy/src",
    "agentv-eval-sdk/src",
    "judges/src",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The files a `#[cfg(test)] mod name;` in `file` declares (`name.rs` and `name/` beside it,
/// or under the file's own directory for a `foo.rs` with a `foo/`).
fn test_only_modules(file: &Path, text: &str) -> Vec<PathBuf> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let dir = match file.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs" | "lib.rs" | "main.rs") => file.parent().map(Path::to_path_buf),
        _ => Some(file.with_extension("")),
    };
    let Some(dir) = dir else { return Vec::new() };
    lines
        .windows(2)
        .filter(|w| w[0] == "#[cfg(test)]")
        .filter_map(|w| {
            let decl = w[1].trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            decl.strip_prefix("mod ")?.strip_suffix(';').map(str::to_owned)
        })
        .flat_map(|name| [dir.join(format!("{name}.rs")), dir.join(name)])
        .collect()
}

/// The code of a file that counts: up to its first test module, without comment lines.
fn code_of(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let declares_a_file = lines.peek().is_some_and(|(_, next)| next.trim_end().ends_with(';'));
            if declares_a_file {
                continue;
            }
            break;
        }
        if !line.trim_start().starts_with("//") {
            out.push((i + 1, line.to_owned()));
        }
    }
    out
}

/// The type arguments of the generic whose `<` is at `open` in `text`, split at top-level
/// commas, and where it ends; `None` when it does not close on the line.
fn arguments(text: &str, open: usize) -> Option<Vec<String>> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut args = vec![String::new()];
    let mut i = open;
    while i < bytes.len() {
        let c = bytes[i] as char;
        match c {
            '-' if bytes.get(i + 1) == Some(&b'>') => {
                args.last_mut()?.push_str("->");
                i += 2;
                continue;
            }
            '<' | '(' | '[' => {
                depth += 1;
                if depth == 1 {
                    i += 1;
                    continue;
                }
            }
            '>' | ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(args.into_iter().map(|a| a.trim().to_owned()).collect());
                }
            }
            ',' if depth == 1 => {
                args.push(String::new());
                i += 1;
                continue;
            }
            _ => {}
        }
        args.last_mut()?.push(c);
        i += 1;
    }
    None
}

/// The lines of `code` with a `Result<_, String>` or `Result<_, ()>`.
fn string_results(code: &[(usize, String)]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in code {
        let mut from = 0;
        while let Some(at) = line[from..].find("Result<").map(|a| a + from) {
            from = at + "Result<".len();
            let boundary = line[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            if !boundary {
                continue;
            }
            let Some(args) = arguments(line, at + "Result".len()) else {
                continue;
            };
            if args.len() == 2 && matches!(args[1].as_str(), "String" | "()") {
                found.push((*number, line.trim().to_owned()));
            }
        }
    }
    found
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("agentv-core sits in the repository")
        .to_path_buf()
}

/// Every file with string errors, and its lines.
fn scan() -> BTreeMap<String, Vec<(usize, String)>> {
    let root = root();
    let mut files = Vec::new();
    for dir in SOURCES {
        rust_files(&root.join(dir), &mut files);
    }
    let mut test_only: BTreeSet<PathBuf> = BTreeSet::new();
    let mut texts = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("source files are UTF-8");
        test_only.extend(test_only_modules(&file, &text));
        texts.push((file, text));
    }
    let mut found = BTreeMap::new();
    for (file, text) in texts {
        let excluded = test_only.iter().any(|t| file.starts_with(t));
        let named_tests =
            file.file_name().is_some_and(|n| n == "tests.rs") || file.components().any(|c| c.as_os_str() == "tests");
        if excluded || named_tests {
            continue;
        }
        let lines = string_results(&code_of(&text));
        if !lines.is_empty() {
            let rel = file.strip_prefix(&root).unwrap_or(&file).to_string_lossy().into_owned();
            found.insert(rel, lines);
        }
    }
    found
}

#[test]
fn no_new_string_or_unit_errors_outside_the_allowed_list() {
    let found = scan();
    let allowed: BTreeMap<&str, usize> = ALLOWED.iter().map(|(path, n, _)| (*path, *n)).collect();
    let mut problems = Vec::new();
    for (file, lines) in &found {
        let allow = allowed.get(file.as_str()).copied().unwrap_or(0);
        if lines.len() > allow {
            let shown: Vec<String> = lines.iter().map(|(n, l)| format!("    {file}:{n}: {l}")).collect();
            problems.push(format!(
                "{file}: {} string or unit error(s), {allow} allowed; give them a thiserror enum of the module's \
                 concept (or, for a message only ever shown, an entry in ALLOWED with the reason):\n{}",
                lines.len(),
                shown.join("\n")
            ));
        }
    }
    for (file, allow) in &allowed {
        let have = found.get(*file).map_or(0, Vec::len);
        if have < *allow {
            problems.push(format!(
                "{file}: ALLOWED says {allow}, the code has {have}: lower the count"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_scan_sees_string_and_unit_errors_in_every_shape() {
    let code: Vec<(usize, String)> = [
        "fn a() -> Result<(), String> {",
        "fn b() -> Result<Option<Vec<u8>>, String> {",
        "fn c(f: impl Fn(&Value) -> Result<Grade, String>) {}",
        "fn d() -> Result<(), ()> {",
        "type E = std::result::Result<HashMap<String, Vec<String>>, String>;",
        "fn ok() -> Result<String, Error> {",
        "fn io() -> io::Result<String> {",
        "fn nested() -> Result<Result<(), String>, Error> {",
        "fn mine() -> MyResult<(), String> {",
    ]
    .iter()
    .enumerate()
    .map(|(i, l)| (i + 1, (*l).to_owned()))
    .collect();
    let lines: Vec<usize> = string_results(&code).into_iter().map(|(n, _)| n).collect();
    assert_eq!(lines, [1, 2, 3, 4, 5, 8]);
}

#[test]
fn test_modules_and_comments_are_left_out() {
    let text = "/// Result<(), String> in a doc\nfn a() -> Result<(), Error> {}\n#[cfg(test)]\nmod testkit;\nfn b() -> Result<(), String> {}\n#[cfg(test)]\nmod tests {\n fn c() -> Result<(), String> {}\n}\n";
    let lines: Vec<usize> = string_results(&code_of(text)).into_iter().map(|(n, _)| n).collect();
    assert_eq!(lines, [5]);
    let declared = test_only_modules(Path::new("/r/src/evaluators/mod.rs"), text);
    assert_eq!(
        declared,
        [
            PathBuf::from("/r/src/evaluators/testkit.rs"),
            PathBuf::from("/r/src/evaluators/testkit")
        ]
    );
}
