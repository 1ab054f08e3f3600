//! `http`: promptfoo's generic HTTP provider (`http`, `https://…`, `webhook:<url>`;
//! `docs/promptfoo.md#http-providers`). The `url`, `headers` and `body` are Nunjucks templates
//! of the test's `vars` and the `prompt`; `transform_request` rewrites the prompt first, and
//! `transform_response` reads the answer from `json` (the parsed body) and `text`.
//!
//! A transform that is a plain property path (`json.choices[0].message.content`) is read here;
//! any other JavaScript runs in the warm node workers of script providers
//! ([`super::script::run_js`]), never a process per call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::llm::RETRY_KEYS;
use super::retry::RetryPolicy;
use super::script::{self, JsCall, JsForm};
use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderError, ProviderFuture, ProviderKind,
    ProviderRequest, ProviderResponse, TargetSettings,
};
use crate::config::{DurationRange, Key, KeyTable, Kind};
use crate::judge_pool::JudgePool;
use crate::nunjucks as template;
use crate::redact::Secrets;

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&ENTRY];

pub(crate) static ENTRY: ProviderEntry = ProviderEntry {
    name: "http",
    aliases: &[],
    doc: "Any HTTP API: a templated request, the answer read by a transform (promptfoo's `http` provider).",
    // It reports its own cost, if any, as a command does.
    class: ProviderClass::Command,
    batch: false,
    cacheable: true,
    container: false,
    executable: None,
    keys: &KEYS,
    build,
};

const OWN: &[Key] = &[
    Key::new("url", Kind::Text, "The URL; a template of the test's vars and `prompt`.").required(),
    Key::new("method", Kind::Text, "HTTP method (default GET, as promptfoo's)."),
    Key::new("headers", Kind::Map(&Kind::Text), "Request headers; templates like the URL."),
    Key::new(
        "body",
        Kind::Any,
        "The body: a mapping sent as JSON (each string a template), or a template string.",
    ),
    Key::new(
        "query_params",
        Kind::Map(&Kind::Text),
        "Query parameters added to the URL; templates like the URL.",
    ),
    Key::new(
        "transform_request",
        Kind::Text,
        "JavaScript turning `prompt` (with `vars`, `context`) into what the templates see as `prompt`.",
    ),
    Key::new(
        "transform_response",
        Kind::Text,
        "JavaScript reading the answer from `json` and `text` (default: the JSON body, else the text).",
    ),
    Key::new(
        "timeout_seconds",
        Kind::Duration(DurationRange::TIMEOUT_SECONDS),
        "Per HTTP attempt (the run's `--timeout` bounds the whole call).",
    ),
];
const KEYS: KeyTable = KeyTable::new("http", "Settings of an `http` target.", &[OWN, RETRY_KEYS]);

/// The HTTP provider's settings.
#[derive(Debug)]
pub struct HttpProvider {
    name: String,
    url: String,
    method: reqwest::Method,
    headers: Vec<(String, String)>,
    body: Option<Value>,
    query: Vec<(String, String)>,
    transform_request: Option<String>,
    transform_response: Option<String>,
    timeout: Option<Duration>,
    retry: RetryPolicy,
    secrets: Secrets,
    child_env: Arc<[(String, String)]>,
    /// Where `file://` transforms are, and the node workers that run JavaScript.
    dir: std::path::PathBuf,
    pool: Arc<JudgePool>,
}

fn build(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let url = s.string("url", true);
    let method_pos = s.node("method").map_or(ctx.pos, |n| n.pos);
    let method = s.string("method", false).unwrap_or_else(|| "GET".to_owned());
    let method = match reqwest::Method::from_bytes(method.trim().to_ascii_uppercase().as_bytes()) {
        Ok(m) => m,
        Err(_) => {
            s.error(
                method_pos,
                format!("`method` `{method}` is not an HTTP method"),
                Some("use GET, POST, PUT, PATCH or DELETE".to_owned()),
            );
            return None;
        }
    };
    let pairs = |s: &mut TargetSettings<'_>, key: &str| -> Vec<(String, String)> {
        s.tree(key)
            .and_then(|n| {
                n.as_map().map(|entries| {
                    entries
                        .iter()
                        .map(|(k, v)| (k.key_text(), v.scalar_text().unwrap_or_default()))
                        .collect()
                })
            })
            .unwrap_or_default()
    };
    let headers = pairs(s, "headers");
    let query = pairs(s, "query_params");
    let body = s.tree("body").map(|n| n.to_json()).filter(|b| !b.is_null());
    let transform_request = s.string("transform_request", false);
    let transform_response = s.string("transform_response", false);
    let timeout = s.duration("timeout_seconds");
    let retry = s.retry();
    let dir = s.path(".");
    Some(Arc::new(HttpProvider {
        name: ctx.target.to_owned(),
        url: url?,
        method,
        headers,
        body,
        query,
        transform_request,
        transform_response,
        timeout,
        retry,
        secrets: s.secrets().clone(),
        child_env: ctx.child_env.clone(),
        pool: script::node_pool(&dir),
        dir,
    }))
}

