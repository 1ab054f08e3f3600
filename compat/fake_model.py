#!/usr/bin/env python3
"""A deterministic OpenAI-compatible chat model for the compatibility harness (stdlib only).

Serves `POST …/chat/completions` on 127.0.0.1, streaming (SSE chunks, as AgentV 4.42.4's openai
provider asks with `stream: true` and `stream_options.include_usage`) or not (one JSON body, as
agentv's openai provider asks). Every answer is a pure function of the request, so two
implementations that send the same prompts get the same replies:

* **Grader prompts** are recognised by their fixed texts and answered with valid JSON whose
  scores come from the prompt content (see `KEYWORDS` below for the one rule they all use):
  - AgentV 4.x free-form grader (system prompt `"score": <number between 0.0 and 1.0>`):
    score = share of the criteria's keywords found in the answer section;
  - AgentV 4.x checklist rubrics (`"satisfied": boolean` schema): a rubric is satisfied iff
    every keyword of its outcome is in the answer;
  - AgentV 4.x score ranges (`### Criterion:` blocks): score = floor(10 × share of the
    description's keywords found in the answer);
  - AgentV 4.x composite LLM aggregator (`Review the following evaluation results:`): the mean
    of the members' scores;
  - agentv's 2.x judge (`You are an impartial evaluator…`): like the free-form grader, with the
    `expected_outcome` and `candidate_answer` sections, replying `{score, hits, misses, reasoning}`.
  Directives in a prompt change the rule (so a test can tell whether its template was used):
  `FAKE-RULE: all-or-nothing` (score 1 iff every keyword is found, else 0),
  `FAKE-SCORE: <x>` (reply exactly x), `FAKE-OMIT` anywhere in a rubric outcome (leave that
  rubric out of `checks`), `FAKE-REPLY: garbage` (reply text that is not JSON, also to 4.x's
  structure-repair request that follows).
* **Target prompts** (anything else) are answered from `answers.ANSWERS`, keyed by the marker
  `[ans:KEY]` in the request; no marker or an unknown key gets a fixed "no designed answer"
  text.

Keywords of a text: its words written in capitals (two or more letters, digits allowed, e.g.
`PARIS`, `H2O`); when it has none, all its words. Words are `[a-z0-9]+` after lower-casing; a
keyword is found when it is one of the answer's words.

Usage is fixed per request (`USAGE`). Every request and reply is appended to the `--log` JSONL
file. `--port 0` picks a free port; `--port-file` receives it once the server listens.
"""

import argparse
import json
import math
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import answers  # noqa: E402

USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 20,
    "total_tokens": 120,
    "prompt_tokens_details": {"cached_tokens": 30},
}
MODEL = "fake-model"
MARKER = re.compile(r"\[ans:([A-Za-z0-9_.-]+)\]")
SECTION = re.compile(r"\[\[ ## ([a-z_]+) ## \]\]\n")
WORD = re.compile(r"[a-z0-9]+")
CAPS = re.compile(r"\b[A-Z][A-Z0-9]+\b")


# ---------------------------------------------------------------------------------------------
# Text helpers


