//! The one HTTP client of the process.
//!
//! Connection pools are per client, so sharing one keeps connections warm across cases and
//! avoids a TLS handshake per call.

use std::sync::OnceLock;
use std::time::Duration;

static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();

/// The shared client (created on first use).
pub fn client() -> &'static reqwest::Client {
    CLIENT.get_or_init(|| {
        // reqwest is built without a default crypto provider; install ring's once. An error
        // means another provider is installed already, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .pool_idle_timeout(Duration::from_secs(90))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}
