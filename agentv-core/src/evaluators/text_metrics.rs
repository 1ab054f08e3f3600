//! promptfoo's text metrics as pure functions (`docs/promptfoo.md#text-metrics`): BLEU, GLEU,
//! ROUGE-N and Levenshtein distance. promptfoo's tokenisation decides each score, so each
//! follows it to the letter rather than the papers: BLEU and GLEU split the lower-cased text on
//! JavaScript white space, ROUGE-N uses the Penn Treebank tokenizer ([`super::treebank`]), the
//! edit distance counts UTF-16 code units.

use std::collections::HashMap;

use super::js;

/// The lower-cased text split on white space, as `text.toLowerCase().trim().split(/\s+/)`:
/// a blank text gives one empty word.
fn words(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let trimmed = js::trim(&lower);
    if trimmed.is_empty() {
        return vec![String::new()];
    }
    trimmed
        .split(js::is_whitespace)
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The contiguous n-grams of `words`, each counted; none when `n` exceeds the words.
fn ngram_counts(words: &[String], n: usize) -> (HashMap<Vec<&str>, usize>, usize) {
    let mut counts: HashMap<Vec<&str>, usize> = HashMap::new();
    if n == 0 || n > words.len() {
        return (counts, 0);
    }
    let total = words.len() - n + 1;
    for gram in words.windows(n) {
        *counts.entry(gram.iter().map(String::as_str).collect()).or_default() += 1;
    }
    (counts, total)
}

/// Matches of `candidate`'s n-grams in `reference`, each clipped to its count there.
fn clipped(candidate: &HashMap<Vec<&str>, usize>, reference: &HashMap<Vec<&str>, usize>) -> usize {
    candidate
        .iter()
        .map(|(gram, &count)| count.min(reference.get(gram).copied().unwrap_or(0)))
        .sum()
}

/// Why a metric could not be computed (promptfoo throws, and the row is an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricError(pub &'static str);

/// BLEU-4 with uniform weights against the closest-length reference (promptfoo's
/// `calculateBleuScore`): n-gram orders longer than the candidate are left out and the others
/// re-weighted, a zero precision counts as 1e-7, a blank candidate scores 0.
pub fn bleu(candidate: &str, references: &[String]) -> Result<f64, MetricError> {
    if references.is_empty() {
        return Err(MetricError("Invalid inputs"));
    }
    if js::trim(candidate).is_empty() {
        return Ok(0.0);
    }
    const WEIGHTS: [f64; 4] = [0.25; 4];
    let cand = words(candidate);
    let refs: Vec<Vec<String>> = references.iter().map(|r| words(r)).collect();
    let closest = refs.iter().map(Vec::len).skip(1).fold(refs[0].len(), |prev, curr| {
        let (d_curr, d_prev) = (curr.abs_diff(cand.len()), prev.abs_diff(cand.len()));
        if d_curr < d_prev || (d_curr == d_prev && curr < prev) {
            curr
        } else {
            prev
        }
    });
    let mut orders: Vec<(f64, f64)> = Vec::with_capacity(4);
    for (n, weight) in (1..=4).zip(WEIGHTS) {
        let (cand_counts, total) = ngram_counts(&cand, n);
        if total == 0 {
            continue;
        }
        let best = refs
            .iter()
            .map(|r| clipped(&cand_counts, &ngram_counts(r, n).0))
            .max()
            .unwrap_or(0);
        orders.push((best as f64 / total as f64, weight));
    }
    let bp = if cand.len() > closest {
        1.0
    } else {
        (1.0 - closest as f64 / cand.len() as f64).exp()
    };
    let weight_sum = orders.iter().fold(0.0, |acc, (_, w)| acc + w);
    if weight_sum == 0.0 {
        return Ok(0.0);
    }
    let weighted = orders.iter().fold(0.0, |acc, &(p, w)| {
        let p = if p == 0.0 { 1e-7 } else { p };
        acc + w / weight_sum * p.ln()
    });
    Ok(bp * weighted.exp())
}

/// GLEU (promptfoo's `calculateGleuScore`): words lower-cased, split on white space, trailing
/// dots removed; per reference min(precision, recall) over all 1- to 4-grams together, 1 for
/// an identical word list; the best reference wins. An empty candidate is an error.
pub fn gleu(candidate: &str, references: &[String]) -> Result<f64, MetricError> {
    if candidate.is_empty() || references.is_empty() {
        return Err(MetricError("Invalid inputs"));
    }
    let strip = |w: String| w.trim_end_matches('.').to_owned();
    let cand: Vec<String> = words(candidate).into_iter().map(strip).collect();
    let best = references
        .iter()
        .map(|reference| {
            let refw: Vec<String> = words(reference).into_iter().map(strip).collect();
            if cand == refw {
                return 1.0;
            }
            let (mut matches, mut cand_total, mut ref_total) = (0usize, 0usize, 0usize);
            for n in 1..=4 {
                let (c, ct) = ngram_counts(&cand, n);
                let (r, rt) = ngram_counts(&refw, n);
                matches += clipped(&c, &r);
                cand_total += ct;
                ref_total += rt;
            }
            if cand_total == 0 || ref_total == 0 {
                return 0.0;
            }
            let precision = matches as f64 / cand_total as f64;
            let recall = matches as f64 / ref_total as f64;
            precision.min(recall)
        })
        .fold(f64::NEG_INFINITY, f64::max);
    Ok(best)
}

/// The edit distance between `a` and `b` in UTF-16 code units (promptfoo's `fastest-levenshtein`
/// compares `charCodeAt`s: an emoji is two units, so two edits).
pub fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<u16> = a.encode_utf16().collect();
    let b: Vec<u16> = b.encode_utf16().collect();
    strsim::generic_levenshtein(&a, &b)
}

