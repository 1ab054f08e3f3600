// Module resolution hooks for `node --import`: `@agentv/sdk` and `@agentv/eval` resolve as
// usual when the project installed them, else to agentv's stand-in (sdk.mjs beside this file).
const SDK = /^@agentv\/(sdk|eval)$/;
const shim = new URL('./sdk.mjs', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (!SDK.test(specifier)) return nextResolve(specifier, context);
  try {
    return await nextResolve(specifier, context);
  } catch {
    return { url: shim, shortCircuit: true };
  }
}
