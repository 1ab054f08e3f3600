//! JavaScript regular expressions (`new RegExp(pattern, flags)`, reference §2.4) on
//! `fancy-regex`, which has what JavaScript patterns use and the `regex` crate lacks
//! (lookbehind, lookahead, backreferences, named groups `(?<n>…)` with `\k<n>`).
//!
//! The pattern is translated where the two dialects read the same text differently:
//!
//! - `\d`, `\w` (and `\D`, `\W` outside classes) are ASCII, as in JavaScript;
//! - `\s`/`\S` are JavaScript's white space (with U+FEFF, without U+0085);
//! - `.` does not match `\r`, U+2028, U+2029 either, unless the `s` flag is set;
//! - `[^]` matches any character and `[]` nothing; `[` inside a class and `]` outside one are
//!   literal; `&` and `~` inside a class are literal (Rust reads `&&`/`~~` as set operations);
//! - identity escapes of letters (`\z`, `\A`, `\e`) are the letters; `\cX` is a control
//!   character, `\0` NUL, `\uXXXX` (surrogate pairs joined) and `\u{X}` code points.
//!
//! Flags: `i`, `m` (lines end at `\n`, `\r` and `\r\n`), `s`, `u`/`v` (patterns are Unicode
//! already) map to inline flags; `g` and `d` change nothing for a single test; `y` (sticky)
//! anchors the match at the start, as a fresh sticky `test` does. Anything else is an invalid
//! flag, as in JavaScript.
//!
//! What still differs from JavaScript: `\b`/`\B` use Unicode word characters (JavaScript:
//! ASCII), `\D`/`\W` inside a class are Unicode, `m` does not end lines at U+2028/U+2029,
//! case-insensitive matching uses Unicode simple case folding, lone surrogates `\uD800` never
//! match (Rust strings cannot hold them), and a pattern may be rejected by one engine and
//! accepted by the other in corners (`fancy-regex` limits lookbehind to bounded lengths).

use fancy_regex::Regex;

const WORD: &str = "A-Za-z0-9_";
const SPACE: &str = r"\t\n\x0B\x0C\r \xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
const NOT_LINE_END: &str = r"[^\n\r\x{2028}\x{2029}]";

/// Compiles `pattern` with JavaScript `flags`; the error says what is wrong, in words fit
/// for a diagnostic.
pub fn compile(pattern: &str, flags: &str) -> Result<Regex, String> {
    let flags = Flags::parse(flags)?;
    let body = translate(pattern, flags.dot_all);
    let mut full = String::new();
    for (on, flag) in [(flags.ignore_case, "i"), (flags.multiline, "mR"), (flags.dot_all, "s")] {
        if on {
            full.push_str(&format!("(?{flag})"));
        }
    }
    if flags.sticky {
        full.push_str(&format!(r"\A(?:{body})"));
    } else {
        full.push_str(&body);
    }
    Regex::new(&full).map_err(|e| {
        // Positions count in the translated pattern, not the one written: leave them out.
        let text = e.to_string();
        match text
            .strip_prefix("Parsing error at position ")
            .and_then(|rest| rest.split_once(": "))
        {
            Some((_, reason)) => reason.to_owned(),
            None => text,
        }
    })
}

#[derive(Debug, Default, Clone, Copy)]
struct Flags {
    ignore_case: bool,
    multiline: bool,
    dot_all: bool,
    sticky: bool,
}

impl Flags {
    fn parse(flags: &str) -> Result<Self, String> {
        let mut out = Self::default();
        let mut seen = String::new();
        for c in flags.chars() {
            if seen.contains(c) {
                return Err(format!("the flag `{c}` is given twice"));
            }
            seen.push(c);
            match c {
                'i' => out.ignore_case = true,
                'm' => out.multiline = true,
                's' => out.dot_all = true,
                'y' => out.sticky = true,
                'g' | 'd' | 'u' | 'v' => {}
                other => {
                    return Err(format!(
                        "`{other}` is not a JavaScript regex flag (use d, g, i, m, s, u, v or y)"
                    ));
                }
            }
        }
        if seen.contains('u') && seen.contains('v') {
            return Err("the flags `u` and `v` cannot be combined".to_owned());
        }
        Ok(out)
    }
}