/// ROUGE-N F1 with clipped counts (promptfoo's `rougeNScore`, n = 1, β = 1): the texts are
/// tokenised with the Penn Treebank rules; 0 when either has fewer than `n` tokens or nothing
/// matches. An input too large for js-rouge's materialisation limit is an error there too.
pub fn rouge_n(candidate: &str, reference: &str, n: usize) -> Result<f64, MetricError> {
    let cand = super::treebank::tokenize(candidate);
    let refs = super::treebank::tokenize(reference);
    if cand.len() < n || refs.len() < n {
        return Ok(0.0);
    }
    if over_limit(&cand, n) || over_limit(&refs, n) {
        return Err(MetricError("N-gram generation exceeds the materialization limit"));
    }
    let (c, ct) = ngram_counts(&cand, n);
    let (r, rt) = ngram_counts(&refs, n);
    let overlap = clipped(&c, &r);
    if overlap == 0 {
        return Ok(0.0);
    }
    Ok(f_measure(overlap as f64 / ct as f64, overlap as f64 / rt as f64))
}

/// js-rouge's n-gram work estimate above 1,000,000 (≈ a million characters of text).
fn over_limit(tokens: &[String], n: usize) -> bool {
    const LIMIT: usize = 1_000_000;
    let grams = tokens.len() + 1 - n;
    let mut work = grams * (2 * n - 1);
    for (i, t) in tokens.iter().enumerate() {
        let len = t.encode_utf16().count();
        work += len.saturating_sub(1) * (i + 1).min(n).min(grams).min(tokens.len() - i);
        if work > LIMIT {
            return true;
        }
    }
    false
}

/// js-rouge's `fMeasure(p, r, 1)`, in its arithmetic (the last bit of a score depends on it).
fn f_measure(p: f64, r: f64) -> f64 {
    if p == r {
        return p;
    }
    if p == 0.0 || r == 0.0 {
        return 0.0;
    }
    if p > r {
        p.min(r * (2.0 / (1.0 + r / p)))
    } else {
        r.min(p * (2.0 / (1.0 + p / r)))
    }
}

/// Perplexity of the answer from its token log probabilities: `exp(−mean)`; `None` without
/// any (promptfoo throws: the provider returned none).
pub fn perplexity(logprobs: &[f64]) -> Option<f64> {
    mean(logprobs).map(|m| (-m).exp())
}

/// promptfoo's normalised perplexity score: `1 / (1 + exp(−mean))`, in (0, 1).
pub fn perplexity_score(logprobs: &[f64]) -> Option<f64> {
    mean(logprobs).map(|m| 1.0 / (1.0 + (-m).exp()))
}

/// The mean as JavaScript sums it (left to right).
fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().fold(0.0, |acc, v| acc + v) / values.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(r: &[&str]) -> Vec<String> {
        r.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn words_split_as_javascript_splits_white_space() {
        assert_eq!(words("  Hello\u{a0}World\u{feff} "), ["hello", "world"]);
        assert_eq!(words("a\u{85}b"), ["a\u{85}b"], "U+0085 is not JavaScript white space");
        assert_eq!(words("   "), [""]);
    }

    #[test]
    fn bleu_and_gleu_match_promptfoo_on_classic_pairs() {
        // Numbers from promptfoo 0.121.20 (compat/promptfoo-assertions/expected.json).
        let cases: [(&str, &[&str], f64, f64); 4] = [
            (
                "the cat is on the mat",
                &["the cat sat on the mat"],
                0.010573712634405643,
                0.5,
            ),
            (
                "The cat sat on the mat.",
                &["the cat sat on the mat"],
                0.7598356856515925,
                1.0,
            ),
            (
                "the cat",
                &["the cat sat on the mat"],
                0.1353352832366127,
                0.16666666666666666,
            ),
            (
                "the cat the cat on the mat",
                &["the cat is on the mat", "there is a cat on the mat"],
                0.4347208719449915,
                0.45454545454545453,
            ),
        ];
        for (cand, r, b, g) in cases {
            assert!((bleu(cand, &refs(r)).expect("bleu") - b).abs() < 1e-15, "bleu {cand}");
            assert!((gleu(cand, &refs(r)).expect("gleu") - g).abs() < 1e-15, "gleu {cand}");
        }
        assert_eq!(bleu("x", &[]), Err(MetricError("Invalid inputs")));
        assert_eq!(gleu("", &refs(&["x"])), Err(MetricError("Invalid inputs")));
        assert_eq!(bleu("  ", &refs(&["x"])), Ok(0.0));
    }

    #[test]
    fn levenshtein_counts_utf16_units() {
        for (a, b, d) in [
            ("kitten", "sitting", 3),
            ("😀", "", 2),
            ("café", "cafe", 1),
            ("", "", 0),
        ] {
            assert_eq!(levenshtein(a, b), d, "{a} {b}");
        }
    }

    #[test]
    fn perplexity_is_the_exponent_of_the_negated_mean() {
        let p = perplexity(&[-0.1, -0.2, -0.3]).expect("some");
        assert!((p - 0.2f64.exp()).abs() < 1e-15);
        let s = perplexity_score(&[0.0]).expect("some");
        assert_eq!(s, 0.5);
        assert_eq!(perplexity(&[]), None);
    }
}
