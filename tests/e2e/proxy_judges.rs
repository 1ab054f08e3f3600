//! Code judges with `target:` reach the judge target through the loopback proxy.

use agentv_testkit::Project;

const JUDGE: &str = r#"import json, os, sys, urllib.request, urllib.error
payload = json.load(sys.stdin)
url = os.environ.get("AGENTV_TARGET_PROXY_URL")
token = os.environ.get("AGENTV_TARGET_PROXY_TOKEN")
if not url:
    print(json.dumps({"score": 1, "details": {"has_proxy": False, "judge_alias": "AGENTV_JUDGE_PROXY_URL" in os.environ}}))
    sys.exit(0)
def call(body):
    req = urllib.request.Request(url + "/invoke", data=json.dumps(body).encode(), method="POST")
    req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req) as r:
            return [r.status, json.load(r).get("rawText")]
    except urllib.error.HTTPError as e:
        return [e.code, json.load(e)["error"]]
results = [call({"question": "first"}), call({"question": "second", "target": "nope"}),
           call({"question": "third", "target": "locked"}), call({"question": "fourth"})]
print(json.dumps({"score": 1, "details": {"has_proxy": True, "calls": results,
                  "same_url": os.environ["AGENTV_JUDGE_PROXY_URL"] == url}}))
"#;

#[test]
fn budget_override_and_credentials_as_the_judge_sees_them() {
    let targets = "targets:\n  - name: default\n    provider: mock\n    judge_target: judge\n    response: the answer\n  - name: judge\n    provider: mock\n    response: verdict\n  - name: locked\n    provider: mock\n    response: ${{ AGENTV_E2E_LOCKED_KEY }}\n";
    let yaml = "execution:\n  evaluators:\n    - {name: with_proxy, type: code_judge, script: [python3, judge.py], target: {max_calls: 1}}\n    - {name: without_proxy, type: code_judge, script: [python3, judge.py]}\nevalcases:\n  - {id: c, expected_outcome: x, input_messages: [{role: user, content: q}]}\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("judge.py", JUDGE)
        .file("e.yaml", yaml);
    p.run(&["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    let r = p.result("r.jsonl", "c");
    let with = &r["evaluator_results"][0]["details"];
    assert_eq!(with["has_proxy"], true);
    assert_eq!(with["same_url"], true, "AGENTV_JUDGE_PROXY_URL is exported too");
    let calls = with["calls"].as_array().expect("calls");
    assert_eq!(
        calls[0],
        serde_json::json!([200, "verdict"]),
        "default target = judge_target"
    );
    assert_eq!(calls[1][0], 400);
    assert_eq!(
        calls[1][1],
        "unknown target `nope`; available targets: default, judge, locked"
    );
    assert_eq!(calls[2][0], 400, "missing credentials are a 400, not a crash");
    assert!(
        calls[2][1]
            .as_str()
            .expect("message")
            .contains("AGENTV_E2E_LOCKED_KEY (target `locked`"),
        "{}",
        calls[2][1]
    );
    assert_eq!(calls[3], serde_json::json!([429, "Max calls exceeded (limit: 1)"]));
    assert_eq!(
        with["target_proxy"],
        serde_json::json!({"target_name": "judge", "call_count": 1, "max_calls": 1, "batch_used": false,
                           "cached_calls": 0, "deduplicated_calls": 0})
    );
    let without = &r["evaluator_results"][1]["details"];
    assert_eq!(
        without["has_proxy"], false,
        "proxy variables only reach judges that asked for them"
    );
    assert_eq!(without["judge_alias"], false);
}