/// Rewrites a JavaScript pattern into `fancy-regex` syntax (see the module doc).
fn translate(pattern: &str, dot_all: bool) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => i = escape(&chars, i, in_class, &mut out),
            '[' if !in_class => {
                if chars.get(i + 1) == Some(&']') {
                    out.push_str("(?!)");
                    i += 2;
                    continue;
                }
                if chars.get(i + 1) == Some(&'^') && chars.get(i + 2) == Some(&']') {
                    out.push_str(r"(?s:.)");
                    i += 3;
                    continue;
                }
                in_class = true;
                out.push('[');
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                // A `]` right after the opening is a literal in Rust, the end in JavaScript,
                // but `[]`/`[^]` were handled above.
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            ']' => out.push_str(r"\]"),
            '[' | '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            '.' if !in_class && !dot_all => out.push_str(NOT_LINE_END),
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// Writes the escape starting at `chars[i]` (a backslash); returns the index of its last
/// character.
fn escape(chars: &[char], i: usize, in_class: bool, out: &mut String) -> usize {
    let Some(&c) = chars.get(i + 1) else {
        // A trailing backslash: invalid in JavaScript too; let the engine say so.
        out.push('\\');
        return i;
    };
    let class = |inner: &str, negated: bool| match (in_class, negated) {
        (true, false) => inner.to_owned(),
        (false, false) => format!("[{inner}]"),
        (false, true) => format!("[^{inner}]"),
        // A negated shorthand inside a class cannot be spliced in; keep the engine's.
        (true, true) => String::new(),
    };
    let ascii = |s: &str, negated: bool, fallback: &str| {
        let text = class(s, negated);
        if text.is_empty() { fallback.to_owned() } else { text }
    };
    match c {
        'd' => out.push_str(&ascii("0-9", false, "")),
        'D' => out.push_str(&ascii("0-9", true, r"\D")),
        'w' => out.push_str(&ascii(WORD, false, "")),
        'W' => out.push_str(&ascii(WORD, true, r"\W")),
        's' => out.push_str(&ascii(SPACE, false, "")),
        'S' => out.push_str(&ascii(SPACE, true, r"\S")),
        'c' => match chars.get(i + 2) {
            Some(l) if l.is_ascii_alphabetic() => {
                out.push_str(&format!(r"\x{{{:X}}}", u32::from(*l) % 32));
                return i + 2;
            }
            _ => out.push_str(r"\\c"),
        },
        '0' if !chars.get(i + 2).is_some_and(char::is_ascii_digit) => out.push_str(r"\x{0}"),
        'u' => return unicode_escape(chars, i, in_class, out),
        // Escapes both dialects read alike: classes of characters, anchors, backreferences,
        // control characters, properties.
        'b' | 'B' | 't' | 'n' | 'r' | 'v' | 'f' | 'x' | 'k' | 'p' | 'P' | '1'..='9' | '0' => {
            out.push('\\');
            out.push(c);
        }
        // Any other letter is itself in JavaScript (`\z` is "z", not the end of the text).
        l if l.is_alphabetic() => out.push(l),
        // Punctuation, escaped or not, is the character.
        p => {
            out.push('\\');
            out.push(p);
        }
    }
    i + 1
}

/// `\uXXXX` (a surrogate pair written as two escapes is one character) or `\u{X…}`.
fn unicode_escape(chars: &[char], i: usize, in_class: bool, out: &mut String) -> usize {
    let hex = |from: usize, len: usize| -> Option<u32> {
        let s: String = chars.get(from..from + len)?.iter().collect();
        if s.chars().all(|c| c.is_ascii_hexdigit()) {
            u32::from_str_radix(&s, 16).ok()
        } else {
            None
        }
    };
    if chars.get(i + 2) == Some(&'{')
        && let Some(close) = chars[i + 3..].iter().position(|c| *c == '}')
        && let Some(cp) = hex(i + 3, close)
    {
        push_code_point(cp, in_class, out);
        return i + 3 + close;
    }
    let Some(unit) = hex(i + 2, 4) else {
        out.push('u');
        return i + 1;
    };
    if (0xD800..0xDC00).contains(&unit)
        && chars.get(i + 6) == Some(&'\\')
        && chars.get(i + 7) == Some(&'u')
        && let Some(low) = hex(i + 8, 4)
        && (0xDC00..0xE000).contains(&low)
    {
        push_code_point(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00), in_class, out);
        return i + 11;
    }
    push_code_point(unit, in_class, out);
    i + 5
}

fn push_code_point(cp: u32, in_class: bool, out: &mut String) {
    if char::from_u32(cp).is_some() {
        out.push_str(&format!(r"\x{{{cp:X}}}"));
    } else if !in_class {
        // A lone surrogate: no Rust string holds one, so it never matches.
        out.push_str("(?!)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn javascript_patterns_match_as_in_javascript() {
        // (pattern, flags, text, JavaScript's `test`)
        let cases = [
            (r"\bParis\b", "", "The capital is Paris.", true),
            ("^Paris", "", "The capital is Paris.", false),
            ("^the CAPITAL", "i", "The capital of France", true),
            ("^SECOND", "m", "first\nSECOND\nthird", true),
            ("^SECOND", "", "first\nSECOND\nthird", false),
            ("first.*third", "s", "first\nSECOND\nthird", true),
            ("first.*third", "", "first\nSECOND\nthird", false),
            ("a.b", "", "a\rb", false),
            ("a$", "m", "a\r\nb", true),
            (r"\d{3}", "", "The capital is Paris.", false),
            (r"\d", "", "٣", false),
            (r"\w+", "", "é", false),
            (r"[\d]", "", "٣", false),
            (r"\s", "", "\u{feff}", true),
            (r"\s", "", "\u{85}", false),
            (r"(?<=\$)\d+", "", "cost $42", true),
            (r"(?<year>\d{4})-\k<year>", "", "2024-2024", true),
            (r"(a)\1", "", "aa", true),
            (r"\/api\/v1", "", "/api/v1/users", true),
            (r"a{", "", "a{", true),
            (r"x]", "", "x]", true),
            ("[[]", "", "[", true),
            ("[a&&b]", "", "&", true),
            ("[^]", "", "\n", true),
            ("[]", "", "anything", false),
            (r"\z", "", "z", true),
            (r"\cJ", "", "\n", true),
            (r"\u0041\u{42}", "u", "AB", true),
            (r"\uD83D\uDE00", "", "😀", true),
            (r"\uD800", "", "x", false),
            ("b", "y", "ab", false),
            ("a", "gy", "ab", true),
            ("ABC", "gimsu", "xabcx", true),
        ];
        for (pattern, flags, text, want) in cases {
            let re = compile(pattern, flags).unwrap_or_else(|e| panic!("/{pattern}/{flags}: {e}"));
            assert_eq!(re.is_match(text).ok(), Some(want), "/{pattern}/{flags} on {text:?}");
        }
    }

    #[test]
    fn invalid_patterns_and_flags_are_errors() {
        for (pattern, flags) in [("(unclosed", ""), ("a", "x"), ("a", "gg"), ("a", "uv"), ("*a", "")] {
            assert!(compile(pattern, flags).is_err(), "/{pattern}/{flags}");
        }
    }
}