def text_of(content):
    """The text of a message content: a string, or the text parts of a content array."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return "" if content is None else json.dumps(content)


def sections(prompt):
    """`[[ ## name ## ]]` blocks of a prompt: name → text up to the next block (trimmed)."""
    found = {}
    matches = list(SECTION.finditer(prompt))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(prompt)
        found.setdefault(m.group(1), prompt[m.end() : end].strip())
    return found


DIRECTIVE = re.compile(r"FAKE-(?:OMIT|[A-Z]+:\s*\S+)")


def keywords(text):
    text = DIRECTIVE.sub(" ", text)
    caps = CAPS.findall(text)
    source = " ".join(caps) if caps else text
    seen = []
    for w in WORD.findall(source.lower()):
        if w not in seen:
            seen.append(w)
    return seen


def coverage(spec, answer):
    """(found keywords, missing keywords) of `spec` in `answer`."""
    words = set(WORD.findall(answer.lower()))
    kws = keywords(spec)
    return [k for k in kws if k in words], [k for k in kws if k not in words]


def directive(prompt, name):
    m = re.search(r"FAKE-" + name + r":\s*([^\s\n]+)", prompt)
    return m.group(1) if m else None


def share(found, missing, rule):
    total = len(found) + len(missing)
    if total == 0:
        return 1.0
    if rule == "all-or-nothing":
        return 1.0 if not missing else 0.0
    return len(found) / total


# ---------------------------------------------------------------------------------------------
# Graders


def answer_section(parts):
    return parts.get("answer", parts.get("candidate_answer", ""))


def freeform(system, user):
    prompt = system + "\n" + user
    parts = sections(user)
    forced = directive(prompt, "SCORE")
    criteria = parts.get("criteria", parts.get("expected_outcome", ""))
    answer = answer_section(parts)
    found, missing = coverage(criteria, answer)
    score = float(forced) if forced is not None else share(found, missing, directive(prompt, "RULE"))
    return score, found, missing


def reply_freeform_4x(system, user):
    score, found, missing = freeform(system, user)
    checks = [{"text": f"keyword {k}", "passed": True} for k in found]
    checks += [{"text": f"keyword {k}", "passed": False} for k in missing]
    return json.dumps({"score": score, "assertions": checks, "details": {"found": found, "missing": missing}})


def reply_judge_2x(system, user):
    score, found, missing = freeform(system, user)
    return json.dumps(
        {
            "score": score,
            "hits": [f"keyword {k}" for k in found][:4],
            "misses": [f"keyword {k}" for k in missing][:4],
            "reasoning": f"{len(found)} of {len(found) + len(missing)} keywords found",
        }
    )


RUBRIC_LINE = re.compile(
    r"^- \[(?P<id>[^\]]+)\](?: \(REQUIRED\))?(?: \(weight: [^)]*\))?(?: \(operator: [^)]*\))?: (?P<outcome>.*)$"
)


def rubric_items(prompt):
    block = prompt.split("[[ ## rubrics ## ]]", 1)
    if len(block) < 2:
        return []
    items = []
    for line in block[1].splitlines():
        m = RUBRIC_LINE.match(line.strip())
        if m:
            items.append((m.group("id"), m.group("outcome")))
    return items


def reply_checklist(system, user):
    answer = answer_section(sections(user))
    checks = []
    for rid, outcome in rubric_items(user):
        if "FAKE-OMIT" in outcome:
            continue
        found, missing = coverage(outcome, answer)
        checks.append(
            {
                "id": rid,
                "satisfied": not missing,
                "reasoning": "all keywords found" if not missing else "missing: " + ", ".join(missing),
            }
        )
    return json.dumps({"checks": checks, "overall_reasoning": f"{len(checks)} rubric(s) checked"})


CRITERION = re.compile(r"^### Criterion: (?P<id>\S+)", re.M)
DESCRIPTION = re.compile(r"^Description: (?P<text>.*)$", re.M)


def reply_score_range(system, user):
    answer = answer_section(sections(user))
    checks = []
    blocks = list(CRITERION.finditer(user))
    for i, m in enumerate(blocks):
        end = blocks[i + 1].start() if i + 1 < len(blocks) else len(user)
        block = user[m.start() : end]
        d = DESCRIPTION.search(block)
        description = d.group("text") if d else m.group("id")
        if "FAKE-OMIT" in description:
            continue
        found, missing = coverage(description, answer)
        raw = math.floor(10 * share(found, missing, None) + 1e-9)
        checks.append({"id": m.group("id"), "score": raw, "reasoning": f"{len(found)} keyword(s) found"})
    return json.dumps({"checks": checks, "overall_reasoning": f"{len(checks)} criteria scored"})


def reply_aggregator(system, user):
    body = user.split("Review the following evaluation results:\n", 1)[1]
    body = body.split("\n\nDecide the final score", 1)[0]
    try:
        results = json.loads(body)
    except ValueError:
        return json.dumps({"score": 0, "assertions": [{"text": "unreadable results", "passed": False}]})
    scores = [r.get("score", 0) for r in results.values() if isinstance(r, dict)]
    score = sum(scores) / len(scores) if scores else 0.0
    return json.dumps({"score": score, "assertions": [{"text": f"mean of {len(scores)}", "passed": score >= 0.8}]})


# ---------------------------------------------------------------------------------------------
# Dispatch


def classify(system, user):
    prompt = system + "\n" + user
    if "FAKE-REPLY: garbage" in prompt and ("expert grader" in prompt or "impartial evaluator" in prompt):
        return "garbage"
    if user.startswith("The following evaluation response has useful grading content but invalid JSON"):
        return "garbage"  # 4.x's structure-repair call (reference §4.5): the garbage stays garbage
    if "### Criterion: " in user and "score ranges" in prompt:
        return "score-range"
    if '"satisfied": boolean' in system or "Evaluate the candidate answer against each rubric item" in user:
        return "checklist"
    if "Review the following evaluation results:\n" in user:
        return "aggregator"
    if '"score": <number between 0.0 and 1.0>' in system:
        return "freeform-4x"
    if system.startswith("You are an impartial evaluator"):
        return "judge-2x"
    return "target"


def target_reply(messages):
    for message in reversed(messages):
        m = MARKER.search(text_of(message.get("content")))
        if m:
            key = m.group(1)
            entry = answers.ANSWERS.get(key)
            if entry is None:
                return f"NO DESIGNED ANSWER for {key}"
            return entry["text"] if isinstance(entry, dict) else entry
    return "NO DESIGNED ANSWER (no [ans:KEY] marker)"


def respond(body):
    messages = body.get("messages") or []
    system = "\n".join(text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    user = "\n".join(text_of(m.get("content")) for m in messages if m.get("role") == "user")
    kind = classify(system, user)
    if kind == "garbage":
        return kind, "I refuse to answer in JSON."
    if kind == "score-range":
        return kind, reply_score_range(system, user)
    if kind == "checklist":
        return kind, reply_checklist(system, user)
    if kind == "aggregator":
        return kind, reply_aggregator(system, user)
    if kind == "freeform-4x":
        return kind, reply_freeform_4x(system, user)
    if kind == "judge-2x":
        return kind, reply_judge_2x(system, user)
    return kind, target_reply(messages)


# ---------------------------------------------------------------------------------------------
# HTTP


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_lock = threading.Lock()
    log_path = None
    counter = 0

    def log_message(self, *args):  # quiet
        pass

    def _json(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.path.split("?")[0].rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"unsupported path {self.path}"}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON"}})
            return
        kind, text = respond(body)
        self._record(body, kind, text)
        model = body.get("model") or MODEL
        if body.get("stream"):
            self._stream(model, text, bool((body.get("stream_options") or {}).get("include_usage")))
        else:
            self._json(
                200,
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": 0,
                    "model": model,
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    ],
                    "usage": USAGE,
                },
            )

    def _stream(self, model, text, include_usage):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model}

        def send(choices, **extra):
            chunk = dict(base, choices=choices, **extra)
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")

        send([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        send([{"index": 0, "delta": {"content": text}, "finish_reason": None}])
        send([{"index": 0, "delta": {}, "finish_reason": "stop"}])
        if include_usage:
            send([], usage=USAGE)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def _record(self, body, kind, text):
        if not Handler.log_path:
            return
        with Handler.log_lock:
            Handler.counter += 1
            entry = {"n": Handler.counter, "path": self.path, "kind": kind, "request": body, "reply": text}
            with open(Handler.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    parser.add_argument("--log")
    args = parser.parse_args()
    Handler.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        Path(tmp).write_text(str(port))
        Path(tmp).rename(args.port_file)
    print(f"fake model listening on http://127.0.0.1:{port}/v1", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
