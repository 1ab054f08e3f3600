//! Asking the judge model: the budget, one call, and many items in one proxy round trip.
//!
//! The judges talk to a [`JudgeModel`] rather than to the SDK's `TargetClient` directly, so
//! their whole flow (budget check, prompts, reply parsing, item errors) is testable with a
//! scripted model and no HTTP.

use agentv_eval_sdk::{InvokeRequest, TargetClient, TargetError, extract_json_object};
use serde_json::{Map, Value};

use crate::Error;
use crate::outcome::excerpt;
use crate::settings::{Mode, ModelSettings, OnItemError};

/// The proxy's call budget when the judge started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub max_calls: u32,
    pub call_count: u32,
}

/// What the judges need from the judge model.
pub trait JudgeModel {
    /// The call budget, or `None` when the runtime does not say (a proxy without `/info`).
    fn budget(&self) -> Result<Option<Budget>, TargetError>;
    /// One request; its reply text.
    fn invoke(&self, request: &InvokeRequest) -> Result<String, TargetError>;
    /// Several requests in one round trip; one reply text or error per request, in order.
    fn invoke_batch(&self, requests: &[InvokeRequest]) -> Result<Vec<Result<String, TargetError>>, TargetError>;
}

impl JudgeModel for TargetClient {
    fn budget(&self) -> Result<Option<Budget>, TargetError> {
        match self.get_info() {
            Ok(info) => Ok(Some(Budget {
                max_calls: info.max_calls,
                call_count: info.call_count,
            })),
            // A runtime whose proxy has no `/info` route: the proxy still enforces its budget.
            Err(e) if matches!(e.status(), Some(404 | 405)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn invoke(&self, request: &InvokeRequest) -> Result<String, TargetError> {
        TargetClient::invoke(self, request).map(|reply| reply.text())
    }

    fn invoke_batch(&self, requests: &[InvokeRequest]) -> Result<Vec<Result<String, TargetError>>, TargetError> {
        let replies = TargetClient::invoke_batch(self, requests)?;
        Ok(replies.into_iter().map(|r| r.map(|reply| reply.text())).collect())
    }
}

/// One judge run's conversation with the model: it knows the budget and counts the calls.
pub struct Session<'a> {
    model: &'a dyn JudgeModel,
    metric: &'static str,
    settings: &'a ModelSettings,
    budget: Option<Budget>,
    used: u32,
    calls: Map<String, Value>,
}

impl<'a> Session<'a> {
    /// Reads the budget (`GET /info`, which costs no call).
    pub fn open(model: &'a dyn JudgeModel, metric: &'static str, settings: &'a ModelSettings) -> Result<Self, Error> {
        let budget = model.budget().map_err(|source| Error::Model {
            metric,
            stage: "budget (GET /info)",
            source,
        })?;
        Ok(Self {
            model,
            metric,
            settings,
            budget,
            used: 0,
            calls: Map::new(),
        })
    }

    pub fn mode(&self) -> Mode {
        self.settings.mode
    }

    /// Fails unless `needed` more calls fit in the budget. `what` says what they are for.
    pub fn reserve(&self, needed: u32, what: impl Into<String>) -> Result<(), Error> {
        let Some(budget) = self.budget else { return Ok(()) };
        let spent = budget.call_count.saturating_add(self.used);
        let remaining = budget.max_calls.saturating_sub(spent);
        if needed <= remaining {
            return Ok(());
        }
        Err(Error::Budget {
            metric: self.metric,
            needed,
            what: what.into(),
            remaining,
            max_calls: budget.max_calls,
            suggest: spent.saturating_add(needed),
            hint: match self.settings.mode {
                Mode::PerItem => ", or use `mode: batch` (one call per stage)",
                Mode::Batch => "",
            },
        })
    }

    fn request(&self, prompt: String) -> InvokeRequest {
        let mut request = InvokeRequest::new(prompt).system_prompt(self.settings.system_prompt.clone());
        if let Some(target) = &self.settings.judge_target {
            request = request.target(target.clone());
        }
        request
    }

    fn count(&mut self, stage: &'static str, calls: u32) {
        self.used += calls;
        let before = self.calls.get(stage).and_then(Value::as_u64).unwrap_or(0);
        self.calls
            .insert(stage.to_owned(), Value::from(before + u64::from(calls)));
    }

    /// One call; its reply text.
    pub fn ask(&mut self, stage: &'static str, prompt: String) -> Result<String, Error> {
        self.reserve(1, format!("1 for the {stage}"))?;
        let request = self.request(prompt);
        let reply = self.model.invoke(&request);
        self.count(stage, 1);
        reply.map_err(|source| Error::Model {
            metric: self.metric,
            stage,
            source,
        })
    }

    /// One call per prompt, in one `invoke_batch` round trip; one reply or error per prompt.
    pub fn ask_each(
        &mut self,
        stage: &'static str,
        noun: &str,
        prompts: Vec<String>,
    ) -> Result<Vec<Result<String, String>>, Error> {
        if prompts.is_empty() {
            return Ok(Vec::new());
        }
        let n = u32::try_from(prompts.len()).unwrap_or(u32::MAX);
        self.reserve(n, format!("1 per {noun} for the {stage}"))?;
        let requests: Vec<InvokeRequest> = prompts.into_iter().map(|p| self.request(p)).collect();
        let replies = self.model.invoke_batch(&requests);
        self.count(stage, n);
        let replies = replies.map_err(|source| Error::Model {
            metric: self.metric,
            stage,
            source,
        })?;
        Ok(replies.into_iter().map(|r| r.map_err(|e| e.message())).collect())
    }

    /// Calls made so far by stage, for `details.model_calls`.
    pub fn calls(&self) -> Value {
        Value::Object(self.calls.clone())
    }

    pub fn metric(&self) -> &'static str {
        self.metric
    }

    /// An unusable reply as an error.
    pub fn bad_reply(&self, message: String) -> Error {
        Error::Reply {
            metric: self.metric,
            message,
        }
    }
}

/// How a metric asks for its verdicts on a list of items.
pub struct VerdictRequest<'f, T> {
    /// The stage's name in `details.model_calls` and in messages (`verdicts`).
    pub stage: &'static str,
    /// What an item is (`chunk`, `claim`, `statement`).
    pub noun: &'static str,
    /// The key of the verdict list in a batch reply (`verdicts`, `chunks`).
    pub list_key: &'static str,
    /// The batch prompt (mode `batch`).
    pub batch_prompt: &'f dyn Fn() -> String,
    /// The prompt of item `i` (mode `per_item`).
    pub item_prompt: &'f dyn Fn(usize) -> String,
    /// Reads one verdict: a batch list entry, or a per-item reply object.
    pub parse: &'f dyn Fn(&Value) -> Result<T, String>,
}

