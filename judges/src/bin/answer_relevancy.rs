//! `agentv-answer-relevancy`: the answer relevancy judge as a program (see `agentv_judges::answer_relevancy`).

use std::process::ExitCode;

fn main() -> ExitCode {
    agentv_eval_sdk::run_judge(agentv_judges::answer_relevancy::judge)
}
