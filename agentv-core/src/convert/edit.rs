//! Edits on the source text, placed by the positions of the parsed tree.
//!
//! The converter never re-serialises the tree: it renames keys, replaces scalars, inserts and
//! deletes entries and moves whole block entries in the original text, so comments, blank
//! lines, quoting and key order outside the edited spans stay as written. Each edit first
//! checks that the text at the node's position is what the tree says it is; when it is not
//! (a multi-line or escaped scalar, an alias), the edit is refused and the caller reports it.

use crate::config::{Node, Pos};

/// A replacement of the byte range `start..end` by `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Edit {
    start: usize,
    end: usize,
    text: String,
}

/// The text being converted and the edits collected so far.
pub struct Editor<'t> {
    text: &'t str,
    /// Byte offset of the start of each line.
    line_starts: Vec<usize>,
    edits: Vec<Edit>,
}

/// Why an edit could not be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditError {
    pub pos: Pos,
    pub message: String,
}

impl<'t> Editor<'t> {
    pub fn new(text: &'t str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self {
            text,
            line_starts,
            edits: Vec::new(),
        }
    }

    /// Byte offset of a 1-based line and (character) column.
    pub fn offset(&self, pos: Pos) -> Option<usize> {
        let line = usize::try_from(pos.line).ok()?.checked_sub(1)?;
        let start = *self.line_starts.get(line)?;
        let col = usize::try_from(pos.column).ok()?.checked_sub(1)?;
        let rest = &self.text[start..];
        let mut chars = rest.char_indices();
        for _ in 0..col {
            chars.next()?;
        }
        Some(start + chars.next().map_or(rest.len(), |(i, _)| i))
    }

    fn fail(pos: Pos, what: &str) -> EditError {
        EditError {
            pos,
            message: format!("cannot rewrite {what} here (it is not written as a plain or quoted one-line value)"),
        }
    }

    /// The byte range of the scalar `expected` written at `pos`: plain, or quoted without
    /// escapes. The quotes are part of the range.
    fn scalar_range(&self, pos: Pos, expected: &str) -> Option<(usize, usize)> {
        let o = self.offset(pos)?;
        let rest = &self.text[o..];
        if rest.starts_with(expected) {
            return Some((o, o + expected.len()));
        }
        for q in ['"', '\''] {
            if let Some(inner) = rest.strip_prefix(q)
                && inner.starts_with(expected)
                && inner[expected.len()..].starts_with(q)
            {
                return Some((o, o + expected.len() + 2));
            }
        }
        None
    }

    /// Replaces the key or scalar `node` (a string) by `new`, written plain when that reads
    /// back as the same string, else double-quoted.
    pub fn replace_scalar(&mut self, node: &Node, new: &str) -> Result<(), EditError> {
        self.replace_scalar_raw(node, &quote(new))
    }

    /// Replaces the key or scalar `node` (a string) by the YAML text `raw`.
    pub fn replace_scalar_raw(&mut self, node: &Node, raw: &str) -> Result<(), EditError> {
        let old = node.as_str().ok_or_else(|| Self::fail(node.pos, "this value"))?;
        let (start, end) = self
            .scalar_range(node.pos, old)
            .ok_or_else(|| Self::fail(node.pos, &format!("`{old}`")))?;
        self.push(start, end, raw.to_owned());
        Ok(())
    }

    /// Inserts the entry `key: value` (already YAML text) in the mapping that holds the key
    /// `before`, just before it: on its own line in a block mapping, followed by `, ` in a flow
    /// mapping.
    pub fn insert_before_key(&mut self, before: &Node, entry: &str) -> Result<(), EditError> {
        let o = self
            .offset(before.pos)
            .ok_or_else(|| Self::fail(before.pos, "this mapping"))?;
        let text = if self.is_flow_key(o) {
            format!("{entry}, ")
        } else {
            let indent = " ".repeat(usize::try_from(before.pos.column).unwrap_or(1).saturating_sub(1));
            format!("{entry}{}{indent}", self.newline())
        };
        self.push(o, o, text);
        Ok(())
    }

    /// The file's line break: inserted lines use the one it is written with.
    pub fn newline(&self) -> &'static str {
        if self.text.contains("\r\n") { "\r\n" } else { "\n" }
    }

    /// Whether the key at byte `o` is inside a flow mapping (`{a: 1, b: 2}`).
    fn is_flow_key(&self, o: usize) -> bool {
        matches!(
            self.text[..o].trim_end_matches([' ', '\t']).chars().last(),
            Some('{' | ',')
        )
    }

    /// The 0-based line range `start..end` of the block entry whose key is `key`: its key line
    /// and every following line indented deeper than the key (blank and comment lines
    /// included while more of the entry follows). `None` when the key does not start its line.
    pub fn entry_lines(&self, key: &Node) -> Option<(usize, usize)> {
        let start = usize::try_from(key.pos.line).ok()?.checked_sub(1)?;
        let col = usize::try_from(key.pos.column).ok()?.checked_sub(1)?;
        let line = self.line(start);
        if line.chars().take(col).any(|c| c != ' ') {
            return None;
        }
        let mut end = start + 1;
        let mut probe = start + 1;
        while probe < self.line_starts.len() {
            let l = self.line(probe);
            let trimmed = l.trim_start_matches(' ');
            if trimmed.trim().is_empty() || trimmed.starts_with('#') {
                probe += 1;
                continue;
            }
            let at = l.len() - trimmed.len();
            // A block sequence may sit at its key's own indentation (`key:\n- item`).
            if at < col || (at == col && !(trimmed.starts_with("- ") || trimmed == "-")) {
                break;
            }
            probe += 1;
            end = probe;
        }
        Some((start, end))
    }

    /// The text of 0-based line `i` without its line break.
    fn line(&self, i: usize) -> &'t str {
        let start = self.line_starts[i];
        let end = self.line_starts.get(i + 1).copied().unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// The text of 0-based lines `start..end`, line breaks included.
    pub fn lines_text(&self, start: usize, end: usize) -> &'t str {
        &self.text[self.line_start(start)..self.line_start(end)]
    }

    fn line_start(&self, i: usize) -> usize {
        self.line_starts.get(i).copied().unwrap_or(self.text.len())
    }

    /// Deletes the block entry whose key is `key` (all its lines).
    pub fn delete_entry(&mut self, key: &Node) -> Result<(), EditError> {
        let (start, end) = self.entry_lines(key).ok_or_else(|| Self::fail(key.pos, "this entry"))?;
        self.push(self.line_start(start), self.line_start(end), String::new());
        Ok(())
    }

    /// Deletes the text from key `key` to key `next` (the next key of the same mapping).
    pub fn delete_between(&mut self, key: &Node, next: &Node) -> Result<(), EditError> {
        let start = self.offset(key.pos).ok_or_else(|| Self::fail(key.pos, "this entry"))?;
        let end = self.offset(next.pos).ok_or_else(|| Self::fail(key.pos, "this entry"))?;
        if end <= start {
            return Err(Self::fail(key.pos, "this entry"));
        }
        self.push(start, end, String::new());
        Ok(())
    }

    /// Replaces 0-based lines `start..end` by `text` (which should end with a line break).
    pub fn replace_lines(&mut self, start: usize, end: usize, text: String) {
        self.push(self.line_start(start), self.line_start(end), text);
    }

    /// Inserts `text` at the start of 0-based line `line` (or at the end of the file).
    pub fn insert_at_line(&mut self, line: usize, text: String) {
        let o = self.line_start(line);
        let text = if o == self.text.len() && !self.text.is_empty() && !self.text.ends_with('\n') {
            format!("\n{text}")
        } else {
            text
        };
        self.push(o, o, text);
    }

    /// Replaces the text from the start of node `from` to the end of the key `to` (both keys,
    /// `to` after `from`) by `text`, when only `:` and white space lie between them.
    pub fn merge_keys(&mut self, from: &Node, to: &Node, text: &str) -> Result<(), EditError> {
        let from_key = from.as_str().unwrap_or_default();
        let to_key = to.as_str().unwrap_or_default();
        let (start, from_end) = self
            .scalar_range(from.pos, from_key)
            .ok_or_else(|| Self::fail(from.pos, "this key"))?;
        let (to_start, end) = self
            .scalar_range(to.pos, to_key)
            .ok_or_else(|| Self::fail(to.pos, "this key"))?;
        let between = self.text.get(from_end..to_start).unwrap_or("x");
        if !between.starts_with(':') || !between[1..].chars().all(char::is_whitespace) {
            return Err(Self::fail(from.pos, "this entry"));
        }
        self.push(start, end, text.to_owned());
        Ok(())
    }

    fn push(&mut self, start: usize, end: usize, text: String) {
        self.edits.push(Edit { start, end, text });
    }

    /// The text with every edit applied. Overlapping edits (two rewrites of the same span)
    /// are an error at `pos`.
    pub fn finish(mut self, pos: Pos) -> Result<String, EditError> {
        self.edits.sort_by_key(|e| (e.start, e.end));
        self.edits.dedup();
        let mut out = String::with_capacity(self.text.len() + 64);
        let mut at = 0;
        for e in &self.edits {
            if e.start < at {
                return Err(EditError {
                    pos,
                    message: "two rewrites of the same text; convert the file in smaller steps".into(),
                });
            }
            out.push_str(&self.text[at..e.start]);
            out.push_str(&e.text);
            at = e.end;
        }
        out.push_str(&self.text[at..]);
        Ok(out)
    }
}

/// `s` as a YAML scalar: plain when it reads back as the same string, else JSON-quoted (a
/// JSON string is a valid YAML double-quoted scalar).
pub fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ' ' | ':'))
        && !s.contains(": ")
        && !s.ends_with(':')
        && !s.starts_with([' ', '-', '.', ':'])
        && !s.ends_with(' ')
        && !matches!(s, "true" | "false" | "null" | "~")
        && s.parse::<f64>().is_err();
    if plain {
        s.to_owned()
    } else {
        serde_json::Value::String(s.to_owned()).to_string()
    }
}

/// Indents every non-blank line of `text` by `by` spaces.
pub fn indent(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.split_inclusive('\n')
        .map(|l| {
            if l.trim().is_empty() {
                l.to_owned()
            } else {
                format!("{pad}{l}")
            }
        })
        .collect()
}
