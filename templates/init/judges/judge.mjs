// Scores an answer by the keywords it mentions (the evaluator's `keywords`) and, when the
// evaluator has `target: true`, by the judge model's verdict, given the case's attached files
// as context. `agentv-eval/` beside this file is the agentv judge SDK (docs/judges.md); its
// `index.d.ts` gives editors the types.
import { readFileSync } from "node:fs";

import { answerText, criteriaText, defineCodeJudge, extractJsonObject } from "./agentv-eval/index.js";

defineCodeJudge(async (payload, { target }) => {
  const answer = answerText(payload);
  const keywords = payload.config.keywords ?? [];
  const hits = [];
  const misses = [];
  for (const word of keywords) {
    (answer.toLowerCase().includes(word.toLowerCase()) ? hits : misses).push(`mentions ${word}`);
  }
  const scores = keywords.length ? [hits.length / keywords.length] : [];
  const details = {};

  if (target) {
    // the evaluator has `target: true`
    const context = payload.inputFiles.map((path) => readFileSync(path, "utf8")).join("\n\n");
    const reply = await target.invoke({
      question:
        `Criteria: ${criteriaText(payload)}\n\nContext:\n${context || "(none)"}\n\nAnswer: ${answer}\n\n` +
        'Does the answer meet the criteria, using only the context? Reply with JSON: {"score": <0 to 1>, "reasoning": "<why>"}',
      systemPrompt: "You are a strict grader.",
    });
    const verdict = extractJsonObject(reply.text);
    const modelScore = verdict?.score;
    if (typeof modelScore === "number" && modelScore >= 0 && modelScore <= 1) {
      scores.push(modelScore);
      details.model_reasoning = verdict?.reasoning;
    } else {
      misses.push("the judge model gave no usable score");
      scores.push(0);
    }
  }

  const score = scores.length ? scores.reduce((a, b) => a + b, 0) / scores.length : 0;
  return { score, hits, misses, reasoning: `${hits.length} of ${hits.length + misses.length} checks passed`, details };
});
