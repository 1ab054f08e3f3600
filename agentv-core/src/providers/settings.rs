//! Reading one target's settings: `${{ VAR }}` resolution, typed values, unknown-key warnings.
//! Each provider module parses its own settings with this reader (`from_settings`).
//!
//! Every string a provider reads, at any depth (a top-level setting, a value in a map such as
//! a mock's `responses`, an item of `args`, a field of a nested object such as `healthcheck` or
//! `thinking`), goes through [`Settings::resolve`], so `${{ VAR }}` works the same everywhere.

use std::path::PathBuf;
use std::time::Duration;

use super::registry::MissingVar;
use super::retry::RetryPolicy;
use crate::load::node::{Node, NodeValue, Pos};
use crate::load::{Diagnostics, Env, Fields, Secrets, TargetDef, describe, env_reference};

/// Keys every target may have; provider settings are the rest.
pub(crate) const COMMON_KEYS: &[&str] = &["name", "provider", "judge_target", "workers", "provider_batching"];

/// The longest duration any setting accepts. Far beyond any sensible timeout or delay, and far
/// below what `Duration` and the clocks can represent, so no value can overflow them.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The unit a duration setting is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeUnit {
    Seconds,
    Millis,
}

impl TimeUnit {
    fn per_second(self) -> f64 {
        match self {
            Self::Seconds => 1.0,
            Self::Millis => 1000.0,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Seconds => "seconds",
            Self::Millis => "milliseconds",
        }
    }
}

/// Reads `node` as a duration in `unit`: a finite number in (0, max], or [0, max] when
/// `zero_ok`. The error names the allowed range. Kept free of [`Settings`] so that other
/// readers (evaluator settings) can share it.
pub(crate) fn duration_of(node: &Node, name: &str, unit: TimeUnit, zero_ok: bool) -> Result<Duration, String> {
    let max = MAX_DURATION.as_secs_f64() * unit.per_second();
    match node.as_f64() {
        Some(v) if v.is_finite() && (v > 0.0 || (zero_ok && v == 0.0)) && v <= max => {
            Ok(Duration::from_secs_f64(v / unit.per_second()))
        }
        _ => {
            let range = if zero_ok {
                "from 0 to"
            } else {
                "greater than 0 and at most"
            };
            Err(format!(
                "`{name}` must be a number of {} {range} {max} (7 days), found {}",
                unit.name(),
                describe(node)
            ))
        }
    }
}

/// The text of a free-form value: a string as written, anything else as JSON.
pub(crate) fn node_text(node: &Node) -> Option<String> {
    match &node.value {
        NodeValue::Null => None,
        NodeValue::Str(s) => Some(s.clone()),
        _ => Some(node.to_json().to_string()),
    }
}

/// Reads one target's settings, resolving `${{ VAR }}` references.
pub(crate) struct Settings<'a> {
    pub(crate) fields: Fields<'a>,
    /// Where the reader is: `""` at the top, `"healthcheck."` inside that object.
    prefix: String,
    env: &'a Env,
    secrets: &'a Secrets,
    pub(crate) target: &'a str,
    pub(crate) base_dir: PathBuf,
    pub(crate) diags: Diagnostics,
    /// Variables referenced by settings that need them but are unset.
    pub(crate) missing: Vec<MissingVar>,
}

/// A string after `${{ VAR }}` resolution.
enum Resolved {
    Text(String),
    /// The variable is unset (or empty).
    Unset(String),
}

impl<'a> Settings<'a> {
    pub(crate) fn new(
        def: &'a TargetDef,
        fields: Fields<'a>,
        env: &'a Env,
        secrets: &'a Secrets,
        diags: Diagnostics,
    ) -> Self {
        Self {
            fields,
            prefix: String::new(),
            env,
            secrets,
            target: &def.name,
            base_dir: def.base_dir().to_path_buf(),
            diags,
            missing: Vec::new(),
        }
    }

