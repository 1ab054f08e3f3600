//! Writers that redact as they write, and the file helpers every output file goes through.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::{MASK, Secrets};

/// Redacts everything written through it before it reaches `inner`.
///
/// Streams of any size pass through in bounded memory: a write emits what no secret can still
/// span — through the last complete line, or all but the last `longest form − 1` bytes when a
/// secret itself spans lines — and holds back the rest. `flush` emits everything held, so flush
/// only where no secret can be cut (the end of a record or of the stream); dropping the writer
/// flushes too.
pub struct RedactingWriter<W: Write> {
    inner: Option<W>,
    secrets: Secrets,
    pending: Vec<u8>,
    /// Emit only whole lines (see [`RedactingWriter::lines`]).
    whole_lines: bool,
}

/// A line longer than this is emitted in pieces by a [`RedactingWriter::lines`] writer, so
/// memory stays bounded when a stream never ends its line.
const MAX_HELD_LINE: usize = 1024 * 1024;

impl<W: Write> RedactingWriter<W> {
    pub fn new(inner: W, secrets: Secrets) -> Self {
        Self {
            inner: Some(inner),
            secrets,
            pending: Vec::new(),
            whole_lines: false,
        }
    }

    /// A writer that hands `inner` whole lines only, each batch in one `write`, so writers of
    /// several streams sharing one file ([`StreamLog`]) never interleave inside a line (up to
    /// lines of 1 MiB). A line that is valid JSON is redacted as JSON
    /// ([`Secrets::redact_json`]), so a JSON stream stays JSON.
    pub fn lines(inner: W, secrets: Secrets) -> Self {
        let mut writer = Self::new(inner, secrets);
        writer.whole_lines = true;
        writer
    }

    /// The underlying writer, after emitting everything held back.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.emit(true)?;
        self.inner
            .take()
            .ok_or_else(|| io::Error::other("writer already taken"))
    }

    pub fn get_ref(&self) -> Option<&W> {
        self.inner.as_ref()
    }

    /// Redacts and writes the part of `pending` that is safe to write (all of it when `all`).
    fn emit(&mut self, all: bool) -> io::Result<()> {
        let Some(inner) = self.inner.as_mut() else {
            return Ok(());
        };
        if self.pending.is_empty() {
            return Ok(());
        }
        let snapshot = self.secrets.snapshot();
        let matcher = snapshot.compiled();
        if self.whole_lines {
            return emit_lines(inner, &mut self.pending, &self.secrets, matcher, all);
        }
        let Some(searcher) = &matcher.searcher else {
            inner.write_all(&self.pending)?;
            self.pending.clear();
            return Ok(());
        };
        let len = self.pending.len();
        let mut safe_end = if all {
            len
        } else {
            len.saturating_sub(matcher.longest.saturating_sub(1))
        };
        if !all
            && !matcher.multiline
            && let Some(newline) = self.pending.iter().rposition(|&b| b == b'\n')
        {
            safe_end = safe_end.max(newline + 1);
        }
        let mut out = Vec::with_capacity(safe_end + MASK.len());
        let mut written = 0;
        for m in searcher.find_iter(&self.pending) {
            if m.start() >= safe_end {
                break;
            }
            out.extend_from_slice(&self.pending[written..m.start()]);
            out.extend_from_slice(MASK.as_bytes());
            written = m.end();
        }
        let end = written.max(safe_end);
        out.extend_from_slice(&self.pending[written..end]);
        inner.write_all(&out)?;
        self.pending.drain(..end);
        Ok(())
    }
}

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pending.is_empty()
            && !self.whole_lines
            && self.secrets.is_empty()
            && let Some(inner) = self.inner.as_mut()
        {
            inner.write_all(buf)?;
            return Ok(buf.len());
        }
        self.pending.extend_from_slice(buf);
        self.emit(false)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.emit(true)?;
        match self.inner.as_mut() {
            Some(inner) => inner.flush(),
            None => Ok(()),
        }
    }
}