/// Verdicts on `count` items: one per item, `None` where it failed and `on_item_error` is
/// `skip`; the messages of the skipped ones in `skipped`.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdicts<T> {
    pub items: Vec<Option<T>>,
    pub skipped: Vec<String>,
}

/// Asks for the verdicts on `count` items in one round trip, in the session's mode.
///
/// In `batch` mode a reply without a JSON object, without the list, or with another number of
/// verdicts than items fails the grading whatever `on_item_error` says (nothing can be matched
/// to its item); a list entry that is not a usable verdict is an item error. In `per_item`
/// mode a failed request or an unusable reply is an item error. Item errors fail the grading
/// (`on_item_error: fail`) or leave the item out (`skip`); when every item failed, grading
/// fails.
pub fn ask_verdicts<T>(
    session: &mut Session<'_>,
    on_item_error: OnItemError,
    count: usize,
    request: &VerdictRequest<'_, T>,
) -> Result<Verdicts<T>, Error> {
    if count == 0 {
        return Ok(Verdicts {
            items: Vec::new(),
            skipped: Vec::new(),
        });
    }
    let raw = match session.mode() {
        Mode::Batch => batch_verdicts(session, count, request)?,
        Mode::PerItem => {
            let prompts = (0..count).map(request.item_prompt).collect();
            session
                .ask_each(request.stage, request.noun, prompts)?
                .into_iter()
                .map(|reply| reply.and_then(|text| parse_reply(&text, request.parse)))
                .collect()
        }
    };
    resolve(session.metric(), request.noun, on_item_error, raw)
}

