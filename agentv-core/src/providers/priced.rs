//! Cost from tokens (`docs/running.md#cost`): LLM APIs report tokens but no cost, so each LLM
//! target's answers are priced here, from the target's `pricing:` setting or the pricing
//! table ([`super::pricing`]), whenever the provider did not report a cost itself. An answer
//! that cannot be priced keeps no cost: unknown, never 0.
//!
//! The registry wraps every LLM target in a [`PricedProvider`]; the code judges' calls through
//! the target proxy go through the same providers, so they are priced the same way.

use std::sync::Arc;

use serde_json::{Value, json};

use super::pricing::{self, Billing, Price, Rates};
use super::settings::TargetSettings;
use super::{AnswerSource, Provider, ProviderError, ProviderFuture, ProviderRequest, ProviderResponse};
use crate::config::{Key, KeyTable, Kind, NumberRange};

/// How a target's cost is known before any call: `--budget-usd` needs to know it.
#[derive(Debug, Clone, PartialEq)]
pub enum CostBasis {
    /// The target reports what each answer cost (Claude Code; a command that writes
    /// `cost_usd`).
    Reported,
    /// Priced from its tokens; says at what (`gpt-4o (pricing table, 2026-08-21)`).
    Priced(String),
    /// Costs nothing (a mock).
    Free,
    /// Cannot be known; says why and what would fix it, as one sentence.
    Unknown(String),
}

/// A price per million tokens: at most a million dollars (a larger one is a typo).
const RATE: NumberRange = NumberRange {
    min: 0.0,
    max: 1_000_000.0,
};

const PRICING_KEYS: &[Key] = &[
    Key::new(
        "model",
        Kind::Text,
        "Price calls as this model of agentv's pricing table (an Azure deployment's model, a model served under another name).",
    ),
    Key::new(
        "input_per_million",
        Kind::Number(RATE),
        "US dollars per million input tokens.",
    ),
    Key::new(
        "cached_input_per_million",
        Kind::Number(RATE),
        "US dollars per million input tokens read from the prompt cache (default: the input price).",
    ),
    Key::new(
        "output_per_million",
        Kind::Number(RATE),
        "US dollars per million output tokens.",
    ),
    Key::new(
        "batch_discount",
        Kind::Number(NumberRange { min: 0.0, max: 1.0 }),
        "The share the provider's batch API takes off (0.5: half price; default 0).",
    ),
];

/// `pricing:` on an LLM target.
pub const PRICING: KeyTable = KeyTable::new(
    "pricing",
    // Read after "Accepts" in the schema.
    "a `model` of agentv's pricing table, or rates in US dollars per million tokens",
    &[PRICING_KEYS],
);

/// How a target's answers are priced.
#[derive(Debug, Clone)]
pub(crate) enum Rule {
    /// `pricing:` rates.
    Rates(Price),
    /// `pricing: {model}`: that row of the table, whatever model answers.
    Named(&'static pricing::TableRow),
    /// No `pricing:`: the table's row of the model that answered, else of the target's model.
    Table { configured: Option<String> },
}

/// Reads `pricing:` of an LLM target (problems are reported in `s`); `None` after an error.
pub(crate) fn read(s: &mut TargetSettings<'_>, provider_name: &str, configured: Option<String>) -> Option<Rule> {
    let Some(read) = s.object("pricing", |o| {
        // Problems with the model point at it; others at the `pricing` object.
        let pos = o.node("model").map_or_else(|| o.pos(), |n| n.pos);
        let model = o.string("model", false);
        let input = o.number("input_per_million");
        let cached = o.number("cached_input_per_million");
        let output = o.number("output_per_million");
        let batch = o.number("batch_discount");
        (pos, model, [input, cached, output], batch)
    }) else {
        return Some(Rule::Table { configured });
    };
    let (pos, model, [input, cached, output], batch) = read;
    let target = s.target().to_owned();
    let rates_given = input.is_some() || cached.is_some() || output.is_some() || batch.is_some();
    match (model, input, output) {
        (Some(_), ..) if rates_given => {
            s.error(
                pos,
                format!("`pricing` of target `{target}` gives both `model` and rates"),
                Some("keep `model` to use the pricing table's price, or the rates to set your own".to_owned()),
            );
            None
        }
        (Some(model), ..) => match pricing::lookup(Some(provider_name), &model) {
            Some(row) => Some(Rule::Named(row)),
            None => {
                let close = pricing::similar(&model);
                let help = if close.is_empty() {
                    "set the rates instead: `input_per_million`, `output_per_million` (and `cached_input_per_million`, `batch_discount`)".to_owned()
                } else {
                    format!(
                        "did you mean {}? or set the rates instead: `input_per_million`, `output_per_million`",
                        quoted(&close)
                    )
                };
                s.error(
                    pos,
                    format!("`pricing.model` of target `{target}`: agentv's pricing table has no model `{model}`"),
                    Some(help),
                );
                None
            }
        },
        (None, Some(input), Some(output)) => {
            let rates = Rates {
                input,
                cached_input: cached.unwrap_or(input),
                output,
            };
            Some(Rule::Rates(Price::flat(rates, batch.unwrap_or(0.0))))
        }
        (None, ..) => {
            s.error(
                pos,
                format!("`pricing` of target `{target}` needs `model`, or `input_per_million` and `output_per_million`"),
                Some("for example `pricing: {model: gpt-4o}` or `pricing: {input_per_million: 2.5, output_per_million: 10}`".to_owned()),
            );
            None
        }
    }
}

/// `provider` priced as its `pricing:` setting says (LLM targets; others are returned as they
/// are). Reads the setting whatever happened building the provider, so a target with another
/// problem is not also told `pricing` is unknown.
pub(crate) fn wrap(
    provider: Option<Arc<dyn Provider>>,
    entry: &super::ProviderEntry,
    s: &mut TargetSettings<'_>,
) -> Option<Arc<dyn Provider>> {
    if entry.class != super::ProviderClass::Llm {
        return provider;
    }
    // The model the target calls: `model`, or an Azure deployment's name.
    let configured = provider.as_ref().and_then(|p| {
        let settings = p.public_settings();
        ["model", "deployment_name"]
            .iter()
            .find_map(|k| settings.get(*k).and_then(Value::as_str).map(str::to_owned))
    });
    match (provider, read(s, entry.name, configured)) {
        (Some(provider), Some(rule)) => Some(Arc::new(PricedProvider::new(provider, rule))),
        (provider, _) => provider,
    }
}

fn quoted(names: &[&str]) -> String {
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" or ")
}

