//! The lines of a results file as byte streams: a parser reads one line through [`LineRead`]
//! without the line ever being held whole, so reading a line costs what the parser keeps of it,
//! not the line's length (`docs/results.md#memory`). The stream stops at the line's end,
//! checks that the bytes are UTF-8 as they pass, and enforces a size cap when one is given.

use std::io::{self, BufRead, Read};

/// The environment variable that sets [`max_line_bytes`], in MiB.
pub const MAX_LINE_ENV: &str = "AGENTV_MAX_LINE_MB";

/// The default cap on one line that is read whole, in MiB.
pub const DEFAULT_MAX_LINE_MB: u64 = 16;

/// The most bytes one line of a results file or dataset may take when it must be read whole
/// (a report needs every field of a record; a dataset line becomes a case):
/// `AGENTV_MAX_LINE_MB` MiB, else [`DEFAULT_MAX_LINE_MB`]. A value that is not a positive
/// whole number is ignored.
pub fn max_line_bytes() -> u64 {
    std::env::var(MAX_LINE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|mb| *mb > 0)
        .unwrap_or(DEFAULT_MAX_LINE_MB)
        .saturating_mul(1024 * 1024)
}

/// `n` bytes as people read them (`12.5 MiB`, `312 KiB`, `20 bytes`).
pub fn size_text(n: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if n >= 1024 * 1024 {
        format!("{:.1} MiB", n as f64 / MIB)
    } else if n >= 1024 {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

/// Why a line stopped short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineProblem {
    /// A byte that is not UTF-8, at this 1-based byte column of the line.
    NotUtf8 { column: usize },
    /// The line is longer than the cap; it was read to its end without being kept.
    TooLong { limit: u64 },
}

/// How a line ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnd {
    /// At a `\n`.
    Newline,
    /// At the end of the file, without a newline (a line cut off by a killed run, or a file
    /// whose last line has no newline).
    Eof,
}

/// One line of `input` as a byte stream, without its newline. Byte order marks and blank
/// lines are the caller's business ([`skip_blank`]).
pub struct LineRead<'a, R> {
    input: &'a mut R,
    /// Bytes handed out so far.
    read: u64,
    limit: Option<u64>,
    end: Option<LineEnd>,
    problem: Option<LineProblem>,
    /// The start of a UTF-8 sequence cut by a chunk boundary.
    carry: [u8; 4],
    carry_len: usize,
}

impl<'a, R: BufRead> LineRead<'a, R> {
    /// The line starting at `input`'s position, `limit` bytes at most (none: any length).
    pub fn new(input: &'a mut R, limit: Option<u64>) -> Self {
        Self {
            input,
            read: 0,
            limit,
            end: None,
            problem: None,
            carry: [0; 4],
            carry_len: 0,
        }
    }

    /// What stopped the line short, if anything did.
    pub fn problem(&self) -> Option<LineProblem> {
        self.problem
    }

    /// Whether the line has ended (all of it was read).
    pub fn ended(&self) -> bool {
        self.end.is_some()
    }

    /// Reads the rest of the line without keeping it, so the next read starts on the next
    /// line; returns how it ended.
    pub fn finish(&mut self) -> io::Result<LineEnd> {
        loop {
            if let Some(end) = self.end {
                return Ok(end);
            }
            let available = self.input.fill_buf()?;
            if available.is_empty() {
                self.end = Some(LineEnd::Eof);
                continue;
            }
            match available.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    self.input.consume(i + 1);
                    self.end = Some(LineEnd::Newline);
                }
                None => {
                    let n = available.len();
                    self.input.consume(n);
                }
            }
        }
    }

    /// Checks that `chunk` (the next bytes of the line) continues valid UTF-8; `Err` holds the
    /// 1-based column of the first bad byte.
    fn check_utf8(&mut self, chunk: &[u8], at: u64) -> Result<(), usize> {
        let column = |offset: u64| usize::try_from(offset).unwrap_or(usize::MAX).saturating_add(1);
        let mut rest = chunk;
        let mut offset = at;
        if self.carry_len > 0 {
            let start = at - self.carry_len as u64;
            let want = utf8_width(self.carry[0]);
            let take = (want - self.carry_len).min(rest.len());
            self.carry[self.carry_len..self.carry_len + take].copy_from_slice(&rest[..take]);
            self.carry_len += take;
            rest = &rest[take..];
            offset += take as u64;
            if self.carry_len < want {
                return Ok(());
            }
            if std::str::from_utf8(&self.carry[..want]).is_err() {
                return Err(column(start));
            }
            self.carry_len = 0;
        }
        match std::str::from_utf8(rest) {
            Ok(_) => Ok(()),
            Err(e) => match e.error_len() {
                Some(_) => Err(column(offset + e.valid_up_to() as u64)),
                None => {
                    let tail = &rest[e.valid_up_to()..];
                    self.carry[..tail.len()].copy_from_slice(tail);
                    self.carry_len = tail.len();
                    Ok(())
                }
            },
        }
    }

    fn fail(&mut self, problem: LineProblem) -> io::Error {
        self.problem = Some(problem);
        io::Error::new(io::ErrorKind::InvalidData, "the line cannot be read")
    }
}

