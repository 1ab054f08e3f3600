//! The OpenAI Responses API (`POST /v1/responses`): a script's step becomes `function_call`
//! output items (or an assistant `message`). A `stream: true` request (the Codex CLI's) gets
//! them as the `response.created`, `response.output_item.added` / `.done` and
//! `response.completed` events; any other the response object as JSON.
//!
//! The step is the number of model turns with calls already in the request's `input`: the fake
//! names each call `fc_<step>_<i>`, and the client replays them.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::script::Script;
use super::{Reply, USAGE};

/// The reply to a Responses API request: the step of the first rule whose `when` occurs in
/// the request, else `answer` as text.
pub fn reply(body: &[u8], script: Option<&Script>, answer: &str) -> Reply {
    let Ok(parsed) = serde_json::from_slice::<Value>(body) else {
        return Reply::bad_request("the body is not JSON");
    };
    let haystack = parsed["input"].to_string();
    let rule = script.and_then(|s| s.rules.iter().find(|r| haystack.contains(&r.when)));
    let done = steps_done(&parsed);
    let items: Vec<Value> = match rule.map(|r| r.step(done)) {
        Some(step) if !step.calls.is_empty() => step
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                json!({"type": "function_call", "id": format!("fc_{done}_{i}"), "call_id": format!("call_{done}_{i}"),
                       "name": c.name, "arguments": c.arguments_text(), "status": "completed"})
            })
            .collect(),
        Some(step) => vec![message(step.text.as_deref().unwrap_or_default())],
        None => vec![message(answer)],
    };
    if parsed["stream"] != true {
        // Without `stream`, the whole response as one JSON object.
        let body = json!({"id": "resp_fake", "object": "response", "status": "completed",
                          "model": parsed["model"], "output": items, "usage": usage()});
        return Reply {
            status: 200,
            content_type: "application/json",
            body: body.to_string(),
        };
    }
    Reply {
        status: 200,
        content_type: "text/event-stream",
        body: events(&items),
    }
}

fn usage() -> Value {
    json!({"input_tokens": USAGE.input, "input_tokens_details": {"cached_tokens": 0},
           "output_tokens": USAGE.output, "output_tokens_details": {"reasoning_tokens": 0},
           "total_tokens": USAGE.input + USAGE.output})
}

/// Model turns with calls the request replays: the distinct steps of its `fc_<step>_<i>` ids.
fn steps_done(body: &Value) -> usize {
    let steps: BTreeSet<&str> = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call")
        .filter_map(|i| i["id"].as_str()?.strip_prefix("fc_")?.split('_').next())
        .collect();
    steps.len()
}

fn message(text: &str) -> Value {
    json!({"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
           "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

fn events(items: &[Value]) -> String {
    let mut out = String::new();
    let mut event = |data: Value| {
        let kind = data["type"].as_str().unwrap_or_default().to_owned();
        out.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    };
    event(json!({"type": "response.created", "response": {"id": "resp_fake", "status": "in_progress", "output": []}}));
    for (index, item) in items.iter().enumerate() {
        event(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
        event(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
    }
    event(
        json!({"type": "response.completed", "response": {"id": "resp_fake", "status": "completed", "output": items, "usage": usage()}}),
    );
    out
}
