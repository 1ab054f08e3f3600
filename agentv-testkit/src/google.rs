//! A fake Google OAuth token endpoint and a service-account key made for tests only (generated
//! for this kit; it grants nothing anywhere), for the Vertex AI credentials tests.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The test key's PEM (PKCS#8) private key.
pub const PRIVATE_KEY: &str = include_str!("../data/test-service-account-key.pem");
/// The test key's public half (PKCS#1 `RSAPublicKey`, DER), to check signatures.
const PUBLIC_KEY: &[u8] = include_bytes!("../data/test-service-account-key.pub.der");

/// A service-account key file's JSON for the test key, its tokens from `token_uri`.
pub fn service_account(token_uri: &str, project: &str) -> Value {
    json!({
        "type": "service_account",
        "project_id": project,
        "private_key_id": "test-key-1",
        "private_key": PRIVATE_KEY,
        "client_email": "evals@test-project.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "token_uri": token_uri,
    })
}

/// A token endpoint at `/token` that hands out `ya29.test-token` and records what it is sent.
pub struct TokenEndpoint {
    server: MockServer,
}

impl TokenEndpoint {
    pub async fn start() -> Self {
        Self::answering(
            200,
            json!({"access_token": TOKEN, "expires_in": 3599, "token_type": "Bearer"}),
        )
        .await
    }

    /// An endpoint that answers every request with `status` and `body`.
    pub async fn answering(status: u16, body: Value) -> Self {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/token"))
            .respond_with(ResponseTemplate::new(status).set_body_json(body))
            .mount(&server)
            .await;
        Self { server }
    }

    /// An endpoint that refuses every request, quoting its `assertion` back in
    /// `error_description` (`bad assertion <jwt>`).
    pub async fn echoing_the_assertion() -> Self {
        struct Echo;
        impl wiremock::Respond for Echo {
            fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
                let form = url_decode_pairs(&String::from_utf8_lossy(&request.body));
                let jwt = form
                    .iter()
                    .find(|(k, _)| k == "assertion")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                ResponseTemplate::new(400).set_body_json(
                    json!({"error": "invalid_grant", "error_description": format!("bad assertion {jwt}")}),
                )
            }
        }
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/token"))
            .respond_with(Echo)
            .mount(&server)
            .await;
        Self { server }
    }

    /// An endpoint that answers every request with `status` and a text `body`.
    pub async fn answering_text(status: u16, body: &str) -> Self {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/token"))
            .respond_with(ResponseTemplate::new(status).set_body_string(body))
            .mount(&server)
            .await;
        Self { server }
    }

    pub fn uri(&self) -> String {
        format!("{}/token", self.server.uri())
    }

    /// The forms it was sent, decoded.
    pub async fn forms(&self) -> Vec<Vec<(String, String)>> {
        let requests = self.server.received_requests().await.unwrap_or_default();
        requests
            .iter()
            .map(|r| url_decode_pairs(&String::from_utf8_lossy(&r.body)))
            .collect()
    }
}

/// The token [`TokenEndpoint::start`] hands out.
pub const TOKEN: &str = "ya29.test-token-for-vertex";

/// `a=b&c=d` with `%XX` and `+` decoded.
fn url_decode_pairs(form: &str) -> Vec<(String, String)> {
    let decode = |s: &str| {
        let bytes = s.replace('+', " ").into_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match (bytes[i], bytes.get(i + 1..i + 3)) {
                (b'%', Some(hex)) => {
                    let hex = std::str::from_utf8(hex).unwrap_or("");
                    out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                    i += 3;
                }
                (b, _) => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    form.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// The header and claims of a JWT whose RS256 signature the test key made; `None` when the
/// signature does not verify.
pub fn verified_jwt(jwt: &str) -> Option<(Value, Value)> {
    let mut parts = jwt.split('.');
    let (header, claims, signature) = (parts.next()?, parts.next()?, parts.next()?);
    let key = ring::signature::UnparsedPublicKey::new(&ring::signature::RSA_PKCS1_2048_8192_SHA256, PUBLIC_KEY);
    key.verify(format!("{header}.{claims}").as_bytes(), &base64_url_decode(signature)?)
        .ok()?;
    let json = |part: &str| serde_json::from_slice(&base64_url_decode(part)?).ok();
    Some((json(header)?, json(claims)?))
}

fn base64_url_decode(text: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.bytes() {
        let value = ALPHABET.iter().position(|a| *a == c)? as u32;
        bits = (bits << 6) | value;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    Some(out)
}
