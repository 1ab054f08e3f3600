//! Key tables: every section of a configuration file (a suite, a case, a grader, a provider, a
//! targets file) declares its keys once, here in this form.
//!
//! One table drives four things, so they cannot drift apart: reading (a [`super::Fields`] reads
//! only keys of its tables), the unknown-key warning and its "did you mean" hint, the "known
//! keys" help text, and the JSON Schema editors use (`agentv schema`).
//! See `docs/architecture.md#key-tables`.

use std::time::Duration;

use super::diagnostics::describe;
use super::node::{Node, NodeValue};

/// One key a section accepts.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// The name written in messages and results.
    pub name: &'static str,
    /// Other spellings accepted for it (`outcome` for `expected_outcome`, camelCase forms).
    pub aliases: &'static [&'static str],
    pub kind: Kind,
    /// An entry without it is an error.
    pub required: bool,
    /// One line for the schema and the documentation.
    pub doc: &'static str,
}

impl Key {
    pub const fn new(name: &'static str, kind: Kind, doc: &'static str) -> Self {
        Self {
            name,
            aliases: &[],
            kind,
            required: false,
            doc,
        }
    }

    /// The same key, also accepted as `aliases`.
    pub const fn aliases(self, aliases: &'static [&'static str]) -> Self {
        Self { aliases, ..self }
    }

    /// The same key, which an entry must have.
    pub const fn required(self) -> Self {
        Self { required: true, ..self }
    }

    /// Every spelling: the name, then the aliases.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }
}

/// What a key's value may be.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// Text. A number or a boolean is read as its text (`id: 42`); null counts as absent.
    Text,
    /// A string and nothing else.
    Str,
    /// An `http://` or `https://` URL with a host: checked when read, so a bad URL or port is
    /// a configuration error before any call rather than a network error on every case.
    Url,
    Bool,
    /// A finite number in a range.
    Number(NumberRange),
    /// A whole number in a range.
    Int(IntRange),
    /// A duration written as a plain number in a unit, within a range.
    Duration(DurationRange),
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// A list whose items are of this kind.
    List(&'static Kind),
    /// A mapping from names to values of this kind.
    Map(&'static Kind),
    /// A mapping read with its own key table.
    Object(&'static KeyTable),
    /// Any of these kinds.
    OneOf(&'static [Kind]),
    /// A value the document's schema defines once under this name (`graders`, `target`):
    /// shapes that depend on a table (the grader table, the provider table).
    Ref(&'static str),
    /// Anything; read as written (user data passed through).
    Any,
}

/// The range of a [`Kind::Number`], both ends included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NumberRange {
    pub min: f64,
    pub max: f64,
}

impl NumberRange {
    /// A number ≥ 0.
    pub const NON_NEGATIVE: Self = Self {
        min: 0.0,
        max: f64::INFINITY,
    };

    /// Says what the range accepts: "a number ≥ 0", "a number from 0 to 1".
    pub fn describe(&self) -> String {
        if self.max == f64::INFINITY {
            format!("a number ≥ {}", self.min)
        } else {
            format!("a number from {} to {}", self.min, self.max)
        }
    }
}

/// The range of a [`Kind::Int`], both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntRange {
    pub min: i64,
    pub max: i64,
}

impl IntRange {
    /// A whole number ≥ `min`.
    pub const fn at_least(min: i64) -> Self {
        Self { min, max: i64::MAX }
    }

    /// Says what the range accepts: "a whole number ≥ 1", "a whole number from 100 to 599".
    pub fn describe(&self) -> String {
        if self.max == i64::MAX {
            format!("a whole number ≥ {}", self.min)
        } else {
            format!("a whole number from {} to {}", self.min, self.max)
        }
    }
}

/// The unit a duration is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Millis,
}

impl TimeUnit {
    pub fn name(self) -> &'static str {
        match self {
            Self::Seconds => "seconds",
            Self::Millis => "milliseconds",
        }
    }

    fn per_second(self) -> f64 {
        match self {
            Self::Seconds => 1.0,
            Self::Millis => 1000.0,
        }
    }

    /// `d` in this unit, as a user would write it (`0.5`, `86400`).
    pub fn show(self, d: Duration) -> f64 {
        (d.as_secs_f64() * self.per_second() * 1000.0).round() / 1000.0
    }
}

