//! An embedded JavaScript engine (QuickJS) for inline `javascript` assertions that need nothing
//! from Node (`docs/promptfoo.md#javascript`).
//!
//! Why: a node worker costs ~40 MB and a pipe round trip per assertion, which is most of what a
//! large promptfoo config costs agentv; an expression such as `output.includes('4')` costs
//! microseconds here. Node stays the authority: code goes to the warm node workers when it
//! names anything only Node has or that engines may do differently ([`needs_node`]), and
//! whenever it throws, is still pending after its promise jobs ran, or runs past its budget
//! here ([`evaluate`] answers `None`), so every error message and edge case is Node's. Builtins
//! newer than Node 20 are removed from the engine, so code that uses them throws here and runs
//! in node, whichever Node is installed.
//!
//! Each thread keeps its own engine (a QuickJS runtime is single-threaded); each distinct
//! body is compiled once per engine (the last 1 000 are kept), as the node worker compiles it.
//! An engine that handed code to node is dropped, so nothing a failed call left (queued jobs,
//! a half-built state) reaches the next assertion.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use rquickjs::{Context, Function, Runtime};
use serde_json::Value;

/// The most one assertion may run here (its promise jobs included) before it is handed to
/// node, which applies the run's own timeout.
const BUDGET: Duration = Duration::from_millis(200);
/// Heap and stack limits of each engine: code that needs more runs in node.
const MEMORY_LIMIT: usize = 64 << 20;
const STACK_LIMIT: usize = 256 << 10;

/// The same steps as the node worker's `run` (`javascript_worker.js`): compile the body once as
/// `new Function('output', 'context', body)`, call it, and describe what it returned as
/// `{kind, value}` in JSON; a promise answers `pending` and is followed through a slot the job
/// loop fills. Anything else (a wrong return type) is `''`, which hands the code to node for
/// Node's message. The builtins it uses are taken before any user code runs, so code that
/// replaces `JSON.stringify` cannot forge an answer. Then the builtins Node 20 lacks are removed.
const PRELUDE: &str = r"
'use strict';
const functions = new Map();
const parse = JSON.parse;
const stringify = JSON.stringify;
const NewFunction = Function;
const resolve = Promise.resolve.bind(Promise);
const then = Function.prototype.call.bind(Promise.prototype.then);
const mapGet = Function.prototype.call.bind(Map.prototype.get);
const mapSet = Function.prototype.call.bind(Map.prototype.set);
const mapClear = Function.prototype.call.bind(Map.prototype.clear);
let compiled = 0;
const isGradingResult = (r) => typeof r === 'object' && r !== null && typeof r.pass === 'boolean' &&
  typeof r.score === 'number' && typeof r.reason === 'string';
const describe = (r) => typeof r === 'boolean' ? { kind: 'boolean', value: r }
  : typeof r === 'number' ? { kind: 'number', value: r }
  : isGradingResult(r) ? { kind: 'result', value: r } : undefined;
const answer = (r) => { const d = describe(r); return d === undefined ? '' : stringify(d); };
const pending = { settled: false, answer: '' };
const run = (body, input) => {
  let fn = mapGet(functions, body);
  if (!fn) {
    // Bodies written with a test's vars differ per test: keep the most recent ones only.
    if (compiled >= 1000) { mapClear(functions); compiled = 0; }
    fn = new NewFunction('output', 'context', body);
    mapSet(functions, body, fn);
    compiled += 1;
  }
  const { output, context } = parse(input);
  const result = fn(output, context);
  if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
    pending.settled = false;
    pending.answer = '';
    then(resolve(result), (v) => { pending.settled = true; pending.answer = answer(v); }, () => {});
    return 'pending';
  }
  return answer(result);
};
const settled = () => (pending.settled ? pending.answer : '');
const compiledCount = () => compiled;
const drop = (object, names) => { for (const name of names) { try { delete object[name]; } catch {} } };
const iteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
drop(iteratorPrototype, ['map', 'filter', 'take', 'drop', 'flatMap', 'reduce', 'toArray', 'forEach', 'some',
  'every', 'find']);
