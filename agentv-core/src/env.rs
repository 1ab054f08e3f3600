//! Environment variables: the process environment plus `.env` files, and `${{ VAR }}` values.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::source::{invalid_utf8_at, strip_bom};
use crate::config::{Diagnostic, Diagnostics, Pos};
use crate::paths::Workspace;

pub use crate::config::interpolate::env_reference;

/// Variables visible to the run: the process environment wins over `.env` files, and the `.env`
/// nearest to the eval file wins over outer ones (`docs/architecture.md#environment`).
#[derive(Clone, Default)]
pub struct Env {
    /// Variables from `.env` files that the process environment does not set.
    dotenv: HashMap<String, String>,
}

/// Names only: `.env` values are often credentials.
impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.dotenv.keys().collect();
        names.sort();
        f.debug_struct("Env").field("dotenv_names", &names).finish()
    }
}

impl Env {
    /// Reads `.env` files from each eval directory and its ancestors up to the repository root
    /// (every ancestor outside a repository), then the working directory; nearer files win.
    pub fn load(eval_dirs: &[PathBuf], ws: &Workspace) -> (Self, Vec<Diagnostic>) {
        Self::load_with(eval_dirs, None, ws)
    }

    /// [`Env::load`], also reading the `.env` beside a targets file named by `--targets`
    /// (after the eval directories, before the working directory; `docs/architecture.md#environment`).
    pub fn load_with(eval_dirs: &[PathBuf], targets_file: Option<&Path>, ws: &Workspace) -> (Self, Vec<Diagnostic>) {
        let mut files: Vec<PathBuf> = Vec::new();
        for dir in eval_dirs {
            for d in ws.ancestors_to_root(dir) {
                files.push(d.join(".env"));
            }
        }
        if let Some(dir) = targets_file.map(|t| ws.cwd.join(t)) {
            let dir = if dir.is_dir() {
                Some(dir.as_path())
            } else {
                dir.parent()
            };
            files.extend(dir.map(|d| d.join(".env")));
        }
        files.push(ws.cwd.join(".env"));
        let mut env = Self::default();
        let mut diagnostics = Vec::new();
        let mut seen = Vec::new();
        for file in files {
            if seen.contains(&file) || !file.is_file() {
                continue;
            }
            seen.push(file.clone());
            env.read_file(&file, &mut diagnostics);
        }
        (env, diagnostics)
    }

    /// Adds the variables of one `.env` file that neither the process environment nor a nearer
    /// file sets. Problems are reported with file:line:column and never show a value.
    fn read_file(&mut self, file: &Path, diagnostics: &mut Vec<Diagnostic>) {
        let mut d = Diagnostics::new(file);
        match std::fs::read(file) {
            Err(e) => d.warn(Pos::default(), format!("cannot read .env file: {e}"), None),
            Ok(bytes) => {
                let lookup = |name: &str| std::env::var(name).ok();
                for (key, value) in parse_dotenv(&bytes, &lookup, &mut d) {
                    if std::env::var_os(&key).is_none() {
                        self.dotenv.entry(key).or_insert(value);
                    }
                }
            }
        }
        diagnostics.extend(d.into_vec());
    }

