//! Every form a secret can take in agentv's output.
//!
//! A value rarely leaves the run as written: results and caches hold it JSON-escaped (once, or
//! twice when a JSON document travels inside a JSON string, as echoed requests do), URLs hold it
//! percent-encoded, command lines hold it shell-quoted, and other programs' JSON (an agent's
//! stream) may escape every non-ASCII character. Redacting only the raw text lets a secret with
//! a `"`, a `\` or a space through. These forms are computed once, when a secret is registered.

/// The distinct forms of `secret` to search for, longest first.
pub(super) fn forms(secret: &str) -> Vec<String> {
    // First how the value is written into a command line or a URL, then how that text is
    // quoted in JSON (a URL in an echoed prompt, inside a result).
    let bases = shell_forms(secret);
    let mut written: Vec<String> = Vec::new();
    for base in bases.iter().cloned() {
        for set in URL_SETS {
            written.push(percent_encode(&base, set, Hex::Upper));
            written.push(percent_encode(&base, set, Hex::Lower));
        }
        if base.contains('/') {
            written.push(json_escape(&base, false, false).replace('/', r"\/"));
        }
        // Rust's `{:?}`: like JSON, but `\u{1}` for control characters.
        let debug = format!("{base:?}");
        written.push(debug[1..debug.len() - 1].to_owned());
        written.push(base);
    }
    // UTF-8 read back as Latin-1 or Windows-1252 (a tool that guessed the encoding wrong).
    if !secret.is_ascii() {
        written.extend(mojibake(secret));
    }
    written.sort();
    written.dedup();
    let mut out: Vec<String> = Vec::new();
    for form in written {
        if needs_json_escape(&form) {
            let depth = if bases.contains(&form) {
                JSON_DEPTH
            } else {
                URL_JSON_DEPTH
            };
            out.extend(json_layers(&form, depth));
        }
        out.push(form);
    }
    out.extend(base64_forms(secret.as_bytes()));
    out.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    out.dedup();
    out
}

/// The secret as written, and as it appears inside a shell command line: quoted whole by
/// `shlex`, inside single quotes (`'` → `'\''`), and inside double quotes (`\` before
/// `$`, `` ` ``, `"` and `\`).
fn shell_forms(secret: &str) -> Vec<String> {
    let mut bases = vec![secret.to_owned()];
    let mut push = |s: String| {
        if !bases.contains(&s) {
            bases.push(s);
        }
    };
    push(secret.replace('\'', r"'\''"));
    let mut double = String::with_capacity(secret.len());
    for c in secret.chars() {
        if matches!(c, '$' | '`' | '"' | '\\') {
            double.push('\\');
        }
        double.push(c);
    }
    push(double);
    // Without the outer quotes: a form must never swallow delimiters around the secret (the
    // quotes of a JSON string, say), or redacting would break the text around it.
    if let Ok(quoted) = shlex::try_quote(secret) {
        let inner = quoted
            .strip_prefix(['\'', '"'])
            .and_then(|q| q.strip_suffix(['\'', '"']))
            .unwrap_or(&quoted);
        push(inner.to_owned());
    }
    bases
}

/// How many JSON string encodings deep a secret is still found: an answer that echoes a
/// request body is a JSON string holding JSON, stored in a JSON result, and an LLM judge's
/// request quotes that answer again.
const JSON_DEPTH: usize = 5;
/// The same for a URL or a command line holding the secret: quoted in a prompt that an answer
/// echoes, inside a result.
const URL_JSON_DEPTH: usize = 5;

/// `text` JSON-escaped 1 to `depth` times, each time as serde_json writes it or with
/// non-ASCII characters escaped (lower- or upper-case hex).
fn json_layers(text: &str, depth: usize) -> Vec<String> {
    let mut layer = vec![text.to_owned()];
    let mut all = Vec::new();
    for _ in 0..depth {
        let mut next: Vec<String> = Vec::new();
        for t in &layer {
            for (ascii, upper) in [(false, false), (true, false), (true, true)] {
                let encoded = json_escape(t, ascii, upper);
                if !next.contains(&encoded) {
                    next.push(encoded);
                }
            }
        }
        all.extend(next.iter().cloned());
        layer = next;
    }
    all
}

/// True when JSON would write `text` differently (some encoder escapes one of its characters).
fn needs_json_escape(text: &str) -> bool {
    text.chars()
        .any(|c| c == '"' || c == '\\' || (c as u32) < 0x20 || !c.is_ascii())
}

