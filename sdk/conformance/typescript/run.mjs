#!/usr/bin/env node
// Runs every conformance case against the TypeScript SDK (sdk/typescript/dist, plain node).
//
// Sections: payloads, results, extract_json, proxy, judges (one-shot runs of judge.mjs),
// persistent (line protocol) and docs (the TypeScript judge in docs/judges.md, type-checked and
// compiled with the SDK's own tsc, then run). Prints one line per case and a closing
// `typescript: N passed, N failed, N skipped` line; exits 1 on any failure.
//
// Usage: run.mjs [SECTION_OR_CASE_SUBSTRING ...]
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import * as sdk from "../../typescript/dist/index.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const CONFORMANCE = dirname(HERE);
const SDK_DIR = dirname(CONFORMANCE);
const REPO = dirname(SDK_DIR);
const CASES = join(CONFORMANCE, "cases");
const PYTHON = process.env.PYTHON ?? "python3";
const MISSING = Symbol("missing");
const SPECIAL = { $NaN: Number.NaN, $Infinity: Number.POSITIVE_INFINITY, "$-Infinity": Number.NEGATIVE_INFINITY };
const PROXY_VARS = ["AGENTV_TARGET_PROXY_URL", "AGENTV_TARGET_PROXY_TOKEN", "AGENTV_JUDGE_PROXY_URL", "AGENTV_JUDGE_PROXY_TOKEN"];
const JUDGE_TIMEOUT_MS = 60_000;

class Failure extends Error {}

// ---------------------------------------------------------------------------------------------
// Matching

const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
const show = (v) => (v === MISSING ? "(missing)" : JSON.stringify(v));

function jsonEqual(a, b) {
  if (typeof a === "number" && typeof b === "number") return a === b || (Number.isNaN(a) && Number.isNaN(b));
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return ka.length === kb.length && ka.every((k, i) => k === kb[i] && jsonEqual(a[k], b[k]));
  }
  return a === b;
}

function matches(expected, actual, where = "$") {
  if (isObject(expected) && Object.keys(expected).length === 1 && "$contains" in expected) {
    return typeof actual === "string" && actual.includes(expected.$contains)
      ? undefined
      : `${where}: expected a string containing ${JSON.stringify(expected.$contains)}, got ${show(actual)}`;
  }
  if (isObject(expected) && Object.keys(expected).length === 1 && "$any" in expected) {
    return actual === undefined || actual === MISSING ? `${where}: missing` : undefined;
  }
  if (isObject(expected)) {
    if (!isObject(actual)) return `${where}: expected an object, got ${show(actual)}`;
    const ke = Object.keys(expected).sort();
    const ka = Object.keys(actual).sort();
    if (!jsonEqual(ke, ka)) return `${where}: expected keys ${JSON.stringify(ke)}, got ${JSON.stringify(ka)}`;
    for (const k of ke) {
      const why = matches(expected[k], actual[k], `${where}.${k}`);
      if (why) return why;
    }
    return undefined;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return `${where}: expected ${show(expected)}, got ${show(actual)}`;
    for (let i = 0; i < expected.length; i++) {
      const why = matches(expected[i], actual[i], `${where}[${i}]`);
      if (why) return why;
    }
    return undefined;
  }
  return jsonEqual(expected, actual) ? undefined : `${where}: expected ${show(expected)}, got ${show(actual)}`;
}

function resolve(value, path) {
  let obj = value;
  for (const step of path) {
    if (obj === MISSING || obj === undefined || obj === null) return MISSING;
    if (typeof step === "number") obj = Array.isArray(obj) && step < obj.length ? obj[step] : MISSING;
    else obj = Object.prototype.hasOwnProperty.call(obj, step) ? obj[step] : MISSING;
  }
  return obj;
}

