//! `vertex`: Gemini models on Google Vertex AI, through the same generateContent request and
//! answer as `gemini` (`gemini.rs`), at Vertex's URL and with Vertex's authentication
//! (`docs/promptfoo.md#vertex-ai`, and the provider table of `README.md`):
//!
//! - express mode, an API key (`api_key`, sent as `x-goog-api-key`):
//!   `{base_url}/{api_version}/publishers/{publisher}/models/{model}:generateContent`;
//! - an OAuth access token (`access_token`, sent as `Authorization: Bearer`), for a project:
//!   `{base_url}/{api_version}/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}:generateContent`;
//! - a credentials file (`credentials_file`, or its text as `credentials`): a service-account
//!   key or gcloud's user credentials, which give the access token ([`super::google_auth`]).
//!
//! `base_url` defaults to `https://{region}-aiplatform.googleapis.com` (the `global` region's
//! is `https://aiplatform.googleapis.com`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::gemini::{generate_body, parse_generation};
use super::google_auth::TokenSource;
use super::llm::{self, HttpCall, LLM_KEYS, LlmSettings, RETRY_KEYS, TOOL_KEYS};
use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderFuture, ProviderKind, ProviderRequest,
    ProviderError, ProviderResponse, TargetSettings,
};
use crate::config::{Key, KeyTable, Kind};
use crate::model::ToolSettings;
use crate::redact::Secret;

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&ENTRY];

pub(crate) static ENTRY: ProviderEntry = ProviderEntry {
    name: "vertex",
    aliases: &["vertex-ai", "google-vertex"],
    doc: "Gemini on Google Vertex AI (generateContent), by API key (express mode) or access token.",
    class: ProviderClass::Llm,
    batch: false,
    cacheable: true,
    executable: None,
    container: false,
    keys: &KEYS,
    build,
};

const OWN: &[Key] = &[
    Key::new("model", Kind::Text, "Model name, e.g. gemini-2.5-flash.").required(),
    Key::new(
        "project",
        Kind::Text,
        "Google Cloud project id (needed with `access_token`).",
    )
    .aliases(&["project_id"]),
    Key::new(
        "region",
        Kind::Text,
        "Vertex AI region (default us-central1 with an API key, else global).",
    )
    .aliases(&["location"]),
    Key::new(
        "base_url",
        Kind::Url,
        "Server URL (default https://{region}-aiplatform.googleapis.com).",
    ),
    Key::new("api_version", Kind::Text, "API version in the path (default v1)."),
    Key::new("publisher", Kind::Text, "Model publisher in the path (default google)."),
    Key::new(
        "api_key",
        Kind::Text,
        "Express-mode API key, e.g. `${{ VERTEX_API_KEY }}`.",
    ),
    Key::new(
        "access_token",
        Kind::Text,
        "OAuth access token, e.g. `${{ VERTEX_ACCESS_TOKEN }}` set from `gcloud auth print-access-token`.",
    ),
    Key::new(
        "credentials_file",
        Kind::Text,
        "A service-account key or `gcloud auth application-default login` credentials (JSON), relative to this file; it gives the access tokens.",
    ),
    Key::new(
        "credentials",
        Kind::Text,
        "The same credentials as JSON text, e.g. `${{ GOOGLE_CREDENTIALS_JSON }}`.",
    ),
];
const KEYS: KeyTable = KeyTable::new(
    "vertex",
    "Settings of a `vertex` target.",
    &[OWN, LLM_KEYS, RETRY_KEYS, TOOL_KEYS],
);

/// How requests authenticate, and so which URL they go to.
#[derive(Debug, Clone)]
pub enum VertexAuth {
    /// Express mode: `x-goog-api-key`, no project or region in the path.
    ApiKey(Secret),
    /// `Authorization: Bearer`, for `project` in `region`.
    Token { token: Secret, project: String },
    /// `Authorization: Bearer` with tokens the credentials give, for `project` in `region`.
    Credentials { source: Arc<TokenSource>, project: String },
}

/// Vertex settings, validated.
#[derive(Debug, Clone)]
pub struct VertexConfig {
    pub base_url: String,
    pub api_version: String,
    pub publisher: String,
    pub region: String,
    pub model: String,
    pub auth: VertexAuth,
    pub llm: LlmSettings,
    pub tools: ToolSettings,
}

/// A Gemini model on Vertex AI.
#[derive(Debug)]
pub struct VertexProvider {
    name: String,
    config: VertexConfig,
}

impl VertexProvider {
    pub fn new(name: impl Into<String>, config: VertexConfig) -> Self {
        Self {
            name: name.into(),
            config,
        }
    }

    /// The generateContent URL: without project and region in express mode.
    pub fn url(&self) -> String {
        let c = &self.config;
        let base = c.base_url.trim_end_matches('/');
        let scope = match &c.auth {
            VertexAuth::ApiKey(_) => String::new(),
            VertexAuth::Token { project, .. } | VertexAuth::Credentials { project, .. } => {
                format!("projects/{project}/locations/{}/", c.region)
            }
        };
        format!(
            "{base}/{}/{scope}publishers/{}/models/{}:generateContent",
            c.api_version, c.publisher, c.model
        )
    }

