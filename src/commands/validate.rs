//! `agentv validate`: reports every problem in every file without running anything.
//!
//! Eval files are checked as `agentv eval` would run them: their cases, then their target,
//! resolved by the same code (`agentv_core::resolve::TargetResolver`). Targets files named or
//! found in a directory are checked on their own.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use agentv_core::load::{Diagnostic, FileKind, Secrets, Severity, Workspace, classify, load_eval_file, walk};
use agentv_core::resolve::{ResolveOptions, TargetResolver, check_targets_file};

use crate::cli::ValidateArgs;
use crate::exit::ExitStatus;
use crate::printer;

pub fn run(args: ValidateArgs) -> ExitStatus {
    let ws = match Workspace::discover() {
        Ok(ws) => ws,
        Err(e) => {
            printer::error(&format!("cannot read the working directory: {e}"));
            return ExitStatus::Config;
        }
    };
    let files = match collect(&args.paths, &ws) {
        Ok(files) => files,
        Err(problems) => {
            for p in problems {
                printer::error(&p);
            }
            return ExitStatus::Config;
        }
    };
    let options = ResolveOptions {
        target: args.target.clone(),
        targets_path: args.targets.clone(),
        dry_run: false,
        cache: None,
        secrets: printer::secrets(),
    };
    let eval_files: Vec<PathBuf> = files
        .iter()
        .filter(|(_, kind)| *kind == FileKind::Eval)
        .map(|(f, _)| f.clone())
        .collect();
    let mut resolver = TargetResolver::new(&eval_files, &ws, &options);
    let mut out = Output::new(&ws);
    out.print(&resolver.take_warnings(), resolver.secrets());
    let mut invalid = 0;
    for (file, kind) in &files {
        let diagnostics = match kind {
            FileKind::Targets => check_targets_file(file, &ws, resolver.secrets()),
            _ => check_eval(file, &ws, &mut resolver),
        };
        let errors = out.print(&diagnostics, resolver.secrets());
        if errors > 0 {
            invalid += 1;
            printer::note(&format!("✘ {} ({errors} error(s))", file.display()));
        } else {
            printer::note(&format!("✔ {}", file.display()));
        }
    }
    printer::note(&format!("{} file(s) checked, {invalid} invalid", files.len()));
    if invalid > 0 {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    }
}

/// The eval and targets files the arguments name, in order, each once. A path that names
/// nothing to check (missing, another kind of file, a directory without any) is a usage error;
/// every such path is reported.
fn collect(paths: &[PathBuf], ws: &Workspace) -> Result<Vec<(PathBuf, FileKind)>, Vec<String>> {
    let mut files: Vec<(PathBuf, FileKind)> = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        let full = ws.cwd.join(path);
        let found: Vec<(PathBuf, FileKind)> = if full.is_dir() {
            let found: Vec<_> = walk(path, ws)
                .into_iter()
                .map(|p| {
                    let kind = classify(&p, ws);
                    (p, kind)
                })
                .filter(|(_, kind)| matches!(kind, FileKind::Eval | FileKind::Targets))
                .collect();
            if found.is_empty() {
                problems.push(format!(
                    "{}: no eval files (.yaml, .yml, .jsonl) or targets files in this directory",
                    path.display()
                ));
            }
            found
        } else if full.is_file() {
            match classify(path, ws) {
                kind @ (FileKind::Eval | FileKind::Targets) => vec![(path.clone(), kind)],
                // Suite keys are checked with the dataset they belong to.
                FileKind::Sidecar => vec![(path.with_extension("jsonl"), FileKind::Eval)],
                FileKind::Results => {
                    problems.push(format!(
                        "{} holds results of a run, not eval cases or targets",
                        path.display()
                    ));
                    Vec::new()
                }
                FileKind::Internal | FileKind::Other => {
                    problems.push(format!(
                        "{} is not an eval file (.yaml, .yml, .jsonl) or a targets file",
                        path.display()
                    ));
                    Vec::new()
                }
            }
        } else {
            problems.push(format!("no such file: {}", path.display()));
            Vec::new()
        };
        for entry in found {
            if !files.contains(&entry) {
                files.push(entry);
            }
        }
    }
    if problems.is_empty() { Ok(files) } else { Err(problems) }
}

/// The problems of one eval file, then those of the target `eval` would run it against.
fn check_eval(file: &Path, ws: &Workspace, resolver: &mut TargetResolver<'_>) -> Vec<Diagnostic> {
    let suite = load_eval_file(file, ws);
    let mut diagnostics = suite.diagnostics.clone();
    // A file that could not be read has no cases and no target to speak of.
    if suite.case_count + suite.skipped > 0 {
        let outcome = resolver.resolve(&suite.file, suite.target.as_deref());
        diagnostics.extend(resolver.take_warnings());
        if let Err(problem) = outcome {
            diagnostics.extend(problem.diagnostics(file, ws));
        }
    }
    diagnostics
}

/// Prints each diagnostic once (several eval files may share a target and its problems),
/// with paths below the working directory shown relative to it and resolved secrets redacted.
struct Output {
    cwd: PathBuf,
    printed: HashSet<String>,
}

impl Output {
    fn new(ws: &Workspace) -> Self {
        Self {
            cwd: ws.cwd.clone(),
            printed: HashSet::new(),
        }
    }

    /// Prints what was not printed yet; returns the number of errors in `items`.
    fn print(&mut self, items: &[Diagnostic], secrets: &Secrets) -> usize {
        let fresh: Vec<Diagnostic> = items
            .iter()
            .map(|d| Diagnostic {
                file: d
                    .file
                    .strip_prefix(&self.cwd)
                    .map_or_else(|_| d.file.clone(), Path::to_path_buf),
                message: secrets.redact(&d.message).into_owned(),
                help: d.help.as_deref().map(|h| secrets.redact(h).into_owned()),
                ..d.clone()
            })
            .filter(|d| self.printed.insert(d.to_string()))
            .collect();
        printer::diagnostics(&fresh);
        items.iter().filter(|d| d.severity == Severity::Error).count()
    }
}
