//! Nunjucks templates as promptfoo renders them (`docs/promptfoo.md#templates`): a
//! Jinja-compatible engine with Nunjucks' `dump` filter and promptfoo's `load`, no HTML
//! escaping, and an unknown variable rendering as nothing. The test's `vars` and `env` (the
//! process environment) are in scope.

use std::sync::{OnceLock, RwLock};

use minijinja::value::merge_maps;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, Value};
use serde_json::Map;

/// How many distinct templates the engine keeps compiled; past that, a template is compiled
/// each time it renders. A config's templates are a handful (its prompts, a grader's prompt),
/// rendered once per test: compiling them once is most of what rendering costs.
const COMPILED: usize = 1024;

/// The engine, built once: filters are registered at start; templates are added (keyed by
/// their text) the first time they render.
fn engine() -> &'static RwLock<Environment<'static>> {
    static ENGINE: OnceLock<RwLock<Environment<'static>>> = OnceLock::new();
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
        RwLock::new(env)
    })
}

/// `{env: …}`: the process environment as templates see it, read once.
fn process_env() -> Value {
    static ENV: OnceLock<Value> = OnceLock::new();
    ENV.get_or_init(|| {
        let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
        minijinja::context! { env => env }
    })
    .clone()
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

/// Renders `text` with `vars` and `env` in scope (a var named `env` wins); an error says what
/// is wrong in the template.
pub fn render(text: &str, vars: &Map<String, serde_json::Value>) -> Result<String, TemplateError> {
    if !is_template(text) {
        return Ok(text.to_owned());
    }
    let scope = merge_maps([process_env(), Value::from(minijinja::value::Serde(vars))]);
    let lock = engine();
    {
        let env = lock.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Ok(template) = env.get_template(text) {
            return template.render(&scope).map_err(TemplateError);
        }
    }
    let mut env = lock.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    if env.templates().count() >= COMPILED {
        return env.render_str(text, &scope).map_err(TemplateError);
    }
    env.add_template_owned(text.to_owned(), text.to_owned())
        .map_err(TemplateError)?;
    let template = env.get_template(text).map_err(TemplateError)?;
    template.render(&scope).map_err(TemplateError)
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
        let own = vars(json!({"env": {"PATH": "mine"}}));
        assert_eq!(
            render("{{ env.PATH }}", &own).map_err(|e| e.to_string()).as_deref(),
            Ok("mine")
        );
    }

    /// Templates are compiled once and kept: the same text renders with each call's vars, a
    /// broken one fails every time, and past the cache's size templates still render.
    #[test]
    fn kept_templates_render_with_each_calls_vars() {
        for n in 0..3 {
            let got = render("Case {{ n }}: {{ q | upper }}", &vars(json!({"n": n, "q": "why"})));
            assert_eq!(got.map_err(|e| e.to_string()), Ok(format!("Case {n}: WHY")));
        }
        for _ in 0..2 {
            assert!(render("{{ broken ", &Map::new()).is_err());
        }
        for n in 0..COMPILED + 10 {
            let text = format!("{{{{ x }}}}-{n}");
            assert_eq!(
                render(&text, &vars(json!({"x": n}))).map_err(|e| e.to_string()),
                Ok(format!("{n}-{n}"))
            );
        }
        let kept = engine().read().map(|env| env.templates().count()).unwrap_or_default();
        assert!(kept <= COMPILED, "{kept} templates kept");
    }
}
