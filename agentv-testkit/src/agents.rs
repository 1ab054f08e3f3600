//! Fake agent CLIs: a replayer of the real Claude Code and Codex transcripts recorded in
//! `fixtures/agent-cli/` (see its README), and echoers that report everything they were given.

use std::path::PathBuf;

/// The recorded transcripts: `claude-stream.jsonl`, `codex-exec.jsonl`, ...
pub fn transcript(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/agent-cli")
        .join(name)
}

/// A fake agent CLI (`executable:` of a `claude-code` or `codex` target): records how it was
/// called (argv, stdin, working directory, environment, a `prompt.md` beside it) under
/// `$FAKE_RECORD_DIR`, then replays `$FAKE_TRANSCRIPT` byte for byte, or prints garbage, or hangs
/// with a child (recording the child's pid in `child.pid`), as `$FAKE_MODE` says; exits
/// `$FAKE_EXIT`. A hang ends when agentv kills it or, failing that, when the test's deadline
/// kills every process the run started.
pub const REPLAY_AGENT: &str = r#"#!/bin/sh
rec="$FAKE_RECORD_DIR"
printf '%s\n' "$@" > "$rec/argv"
cat > "$rec/stdin"
pwd > "$rec/cwd"
env > "$rec/env"
[ -f prompt.md ] && cp prompt.md "$rec/prompt.md"
case "$FAKE_MODE" in
  hang) sleep 300 & echo $! > "$rec/child.pid"; wait ;;
  garbage) echo "Segmentation fault (core dumped)" ;;
  *) cat "$FAKE_TRANSCRIPT" ;;
esac
exit "${FAKE_EXIT:-0}"
"#;

/// An agent CLI that echoes its argv, stdin, cwd and `SECRET_*` variables: raw on stdout and
/// stderr (for the stream logs), then as a Claude Code or Codex transcript (Codex when `exec` is
/// an argument) whose answer is a verdict holding the echo.
pub const ECHO_AGENT: &str = r#"#!/usr/bin/env python3
import json, os, sys
argv = sys.argv[1:]
stdin = sys.stdin.read()
env = {k: v for k, v in os.environ.items() if k.startswith("SECRET_")}
echo = json.dumps({"argv": argv, "stdin": stdin, "env": env, "cwd": os.getcwd()})
print("raw argv:", *argv)
for k, v in env.items():
    print(f"raw env {k}={v}")
print("raw stderr:", *argv, file=sys.stderr)
sys.stdout.flush()
verdict = json.dumps({"score": 1, "hits": ["echo"], "misses": [], "reasoning": echo})
if "exec" in argv:
    events = [
        {"type": "thread.started", "thread_id": "t1"},
        {"type": "item.completed", "item": {"id": "i1", "type": "command_execution", "command": " ".join(argv),
            "aggregated_output": json.dumps(env), "exit_code": 0, "status": "completed"}},
        {"type": "item.completed", "item": {"id": "i2", "type": "agent_message", "text": verdict}},
        {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
    ]
else:
    model = argv[argv.index("--model") + 1] if "--model" in argv else None
    events = [
        {"type": "system", "subtype": "init", "session_id": "s1", "model": model},
        {"type": "assistant", "message": {"id": "m1", "content": [
            {"type": "tool_use", "id": "tu1", "name": "Bash", "input": {"command": " ".join(argv)}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "tu1", "content": json.dumps(env)}]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": verdict,
            "usage": {"input_tokens": 1, "output_tokens": 1}},
    ]
for e in events:
    print(json.dumps(e))
"#;

/// A `cli` command, a VS Code dispatch command, or a `code` executable that writes a verdict
/// holding what it was given (argv, `SECRET_*` variables, cwd, input) to the output or
/// response file (found in the prompt document for `code`).
pub const ECHO_COMMAND: &str = r#"#!/usr/bin/env python3
import json, os, re, sys, urllib.parse
argv = sys.argv[1:]
env = {k: v for k, v in os.environ.items() if k.startswith("SECRET_")}
if argv[0] == "chat":
    document = open(argv[4]).read()
    out = urllib.parse.unquote(re.search(r"file://(\S+response\.md)", document).group(1))
    extra = document
else:
    out, extra = argv[1], open(argv[0]).read() if os.path.isfile(argv[0]) else argv[0]
print("raw argv:", *argv)
print("raw stderr:", *argv, file=sys.stderr)
echo = json.dumps({"argv": argv, "env": env, "cwd": os.getcwd(), "input": extra})
verdict = json.dumps({"score": 1, "hits": ["echo"], "misses": [], "reasoning": echo})
with open(out, "w") as f:
    f.write(json.dumps({"text": verdict}) if out.endswith(".json") else verdict)
"#;

/// A code judge that returns its whole payload and `SECRET_*` variables as reasoning.
pub const ECHO_JUDGE: &str = r#"#!/usr/bin/env python3
import json, os, sys
payload = sys.stdin.read()
env = {k: v for k, v in os.environ.items() if k.startswith("SECRET_")}
print(json.dumps({"score": 1, "reasoning": payload, "details": {"env": env}}))
"#;
