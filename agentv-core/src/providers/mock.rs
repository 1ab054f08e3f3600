//! `mock`: answers with a configured response, optionally after a delay. No external calls.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use serde_json::{Value, json};

use super::settings::node_text;
use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderFuture, ProviderKind, ProviderRequest,
    ProviderResponse, TargetSettings, parse_answer,
};
use crate::config::{DurationRange, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&ENTRY];

pub(crate) static ENTRY: ProviderEntry = ProviderEntry {
    name: "mock",
    aliases: &[],
    doc: "Answers with a configured response, optionally after a delay; calls nothing.",
    class: ProviderClass::Mock,
    batch: false,
    // Its answers cost nothing to make again.
    cacheable: false,
    executable: None,
    container: false,
    keys: &KEYS,
    build,
};

const OWN: &[Key] = &[
    Key::new(
        "response",
        Kind::Any,
        "The answer: text, or `{text?, output_messages?, ...}` (a mapping is sent as its JSON).",
    ),
    Key::new("responses", Kind::Map(&Kind::Any), "Answers for specific eval ids, read like `response`."),
    Key::new(
        "delay_ms",
        Kind::Duration(DurationRange::DELAY_MILLIS),
        "Wait this long before answering.",
    ),
    Key::new(
        "delay_min_ms",
        Kind::Duration(DurationRange::DELAY_MILLIS),
        "With `delay_max_ms`: wait a random time in between.",
    ),
    Key::new(
        "delay_max_ms",
        Kind::Duration(DurationRange::DELAY_MILLIS),
        "With `delay_min_ms`: wait a random time in between.",
    ),
];
const KEYS: KeyTable = KeyTable::new("mock", "Settings of a `mock` target.", &[OWN]);

/// The answer when none is configured.
pub const DEFAULT_RESPONSE: &str =
    r#"{"answer":"Mock provider response. Configure targets.yaml to supply a custom value."}"#;

/// A provider that answers every request with the same text.
#[derive(Debug, Clone)]
pub struct MockProvider {
    name: String,
    /// Read like a `cli` output file: plain text, or `{text?, output_messages?, ...}`.
    response: String,
    /// Answers for specific eval ids, read the same way.
    responses: HashMap<String, String>,
    delay: Delay,
}

/// How long the mock waits before answering.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Delay {
    None,
    Fixed(Duration),
    /// Uniform in [min, max].
    Between(Duration, Duration),
}

impl MockProvider {
    pub fn new(name: impl Into<String>, response: Option<String>, delay: Delay) -> Self {
        Self {
            name: name.into(),
            response: response.unwrap_or_else(|| DEFAULT_RESPONSE.to_owned()),
            responses: HashMap::new(),
            delay,
        }
    }

    /// Answers `eval_id` with its own text instead of the common response.
    pub fn with_responses(mut self, responses: HashMap<String, String>) -> Self {
        self.responses = responses;
        self
    }

    fn pause(&self) -> Option<Duration> {
        match self.delay {
            Delay::None => None,
            Delay::Fixed(d) => Some(d),
            Delay::Between(min, max) if max > min => Some(rand::rng().random_range(min..=max)),
            Delay::Between(min, _) => Some(min),
        }
    }
}

impl Provider for MockProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(&ENTRY)
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move {
            if let Some(pause) = self.pause() {
                tokio::time::sleep(pause).await;
            }
            let text = self.responses.get(&request.eval_id).unwrap_or(&self.response);
            Ok(parse_answer(text))
        })
    }

    fn public_settings(&self) -> Value {
        json!({ "response": self.response, "responses": self.responses })
    }
}

/// A `mock` target from its settings.
fn build(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    // A mapping or list answer is sent as its JSON text (llm_judge wants one JSON object).
    let response = s.tree("response").as_ref().and_then(node_text);
    let mut responses = HashMap::new();
    if let Some(node) = s.tree("responses") {
        match node.as_map() {
            Some(entries) => {
                for (k, v) in entries {
                    if let Some(text) = node_text(v) {
                        responses.insert(k.key_text(), text);
                    }
                }
            }
            None => s.error(node.pos, "`responses` must map eval ids to answers".to_owned(), None),
        }
    }
    let fixed = s.duration("delay_ms");
    let min = s.duration("delay_min_ms");
    let max = s.duration("delay_max_ms");
    if let (Some(lo), Some(hi)) = (min, max)
        && lo > hi
    {
        let pos = s.node("delay_min_ms").map_or_else(|| s.pos(), |n| n.pos);
        s.error(
            pos,
            format!(
                "`delay_min_ms` ({}) is larger than `delay_max_ms` ({})",
                lo.as_millis(),
                hi.as_millis()
            ),
            Some("swap them, or set them equal for a fixed delay".to_owned()),
        );
    }
    let delay = match (min, max, fixed) {
        (Some(lo), Some(hi), _) => Delay::Between(lo, hi.max(lo)),
        (_, _, Some(d)) => Delay::Fixed(d),
        _ => Delay::None,
    };
    Some(Arc::new(MockProvider::new(ctx.target, response, delay).with_responses(responses)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_with_the_configured_text_after_the_delay() {
        let mock = MockProvider::new("m", Some("hi".into()), Delay::Fixed(Duration::from_millis(30)));
        let start = std::time::Instant::now();
        let r = mock.invoke(&ProviderRequest::default()).await.expect("answers");
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert_eq!(r.output_messages[0].text().as_deref(), Some("hi"));
    }

    #[tokio::test]
    async fn per_case_responses_override_the_default() {
        let mock = MockProvider::new("m", Some("default".into()), Delay::None)
            .with_responses(HashMap::from([("c2".to_owned(), "special".to_owned())]));
        for (id, want) in [("c1", "default"), ("c2", "special")] {
            let request = ProviderRequest {
                eval_id: id.into(),
                ..ProviderRequest::default()
            };
            let r = mock.invoke(&request).await.expect("answers");
            assert_eq!(r.output_messages[0].text().as_deref(), Some(want));
        }
    }

    #[test]
    fn random_delay_stays_in_range() {
        let mock = MockProvider::new(
            "m",
            None,
            Delay::Between(Duration::from_millis(5), Duration::from_millis(9)),
        );
        for _ in 0..50 {
            let d = mock.pause().expect("delay");
            assert!((5..=9).contains(&d.as_millis()), "{d:?}");
        }
    }
}
