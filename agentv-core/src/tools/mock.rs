//! A tool's `mock`: a fixed result, whose strings may use the call's arguments as
//! `{{ name }}` placeholders (`{{ arguments }}` is all of them as JSON).

use serde_json::Value;

/// `mock` for a call with `input`: a string that is exactly one placeholder becomes the
/// argument's value (keeping its type); placeholders inside longer strings become the argument
/// as text (a string as it is, anything else as JSON). Unknown names stay as written.
pub fn render(mock: &Value, input: &Value) -> Value {
    match mock {
        Value::String(s) => match whole_placeholder(s).and_then(|name| argument(input, name)) {
            Some(value) => value,
            None => Value::String(crate::template::substitute_with(s, |name| {
                argument(input, name).map(|v| match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                })
            })),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| render(v, input)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), render(v, input))).collect()),
        other => other.clone(),
    }
}

/// The argument `name`; `arguments` is the whole input unless an argument has that name.
fn argument(input: &Value, name: &str) -> Option<Value> {
    input
        .get(name)
        .cloned()
        .or_else(|| (name == "arguments").then(|| input.clone()))
}

/// The name of `{{ name }}` when `text` is that and nothing else.
fn whole_placeholder(text: &str) -> Option<&str> {
    let inner = text.trim().strip_prefix("{{")?.strip_suffix("}}")?.trim();
    (!inner.is_empty() && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_take_the_arguments() {
        let input = json!({"order_id": "A-1", "qty": 3, "arguments": "shadowed"});
        for (mock, want) in [
            (
                json!("Order {{ order_id }} has {{qty}} items"),
                json!("Order A-1 has 3 items"),
            ),
            (
                json!({"id": "{{ order_id }}", "n": "{{ qty }}"}),
                json!({"id": "A-1", "n": 3}),
            ),
            (json!(["{{ missing }}", 7, null]), json!(["{{ missing }}", 7, null])),
            (json!("{{ arguments }}"), json!("shadowed")),
            (json!(true), json!(true)),
        ] {
            assert_eq!(render(&mock, &input), want, "{mock}");
        }
        assert_eq!(render(&json!("{{ arguments }}"), &json!({"a": 1})), json!({"a": 1}));
        assert_eq!(
            render(&json!("args: {{ arguments }}"), &json!({"a": 1})),
            json!(r#"args: {"a":1}"#)
        );
    }
}
