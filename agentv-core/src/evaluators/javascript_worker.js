// A warm worker for promptfoo `javascript` assertions: announces the persistent protocol,
// then reads one request per line ({id, payload: {code, output, context}}) and answers
// {id, result} with {kind, value} or {threw, stack}.
const modules = new Map();

function load(file, name) {
  let mod = modules.get(file);
  if (!mod) {
    mod = require(file);
    modules.set(file, mod);
  }
  const fn = name ? mod[name] : typeof mod === 'function' ? mod : mod.default;
  if (typeof fn !== 'function') {
    throw new Error(`${file} exports no function${name ? ` named ${name}` : ''}`);
  }
  return fn;
}

// Each distinct body is compiled once: a suite repeats the same assertion on every test.
const functions = new Map();

function compiled(body) {
  let fn = functions.get(body);
  if (!fn) {
    // Bodies written with a test's vars differ per test: keep the most recent ones only.
    if (functions.size >= 1000) functions.clear();
    fn = new Function('output', 'context', 'process', body);
    functions.set(body, fn);
  }
  return fn;
}

function isGradingResult(r) {
  return typeof r === 'object' && r !== null && typeof r.pass === 'boolean' &&
    typeof r.score === 'number' && typeof r.reason === 'string';
}

async function run(payload) {
  const { code, output, context } = payload;
  let result = code.file
    ? load(code.file, code.function)(output, context)
    : compiled(code.body)(output, context, process);
  result = await Promise.resolve(result);
  if (typeof result === 'boolean') return { kind: 'boolean', value: result };
  if (typeof result === 'number') return { kind: 'number', value: result };
  if (isGradingResult(result)) return { kind: 'result', value: result };
  throw new Error(`Custom function must return a boolean, number, or GradingResult object. Got type ${typeof result}: ${JSON.stringify(result)}`);
}

serve(run, (e) => ({ threw: String(e && e.message), stack: String(e && e.stack) }));
