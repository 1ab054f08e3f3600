//! `agentv-contextual-relevancy`: the contextual relevancy judge as a program (see `agentv_judges::contextual_relevancy`).

use std::process::ExitCode;

fn main() -> ExitCode {
    agentv_eval_sdk::run_judge(agentv_judges::contextual_relevancy::judge)
}
