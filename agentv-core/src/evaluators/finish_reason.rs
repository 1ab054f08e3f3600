//! `finish-reason` (promptfoo): passes when the provider's finish reason (`stop`, `length`,
//! `tool_calls`, `content_filter`, ...) equals `value`, ignoring case; an answer whose provider
//! gave none fails (`docs/promptfoo.md#finish-reason`).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::promptfoo_check::{self, PfResult};
use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "finish-reason",
    names: Names {
        v2: &[],
        v4: &[],
        promptfoo: &["finish-reason"],
    },
    doc: "Passes when the model's finish reason equals `value` (ignoring case).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[Key::new("value", Kind::Str, "The expected finish reason: stop, length, tool_calls, content_filter, ...").required()];
const KEYS: KeyTable = KeyTable::new("finish-reason", "A finish-reason check.", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    Some(Arc::new(FinishReason {
        value: promptfoo_check::value_text(f, cx)?,
        inverse: promptfoo_check::inverse(cx),
    }))
}

/// A `finish-reason` check as configured.
#[derive(Debug, Clone)]
pub struct FinishReason {
    pub value: String,
    pub inverse: bool,
}

impl Grader for FinishReason {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move { result(self, ctx.finish_reason).grade() })
    }
}

/// promptfoo's result for the provider's `finish_reason`.
pub fn result(check: &FinishReason, finish_reason: Option<&str>) -> PfResult {
    let Some(got) = finish_reason.filter(|r| !r.is_empty()) else {
        return PfResult::check(check.inverse, || "Provider did not supply stop/finish reason".to_owned());
    };
    let pass = (check.value.to_lowercase() == got.to_lowercase()) != check.inverse;
    PfResult::check(pass, || {
        let not = if check.inverse { "not " } else { "" };
        format!("Expected finish reason {not}\"{}\" but got \"{got}\"", check.value)
    })
}

#[cfg(test)]
mod tests {
    use crate::evaluators::promptfoo_check::testing::agrees_with_promptfoo;

    #[test]
    fn finish_reason_agrees_with_promptfoo() {
        agrees_with_promptfoo("finish-reason");
    }
}
