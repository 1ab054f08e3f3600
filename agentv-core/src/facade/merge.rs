//! `agentv merge`: the results files of a sharded run (or of any runs) as one results file and
//! one run summary (`docs/running.md#merge`).
//!
//! The merged file holds every record of the inputs once, sorted by dataset, eval id, target
//! and trial (bytewise, the trial by number): the order does not depend on which machine ran
//! what, and `agentv merge` of an unsharded results file alone sorts it the same way, so a
//! sharded run and the same run made on one machine compare line for line. Within one input,
//! a record repeated (a resumed run appends a newer one) counts once, its last line (the rule
//! every reader follows: `crate::report::key_of`); the same record in two inputs is an overlap,
//! and nothing is written. Memory holds a small entry per record, never the records: inputs
//! are read for their figures only, and the lines are copied from them as they are, streamed.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::redact::Secrets;
use crate::report::{
    MergedFile, ReadError, RunMetadata, RunStats, ShardInfo, StatsReport, key_of, read_figures, read_metadata,
    summary_path, write_summary,
};
use crate::run::{Outcome, RunFacts, decide};

/// What to merge, and where.
#[derive(Debug, Clone, Default)]
pub struct MergeOptions {
    pub inputs: Vec<PathBuf>,
    pub out: PathBuf,
    /// The command line, for the merged run summary (redacted when written).
    pub command_line: Vec<String>,
    pub secrets: Secrets,
}

/// Why nothing was merged (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Read(Vec<ReadError>),
    /// Records in more than one input.
    #[error("{} record(s) are in more than one input (shards overlap; was a shard run twice, or with another N?):\n{}", .count, .examples.join("\n"))]
    Overlap { count: usize, examples: Vec<String> },
    /// Inputs that cannot be parts of one run.
    #[error("{0}")]
    Shards(String),
    #[error("{0}")]
    Usage(String),
    #[error("cannot write {}: {source}", .path.display())]
    Write { path: PathBuf, source: io::Error },
}

/// The merged run.
#[derive(Debug, Clone)]
pub struct Merged {
    pub out: PathBuf,
    pub summary_path: PathBuf,
    /// Records written.
    pub records: usize,
    /// Per input: its path, the records taken from it and the older copies left out.
    pub inputs: Vec<(PathBuf, usize, usize)>,
    /// Shards or records the inputs' summaries planned and no input holds.
    pub missing: Vec<String>,
    /// Inputs whose last line was cut off (and left out), and inputs without a summary to
    /// check.
    pub warnings: Vec<String>,
    pub stats: StatsReport,
    /// The per-target table and the repeats, as `eval` prints them; redacted and escaped.
    pub stats_text: String,
    /// What the merged run amounts to, as `eval` would decide it (no threshold): incomplete
    /// when a shard or record is missing, or a record is an error or was not run.
    pub outcome: Outcome,
}

/// What makes a record one: its dataset, id, target and trial.
type RecordKey = (String, String, String, u32);

/// One record to write: where its line is.
#[derive(Debug, Clone, Copy)]
struct Place {
    input: usize,
    line: usize,
}

/// Every input's records, each key once, in merged order.
struct ReadInputs {
    order: BTreeMap<RecordKey, Place>,
    /// Each input's path, record count and superseded lines.
    inputs: Vec<(PathBuf, usize, usize)>,
    warnings: Vec<String>,
    /// The statistics of every record kept: the merged file's, whatever its order.
    stats: RunStats,
}

