//! The fixed parts of the HTML report: the head with its styles, the summary header and the
//! score chart (rendered here, with every label escaped by maud), and the script.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::Group;
use crate::report::compare::Comparison;

const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// Colours of the groups, in order (the script and the chart use the same classes).
const GROUP_CLASSES: usize = 6;

/// Nothing may leave the page: no fetch, no image, no font, no form target. Scripts and styles
/// are inline only.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                   img-src data:; base-uri 'none'; form-action 'none'";

/// Everything before the per-case data blocks.
pub fn head(title: &str) -> String {
    let head = html! {
        meta charset="utf-8";
        meta http-equiv="Content-Security-Policy" content=(CSP);
        meta name="viewport" content="width=device-width, initial-scale=1";
        meta name="generator" content=(concat!("agentv ", env!("CARGO_PKG_VERSION")));
        title { (title) }
        style { (PreEscaped(STYLE)) }
    };
    // The document stays open: the per-case data blocks follow as records arrive.
    format!(
        "{}\n<html lang=\"en\">\n<head>\n{}\n</head>\n<body>\n<div id=\"data\" hidden>\n",
        DOCTYPE.into_string(),
        head.into_string()
    )
}

/// The summary header: totals per group, comparisons with the first group, and the chart.
pub fn header(title: &str, groups: &[Group], comparisons: &[(usize, Comparison)]) -> String {
    let generated = jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M UTC").to_string();
    let header = html! {
        header #summary {
            h1 { (title) }
            p.sub { "Generated " (generated) " by agentv " (env!("CARGO_PKG_VERSION")) }
            div.cards {
                div.totals { (totals(groups)) }
                figure.chart {
                    (chart(groups))
                    figcaption { "Scores of graded cases" }
                }
            }
            @if !comparisons.is_empty() {
                (compare_table(groups, comparisons))
            }
        }
    };
    // Closes the hidden block of per-case data that `head` opened.
    format!("</div>\n{}", header.into_string())
}

fn totals(groups: &[Group]) -> Markup {
    let rows: Vec<(&str, Vec<String>)> = vec![
        ("Cases", groups.iter().map(|g| g.tally.cases.to_string()).collect()),
        ("Graded", groups.iter().map(|g| g.tally.graded.to_string()).collect()),
        (
            "Pass rate",
            groups.iter().map(|g| percent(g.tally.pass_rate())).collect(),
        ),
        ("Mean score", groups.iter().map(|g| fixed(g.tally.mean())).collect()),
        (
            "Pass / borderline / fail",
            groups
                .iter()
                .map(|g| format!("{} / {} / {}", g.tally.pass, g.tally.borderline, g.tally.fail))
                .collect(),
        ),
        (
            "Execution errors",
            groups.iter().map(|g| g.tally.execution_errors.to_string()).collect(),
        ),
        (
            "Grader errors",
            groups.iter().map(|g| g.tally.grader_errors.to_string()).collect(),
        ),
        (
            "Invalid cases",
            groups.iter().map(|g| g.tally.invalid.to_string()).collect(),
        ),
        (
            "Total duration",
            groups
                .iter()
                .map(|g| format!("{:.1} s", g.tally.duration_ms / 1000.0))
                .collect(),
        ),
        ("Total cost", groups.iter().map(|g| g.tally.cost_text()).collect()),
    ];
    html! {
        table.totals {
            @if groups.len() > 1 {
                thead { tr { th {} @for (i, g) in groups.iter().enumerate() { th { span class=(format!("dot g{}", i % GROUP_CLASSES)) {} (g.label) } } } }
            }
            tbody {
                @for (label, values) in &rows {
                    tr { th { (label) } @for v in values { td { (v) } } }
                }
            }
        }
    }
}

fn compare_table(groups: &[Group], comparisons: &[(usize, Comparison)]) -> Markup {
    let base = groups.first().map(|g| g.label.as_str()).unwrap_or_default();
    html! {
        table.compare {
            caption { "Compared with " (base) " (cases matched by dataset and id; ±0.001 is unchanged)" }
            thead { tr { th { "vs" } th { "matched" } th { "improved" } th { "regressed" } th { "unchanged" } th { "errors" } th { "added" } th { "removed" } th { "mean delta (95 % CI)" } } }
            tbody {
                @for (g, c) in comparisons {
                    tr {
                        th { span class=(format!("dot g{}", g % GROUP_CLASSES)) {} (groups[*g].label) }
                        td { (c.counts.matched) }
                        td.up { (c.counts.improved) }
                        td.down { (c.counts.regressed) }
                        td { (c.counts.unchanged) }
                        td { (c.counts.errors) }
                        td { (c.counts.added) }
                        td { (c.counts.removed) }
                        td { (mean_delta(c)) }
                    }
                }
            }
        }
    }
}

