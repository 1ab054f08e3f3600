//! The side-by-side table of a run with several targets: one column per target, so the targets
//! compare at a glance. The figures are the run statistics' ([`TargetStats`], computed once in
//! `report/stats.rs`, the same as `<results>.summary.json` holds).

use std::fmt::Write as _;
use std::time::Duration;

use super::Shown;
use super::text::{Paint, Tone, compact_count, cut_middle, dollars, duration, pad_left, pad_right};
use crate::report::stats::TargetStats;

/// Width of the row labels of the table.
const LABEL_WIDTH: usize = 16;
/// Width of one target's column (its values are right-aligned, one space from the next).
const COLUMN_WIDTH: usize = 16;

/// The table, with as many targets side by side as fit in `width` columns, then the next ones
/// below.
pub(super) fn render(out: &mut String, targets: &[TargetStats], shown: &Shown<'_>, paint: Paint, width: usize) {
    let per_block = (width.saturating_sub(LABEL_WIDTH) / COLUMN_WIDTH).max(1);
    for (i, block) in targets.chunks(per_block).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let title = if i == 0 { "BY TARGET" } else { "BY TARGET (continued)" };
        let mut head = paint.tone(Tone::Heading, &pad_right(title, LABEL_WIDTH));
        for t in block {
            let name = cut_middle(&shown.line(&t.target), COLUMN_WIDTH - 1);
            head.push_str(&paint.tone(Tone::Heading, &pad_left(&name, COLUMN_WIDTH)));
        }
        let _ = writeln!(out, "{}", head.trim_end());
        for (label, cell) in ROWS {
            let mut line = pad_right(&format!("  {label}"), LABEL_WIDTH);
            for t in block {
                line.push_str(&pad_left(&cell(t), COLUMN_WIDTH));
            }
            let _ = writeln!(out, "{line}");
        }
    }
}

/// What a cell shows when the target has no such data.
const NONE: &str = "–";

type Cell = fn(&TargetStats) -> String;

const ROWS: &[(&str, Cell)] = &[
    ("cases", |t| t.records.to_string()),
    ("mean score", |t| {
        t.mean.map_or_else(|| NONE.to_owned(), |m| format!("{m:.3}"))
    }),
    ("95% CI", |t| {
        t.mean_ci95
            .map_or_else(|| NONE.to_owned(), |[lo, hi]| format!("{lo:.2}..{hi:.2}"))
    }),
    ("pass rate", |t| {
        t.pass_rate
            .map_or_else(|| NONE.to_owned(), |r| format!("{:.0}%", r * 100.0))
    }),
    ("errors", |t| t.errors().to_string()),
    ("tokens", |t| {
        if t.records_with_tokens == 0 {
            NONE.to_owned()
        } else {
            compact_count(t.tokens.input.saturating_add(t.tokens.output))
        }
    }),
    // An unknown cost is not $0 (docs/running.md#cost).
    ("cost", |t| {
        if t.records_with_cost == 0 {
            NONE.to_owned()
        } else {
            dollars(t.cost_usd)
        }
    }),
    ("latency p50", |t| latency(t, |l| l.p50)),
    ("latency p95", |t| latency(t, |l| l.p95)),
];

/// A latency figure of `t` (milliseconds in the statistics) as the summary writes durations.
fn latency(t: &TargetStats, figure: fn(&crate::report::stats::Latency) -> f64) -> String {
    t.latency_ms
        .as_ref()
        .map(figure)
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map_or_else(|| NONE.to_owned(), |ms| duration(Duration::from_secs_f64(ms / 1000.0)))
}