drop(globalThis, ['Iterator', 'DisposableStack', 'AsyncDisposableStack', 'SuppressedError', 'InternalError',
  'Float16Array', 'WeakRef', 'FinalizationRegistry']);
drop(Math, ['sumPrecise', 'f16round']);
drop(Error, ['isError', 'captureStackTrace']);
drop(Promise, ['try', 'withResolvers']);
drop(Object, ['groupBy']);
drop(Map, ['groupBy']);
drop(Array, ['fromAsync']);
drop(RegExp, ['escape']);
drop(JSON, ['rawJSON', 'isRawJSON']);
drop(Uint8Array, ['fromBase64', 'fromHex']);
drop(Uint8Array.prototype, ['toBase64', 'toHex', 'setFromBase64', 'setFromHex']);
drop(Map.prototype, ['getOrInsert', 'getOrInsertComputed']);
drop(WeakMap.prototype, ['getOrInsert', 'getOrInsertComputed']);
drop(ArrayBuffer.prototype, ['transfer', 'transferToFixedLength', 'detached']);
drop(Set.prototype, ['union', 'intersection', 'difference', 'symmetricDifference', 'isSubsetOf', 'isSupersetOf',
  'isDisjointFrom']);
drop(Array.prototype, ['group', 'groupToMap']);
// A builtin's source text as V8 writes it: `function max() { [native code] }`.
const callText = Function.prototype.call.bind(Function.prototype.toString);
Object.defineProperty(Function.prototype, 'toString', { writable: true, configurable: true,
  value: { toString() {
    const text = callText(this);
    const native = /^function (bound )?([^(]*)\(\) \{\n +\[native code\]\n\}$/.exec(text);
    return native ? (native[1] ? 'function () { [native code] }' : `function ${native[2]}() { [native code] }`) : text;
  } }.toString });
[run, settled, compiledCount];
";

/// Names whose meaning is Node's (its modules and globals, the web platform's, what prints,
/// timers), differs between engines (locales, dates, sorting with an inconsistent comparator,
/// `**` and `Math.pow` rounding, legacy `RegExp.$1`, stack traces, function sources, the
/// global object, the worker's third argument) or lets code see the engine's own limits
/// (`catch`, `finally`: an out-of-memory or stack error caught here would not happen in node).
/// Code that names any of them, even inside a string, runs in node.
const NODE_ONLY: &[&str] = &[
    "require",
    "import",
    "process",
    "Buffer",
    "global",
    "globalThis",
    "this",
    "module",
    "exports",
    "__dirname",
    "__filename",
    "console",
    "setTimeout",
    "setInterval",
    "setImmediate",
    "clearTimeout",
    "clearInterval",
    "queueMicrotask",
    "fetch",
    "Intl",
    "toLocaleString",
    "toLocaleDateString",
    "toLocaleTimeString",
    "toLocaleUpperCase",
    "toLocaleLowerCase",
    "localeCompare",
    "Date",
    "TextEncoder",
    "TextDecoder",
    "URL",
    "URLSearchParams",
    "structuredClone",
    "crypto",
    "atob",
    "btoa",
    "performance",
    "WebAssembly",
    "SharedArrayBuffer",
    "Atomics",
    "WeakRef",
    "FinalizationRegistry",
    "eval",
    "Function",
    "stack",
    "captureStackTrace",
    "prepareStackTrace",
    "stackTraceLimit",
    "groupBy",
    "fromAsync",
    "withResolvers",
    "union",
    "intersection",
    "difference",
    "symmetricDifference",
    "isSubsetOf",
    "isSupersetOf",
    "isDisjointFrom",
    "Iterator",
    "Float16Array",
    "f16round",
    "AbortController",
    "AbortSignal",
    "Blob",
    "Event",
    "EventTarget",
    "CustomEvent",
    "Response",
    "Request",
    "Headers",
    "FormData",
    "MessageChannel",
    "MessagePort",
    "BroadcastChannel",
    "ReadableStream",
    "WritableStream",
    "TransformStream",
    "CompressionStream",
    "DecompressionStream",
    "WebSocket",
    "navigator",
    "File",
    "DOMException",
    "Worker",
    "sort",
    "toSorted",
    "pow",
    "arguments",
    "catch",
    "finally",
    "Reflect",
    "getOwnPropertyNames",
    "getOwnPropertyDescriptor",
    "getOwnPropertyDescriptors",
    "source",
    "lastMatch",
    "Float64Array",
    "Float32Array",
    "DataView",
    "leftContext",
    "rightContext",
    "lastParen",
    "$1",
    "$2",
    "$3",
    "$4",
    "$5",
    "$6",
    "$7",
    "$8",
    "$9",
    "$_",
];

/// Whether `body` must run in node: it names something in [`NODE_ONLY`], uses `**`, turns a
/// number into text in another radix (`toString(2)`), or holds regular-expression syntax newer
/// than Node 20 (modifiers such as `(?i:…)`, a group name used twice).
pub fn needs_node(body: &str) -> bool {
    body.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .any(|word| NODE_ONLY.contains(&word))
        || body.contains("**")
        || body.contains("RegExp.input")
        || radix_to_string(body)
        || newer_regex_syntax(body)
}

/// `toString(` with an argument: digits in another radix are written differently by each engine.
fn radix_to_string(body: &str) -> bool {
    body.match_indices("toString(")
        .any(|(at, m)| !body[at + m.len()..].trim_start().starts_with(')'))
}

/// Regular-expression modifiers (`(?i:`, `(?-m:`) and group names used twice, which Node 20
/// rejects and this engine accepts.
fn newer_regex_syntax(body: &str) -> bool {
    let modifiers = body.match_indices("(?").any(|(at, _)| {
        body[at + 2..]
            .chars()
            .next()
            .is_some_and(|c| c == '-' || c.is_ascii_alphabetic())
    });
    let mut names: Vec<&str> = body
        .match_indices("(?<")
        .filter_map(|(at, _)| {
            let rest = &body[at + 3..];
            let end = rest.find('>')?;
            Some(&rest[..end]).filter(|name| !name.is_empty() && !name.starts_with(['=', '!']))
        })
        .collect();
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    modifiers || names.len() != count
}

/// This thread's engine, and the deadline its interrupt handler checks. Fields drop in
/// order: the prelude's functions, then their context, then the runtime that holds both.
struct Engine {
    /// The prelude's `run`, `settled` and `compiledCount`, kept out of the global object.
    functions: [rquickjs::Persistent<Function<'static>>; 3],
    context: Context,
    runtime: Runtime,
}

thread_local! {
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

impl Engine {
    fn new() -> Option<Self> {
        let runtime = Runtime::new().ok()?;
        runtime.set_memory_limit(MEMORY_LIMIT);
        runtime.set_max_stack_size(STACK_LIMIT);
        runtime.set_interrupt_handler(Some(Box::new(|| {
            DEADLINE.with(|d| d.get().is_some_and(|at| Instant::now() >= at))
        })));
        let context = Context::full(&runtime).ok()?;
        let functions = context
            .with(|cx| {
                let list: rquickjs::Array = cx.eval(PRELUDE)?;
                let at = |i: usize| list.get::<Function>(i).map(|f| rquickjs::Persistent::save(&cx, f));
                Ok::<_, rquickjs::Error>([at(0)?, at(1)?, at(2)?])
            })
            .ok()?;
        Some(Self {
            functions,
            context,
            runtime,
        })
    }

    /// Runs `body` and every promise job it queued, and answers `{kind, value}` as JSON text,
    /// or `None` for node to run it.
    fn run(&self, body: &str, input: &str) -> Option<String> {
        let first: String = self.context.with(|cx| {
            let run = self.functions[0].clone().restore(&cx).ok()?;
            run.call::<_, String>((body, input)).ok()
        })?;
        // Jobs the call queued run now, as node runs them before answering; one that throws,
        // loops or overruns hands the assertion to node.
        loop {
            match self.runtime.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => break,
                Err(_) => return None,
            }
        }
        match first.as_str() {
            "pending" => self.context.with(|cx| {
                let settled = self.functions[1].clone().restore(&cx).ok()?;
                settled.call::<_, String>(()).ok().filter(|answer| !answer.is_empty())
            }),
            "" => None,
            _ => Some(first),
        }
    }
}

/// Runs inline `body` with `input` (`{"output": …, "context": …}` as JSON text) in this
/// thread's engine and answers as the node worker answers (`{kind, value}`), or `None` when
/// node must run it: the code throws, returns something that is not a result, never settles,
/// or runs past [`BUDGET`]. The caller has checked [`needs_node`] (once, when the assertion
/// was read).
pub fn evaluate(body: &str, input: &str) -> Option<Value> {
    let text = ENGINE.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Engine::new();
        }
        let engine = slot.as_ref()?;
        DEADLINE.with(|d| d.set(Some(Instant::now() + BUDGET)));
        let answer = engine.run(body, input);
        DEADLINE.with(|d| d.set(None));
        if answer.is_none() {
            // Whatever the failed call left behind goes with its engine.
            *slot = None;
        }
        answer
    })?;
    crate::js::from_js_json(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What the grader does with inline code: node when it names what node must answer,
    /// else the engine.
    fn run(body: &str, input: &str) -> Option<Value> {
        if needs_node(body) { None } else { evaluate(body, input) }
    }

    fn input(output: &str) -> String {
        json!({"output": output, "context": {"vars": {"n": 3}, "prompt": "What is 2+2?", "config": {"limit": 5}}})
            .to_string()
    }

    #[test]
    fn inline_code_is_answered_as_the_node_worker_answers() {
        for (body, want) in [
            ("return output.includes('4')", json!({"kind": "boolean", "value": true})),
            (
                "return output.includes('5')",
                json!({"kind": "boolean", "value": false}),
            ),
            ("return output.length / 100", json!({"kind": "number", "value": 0.09})),
            (
                "return context.vars.n >= 3 && context.prompt.startsWith('What')",
                json!({"kind": "boolean", "value": true}),
            ),
            (
                "return output.length <= context.config.limit",
                json!({"kind": "boolean", "value": false}),
            ),
            ("return 0 / 0", json!({"kind": "number", "value": null})),
            (
                "return {pass: true, score: 0.7, reason: 'fine'}",
                json!({"kind": "result", "value": {"pass": true, "score": 0.7, "reason": "fine"}}),
            ),
            (
                "const n = output.split(' ').length; return n === 3",
                json!({"kind": "boolean", "value": true}),
            ),
            (
                "return Promise.resolve(output.endsWith('.'))",
                json!({"kind": "boolean", "value": true}),
            ),
            (
                "return (async () => { await null; return 0.5 })()",
                json!({"kind": "number", "value": 0.5}),
            ),
            (
                "return /(?<=is )\\d/.test(output)",
                json!({"kind": "boolean", "value": true}),
            ),
        ] {
            assert_eq!(run(body, &input("2+2 is 4.")), Some(want), "{body}");
        }
    }

    #[test]
    fn what_node_must_answer_is_handed_to_node() {
        for body in [
            // Node's own, or different between engines.
            "return require('fs').existsSync('x')",
            "return process.env.HOME !== undefined",
            "console.log(output); return true",
            "return new Date(output).getTime() > 0",
            "return output.localeCompare('a') > 0",
            "return Object.groupBy([1], (x) => x) !== undefined",
            // Errors and wrong returns: node gives the message.
            "return nope.x",
            "throw new Error('no')",
            "return 'text'",
            "return Promise.reject(new Error('no'))",
            "return new Promise(() => {})",
            // Past the budget, the memory or the stack.
            "while (true) {}",
            "const a = []; while (true) a.push('x'.repeat(1000)); return true",
            "const f = (n) => f(n + 1); return f(0)",
            "return (",
            // Promise jobs that loop, queued by a call that answered or by one that did not.
            "Promise.resolve().then(() => { while (true) {} });\nreturn 'not a result';",
            "Promise.resolve().then(() => { while (true) {} });\nreturn true;",
            "Promise.resolve().then(() => { while (true) {} });\nreturn Promise.resolve(true);",
            // Builtins newer than Node 20 are gone: the code throws here.
            "return [1, 2].values().toArray().length === 2",
            "return Math.sumPrecise([1, 2]) === 3",
            "return Promise.try(() => true)",
            "return new Set([1]).union(new Set([2])).size === 2",
        ] {
            let started = Instant::now();
            assert_eq!(run(body, &input("x")), None, "{body}");
            assert!(started.elapsed() < BUDGET * 5, "{body}: bounded by the budget");
        }
        // The engine still answers after every one of them.
        assert_eq!(
            run("return true", &input("x")),
            Some(json!({"kind": "boolean", "value": true}))
        );
    }

    /// Code cannot forge the engine's answer by replacing the builtins it uses; what it
    /// replaces stays replaced for later code, as in node, where every assertion shares one
    /// process.
    #[test]
    fn replaced_builtins_do_not_forge_answers() {
        let forged = "JSON.stringify = () => '{\"kind\":\"boolean\",\"value\":true}';\nreturn output === 'a';";
        assert_eq!(
            run(forged, &input("b")),
            Some(json!({"kind": "boolean", "value": false}))
        );
        assert_eq!(
            run("return output === 'c'", &input("b")),
            Some(json!({"kind": "boolean", "value": false}))
        );
        let patched = "Map.prototype.get = () => () => true;\nreturn output === 'a';";
        assert_eq!(
            run(patched, &input("b")),
            Some(json!({"kind": "boolean", "value": false}))
        );
        assert_eq!(
            run("return output === 'd'", &input("b")),
            Some(json!({"kind": "boolean", "value": false}))
        );
    }

    #[test]
    fn code_engines_may_answer_differently_runs_in_node() {
        for (body, node) in [
            ("return JSON.parse(output).sort((a, b) => a > b)[0] === 1", true),
            ("return Number(output) === 10 ** -5", true),
            ("return Math.pow(10, -5) === 0.00001", true),
            ("return /answer: (\\d+)/.test(output) && RegExp.$1 === '42'", true),
            ("return arguments.length === 2", true),
            ("try { return JSON.parse(output).ok } catch (e) { return false }", true),
            ("return (0.5).toString(3).length > 0", true),
            ("return (5).toString() === '5'", false),
            ("return /(?<y>\\d{4})-\\d\\d|\\d\\d\\/(?<y>\\d{4})/.test(output)", true),
            ("return /^(?i:hello) world$/.test(output)", true),
            (
                "return /(?<year>\\d{4})-(?<month>\\d\\d)/.test(output) && /(?=a)(?!b)(?<=c)(?<!d)/.test('x') === false",
                false,
            ),
            ("return typeof AbortController === 'function'", true),
            ("return Object.getOwnPropertyNames(Math).length > 0", true),
            ("return output.includes('processing') && output.length > 0", false),
        ] {
            assert_eq!(needs_node(body), node, "{body}");
        }
    }

    #[test]
    fn names_are_matched_as_whole_words() {
        assert!(needs_node("return process.exit()"));
        assert!(needs_node("return output === 'see the console'"));
        assert!(!needs_node("return output.includes('processing')"));
        assert!(!needs_node("const processed = 1; return processed > 0"));
    }

    /// Bodies that differ per test (written with its vars) do not pile up in the engine.
    #[test]
    fn many_distinct_bodies_are_answered_and_do_not_pile_up() {
        for i in 0..3000 {
            let body = format!("return output.length + {i} === {}", 3 + i);
            assert_eq!(
                run(&body, &input("abc")),
                Some(json!({"kind": "boolean", "value": true})),
                "{body}"
            );
        }
        let kept = ENGINE.with(|slot| {
            let slot = slot.borrow();
            let engine = slot.as_ref().expect("an engine");
            engine.context.with(|cx| {
                let count = engine.functions[2].clone().restore(&cx).expect("compiledCount");
                count.call::<_, usize>(()).unwrap_or(usize::MAX)
            })
        });
        assert!(kept <= 1000, "{kept} compiled bodies kept");
    }

    #[test]
    fn each_thread_has_its_own_engine() {
        let handles: Vec<_> = (0..4)
            .map(|i| std::thread::spawn(move || run(&format!("return output.length === {i}"), &input(&"x".repeat(i)))))
            .collect();
        for handle in handles {
            assert_eq!(
                handle.join().expect("thread"),
                Some(json!({"kind": "boolean", "value": true}))
            );
        }
    }
}
