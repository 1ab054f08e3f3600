//! The keys of tool settings: on a suite or a case of an eval file, and on an LLM target
//! (`docs/tools.md`). One table each, read by [`super::read`] and rendered into the schemas.

use crate::config::{DurationRange, IntRange, Key, KeyTable, Kind};

/// Most model calls a case may make (`max_steps`).
pub const MAX_STEPS_LIMIT: i64 = 100;

const TOOL_KEYS: &[Key] = &[
    Key::new(
        "name",
        Kind::Text,
        "The tool's name, as the model calls it (letters, digits, `_` and `-`, at most 64).",
    ),
    Key::new("description", Kind::Text, "What the tool does; the model reads it."),
    Key::new(
        "parameters",
        Kind::Map(&Kind::Any),
        "JSON Schema of the arguments (default: an object without properties).",
    ),
    Key::new(
        "mock",
        Kind::Any,
        "The result of every call: any value; strings may use `{{ argument }}` placeholders.",
    ),
    Key::new(
        "command",
        Kind::OneOf(&[Kind::Str, Kind::List(&Kind::Str)]),
        "A program computing the result: argv list (or a string run by `sh -c`); arguments as JSON on stdin, result on stdout.",
    ),
    Key::new(
        "timeout_seconds",
        Kind::Duration(DurationRange::TIMEOUT_SECONDS),
        "How long `command` may run (default: the run's `--timeout`).",
    ),
    Key::new(
        "env",
        Kind::List(&Kind::Text),
        "Variables `command` receives even when they hold secrets (provider keys are removed otherwise).",
    ),
    Key::new(
        "type",
        Kind::Text,
        "OpenAI shape: `function` (with `function: {name, description, parameters}`).",
    ),
    Key::new(
        "function",
        Kind::Map(&Kind::Any),
        "OpenAI shape: the function, sent as written to OpenAI.",
    ),
    Key::new(
        "input_schema",
        Kind::Map(&Kind::Any),
        "Anthropic shape: JSON Schema of the arguments; the tool is sent as written to Anthropic.",
    ),
    Key::new(
        "parametersJsonSchema",
        Kind::Map(&Kind::Any),
        "Gemini shape: JSON Schema of the arguments; the declaration is sent as written to Gemini.",
    )
    .aliases(&["parameters_json_schema"]),
    Key::new(
        "functionDeclarations",
        Kind::List(&Kind::Map(&Kind::Any)),
        "Gemini shape: a tool holding function declarations, each one tool.",
    )
    .aliases(&["function_declarations"]),
];

/// The keys agentv reads on a tool in any shape; everything else of a provider's own shape is
/// sent as written.
pub const AGENTV_TOOL_KEYS: &[&str] = &["mock", "command", "timeout_seconds", "env"];

/// One tool: `{name, description, parameters}` or a provider's own shape, with agentv's
/// `mock`, `command`, `timeout_seconds` and `env`. Open: a provider's own shape keeps keys
/// agentv does not know (`strict`, `cache_control`).
pub const TOOL: KeyTable = KeyTable::new("a tool", "A tool the model may call.", &[TOOL_KEYS]).open();

const CHOICE_KEYS: &[Key] = &[Key::new("name", Kind::Text, "The tool the model must call.").required()];

/// `tool_choice: {name}`.
pub const CHOICE: KeyTable = KeyTable::new("`tool_choice`", "A tool the model must call.", &[CHOICE_KEYS]);

const RESULT_KEYS: &[Key] = &[
    Key::new("tool", Kind::Text, "The tool whose calls this answers.")
        .aliases(&["name"])
        .required(),
    Key::new(
        "arguments",
        Kind::Map(&Kind::Any),
        "Only calls whose arguments hold these keys with equal values (objects compared the same way).",
    )
    .aliases(&["args"]),
    Key::new("result", Kind::Any, "What the call returns (any value)."),
    Key::new("error", Kind::Text, "The call fails with this message instead."),
];

/// One entry of a case's `tool_results`.
pub const RESULT: KeyTable = KeyTable::new(
    "a tool result",
    "The result of calls of one tool in this case.",
    &[RESULT_KEYS],
);

/// `tools`: definitions inline or a file of them. A tool is described once in each schema
/// (`#/definitions/tool`, [`TOOL`]).
pub const TOOLS_KIND: Kind = Kind::OneOf(&[Kind::Str, Kind::List(&Kind::Ref("tool"))]);

/// `tool_choice`: `auto`, `none`, `required`, a tool's name, or `{name}`.
pub const CHOICE_KIND: Kind = Kind::OneOf(&[Kind::Str, Kind::Object(&CHOICE)]);

/// The tool keys of a suite, a case and an LLM target.
pub const USE_KEYS: &[Key] = &[
    Key::new(
        "tools",
        TOOLS_KIND,
        "Tools the model may call (LLM API targets): definitions, or a JSON or YAML file of them.",
    ),
    Key::new(
        "tool_choice",
        CHOICE_KIND,
        "`auto` (default), `none`, `required`, or a tool the model must call (its name, or `{name}`).",
    ),
    Key::new(
        "parallel_tool_calls",
        Kind::Bool,
        "Whether the model may call several tools in one step (default: the provider's).",
    ),
    Key::new(
        "max_steps",
        Kind::Int(IntRange {
            min: 1,
            max: MAX_STEPS_LIMIT,
        }),
        "Model calls per case (default 1: tool calls are recorded, not run); tools run between steps.",
    ),
];

/// `tool_results` of a case.
pub const RESULT_KEY: &[Key] = &[Key::new(
    "tool_results",
    Kind::List(&Kind::Object(&RESULT)),
    "Results of this case's tool calls, by tool name (and arguments), tried before a tool's mock and command.",
)];
