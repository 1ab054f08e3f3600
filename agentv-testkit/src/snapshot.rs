//! Snapshots of a run (exit code, stdout, stderr) with what varies between machines and runs
//! replaced: the project's temporary path, the repository's path, durations, the version.
//! The model is uv's `uv_snapshot!`; see [`crate::assert_run_snapshot`].

use std::path::Path;

use crate::process::Run;

/// A run as one text: the exit code, then each stream under a header.
pub fn format_run(run: &Run) -> String {
    format!(
        "exit code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
        run.code, run.stdout, run.stderr
    )
}

/// Regex filters for a run in `project`: `[PROJECT]` for its path, `[REPO]` for the
/// repository's, `[TIME]` for a duration in seconds and for the summary's wall time,
/// `[TIMES]` for its latencies, `[VERSION]` for agentv's version.
pub fn filters(project: Option<&Path>) -> Vec<(String, String)> {
    let mut filters = Vec::new();
    if let Some(project) = project {
        filters.push((regex::escape(&project.display().to_string()), "[PROJECT]".to_owned()));
    }
    filters.push((
        regex::escape(&crate::repo_root().display().to_string()),
        "[REPO]".to_owned(),
    ));
    filters.push((r"\(\d+(\.\d+)?s\)".to_owned(), "([TIME])".to_owned()));
    // The summary's wall time and its per-target latency rows.
    filters.push((r"(?m)^(  Wall time: +)\S.*$".to_owned(), "${1}[TIME]".to_owned()));
    filters.push((r"(?m)^(  latency p\d+ ).*$".to_owned(), "${1}[TIMES]".to_owned()));
    filters.push((
        format!(r"\b{}\b", regex::escape(env!("CARGO_PKG_VERSION"))),
        "[VERSION]".to_owned(),
    ));
    filters
}

/// Asserts a snapshot of a [`Run`](crate::Run) named `$name`, stored in `snapshots/` beside
/// the test, with [`filters`](crate::snapshot::filters) for `$project` (a path, or `None`).
/// New and changed snapshots are written as `.snap.new` for review (`cargo insta review`,
/// or `INSTA_UPDATE=always` to accept them all, then read every one).
#[macro_export]
macro_rules! assert_run_snapshot {
    ($name:expr, $project:expr, $run:expr) => {{
        let mut settings = $crate::insta::Settings::clone_current();
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        for (pattern, replacement) in $crate::snapshot::filters($project) {
            settings.add_filter(&pattern, replacement);
        }
        settings.bind(|| {
            $crate::insta::assert_snapshot!($name, $crate::snapshot::format_run(&$run));
        });
    }};
}
