//! Reading one target's settings: `${{ VAR }}` resolution, typed values from the key tables,
//! unknown-key warnings. Every provider's `build` reads its settings with this reader.
//!
//! Every string a provider reads, at any depth (a top-level setting, a value in a map such as
//! a mock's `responses`, an item of `args`, a field of a nested object such as `healthcheck` or
//! `thinking`), goes through [`TargetSettings::resolve`], so `${{ VAR }}` works the same
//! everywhere.

use std::path::PathBuf;
use std::time::Duration;

use super::registry::MissingVar;
use super::retry::RetryPolicy;
use super::target::{AGENTV_TARGET_KEYS, TARGET_KEYS, TargetDef};
use crate::config::interpolate::{env_reference, env_references, substitute_env};
use crate::config::{Diagnostic, Diagnostics, Fields, KeyTable, Kind, Node, NodeValue, Pos, UnknownKeys, text_of};
use crate::env::Env;
use crate::paths::TargetPath;
use crate::redact::Secrets;

/// The text of a free-form value: a string as written, anything else as JSON.
pub(crate) fn node_text(node: &Node) -> Option<String> {
    match &node.value {
        NodeValue::Null => None,
        NodeValue::Str(s) => Some(s.clone()),
        _ => Some(node.to_json().to_string()),
    }
}

/// Reads one target's settings, resolving `${{ VAR }}` references.
pub struct TargetSettings<'a> {
    fields: Fields<'a>,
    env: &'a Env,
    secrets: &'a Secrets,
    target: &'a str,
    /// The provider as the file writes it, for messages.
    provider: &'a str,
    base_dir: PathBuf,
    diags: Diagnostics,
    /// Variables referenced by settings that need them but are unset.
    missing: Vec<MissingVar>,
}

/// A string after `${{ VAR }}` resolution.
enum Resolved {
    Text(String),
    /// These variables are unset (or empty).
    Unset(Vec<String>),
}

/// What reading a target's settings found besides the provider.
pub(crate) struct Findings {
    pub(crate) diagnostics: Vec<Diagnostic>,
    pub(crate) missing: Vec<MissingVar>,
}

impl<'a> TargetSettings<'a> {
    /// A reader of `def`'s settings: the common target keys (already read by the loader) and
    /// the provider's `keys`.
    pub(crate) fn new(
        def: &'a TargetDef,
        keys: &'static KeyTable,
        env: &'a Env,
        secrets: &'a Secrets,
    ) -> Result<Self, Vec<Diagnostic>> {
        let mut diags = Diagnostics::new(&def.file);
        if let Some(text) = &def.source {
            diags.set_source(text.clone());
        }
        let Some(mut fields) = Fields::of_named(
            &def.settings,
            &TARGET_KEYS,
            format!("target `{}`", def.name),
            &mut diags,
        ) else {
            return Err(diags.into_vec());
        };
        fields.add(keys);
        for key in TARGET_KEYS.keys() {
            let _ = fields.take(key.name);
        }
        Ok(Self {
            fields,
            env,
            secrets,
            target: &def.name,
            provider: &def.provider,
            base_dir: def.base_dir().to_path_buf(),
            diags,
            missing: Vec::new(),
        })
    }

    /// Warns about the settings no one read, and hands over what reading found.
    pub(crate) fn finish(mut self) -> Findings {
        self.report_unknown();
        Findings {
            diagnostics: self.diags.into_vec(),
            missing: self.missing,
        }
    }

    /// Reports the settings no one read: a likely typo of a setting is an error (it would
    /// otherwise fall back to a default, such as the public endpoint a key is then sent to),
    /// an AgentV setting this provider does not implement a warning that says so.
    fn report_unknown(&mut self) {
        let note = format!(
            "is an AgentV setting that agentv's `{}` provider does not implement",
            self.provider
        );
        let rules = UnknownKeys {
            typos_are_errors: true,
            foreign: AGENTV_TARGET_KEYS,
            foreign_note: &note,
        };
        self.fields.report_unknown(&mut self.diags, &rules);
    }

    /// The target's name.
    pub fn target(&self) -> &str {
        self.target
    }

    /// Where the settings (or the nested object being read) start.
    pub fn pos(&self) -> Pos {
        self.fields.pos
    }

