//! `agentv schema eval|targets`: the JSON Schema editors use to check and complete files.

use agentv_core::schema::SchemaKind;

use crate::cli::{SchemaArgs, SchemaFile};
use crate::exit::ExitStatus;
use crate::printer::Printer;

pub fn run(args: SchemaArgs, printer: Printer) -> ExitStatus {
    let kind = match args.kind {
        SchemaFile::Eval => SchemaKind::Eval,
        SchemaFile::Targets => SchemaKind::Targets,
    };
    printer.result(&kind.render());
    ExitStatus::Success
}
