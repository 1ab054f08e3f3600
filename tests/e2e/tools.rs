//! LLM API targets that call tools (`docs/tools.md`), end to end against the kit's fake LLM
//! service, which answers every provider in its own wire shape and refuses tool turns the real
//! API would refuse: one step, a three-step loop with mocked results, a command tool, tool
//! errors, arguments that are not JSON, and `max_steps` reached, for each provider.

use agentv_testkit::llm::{Api, FakeLlm};
use agentv_testkit::{Project, Run};
use serde_json::{Value, json};

const KEY: &str = "sk-tools-e2e-secret-value";

const SCRIPT: &str = r#"
- when: "case one-step"
  steps:
    - calls: [{name: lookup_order, arguments: {order_id: A-1001}}]
    - text: should never be asked
- when: "case three-steps"
  steps:
    - calls: [{name: find_customer, arguments: {email: jane@example.com}}]
    - calls: [{name: lookup_order, arguments: {order_id: A-1001}}]
    - text: Order A-1001 has shipped.
- when: "case command"
  steps:
    - calls: [{name: shout, arguments: {text: quiet please}}]
    - text: Done shouting.
- when: "case tool-error"
  steps:
    - calls: [{name: cancel_order, arguments: {order_id: A-1}}, {name: broken, arguments: {}}]
    - text: Something went wrong on our side.
- when: "case invalid-json"
  steps:
    - calls: [{name: lookup_order, raw_arguments: "{order_id: A-1001"}]
    - text: I could not read that order.
- when: "case max-steps"
  steps:
    - calls: [{name: lookup_order, arguments: {order_id: A-1001}}]
"#;

const SUITE: &str = r#"
tools:
  - name: find_customer
    description: Find a customer by email.
    parameters: {type: object, properties: {email: {type: string}}, required: [email]}
    mock: {customer_id: C-7, email: "{{ email }}"}
  - name: lookup_order
    description: Look up an order by its id.
    parameters:
      type: object
      properties: {order_id: {type: string}}
      required: [order_id]
      additionalProperties: false
    mock: {order_id: "{{ order_id }}", status: shipped}
  - name: shout
    description: Upper-cases text, with a program.
    parameters: {type: object, properties: {text: {type: string}}}
    command:
      - sh
      - -c
      - 'printf "%s|%s" "$(tr a-z A-Z)" "${E2E_PROVIDER_KEY:-no key}"'
  - name: broken
    parameters: {type: object}
    command: "echo 'orders db down' >&2; exit 3"
evalcases:
  - id: one-step
    expected_outcome: Looks the order up.
    input_messages: [{role: user, content: "case one-step: where is A-1001?"}]
    evaluators:
      - {name: trajectory, type: tool_trajectory, mode: in_order, expected: [{tool: lookup_order, args: {order_id: A-1001}}]}
      - {name: valid, type: is_valid_tool_call}
  - id: three-steps
    max_steps: 5
    expected_outcome: Finds the customer, then the order.
    input_messages: [{role: user, content: "case three-steps: I am jane@example.com, where is A-1001?"}]
    evaluators:
      - {name: trajectory, type: tool_trajectory, mode: in_order, expected: [{tool: find_customer}, {tool: lookup_order}]}
      - {name: f1, type: tool_call_f1, expected: [find_customer, {tool: lookup_order, args: {order_id: A-1001}}]}
  - id: command
    max_steps: 2
    expected_outcome: Shouts.
    input_messages: [{role: user, content: "case command"}]
    evaluators: [{name: trajectory, type: tool_trajectory, mode: any_order, minimums: {shout: 1}}]
  - id: tool-error
    max_steps: 2
    expected_outcome: Reports the failure.
    input_messages: [{role: user, content: "case tool-error"}]
    evaluators: [{name: valid, type: is_valid_tool_call}]
  - id: invalid-json
    max_steps: 2
    expected_outcome: Says it could not read the order.
    input_messages: [{role: user, content: "case invalid-json"}]
    evaluators: [{name: valid, type: is_valid_tool_call}]
  - id: max-steps
    max_steps: 2
    expected_outcome: Looks the order up.
    input_messages: [{role: user, content: "case max-steps"}]
    evaluators: [{name: trajectory, type: tool_trajectory, mode: any_order, minimums: {lookup_order: 1}}]
