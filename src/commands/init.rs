//! `agentv init`: writes a suite that runs offline at once (targets, an eval file, a code judge
//! on the judge SDK, schemas, a README). The files are [`templates`]'s; this module only checks
//! the directory and writes them, never replacing a file without `--force`. With `--format v4`
//! the 2.x eval template is converted by `agentv convert`'s converter, so one template serves
//! both formats.

pub mod templates;

use std::path::{Path, PathBuf};

use agentv_core::convert::{self, Generation, Part};

use crate::cli::{EvalFormat, InitArgs};
use crate::exit::ExitStatus;
use crate::printer::Printer;
use templates::{JudgeLanguage, SdkSource, scaffold};

/// The SDK of the agentv checkout this binary was built from, when it is still there.
fn sdk_source() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("agentv-eval-sdk");
    dir.join("Cargo.toml").is_file().then_some(dir)
}

pub fn run(args: InitArgs, printer: Printer) -> ExitStatus {
    if args.dir.exists() && !args.dir.is_dir() {
        printer.error(&format!("{} exists and is not a directory", args.dir.display()));
        return ExitStatus::Config;
    }
    let sdk_dir = sdk_source();
    let sdk = match (&sdk_dir, args.judge) {
        (Some(dir), _) => SdkSource::Path(dir),
        (None, JudgeLanguage::Rust) => {
            printer.warning(
                "no agentv checkout found for `agentv-eval-sdk`: edit its path in judges/judge/Cargo.toml before \
                 running the suite",
            );
            SdkSource::Unknown
        }
        (None, _) => SdkSource::Unknown,
    };
    let mut files = scaffold(args.template, args.judge, sdk);
    if args.format == EvalFormat::V4 {
        for f in files.iter_mut().filter(|f| is_eval_file(&f.path)) {
            match to_v4(f, &args.dir) {
                Ok(text) => f.text = text,
                Err(e) => {
                    printer.error(&e.to_string());
                    return ExitStatus::Config;
                }
            }
        }
    }

    let existing: Vec<&str> = files
        .iter()
        .filter(|f| args.dir.join(&f.path).symlink_metadata().is_ok())
        .map(|f| f.path.as_str())
        .collect();
    if !existing.is_empty() && !args.force {
        printer.error(&format!(
            "{} already has {}; nothing was written (pass --force to replace them)",
            args.dir.display(),
            existing.join(", ")
        ));
        return ExitStatus::Config;
    }

    for f in &files {
        let path = args.dir.join(&f.path);
        if let Err(e) = write(&path, &f.text) {
            printer.error(&format!("cannot write {}: {e}", path.display()));
            return ExitStatus::Config;
        }
    }

    let place = if args.dir == Path::new(".") {
        "here".to_owned()
    } else {
        format!("in {}", args.dir.display())
    };
    let mut created = format!(
        "Created a {} suite with a {} judge {place}:\n",
        args.template.name(),
        args.judge.name()
    );
    for f in &files {
        created.push_str(&format!("  {}\n", f.path));
    }
    printer.note(created.trim_end());
    let cd = if args.dir == Path::new(".") {
        String::new()
    } else {
        format!("cd {} && ", shell_word(&args.dir.display().to_string()))
    };
    let mut summary = format!("Run it (offline): {cd}agentv eval evals/\n");
    if args.judge == JudgeLanguage::Rust {
        summary.push_str(
            "The first case builds the Rust judge with cargo; to build it ahead: \
             cargo build --manifest-path judges/judge/Cargo.toml\n",
        );
    }
    printer.result(&summary);
    ExitStatus::Success
}

fn is_eval_file(path: &str) -> bool {
    path.starts_with("evals/") && path.ends_with(".yaml")
}

/// The 2.x template `f` rewritten in the AgentV 4.x format by `agentv convert`'s converter, so
/// both formats come from one template. Every template converts without problems (the
/// end-to-end test `init_v4_writes_a_4x_eval_file_that_validates_and_runs_with_the_same_scores`
/// runs each); should one not, that is reported and nothing is written. The templates name no
/// prompt files, so that the files are not written yet does not change the conversion.
fn to_v4(f: &templates::File, root: &Path) -> Result<String, TemplateError> {
    let path = Path::new(&f.path);
    let dir = root.join(path.parent().unwrap_or(Path::new(".")));
    match convert::convert(&f.text, path, &dir, Part::Suite, Generation::V4) {
        Ok(converted) => Ok(converted.text),
        Err(problems) => Err(TemplateError {
            path: f.path.clone(),
            problem: problems.first().map_or_else(String::new, |p| p.message.clone()),
        }),
    }
}

/// A template the converter cannot write in the 4.x format (a bug in the templates; the
/// end-to-end test above runs every one).
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path} as AgentV 4.x: {problem}")]
struct TemplateError {
    path: String,
    problem: String,
}

fn write(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    // A file that is there (only with --force) is replaced, not written through: a symlink
    // must not redirect the write elsewhere.
    if path.symlink_metadata().is_ok() {
        std::fs::remove_file(path)?;
    }
    std::fs::write(path, text)
}

/// `text` quoted for a shell when it needs it; control characters (which a terminal would act
/// on) are written as `$'\xHH'` escapes.
fn shell_word(text: &str) -> String {
    if text.chars().any(char::is_control) {
        let mut out = String::from("$'");
        for c in text.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('\'');
        return out;
    }
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./+,:@%".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_shell_quoted_when_needed() {
        for (dir, want) in [
            ("suite", "suite"),
            ("my suite", "'my suite'"),
            ("it's", r"'it'\''s'"),
            ("", "''"),
            ("a\u{1}b'c\\", r"$'a\x01b\'c\\'"),
            ("\u{9b}x", r"$'\x9bx'"),
        ] {
            assert_eq!(shell_word(dir), want, "{dir}");
        }
    }
}
