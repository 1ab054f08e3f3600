//! Nunjucks templates as promptfoo renders them (`docs/promptfoo.md#templates`): a
//! Jinja-compatible engine with Nunjucks' `dump` filter and promptfoo's `load`, no HTML
//! escaping, and an unknown variable rendering as nothing. The test's `vars` and `env` (the
//! process environment) are in scope.

use std::sync::OnceLock;

use minijinja::{AutoEscape, Environment, Error, ErrorKind, Value};
use serde_json::Map;

/// The engine, built once: filters are registered at start.
fn engine() -> &'static Environment<'static> {
    static ENGINE: OnceLock<Environment<'static>> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::None);
        // Nunjucks keeps a template's last newline.
        if let Ok(syntax) = minijinja::syntax::SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .build()
        {
            env.set_syntax(syntax);
        }
        env.add_filter("dump", dump);
        env.add_filter("load", load);
        env
    })
}

/// Nunjucks' `dump`: the value as JSON (`JSON.stringify`, compact).
fn dump(value: Value) -> Result<String, Error> {
    serde_json::to_string(&value).map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))
}

/// promptfoo's `load`: a JSON text read into a value.
fn load(text: String) -> Result<Value, Error> {
    serde_json::from_str::<serde_json::Value>(&text)
        .map(|v| Value::from(minijinja::value::Serde(v)))
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("`load`: not JSON: {e}")))
}

/// Whether `text` has anything to render (most values have not: they are kept as they are).
pub fn is_template(text: &str) -> bool {
    text.contains("{{") || text.contains("{%") || text.contains("{#")
}

/// A template that does not render: its syntax, an unknown filter, a filter's bad input. Shown
/// as the engine's kind and detail ("syntax error: unexpected end of input").
#[derive(Debug, thiserror::Error)]
#[error("{}", describe(.0))]
pub struct TemplateError(Error);

fn describe(e: &Error) -> String {
    match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    }
}

/// Renders `text` with `vars` and `env` in scope; an error says what is wrong in the template.
pub fn render(text: &str, vars: &Map<String, serde_json::Value>) -> Result<String, TemplateError> {
    if !is_template(text) {
        return Ok(text.to_owned());
    }
    let mut scope = vars.clone();
    if !scope.contains_key("env") {
        let env: Map<String, serde_json::Value> = std::env::vars()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect();
        scope.insert("env".to_owned(), serde_json::Value::Object(env));
    }
    engine()
        .render_str(text, Value::from(minijinja::value::Serde(&scope)))
        .map_err(TemplateError)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn vars(v: serde_json::Value) -> Map<String, serde_json::Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn nunjucks_templates_render_as_promptfoo_renders_them() {
        let v = vars(json!({"name": "Bob", "items": ["a", "b"], "obj": {"k": 1}, "html": "<b>&"}));
        for (template, want) in [
            ("Hi {{name}}", "Hi Bob"),
            ("Hi {{ name | upper }}", "Hi BOB"),
            ("{{ missing }}|", "|"),
            ("{{ obj | dump }}", r#"{"k":1}"#),
            ("{{ items | dump }}", r#"["a","b"]"#),
            ("{{ html }}", "<b>&"),
            ("{% for i in items %}{{ i }};{% endfor %}", "a;b;"),
            ("{{ ('{\"x\": 2}' | load).x }}", "2"),
            ("no template", "no template"),
            ("line\n", "line\n"),
        ] {
            assert_eq!(
                render(template, &v).map_err(|e| e.to_string()).as_deref(),
                Ok(want),
                "{template}"
            );
        }
    }

    #[test]
    fn a_broken_template_is_an_error_not_a_panic() {
        let err = render("{{ name ", &Map::new()).expect_err("broken").to_string();
        assert!(err.contains("syntax error"), "{err}");
    }

    #[test]
    fn env_is_in_scope_of_templates() {
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(
            render("{{ env.PATH }}", &Map::new())
                .map_err(|e| e.to_string())
                .as_deref(),
            Ok(path.as_str())
        );
    }
}