impl Provider for HttpProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(&ENTRY)
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move {
            let started = Instant::now();
            let vars = request.vars.clone().unwrap_or_default();
            let prompt = prompt_text(request);
            let prompt = match &self.transform_request {
                Some(code) => self
                    .js(code, &["prompt", "vars", "context"], vec![json!(prompt), json!(vars), json!({"vars": vars})], JsForm::Request)
                    .await
                    .map_err(|e| ProviderError::Transform(format!("Failed to transform request: Error: {e}")))?,
                None => Value::String(prompt),
            };
            let call = self.request(&prompt, &vars)?;
            let (result, attempts) = self.retry.run(|| self.send(&call)).await;
            let (status, text) = result?;
            let json: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let parsed = match &self.transform_response {
                None => {
                    if json.is_null() {
                        Value::String(text.clone())
                    } else {
                        json.clone()
                    }
                }
                Some(code) => self.transform(code, &json, &text).await?,
            };
            let mut response = response_of(parsed)?;
            response.duration_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
            let mut metadata = response.metadata.take().unwrap_or_default();
            metadata.insert("attempts".to_owned(), json!(attempts));
            metadata.insert("http_status".to_owned(), json!(status));
            response.metadata = Some(metadata);
            Ok(response)
        })
    }

    fn public_settings(&self) -> Value {
        json!({
            "url": self.url,
            "method": self.method.as_str(),
            "body": self.body,
            "query_params": self.query,
            "transform_request": self.transform_request,
            "transform_response": self.transform_response,
        })
    }
}

/// A request ready to send (its templates rendered).
struct Call {
    url: String,
    headers: HeaderMap,
    body: Option<String>,
}

impl HttpProvider {
    /// Renders the URL, headers, query and body with `vars` and `prompt`.
    fn request(&self, prompt: &Value, vars: &Map<String, Value>) -> Result<Call, ProviderError> {
        let mut scope = vars.clone();
        scope.insert("prompt".to_owned(), prompt.clone());
        let render = |text: &str| {
            template::render(text, &scope).map_err(|e| ProviderError::Setup(format!("http provider template: {e}")))
        };
        let mut url = reqwest::Url::parse(render(&self.url)?.trim())
            .map_err(|e| ProviderError::Setup(format!("http provider `url` is not a URL: {e}")))?;
        for (k, v) in &self.query {
            url.query_pairs_mut().append_pair(k, &render(v)?);
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| ProviderError::Setup(format!("header name `{name}` is not valid HTTP")))?;
            let mut value = HeaderValue::from_str(&render(value)?)
                .map_err(|_| ProviderError::Setup(format!("header `{name}` has characters HTTP does not allow")))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let body = match &self.body {
            // promptfoo sends no body with a GET.
            _ if self.method == reqwest::Method::GET => None,
            None => None,
            Some(Value::String(text)) => Some(render(text)?),
            Some(tree) => {
                if !headers.contains_key(reqwest::header::CONTENT_TYPE) {
                    headers.insert(reqwest::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                }
                Some(rendered_tree(tree, &scope)?.to_string())
            }
        };
        Ok(Call {
            url: url.to_string(),
            headers,
            body,
        })
    }

    /// One attempt: the status and the body's text; a status outside 2xx is an error.
    async fn send(&self, call: &Call) -> Result<(u16, String), ProviderError> {
        let mut builder = crate::http::client()
            .request(self.method.clone(), &call.url)
            .headers(call.headers.clone());
        if let Some(body) = &call.body {
            builder = builder.body(body.clone());
        }
        if let Some(t) = self.timeout {
            builder = builder.timeout(t);
        }
        let response = builder
            .send()
            .await
            .map_err(|e| super::retry::transport_error(e, self.timeout))?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|e| super::retry::transport_error(e, self.timeout))?;
        if !(200..300).contains(&status) {
            return Err(ProviderError::Http {
                status,
                message: crate::process::tail(&text, 500, &self.secrets),
                retry_after: None,
            });
        }
        Ok((status, text))
    }

    /// `transform_response` applied to the answer: a property path of `json` read here, any
    /// other code run by node.
    async fn transform(&self, code: &str, json: &Value, text: &str) -> Result<Value, ProviderError> {
        if let Some(found) = property_path(code, json) {
            return Ok(found.clone());
        }
        let value = self
            .js(code, &["json", "text", "context"], vec![json.clone(), json!(text), json!({})], JsForm::Response)
            .await
            .map_err(|e| ProviderError::Transform(format!("Failed to transform response: Error: {e}")))?;
        Ok(value)
    }

    async fn js(&self, code: &str, params: &[&str], args: Vec<Value>, form: JsForm) -> Result<Value, String> {
        let call = JsCall {
            code,
            dir: &self.dir,
            params,
            args,
            form,
        };
        script::run_js(&self.pool, call, &self.child_env, &self.secrets).await
    }
}

/// The prompt as promptfoo passes it to a provider: a chat as its JSON messages.
fn prompt_text(request: &ProviderRequest) -> String {
    match &request.chat_prompt {
        Some(messages) if messages.len() > 1 => serde_json::to_string(messages).unwrap_or_default(),
        _ => request.question.clone(),
    }
}

