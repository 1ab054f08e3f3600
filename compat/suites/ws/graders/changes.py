#!/usr/bin/env python3
"""Code grader for the workspace suites: checks `file_changes` by kind of change.

`config.expect_edited`, `expect_created`, `expect_deleted` list paths; one assertion per path,
plus one that the diff is a unified diff. score = passed / total. No diff scores 0.
"""
import json
import re
import sys

payload = json.load(sys.stdin)
config = payload.get("config") or {}
diff = payload.get("file_changes") or ""
checks = []
if not diff:
    print(json.dumps({"score": 0, "assertions": [{"text": "no file_changes", "passed": False}]}))
    sys.exit(0)
checks.append(("unified diff", "diff --git " in diff))
blocks = re.split(r"(?=^diff --git )", diff, flags=re.M)


def block_has(path, *needles):
    return any(f"b/{path}" in b or f"a/{path}" in b for b in blocks if all(n in b for n in needles)) and any(
        (f"a/{path}" in b or f"b/{path}" in b) and all(n in b for n in needles) for b in blocks
    )


for path in config.get("expect_edited", []):
    ok = any(f"--- a/{path}" in b and f"+++ b/{path}" in b for b in blocks)
    checks.append((f"edited {path}", ok))
for path in config.get("expect_created", []):
    ok = any("--- /dev/null" in b and f"+++ b/{path}" in b for b in blocks)
    checks.append((f"created {path}", ok))
for path in config.get("expect_deleted", []):
    ok = any(f"--- a/{path}" in b and "+++ /dev/null" in b for b in blocks)
    checks.append((f"deleted {path}", ok))
passed = sum(1 for _, ok in checks if ok)
print(json.dumps({"score": passed / len(checks), "assertions": [{"text": t, "passed": ok} for t, ok in checks]}))
