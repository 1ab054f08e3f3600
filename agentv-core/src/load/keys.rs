//! The key tables of eval files: the suite, a dataset's sidecar, `execution`, a case, a turn, a
//! message and a content segment. The loader reads through them and `agentv schema eval` is
//! generated from them.
//!
//! Both AgentV generations are declared here (`docs/architecture.md#generations`): the 2.x keys
//! of the spec and the 4.x keys of `reference/agentv-4.md`, which load into the same model.

use crate::config::{IntRange, Key, KeyTable, Kind, NumberRange};
use crate::model::Role;
use crate::tools::keys::{RESULT_KEY, USE_KEYS};

/// A grader list, described once in the schema (`#/definitions/graders`).
pub const GRADERS: Kind = Kind::Ref("graders");

/// Scores and thresholds.
const UNIT: NumberRange = NumberRange { min: 0.0, max: 1.0 };

/// Keys AgentV 4.x reads that agentv does not honour: each is a warning saying so.
pub const NOT_HONOURED: &[(&str, &str)] = &[("preprocessors", "content preprocessors"), ("hooks", "target hooks")];

const SUITE_COMMON: &[Key] = &[
    Key::new("$schema", Kind::Str, "A JSON Schema for editors; not read."),
    Key::new("description", Kind::Text, "What the suite checks; not read."),
    Key::new(
        "dataset",
        Kind::Text,
        "The suite name in results, 2.x spelling (default: the file's name without extension).",
    ),
    Key::new(
        "name",
        Kind::Text,
        "The suite name in results (4.x spelling of `dataset`; lowercase letters, digits and dashes).",
    ),
    Key::new(
        "execution",
        Kind::Object(&EXECUTION),
        "The target and the graders of every case, and how the suite runs.",
    ),
    Key::new("target", Kind::Text, "Legacy form of `execution.target`."),
    Key::new(
        "strict",
        Kind::Bool,
        "Warnings about this file and its targets are errors, as with `--strict` (nothing runs).",
    ),
    Key::new(
        "evaluator",
        Kind::Text,
        "Legacy; only `llm_judge` is supported (list graders under `execution.evaluators`).",
    ),
];

const SUITE_V4: &[Key] = &[
    Key::new("version", Kind::Text, "The suite's version; metadata only."),
    Key::new("author", Kind::Text, "Metadata only."),
    Key::new("license", Kind::Text, "Metadata only."),
    Key::new("tags", Kind::List(&Kind::Text), "Metadata only."),
    Key::new(
        "requires",
        Kind::Map(&Kind::Any),
        "`{agentv: <version range>}`; metadata only (not enforced).",
    ),
    Key::new("category", Kind::Text, "Metadata only."),
    Key::new(
        "metadata",
        Kind::Map(&Kind::Any),
        "Merged into every case's `metadata` (lists: suite first; mappings: merged; values: the case wins).",
    ),
    Key::new(
        "governance",
        Kind::Map(&Kind::Any),
        "Placed at `metadata.governance` of every case (wins over the suite's `metadata.governance`).",
    ),
    Key::new(
        "input",
        Kind::Any,
        "Input put before every case's input (unless the case sets `execution.skip_defaults`).",
    ),
    Key::new(
        "input_files",
        Kind::List(&Kind::Text),
        "Files attached to every case whose `input` is text, unless it has its own `input_files`.",
    ),
    Key::new(
        "assertions",
        GRADERS,
        "Graders added after every case's own (unless the case sets `execution.skip_defaults`).",
    )
    .aliases(&["assert"]),
    Key::new(
        "preprocessors",
        Kind::Any,
        "AgentV 4.x content preprocessors: not supported by agentv, ignored.",
    ),
    Key::new(
        "workspace",
        super::workspace::WORKSPACE_KIND,
        "Where the cases' target runs: a template copy, repositories, hooks; or the path of a YAML file holding the block.",
    ),
];

const CASES: &[Key] = &[Key::new(
    "tests",
    Kind::OneOf(&[Kind::Str, Kind::List(&Kind::OneOf(&[Kind::Str, Kind::Object(&CASE)]))]),
    "The cases: a list (items may be `file://<path or glob>`), or the path of a cases file or directory. \
     `evalcases` (2.x), `eval_cases` and `cases` are other spellings.",
)
.aliases(&["eval_cases", "evalcases", "cases"])
.required()];

/// The top level of a YAML eval file.
pub const SUITE: KeyTable = KeyTable::new(
    "the eval file",
    "An agentv eval suite (AgentV 2.x or 4.x keys).",
    &[SUITE_COMMON, SUITE_V4, CASES, USE_KEYS],
);

const NO_CASES: &[Key] = &[Key::new(
    "tests",
    Kind::Any,
    "Not allowed in a sidecar: the cases are the lines of the .jsonl file.",
)
.aliases(&["eval_cases", "evalcases"])];

