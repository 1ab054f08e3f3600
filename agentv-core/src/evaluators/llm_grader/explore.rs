//! The agentic mode of `llm-grader` (`max_steps`, `docs/workspaces.md#agentic-llm-grader`): the
//! grader model may call three read-only tools on the case's workspace — list a directory, read
//! a file, search files — for up to `max_steps` model calls before it answers. agentv runs the
//! tools itself: they never write, and a path that leaves the workspace (by `..`, an absolute
//! path or a symlink) is refused.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::super::Grade;
use super::super::llm_reply;
use crate::model::{ToolChoice, ToolDef, ToolExchange, ToolReply, ToolRequest};
use crate::providers::{Provider, ProviderRequest};

/// Entries `list_files` returns at most.
const MAX_ENTRIES: usize = 100;
/// Bytes `read_file` returns at most, and the largest file `search_files` reads.
const MAX_READ: usize = 50 * 1024;
/// Matches `search_files` returns at most.
const MAX_MATCHES: usize = 20;
/// Characters of a matching line kept.
const MAX_LINE: usize = 200;
const SKIPPED_DIRS: &[&str] = &["node_modules", ".git", ".next", "dist", "__pycache__", ".cache"];
const SKIPPED_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "ico", "svg", "woff", "woff2", "ttf", "eot", "mp3", "mp4", "wav", "zip", "tar", "gz",
    "pdf", "exe", "dll", "so", "dylib",
];

/// The three tools, as every LLM provider is given them.
pub(super) fn tools() -> Arc<[ToolDef]> {
    let path = json!({"type": "string", "description": "A path relative to the workspace root (default `.`)."});
    let mut list = ToolDef::new(
        "list_files",
        json!({"type": "object", "properties": {"path": path}, "additionalProperties": false}),
    );
    list.description = Some("Lists one directory of the workspace (at most 100 entries).".to_owned());
    let mut read = ToolDef::new(
        "read_file",
        json!({"type": "object", "properties": {"path": path}, "required": ["path"], "additionalProperties": false}),
    );
    read.description = Some("Reads a file of the workspace (its first 50 KiB).".to_owned());
    let mut search = ToolDef::new(
        "search_files",
        json!({"type": "object", "properties": {
            "pattern": {"type": "string", "description": "A regular expression, matched case-insensitively."},
            "path": path
        }, "required": ["pattern"], "additionalProperties": false}),
    );
    search.description = Some("Searches the workspace's files line by line (at most 20 matches).".to_owned());
    Arc::from(vec![list, read, search])
}

/// What the loop did, for the grade's details.
pub(super) struct Explored {
    /// The model's final text.
    pub text: String,
    pub steps: u32,
    /// Every call: `{tool, input, output}`.
    pub calls: Vec<Value>,
}

/// Calls the grader model with the tools until it answers in text, at most `max_steps` times;
/// the last allowed call offers no tool choice, so the model must answer.
pub(super) async fn explore(
    provider: &dyn Provider,
    mut request: ProviderRequest,
    max_steps: u32,
    workspace: &Path,
) -> Result<Explored, String> {
    let mut tools = ToolRequest {
        tools: tools(),
        ..ToolRequest::default()
    };
    let mut calls = Vec::new();
    let mut steps = 0;
    loop {
        steps += 1;
        if steps >= max_steps {
            tools.choice = Some(ToolChoice::None);
        }
        request.tools = Some(tools.clone());
        let response = provider
            .invoke(&request)
            .await
            .map_err(|e| format!("step {steps} of the grader: {e}"))?;
        let message = response
            .output_messages
            .iter()
            .rev()
            .find(|m| m.role == "assistant")
            .cloned()
            .unwrap_or_else(|| crate::model::OutputMessage::assistant(""));
        if message.tool_calls.is_empty() || steps >= max_steps {
            let text = message.text().unwrap_or_default().to_owned();
            return Ok(Explored { text, steps, calls });
        }
        let mut replies = Vec::with_capacity(message.tool_calls.len());
        for call in &message.tool_calls {
            let outcome = run_tool(workspace, &call.tool, call.input.as_ref());
            let (content, is_error) = match outcome {
                Ok(value) => (value, false),
                Err(e) => (Value::String(e), true),
            };
            calls.push(json!({"tool": call.tool, "input": call.input, "output": content}));
            replies.push(ToolReply {
                id: call.id.clone(),
                name: call.tool.clone(),
                content,
                is_error,
            });
        }
        tools.exchanges.push(ToolExchange {
            raw: response.raw.clone(),
            message,
            replies,
        });
    }
}

/// The grade of an explored answer: parsed once (no retries), with
/// `details: {mode: built-in, steps, tool_calls}`.
pub(super) fn grade(explored: Explored, parse: impl Fn(&Value) -> Result<Grade, String>) -> Grade {
    let mut grade = match llm_reply::parse_json_from_text(&explored.text).and_then(|v| parse(&v)) {
        Ok(grade) => grade,
        Err(e) => Grade::skipped(format!("Grader parse failure after exploring the workspace: {e}")),
    };
    let details = grade.details.get_or_insert_with(Map::new);
    details.insert("mode".to_owned(), json!("built-in"));
    details.insert("steps".to_owned(), json!(explored.steps));
    details.insert("tool_calls".to_owned(), Value::Array(explored.calls));
    grade
}