/// The longest duration any setting accepts: a week. Far beyond any sensible timeout or delay,
/// and far below what `Duration` and the clocks can represent, so no value can overflow them.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The range of a [`Kind::Duration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationRange {
    pub unit: TimeUnit,
    pub min: Duration,
    /// `min` itself is not accepted (a timeout of 0 would never let anything run).
    pub min_exclusive: bool,
    pub max: Duration,
}

impl DurationRange {
    /// A timeout in seconds: more than 0, at most [`MAX_DURATION`].
    pub const TIMEOUT_SECONDS: Self = Self {
        unit: TimeUnit::Seconds,
        min: Duration::ZERO,
        min_exclusive: true,
        max: MAX_DURATION,
    };

    /// A delay in milliseconds: from 0 to [`MAX_DURATION`].
    pub const DELAY_MILLIS: Self = Self {
        unit: TimeUnit::Millis,
        min: Duration::ZERO,
        min_exclusive: false,
        max: MAX_DURATION,
    };

    /// Seconds from `min` to `max`, both included.
    pub const fn seconds(min: Duration, max: Duration) -> Self {
        Self {
            unit: TimeUnit::Seconds,
            min,
            min_exclusive: false,
            max,
        }
    }

    pub fn contains(&self, d: Duration) -> bool {
        let above = if self.min_exclusive {
            d > self.min
        } else {
            d >= self.min
        };
        above && d <= self.max
    }

    /// Says what the range accepts: "a number of seconds from 0.001 to 86400", "a number of
    /// seconds greater than 0 and at most 604800 (7 days)".
    pub fn describe(&self) -> String {
        let unit = self.unit;
        let (min, max) = (unit.show(self.min), unit.show(self.max));
        let bounds = if self.min_exclusive {
            format!("greater than {min} and at most {max}")
        } else {
            format!("from {min} to {max}")
        };
        let secs = self.max.as_secs();
        let days = secs / 86_400;
        let in_days = if days > 1 && secs.is_multiple_of(86_400) && self.max.subsec_nanos() == 0 {
            format!(" ({days} days)")
        } else {
            String::new()
        };
        format!("a number of {} {bounds}{in_days}", unit.name())
    }

    /// Reads `node` as a duration in this range. `name` is how the message names the key.
    ///
    /// Every duration read from a file goes through here: a value out of range (`1e20`, `-1`,
    /// `.inf`, `"soon"`) is an error that states the accepted range, never a panic in
    /// `Duration::from_secs_f64`.
    pub fn read(&self, node: &Node, name: &str) -> Result<Duration, RangeError> {
        let parsed = node
            .as_f64()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .and_then(|v| Duration::try_from_secs_f64(v / self.unit.per_second()).ok())
            .filter(|d| self.contains(*d));
        parsed.ok_or_else(|| RangeError {
            message: format!("`{name}` must be {}, found {}", self.describe(), describe(node)),
            // A unit written in the value (`10s`) is the likely mistake.
            help: matches!(node.value, NodeValue::Str(_)).then(|| "write a plain number, without a unit".to_owned()),
        })
    }
}

/// Why a value is outside its key's range: the message and, when it helps, a fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeError {
    pub message: String,
    pub help: Option<String>,
}

/// The keys of one section.
#[derive(Debug, Clone, Copy)]
pub struct KeyTable {
    /// How messages name the section ("an eval case", "keywords").
    pub what: &'static str,
    /// One line for the schema.
    pub doc: &'static str,
    /// The keys, in groups: a group shared by several sections (the LLM settings) is listed,
    /// not copied.
    pub groups: &'static [&'static [Key]],
    /// Keys not in the table are passed on (a code judge's `config`) instead of being unknown.
    pub open: bool,
}

impl KeyTable {
    pub const fn new(what: &'static str, doc: &'static str, groups: &'static [&'static [Key]]) -> Self {
        Self {
            what,
            doc,
            groups,
            open: false,
        }
    }

    /// The same table, keeping keys it does not know.
    pub const fn open(self) -> Self {
        Self { open: true, ..self }
    }

    pub fn keys(&self) -> impl Iterator<Item = &'static Key> + '_ {
        self.groups.iter().flat_map(|g| g.iter())
    }

    /// The key written as `name` (its name or an alias).
    pub fn find(&self, name: &str) -> Option<&'static Key> {
        self.keys().find(|k| k.names().any(|n| n == name))
    }
}