fn batch_verdicts<T>(
    session: &mut Session<'_>,
    count: usize,
    request: &VerdictRequest<'_, T>,
) -> Result<Vec<Result<T, String>>, Error> {
    let reply = session.ask(request.stage, (request.batch_prompt)())?;
    let Some(object) = extract_json_object(&reply) else {
        return Err(session.bad_reply(format!(
            "the reply to the {} prompt holds no JSON object: {}",
            request.stage,
            quoted(&reply)
        )));
    };
    let Some(Value::Array(entries)) = object.get(request.list_key) else {
        return Err(session.bad_reply(format!(
            "the reply to the {} prompt has no `{}` list: {}",
            request.stage,
            request.list_key,
            quoted(&reply)
        )));
    };
    if entries.len() != count {
        return Err(session.bad_reply(format!(
            "the reply to the {} prompt has {} entries for {count} {}s",
            request.stage,
            entries.len(),
            request.noun
        )));
    }
    Ok(entries.iter().map(request.parse).collect())
}

fn parse_reply<T>(text: &str, parse: &dyn Fn(&Value) -> Result<T, String>) -> Result<T, String> {
    match extract_json_object(text) {
        Some(object) => parse(&Value::Object(object)),
        None => Err(format!("the reply holds no JSON object: {}", quoted(text))),
    }
}

fn resolve<T>(
    metric: &'static str,
    noun: &'static str,
    on_item_error: OnItemError,
    raw: Vec<Result<T, String>>,
) -> Result<Verdicts<T>, Error> {
    let mut items = Vec::with_capacity(raw.len());
    let mut skipped = Vec::new();
    let mut first_error = None;
    for (i, result) in raw.into_iter().enumerate() {
        match result {
            Ok(verdict) => items.push(Some(verdict)),
            Err(message) => {
                if on_item_error == OnItemError::Fail {
                    return Err(Error::ItemFailed {
                        metric,
                        noun,
                        index: i + 1,
                        message,
                    });
                }
                first_error.get_or_insert_with(|| message.clone());
                skipped.push(format!("{noun} {} left out: its verdict failed: {message}", i + 1));
                items.push(None);
            }
        }
    }
    if items.iter().all(Option::is_none) {
        return Err(Error::AllItemsFailed {
            metric,
            noun,
            message: first_error.unwrap_or_default(),
        });
    }
    Ok(Verdicts { items, skipped })
}

/// A yes/no verdict with the model's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub yes: bool,
    pub reason: Option<String>,
}

/// Reads `{"verdict": "yes" | "no" | true | false, "reason"?: "…"}`. The word is matched
/// without regard to case or a trailing full stop; anything else is an error.
pub fn parse_verdict(entry: &Value) -> Result<Verdict, String> {
    let yes = match entry.get("verdict") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(word)) => match word.trim().trim_end_matches('.').to_ascii_lowercase().as_str() {
            "yes" => true,
            "no" => false,
            _ => return Err(format!("verdict `{}` is neither yes nor no", excerpt(word, 40))),
        },
        Some(other) => {
            return Err(format!(
                "verdict {} is neither yes nor no",
                excerpt(&other.to_string(), 40)
            ));
        }
        None => return Err(format!("no `verdict` in {}", excerpt(&entry.to_string(), 80))),
    };
    let reason = entry.get("reason").and_then(Value::as_str).map(str::to_owned);
    Ok(Verdict { yes, reason })
}

