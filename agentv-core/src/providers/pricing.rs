//! What a model call costs (`docs/running.md#cost`): a dated table of prices per model, embedded
//! in the binary when it is built (`pricing.json` beside this file), and the cost of a call's
//! tokens at those prices, online or through the provider's batch API.
//!
//! Each row of the table names the provider's pricing page it comes from and the day it was
//! read; a test holds every row to that. A model the table lacks has no price: its cost is
//! unknown, never 0 (a target's `pricing:` setting gives it one).

use std::sync::{LazyLock, OnceLock};

use serde::Deserialize;

use crate::model::TokenUsage;

/// The table as written, compiled into the binary.
const TABLE_JSON: &str = include_str!("pricing.json");

/// Rates in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Rates {
    #[serde(rename = "input_per_million")]
    pub input: f64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(rename = "cached_input_per_million")]
    pub cached_input: f64,
    #[serde(rename = "output_per_million")]
    pub output: f64,
}

/// Higher rates for a prompt above a size (long-context pricing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LongContext {
    /// Prompts of more input tokens than this are billed at `rates`, output included.
    pub above_input_tokens: u64,
    pub rates: Rates,
}

/// The price of one model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub rates: Rates,
    pub long_context: Option<LongContext>,
    /// The share the provider's batch API takes off every token (0.5: half price).
    pub batch_discount: f64,
}

/// How a call is billed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Billing {
    /// One request, answered at once.
    Online,
    /// Through the provider's batch API, at its discount.
    Batch,
}

impl Price {
    /// The price of a model billed at `rates` with no long-context tier.
    pub fn flat(rates: Rates, batch_discount: f64) -> Self {
        Self {
            rates,
            long_context: None,
            batch_discount,
        }
    }

    /// What `usage` costs, in US dollars. `usage.input` counts every input token, cached ones
    /// included (as every provider's usage is read: `docs/running.md#cost`); cached tokens are
    /// billed at the cached rate, the rest at the input rate. Cache writes are billed as input.
    pub fn cost(&self, usage: &TokenUsage, billing: Billing) -> f64 {
        let rates = match self.long_context {
            Some(tier) if usage.input > tier.above_input_tokens => tier.rates,
            _ => self.rates,
        };
        let cached = usage.cached.unwrap_or(0).min(usage.input);
        let fresh = usage.input - cached;
        let usd =
            (fresh as f64 * rates.input + cached as f64 * rates.cached_input + usage.output as f64 * rates.output)
                / 1_000_000.0;
        match billing {
            Billing::Online => usd,
            Billing::Batch => usd * (1.0 - self.batch_discount),
        }
    }

    /// What `usage` costs as one online request.
    pub fn online(&self, usage: &TokenUsage) -> f64 {
        self.cost(usage, Billing::Online)
    }

    /// What `usage` costs through the provider's batch API.
    pub fn batch(&self, usage: &TokenUsage) -> f64 {
        self.cost(usage, Billing::Batch)
    }
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    /// `openai`, `azure`, `anthropic` or `gemini`.
    pub provider: String,
    /// The model's name as its API takes it.
    pub model: String,
    /// Other names of the same model (`claude-opus-4-0`).
    pub aliases: Vec<String>,
    pub price: Price,
    /// The day the source was read, `YYYY-MM-DD`.
    pub date: String,
    /// The provider's pricing page.
    pub source: String,
    /// A transcription of that page the figures were read from, when they were.
    pub via: Option<String>,
}

/// A row as the file writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRow {
    provider: String,
    model: String,
    #[serde(default)]
    aliases: Vec<String>,
    input_per_million: f64,
    /// Absent when the provider has no cached-input price: cached tokens cost as input.
    cached_input_per_million: Option<f64>,
    output_per_million: f64,
    long_context: Option<RawLongContext>,
    batch_discount: f64,
    date: String,
    source: String,
    via: Option<String>,
    #[serde(default, rename = "note")]
    _note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLongContext {
    above_input_tokens: u64,
    #[serde(flatten)]
    rates: Rates,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    #[serde(rename = "about")]
    _about: String,
    models: Vec<RawRow>,
}

