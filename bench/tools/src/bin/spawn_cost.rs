//! The cost of spawning a code judge outside agentv: runs `PROGRAM ARGS...` N times in a row,
//! each with a code-judge payload on stdin, and prints the median and 90th-percentile wall time.
//!
//! ```text
//! spawn-cost N PROGRAM [ARGS...]
//! ```

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let program = args.next().unwrap_or_else(|| "true".to_owned());
    let rest: Vec<String> = args.collect();
    let payload = serde_json::to_vec(&agentv_eval_sdk::CodeJudgePayload {
        eval_id: "case-000001".into(),
        question: "Case 1: what is 2+2?".into(),
        candidate_answer: "The answer is 4.".into(),
        ..Default::default()
    })
    .expect("payload");
    let mut samples: Vec<Duration> = (0..n)
        .map(|_| {
            let started = Instant::now();
            let mut child = Command::new(&program)
                .args(&rest)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawns");
            child.stdin.take().expect("stdin").write_all(&payload).expect("writes");
            let out = child.wait_with_output().expect("waits");
            assert!(out.status.success(), "judge failed");
            started.elapsed()
        })
        .collect();
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "spawn {program}: median {:.3} ms, p90 {:.3} ms over {n} runs",
        ms(samples[n / 2]),
        ms(samples[n * 9 / 10])
    );
}
