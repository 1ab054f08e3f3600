//! promptfoo providers and config options: choosing providers with `--target`, errored rows
//! in promptfoo's JSON output, script and HTTP providers against fake servers, transforms,
//! `evaluateOptions` and per-provider prompts.

#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test reads as one scenario, its table and checks in one place"
)]

use agentv_testkit::Project;

use super::promptfoo_configs::{rows, statuses};
use serde_json::{Value, json};

const TWO_PROVIDERS: &str = r#"prompts: ['Hi {{name}}']
providers:
  - echo
  - id: 'exec:echo shouted'
    label: shout
tests:
  - vars: {name: Bob}
    assert: [{type: contains, value: Bob}]
  - vars: {name: Ann}
    assert: [{type: no-such-type}]
"#;

#[test]
fn target_on_a_promptfoo_config_selects_providers_by_id_or_label() {
    let p = Project::new().file("promptfooconfig.yaml", TWO_PROVIDERS);
    for chosen in ["shout", "exec:echo shouted"] {
        p.run(&["eval", "promptfooconfig.yaml", "--target", chosen, "--out", "out.json"])
            .code(3);
        assert_eq!(
            statuses(&p, "out.jsonl"),
            vec![
                (json!("test-2"), json!("shout"), json!("invalid")),
                (json!("test-1"), json!("shout"), json!("ok")),
            ],
            "--target {chosen}"
        );
    }
    p.run(&[
        "eval",
        "promptfooconfig.yaml",
        "--target",
        "echo",
        "--target",
        "shout",
        "--out",
        "both.jsonl",
    ])
    .code(3);
    assert_eq!(p.results("both.jsonl").len(), 4);
    p.run(&["eval", "promptfooconfig.yaml", "--target", "nope"])
        .code(2)
        .stderr_has("unknown target `nope`")
        .stderr_has("echo, shout");
}

#[test]
fn an_invalid_promptfoo_row_is_an_errored_row_of_the_json_output() {
    let p = Project::new().file("promptfooconfig.yaml", TWO_PROVIDERS);
    p.run(&["eval", "promptfooconfig.yaml", "--out", "out.json"]).code(3);
    let rows = rows(&p, "out.json");
    assert_eq!(rows.len(), 4, "{rows:?}");
    let errored: Vec<&Value> = rows.iter().filter(|r| r["testIdx"] == 1).collect();
    assert_eq!(errored.len(), 2);
    for row in errored {
        assert_eq!(row["success"], false);
        assert_eq!(row["failureReason"], 2, "promptfoo's ERROR reason");
        assert_eq!(row["score"], 0.0);
        assert_eq!(row["vars"], json!({"name": "Ann"}));
        let error = row["error"].as_str().unwrap_or_default();
        assert!(error.contains("no-such-type"), "{error}");
    }
}

const PYTHON_PROVIDER: &str = r#"import os

def call_api(prompt, options, context):
    suffix = options["config"]["suffix"]
    return {
        "output": "py %s %s%s pid=%d" % (prompt, context["vars"]["name"], suffix, os.getpid()),
        "tokenUsage": {"prompt": 4, "completion": 3, "total": 7},
    }

async def failing(prompt, options, context):
    return {"error": "backend down"}
"#;

const JS_PROVIDER: &str = r#"class Shouter {
  constructor(options) { this.config = options.config; }
  id() { return 'shouter'; }
  async callApi(prompt, context) {
    return { output: `js ${prompt.toUpperCase()} ${context.vars.name}${this.config.suffix} pid=${process.pid}` };
  }
}
module.exports = Shouter;
"#;

fn pids(rows: &[Value], label: &str) -> Vec<String> {
    let mut pids: Vec<String> = rows
        .iter()
        .filter(|r| r["provider"]["label"] == label)
        .filter_map(|r| r["response"]["output"].as_str())
        .filter_map(|o| o.rsplit_once("pid=").map(|(_, pid)| pid.to_owned()))
        .collect();
    pids.sort();
    pids.dedup();
    pids
}

