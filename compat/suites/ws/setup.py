#!/usr/bin/env python3
"""A before_all / before_each hook for the workspace suites: reads AgentV's JSON context on
stdin and writes into the workspace. `setup.py all PLUGIN_DIR` copies PLUGIN_DIR/AGENTS.md in
and writes SETUP.txt; `setup.py each` appends the test id to EACH.txt."""
import json
import shutil
import sys
from pathlib import Path

context = json.loads(sys.stdin.read())
ws = Path(context["workspace_path"])
if sys.argv[1] == "all":
    shutil.copy(Path(sys.argv[2]) / "AGENTS.md", ws / "AGENTS.md")
    (ws / "SETUP.txt").write_text(f"set up for {context['test_id']}\n")
else:
    with open(ws / "EACH.txt", "a") as f:
        f.write(context["test_id"] + "\n")
