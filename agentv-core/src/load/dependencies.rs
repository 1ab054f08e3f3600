//! The dependency graph of a suite's cases (`depends_on`, `docs/workspaces.md#dependencies`):
//! every id names a case of the run, no case depends on itself, there is no cycle, and each
//! case learns its wave. Checked once every case is read, before any case runs.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use super::eval_file::LoadedCase;
use crate::config::{Diagnostics, Pos};

/// Gives each case of `cases` its wave when some case has `depends_on`. False after reporting
/// an error: the suite cannot run, since which case waits for which is not known.
/// `left_out` are the ids the case selection (`--eval-id`) removed.
pub(super) fn order(
    cases: &mut [LoadedCase],
    left_out: &HashSet<String>,
    suite: &Path,
    diags: &mut Diagnostics,
) -> bool {
    if cases.iter().all(|c| c.case.dependencies.is_none()) {
        return true;
    }
    let index: HashMap<&str, usize> = cases.iter().enumerate().map(|(i, c)| (c.case.id.as_str(), i)).collect();
    let mut problems: Vec<(usize, String, String)> = Vec::new();
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); cases.len()];
    for (i, loaded) in cases.iter().enumerate() {
        let id = &loaded.case.id;
        for dep in loaded.case.dependencies.iter().flat_map(|d| d.on.iter()) {
            match index.get(dep.as_str()) {
                Some(&j) if j == i => problems.push((
                    i,
                    format!("case `{id}` depends on itself"),
                    "remove its own id from `depends_on`".to_owned(),
                )),
                Some(&j) => edges[i].push(j),
                None if left_out.contains(dep) => problems.push((
                    i,
                    format!("case `{id}` depends on `{dep}`, which the case selection leaves out of this run"),
                    format!("select `{dep}` too, or run the whole suite"),
                )),
                None => problems.push((
                    i,
                    format!("case `{id}` depends on `{dep}`, but the suite has no case with that id"),
                    "write the id of another case of this suite".to_owned(),
                )),
            }
        }
    }
    if problems.is_empty() {
        match waves(&edges) {
            Ok(waves) => {
                for (loaded, wave) in cases.iter_mut().zip(waves) {
                    let mut deps = loaded.case.dependencies.as_deref().cloned().unwrap_or_default();
                    deps.wave = wave;
                    loaded.case.dependencies = Some(Arc::new(deps));
                }
                return true;
            }
            Err(cycle) => {
                let path: Vec<&str> = cycle.iter().map(|&i| cases[i].case.id.as_str()).collect();
                problems.push((
                    cycle[0],
                    format!("circular dependency: {}", path.join(" → ")),
                    "remove one of these `depends_on` entries".to_owned(),
                ));
            }
        }
    }
    for (i, message, help) in problems {
        report(
            &cases[i],
            suite,
            diags,
            format!("{message}; no case of the suite runs"),
            help,
        );
    }
    false
}

/// Reports against the file the case is written in (a case may come from a file of its own).
fn report(loaded: &LoadedCase, suite: &Path, diags: &mut Diagnostics, message: String, help: String) {
    let source = &loaded.case.source;
    let pos = loaded.depends_at.unwrap_or(Pos {
        line: source.line,
        column: 1,
    });
    if source.file.as_ref() == suite {
        diags.error(pos, message, Some(help));
    } else {
        let mut own = Diagnostics::new(&source.file);
        own.error(pos, message, Some(help));
        diags.absorb(own);
    }
}

/// The wave of each case (Kahn's levels: 0 without dependencies, else one more than its
/// deepest dependency), or a cycle as case indices, its first case repeated at the end.
fn waves(edges: &[Vec<usize>]) -> Result<Vec<u32>, Vec<usize>> {
    let mut wave: Vec<Option<u32>> = vec![None; edges.len()];
    let mut level = 0;
    loop {
        let ready: Vec<usize> = (0..edges.len())
            .filter(|&i| wave[i].is_none() && edges[i].iter().all(|&j| wave[j].is_some_and(|w| w < level)))
            .collect();
        if ready.is_empty() {
            break;
        }
        for i in ready {
            wave[i] = Some(level);
        }
        level += 1;
    }
    match wave.iter().position(Option::is_none) {
        None => Ok(wave.into_iter().flatten().collect()),
        Some(start) => Err(cycle_from(start, edges, &wave)),
    }
}

/// A cycle among the cases left without a wave, found by following their dependencies from
/// `start` until a case repeats.
fn cycle_from(start: usize, edges: &[Vec<usize>], wave: &[Option<u32>]) -> Vec<usize> {
    let mut path = vec![start];
    let mut at = start;
    loop {
        // A case without a wave has a dependency without one, or it would have got a wave.
        let Some(&next) = edges[at].iter().find(|&&j| wave[j].is_none()) else {
            return path;
        };
        if let Some(first) = path.iter().position(|&i| i == next) {
            let mut cycle = path.split_off(first);
            cycle.push(next);
            return cycle;
        }
        path.push(next);
        at = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waves_are_kahn_levels_and_cycles_are_named() {
        type Row<'a> = (&'a [&'a [usize]], Result<Vec<u32>, Vec<usize>>);
        let table: &[Row<'_>] = &[
            (&[&[], &[0], &[1], &[]], Ok(vec![0, 1, 2, 0])),
            (&[&[1, 2], &[], &[1]], Ok(vec![2, 0, 1])),
            (&[&[1], &[0]], Err(vec![0, 1, 0])),
            (&[&[], &[2], &[3], &[1]], Err(vec![1, 2, 3, 1])),
        ];
        for (edges, expected) in table {
            let edges: Vec<Vec<usize>> = edges.iter().map(|e| e.to_vec()).collect();
            assert_eq!(&waves(&edges), expected, "{edges:?}");
        }
    }
}
