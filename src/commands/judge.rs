//! `agentv judge <name>`: the ready-made judges of `agentv-judges`, run by the installed
//! binary, so a suite names one as `script: [agentv, judge, faithfulness]` and needs nothing
//! else on the machine (`judges/README.md`). The judge reads the case on stdin and prints its
//! result on stdout (one-shot or persistent, as the SDK's runner decides).

use std::process::ExitCode;

use agentv_judges::{
    answer_relevancy, contextual_precision, contextual_recall, contextual_relevancy, faithfulness, json_f1,
};

/// The ready-made judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReadyMade {
    /// Ranked retrieved chunks: (1/R) Σ vₖ · precision@k (needs `target:`).
    ContextualPrecision,
    /// Statements of the reference answer found in the retrieved context (needs `target:`).
    ContextualRecall,
    /// Statements of the retrieved context relevant to the question (needs `target:`).
    ContextualRelevancy,
    /// Claims of the answer supported by the retrieved context (needs `target:`).
    Faithfulness,
    /// Statements of the answer relevant to the question (needs `target:`).
    AnswerRelevancy,
    /// F1 over the fields of a JSON answer against the reference (no model).
    JsonF1,
}

/// Runs the judge on this process's stdin and stdout.
pub fn run(judge: ReadyMade) -> ExitCode {
    match judge {
        ReadyMade::ContextualPrecision => agentv_eval_sdk::run_judge(contextual_precision::judge),
        ReadyMade::ContextualRecall => agentv_eval_sdk::run_judge(contextual_recall::judge),
        ReadyMade::ContextualRelevancy => agentv_eval_sdk::run_judge(contextual_relevancy::judge),
        ReadyMade::Faithfulness => agentv_eval_sdk::run_judge(faithfulness::judge),
        ReadyMade::AnswerRelevancy => agentv_eval_sdk::run_judge(answer_relevancy::judge),
        ReadyMade::JsonF1 => agentv_eval_sdk::run_judge(json_f1::judge),
    }
}
