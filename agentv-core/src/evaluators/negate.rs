//! `negate: true` (4.x): the grade turned inside out, as the case aggregator applies it after
//! the grader ran (`negateScore`, reference §2.3).

use super::grader::{Grade, GradeVerdict};

/// `grade` negated: score → 1 − score (kept in [0, 1]), verdict pass ↔ fail (skip stays skip),
/// every assertion's `passed` flipped and its evidence, when it has some, prefixed
/// `[Negated] `; hits and misses follow the flipped assertions.
///
/// A grade given only as hits and misses (a 2.x grader) is read as assertions first: hits
/// passed, then misses failed, the order 4.x uses to convert them. An `error` (the grader
/// could not grade) is kept: 4.x negates a crashed grader's 0 into 1 as well, and the error
/// still says the score is not to be trusted.
pub fn negate(mut grade: Grade) -> Grade {
    let verdict = match grade.verdict4() {
        GradeVerdict::Pass => GradeVerdict::Fail,
        GradeVerdict::Fail => GradeVerdict::Pass,
        GradeVerdict::Skip => GradeVerdict::Skip,
    };
    grade.assertions = grade.assertion_list();
    for a in &mut grade.assertions {
        a.passed = !a.passed;
        a.evidence = a
            .evidence
            .take()
            .filter(|e| !e.is_empty())
            .map(|e| format!("[Negated] {e}"));
    }
    grade.score = agentv_eval_sdk::clamp_score(1.0 - grade.score);
    grade.verdict = Some(verdict);
    grade.list_assertions();
    grade
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Assertion;

    fn with_evidence(passed: bool, text: &str, evidence: &str) -> Assertion {
        Assertion::new(text, passed).with_evidence(evidence)
    }

    #[test]
    fn negation_inverts_score_verdict_and_every_assertion() {
        let cases: Vec<(Grade, f64, GradeVerdict, Vec<Assertion>)> = vec![
            (
                Grade::check(true, "Output contains \"Paris\""),
                0.0,
                GradeVerdict::Fail,
                vec![Assertion::new("Output contains \"Paris\"", false)],
            ),
            (
                Grade::check(false, "Output does not contain \"London\""),
                1.0,
                GradeVerdict::Pass,
                vec![Assertion::new("Output does not contain \"London\"", true)],
            ),
            // A proportional score keeps its own verdict flipped, not recomputed: 0.75 fails
            // (below 0.8), negated 0.25 passes.
            (
                Grade::assessed(
                    0.75,
                    vec![
                        Assertion::new("a", true),
                        Assertion::new("b", true),
                        Assertion::new("c", true),
                        with_evidence(false, "d", "why"),
                    ],
                ),
                0.25,
                GradeVerdict::Pass,
                vec![
                    Assertion::new("a", false),
                    Assertion::new("b", false),
                    Assertion::new("c", false),
                    with_evidence(true, "d", "[Negated] why"),
                ],
            ),
            (
                Grade::assessed(0.0, vec![Assertion::new("Grader parse failure", false)])
                    .with_verdict(GradeVerdict::Skip),
                1.0,
                GradeVerdict::Skip,
                vec![Assertion::new("Grader parse failure", true)],
            ),
            // Hits and misses only (2.x): read as assertions, hits first.
            (
                Grade::scored(0.5, vec!["h".into()], vec!["m".into()]),
                0.5,
                GradeVerdict::Pass,
                vec![Assertion::new("h", false), Assertion::new("m", true)],
            ),
        ];
        for (grade, score, verdict, assertions) in cases {
            let before = format!("{grade:?}");
            let n = negate(grade);
            assert!((n.score - score).abs() < 1e-12, "{before}: {}", n.score);
            assert_eq!(n.verdict, Some(verdict), "{before}");
            assert_eq!(n.assertions, assertions, "{before}");
            let hits: Vec<&str> = assertions
                .iter()
                .filter(|a| a.passed)
                .map(|a| a.text.as_str())
                .collect();
            let misses: Vec<&str> = assertions
                .iter()
                .filter(|a| !a.passed)
                .map(|a| a.text.as_str())
                .collect();
            assert_eq!(
                (
                    n.hits.iter().map(String::as_str).collect::<Vec<_>>(),
                    n.misses.iter().map(String::as_str).collect::<Vec<_>>()
                ),
                (hits, misses),
                "{before}"
            );
        }
    }

    #[test]
    fn negating_twice_gives_the_grade_back() {
        let g = Grade::assessed(1.0, vec![with_evidence(true, "Skill tool invoked", "called Skill")])
            .with_verdict(GradeVerdict::Pass);
        let twice = negate(negate(g.clone()));
        assert_eq!(twice.score, g.score);
        assert_eq!(twice.verdict, g.verdict);
        assert!(twice.assertions[0].passed);
        assert_eq!(
            twice.assertions[0].evidence.as_deref(),
            Some("[Negated] [Negated] called Skill"),
            "4.x prefixes once per negation"
        );
    }

    #[test]
    fn a_crashed_grader_negates_to_one_and_keeps_its_error() {
        let n = negate(Grade::crashed("boom"));
        assert_eq!(n.score, 1.0);
        assert_eq!(n.error.as_deref(), Some("boom"));
    }
}
