//! Inline `javascript` assertions give node's answers whichever engine runs them
//! (`docs/promptfoo.md#javascript`): for each of several hundred expressions
//! (`data/js_expressions.txt`: numbers, strings, Unicode, regular expressions, JSON, sorting,
//! typed arrays, builtins old and new, function sources, async code), node works out its value
//! and writes an assertion that the expression has that value; agentv must pass every one.

use agentv_testkit::Project;
use serde_json::Value;

/// Writes one test per expression that node evaluates without throwing (what throws is handed
/// to node by the engine anyway), each asserting node's value of it.
const GENERATE: &str = r#"
import fs from 'fs';
const exprs = fs.readFileSync('js_expressions.txt', 'utf8').split('\n').filter(Boolean);
const output = 'hello world';
const canon = `const canon = (v) => { const t = typeof v; if (t === 'string') return 's:' + v; if (t === 'number') return 'n:' + (Object.is(v, -0) ? '-0' : String(v)); if (t === 'bigint') return 'b:' + String(v); if (t === 'symbol') return 'y:' + String(v); if (t === 'undefined') return 'u'; if (t === 'boolean') return 'bool:' + v; if (t === 'function') return 'f:' + String(v); if (v === null) return 'null'; return 'o:' + JSON.stringify(v) };`;
const body = (e, expected) => `return (async () => {\n${canon}\nconst v = canon(await (${e}));\nreturn {pass: v === ${expected}, score: v === ${expected} ? 1 : 0, reason: v};\n})()`;
let yaml = `prompts: [${JSON.stringify(output)}]\nproviders: [echo]\ntests:\n`;
let count = 0;
for (const [i, e] of exprs.entries()) {
  let expected;
  try {
    expected = (await new Function('output', 'context', 'process', body(e, "''"))(output, {}, process)).reason;
  } catch {
    continue;
  }
  const value = JSON.stringify(body(e, JSON.stringify(expected))).replace(/[\x7f-\x9f\ufeff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  yaml += `  - description: ${JSON.stringify(e)}\n    assert:\n      - type: javascript\n        value: ${value}\n`;
  count += 1;
}
fs.writeFileSync('promptfooconfig.yaml', yaml);
console.log(count);
"#;

#[test]
fn inline_javascript_gives_nodes_answer_for_hundreds_of_expressions() {
    if !agentv_testkit::toolchains::require("node", "JavaScript assertions") {
        return;
    }
    let p = Project::new()
        .file("js_expressions.txt", include_str!("data/js_expressions.txt"))
        .file("generate.mjs", GENERATE);
    let generated = std::process::Command::new("node")
        .arg("generate.mjs")
        .current_dir(p.path())
        .output()
        .expect("node runs");
    assert!(
        generated.status.success(),
        "{}",
        String::from_utf8_lossy(&generated.stderr)
    );
    let count: usize = String::from_utf8_lossy(&generated.stdout)
        .trim()
        .parse()
        .expect("a count");
    assert!(count > 700, "{count} expressions");
    p.run(&["eval", "promptfooconfig.yaml", "--out", "out.json", "--workers", "8"])
        .code(0);
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join("out.json")).expect("out.json")).expect("JSON");
    let rows = doc["results"]["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), count);
    let differ: Vec<String> = rows
        .iter()
        .filter(|r| r["success"] != Value::Bool(true))
        .map(|r| {
            let reason = &r["gradingResult"]["componentResults"][0]["reason"];
            format!("{} => {reason}", r["testCase"]["description"])
        })
        .collect();
    assert!(
        differ.is_empty(),
        "{} differ from node:\n{}",
        differ.len(),
        differ.join("\n")
    );
}
