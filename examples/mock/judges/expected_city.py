#!/usr/bin/env python3
"""Code judge: does the answer contain the reference answer's city, in enough words?

Reads the agentv payload on stdin and prints {score, hits, misses, reasoning, details}.
Standard library only.
"""
import json
import sys

payload = json.load(sys.stdin)
answer = payload["candidate_answer"]
expected = payload["reference_answer"].strip().rstrip(".").split()[-1]
min_words = int(payload.get("config", {}).get("min_words", 1))

hits, misses = [], []
score = 0.0
if expected.lower() in answer.lower():
    score += 0.7
    hits.append(f"mentions {expected}")
else:
    misses.append(f"does not mention {expected}")
words = len(answer.split())
if words >= min_words:
    score += 0.3
    hits.append(f"{words} words (minimum {min_words})")
else:
    misses.append(f"only {words} words (minimum {min_words})")

print(json.dumps({
    "score": score,
    "hits": hits,
    "misses": misses,
    "reasoning": f"expected city {expected!r}",
    "details": {"expected_city": expected, "words": words},
}))
