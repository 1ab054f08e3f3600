#!/usr/bin/env python3
"""Scores an answer by the keywords it mentions (the evaluator's `keywords`) and, when the
evaluator has `target: true`, by the judge model's verdict, given the case's attached files as
context. `agentv_eval.py` beside this file is the agentv judge SDK (docs/judges.md)."""
from pathlib import Path

from agentv_eval import JudgeResult, run_judge

PROMPT = """Criteria: {criteria}

Context:
{context}

Answer: {answer}

Does the answer meet the criteria, using only the context? Reply with JSON: {{"score": <0 to 1>, "reasoning": "<why>"}}"""


def judge(payload, target):
    answer = payload.answer_text()
    keywords = payload.config.get("keywords", [])
    result = JudgeResult(0.0)
    for word in keywords:
        result.check(word.lower() in answer.lower(), f"mentions {word}")
    scores = [len(result.hits) / len(keywords)] if keywords else []

    if target is not None:  # the evaluator has `target: true`
        context = "\n\n".join(Path(p).read_text(encoding="utf-8") for p in payload.input_files)
        reply = target.invoke(
            PROMPT.format(criteria=payload.criteria_text(), context=context or "(none)", answer=answer),
            system_prompt="You are a strict grader.",
        )
        verdict = reply.json_object() or {}
        model_score = verdict.get("score")
        if isinstance(model_score, (int, float)) and 0 <= model_score <= 1:
            scores.append(float(model_score))
            result.detail("model_reasoning", verdict.get("reasoning"))
        else:
            result.miss("the judge model gave no usable score")
            scores.append(0.0)

    result.score = sum(scores) / len(scores) if scores else 0.0
    result.reasoning = f"{len(result.hits)} of {len(result.hits) + len(result.misses)} checks passed"
    return result


run_judge(judge)
