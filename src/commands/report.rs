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

/// Why reports could not be written. Every kind but [`ReportError::Read`] is a usage or file
/// problem found before or while writing; `run` prints it once and exits with status 2.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("the {format} report {} would overwrite the results file", path.display())]
    OverwritesInput { format: &'static str, path: PathBuf },
    #[error("the {first} and {second} reports would both be written to {}", path.display())]
    SamePath {
        first: &'static str,
        second: &'static str,
        path: PathBuf,
    },
    #[error("cannot create the {format} report {}: {source}", path.display())]
    Create {
        format: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// Writing or finishing a report failed; `report` is the sink's own description.
    #[error("cannot {action} the {report}: {source}")]
    Write {
        action: &'static str,
        report: String,
        source: std::io::Error,
    },
    /// The results file has bad lines; each is printed with its file, line and column.
    #[error("{} bad line(s) in the results file", .0.len())]
    Read(Vec<ReadError>),
}

impl ReportError {
    /// Prints the error through the printer: every bad line of a results file, else the one
    /// message.
    pub fn print(&self, printer: Printer) {
        match self {
            Self::Read(errors) => print_read_errors(errors, printer),
            other => printer.error(&other.to_string()),
        }
    }
}

/// Opens a sink per report; an error names the report that cannot be created.
pub fn open_sinks(
    reports: &[(ReportFormat, PathBuf)],
    title: &str,
    secrets: &Secrets,
) -> Result<Vec<Box<dyn Sink>>, ReportError> {
    reports
        .iter()
        .map(|(format, path)| {
            format
                .open(&ReportTarget { path, title, secrets })
                .map_err(|source| ReportError::Create {
                    format: format.name(),
                    path: path.clone(),
                    source,
                })
        })
        .collect()
}

/// Two outputs may not be one file, and no report may overwrite an input.
pub fn check_distinct(inputs: &[&Path], reports: &[(ReportFormat, PathBuf)]) -> Result<(), ReportError> {
    for (i, (format, path)) in reports.iter().enumerate() {
        if inputs.iter().any(|input| same_file(input, path)) {
            return Err(ReportError::OverwritesInput {
                format: format.name(),
                path: path.clone(),
            });
        }
        if let Some((other, _)) = reports[..i].iter().find(|(_, p)| same_file(p, path)) {
            return Err(ReportError::SamePath {
                first: other.name(),
                second: format.name(),
                path: path.clone(),
            });
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
        e.print(printer);
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
        Err(e) => {
            e.print(printer);
            ExitStatus::Config
        }
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

/// A sink's write or finish error, naming the report.
fn sink_error(action: &'static str, sink: &dyn Sink) -> impl FnOnce(std::io::Error) -> ReportError {
    let report = sink.describe();
    move |source| ReportError::Write { action, report, source }
}

/// Streams `results` through every report; the caller prints the error.
fn build(
    results: &Path,
    reports: &[(ReportFormat, PathBuf)],
    title: &str,
    secrets: &Secrets,
    printer: Printer,
) -> Result<(), ReportError> {
    let mut sinks = open_sinks(reports, title, secrets)?;
    let mut write_error: Option<ReportError> = None;
    let read = read_all(results, |record| {
        if write_error.is_some() {
            return;
        }
        for sink in sinks.iter_mut() {
            if let Err(e) = sink.write(&record.row(secrets)) {
                write_error = Some(sink_error("write", sink.as_ref())(e));
                return;
            }
        }
    });
    let summary = read.map_err(ReportError::Read)?;
    if let Some(e) = write_error {
        return Err(e);
    }
    warn_truncated(results, summary.truncated, printer);
    note_superseded(results, summary.superseded, printer);
    for sink in sinks.iter_mut() {
        sink.finish().map_err(sink_error("finish", sink.as_ref()))?;
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
) -> Result<(), ReportError> {
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
    let mut html = HtmlReport::create_compare(path, title, labels).map_err(|source| ReportError::Create {
        format: ReportFormat::HTML.name(),
        path: path.clone(),
        source,
    })?;
    for (i, file) in files.iter().enumerate() {
        html.start_run(i);
        let mut write_error: Option<ReportError> = None;
        let read = read_all(file, |record| {
            if write_error.is_none()
                && let Err(e) = html.write(&record.row(secrets))
            {
                write_error = Some(sink_error("write", &html)(e));
            }
        });
        let summary = read.map_err(ReportError::Read)?;
        if let Some(e) = write_error {
            return Err(e);
        }
        warn_truncated(file, summary.truncated, printer);
        note_superseded(file, summary.superseded, printer);
    }
    html.finish().map_err(sink_error("finish", &html))
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
        assert_eq!(
            check_distinct(&[results], &clash).expect_err("clash").to_string(),
            "the html and markdown reports would both be written to x"
        );
        let over = [(ReportFormat::HTML, PathBuf::from("r.jsonl"))];
        assert!(matches!(
            check_distinct(&[results], &over),
            Err(ReportError::OverwritesInput { format: "html", .. })
        ));
    }
}
