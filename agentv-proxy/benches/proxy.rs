//! Proxy costs: start + shutdown per judge invocation, and the overhead of one call through it.
//!
//! `cargo bench -p agentv-proxy` prints medians and 90th percentiles. The invoker answers at
//! once, so a call's time is all proxy + HTTP (client included, as a judge would pay it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentv_eval_sdk::{InvokeRequest, InvokeResponse, OutputMessage, TargetClient};
use agentv_proxy::{InvokeError, ProxyConfig, TargetInvoker, TargetProxy};
use futures::future::BoxFuture;

struct Instant0;

impl TargetInvoker for Instant0 {
    fn default_target(&self) -> String {
        "judge".into()
    }
    fn available_targets(&self) -> Vec<String> {
        vec!["judge".into()]
    }
    fn check_target(&self, _: &str) -> Result<(), InvokeError> {
        Ok(())
    }
    fn invoke(
        &self,
        _: Option<String>,
        request: InvokeRequest,
    ) -> BoxFuture<'static, Result<InvokeResponse, InvokeError>> {
        Box::pin(async move {
            Ok(InvokeResponse {
                output_messages: vec![OutputMessage::assistant(request.question.clone())],
                raw_text: Some(request.question),
                error: None,
                token_usage: None,
            })
        })
    }
}

fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    (samples[samples.len() / 2], samples[samples.len() * 9 / 10])
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let invoker: Arc<dyn TargetInvoker> = Arc::new(Instant0);

    // Start + shutdown, as every proxied judge run pays it.
    let runs = 1000;
    let mut lifecycle = Vec::with_capacity(runs);
    runtime.block_on(async {
        for _ in 0..runs {
            let started = Instant::now();
            let proxy = TargetProxy::start(ProxyConfig { max_calls: 50 }, invoker.clone())
                .await
                .expect("start");
            proxy.shutdown().await;
            lifecycle.push(started.elapsed());
        }
    });
    let (median, p90) = percentiles(lifecycle);
    println!(
        "proxy start + shutdown   median {:>10}   p90 {:>10}   ({runs} runs)",
        us(median),
        us(p90)
    );

    // Calls over one keep-alive connection with the SDK's blocking client.
    let calls = 5000;
    let proxy = runtime
        .block_on(TargetProxy::start(ProxyConfig { max_calls: u32::MAX }, invoker.clone()))
        .expect("start");
    let client = TargetClient::new(proxy.url(), proxy.token());
    let request = InvokeRequest::new("Is this chunk relevant? yes or no.");
    for _ in 0..200 {
        client.invoke(&request).expect("warm-up call");
    }
    let mut per_call = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        client.invoke(&request).expect("call");
        per_call.push(started.elapsed());
    }
    let (median, p90) = percentiles(per_call);
    println!(
        "call through the proxy   median {:>10}   p90 {:>10}   ({calls} calls, zero-latency target)",
        us(median),
        us(p90)
    );
    runtime.block_on(proxy.shutdown());
}
