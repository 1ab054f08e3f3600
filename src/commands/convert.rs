//! `agentv convert`: rewrites an eval file as the other AgentV generation; the conversion is
//! the core's ([`agentv_core::convert`]), this reads and writes the files.

use std::path::{Path, PathBuf};

use agentv_core::convert::{self, Generation, Part};

use crate::cli::{ConvertArgs, ConvertTo};
use crate::exit::ExitStatus;
use crate::printer::Printer;

pub fn run(args: ConvertArgs, printer: Printer) -> ExitStatus {
    let (path, part) = match source(&args.file) {
        Ok(found) => found,
        Err(e) => {
            printer.error(&e.to_string());
            return ExitStatus::Config;
        }
    };
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) => {
            printer.error(&format!("cannot read {}: {e}", path.display()));
            return ExitStatus::Config;
        }
    };
    let Ok(text) = String::from_utf8(bytes) else {
        printer.error(&format!("{}: not UTF-8 text", path.display()));
        return ExitStatus::Failure;
    };
    // A byte-order mark is not part of the YAML; it is kept on the written file.
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text.as_str()),
    };
    let dir = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    if args.to == Some(ConvertTo::Promptfoo) {
        return to_promptfoo(&path, part, body, &args, &printer);
    }
    if args.targets.is_some() {
        printer.error("`--targets` goes with `--to promptfoo`");
        return ExitStatus::Config;
    }
    if part == Part::Suite && convert::is_promptfoo(body, &path) {
        if args.to == Some(ConvertTo::V2) {
            printer.error(&format!(
                "{}: a promptfoo config converts to AgentV 4.x (`--to v4`); convert that to 2.x in a second step",
                path.display()
            ));
            return ExitStatus::Config;
        }
        let converted = convert::promptfoo_to_v4(body, &path, &dir);
        return write(converted, Generation::V4, &path, bom, &args, &printer);
    }
    let to = match args.to {
        Some(ConvertTo::V4) => Generation::V4,
        Some(ConvertTo::V2) => Generation::V2,
        Some(ConvertTo::Promptfoo) => return ExitStatus::Config,
        None => match convert::convert(body, &path, &dir, part, Generation::V4) {
            Ok(c) if c.from == Generation::V4 => Generation::V2,
            _ => Generation::V4,
        },
    };
    let converted = convert::convert(body, &path, &dir, part, to);
    write(converted, to, &path, bom, &args, &printer)
}

/// `--to promptfoo`: an AgentV 4.x suite as a promptfoo config (`docs/convert.md#to-promptfoo`).
fn to_promptfoo(path: &Path, part: Part, body: &str, args: &ConvertArgs, printer: &Printer) -> ExitStatus {
    if part != Part::Suite || convert::is_promptfoo(body, path) {
        printer.error(&format!(
            "{}: `--to promptfoo` converts an AgentV 4.x suite (a .yaml eval file)",
            path.display()
        ));
        return ExitStatus::Config;
    }
    if args.in_place {
        printer.error("`--in-place` would replace the suite by a promptfoo config: give `--out promptfooconfig.yaml`");
        return ExitStatus::Config;
    }
    let ws = match agentv_core::paths::Workspace::discover() {
        Ok(ws) => ws,
        Err(e) => {
            printer.error(&format!("cannot read the working directory: {e}"));
            return ExitStatus::Config;
        }
    };
    // The config is a new file: the suite's byte-order mark is not carried over.
    let converted = convert::v4_to_promptfoo(path, args.targets.as_deref(), &ws);
    write(converted, Generation::Promptfoo, path, "", args, printer)
}

/// Reports a conversion and writes its text where `args` say.
fn write(
    converted: Result<convert::Converted, Vec<agentv_core::config::Diagnostic>>,
    to: Generation,
    path: &Path,
    bom: &str,
    args: &ConvertArgs,
    printer: &Printer,
) -> ExitStatus {
    let converted = match converted {
        Ok(converted) => converted,
        Err(problems) => {
            printer.diagnostics(&problems);
            printer.error(&format!(
                "{}: not converted ({} problem{}); nothing was written",
                path.display(),
                problems.len(),
                if problems.len() == 1 { "" } else { "s" }
            ));
            return ExitStatus::Failure;
        }
    };
    printer.diagnostics(&converted.warnings);
    if converted.from == to {
        printer.note(&format!("{} is already {}; unchanged", path.display(), name(to)));
    }
    let text = format!("{bom}{}", converted.text);
    let target = if args.in_place {
        Some(path.to_path_buf())
    } else {
        args.out.clone()
    };
    match target {
        Some(out) => match std::fs::write(&out, text) {
            Ok(()) => {
                printer.note(&format!("wrote {} ({})", out.display(), name(to)));
                ExitStatus::Success
            }
            Err(e) => {
                printer.error(&format!("cannot write {}: {e}", out.display()));
                ExitStatus::Config
            }
        },
        None => {
            printer.result(&text);
            ExitStatus::Success
        }
    }
}

fn name(g: Generation) -> &'static str {
    match g {
        Generation::V2 => "AgentV 2.x",
        Generation::V4 => "AgentV 4.x",
        Generation::Promptfoo => "a promptfoo config",
    }
}

/// Why a file cannot be converted at all (`docs/convert.md`); nothing is written.
#[derive(Debug, thiserror::Error)]
enum SourceError {
    #[error("{}: a JSONL dataset's suite keys are in its sidecar ({}), which does not exist; the lines need no conversion", file.display(), file.with_extension("yaml").display())]
    NoSidecar { file: PathBuf },
    #[error("{}: convert reads .yaml/.yml eval files and .jsonl datasets", .0.display())]
    NotAnEvalFile(PathBuf),
}

/// The YAML file to convert: the file itself, or a JSONL dataset's sidecar.
fn source(file: &Path) -> Result<(PathBuf, Part), SourceError> {
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or_default();
    match ext {
        "yaml" | "yml" => Ok((file.to_path_buf(), Part::Suite)),
        "jsonl" => convert::sidecar_of(file)
            .map(|s| (s, Part::Sidecar))
            .ok_or_else(|| SourceError::NoSidecar {
                file: file.to_path_buf(),
            }),
        _ => Err(SourceError::NotAnEvalFile(file.to_path_buf())),
    }
}
