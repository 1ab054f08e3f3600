//! A previous results file, indexed for `--resume` and `--rerun-failed`
//! (`docs/running.md#reruns`).
//!
//! A record is known by its case (dataset and eval id), its target and its repeat (`trial`, 1
//! when absent). When a file holds a record more than once (a resumed run appends a newer one),
//! the last line counts, as for every reader ([`super::latest`]). The index holds one small
//! entry per record, never the records themselves; [`Prior::carried`] reads the kept ones again
//! from the file.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::latest::{RecordKey, key_of};
use super::reader::{ReadError, ResultsFormat, ResultsReader, read_figures};
use crate::model::{EvaluationRecord, ExecutionStatus, Verdict};

/// What the last record of a key says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    line: usize,
    /// The target answered (`ok` or `grader_error`): `--resume` does not run it again (an
    /// invalid case is looked at again: its file may have been fixed).
    complete: bool,
    /// Graded `ok` with the verdict `pass`: `--rerun-failed` leaves it out.
    passed: bool,
}

/// A results file read back.
#[derive(Debug)]
pub struct Prior {
    path: PathBuf,
    index: HashMap<RecordKey, Entry>,
    /// The last line was cut off mid-write (a killed run).
    pub truncated: Option<usize>,
    /// Lines read.
    pub records: usize,
    /// Every line was written by agentv (a file `--resume` may append to).
    pub ours: bool,
}

impl Prior {
    /// Reads `path`. Bad lines are errors (every one, up to the reader's limit); a last line cut
    /// off is not.
    pub fn read(path: &Path) -> Result<Self, Vec<ReadError>> {
        let mut index = HashMap::new();
        let mut ours = true;
        let summary = read_figures(path, |read| {
            ours &= read.generation == ResultsFormat::Agentv;
            let r = &read.record;
            index.insert(
                key_of(r),
                Entry {
                    line: read.line,
                    complete: matches!(r.execution_status, ExecutionStatus::Ok | ExecutionStatus::GraderError),
                    passed: r.execution_status == ExecutionStatus::Ok && r.verdict == Verdict::Pass,
                },
            );
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            index,
            truncated: summary.truncated,
            records: summary.records,
            ours,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when the file has a complete record of this job: its target answered (graded, or
    /// a grader failed). Execution errors and cases not run are run again.
    pub fn is_complete(&self, dataset: &str, eval_id: &str, target: &str, trial: u32) -> bool {
        self.index
            .get(&(dataset.to_owned(), eval_id.to_owned(), target.to_owned(), trial))
            .is_some_and(|e| e.complete)
    }

    /// Complete records in the file (those `--resume` keeps).
    pub fn complete(&self) -> usize {
        self.index.values().filter(|e| e.complete).count()
    }

    /// The cases (dataset, eval id, target) with a record that did not pass: an execution or
    /// grader error, a case not run, or a verdict `fail` or `borderline`. With repeats, one
    /// repeat that did not pass is enough.
    pub fn failed_cases(&self) -> HashSet<(String, String, String)> {
        self.index
            .iter()
            .filter(|(_, e)| !e.passed)
            .map(|((d, id, t, _), _)| (d.clone(), id.clone(), t.clone()))
            .collect()
    }

    /// The complete records of the file, each key once (its last line), in file order: what a
    /// resumed run carries over into its summary and reports.
    pub fn carried(&self) -> Result<impl Iterator<Item = EvaluationRecord> + '_, ReadError> {
        let kept: HashSet<usize> = self.index.values().filter(|e| e.complete).map(|e| e.line).collect();
        let reader = ResultsReader::open(&self.path)?;
        Ok(reader
            .filter_map(Result::ok)
            .filter(move |read| kept.contains(&read.line))
            .map(|read| read.record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::latest::test_line as line;

    /// The index of a file holding `text`, and the directory that keeps it (for `carried`).
    fn prior(text: &str) -> (tempfile::TempDir, Prior) {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, text).expect("write");
        let p = Prior::read(&path).expect("reads");
        (dir, p)
    }

    #[test]
    fn complete_means_the_target_answered_and_the_last_line_counts() {
        let (_dir, p) = prior(
            &[
                line("ok", "m", None, "ok", 0.2),
                line("graded-err", "m", None, "grader_error", 0.0),
                line("down", "m", None, "execution_error", 0.0),
                line("retried", "m", None, "execution_error", 0.0),
                line("retried", "m", None, "ok", 1.0),
                line("rep", "m", Some(2), "ok", 1.0),
            ]
            .concat(),
        );
        let done = |id: &str, trial| p.is_complete("d", id, "m", trial);
        assert!(done("ok", 1) && done("graded-err", 1) && done("retried", 1));
        assert!(!done("down", 1), "an execution error runs again");
        assert!(!done("missing", 1));
        assert!(done("rep", 2) && !done("rep", 1));
        assert!(!p.is_complete("d", "ok", "other-target", 1));
        assert_eq!(p.complete(), 4);
        let carried: Vec<String> = p.carried().expect("reads").map(|r| r.eval_id).collect();
        assert_eq!(carried, ["ok", "graded-err", "retried", "rep"]);
        assert!(p.ours);
    }

    #[test]
    fn failed_cases_are_every_record_that_did_not_pass() {
        let (_dir, p) = prior(
            &[
                line("pass", "m", None, "ok", 0.9),
                line("borderline", "m", None, "ok", 0.7),
                line("fail", "m", None, "ok", 0.1),
                line("err", "m", None, "execution_error", 0.0),
                line("graded-err", "m", None, "grader_error", 0.9),
                line("fixed", "m", None, "ok", 0.1),
                line("fixed", "m", None, "ok", 0.9),
                line("rep", "m", Some(1), "ok", 0.9),
                line("rep", "m", Some(2), "ok", 0.1),
            ]
            .concat(),
        );
        let mut failed: Vec<String> = p.failed_cases().into_iter().map(|(_, id, _)| id).collect();
        failed.sort();
        assert_eq!(failed, ["borderline", "err", "fail", "graded-err", "rep"]);
    }
}
