#!/usr/bin/env python3
"""A tiny deterministic agent for the cli provider example.

It "uses tools" the way a coding agent would (List, Read, WordCount), then writes its
answer as JSON with output_messages, tool_calls, token_usage and cost_usd to --out.
Standard library only.
"""
import argparse
import json
import os
import re
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--prompt", default="")
parser.add_argument("--files", nargs="*", default=[])
parser.add_argument("--out")
parser.add_argument("--healthcheck", action="store_true")
args = parser.parse_args()

if args.healthcheck:
    sys.exit(0)

started = time.time()
calls = []
notes = []

def tool(name, tool_input, output):
    calls.append({"tool": name, "input": tool_input, "output": output, "id": f"call_{len(calls) + 1}",
                  "duration_ms": round((time.time() - started) * 1000, 3)})
    return output

listing = tool("List", {"path": "."}, sorted(os.listdir(".")))
for path in args.files:
    with open(path, encoding="utf-8") as f:
        text = tool("Read", {"path": os.path.basename(path)}, f.read())
    words = tool("WordCount", {"path": os.path.basename(path)}, len(text.split()))
    heading = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")), "untitled")
    notes.append(f"{os.path.basename(path)} is titled \"{heading}\" and has {words} words.")

if "deploy" in args.prompt.lower():
    tool("Bash", {"command": "make deploy"}, "refused: deployment needs approval")
    notes.append("I did not deploy: it needs approval.")

answer = " ".join(notes) if notes else "I found no files to read."
result = {
    "output_messages": [
        {"role": "assistant", "content": "Let me look at the files.", "tool_calls": calls},
        {"role": "assistant", "content": answer},
    ],
    "token_usage": {"input": len(args.prompt) // 4, "output": len(answer) // 4},
    "cost_usd": 0.0001 * len(calls),
}
with open(args.out, "w", encoding="utf-8") as f:
    json.dump(result, f)
