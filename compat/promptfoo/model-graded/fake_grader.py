#!/usr/bin/env python3
"""A deterministic OpenAI-compatible model for the model-graded agreement check (stdlib only).

Serves `POST …/chat/completions` (one JSON body), `POST …/embeddings` and `POST …/moderations`
on 127.0.0.1. Every
answer is a pure function of the request, so promptfoo and agentv, sending the same grading
prompts, get the same answers:

* promptfoo's grading prompts are told by their fixed texts and answered by one rule: the
  *keywords* of a text are its words in capitals (two or more letters: `PARIS`), found when
  they are words of the text graded (case ignored).
  - llm-rubric: score = share of the rubric's keywords in <Output>; pass at 0.5;
    `FAKE-REPLY: garbage` in the rubric answers text without JSON;
  - model-graded-closedqa: `Y` when every keyword of the criterion is in the submission;
  - factuality: C when every keyword of the expert answer is in the submission, D when none,
    else A;
  - g-eval: one step; score = round(10 × share of the criteria's keywords in the reply);
  - answer-relevance: the question is `What is <answer>?`;
  - context-recall: each sentence of the answer is [Attributed] when its keywords are all
    in the context;
  - context-relevance: the context's sentences sharing a word of 4+ letters with the query;
  - context-faithfulness: one statement per sentence of the answer; a statement is
    supported when its words of 4+ letters are all in the context;
  - select-best: the index of the first text holding the largest share of the criteria's
    keywords;
  - conversation-relevance: `yes` when the last answer shares a word of 4+ letters with the
    last question (`FAKE-REPLY: garbage` in it answers text without JSON); the summary of
    irrelevancies counts them.
* Anything else is a target prompt: the answer is the text of its `[reply: …]` marker.
* Moderations: a category (violence, harassment, hate, self-harm, sexual, illicit) is flagged
  when the input holds its name, as the Rust test kit's fake does.
* Embeddings: 16 dimensions, each lower-cased word adds 1 to one (chosen by its bytes), as the
  Rust test kit's fake does.

Usage: fake_grader.py --port 0 --port-file FILE
"""

import argparse
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CAPS = re.compile(r"\b[A-Z][A-Z0-9]+\b")
WORD = re.compile(r"[a-z0-9]+")
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def words(text):
    return set(WORD.findall(text.lower()))


def keywords(text):
    return [k.lower() for k in CAPS.findall(text)]


def share(spec, text):
    keys = keywords(spec)
    if not keys:
        return 1.0
    found = words(text)
    return sum(1 for k in keys if k in found) / len(keys)


def between(text, start, end):
    i = text.rfind(start)
    if i < 0:
        return ""
    i += len(start)
    j = text.find(end, i)
    return text[i:] if j < 0 else text[i:j]


def sentences(text):
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n", text) if s.strip()]


def long_words(text):
    return {w for w in words(text) if len(w) >= 4}


def llm_rubric(user):
    output = between(user, "<Output>\n", "\n</Output>")
    rubric = between(user, "<Rubric>\n", "\n</Rubric>")
    if "FAKE-REPLY: garbage" in rubric:
        return "I cannot grade this."
    score = share(rubric, output)
    return json.dumps({"reason": f"{score:.2f} of the rubric's keywords", "pass": score >= 0.5, "score": score})


def closedqa(system):
    submission = between(system, "[Submission]: ", "\n***")
    criterion = between(system, "[Criterion]: ", "\n***")
    letter = "Y" if share(criterion, submission) == 1.0 else "N"
    return f"Checked the criterion's keywords.\n{letter}\n{letter}"


def factuality(user):
    expert = between(user, "<expert_answer>\n", "\n</expert_answer>")
    submitted = between(user, "<submitted_answer>\n", "\n</submitted_answer>")
    s = share(expert, submitted)
    category = "C" if s == 1.0 else "D" if s == 0.0 else "A"
    return json.dumps({"category": category, "reason": f"{s:.2f} of the expert's keywords"})


def g_eval(user):
    if "generate 3-4 concise evaluation steps" in user:
        return json.dumps({"steps": ["Look for the criteria's keywords in the reply"]})
    criteria = between(user, "**Evaluation Criteria**\n", "\n\n**Evaluation Steps**")
    reply = between(user, "**Reply**\n", "\n\n**OUTPUT FORMAT**")
    score = round(10 * share(criteria, reply))
    return json.dumps({"score": score, "reason": "keywords found"}, separators=(",", ":"))


def context_recall(user):
    context = between(user, "\ncontext:", "\nanswer:")
    answer = between(user, "\nanswer:", "\nclassification:")
    found = words(context)
    lines = []
    for n, s in enumerate(sentences(answer), 1):
        ok = all(k in found for k in keywords(s))
        lines.append(f"{n}. {s} So [{'Attributed' if ok else 'Not Attributed'}]")
    return "\n".join(lines)