function runChecks(value, checks, helpers) {
  for (const check of checks) {
    let label;
    let actual;
    if ("helper" in check) {
      label = `${check.camel_helper}()`;
      actual = helpers[check.camel_helper]();
    } else {
      const path = check.camel ?? check.path;
      label = path.join(".") || "(value)";
      actual = resolve(value, path);
    }
    if (check.absent) {
      if (actual !== MISSING && actual !== undefined && actual !== null) throw new Failure(`${label}: expected absent, got ${show(actual)}`);
    } else if ("length" in check) {
      if (actual === MISSING || actual.length !== check.length) throw new Failure(`${label}: expected length ${check.length}, got ${show(actual)}`);
    } else if ("equals" in check) {
      if (actual === MISSING || !jsonEqual(check.equals, actual)) throw new Failure(`${label}: expected ${JSON.stringify(check.equals)}, got ${show(actual)}`);
    }
  }
}

function errorMatches(expected, error) {
  if ("contains" in expected && !String(error.message).includes(expected.contains)) {
    throw new Failure(`expected an error containing ${JSON.stringify(expected.contains)}, got ${error.message}`);
  }
}

function substitute(value, table) {
  if (typeof value === "string") {
    let out = value;
    for (const [k, v] of Object.entries(table)) out = out.split(k).join(v);
    return out;
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, table));
  if (isObject(value)) {
    const out = {};
    for (const [k, v] of Object.entries(value)) Object.defineProperty(out, k, { value: substitute(v, table), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return value;
}

function special(value) {
  if (typeof value === "string") return value in SPECIAL ? SPECIAL[value] : value;
  if (Array.isArray(value)) return value.map(special);
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, special(v)]));
  return value;
}

// ---------------------------------------------------------------------------------------------
// The fake proxy (the Python one, shared by every SDK runner)

