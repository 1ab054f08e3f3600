# Answers "What is the capital of <country>?" from capitals.json: promptfoo's `python:`
# provider convention (call_api), and a command line for `exec:`.
import json
import os
import sys

CAPITALS = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "capitals.json")))


def answer(prompt):
    for country, capital in CAPITALS.items():
        if country.lower() in prompt.lower():
            return "The capital of %s is %s." % (country, capital)
    return "I do not know."


def call_api(prompt, options, context):
    return {"output": answer(prompt), "tokenUsage": {"prompt": len(prompt.split()), "completion": 6}}


if __name__ == "__main__":
    # Its arguments: the prompt, the provider's options and the call context (JSON); the
    # country comes from the context's vars. Padded and in bold: promptfoo's `exec:` trims what
    # the command prints and removes ANSI escape codes.
    prompt, options, context = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    country = context["vars"]["country"]
    print("  \033[1m%s\033[0m  " % answer("%s (%s, %s)" % (country, options["id"][:5], prompt[:0])))
