//! `word-count` (agentv; not in AgentV 4.x): passes when the answer's word count is within
//! `min` and `max` (each optional, at least one). Words are Unicode words (UAX #29 word
//! boundaries, punctuation not counted: `It's 3.5 km` is three words; each CJK ideograph is a
//! word).

use std::sync::Arc;

use futures::future::BoxFuture;
use unicode_segmentation::UnicodeSegmentation;

use super::string_check::candidate;
use super::{Grade, GradeContext, GradeVerdict, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, IntRange, Key, KeyTable, Kind};
use crate::model::Assertion;

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "word-count",
    names: Names {
        v2: &["word_count"],
        v4: &["word-count"],
        promptfoo: &[],
    },
    doc: "Passes when the answer has at least `min` and at most `max` words.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("min", Kind::Int(IntRange::at_least(0)), "Fewest words."),
    Key::new("max", Kind::Int(IntRange::at_least(0)), "Most words."),
];
const KEYS: KeyTable = KeyTable::new("word-count", "A length check in words (`min`, `max` or both).", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let what = f.what().to_owned();
    let (min_given, max_given) = (f.take("min").is_some(), f.take("max").is_some());
    let min = f.integer("min", cx.diags);
    let max = f.integer("max", cx.diags);
    if (min_given && min.is_none()) || (max_given && max.is_none()) {
        return None;
    }
    let bounds = Bounds {
        min: min.map(|n| n.unsigned_abs()),
        max: max.map(|n| n.unsigned_abs()),
    };
    match (bounds.min, bounds.max) {
        (None, None) => {
            cx.diags.error(
                f.pos,
                format!("{what} needs `min`, `max` or both"),
                Some("add e.g. `max: 150`".to_owned()),
            );
            None
        }
        (Some(lo), Some(hi)) if lo > hi => {
            let pos = f.take("max").map_or(f.pos, |n| n.pos);
            cx.diags.error(pos, format!("`max` of {what} ({hi}) is below its `min` ({lo})"), None);
            None
        }
        _ => Some(Arc::new(WordCount(bounds))),
    }
}

/// The bounds, both included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bounds {
    pub min: Option<u64>,
    pub max: Option<u64>,
}

impl Bounds {
    fn describe(&self) -> String {
        match (self.min, self.max) {
            (Some(lo), Some(hi)) => format!("at least {lo}, at most {hi}"),
            (Some(lo), None) => format!("at least {lo}"),
            (None, Some(hi)) => format!("at most {hi}"),
            (None, None) => "none".to_owned(),
        }
    }
}

/// A `word-count` check as configured.
#[derive(Debug, Clone, Copy)]
pub struct WordCount(pub Bounds);

impl Grader for WordCount {
    fn default_name(&self) -> Option<String> {
        Some("word-count".to_owned())
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { grade(&self.0, &candidate(ctx)) })
    }
}

/// The number of Unicode words in `text`.
pub fn count_words(text: &str) -> u64 {
    text.unicode_words().count() as u64
}

/// Score 1 within the bounds, else 0; the evidence states the count and the bounds.
pub fn grade(bounds: &Bounds, output: &str) -> Grade {
    let n = count_words(output);
    let (passed, text) = match (bounds.min, bounds.max) {
        (Some(lo), _) if n < lo => (false, format!("Word count {n} is below the minimum {lo}")),
        (_, Some(hi)) if n > hi => (false, format!("Word count {n} is above the maximum {hi}")),
        _ => (true, format!("Word count {n} is within bounds")),
    };
    let checked = Assertion::new(text, passed).with_evidence(format!("{n} words; bounds: {}", bounds.describe()));
    let (score, verdict) = if passed { (1.0, GradeVerdict::Pass) } else { (0.0, GradeVerdict::Fail) };
    Grade::assessed(score, vec![checked]).with_verdict(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::negate;
    use crate::evaluators::string_check::testing::{parse_one, problems};

    #[test]
    fn words_are_unicode_words() {
        let cases = [
            ("", 0),
            ("Paris", 1),
            ("The capital of France is Paris.", 6),
            ("It's 3.5 km — naïve café!", 5),
            ("  many\n\nspaces\tand\r\nlines ", 4),
            ("東京", 2),
        ];
        for (text, want) in cases {
            assert_eq!(count_words(text), want, "{text:?}");
        }
    }

    #[test]
    fn bounds_are_inclusive_and_evidence_states_them() {
        let b = |min, max| Bounds { min, max };
        let text = "The capital of France is Paris.";
        let cases = [
            (b(Some(6), Some(6)), true, "Word count 6 is within bounds", "6 words; bounds: at least 6, at most 6"),
            (b(Some(7), None), false, "Word count 6 is below the minimum 7", "6 words; bounds: at least 7"),
            (b(None, Some(5)), false, "Word count 6 is above the maximum 5", "6 words; bounds: at most 5"),
        ];
        for (bounds, passed, want, evidence) in cases {
            let g = grade(&bounds, text);
            assert_eq!((g.score, g.assertions[0].passed), (f64::from(u8::from(passed)), passed));
            assert_eq!(g.assertions[0].text, want);
            assert_eq!(g.assertions[0].evidence.as_deref(), Some(evidence));
            let n = negate(g);
            assert_eq!(n.assertions[0].evidence, Some(format!("[Negated] {evidence}")));
        }
    }

    #[test]
    fn word_count_bounds_are_checked_at_load() {
        let (grader, shown) = parse_one("{type: word_count, max: 100}");
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| g.name), Some("word-count".to_owned()));
        assert_eq!(problems("{type: word-count}"), ["e.yaml:1:3: error: word-count needs `min`, `max` or both"]);
        assert_eq!(problems("{type: word-count, min: 10, max: 5}"), ["e.yaml:1:36: error: `max` of word-count (5) is below its `min` (10)"]);
        assert_eq!(problems("{type: word-count, min: -1}"), ["e.yaml:1:27: error: `min` must be a whole number ≥ 0, found -1"]);
    }
}