impl From<RawRow> for TableRow {
    fn from(r: RawRow) -> Self {
        let rates = Rates {
            input: r.input_per_million,
            cached_input: r.cached_input_per_million.unwrap_or(r.input_per_million),
            output: r.output_per_million,
        };
        Self {
            provider: r.provider,
            model: r.model,
            aliases: r.aliases,
            price: Price {
                rates,
                long_context: r.long_context.map(|l| LongContext {
                    above_input_tokens: l.above_input_tokens,
                    rates: l.rates,
                }),
                batch_discount: r.batch_discount,
            },
            date: r.date,
            source: r.source,
            via: r.via,
        }
    }
}

/// Reads the table text.
fn parse(text: &str) -> Result<Vec<TableRow>, serde_json::Error> {
    let raw: RawTable = serde_json::from_str(text)?;
    Ok(raw.models.into_iter().map(TableRow::from).collect())
}

/// Every row of the table compiled into agentv, in file order.
pub fn table() -> &'static [TableRow] {
    static TABLE: OnceLock<Vec<TableRow>> = OnceLock::new();
    TABLE.get_or_init(|| {
        parse(TABLE_JSON).unwrap_or_else(|e| {
            // The tests parse the same text, so this is a build that skipped them.
            tracing::error!("the pricing table compiled into agentv cannot be read ({e}); every cost is unknown");
            Vec::new()
        })
    })
}

/// The row of `model`: its name or an alias, ignoring letter case and a leading `models/`
/// (Gemini), else that name with a dated or numbered version at its end
/// (`gpt-4o-2024-08-06`, `claude-3-5-haiku-20241022`, `claude-sonnet-4-5@20250929`,
/// `gemini-2.0-flash-001`, `…-latest`). Rows of `provider` come first (Azure's prices of an
/// OpenAI model).
pub fn lookup(provider: Option<&str>, model: &str) -> Option<&'static TableRow> {
    let name = model.trim().to_ascii_lowercase();
    let name = name.strip_prefix("models/").unwrap_or(&name);
    find(provider, name).or_else(|| find(provider, without_version(name)?))
}

fn find(provider: Option<&str>, name: &str) -> Option<&'static TableRow> {
    let named = |row: &&TableRow| row.model == name || row.aliases.iter().any(|a| a == name);
    let rows = table();
    provider
        .and_then(|p| rows.iter().filter(|r| r.provider == p).find(named))
        .or_else(|| rows.iter().find(named))
}

/// A version at the end of a model name: a date, `-latest`, or a three-digit revision.
static VERSION: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"(?:-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-latest|-\d{3})$").expect("static regex"));

/// `name` without a version suffix, when it has one.
fn without_version(name: &str) -> Option<&str> {
    let found = VERSION.find(name)?;
    Some(&name[..found.start()]).filter(|base| !base.is_empty())
}