    /// The raw node of a setting, without resolution (for settings that are not strings).
    pub(crate) fn node(&mut self, names: &[&str]) -> Option<&'a Node> {
        self.fields.take(names)
    }

    /// Which of the aliases `names` the file uses (before it is read), for messages.
    fn written<'n>(&self, names: &[&'n str]) -> &'n str {
        names
            .iter()
            .find(|n| self.fields.rest().any(|(k, _)| k.as_str() == Some(**n)))
            .copied()
            .unwrap_or(names[0])
    }

    /// The full name of a setting for messages (`healthcheck.cwd`).
    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// The run's secrets, for providers that register derived values (template parts).
    pub(crate) fn secrets(&self) -> &Secrets {
        self.secrets
    }

    /// `text` resolved; a value is registered as a secret, with a warning when it is too short
    /// to be redacted (D18: the variable and setting are named, never the value).
    fn resolve_str(&mut self, text: &str, pos: Pos, setting: &str) -> Resolved {
        match env_reference(text) {
            None => Resolved::Text(text.to_owned()),
            Some(var) => match self.env.get(var) {
                Some(value) => {
                    if !self.secrets.add(&value) {
                        self.diags.warn(
                            pos,
                            format!(
                                "target `{}`: the value of {var} (setting `{setting}`) is shorter than {} characters, so it cannot be redacted from output",
                                self.target,
                                Secrets::MIN_CHARS
                            ),
                            Some(format!("use a longer value for {var}, or do not treat it as a secret")),
                        );
                    }
                    Resolved::Text(value)
                }
                None => Resolved::Unset(var.to_owned()),
            },
        }
    }

    fn note_missing(&mut self, var: String, setting: String) {
        let missing = MissingVar {
            var,
            target: self.target.to_owned(),
            setting,
        };
        if !self.missing.contains(&missing) {
            self.missing.push(missing);
        }
    }

    /// `node` with every `${{ VAR }}` string at any depth replaced by the variable's value.
    /// Unset variables are recorded as missing (naming the setting's path, e.g.
    /// `responses.greeting` or `args[2]`) and their nodes become null.
    pub(crate) fn resolve(&mut self, node: &Node, path: &str) -> Node {
        let value = match &node.value {
            NodeValue::Str(text) => match self.resolve_str(text, node.pos, path) {
                Resolved::Text(t) => NodeValue::Str(t),
                Resolved::Unset(var) => {
                    self.note_missing(var, path.to_owned());
                    NodeValue::Null
                }
            },
            NodeValue::Seq(items) => NodeValue::Seq(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| self.resolve(item, &format!("{path}[{i}]")))
                    .collect(),
            ),
            NodeValue::Map(entries) => NodeValue::Map(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), self.resolve(v, &format!("{path}.{}", k.key_text()))))
                    .collect(),
            ),
            other => other.clone(),
        };
        Node::new(value, node.pos)
    }

    /// A free-form setting (a map, a list, an object passed through) with every string in it
    /// resolved.
    pub(crate) fn tree(&mut self, names: &[&str]) -> Option<Node> {
        let node = self.fields.take(names)?;
        let path = self.key(names[0]);
        Some(self.resolve(node, &path))
    }

    /// A string setting. A `${{ VAR }}` whose variable is unset is recorded as missing when
    /// `required`; an optional setting is then left unset, as AgentV does, with a warning (the
    /// user asked for a variable and would not otherwise learn it is not set).
    pub(crate) fn string(&mut self, names: &[&str], required: bool) -> Option<String> {
        let node = self.fields.take(names)?;
        let text = match &node.value {
            NodeValue::Str(s) => s.clone(),
            NodeValue::Int(_) | NodeValue::Float(_) | NodeValue::Bool(_) => node.to_json().to_string(),
            NodeValue::Null => return None,
            _ => {
                let name = self.key(names[0]);
                self.diags.error(
                    node.pos,
                    format!("`{name}` must be a string, found {}", node.type_name()),
                    None,
                );
                return None;
            }
        };
        let setting = self.key(names[0]);
        match self.resolve_str(&text, node.pos, &setting) {
            Resolved::Text(t) => Some(t),
            Resolved::Unset(var) => {
                if required {
                    self.note_missing(var, setting);
                } else {
                    self.diags.warn(
                        node.pos,
                        format!(
                            "environment variable {var} is not set, so optional setting `{setting}` of target `{}` is left unset",
                            self.target
                        ),
                        Some("set it in the environment or in a .env file, or remove the setting".to_owned()),
                    );
                }
                None
            }
        }
    }

    /// A duration setting in `unit`, greater than 0 (or ≥ 0 when `zero_ok`) and at most
    /// [`MAX_DURATION`]; anything else is an error at its position naming the allowed range.
    pub(crate) fn duration(&mut self, names: &[&str], unit: TimeUnit, zero_ok: bool) -> Option<Duration> {
        let name = self.key(self.written(names));
        let node = self.fields.take(names)?;
        match duration_of(node, &name, unit, zero_ok) {
            Ok(d) => Some(d),
            Err(message) => {
                self.diags.error(node.pos, message, None);
                None
            }
        }
    }

    /// A timeout in seconds (> 0).
    pub(crate) fn seconds(&mut self, names: &[&str]) -> Option<Duration> {
        self.duration(names, TimeUnit::Seconds, false)
    }

    /// A delay in milliseconds (≥ 0).
    pub(crate) fn millis(&mut self, names: &[&str]) -> Option<Duration> {
        self.duration(names, TimeUnit::Millis, true)
    }

    pub(crate) fn boolean(&mut self, names: &[&str]) -> Option<bool> {
        self.fields.boolean(names, &mut self.diags)
    }

    pub(crate) fn number(&mut self, names: &[&str]) -> Option<f64> {
        self.fields.non_negative(names, &mut self.diags)
    }

    pub(crate) fn whole(&mut self, names: &[&str]) -> Option<u64> {
        let node = self.fields.take(names)?;
        match node.value {
            NodeValue::Int(i) if i >= 0 => Some(i as u64),
            _ => {
                let name = self.key(names[0]);
                self.diags.error(
                    node.pos,
                    format!("`{name}` must be a whole number ≥ 0, found {}", describe(node)),
                    None,
                );
                None
            }
        }
    }

    /// Reads the nested object at `names` with `read`, then warns about its unknown keys.
    /// Inside, every reader works as at the top (same resolution, same duration rules), and
    /// messages name the setting by its path (`healthcheck.timeout_seconds`).
    pub(crate) fn object<T>(&mut self, names: &[&str], known: &[&str], read: impl FnOnce(&mut Self) -> T) -> Option<T> {
        let node = self.fields.take(names)?;
        let what = format!("`{}` of target `{}`", self.key(names[0]), self.target);
        let inner = Fields::of(node, &what, &mut self.diags)?;
        let outer_fields = std::mem::replace(&mut self.fields, inner);
        let inner_prefix = format!("{}{}.", self.prefix, names[0]);
        let outer_prefix = std::mem::replace(&mut self.prefix, inner_prefix);
        let value = read(self);
        self.fields.warn_unknown(&what, known, &mut self.diags);
        self.fields = outer_fields;
        self.prefix = outer_prefix;
        Some(value)
    }

    /// Whether a variable of `setting` (or of anything inside it) is missing; lets a provider
    /// skip "needs `x`" when the real problem is an unset variable.
    pub(crate) fn is_missing(&self, setting: &str) -> bool {
        let path = self.key(setting);
        self.missing.iter().any(|m| {
            m.setting == path
                || m.setting.starts_with(&format!("{path}."))
                || m.setting.starts_with(&format!("{path}["))
        })
    }

    /// A credential: required, and recorded as missing when its variable is unset.
    pub(crate) fn credential(&mut self, names: &[&str], example: &str, pos: Pos) -> Option<String> {
        let present = self.fields.take(names).is_some();
        let value = self.string(names, true);
        if !present {
            self.error(
                pos,
                format!("target `{}` needs `{}`", self.target, names[0]),
                Some(format!(
                    "add `{}: ${{{{ {example} }}}}` and set {example} in the environment or a .env file",
                    names[0]
                )),
            );
        }
        value
    }

    /// The settings every LLM API target shares.
    pub(crate) fn llm(&mut self) -> super::llm::LlmSettings {
        super::llm::LlmSettings {
            temperature: self.number(&["temperature"]),
            max_output_tokens: self.whole(&["max_output_tokens", "max_tokens"]),
            timeout: self.seconds(&["timeout_seconds"]),
            retry: self.retry(),
        }
    }

    /// The retry policy (D14) from `max_retries`, `initial_delay_ms`, `max_delay_ms`,
    /// `backoff_factor` and `retryable_status_codes` (also with a `retry_` prefix).
    pub(crate) fn retry(&mut self) -> RetryPolicy {
        let mut policy = RetryPolicy::default();
        if let Some(n) = self.whole(&["max_retries"]) {
            policy.max_retries = n.min(100) as u32;
        }
        if let Some(ms) = self.millis(&["initial_delay_ms", "retry_initial_delay_ms"]) {
            policy.initial_delay = ms;
        }
        if let Some(ms) = self.millis(&["max_delay_ms", "retry_max_delay_ms"]) {
            policy.max_delay = ms;
        }
        if let Some(f) = self.number(&["backoff_factor", "retry_backoff_factor"]) {
            policy.backoff_factor = f;
        }
        if let Some(node) = self.fields.take(&["retryable_status_codes", "retry_status_codes"]) {
            let status = |n: &Node| match n.value {
                NodeValue::Int(c) => u16::try_from(c).ok().filter(|c| (100..=599).contains(c)),
                _ => None,
            };
            let codes: Option<Vec<u16>> = node.as_seq().and_then(|items| items.iter().map(status).collect());
            match codes {
                Some(codes) => policy.retryable_status_codes = codes,
                None => self.diags.error(
                    node.pos,
                    "`retryable_status_codes` must be a list of HTTP statuses (whole numbers from 100 to 599)"
                        .to_owned(),
                    None,
                ),
            }
        }
        policy
    }

    /// `text` as a path relative to the targets file's directory (D11).
    pub(crate) fn path(&self, text: &str) -> PathBuf {
        let path = crate::load::normalize(&self.base_dir.join(text));
        if path.as_os_str().is_empty() {
            // `.` next to a targets file named without a directory.
            PathBuf::from(".")
        } else {
            path
        }
    }

    /// A directory setting, relative to the targets file's directory (D11); it must exist.
    pub(crate) fn dir(&mut self, names: &[&str]) -> Option<PathBuf> {
        let node = self.fields.take(names);
        let pos = node.map(|n| n.pos);
        // A `${{ VAR }}` value is a secret: the error names the variable, never the path.
        let var = node.and_then(Node::as_str).and_then(env_reference).map(str::to_owned);
        let text = self.string(names, false)?;
        let path = self.path(&text);
        if !path.is_dir() {
            let name = self.key(names[0]);
            let shown = match var {
                Some(var) => format!("the value of {var}"),
                None => path.display().to_string(),
            };
            self.diags.error(
                pos.unwrap_or_default(),
                format!("`{name}` directory does not exist: {shown}"),
                Some("relative paths are resolved against the directory of the targets file".to_owned()),
            );
        }
        Some(path)
    }

    pub(crate) fn finish(&mut self, known: &[&str]) {
        let mut all: Vec<&str> = COMMON_KEYS.to_vec();
        all.extend_from_slice(known);
        self.fields
            .warn_unknown(&format!("target `{}`", self.target), &all, &mut self.diags);
    }

    pub(crate) fn error(&mut self, pos: Pos, message: String, help: Option<String>) {
        self.diags.error(pos, message, help);
    }
}