"#;

async fn fake() -> FakeLlm {
    FakeLlm::scripted(SCRIPT).await
}

async fn run(p: &Project, args: &[&str]) -> Run {
    let mut cmd = p.command(args);
    cmd.env("E2E_PROVIDER_KEY", KEY);
    p.output_async(cmd).await
}

/// The calls of a record's output messages, in order.
fn calls(record: &Value) -> Vec<Value> {
    record["output_messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

/// The bodies of the requests the fake received for the case asking `marker`.
async fn bodies(server: &FakeLlm, marker: &str) -> Vec<Value> {
    server
        .requests()
        .await
        .iter()
        .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
        .filter(|b| b.to_string().contains(marker))
        .collect()
}

/// Every scenario against `api`.
async fn scenarios(api: Api) {
    let provider = api.provider();
    let server = fake().await;
    let p = Project::new()
        .file(
            "targets.yaml",
            &format!(
                "targets:\n{}",
                api.target("default", &server.uri(), "${{ E2E_PROVIDER_KEY }}")
            ),
        )
        .file("e.yaml", SUITE);
    let out = run(&p, &["eval", "e.yaml", "--out", "r.jsonl"]).await;
    out.code(0);
    assert!(
        !out.stdout.contains("HTTP 400"),
        "{provider}: the fake refused a request\n{}",
        out.stdout
    );

    one_step(&p, &server, provider).await;
    three_steps(&p, &server, api).await;
    command(&p, provider);
    tool_error(&p, &server, api).await;
    invalid_json(&p, api);
    max_steps(&p, &server, provider).await;
    let text = std::fs::read_to_string(p.path().join("r.jsonl")).expect("results");
    assert!(!text.contains(KEY), "{provider}: the key leaked into the results");
    assert!(
        !out.stdout.contains(KEY) && !out.stderr.contains(KEY),
        "{provider}: the key leaked to the console"
    );
}

async fn one_step(p: &Project, server: &FakeLlm, provider: &str) {
    let r = p.result("r.jsonl", "one-step");
    assert_eq!(r["execution_status"], "ok", "{provider}: {r}");
    assert_eq!(r["candidate_answer"], "", "{provider}: a call-only answer has no text");
    assert_eq!(
        r["lm_provider_request"]["response_metadata"]["ended"], "tool_calls",
        "{provider}"
    );
    assert_eq!(r["lm_provider_request"]["response_metadata"]["steps"], 1);
    let c = calls(&r);
    assert_eq!(c.len(), 1, "{provider}: {r}");
    assert_eq!(
        (c[0]["tool"].clone(), c[0]["input"].clone()),
        (json!("lookup_order"), json!({"order_id": "A-1001"}))
    );
    assert!(
        c[0].get("output").is_none(),
        "{provider}: one step records the call, runs nothing"
    );
    assert_eq!(
        r["trace"].as_array().map(Vec::len),
        Some(2),
        "{provider}: model step + tool call"
    );
    assert_eq!(r["trace"][1]["type"], "tool_call");
    assert_eq!(r["trace"][1]["name"], "lookup_order");
    assert_eq!(r["trace"][1]["input"], json!({"order_id": "A-1001"}));
    assert_eq!(r["score"], 1.0, "{provider}: {r}");
    assert_eq!(
        bodies(server, "case one-step").await.len(),
        1,
        "{provider}: one model call"
    );
}

async fn three_steps(p: &Project, server: &FakeLlm, api: Api) {
    let provider = api.provider();
    let r = p.result("r.jsonl", "three-steps");
    assert_eq!(r["candidate_answer"], "Order A-1001 has shipped.", "{provider}: {r}");
    let meta = &r["lm_provider_request"]["response_metadata"];
    assert_eq!(
        (meta["ended"].clone(), meta["steps"].clone()),
        (json!("answer"), json!(3)),
        "{provider}"
    );
    let c = calls(&r);
    assert_eq!(
        c[0]["output"],
        json!({"customer_id": "C-7", "email": "jane@example.com"}),
        "{provider}"
    );
    assert_eq!(c[1]["output"], json!({"order_id": "A-1001", "status": "shipped"}));
    assert_eq!(
        (c[0]["status"].clone(), c[0]["source"].clone()),
        (json!("ok"), json!("mock"))
    );
    let steps: Vec<&Value> = r["trace"]
        .as_array()
        .expect("trace")
        .iter()
        .filter(|e| e["type"] == "model_step")
        .collect();
    assert_eq!(steps.len(), 3, "{provider}");
    for step in &steps {
        assert_eq!(
            step["metadata"]["token_usage"],
            json!({"input": 20, "output": 5}),
            "{provider}"
        );
    }
    assert_eq!(
        r["execution_metrics"]["token_usage"],
        json!({"input": 60, "output": 15}),
        "{provider}: totals add up"
    );
    assert_eq!(r["evaluator_results"][0]["score"], 1.0, "{provider}: {r}");
    assert_eq!(r["evaluator_results"][1]["score"], 1.0, "{provider}: {r}");
    // The last request carries both earlier steps and their results, in the API's shape.
    let sent = bodies(server, "case three-steps").await;
    assert_eq!(sent.len(), 3, "{provider}");
    let last = sent[2].to_string();
    assert!(
        last.contains("jane@example.com") && last.contains("shipped"),
        "{provider}: {last}"
    );
    match api {
        Api::OpenAi | Api::Azure => {
            let tool_msgs = sent[2]["messages"]
                .as_array()
                .expect("messages")
                .iter()
                .filter(|m| m["role"] == "tool")
                .count();
            assert_eq!(tool_msgs, 2, "{provider}");
            assert_eq!(sent[0]["tools"][1]["function"]["name"], "lookup_order");
        }
        Api::Anthropic => {
            assert_eq!(sent[0]["tools"][1]["input_schema"]["required"], json!(["order_id"]));
            assert_eq!(sent[2]["messages"][2]["content"][0]["type"], "tool_result");
            assert_eq!(sent[2]["messages"][4]["content"][0]["tool_use_id"], "toolu_1_0");
        }
        Api::Gemini => {
            assert_eq!(sent[0]["tools"][0]["functionDeclarations"][1]["name"], "lookup_order");
            assert_eq!(
                sent[2]["contents"][1]["parts"][0]["thoughtSignature"], "fake-signature-0",
                "{provider}: the model turn is replayed as it came"
            );
            assert!(sent[2]["contents"][2]["parts"][0]["functionResponse"]["response"].is_object());
        }
    }
}

fn command(p: &Project, provider: &str) {
    let r = p.result("r.jsonl", "command");
    let c = calls(&r);
    // The arguments on stdin, upper-cased; the provider key is not in the tool's environment.
    assert_eq!(c[0]["output"], r#"{"TEXT":"QUIET PLEASE"}|no key"#, "{provider}: {r}");
    assert_eq!(c[0]["source"], "command");
    assert_eq!(r["score"], 1.0);
}

async fn tool_error(p: &Project, server: &FakeLlm, api: Api) {
    let provider = api.provider();
    let r = p.result("r.jsonl", "tool-error");
    assert_eq!(
        r["execution_status"], "ok",
        "{provider}: a tool error is not an execution error"
    );
    let c = calls(&r);
    assert_eq!(c[0]["status"], "error", "{provider}: {r}");
    assert!(
        c[0]["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("unknown tool `cancel_order`")),
        "{provider}: {r}"
    );
    assert_eq!(c[1]["status"], "error");
    assert_eq!(
        c[1]["output"], "the tool's command exited with code 3: orders db down",
        "{provider}"
    );
    assert_eq!(r["candidate_answer"], "Something went wrong on our side.");
    assert!(
        r["evaluator_results"][0]["misses"][0]
            .as_str()
            .is_some_and(|m| m.starts_with("Call 1 `cancel_order`: unknown tool"))
    );
    let sent = bodies(server, "case tool-error").await;
    let second = &sent[1];
    match api {
        Api::OpenAi | Api::Azure => {
            let tool = second["messages"]
                .as_array()
                .expect("messages")
                .iter()
                .find(|m| m["role"] == "tool")
                .expect("tool message");
            assert!(
                tool["content"].as_str().is_some_and(|t| t.starts_with("unknown tool")),
                "{provider}"
            );
        }
        Api::Anthropic => assert_eq!(second["messages"][2]["content"][0]["is_error"], true, "{provider}"),
        Api::Gemini => assert!(second["contents"][2]["parts"][0]["functionResponse"]["response"]["error"].is_string()),
    }
}

fn invalid_json(p: &Project, api: Api) {
    let provider = api.provider();
    let r = p.result("r.jsonl", "invalid-json");
    let c = calls(&r);
    assert_eq!(c[0]["input"], "{order_id: A-1001", "{provider}: kept as written");
    let flag = c[0]["input_error"].as_str().unwrap_or_default().to_owned();
    let want = match api {
        Api::OpenAi | Api::Azure => "not valid JSON",
        Api::Anthropic | Api::Gemini => "not a JSON object but a string",
    };
    assert!(flag.starts_with(want), "{provider}: {flag}");
    assert_eq!(c[0]["status"], "error", "{provider}: not run");
    let trace_call = r["trace"]
        .as_array()
        .expect("trace")
        .iter()
        .find(|e| e["type"] == "tool_call")
        .expect("call")
        .clone();
    assert_eq!(trace_call["metadata"]["input_error"], json!(flag));
    assert_eq!(r["evaluator_results"][0]["score"], 0.0, "{provider}");
    assert!(
        r["evaluator_results"][0]["misses"][0]
            .as_str()
            .is_some_and(|m| m.contains(want))
    );
}

async fn max_steps(p: &Project, server: &FakeLlm, provider: &str) {
    let r = p.result("r.jsonl", "max-steps");
    assert_eq!(
        r["lm_provider_request"]["response_metadata"]["ended"], "max_steps",
        "{provider}: {r}"
    );
    assert_eq!(r["execution_status"], "ok");
    assert_eq!(calls(&r).len(), 2, "{provider}");
    assert_eq!(r["score"], 1.0, "{provider}: graded on what happened");
    assert_eq!(bodies(server, "case max-steps").await.len(), 2, "{provider}");
}

#[tokio::test]
async fn openai_compatible_target_calls_tools() {
    scenarios(Api::OpenAi).await;
}

#[tokio::test]
async fn azure_target_calls_tools() {
    scenarios(Api::Azure).await;
}

#[tokio::test]
async fn anthropic_target_calls_tools() {
    scenarios(Api::Anthropic).await;
}

#[tokio::test]
async fn gemini_target_calls_tools() {
    scenarios(Api::Gemini).await;
}

/// The requests the fake received so far.
async fn count(server: &FakeLlm) -> usize {
    server.requests().await.len()
}

#[tokio::test]
async fn tool_definitions_and_tool_results_are_part_of_the_cache_key() {
    let server = fake().await;
    let targets = format!(
        "targets:\n{}",
        Api::OpenAi.target("default", &server.uri(), "${{ E2E_PROVIDER_KEY }}")
    );
    let p = Project::new().file("targets.yaml", &targets).file("e.yaml", SUITE);
    let args = [
        "eval",
        "e.yaml",
        "--eval-id",
        "three-steps",
        "--cache",
        "--dump-prompts",
        "--out",
        "r.jsonl",
    ];
    run(&p, &args).await.code(0);
    assert_eq!(count(&server).await, 3);
    for step in [
        "three-steps-1.json",
        "three-steps-1-step-2.json",
        "three-steps-1-step-3.json",
    ] {
        let dump = std::fs::read_to_string(p.path().join(".agentv/prompts").join(step)).expect(step);
        assert!(dump.contains("find_customer") && !dump.contains(KEY), "{step}");
    }
    let last: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join(".agentv/prompts/three-steps-1-step-3.json")).expect("dump"),
    )
    .expect("json");
    assert_eq!(last["request"]["tools"]["exchanges"].as_array().map(Vec::len), Some(2));

    run(&p, &args)
        .await
        .code(0)
        .stdout_has("Cache:         3 hits, 0 misses");
    assert_eq!(count(&server).await, 3, "every step came from the cache");

    // A different result for the second call: the first two steps are the same requests.
    let with_result = SUITE.replace(
        "  - id: three-steps\n    max_steps: 5\n",
        "  - id: three-steps\n    max_steps: 5\n    tool_results: [{tool: lookup_order, result: {status: lost}}]\n",
    );
    std::fs::write(p.path().join("e.yaml"), &with_result).expect("write");
    run(&p, &args).await.code(0).stdout_has("Cache:         2 hits, 1 miss");
    assert_eq!(count(&server).await, 4);
    assert_eq!(
        calls(&p.result("r.jsonl", "three-steps"))[1]["output"],
        json!({"status": "lost"})
    );

    // A different definition: nothing is the same request.
    let described = with_result.replace("Find a customer by email.", "Find a customer by e-mail.");
    std::fs::write(p.path().join("e.yaml"), described).expect("write");
    run(&p, &args)
        .await
        .code(0)
        .stdout_has("Cache:         0 hits, 3 misses");
    assert_eq!(count(&server).await, 7);
    for entry in walk(&p.path().join(".agentv/cache")) {
        assert!(
            !std::fs::read_to_string(&entry).unwrap_or_default().contains(KEY),
            "{}",
            entry.display()
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn tools_on_the_target_apply_when_the_suite_declares_none() {
    let server = fake().await;
    let targets = format!(
        "targets:\n{}    max_steps: 3\n    tool_choice: required\n    parallel_tool_calls: false\n    tools: tools.yaml\n",
        Api::Anthropic.target("default", &server.uri(), "${{ E2E_PROVIDER_KEY }}")
    );
    let tools = "- name: find_customer\n  input_schema: {type: object, properties: {email: {type: string}}}\n  cache_control: {type: ephemeral}\n  mock: {customer_id: C-7}\n- name: lookup_order\n  parameters: {type: object}\n  mock: {status: shipped}\n";
    let suite = "evalcases:\n  - id: three-steps\n    expected_outcome: x\n    input_messages: [{role: user, content: 'case three-steps'}]\n    evaluators: [{name: valid, type: is_valid_tool_call}]\n";
    let p = Project::new()
        .file("targets.yaml", &targets)
        .file("tools.yaml", tools)
        .file("e.yaml", suite);
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl"]).await.code(0);
    let r = p.result("r.jsonl", "three-steps");
    assert_eq!(r["candidate_answer"], "Order A-1001 has shipped.", "{r}");
    assert_eq!(r["score"], 1.0, "the target's tools are the declared ones: {r}");
    let first = bodies(&server, "case three-steps").await.remove(0);
    assert_eq!(
        first["tools"][0]["cache_control"],
        json!({"type": "ephemeral"}),
        "Anthropic's own shape sent as written"
    );
    assert!(first["tools"][0].get("mock").is_none());
    assert_eq!(
        first["tools"][1]["input_schema"],
        json!({"type": "object"}),
        "the neutral shape translated"
    );
    assert_eq!(
        first["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
}

#[test]
fn tool_mistakes_are_reported_with_their_position_and_stop_the_case() {
    let p = Project::new()
        .file("targets.yaml", "targets:\n  - name: default\n    provider: mock\n")
        .file(
            "e.yaml",
            "tools: [{name: lookup, parameters: {type: object}}]\nevalcases:\n  - id: ok\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    evaluators: [{name: k, type: keywords, expected: [q]}]\n  - id: bad\n    tool_choice: {name: refund}\n    max_steps: 0\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    evaluators: [{name: k, type: keywords, expected: [q]}]\n",
        );
    let out = p.run(&["validate", "e.yaml"]);
    out.code(1)
        .stderr_has("e.yaml:9:16: error: `max_steps` must be a whole number from 1 to 100, found 0")
        .stderr_has("e.yaml:7:5: error: `tool_choice` names `refund`, which is not one of the tools");
}

/// A `tool_results` entry for a tool the model cannot call would never be used: the case would
/// pass on the tool's mock instead. It is an error of the case, with a suggestion.
#[test]
fn a_tool_result_naming_an_undeclared_tool_is_an_error() {
    let p = Project::new()
        .file("targets.yaml", "targets:\n  - name: default\n    provider: mock\n")
        .file(
            "e.yaml",
            "tools: [{name: lookup_order, parameters: {type: object}, mock: {status: shipped}}]\nevalcases:\n  - id: ok\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    tool_results: [{tool: lookup_order, result: {status: lost}}]\n    evaluators: [{name: k, type: keywords, expected: [q]}]\n  - id: typo\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    tool_results: [{tool: lookup_ordr, result: {status: lost}}]\n    evaluators: [{name: k, type: keywords, expected: [q]}]\n",
        );
    p.run(&["validate", "e.yaml"])
        .code(1)
        .stderr_has("e.yaml:8:5: error: `tool_results` names `lookup_ordr`, which is not one of the tools")
        .stderr_has("did you mean `lookup_order`?");
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(3);
    assert_eq!(p.result("r.jsonl", "typo")["execution_status"], "invalid");
}

/// `examples/tools` against the fake service following its own script, for each of its three
/// targets (their URLs pointed at the fake).
#[tokio::test]
async fn support_agent_example_finds_lookup_order_at_position_1_with_every_provider() {
    let root = agentv_testkit::repo_root();
    let script = std::fs::read_to_string(root.join("examples/tools/fake-model.json")).expect("script");
    let server = FakeLlm::scripted(&script).await;
    let shipped = std::fs::read_to_string(root.join("examples/tools/targets.yaml")).expect("targets");
    let dir = tempfile::tempdir().expect("tmp");
    let targets = dir.path().join("targets.yaml");
    std::fs::write(&targets, shipped.replace("http://127.0.0.1:8931", &server.uri())).expect("write");
    for target in ["openai-compatible", "anthropic", "gemini"] {
        let out = dir.path().join(format!("{target}.jsonl"));
        let mut cmd = agentv_testkit::agentv(
            &root,
            &["eval", "examples/tools/evals/support.yaml", "--target", target],
        );
        cmd.arg("--targets").arg(&targets).arg("--out").arg(&out);
        Run::of(&mut cmd)
            .code(0)
            .stdout_has("Verdicts: 4 pass, 0 borderline, 1 fail");
        let records: Vec<Value> = std::fs::read_to_string(&out)
            .expect("results")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        let by_id = |id: &str| records.iter().find(|r| r["eval_id"] == id).cloned().expect(id);
        let order = by_id("where-is-my-order");
        assert!(
            order["hits"]
                .as_array()
                .is_some_and(|h| h.contains(&json!("Found lookup_order at position 1"))),
            "{target}: {order}"
        );
        assert_eq!(
            order["candidate_answer"],
            "Hi Jane, order A-1001 shipped on May 2 with UPS. Its tracking number is TRK-A-1001."
        );
        assert_eq!(
            calls(&order)[1]["output"]["tracking_number"],
            "TRK-A-1001",
            "{target}: the mock's template"
        );
        let two = by_id("two-orders");
        assert_eq!(
            calls(&two)[1]["output"],
            json!({"order_id": "A-1004", "status": "packing"}),
            "{target}"
        );
        assert_eq!(calls(&two)[1]["source"], "tool_results");
        assert_eq!(
            by_id("track-my-parcel")["lm_provider_request"]["response_metadata"]["steps"],
            3
        );
        let wrong = by_id("wrong-tool");
        assert_eq!(wrong["verdict"], "fail", "{target}: {wrong}");
        let misses: Vec<&str> = wrong["misses"]
            .as_array()
            .expect("misses")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            misses
                .iter()
                .any(|m| m.contains("\"tracking_number\" is a required property")),
            "{target}: {misses:?}"
        );
        assert_eq!(by_id("no-tool")["score"], 1.0, "{target}");
    }
}

#[test]
fn tools_for_a_target_that_is_not_an_llm_api_are_a_warning() {
    let p = Project::new()
        .file("targets.yaml", "targets:\n  - name: default\n    provider: mock\n    response: hi\n")
        .file(
            "e.yaml",
            "tools: [{name: lookup, mock: ok}]\nevalcases:\n  - id: a\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    evaluators: [{name: k, type: keywords, expected: [hi]}]\n",
        );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(0)
        .stderr_has("target `default` (mock) does not take `tools`");
}

#[tokio::test]
async fn a_tool_that_hangs_is_a_tool_error_and_the_case_goes_on() {
    let script = "- when: case hang\n  steps:\n    - calls: [{name: slow, arguments: {}}, {name: slower, arguments: {}}]\n    - text: The lookup timed out.\n";
    let server = FakeLlm::scripted(script).await;
    let targets = format!(
        "targets:\n{}",
        Api::OpenAi.target("default", &server.uri(), "${{ E2E_PROVIDER_KEY }}")
    );
    let suite = "max_steps: 2\ntools:\n  - {name: slow, command: 'sleep 30', timeout_seconds: 0.5}\n  - {name: slower, command: [sleep, '30']}\nevalcases:\n  - id: hang\n    expected_outcome: x\n    input_messages: [{role: user, content: case hang}]\n    evaluators: [{name: k, type: keywords, expected: [timed out]}]\n";
    let p = Project::new().file("targets.yaml", &targets).file("e.yaml", suite);
    // `--timeout` bounds each model call, and is the default of a tool's own timeout.
    run(&p, &["eval", "e.yaml", "--timeout", "2", "--out", "r.jsonl"])
        .await
        .code(0);
    let r = p.result("r.jsonl", "hang");
    assert_eq!(r["attempt"], 1, "not retried: {r}");
    assert_eq!(r["candidate_answer"], "The lookup timed out.");
    let c = calls(&r);
    assert_eq!(c[0]["output"], "the tool's command failed: timed out after 0.5s", "{r}");
    assert_eq!(c[1]["output"], "the tool's command failed: timed out after 2s", "{r}");
    assert_eq!(
        (c[0]["status"].clone(), c[1]["status"].clone()),
        (json!("error"), json!("error"))
    );
}

#[test]
fn a_case_never_runs_without_the_suite_s_tools_when_they_are_invalid() {
    let p = Project::new()
        .file("targets.yaml", "targets:\n  - name: default\n    provider: mock\n    response: hi\n")
        .file(
            "e.yaml",
            "tools: missing-tools.json\nevalcases:\n  - id: a\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n    evaluators: [{name: k, type: keywords, expected: [hi]}]\n",
        );
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"])
        .code(2)
        .stderr_has("e.yaml:1:8: error: tools file `missing-tools.json` not found")
        .stderr_has("e.yaml:3:5: error: case inherits the eval file's invalid tool settings");
}

#[tokio::test]
async fn an_openai_target_with_api_responses_runs_the_tool_loop_on_the_responses_api() {
    let server = fake().await;
    let targets = format!(
        "targets:\n  - name: default\n    provider: openai\n    api: responses\n    base_url: {}/v1\n    model: gpt-4.1-mini\n    api_key: ${{{{ E2E_PROVIDER_KEY }}}}\n",
        server.uri()
    );
    let p = Project::new().file("targets.yaml", &targets).file("e.yaml", SUITE);
    run(&p, &["eval", "e.yaml", "--eval-id", "three-steps", "--out", "r.jsonl"])
        .await
        .code(0);
    let sent = server.requests().await;
    assert_eq!(sent.len(), 3, "two tool steps, then the answer");
    assert!(sent.iter().all(|r| r.url.path() == "/v1/responses"));
    let last: Value = serde_json::from_slice(&sent[2].body).expect("json");
    let kinds: Vec<&str> = last["input"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| i["type"].as_str().or(i["role"].as_str()).unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "user",
            "function_call",
            "function_call_output",
            "function_call",
            "function_call_output"
        ],
        "{last}"
    );
    assert_eq!(
        last["tools"][0]["name"], "find_customer",
        "the Responses shape: no `function` wrapper"
    );
    let record = &p.results("r.jsonl")[0];
    let names: Vec<&str> = record["trace"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["type"] == "tool_call")
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["find_customer", "lookup_order"]);
    assert_eq!(record["candidate_answer"], "Order A-1001 has shipped.");
    for file in agentv_testkit::walk(p.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap_or_default()).into_owned();
        assert!(!text.contains(KEY), "{} holds the key", file.display());
    }
}
