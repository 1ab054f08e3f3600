#!/usr/bin/env python3
"""Grades the agent by what it changed, not by what it said.

Reads the case on stdin. `file_changes` is the unified diff of the workspace against the
template (None when nothing changed); the judge runs inside the workspace, whose path is also
in `workspace_path` and $AGENTV_WORKSPACE_PATH.
"""

import json
import os
import sys

case = json.load(sys.stdin)
diff = case.get("file_changes") or ""
hits, misses = [], []

if "return a + b" in diff:
    hits.append("add() now adds")
else:
    misses.append("add() was not fixed")
if "test_calc.py" in diff:
    misses.append("the tests were edited")
else:
    hits.append("the tests were left alone")
if os.path.samefile(os.getcwd(), os.environ["AGENTV_WORKSPACE_PATH"]):
    hits.append("graded inside the workspace")

score = len([h for h in hits if h != "graded inside the workspace"]) / 2
print(json.dumps({"score": score, "hits": hits, "misses": misses}))
