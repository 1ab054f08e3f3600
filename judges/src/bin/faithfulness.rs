//! `agentv-faithfulness`: the faithfulness judge as a program (see `agentv_judges::faithfulness`).

use std::process::ExitCode;

fn main() -> ExitCode {
    agentv_eval_sdk::run_judge(agentv_judges::faithfulness::judge)
}
