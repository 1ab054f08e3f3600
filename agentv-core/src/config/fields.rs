//! Reads the keys of one mapping through its key tables, remembering which were used so the
//! rest can be reported as unknown (typos are warnings with their position; see
//! `docs/architecture.md#unknown-keys`).

use std::time::Duration;

use super::diagnostics::{Diagnostics, describe, did_you_mean};
use super::keys::{Key, KeyTable, Kind};
use super::node::{Node, NodeValue, Pos};

/// The keys of one mapping node, read by name through its tables.
///
/// A key is read by its name in the table (aliases are found through it); a name no table
/// declares cannot be read (a programming error, caught by the tests that read each section).
pub struct Fields<'a> {
    entries: &'a [(Node, Node)],
    used: Vec<bool>,
    pub pos: Pos,
    tables: Vec<&'static KeyTable>,
    /// How messages name the mapping ("an eval case", "target `m`").
    what: String,
    /// Put before key names in messages: the path of a nested mapping (`healthcheck.`).
    prefix: String,
}

impl<'a> Fields<'a> {
    /// Starts reading `node` with `table`; `None` (after reporting an error) when it is not a
    /// mapping.
    pub fn of(node: &'a Node, table: &'static KeyTable, diags: &mut Diagnostics) -> Option<Self> {
        Self::of_named(node, table, table.what.to_owned(), diags)
    }

    /// [`Fields::of`], naming the mapping `what` in messages.
    pub fn of_named(node: &'a Node, table: &'static KeyTable, what: String, diags: &mut Diagnostics) -> Option<Self> {
        match &node.value {
            NodeValue::Map(entries) => Some(Self {
                entries,
                used: vec![false; entries.len()],
                pos: node.pos,
                tables: vec![table],
                what,
                prefix: String::new(),
            }),
            _ => {
                diags.error(
                    node.pos,
                    format!("{what} must be a mapping, found {}", node.type_name()),
                    Some("write it as `key: value` lines".to_owned()),
                );
                None
            }
        }
    }

    /// Also reads the keys of `table` (a grader's own keys after the common ones).
    pub fn add(&mut self, table: &'static KeyTable) {
        self.tables.push(table);
    }

    /// Names the mapping `what` in messages from now on.
    pub fn rename(&mut self, what: impl Into<String>) {
        self.what = what.into();
    }

    pub fn what(&self) -> &str {
        &self.what
    }

    /// Names keys `prefix<key>` in messages (`healthcheck.timeout_seconds`).
    pub fn set_prefix(&mut self, prefix: impl Into<String>) {
        self.prefix = prefix.into();
    }

    /// How messages name key `name`: the spelling the file uses, after the prefix.
    pub fn shown(&self, name: &str) -> String {
        format!("{}{}", self.prefix, self.written(name))
    }

    /// Whether keys outside the tables are passed on rather than unknown.
    pub fn is_open(&self) -> bool {
        self.tables.iter().any(|t| t.open)
    }