    /// The header that authenticates a request; credentials give (or keep) a token first.
    async fn auth_header(&self) -> Result<(&'static str, String), ProviderError> {
        Ok(match &self.config.auth {
            // The key goes in a header, never in the URL.
            VertexAuth::ApiKey(key) => ("x-goog-api-key", key.expose().to_owned()),
            VertexAuth::Token { token, .. } => ("authorization", format!("Bearer {}", token.expose())),
            VertexAuth::Credentials { source, .. } => {
                let token = source.token(self.config.llm.timeout).await?;
                ("authorization", format!("Bearer {}", token.expose()))
            }
        })
    }

    pub fn http_call(&self, request: &ProviderRequest, auth: (&'static str, String)) -> HttpCall {
        let c = &self.config;
        HttpCall {
            url: self.url(),
            headers: vec![("content-type", "application/json".to_owned()), auth],
            body: generate_body(&c.llm, request),
            timeout: c.llm.timeout,
            secrets: c.llm.secrets.clone(),
            throttle: Some(c.llm.throttle.clone()),
        }
    }
}

impl Provider for VertexProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(&ENTRY)
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move {
            let call = self.http_call(request, self.auth_header().await?);
            let (body, attempts, elapsed) = llm::send(&call, &self.config.llm.retry).await?;
            let parsed = parse_generation(&body).map_err(llm::malformed)?;
            Ok(llm::response(parsed, body, attempts, elapsed, request.tools.is_some()))
        })
    }

    fn tool_settings(&self) -> Option<&ToolSettings> {
        Some(&self.config.tools)
    }

    fn throttle(&self) -> Option<&Arc<super::Throttle>> {
        Some(&self.config.llm.throttle)
    }

    fn public_settings(&self) -> Value {
        let c = &self.config;
        let (auth, project) = match &c.auth {
            VertexAuth::ApiKey(_) => ("api_key", None),
            VertexAuth::Token { project, .. } => ("access_token", Some(project)),
            VertexAuth::Credentials { project, .. } => ("credentials", Some(project)),
        };
        json!({"base_url": c.base_url, "model": c.model, "region": c.region, "project": project, "auth": auth,
               "temperature": c.llm.temperature, "max_output_tokens": c.llm.max_output_tokens})
    }
}

/// A `vertex` target from its settings.
fn build(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let model = s.string("model", true);
    let project = s.string("project", true);
    let region = s.string("region", true);
    let base_url = s.string("base_url", true);
    let api_version = s.string("api_version", false).unwrap_or_else(|| "v1".to_owned());
    let publisher = s.string("publisher", false).unwrap_or_else(|| "google".to_owned());
    let auth = auth(s, ctx, project);
    let llm = s.llm();
    let tools = llm::tool_settings(s);
    if model.is_none() && !s.any_missing() {
        s.error(
            ctx.pos,
            format!("vertex target `{}` needs `model`", ctx.target),
            Some("for example `model: gemini-2.5-flash`".to_owned()),
        );
    }
    // `None`: reported (or a variable that is not set, reported with the others).
    let auth = auth?;
    // promptfoo's default: us-central1 in express mode, the global endpoint otherwise.
    let region = region.unwrap_or_else(|| match auth {
        VertexAuth::ApiKey(_) => "us-central1".to_owned(),
        _ => "global".to_owned(),
    });
    let base_url = base_url.unwrap_or_else(|| default_base_url(&region));
    let config = VertexConfig {
        base_url,
        api_version,
        publisher,
        region,
        model: model?,
        auth,
        llm,
        tools,
    };
    Some(Arc::new(VertexProvider::new(ctx.target, config)))
}

/// How the target authenticates: exactly one of `api_key`, `access_token` and credentials
/// (`credentials_file` or `credentials`); a token needs `project`, credentials take theirs
/// when it is not given.
fn auth(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>, project: Option<String>) -> Option<VertexAuth> {
    let ways = ["api_key", "access_token", "credentials_file", "credentials"].map(|k| s.has(k));
    let help = "set `api_key: ${{ VERTEX_API_KEY }}`, `access_token: ${{ VERTEX_ACCESS_TOKEN }}` (from `gcloud auth print-access-token`) with `project`, or `credentials_file:` a service-account key";
    let problem = match ways.iter().filter(|w| **w).count() {
        0 => Some("needs `api_key` (express mode), `access_token` or `credentials_file`"),
        1 => None,
        _ => Some("takes one of `api_key`, `access_token`, `credentials_file` and `credentials`"),
    };
    if let Some(problem) = problem {
        s.error(ctx.pos, format!("vertex target `{}` {problem}", ctx.target), Some(help.to_owned()));
        return None;
    }
    if ways[0] {
        return s.string("api_key", true).map(|key| VertexAuth::ApiKey(Secret::new(key)));
    }
    if ways[1] {
        let token = s.string("access_token", true);
        if project.is_none() && !s.is_missing("project") {
            s.error(ctx.pos, format!("vertex target `{}` needs `project` with `access_token`", ctx.target), Some(help.to_owned()));
        }
        return Some(VertexAuth::Token {
            token: Secret::new(token?),
            project: project?,
        });
    }
    let source = credentials(s, ctx)?;
    let Some(project) = project.or_else(|| source.project_id.clone()) else {
        if !s.is_missing("project") {
            s.error(
                ctx.pos,
                format!("vertex target `{}` needs `project`: its credentials name none", ctx.target),
                Some("add `project: <your Google Cloud project id>`".to_owned()),
            );
        }
        return None;
    };
    Some(VertexAuth::Credentials {
        source: Arc::new(source),
        project,
    })
}