    /// An environment built from explicit pairs (tests).
    pub fn from_pairs<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        Self {
            dotenv: pairs.into_iter().collect(),
        }
    }

    /// The value of `name`; empty values count as unset.
    pub fn get(&self, name: &str) -> Option<String> {
        std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .or_else(|| self.dotenv.get(name).filter(|v| !v.is_empty()).cloned())
    }

    /// Variables child processes must receive on top of the inherited environment.
    pub fn child_env(&self) -> Arc<[(String, String)]> {
        self.dotenv.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

/// Parses the bytes of a `.env` file the way common implementations do (python-dotenv, the
/// `dotenv` npm package, docker compose), so a file that works elsewhere works here:
///
/// - `KEY=value`, `KEY = value`, `export KEY=value`; blank lines and `# comment` lines;
/// - unquoted values keep inner spaces and lose surrounding ones; ` #` (a `#` after
///   whitespace) starts a comment, a `#` inside a word does not (`pa#ss`);
/// - `'single'` and `` `backtick` `` quotes are literal; `"double"` quotes understand `\n`,
///   `\r`, `\t`, `\"`, `\\` and `\$`; quoted values may span lines;
/// - `${VAR}` and `${VAR:-default}` expand in unquoted and double-quoted values (from the
///   process environment, then the lines above); `$VAR` without braces stays as written, so a
///   password holding `$` survives;
/// - a UTF-8 byte-order mark and CRLF line endings are accepted;
/// - the last assignment of a key in a file wins.
///
/// A line that cannot be read is skipped with a warning at its line and column; the other
/// lines still count. Messages name keys, never values (they are often secrets).
pub fn parse_dotenv(
    bytes: &[u8],
    lookup: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics,
) -> Vec<(String, String)> {
    let lines = dotenv_lines(strip_bom(bytes), diags);
    let mut parser = DotenvParser {
        lines: &lines,
        next: 0,
        vars: Vec::new(),
        lookup,
        diags,
    };
    while let Some((line_no, line)) = parser.next_line() {
        parser.assignment(line_no, line);
    }
    parser.vars
}

/// The lines of a `.env` file without line endings; a line that is not UTF-8 is reported and
/// kept as `None`.
fn dotenv_lines(bytes: &[u8], diags: &mut Diagnostics) -> Vec<Option<String>> {
    bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .map(|(i, line)| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            match std::str::from_utf8(line) {
                Ok(text) => Some(text.to_owned()),
                Err(_) => {
                    let column = invalid_utf8_at(line).map_or(1, |p| p.column);
                    diags.warn(
                        Pos::new(i as u64 + 1, column),
                        "this .env line is not UTF-8 text; it is skipped",
                        Some("save the file as UTF-8".to_owned()),
                    );
                    None
                }
            }
        })
        .collect()
}

struct DotenvParser<'a> {
    lines: &'a [Option<String>],
    /// Index of the next line to read.
    next: usize,
    vars: Vec<(String, String)>,
    lookup: &'a dyn Fn(&str) -> Option<String>,
    diags: &'a mut Diagnostics,
}

/// Column (1-based, in characters) of byte offset `at` in `line`.
fn column_of(line: &str, at: usize) -> u64 {
    line.get(..at).map_or(1, |prefix| prefix.chars().count() as u64 + 1)
}

impl<'a> DotenvParser<'a> {
    /// The next line (skipping lines already reported as not UTF-8), with its number.
    fn next_line(&mut self) -> Option<(u64, &'a str)> {
        loop {
            let (line_no, line) = self.next_raw()?;
            if let Some(line) = line {
                return Some((line_no, line));
            }
        }
    }

    /// The next line, `None` inside when it is not UTF-8.
    fn next_raw(&mut self) -> Option<(u64, Option<&'a str>)> {
        let lines = self.lines;
        let line = lines.get(self.next)?;
        self.next += 1;
        Some((self.next as u64, line.as_deref()))
    }

    fn warn(&mut self, line_no: u64, column: u64, message: String, help: Option<&str>) {
        self.diags
            .warn(Pos::new(line_no, column), message, help.map(str::to_owned));
    }

