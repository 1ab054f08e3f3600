#!/usr/bin/env python3
"""A code grader for the compat suites: reads AgentV 4.x's payload (reference §6.1) on stdin and
runs the checks named in `config.checks`, one assertion each.

Checks: `keys` (the core 4.x payload keys are present), `output~S` / `criteria~S` /
`expected~S` / `input~S` (the output, criteria, last expected message, or any input message
contains S; non-string contents are JSON-encoded), `expected_role=R`, `input_roles=a,b`,
`meta:K=V`, `config:K=V` (string comparison), `token:K=N` (token_usage[K] == N).

`config.mode`: `score` (default; prints `{score, assertions}`), `assertions` (prints only the
assertions, so the score is passed/total), `plain` (prints a line of text and exits 0 when every
check passes, else 1: the exit-code convention), `crash` (exit 3 with a message on stderr),
`overscore` (prints score 1.7, which must be clamped to 1).
"""

import json
import sys

CORE_KEYS = ["criteria", "expected_output", "output", "input", "input_files", "metadata", "messages", "config"]
TRACE_KEYS = ["trace", "trace_summary", "token_usage", "cost_usd", "duration_ms", "file_changes", "workspace_path"]


def text(content):
    return content if isinstance(content, str) else json.dumps(content)


def check(payload, spec):
    if spec == "keys":
        missing = [k for k in CORE_KEYS + TRACE_KEYS if k not in payload]
        return not missing, "missing: " + ", ".join(missing) if missing else "all keys present"
    if "~" in spec:
        where, needle = spec.split("~", 1)
        if where == "output":
            hay = text(payload.get("output"))
        elif where == "criteria":
            hay = text(payload.get("criteria"))
        elif where == "expected":
            hay = text((payload.get("expected_output") or [{}])[-1].get("content"))
        elif where == "input":
            hay = "\n".join(text(m.get("content")) for m in payload.get("input") or [])
        else:
            return False, f"unknown check {spec}"
        return needle in hay, hay[:120]
    key, _, want = spec.partition("=")
    if key == "expected_role":
        got = (payload.get("expected_output") or [{}])[-1].get("role")
    elif key == "input_roles":
        got = ",".join(m.get("role", "?") for m in payload.get("input") or [])
    elif key.startswith("meta:"):
        got = (payload.get("metadata") or {}).get(key[5:])
    elif key.startswith("config:"):
        got = (payload.get("config") or {}).get(key[7:])
    elif key.startswith("token:"):
        got = (payload.get("token_usage") or {}).get(key[6:])
    else:
        return False, f"unknown check {spec}"
    return str(got) == want, f"got {got!r}"


def main():
    payload = json.load(sys.stdin)
    config = payload.get("config") or {}
    mode = config.get("mode", "score")
    if mode == "crash":
        print("check.py: crashing on purpose", file=sys.stderr)
        return 3
    results = []
    for spec in config.get("checks") or []:
        try:
            ok, evidence = check(payload, spec)
        except Exception as e:  # a malformed payload fails the check, not the grader
            ok, evidence = False, f"{type(e).__name__}: {e}"
        results.append({"text": spec, "passed": bool(ok), "evidence": evidence})
    passed = sum(r["passed"] for r in results)
    if mode == "plain":
        print(f"{passed} of {len(results)} checks passed")
        return 0 if passed == len(results) else 1
    if mode == "assertions":
        print(json.dumps({"assertions": results}))
    elif mode == "overscore":
        print(json.dumps({"score": 1.7, "assertions": results}))
    else:
        print(json.dumps({"score": passed / len(results) if results else 0, "assertions": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
