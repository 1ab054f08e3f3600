//! Which record of a results file counts: the last line of each record
//! (`docs/results.md#the-last-line-of-a-record-counts`). A resumed run appends the newer
//! record of a case after the older one (an execution error run again), and a file may be
//! concatenated from runs; every reader (`report`, `compare`, `merge`, `validate`, the HTML
//! report, `--resume`, `--rerun-failed`) applies this one rule, so they all count the same
//! records.
//!
//! A record is known by its case (dataset and eval id), its target and its repeat (`trial`, 1
//! when absent): [`key_of`].

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::io::BufRead;
use std::path::Path;

use super::reader::{Detail, ReadError, each_line};
use crate::model::EvaluationRecord;

/// A record's identity: dataset, eval id, target, trial.
pub type RecordKey = (String, String, String, u32);

/// The identity of `r`.
pub fn key_of(r: &EvaluationRecord) -> RecordKey {
    (r.dataset.clone(), r.eval_id.clone(), r.target.clone(), r.trial_number())
}

/// Keys hashed to 128 bits: a scan holds one small number per record, never the ids
/// (a collision needs about 2^64 records).
pub struct KeyHasher {
    a: RandomState,
    b: RandomState,
}

impl Default for KeyHasher {
    fn default() -> Self {
        Self {
            a: RandomState::new(),
            b: RandomState::new(),
        }
    }
}

impl KeyHasher {
    /// The hash of `r`'s [`key_of`].
    pub fn of(&self, r: &EvaluationRecord) -> u128 {
        let key = (
            r.dataset.as_str(),
            r.eval_id.as_str(),
            r.target.as_str(),
            r.trial_number(),
        );
        let hash = |state: &RandomState| state.hash_one(key);
        (u128::from(hash(&self.a)) << 64) | u128::from(hash(&self.b))
    }
}

/// The lines of `input` (the results file `path`) that a later line of the same record
/// supersedes. Reads the figures of every line; bad lines are errors, as for any read.
pub fn scan<R: BufRead>(path: &Path, input: R) -> Result<HashSet<usize>, Vec<ReadError>> {
    let hasher = KeyHasher::default();
    let mut last: HashMap<u128, usize> = HashMap::new();
    let mut superseded = HashSet::new();
    each_line(path, input, Detail::Figures, |read| {
        if let Some(older) = last.insert(hasher.of(&read.record), read.line) {
            superseded.insert(older);
        }
    })?;
    Ok(superseded)
}

/// One results line of agentv's, for tests: case `id` of dataset `d`.
#[cfg(test)]
pub(super) fn test_line(id: &str, target: &str, trial: Option<u32>, status: &str, score: f64) -> String {
    let mut v = serde_json::json!({
        "timestamp": "t", "eval_id": id, "dataset": "d", "target": target, "attempt": 1,
        "execution_status": status, "score": score, "verdict": crate::model::Verdict::from_score(score),
        "hits": [], "misses": [], "candidate_answer": "", "evaluator_results": []
    });
    if let Some(t) = trial {
        v["trial"] = t.into();
    }
    format!("{v}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::read_all;

    use super::test_line as line;

    #[test]
    fn the_last_line_of_each_case_target_and_trial_counts() {
        let text = [
            line("a", "m", None, "execution_error", 0.0),
            line("b", "m", None, "ok", 0.5),
            line("a", "other", None, "ok", 0.9),
            line("a", "m", Some(1), "ok", 1.0),
            line("r", "m", Some(2), "ok", 0.2),
            line("r", "m", Some(3), "ok", 0.3),
            line("r", "m", Some(2), "ok", 0.4),
        ]
        .concat();
        let superseded = scan(Path::new("r.jsonl"), text.as_bytes()).expect("reads");
        let mut lines: Vec<usize> = superseded.into_iter().collect();
        lines.sort_unstable();
        // `trial: 1` is the same record as no trial.
        assert_eq!(lines, [1, 5]);
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, &text).expect("write");
        let mut seen = Vec::new();
        let summary = read_all(&path, |r| {
            seen.push((r.record.eval_id.clone(), r.record.target.clone(), r.record.score));
        })
        .expect("reads");
        assert_eq!(summary.superseded, 2);
        assert_eq!(
            seen,
            [
                ("b".to_owned(), "m".to_owned(), 0.5),
                ("a".to_owned(), "other".to_owned(), 0.9),
                ("a".to_owned(), "m".to_owned(), 1.0),
                ("r".to_owned(), "m".to_owned(), 0.3),
                ("r".to_owned(), "m".to_owned(), 0.4),
            ]
        );
    }
}
