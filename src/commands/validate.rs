//! `agentv validate`: reports every problem in every file without running anything.

use std::path::Path;
use std::sync::Arc;

use agentv_core::load::{
    Diagnostic, Env, Secrets, Severity, Workspace, is_sidecar, load_eval_file, load_targets_file, walk,
};
use agentv_core::providers::{ResolveError, TargetRegistry};

use crate::cli::ValidateArgs;
use crate::exit::ExitStatus;
use crate::printer;

/// What a file is, by name.
enum Kind {
    Eval,
    Targets,
}

fn kind_of(path: &Path) -> Option<Kind> {
    let name = path.file_name()?.to_string_lossy();
    let ext = path.extension()?.to_string_lossy();
    if name.starts_with("targets.") && (ext == "yaml" || ext == "yml") {
        return Some(Kind::Targets);
    }
    if name.starts_with(".agentv") || path.components().any(|c| c.as_os_str() == ".agentv") {
        return None;
    }
    matches!(ext.as_ref(), "yaml" | "yml" | "jsonl").then_some(Kind::Eval)
}

pub fn run(args: ValidateArgs) -> ExitStatus {
    let ws = match Workspace::discover() {
        Ok(ws) => ws,
        Err(e) => {
            printer::error(&format!("cannot read the working directory: {e}"));
            return ExitStatus::Config;
        }
    };
    let mut files = Vec::new();
    for path in &args.paths {
        let full = ws.cwd.join(path);
        if full.is_dir() {
            files.extend(walk(path, &ws));
        } else if full.is_file() {
            files.push(path.clone());
        } else {
            printer::error(&format!("no such file: {}", path.display()));
            return ExitStatus::Config;
        }
    }
    let mut invalid = 0;
    let mut checked = 0;
    for file in &files {
        let Some(kind) = kind_of(file) else { continue };
        checked += 1;
        let diagnostics = match kind {
            Kind::Eval => check_eval(file, &ws),
            Kind::Targets => check_targets(file),
        };
        let errors = printer::diagnostics(&diagnostics);
        if errors > 0 {
            invalid += 1;
            printer::note(&format!("✘ {} ({errors} error(s))", file.display()));
        } else {
            printer::note(&format!("✔ {}", file.display()));
        }
    }
    printer::note(&format!("{checked} file(s) checked, {invalid} invalid"));
    if invalid > 0 {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    }
}

fn check_eval(file: &Path, ws: &Workspace) -> Vec<Diagnostic> {
    if is_sidecar(file, ws) {
        // Checked together with its dataset.
        return Vec::new();
    }
    load_eval_file(file, ws).diagnostics
}

fn check_targets(file: &Path) -> Vec<Diagnostic> {
    let parsed = load_targets_file(file);
    let mut diagnostics = parsed.diagnostics.clone();
    let registry = TargetRegistry::new(Some(parsed), Arc::new(Env::default()), Secrets::default());
    for problem in registry.check_all() {
        match problem {
            ResolveError::Invalid { problems, .. } if !problems.is_empty() => diagnostics.extend(problems),
            other => diagnostics.push(Diagnostic {
                severity: Severity::Error,
                file: file.to_path_buf(),
                pos: Default::default(),
                message: other.to_string(),
                help: None,
            }),
        }
    }
    diagnostics.extend(registry.take_warnings());
    diagnostics
}
