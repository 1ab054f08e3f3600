//! `agentv-json-f1`: the JSON field-F1 judge as a program (see `agentv_judges::json_f1`).

use std::process::ExitCode;

fn main() -> ExitCode {
    agentv_eval_sdk::run_judge(agentv_judges::json_f1::judge)
}