/// Reads every input; an input that cannot be read, or a record in two inputs, is an error
/// (all of them, up to 20 overlaps shown).
fn read_inputs(options: &MergeOptions) -> Result<ReadInputs, MergeError> {
    let mut order: BTreeMap<RecordKey, Place> = BTreeMap::new();
    let mut inputs = Vec::new();
    let mut warnings = Vec::new();
    let mut overlaps: Vec<String> = Vec::new();
    let mut overlap_count = 0;
    let mut errors = Vec::new();
    let mut stats = RunStats::default();
    for (i, path) in options.inputs.iter().enumerate() {
        let mut own: Vec<(RecordKey, usize)> = Vec::new();
        match read_figures(path, |read| {
            stats.add(&read.record);
            own.push((key_of(&read.record), read.line));
        }) {
            Ok(summary) => {
                if let Some(line) = summary.truncated {
                    warnings.push(format!(
                        "{}:{line}: the last line is cut off (a killed run); left out",
                        path.display()
                    ));
                }
                inputs.push((path.clone(), own.len(), summary.superseded));
            }
            Err(e) => {
                errors.extend(e);
                continue;
            }
        }
        for (key, line) in own {
            if let Some(other) = order.get(&key) {
                overlap_count += 1;
                if overlaps.len() < 20 {
                    overlaps.push(format!(
                        "  {}/{} (target {}, trial {}): {} and {}",
                        key.0,
                        key.1,
                        key.2,
                        key.3,
                        options.inputs[other.input].display(),
                        path.display()
                    ));
                }
                continue;
            }
            order.insert(key, Place { input: i, line });
        }
    }
    if !errors.is_empty() {
        return Err(MergeError::Read(errors));
    }
    if overlap_count > 0 {
        overlaps.sort();
        return Err(MergeError::Overlap {
            count: overlap_count,
            examples: overlaps,
        });
    }
    Ok(ReadInputs {
        order,
        inputs,
        warnings,
        stats,
    })
}

/// Merges `options.inputs` into `options.out` and writes `<out>.summary.json`.
pub fn merge(options: &MergeOptions) -> Result<Merged, MergeError> {
    let started = jiff::Timestamp::now().to_string();
    check_paths(options)?;
    let ReadInputs {
        order,
        inputs,
        mut warnings,
        stats,
    } = read_inputs(options)?;
    let summaries = input_summaries(&options.inputs, &mut warnings);
    let shards = check_shards(&summaries)?;
    let mut counts_per_input = vec![0usize; options.inputs.len()];
    for place in order.values() {
        counts_per_input[place.input] += 1;
    }
    let missing = missing_records(&options.inputs, &summaries, &counts_per_input, shards.as_ref());
    write_merged(options, &order)?;
    let report = stats.compute();
    let metadata = merged_metadata(options, started, &summaries, &counts_per_input, &report);
    let summary = summary_path(&options.out);
    write_summary(&summary, &metadata, &report, &options.secrets).map_err(|source| MergeError::Write {
        path: summary.clone(),
        source,
    })?;
    let outcome = decide(&RunFacts {
        graded: &[],
        execution_errors: report.by_status.execution_error,
        grader_errors: report.by_status.grader_error,
        skipped: report.by_status.invalid,
        not_run: report.by_status.not_run + missing.len(),
        ..RunFacts::default()
    });
    Ok(Merged {
        out: options.out.clone(),
        summary_path: summary,
        records: order.len(),
        inputs,
        missing,
        warnings,
        stats_text: report.render(&options.secrets),
        stats: report,
        outcome,
    })
}

/// Inputs exist once each, and the output is none of them.
fn check_paths(options: &MergeOptions) -> Result<(), MergeError> {
    if options.inputs.is_empty() {
        return Err(MergeError::Usage("nothing to merge: name the results files".to_owned()));
    }
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    for (i, input) in options.inputs.iter().enumerate() {
        if same(input, &options.out) {
            return Err(MergeError::Usage(format!(
                "--out {} is one of the inputs; write the merged results to a new file",
                options.out.display()
            )));
        }
        if options.inputs[..i].iter().any(|earlier| same(earlier, input)) {
            return Err(MergeError::Usage(format!("{} is given twice", input.display())));
        }
    }
    Ok(())
}

/// The summary beside each input, when it has one that reads.
fn input_summaries(inputs: &[PathBuf], warnings: &mut Vec<String>) -> Vec<Option<RunMetadata>> {
    inputs
        .iter()
        .map(|input| {
            let path = summary_path(input);
            if !path.exists() {
                warnings.push(format!(
                    "no run summary beside {} ({}): its missing cases cannot be checked",
                    input.display(),
                    path.display()
                ));
                return None;
            }
            match read_metadata(&path) {
                Ok(m) => Some(m),
                Err(e) => {
                    warnings.push(format!("{e}: its missing cases cannot be checked"));
                    None
                }
            }
        })
        .collect()
}