    /// One `KEY=value` line (or the first line of a quoted multi-line value).
    fn assignment(&mut self, line_no: u64, line: &'a str) {
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('#') {
            return;
        }
        let body = match body.strip_prefix("export") {
            Some(rest) if rest.starts_with([' ', '\t']) => rest.trim_start(),
            _ => body,
        };
        let at = line.len() - body.len();
        let key_len = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
            .unwrap_or(body.len());
        let key = &body[..key_len];
        if !key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            self.warn(
                line_no,
                column_of(line, at),
                "expected `KEY=value` here; the line is skipped".to_owned(),
                Some("a variable name starts with a letter or `_` and holds letters, digits, `_`, `.` or `-`"),
            );
            return;
        }
        let after_key = body[key_len..].trim_start_matches([' ', '\t']);
        let Some(value_src) = after_key.strip_prefix('=') else {
            // The text is not named: a line without `=` may be a pasted secret.
            let column = column_of(line, line.len() - after_key.len());
            self.warn(
                line_no,
                column,
                "expected `=` here; the line is skipped".to_owned(),
                Some("write `KEY=value`"),
            );
            return;
        };
        let value_start = value_src.trim_start_matches([' ', '\t']);
        let value_at = line.len() - value_start.len();
        let value = match value_start.chars().next() {
            Some(quote @ ('\'' | '"' | '`')) => self.quoted(key, quote, line_no, line, value_at),
            _ => Some(self.unquoted(key, value_src, line_no, line.len() - value_src.len(), line)),
        };
        let Some(value) = value else { return };
        if value.contains('\0') {
            self.warn(
                line_no,
                column_of(line, value_at),
                format!("the value of `{key}` holds a NUL character, which no program can receive; it is skipped"),
                None,
            );
            return;
        }
        match self.vars.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.vars.push((key.to_owned(), value)),
        }
    }

    /// An unquoted value: surrounding spaces trimmed, ` #...` dropped, `${VAR}` expanded.
    fn unquoted(&mut self, key: &str, src: &str, line_no: u64, src_at: usize, line: &str) -> String {
        let bytes = src.as_bytes();
        let end = (0..bytes.len())
            .find(|&i| bytes[i] == b'#' && (i == 0 || matches!(bytes[i - 1], b' ' | b'\t')))
            .unwrap_or(bytes.len());
        // Trimming ASCII space and tab only keeps the byte offsets on character boundaries.
        let text = src[..end].trim_matches([' ', '\t']);
        let text_at = src_at + (src[..end].len() - src[..end].trim_start_matches([' ', '\t']).len());
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while let Some(offset) = text[i..].find('$') {
            out.push_str(&text[i..i + offset]);
            i += offset;
            i += self.dollar(key, &text[i..], line_no, column_of(line, text_at + i), &mut out);
        }
        out.push_str(&text[i..]);
        out
    }

    /// A quoted value starting at byte `at` of `line` (the opening quote). Double quotes
    /// understand escapes and `${VAR}`; the value may continue over the following lines.
    fn quoted(&mut self, key: &str, quote: char, line_no: u64, line: &'a str, at: usize) -> Option<String> {
        let mut out = String::new();
        let (mut cur_no, mut cur) = (line_no, line);
        let mut from = at + 1;
        loop {
            let text = &cur[from..];
            let mut i = 0;
            while let Some(c) = text[i..].chars().next() {
                let len = c.len_utf8();
                if c == quote {
                    self.after_quote(key, cur_no, cur, from + i + len);
                    return Some(out);
                }
                if quote == '"' && c == '\\' {
                    let escaped = text[i + 1..].chars().next();
                    match escaped {
                        Some('n') => out.push('\n'),
                        Some('r') => out.push('\r'),
                        Some('t') => out.push('\t'),
                        Some(e @ ('"' | '\\' | '$')) => out.push(e),
                        Some(other) => {
                            out.push('\\');
                            out.push(other);
                        }
                        None => out.push('\\'),
                    }
                    i += 1 + escaped.map_or(0, char::len_utf8);
                    continue;
                }
                if quote == '"' && c == '$' {
                    i += self.dollar(key, &text[i..], cur_no, column_of(cur, from + i), &mut out);
                    continue;
                }
                out.push(c);
                i += len;
            }
            match self.next_raw() {
                Some((no, Some(next))) => {
                    out.push('\n');
                    (cur_no, cur, from) = (no, next, 0);
                }
                Some((_, None)) | None => {
                    self.warn(
                        line_no,
                        column_of(line, at),
                        format!("the value of `{key}` opens a {quote} quote that is never closed; it is skipped"),
                        Some("close the quote; a quoted value may span lines"),
                    );
                    return None;
                }
            }
        }
    }

    /// Checks what follows a closing quote: nothing, or a `# comment`.
    fn after_quote(&mut self, key: &str, line_no: u64, line: &str, at: usize) {
        let tail = line[at..].trim_start_matches([' ', '\t']);
        if !tail.is_empty() && !tail.starts_with('#') {
            let column = column_of(line, line.len() - tail.len());
            self.warn(
                line_no,
                column,
                format!("text after the closing quote of `{key}` is ignored"),
                Some("put the whole value inside the quotes, or start a comment with ` #`"),
            );
        }
    }

    /// `text` starts with `$`: appends `${VAR}` / `${VAR:-default}` expanded (or a lone `$`)
    /// and returns how many bytes it consumed.
    fn dollar(&mut self, key: &str, text: &str, line_no: u64, column: u64, out: &mut String) -> usize {
        let Some(reference) = text.strip_prefix("${").and_then(|r| r.find('}').map(|end| &r[..end])) else {
            out.push('$');
            return 1;
        };
        let (name, default) = match reference.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (reference, None),
        };
        let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            out.push('$');
            return 1;
        }
        let value = (self.lookup)(name)
            .or_else(|| self.vars.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
            .filter(|v| !v.is_empty() || default.is_none());
        match (value, default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            // The name is not quoted: what looks like a reference may be part of a secret.
            (None, None) => self.warn(
                line_no,
                column,
                format!("the value of `{key}` refers to a variable (`${{…}}`) that is not set; it expands to nothing"),
                Some(
                    "set it above this line or in the environment, give a default (`${NAME:-default}`), or single-quote the value to keep `$` as written",
                ),
            ),
        }
        reference.len() + 3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_reference_needs_the_whole_value() {
        let cases = [
            ("${{ OPENAI_KEY }}", Some("OPENAI_KEY")),
            ("  ${{KEY_2}} ", Some("KEY_2")),
            ("${{ lower_ok }}", Some("lower_ok")),
            ("prefix-${{ KEY }}", None),
            ("${ KEY }", None),
            ("plain", None),
        ];
        for (value, want) in cases {
            assert_eq!(env_reference(value), want, "{value}");
        }
    }

    /// Parses `text` with `FROM_ENV=env` as the only process variable.
    fn parse(text: &[u8]) -> (Vec<(String, String)>, Vec<Diagnostic>) {
        let mut diags = Diagnostics::new(Path::new(".env"));
        let lookup = |name: &str| (name == "FROM_ENV").then(|| "env".to_owned());
        let vars = parse_dotenv(text, &lookup, &mut diags);
        (vars, diags.into_vec())
    }

    /// What python-dotenv, the `dotenv` npm package and docker compose agree on (the row says
    /// when they differ and which one is followed).
    #[test]
    fn dotenv_values_match_common_implementations() {
        let cases: &[(&str, &str, &str)] = &[
            ("plain", "KEY=value\n", "value"),
            ("inner spaces kept", "KEY=value with spaces\n", "value with spaces"),
            ("outer spaces trimmed", "KEY=   padded value   \n", "padded value"),
            ("spaces around =", "KEY = value\n", "value"),
            ("export prefix", "export KEY=value\n", "value"),
            ("empty", "KEY=\n", ""),
            ("comment after space", "KEY=value # note\n", "value"),
            ("hash inside a word (python, compose; npm cuts)", "KEY=pa#ss\n", "pa#ss"),
            ("only a comment", "KEY= # note\n", ""),
            (
                "single quotes are literal",
                "KEY='a \\n ${FROM_ENV} # b'\n",
                "a \\n ${FROM_ENV} # b",
            ),
            (
                "double quotes escape",
                "KEY=\"a\\nb\\t\\\"c\\\" \\\\ \\$X\"\n",
                "a\nb\t\"c\" \\ $X",
            ),
            ("unknown escape kept", "KEY=\"a\\qb\"\n", "a\\qb"),
            ("backticks are literal", "KEY=`it's \"x\"`\n", "it's \"x\""),
            ("comment after quotes", "KEY=\"a b\"  # note\n", "a b"),
            ("multi-line double quotes", "KEY=\"line1\nline2\"\n", "line1\nline2"),
            ("multi-line CRLF", "KEY=\"line1\r\nline2\"\r\n", "line1\nline2"),
            ("CRLF", "KEY=value\r\n", "value"),
            ("BOM", "\u{feff}KEY=value\n", "value"),
            ("no final newline", "KEY=value", "value"),
            ("expansion from env", "KEY=${FROM_ENV}-x\n", "env-x"),
            ("expansion in double quotes", "KEY=\"${FROM_ENV} y\"\n", "env y"),
            ("expansion from lines above", "A=1\nKEY=${A}2\n", "12"),
            ("default when unset", "KEY=${NOPE_UNSET:-dflt}\n", "dflt"),
            (
                "bare $VAR kept (python; dotenvy expanded it)",
                "KEY=pa$word\n",
                "pa$word",
            ),
            ("equals in value", "KEY=a=b==c\n", "a=b==c"),
            ("last assignment wins", "KEY=one\nKEY=two\n", "two"),
            ("dotted and dashed names (npm)", "KEY=x\nmy.key-1=y\n", "x"),
            ("unicode", "KEY=héllo wörld\n", "héllo wörld"),
        ];
        for (name, text, want) in cases {
            let (vars, diags) = parse(text.as_bytes());
            let got = vars.iter().find(|(k, _)| k == "KEY").map(|(_, v)| v.as_str());
            assert_eq!(got, Some(*want), "{name}: {text:?}");
            assert!(diags.is_empty(), "{name}: {diags:?}");
        }
    }

    #[test]
    fn dotenv_problems_have_a_line_and_column_and_never_show_values() {
        let cases: &[(&str, &[u8], u64, u64, &str)] = &[
            ("no equals", b"A=1\nNOEQUALS secret-value\n", 2, 10, "expected `=` here"),
            ("pasted secret", b"A=1\nsecret-token\n", 2, 13, "expected `=` here"),
            ("bad name", b"A=1\n  9KEY=secret-value\n", 2, 3, "expected `KEY=value`"),
            ("bare key", b"LONELY\n", 1, 7, "expected `=` here"),
            (
                "unclosed quote",
                b"A=1\nKEY=\"secret-value\nB=2\n",
                2,
                5,
                "never closed",
            ),
            (
                "text after quote",
                b"KEY='secret-value' tail\n",
                1,
                20,
                "after the closing quote of `KEY`",
            ),
            ("not UTF-8", b"A=1\nKEY=secr\xe9t-value\n", 2, 9, "not UTF-8"),
            (
                "unset reference",
                b"KEY=${NOPE_UNSET}secret-value\n",
                1,
                5,
                "the value of `KEY` refers to a variable",
            ),
            (
                "reference inside a secret",
                b"KEY=p${secret}w\n",
                1,
                6,
                "the value of `KEY` refers to a variable",
            ),
        ];
        for (name, text, line, column, want) in cases {
            let (_, diags) = parse(text);
            assert_eq!(diags.len(), 1, "{name}: {diags:?}");
            let d = &diags[0];
            assert_eq!((d.pos.line, d.pos.column), (*line, *column), "{name}: {d}");
            assert!(d.message.contains(want), "{name}: {d}");
            assert!(!d.to_string().contains("secret"), "{name} shows the value: {d}");
        }
    }

    #[test]
    fn dotenv_keeps_the_good_lines_around_a_bad_one() {
        let (vars, diags) = parse(b"A=1\nthis line is wrong\nB=two words\n");
        assert_eq!(diags.len(), 1);
        assert_eq!(
            vars,
            [
                ("A".to_owned(), "1".to_owned()),
                ("B".to_owned(), "two words".to_owned())
            ]
        );
    }

    #[test]
    fn nearest_dotenv_wins_and_process_env_wins_over_files() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".git")).expect("git");
        std::fs::create_dir_all(root.join("evals")).expect("dir");
        std::fs::write(root.join(".env"), "AGENTV_T_A=outer\nAGENTV_T_B=outer\nPATH=nope\n").expect("env");
        std::fs::write(root.join("evals/.env"), "AGENTV_T_A=inner\n").expect("env");
        let ws = Workspace::from_cwd(root.to_path_buf());
        let (env, diags) = Env::load(&[root.join("evals")], &ws);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(env.get("AGENTV_T_A").as_deref(), Some("inner"));
        assert_eq!(env.get("AGENTV_T_B").as_deref(), Some("outer"));
        assert_ne!(env.get("PATH").as_deref(), Some("nope"), "the process environment wins");
    }
}
