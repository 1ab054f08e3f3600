"""Designed target answers, keyed by the `[ans:KEY]` marker in each case's question.

`fake_model.py` answers openai targets with the entry's text (a string, or the `text` of an
object); `agent.py` answers cli targets and also uses the objects' `tool_calls`, `messages`,
`token_usage`, `cost_usd` and `duration_ms`.
"""

PARIS = "Paris is the capital of France and home of the Eiffel Tower."

INVOICE = (
    '{"invoice": {"number": "INV-001", "total": 105.5, "currency": "EUR", "date": "2025-01-15",'
    ' "issued": "2025-01-15T23:30:00Z", "items": [{"sku": "A1", "qty": 2}], "weight": "12.5kg",'
    ' "count": "1,234", "customer": {"name": "ACME", "vat": null}}}'
)

# Tool calls of the trajectory cases: search, read, read, write (durations in ms).
TRAJECTORY = [
    {"tool": "search", "input": {"query": "refund policy", "limit": 5}, "output": "2 hits", "duration_ms": 120},
    {"tool": "read", "input": {"path": "docs/refunds.md"}, "output": "Refunds take 30 days.", "duration_ms": 40},
    {"tool": "read", "input": {"path": "docs/faq.md"}, "output": "FAQ", "duration_ms": 30},
    {"tool": "write", "input": {"path": "out.md", "content": "summary", "mode": "w"}, "duration_ms": 900},
]

ANSWERS = {
    # --- deterministic.eval.yaml
    "det-paris": "The capital of France is Paris.",
    "det-padded": "  Hello World  \n",
    "det-multiline": "first line\nSECOND line\nthird",
    "det-json": '{"city": "Paris", "country": "France"}',
    "det-number": "42",
    "det-fenced": '```json\n{"city": "Paris"}\n```',
    # --- rubrics, llm-grader, composite, gates, structure
    "paris": PARIS,
    # --- field-accuracy.eval.yaml
    "invoice": INVOICE,
    "invoice-fenced": "Here it is:\n```json\n" + INVOICE + "\n```",
    "not-json": "I could not read the invoice.",
    "city-json": '{"city": "Paris"}',
    # --- metrics.eval.yaml (cli target)
    "metrics": {
        "tool_calls": [
            {"tool": "Read", "input": {"file_path": "a.py"}, "duration_ms": 10},
            {"tool": "Read", "input": {"file_path": "b.py"}, "duration_ms": 10},
            {"tool": "Grep", "input": {"pattern": "TODO"}, "duration_ms": 10},
            {"tool": "Edit", "input": {"file_path": "a.py"}, "duration_ms": 10},
        ],
        "text": "Done: fixed the TODO in a.py.",
        "token_usage": {"input": 1000, "output": 200, "cached": 300},
        "cost_usd": 0.0125,
        "duration_ms": 1500,
    },
    "bare": {"text": "Nothing to report."},
    # --- trajectory.eval.yaml (cli target)
    "trajectory": {"tool_calls": TRAJECTORY, "text": "Refunds take 30 days.", "duration_ms": 1100},
    "no-tools": {"text": "I answered without tools."},
    "skill-tool": {"tool_calls": [{"tool": "Skill", "input": {"skill": "pdf-extract"}}], "text": "Extracted."},
    "skill-read": {
        "tool_calls": [{"tool": "Read", "input": {"file_path": "/repo/.claude/skills/pdf-extract/SKILL.md"}}],
        "text": "Extracted.",
    },
    "skill-output": {
        "tool_calls": [
            {"tool": "bash", "input": {"command": "cat SKILL.md"}, "output": "loaded skills/pdf-extract/SKILL.md"}
        ],
        "text": "Extracted.",
    },
    "skill-none": {"tool_calls": [{"tool": "Read", "input": {"file_path": "README.md"}}], "text": "Read the README."},
}