/// The whole-lines emit of [`RedactingWriter::lines`]: writes the lines of `pending` that no
/// secret can still reach into (all of it when `all`), redacted, in one write.
fn emit_lines<W: Write>(
    inner: &mut W,
    pending: &mut Vec<u8>,
    secrets: &Secrets,
    matcher: &super::Compiled,
    all: bool,
) -> io::Result<()> {
    let line_end = |upto: usize| pending[..upto].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut end = if all {
        pending.len()
    } else if matcher.multiline {
        // A secret with a line break may still be completed by bytes to come.
        line_end(pending.len().saturating_sub(matcher.longest.saturating_sub(1)))
    } else {
        line_end(pending.len())
    };
    let overlong = !all && end == 0 && pending.len() > MAX_HELD_LINE;
    if overlong {
        end = pending.len().saturating_sub(matcher.longest.saturating_sub(1));
    }
    if let Some(searcher) = &matcher.searcher
        && !all
    {
        // A match that starts before `end` and ends after it: keep its lines for later.
        while let Some(m) = searcher
            .find_iter(&pending[..])
            .find(|m| m.start() < end && m.end() > end)
        {
            end = if overlong { m.start() } else { line_end(m.start()) };
        }
    }
    if end == 0 {
        return Ok(());
    }
    let chunk = &pending[..end];
    let spans_lines = matcher.searcher.as_ref().is_some_and(|searcher| {
        searcher
            .find_iter(chunk)
            .any(|m| chunk[m.start()..m.end()].contains(&b'\n'))
    });
    let out: Vec<u8> = if matcher.searcher.is_none() {
        chunk.to_vec()
    } else if spans_lines {
        secrets.redact_bytes(chunk).into_owned()
    } else {
        let mut out = Vec::with_capacity(chunk.len());
        for line in chunk.split_inclusive(|&b| b == b'\n') {
            out.extend_from_slice(&redact_line(line, secrets));
        }
        out
    };
    inner.write_all(&out)?;
    pending.drain(..end);
    Ok(())
}

/// One line of a stream: as JSON when it is JSON, else as text.
fn redact_line<'a>(line: &'a [u8], secrets: &Secrets) -> std::borrow::Cow<'a, [u8]> {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    let body = body.strip_suffix(b"\r").unwrap_or(body);
    let is_json = serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok();
    if is_json {
        secrets.redact_json(line)
    } else {
        secrets.redact_bytes(line)
    }
}

impl<W: Write> Drop for RedactingWriter<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// A file shared by several writers (an agent's stdout and stderr going to one log). Each
/// `write` lands whole.
#[derive(Clone)]
pub struct SharedFile(Arc<Mutex<File>>);

impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut file = self.0.lock().map_err(|_| io::Error::other("log file lock poisoned"))?;
        file.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut file = self.0.lock().map_err(|_| io::Error::other("log file lock poisoned"))?;
        file.flush()
    }
}

/// An agent's stream log: one file, written by one redacting writer per output stream.
#[derive(Clone)]
pub struct StreamLog {
    file: SharedFile,
    secrets: Secrets,
}

impl std::fmt::Debug for StreamLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamLog")
    }
}

impl StreamLog {
    /// Opens `path` for appending, creating its directory.
    pub fn create(path: &Path, secrets: &Secrets) -> io::Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            file: SharedFile(Arc::new(Mutex::new(file))),
            secrets: secrets.clone(),
        })
    }

    /// A writer for one stream. Lines of different streams never interleave mid-line.
    pub fn writer(&self) -> RedactingWriter<SharedFile> {
        RedactingWriter::lines(self.file.clone(), self.secrets.clone())
    }
}

/// Opens `path` (creating its directory), truncating it or appending, behind a redacting,
/// buffered writer.
pub fn create_file(path: &Path, secrets: &Secrets, append: bool) -> io::Result<RedactingWriter<io::BufWriter<File>>> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)?;
    Ok(RedactingWriter::new(io::BufWriter::new(file), secrets.clone()))
}

/// Writes `contents` redacted to `path`, creating its directory.
pub fn write_file(path: &Path, contents: &[u8], secrets: &Secrets) -> io::Result<()> {
    let mut out = create_file(path, secrets, false)?;
    out.write_all(contents)?;
    out.flush()
}

/// Writes `json`, a serialized JSON text, to `path` with secrets redacted inside its strings only
/// ([`Secrets::redact_json`]), creating its directory.
pub fn write_json_file(path: &Path, json: &[u8], secrets: &Secrets) -> io::Result<()> {
    write_file(path, &secrets.redact_json(json), &Secrets::default())
}

/// [`write_atomic`] for a serialized JSON text, redacted inside its strings only.
pub fn write_json_atomic(path: &Path, json: &[u8], secrets: &Secrets) -> io::Result<()> {
    write_atomic(path, &secrets.redact_json(json), &Secrets::default())
}

