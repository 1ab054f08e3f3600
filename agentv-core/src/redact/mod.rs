//! The one redaction layer (`docs/architecture.md#secrets`): every output of a run — results,
//! prompt dumps, agent stream logs, the response cache, the console and logs — passes through
//! [`Secrets`], directly ([`Secrets::redact`]) or through a [`RedactingWriter`] and the file
//! helpers built on it.
//!
//! Values resolved from `${{ VAR }}` are registered here as they are resolved. Each is searched
//! for in every form it can take in output (see `forms`), all at once with one Aho-Corasick
//! automaton built when a secret is added, so redacting a result line costs one pass over it.

mod forms;
mod writer;

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, LazyLock, OnceLock, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;
use secrecy::{ExposeSecret, SecretString};

pub use forms::base64_url;
pub use writer::{RedactingWriter, SharedFile, StreamLog, write_file, write_json_atomic, write_json_file};

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// Placeholders of command templates (`{PROMPT}`) and file formats (`{path}`).
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\{[A-Za-z_]+\}").expect("static regex"));

/// A value that must not be printed: `Debug` and `Display` show `***`. Read it with
/// [`Secret::expose`] where it is really used (a request header, a command line).
#[derive(Clone, Default)]
pub struct Secret(SecretString);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(SecretString::from(value.into()))
    }

    /// The value itself.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

/// The secrets of a run, shared by every output: clones see values added later (targets
/// resolved during the run register theirs too).
#[derive(Clone, Default)]
pub struct Secrets {
    matcher: Arc<RwLock<Arc<Matcher>>>,
}

/// The registered values; the automaton that finds all their forms is built on first use, so
/// registering the values of many settings one by one costs one build, not one per value.
#[derive(Default)]
struct Matcher {
    values: Vec<Secret>,
    compiled: OnceLock<Compiled>,
}

struct Compiled {
    searcher: Option<AhoCorasick>,
    /// Length in bytes of the longest form: how much a stream must hold back.
    longest: usize,
    /// Some form contains a line break, so a match may span lines.
    multiline: bool,
}

impl Matcher {
    fn new(values: Vec<Secret>) -> Self {
        Self {
            values,
            compiled: OnceLock::new(),
        }
    }

    fn compiled(&self) -> &Compiled {
        self.compiled.get_or_init(|| {
            let mut patterns: Vec<String> = self.values.iter().flat_map(|v| forms::forms(v.expose())).collect();
            patterns.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
            patterns.dedup();
            let searcher = (!patterns.is_empty())
                .then(|| {
                    AhoCorasick::builder()
                        .match_kind(MatchKind::LeftmostLongest)
                        .build(&patterns)
                        .ok()
                })
                .flatten();
            Compiled {
                longest: patterns.first().map_or(0, String::len),
                multiline: patterns.iter().any(|p| p.contains('\n') || p.contains('\r')),
                searcher,
            }
        })
    }
}

/// Where the JSON string starting with the quote at `start` ends (after its closing quote; the
/// end of `json` when it is not closed). Bytes of multi-byte UTF-8 characters are never `"` or
/// `\`, so a byte scan is exact.
fn string_end(json: &[u8], start: usize) -> usize {
    let mut j = start + 1;
    while j < json.len() {
        match json[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    json.len()
}

/// The path and query of an `http(s)://` URL, when long enough to redact.
fn url_path(value: &str) -> Option<&str> {
    let lower = value.get(..8)?.to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &value[8..]
    } else if lower.starts_with("http://") {
        &value[7..]
    } else {
        return None;
    };
    let path = rest[rest.find('/')?..].trim_end_matches('/');
    // Longer than the bare `/` and at least `MIN_CHARS` after it.
    (path.chars().count() > Secrets::MIN_CHARS).then_some(path)
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} values)", self.snapshot().values.len())
    }
}

impl Secrets {
    /// Values shorter than this (in characters) are not redacted: masking every `abc` would
    /// garble output and still give the value away by where the masks are.
    pub const MIN_CHARS: usize = 4;

