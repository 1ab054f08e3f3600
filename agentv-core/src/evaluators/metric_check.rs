//! What the 4.x metric graders (`latency`, `cost`, `token-usage`, `execution-metrics`,
//! reference §2.10) share: reading their thresholds and the numbers they compare.

use crate::config::Fields;
use crate::model::TokenUsage;

use super::ParseContext;

/// Reads the number `name` when present (range-checked by its key); `Err(())` after reporting
/// a bad value, so a grader with a bad threshold is not built with the others.
pub fn optional_number(f: &mut Fields<'_>, name: &str, cx: &mut ParseContext<'_>) -> Result<Option<f64>, ()> {
    match f.take(name).filter(|n| !n.is_null()) {
        None => Ok(None),
        Some(_) => f.number(name, cx.diags).map(Some).ok_or(()),
    }
}

/// Reads the required number `name`; `None` after reporting why.
pub fn required_number(f: &mut Fields<'_>, name: &str, unit: &str, cx: &mut ParseContext<'_>) -> Option<f64> {
    match optional_number(f, name, cx) {
        Ok(Some(v)) => Some(v),
        Ok(None) => {
            let what = f.what().to_owned();
            cx.diags.error(
                f.pos,
                format!("{what} is missing the required key `{name}`"),
                Some(format!("add `{name}: <{unit}>` to it")),
            );
            None
        }
        Err(()) => None,
    }
}

/// `$1.2346`: a cost as 4.x writes it (`toFixed(4)`).
pub fn dollars(usd: f64) -> String {
    format!("${}", super::js::to_fixed(usd, 4))
}

/// Token counts as 4.x reads them from a provider's usage: input, output and cached (0 when
/// not reported).
pub fn counts(usage: &TokenUsage) -> (u64, u64, u64) {
    (usage.input, usage.output, usage.cached.unwrap_or(0))
}
