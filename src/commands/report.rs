//! `agentv report`: HTML, JUnit and Markdown reports from a results file after the fact (the
//! same sinks `eval --report` feeds as cases finish), or two runs side by side in HTML.

use std::path::{Path, PathBuf};

use agentv_core::load::Secrets;
use agentv_core::report::{HtmlReport, ReadError, ReportFormat, ReportTarget, Sink, read_all};

use crate::cli::ReportArgs;
use crate::exit::ExitStatus;
use crate::printer::{self, Printer};

/// `results.jsonl` → `results.junit.xml` / `results.md` / `results.html`, beside it.
pub fn default_report_path(results: &Path, format: ReportFormat) -> PathBuf {
    let stem = match results.extension().and_then(|e| e.to_str()) {
        Some("jsonl" | "json" | "ndjson") => results.with_extension(""),
        _ => results.to_path_buf(),
    };
    let mut name = stem.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".");
    name.push(format.extension());
    stem.with_file_name(name)
}

/// Opens a sink per report; an error names the report that cannot be created.
pub fn open_sinks(
    reports: &[(ReportFormat, PathBuf)],
    title: &str,
    secrets: &Secrets,
) -> Result<Vec<Box<dyn Sink>>, String> {
    reports
        .iter()
        .map(|(format, path)| {
            format
                .open(&ReportTarget { path, title, secrets })
                .map_err(|e| format!("cannot create the {} report {}: {e}", format.name(), path.display()))
        })
        .collect()
}

/// Two outputs may not be one file, and no report may overwrite an input.
pub fn check_distinct(inputs: &[&Path], reports: &[(ReportFormat, PathBuf)]) -> Result<(), String> {
    for (i, (format, path)) in reports.iter().enumerate() {
        if inputs.iter().any(|input| same_file(input, path)) {
            return Err(format!(
                "the {} report {} would overwrite the results file",
                format.name(),
                path.display()
            ));
        }
        if let Some((other, _)) = reports[..i].iter().find(|(_, p)| same_file(p, path)) {
            return Err(format!(
                "the {} and {} reports would both be written to {}",
                other.name(),
                format.name(),
                path.display()
            ));
        }
    }
    Ok(())
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

pub fn run(args: ReportArgs, printer: Printer) -> ExitStatus {
    let compare = args.compare.clone().filter(|files| files.len() == 2);
    let inputs: Vec<PathBuf> = match (&compare, &args.results) {
        (Some(files), _) => files.clone(),
        (None, Some(results)) => vec![results.clone()],
        (None, None) => {
            printer.error("give a results file, or --compare BASE CANDIDATE");
            return ExitStatus::Config;
        }
    };
    let anchor = inputs.last().cloned().unwrap_or_default();
    let flags = [
        (ReportFormat::HTML, &args.html),
        (ReportFormat::JUNIT, &args.junit),
        (ReportFormat::MARKDOWN, &args.markdown),
    ]
    .into_iter()
    .filter_map(|(format, path)| path.as_ref().map(|p| (format, p.clone())));
    let specs = args.reports.iter().map(|spec| (spec.format, spec.path.clone()));
    let mut reports: Vec<(ReportFormat, PathBuf)> = flags
        .chain(specs)
        .map(|(format, path)| {
            let path = path.unwrap_or_else(|| compare_aware_default(&anchor, format, compare.is_some()));
            (format, path)
        })
        .collect();
    if reports.is_empty() {
        reports.push((
            ReportFormat::HTML,
            compare_aware_default(&anchor, ReportFormat::HTML, compare.is_some()),
        ));
    }
    if compare.is_some() && reports.iter().any(|(f, _)| *f != ReportFormat::HTML) {
        printer.error("--compare builds an HTML report only; use `agentv compare --format markdown` for a summary");
        return ExitStatus::Config;
    }
    let input_refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    if let Err(e) = check_distinct(&input_refs, &reports) {
        printer.error(&e);
        return ExitStatus::Config;
    }
    let title = args.title.clone().unwrap_or_else(|| default_title(&inputs));
    let secrets = printer::secrets();
    let written = match compare {
        Some(files) => build_compare(&files, &reports, &title, &secrets, printer),
        None => build(&inputs[0], &reports, &title, &secrets, printer),
    };
    match written {
        Ok(()) => {
            for (format, path) in &reports {
                printer.note(&format!("{} report written to {}", format.label(), path.display()));
            }
            ExitStatus::Success
        }
        Err(()) => ExitStatus::Config,
    }
}

fn compare_aware_default(anchor: &Path, format: ReportFormat, compare: bool) -> PathBuf {
    if !compare {
        return default_report_path(anchor, format);
    }
    let html = default_report_path(anchor, format);
    let name = html
        .file_name()
        .map(|n| n.to_string_lossy().replace(".html", ".compare.html"))
        .unwrap_or_else(|| "compare.html".into());
    html.with_file_name(name)
}

fn default_title(inputs: &[PathBuf]) -> String {
    let names: Vec<String> = inputs
        .iter()
        .map(|p| {
            p.file_name()
                .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
        })
        .collect();
    format!("agentv results: {}", names.join(" vs "))
}

/// Streams `results` through every report; `Err` after printing why.
fn build(
    results: &Path,
    reports: &[(ReportFormat, PathBuf)],
    title: &str,
    secrets: &Secrets,
    printer: Printer,
) -> Result<(), ()> {
    let mut sinks = open_sinks(reports, title, secrets).map_err(|e| printer.error(&e))?;
    let mut write_error: Option<String> = None;
    let read = read_all(results, |record| {
        if write_error.is_some() {
            return;
        }
        for sink in sinks.iter_mut() {
            if let Err(e) = sink.write(&record.row(secrets)) {
                write_error = Some(format!("cannot write the {}: {e}", sink.describe()));
                return;
            }
        }
    });
    let summary = read.map_err(|errors| print_read_errors(&errors, printer))?;
    if let Some(e) = write_error {
        printer.error(&e);
        return Err(());
    }
    warn_truncated(results, summary.truncated, printer);
    note_superseded(results, summary.superseded, printer);
    for sink in sinks.iter_mut() {
        sink.finish()
            .map_err(|e| printer.error(&format!("cannot finish the {}: {e}", sink.describe())))?;
    }
    Ok(())
}

/// Both runs into one HTML report, grouped by run.
fn build_compare(
    files: &[PathBuf],
    reports: &[(ReportFormat, PathBuf)],
    title: &str,
    secrets: &Secrets,
    printer: Printer,
) -> Result<(), ()> {
    let labels: Vec<String> = files
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let name = p
                .file_name()
                .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned());
            format!("{} {name}", if i == 0 { "base" } else { "candidate" })
        })
        .collect();
    let Some((_, path)) = reports.first() else {
        return Ok(());
    };
    let mut html = HtmlReport::create_compare(path, title, labels)
        .map_err(|e| printer.error(&format!("cannot create the HTML report {}: {e}", path.display())))?;
    for (i, file) in files.iter().enumerate() {
        html.start_run(i);
        let mut write_error: Option<String> = None;
        let read = read_all(file, |record| {
            if write_error.is_none()
                && let Err(e) = html.write(&record.row(secrets))
            {
                write_error = Some(format!("cannot write the {}: {e}", html.describe()));
            }
        });
        let summary = read.map_err(|errors| print_read_errors(&errors, printer))?;
        if let Some(e) = write_error {
            printer.error(&e);
            return Err(());
        }
        warn_truncated(file, summary.truncated, printer);
        note_superseded(file, summary.superseded, printer);
    }
    html.finish()
        .map_err(|e| printer.error(&format!("cannot finish the {}: {e}", html.describe())))
}

