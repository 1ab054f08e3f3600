//! The key tables of eval files: the suite, a dataset's sidecar, `execution`, a case, a
//! message and a content segment. The loader reads through them and `agentv schema eval` is
//! generated from them.

use crate::config::{Key, KeyTable, Kind};
use crate::model::Role;

/// A grader list, described once in the schema (`#/definitions/graders`).
pub const GRADERS: Kind = Kind::Ref("graders");

const SUITE_COMMON: &[Key] = &[
    Key::new("$schema", Kind::Str, "A JSON Schema for editors; not read."),
    Key::new("description", Kind::Text, "What the suite checks; not read."),
    Key::new(
        "dataset",
        Kind::Text,
        "The dataset name in results (default: the file's name without extension).",
    ),
    Key::new(
        "execution",
        Kind::Object(&EXECUTION),
        "The target and the graders of every case without its own.",
    ),
    Key::new("target", Kind::Text, "Legacy form of `execution.target`."),
    Key::new(
        "evaluator",
        Kind::Text,
        "Legacy; only `llm_judge` is supported (list graders under `execution.evaluators`).",
    ),
];

const CASES: &[Key] = &[Key::new("evalcases", Kind::List(&Kind::Object(&CASE)), "The cases.").required()];

/// The top level of a YAML eval file.
pub const SUITE: KeyTable = KeyTable::new("the eval file", "An agentv eval suite.", &[SUITE_COMMON, CASES]);

const NO_CASES: &[Key] = &[Key::new(
    "evalcases",
    Kind::Any,
    "Not allowed in a sidecar: the cases are the lines of the .jsonl file.",
)];

/// The suite keys a JSONL dataset's sidecar (`<name>.yaml` beside it) may set.
pub const SIDECAR: KeyTable = KeyTable::new(
    "the dataset sidecar",
    "Suite keys of a JSONL dataset.",
    &[SUITE_COMMON, NO_CASES],
);

const EXECUTION_KEYS: &[Key] = &[
    Key::new(
        "target",
        Kind::Text,
        "The target from targets.yaml (overridden by `--target`); ignored on a case.",
    ),
    Key::new("evaluators", GRADERS, "The graders."),
];

/// `execution` of a suite or a case.
pub const EXECUTION: KeyTable = KeyTable::new("`execution`", "How cases are run and graded.", &[EXECUTION_KEYS]);

const CASE_KEYS: &[Key] = &[
    Key::new("id", Kind::Text, "Unique within the suite.").required(),
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
        Kind::OneOf(&[Kind::Str, Kind::List(&Kind::Object(&MESSAGE))]),
        "Short form of `input_messages`: the question as text, or the messages.",
    ),
    Key::new(
        "expected_messages",
        Kind::List(&Kind::Object(&MESSAGE)),
        "Reference messages; the last one is the reference answer.",
    ),
    Key::new(
        "expected_output",
        Kind::Any,
        "Short form of `expected_messages`: the reference answer, as text or JSON.",
    ),
    Key::new(
        "conversation_id",
        Kind::Text,
        "Groups cases of one conversation in results.",
    ),
    Key::new(
        "evaluators",
        GRADERS,
        "The case's own graders (instead of the suite's).",
    ),
    Key::new("execution", Kind::Object(&EXECUTION), "`evaluators` of this case."),
    Key::new("evaluator", Kind::Text, "Legacy; only `llm_judge` is supported."),
    Key::new("note", Kind::Any, "A note for people; not read."),
];

/// One case of a suite, or one line of a JSONL dataset.
pub const CASE: KeyTable = KeyTable::new("an eval case", "One eval case.", &[CASE_KEYS]);

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