/// The suite keys a JSONL dataset's sidecar (`<name>.yaml` beside it) may set.
pub const SIDECAR: KeyTable = KeyTable::new(
    "the dataset sidecar",
    "Suite keys of a JSONL dataset: every key of a YAML suite but its cases.",
    &[SUITE_COMMON, SUITE_V4, NO_CASES, USE_KEYS],
);

const TRIALS_KEYS: &[Key] = &[
    Key::new(
        "count",
        Kind::Int(IntRange::at_least(1)),
        "How many times each case runs.",
    ),
    Key::new(
        "strategy",
        Kind::Enum(&["pass_at_k", "mean", "confidence_interval"]),
        "How trial scores combine.",
    ),
    Key::new(
        "cost_limit_usd",
        Kind::Number(NumberRange::NON_NEGATIVE),
        "Stop trials once they cost this much.",
    ),
];

/// `execution.trials` (AgentV 4.x).
pub const TRIALS: KeyTable = KeyTable::new("`execution.trials`", "Repeated runs of each case.", &[TRIALS_KEYS]);

const EXECUTION_KEYS: &[Key] = &[
    Key::new(
        "target",
        Kind::Text,
        "The target from targets.yaml (overridden by `--target`); ignored on a case.",
    ),
    Key::new("evaluators", GRADERS, "The graders (2.x place; 4.x: `assertions`)."),
    Key::new("assertions", GRADERS, "Legacy place of the suite's `assertions`.").aliases(&["assert"]),
    Key::new(
        "targets",
        Kind::List(&Kind::OneOf(&[Kind::Text, Kind::Map(&Kind::Any)])),
        "Matrix run over several targets (suite), or the targets a case runs on: kept, not run yet.",
    ),
    Key::new(
        "workers",
        Kind::Int(IntRange { min: 1, max: 50 }),
        "Cases of this suite run at once (`--workers` wins).",
    ),
    Key::new(
        "threshold",
        Kind::Number(UNIT),
        "Suite: gates the exit code when `--threshold` is not given. Case: the score it needs to pass.",
    ),
    Key::new(
        "trials",
        Kind::Object(&TRIALS),
        "Repeated runs of each case: kept, not run yet.",
    ),
    Key::new("cache", Kind::Bool, "Cache answers (as `--cache`)."),
    Key::new("cache_path", Kind::Text, "Where AgentV 4.x keeps its cache: ignored."),
    Key::new(
        "budget_usd",
        Kind::Number(NumberRange::NON_NEGATIVE),
        "AgentV 4.x suite cost budget: not supported by agentv, ignored.",
    )
    .aliases(&["budgetUsd"]),
    Key::new(
        "fail_on_error",
        Kind::Bool,
        "AgentV 4.x: stop after the first execution error: not supported by agentv, ignored.",
    )
    .aliases(&["failOnError"]),
    Key::new(
        "skip_defaults",
        Kind::Bool,
        "On a case: leave out the suite's `assertions`, `input` and `input_files`.",
    ),
];

/// `execution` of a suite or a case.
pub const EXECUTION: KeyTable = KeyTable::new("`execution`", "How cases are run and graded.", &[EXECUTION_KEYS]);

const INPUT_KINDS: &[Kind] = &[
    Kind::Str,
    Kind::Object(&MESSAGE),
    Kind::List(&Kind::Object(&MESSAGE)),
    Kind::Map(&Kind::Any),
];

