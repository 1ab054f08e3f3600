#!/usr/bin/env python3
"""A fake agentv target proxy that replays recorded exchanges, for the SDK conformance suite.

Start it, read the first stdout line (``{"url": "http://127.0.0.1:PORT"}``), then for each case:

- ``POST /__conformance/load`` with ``{"token": "...", "exchanges": [...]}`` arms it: each later
  request must match the next exchange's ``request`` (method, path, ``Authorization: Bearer
  <token>`` where the token is the exchange's own or the loaded one, and the JSON ``body`` when
  the exchange gives one; a GET must have no body, a POST must say ``application/json``); it gets
  that exchange's ``response`` (``status``, then ``body`` as JSON or ``raw_body`` as text, after
  ``delay_ms``);
- ``GET /__conformance/report`` answers ``{"problems": [...], "remaining": N}``: every request
  that did not match, and how many exchanges were never asked for. A case passes only with no
  problems and nothing remaining.

A request that does not match gets HTTP 500 ``{"error": "conformance fake: ..."}``. The server
stops when its stdin closes, so it never outlives the runner that started it. Standard library
only, so every SDK's runner can use it.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional

CONTROL = "/__conformance/"


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value, but a boolean is never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


class Script:
    """The exchanges of the current case and what went wrong so far."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.token = ""
        self.exchanges: List[Dict[str, Any]] = []
        self.problems: List[str] = []
        self.cancel = threading.Event()

    def load(self, token: str, exchanges: List[Dict[str, Any]]) -> None:
        with self.lock:
            self.cancel.set()  # release a delayed answer of the previous case
            self.cancel = threading.Event()
            self.token = token
            self.exchanges = list(exchanges)
            self.problems = []

    def next(self) -> Optional[Dict[str, Any]]:
        with self.lock:
            return self.exchanges.pop(0) if self.exchanges else None

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(text)

    def report(self) -> Dict[str, Any]:
        with self.lock:
            return {"problems": list(self.problems), "remaining": len(self.exchanges)}


SCRIPT = Script()


def mismatch(expected: Dict[str, Any], method: str, path: str, auth: Optional[str], ctype: str, body: bytes) -> Optional[str]:
    """Why a request does not match the expected one, or None."""
    want_method = expected.get("method", "GET")
    if method != want_method or path != expected.get("path"):
        return f"expected {want_method} {expected.get('path')}, got {method} {path}"
    token = expected.get("token", SCRIPT.token)
    if auth != f"Bearer {token}":
        return f"{method} {path}: expected Authorization 'Bearer {token}', got {auth!r}"
    if method == "GET":
        return f"GET {path} must have no body, got {body[:80]!r}" if body else None
    if not ctype.startswith("application/json"):
        return f"{method} {path}: expected Content-Type application/json, got {ctype!r}"
    if "body" in expected:
        try:
            got = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            return f"{method} {path}: body is not UTF-8 JSON ({e}): {body[:120]!r}"
        if not json_equal(got, expected["body"]):
            return f"{method} {path}: expected body {json.dumps(expected['body'])}, got {json.dumps(got)}"
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def reply(self, status: int, text: str, content_type: str = "application/json") -> None:
        data = text.encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (timeout cases)

    def body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def handle_any(self) -> None:
        body = self.body()
        if self.path.startswith(CONTROL):
            self.control(body)
            return
        exchange = SCRIPT.next()
        if exchange is None:
            why = f"unexpected request {self.command} {self.path}: no exchange left"
        else:
            why = mismatch(
                exchange.get("request", {}),
                self.command,
                self.path,
                self.headers.get("Authorization"),
                self.headers.get("Content-Type", ""),
                body,
            )
        if why is not None or exchange is None:
            SCRIPT.problem(why or "no exchange")
            self.reply(500, json.dumps({"error": f"conformance fake: {why}"}))
            return
        response = exchange.get("response", {})
        delay = response.get("delay_ms", 0)
        if delay:
            SCRIPT.cancel.wait(delay / 1000)
        if "raw_body" in response:
            self.reply(response.get("status", 200), response["raw_body"], "text/plain")
        else:
            self.reply(response.get("status", 200), json.dumps(response.get("body", {})))

    def control(self, body: bytes) -> None:
        if self.path == CONTROL + "load" and self.command == "POST":
            spec = json.loads(body.decode("utf-8"))
            SCRIPT.load(spec.get("token", ""), spec.get("exchanges", []))
            self.reply(200, "{}")
        elif self.path == CONTROL + "report" and self.command == "GET":
            self.reply(200, json.dumps(SCRIPT.report()))
        else:
            self.reply(404, json.dumps({"error": f"unknown control route {self.command} {self.path}"}))

    do_GET = handle_any
    do_POST = handle_any
    do_PUT = handle_any
    do_DELETE = handle_any


def main() -> int:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print(json.dumps({"url": f"http://127.0.0.1:{server.server_address[1]}"}), flush=True)
    sys.stdin.read()  # until the runner closes our stdin (or exits)
    SCRIPT.cancel.set()
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