/// A reply as an error message shows it: quoted, on one line, cut short.
pub fn quoted(text: &str) -> String {
    format!("\u{201c}{}\u{201d}", excerpt(text.trim(), 120))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::Scripted;
    use serde_json::json;

    fn settings(mode: Mode) -> ModelSettings {
        ModelSettings {
            mode,
            on_item_error: OnItemError::Fail,
            system_prompt: "sys".to_owned(),
            judge_target: Some("judge-2".to_owned()),
            instructions: None,
        }
    }

    fn request<'f>(
        batch: &'f dyn Fn() -> String,
        item: &'f dyn Fn(usize) -> String,
        parse: &'f dyn Fn(&Value) -> Result<Verdict, String>,
    ) -> VerdictRequest<'f, Verdict> {
        VerdictRequest {
            stage: "verdicts",
            noun: "claim",
            list_key: "verdicts",
            batch_prompt: batch,
            item_prompt: item,
            parse,
        }
    }

    #[test]
    fn verdict_words_and_their_errors() {
        let cases = [
            (json!({"verdict": "yes", "reason": "r"}), Ok((true, Some("r")))),
            (json!({"verdict": " No. "}), Ok((false, None))),
            (json!({"verdict": true}), Ok((true, None))),
            (
                json!({"verdict": "maybe"}),
                Err("verdict `maybe` is neither yes nor no"),
            ),
            (json!({"verdict": 1}), Err("verdict 1 is neither yes nor no")),
            (json!({"reason": "x"}), Err("no `verdict` in {\"reason\":\"x\"}")),
        ];
        for (entry, want) in cases {
            let got = parse_verdict(&entry);
            match want {
                Ok((yes, reason)) => {
                    let v = got.expect("a verdict");
                    assert_eq!((v.yes, v.reason.as_deref()), (yes, reason), "{entry}");
                }
                Err(message) => assert_eq!(got.expect_err("no verdict"), message, "{entry}"),
            }
        }
    }

    #[test]
    fn batch_mode_is_one_call_and_per_item_one_round_trip_of_n_calls() {
        let model = Scripted::new(|prompt| {
            if prompt == "all" {
                Ok(r#"Sure: {"verdicts": [{"verdict": "yes"}, {"verdict": "no"}]}"#.to_owned())
            } else {
                Ok(format!(
                    r#"{{"verdict": "{}"}}"#,
                    if prompt == "item 1" { "no" } else { "yes" }
                ))
            }
        });
        let batch = || "all".to_owned();
        let item = |i: usize| format!("item {i}");
        let parse = |v: &Value| parse_verdict(v);
        let s = settings(Mode::Batch);
        let mut session = Session::open(&model, "m", &s).expect("open");
        let got = ask_verdicts(&mut session, OnItemError::Fail, 2, &request(&batch, &item, &parse)).expect("verdicts");
        assert_eq!(
            got.items.iter().map(|v| v.as_ref().map(|v| v.yes)).collect::<Vec<_>>(),
            [Some(true), Some(false)]
        );
        assert_eq!(session.calls(), json!({"verdicts": 1}));
        assert_eq!(model.round_trips(), 1);

        let s = settings(Mode::PerItem);
        let mut session = Session::open(&model, "m", &s).expect("open");
        let got = ask_verdicts(&mut session, OnItemError::Fail, 3, &request(&batch, &item, &parse)).expect("verdicts");
        assert_eq!(
            got.items.iter().map(|v| v.as_ref().map(|v| v.yes)).collect::<Vec<_>>(),
            [Some(true), Some(false), Some(true)]
        );
        assert_eq!(session.calls(), json!({"verdicts": 3}));
        assert_eq!(model.round_trips(), 2, "the three requests went in one batch");
        let sent = model.requests();
        assert_eq!(sent.last().map(|r| r.target.as_deref()), Some(Some("judge-2")));
        assert_eq!(sent.last().map(|r| r.system_prompt.as_deref()), Some(Some("sys")));
    }

    #[test]
    fn unusable_batch_replies_fail_the_grading() {
        let cases = [
            (
                "no json at all",
                "m: the reply to the verdicts prompt holds no JSON object: \u{201c}no json at all\u{201d}",
            ),
            (
                r#"{"answers": []}"#,
                "m: the reply to the verdicts prompt has no `verdicts` list: \u{201c}{\"answers\": []}\u{201d}",
            ),
            (
                r#"{"verdicts": [{"verdict": "yes"}]}"#,
                "m: the reply to the verdicts prompt has 1 entries for 2 claims",
            ),
        ];
        for (reply, want) in cases {
            let model = Scripted::new(move |_| Ok(reply.to_owned()));
            let batch = || "all".to_owned();
            let item = |i: usize| format!("item {i}");
            let parse = |v: &Value| parse_verdict(v);
            let s = settings(Mode::Batch);
            let mut session = Session::open(&model, "m", &s).expect("open");
            let error = ask_verdicts(&mut session, OnItemError::Skip, 2, &request(&batch, &item, &parse))
                .expect_err("unusable");
            assert_eq!(error.to_string(), want);
        }
    }

    #[test]
    fn a_failed_item_fails_or_is_skipped_as_configured() {
        let model = Scripted::new(|prompt| match prompt {
            "item 1" => Err(TargetError::ItemFailed {
                message: "provider timed out".to_owned(),
            }),
            "item 2" => Ok("I cannot tell".to_owned()),
            _ => Ok(r#"{"verdict": "yes"}"#.to_owned()),
        });
        let batch = || "all".to_owned();
        let item = |i: usize| format!("item {i}");
        let parse = |v: &Value| parse_verdict(v);
        let s = settings(Mode::PerItem);
        let mut session = Session::open(&model, "m", &s).expect("open");
        let error =
            ask_verdicts(&mut session, OnItemError::Fail, 3, &request(&batch, &item, &parse)).expect_err("fails");
        assert_eq!(
            error.to_string(),
            "m: the verdict on claim 2 failed: provider timed out (set `on_item_error: skip` to leave such items out)"
        );
        let mut session = Session::open(&model, "m", &s).expect("open");
        let got = ask_verdicts(&mut session, OnItemError::Skip, 3, &request(&batch, &item, &parse)).expect("skips");
        assert_eq!(
            got.items.iter().map(Option::is_some).collect::<Vec<_>>(),
            [true, false, false]
        );
        assert_eq!(
            got.skipped,
            [
                "claim 2 left out: its verdict failed: provider timed out",
                "claim 3 left out: its verdict failed: the reply holds no JSON object: \u{201c}I cannot tell\u{201d}",
            ]
        );
        let mut session = Session::open(&model, "m", &s).expect("open");
        let item = |_: usize| "item 1".to_owned();
        let error =
            ask_verdicts(&mut session, OnItemError::Skip, 2, &request(&batch, &item, &parse)).expect_err("all failed");
        assert_eq!(
            error.to_string(),
            "m: every claim verdict failed; the first: provider timed out"
        );
    }

    #[test]
    fn the_budget_is_checked_before_any_call() {
        let model = Scripted::new(|_| Ok(r#"{"verdict": "yes"}"#.to_owned())).with_budget(5, 2);
        let batch = || "all".to_owned();
        let item = |i: usize| format!("item {i}");
        let parse = |v: &Value| parse_verdict(v);
        let s = settings(Mode::PerItem);
        let mut session = Session::open(&model, "faithfulness", &s).expect("open");
        let error =
            ask_verdicts(&mut session, OnItemError::Fail, 4, &request(&batch, &item, &parse)).expect_err("over budget");
        assert_eq!(
            error.to_string(),
            "faithfulness needs 4 more model call(s) (1 per claim for the verdicts) but the proxy allows 3 more \
             (max_calls 5); set `target: {max_calls: 6}` or more on the evaluator, or use `mode: batch` (one call per stage)"
        );
        assert_eq!(model.round_trips(), 0, "nothing was sent");
        ask_verdicts(&mut session, OnItemError::Fail, 3, &request(&batch, &item, &parse)).expect("fits exactly");
        let spent = session.reserve(1, "more").expect_err("spent").to_string();
        assert!(spent.contains("allows 0 more"), "{spent}");
    }
}
