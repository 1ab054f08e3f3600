#!/usr/bin/env python3
"""A deterministic stand-in for a judge model, used as a `cli` target so the judge examples run
offline: `python3 -S fake_model.py {PROMPT} {OUTPUT_FILE}` (standard library only).

It reads the prompts of the ready-made judges (judges/README.md) by their tagged blocks and
reply formats, and answers by two word rules instead of by meaning:

- a text is **relevant** to the question when they share a word stem (the first five letters
  of a word of five letters or more: "refunds" and "refunded" share "refun");
- a text is **supported** by the context when every stem and every number in it also
  appears in the context.

Prompts:
- `{"claims": [...]}` / `{"statements": ["..."]}`: the sentences of the one text block;
- `{"statement": ...}` (contextual relevancy): each <chunk>'s sentences, relevant or not;
- `{"verdicts": [...]}` / `{"verdict": ...}`: one verdict per <chunk>, <claim> or <statement>
  block; "supported" when the prompt has a <context>, else "relevant";
- anything else (a judge of its own): "yes".

For tests of failure handling: a prompt containing FAKE-FAIL makes the call fail (exit 1), and
one containing FAKE-GARBAGE gets a reply with no JSON.

judges/src/fake.rs holds the same rules for the crate's unit tests; keep the two in step.
"""
import json
import re
import sys

prompt, out = sys.argv[1], sys.argv[2]


def reply(text):
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    sys.exit(0)


if "FAKE-FAIL" in prompt:
    print("fake model: asked to fail", file=sys.stderr)
    sys.exit(1)
if "FAKE-GARBAGE" in prompt:
    reply("I would rather not say.")


def words(text):
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", text) if w]


def stems(text):
    return {w[:5] for w in words(text) if len(w) >= 5 and w.isalpha()}


def numbers(text):
    return {w for w in words(text) if w.isdigit()}


def relevant(item, question):
    return bool(stems(item) & stems(question))


def supported(item, context):
    return stems(item) <= stems(context) and numbers(item) <= numbers(context)


def sentences(text):
    """The judges' `split: sentences` rule (judges/src/statements.rs)."""
    found = []
    for line in text.splitlines():
        line = re.sub(r"^(?:[-*\u2022] |\d+[.)] )", "", line.strip())
        for part in re.split(r"(?<=[.!?])\s+", line):
            part = part.strip()
            if any(c.isalnum() for c in part):
                found.append(part)
    return found


def block(tag):
    m = re.search(r"<%s>\n(.*?)\n</%s>" % (tag, tag), prompt, re.S)
    return m.group(1) if m else None


def items(tag, text):
    return re.findall(r'<%s [a-z]+="\d+">\n(.*?)\n</%s>' % (tag, tag), text, re.S)


def yes_no(flag):
    return "yes" if flag else "no"


question = block("question") or ""

if '{"claims": [' in prompt or '{"statements": ["' in prompt:
    key = "claims" if '{"claims": [' in prompt else "statements"
    text = block("answer") or block("reference_answer") or ""
    reply(json.dumps({key: sentences(text)}))

if '{"statement": ' in prompt:
    per_chunk = [
        {"statements": [
            {"statement": s, "verdict": yes_no(relevant(s, question)), "reason": "fake"}
            for s in sentences(chunk)
        ]}
        for chunk in items("chunk", prompt)
    ]
    if '{"chunks": [' in prompt:
        reply(json.dumps({"chunks": per_chunk}))
    reply(json.dumps(per_chunk[0] if per_chunk else {"statements": []}))

if '{"verdicts": [' in prompt or '{"verdict": ' in prompt:
    context = block("context")
    after = prompt.split("</context>")[-1]
    judged = next((found for found in (items(t, after) for t in ("chunk", "claim", "statement")) if found), [])
    verdicts = [
        {"verdict": yes_no(supported(i, context) if context is not None else relevant(i, question)), "reason": "fake"}
        for i in judged
    ]
    if '{"verdicts": [' in prompt:
        reply(json.dumps({"verdicts": verdicts}))
    reply(json.dumps(verdicts[0] if verdicts else {"verdict": "yes"}))

reply("yes")
