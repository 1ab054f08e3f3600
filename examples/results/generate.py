#!/usr/bin/env python3
"""Writes baseline.jsonl and candidate.jsonl: two small agentv results files of the same suite,
before and after a change, for `agentv compare` and `agentv report` (and their tests).

The records follow agentv's result format (docs/results.md). Deterministic: run it again and the
files come out the same. Some answers hold HTML and `</script>` on purpose: reports must show them
as text.
"""

import json
from pathlib import Path

HERE = Path(__file__).parent

JUDGE_SYSTEM = (
    "You are an expert evaluator. Grade the candidate answer against the expected outcome. "
    'Reply with JSON: {"score": 0-1, "hits": [...], "misses": [...], "reasoning": "..."}'
)

# id -> (dataset, question, baseline (score, answer, misses, hits), candidate (...))
# A side of None: the case is not in that run. A score of "error": the target failed.
CASES = [
    ("refund-policy", "support", "Can I get a refund after three weeks?",
     (0.9, "Yes: refunds are accepted within 30 days of delivery.", [], ["mentions the 30-day window", "answers yes"]),
     (0.4, "Please contact support for refunds.", ["does not mention the 30-day window", "does not answer the question"], ["polite"])),
    ("shipping-times", "support", "How long does standard shipping take?",
     (0.6, "Shipping is usually quick.", ["gives no number of days"], ["on topic"]),
     (0.95, "Standard shipping takes 3 to 5 business days.", [], ["gives 3-5 business days", "on topic"])),
    ("password-reset", "support", "How do I reset my password?",
     (1.0, "Click 'Forgot password' on the sign-in page and follow the email link.", [], ["names the link", "mentions the email"]),
     (1.0, "Click 'Forgot password' on the sign-in page and follow the email link.", [], ["names the link", "mentions the email"])),
    ("cancel-subscription", "support", "How do I cancel my subscription?",
     (0.8, "Go to Settings > Billing > Cancel.", ["does not mention the end of the billing period"], ["gives the menu path"]),
     (0.8, "Go to Settings > Billing > Cancel.", ["does not mention the end of the billing period"], ["gives the menu path"])),
    ("html-in-answer", "support", "Show me the embed code for the widget.",
     (0.7, 'Paste <script src="https://cdn.example/w.js"></script> before </body>.',
      ["does not mention the API key"], ["gives the script tag"]),
     (0.75, 'Paste <script src="https://cdn.example/w.js"></script> before </body>. '
            'Then <img src=x onerror="window.__pwned=1"> shows the badge & "quotes" \u2028work.',
      ["does not mention the API key"], ["gives the script tag", "explains the badge"])),
    ("escalation", "support", "My order arrived broken and I want to speak to a manager.",
     (0.5, "I have opened ticket #4411 and asked a manager to call you.", ["does not apologise"], ["opens a ticket"]),
     (0.2, "Sorry to hear that.", ["does not apologise properly", "opens no ticket", "does not escalate"], [])),
    ("greeting", "support", "Hi!",
     (1.0, "Hello! How can I help you today?", [], ["greets back", "offers help"]),
     (1.0, "Hello! How can I help you today?", [], ["greets back", "offers help"])),
    ("order-status", "support", "Where is order 1234?",
     (0.85, "Order 1234 shipped yesterday; tracking: 1Z999.", [], ["gives the status", "gives tracking"]),
     ("error", "HTTP 503 from the order service: upstream unavailable", [], [])),
    ("invoice-copy", "support", "Can you send me a copy of my invoice?",
     (0.9, "I have emailed the invoice to the address on your account.", [], ["sends the invoice"]),
     None),
    ("gift-cards", "support", "Do you sell gift cards?",
     None,
     (0.65, "Yes, gift cards from $10 to $500 are sold online.", ["does not say they never expire"], ["answers yes"])),
    ("warranty", "support", "How long is the warranty on the kettle?",
     ("grader_error", "Two years from the date of purchase.", [], []),
     (0.9, "Two years from the date of purchase.", [], ["gives two years"])),
    ("capital-of-france", "capitals", "What is the capital of France?",
     (1.0, "Paris.", [], ["names Paris"]),
     (1.0, "Paris.", [], ["names Paris"])),
    ("capital-of-australia", "capitals", "What is the capital of Australia?",
     (0.5, "Sydney.", ["names Sydney, not Canberra"], []),
     (1.0, "Canberra.", [], ["names Canberra"])),
]

