//! Google OAuth access tokens for Vertex AI from a credentials file, as Google's auth library
//! gets them (`docs/promptfoo.md#vertex-ai`):
//!
//! - a **service-account key** (`"type": "service_account"`): a JWT signed with the key
//!   (RS256), exchanged at the key's `token_uri` for a token (the JWT-bearer grant);
//! - **user credentials** from `gcloud auth application-default login`
//!   (`"type": "authorized_user"`): the refresh token exchanged for an access token.
//!
//! A token is kept until a minute before it expires. The key, the refresh token and every
//! token fetched are secrets: registered for redaction, never in a message.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::json;
use tokio::sync::Mutex;

use super::ProviderError;
use crate::redact::{Secret, Secrets};

/// The scope Vertex AI needs.
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// Google's token endpoint, for credentials that do not name one.
const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// How long a signed JWT asks to be valid (Google's most).
const JWT_LIFETIME: Duration = Duration::from_secs(3600);
/// A token is fetched again this long before it expires.
const EARLY: Duration = Duration::from_secs(60);
/// The longest a token is kept, whatever its `expires_in` says (Google's last an hour).
const LONGEST: Duration = Duration::from_secs(24 * 3600);

/// Why a credentials file cannot be used; found when the target is built.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("not a JSON credentials file: {0}")]
    NotJson(String),
    #[error("`type` is `{0}`; agentv reads `service_account` keys and `authorized_user` credentials")]
    UnknownType(String),
    #[error("`{0}` is missing")]
    Missing(&'static str),
    #[error("`private_key` is not a PEM private key agentv can sign with (RSA): {0}")]
    Key(&'static str),
}

/// What the credentials say, validated.
#[derive(Debug)]
enum Grant {
    ServiceAccount {
        client_email: String,
        key_id: Option<String>,
        /// The PEM private key.
        private_key: Secret,
    },
    AuthorizedUser {
        client_id: String,
        client_secret: Secret,
        refresh_token: Secret,
    },
}

/// Credentials and the token they last gave.
#[derive(Debug)]
pub struct TokenSource {
    grant: Grant,
    token_uri: String,
    /// The service account's project, the default for `project`.
    pub project_id: Option<String>,
    secrets: Secrets,
    cached: Mutex<Option<(Secret, Instant)>>,
}

#[derive(Deserialize)]
struct RawCredentials {
    #[serde(rename = "type")]
    kind: Option<String>,
    client_email: Option<String>,
    private_key_id: Option<String>,
    private_key: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    refresh_token: Option<String>,
    token_uri: Option<String>,
    project_id: Option<String>,
    quota_project_id: Option<String>,
}

impl TokenSource {
    /// Reads credentials from their JSON text; their secret parts are added to `secrets`.
    pub fn parse(text: &str, secrets: &Secrets) -> Result<Self, CredentialsError> {
        let raw: RawCredentials = serde_json::from_str(text).map_err(|e| CredentialsError::NotJson(e.to_string()))?;
        let need = |value: Option<String>, name: &'static str| value.ok_or(CredentialsError::Missing(name));
        let kind = need(raw.kind, "type")?;
        let grant = match kind.as_str() {
            "service_account" => {
                let private_key = need(raw.private_key, "private_key")?;
                secrets.add(&private_key);
                sign(&private_key, b"check")?;
                Grant::ServiceAccount {
                    client_email: need(raw.client_email, "client_email")?,
                    key_id: raw.private_key_id,
                    private_key: Secret::new(private_key),
                }
            }
            "authorized_user" => {
                let client_secret = need(raw.client_secret, "client_secret")?;
                let refresh_token = need(raw.refresh_token, "refresh_token")?;
                secrets.add(&client_secret);
                secrets.add(&refresh_token);
                Grant::AuthorizedUser {
                    client_id: need(raw.client_id, "client_id")?,
                    client_secret: Secret::new(client_secret),
                    refresh_token: Secret::new(refresh_token),
                }
            }
            other => return Err(CredentialsError::UnknownType(other.to_owned())),
        };
        Ok(Self {
            grant,
            token_uri: raw.token_uri.unwrap_or_else(|| DEFAULT_TOKEN_URI.to_owned()),
            project_id: raw.project_id.or(raw.quota_project_id),
            secrets: secrets.clone(),
            cached: Mutex::new(None),
        })
    }

    /// An access token: the one kept while it is fresh, else a new one from the token endpoint.
    pub async fn token(&self, timeout: Option<Duration>) -> Result<Secret, ProviderError> {
        let mut cached = self.cached.lock().await;
        if let Some((token, until)) = cached.as_ref()
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let (token, lifetime) = self.fetch(timeout).await?;
        self.secrets.add(token.expose());
        let keep = lifetime.min(LONGEST).saturating_sub(EARLY);
        *cached = Some((token.clone(), Instant::now() + keep));
        Ok(token)
    }

    /// The form the token endpoint is sent.
    fn form(&self) -> Result<String, ProviderError> {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        match &self.grant {
            Grant::ServiceAccount {
                client_email,
                key_id,
                private_key,
            } => {
                let jwt = jwt(client_email, key_id.as_deref(), private_key.expose(), &self.token_uri).map_err(|e| {
                    ProviderError::Setup(format!("cannot sign the service account's token request: {e}"))
                })?;
                // An endpoint may quote it back in an error; it is worth a token for an hour.
                self.secrets.add(&jwt);
                form.append_pair("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer");
                form.append_pair("assertion", &jwt);
            }
            Grant::AuthorizedUser {
                client_id,
                client_secret,
                refresh_token,
            } => {
                form.append_pair("grant_type", "refresh_token");
                form.append_pair("client_id", client_id);
                form.append_pair("client_secret", client_secret.expose());
                form.append_pair("refresh_token", refresh_token.expose());
            }
        }
        Ok(form.finish())
    }

    /// Asks the token endpoint for a token; its reply is never quoted beyond its error fields.
    async fn fetch(&self, timeout: Option<Duration>) -> Result<(Secret, Duration), ProviderError> {
        let mut request = crate::http::client()
            .post(&self.token_uri)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(self.form()?);
        if let Some(t) = timeout {
            request = request.timeout(t);
        }
        let response = request
            .send()
            .await
            .map_err(|e| super::retry::transport_error(e, timeout))?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|e| super::retry::transport_error(e, timeout))?;
        let reply: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        if !(200..300).contains(&status) {
            let field = |k: &str| reply.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
            let mut reason = [field("error"), field("error_description")]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(": ");
            if reason.is_empty() {
                reason = "its reply gives no `error`".to_owned();
            }
            return Err(ProviderError::Http {
                status,
                message: self
                    .secrets
                    .redact(&format!(
                        "the token endpoint {} refused the credentials: {reason}",
                        self.token_uri
                    ))
                    .into_owned(),
                retry_after: None,
            });
        }
        let token = reply
            .get("access_token")
            .and_then(|v| v.as_str())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ProviderError::malformed("the token endpoint", "no `access_token` in its reply"))?;
        let lifetime = reply
            .get("expires_in")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(3600);
        Ok((Secret::new(token), Duration::from_secs(lifetime)))
    }
}

