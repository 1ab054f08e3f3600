// A warm worker for promptfoo's JavaScript pieces: `file://provider.js` providers (a module
// exporting a class with `callApi`), and transforms (an expression, a function expression or
// `file://` module of an HTTP provider's `transformResponse`/`transformRequest`, or a test's
// `options.transform`). Announces the persistent protocol, then answers one request per line
// ({id, payload}) with {id, result}: {value} or {threw}.
const { pathToFileURL } = require('node:url');
const modules = new Map();
const instances = new Map();

async function load(file) {
  let mod = modules.get(file);
  if (!mod) {
    try {
      mod = require(file);
    } catch (e) {
      if (e && e.code !== 'ERR_REQUIRE_ESM') throw e;
      mod = await import(pathToFileURL(file).href);
    }
    modules.set(file, mod);
  }
  return mod;
}

async function provider(p) {
  const key = p.file + '\u0000' + JSON.stringify(p.options);
  let instance = instances.get(key);
  if (!instance) {
    const mod = await load(p.file);
    const Exported = mod && mod.default ? mod.default : mod;
    if (typeof Exported === 'function' && Exported.prototype && typeof Exported.prototype.callApi === 'function') {
      instance = new Exported(p.options);
    } else if (Exported && typeof Exported.callApi === 'function') {
      instance = Exported;
    } else {
      throw new Error(`${p.file} exports no class with a callApi method`);
    }
    instances.set(key, instance);
  }
  return instance.callApi(p.prompt, p.context, p.options);
}

const FUNCTION_EXPRESSION = /^(\(.*?\)\s*=>|function\s*\(.*?\))/;

async function transform(p) {
  if (p.file) {
    const mod = await load(p.file);
    const fn = p.function ? mod[p.function] : typeof mod === 'function' ? mod : mod.default;
    if (typeof fn !== 'function') {
      throw new Error(`${p.file} exports no function${p.function ? ` named ${p.function}` : ''}`);
    }
    return fn(...p.args);
  }
  // promptfoo's rules: an output transform is a body when it has several lines; an HTTP
  // request or response transform may be a function expression, a request transform a body
  // when it has `return`; anything else is an expression.
  let body;
  if (p.form === 'output') {
    body = p.code.includes('\n') ? p.code : `return ${p.code}`;
  } else {
    const code = p.code.trim();
    if (FUNCTION_EXPRESSION.test(code)) body = `return (${code})(${p.params.join(', ')});`;
    else if (p.form === 'request' && /\breturn\b/.test(code)) body = code;
    else body = `return (${code});`;
  }
  return new Function(...p.params, 'process', body)(...p.args, process);
}

serve(
  async (p) => {
    const value = await (p.kind === 'provider' ? provider(p) : transform(p));
    return { value: value === undefined ? null : value };
  },
  (e) => ({ threw: String(e && e.message !== undefined ? e.message : e) }),
);
