#!/usr/bin/env python3
"""Answer relevancy through the agentv target proxy, in plain Python (standard library only).

The proxy protocol is language-neutral: GET /info and POST /invoke with a bearer token, JSON in
camelCase. This judge asks the judge target whether the answer addresses the question.
"""
import json
import os
import sys
import urllib.error
import urllib.request

payload = json.load(sys.stdin)
url = os.environ.get("AGENTV_TARGET_PROXY_URL")
token = os.environ.get("AGENTV_TARGET_PROXY_TOKEN")
if not url or not token:
    print("this judge needs `target: true` on the evaluator", file=sys.stderr)
    sys.exit(1)


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.load(response)
    except urllib.error.HTTPError as e:
        error = json.load(e).get("error", f"HTTP {e.code}")
        print(f"proxy answered HTTP {e.code}: {error}", file=sys.stderr)
        sys.exit(1)


info = call("GET", "/info")
question = (
    f"Question: {payload['question']}\n\nAnswer: {payload['candidate_answer']}\n\n"
    "Does the answer address the question? Answer yes or no."
)
reply = call("POST", "/invoke", {"question": question, "evalCaseId": payload["eval_id"]})
text = (reply.get("rawText") or "").strip().lower()
relevant = text.startswith("yes")
print(json.dumps({
    "score": 1.0 if relevant else 0.0,
    "hits": ["the answer addresses the question"] if relevant else [],
    "misses": [] if relevant else ["the answer does not address the question"],
    "reasoning": f"judge target {info['targetName']} said: {text[:80]}",
    "details": {"proxy_info": info},
}))