/// Writes `contents` redacted to `path` atomically: a temporary file in the same directory,
/// renamed over `path`, so a concurrent reader never sees half a file.
pub fn write_atomic(path: &Path, contents: &[u8], secrets: &Secrets) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let temp = tempfile::NamedTempFile::new_in(dir)?;
    let mut out = RedactingWriter::new(temp, secrets.clone());
    out.write_all(contents)?;
    out.flush()?;
    crate::paths::persist(out.into_inner()?, path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(values: &[&str]) -> Secrets {
        let s = Secrets::default();
        for v in values {
            s.add(v);
        }
        s
    }

    /// Writes `text` in chunks of every size; the output must be the same as redacting it whole.
    #[test]
    fn redacting_writer_catches_secrets_split_across_writes() {
        let s = secrets(&["sk-streamed-secret", "two\nline-secret"]);
        let text = "a sk-streamed-secret b\n{\"k\":\"two\\nline-secret\"} two\nline-secret end sk-streamed-";
        let whole = s.redact(text).into_owned();
        assert!(
            !whole.contains("sk-streamed-secret") && !whole.contains("line-secret"),
            "{whole}"
        );
        for chunk in 1..text.len() {
            let mut w = RedactingWriter::new(Vec::new(), s.clone());
            for piece in text.as_bytes().chunks(chunk) {
                w.write_all(piece).expect("write");
            }
            let out = w.into_inner().expect("inner");
            assert_eq!(String::from_utf8_lossy(&out), whole, "chunks of {chunk}");
        }
    }

    #[test]
    fn complete_lines_are_written_at_once() {
        let s = secrets(&["sk-streamed-secret"]);
        let mut w = RedactingWriter::new(Vec::new(), s);
        w.write_all(b"line one sk-streamed-secret\nline tw").expect("write");
        assert_eq!(w.get_ref().expect("inner"), b"line one ***\n");
        w.flush().expect("flush");
        assert_eq!(w.get_ref().expect("inner"), b"line one ***\nline tw");
    }

    /// Two streams written in small interleaved pieces, as an agent's stdout and stderr arrive.
    #[test]
    fn stream_log_lines_of_two_streams_never_interleave() {
        for values in [&[][..], &["sk-streamed-secret"][..], &["two\nline-secret"][..]] {
            let dir = tempfile::tempdir().expect("tmp");
            let path = dir.path().join("log.jsonl");
            let log = StreamLog::create(&path, &secrets(values)).expect("log");
            let (mut out, mut err) = (log.writer(), log.writer());
            let json: String = (0..20)
                .map(|i| format!("{{\"type\": \"assistant\", \"n\": {i}, \"text\": \"sk-streamed-secret\"}}\n"))
                .collect();
            let warnings: String = (0..20).map(|i| format!("warning {i}\n")).collect();
            let (mut a, mut b) = (json.as_bytes().chunks(7), warnings.as_bytes().chunks(3));
            loop {
                let (x, y) = (a.next(), b.next());
                if x.is_none() && y.is_none() {
                    break;
                }
                out.write_all(x.unwrap_or_default()).expect("write");
                err.write_all(y.unwrap_or_default()).expect("write");
            }
            drop(out);
            drop(err);
            let text = std::fs::read_to_string(&path).expect("read");
            assert_eq!(text.lines().count(), 40, "{values:?}: {text}");
            for line in text.lines() {
                let whole = line.starts_with("warning ") || serde_json::from_str::<serde_json::Value>(line).is_ok();
                assert!(whole, "{values:?}: a torn line {line:?}");
            }
            if !values.is_empty() {
                assert!(
                    !text.contains("sk-streamed-secret") || values[0].contains('\n'),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn stream_log_keeps_json_lines_json_when_a_secret_is_a_json_word() {
        let mut w = RedactingWriter::lines(Vec::new(), secrets(&["false"]));
        w.write_all(b"{\"is_error\":false,\"result\":\"false\"}\nplain false\n")
            .expect("write");
        let out = w.into_inner().expect("inner");
        assert_eq!(
            String::from_utf8_lossy(&out),
            "{\"is_error\":false,\"result\":\"***\"}\nplain ***\n"
        );
    }

    #[test]
    fn file_helpers_redact() {
        let dir = tempfile::tempdir().expect("tmp");
        let s = secrets(&["pa\"ss-word"]);
        let json = serde_json::json!({"v": "pa\"ss-word"}).to_string();
        let plain = dir.path().join("a/plain.json");
        write_file(&plain, json.as_bytes(), &s).expect("write");
        let atomic = dir.path().join("b/atomic.json");
        write_atomic(&atomic, json.as_bytes(), &s).expect("write");
        for path in [plain, atomic] {
            assert_eq!(std::fs::read_to_string(&path).expect("read"), r#"{"v":"***"}"#);
        }
    }

    #[test]
    fn json_file_helpers_keep_json_valid_when_a_secret_is_a_json_word() {
        let dir = tempfile::tempdir().expect("tmp");
        let s = secrets(&["false", "1234"]);
        let json = serde_json::json!({"answer": "false 1234", "ok": false, "ms": 1234}).to_string();
        let plain = dir.path().join("plain.json");
        write_json_file(&plain, json.as_bytes(), &s).expect("write");
        let atomic = dir.path().join("atomic.json");
        write_json_atomic(&atomic, json.as_bytes(), &s).expect("write");
        for path in [plain, atomic] {
            assert_eq!(
                std::fs::read_to_string(&path).expect("read"),
                r#"{"answer":"*** ***","ms":1234,"ok":false}"#
            );
        }
    }
}
