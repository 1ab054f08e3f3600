// The TypeScript SDK's conformance judge: it does what the payload's `config.conformance` says.
// `steps` run in order, then `result` is returned with whatever the steps recorded merged into its
// `details`. The steps are described in ../README.md; every SDK has a judge like this one.
import { spawnSync } from "node:child_process";
import process from "node:process";
import { TargetError, createTargetClient, defineCodeJudge } from "../../typescript/dist/index.js";

const SPECIAL = { $NaN: Number.NaN, $Infinity: Number.POSITIVE_INFINITY, "$-Infinity": Number.NEGATIVE_INFINITY };

function special(value) {
  if (typeof value === "string") return value in SPECIAL ? SPECIAL[value] : value;
  if (Array.isArray(value)) return value.map(special);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, special(v)]));
  return value;
}

function errorRecord(error) {
  return { kind: error.kind, status: error.statusCode ?? null, message: error.message, budget_exhausted: error.budgetExhausted };
}

function client() {
  const found = createTargetClient();
  if (!found) throw new Error("this step needs a target proxy");
  return found;
}

async function runStep(step, target, details) {
  if ("print" in step) {
    console.log(step.print);
  } else if ("stderr" in step) {
    console.error(step.stderr);
  } else if ("child_print" in step) {
    spawnSync(process.execPath, ["-e", `console.log(${JSON.stringify(step.child_print)})`], { stdio: "inherit" });
  } else if ("raise" in step) {
    throw new Error(step.raise);
  } else if ("target" in step) {
    details.target = { from_env: createTargetClient() !== undefined, argument: target !== undefined };
  } else if ("info" in step) {
    const info = await client().getInfo();
    details.info = {
      target_name: info.targetName,
      max_calls: info.maxCalls,
      call_count: info.callCount,
      available_targets: info.availableTargets,
    };
  } else if ("invoke" in step) {
    details.invocations ??= [];
    try {
      details.invocations.push({ text: (await client().invoke(step.invoke)).text });
    } catch (e) {
      if (!step.catch || !(e instanceof TargetError)) throw e;
      details.invocations.push({ error: errorRecord(e) });
    }
  } else if ("invoke_batch" in step) {
    const answers = await client().invokeBatch(step.invoke_batch);
    details.batches ??= [];
    details.batches.push(answers.map((a) => (a.error === undefined ? { text: a.text } : { error: a.error })));
  } else if ("env_proxy" in step) {
    details.env_proxy = process.env.AGENTV_TARGET_PROXY_URL ?? null;
  } else {
    throw new Error(`unknown conformance step ${JSON.stringify(step)}`);
  }
}

defineCodeJudge(async (payload, { target }) => {
  const spec = payload.config.conformance ?? {};
  const details = {};
  for (const step of spec.steps ?? []) await runStep(step, target, details);
  let result = special(spec.result ?? { score: 1 });
  if (Object.keys(details).length && result && typeof result === "object" && !Array.isArray(result)) {
    result = { ...result, details: { ...(result.details ?? {}), ...details } };
  }
  return result;
});
