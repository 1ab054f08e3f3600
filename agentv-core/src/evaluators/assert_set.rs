//! `assert-set` (promptfoo): a group of assertions graded as one
//! (`docs/promptfoo.md#assertion-sets`). Its score is the weighted mean of its members'
//! scores; it passes when every member passes, or, with `threshold`, when the score reaches it.
//! Members follow the same rules as any assertion (`not-`, `weight`, `metric`).

use std::sync::Arc;

use futures::future::{BoxFuture, join_all};

use super::{ConfiguredGrader, Grade, GradeContext, GradeVerdict, Grader, GraderEntry, Names, Need, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind, NumberRange};
use crate::model::{Assertion, Verdict};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "assert-set",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["assert-set"],
    },
    doc: "A group of assertions: the weighted mean of their scores; passes when all pass, or the score reaches `threshold`.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("assert", Kind::List(&Kind::Any), "The assertions of the set.").required(),
    Key::new(
        "threshold",
        Kind::Number(NumberRange::NON_NEGATIVE),
        "The score the set must reach; without it every member must pass.",
    ),
];
const KEYS: KeyTable = KeyTable::new("assert-set", "A group of assertions graded as one.", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let threshold = f.number("threshold", cx.diags);
    let inverse = cx.take_inverse();
    let Some(list) = f.take("assert") else {
        let what = f.what().to_owned();
        cx.drop_grader(
            f.pos,
            format!("{what} is missing the required key `assert`"),
            Some("add `assert:` with the assertions of the set".to_owned()),
        );
        return None;
    };
    let members = cx.graders(list)?;
    Some(Arc::new(AssertSet {
        members,
        threshold,
        inverse,
    }))
}

/// An `assert-set` as configured.
#[derive(Debug)]
pub struct AssertSet {
    members: Vec<ConfiguredGrader>,
    threshold: Option<f64>,
    /// Written `not-assert-set`: the set's pass is inverted, its score kept (as promptfoo does).
    inverse: bool,
}

impl Grader for AssertSet {
    fn needs(&self) -> Vec<Need> {
        self.members.iter().flat_map(|m| m.grader.needs()).collect()
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let results: Vec<_> = join_all(self.members.iter().map(|m| super::evaluate(m, ctx)))
                .await
                .into_iter()
                .map(|e| e.result)
                .collect();
            if let Some(failed) = results.iter().find(|r| r.error.is_some()) {
                return Grade::failed(format!(
                    "{}: {}",
                    failed.name,
                    failed.error.clone().unwrap_or_default()
                ));
            }
            let total: f64 = results.iter().map(|r| r.weight).sum();
            let score = if total > 0.0 {
                results.iter().map(|r| r.score * r.weight).sum::<f64>() / total
            } else {
                0.0
            };
            let all_pass = results.iter().all(|r| r.verdict == Verdict::Pass);
            let pass = match self.threshold {
                Some(t) => score >= t,
                None => all_pass,
            } != self.inverse;
            let assertions: Vec<Assertion> = results
                .iter()
                .flat_map(|r| {
                    r.assertions.iter().map(move |a| Assertion {
                        text: format!("[{}] {}", r.name, a.text),
                        ..a.clone()
                    })
                })
                .collect();
            let verdict = if pass { GradeVerdict::Pass } else { GradeVerdict::Fail };
            // Each member's own result, for promptfoo's output (`report/promptfoo.rs`).
            let members: Vec<serde_json::Value> = results
                .iter()
                .map(|r| serde_json::to_value(r).unwrap_or_default())
                .collect();
            let mut details = serde_json::Map::new();
            details.insert("members".to_owned(), serde_json::Value::Array(members));
            if let Some(t) = self.threshold {
                details.insert("threshold".to_owned(), serde_json::Value::from(t));
            }
            Grade {
                details: Some(details),
                ..Grade::assessed(score, assertions).with_verdict(verdict)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::evaluators::testkit::{Answered, promptfoo_graders};
    use crate::model::Verdict;

    #[tokio::test]
    async fn an_assert_set_scores_the_weighted_mean_and_passes_by_all_or_its_threshold() {
        let answer = Answered::text("Hello Zed");
        for (yaml, score, verdict) in [
            (
                "[{type: assert-set, assert: [{type: contains, value: Zed}, {type: contains, value: nope}]}]",
                0.5,
                Verdict::Fail,
            ),
            (
                "[{type: assert-set, threshold: 0.5, assert: [{type: contains, value: Zed}, {type: contains, value: nope}]}]",
                0.5,
                Verdict::Pass,
            ),
            (
                "[{type: assert-set, assert: [{type: contains, value: Zed, weight: 3}, {type: not-contains, value: Zed}]}]",
                0.75,
                Verdict::Fail,
            ),
            (
                "[{type: assert-set, assert: [{type: contains, value: Zed}, {type: not-contains, value: nope}]}]",
                1.0,
                Verdict::Pass,
            ),
        ] {
            let graders = promptfoo_graders(yaml);
            let result = crate::evaluators::evaluate(&graders[0], &answer.context()).await.result;
            assert_eq!((result.score, result.verdict), (score, verdict), "{yaml}");
        }
    }
}