/// `maxOutputTokens` → `max_output_tokens`; snake_case and other text are unchanged.
pub fn to_snake_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for (i, ch) in key.chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// `max_output_tokens` → `maxOutputTokens`, the camelCase form [`to_snake_case`] reads back.
pub fn to_camel_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for ch in key.chars() {
        if ch == '_' && !out.is_empty() {
            upper = true;
        } else if upper {
            out.push(ch.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::node::Pos;

    fn node(v: NodeValue) -> Node {
        Node::new(v, Pos::new(1, 1))
    }

    #[test]
    fn duration_range_is_checked_in_either_unit() {
        let code_judge = DurationRange::seconds(Duration::from_millis(1), Duration::from_secs(86_400));
        let secs = DurationRange::TIMEOUT_SECONDS;
        let ms = DurationRange::DELAY_MILLIS;
        let cases: [(NodeValue, DurationRange, Result<Duration, &str>); 11] = [
            (NodeValue::Int(30), secs, Ok(Duration::from_secs(30))),
            (NodeValue::Float(0.5), secs, Ok(Duration::from_millis(500))),
            (NodeValue::Int(604_800), secs, Ok(MAX_DURATION)),
            (NodeValue::Int(250), ms, Ok(Duration::from_millis(250))),
            (NodeValue::Int(0), ms, Ok(Duration::ZERO)),
            (
                NodeValue::Int(0),
                secs,
                Err("`t` must be a number of seconds greater than 0 and at most 604800 (7 days), found 0"),
            ),
            (
                NodeValue::Float(7e30),
                secs,
                Err("`t` must be a number of seconds greater than 0 and at most 604800 (7 days), found 7e+30"),
            ),
            (
                NodeValue::Int(604_800_001),
                ms,
                Err("`t` must be a number of milliseconds from 0 to 604800000 (7 days), found 604800001"),
            ),
            (
                NodeValue::Float(f64::NAN),
                ms,
                Err("`t` must be a number of milliseconds from 0 to 604800000 (7 days), found not a number (.nan)"),
            ),
            (NodeValue::Float(0.001), code_judge, Ok(Duration::from_millis(1))),
            (
                NodeValue::Float(1e20),
                code_judge,
                Err("`t` must be a number of seconds from 0.001 to 86400, found 1e+20"),
            ),
        ];
        for (value, range, want) in cases {
            let got = range.read(&node(value.clone()), "t").map_err(|e| e.message);
            assert_eq!(
                got.as_ref().map_err(String::as_str),
                want.as_ref().map_err(|e| *e),
                "{value:?}"
            );
        }
    }

    #[test]
    fn a_unit_written_in_a_duration_gets_help() {
        let err = DurationRange::TIMEOUT_SECONDS
            .read(&node(NodeValue::Str("10s".into())), "timeout_seconds")
            .expect_err("not a number");
        assert_eq!(err.help.as_deref(), Some("write a plain number, without a unit"));
        let err = DurationRange::TIMEOUT_SECONDS
            .read(&node(NodeValue::Float(1e300)), "t")
            .expect_err("too long");
        assert_eq!(err.help, None, "a number needs no unit help");
    }

    #[test]
    fn case_conversions_round_trip() {
        for (snake, camel) in [
            ("command_template", "commandTemplate"),
            ("timeout_seconds", "timeoutSeconds"),
            ("max_output_tokens", "maxOutputTokens"),
            ("name", "name"),
        ] {
            assert_eq!(to_snake_case(camel), snake);
            assert_eq!(to_camel_case(snake), camel);
        }
    }

    #[test]
    fn ranges_describe_themselves() {
        assert_eq!(NumberRange::NON_NEGATIVE.describe(), "a number ≥ 0");
        assert_eq!(IntRange::at_least(1).describe(), "a whole number ≥ 1");
        assert_eq!(
            IntRange { min: 100, max: 599 }.describe(),
            "a whole number from 100 to 599"
        );
    }
}