/// An LLM target whose answers carry a cost: the provider's own when it reports one, else
/// their tokens at the target's price.
#[derive(Debug)]
pub struct PricedProvider {
    inner: Arc<dyn Provider>,
    rule: Rule,
}

impl PricedProvider {
    pub(crate) fn new(inner: Arc<dyn Provider>, rule: Rule) -> Self {
        Self { inner, rule }
    }

    /// The price of an answer given by `answering` (the model the response names), and how
    /// it was chosen, for the record.
    fn price_of(&self, answering: Option<&str>) -> Option<(Price, Value)> {
        let provider = self.inner.kind().as_str();
        match &self.rule {
            Rule::Rates(price) => Some((*price, json!({"source": "target pricing"}))),
            Rule::Named(row) => Some((row.price, table_note(row))),
            Rule::Table { configured } => answering
                .and_then(|m| pricing::lookup(Some(provider), m))
                .or_else(|| configured.as_deref().and_then(|m| pricing::lookup(Some(provider), m)))
                .map(|row| (row.price, table_note(row))),
        }
    }

    /// `response` with a cost: its own, else its tokens priced. The record says how
    /// (`response_metadata.pricing`).
    fn priced(&self, response: ProviderResponse) -> ProviderResponse {
        self.priced_as(response, Billing::Online)
    }

    /// [`Self::priced`] at `billing`; a batch answer also records what it would have cost
    /// online and what the batch price saved (`response_metadata.batch_price`).
    fn priced_as(&self, mut response: ProviderResponse, billing: Billing) -> ProviderResponse {
        if response.cost_usd.is_some() {
            return response;
        }
        let Some(usage) = response.token_usage else {
            return response;
        };
        let answering = response.raw.as_ref().and_then(answering_model);
        if let Some((price, how)) = self.price_of(answering.as_deref()) {
            // Counts from a confused provider can be anything; a cost that is no number is unknown.
            let cost = Some(price.cost(&usage, billing)).filter(|c| c.is_finite());
            response.cost_usd = cost;
            let metadata = response.metadata.get_or_insert_with(Default::default);
            metadata.insert("pricing".to_owned(), how);
            let online = price.online(&usage);
            if let (Billing::Batch, Some(cost)) = (billing, cost)
                && online.is_finite()
            {
                metadata.insert(
                    "batch_price".to_owned(),
                    json!({"cost_usd": cost, "online_cost_usd": online, "saved_usd": online - cost}),
                );
            }
        }
        response
    }
}

fn table_note(row: &pricing::TableRow) -> Value {
    json!({"source": "pricing table", "model": row.model, "provider": row.provider, "date": row.date})
}