fn mean_delta(c: &Comparison) -> String {
    match c.mean_delta {
        None => "–".into(),
        Some(m) => match m.interval {
            Some((low, high)) => format!("{:+.3} ({low:+.3} to {high:+.3})", m.mean),
            None => format!("{:+.3}", m.mean),
        },
    }
}

/// Grouped bars: five score bins, one bar per group in each.
fn chart(groups: &[Group]) -> Markup {
    const W: f64 = 420.0;
    const H: f64 = 180.0;
    const LEFT: f64 = 28.0;
    const BOTTOM: f64 = 24.0;
    const TOP: f64 = 16.0;
    let most = groups.iter().flat_map(|g| g.tally.bins).max().unwrap_or(0).max(1) as f64;
    let slot = (W - LEFT) / 5.0;
    let n = groups.len().max(1) as f64;
    let bar = ((slot - 12.0) / n).max(2.0);
    let plot = H - BOTTOM - TOP;
    html! {
        svg xmlns="http://www.w3.org/2000/svg" viewBox=(format!("0 0 {W} {H}")) width=(W) height=(H) role="img" aria-label="Score histogram" {
            line.axis x1=(LEFT) y1=(H - BOTTOM) x2=(W) y2=(H - BOTTOM) {}
            text.tick x=(LEFT - 4.0) y=(TOP + 4.0) text-anchor="end" { (most as usize) }
            text.tick x=(LEFT - 4.0) y=(H - BOTTOM) text-anchor="end" { "0" }
            @for bin in 0..5 {
                @let x0 = LEFT + slot * bin as f64 + 6.0;
                text.tick x=(x0 + (slot - 12.0) / 2.0) y=(H - 6.0) text-anchor="middle" {
                    (format!("{:.1}–{:.1}", bin as f64 * 0.2, bin as f64 * 0.2 + 0.2))
                }
                @for (i, g) in groups.iter().enumerate() {
                    @let count = g.tally.bins[bin];
                    @let h = plot * count as f64 / most;
                    @let x = x0 + bar * i as f64;
                    rect class=(format!("bar g{}", i % GROUP_CLASSES)) x=(format!("{x:.1}")) y=(format!("{:.1}", H - BOTTOM - h)) width=(format!("{:.1}", bar - 1.0)) height=(format!("{h:.1}")) {
                        title { (g.label) " " (format!("{:.1}–{:.1}", bin as f64 * 0.2, bin as f64 * 0.2 + 0.2)) ": " (count) }
                    }
                    @if count > 0 {
                        text.count x=(format!("{:.1}", x + (bar - 1.0) / 2.0)) y=(format!("{:.1}", H - BOTTOM - h - 3.0)) text-anchor="middle" { (count) }
                    }
                }
            }
        }
    }
}

fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{:.1} %", v * 100.0))
}

fn fixed(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.3}"))
}

/// The table, its controls and the drill-down panel; filled by the script.
pub const BODY: &str = r#"<main>
<div class="controls">
  <input id="filter" type="search" placeholder="Filter by id, target, dataset or miss…" aria-label="Filter cases" autocomplete="off">
  <select id="status" aria-label="Verdict or status">
    <option value="">all cases</option>
    <option value="pass">pass</option>
    <option value="borderline">borderline</option>
    <option value="fail">fail</option>
    <option value="error">errors</option>
  </select>
  <span id="views" hidden>
    <label><input type="radio" name="view" value="cases"> cases</label>
    <label><input type="radio" name="view" value="side"> side by side</label>
  </span>
  <span id="shown" aria-live="polite"></span>
</div>
<table id="cases"><thead></thead><tbody></tbody></table>
<div class="pager"><button id="prev" type="button">‹ previous</button> <span id="page"></span> <button id="next" type="button">next ›</button></div>
</main>
<aside id="detail" hidden>
  <div class="bar"><span id="detail-title"></span><button id="close" type="button" aria-label="Close">✕</button></div>
  <div id="detail-body"></div>
</aside>
<noscript><p>The case table needs JavaScript; the summary above does not.</p></noscript>
"#;

/// The script and the end of the document.
pub fn tail() -> String {
    format!("<script>\n{SCRIPT}\n</script>\n</body>\n</html>\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Tally;

    #[test]
    fn labels_in_the_header_are_escaped() {
        let groups = vec![Group {
            label: "<img src=x onerror=alert(1)>".into(),
            tally: Tally::default(),
        }];
        let text = header("t</title><script>", &groups, &[]);
        assert!(!text.contains("<img"), "{text}");
        assert!(!text.contains("<script>"), "{text}");
        assert!(text.contains("&lt;img src=x onerror=alert(1)&gt;"), "{text}");
        assert!(head("a</title>").contains("<title>a&lt;/title&gt;</title>"));
    }
}
