#!/usr/bin/env python3
"""Writes an N-case agentv results file for the report benchmark (bench/report.sh).

Each record looks like a real LLM-judged case: a two-message input, an answer of a few hundred
to a few thousand characters (some holding HTML), an LLM judge with its prompts, a code judge,
hits and misses, a trace summary and execution metrics. Deterministic for a given N.

Usage: gen_results.py N OUT.jsonl
"""

import json
import random
import sys

WORDS = ("the agent reads the file then edits the function and runs the tests before it answers "
         "with a summary of what changed and why <b>bold</b> & </script> stays text").split()


def text(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(42)
    tools = ["Read", "Grep", "Edit", "Bash", "Glob"]
    with open(out, "w", encoding="utf-8") as f:
        for i in range(n):
            score = round(min(1.0, max(0.0, rng.gauss(0.75, 0.2))), 3)
            verdict = "pass" if score >= 0.8 else "borderline" if score >= 0.6 else "fail"
            status = "ok"
            if i % 97 == 0:
                status = "execution_error"
            elif i % 89 == 0:
                status = "grader_error"
            question = text(rng, 20, 60)
            answer = text(rng, 60, 400)
            misses = [text(rng, 4, 10) for _ in range(rng.randint(0, 3))] if verdict != "pass" else []
            hits = [text(rng, 3, 8) for _ in range(rng.randint(1, 3))]
            calls = {t: rng.randint(1, 4) for t in rng.sample(tools, rng.randint(0, 4))}
            record = {
                "timestamp": f"2026-01-01T00:{i // 3600 % 60:02d}:{i % 60:02d}Z",
                "eval_id": f"case-{i:05d}", "dataset": f"suite-{i % 7}", "target": "agent",
                "attempt": 1, "execution_status": status, "score": score if status == "ok" else 0.0,
                "verdict": verdict if status == "ok" else "fail", "hits": hits, "misses": misses,
                "reasoning": "quality: " + text(rng, 10, 30), "candidate_answer": answer,
                "lm_provider_request": {"chat_prompt": [
                    {"role": "system", "content": "You are a coding agent."},
                    {"role": "user", "content": question}]},
                "evaluator_results": [
                    {"name": "quality", "type": "llm_judge", "score": score, "weight": 1.0, "verdict": verdict,
                     "hits": hits, "misses": misses, "reasoning": text(rng, 10, 30),
                     "evaluator_provider_request": {"system_prompt": text(rng, 40, 80),
                                                    "user_prompt": question + "\n\n" + answer, "target": "judge"}},
                    {"name": "lint", "type": "code_judge", "score": 1.0, "weight": 0.5, "verdict": "pass",
                     "hits": ["clean"], "misses": [], "details": {"warnings": 0}},
                ],
                "trace_summary": {"event_count": 2 + 2 * sum(calls.values()), "tool_names": sorted(calls),
                                  "tool_calls_by_name": calls, "error_count": 0},
                "execution_metrics": {"token_usage": {"input": rng.randint(500, 5000), "output": rng.randint(50, 900)},
                                      "cost_usd": round(rng.uniform(0.001, 0.05), 5),
                                      "duration_ms": round(rng.uniform(800, 60000), 1),
                                      "tool_durations": {t: [round(rng.uniform(20, 3000), 1) for _ in range(c)]
                                                         for t, c in calls.items()},
                                      "tool_call_count": sum(calls.values())},
            }
            if status == "execution_error":
                record["error"] = "timed out after 120 s"
                record["evaluator_results"] = []
            elif status == "grader_error":
                record["evaluator_results"][0]["error"] = "judge unreachable"
            f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
