//! `agentv validate`: every problem in every file, found without running anything.
//!
//! Files are found as `eval` finds them ([`crate::load::discover`]), and each eval file's target is
//! resolved by the code `eval` uses ([`TargetResolver`]), so a file `validate` passes is one `eval`
//! accepts. Targets files named or found in a directory are checked on their own.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::config::{Diagnostics, Pos};
use crate::load::{
    Diagnostic, DiscoverError, FileKind, Purpose, Secrets, Severity, Workspace, discover, load_eval_file,
};
use crate::resolve::{ResolveOptions, TargetResolver, check_targets_file};

/// What to check: the command line's paths and target choice, as `eval` takes them.
#[derive(Debug, Clone, Default)]
pub struct ValidateOptions {
    /// Eval files, targets files, directories or globs.
    pub paths: Vec<String>,
    /// `--target`, as for `eval`.
    pub target: Option<String>,
    /// `--targets`, as for `eval`.
    pub targets_path: Option<PathBuf>,
    /// Where resolved `${{ VAR }}` values are registered, so the caller's output redacts them.
    pub secrets: Secrets,
    /// `--strict`: warnings are errors, problems of the machine included.
    pub strict: bool,
}

/// Every file checked, in order, with its problems.
#[derive(Debug, Clone, Default)]
pub struct Validation {
    /// Problems found before any file (`.env` files serving the eval files).
    pub preamble: Vec<Diagnostic>,
    pub files: Vec<CheckedFile>,
}

impl Validation {
    /// Files with at least one error.
    pub fn invalid(&self) -> usize {
        self.files.iter().filter(|f| f.errors > 0).count()
    }
}

/// One checked file.
#[derive(Debug, Clone)]
pub struct CheckedFile {
    pub path: PathBuf,
    pub kind: FileKind,
    /// Problems not already reported for an earlier file (eval files sharing a target share its
    /// problems), with paths below the working directory relative to it and secrets redacted.
    pub diagnostics: Vec<Diagnostic>,
    /// Errors of this file, counting those reported for an earlier one.
    pub errors: usize,
}

/// Checks every file `options.paths` names. `Err` lists every path that names nothing to check
/// (missing, another kind of file, a directory or glob without any): a usage error.
pub fn validate(ws: &Workspace, options: &ValidateOptions) -> Result<Validation, Vec<DiscoverError>> {
    let files = discover(&options.paths, ws, Purpose::Check)?;
    let resolve = ResolveOptions {
        targets: options.target.iter().cloned().collect(),
        targets_path: options.targets_path.clone(),
        dry_run: false,
        cache: None,
        secrets: options.secrets.clone(),
    };
    let eval_files: Vec<PathBuf> = files
        .iter()
        .filter(|(_, kind)| *kind == FileKind::Eval)
        .map(|(f, _)| f.clone())
        .collect();
    let mut resolver = TargetResolver::new(&eval_files, ws, &resolve);
    let mut seen = Seen::new(ws, resolver.secrets().clone());
    let preamble = seen.fresh(&resolver.take_warnings());
    let checked = files
        .into_iter()
        .map(|(path, kind)| {
            let mut all = match kind {
                FileKind::Targets => check_targets_file(&path, ws, resolver.secrets()),
                FileKind::Results => check_results_file(&path),
                _ => check_eval(&path, ws, &mut resolver, options.strict),
            };
            if options.strict {
                crate::config::promote_warnings(&mut all);
            }
            CheckedFile {
                errors: all.iter().filter(|d| d.severity == Severity::Error).count(),
                diagnostics: seen.fresh(&all),
                path,
                kind,
            }
        })
        .collect();
    Ok(Validation {
        preamble,
        files: checked,
    })
}

/// The problems of a results file, read as `compare` and `report` read it (ours and both
/// TypeScript AgentV generations): each unreadable line is an error.
fn check_results_file(file: &Path) -> Vec<Diagnostic> {
    let errors = crate::report::read_all(file, |_| {}).err().unwrap_or_default();
    let prefix = format!("{}:", file.display());
    let mut diags = Diagnostics::new(file);
    for e in errors {
        let text = e.to_string();
        let message = text.strip_prefix(&prefix).unwrap_or(&text).trim_start();
        diags.error(Pos::default(), message, None);
    }
    diags.into_vec()
}

/// The problems of one eval file, then those of the target `eval` would run it against.
/// Problems of the machine are warnings unless `strict` (or the file's `strict: true`).
fn check_eval(file: &Path, ws: &Workspace, resolver: &mut TargetResolver<'_>, strict: bool) -> Vec<Diagnostic> {
    let suite = load_eval_file(file, ws);
    let mut diagnostics = suite.diagnostics.clone();
    // A file that could not be read has no cases and no target to speak of.
    if suite.case_count + suite.skipped > 0 {
        // A promptfoo config declares its own targets (its providers).
        let outcome = match &suite.inline_targets {
            Some(targets) => resolver
                .resolve_inline(targets)
                .map(|_| ())
                .map_err(crate::resolve::TargetProblem::merge),
            None => resolver
                .resolve(&suite.file, suite.target.as_deref())
                .map(|_| ())
                .map_err(|p| vec![p]),
        };
        let mut target = resolver.take_warnings();
        let machine = if strict || suite.strict {
            Severity::Error
        } else {
            Severity::Warning
        };
        for problem in outcome.err().unwrap_or_default() {
            target.extend(problem.diagnostics(file, ws, machine));
        }
        if suite.strict {
            crate::config::promote_warnings(&mut target);
        }
        diagnostics.extend(target);
    }
    diagnostics
}

/// Diagnostics already reported, so each is reported once.
struct Seen {
    cwd: PathBuf,
    secrets: Secrets,
    reported: HashSet<String>,
}

impl Seen {
    fn new(ws: &Workspace, secrets: Secrets) -> Self {
        Self {
            cwd: ws.cwd.clone(),
            secrets,
            reported: HashSet::new(),
        }
    }

    /// The diagnostics of `items` not reported yet, shown as the user would write their paths.
    fn fresh(&mut self, items: &[Diagnostic]) -> Vec<Diagnostic> {
        items
            .iter()
            .map(|d| Diagnostic {
                file: d
                    .file
                    .strip_prefix(&self.cwd)
                    .map_or_else(|_| d.file.clone(), Path::to_path_buf),
                message: self.secrets.redact(&d.message).into_owned(),
                help: d.help.as_deref().map(|h| self.secrets.redact(h).into_owned()),
                ..d.clone()
            })
            .filter(|d| self.reported.insert(d.to_string()))
            .collect()
    }
}
