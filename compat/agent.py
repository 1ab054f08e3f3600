#!/usr/bin/env python3
"""A deterministic agent for `cli` targets of the compatibility harness (stdlib only).

Usage: `python3 agent.py PROMPT OUTPUT_FILE` (the target's command is
`python3 ../agent.py {PROMPT} {OUTPUT_FILE}`). The prompt carries a marker `[ans:KEY]`;
`answers.ANSWERS[KEY]` says what to answer:

* a string: one assistant message with that text;
* an object: `text` (the final assistant message), `tool_calls` (one assistant message holding
  them, before the text; each `{tool, input?, output?, duration_ms?}`), `messages` (replaces the
  whole output), `token_usage`, `cost_usd`, `duration_ms` (copied to the output as given).

The output file receives AgentV 4.x's CLI output JSON: `{output: [messages], token_usage?,
cost_usd?, duration_ms?}`.
"""

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import answers  # noqa: E402

MARKER = re.compile(r"\[ans:([A-Za-z0-9_.-]+)\]")


def build(prompt):
    m = MARKER.search(prompt)
    if not m:
        return {"output": [{"role": "assistant", "content": "NO DESIGNED ANSWER (no [ans:KEY] marker)"}]}
    entry = answers.ANSWERS.get(m.group(1))
    if entry is None:
        return {"output": [{"role": "assistant", "content": f"NO DESIGNED ANSWER for {m.group(1)}"}]}
    if isinstance(entry, str):
        return {"output": [{"role": "assistant", "content": entry}]}
    if "messages" in entry:
        messages = entry["messages"]
    else:
        messages = []
        if entry.get("tool_calls"):
            messages.append({"role": "assistant", "tool_calls": entry["tool_calls"]})
        if "text" in entry:
            messages.append({"role": "assistant", "content": entry["text"]})
    result = {"output": messages}
    for key in ("token_usage", "cost_usd", "duration_ms"):
        if key in entry:
            result[key] = entry[key]
    return result


def main():
    if len(sys.argv) != 3:
        print("usage: agent.py PROMPT OUTPUT_FILE", file=sys.stderr)
        return 2
    Path(sys.argv[2]).write_text(json.dumps(build(sys.argv[1]), indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
