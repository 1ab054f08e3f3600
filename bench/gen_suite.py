#!/usr/bin/env python3
"""Writes a benchmark suite: DIR/suite.jsonl (one case per line), DIR/suite.yaml (its
evaluators) and DIR/targets.yaml (an OpenAI-compatible target on the fake model server).

Scenarios and the model calls each case makes:
  deterministic  keywords grader only                        1 call
  llm-judge      llm_judge through the same target           2 calls
  code-judge     a code judge process (bench-judge)           1 call
  proxy          a code judge making 3 calls via the proxy    4 calls
  tool-loop      two tool calls (mocks), then the answer       3 calls
                 (the server follows bench/tool_script.json)
  mock           mock target, keywords (start-up checks)      0 calls
"""
import argparse
import json
import os

CALLS = {"deterministic": 1, "llm-judge": 2, "code-judge": 1, "proxy": 4, "tool-loop": 3, "mock": 0}

parser = argparse.ArgumentParser()
parser.add_argument("--scenario", choices=sorted(CALLS), required=True)
parser.add_argument("--cases", type=int, required=True)
parser.add_argument("--server", default="http://127.0.0.1:1")
parser.add_argument("--concurrency", type=int, default=64)
parser.add_argument("--judge", default="bench-judge", help="path of the bench-judge binary")
parser.add_argument("--out", required=True)
args = parser.parse_args()
os.makedirs(args.out, exist_ok=True)

evaluators = {
    "deterministic": [{"name": "kw", "type": "keywords", "expected": ["4"]}],
    "mock": [{"name": "kw", "type": "keywords", "expected": ["4"]}],
    "llm-judge": [{"name": "judge", "type": "llm_judge"}],
    "code-judge": [{"name": "judge", "type": "code_judge", "script": [args.judge]}],
    "proxy": [{"name": "judge", "type": "code_judge", "script": [args.judge, "proxy", "3"], "target": {"max_calls": 3}}],
    "tool-loop": [{"name": "kw", "type": "keywords", "expected": ["4"]},
                  {"name": "calls", "type": "tool_trajectory", "mode": "in_order",
                   "expected": [{"tool": "lookup"}, {"tool": "lookup"}]}],
}[args.scenario]

suite = {"dataset": f"bench-{args.scenario}", "execution": {"target": "default", "evaluators": evaluators}}
if args.scenario == "tool-loop":
    suite["max_steps"] = 3
    suite["tools"] = [{"name": "lookup", "description": "Look a fact up.",
                       "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                       "mock": {"q": "{{ q }}", "answer": 4}}]
with open(os.path.join(args.out, "suite.yaml"), "w") as f:
    json.dump(suite, f)
    f.write("\n")

with open(os.path.join(args.out, "suite.jsonl"), "w") as f:
    for i in range(args.cases):
        f.write(json.dumps({"id": f"case-{i:06d}", "expected_outcome": "Answers 4.",
                            "input": f"Case {i}: what is 2+2?"}) + "\n")

if args.scenario == "mock":
    target = {"name": "default", "provider": "mock", "response": "The answer is 4.", "workers": args.concurrency}
else:
    target = {"name": "default", "provider": "openai", "base_url": args.server + "/v1", "model": "bench-model",
              "api_key": "bench-key", "workers": args.concurrency, "max_retries": 0}
with open(os.path.join(args.out, "targets.yaml"), "w") as f:
    json.dump({"targets": [target]}, f)
    f.write("\n")
print(CALLS[args.scenario])