#[test]
fn python_and_javascript_providers_answer_from_warm_workers() {
    if !agentv_testkit::toolchains::require("node", "the javascript provider")
        || !agentv_testkit::toolchains::require("python3", "the python provider")
    {
        return;
    }
    let p = Project::new()
        .file("provider.py", PYTHON_PROVIDER)
        .file("shout.js", JS_PROVIDER)
        .file(
            "promptfooconfig.yaml",
            r#"prompts: ['hi {{name}}']
providers:
  - id: python:provider.py
    label: py
    config: {suffix: '!'}
  - id: file://shout.js
    label: js
    config: {suffix: '?'}
  - id: python:provider.py:failing
    label: down
tests:
  - vars: {name: Bob}
    assert: [{type: contains, value: 'Bob'}]
  - vars: {name: Ann}
    assert: [{type: contains, value: 'Ann'}]
  - vars: {name: Eve}
    assert: [{type: contains, value: 'Eve'}]
"#,
        );
    // The failing provider's rows could not run: incomplete.
    p.run(&["eval", "promptfooconfig.yaml", "--workers", "1", "--out", "out.json"])
        .code(3);
    let rows = rows(&p, "out.json");
    assert_eq!(rows.len(), 9, "{rows:?}");
    let out = |label: &str, test: u64| {
        rows.iter()
            .find(|r| r["provider"]["label"] == label && r["testIdx"] == test)
            .map(|r| {
                (
                    r["response"]["output"].as_str().unwrap_or_default().to_owned(),
                    r["success"].clone(),
                )
            })
            .unwrap_or_default()
    };
    assert!(out("py", 0).0.starts_with("py hi Bob Bob! pid="), "{:?}", out("py", 0));
    assert!(out("js", 1).0.starts_with("js HI ANN Ann? pid="), "{:?}", out("js", 1));
    assert_eq!(out("py", 2).1, true);
    // One warm process per language served every row (one worker).
    assert_eq!(pids(&rows, "py").len(), 1, "{rows:?}");
    assert_eq!(pids(&rows, "js").len(), 1, "{rows:?}");
    let down: Vec<&Value> = rows.iter().filter(|r| r["provider"]["label"] == "down").collect();
    assert_eq!(down.len(), 3);
    for row in down {
        assert_eq!(row["success"], false);
        assert_eq!(row["failureReason"], 2);
        assert!(
            row["error"].as_str().unwrap_or_default().contains("backend down"),
            "{row}"
        );
    }
    let records = p.results("out.jsonl");
    let py = records.iter().find(|r| r["target"] == "py").expect("a py record");
    assert_eq!(py["token_usage"]["input"], 4, "{py}");
}

