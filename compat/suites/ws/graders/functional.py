#!/usr/bin/env python3
"""Code grader: runs each `test/*.js` of the workspace (`workspace_path`) with node; one
assertion per test file, score = passed / total. No workspace scores 0."""
import json
import os
import subprocess
import sys

payload = json.load(sys.stdin)
ws = payload.get("workspace_path")
if not ws:
    print(json.dumps({"score": 0, "assertions": [{"text": "no workspace_path", "passed": False}]}))
    sys.exit(0)
checks = []
for name in sorted(os.listdir(os.path.join(ws, "test"))):
    done = subprocess.run(["node", os.path.join("test", name)], cwd=ws, capture_output=True, timeout=60)
    checks.append({"text": f"{name} passes", "passed": done.returncode == 0})
passed = sum(1 for c in checks if c["passed"])
print(json.dumps({"score": passed / len(checks), "assertions": checks}))
