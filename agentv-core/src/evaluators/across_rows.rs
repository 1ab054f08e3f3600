//! promptfoo's assertions that compare the rows of one test (`select-best`, `max-score`;
//! `docs/promptfoo.md#comparing-rows`): the outputs of every prompt × provider of a test are
//! graded together, once all of them are answered, and one row wins.
//!
//! Graded row by row, such an assertion only says it has not been compared yet (a grader
//! error, so a row never passes on it); the run compares the test's rows afterwards
//! ([`AcrossRows::compare`]) and puts each row's result in its place.

use futures::future::BoxFuture;

use super::{Grade, GradeContext};
use crate::model::EvaluatorResult;

/// One row of a test, as a comparison sees it.
#[derive(Debug, Clone, Copy)]
pub struct RowView<'a> {
    /// The row's answer.
    pub answer: &'a str,
    /// The results of its other assertions.
    pub results: &'a [EvaluatorResult],
}

/// An assertion graded across the rows of a test.
pub trait AcrossRows: Send + Sync {
    /// One grade per row of `rows` (in promptfoo's row order). `ctx` is the first row's, for
    /// the grading provider and the test's `vars`.
    fn compare<'a>(&'a self, ctx: &'a GradeContext<'a>, rows: &'a [RowView<'a>]) -> BoxFuture<'a, Vec<Grade>>;
}

/// The grade a row gets before its test's rows are compared.
pub fn not_compared_yet(type_name: &str) -> Grade {
    super::promptfoo_graded::grader_error(format!(
        "{type_name} compares the outputs of every prompt and provider of the test, and they were not all answered"
    ))
}

/// promptfoo's check that there is something to compare.
pub fn too_few(type_name: &str) -> String {
    format!("{type_name} assertion must have at least two outputs to compare between")
}