def context_relevance(user):
    query = between(user, "query: ", "\ncontext: ")
    context = between(user, "\ncontext: ", "\ncandidate sentences:")
    q = long_words(query)
    picked = [s for s in sentences(context) if long_words(s) & q]
    return "\n".join(picked) if picked else "Insufficient Information"


def faithfulness_statements(user):
    answer = between(user, "\nanswer: ", "\nstatements:\n")
    return "\n".join(sentences(answer))


def faithfulness_verdicts(user):
    context = between(user, "\ncontext:\n", "\nstatements:\n")
    statements = [s for s in between(user, "\nstatements:\n", "\nAnswer:\n").split("\n") if s.strip()]
    found = words(context)
    verdicts = ["Yes" if long_words(s) <= found else "No" for s in statements]
    body = "\n".join(f"{n}. {s}\nExplanation: by its words. Verdict: {v}." for n, (s, v) in enumerate(zip(statements, verdicts), 1))
    return body + "\nFinal verdict for each statement in order: " + " ".join(f"{v}." for v in verdicts)


def select_best(system):
    criteria = between(system, "best fits the following criteria: ", "\n")
    texts = re.findall(r'<Text index="\d+">\n(.*?)\n</Text>', system, re.S)
    shares = [share(criteria, t) for t in texts]
    return str(shares.index(max(shares))) if shares else "none"


def conversation_verdict(user):
    messages = json.loads(between(user, "Messages:\n", "\n\nJSON:"))
    question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    answer = next(m["content"] for m in reversed(messages) if m["role"] == "assistant")
    if "FAKE-REPLY: garbage" in answer:
        return "I cannot tell."
    if long_words(question) & long_words(answer):
        return json.dumps({"verdict": "yes"})
    return json.dumps({"verdict": "no", "reason": f"'{answer}' does not address '{question}'."})


def conversation_reason(user):
    score = between(user, "Relevancy Score:\n", "\n")
    count = len(json.loads(between(user, "Irrelevancies:\n", "\n\nJSON:")))
    return json.dumps({"reason": f"The score is {score} because of {count} irrelevant answers."})


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def respond(body):
    messages = body.get("messages") or []
    system = "\n".join(text_of(m.get("content")) for m in messages if m.get("role") == "system")
    user = "\n".join(text_of(m.get("content")) for m in messages if m.get("role") == "user")
    if system.startswith("You are grading output according to a user-specified rubric"):
        return llm_rubric(user)
    if system.startswith("You are assessing a submitted answer on a given task"):
        return closedqa(system)
    if "You are a precise factuality evaluator" in system:
        return factuality(user)
    if "generate 3-4 concise evaluation steps" in user or "You will be given one Reply for a Prompt below" in user:
        return g_eval(user)
    if system.startswith("You are comparing multiple pieces of text"):
        return select_best(system)
    if user.startswith("Based on the given list of message exchanges"):
        return conversation_verdict(user)
    if user.startswith("Below is a list of irrelevancies"):
        return conversation_reason(user)
    if user.startswith("Generate question for the given answer."):
        return "What is " + between(user, "\n\nAnswer:", "\nQuestion:").strip() + "?"
    if user.startswith("Given a context, and an answer, analyze each sentence"):
        return context_recall(user)
    if user.startswith("Please extract relevant sentences from the provided context"):
        return context_relevance(user)
    if user.startswith("Given a question and answer, create one or more statements"):
        return faithfulness_statements(user)
    if user.startswith("Prompt: Natural language inference"):
        return faithfulness_verdicts(user)
    m = re.search(r"\[reply: (.*?)\]", user, re.S)
    return m.group(1) if m else "NO REPLY MARKER"


def embed(text):
    v = [0.0] * 16
    for word in re.split(r"[^a-z0-9]+", text.lower()):
        if word:
            slot = 0
            for b in word.encode():
                slot = (slot * 31 + b) % 16
            v[slot] += 1.0
    return v


CATEGORIES = ["violence", "harassment", "hate", "self-harm", "sexual", "illicit"]


def moderation(body):
    given = body.get("input")
    if isinstance(given, list):
        given = " ".join(p.get("text", "") for p in given if isinstance(p, dict))
    text = (given or "").lower()
    categories = {c: c in text for c in CATEGORIES}
    scores = {c: 0.9 if hit else 0.01 for c, hit in categories.items()}
    return {"id": "modr-fake", "model": body.get("model"),
            "results": [{"flagged": any(categories.values()), "categories": categories, "category_scores": scores}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _json(self, payload):
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/embeddings"):
            text = body.get("input")
            text = text[0] if isinstance(text, list) else text
            self._json({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": embed(text or "")}],
                        "model": body.get("model"), "usage": {"prompt_tokens": 8, "total_tokens": 8}})
            return
        if path.endswith("/moderations"):
            self._json(moderation(body))
            return
        text = respond(body)
        self._json({"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body.get("model"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": USAGE})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    if args.port_file:
        with open(args.port_file, "w") as f:
            f.write(str(server.server_address[1]))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
