#!/usr/bin/env python3
"""Code judge: recounts the words of each input file and checks the answer states the count.

Also reads the trace the runtime passes (candidate_trace) to report how many files were read.
Standard library only.
"""
import json
import sys

payload = json.load(sys.stdin)
answer = payload["candidate_answer"]
hits, misses = [], []
for path in payload["input_files"]:
    with open(path, encoding="utf-8") as f:
        words = len(f.read().split())
    name = path.rsplit("/", 1)[-1]
    if f"{words} words" in answer:
        hits.append(f"{name}: {words} words stated")
    else:
        misses.append(f"{name}: expected '{words} words'")

reads = [e for e in payload["candidate_trace"] if e.get("name") == "Read"]
total = len(hits) + len(misses)
print(json.dumps({
    "score": len(hits) / total if total else 0.0,
    "hits": hits,
    "misses": misses,
    "details": {"files_read": len(reads), "tool_calls": payload["trace_summary"]["tool_calls_by_name"]},
}))