    /// The declared key `name`.
    pub fn key(&self, name: &str) -> Option<&'static Key> {
        let key = self.tables.iter().find_map(|t| t.find(name));
        debug_assert!(key.is_some(), "key `{name}` is read but not declared in a key table");
        key
    }

    /// The value of key `name` (under its name or any alias, the name first).
    pub fn take(&mut self, name: &str) -> Option<&'a Node> {
        let key = self.key(name)?;
        let entries = self.entries;
        // Every spelling of the key is read: an alias beside the name is not unknown.
        for (i, (k, _)) in entries.iter().enumerate() {
            if k.as_str().is_some_and(|s| key.names().any(|n| n == s)) {
                self.used[i] = true;
            }
        }
        key.names()
            .find_map(|n| entries.iter().find(|(k, _)| k.as_str() == Some(n)))
            .map(|(_, v)| v)
    }

    /// How the file spells key `name` (an alias when it uses one), for messages.
    pub fn written(&self, name: &str) -> &'a str {
        let Some(key) = self.key(name) else {
            return "";
        };
        key.names()
            .find_map(|n| self.entries.iter().find_map(|(k, _)| k.as_str().filter(|s| *s == n)))
            .unwrap_or(key.name)
    }

    /// A text field ([`Kind::Text`]): numbers and booleans are read as their text, null as
    /// absent; anything else is an error.
    pub fn string(&mut self, name: &str, diags: &mut Diagnostics) -> Option<String> {
        let shown = self.shown(name);
        let node = self.take(name)?;
        text_of(node, &shown, diags)
    }

    /// A required non-empty text field; the error names the key and `what` misses it.
    pub fn required_string(&mut self, name: &str, what: &str, diags: &mut Diagnostics) -> Option<String> {
        let Some(node) = self.take(name).filter(|n| !n.is_null()) else {
            diags.error(
                self.pos,
                format!("{what} is missing the required key `{name}`"),
                Some(format!("add `{name}: ...` to it")),
            );
            return None;
        };
        let text = self.string(name, diags)?;
        if text.trim().is_empty() {
            diags.error(node.pos, format!("{what} has an empty `{name}`"), None);
            return None;
        }
        Some(text)
    }

    /// A number field, within the range its key declares ([`Kind::Number`]).
    pub fn number(&mut self, name: &str, diags: &mut Diagnostics) -> Option<f64> {
        let shown = self.shown(name);
        let range = match self.key(name)?.kind {
            Kind::Number(range) => range,
            _ => return self.misread(name, "a number"),
        };
        let node = self.take(name)?;
        match node.as_f64() {
            Some(v) if v.is_finite() && v >= range.min && v <= range.max => Some(v),
            _ => {
                diags.error(
                    node.pos,
                    format!("`{shown}` must be {}, found {}", range.describe(), describe(node)),
                    None,
                );
                None
            }
        }
    }

    /// A whole-number field, within the range its key declares ([`Kind::Int`]).
    pub fn integer(&mut self, name: &str, diags: &mut Diagnostics) -> Option<i64> {
        let shown = self.shown(name);
        let range = match self.key(name)?.kind {
            Kind::Int(range) => range,
            _ => return self.misread(name, "a whole number"),
        };
        let node = self.take(name)?;
        match node.value {
            NodeValue::Int(i) if i >= range.min && i <= range.max => Some(i),
            _ => {
                diags.error(
                    node.pos,
                    format!("`{shown}` must be {}, found {}", range.describe(), describe(node)),
                    None,
                );
                None
            }
        }
    }

    /// A duration field, in the unit and range its key declares ([`Kind::Duration`]).
    pub fn duration(&mut self, name: &str, diags: &mut Diagnostics) -> Option<Duration> {
        let shown = self.shown(name);
        let range = match self.key(name)?.kind {
            Kind::Duration(range) => range,
            _ => return self.misread(name, "a duration"),
        };
        let node = self.take(name)?;
        match range.read(node, &shown) {
            Ok(d) => Some(d),
            Err(e) => {
                diags.error(node.pos, e.message, e.help);
                None
            }
        }
    }

    /// A boolean field.
    pub fn boolean(&mut self, name: &str, diags: &mut Diagnostics) -> Option<bool> {
        let shown = self.shown(name);
        let node = self.take(name)?;
        match node.as_bool() {
            Some(b) => Some(b),
            None => {
                diags.error(
                    node.pos,
                    format!("`{shown}` must be true or false, found {}", describe(node)),
                    None,
                );
                None
            }
        }
    }

    /// A key read with a reader that does not fit its declared kind: a programming error.
    fn misread<T>(&self, name: &str, reader: &str) -> Option<T> {
        debug_assert!(false, "key `{name}` is read as {reader} but declared otherwise");
        None
    }

    /// The entries not read yet, in file order.
    pub fn rest(&self) -> impl Iterator<Item = &'a (Node, Node)> + '_ {
        self.entries
            .iter()
            .zip(&self.used)
            .filter(|(_, used)| !**used)
            .map(|(e, _)| e)
    }

    /// Takes the keys no table declares as a grader's `config` (JSON), warning about each that
    /// looks like a misspelled declared key (`docs/architecture.md#unknown-keys`): the grader
    /// keeps them for `receiver` ("the judge"), and `what` names its keys in the hint.
    pub fn rest_as_config(
        &mut self,
        receiver: &str,
        what: &str,
        diags: &mut Diagnostics,
    ) -> serde_json::Map<String, serde_json::Value> {
        let known = self.known();
        self.take_rest()
            .into_iter()
            .map(|(k, v)| {
                let key = k.key_text();
                if let Some(guess) = did_you_mean(&key, &known) {
                    diags.warn(
                        k.pos,
                        format!("key `{key}` is passed to {receiver} in `config`; did you mean `{guess}`?"),
                        Some(format!("{what} keys: {}", known.join(", "))),
                    );
                }
                (key, v.to_json())
            })
            .collect()
    }

    /// The entries not read yet, marked as read (an open section keeps them as data).
    pub fn take_rest(&mut self) -> Vec<&'a (Node, Node)> {
        let rest: Vec<&'a (Node, Node)> = self.rest().collect();
        self.used.iter_mut().for_each(|u| *u = true);
        rest
    }

    /// The names of the declared keys, for help texts.
    pub fn known(&self) -> Vec<&'static str> {
        self.tables.iter().flat_map(|t| t.keys()).map(|k| k.name).collect()
    }

    /// Every declared spelling, for "did you mean".
    pub fn spellings(&self) -> Vec<&'static str> {
        self.tables
            .iter()
            .flat_map(|t| t.keys())
            .flat_map(|k| k.names())
            .collect()
    }

    /// Warns about every key not read, suggesting the declared key it most likely misspells
    /// ([`Fields::report_unknown`] with the eval-file rules).
    pub fn warn_unknown(&self, diags: &mut Diagnostics) {
        self.report_unknown(diags, &UnknownKeys::default());
    }

    /// Reports every key not read (`docs/architecture.md#unknown-keys`): a warning suggesting
    /// the declared key it most likely misspells, an error when that key holds graders (a typo
    /// there would drop them) or when `rules` make typos errors. A declared key left unread
    /// (reading stopped at an error already reported) is not reported again.
    pub fn report_unknown(&self, diags: &mut Diagnostics, rules: &UnknownKeys<'_>) {
        let known = self.known().join(", ");
        let spellings = self.spellings();
        for (key, _) in self.rest() {
            let text = key.key_text();
            if spellings.contains(&text.as_str()) {
                continue;
            }
            if rules.foreign.contains(&text.as_str()) {
                diags.warn(
                    key.pos,
                    format!("`{text}` in {} {}; it is ignored", self.what, rules.foreign_note),
                    Some(format!("known keys: {known}")),
                );
                continue;
            }
            let guess = did_you_mean(&text, &spellings);
            let help = match guess {
                Some(guess) => format!("did you mean `{guess}`? known keys: {known}"),
                None => format!("known keys: {known}"),
            };
            let drops_graders = guess.and_then(|g| self.key(g)).is_some_and(|k| holds_graders(&k.kind));
            if drops_graders || (rules.typos_are_errors && guess.is_some()) {
                let why = if drops_graders {
                    "its graders would be dropped"
                } else {
                    "a misspelt setting would silently fall back to its default"
                };
                diags.error(
                    key.pos,
                    format!("unknown key `{text}` in {}: {why}", self.what),
                    Some(help),
                );
            } else {
                diags.warn(
                    key.pos,
                    format!("unknown key `{text}` in {}; it is ignored", self.what),
                    Some(help),
                );
            }
        }
    }
}

