//! `agentv-contextual-recall`: the contextual recall judge as a program (see `agentv_judges::contextual_recall`).

use std::process::ExitCode;

fn main() -> ExitCode {
    agentv_eval_sdk::run_judge(agentv_judges::contextual_recall::judge)
}