/// Runs one tool call; `Err` is the message the model is told.
pub(super) fn run_tool(workspace: &Path, tool: &str, input: Option<&Value>) -> Result<Value, String> {
    let arg = |key: &str| input.and_then(|i| i.get(key)).and_then(Value::as_str);
    match tool {
        "list_files" => list(&inside(workspace, arg("path").unwrap_or("."))?),
        "read_file" => read(&inside(workspace, arg("path").ok_or("`path` is required")?)?),
        "search_files" => {
            let pattern = arg("pattern").ok_or("`pattern` is required")?;
            let re = regex::RegexBuilder::new(pattern)
                .case_insensitive(true)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| format!("invalid pattern: {e}"))?;
            let root = inside(workspace, arg("path").unwrap_or("."))?;
            Ok(Value::Array(search(workspace, &root, &re)))
        }
        other => Err(format!("unknown tool `{other}`: the tools are list_files, read_file and search_files")),
    }
}

/// `path` inside `workspace`, or why not: `..` and absolute paths may not leave it, and neither
/// may a symlink (the resolved path is checked too).
fn inside(workspace: &Path, path: &str) -> Result<PathBuf, String> {
    let outside = || format!("Path '{path}' is outside the workspace");
    let joined = crate::paths::normalize(&workspace.join(path));
    if !joined.starts_with(workspace) {
        return Err(outside());
    }
    let root = workspace.canonicalize().map_err(|e| e.to_string())?;
    match joined.canonicalize() {
        Ok(real) if real.starts_with(&root) => Ok(real),
        Ok(_) => Err(outside()),
        Err(e) => Err(format!("{path}: {e}")),
    }
}

fn list(dir: &Path) -> Result<Value, String> {
    let mut entries: Vec<(String, &str)> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| {
            let kind = match e.file_type() {
                Ok(t) if t.is_dir() => "directory",
                Ok(t) if t.is_symlink() => "symlink",
                _ => "file",
            };
            (e.file_name().to_string_lossy().into_owned(), kind)
        })
        .collect();
    entries.sort();
    entries.truncate(MAX_ENTRIES);
    Ok(Value::Array(
        entries.into_iter().map(|(name, kind)| json!({"name": name, "type": kind})).collect(),
    ))
}

fn read(file: &Path) -> Result<Value, String> {
    use std::io::Read;
    let size = std::fs::metadata(file).map_err(|e| e.to_string())?.len();
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_READ as u64).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    Ok(json!({
        "content": String::from_utf8_lossy(&bytes),
        "truncated": size > MAX_READ as u64,
        "size": size,
    }))
}

fn search(workspace: &Path, root: &Path, re: &regex::Regex) -> Vec<Value> {
    let base = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
    let walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && SKIPPED_DIRS.contains(&e.file_name().to_string_lossy().as_ref())));
    let mut found = Vec::new();
    for entry in walk.filter_map(Result::ok).filter(|e| e.file_type().is_file()) {
        let path = entry.path();
        let skipped_ext = path
            .extension()
            .is_some_and(|x| SKIPPED_EXTENSIONS.contains(&x.to_string_lossy().to_ascii_lowercase().as_str()));
        if skipped_ext || entry.metadata().map_or(true, |m| m.len() > MAX_READ as u64) {
            continue;
        }
        let Ok(bytes) = std::fs::read(path) else { continue };
        let text = String::from_utf8_lossy(&bytes);
        let rel = path.strip_prefix(&base).unwrap_or(path).display().to_string();
        for (i, line) in text.lines().enumerate() {
            if re.is_match(line) {
                found.push(json!({"file": rel, "line": i + 1, "text": line.chars().take(MAX_LINE).collect::<String>()}));
                if found.len() >= MAX_MATCHES {
                    return found;
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_tools_read_list_and_search_but_never_leave_the_workspace() {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).expect("dirs");
        std::fs::write(ws.join("src/calc.py"), "def add(a, b):\n    return a + b\n").expect("file");
        std::fs::write(ws.join("notes.txt"), "ADD is fixed\n").expect("file");
        std::fs::write(tmp.path().join("secret.txt"), "secret").expect("file");
        std::os::unix::fs::symlink(tmp.path().join("secret.txt"), ws.join("link.txt")).expect("link");
        let ws = ws.canonicalize().expect("canonical");
        let call = |tool: &str, input: Value| run_tool(&ws, tool, Some(&input));

        assert_eq!(
            call("list_files", json!({})).expect("list"),
            json!([{"name": "link.txt", "type": "symlink"}, {"name": "notes.txt", "type": "file"}, {"name": "src", "type": "directory"}])
        );
        assert_eq!(
            call("read_file", json!({"path": "src/calc.py"})).expect("read")["content"],
            "def add(a, b):\n    return a + b\n"
        );
        assert_eq!(
            call("search_files", json!({"pattern": "add"})).expect("search"),
            json!([{"file": "notes.txt", "line": 1, "text": "ADD is fixed"}, {"file": "src/calc.py", "line": 1, "text": "def add(a, b):"}])
        );
        for (tool, input) in [
            ("read_file", json!({"path": "../secret.txt"})),
            ("read_file", json!({"path": "link.txt"})),
            ("read_file", json!({"path": tmp.path().join("secret.txt")})),
            ("list_files", json!({"path": "src/../.."})),
            ("search_files", json!({"pattern": "secret", "path": ".."})),
        ] {
            let e = call(tool, input.clone()).expect_err("refused");
            assert!(e.contains("is outside the workspace"), "{tool} {input}: {e}");
        }
        assert!(call("write_file", json!({"path": "x"})).is_err(), "no tool writes");
        assert!(call("search_files", json!({"pattern": "("})).expect_err("bad").contains("invalid pattern"));
        let before: Vec<_> = walkdir::WalkDir::new(tmp.path()).into_iter().filter_map(Result::ok).map(|e| e.path().to_path_buf()).collect();
        assert_eq!(before.len(), 7, "nothing was written: {before:?}");
    }
}
