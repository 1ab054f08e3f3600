#!/usr/bin/env python3
"""Runs every conformance case against the Python SDK (sdk/python/agentv_eval).

Sections: payloads, results, extract_json, proxy, judges (one-shot runs of judge.py),
persistent (line protocol), docs (the Python judge in docs/judges.md, used as a copied single
file) and packaging (`pip install` with no index). Prints one line per case and a closing
`python: N passed, N failed, N skipped` line; exits 1 on any failure.

Usage: run.py [SECTION_OR_CASE_SUBSTRING ...]
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import traceback
import urllib.request
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE = os.path.dirname(HERE)
SDK = os.path.dirname(CONFORMANCE)
REPO = os.path.dirname(SDK)
CASES = os.path.join(CONFORMANCE, "cases")
sys.path.insert(0, os.path.join(SDK, "python"))

import agentv_eval as sdk  # noqa: E402

MISSING = object()
SPECIAL = {"$NaN": float("nan"), "$Infinity": float("inf"), "$-Infinity": float("-inf")}
PROXY_VARS = ("AGENTV_TARGET_PROXY_URL", "AGENTV_TARGET_PROXY_TOKEN", "AGENTV_JUDGE_PROXY_URL", "AGENTV_JUDGE_PROXY_TOKEN")
JUDGE_TIMEOUT = 60


class Failure(Exception):
    pass


# ------------------------------------------------------------------------------------------
# Matching
# ------------------------------------------------------------------------------------------


def json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def matches(expected: Any, actual: Any, where: str = "$") -> Optional[str]:
    """None when `actual` matches `expected` (JSON with `$contains` / `$any` matchers)."""
    if isinstance(expected, dict) and set(expected) == {"$contains"}:
        if isinstance(actual, str) and expected["$contains"] in actual:
            return None
        return f"{where}: expected a string containing {expected['$contains']!r}, got {actual!r}"
    if isinstance(expected, dict) and set(expected) == {"$any"}:
        return None if actual is not MISSING else f"{where}: missing"
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{where}: expected an object, got {actual!r}"
        if expected.keys() != actual.keys():
            return f"{where}: expected keys {sorted(expected)}, got {sorted(actual)}"
        for key in expected:
            why = matches(expected[key], actual[key], f"{where}.{key}")
            if why:
                return why
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{where}: expected {json.dumps(expected)}, got {actual!r}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            why = matches(e, a, f"{where}[{i}]")
            if why:
                return why
        return None
    return None if json_equal(expected, actual) else f"{where}: expected {expected!r}, got {actual!r}"


def resolve(obj: Any, path: List[Any]) -> Any:
    for step in path:
        if obj is MISSING or obj is None:
            return MISSING
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and step < len(obj) else MISSING
        elif isinstance(obj, dict):
            obj = obj.get(step, MISSING)
        else:
            obj = getattr(obj, step, MISSING)
    return obj


def run_checks(value: Any, checks: List[Dict[str, Any]], helpers: Dict[str, Callable[[], Any]]) -> None:
    for check in checks:
        if "helper" in check:
            label = f"{check['helper']}()"
            actual = helpers[check["helper"]]()
        else:
            label = ".".join(str(p) for p in check["path"]) or "(value)"
            actual = resolve(value, check["path"])
        if check.get("absent"):
            if actual is not MISSING and actual is not None:
                raise Failure(f"{label}: expected absent, got {actual!r}")
        elif "length" in check:
            if actual is MISSING or len(actual) != check["length"]:
                raise Failure(f"{label}: expected length {check['length']}, got {actual!r}")
        elif "equals" in check:
            if actual is MISSING or not json_equal(check["equals"], actual):
                raise Failure(f"{label}: expected {json.dumps(check['equals'])}, got {actual!r}")


def error_matches(expected: Dict[str, Any], raised: BaseException) -> None:
    if "contains" in expected and expected["contains"] not in str(raised):
        raise Failure(f"expected an error containing {expected['contains']!r}, got {raised}")


def substitute(value: Any, table: Dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, replacement in table.items():
            value = value.replace(key, replacement)
        return value
    if isinstance(value, list):
        return [substitute(v, table) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, table) for k, v in value.items()}
    return value


def special(value: Any) -> Any:
    if isinstance(value, str):
        return SPECIAL.get(value, value)
    if isinstance(value, list):
        return [special(v) for v in value]
    if isinstance(value, dict):
        return {k: special(v) for k, v in value.items()}
    return value


# ------------------------------------------------------------------------------------------
# The fake proxy
# ------------------------------------------------------------------------------------------


class FakeProxy:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(CONFORMANCE, "fake_proxy.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = json.loads(self.process.stdout.readline())["url"]
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _control(self, method: str, route: str, body: Optional[dict] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}/__conformance/{route}", data=data, method=method)
        with self._opener.open(req, timeout=10) as response:
            return json.loads(response.read())

    def load(self, token: str, exchanges: List[dict]) -> None:
        self._control("POST", "load", {"token": token, "exchanges": exchanges})

    def verify(self) -> None:
        report = self._control("GET", "report")
        if report["problems"]:
            raise Failure("proxy saw: " + "; ".join(report["problems"]))
        if report["remaining"]:
            raise Failure(f"{report['remaining']} expected proxy request(s) never came")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)


def refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# ------------------------------------------------------------------------------------------
# Sections
# ------------------------------------------------------------------------------------------


def load_cases(name: str) -> Dict[str, Any]:
    with open(os.path.join(CASES, name), encoding="utf-8") as f:
        return json.load(f)


def payload_case(case: Dict[str, Any], _ctx: "Context") -> None:
    tmp = tempfile.mkdtemp(prefix="agentv-conformance-")
    try:
        for name, text in case.get("files", {}).items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(text)
        table = {"$FILES": tmp}
        if "payload_text" in case:
            data = case["payload_text"].encode("utf-8")
        else:
            data = json.dumps(substitute(case["payload"], table), ensure_ascii=False).encode("utf-8")
        try:
            payload = sdk.parse_payload(data)
        except sdk.PayloadError as e:
            if "error" not in case:
                raise Failure(f"unexpected error: {e}") from e
            error_matches(case["error"], e)
            return
        if "error" in case:
            raise Failure(f"expected an error containing {case['error']['contains']!r}, parsed fine")
        helpers = {"answer_text": payload.answer_text, "criteria_text": payload.criteria_text}
        run_checks(payload, case["checks"], helpers)
    finally:
        shutil.rmtree(tmp)


def result_case(case: Dict[str, Any], _ctx: "Context") -> None:
    value = special(case["input"])
    try:
        got = sdk._coerce_result(value).to_dict()  # what run_judge does with a return value
        line = sdk._result_line(got)
    except sdk.ResultError as e:
        if "error" not in case:
            raise Failure(f"unexpected error: {e}") from e
        error_matches(case["error"], e)
        return
    if "error" in case:
        raise Failure(f"expected an error containing {case['error']['contains']!r}, got {got}")
    why = matches(case["output"], json.loads(line))
    if why:
        raise Failure(why)


def extract_case(case: Dict[str, Any], _ctx: "Context") -> None:
    got = sdk.extract_json_object(case["text"])
    if not json_equal(case["expect"], got):
        raise Failure(f"expected {json.dumps(case['expect'])}, got {got!r}")


def proxy_case(case: Dict[str, Any], ctx: "Context", token: str) -> None:
    table = ctx.table()
    ctx.proxy.load(token, substitute(case["exchanges"], table))
    spec = substitute(case.get("client", {}), table)
    timeout = spec.get("timeout_ms", 10_000) / 1000
    expect = case["expect"]
    try:
        if "env" in spec:
            client = sdk.TargetClient.from_env(environ=spec["env"], timeout=timeout)
            if client is None:
                if expect.get("client") != "none":
                    raise Failure("from_env gave no client")
                ctx.proxy.verify()
                return
        else:
            client = sdk.TargetClient(spec.get("url", ctx.proxy.url), spec.get("token", token), timeout=timeout)
        call = case["call"]
        if call["method"] == "get_info":
            value: Any = client.get_info()
        elif call["method"] == "invoke":
            value = client.invoke(call["request"])
        else:
            value = client.invoke_batch(call["requests"])
    except sdk.TargetError as e:
        if "error" not in expect:
            raise Failure(f"unexpected error: {e!r} ({e})") from e
        want = expect["error"]
        got = {"kind": e.kind, "status": e.status}
        if got != {"kind": want["kind"], "status": want["status"]}:
            raise Failure(f"expected {want}, got {got} ({e})") from e
        if "message" in want and e.message != want["message"]:
            raise Failure(f"expected message {want['message']!r}, got {e.message!r}") from e
        if "message_contains" in want and want["message_contains"] not in e.message:
            raise Failure(f"expected message containing {want['message_contains']!r}, got {e.message!r}") from e
        ctx.proxy.verify()
        return
    if "error" in expect or expect.get("client") == "none":
        raise Failure(f"expected {expect}, got {value!r}")
    run_checks(value, expect["checks"], {})
    ctx.proxy.verify()


def judge_env(extra: Dict[str, str], persistent: bool) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS and k != "AGENTV_JUDGE_PERSISTENT"}
    env.update(extra)
    if persistent:
        env["AGENTV_JUDGE_PERSISTENT"] = "1"
    return env


def check_stderr(expect: Dict[str, Any], stderr: str) -> None:
    for text in expect.get("stderr_contains", []):
        if text not in stderr:
            raise Failure(f"stderr lacks {text!r}; stderr was:\n{stderr[-2000:]}")


def run_process(argv: List[str], stdin: bytes, env: Dict[str, str], cwd: Optional[str] = None) -> Tuple[int, str, str]:
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, timeout=JUDGE_TIMEOUT, cwd=cwd)
    return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")


def judge_case(case: Dict[str, Any], ctx: "Context", token: str, argv: Optional[List[str]] = None) -> None:
    table = ctx.table()
    ctx.proxy.load(token, substitute(case.get("exchanges", []), table))
    env = judge_env(substitute(case.get("env", {}), table), persistent=False)
    stdin = case["payload_text"].encode() if "payload_text" in case else json.dumps(case["payload"]).encode()
    code, out, err = run_process(argv or [sys.executable, os.path.join(HERE, "judge.py")], stdin, env)
    expect = case["expect"]
    if code != expect["exit_code"]:
        raise Failure(f"exit code {code}, expected {expect['exit_code']}; stdout={out!r} stderr={err[-1500:]!r}")
    lines = out.splitlines()
    if len(lines) != 1:
        raise Failure(f"stdout must be exactly one line, got {out!r}")
    why = matches(expect["stdout"], json.loads(lines[0]))
    if why:
        raise Failure(f"{why}; stderr={err[-1500:]!r}")
    check_stderr(expect, err)
    ctx.proxy.verify()


def persistent_case(case: Dict[str, Any], ctx: "Context", token: str) -> None:
    table = ctx.table()
    ctx.proxy.load(token, substitute(case.get("exchanges", []), table))
    env = judge_env(substitute(case.get("env", {}), table), persistent=True)
    if "send_raw" in case:
        stdin = "".join(line + "\n" for line in case["send_raw"])
    else:
        stdin = "".join(json.dumps(substitute(m, table), ensure_ascii=False) + "\n" for m in case["send"])
    code, out, err = run_process([sys.executable, os.path.join(HERE, "judge.py")], stdin.encode(), env)
    expect = substitute(case["expect"], table)
    if code != expect["exit_code"]:
        raise Failure(f"exit code {code}, expected {expect['exit_code']}; stderr={err[-1500:]!r}")
    lines = out.split("\n")
    if lines[-1] != "":
        raise Failure(f"stdout does not end with a newline: {out!r}")
    lines = lines[:-1]
    if len(lines) != len(expect["lines"]):
        raise Failure(f"expected {len(expect['lines'])} lines, got {len(lines)}: {out!r}; stderr={err[-1500:]!r}")
    for i, (want, line) in enumerate(zip(expect["lines"], lines)):
        why = matches(want, json.loads(line), f"line {i + 1}")
        if why:
            raise Failure(f"{why}; stderr={err[-1500:]!r}")
    check_stderr(expect, err)
    ctx.proxy.verify()


# ------------------------------------------------------------------------------------------
# docs/judges.md and packaging
# ------------------------------------------------------------------------------------------


def snippet(name: str) -> str:
    """The fenced code block right after `<!-- snippet: NAME -->` in docs/judges.md."""
    with open(os.path.join(REPO, "docs", "judges.md"), encoding="utf-8") as f:
        text = f.read()
    found = re.search(r"<!-- snippet: " + re.escape(name) + r" -->\s*```[a-z]*\n(.*?)^```", text, re.S | re.M)
    if not found:
        raise Failure(f"docs/judges.md has no snippet {name!r}")
    return found.group(1)


DOCS_PAYLOAD = {
    "eval_id": "capital",
    "question": "What is the capital of France?",
    "expected_outcome": "Names Paris.",
    "candidate_answer": "The capital of France is Paris.",
    "criteria": "Names Paris.",
    "output": "The capital of France is Paris.",
    "config": {"keywords": ["Paris", "France"]},
}


def docs_cases(ctx: "Context", token: str) -> List[Tuple[str, Callable[[], None]]]:
    """The Python judge of docs/judges.md, run as a judge author would: the SDK copied next to it."""

    def run(with_proxy: bool, persistent: bool = False) -> None:
        tmp = tempfile.mkdtemp(prefix="agentv-docs-")
        try:
            shutil.copy(os.path.join(SDK, "python", "agentv_eval", "__init__.py"), os.path.join(tmp, "agentv_eval.py"))
            with open(os.path.join(tmp, "judge.py"), "w", encoding="utf-8") as f:
                f.write(snippet("python-judge"))
            exchanges = []
            env_extra: Dict[str, str] = {}
            if with_proxy:
                exchanges = [{"request": {"method": "POST", "path": "/invoke"}, "response": {"status": 200, "body": {"outputMessages": [], "rawText": "{\"score\": 1, \"reason\": \"it names Paris\"}"}}}]
                env_extra = {"AGENTV_TARGET_PROXY_URL": ctx.proxy.url, "AGENTV_TARGET_PROXY_TOKEN": token}
            ctx.proxy.load(token, exchanges)
            if persistent:
                request = {"id": 1, "payload": DOCS_PAYLOAD, "proxy": {"url": ctx.proxy.url, "token": token, "max_calls": 5} if with_proxy else None}
                stdin = (json.dumps(request) + "\n").encode()
                code, out, err = run_process([sys.executable, "judge.py"], stdin, judge_env({}, True), cwd=tmp)
                lines = out.splitlines()
                if code != 0 or len(lines) != 2:
                    raise Failure(f"exit {code}, stdout {out!r}, stderr {err[-1500:]!r}")
                result = json.loads(lines[1]).get("result")
            else:
                code, out, err = run_process([sys.executable, "judge.py"], json.dumps(DOCS_PAYLOAD).encode(), judge_env(env_extra, False), cwd=tmp)
                if code != 0:
                    raise Failure(f"exit {code}, stdout {out!r}, stderr {err[-1500:]!r}")
                result = json.loads(out)
            want = 1.0
            if not isinstance(result, dict) or result.get("score") != want:
                raise Failure(f"expected score {want}, got {result!r}; stderr {err[-1500:]!r}")
            ctx.proxy.verify()
        finally:
            shutil.rmtree(tmp)

    return [
        ("python_judge_without_proxy", lambda: run(False)),
        ("python_judge_with_proxy", lambda: run(True)),
        ("python_judge_persistent_with_proxy", lambda: run(True, persistent=True)),
    ]


def packaging_cases() -> List[Tuple[str, Callable[[], None]]]:
    def pip_install() -> None:
        if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
            raise Failure("pip is not available for this python; install python3-pip")
        tmp = tempfile.mkdtemp(prefix="agentv-pip-")
        argv = [sys.executable, "-m", "pip", "install", "--no-index", "--no-cache-dir", "--quiet", "--disable-pip-version-check"]
        if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")):
            argv.append("--break-system-packages")  # Debian's python: harmless, we install into a temp dir
        try:
            done = subprocess.run(
                argv + ["--target", tmp, os.path.join(SDK, "python")],
                capture_output=True,
                text=True,
                timeout=120,
            )
            if done.returncode != 0:
                raise Failure(f"pip install failed: {done.stderr[-2000:]}")
            probe = "import agentv_eval, os; print(agentv_eval.__version__, os.path.exists(os.path.join(os.path.dirname(agentv_eval.__file__), 'py.typed')))"
            out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": tmp}, cwd=tmp)
            if out.stdout.split() != [sdk.__version__, "True"]:
                raise Failure(f"installed package reports {out.stdout!r} {out.stderr[-500:]!r}")
        finally:
            shutil.rmtree(tmp)

    def versions_agree() -> None:
        with open(os.path.join(SDK, "python", "pyproject.toml"), encoding="utf-8") as f:
            found = re.search(r'^version = "([^"]+)"', f.read(), re.M)
        with open(os.path.join(SDK, "typescript", "package.json"), encoding="utf-8") as f:
            ts_version = json.load(f)["version"]
        if not found or found.group(1) != sdk.__version__ or ts_version != sdk.__version__:
            raise Failure(f"pyproject {found and found.group(1)}, module {sdk.__version__}, package.json {ts_version} disagree")

    return [("pip_install_without_an_index", pip_install), ("versions_agree", versions_agree)]


# ------------------------------------------------------------------------------------------
# Driver
# ------------------------------------------------------------------------------------------


class Context:
    def __init__(self) -> None:
        self.proxy = FakeProxy()
        self.refused = refused_url()

    def table(self) -> Dict[str, str]:
        return {"$PROXY_URL": self.proxy.url, "$REFUSED_URL": self.refused}


def main(argv: List[str]) -> int:
    filters = argv[1:]
    ctx = Context()
    passed = failed = skipped = 0
    try:
        plan: List[Tuple[str, str, Callable[[], None], Optional[str]]] = []

        def add_file(section: str, file: str, run: Callable[[Dict[str, Any], Context, str], None]) -> None:
            data = load_cases(file)
            token = data.get("token", "")
            for case in data["cases"]:
                skip = case.get("skip", {}).get("python")
                plan.append((section, case["name"], lambda c=case: run(c, ctx, token), skip))

        add_file("payloads", "payloads.json", lambda c, x, t: payload_case(c, x))
        add_file("results", "results.json", lambda c, x, t: result_case(c, x))
        add_file("extract_json", "extract_json.json", lambda c, x, t: extract_case(c, x))
        add_file("proxy", "proxy.json", proxy_case)
        add_file("judges", "judges.json", judge_case)
        add_file("persistent", "persistent.json", persistent_case)
        for name, run in docs_cases(ctx, load_cases("proxy.json")["token"]):
            plan.append(("docs", name, run, None))
        for name, run in packaging_cases():
            plan.append(("packaging", name, run, None))

        for section, name, run, skip in plan:
            label = f"{section}/{name}"
            if filters and not any(f in label for f in filters):
                continue
            if skip:
                skipped += 1
                print(f"skip  python {label}: {skip}")
                continue
            try:
                run()
            except Failure as e:
                failed += 1
                print(f"FAIL  python {label}: {e}")
            except Exception:  # noqa: BLE001 - a broken case must not hide the others
                failed += 1
                print(f"FAIL  python {label}: runner error\n{traceback.format_exc()}")
            else:
                passed += 1
                print(f"ok    python {label}")
    finally:
        ctx.proxy.close()
    print(f"python: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
