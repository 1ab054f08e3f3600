// Compares promptfoo's JSON output with agentv's for the same config: rows by (testIdx,
// promptIdx), then each assertion's pass and score, grouped by type, then each prompt's summed
// named scores (with `derivedMetrics`). Exits 1 on any difference.
import { readFileSync } from 'node:fs';

const docs = [process.argv[2], process.argv[3]].map((p) => JSON.parse(readFileSync(p, 'utf8')));
const rows = (doc) =>
  doc.results.results.sort(
    (a, b) => a.testIdx - b.testIdx || a.promptIdx - b.promptIdx,
  );
const near = (a, b) => Math.abs(a - b) < 1e-9;
const [theirs, ours] = docs.map(rows);
let agree = 0;
const types = new Map();
for (let i = 0; i < Math.max(theirs.length, ours.length); i++) {
  const [t, o] = [theirs[i], ours[i]];
  if (!t || !o) continue;
  const named = (r) => Object.entries(r.namedScores ?? {}).map(([k, v]) => `${k}=${v.toFixed(6)}`).sort().join(',');
  const same =
    t.testIdx === o.testIdx && t.promptIdx === o.promptIdx && t.success === o.success &&
    near(t.score, o.score) && named(t) === named(o);
  if (same) agree++;
  else console.log(`  row ${t.testIdx}/${t.promptIdx}: promptfoo ${t.success} ${t.score} [${named(t)}], agentv ${o.success} ${o.score} [${named(o)}]`);
  const [tc, oc] = [t.gradingResult?.componentResults ?? [], o.gradingResult?.componentResults ?? []];
  const kind = (c) => c.assertion?.type ?? c.metadata?.assertionSet?.type ?? '?';
  const seen = new Map();
  tc.forEach((c) => {
    const type = kind(c);
    const nth = seen.get(type) ?? 0;
    seen.set(type, nth + 1);
    const mine = oc.filter((x) => kind(x) === type)[nth];
    const entry = types.get(type) ?? { same: 0, all: 0 };
    entry.all++;
    if (mine && mine.pass === c.pass && near(mine.score, c.score)) entry.same++;
    types.set(type, entry);
  });
}
console.log(`  rows: ${agree} of ${theirs.length} agree (agentv wrote ${ours.length})`);
for (const [type, { same, all }] of [...types].sort()) console.log(`  ${type}: ${same} of ${all}`);
// Each prompt's named scores, summed over its rows; derived metrics among them.
const totals = (doc) =>
  (doc.results.prompts ?? []).map((p) =>
    Object.entries(p.metrics?.namedScores ?? {}).map(([k, v]) => `${k}=${v === null ? v : v.toFixed(6)}`).sort().join(','),
  );
const [tp, op] = docs.map(totals);
const promptsAgree = tp.filter((t, i) => t === op[i]).length;
tp.forEach((t, i) => t === op[i] || console.log(`  prompt ${i}: promptfoo [${t}], agentv [${op[i]}]`));
console.log(`  prompt named scores: ${promptsAgree} of ${tp.length} agree`);
const ok = agree === theirs.length && theirs.length === ours.length && promptsAgree === tp.length;
process.exit(ok ? 0 : 1);
