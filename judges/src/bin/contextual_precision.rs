//! `agentv-contextual-precision`: the contextual precision judge as a program (see `agentv_judges::contextual_precision`).

use std::process::ExitCode;

fn main() -> ExitCode {
    agentv_eval_sdk::run_judge(agentv_judges::contextual_precision::judge)
}
