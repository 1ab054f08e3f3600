//! `--shard K/N`: a deterministic partition of the selected cases, so N machines each run one
//! part and `agentv merge` puts the parts back together (`docs/running.md#shards`).
//!
//! Every selected case (after `--eval-id`, before the matrix and repeats: a case runs against
//! every target, every repeat, on one machine) gets a key: the first 8 bytes, big-endian, of
//! SHA-256 over its dataset, a 0 byte and its id (UTF-8). The cases are sorted by key (ties by
//! dataset, then id, bytewise) and dealt round-robin: the i-th (from 0) goes to shard
//! `i mod N + 1`. Shards therefore differ by at most one case, and the partition depends only
//! on the selected cases' datasets and ids: not on the machine, the order of files on disk or
//! the agentv version (the algorithm is fixed; a test pins its output).

use std::collections::HashSet;
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// Shard K of N (`--shard K/N`), K from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// Why `--shard` cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a shard: {reason}; write K/N with 1 ≤ K ≤ N (e.g. 2/4)")]
pub struct ShardError {
    pub text: String,
    pub reason: &'static str,
}

/// The most shards: far beyond any CI matrix, far from overflow.
pub const MAX_SHARDS: u32 = 10_000;

impl std::str::FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = |reason| ShardError {
            text: text.to_owned(),
            reason,
        };
        let (k, n) = text.trim().split_once('/').ok_or_else(|| error("no `/`"))?;
        let k: u32 = k.trim().parse().map_err(|_| error("K is not a whole number"))?;
        let n: u32 = n.trim().parse().map_err(|_| error("N is not a whole number"))?;
        if n == 0 || n > MAX_SHARDS {
            return Err(error("N must be from 1 to 10000"));
        }
        if k == 0 || k > n {
            return Err(error("K must be from 1 to N"));
        }
        Ok(Self { index: k, count: n })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A case as sharding sees it.
pub(crate) type CaseId = (Arc<str>, String);

/// The shard key of a case.
pub(crate) fn shard_key(dataset: &str, id: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(dataset.as_bytes());
    hasher.update([0u8]);
    hasher.update(id.as_bytes());
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The cases of `all` that shard `shard` runs.
pub(crate) fn members(all: &[CaseId], shard: Shard) -> HashSet<CaseId> {
    let mut keyed: Vec<(u64, &CaseId)> = all.iter().map(|c| (shard_key(&c.0, &c.1), c)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    keyed
        .into_iter()
        .enumerate()
        .filter(|(i, _)| (*i as u64 % u64::from(shard.count)) as u32 + 1 == shard.index)
        .map(|(_, (_, c))| c.clone())
        .collect()
}

/// SHA-256 (hex) of the selected cases, sorted: shards of one selection agree on it.
pub(crate) fn selection_digest(all: &[CaseId]) -> String {
    let mut sorted: Vec<&CaseId> = all.iter().collect();
    sorted.sort();
    let mut hasher = Sha256::new();
    for (dataset, id) in sorted {
        hasher.update(dataset.as_bytes());
        hasher.update([0u8]);
        hasher.update(id.as_bytes());
        hasher.update([b'\n']);
    }
    hex::encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cases(n: usize) -> Vec<CaseId> {
        (0..n)
            .map(|i| (Arc::from(format!("ds{}", i % 3)), format!("case-{i}")))
            .collect()
    }

    #[test]
    fn shard_flags_read_k_of_n() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(" 1 / 1 ".parse(), Ok(Shard { index: 1, count: 1 }));
        for bad in ["0/4", "5/4", "1/0", "4", "a/b", "-1/2", "1/99999999999", "1/10001", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let err = "5/4".parse::<Shard>().expect_err("out of range");
        assert_eq!(
            err.to_string(),
            "`5/4` is not a shard: K must be from 1 to N; write K/N with 1 ≤ K ≤ N (e.g. 2/4)"
        );
    }

    #[test]
    fn the_shard_key_is_pinned() {
        // The algorithm is part of the format: shards made by different versions must agree.
        // Both values were computed independently (Python's hashlib over the same bytes).
        assert_eq!(shard_key("capitals", "france"), 0x715b_e416_a122_548b);
        let all = cases(10);
        let mut first: Vec<String> = members(&all, Shard { index: 1, count: 3 })
            .into_iter()
            .map(|(_, id)| id)
            .collect();
        first.sort();
        assert_eq!(first, ["case-0", "case-1", "case-6", "case-8"]);
    }

    proptest! {
        #[test]
        fn shards_partition_the_cases_within_one_case_of_each_other(n in 0usize..200, count in 1u32..12) {
            let all = cases(n);
            let mut seen: HashSet<CaseId> = HashSet::new();
            let mut sizes = Vec::new();
            for index in 1..=count {
                let part = members(&all, Shard { index, count });
                sizes.push(part.len());
                for c in part {
                    prop_assert!(seen.insert(c), "a case in two shards");
                }
            }
            prop_assert_eq!(seen.len(), n, "every case in a shard");
            let (lo, hi) = (sizes.iter().min().copied().unwrap_or(0), sizes.iter().max().copied().unwrap_or(0));
            prop_assert!(hi - lo <= 1, "sizes {:?}", sizes);
        }

        #[test]
        fn the_order_cases_come_in_does_not_move_them(n in 1usize..100, count in 1u32..6, seed in 0usize..1000) {
            let all = cases(n);
            let mut shuffled = all.clone();
            shuffled.rotate_left(seed % n);
            shuffled.reverse();
            for index in 1..=count {
                let shard = Shard { index, count };
                prop_assert_eq!(members(&all, shard), members(&shuffled, shard));
            }
            prop_assert_eq!(selection_digest(&all), selection_digest(&shuffled));
        }
    }
}