    /// Registers `value`. Returns `false` when it is too short to be redacted (the caller warns,
    /// naming the variable).
    pub fn add(&self, value: &str) -> bool {
        if value.chars().count() < Self::MIN_CHARS {
            return false;
        }
        let Ok(mut current) = self.matcher.write() else {
            return true;
        };
        if current.values.iter().any(|v| v.expose() == value) {
            return true;
        }
        let mut values = current.values.clone();
        values.push(Secret::new(value));
        // Servers echo a request's path without the host (`404 /<token>/chat/completions`).
        if let Some(path) = url_path(value)
            && !values.iter().any(|v| v.expose() == path)
        {
            values.push(Secret::new(path));
        }
        *current = Arc::new(Matcher::new(values));
        true
    }

    /// A command template that is itself a secret never appears whole: its placeholders are
    /// filled in. Its literal parts (long enough to redact) are registered too, so a rendered
    /// command line shown in results or errors gives nothing away.
    pub fn add_template_parts(&self, template: &str) {
        if !self.contains(template) {
            return;
        }
        for part in PLACEHOLDER.split(template) {
            let part = part.trim();
            if part != template && part.chars().count() >= Self::MIN_CHARS {
                self.add(part);
            }
        }
    }

    /// True when `value` is registered.
    pub fn contains(&self, value: &str) -> bool {
        self.snapshot().values.iter().any(|v| v.expose() == value)
    }

    /// True when no value is registered.
    pub fn is_empty(&self) -> bool {
        self.snapshot().values.is_empty()
    }