#[tokio::test]
async fn http_webhook_and_google_providers_call_their_servers() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, ResponseTemplate};
    if !agentv_testkit::toolchains::require("node", "the JavaScript transforms") {
        return;
    }
    let server = agentv_testkit::llm::FakeLlm::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"output": "hooked"})))
        .with_priority(1)
        .mount(server.server())
        .await;
    let base = server.uri();
    let secret = "tok-'\"$(secret)";
    let p = Project::new().file(
        "promptfooconfig.yaml",
        &format!(
            r#"prompts: ['Capital of {{{{country}}}}?']
providers:
  - id: http
    label: plain
    config:
      url: {base}/v1/chat/completions
      method: POST
      headers: {{Authorization: 'Bearer {{{{ env.HTTP_TOKEN }}}}'}}
      body:
        model: fake
        messages: [{{role: user, content: '{{{{prompt}}}} ({{{{country}}}})'}}]
      transformResponse: json.choices[0].message.content
  - id: {base}/v1/chat/completions
    label: shaped
    config:
      method: post
      body: {{model: fake, messages: [{{role: user, content: '{{{{prompt}}}}'}}]}}
      transformRequest: prompt + ' Answer briefly.'
      transformResponse: '(json, text) => json.choices[0].message.content.toUpperCase()'
  - webhook:{base}/hook
  - id: http
    label: get
    config:
      url: '{base}/v1/chat/completions'
      queryParams: {{q: '{{{{country}}}}'}}
      body: {{ignored: true}}
      transformResponse: json.choices[0].message.content
  - id: google:gemini-fake
    config: {{apiBaseUrl: '{base}', apiKey: '{{{{ env.HTTP_TOKEN }}}}'}}
tests:
  - vars: {{country: France}}
    assert: [{{type: icontains, value: '4'}}]
"#
        ),
    );
    let mut cmd = p.command(&["eval", "promptfooconfig.yaml", "--out", "out.json"]);
    cmd.env("HTTP_TOKEN", secret);
    let run = p.output_async(cmd).await;
    // The webhook's answer has no 4: that row fails.
    run.code(1);
    let rows = rows(&p, "out.json");
    let outputs: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            let label = r["provider"]["label"].as_str().unwrap_or_default();
            let name = if label.is_empty() {
                r["provider"]["id"].as_str().unwrap_or_default()
            } else {
                label
            };
            (
                name.to_owned(),
                r["response"]["output"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        outputs,
        vec![
            ("plain".to_owned(), "2+2 is 4.".to_owned()),
            ("shaped".to_owned(), "2+2 IS 4.".to_owned()),
            (format!("webhook:{base}/hook"), "hooked".to_owned()),
            ("get".to_owned(), "2+2 is 4.".to_owned()),
            ("google:gemini-fake".to_owned(), "2+2 is 4.".to_owned()),
        ]
    );
    let sent = server.requests().await;
    let bodies: Vec<(String, Value)> = sent
        .iter()
        .map(|r| {
            (
                r.url.path().to_owned(),
                serde_json::from_slice(&r.body).unwrap_or(Value::Null),
            )
        })
        .collect();
    let plain = sent
        .iter()
        .find(|r| r.headers.get("authorization").is_some())
        .expect("the plain provider's request");
    assert_eq!(
        plain.headers.get("authorization").and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {secret}").as_str())
    );
    let contents: Vec<&str> = bodies
        .iter()
        .filter_map(|(_, b)| b.pointer("/messages/0/content").and_then(Value::as_str))
        .collect();
    assert!(contents.contains(&"Capital of France? (France)"), "{bodies:?}");
    assert!(contents.contains(&"Capital of France? Answer briefly."), "{bodies:?}");
    // Without `method`, promptfoo's default: a GET, without a body, the query rendered.
    let get = sent
        .iter()
        .find(|r| r.method.as_str() == "GET")
        .expect("the GET provider's call");
    assert!(get.body.is_empty());
    assert_eq!(get.url.query(), Some("q=France"));
    let hook = bodies.iter().find(|(p, _)| p == "/hook").expect("webhook call");
    assert_eq!(hook.1, json!({"prompt": "Capital of France?"}));
    assert!(
        bodies.iter().any(|(p, _)| p.contains("gemini-fake:generateContent")),
        "{bodies:?}"
    );
    for file in agentv_testkit::walk(p.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap_or_default()).into_owned();
        assert!(!text.contains(secret), "{} holds the token", file.display());
    }
}

#[test]
fn test_options_transform_prefix_and_suffix_apply_as_in_promptfoo() {
    if !agentv_testkit::toolchains::require("node", "the output transforms") {
        return;
    }
    let p = Project::new()
        .file(
            "shout.js",
            "module.exports = (output, context) => output.toUpperCase() + ' ' + context.vars.name;\n",
        )
        .file(
            "promptfooconfig.yaml",
            r#"prompts: ['hi {{name}}']
providers: [echo]
defaultTest:
  options: {prefix: '<', suffix: '>', transform: 'output + "!"'}
tests:
  - vars: {name: Bob}
    assert: [{type: equals, value: '<hi Bob>!'}]
  - vars: {name: Ann}
    options:
      transform: |
        const words = output.split(' ');
        return words.length + ':' + context.vars.name;
    assert: [{type: equals, value: '2:Ann'}]
  - vars: {name: Eve}
    options: {transform: 'file://shout.js', prefix: ''}
    assert: [{type: equals, value: 'HI EVE> Eve'}]
  - vars: {name: Zed}
    options: {transform: 'output.nope.boom'}
"#,
        );
    // The last transform throws: its row is an error.
    p.run(&["eval", "promptfooconfig.yaml", "--out", "out.json"]).code(3);
    let rows = rows(&p, "out.json");
    let got: Vec<(Value, Value)> = rows
        .iter()
        .map(|r| (r["response"]["output"].clone(), r["success"].clone()))
        .collect();
    assert_eq!(got[0], (json!("<hi Bob>!"), json!(true)), "{rows:?}");
    assert_eq!(got[1], (json!("2:Ann"), json!(true)), "{rows:?}");
    assert_eq!(got[2], (json!("HI EVE> Eve"), json!(true)), "{rows:?}");
    assert_eq!(rows[3]["success"], false);
    let error = rows[3]["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("Error in output transform:") && error.contains("boom"),
        "{error}"
    );
}