    /// The raw node of a setting, without resolution (for settings that are not strings).
    pub fn node(&mut self, name: &str) -> Option<&'a Node> {
        self.fields.take(name)
    }

    /// Whether the settings hold `name` (under any spelling).
    pub fn has(&mut self, name: &str) -> bool {
        self.fields.take(name).is_some()
    }

    /// The full name of a setting for messages (`healthcheck.cwd`).
    fn key(&self, name: &str) -> String {
        self.fields.shown(name)
    }

    /// The run's secrets, for providers that register derived values (template parts).
    pub fn secrets(&self) -> &Secrets {
        self.secrets
    }

    /// `text` with every `${{ VAR }}` in it resolved (`docs/architecture.md#secrets`). The value
    /// of each variable and the whole resolved text are registered as secrets: a key inside a
    /// URL is as secret as the URL. A value too short to be redacted is warned about, naming the
    /// variable and setting, never the value.
    fn resolve_str(&mut self, text: &str, pos: Pos, setting: &str, quote: bool) -> Resolved {
        if !text.contains("${{") {
            return Resolved::Text(text.to_owned());
        }
        let whole = env_reference(text).is_some();
        let mut short: Vec<String> = Vec::new();
        let (value, unset) = substitute_env(if whole { text.trim() } else { text }, |var| {
            let value = self.env.get(var)?;
            if !self.secrets.add(&value) && !short.iter().any(|v| v == var) {
                short.push(var.to_owned());
            }
            // A setting that is one `${{ VAR }}` is the whole command, written in the variable.
            if !quote || whole {
                return Some(value);
            }
            let quoted = super::template::shell_quote(&value);
            let _ = self.secrets.add(&quoted);
            Some(quoted)
        });
        if !unset.is_empty() {
            return Resolved::Unset(unset);
        }
        // The whole text carries its variables' values; registering it too redacts it as one
        // piece (a URL whose port came from a variable). Too short to redact is said above.
        let _ = self.secrets.add(&value);
        for var in short {
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
    pub fn resolve(&mut self, node: &Node, path: &str) -> Node {
        let value = match &node.value {
            NodeValue::Str(text) => match self.resolve_str(text, node.pos, path, false) {
                Resolved::Text(t) => NodeValue::Str(t),
                Resolved::Unset(vars) => {
                    for var in vars {
                        self.note_missing(var, path.to_owned());
                    }
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
    pub fn tree(&mut self, name: &str) -> Option<Node> {
        let path = self.key(name);
        let node = self.fields.take(name)?;
        Some(self.resolve(node, &path))
    }

    /// A string setting. A `${{ VAR }}` whose variable is unset is recorded as missing when
    /// `required`; an optional setting is then left unset, as AgentV does, with a warning (the
    /// user asked for a variable and would not otherwise learn it is not set).
    pub fn string(&mut self, name: &str, required: bool) -> Option<String> {
        self.string_quoting(name, required, false)
    }

    /// A command line run by `sh -c` (`command_template`): each `${{ VAR }}` inside it is
    /// replaced by its value shell-quoted, as placeholders are, so a secret holding a quote,
    /// `$(...)` or `;` stays one word and never changes the command; a setting that is only
    /// `${{ VAR }}` is the command itself (`docs/architecture.md#secrets`).
    pub fn shell_string(&mut self, name: &str, required: bool) -> Option<String> {
        self.string_quoting(name, required, true)
    }

    fn string_quoting(&mut self, name: &str, required: bool, quote: bool) -> Option<String> {
        let setting = self.key(name);
        let node = self.fields.take(name)?;
        let text = text_of(node, &setting, &mut self.diags)?;
        match self.resolve_str(&text, node.pos, &setting, quote) {
            Resolved::Text(t) if matches!(self.fields.key(name).map(|k| k.kind), Some(Kind::Url)) => {
                self.checked_url(t, &text, node.pos, &setting)
            }
            Resolved::Text(t) => Some(t),
            Resolved::Unset(vars) => {
                if required {
                    for var in vars {
                        self.note_missing(var, setting.clone());
                    }
                } else {
                    let var = vars.join(", ");
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

    /// `url` (resolved from `written`) when it is an http(s) URL with a host; else an error at
    /// `pos`, so a bad URL or port stops the run once before any call instead of failing every
    /// case. The value is quoted only when no variable went into it.
    fn checked_url(&mut self, url: String, written: &str, pos: Pos, setting: &str) -> Option<String> {
        let problem = match reqwest::Url::parse(url.trim()) {
            Ok(u) if !matches!(u.scheme(), "http" | "https") => {
                Some(format!("its scheme is `{}`, not http or https", u.scheme()))
            }
            Ok(u) if u.host_str().is_none_or(str::is_empty) => Some("it has no host".to_owned()),
            Ok(_) => None,
            Err(e) => Some(e.to_string()),
        };
        let Some(problem) = problem else {
            return Some(url);
        };
        let vars: Vec<&str> = env_references(written).collect();
        let shown = if vars.is_empty() {
            format!("`{written}`")
        } else {
            format!("the value of {}", vars.join(", "))
        };
        self.diags.error(
            pos,
            format!(
                "`{setting}` of target `{}` is not a valid URL ({problem}): {shown}",
                self.target
            ),
            Some("write a URL such as `http://127.0.0.1:8080/v1` (a port is a number from 1 to 65535)".to_owned()),
        );
        None
    }

    /// A duration setting, in the unit and range its key declares; anything else is an error
    /// at its position naming the allowed range.
    pub fn duration(&mut self, name: &str) -> Option<Duration> {
        self.fields.duration(name, &mut self.diags)
    }

    pub fn boolean(&mut self, name: &str) -> Option<bool> {
        self.fields.boolean(name, &mut self.diags)
    }

    /// A number setting, within its key's range.
    pub fn number(&mut self, name: &str) -> Option<f64> {
        self.fields.number(name, &mut self.diags)
    }

    /// A whole-number setting ≥ 0, within its key's range.
    pub fn whole(&mut self, name: &str) -> Option<u64> {
        self.fields
            .integer(name, &mut self.diags)
            .and_then(|i| u64::try_from(i).ok())
    }

    /// Reads the nested object `name` (declared as [`Kind::Object`]) with `read`, then warns
    /// about its unknown keys. Inside, every reader works as at the top (same resolution, same
    /// ranges), and messages name the setting by its path (`healthcheck.timeout_seconds`).
    pub fn object<T>(&mut self, name: &str, read: impl FnOnce(&mut Self) -> T) -> Option<T> {
        let path = self.key(name);
        let table = match self.fields.key(name).map(|k| k.kind) {
            Some(Kind::Object(table)) => table,
            _ => {
                debug_assert!(false, "setting `{name}` is read as an object but not declared as one");
                return None;
            }
        };
        let node = self.fields.take(name)?;
        let what = format!("`{path}` of target `{}`", self.target);
        let mut inner = Fields::of_named(node, table, what, &mut self.diags)?;
        inner.set_prefix(format!("{path}."));
        let outer = std::mem::replace(&mut self.fields, inner);
        let value = read(self);
        self.report_unknown();
        self.fields = outer;
        Some(value)
    }

    /// Whether a variable of `setting` (or of anything inside it) is missing; lets a provider
    /// skip "needs `x`" when the real problem is an unset variable.
    pub fn is_missing(&self, setting: &str) -> bool {
        let path = self.key(setting);
        self.missing.iter().any(|m| {
            m.setting == path
                || m.setting.starts_with(&format!("{path}."))
                || m.setting.starts_with(&format!("{path}["))
        })
    }

    /// Whether any variable is missing so far.
    pub fn any_missing(&self) -> bool {
        !self.missing.is_empty()
    }

    /// A credential: required, and recorded as missing when its variable is unset.
    pub fn credential(&mut self, name: &str, example: &str, pos: Pos) -> Option<String> {
        let present = self.has(name);
        let value = self.string(name, true);
        if !present {
            self.error(
                pos,
                format!("target `{}` needs `{name}`", self.target),
                Some(format!(
                    "add `{name}: ${{{{ {example} }}}}` and set {example} in the environment or a .env file"
                )),
            );
        }
        value
    }

    /// The settings every LLM API target shares (`super::llm::LLM_KEYS`).
    pub fn llm(&mut self) -> super::llm::LlmSettings {
        let retry = self.retry();
        super::llm::LlmSettings {
            retry: retry.clone(),
            temperature: self.number("temperature"),
            max_output_tokens: self.whole("max_output_tokens"),
            timeout: self.duration("timeout_seconds"),
            secrets: self.secrets.clone(),
            throttle: std::sync::Arc::new({
                let throttle =
                    super::Throttle::new(self.number("max_rps"), self.number("max_tpm")).max_hold(retry.max_delay);
                if self.boolean("adaptive_concurrency") == Some(false) {
                    throttle.fixed()
                } else {
                    throttle
                }
            }),
            batch_poll: self.duration("batch_poll_ms"),
        }
    }

    /// The retry policy (`docs/architecture.md#retries`) from `max_retries`,
    /// `initial_delay_ms`, `max_delay_ms`, `backoff_factor` and `retryable_status_codes` (also
    /// with a `retry_` prefix).
    pub fn retry(&mut self) -> RetryPolicy {
        let mut policy = RetryPolicy::default();
        if let Some(n) = self.whole("max_retries") {
            policy.max_retries = n.min(100) as u32;
        }
        if let Some(ms) = self.duration("initial_delay_ms") {
            policy.initial_delay = ms;
        }
        if let Some(ms) = self.duration("max_delay_ms") {
            policy.max_delay = ms;
        }
        if let Some(f) = self.number("backoff_factor") {
            policy.backoff_factor = f;
        }
        if let Some(node) = self.fields.take("retryable_status_codes") {
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

    /// `text` as a path relative to the targets file's directory
    /// (`docs/architecture.md#relative-paths`).
    pub fn path(&self, text: &str) -> PathBuf {
        let path = crate::paths::normalize(&self.base_dir.join(text));
        if path.as_os_str().is_empty() {
            // `.` next to a targets file named without a directory.
            PathBuf::from(".")
        } else {
            path
        }
    }

    /// A directory setting, kept as written: a relative one resolves against the directory of
    /// the eval file the target runs for, so it is checked when a case runs; an absolute one
    /// must exist now (`docs/architecture.md#relative-paths`).
    pub fn dir(&mut self, name: &str) -> Option<TargetPath> {
        let node = self.fields.take(name);
        let pos = node.map(|n| n.pos);
        // A value with a `${{ VAR }}` in it is a secret: the error names the variables, never
        // the path.
        let vars: Vec<String> = node
            .and_then(Node::as_str)
            .map(|t| env_references(t).map(str::to_owned).collect())
            .unwrap_or_default();
        let text = self.string(name, false)?;
        let path = TargetPath::new(text.trim());
        if path.is_absolute() && !path.resolve(None).is_dir() {
            let shown = if vars.is_empty() {
                path.resolve(None).display().to_string()
            } else {
                format!("the value of {}", vars.join(", "))
            };
            self.diags.error(
                pos.unwrap_or_default(),
                format!("`{}` directory does not exist: {shown}", self.key(name)),
                Some("give an existing directory, or one relative to the eval file's directory".to_owned()),
            );
        }
        Some(path)
    }

    pub fn error(&mut self, pos: Pos, message: String, help: Option<String>) {
        self.diags.error(pos, message, help);
    }

    /// Where the problems of these settings go, for settings read by another module's reader
    /// (tool definitions).
    pub fn diagnostics(&mut self) -> &mut Diagnostics {
        &mut self.diags
    }
}

/// Reads target settings in unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use crate::load::load_targets_file;

    /// What reading one target's settings produced.
    pub(crate) struct Read<T> {
        pub(crate) value: T,
        pub(crate) diagnostics: Vec<Diagnostic>,
        pub(crate) missing: Vec<MissingVar>,
        pub(crate) secrets: Secrets,
        /// Holds the targets file (`targets.yaml`) and anything the test puts beside it.
        pub(crate) _dir: tempfile::TempDir,
    }

    /// Writes `yaml` to `targets.yaml` in a new directory (after `prepare` ran on it) and reads
    /// its first target with `read` and the keys of `keys`, with `vars` as the only `.env`
    /// variables.
    pub(crate) fn read_first<T>(
        yaml: &str,
        vars: &[(&str, &str)],
        keys: &'static KeyTable,
        prepare: impl FnOnce(&std::path::Path),
        read: impl FnOnce(&TargetDef, &mut TargetSettings<'_>) -> T,
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
        let mut s = TargetSettings::new(def, keys, &env, &secrets).expect("a mapping");
        let value = read(def, &mut s);
        let found = s.finish();
        Read {
            value,
            diagnostics: found.diagnostics,
            missing: found.missing,
            secrets,
            _dir: dir,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::read_first;
    use super::*;
    use crate::config::{DurationRange, Key};

    const KEYS: &[Key] = &[
        Key::new("top", Kind::Text, ""),
        Key::new("nested", Kind::Any, ""),
        Key::new("opt", Kind::Text, ""),
        Key::new("outer", Kind::Object(&OUTER), ""),
        Key::new("url", Kind::Url, ""),
    ];
    const OUTER_KEYS: &[Key] = &[
        Key::new("cwd", Kind::Text, ""),
        Key::new("timeout_seconds", Kind::Duration(DurationRange::TIMEOUT_SECONDS), ""),
    ];
    const OUTER: KeyTable = KeyTable::new("outer", "", &[OUTER_KEYS]);
    const TABLE: KeyTable = KeyTable::new("test", "", &[KEYS]);

    #[test]
    fn strings_resolve_at_any_depth_with_their_path_when_unset() {
        let yaml = "targets:\n  - name: t\n    provider: mock\n    top: ${{ AGENTV_T_A }}\n    nested:\n      list: [plain, '${{ AGENTV_T_A }}', '${{ AGENTV_T_UNSET }}']\n      map: {deep: '${{ AGENTV_T_UNSET2 }}'}\n";
        let read = read_first(
            yaml,
            &[("AGENTV_T_A", "value-a")],
            &TABLE,
            |_| {},
            |_, s| {
                let top = s.string("top", true);
                let nested = s.tree("nested").map(|n| n.to_json());
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
        let read = read_first(yaml, &[], &TABLE, |_| {}, |_, s| s.string("opt", false));
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
            &TABLE,
            |_| {},
            |_, s| s.object("outer", |o| (o.dir("cwd"), o.duration("timeout_seconds"))),
        );
        let (cwd, timeout) = read.value.expect("an object");
        assert_eq!(
            cwd,
            Some(TargetPath::new("subdir")),
            "kept as written, for the eval file's directory"
        );
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

    #[test]
    fn env_reference_inside_a_url_is_substituted_and_a_bad_port_is_a_configuration_error() {
        let cases = [
            (
                "http://127.0.0.1:${{ AGENTV_T_PORT }}/v1",
                "8080",
                Ok("http://127.0.0.1:8080/v1"),
            ),
            (
                "http://127.0.0.1:${{ AGENTV_T_PORT }}/v1",
                "99999",
                Err("the value of AGENTV_T_PORT"),
            ),
            (
                "http://127.0.0.1:${{ AGENTV_T_PORT }}/v1",
                "80a",
                Err("invalid port number"),
            ),
            ("localhost:8080", "1", Err("`localhost:8080`")),
            ("ftp://h/x", "1", Err("its scheme is `ftp`")),
            (
                "${{ AGENTV_T_PORT }}",
                "https://h.example/v1",
                Ok("https://h.example/v1"),
            ),
        ];
        for (written, port, want) in cases {
            let yaml = format!("targets:\n  - {{name: t, provider: mock, url: '{written}'}}\n");
            let read = read_first(
                &yaml,
                &[("AGENTV_T_PORT", port)],
                &TABLE,
                |_| {},
                |_, s| s.string("url", true),
            );
            let errors: Vec<String> = read
                .diagnostics
                .iter()
                .filter(|d| d.severity == crate::config::Severity::Error)
                .map(ToString::to_string)
                .collect();
            match want {
                Ok(url) => {
                    assert_eq!(read.value.as_deref(), Some(url), "{written}");
                    assert!(errors.is_empty(), "{errors:?}");
                    assert_eq!(read.secrets.redact(url), "***", "the whole value is a secret");
                }
                Err(text) => {
                    assert_eq!(read.value, None, "{written} with {port}");
                    assert_eq!(errors.len(), 1, "{errors:?}");
                    assert!(
                        errors[0].contains("`url` of target `t` is not a valid URL"),
                        "{}",
                        errors[0]
                    );
                    assert!(errors[0].contains(text), "{}", errors[0]);
                    if written.contains("${{") {
                        assert!(!errors[0].contains(port), "the value is never shown: {}", errors[0]);
                    }
                }
            }
        }
    }
}