class FakeProxy {
  static async start() {
    const proxy = new FakeProxy();
    proxy.child = spawn(PYTHON, [join(CONFORMANCE, "fake_proxy.py")], { stdio: ["pipe", "pipe", "inherit"] });
    const lines = createInterface({ input: proxy.child.stdout });
    const first = await new Promise((resolve, reject) => {
      lines.once("line", resolve);
      proxy.child.once("error", reject);
      proxy.child.once("exit", (code) => reject(new Error(`fake proxy exited with ${code}`)));
    });
    proxy.url = JSON.parse(first).url;
    return proxy;
  }
  async control(method, route, body) {
    const response = await fetch(`${this.url}/__conformance/${route}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    return response.json();
  }
  load(token, exchanges) {
    return this.control("POST", "load", { token, exchanges });
  }
  async verify() {
    const report = await this.control("GET", "report");
    if (report.problems.length) throw new Failure(`proxy saw: ${report.problems.join("; ")}`);
    if (report.remaining) throw new Failure(`${report.remaining} expected proxy request(s) never came`);
  }
  close() {
    this.child.stdin.end();
  }
}

function refusedUrl() {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(`http://127.0.0.1:${port}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Sections

const loadCases = (name) => JSON.parse(readFileSync(join(CASES, name), "utf8"));

function payloadCase(kase) {
  const tmp = mkdtempSync(join(tmpdir(), "agentv-conformance-"));
  try {
    for (const [name, text] of Object.entries(kase.files ?? {})) writeFileSync(join(tmp, name), text);
    const text = "payload_text" in kase ? kase.payload_text : JSON.stringify(substitute(kase.payload, { $FILES: tmp }));
    let payload;
    try {
      payload = sdk.parseCodeJudgePayload(new TextEncoder().encode(text));
    } catch (e) {
      if (!(e instanceof sdk.PayloadError)) throw e;
      if (!("error" in kase)) throw new Failure(`unexpected error: ${e.message}`);
      errorMatches(kase.error, e);
      return;
    }
    if ("error" in kase) throw new Failure(`expected an error containing ${JSON.stringify(kase.error.contains)}, parsed fine`);
    runChecks(payload, kase.checks, { answerText: () => sdk.answerText(payload), criteriaText: () => sdk.criteriaText(payload) });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

function resultCase(kase) {
  let got;
  try {
    got = JSON.parse(JSON.stringify(sdk.validateResult(special(kase.input))));
  } catch (e) {
    if (!(e instanceof sdk.ResultError)) throw e;
    if (!("error" in kase)) throw new Failure(`unexpected error: ${e.message}`);
    errorMatches(kase.error, e);
    return;
  }
  if ("error" in kase) throw new Failure(`expected an error containing ${JSON.stringify(kase.error.contains)}, got ${JSON.stringify(got)}`);
  const why = matches(kase.output, got);
  if (why) throw new Failure(why);
}

function extractCase(kase) {
  const got = sdk.extractJsonObject(kase.text) ?? null;
  if (!jsonEqual(kase.expect, got)) throw new Failure(`expected ${JSON.stringify(kase.expect)}, got ${JSON.stringify(got)}`);
}

async function proxyCase(kase, ctx, token) {
  const table = ctx.table();
  await ctx.proxy.load(token, substitute(kase.exchanges, table));
  const spec = substitute(kase.client ?? {}, table);
  const options = { timeoutMs: spec.timeout_ms ?? 10_000 };
  const expect = kase.expect;
  let value;
  try {
    let client;
    if ("env" in spec) {
      client = sdk.TargetClient.fromEnv(options, spec.env);
      if (client === undefined) {
        if (expect.client !== "none") throw new Failure("fromEnv gave no client");
        await ctx.proxy.verify();
        return;
      }
    } else {
      client = sdk.createTargetClientInternal(spec.url ?? ctx.proxy.url, spec.token ?? token, options);
    }
    const call = kase.call;
    if (call.method === "get_info") value = await client.getInfo();
    else if (call.method === "invoke") value = await client.invoke(call.request);
    else value = await client.invokeBatch(call.requests);
  } catch (e) {
    if (!(e instanceof sdk.TargetError)) throw e;
    if (!("error" in expect)) throw new Failure(`unexpected error: ${e.kind} ${e.statusCode} ${e.message}`);
    const want = expect.error;
    if (e.kind !== want.kind || (e.statusCode ?? null) !== want.status) {
      throw new Failure(`expected ${JSON.stringify(want)}, got kind ${e.kind} status ${e.statusCode} (${e.message})`);
    }
    if ("message" in want && e.message !== want.message) throw new Failure(`expected message ${JSON.stringify(want.message)}, got ${JSON.stringify(e.message)}`);
    if ("message_contains" in want && !e.message.includes(want.message_contains)) {
      throw new Failure(`expected message containing ${JSON.stringify(want.message_contains)}, got ${JSON.stringify(e.message)}`);
    }
    await ctx.proxy.verify();
    return;
  }
  if ("error" in expect || expect.client === "none") throw new Failure(`expected ${JSON.stringify(expect)}, got ${JSON.stringify(value)}`);
  runChecks(value, expect.checks, {});
  await ctx.proxy.verify();
}

function judgeEnv(extra, persistent) {
  const env = { ...process.env };
  for (const name of [...PROXY_VARS, "AGENTV_JUDGE_PERSISTENT"]) delete env[name];
  Object.assign(env, extra);
  if (persistent) env.AGENTV_JUDGE_PERSISTENT = "1";
  return env;
}

function runProcess(argv, stdin, env, cwd) {
  const done = spawnSync(argv[0], argv.slice(1), { input: stdin, env, cwd, timeout: JUDGE_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 });
  if (done.error) throw new Failure(`cannot run ${argv.join(" ")}: ${done.error.message}`);
  return { code: done.status, out: done.stdout.toString("utf8"), err: done.stderr.toString("utf8") };
}

function checkStderr(expect, err) {
  for (const text of expect.stderr_contains ?? []) {
    if (!err.includes(text)) throw new Failure(`stderr lacks ${JSON.stringify(text)}; stderr was:\n${err.slice(-2000)}`);
  }
}

async function judgeCase(kase, ctx, token) {
  const table = ctx.table();
  await ctx.proxy.load(token, substitute(kase.exchanges ?? [], table));
  const env = judgeEnv(substitute(kase.env ?? {}, table), false);
  const stdin = "payload_text" in kase ? kase.payload_text : JSON.stringify(kase.payload);
  const { code, out, err } = runProcess([process.execPath, join(HERE, "judge.mjs")], stdin, env);
  const expect = kase.expect;
  if (code !== expect.exit_code) throw new Failure(`exit code ${code}, expected ${expect.exit_code}; stdout=${JSON.stringify(out)} stderr=${JSON.stringify(err.slice(-1500))}`);
  const lines = out.split("\n").filter((l, i, all) => i < all.length - 1 || l !== "");
  if (lines.length !== 1) throw new Failure(`stdout must be exactly one line, got ${JSON.stringify(out)}`);
  const why = matches(expect.stdout, JSON.parse(lines[0]));
  if (why) throw new Failure(`${why}; stderr=${JSON.stringify(err.slice(-1500))}`);
  checkStderr(expect, err);
  await ctx.proxy.verify();
}

async function persistentCase(kase, ctx, token) {
  const table = ctx.table();
  await ctx.proxy.load(token, substitute(kase.exchanges ?? [], table));
  const env = judgeEnv(substitute(kase.env ?? {}, table), true);
  const stdin = "send_raw" in kase
    ? kase.send_raw.map((l) => `${l}\n`).join("")
    : kase.send.map((m) => `${JSON.stringify(substitute(m, table))}\n`).join("");
  const { code, out, err } = runProcess([process.execPath, join(HERE, "judge.mjs")], stdin, env);
  const expect = substitute(kase.expect, table);
  if (code !== expect.exit_code) throw new Failure(`exit code ${code}, expected ${expect.exit_code}; stderr=${JSON.stringify(err.slice(-1500))}`);
  const lines = out.split("\n");
  if (lines.at(-1) !== "") throw new Failure(`stdout does not end with a newline: ${JSON.stringify(out)}`);
  lines.pop();
  if (lines.length !== expect.lines.length) {
    throw new Failure(`expected ${expect.lines.length} lines, got ${lines.length}: ${JSON.stringify(out)}; stderr=${JSON.stringify(err.slice(-1500))}`);
  }
  for (let i = 0; i < lines.length; i++) {
    const why = matches(expect.lines[i], JSON.parse(lines[i]), `line ${i + 1}`);
    if (why) throw new Failure(`${why}; stderr=${JSON.stringify(err.slice(-1500))}`);
  }
  checkStderr(expect, err);
  await ctx.proxy.verify();
}

// ---------------------------------------------------------------------------------------------
// docs/judges.md

function snippet(name) {
  const text = readFileSync(join(REPO, "docs", "judges.md"), "utf8");
  const found = new RegExp(`<!-- snippet: ${name} -->\\s*\`\`\`[a-z]*\\n([\\s\\S]*?)^\`\`\``, "m").exec(text);
  if (!found) throw new Failure(`docs/judges.md has no snippet ${name}`);
  return found[1];
}

const DOCS_PAYLOAD = {
  eval_id: "capital",
  question: "What is the capital of France?",
  expected_outcome: "Names Paris.",
  candidate_answer: "The capital of France is Paris.",
  criteria: "Names Paris.",
  output: "The capital of France is Paris.",
  config: { keywords: ["Paris", "France"] },
};

/** Type-checks and compiles the docs' TypeScript judge as a judge author would, with the SDK installed. */
function compileDocsJudge() {
  const tsc = join(SDK_DIR, "typescript", "node_modules", "typescript", "bin", "tsc");
  if (!existsSync(tsc)) throw new Failure("tsc is missing: run `npm ci` in sdk/typescript (run.sh does)");
  const tmp = mkdtempSync(join(tmpdir(), "agentv-docs-ts-"));
  mkdirSync(join(tmp, "node_modules"));
  symlinkSync(join(SDK_DIR, "typescript"), join(tmp, "node_modules", "agentv-eval"), "dir");
  writeFileSync(join(tmp, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(join(tmp, "judge.ts"), snippet("typescript-judge"));
  writeFileSync(
    join(tmp, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, types: [], outDir: "out" }, files: ["judge.ts"] }),
  );
  const done = spawnSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: tmp, encoding: "utf8" });
  if (done.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Failure(`the docs' TypeScript judge does not type-check:\n${done.stdout}${done.stderr}`);
  }
  return tmp;
}

function docsCases(ctx, token) {
  let compiled;
  const run = async (withProxy, persistent = false) => {
    compiled ??= compileDocsJudge();
    const exchanges = withProxy
      ? [{ request: { method: "POST", path: "/invoke" }, response: { status: 200, body: { outputMessages: [], rawText: 'Sure: {"score": 1, "reason": "it names Paris"}' } } }]
      : [];
    await ctx.proxy.load(token, exchanges);
    let result;
    if (persistent) {
      const request = { id: 1, payload: DOCS_PAYLOAD, proxy: withProxy ? { url: ctx.proxy.url, token, max_calls: 5 } : null };
      const { code, out, err } = runProcess([process.execPath, "out/judge.js"], `${JSON.stringify(request)}\n`, judgeEnv({}, true), compiled);
      const lines = out.trim().split("\n");
      if (code !== 0 || lines.length !== 2) throw new Failure(`exit ${code}, stdout ${JSON.stringify(out)}, stderr ${err.slice(-1500)}`);
      result = JSON.parse(lines[1]).result;
    } else {
      const env = withProxy ? { AGENTV_TARGET_PROXY_URL: ctx.proxy.url, AGENTV_TARGET_PROXY_TOKEN: token } : {};
      const { code, out, err } = runProcess([process.execPath, "out/judge.js"], JSON.stringify(DOCS_PAYLOAD), judgeEnv(env, false), compiled);
      if (code !== 0) throw new Failure(`exit ${code}, stdout ${JSON.stringify(out)}, stderr ${err.slice(-1500)}`);
      result = JSON.parse(out);
    }
    if (result?.score !== 1) throw new Failure(`expected score 1, got ${JSON.stringify(result)}`);
    await ctx.proxy.verify();
  };
  return {
    cases: [
      ["typescript_judge_without_proxy", () => run(false)],
      ["typescript_judge_with_proxy", () => run(true)],
      ["typescript_judge_persistent_with_proxy", () => run(true, true)],
    ],
    cleanup: () => compiled && rmSync(compiled, { recursive: true, force: true }),
  };
}

// ---------------------------------------------------------------------------------------------
// Driver

async function main(filters) {
  const ctx = { proxy: await FakeProxy.start(), refused: await refusedUrl() };
  ctx.table = () => ({ $PROXY_URL: ctx.proxy.url, $REFUSED_URL: ctx.refused });
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const plan = [];
  const addFile = (section, file, run) => {
    const data = loadCases(file);
    for (const kase of data.cases) plan.push([section, kase.name, () => run(kase, ctx, data.token ?? ""), kase.skip?.typescript]);
  };
  addFile("payloads", "payloads.json", payloadCase);
  addFile("results", "results.json", resultCase);
  addFile("extract_json", "extract_json.json", extractCase);
  addFile("proxy", "proxy.json", proxyCase);
  addFile("judges", "judges.json", judgeCase);
  addFile("persistent", "persistent.json", persistentCase);
  const docs = docsCases(ctx, loadCases("proxy.json").token);
  for (const [name, run] of docs.cases) plan.push(["docs", name, run, undefined]);
  try {
    for (const [section, name, run, skip] of plan) {
      const label = `${section}/${name}`;
      if (filters.length && !filters.some((f) => label.includes(f))) continue;
      if (skip) {
        skipped++;
        console.log(`skip  typescript ${label}: ${skip}`);
        continue;
      }
      try {
        await run();
        passed++;
        console.log(`ok    typescript ${label}`);
      } catch (e) {
        failed++;
        console.log(`FAIL  typescript ${label}: ${e instanceof Failure ? e.message : `runner error\n${e?.stack ?? e}`}`);
      }
    }
  } finally {
    docs.cleanup();
    ctx.proxy.close();
  }
  console.log(`typescript: ${passed} passed, ${failed} failed, ${skipped} skipped`);
  return failed ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