/// The secret's UTF-8 bytes decoded as Latin-1 (each byte one character) and as Windows-1252
/// (which differs in 0x80–0x9F; its five undefined bytes keep their Latin-1 character, as the
/// WHATWG decoder does).
fn mojibake(secret: &str) -> Vec<String> {
    const CP1252: [char; 32] = [
        '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž', '\u{8f}', '\u{90}', '‘',
        '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}', 'ž', 'Ÿ',
    ];
    let latin1: String = secret.bytes().map(char::from).collect();
    let cp1252: String = secret
        .bytes()
        .map(|b| match b {
            0x80..=0x9f => CP1252[usize::from(b - 0x80)],
            _ => char::from(b),
        })
        .collect();
    vec![latin1, cp1252]
}

/// JSON string contents (without the quotes). `ascii` escapes every non-ASCII character as
/// `\uXXXX` (Python's `json.dumps`, Java), with `upper` hex digits or lower.
fn json_escape(text: &str, ascii: bool, upper: bool) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ascii && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    if upper {
                        out.push_str(&format!("\\u{unit:04X}"));
                    } else {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[derive(Clone, Copy)]
enum Hex {
    Upper,
    Lower,
}

/// A percent-encoding: the ASCII characters left as they are, and whether a space is `+`.
struct UrlSet {
    keep: &'static str,
    /// Also keep every printable ASCII character except these (the WHATWG URL parser's sets).
    keep_printable_except: Option<&'static str>,
    plus: bool,
    /// Leave non-ASCII characters as they are (agentv's own `file://` links).
    keep_non_ascii: bool,
}

/// RFC 3986 components (`%20`), HTML forms (`+`), JavaScript's `encodeURIComponent`, Python's
/// `quote` (keeps `/`), and what a URL parser leaves in a path, a query and a `file://` link.
const URL_SETS: &[UrlSet] = &[
    UrlSet {
        keep: "-._~",
        keep_printable_except: None,
        plus: false,
        keep_non_ascii: false,
    },
    UrlSet {
        keep: "-._~",
        keep_printable_except: None,
        plus: true,
        keep_non_ascii: false,
    },
    UrlSet {
        keep: "*-._",
        keep_printable_except: None,
        plus: true,
        keep_non_ascii: false,
    },
    UrlSet {
        keep: "-_.!~*'()",
        keep_printable_except: None,
        plus: false,
        keep_non_ascii: false,
    },
    UrlSet {
        keep: "-._~/",
        keep_printable_except: None,
        plus: false,
        keep_non_ascii: false,
    },
    UrlSet {
        keep: "",
        keep_printable_except: Some(" \"#<>?`{}"),
        plus: false,
        keep_non_ascii: false,
    },
    UrlSet {
        keep: "",
        keep_printable_except: Some(" \"#<>'"),
        plus: false,
        keep_non_ascii: false,
    },
    UrlSet {
        keep: "",
        keep_printable_except: Some(" #?%"),
        plus: false,
        keep_non_ascii: true,
    },
    // A `file://` URL of a path (`url::Url::from_file_path`, what agentv's prompt documents
    // link to): the path set plus `%` and `\`.
    UrlSet {
        keep: "",
        keep_printable_except: Some(" \"#<>?`{}%\\"),
        plus: false,
        keep_non_ascii: false,
    },
];

fn percent_encode(text: &str, set: &UrlSet, hex: Hex) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for c in text.chars() {
        let printable = c == ' ' || ('!'..='~').contains(&c);
        let keep = (c.is_ascii_alphanumeric() || set.keep.contains(c))
            || set
                .keep_printable_except
                .is_some_and(|except| printable && !except.contains(c))
            || (set.keep_non_ascii && !c.is_ascii());
        if keep {
            out.push(c);
        } else if c == ' ' && set.plus {
            out.push('+');
        } else {
            let mut utf8 = [0u8; 4];
            for b in c.encode_utf8(&mut utf8).bytes() {
                match hex {
                    Hex::Upper => out.push_str(&format!("%{b:02X}")),
                    Hex::Lower => out.push_str(&format!("%{b:02x}")),
                }
            }
        }
    }
    out
}

/// Base64 (standard and URL-safe alphabets) of the secret, as it starts an encoded text: the
/// characters fixed by its whole 3-byte groups, or the whole unpadded encoding when that is
/// too short to be specific.
fn base64_forms(bytes: &[u8]) -> Vec<String> {
    const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let whole = bytes.len() / 3 * 3;
    let input = if whole * 4 / 3 >= 8 { &bytes[..whole] } else { bytes };
    [STANDARD, URL_SAFE]
        .iter()
        .map(|alphabet| base64(input, alphabet))
        .collect()
}

