//! Drives sdk/conformance/fake_proxy.py, the replaying target proxy every runner shares.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::matchers::{Failure, Outcome};

pub struct FakeProxy {
    child: Child,
    stdin: Option<ChildStdin>,
    pub url: String,
    agent: ureq::Agent,
}

impl FakeProxy {
    /// Starts the fake proxy and reads its address from its first stdout line.
    pub fn start(script: &Path) -> Result<Self, String> {
        let mut child = Command::new("python3")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", script.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .map_err(|e| format!("fake proxy: {e}"))?;
        let url = serde_json::from_str::<Value>(&first)
            .ok()
            .and_then(|v| v["url"].as_str().map(str::to_owned))
            .ok_or_else(|| format!("fake proxy printed {first:?}, not its address"))?;
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(Duration::from_secs(10)))
            .build();
        Ok(Self {
            stdin: child.stdin.take(),
            child,
            url,
            agent: ureq::Agent::new_with_config(config),
        })
    }

    /// Arms the proxy with a case's exchanges.
    pub fn load(&self, token: &str, exchanges: &Value) -> Outcome {
        let exchanges = if exchanges.is_null() { &json!([]) } else { exchanges };
        let body = json!({"token": token, "exchanges": exchanges});
        self.agent
            .post(format!("{}/__conformance/load", self.url))
            .send_json(&body)
            .map_err(|e| Failure(format!("fake proxy load: {e}")))?;
        Ok(())
    }

    /// Fails when the proxy saw a request it did not expect, or missed one it did.
    pub fn verify(&self) -> Outcome {
        let mut answer = self
            .agent
            .get(format!("{}/__conformance/report", self.url))
            .call()
            .map_err(|e| Failure(format!("fake proxy report: {e}")))?;
        let report: Value = answer
            .body_mut()
            .read_json()
            .map_err(|e| Failure(format!("fake proxy report: {e}")))?;
        let problems = report["problems"].as_array().cloned().unwrap_or_default();
        if !problems.is_empty() {
            let listed: Vec<String> = problems
                .iter()
                .map(|p| p.as_str().unwrap_or_default().to_owned())
                .collect();
            return Err(Failure(format!("proxy saw: {}", listed.join("; "))));
        }
        match report["remaining"].as_u64() {
            Some(0) => Ok(()),
            n => Err(Failure(format!("{n:?} expected proxy request(s) never came"))),
        }
    }
}

impl Drop for FakeProxy {
    fn drop(&mut self) {
        // Closing its stdin stops it.
        self.stdin.take();
        let _ = self.child.wait();
    }
}

/// An address where nothing listens.
pub fn refused_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(9);
    format!("http://127.0.0.1:{port}")
}