/// A test's transform runs in a node worker held for the whole run: one process serves every
/// row, where a pool taken for one call and dropped would start a process per row.
#[test]
fn output_transforms_of_every_row_run_in_one_warm_worker() {
    if !agentv_testkit::toolchains::require("node", "the output transforms") {
        return;
    }
    let tests: String = (0..6)
        .map(|i| format!("  - vars: {{name: n{i}}}\n    assert: [{{type: contains, value: n{i}}}]\n"))
        .collect();
    let p = Project::new().file(
        "promptfooconfig.yaml",
        &format!(
            "prompts: ['hi {{{{name}}}}']\nproviders: [echo]\ndefaultTest:\n  options: {{transform: \"output + ' pid=' + process.pid\"}}\ntests:\n{tests}"
        ),
    );
    p.run(&["eval", "promptfooconfig.yaml", "--workers", "1", "--out", "out.json"])
        .code(0);
    let rows = rows(&p, "out.json");
    assert_eq!(rows.len(), 6, "{rows:?}");
    let pids: std::collections::BTreeSet<&str> = rows
        .iter()
        .filter_map(|r| {
            r["response"]["output"]
                .as_str()?
                .rsplit_once(" pid=")
                .map(|(_, pid)| pid)
        })
        .collect();
    assert_eq!(pids.len(), 1, "one node process for every row: {rows:?}");
}

#[test]
fn evaluate_options_repeat_and_test_globs_shape_the_rows() {
    let p = Project::new()
        .file("tests/a.yaml", "- vars: {name: Bob}\n")
        .file("tests/b.yaml", "- vars: {name: Ann}\n- vars: {name: Eve}\n")
        .file("tests/skip.txt", "not tests")
        .file("more.csv", "name\nZed\n")
        .file(
            "promptfooconfig.yaml",
            r#"prompts: ['hi {{name}}']
providers: [echo]
evaluateOptions: {repeat: 2, maxConcurrency: 2, delay: 1}
defaultTest:
  assert: [{type: contains, value: '{{name}}'}]
tests:
  - file://tests/*.yaml
  - file://*.csv
"#,
        );
    p.run(&["eval", "promptfooconfig.yaml", "--out", "r.jsonl"]).code(0);
    let records = p.results("r.jsonl");
    let mut names: Vec<String> = records
        .iter()
        .map(|r| {
            r["metadata"]["promptfoo"]["vars"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["Ann", "Ann", "Bob", "Bob", "Eve", "Eve", "Zed", "Zed"],
        "each test twice"
    );
    assert_eq!(records[0]["metadata"]["promptfoo"]["delay_ms"], 1);
    // `--repeat` wins over the config's.
    p.run(&["eval", "promptfooconfig.yaml", "--repeat", "3", "--out", "r3.jsonl"])
        .code(0);
    assert_eq!(p.results("r3.jsonl").len(), 12);
    let bad = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: [hi]\nproviders: [echo]\nevaluateOptions: {repeat: -1}\ntests: [{vars: {}}]\n",
    );
    bad.run(&["eval", "promptfooconfig.yaml"])
        .code(2)
        .stderr_has("`evaluateOptions.repeat` must be a whole number above 0");
    let no_match = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: [hi]\nproviders: [echo]\ntests: ['file://none/*.yaml', {vars: {}}]\n",
    );
    no_match
        .run(&["eval", "promptfooconfig.yaml"])
        .code(0)
        .stderr_has("warning: `file://none/*.yaml` matches no file");
}

