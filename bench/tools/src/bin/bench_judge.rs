//! A minimal code judge for benchmarks: `bench-judge` reads the payload and prints score 1;
//! `bench-judge proxy N` first makes N calls through the target proxy.

use std::process::ExitCode;

use agentv_eval_sdk::{InvokeRequest, JudgeResult, run_judge};

fn main() -> ExitCode {
    let calls: usize = match std::env::args().nth(1).as_deref() {
        Some("proxy") => std::env::args().nth(2).and_then(|n| n.parse().ok()).unwrap_or(3),
        _ => 0,
    };
    run_judge(move |payload, target| {
        if calls > 0 {
            let target = target.ok_or("no proxy: set `target:` on the evaluator")?;
            for i in 0..calls {
                target.invoke(&InvokeRequest::new(format!(
                    "Is chunk {i} relevant to: {}",
                    payload.question
                )))?;
            }
        }
        Ok(JudgeResult::new(1.0)?.hit(format!("{} characters", payload.candidate_answer.len())))
    })
}
