#!/usr/bin/env python3
"""The Python SDK's conformance judge: it does what the payload's `config.conformance` says.

`steps` run in order, then `result` is returned with whatever the steps recorded merged into
its `details`. The steps are described in ../README.md; every SDK has a judge like this one.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from agentv_eval import CodeJudgePayload, TargetClient, TargetError, run_judge  # noqa: E402

SPECIAL = {"$NaN": float("nan"), "$Infinity": float("inf"), "$-Infinity": float("-inf")}


def special(value):
    """Replaces the stand-ins for numbers JSON cannot hold."""
    if isinstance(value, str):
        return SPECIAL.get(value, value)
    if isinstance(value, list):
        return [special(v) for v in value]
    if isinstance(value, dict):
        return {k: special(v) for k, v in value.items()}
    return value


def error_record(error: TargetError) -> dict:
    return {"kind": error.kind, "status": error.status, "message": error.message, "budget_exhausted": error.budget_exhausted}


def client() -> TargetClient:
    found = TargetClient.from_env()
    if found is None:
        raise RuntimeError("this step needs a target proxy")
    return found


def run_step(step: dict, target, details: dict) -> None:
    if "print" in step:
        print(step["print"])
    elif "stderr" in step:
        print(step["stderr"], file=sys.stderr)
    elif "child_print" in step:
        subprocess.run([sys.executable, "-c", f"print({step['child_print']!r})"], check=True)
    elif "raise" in step:
        raise RuntimeError(step["raise"])
    elif "target" in step:
        details["target"] = {"from_env": TargetClient.from_env() is not None, "argument": target is not None}
    elif "info" in step:
        info = client().get_info()
        details["info"] = {
            "target_name": info.target_name,
            "max_calls": info.max_calls,
            "call_count": info.call_count,
            "available_targets": info.available_targets,
        }
    elif "invoke" in step:
        record = details.setdefault("invocations", [])
        try:
            record.append({"text": client().invoke(step["invoke"]).text})
        except TargetError as e:
            if not step.get("catch"):
                raise
            record.append({"error": error_record(e)})
    elif "invoke_batch" in step:
        answers = client().invoke_batch(step["invoke_batch"])
        details.setdefault("batches", []).append(
            [{"text": a.text} if a.ok else {"error": a.error} for a in answers]
        )
    elif "env_proxy" in step:
        details["env_proxy"] = os.environ.get("AGENTV_TARGET_PROXY_URL")
    elif "read_stdin" in step:
        details["stdin"] = sys.stdin.read()
    else:
        raise ValueError(f"unknown conformance step {step}")


def judge(payload: CodeJudgePayload, target):
    spec = payload.config.get("conformance", {})
    details: dict = {}
    for step in spec.get("steps", []):
        run_step(step, target, details)
    result = special(spec.get("result", {"score": 1}))
    if details and isinstance(result, dict):
        result = dict(result, details={**(result.get("details") or {}), **details})
    return result


if __name__ == "__main__":
    run_judge(judge)