/// The model an LLM API says answered: `model` (OpenAI, Azure, Anthropic) or `modelVersion`
/// (Gemini).
fn answering_model(raw: &Value) -> Option<String> {
    raw.get("model")
        .or_else(|| raw.get("modelVersion"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

impl Provider for PricedProvider {
    super::provider::pass_to_inner!(
        target_name,
        kind,
        prompt_mode,
        healthcheck,
        supports_batch,
        public_settings,
        tool_settings,
        max_workers,
        executable,
        throttle,
        batch_api,
        embed,
    );

    fn price_batched(&self, response: ProviderResponse) -> ProviderResponse {
        self.priced_as(response, Billing::Batch)
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move { Ok(self.priced(self.inner.invoke(request).await?)) })
    }

    fn invoke_sourced<'a>(
        &'a self,
        request: &'a ProviderRequest,
    ) -> ProviderFuture<'a, (ProviderResponse, AnswerSource)> {
        Box::pin(async move {
            let (response, source) = self.inner.invoke_sourced(request).await?;
            Ok((self.priced(response), source))
        })
    }

    fn invoke_batch<'a>(
        &'a self,
        requests: &'a [ProviderRequest],
    ) -> ProviderFuture<'a, Vec<Result<ProviderResponse, ProviderError>>> {
        Box::pin(async move {
            let answers = self.inner.invoke_batch(requests).await?;
            Ok(answers.into_iter().map(|a| a.map(|r| self.priced(r))).collect())
        })
    }

    fn cost_basis(&self) -> CostBasis {
        match &self.rule {
            Rule::Rates(_) => CostBasis::Priced("the target's `pricing` rates".to_owned()),
            Rule::Named(row) => CostBasis::Priced(format!("{} (pricing table, {})", row.model, row.date)),
            Rule::Table { configured } => {
                let provider = self.inner.kind().as_str();
                match configured.as_deref().map(|m| (m, pricing::lookup(Some(provider), m))) {
                    Some((_, Some(row))) => CostBasis::Priced(format!("{} (pricing table, {})", row.model, row.date)),
                    Some((model, None)) => CostBasis::Unknown(format!(
                        "agentv's pricing table has no model `{model}`; give the target a price: `pricing: {{model: <a model of the table>}}`, or `pricing: {{input_per_million: …, output_per_million: …}}`"
                    )),
                    None => CostBasis::Unknown(
                        "the target names no model agentv can price; give it a price with `pricing:`".to_owned(),
                    ),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TokenUsage;
    use crate::providers::ProviderKind;
    use crate::providers::openai::OPENAI;

    /// Answers with fixed usage, a fixed `model` in its raw body, and an optional own cost.
    #[derive(Debug)]
    struct Answering {
        model: &'static str,
        cost: Option<f64>,
    }

    impl Provider for Answering {
        fn target_name(&self) -> &str {
            "t"
        }
        fn kind(&self) -> ProviderKind {
            ProviderKind::of(&OPENAI)
        }
        fn invoke<'a>(&'a self, _r: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
            Box::pin(async move {
                Ok(ProviderResponse {
                    token_usage: Some(TokenUsage {
                        input: 1_000_000,
                        output: 1_000_000,
                        cached: None,
                    }),
                    cost_usd: self.cost,
                    raw: Some(json!({"model": self.model})),
                    ..ProviderResponse::text("hi")
                })
            })
        }
    }

    async fn cost_of(model: &'static str, reported: Option<f64>, rule: Rule) -> (Option<f64>, Option<Value>) {
        let p = PricedProvider::new(Arc::new(Answering { model, cost: reported }), rule);
        let r = p.invoke(&ProviderRequest::default()).await.expect("answers");
        (r.cost_usd, r.metadata.and_then(|m| m.get("pricing").cloned()))
    }

    #[tokio::test]
    async fn cost_is_computed_from_tokens_when_the_provider_reports_none() {
        let table = || Rule::Table {
            configured: Some("gpt-4o".to_owned()),
        };
        // The model that answered wins over the configured one.
        let (cost, how) = cost_of("gpt-4o-mini-2024-07-18", None, table()).await;
        assert!((cost.expect("priced") - 0.75).abs() < 1e-9);
        assert_eq!(how.expect("said")["model"], "gpt-4o-mini");
        // An answering model the table lacks: the configured model's price.
        let (cost, _) = cost_of("my-finetune", None, table()).await;
        assert!((cost.expect("priced") - 12.5).abs() < 1e-9);
        // A reported cost is kept.
        assert_eq!(cost_of("gpt-4o", Some(0.01), table()).await.0, Some(0.01));
        // Nothing known: no cost, not 0.
        let unknown = Rule::Table {
            configured: Some("llama3".to_owned()),
        };
        assert_eq!(cost_of("llama3", None, unknown).await, (None, None));
        // Target rates win over every model name.
        let rates = Rule::Rates(Price::flat(
            Rates {
                input: 1.0,
                cached_input: 1.0,
                output: 2.0,
            },
            0.0,
        ));
        let (cost, how) = cost_of("gpt-4o", None, rates).await;
        assert!((cost.expect("priced") - 3.0).abs() < 1e-9);
        assert_eq!(how.expect("said")["source"], "target pricing");
    }

    #[test]
    fn cost_basis_says_whether_a_budget_can_count_the_target() {
        let basis = |configured: Option<&str>| {
            PricedProvider::new(
                Arc::new(Answering { model: "x", cost: None }),
                Rule::Table {
                    configured: configured.map(str::to_owned),
                },
            )
            .cost_basis()
        };
        assert!(matches!(basis(Some("gpt-4o")), CostBasis::Priced(how) if how.starts_with("gpt-4o (pricing table, ")));
        assert!(matches!(basis(Some("llama3")), CostBasis::Unknown(why) if why.contains("no model `llama3`")));
        assert!(matches!(basis(None), CostBasis::Unknown(_)));
    }
}