/// Prints every error of a results file (the reader stops after a bounded number).
pub fn print_read_errors(errors: &[ReadError], printer: Printer) {
    for e in errors {
        printer.error(&e.to_string());
    }
    if errors.len() >= agentv_core::report::MAX_REPORTED_ERRORS {
        printer.note(&format!(
            "stopped after {} bad lines; fix these and run again",
            errors.len()
        ));
    }
}

/// Says how many lines a later line of the same record replaced (a resumed run).
pub fn note_superseded(path: &Path, superseded: usize, printer: Printer) {
    if superseded > 0 {
        printer.note(&format!(
            "{}: {superseded} superseded line(s) left out: the last line of each case counts",
            path.display()
        ));
    }
}

/// Says that a cut-off last line was skipped.
pub fn warn_truncated(path: &Path, truncated: Option<usize>, printer: Printer) {
    if let Some(line) = truncated {
        printer.warning(&format!(
            "{}:{line}: the last line is cut off (the run was stopped while writing it); skipped",
            path.display()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_report_paths_sit_beside_the_results() {
        for (results, format, want) in [
            ("out/r.jsonl", ReportFormat::JUNIT, "out/r.junit.xml"),
            ("out/r.jsonl", ReportFormat::MARKDOWN, "out/r.md"),
            ("r.jsonl", ReportFormat::HTML, "r.html"),
            ("results", ReportFormat::HTML, "results.html"),
            ("a.b.jsonl", ReportFormat::HTML, "a.b.html"),
        ] {
            assert_eq!(
                default_report_path(Path::new(results), format),
                PathBuf::from(want),
                "{results}"
            );
        }
    }

    #[test]
    fn reports_may_not_share_a_file_or_overwrite_the_results() {
        let results = Path::new("r.jsonl");
        let clash = [
            (ReportFormat::HTML, PathBuf::from("x")),
            (ReportFormat::MARKDOWN, PathBuf::from("x")),
        ];
        assert!(
            check_distinct(&[results], &clash)
                .expect_err("clash")
                .contains("both be written to x")
        );
        let over = [(ReportFormat::HTML, PathBuf::from("r.jsonl"))];
        assert!(
            check_distinct(&[results], &over)
                .expect_err("overwrite")
                .contains("overwrite")
        );
    }
}
