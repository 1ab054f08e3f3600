//! The real agent CLIs editing real files: Claude Code (npm `@anthropic-ai/claude-code`),
//! installed by `tests/agents/install.sh` into `target/agent-clis`, runs in per-case workspaces
//! against the fake model API on 127.0.0.1, which answers with tool calls that read, edit,
//! create and delete files and run a shell command. The suite's graders check `file_changes`
//! and run the workspace's tests. Without npm (or the registry) the tests are skipped with the
//! reason, and fail under `CI=true`.

use std::path::PathBuf;
use std::sync::OnceLock;

use agentv_testkit::Project;
use agentv_testkit::llm::FakeLlm;
use agentv_testkit::toolchains::skip_or_fail;

/// The directory holding the installed `claude` and `codex`, installed once per test run.
fn agent_clis() -> Option<PathBuf> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = BIN.get_or_init(|| {
        let root = agentv_testkit::repo_root();
        let out = std::process::Command::new("sh")
            .arg(root.join("tests/agents/install.sh"))
            .arg(root.join("target/agent-clis"))
            .output()
            .map_err(|e| format!("cannot run tests/agents/install.sh: {e}"))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(format!("npm could not install the agent CLIs: {}", stderr.trim()));
        }
        Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    });
    match found {
        Ok(bin) => Some(bin.clone()),
        Err(reason) => {
            skip_or_fail(&format!("{reason}, so the real agents cannot run"));
            None
        }
    }
}

/// What the model does for the case: read the buggy file, fix it and add notes, then delete a
/// file and run the tests in one shell command, then answer.
const CLAUDE_SCRIPT: &str = r#"
- when: "(case fix-the-bug)"
  steps:
    - calls: [{name: Read, arguments: {file_path: calc.py}}]
    - calls:
        - {name: Edit, arguments: {file_path: calc.py, old_string: "a - b", new_string: "a + b"}}
        - {name: Write, arguments: {file_path: NOTES.md, content: "add() now adds.\n"}}
    - calls: [{name: Bash, arguments: {command: "rm obsolete.txt && sh test.sh", description: "Remove the obsolete file and run the tests"}}]
    - text: "Fixed add() and removed the obsolete file; the tests pass."
"#;

const EVAL: &str = r#"workspace: {template: ./project, isolation: per_test}
execution: {target: agent}
tests:
  - id: fix-the-bug
    criteria: add() adds, the notes exist, the obsolete file is gone
    input: "Fix the bug in calc.py, write NOTES.md and delete obsolete.txt (case fix-the-bug)"
    assertions:
      - {name: tests, type: command, command: [sh, test.sh]}
      - {name: changes, type: code-grader, command: [python3, check_changes.py]}
"#;

/// Reads `file_changes` and checks each change the model asked for.
const CHECK_CHANGES: &str = r#"import json, sys
diff = json.load(sys.stdin).get("file_changes") or ""
checks = [
    ("calc.py edited", "-    return a - b\n+    return a + b" in diff),
    ("NOTES.md created", "+++ b/NOTES.md" in diff and "+add() now adds." in diff),
    ("obsolete.txt deleted", "--- a/obsolete.txt\n+++ /dev/null" in diff),
]
print(json.dumps({
    "score": sum(ok for _, ok in checks) / len(checks),
    "assertions": [{"text": name, "passed": ok} for name, ok in checks],
}))
"#;

fn project(targets: &str) -> Project {
    Project::new()
        .file("targets.yaml", targets)
        .file("e.yaml", EVAL)
        .file("check_changes.py", CHECK_CHANGES)
        .file("project/calc.py", "def add(a, b):\n    return a - b\n")
        .file("project/obsolete.txt", "remove me\n")
        .file(
            "project/test.sh",
            "python3 -c 'from calc import add; assert add(2, 3) == 5, add(2, 3)' && echo tests pass\n",
        )
}