/// Shard inputs must be shards of one selection, each once. Returns their count.
fn check_shards(summaries: &[Option<RunMetadata>]) -> Result<Option<(u32, Vec<u32>)>, MergeError> {
    let shards: Vec<&ShardInfo> = summaries.iter().flatten().filter_map(|m| m.shard.as_ref()).collect();
    let Some(first) = shards.first() else {
        return Ok(None);
    };
    for s in &shards {
        if s.count != first.count {
            return Err(MergeError::Shards(format!(
                "the inputs are shards of different splits: {}/{} and {}/{}",
                first.index, first.count, s.index, s.count
            )));
        }
        if s.selection_digest != first.selection_digest || s.selected_cases != first.selected_cases {
            return Err(MergeError::Shards(format!(
                "the inputs are shards of different case selections ({} and {} cases selected): run every shard on the same eval files, --eval-id and commit",
                first.selected_cases, s.selected_cases
            )));
        }
    }
    let mut seen: Vec<u32> = Vec::new();
    for s in &shards {
        if seen.contains(&s.index) {
            return Err(MergeError::Shards(format!(
                "shard {}/{} is given twice",
                s.index, s.count
            )));
        }
        seen.push(s.index);
    }
    seen.sort_unstable();
    Ok(Some((first.count, seen)))
}

/// Shards no input holds, and inputs holding fewer records than their summary planned.
fn missing_records(
    inputs: &[PathBuf],
    summaries: &[Option<RunMetadata>],
    counts: &[usize],
    shards: Option<&(u32, Vec<u32>)>,
) -> Vec<String> {
    let mut missing = Vec::new();
    if let Some((count, seen)) = shards {
        for index in (1..=*count).filter(|i| !seen.contains(i)) {
            missing.push(format!("shard {index}/{count} is missing"));
        }
    }
    for ((input, summary), have) in inputs.iter().zip(summaries).zip(counts) {
        if let Some(m) = summary
            && *have < m.planned
        {
            missing.push(format!(
                "{} holds {have} of the {} records its run planned",
                input.display(),
                m.planned
            ));
        }
    }
    missing
}

/// Writes the records in `order` to `options.out` (a temporary file renamed at the end),
/// copying each line as it is, without its byte order mark or `\r`, a block at a time.
fn write_merged(options: &MergeOptions, order: &BTreeMap<RecordKey, Place>) -> Result<(), MergeError> {
    let write_error = |source: io::Error| MergeError::Write {
        path: options.out.clone(),
        source,
    };
    let read_error = |path: &Path, source: io::Error| {
        MergeError::Read(vec![ReadError::Open {
            path: path.to_path_buf(),
            source,
        }])
    };
    // Where each wanted line starts, per input.
    let mut offsets: Vec<HashMap<usize, u64>> = vec![HashMap::new(); options.inputs.len()];
    for place in order.values() {
        offsets[place.input].insert(place.line, 0);
    }
    let mut files = Vec::with_capacity(options.inputs.len());
    for (path, wanted) in options.inputs.iter().zip(offsets.iter_mut()) {
        let file = File::open(path).map_err(|e| read_error(path, e))?;
        line_offsets(&file, wanted).map_err(|e| read_error(path, e))?;
        files.push(BufReader::with_capacity(64 * 1024, file));
    }
    let dir = options
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir).map_err(write_error)?;
    let out = crate::report::output_file(dir).map_err(write_error)?;
    let mut out = io::BufWriter::with_capacity(64 * 1024, out);
    for place in order.values() {
        let path = &options.inputs[place.input];
        let file = &mut files[place.input];
        let offset = offsets[place.input][&place.line];
        file.seek(SeekFrom::Start(offset)).map_err(|e| read_error(path, e))?;
        if offset == 0
            && file
                .fill_buf()
                .map_err(|e| read_error(path, e))?
                .starts_with(b"\xEF\xBB\xBF")
        {
            file.consume(3);
        }
        copy_line(file, &mut out).map_err(|e| match e {
            Copy::Read(e) => read_error(path, e),
            Copy::Write(e) => write_error(e),
        })?;
    }
    let out = out.into_inner().map_err(|e| write_error(e.into_error()))?;
    out.as_file().sync_all().map_err(write_error)?;
    crate::paths::persist(out, &options.out).map_err(write_error)?;
    Ok(())
}

/// Which side of a copy failed.
enum Copy {
    Read(io::Error),
    Write(io::Error),
}