/// Table names close to `model`, for a did-you-mean.
pub fn similar(model: &str) -> Vec<&'static str> {
    let name = model.trim().to_ascii_lowercase();
    let mut close: Vec<(f64, &'static str)> = table()
        .iter()
        .flat_map(|r| std::iter::once(&r.model).chain(&r.aliases))
        .map(|m| (strsim::jaro_winkler(&name, m), m.as_str()))
        .filter(|(score, _)| *score >= 0.85)
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut names: Vec<&'static str> = Vec::new();
    for (_, m) in close {
        if !names.contains(&m) {
            names.push(m);
        }
    }
    names.truncate(3);
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cached: Option<u64>, output: u64) -> TokenUsage {
        TokenUsage { input, output, cached }
    }

    /// D28: every price has its source and the day it was read; the figures are sane.
    #[test]
    fn every_pricing_row_has_a_date_and_a_source() {
        let rows = parse(TABLE_JSON).expect("the pricing table parses");
        assert!(rows.len() >= 40, "{} rows", rows.len());
        for provider in ["openai", "azure", "anthropic", "gemini"] {
            assert!(rows.iter().any(|r| r.provider == provider), "no {provider} row");
        }
        for r in &rows {
            let what = format!("{} {}", r.provider, r.model);
            assert!(
                jiff::civil::Date::strptime("%Y-%m-%d", &r.date).is_ok(),
                "{what}: date {:?} is not YYYY-MM-DD",
                r.date
            );
            for url in std::iter::once(&r.source).chain(&r.via) {
                assert!(url.starts_with("https://") && url.len() > 12, "{what}: source {url:?}");
            }
            let p = r.price;
            let all = [p.rates].into_iter().chain(p.long_context.map(|l| l.rates));
            for rates in all {
                for v in [rates.input, rates.cached_input, rates.output] {
                    assert!(v.is_finite() && (0.0..1000.0).contains(&v), "{what}: rate {v}");
                }
                assert!(rates.cached_input <= rates.input, "{what}: cached input above input");
            }
            assert!((0.0..1.0).contains(&p.batch_discount), "{what}: batch discount");
            assert_eq!(r.model, r.model.to_ascii_lowercase(), "{what}: names are lower case");
        }
    }

    #[test]
    fn every_model_name_is_taken_once_per_provider() {
        let rows = table();
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for r in rows {
            for name in std::iter::once(&r.model).chain(&r.aliases) {
                let key = (r.provider.as_str(), name.as_str());
                assert!(!seen.contains(&key), "{key:?} twice");
                seen.push(key);
            }
        }
    }

    #[test]
    fn models_are_found_by_name_alias_and_versioned_name() {
        for (written, want) in [
            ("gpt-4o", Some("gpt-4o")),
            ("GPT-4o", Some("gpt-4o")),
            ("gpt-4o-2024-08-06", Some("gpt-4o")),
            ("gpt-4o-mini-2024-07-18", Some("gpt-4o-mini")),
            ("claude-3-5-haiku-20241022", Some("claude-3-5-haiku")),
            ("claude-3-5-haiku-latest", Some("claude-3-5-haiku")),
            ("claude-opus-4-20250514", Some("claude-opus-4")),
            ("claude-opus-4-0", Some("claude-opus-4")),
            ("claude-sonnet-4-5@20250929", Some("claude-sonnet-4-5")),
            ("models/gemini-2.5-flash", Some("gemini-2.5-flash")),
            ("gemini-2.0-flash-001", Some("gemini-2.0-flash")),
            ("gpt-4o-mini-turbo", None),
            ("llama3", None),
            ("", None),
            ("-2024-01-01", None),
        ] {
            assert_eq!(lookup(None, written).map(|r| r.model.as_str()), want, "{written}");
        }
        assert_eq!(
            lookup(Some("azure"), "gpt-4o").map(|r| r.provider.as_str()),
            Some("azure")
        );
        assert_eq!(
            lookup(Some("openai"), "gpt-4o").map(|r| r.provider.as_str()),
            Some("openai")
        );
        // A provider without its own row of the model falls back to any row.
        assert_eq!(
            lookup(Some("azure"), "gpt-5.5").map(|r| r.provider.as_str()),
            Some("openai")
        );
    }

    #[test]
    fn cost_bills_cached_tokens_at_their_rate_and_batch_at_its_discount() {
        let gpt4o = lookup(None, "gpt-4o").expect("priced").price;
        // 1 M input of which 400 k cached, 100 k output: 0.6 × 2.5 + 0.4 × 1.25 + 0.1 × 10.
        let u = usage(1_000_000, Some(400_000), 100_000);
        assert!((gpt4o.online(&u) - 3.0).abs() < 1e-9, "{}", gpt4o.online(&u));
        assert!((gpt4o.batch(&u) - 1.5).abs() < 1e-9, "{}", gpt4o.batch(&u));
        assert_eq!(gpt4o.online(&usage(0, None, 0)), 0.0);
        // A cached count above the input (a confused provider) is capped at the input.
        assert!((gpt4o.online(&usage(1000, Some(5000), 0)) - 0.00125).abs() < 1e-12);
        // Huge counts stay finite.
        assert!(gpt4o.online(&usage(u64::MAX, Some(u64::MAX), u64::MAX)).is_finite());
    }

    #[test]
    fn long_prompts_are_billed_at_the_long_context_rates() {
        let pro = lookup(None, "gemini-2.5-pro").expect("priced").price;
        let at = |input| pro.online(&usage(input, None, 1_000_000));
        assert!((at(200_000) - (0.2 * 1.25 + 10.0)).abs() < 1e-9, "{}", at(200_000));
        assert!((at(200_001) - (0.200_001 * 2.5 + 15.0)).abs() < 1e-9, "{}", at(200_001));
    }

    #[test]
    fn a_model_without_a_cached_price_bills_cached_tokens_as_input() {
        let turbo = lookup(None, "gpt-4-turbo").expect("priced").price;
        assert_eq!(turbo.rates.cached_input, turbo.rates.input);
    }

    #[test]
    fn close_names_are_suggested() {
        assert_eq!(similar("gpt-4o-mni").first().copied(), Some("gpt-4o-mini"));
        assert!(similar("totally-different").is_empty());
    }
}