/// The JWT-bearer grant's assertion: `header.claims.signature`, each base64url.
fn jwt(
    client_email: &str,
    key_id: Option<&str>,
    private_key: &str,
    audience: &str,
) -> Result<String, CredentialsError> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut header = json!({"alg": "RS256", "typ": "JWT"});
    if let Some(kid) = key_id {
        header["kid"] = json!(kid);
    }
    let claims = json!({
        "iss": client_email,
        "scope": SCOPE,
        "aud": audience,
        "iat": now,
        "exp": now + JWT_LIFETIME.as_secs(),
    });
    let signed = format!(
        "{}.{}",
        crate::redact::base64_url(header.to_string().as_bytes()),
        crate::redact::base64_url(claims.to_string().as_bytes())
    );
    let signature = sign(private_key, signed.as_bytes())?;
    Ok(format!("{signed}.{}", crate::redact::base64_url(&signature)))
}

/// RSASSA-PKCS1-v1_5 with SHA-256 of `message` by the PEM `private_key`.
fn sign(private_key: &str, message: &[u8]) -> Result<Vec<u8>, CredentialsError> {
    use rustls::pki_types::PrivateKeyDer;
    use rustls::pki_types::pem::PemObject;
    // The parsers' own messages can quote the key's bytes: only fixed words are shown. A key
    // pasted with its line breaks as the two characters `\n` is read with them as breaks.
    let der = PrivateKeyDer::from_pem_slice(private_key.as_bytes())
        .or_else(|_| PrivateKeyDer::from_pem_slice(private_key.replace("\\n", "\n").as_bytes()))
        .map_err(|_| CredentialsError::Key("no readable PEM section"))?;
    let key = rustls::crypto::ring::sign::any_supported_type(&der)
        .map_err(|_| CredentialsError::Key("not a key it can read"))?;
    let signer = key
        .choose_scheme(&[rustls::SignatureScheme::RSA_PKCS1_SHA256])
        .ok_or(CredentialsError::Key("not an RSA key"))?;
    signer
        .sign(message)
        .map_err(|_| CredentialsError::Key("signing with it failed"))
}