    fn snapshot(&self) -> Arc<Matcher> {
        // A poisoned lock still holds a consistent matcher (it is replaced whole).
        match self.matcher.read() {
            Ok(m) => m.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// `text` with every form of every secret replaced by `***`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Forms are whole UTF-8 sequences, so replacing them keeps the text valid.
            Cow::Owned(bytes) => Cow::Owned(
                String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
        }
    }

    /// `json`, a serialized JSON text, with every secret replaced inside its strings (keys and
    /// values) and nowhere else: a secret that is also a JSON word (`false`, `1234`) must not
    /// turn `"error_detected":false` into `"error_detected":***`. Each string that holds a form
    /// of a secret is decoded, redacted like any text, and encoded again, so the output is
    /// always valid JSON when the input is. Borrowed when nothing needed replacing.
    pub fn redact_json<'a>(&self, json: &'a [u8]) -> Cow<'a, [u8]> {
        let matcher = self.snapshot();
        let Some(searcher) = &matcher.compiled().searcher else {
            return Cow::Borrowed(json);
        };
        if searcher.find(json).is_none() {
            return Cow::Borrowed(json);
        }
        let mut out: Option<Vec<u8>> = None;
        let mut copied = 0;
        let mut i = 0;
        while let Some(offset) = json[i..].iter().position(|&b| b == b'"') {
            let start = i + offset;
            let end = string_end(json, start);
            let token = &json[start..end];
            if searcher.find(token).is_some()
                && let Some(clean) = self.redact_json_string(token)
            {
                let buf = out.get_or_insert_with(|| Vec::with_capacity(json.len()));
                buf.extend_from_slice(&json[copied..start]);
                buf.extend_from_slice(&clean);
                copied = end;
            }
            i = end;
        }
        match out {
            None => Cow::Borrowed(json),
            Some(mut buf) => {
                buf.extend_from_slice(&json[copied..]);
                Cow::Owned(buf)
            }
        }
    }

    /// A JSON string token (quotes included) redacted, or `None` when its text holds no secret
    /// (the match was only in its escaping). A token that does not decode is masked whole.
    fn redact_json_string(&self, token: &[u8]) -> Option<Vec<u8>> {
        let Ok(text) = serde_json::from_slice::<String>(token) else {
            return Some(format!("\"{MASK}\"").into_bytes());
        };
        match self.redact(&text) {
            Cow::Borrowed(_) => None,
            Cow::Owned(clean) => serde_json::to_vec(&clean).ok(),
        }
    }

    /// [`Secrets::redact`] on bytes (output that need not be UTF-8, such as an agent's stream).
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let matcher = self.snapshot();
        let Some(searcher) = &matcher.compiled().searcher else {
            return Cow::Borrowed(bytes);
        };
        let mut out: Option<Vec<u8>> = None;
        let mut last = 0;
        for m in searcher.find_iter(bytes) {
            let buf = out.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
            buf.extend_from_slice(&bytes[last..m.start()]);
            buf.extend_from_slice(MASK.as_bytes());
            last = m.end();
        }
        match out {
            None => Cow::Borrowed(bytes),
            Some(mut buf) => {
                buf.extend_from_slice(&bytes[last..]);
                Cow::Owned(buf)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_debug_and_display_print_stars() {
        let s = Secret::new("sk-live-1234");
        assert_eq!(format!("{s:?} {s}"), "*** ***");
        assert_eq!(s.expose(), "sk-live-1234");
        let secrets = Secrets::default();
        secrets.add("sk-live-1234");
        let shown = format!("{secrets:?}");
        assert!(!shown.contains("sk-live"), "{shown}");
    }

    #[test]
    fn redact_replaces_every_secret_longest_first() {
        let s = Secrets::default();
        assert!(s.add("sk-secret-123"));
        assert!(s.add("secret"));
        assert!(!s.add("abc"), "too short to redact");
        assert_eq!(s.redact("key sk-secret-123, secret and abc"), "key ***, *** and abc");
        assert!(matches!(s.redact("nothing here"), Cow::Borrowed(_)));
    }

    /// Each row: a secret, and an output text holding it in some encoding.
    #[test]
    fn secrets_with_quotes_and_backslashes_are_redacted_in_every_encoding() {
        let cases: &[(&str, String)] = &[
            ("pa\"ss word", serde_json::json!({"k": "x pa\"ss word y"}).to_string()),
            ("back\\slash", serde_json::json!({"k": "back\\slash"}).to_string()),
            (
                "pa\"ss word",
                serde_json::json!({"raw": serde_json::json!({"k": "pa\"ss word"}).to_string()}).to_string(),
            ),
            ("a b&c=d/é", "GET /q?x=a%20b%26c%3Dd%2F%C3%A9 HTTP/1.1".to_owned()),
            ("a b&c=d/é", "form: x=a+b%26c%3Dd%2F%C3%A9".to_owned()),
            ("naïve ☃ key", r#"{"echo": "na\u00efve \u2603 key"}"#.to_owned()),
            ("it's mine", r"sh -c 'run --token it'\''s mine'".to_owned()),
            (
                "dir \"x\"",
                r#"["sh","-c","cp '/tmp/dir \"x\"/prompt.md' out"]"#.to_owned(),
            ),
            ("multi\nline secret", "start multi\nline secret end".to_owned()),
            ("multi\nline secret", r#"{"k":"multi\nline secret"}"#.to_owned()),
        ];
        for (secret, text) in cases {
            let s = Secrets::default();
            s.add(secret);
            let out = s.redact(text);
            assert!(out.contains(MASK), "{secret:?} not found in {text}");
            for form in forms::forms(secret) {
                assert!(!out.contains(&form), "{form:?} left in {out}");
            }
        }
    }

    #[test]
    fn literal_parts_of_a_secret_template_are_redacted_once_rendered() {
        let s = Secrets::default();
        let template = "my-agent --token tok-123 {PROMPT} > {OUTPUT_FILE}";
        s.add_template_parts(template);
        assert_eq!(
            s.redact("my-agent --token tok-123 'q' > /tmp/o"),
            "my-agent --token tok-123 'q' > /tmp/o"
        );
        s.add(template);
        s.add_template_parts(template);
        assert_eq!(s.redact("my-agent --token tok-123 'q' > /tmp/o"), "*** 'q' > /tmp/o");
    }

    #[test]
    fn redacting_a_json_string_keeps_the_json_valid() {
        let s = Secrets::default();
        let secret = "{\"score\": 1, \"reasoning\": \"sec \\bs é\"}";
        s.add(secret);
        let line = serde_json::json!({"answer": secret, "n": 1}).to_string();
        let out = s.redact(&line);
        let parsed: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
        assert_eq!(parsed["answer"], MASK);
    }

    /// Each row: a secret that is also a JSON word or number, and a record holding it.
    #[test]
    fn redacting_json_touches_only_strings_and_keeps_it_valid() {
        let cases: &[(&str, serde_json::Value)] = &[
            (
                "false",
                serde_json::json!({"candidate_answer": "false", "error_detected": false, "n": "it is false"}),
            ),
            (
                "1234",
                serde_json::json!({"duration_ms": 1234, "cost_usd": 0.1234, "text": "pin 1234", "esc": "\u{1234}"}),
            ),
            ("null", serde_json::json!({"a": null, "b": "null", "c": ["x", null]})),
            ("true\"q", serde_json::json!({"a": true, "b": "true\"q", "true\"q": 1})),
            ("multi\nline", serde_json::json!({"a": "x multi\nline y", "b": 2})),
        ];
        for (secret, value) in cases {
            let s = Secrets::default();
            s.add(secret);
            for text in [value.to_string(), serde_json::to_string_pretty(value).expect("json")] {
                let out = s.redact_json(text.as_bytes());
                let parsed: serde_json::Value = serde_json::from_slice(&out)
                    .unwrap_or_else(|e| panic!("{secret:?}: {e}: {}", String::from_utf8_lossy(&out)));
                let strings = walk_strings(&parsed);
                assert!(
                    strings.iter().all(|t| !t.contains(secret)),
                    "{secret:?} left in {parsed}"
                );
                assert!(
                    strings.iter().any(|t| t.contains(MASK)),
                    "{secret:?} masked in {parsed}"
                );
            }
        }
        let s = Secrets::default();
        s.add("false");
        let line = serde_json::json!({"answer": "false", "ok": false}).to_string();
        assert_eq!(&*s.redact_json(line.as_bytes()), br#"{"answer":"***","ok":false}"#);
        assert!(matches!(s.redact_json(br#"{"ok":false}"#), Cow::Borrowed(_)));
        // A form found only in a string's escaping is not the secret.
        s.add("1234");
        let escaped = br#"{"esc":"\u1234","n":1234}"#;
        assert_eq!(&*s.redact_json(escaped), escaped);
    }

    /// Every string (keys and values) in `value`.
    fn walk_strings(value: &serde_json::Value) -> Vec<String> {
        match value {
            serde_json::Value::String(t) => vec![t.clone()],
            serde_json::Value::Array(items) => items.iter().flat_map(walk_strings).collect(),
            serde_json::Value::Object(map) => map
                .iter()
                .flat_map(|(k, v)| std::iter::once(k.clone()).chain(walk_strings(v)))
                .collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn a_secret_url_path_is_redacted_without_its_host() {
        let s = Secrets::default();
        s.add("https://gateway.example/acct-123 x/openai");
        assert_eq!(
            s.redact("404 Not Found: POST /acct-123%20x/openai/chat/completions"),
            "404 Not Found: POST ***/chat/completions"
        );
        s.add("http://127.0.0.1:8080/v1");
        assert_eq!(
            s.redact("GET /v1/models"),
            "GET /v1/models",
            "too short to redact alone"
        );
    }

    #[test]
    fn values_added_later_are_seen_by_clones() {
        let s = Secrets::default();
        let clone = s.clone();
        s.add("late-secret");
        assert_eq!(clone.redact("a late-secret"), "a ***");
    }
}
