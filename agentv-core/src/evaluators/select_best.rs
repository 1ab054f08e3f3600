//! `select-best` (promptfoo): a grading model reads the outputs of every prompt and provider
//! of a test and names the one that best fits the criteria `value`; that row passes (score
//! 1), the others fail (score 0) (`docs/promptfoo.md#select-best`). Graded across the rows of a
//! test ([`super::across_rows`]), with promptfoo's prompt. A reply without a valid index, or a
//! failed call, is a grader error for every row.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::across_rows::{self, AcrossRows, RowView};
use super::promptfoo_check::PfResult;
use super::promptfoo_graded::{self as graded, Calls, Grading};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "select-best",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["select-best"],
    },
    doc: "A grading model picks, among the outputs of every prompt and provider of the test, the one that best fits the criteria `value`: that row passes, the others fail.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("value", Kind::Str, "The criteria the best output fits.").required(),
    graded::PROVIDER,
    graded::RUBRIC_PROMPT,
];
const KEYS: KeyTable = KeyTable::new("select-best", "A comparison of the test's outputs by a model.", &[OWN]);

/// promptfoo's prompt (`SELECT_BEST_PROMPT`).
pub const PROMPT: &str = include_str!("promptfoo_graded/prompts/select_best.json");

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let criteria = super::promptfoo_check::value_text(f, cx)?;
    let grading = Grading::parse(f, cx)?;
    // promptfoo reads no `not-` on a comparison.
    cx.take_inverse();
    Some(Arc::new(SelectBest { criteria, grading }))
}

/// A `select-best` assertion as configured.
#[derive(Debug, Clone)]
pub struct SelectBest {
    pub criteria: String,
    pub grading: Grading,
}

impl Grader for SelectBest {
    fn grade<'a>(&'a self, _ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async { across_rows::not_compared_yet("select-best") })
    }

    fn across_rows(&self) -> Option<&dyn AcrossRows> {
        Some(self)
    }
}

impl AcrossRows for SelectBest {
    fn compare<'a>(&'a self, ctx: &'a GradeContext<'a>, rows: &'a [RowView<'a>]) -> BoxFuture<'a, Vec<Grade>> {
        Box::pin(async move {
            let mut calls = Calls::default();
            let picked = self.pick(ctx, rows, &mut calls).await;
            let grades: Vec<Grade> = match picked {
                Ok(winner) => (0..rows.len()).map(|i| self.verdict(i == winner).grade()).collect(),
                Err(reason) => (0..rows.len()).map(|_| graded::grader_error(reason.clone())).collect(),
            };
            // The call is recorded once, on the first row.
            let mut grades = grades.into_iter();
            let first = grades.next().map(|g| calls.record(g));
            first.into_iter().chain(grades).collect()
        })
    }
}

impl SelectBest {
    /// The index of the output the grading model picks.
    async fn pick(&self, ctx: &GradeContext<'_>, rows: &[RowView<'_>], calls: &mut Calls) -> Result<usize, String> {
        if rows.len() < 2 {
            return Err(across_rows::too_few("select-best"));
        }
        let mut scope = graded::vars(ctx);
        scope.insert("criteria".to_owned(), self.criteria.clone().into());
        let outputs: Vec<serde_json::Value> = rows.iter().map(|r| graded::try_parse(r.answer)).collect();
        scope.insert("outputs".to_owned(), outputs.into());
        let prompt = graded::render(&self.grading.prompt_or(PROMPT), &scope)?;
        let answer = calls.ask(ctx, &self.grading, &prompt).await?;
        verdict_index(&answer, rows.len())
    }

    fn verdict(&self, won: bool) -> PfResult {
        PfResult {
            pass: won,
            score: if won { 1.0 } else { 0.0 },
            reason: if won {
                format!("Output selected as the best: {}", self.criteria)
            } else {
                format!("Output not selected: {}", self.criteria)
            },
        }
    }
}

/// promptfoo's reading: the first run of digits in the reply, an index below `count`.
pub fn verdict_index(answer: &str, count: usize) -> Result<usize, String> {
    let digits: String = answer
        .trim()
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    match digits.parse::<f64>() {
        // promptfoo reads the digits as a number: a huge one is out of range, never wrapped.
        Ok(n) if n < count as f64 => Ok(n as usize),
        Ok(n) => Err(format!("Invalid select-best verdict: {}", super::js::number(n))),
        Err(_) => Err("Invalid select-best verdict: NaN".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_best_reads_the_first_index_in_range() {
        assert_eq!(verdict_index("1", 2), Ok(1));
        assert_eq!(verdict_index("  The best is <Text index=\"0\">, so 0", 3), Ok(0));
        assert_eq!(verdict_index("Index 2 wins", 2), Err("Invalid select-best verdict: 2".to_owned()));
        assert_eq!(verdict_index("none", 2), Err("Invalid select-best verdict: NaN".to_owned()));
        assert!(verdict_index("99999999999999999999999", 2).is_err(), "a huge index is out of range");
    }
}
