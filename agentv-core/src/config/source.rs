//! Turning the bytes of a file into text a loader can read.
//!
//! Editors on Windows save files with a byte-order mark and CRLF line endings, and a stray
//! Latin-1 byte in a file is easy to miss. The loaders accept the first two everywhere and
//! report the third where it is (line and column), instead of "stream did not contain valid
//! UTF-8" with no position.

use std::path::Path;

use super::diagnostics::Diagnostics;
use super::node::Pos;

/// The UTF-8 encoding of U+FEFF, which some editors write at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `bytes` without a leading byte-order mark.
pub fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BOM).unwrap_or(bytes)
}

/// Where the first byte that is not UTF-8 sits, or `None` when all of `bytes` is UTF-8.
/// Lines and columns count from 1; the column counts characters, as editors do.
pub fn invalid_utf8_at(bytes: &[u8]) -> Option<Pos> {
    let valid = match std::str::from_utf8(bytes) {
        Ok(_) => return None,
        Err(e) => e.valid_up_to(),
    };
    // The prefix is valid UTF-8 by construction.
    let prefix = String::from_utf8_lossy(&bytes[..valid]);
    Some(end_of(&prefix))
}

/// The position just after `text` (where the next character would be written).
pub fn end_of(text: &str) -> Pos {
    let line = text.matches('\n').count() as u64 + 1;
    let last = text.rfind('\n').map_or(text, |i| &text[i + 1..]);
    Pos::new(line, last.chars().count() as u64 + 1)
}

/// The text of `bytes` (a leading BOM removed); `None` after reporting the first byte that is
/// not UTF-8. `what` names the file in the message ("eval file").
pub fn decode(bytes: &[u8], what: &str, diags: &mut Diagnostics) -> Option<String> {
    let bytes = strip_bom(bytes);
    match String::from_utf8(bytes.to_vec()) {
        Ok(text) => Some(text),
        Err(_) => {
            let pos = invalid_utf8_at(bytes).unwrap_or_else(|| Pos::new(1, 1));
            diags.error(
                pos,
                format!("the {what} is not UTF-8 text: invalid byte here"),
                Some("save the file as UTF-8".to_owned()),
            );
            None
        }
    }
}

/// Reads a whole text file for a loader; `None` after reporting why it could not be read.
/// Problems reported in `diags` from then on quote the line they point at.
pub fn read_text(path: &Path, what: &str, diags: &mut Diagnostics) -> Option<String> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = decode(&bytes, what, diags)?;
            diags.set_source(text.as_str());
            Some(text)
        }
        Err(e) => {
            diags.error(Pos::default(), format!("cannot read the {what}: {e}"), None);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_byte_is_located_by_line_and_character_column() {
        let cases: &[(&[u8], Option<Pos>)] = &[
            (b"ok\n", None),
            (b"\xff", Some(Pos::new(1, 1))),
            (b"ab\ncd\xe9f\n", Some(Pos::new(2, 3))),
            ("é\nxé".as_bytes(), None),
            (b"\xc3\xa9\n\xc3\xa9\xc3", Some(Pos::new(2, 2))),
        ];
        for (bytes, want) in cases {
            assert_eq!(invalid_utf8_at(bytes), *want, "{bytes:?}");
        }
    }

    #[test]
    fn decode_strips_a_bom_and_reports_bad_bytes_with_a_position() {
        let mut diags = Diagnostics::new(Path::new("f.yaml"));
        assert_eq!(
            decode(b"\xEF\xBB\xBFa: 1\n", "eval file", &mut diags).as_deref(),
            Some("a: 1\n")
        );
        assert_eq!(decode(b"a: 1\nb: \x80\n", "eval file", &mut diags), None);
        let all = diags.into_vec();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].pos, Pos::new(2, 4));
    }
}