const CASE_KEYS: &[Key] = &[
    Key::new("id", Kind::Text, "Unique within the suite.").required(),
    Key::new(
        "criteria",
        Kind::Text,
        "What a good answer does; LLM graders grade against it (4.x spelling of `expected_outcome`).",
    ),
    Key::new(
        "expected_outcome",
        Kind::Text,
        "What a good answer does; LLM judges grade against it.",
    )
    .aliases(&["outcome"]),
    Key::new(
        "input_messages",
        Kind::List(&Kind::Object(&MESSAGE)),
        "The conversation sent to the target.",
    ),
    Key::new(
        "input",
        Kind::OneOf(INPUT_KINDS),
        "The input: the question as text, one message, a list of messages, or structured content.",
    ),
    Key::new(
        "input_files",
        Kind::List(&Kind::Text),
        "Files attached before a text `input` (4.x short form).",
    ),
    Key::new(
        "expected_messages",
        Kind::List(&Kind::Object(&MESSAGE)),
        "Reference messages; the last one is the reference answer.",
    ),
    Key::new(
        "expected_output",
        Kind::Any,
        "The reference answer: text, JSON, one message or a list of messages.",
    ),
    Key::new(
        "conversation_id",
        Kind::Text,
        "Groups cases of one conversation in results.",
    ),
    Key::new(
        "assertions",
        GRADERS,
        "The case's graders (4.x: before the suite's `assertions`).",
    )
    .aliases(&["assert"]),
    Key::new(
        "evaluators",
        GRADERS,
        "The case's own graders (2.x: instead of the suite's).",
    ),
    Key::new(
        "execution",
        Kind::Object(&EXECUTION),
        "`evaluators`, `threshold`, `skip_defaults` of this case.",
    ),
    Key::new("evaluator", Kind::Text, "Legacy; only `llm_judge` is supported."),
    Key::new("note", Kind::Any, "A note for people; not read."),
    Key::new(
        "rubrics",
        Kind::List(&Kind::Any),
        "Deprecated inline rubrics: a rubrics grader put first in the case's list.",
    ),
    Key::new(
        "vars",
        Kind::Map(&Kind::Any),
        "Values for `{{ name }}` in `criteria`, `input`, `input_files` and `expected_output`.",
    ),
    Key::new(
        "metadata",
        Kind::Map(&Kind::Any),
        "Free-form; merged with the suite's, passed to graders and results.",
    ),
    Key::new(
        "workspace",
        super::workspace::WORKSPACE_KIND,
        "The case's workspace: its keys replace the suite's, hooks merge hook by hook.",
    ),
    Key::new(
        "depends_on",
        Kind::List(&Kind::Text),
        "Ids of cases of this suite that must finish first: the suite runs in waves (`docs/workspaces.md#dependencies`).",
    ),
    Key::new(
        "on_dependency_failure",
        Kind::Enum(&["skip", "fail", "run"]),
        "When a dependency ended in an execution error: skip (default) or fail the case (an execution error, the target not called), or run it anyway.",
    ),
    Key::new(
        "mode",
        Kind::Enum(&["conversation"]),
        "`conversation`: the target answers each of `turns` in turn.",
    ),
    Key::new(
        "turns",
        Kind::List(&Kind::Object(&TURN)),
        "The user turns of a conversation case.",
    ),
    Key::new(
        "aggregation",
        Kind::Enum(&["mean", "min", "max"]),
        "How turn scores combine (default mean).",
    ),
    Key::new(
        "on_turn_failure",
        Kind::Enum(&["continue", "stop"]),
        "`stop`: once a turn fails, later turns score 0.",
    ),
    Key::new(
        "window_size",
        Kind::Int(IntRange::at_least(1)),
        "Send only the last N exchanges of the conversation (and its system messages).",
    ),
    Key::new("suite", Kind::Text, "Accepted and ignored (as AgentV 4.x does)."),
];

/// One case of a suite, or one line of a JSONL dataset.
pub const CASE: KeyTable = KeyTable::new("an eval case", "One eval case.", &[CASE_KEYS, USE_KEYS, RESULT_KEY]);

const TURN_KEYS: &[Key] = &[
    Key::new("input", Kind::OneOf(INPUT_KINDS), "What the user says in this turn.").required(),
    Key::new("expected_output", Kind::Any, "The reference answer of this turn."),
    Key::new(
        "assertions",
        GRADERS,
        "Graders of this turn's answer (bare strings: one rubric each).",
    )
    .aliases(&["assert"]),
];

/// One turn of a conversation case.
pub const TURN: KeyTable = KeyTable::new("a turn", "One turn of a conversation.", &[TURN_KEYS]);

const MESSAGE_KEYS: &[Key] = &[
    Key::new("role", Kind::Enum(Role::NAMES), "Who speaks.").required(),
    Key::new(
        "content",
        Kind::OneOf(&[
            Kind::Text,
            Kind::Map(&Kind::Any),
            Kind::List(&Kind::OneOf(&[Kind::Str, Kind::Object(&SEGMENT), Kind::Any])),
        ]),
        "Text, a mapping (sent as JSON), or a list of `{type: text|file, value}` segments.",
    ),
    Key::new("name", Kind::Text, "The speaker's name."),
    Key::new(
        "tool_calls",
        Kind::Any,
        "Tool calls of an expected assistant message, passed to judges as written.",
    ),
];

/// One input or expected message.
pub const MESSAGE: KeyTable = KeyTable::new("a message", "One message.", &[MESSAGE_KEYS]);

const SEGMENT_KEYS: &[Key] = &[
    Key::new(
        "type",
        Kind::Text,
        "`text` or `file` (a file's text is attached; other types are kept for judges).",
    ),
    Key::new(
        "value",
        Kind::Any,
        "The text, or the file's path (relative to the eval file, its parents, the repository root).",
    ),
];

/// One part of a message's content.
pub const SEGMENT: KeyTable = KeyTable::new("a content segment", "One content segment.", &[SEGMENT_KEYS]).open();