TOOLS = {
    "escalation": ({"lookup_order": 1, "create_ticket": 1, "notify_manager": 1},
                   {"lookup_order": [420.0], "create_ticket": [910.0], "notify_manager": [380.0]}),
    "order-status": ({"lookup_order": 2}, {"lookup_order": [350.0, 610.0]}),
    "refund-policy": ({"search_docs": 2, "read_doc": 1}, {"search_docs": [120.0, 140.0], "read_doc": [75.0]}),
}


def record(run, index, case_id, dataset, question, side):
    score, answer, misses, hits = side
    stamp = f"2025-06-0{1 if run == 'baseline' else 2}T10:{index:02d}:00Z"
    target = "support-bot"
    request = {"chat_prompt": [
        {"role": "system", "content": "You are the support assistant of an online shop."},
        {"role": "user", "content": question},
    ]}
    base = {
        "timestamp": stamp, "eval_id": case_id, "dataset": dataset, "target": target, "attempt": 1,
    }
    if score == "error":
        return {**base, "execution_status": "execution_error", "score": 0.0, "verdict": "fail",
                "hits": [], "misses": [f"Error: {answer}"], "candidate_answer": f"Error occurred: {answer}",
                "lm_provider_request": request, "evaluator_results": [], "error": answer}
    if score == "grader_error":
        failed = {"name": "quality", "type": "llm_judge", "score": 0.0, "weight": 1.0, "verdict": "fail",
                  "hits": [], "misses": ["Evaluator 'quality' failed: judge unreachable: connection refused"],
                  "error": "judge unreachable: connection refused"}
        return {**base, "execution_status": "grader_error", "score": 0.0, "verdict": "fail", "hits": [],
                "misses": failed["misses"], "candidate_answer": answer, "lm_provider_request": request,
                "evaluator_results": [failed]}
    verdict = "pass" if score >= 0.8 else "borderline" if score >= 0.6 else "fail"
    judge_prompt = (f"[[ ## expected_outcome ## ]]\nA correct, complete answer to: {question}\n\n"
                    f"[[ ## question ## ]]\n{question}\n\n[[ ## candidate_answer ## ]]\n{answer}")
    judge = {"name": "quality", "type": "llm_judge", "score": score, "weight": 1.0, "verdict": verdict,
             "hits": hits, "misses": misses,
             "reasoning": "Covers the expected points." if not misses else "Misses: " + "; ".join(misses),
             "evaluator_provider_request": {"system_prompt": JUDGE_SYSTEM, "user_prompt": judge_prompt,
                                            "target": "judge-model"}}
    length_ok = len(answer.split()) >= 2
    words = {"name": "word_count", "type": "code_judge", "score": 1.0 if length_ok else 0.0, "weight": 0.0,
             "verdict": "pass" if length_ok else "fail",
             "hits": [f"{len(answer.split())} words"] if length_ok else [],
             "misses": [] if length_ok else ["fewer than 2 words"],
             "details": {"words": len(answer.split())}}
    out = {**base, "execution_status": "ok", "score": score, "verdict": verdict, "hits": hits, "misses": misses,
           "reasoning": "quality: " + judge["reasoning"], "candidate_answer": answer,
           "lm_provider_request": request, "evaluator_results": [judge, words]}
    calls, durations = TOOLS.get(case_id, ({}, {}))
    if run == "candidate" and case_id == "escalation":
        calls, durations = {"lookup_order": 1}, {"lookup_order": [450.0]}
    out["trace_summary"] = {"event_count": 2 + 2 * sum(calls.values()), "tool_names": sorted(calls),
                            "tool_calls_by_name": calls, "error_count": 0}
    metrics = {"token_usage": {"input": 180 + 7 * index, "output": 20 + len(answer) // 4},
               "cost_usd": round(0.0004 + 0.00002 * index, 6), "duration_ms": 800.0 + 97.0 * index}
    if calls:
        metrics.update({"tool_durations": durations, "tool_call_count": sum(calls.values()),
                        "exploration_ratio": 0.5})
    out["execution_metrics"] = metrics
    return out


def main():
    for run, pick in (("baseline", 3), ("candidate", 4)):
        lines = []
        for index, case in enumerate(CASES):
            side = case[pick]
            if side is None:
                continue
            lines.append(json.dumps(record(run, index, case[0], case[1], case[2], side), ensure_ascii=False))
        (HERE / f"{run}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
