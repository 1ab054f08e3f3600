//! The settings every judge understands, read from the evaluator's `config`.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `threshold` | none | report whether the metric reaches this score (a hit or a miss, `details.passed`) |
//! | `strict_mode` | `false` | score 1 when the metric reaches `threshold` (default 1), else 0; the metric stays in `details.metric_score` |
//! | `include_reason` | `true` | ask the model for a one-sentence reason per verdict and keep it in `details` |
//! | `empty_score` | per metric | the score when there is nothing to judge (no claims, no statements, no chunks) |
//!
//! and, for the judges that ask a model:
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `mode` | `batch` | `batch`: one request listing every item; `per_item`: one request per item, all sent in one `invoke_batch` |
//! | `on_item_error` | `fail` | `fail`: a failed verdict fails the grading; `skip`: leave the item out of the metric, with a miss saying so |
//! | `system_prompt` | built in | the system prompt of every call |
//! | `instructions` | built in | replaces the task paragraph of the verdict prompt (the data blocks and the reply format stay) |
//! | `judge_target` | the proxy's default | ask this configured target instead (the proxy's `target` field) |

use crate::Error;
use crate::config::Config;

/// How a metric's verdicts are asked for. Either way it is one proxy round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One request listing every item; the reply holds every verdict, in order. One call of
    /// the budget, and the shared context is sent once.
    Batch,
    /// One request per item, sent together with `invoke_batch`. One call of the budget per
    /// item; verdicts are independent of each other.
    PerItem,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Batch => "batch",
            Self::PerItem => "per_item",
        }
    }
}

/// What a failed verdict (a failed batch item, or a reply without a usable verdict) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnItemError {
    /// The judge reports a grader error naming the item.
    Fail,
    /// The item is left out of the metric (numerator and denominator), with a miss.
    Skip,
}

/// Where the statements or claims of a text come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// One model call that lists them.
    Model,
    /// A local split into sentences: no call, but no rewording either.
    Sentences,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Sentences => "sentences",
        }
    }
}

/// How the metric becomes the score.
#[derive(Debug, Clone, PartialEq)]
pub struct Scoring {
    pub threshold: Option<f64>,
    pub strict: bool,
    pub include_reason: bool,
    pub empty_score: f64,
}

impl Scoring {
    /// `empty_score` is the metric's own default for "nothing to judge".
    pub fn read(config: &mut Config<'_>, empty_score: f64) -> Result<Self, Error> {
        Ok(Self {
            threshold: config.unit("threshold")?,
            strict: config.boolean("strict_mode", false)?,
            include_reason: config.boolean("include_reason", true)?,
            empty_score: config.unit("empty_score")?.unwrap_or(empty_score),
        })
    }
}

/// How the judge model is asked.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSettings {
    pub mode: Mode,
    pub on_item_error: OnItemError,
    pub system_prompt: String,
    pub judge_target: Option<String>,
    /// Replaces the task paragraph of the verdict prompt.
    pub instructions: Option<String>,
}

/// The system prompt of every call unless `system_prompt` says otherwise.
pub const SYSTEM_PROMPT: &str = "You are a careful, strict evaluator of AI answers. Judge only by the text you are given. \
Reply with only the JSON object asked for: no prose, no code fences.";

impl ModelSettings {
    pub fn read(config: &mut Config<'_>) -> Result<Self, Error> {
        Ok(Self {
            mode: config.choice(
                "mode",
                &[("batch", Mode::Batch), ("per_item", Mode::PerItem)],
                Mode::Batch,
            )?,
            on_item_error: config.choice(
                "on_item_error",
                &[("fail", OnItemError::Fail), ("skip", OnItemError::Skip)],
                OnItemError::Fail,
            )?,
            system_prompt: config.string("system_prompt")?.unwrap_or(SYSTEM_PROMPT).to_owned(),
            judge_target: config.string("judge_target")?.map(str::to_owned),
            instructions: config.string("instructions")?.map(str::to_owned),
        })
    }
}

/// How a statement-based metric gets its statements: `split` and `extract_instructions`.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitSettings {
    pub split: Split,
    /// Replaces the task paragraph of the extraction prompt.
    pub instructions: Option<String>,
}

impl SplitSettings {
    pub fn read(config: &mut Config<'_>) -> Result<Self, Error> {
        Ok(Self {
            split: config.choice(
                "split",
                &[("model", Split::Model), ("sentences", Split::Sentences)],
                Split::Model,
            )?,
            instructions: config.string("extract_instructions")?.map(str::to_owned),
        })
    }
}
