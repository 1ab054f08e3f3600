//! `agentv merge SHARD.jsonl… --out ALL.jsonl`: one results file and one run summary from the
//! results files of a sharded run (`docs/running.md#merge`).

use agentv_core::{MergeError, MergeOptions, Outcome};

use crate::cli::MergeArgs;
use crate::exit::ExitStatus;
use crate::printer::{self, Printer};

pub fn run(args: MergeArgs, printer: Printer) -> ExitStatus {
    let options = MergeOptions {
        inputs: args.inputs,
        out: args.out,
        command_line: super::eval::command_line(),
        secrets: printer::secrets(),
    };
    let merged = match agentv_core::merge(&options) {
        Ok(merged) => merged,
        Err(MergeError::Read(errors)) => {
            for e in &errors {
                printer.error(&e.to_string());
            }
            return ExitStatus::Config;
        }
        Err(e) => {
            printer.error(&e.to_string());
            return ExitStatus::Config;
        }
    };
    for warning in &merged.warnings {
        printer.warning(warning);
    }
    for (path, records, older) in &merged.inputs {
        let older = if *older > 0 {
            format!(" ({older} older cop(ies) left out)")
        } else {
            String::new()
        };
        printer.note(&format!("{}: {records} record(s){older}", path.display()));
    }
    if !merged.stats_text.is_empty() {
        printer.result(&merged.stats_text);
    }
    printer.result(&format!(
        "Merged {} record(s) into {}\n",
        merged.records,
        merged.out.display()
    ));
    printer.note(&format!("Run summary written to {}", merged.summary_path.display()));
    for missing in &merged.missing {
        printer.error(&format!("incomplete: {missing}"));
    }
    match merged.outcome {
        Outcome::Complete | Outcome::BelowThreshold => ExitStatus::Success,
        Outcome::Incomplete | Outcome::Interrupted => {
            let s = &merged.stats.by_status;
            let parts: Vec<String> = [
                (s.execution_error, "could not be run (execution error)"),
                (s.grader_error, "could not be graded (grader error)"),
                (s.not_run, "were not run (budget)"),
                (s.invalid, "are invalid cases"),
            ]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} record(s) {what}"))
            .collect();
            if !parts.is_empty() {
                printer.note(&format!("Run incomplete: {}", parts.join("; ")));
            }
            ExitStatus::Incomplete
        }
    }
}