/// Checks the case scored 1 with three files changed, one created and one deleted in its
/// workspace; its tool calls, in order.
fn fixed_in_workspace(r: &serde_json::Value) -> Vec<serde_json::Value> {
    assert_eq!(r["score"], 1.0, "{r}");
    let workspace = &r["workspace"];
    assert_eq!(
        (
            &workspace["files_changed"],
            &workspace["files_created"],
            &workspace["files_deleted"]
        ),
        (&serde_json::json!(3), &serde_json::json!(1), &serde_json::json!(1)),
        "{workspace}"
    );
    r["output_messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn real_claude_code_edits_creates_and_deletes_files_in_its_workspace_against_a_fake_model() {
    let Some(bin) = agent_clis() else { return };
    if !agentv_testkit::toolchains::require("python3", "the workspace's tests") {
        return;
    }
    let fake = FakeLlm::scripted(CLAUDE_SCRIPT).await;
    let targets = format!(
        "targets:\n  - name: agent\n    provider: claude-code\n    executable: {}\n    args: [--permission-mode, acceptEdits, --allowedTools, 'Read,Edit,Write,Bash']\n",
        bin.join("claude").display()
    );
    let p = project(&targets);
    let home = p.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let mut cmd = p.command(&["eval", "e.yaml", "--out", "r.jsonl", "--keep-workspaces"]);
    cmd.env("AGENTV_DATA_DIR", p.path().join("data"))
        .env("ANTHROPIC_BASE_URL", fake.uri())
        .env("ANTHROPIC_API_KEY", "sk-ant-fake")
        .env("HOME", &home)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env_remove("CLAUDECODE");
    let run = p.output_async(cmd).await;
    let r = p.result("r.jsonl", "fix-the-bug");
    run.code(0);
    let tools: Vec<String> = fixed_in_workspace(&r)
        .iter()
        .filter_map(|c| c["tool"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(tools, ["Read", "Edit", "Write", "Bash"], "{r}");
    let kept = PathBuf::from(r["workspace_path"].as_str().expect("kept"));
    assert!(!kept.join("obsolete.txt").exists());
    assert_eq!(
        std::fs::read_to_string(p.path().join("project/calc.py")).expect("template"),
        "def add(a, b):\n    return a - b\n",
        "the template is untouched"
    );
}

/// The same change through Codex's one tool, `exec_command`: edit, create and delete with shell
/// commands, then run the tests.
const CODEX_SCRIPT: &str = r#"
- when: "(case fix-the-bug)"
  steps:
    - calls: [{name: exec_command, arguments: {cmd: "sed -i 's/a - b/a + b/' calc.py"}}]
    - calls: [{name: exec_command, arguments: {cmd: "printf 'add() now adds.\\n' > NOTES.md && rm obsolete.txt"}}]
    - calls: [{name: exec_command, arguments: {cmd: "sh test.sh"}}]
    - text: "Fixed add() and removed the obsolete file; the tests pass."
"#;

#[tokio::test]
async fn real_codex_edits_creates_and_deletes_files_in_its_workspace_against_a_fake_model() {
    let Some(bin) = agent_clis() else { return };
    if !agentv_testkit::toolchains::require("python3", "the workspace's tests") {
        return;
    }
    let fake = FakeLlm::scripted(CODEX_SCRIPT).await;
    let targets = format!(
        "targets:\n  - name: agent\n    provider: codex\n    executable: {}\n    model: gpt-5-codex\n    args: [--sandbox, danger-full-access]\n",
        bin.join("codex").display()
    );
    let p = project(&targets);
    let codex_home = p.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).expect("codex home");
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model_provider = \"fake\"\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"OPENAI_API_KEY\"\n",
            fake.uri()
        ),
    )
    .expect("config");
    let mut cmd = p.command(&["eval", "e.yaml", "--out", "r.jsonl", "--keep-workspaces"]);
    cmd.env("AGENTV_DATA_DIR", p.path().join("data"))
        .env("CODEX_HOME", &codex_home)
        .env("HOME", p.path())
        .env("OPENAI_API_KEY", "sk-fake");
    let run = p.output_async(cmd).await;
    let r = p.result("r.jsonl", "fix-the-bug");
    run.code(0);
    let commands: Vec<String> = fixed_in_workspace(&r).iter().map(|c| c["input"].to_string()).collect();
    assert_eq!(commands.len(), 3, "{r}");
    assert!(commands[2].contains("sh test.sh"), "{commands:?}");
    let kept = PathBuf::from(r["workspace_path"].as_str().expect("kept"));
    assert_eq!(
        std::fs::read_to_string(kept.join("NOTES.md")).expect("created"),
        "add() now adds.\n"
    );
}