/// Every string of `tree` rendered with `scope`; a string that is only `{{ prompt }}` (or
/// another variable) takes the variable's value as it is, so a structured prompt stays JSON.
fn rendered_tree(tree: &Value, scope: &Map<String, Value>) -> Result<Value, ProviderError> {
    Ok(match tree {
        Value::String(text) => {
            let bare = text
                .trim()
                .strip_prefix("{{")
                .and_then(|t| t.strip_suffix("}}"))
                .map(str::trim)
                .filter(|name| name.chars().all(|c| c.is_alphanumeric() || c == '_'));
            match bare.and_then(|name| scope.get(name)) {
                Some(value) if !value.is_string() => value.clone(),
                _ => Value::String(
                    template::render(text, scope)
                        .map_err(|e| ProviderError::Setup(format!("http provider body template: {e}")))?,
                ),
            }
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| rendered_tree(i, scope))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), rendered_tree(v, scope)?)))
                .collect::<Result<_, ProviderError>>()?,
        ),
        other => other.clone(),
    })
}

/// What a transform returned, read as promptfoo's HTTP provider reads it: text is the answer;
/// an object with a non-empty `output` is a provider response; anything else is the answer
/// itself.
fn response_of(parsed: Value) -> Result<ProviderResponse, ProviderError> {
    let has_output = parsed.get("output").is_some_and(|o| match o {
        Value::Null | Value::Bool(false) => false,
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
        _ => true,
    });
    if has_output {
        return script::answer(&parsed);
    }
    Ok(ProviderResponse::text(match parsed {
        Value::String(text) => text,
        Value::Null => String::new(),
        other => other.to_string(),
    }))
}

/// The value at a plain property path of `json` (`json.a.b[0]["c"]`), when `code` is one and
/// every step exists; `None` sends the code to node, which gives JavaScript's own answer.
fn property_path<'v>(code: &str, json: &'v Value) -> Option<&'v Value> {
    let mut rest = code.trim().strip_prefix("json")?;
    let mut at = json;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                .unwrap_or(after.len());
            let (name, tail) = after.split_at(end);
            if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            at = at.as_object()?.get(name)?;
            rest = tail;
        } else if let Some(after) = rest.strip_prefix('[') {
            let (inside, tail) = after.split_once(']')?;
            at = match inside.trim() {
                n if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => at.as_array()?.get(n.parse::<usize>().ok()?)?,
                quoted => {
                    let key = quoted
                        .strip_prefix('"')
                        .and_then(|q| q.strip_suffix('"'))
                        .or_else(|| quoted.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')))?;
                    if key.contains(['\\', '"', '\'']) {
                        return None;
                    }
                    at.as_object()?.get(key)?
                }
            };
            rest = tail;
        } else {
            return None;
        }
    }
    // `json` alone, or a path ending on null, is JavaScript's business (`json || text`, ...).
    (!std::ptr::eq(at, json) && !at.is_null()).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_property_paths_are_read_without_node() {
        let json = json!({"choices": [{"message": {"content": "hi"}}], "a-b": {"c": 1}, "n": null});
        assert_eq!(
            property_path("json.choices[0].message.content", &json),
            Some(&json!("hi"))
        );
        assert_eq!(property_path(" json['a-b'][\"c\"] ", &json), Some(&json!(1)));
        for code in [
            "json.choices[1].message",
            "json.missing.x",
            "json.n",
            "json",
            "json.choices.map(c => c)",
            "text",
            "json.choices[0].message.content.toUpperCase()",
        ] {
            assert_eq!(property_path(code, &json), None, "{code}");
        }
    }

    #[test]
    fn a_transform_result_reads_as_promptfoos_http_provider_reads_it() {
        let text = |v: Value| {
            response_of(v)
                .map(|r| r.output_messages[0].text().unwrap_or_default())
                .map_err(|e| e.to_string())
        };
        assert_eq!(text(json!("plain")), Ok("plain".to_owned()));
        assert_eq!(text(json!({"output": "x", "cost": 1})), Ok("x".to_owned()));
        assert_eq!(text(json!({"answer": 2})), Ok("{\"answer\":2}".to_owned()));
        assert_eq!(text(json!({"output": "", "k": 1})), Ok("{\"k\":1,\"output\":\"\"}".to_owned()));
        assert_eq!(text(json!({"output": "x", "error": "bad"})), Err("bad".to_owned()));
        assert_eq!(text(Value::Null), Ok(String::new()));
    }

    #[test]
    fn a_body_renders_vars_and_keeps_a_structured_prompt_as_json() {
        let mut scope = Map::new();
        scope.insert("prompt".into(), json!([{"role": "user", "content": "hi"}]));
        scope.insert("city".into(), json!("Paris"));
        let body = json!({"messages": "{{ prompt }}", "q": "Weather in {{city}}?", "n": 2});
        let got = rendered_tree(&body, &scope).expect("rendered");
        assert_eq!(
            got,
            json!({"messages": [{"role": "user", "content": "hi"}], "q": "Weather in Paris?", "n": 2})
        );
    }
}