#[test]
fn a_config_key_agentv_cannot_honour_stops_the_run() {
    let p = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: [hi]\nproviders: [echo]\nredteam: {}\ntests: [{vars: {}}]\n",
    );
    p.run(&["eval", "promptfooconfig.yaml"])
        .code(2)
        .stderr_has("`redteam` in a promptfoo config is not supported by agentv yet");
}

#[test]
fn per_provider_prompts_choose_the_rows_each_provider_runs() {
    let p = Project::new().file("p.txt", "One {{name}}\n---\nTwo {{name}}\n").file(
        "promptfooconfig.yaml",
        r#"prompts:
  - {raw: 'Hi {{name}}', label: a}
  - {raw: 'Yo {{name}}', label: b}
  - file://p.txt
  - {raw: 'Unused {{name}}', label: z}
providers:
  - id: echo
    label: only-a
    prompts: [a]
  - id: echo
    label: file-group
    prompts: ['p.txt:*']
  - id: echo
    label: by-wildcard
    prompts: ['a*', 'p.txt']
  - id: echo
    label: none
    prompts: [no-such-prompt]
tests:
  - vars: {name: Bob}
    assert: [{type: contains, value: Bob}]
  - vars: {name: Ann}
    assert: [{type: contains, value: Ann}]
"#,
    );
    p.run(&["eval", "promptfooconfig.yaml", "--out", "out.json"]).code(0);
    let mut got: Vec<(String, String)> = p
        .results("out.jsonl")
        .iter()
        .map(|r| {
            (
                r["eval_id"].as_str().unwrap_or_default().to_owned(),
                r["target"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    got.sort();
    let mut want: Vec<(String, String)> = Vec::new();
    for test in 1..=2 {
        let row = |prompt: u32, target: &str| (format!("test-{test}-prompt-{prompt}"), target.to_owned());
        want.extend([
            row(1, "only-a"),
            row(1, "by-wildcard"),
            row(3, "file-group"),
            row(3, "by-wildcard"),
            row(4, "file-group"),
            row(4, "by-wildcard"),
        ]);
    }
    want.sort();
    assert_eq!(got, want, "`b` and `z` run on no provider; `none` runs nothing");
    // promptfoo numbers the (provider, prompt) pairs each provider runs, providers outermost.
    let mut idx: Vec<(String, String, u64)> = rows(&p, "out.json")
        .iter()
        .filter(|r| r["testIdx"] == 0)
        .map(|r| {
            (
                r["provider"]["label"].as_str().unwrap_or_default().to_owned(),
                r["response"]["output"].as_str().unwrap_or_default().to_owned(),
                r["promptIdx"].as_u64().unwrap_or(99),
            )
        })
        .collect();
    idx.sort_by_key(|r| r.2);
    let idx: Vec<(&str, &str, u64)> = idx.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), *c)).collect();
    assert_eq!(
        idx,
        vec![
            ("only-a", "Hi Bob", 0),
            ("file-group", "One Bob", 1),
            ("file-group", "Two Bob", 2),
            ("by-wildcard", "Hi Bob", 3),
            ("by-wildcard", "One Bob", 4),
            ("by-wildcard", "Two Bob", 5),
        ]
    );
}

#[test]
fn per_provider_prompts_that_are_not_a_list_of_names_stop_the_run() {
    let p = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: [{raw: hi, label: a}]\nproviders:\n  - id: echo\n    prompts: {a: 1}\ntests: [{vars: {}}]\n",
    );
    p.run(&["eval", "promptfooconfig.yaml"])
        .code(2)
        .stderr_has("`prompts` of provider `echo` must be a list of prompt labels or ids");
}