/// The length of the UTF-8 sequence a (valid) lead byte starts.
fn utf8_width(lead: u8) -> usize {
    match lead {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

impl<R: BufRead> Read for LineRead<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if let Some(problem) = self.problem {
            return Err(self.fail(problem));
        }
        if self.end.is_some() || out.is_empty() {
            return Ok(0);
        }
        let available = self.input.fill_buf()?;
        if available.is_empty() {
            self.end = Some(LineEnd::Eof);
            if self.carry_len > 0 {
                let column = usize::try_from(self.read).unwrap_or(usize::MAX) + 1 - self.carry_len;
                return Err(self.fail(LineProblem::NotUtf8 { column }));
            }
            return Ok(0);
        }
        let window = &available[..available.len().min(out.len())];
        let (n, newline) = match window.iter().position(|b| *b == b'\n') {
            Some(i) => (i, true),
            None => (window.len(), false),
        };
        out[..n].copy_from_slice(&window[..n]);
        self.input.consume(n + usize::from(newline));
        let at = self.read;
        self.read += n as u64;
        if let Some(limit) = self.limit
            && self.read > limit
        {
            if newline {
                self.end = Some(LineEnd::Newline);
            }
            return Err(self.fail(LineProblem::TooLong { limit }));
        }
        if let Err(column) = self.check_utf8(&out[..n], at) {
            if newline {
                self.end = Some(LineEnd::Newline);
            }
            return Err(self.fail(LineProblem::NotUtf8 { column }));
        }
        if newline {
            self.end = Some(LineEnd::Newline);
            if self.carry_len > 0 {
                let column = usize::try_from(self.read).unwrap_or(usize::MAX) + 1 - self.carry_len;
                return Err(self.fail(LineProblem::NotUtf8 { column }));
            }
            if n == 0 {
                return Ok(0);
            }
        }
        Ok(n)
    }
}

/// How [`read_line_capped`] found a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capped {
    /// The line is in the buffer.
    Line,
    /// The line holds this many bytes, over the limit: it was read to its end, not kept.
    TooLong { bytes: u64 },
}

/// Reads the next line of `input` into `buf` (cleared first, without its `\n`), keeping at
/// most `limit` bytes of it: a longer line is read to its end without being kept, so a line
/// of any length costs at most `limit` bytes. `None` at the end of the input.
pub fn read_line_capped<R: BufRead>(input: &mut R, buf: &mut Vec<u8>, limit: u64) -> io::Result<Option<Capped>> {
    buf.clear();
    let mut bytes = 0u64;
    let mut any = false;
    loop {
        let available = input.fill_buf()?;
        if available.is_empty() {
            break;
        }
        any = true;
        let (chunk, newline) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..i], true),
            None => (available, false),
        };
        bytes += chunk.len() as u64;
        if bytes <= limit {
            buf.extend_from_slice(chunk);
        } else if !buf.is_empty() {
            buf.clear();
            buf.shrink_to(64 * 1024);
        }
        let used = chunk.len() + usize::from(newline);
        input.consume(used);
        if newline {
            break;
        }
    }
    Ok(match (any, bytes > limit) {
        (false, _) => None,
        (true, false) => Some(Capped::Line),
        (true, true) => Some(Capped::TooLong { bytes }),
    })
}

/// What lies before the next line with content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Line `line` has content; `skipped` blanks before it were read.
    Line { line: usize, skipped: usize },
    /// The end of the input.
    End,
}

