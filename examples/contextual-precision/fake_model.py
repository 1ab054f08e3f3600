#!/usr/bin/env python3
"""A deterministic stand-in for a judge model, used as a `cli` target so the example runs offline.

It reads the prompt agentv renders into {PROMPT}:
- a prompt with several <chunk rank="k"> blocks that asks for a JSON array gets one verdict per
  chunk;
- a prompt with one chunk gets "yes" or "no";
- anything else gets "yes".
A chunk counts as relevant when it mentions "refund" (the topic of the example questions). A real
model would judge by meaning; the judges do not change.
"""
import json
import re
import sys

prompt, out = sys.argv[1], sys.argv[2]
chunks = re.findall(r'<chunk rank="\d+">\n(.*?)\n</chunk>', prompt, re.S)

def relevant(text):
    return "refund" in text.lower()

if len(chunks) > 1 or "JSON array" in prompt:
    answer = json.dumps([
        {"verdict": "yes" if relevant(c) else "no", "reason": "mentions refunds" if relevant(c) else "off topic"}
        for c in chunks
    ])
elif chunks:
    answer = "yes, it is about refunds" if relevant(chunks[0]) else "no, it is about something else"
else:
    answer = "yes"

with open(out, "w", encoding="utf-8") as f:
    f.write(answer)
