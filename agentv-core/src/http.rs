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

/// What a request that got no HTTP answer means for another attempt
/// (`docs/architecture.md#retries`): the one rule every caller of [`client`] follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The server may answer next time: connection refused or reset, a connection closed
    /// mid-answer, a connect timeout.
    Transient,
    /// Asking again gives the same answer: an invalid URL or port, a name the resolver does not
    /// know, a certificate or TLS handshake that fails, a redirect loop.
    Permanent,
}

/// What stands behind a transport error, as far as retrying cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The request could not be built (bad URL, bad header).
    Builder,
    /// A redirect policy stopped it.
    Redirect,
    /// TLS: a certificate not trusted, a handshake that failed, TLS spoken to a plain server.
    Tls,
    /// The host name could not be resolved.
    Dns,
    /// The connection was refused, reset or aborted, or closed before the answer was whole.
    Connection,
    /// Anything else (a body that failed to stream, an unknown I/O error).
    Other,
}

impl Cause {
    /// The retry rule, in one table.
    pub fn failure(self) -> Failure {
        match self {
            Cause::Builder | Cause::Redirect | Cause::Tls | Cause::Dns => Failure::Permanent,
            Cause::Connection | Cause::Other => Failure::Transient,
        }
    }

    /// Words for messages.
    fn describe(self) -> &'static str {
        match self {
            Cause::Builder => "the request is invalid (check the URL)",
            Cause::Redirect => "too many redirects",
            Cause::Tls => "TLS failed",
            Cause::Dns => "the host name could not be resolved",
            Cause::Connection => "the connection failed",
            Cause::Other => "the request failed",
        }
    }
}

/// Why `error` happened, read from its kind and its chain of sources.
pub fn cause(error: &reqwest::Error) -> Cause {
    if error.is_builder() {
        return Cause::Builder;
    }
    if error.is_redirect() {
        return Cause::Redirect;
    }
    let mut found = Cause::Other;
    for e in chain(error) {
        if e.downcast_ref::<rustls::Error>().is_some() {
            return Cause::Tls;
        }
        // The resolver's errors are wrapped without a type of their own: hyper-util names them.
        if e.to_string() == "dns error" {
            return Cause::Dns;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            if matches!(
                io.kind(),
                ConnectionRefused | ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof | NotConnected
            ) {
                found = Cause::Connection;
            }
        }
        if e.downcast_ref::<hyper::Error>()
            .is_some_and(|h| h.is_incomplete_message() || h.is_closed())
        {
            found = Cause::Connection;
        }
    }
    if found == Cause::Other && error.is_connect() {
        return Cause::Connection;
    }
    found
}

/// `error` and its sources, looking inside `io::Error`s that wrap another error (their
/// `source()` skips the wrapped error itself).
fn chain<'e>(error: &'e (dyn std::error::Error + 'static)) -> Vec<&'e (dyn std::error::Error + 'static)> {
    let mut out = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        out.push(e);
        // An I/O error may wrap an I/O error that wraps the real one (TLS in tokio-rustls).
        let mut wrapped = e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref());
        while let Some(inner) = wrapped {
            out.push(inner);
            wrapped = inner.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref());
        }
        next = e.source();
    }
    out
}

/// The host (and port, when the URL names one) a request went to, for messages. Only the
/// host: a path or query may carry a credential (a Gemini `?key=`).
pub fn host_of(url: &reqwest::Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => "(no host)".to_owned(),
    }
}

/// A request that got no HTTP answer, described once for every caller: whether to try again,
/// and a message naming the host tried and every source of the error, never the URL's path or
/// query. `None` for a timeout, which callers handle with their own deadline.
pub fn classify(error: reqwest::Error) -> Option<(Failure, String)> {
    if error.is_timeout() {
        return None;
    }
    let cause = cause(&error);
    let host = error.url().map(host_of);
    let error = error.without_url();
    let mut detail = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(s) = source {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        source = s.source();
    }
    let target = host.map_or_else(String::new, |h| format!(" to {h}"));
    Some((
        cause.failure(),
        format!("request{target}: {} ({detail})", cause.describe()),
    ))
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::Arc;

    use super::*;

    /// The retry rule, cause by cause.
    #[test]
    fn network_errors_are_classified_once() {
        let table = [
            (Cause::Connection, Failure::Transient),
            (Cause::Other, Failure::Transient),
            (Cause::Builder, Failure::Permanent),
            (Cause::Redirect, Failure::Permanent),
            (Cause::Tls, Failure::Permanent),
            (Cause::Dns, Failure::Permanent),
        ];
        for (cause, want) in table {
            assert_eq!(cause.failure(), want, "{cause:?}");
        }
    }

    /// A server on 127.0.0.1 that treats each connection with `serve`.
    async fn server(serve: fn(tokio::net::TcpStream)) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                serve(stream);
            }
        });
        addr
    }

    async fn refused_port() -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        listener.local_addr().expect("addr")
    }

    /// Fails every lookup as a resolver that does not know the name does.
    struct NoSuchHost;
    impl reqwest::dns::Resolve for NoSuchHost {
        fn resolve(&self, _: reqwest::dns::Name) -> reqwest::dns::Resolving {
            Box::pin(async {
                Err(
                    Box::new(std::io::Error::new(std::io::ErrorKind::NotFound, "no such host"))
                        as Box<dyn std::error::Error + Send + Sync>,
                )
            })
        }
    }

    /// Real transport errors from the shared client, each classified as the table says, and
    /// each message naming the host it tried.
    #[tokio::test]
    async fn real_transport_errors_get_their_cause_and_name_the_host() {
        let closed = server(drop).await;
        let plain = server(|mut s| {
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            });
        })
        .await;
        let refused = refused_port().await;
        // Installs the crypto provider the second client needs.
        let shared = client().clone();
        let dns_client = reqwest::Client::builder()
            .dns_resolver(Arc::new(NoSuchHost))
            .build()
            .expect("client");
        let cases: Vec<(&str, reqwest::Client, String, Cause, Option<String>)> = vec![
            (
                "refused",
                shared.clone(),
                format!("http://{refused}/v1"),
                Cause::Connection,
                Some(refused.to_string()),
            ),
            (
                "closed",
                shared.clone(),
                format!("http://{closed}/v1"),
                Cause::Connection,
                Some(closed.to_string()),
            ),
            (
                "tls to plain",
                shared.clone(),
                format!("https://{plain}/v1"),
                Cause::Tls,
                Some(plain.to_string()),
            ),
            (
                "bad port",
                shared.clone(),
                "http://127.0.0.1:99999/v1?key=sekrit".to_owned(),
                Cause::Builder,
                None,
            ),
            (
                "dns",
                dns_client,
                "http://no-such-host.test:8080/v1".to_owned(),
                Cause::Dns,
                Some("no-such-host.test:8080".to_owned()),
            ),
        ];
        for (what, client, url, want, host) in cases {
            let error = client.get(&url).send().await.expect_err(what);
            let chain: Vec<String> = chain(&error).iter().map(ToString::to_string).collect();
            assert_eq!(cause(&error), want, "{what}: {chain:?}");
            let (failure, text) = classify(error).expect("not a timeout");
            assert_eq!(failure, want.failure(), "{what}: {text}");
            if let Some(host) = host {
                assert!(text.contains(&format!("request to {host}:")), "{what}: {text}");
            }
            assert!(!text.contains("sekrit") && !text.contains("/v1"), "{what}: {text}");
        }
    }
}
