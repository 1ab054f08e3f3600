// Runs promptfoo's own assertion implementations on every case of cases.json and writes
// expected.json: for each case, promptfoo's {pass, score, reason}, or {error} where promptfoo
// throws (a test error in a promptfoo run). agentv's unit tests compare their graders with it.
//
//   node compat/promptfoo-assertions/oracle.mjs <node_modules holding promptfoo@0.121.20>
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const modules = process.argv[2];
if (!modules) {
  console.error('usage: node oracle.mjs <node_modules directory holding promptfoo>');
  process.exit(2);
}
const pkg = JSON.parse(readFileSync(join(modules, 'promptfoo', 'package.json'), 'utf8'));
if (pkg.version !== '0.121.20') {
  console.error(`oracle.mjs: promptfoo ${pkg.version} found; the expectations are for 0.121.20`);
  process.exit(2);
}
const require = createRequire(join(modules, 'promptfoo', 'package.json'));
const promptfoo = (await import(pathToFileURL(require.resolve('promptfoo')).href)).default;

const cases = JSON.parse(readFileSync(join(here, 'cases.json'), 'utf8'));
const results = [];
for (const c of cases) {
  const providerResponse = { output: c.output, ...(c.response ?? {}) };
  const provider = c.provider_config
    ? { id: () => 'openai:chat:test', config: c.provider_config, callApi: async () => ({}) }
    : undefined;
  let expected;
  try {
    const r = await promptfoo.assertions.runAssertion({
      assertion: c.assert,
      test: { vars: c.vars ?? {} },
      providerResponse,
      provider,
      latencyMs: c.latency_ms,
    });
    expected = { pass: r.pass, score: r.score, reason: r.reason };
  } catch (e) {
    expected = { error: String(e?.message ?? e) };
  }
  results.push({ ...c, expected });
}
writeFileSync(join(here, 'expected.json'), JSON.stringify(results, null, 1) + '\n');
console.log(`${results.length} cases written to expected.json`);