/// Skips blank lines (spaces, tabs, `\r`) and, before the first line, a UTF-8 byte order mark.
/// `line` is the number of the last line read; the returned line number is the next line's.
pub fn skip_blank<R: BufRead>(input: &mut R, mut line: usize) -> io::Result<Next> {
    let mut skipped = 0;
    let mut started = false;
    loop {
        if !started {
            line += 1;
            started = true;
            skipped = 0;
            if line == 1 {
                let available = input.fill_buf()?;
                if available.starts_with(b"\xEF\xBB\xBF") {
                    input.consume(3);
                }
            }
        }
        let available = input.fill_buf()?;
        if available.is_empty() {
            return Ok(Next::End);
        }
        let blanks = available
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t' | b'\r'))
            .unwrap_or(available.len());
        let stop = available.get(blanks).copied();
        input.consume(blanks);
        skipped += blanks;
        match stop {
            None => continue,
            Some(b'\n') => {
                input.consume(1);
                started = false;
            }
            Some(_) => return Ok(Next::Line { line, skipped }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of `text`, each read through [`LineRead`] in chunks of `chunk` bytes.
    fn lines(text: &[u8], chunk: usize, limit: Option<u64>) -> Vec<Result<(String, LineEnd), LineProblem>> {
        let mut input = io::BufReader::with_capacity(chunk.max(1), text);
        let mut out = Vec::new();
        let mut line = 0;
        while let Next::Line { line: n, .. } = skip_blank(&mut input, line).expect("reads") {
            line = n;
            let mut reader = LineRead::new(&mut input, limit);
            let mut bytes = Vec::new();
            let mut buf = vec![0; chunk.max(1)];
            let result = loop {
                match reader.read(&mut buf) {
                    Ok(0) => break Ok(()),
                    Ok(k) => bytes.extend_from_slice(&buf[..k]),
                    Err(_) => break Err(reader.problem().expect("a problem")),
                }
            };
            let end = reader.finish().expect("finishes");
            out.push(result.map(|()| (String::from_utf8(bytes).expect("utf-8"), end)));
        }
        out
    }

    #[test]
    fn lines_end_at_newlines_and_blank_lines_and_a_bom_are_skipped() {
        for chunk in [1, 2, 3, 7, 64] {
            // A byte order mark is seen when the buffer holds the first three bytes (files
            // are read 64 KiB at a time).
            let bom = if chunk >= 3 { "\u{feff}" } else { "" };
            let got = lines(format!("{bom}ab\n\n  \r\n  é€😀\r\nlast").as_bytes(), chunk, None);
            assert_eq!(
                got,
                [
                    Ok(("ab".to_owned(), LineEnd::Newline)),
                    Ok(("é€😀\r".to_owned(), LineEnd::Newline)),
                    Ok(("last".to_owned(), LineEnd::Eof)),
                ],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_stop_the_line_at_their_column_and_the_next_line_reads() {
        for chunk in [1, 2, 5, 64] {
            let mut text = b"abc\xffdef\n".to_vec();
            text.extend_from_slice("é\n".as_bytes());
            text.extend_from_slice(b"x\xe2\x82\n");
            text.extend_from_slice(b"ok\n");
            let got = lines(&text, chunk, None);
            assert_eq!(got[0], Err(LineProblem::NotUtf8 { column: 4 }), "chunk {chunk}");
            assert_eq!(got[1], Ok(("é".to_owned(), LineEnd::Newline)), "chunk {chunk}");
            assert_eq!(got[2], Err(LineProblem::NotUtf8 { column: 2 }), "chunk {chunk}");
            assert_eq!(got[3], Ok(("ok".to_owned(), LineEnd::Newline)), "chunk {chunk}");
        }
    }

    #[test]
    fn a_line_over_the_limit_is_a_problem_and_the_next_line_reads() {
        for chunk in [1, 3, 64] {
            let got = lines(b"12345678\n123\n", chunk, Some(4));
            assert_eq!(got[0], Err(LineProblem::TooLong { limit: 4 }), "chunk {chunk}");
            assert_eq!(got[1], Ok(("123".to_owned(), LineEnd::Newline)), "chunk {chunk}");
        }
    }

    #[test]
    fn a_capped_line_keeps_at_most_the_limit_and_the_next_line_reads() {
        for capacity in [1, 3, 4096] {
            let mut input = io::BufReader::with_capacity(capacity, &b"1234567890\nabc\nlast"[..]);
            let mut buf = Vec::new();
            let mut got = Vec::new();
            while let Some(found) = read_line_capped(&mut input, &mut buf, 5).expect("reads") {
                got.push((found, String::from_utf8(buf.clone()).expect("utf-8")));
                assert!(buf.len() <= 5);
            }
            assert_eq!(
                got,
                [
                    (Capped::TooLong { bytes: 10 }, String::new()),
                    (Capped::Line, "abc".to_owned()),
                    (Capped::Line, "last".to_owned()),
                ],
                "capacity {capacity}"
            );
        }
    }

    #[test]
    fn sizes_read_as_people_read_them() {
        assert_eq!(size_text(20), "20 bytes");
        assert_eq!(size_text(312 * 1024 + 5), "312 KiB");
        assert_eq!(size_text(45 * 1024 * 1024 + 512 * 1024), "45.5 MiB");
    }
}