/// How [`Fields::report_unknown`] treats the keys no table declares.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnknownKeys<'r> {
    /// A key close to a declared one is an error, not a warning (a targets entry: `base_ulr`
    /// must not send a key to the default endpoint; D3 in the design notes).
    pub typos_are_errors: bool,
    /// Keys another implementation defines and this one does not: warnings that say so
    /// (`foreign_note`), never taken for typos.
    pub foreign: &'r [&'r str],
    pub foreign_note: &'r str,
}

/// Whether a value of `kind` is, or holds, a list of graders (`assertions`, `execution`).
fn holds_graders(kind: &Kind) -> bool {
    match kind {
        Kind::Ref(name) => *name == "graders",
        Kind::Object(table) => table.keys().any(|k| matches!(k.kind, Kind::Ref("graders"))),
        _ => false,
    }
}

/// `node` as text ([`Kind::Text`]): `name` is how messages name its key.
pub fn text_of(node: &Node, name: &str, diags: &mut Diagnostics) -> Option<String> {
    match &node.value {
        NodeValue::Str(s) => Some(s.clone()),
        NodeValue::Float(f) if !f.is_finite() => {
            diags.error(
                node.pos,
                format!("`{name}` must be a string, found a number out of range"),
                Some("quote the value to keep it as text".to_owned()),
            );
            None
        }
        NodeValue::Int(_) | NodeValue::Float(_) | NodeValue::Bool(_) => Some(node.to_json().to_string()),
        NodeValue::Null => None,
        _ => {
            diags.error(
                node.pos,
                format!("`{name}` must be a string, found {}", node.type_name()),
                None,
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::diagnostics::Severity;
    use crate::config::keys::{IntRange, NumberRange};
    use crate::config::node::parse_yaml;

    const KEYS: &[Key] = &[
        Key::new("id", Kind::Text, "").required(),
        Key::new("expected_outcome", Kind::Text, "").aliases(&["outcome"]),
        Key::new("weight", Kind::Number(NumberRange::NON_NEGATIVE), ""),
        Key::new("workers", Kind::Int(IntRange::at_least(1)), ""),
        Key::new("timeout_seconds", Kind::Text, ""),
        Key::new("name", Kind::Text, ""),
        Key::new("cwd", Kind::Text, ""),
    ];
    const TABLE: KeyTable = KeyTable::new("eval case", "", &[KEYS]);

    #[test]
    fn fields_track_aliases_and_unknown_keys() {
        let node = parse_yaml("id: x\noutcome: y\ntypo: 1\n").expect("yaml");
        let mut diags = Diagnostics::new(Path::new("f.yaml"));
        let mut f = Fields::of(&node, &TABLE, &mut diags).expect("map");
        assert_eq!(f.string("id", &mut diags).as_deref(), Some("x"));
        assert_eq!(f.written("expected_outcome"), "outcome");
        assert_eq!(f.string("expected_outcome", &mut diags).as_deref(), Some("y"));
        f.warn_unknown(&mut diags);
        let all = diags.into_vec();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].severity, Severity::Warning);
        assert_eq!(all[0].pos, Pos::new(3, 1));
        assert!(all[0].message.contains("`typo`"), "{}", all[0].message);
    }

    #[test]
    fn unknown_keys_suggest_the_declared_key_they_misspell() {
        let node = parse_yaml("wieght: 1\n").expect("yaml");
        let mut diags = Diagnostics::new(Path::new("f.yaml"));
        let f = Fields::of(&node, &TABLE, &mut diags).expect("map");
        f.warn_unknown(&mut diags);
        let help = diags.into_vec()[0].help.clone().unwrap_or_default();
        assert!(help.starts_with("did you mean `weight`?"), "{help}");
        assert!(
            help.ends_with("known keys: id, expected_outcome, weight, workers, timeout_seconds, name, cwd"),
            "{help}"
        );
    }

    #[test]
    fn missing_required_key_is_an_error_at_the_mapping() {
        let node = parse_yaml("expected_outcome: y\n").expect("yaml");
        let mut diags = Diagnostics::new(Path::new("f.yaml"));
        let mut f = Fields::of(&node, &TABLE, &mut diags).expect("map");
        assert!(f.required_string("id", "eval case", &mut diags).is_none());
        let all = diags.into_vec();
        assert_eq!(
            all[0].to_string(),
            "f.yaml:1:1: error: eval case is missing the required key `id`\n  help: add `id: ...` to it"
        );
    }

    #[test]
    fn numbers_are_checked_against_the_declared_range() {
        let node = parse_yaml("weight: -1\nworkers: 0\n").expect("yaml");
        let mut diags = Diagnostics::new(Path::new("f.yaml"));
        let mut f = Fields::of(&node, &TABLE, &mut diags).expect("map");
        assert_eq!(f.number("weight", &mut diags), None);
        assert_eq!(f.integer("workers", &mut diags), None);
        let text: Vec<String> = diags.into_vec().iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "f.yaml:1:9: error: `weight` must be a number ≥ 0, found -1",
                "f.yaml:2:10: error: `workers` must be a whole number ≥ 1, found 0"
            ]
        );
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "key `undeclared` is read but not declared in a key table")]
    fn a_key_no_table_declares_cannot_be_read() {
        let node = parse_yaml("undeclared: 1\n").expect("yaml");
        let mut diags = Diagnostics::new(Path::new("f.yaml"));
        let mut f = Fields::of(&node, &TABLE, &mut diags).expect("map");
        let _ = f.take("undeclared");
    }
}