/// `bytes` in unpadded base64url (RFC 4648 §5), as JWTs write their parts.
pub fn base64_url(bytes: &[u8]) -> String {
    base64(
        bytes,
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
    )
}

fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_forms_match_serde_json() {
        for secret in ["pa\"ss", "back\\slash", "tab\there", "ctl\u{1}x", "naïve ☃ 😀"] {
            let encoded = serde_json::to_string(secret).expect("json");
            let inner = &encoded[1..encoded.len() - 1];
            assert!(forms(secret).iter().any(|f| f == inner), "{secret}: {inner}");
            let twice = serde_json::to_string(&encoded).expect("json");
            assert!(
                forms(secret).iter().any(|f| twice.contains(f.as_str())),
                "{secret}: {twice}"
            );
        }
    }

    #[test]
    fn nested_json_is_found_four_levels_deep() {
        let secret = "k\"e\\y é";
        let mut text = secret.to_owned();
        for _ in 0..4 {
            let encoded = serde_json::to_string(&text).expect("json");
            text = encoded[1..encoded.len() - 1].to_owned();
        }
        assert!(forms(secret).contains(&text), "{text}");
    }

    #[test]
    fn a_file_link_quoted_in_json_is_found() {
        let secret = "root \"dq\" \\bs é";
        let link = "root%20\"dq\"%20\\bs%20é";
        let quoted = serde_json::to_string(link).expect("json");
        assert!(forms(secret).contains(&quoted[1..quoted.len() - 1].to_owned()));
    }

    #[test]
    fn a_file_url_of_a_secret_path_is_found() {
        // A secret directory such as `subagent_root`, with a `/` inside.
        let secret = ".agentv/root \"dq\" \\bs 'sq' é";
        let url = url::Url::from_file_path(format!("/tmp/{secret}/response.md")).expect("absolute");
        let link = url.as_str();
        assert!(
            forms(secret).iter().any(|f| link.contains(f.as_str())),
            "{link} holds no form of the secret"
        );
    }

    #[test]
    fn utf8_read_as_latin1_or_windows_1252_is_found() {
        let secret = "påss—wörd";
        let latin1: String = secret.bytes().map(char::from).collect();
        let all = forms(secret);
        assert!(all.contains(&latin1), "{all:?}");
        // As a JSON encoder that escapes non-ASCII writes it: `\u00c3\u00a5`.
        let escaped = json_escape(&latin1, true, false);
        assert!(escaped.contains("\\u00c3\\u00a5"), "{escaped}");
        assert!(all.contains(&escaped), "{escaped}");
        // `—` is E2 80 94: 0x80 and 0x94 are `€` and `”` in Windows-1252.
        assert!(all.iter().any(|f| f.contains("â€”")), "{all:?}");
    }

    #[test]
    fn forms_stay_few() {
        let n = forms("ZQ \"dq\" \\bs 'sq' é ☃ &a=b/c+d").len();
        assert!(n < 500, "{n} forms");
    }

    #[test]
    fn ascii_json_escapes_non_ascii_like_python() {
        let all = forms("naïve 😀");
        assert!(all.contains(&r"na\u00efve \ud83d\ude00".to_owned()), "{all:?}");
        assert!(all.contains(&r"na\u00EFve \uD83D\uDE00".to_owned()), "{all:?}");
    }

    #[test]
    fn url_forms_cover_components_forms_and_parsers() {
        let all = forms("a b/\"c\"é");
        for want in [
            "a%20b%2F%22c%22%C3%A9",
            "a+b%2F%22c%22%C3%A9",
            "a%20b/%22c%22%C3%A9",
            "a%20b%2f%22c%22%c3%a9",
        ] {
            assert!(all.contains(&want.to_owned()), "{want} not in {all:?}");
        }
    }

    #[test]
    fn shell_forms_cover_single_and_double_quoting() {
        let all = forms("it's");
        assert!(all.contains(&r"it'\''s".to_owned()), "{all:?}");
        assert!(all.iter().all(|f| !f.starts_with('"')), "{all:?}");
        let all = forms("p\\\"q");
        assert!(all.contains(&"p\\\\\\\"q".to_owned()), "{all:?}");
    }

    #[test]
    fn base64_matches_a_reference_encoding() {
        assert_eq!(base64(b"secret-value", STANDARD_FOR_TEST), "c2VjcmV0LXZhbHVl");
        assert_eq!(base64(b"ab", STANDARD_FOR_TEST), "YWI");
        let all = forms("secret-value!");
        assert!(all.contains(&"c2VjcmV0LXZhbHVl".to_owned()), "{all:?}");
    }

    const STANDARD_FOR_TEST: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}
