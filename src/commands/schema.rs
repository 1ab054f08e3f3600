//! `agentv schema eval|targets|compare`: the JSON Schema editors use to check and complete files,
//! and the one of `compare --format json` for programs that read it.

use agentv_core::schema::SchemaKind;

use crate::cli::{SchemaArgs, SchemaFile};
use crate::exit::ExitStatus;
use crate::printer::Printer;

pub fn run(args: SchemaArgs, printer: Printer) -> ExitStatus {
    let text = match args.kind {
        SchemaFile::Eval => SchemaKind::Eval.render(),
        SchemaFile::Targets => SchemaKind::Targets.render(),
        SchemaFile::Compare => agentv_eval_sdk::compare::schema(),
    };
    printer.result(&text);
    ExitStatus::Success
}