#[tokio::test]
async fn openai_config_keys_reach_the_request_body() {
    let server = agentv_testkit::llm::FakeLlm::start().await;
    let p = Project::new().file(
        "promptfooconfig.yaml",
        &format!(
            r#"prompts: ['Weather in {{{{city}}}}?']
providers:
  - id: openai:chat:gpt-fake
    config:
      apiBaseUrl: {base}/v1
      apiKey: sk-not-a-real-key-123
      top_p: 0.5
      seed: 7
      stop: ['END']
      response_format: {{type: json_object}}
      passthrough: {{seed: 8, service_tier: flex}}
      tools:
        - type: function
          function:
            name: get_weather
            parameters: {{type: object, properties: {{city: {{type: string}}}}, required: [city]}}
      tool_choice: auto
tests:
  - vars: {{city: Oslo}}
"#,
            base = server.uri()
        ),
    );
    p.output_async(p.command(&["eval", "promptfooconfig.yaml", "--out", "out.json"]))
        .await
        .code(0);
    let sent = server.requests().await;
    assert_eq!(sent.len(), 1, "one call, as promptfoo makes");
    let body: Value = serde_json::from_slice(&sent[0].body).expect("json body");
    assert_eq!(body["top_p"], 0.5);
    assert_eq!(body["seed"], 8, "passthrough wins");
    assert_eq!(body["stop"], json!(["END"]));
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    assert_eq!(body["service_tier"], "flex");
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(body["tool_choice"], "auto");
}

#[tokio::test]
async fn openai_responses_provider_speaks_the_responses_api() {
    use agentv_testkit::llm::{FakeLlm, Script};
    let script = r#"
- when: "weather in Oslo"
  steps:
    - calls: [{name: get_weather, arguments: {city: Oslo}}]
"#;
    let server = FakeLlm::builder()
        .script(Script::parse(script).expect("script"))
        .answer("It is sunny.")
        .start()
        .await;
    let secret = "sk-resp-'\"$(x)";
    let p = Project::new().file(
        "promptfooconfig.yaml",
        &format!(
            r#"prompts: ['What is the weather in {{{{city}}}}?']
providers:
  - id: openai:responses:gpt-fake
    config:
      apiBaseUrl: {base}/v1
      apiKey: '{{{{ env.RESP_KEY }}}}'
      instructions: Answer in one line.
      max_output_tokens: 50
      reasoning_effort: low
      response_format:
        type: json_schema
        json_schema: {{name: weather, schema: {{type: object}}}}
      tools:
        - type: function
          name: get_weather
          parameters: {{type: object, properties: {{city: {{type: string}}}}, required: [city]}}
      tool_choice: auto
tests:
  - vars: {{city: Oslo}}
  - vars: {{city: Rome}}
    assert: [{{type: contains, value: sunny}}]
"#,
            base = server.uri()
        ),
    );
    let mut cmd = p.command(&["eval", "promptfooconfig.yaml", "--out", "out.json"]);
    cmd.env("RESP_KEY", secret);
    p.output_async(cmd).await.code(0);
    let sent = server.requests().await;
    assert_eq!(sent.len(), 2, "one call per row, as promptfoo makes");
    for request in &sent {
        assert_eq!(request.url.path(), "/v1/responses");
        assert_eq!(
            request.headers.get("authorization").and_then(|v| v.to_str().ok()),
            Some(format!("Bearer {secret}").as_str())
        );
    }
    let body: Value = serde_json::from_slice(&sent[0].body).expect("json body");
    assert_eq!(body["model"], "gpt-fake");
    assert!(
        body["input"]
            .as_str()
            .is_some_and(|i| i.starts_with("What is the weather in ")),
        "{body}"
    );
    assert_eq!(body["instructions"], "Answer in one line.");
    assert_eq!(body["max_output_tokens"], 50);
    assert_eq!(body["reasoning"], json!({"effort": "low"}));
    assert_eq!(
        body["text"],
        json!({"format": {"type": "json_schema", "name": "weather", "schema": {"type": "object"}, "strict": true}})
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}])
    );
    assert_eq!(body["tool_choice"], "auto");
    assert!(body.get("messages").is_none() && body.get("response_format").is_none());
    let records = p.results("out.jsonl");
    let oslo = records.iter().find(|r| r["eval_id"] == "test-1").expect("the Oslo row");
    let calls: Vec<&Value> = oslo["output_messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(calls.len(), 1, "{oslo}");
    assert_eq!(calls[0]["tool"], "get_weather");
    assert_eq!(calls[0]["input"], json!({"city": "Oslo"}));
    let traced: Vec<&Value> = oslo["trace"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["type"] == "tool_call")
        .collect();
    assert_eq!(traced.len(), 1, "the call is in the trace");
    assert_eq!(
        (&traced[0]["name"], &traced[0]["id"]),
        (&json!("get_weather"), &json!("call_0_0"))
    );
    let rome = records.iter().find(|r| r["eval_id"] == "test-2").expect("the Rome row");
    assert_eq!(
        rome["token_usage"]["input"].as_u64().map(|n| n > 0),
        Some(true),
        "{rome}"
    );
    for file in agentv_testkit::walk(p.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap_or_default()).into_owned();
        assert!(!text.contains(secret), "{} holds the key", file.display());
    }
}

