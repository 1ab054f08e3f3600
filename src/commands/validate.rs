//! `agentv validate`: reports every problem in every file without running anything; the
//! checks are the core's ([`agentv_core::validate`]), the same `eval` applies.

use agentv_core::{ValidateOptions, Workspace};

use crate::cli::ValidateArgs;
use crate::exit::ExitStatus;
use crate::printer::{self, Printer};

pub fn run(args: ValidateArgs, ws: &Workspace, printer: Printer) -> ExitStatus {
    let options = ValidateOptions {
        paths: args.paths,
        target: args.target,
        targets_path: args.targets,
        strict: args.strict,
        secrets: printer::secrets(),
    };
    match agentv_core::validate(ws, &options) {
        Ok(validation) => {
            printer.validation(&validation);
            if validation.invalid() > 0 && args.strict {
                // `--strict` promises what `eval --strict` does: any problem is a configuration
                // error (exit 2), so a CI step can tell "files not strictly clean" from a pass.
                ExitStatus::Config
            } else if validation.invalid() > 0 {
                ExitStatus::Failure
            } else {
                ExitStatus::Success
            }
        }
        Err(problems) => {
            for problem in problems {
                printer.error(&problem.to_string());
            }
            ExitStatus::Config
        }
    }
}
