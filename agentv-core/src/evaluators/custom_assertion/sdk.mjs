// agentv's stand-in for the `@agentv/sdk` (and `@agentv/eval`) module of AgentV 4.x, used when a
// custom assertion type imports it and the project has not installed the package. It reads
// the payload on stdin as the package does (every key camelCased, a long answer read from
// `outputPath` when asked for), calls the handler and prints one result object.
import { readFileSync } from 'node:fs';

const camel = (key) => key.replace(/_+([a-z0-9])/g, (_, c) => c.toUpperCase());

function toCamelCaseDeep(value) {
  if (Array.isArray(value)) return value.map(toCamelCaseDeep);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [camel(k), toCamelCaseDeep(v)]));
  }
  return value;
}

function readInput() {
  const input = toCamelCaseDeep(JSON.parse(readFileSync(0, 'utf8')));
  if (input.outputPath && (input.output === null || input.output === undefined)) {
    let cached;
    Object.defineProperty(input, 'output', {
      get() {
        if (cached === undefined) cached = JSON.parse(readFileSync(input.outputPath, 'utf8'));
        return cached;
      },
      configurable: true,
      enumerable: true,
    });
  }
  return input;
}

const clamp = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0);

function assertionsOf(result, passed) {
  if (Array.isArray(result.assertions)) return result.assertions;
  const text = result.reasoning ?? result.reason;
  return typeof text === 'string' && text ? [{ text, passed }] : [];
}

// `{pass?, score?, assertions?, details?, reasoning?}`: the score, else pass → 1 and fail → 0.
function fromAssertion(result) {
  const r = result ?? {};
  const score = r.score !== undefined ? clamp(r.score) : r.pass !== undefined ? (r.pass ? 1 : 0) : 0;
  const passed = r.pass !== undefined ? Boolean(r.pass) : score >= 0.5;
  return { score, assertions: assertionsOf(r, passed), details: r.details };
}

// `{score, assertions?, details?}`.
function fromGrader(result) {
  const r = result ?? {};
  const score = clamp(r.score);
  return { score, assertions: assertionsOf(r, score >= 0.5), details: r.details };
}

async function run(handler, normalize) {
  try {
    const result = normalize(await handler(readInput()));
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // The stack first, the message last: the end of stderr is what names the cause.
    if (error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
    process.stderr.write(`Assertion failed: ${message}\n`);
    process.stdout.write(`${JSON.stringify({ score: 0, assertions: [{ text: `Assertion failed: ${message}`, passed: false }] })}\n`);
    process.exitCode = 1;
  }
}

export function defineAssertion(handler) {
  return run(handler, fromAssertion);
}

export function defineCodeGrader(handler) {
  return run(handler, fromGrader);
}

export const defineCodeJudge = defineCodeGrader;