#[cfg(test)]
mod tests {
    use agentv_testkit::google::{self, TokenEndpoint};

    use super::*;

    fn field<'a>(form: &'a [(String, String)], key: &str) -> Option<&'a str> {
        form.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    #[tokio::test]
    async fn a_service_account_signs_a_jwt_for_a_token_and_keeps_it() {
        let endpoint = TokenEndpoint::start().await;
        let secrets = Secrets::default();
        let key = google::service_account(&endpoint.uri(), "proj-9").to_string();
        let source = TokenSource::parse(&key, &secrets).expect("a valid key");
        assert_eq!(source.project_id.as_deref(), Some("proj-9"));
        for _ in 0..3 {
            assert_eq!(source.token(None).await.expect("a token").expose(), google::TOKEN);
        }
        let forms = endpoint.forms().await;
        assert_eq!(forms.len(), 1, "the token is kept until it expires");
        assert_eq!(
            field(&forms[0], "grant_type"),
            Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
        );
        let (header, claims) = google::verified_jwt(field(&forms[0], "assertion").unwrap_or_default())
            .expect("signed by the service account's key");
        assert_eq!(header, json!({"alg": "RS256", "typ": "JWT", "kid": "test-key-1"}));
        assert_eq!(claims["iss"], "evals@test-project.iam.gserviceaccount.com");
        assert_eq!(claims["aud"], json!(endpoint.uri()));
        assert_eq!(claims["scope"], SCOPE);
        let lifetime = claims["exp"].as_u64().unwrap_or(0) - claims["iat"].as_u64().unwrap_or(0);
        assert_eq!(lifetime, 3600);
        assert!(secrets.contains(google::TOKEN), "the token is redacted");
        assert!(secrets.contains(google::PRIVATE_KEY), "the key is redacted");
    }

    #[tokio::test]
    async fn user_credentials_exchange_their_refresh_token() {
        let endpoint = TokenEndpoint::start().await;
        let secrets = Secrets::default();
        let user = json!({"type": "authorized_user", "client_id": "cid.apps", "client_secret": "d-secret-1",
                          "refresh_token": "1//refresh-me", "token_uri": endpoint.uri(), "quota_project_id": "q-1"});
        let source = TokenSource::parse(&user.to_string(), &secrets).expect("valid credentials");
        assert_eq!(source.project_id.as_deref(), Some("q-1"));
        assert_eq!(source.token(None).await.expect("a token").expose(), google::TOKEN);
        let forms = endpoint.forms().await;
        let want = [
            ("grant_type", "refresh_token"),
            ("client_id", "cid.apps"),
            ("client_secret", "d-secret-1"),
            ("refresh_token", "1//refresh-me"),
        ];
        for (key, value) in want {
            assert_eq!(field(&forms[0], key), Some(value), "{key}");
        }
        assert!(secrets.contains("1//refresh-me") && secrets.contains("d-secret-1"));
    }

    /// The test key, its tokens from `endpoint`.
    fn key_for(endpoint: &TokenEndpoint) -> TokenSource {
        let key = google::service_account(&endpoint.uri(), "p").to_string();
        TokenSource::parse(&key, &Secrets::default()).expect("a valid key")
    }

    #[tokio::test]
    async fn a_refusal_says_why_without_the_credentials() {
        let endpoint = TokenEndpoint::answering(
            400,
            json!({"error": "invalid_grant", "error_description": "Invalid JWT Signature."}),
        )
        .await;
        let source = key_for(&endpoint);
        let err = source.token(None).await.expect_err("refused");
        let text = err.to_string();
        assert!(text.starts_with("HTTP 400: the token endpoint"), "{text}");
        assert!(
            text.ends_with("refused the credentials: invalid_grant: Invalid JWT Signature."),
            "{text}"
        );
        assert!(!text.contains("PRIVATE KEY"), "{text}");
        // A reply that quotes the signed request back: the request is redacted too.
        let endpoint = TokenEndpoint::echoing_the_assertion().await;
        let source = key_for(&endpoint);
        let err = source.token(None).await.expect_err("refused").to_string();
        assert!(err.contains("invalid_grant: bad assertion ***"), "{err}");
        let endpoint = TokenEndpoint::answering_text(500, "<html>Internal error</html>").await;
        let source = key_for(&endpoint);
        let err = source.token(None).await.expect_err("refused").to_string();
        assert!(
            err.starts_with("HTTP 500:") && err.ends_with("its reply gives no `error`"),
            "{err}"
        );
        // A lifetime past any clock is kept a day at most, never a panic.
        let endpoint =
            TokenEndpoint::answering(200, json!({"access_token": "ya29.long", "expires_in": u64::MAX})).await;
        let source = key_for(&endpoint);
        assert_eq!(source.token(None).await.expect("a token").expose(), "ya29.long");
        let endpoint = TokenEndpoint::answering(200, json!({"token_type": "Bearer"})).await;
        let source = key_for(&endpoint);
        let err = source.token(None).await.expect_err("no token").to_string();
        assert!(err.contains("no `access_token` in its reply"), "{err}");
    }

    #[test]
    fn unusable_credentials_are_named_by_what_is_wrong() {
        let key = google::service_account("http://127.0.0.1:9/token", "p");
        let mut no_email = key.clone();
        no_email.as_object_mut().map(|o| o.remove("client_email"));
        let mut bad_key = key.clone();
        bad_key["private_key"] = json!("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
        let mut cut_key = key.clone();
        cut_key["private_key"] = json!(&google::PRIVATE_KEY[..600]);
        // A key pasted with `\n` for its line breaks is read.
        let mut escaped = key.clone();
        escaped["private_key"] = json!(google::PRIVATE_KEY.replace('\n', "\\n"));
        assert!(TokenSource::parse(&escaped.to_string(), &Secrets::default()).is_ok());
        for (text, want) in [
            ("not json".to_owned(), "not a JSON credentials file"),
            (
                json!({"type": "external_account"}).to_string(),
                "`type` is `external_account`",
            ),
            (json!({"client_email": "x"}).to_string(), "`type` is missing"),
            (no_email.to_string(), "`client_email` is missing"),
            (bad_key.to_string(), "`private_key` is not a PEM private key"),
            (
                cut_key.to_string(),
                "`private_key` is not a PEM private key agentv can sign with (RSA): no readable PEM section",
            ),
            (
                json!({"type": "authorized_user", "client_id": "c", "client_secret": "s-123"}).to_string(),
                "`refresh_token` is missing",
            ),
        ] {
            let err = TokenSource::parse(&text, &Secrets::default())
                .expect_err(want)
                .to_string();
            assert!(err.starts_with(want), "{err}");
            assert!(
                !err.contains("MII") && !err.contains("45, 45"),
                "no key material: {err}"
            );
        }
    }
}