/// The credentials of `credentials_file` (read now) or `credentials`; an error at the setting
/// names what is wrong with them, never their content.
fn credentials(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<TokenSource> {
    let pos = s.node("credentials_file").or_else(|| s.node("credentials")).map_or(ctx.pos, |n| n.pos);
    let (text, what) = match s.string("credentials_file", true) {
        Some(file) => {
            let path = s.path(file.trim());
            match std::fs::read_to_string(&path) {
                Ok(text) => (text, format!("credentials file {}", path.display())),
                Err(e) => {
                    s.error(
                        pos,
                        format!("vertex target `{}`: cannot read the credentials file {}: {e}", ctx.target, path.display()),
                        Some("give the path of a service-account key (JSON), relative to this file".to_owned()),
                    );
                    return None;
                }
            }
        }
        None => (s.string("credentials", true)?, "`credentials`".to_owned()),
    };
    match TokenSource::parse(&text, s.secrets()) {
        Ok(source) => Some(source),
        Err(e) => {
            s.error(
                pos,
                format!("vertex target `{}`: {what}: {e}", ctx.target),
                Some("use a service-account key from the Google Cloud console, or `gcloud auth application-default login`'s file".to_owned()),
            );
            None
        }
    }
}

/// `https://{region}-aiplatform.googleapis.com`, or the global endpoint's host.
pub fn default_base_url(region: &str) -> String {
    if region == "global" {
        "https://aiplatform.googleapis.com".to_owned()
    } else {
        format!("https://{region}-aiplatform.googleapis.com")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(auth: VertexAuth, region: &str) -> VertexProvider {
        VertexProvider::new(
            "t",
            VertexConfig {
                base_url: default_base_url(region),
                api_version: "v1".into(),
                publisher: "google".into(),
                region: region.into(),
                model: "gemini-2.5-flash".into(),
                auth,
                llm: LlmSettings::default(),
                tools: ToolSettings::default(),
            },
        )
    }

    async fn call_of(provider: &VertexProvider, request: &ProviderRequest) -> HttpCall {
        provider.http_call(request, provider.auth_header().await.expect("authenticates"))
    }

    #[tokio::test]
    async fn express_mode_and_token_auth_go_to_their_urls_with_their_headers() {
        let express = provider(VertexAuth::ApiKey(Secret::new("k-1")), "us-central1");
        let request = ProviderRequest {
            question: "hi".into(),
            ..ProviderRequest::default()
        };
        let call = call_of(&express, &request).await;
        assert_eq!(
            call.url,
            "https://us-central1-aiplatform.googleapis.com/v1/publishers/google/models/gemini-2.5-flash:generateContent"
        );
        assert!(call.headers.contains(&("x-goog-api-key", "k-1".to_owned())));
        assert_eq!(call.body["contents"][0], json!({"role": "user", "parts": [{"text": "hi"}]}));
        let token = VertexAuth::Token {
            token: Secret::new("ya29.t"),
            project: "my-proj".into(),
        };
        let call = call_of(&provider(token, "global"), &ProviderRequest::default()).await;
        assert_eq!(
            call.url,
            "https://aiplatform.googleapis.com/v1/projects/my-proj/locations/global/publishers/google/models/gemini-2.5-flash:generateContent"
        );
        assert!(call.headers.contains(&("authorization", "Bearer ya29.t".to_owned())));
        assert!(!call.url.contains("ya29") && !call.url.contains("k-1"), "no credential in a URL");
    }

    #[tokio::test]
    async fn credentials_give_the_bearer_token_for_their_project() {
        let endpoint = agentv_testkit::google::TokenEndpoint::start().await;
        let key = agentv_testkit::google::service_account(&endpoint.uri(), "sa-proj").to_string();
        let source = TokenSource::parse(&key, &crate::redact::Secrets::default()).expect("a valid key");
        let auth = VertexAuth::Credentials {
            project: source.project_id.clone().unwrap_or_default(),
            source: Arc::new(source),
        };
        let call = call_of(&provider(auth, "us-east5"), &ProviderRequest::default()).await;
        assert_eq!(
            call.url,
            "https://us-east5-aiplatform.googleapis.com/v1/projects/sa-proj/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent"
        );
        let bearer = format!("Bearer {}", agentv_testkit::google::TOKEN);
        assert!(call.headers.contains(&("authorization", bearer)));
    }
}
