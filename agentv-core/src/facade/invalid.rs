//! Invalid cases as a run records them: one record each (`execution_status: invalid`, score 0,
//! its errors in `error` and `misses`), written to the results file and every report before the
//! cases run, and counted by the summary and the exit code
//! (`docs/results.md#invalid-cases`).

use std::sync::Arc;

use super::shard::{Shard, shard_key};
use crate::load::{InvalidCase, LoadedSuite};
use crate::model::{EvaluationRecord, ExecutionStatus};

/// An invalid case and the suite it belongs to.
#[derive(Debug, Clone)]
pub struct Invalid {
    pub dataset: Arc<str>,
    /// The target the eval file names, if any.
    pub target: Option<Arc<str>>,
    /// The targets the file declares itself (a promptfoo config's providers), when `target`
    /// is one of them: `--target` chooses among them rather than replacing them.
    pub declared: Option<Arc<crate::providers::TargetsFile>>,
    pub case: InvalidCase,
}

/// Every invalid case of `suites`, in file order. A promptfoo config's rows run on each of its
/// providers (`docs/promptfoo.md#providers`), so its invalid rows are recorded once per
/// provider, as promptfoo lists a row per provider.
pub(super) fn collect(suites: &[LoadedSuite]) -> Vec<Invalid> {
    suites
        .iter()
        .flat_map(|s| {
            let (targets, declared): (Vec<Option<Arc<str>>>, _) = match (&s.target, &s.inline_targets) {
                (None, Some(file)) if !file.names().is_empty() => (
                    file.names().iter().map(|t| Some(Arc::from(t.as_str()))).collect(),
                    Some(file.clone()),
                ),
                _ => (vec![s.target.clone()], None),
            };
            s.invalid.iter().flat_map(move |case| {
                let declared = declared.clone();
                // Not on the providers whose `prompts` leave the row's prompt out.
                let runs = |t: &Option<Arc<str>>| {
                    let excluded = case.excluded_targets.as_deref().map_or(&[][..], Vec::as_slice);
                    t.as_deref().is_none_or(|t| !excluded.iter().any(|e| e == t))
                };
                let targets: Vec<Option<Arc<str>>> = targets.iter().filter(|t| runs(t)).cloned().collect();
                targets.into_iter().map(move |target| Invalid {
                    dataset: s.dataset.clone(),
                    target,
                    declared: declared.clone(),
                    case: case.clone(),
                })
            })
        })
        .collect()
}

/// The records of `invalid` that this run writes: with `--shard`, each shard writes the
/// invalid cases its key gives it, so merged shards hold each once. Their target is the first
/// `--target`, else the eval file's, else `default`: the one the case would have run against.
pub(super) fn records(invalid: Vec<Invalid>, shard: Option<Shard>, targets: &[String]) -> Vec<EvaluationRecord> {
    let mut records: Vec<EvaluationRecord> = invalid
        .into_iter()
        .filter(|i| {
            shard.is_none_or(|s| {
                let id = i.case.record_id();
                (shard_key(&i.dataset, &id) % u64::from(s.count)) as u32 + 1 == s.index
            })
        })
        .filter(|i| match (&i.declared, &i.target) {
            // A declared target is recorded when `--target` chose it (or none was given).
            (Some(file), Some(target)) if !targets.is_empty() => file
                .select(targets)
                .is_ok_and(|chosen| chosen.iter().any(|c| c.as_str() == &**target)),
            _ => true,
        })
        .map(|i| {
            let target = match (&i.declared, &i.target) {
                (Some(_), Some(own)) => own.to_string(),
                _ => targets
                    .first()
                    .map(String::as_str)
                    .or(i.target.as_deref())
                    .unwrap_or("default")
                    .to_owned(),
            };
            record(&i, target)
        })
        .collect();
    // `--target` names one target for every invalid case of a file without targets of its own.
    records.dedup_by(|a, b| a.eval_id == b.eval_id && a.dataset == b.dataset && a.target == b.target);
    records
}

fn record(i: &Invalid, target: String) -> EvaluationRecord {
    let mut record = EvaluationRecord {
        timestamp: jiff::Timestamp::now().to_string(),
        execution_status: ExecutionStatus::Invalid,
        misses: i
            .case
            .errors
            .iter()
            .map(|e| e.lines().next().unwrap_or_default().to_owned())
            .collect(),
        error: Some(i.case.errors.join("\n")),
        ..EvaluationRecord::empty(i.case.record_id(), i.dataset.to_string(), target)
    };
    record.fill_v4_fields(i.case.metadata.clone());
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn invalid(id: Option<&str>, line: u64) -> Invalid {
        Invalid {
            dataset: Arc::from("d"),
            target: Some(Arc::from("from-file")),
            declared: None,
            case: InvalidCase {
                id: id.map(str::to_owned),
                file: PathBuf::from("evals/d.yaml"),
                line,
                errors: vec!["evals/d.yaml:4:5: error: unknown grader type\n  help: use one of …".to_owned()],
                metadata: None,
                excluded_targets: None,
            },
        }
    }

    #[test]
    fn an_invalid_case_is_a_record_with_its_errors() {
        let all = records(vec![invalid(Some("a"), 3), invalid(None, 9)], None, &[]);
        assert_eq!(all.len(), 2);
        let r = &all[0];
        assert_eq!((r.eval_id.as_str(), r.target.as_str()), ("a", "from-file"));
        assert_eq!(r.execution_status, ExecutionStatus::Invalid);
        assert_eq!(r.misses, ["evals/d.yaml:4:5: error: unknown grader type"]);
        assert!(r.error.as_deref().is_some_and(|e| e.contains("help: use one of")));
        assert_eq!(all[1].eval_id, "d.yaml:9");
        let json = serde_json::to_value(r).expect("json");
        assert_eq!(json["execution_status"], "invalid");
        let named = records(vec![invalid(Some("a"), 3)], None, &["cli".to_owned()]);
        assert_eq!(named[0].target, "cli");
    }

    #[test]
    fn shards_split_the_invalid_cases_between_them() {
        let all: Vec<Invalid> = (0..40).map(|n| invalid(Some(&format!("c{n}")), n)).collect();
        let mut seen: Vec<String> = Vec::new();
        for index in 1..=3 {
            let shard = Shard { index, count: 3 };
            seen.extend(records(all.clone(), Some(shard), &[]).into_iter().map(|r| r.eval_id));
        }
        seen.sort();
        let mut want: Vec<String> = (0..40).map(|n| format!("c{n}")).collect();
        want.sort();
        assert_eq!(seen, want, "each invalid case in exactly one shard");
    }
}
