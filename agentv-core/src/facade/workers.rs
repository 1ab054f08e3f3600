//! How many cases run at once (`docs/architecture.md#running`).

/// One target of a run, as the worker rule sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TargetWorkers {
    /// The target's `workers` setting.
    pub setting: Option<usize>,
    /// The most cases its provider can run at once (a VS Code window answers one at a time).
    pub cap: Option<usize>,
}

/// `--workers`, else the first target that sets `workers`, else 1; then at most the smallest cap
/// of the run's providers, since cases of every target share the one pool of workers. Never 0.
pub(crate) fn decide(requested: Option<usize>, targets: &[TargetWorkers]) -> usize {
    let wanted = requested
        .or_else(|| targets.iter().find_map(|t| t.setting))
        .unwrap_or(1);
    let capped = targets
        .iter()
        .filter_map(|t| t.cap)
        .min()
        .map_or(wanted, |cap| wanted.min(cap));
    capped.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_follow_the_flag_then_the_target_then_one_under_the_provider_cap() {
        let t = |setting: Option<usize>, cap: Option<usize>| TargetWorkers { setting, cap };
        let cases: &[(&str, Option<usize>, &[TargetWorkers], usize)] = &[
            ("nothing set", None, &[t(None, None)], 1),
            ("no targets (nothing to run)", None, &[], 1),
            ("the target's setting", None, &[t(Some(4), None)], 4),
            ("the flag wins over the target", Some(8), &[t(Some(4), None)], 8),
            (
                "the first target that sets it",
                None,
                &[t(None, None), t(Some(3), None), t(Some(6), None)],
                3,
            ),
            (
                "a provider that runs one case at a time",
                Some(8),
                &[t(None, Some(1))],
                1,
            ),
            (
                "the cap of any target in the run",
                None,
                &[t(Some(4), None), t(None, Some(2))],
                2,
            ),
            ("a cap above the wish changes nothing", Some(3), &[t(None, Some(10))], 3),
            ("never zero", Some(0), &[t(None, None)], 1),
            ("a zero cap still runs", None, &[t(Some(2), Some(0))], 1),
        ];
        for (name, requested, targets, want) in cases {
            assert_eq!(decide(*requested, targets), *want, "{name}");
        }
    }
}
