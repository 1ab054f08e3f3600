//! An embedded JavaScript engine (QuickJS) for inline `javascript` assertions that need nothing
//! from Node (`docs/promptfoo.md#javascript`).
//!
//! Why: a node worker costs ~40 MB and a pipe round trip per assertion, which is most of what a
//! large promptfoo config costs agentv; an expression such as `output.includes('4')` costs
//! microseconds here. Node stays the authority: code goes to the warm node workers when it
//! names anything only Node has or that engines may do differently ([`needs_node`]), and
//! whenever it throws, is still pending after its promise jobs ran, or runs past its budget
//! here ([`run`] answers `None`), so every error message and edge case is Node's.
//!
//! Each thread keeps its own engine (a QuickJS runtime is single-threaded); each distinct
//! body is compiled once per engine, as the node worker compiles it once.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use rquickjs::{Context, Function, Runtime};
use serde_json::Value;

/// The most one assertion may run here before it is handed to node, which applies the run's
/// own timeout.
const BUDGET: Duration = Duration::from_millis(200);
/// Heap and stack limits of each engine: code that needs more runs in node.
const MEMORY_LIMIT: usize = 64 << 20;
const STACK_LIMIT: usize = 256 << 10;

/// The same steps as the node worker's `run` (`javascript_worker.js`): compile the body once as
/// `new Function('output', 'context', body)`, call it, and describe what it returned as
/// `{kind, value}` in JSON; a promise answers `pending` and is followed through a slot the job
/// loop fills. Anything else (a wrong return type) is `''`, which hands the code to node for
/// Node's message.
const PRELUDE: &str = r"
'use strict';
const functions = new Map();
const isGradingResult = (r) => typeof r === 'object' && r !== null && typeof r.pass === 'boolean' &&
  typeof r.score === 'number' && typeof r.reason === 'string';
const describe = (r) => typeof r === 'boolean' ? { kind: 'boolean', value: r }
  : typeof r === 'number' ? { kind: 'number', value: r }
  : isGradingResult(r) ? { kind: 'result', value: r } : undefined;
const answer = (r) => { const d = describe(r); return d === undefined ? '' : JSON.stringify(d); };
const pending = { settled: false, answer: '' };
globalThis.__agentvRun = (body, input) => {
  let fn = functions.get(body);
  if (!fn) {
    // Bodies written with a test's vars differ per test: keep the most recent ones only.
    if (functions.size >= 1000) functions.clear();
    fn = new Function('output', 'context', body);
    functions.set(body, fn);
  }
  const { output, context } = JSON.parse(input);
  const result = fn(output, context);
  if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
    pending.settled = false;
    pending.answer = '';
    Promise.resolve(result).then((v) => { pending.settled = true; pending.answer = answer(v); }, () => {});
    return 'pending';
  }
  return answer(result);
};
globalThis.__agentvSettled = () => (pending.settled ? pending.answer : '');
";

/// Names whose meaning is Node's (its modules and globals, what prints, timers), differs
/// between engines (locales, dates, stack traces, the global object) or is newer than the
/// Node versions promptfoo supports. Code that names any of them, even inside a string,
/// runs in node.
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
    "__agentvRun",
    "__agentvSettled",
];

/// Whether `body` must run in node: it names something in [`NODE_ONLY`].
pub fn needs_node(body: &str) -> bool {
    body.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .any(|word| NODE_ONLY.contains(&word))
}

/// This thread's engine, and the deadline its interrupt handler checks.
struct Engine {
    runtime: Runtime,
    context: Context,
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
        context.with(|cx| cx.eval::<(), _>(PRELUDE)).ok()?;
        Some(Self { runtime, context })
    }

    /// Runs `body` and answers `{kind, value}` as JSON text, or `None` for node to run it.
    fn run(&self, body: &str, input: &str) -> Option<String> {
        let first: String = self.context.with(|cx| {
            let run: Function = cx.globals().get("__agentvRun").ok()?;
            run.call::<_, String>((body, input)).ok()
        })?;
        match first.as_str() {
            "pending" => self.settle(),
            "" => None,
            _ => Some(first),
        }
    }

    /// Runs the promise jobs the call left, then reads what its promise settled to.
    fn settle(&self) -> Option<String> {
        loop {
            match self.runtime.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => break,
                Err(_) => return None,
            }
        }
        self.context.with(|cx| {
            let settled: Function = cx.globals().get("__agentvSettled").ok()?;
            settled.call::<_, String>(()).ok().filter(|answer| !answer.is_empty())
        })
    }
}

/// Runs inline `body` with `input` (`{"output": …, "context": …}` as JSON text) in this
/// thread's engine and answers as the node worker answers (`{kind, value}`), or `None` when
/// node must run it: the code names what only node has, throws, returns something that is
/// not a result, never settles, or runs past [`BUDGET`].
pub fn run(body: &str, input: &str) -> Option<Value> {
    if needs_node(body) {
        return None;
    }
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
            // A throw leaves nothing pending that matters; drop what the failed call queued.
            while let Ok(true) = engine.runtime.execute_pending_job() {}
        }
        answer
    })?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        ] {
            assert_eq!(run(body, &input("x")), None, "{body}");
        }
        // The engine still answers after every one of them.
        assert_eq!(
            run("return true", &input("x")),
            Some(json!({"kind": "boolean", "value": true}))
        );
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
            engine
                .context
                .with(|cx| cx.eval::<usize, _>("functions.size").unwrap_or(usize::MAX))
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