#[tokio::test]
async fn vertex_providers_call_generate_content_by_api_key_or_access_token() {
    let server = agentv_testkit::llm::FakeLlm::start().await;
    let key = "AQ.vertex-'\"$(key)";
    let token = "ya29.token-'\"$(tok)";
    let p = Project::new().file(
        "promptfooconfig.yaml",
        &format!(
            r#"prompts: ['Capital of {{{{country}}}}?']
providers:
  - id: vertex:gemini-2.5-flash
    label: express
    config: {{apiBaseUrl: '{base}', apiKey: '{{{{ env.VKEY }}}}', generationConfig: {{temperature: 0.2, maxOutputTokens: 40}}}}
  - id: vertex:chat:gemini-2.5-pro
    label: oauth
    config: {{apiBaseUrl: '{base}', projectId: proj-1, region: europe-west4, apiVersion: v1beta1}}
tests:
  - vars: {{country: France}}
    assert: [{{type: icontains, value: '4'}}]
"#,
            base = server.uri()
        ),
    );
    let mut cmd = p.command(&["eval", "promptfooconfig.yaml", "--out", "out.json"]);
    cmd.env("VKEY", key).env("VERTEX_ACCESS_TOKEN", token);
    cmd.env_remove("VERTEX_API_KEY").env_remove("GOOGLE_API_KEY");
    p.output_async(cmd).await.code(0);
    let sent = server.requests().await;
    let express = sent
        .iter()
        .find(|r| r.headers.get("x-goog-api-key").is_some())
        .expect("the express-mode call");
    assert_eq!(
        express.url.path(),
        "/v1/publishers/google/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(
        express.headers.get("x-goog-api-key").and_then(|v| v.to_str().ok()),
        Some(key)
    );
    let body: Value = serde_json::from_slice(&express.body).expect("json");
    assert_eq!(
        body["generationConfig"],
        json!({"temperature": 0.2, "maxOutputTokens": 40})
    );
    assert_eq!(body["contents"][0]["parts"][0]["text"], "Capital of France?");
    let oauth = sent
        .iter()
        .find(|r| r.headers.get("authorization").is_some())
        .expect("the access-token call");
    assert_eq!(
        oauth.url.path(),
        "/v1beta1/projects/proj-1/locations/europe-west4/publishers/google/models/gemini-2.5-pro:generateContent"
    );
    assert_eq!(
        oauth.headers.get("authorization").and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {token}").as_str())
    );
    assert_eq!(sent.len(), 2);
    let outputs: Vec<String> = rows(&p, "out.json")
        .iter()
        .map(|r| r["response"]["output"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(outputs, ["2+2 is 4.", "2+2 is 4."]);
    for file in agentv_testkit::walk(p.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap_or_default()).into_owned();
        assert!(
            !text.contains(key) && !text.contains(token),
            "{} holds a credential",
            file.display()
        );
    }
}

/// A service-account key (in the config, or as the application default credentials) gives
/// the access token: a signed JWT exchanged at the key's token endpoint, once for the run.
#[tokio::test]
async fn vertex_providers_get_their_token_from_a_service_account() {
    use agentv_testkit::google::{self, TokenEndpoint};
    let server = agentv_testkit::llm::FakeLlm::start().await;
    let endpoint = TokenEndpoint::start().await;
    let key = google::service_account(&endpoint.uri(), "sa-proj").to_string();
    let config = |auth: &str| {
        format!(
            "prompts: ['Capital of {{{{country}}}}?']\nproviders:\n  - id: vertex:gemini-2.5-flash\n    config: {{apiBaseUrl: '{}', region: us-east5{auth}}}\n\
             tests:\n  - vars: {{country: France}}\n  - vars: {{country: Japan}}\n",
            server.uri()
        )
    };
    for (auth, adc) in [(", keyFilename: keys/sa.json", false), ("", true)] {
        let p = Project::new()
            .file("promptfooconfig.yaml", &config(auth))
            .file("keys/sa.json", &key);
        let mut cmd = p.command(&["eval", "promptfooconfig.yaml", "--out", "out.json"]);
        for var in [
            "VERTEX_API_KEY",
            "GOOGLE_API_KEY",
            "VERTEX_ACCESS_TOKEN",
            "GOOGLE_APPLICATION_CREDENTIALS",
        ] {
            cmd.env_remove(var);
        }
        if adc {
            cmd.env("GOOGLE_APPLICATION_CREDENTIALS", p.path().join("keys/sa.json"));
        }
        p.output_async(cmd).await.code(0);
        for file in agentv_testkit::walk(p.path()) {
            if file.ends_with("keys/sa.json") {
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap_or_default()).into_owned();
            assert!(
                !text.contains(google::TOKEN) && !text.contains("PRIVATE KEY"),
                "{} holds a credential",
                file.display()
            );
        }
    }
    let sent = server.requests().await;
    assert_eq!(sent.len(), 4);
    for request in &sent {
        assert_eq!(
            request.url.path(),
            "/v1/projects/sa-proj/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent"
        );
        assert_eq!(
            request.headers.get("authorization").and_then(|v| v.to_str().ok()),
            Some(format!("Bearer {}", google::TOKEN).as_str())
        );
    }
    let forms = endpoint.forms().await;
    assert_eq!(forms.len(), 2, "one token per run");
    for form in &forms {
        let assertion = form.iter().find(|(k, _)| k == "assertion").map(|(_, v)| v.as_str());
        assert!(
            google::verified_jwt(assertion.unwrap_or_default()).is_some(),
            "signed by the key"
        );
    }
}

#[test]
fn a_vertex_credentials_problem_or_missing_token_is_a_clear_error() {
    let p = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: [hi]\nproviders:\n  - id: vertex:gemini-2.5-flash\n    config: {credentials: file://sa.json, projectId: p}\ntests: [{vars: {}}]\n",
    );
    p.run(&["eval", "promptfooconfig.yaml"])
        .code(2)
        .stderr_has("cannot read the credentials file")
        .stderr_has("sa.json");
    let p = Project::new()
        .file(
            "promptfooconfig.yaml",
            "prompts: [hi]\nproviders:\n  - id: vertex:gemini-2.5-flash\n    config: {keyFilename: sa.json}\ntests: [{vars: {}}]\n",
        )
        .file("sa.json", r#"{"type": "service_account", "client_email": "a@b", "private_key": "not-a-key-'\"$(x)"}"#);
    let out = p.run(&["eval", "promptfooconfig.yaml"]);
    out.code(2).stderr_has("`private_key` is not a PEM private key");
    assert!(!out.stderr.contains("not-a-key"), "{}", out.stderr);
    let p = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: [hi]\nproviders:\n  - id: vertex:gemini-2.5-flash\n    config: {projectId: p}\ntests: [{vars: {}}]\n",
    );
    let mut cmd = p.command(&["eval", "promptfooconfig.yaml"]);
    for var in ["VERTEX_API_KEY", "GOOGLE_API_KEY", "VERTEX_ACCESS_TOKEN"] {
        cmd.env_remove(var);
    }
    p.output(&mut cmd).code(2).stderr_has("VERTEX_ACCESS_TOKEN");
    let p = Project::new().file(
        "promptfooconfig.yaml",
        "prompts: [hi]\nproviders: ['vertex:claude-sonnet-4@20250514']\ntests: [{vars: {}}]\n",
    );
    p.run(&["eval", "promptfooconfig.yaml"])
        .code(2)
        .stderr_has("agentv runs Gemini models on Vertex AI");
}
