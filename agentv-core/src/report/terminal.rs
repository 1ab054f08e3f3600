//! Text fit for a terminal. Ids, answers and error messages come from eval files, providers and
//! judges; printed raw, a newline forges a progress line, an ANSI escape recolours or erases the
//! screen, a NUL or a bidi override hides what follows (`docs/architecture.md#case-ids`).
//! Everything user-made goes through these before it reaches the terminal.

use std::borrow::Cow;

/// `text` on one line: every control character (newline included) and every invisible
/// direction override is written as an escape (`\n`, `\r`, `\t`, `\u{1b}`).
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// Like [`escape_line`], but keeps line breaks (`\n`) and tabs, for messages that span lines
/// (diagnostics with a `help:` line). A carriage return is still escaped: it rewrites a line.
pub fn escape_text(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_breaks: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| needs_escape(c) && !(keep_breaks && matches!(c, '\n' | '\t'));
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            other => out.push_str(&format!("\\u{{{:x}}}", u32::from(other))),
        }
    }
    Cow::Owned(out)
}

/// Control characters (C0, DEL, C1) and the format characters that reorder or hide text.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_ids_are_escaped() {
        let cases = [
            ("plain-id", "plain-id", "plain-id"),
            ("ünïcode ✔", "ünïcode ✔", "ünïcode ✔"),
            (
                "a\n[2/2] ✔ forged  1.000 pass",
                "a\\n[2/2] ✔ forged  1.000 pass",
                "a\n[2/2] ✔ forged  1.000 pass",
            ),
            ("red\u{1b}[31mtext", "red\\u{1b}[31mtext", "red\\u{1b}[31mtext"),
            ("nul\0end", "nul\\u{0}end", "nul\\u{0}end"),
            ("over\rwrite", "over\\rwrite", "over\\rwrite"),
            ("tab\there", "tab\\there", "tab\there"),
            ("c1\u{9b}2J", "c1\\u{9b}2J", "c1\\u{9b}2J"),
            ("bidi\u{202e}txt", "bidi\\u{202e}txt", "bidi\\u{202e}txt"),
            ("del\u{7f}", "del\\u{7f}", "del\\u{7f}"),
        ];
        for (raw, line, text) in cases {
            assert_eq!(escape_line(raw), line, "{raw:?}");
            assert_eq!(escape_text(raw), text, "{raw:?}");
        }
        assert!(matches!(escape_line("clean"), Cow::Borrowed(_)), "no copy when clean");
    }
}