/// Keys every LLM provider accepts besides its own.
pub(crate) const LLM_KEYS: &[&str] = &[
    "temperature",
    "max_output_tokens",
    "max_tokens",
    "timeout_seconds",
    "max_retries",
    "initial_delay_ms",
    "retry_initial_delay_ms",
    "max_delay_ms",
    "retry_max_delay_ms",
    "backoff_factor",
    "retry_backoff_factor",
    "retryable_status_codes",
    "retry_status_codes",
];

pub(crate) fn finish_llm(s: &mut Settings<'_>, own: &[&str]) {
    let mut known: Vec<&str> = own.to_vec();
    known.extend_from_slice(LLM_KEYS);
    s.finish(&known);
}

/// Reads target settings in unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use crate::load::{Diagnostic, load_targets_file};

    /// What reading one target's settings produced.
    pub(crate) struct Read<T> {
        pub(crate) value: T,
        pub(crate) diagnostics: Vec<Diagnostic>,
        pub(crate) missing: Vec<MissingVar>,
        pub(crate) secrets: Secrets,
        /// Holds the targets file (`targets.yaml`) and anything the test puts beside it.
        pub(crate) dir: tempfile::TempDir,
    }

    /// Writes `yaml` to `targets.yaml` in a new directory (after `prepare` ran on it) and reads
    /// its first target with `read`, with `vars` as the only `.env` variables.
    pub(crate) fn read_first<T>(
        yaml: &str,
        vars: &[(&str, &str)],
        prepare: impl FnOnce(&std::path::Path),
        read: impl FnOnce(&TargetDef, &mut Settings<'_>) -> T,
    ) -> Read<T> {
        let dir = tempfile::tempdir().expect("tmp");
        prepare(dir.path());
        let path = dir.path().join("targets.yaml");
        std::fs::write(&path, yaml).expect("write");
        let file = load_targets_file(&path);
        assert!(!file.has_errors(), "{:?}", file.diagnostics);
        let def = &file.targets[0];
        let env = Env::from_pairs(vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        let secrets = Secrets::default();
        let mut diags = Diagnostics::new(&def.file);
        let fields = Fields::of(&def.settings, "a target", &mut diags).expect("a mapping");
        let mut s = Settings::new(def, fields, &env, &secrets, diags);
        for key in COMMON_KEYS {
            let _ = s.fields.take(&[key]);
        }
        let value = read(def, &mut s);
        let Settings { diags, missing, .. } = s;
        Read {
            value,
            diagnostics: diags.into_vec(),
            missing,
            secrets,
            dir,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::read_first;
    use super::*;

    #[test]
    fn duration_range_is_checked_in_either_unit() {
        let node = |v: NodeValue| Node::new(v, Pos::new(1, 1));
        let cases: [(NodeValue, TimeUnit, bool, Result<Duration, &str>); 9] = [
            (
                NodeValue::Int(30),
                TimeUnit::Seconds,
                false,
                Ok(Duration::from_secs(30)),
            ),
            (
                NodeValue::Float(0.5),
                TimeUnit::Seconds,
                false,
                Ok(Duration::from_millis(500)),
            ),
            (NodeValue::Int(604_800), TimeUnit::Seconds, false, Ok(MAX_DURATION)),
            (
                NodeValue::Int(250),
                TimeUnit::Millis,
                true,
                Ok(Duration::from_millis(250)),
            ),
            (NodeValue::Int(0), TimeUnit::Millis, true, Ok(Duration::ZERO)),
            (
                NodeValue::Int(0),
                TimeUnit::Seconds,
                false,
                Err("`t` must be a number of seconds greater than 0 and at most 604800 (7 days), found 0"),
            ),
            (
                NodeValue::Float(7e30),
                TimeUnit::Seconds,
                false,
                Err("`t` must be a number of seconds greater than 0 and at most 604800 (7 days), found 7e+30"),
            ),
            (
                NodeValue::Int(604_800_001),
                TimeUnit::Millis,
                true,
                Err("`t` must be a number of milliseconds from 0 to 604800000 (7 days), found 604800001"),
            ),
            (
                NodeValue::Float(f64::NAN),
                TimeUnit::Millis,
                true,
                Err("`t` must be a number of milliseconds from 0 to 604800000 (7 days), found not a number (.nan)"),
            ),
        ];
        for (value, unit, zero_ok, want) in cases {
            let got = duration_of(&node(value.clone()), "t", unit, zero_ok);
            assert_eq!(
                got.as_ref().map_err(String::as_str),
                want.as_ref().map_err(|e| *e),
                "{value:?}"
            );
        }
    }

    #[test]
    fn strings_resolve_at_any_depth_with_their_path_when_unset() {
        let yaml = "targets:\n  - name: t\n    provider: mock\n    top: ${{ AGENTV_T_A }}\n    nested:\n      list: [plain, '${{ AGENTV_T_A }}', '${{ AGENTV_T_UNSET }}']\n      map: {deep: '${{ AGENTV_T_UNSET2 }}'}\n";
        let read = read_first(
            yaml,
            &[("AGENTV_T_A", "value-a")],
            |_| {},
            |_, s| {
                let top = s.string(&["top"], true);
                let nested = s.tree(&["nested"]).map(|n| n.to_json());
                (top, nested)
            },
        );
        let (top, nested) = read.value;
        assert_eq!(top.as_deref(), Some("value-a"));
        assert_eq!(
            nested,
            Some(serde_json::json!({"list": ["plain", "value-a", null], "map": {"deep": null}}))
        );
        let missing: Vec<(&str, &str)> = read
            .missing
            .iter()
            .map(|m| (m.var.as_str(), m.setting.as_str()))
            .collect();
        assert_eq!(
            missing,
            [
                ("AGENTV_T_UNSET", "nested.list[2]"),
                ("AGENTV_T_UNSET2", "nested.map.deep")
            ]
        );
        assert_eq!(read.secrets.redact("x value-a"), "x ***");
    }

    #[test]
    fn an_unset_variable_leaves_an_optional_string_unset_with_a_warning() {
        let yaml = "targets:\n  - {name: t, provider: mock, opt: '${{ AGENTV_T_UNSET }}'}\n";
        let read = read_first(yaml, &[], |_| {}, |_, s| s.string(&["opt"], false));
        assert_eq!(read.value, None);
        assert!(read.missing.is_empty());
        let text = read.diagnostics[0].to_string();
        assert!(
            text.contains(":2:36: warning: environment variable AGENTV_T_UNSET is not set, so optional setting `opt` of target `t` is left unset"),
            "{text}"
        );
    }

    #[test]
    fn nested_objects_read_like_the_top_and_name_their_path() {
        let yaml = "targets:\n  - name: t\n    provider: mock\n    outer:\n      cwd: '${{ AGENTV_T_DIR }}'\n      timeout_seconds: 1e300\n      typo: 1\n";
        let read = read_first(
            yaml,
            &[("AGENTV_T_DIR", "subdir")],
            |dir| std::fs::create_dir(dir.join("subdir")).expect("dir"),
            |_, s| {
                s.object(&["outer"], &["cwd", "timeout_seconds"], |o| {
                    (o.dir(&["cwd"]), o.seconds(&["timeout_seconds"]))
                })
            },
        );
        let (cwd, timeout) = read.value.expect("an object");
        assert_eq!(cwd, Some(read.dir.path().join("subdir")));
        assert_eq!(timeout, None);
        let text: Vec<String> = read.diagnostics.iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(
            text[0].ends_with(":6:24: error: `outer.timeout_seconds` must be a number of seconds greater than 0 and at most 604800 (7 days), found 1e+300"),
            "{}",
            text[0]
        );
        assert!(
            text[1].contains(":7:7: warning: unknown key `typo` in `outer` of target `t`"),
            "{}",
            text[1]
        );
    }
}