/// Copies the line at `input`'s position to `out`, ending it with `\n` and leaving out a `\r`
/// before its newline, a buffer at a time (a line of any length).
fn copy_line(input: &mut impl BufRead, out: &mut impl Write) -> Result<(), Copy> {
    let mut held_cr = false;
    loop {
        let available = input.fill_buf().map_err(Copy::Read)?;
        if available.is_empty() {
            break;
        }
        let (chunk, newline) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..i], true),
            None => (available, false),
        };
        if !chunk.is_empty() {
            if held_cr {
                out.write_all(b"\r").map_err(Copy::Write)?;
            }
            held_cr = chunk.last() == Some(&b'\r');
            out.write_all(&chunk[..chunk.len() - usize::from(held_cr)])
                .map_err(Copy::Write)?;
        }
        let used = chunk.len() + usize::from(newline);
        input.consume(used);
        if newline {
            break;
        }
    }
    out.write_all(b"\n").map_err(Copy::Write)
}

/// Fills `wanted` (line number → offset) with where those lines of `file` start, numbering
/// lines as the results reader does, a buffer at a time (a line of any length).
fn line_offsets(file: &File, wanted: &mut HashMap<usize, u64>) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut offset = 0u64;
    // The line that starts at `offset`, once a byte of it is seen.
    let mut number = 0usize;
    let mut at_start = true;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(());
        }
        let mut i = 0;
        while i < available.len() {
            if at_start {
                number += 1;
                if let Some(slot) = wanted.get_mut(&number) {
                    *slot = offset + i as u64;
                }
                at_start = false;
            }
            match available[i..].iter().position(|b| *b == b'\n') {
                Some(end) => {
                    i += end + 1;
                    at_start = true;
                }
                None => i = available.len(),
            }
        }
        let n = available.len();
        reader.consume(n);
        offset += n as u64;
    }
}

fn merged_metadata(
    options: &MergeOptions,
    started_at: String,
    summaries: &[Option<RunMetadata>],
    counts: &[usize],
    report: &StatsReport,
) -> RunMetadata {
    let mut targets: Vec<String> = Vec::new();
    for m in summaries.iter().flatten() {
        for t in &m.targets {
            if !targets.contains(t) {
                targets.push(t.clone());
            }
        }
    }
    for t in &report.targets {
        if !targets.contains(&t.target) {
            targets.push(t.target.clone());
        }
    }
    let planned = if summaries.iter().all(Option::is_some) {
        summaries.iter().flatten().map(|m| m.planned).sum()
    } else {
        report.records
    };
    let name = |p: &Path| {
        p.file_name()
            .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
    };
    RunMetadata {
        agentv_version: env!("CARGO_PKG_VERSION").to_owned(),
        command: options.command_line.clone(),
        started_at,
        finished_at: Some(jiff::Timestamp::now().to_string()),
        git_commit: summaries.iter().flatten().find_map(|m| m.git_commit.clone()),
        results_file: name(&options.out),
        targets,
        repeat: report.repeat.unwrap_or(1),
        planned,
        shard: None,
        budget_usd: None,
        resumed_records: None,
        rerun_failed_from: None,
        merged_from: options
            .inputs
            .iter()
            .zip(summaries)
            .zip(counts)
            .map(|((input, m), records)| MergedFile {
                results_file: name(input),
                records: *records,
                shard: m.as_ref().and_then(|m| m.shard.clone()),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_offsets_count_lines_as_the_reader_does() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, "a\r\n\nbb\nccc").expect("write");
        let mut wanted: HashMap<usize, u64> = [(1, 9), (3, 9), (4, 9)].into_iter().collect();
        line_offsets(&File::open(&path).expect("open"), &mut wanted).expect("reads");
        assert_eq!((wanted[&1], wanted[&3], wanted[&4]), (0, 4, 7));
    }

    #[test]
    fn lines_are_copied_without_their_cr_whatever_their_length() {
        for capacity in [1, 2, 5, 4096] {
            let text = b"ab\rc\r\nnext\n";
            let mut input = io::BufReader::with_capacity(capacity, &text[..]);
            let mut out = Vec::new();
            assert!(copy_line(&mut input, &mut out).is_ok());
            assert_eq!(out, b"ab\rc\n", "capacity {capacity}");
            let mut rest = Vec::new();
            assert!(copy_line(&mut input, &mut rest).is_ok());
            assert_eq!(rest, b"next\n", "capacity {capacity}");
        }
    }
}
