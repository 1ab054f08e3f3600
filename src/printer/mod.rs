//! Everything the user sees goes through here: progress, the summary, warnings, errors,
//! diagnostics, notes and logs. The level (`--quiet`, `--verbose`) and colour (`--color`,
//! `NO_COLOR`, `CLICOLOR_FORCE`, whether the stream is a terminal) are decided once, in
//! [`Printer::new`], and nothing else in the binary writes to stdout or stderr (a test, and
//! clippy's `print_stdout`, `print_stderr` and `dbg_macro`, denied in `main.rs`, hold it to
//! that).
//!
//! Every write passes through the process's redaction layer (`docs/architecture.md#secrets`): [`secrets`] is the registry
//! resolution fills, and both streams, logs included, are redacted with it, even for values
//! registered after printing began. User text (ids, messages, provider output) is escaped before
//! it is printed, so it can neither recolour the terminal nor forge a line (`docs/architecture.md#case-ids`); colour is added
//! after escaping, so only our own escapes reach the terminal.
//!
//! Nothing here panics on a closed stream: a reader that goes away (`agentv eval … | head -1`)
//! ends output quietly, as ripgrep does.

mod bar;
mod eval;
mod progress;
mod validate;

use std::borrow::Cow;
use std::io::Write;
use std::sync::LazyLock;

use agentv_core::{Diagnostic, RedactingWriter, Secrets, Severity, escape_line, escape_text};
use anstyle::{AnsiColor, Style};

pub use progress::Progress;

/// The process's secrets: resolution registers `${{ VAR }}` values here, and every print
/// redacts them, including values registered after printing began.
static SECRETS: LazyLock<Secrets> = LazyLock::new(Secrets::default);

/// The registry every output of this process redacts through.
pub fn secrets() -> Secrets {
    SECRETS.clone()
}

fn redacted(text: &str) -> Cow<'_, str> {
    SECRETS.redact(text)
}

/// How much is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// `--quiet`: errors and the final summary line.
    Quiet,
    /// Progress, warnings, notes and the summary.
    Default,
    /// `--verbose`: also debug logs.
    Verbose,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    // A stream that is a terminal, unless `NO_COLOR` is set (or `CLICOLOR=0`);
    // `CLICOLOR_FORCE` colours a pipe too.
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether `stream` gets colour. `auto` follows `anstream`: `NO_COLOR` (non-empty) wins,
    /// then `CLICOLOR_FORCE`, then `CLICOLOR=0`, then whether the stream is a terminal that
    /// supports colour.
    fn for_stream<S: anstream::stream::RawStream>(self, stream: &S) -> bool {
        match self {
            Self::Always => true,
            Self::Never => false,
            Self::Auto => !matches!(anstream::AutoStream::choice(stream), anstream::ColorChoice::Never),
        }
    }
}

/// The styles of our own words. User text is never styled.
mod styles {
    use super::{AnsiColor, Style};

    pub const ERROR: Style = AnsiColor::Red.on_default().bold();
    pub const WARNING: Style = AnsiColor::Yellow.on_default().bold();
    pub const GOOD: Style = AnsiColor::Green.on_default();
    pub const BAD: Style = AnsiColor::Red.on_default();
    pub const SO_SO: Style = AnsiColor::Yellow.on_default();
    pub const DIM: Style = Style::new().dimmed();
}

/// Where and how output goes. Cheap to copy: commands and the progress observer each hold one.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    level: Level,
    /// Colour on stderr (progress, problems, notes, logs).
    color: bool,
    /// Colour on stdout (the summary): decided for stdout itself, so a summary piped to a file
    /// or a script stays plain while the progress on the terminal is coloured.
    color_stdout: bool,
}

impl Printer {
    pub fn new(level: Level, color: ColorChoice) -> Self {
        Self {
            level,
            color: color.for_stream(&std::io::stderr()),
            color_stdout: color.for_stream(&std::io::stdout()),
        }
    }

    /// Whether stderr gets colour (logs follow it).
    pub fn colors_stderr(self) -> bool {
        self.color
    }

    fn shows(self, level: Level) -> bool {
        self.level >= level
    }

    /// `text` in `style` on stderr when colour is on.
    fn paint(self, style: Style, text: &str) -> String {
        if self.color {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    }

    /// An error: always shown.
    pub fn error(self, message: &str) {
        let label = self.paint(styles::ERROR, "error:");
        to_stderr(&format!("{label} {}\n", escape_text(&redacted(message))));
    }

    /// A warning: hidden by `--quiet`.
    pub fn warning(self, message: &str) {
        if self.shows(Level::Default) {
            let label = self.paint(styles::WARNING, "warning:");
            to_stderr(&format!("{label} {}\n", escape_text(&redacted(message))));
        }
    }

    /// A note on what is going on: hidden by `--quiet`.
    pub fn note(self, message: &str) {
        if self.shows(Level::Default) {
            to_stderr(&format!("{}\n", escape_text(&redacted(message))));
        }
    }

    /// Problems found in files, each with the source line it points at (rustc-style, through
    /// [`Diagnostic::render`]); `--quiet` shows only the errors. Every piece of user text in it
    /// (path, message, help, the quoted line) is redacted and escaped before rendering, so the
    /// only escapes that reach the terminal are the renderer's colours.
    ///
    /// At most [`MAX_DIAGNOSTICS`] are shown per call unless `--verbose`; the rest are counted
    /// in one closing line, so a file with a problem on every one of its 80 000 lines does not
    /// bury the summary (or take minutes to print).
    pub fn diagnostics(self, items: &[Diagnostic]) {
        let cap = if self.shows(Level::Verbose) {
            usize::MAX
        } else {
            MAX_DIAGNOSTICS
        };
        let mut shown_count = 0;
        let (mut errors, mut warnings) = (0usize, 0usize);
        for d in items {
            if d.severity == Severity::Warning && !self.shows(Level::Default) {
                continue;
            }
            if shown_count == cap {
                match d.severity {
                    Severity::Error => errors += 1,
                    Severity::Warning => warnings += 1,
                }
                continue;
            }
            shown_count += 1;
            to_stderr(&format!("{}\n", shown(d).render(self.color)));
        }
        if errors + warnings > 0 {
            to_stderr(&format!(
                "… {errors} more error(s) and {warnings} more warning(s) not shown (--verbose shows them all)\n"
            ));
        }
    }

    /// The result of the command on stdout: shown at every level (`--quiet` callers pass the
    /// one-line form). A closed pipe is not an error: the reader has what it wanted.
    pub fn result(self, text: &str) {
        to_stdout(text);
    }

    /// The writer of logs: stderr behind the redaction layer, at the level's verbosity; above
    /// the progress bar while one is up.
    pub fn log_writer() -> RedactingWriter<LogLine> {
        RedactingWriter::new(LogLine::default(), secrets())
    }

    /// The `tracing` filter for this level, unless `AGENTV_LOG` sets one.
    pub fn log_filter(self) -> &'static str {
        match self.level {
            Level::Quiet => "error",
            Level::Default => "warn",
            Level::Verbose => "agentv=debug,agentv_core=debug,agentv_proxy=debug",
        }
    }

    fn mark(self, style: Style, mark: &str) -> String {
        self.paint(style, mark)
    }

    /// A line of ours on stderr when `level` is shown. It may hold our colours, so it is not
    /// escaped here: user text in it must already be (see [`clean_line`]).
    fn line(self, level: Level, text: &str) {
        if self.shows(level) {
            to_stderr(&format!("{text}\n"));
        }
    }
}

/// How many problems one [`Printer::diagnostics`] call shows without `--verbose`.
pub const MAX_DIAGNOSTICS: usize = 50;

/// User text redacted and escaped onto one line, ready to sit in a line of ours.
fn clean_line(text: &str) -> String {
    escape_line(&redacted(text)).into_owned()
}

/// `d` fit for the terminal: path, message and help redacted and escaped onto one line each;
/// the quoted source line redacted, with each character that needs escaping shown as `�` so
/// the caret under the column still lines up.
fn shown(d: &Diagnostic) -> Diagnostic {
    Diagnostic {
        file: clean_line(&d.file.display().to_string()).into(),
        message: clean_line(&d.message),
        help: d.help.as_deref().map(clean_line),
        source_line: d.source_line.as_deref().map(|line| {
            redacted(line)
                .chars()
                .map(|c| {
                    let mut buf = [0; 4];
                    let one = c.encode_utf8(&mut buf);
                    if escape_line(one).len() > one.len() {
                        '\u{fffd}'
                    } else {
                        c
                    }
                })
                .collect()
        }),
        ..d.clone()
    }
}

/// Set when stdout refused output for a reason other than a closed pipe (a full disk, a
/// revoked terminal): the command's output is lost, so its exit code must not say success.
static STDOUT_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// True once a write to stdout failed (a closed pipe does not count: that reader wanted no
/// more, as with `| head -1`).
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(std::sync::atomic::Ordering::Relaxed)
}

fn to_stdout(text: &str) {
    let text = redacted(text);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => {
            STDOUT_FAILED.store(true, std::sync::atomic::Ordering::Relaxed);
            to_stderr(&format!("error: cannot write to stdout: {e}\n"));
        }
    }
}

/// One write per message (stderr is unbuffered), errors ignored: there is nowhere left to
/// report them. While a progress bar is up, the message goes above it.
fn to_stderr(text: &str) {
    let text = redacted(text);
    match bar::active() {
        Some(bar) => bar.println(text.strip_suffix('\n').unwrap_or(&text)),
        None => {
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        }
    }
}

/// One log event on its way to stderr: written through at once, or, while a progress bar is
/// up, gathered and printed above the bar when the event ends (the logger writes each event
/// whole, then drops its writer).
#[derive(Debug, Default)]
pub struct LogLine {
    held: Vec<u8>,
}

impl Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.held.is_empty() && bar::active().is_none() {
            std::io::stderr().lock().write_all(buf)?;
        } else {
            self.held.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.held.is_empty() {
            let text = String::from_utf8_lossy(&std::mem::take(&mut self.held)).into_owned();
            to_stderr(&text);
        }
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_from_quiet_to_verbose() {
        let at = |level| Printer {
            level,
            color: false,
            color_stdout: false,
        };
        assert!(!at(Level::Quiet).shows(Level::Default));
        assert!(at(Level::Default).shows(Level::Default));
        assert!(!at(Level::Default).shows(Level::Verbose));
        assert!(at(Level::Verbose).shows(Level::Default));
    }

    #[test]
    fn diagnostics_keep_user_text_inert() {
        let d = Diagnostic {
            severity: Severity::Error,
            file: "e\u{1b}[31m.yaml".into(),
            pos: agentv_core::load::node::Pos { line: 2, column: 9 },
            message: "id `a\nforged: error: x` is taken".into(),
            help: Some("rename \u{7}it".into()),
            source_line: Some("  - id: \u{1b}[2Jboom".into()),
        };
        let plain = shown(&d).render(false);
        assert!(!plain.contains('\u{1b}') && !plain.contains('\u{7}'), "{plain:?}");
        assert!(
            plain.starts_with(
                "e\\u{1b}[31m.yaml:2:9: error: id `a\\nforged: error: x` is taken\n  help: rename \\u{7}it\n"
            ),
            "{plain}"
        );
        assert!(plain.contains("- id: \u{fffd}[2Jboom"), "{plain}");
        let colored = shown(&d).render(true);
        assert!(colored.contains('\u{1b}'), "the renderer's own colours");
        assert!(!colored.contains("\u{1b}[2J"), "{colored:?}");
    }

    #[test]
    fn explicit_color_choices_ignore_the_stream() {
        assert!(ColorChoice::Always.for_stream(&std::io::stderr()));
        assert!(!ColorChoice::Never.for_stream(&std::io::stderr()));
    }
}

/// Only this module writes to the terminal: anything else in `src/` that prints would bypass
/// the level, the colour choice, the redaction and the escaping.
#[cfg(test)]
mod only_the_printer_prints {
    use std::path::{Path, PathBuf};

    /// What writes to stdout or stderr without the printer.
    const FORBIDDEN: &[&str] = &[
        "println!",
        "eprintln!",
        "print!",
        "eprint!",
        "dbg!",
        "io::stdout()",
        "io::stderr()",
    ];

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn nothing_outside_the_printer_writes_to_stdout_or_stderr() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let printer = src.join("printer");
        let mut files = Vec::new();
        sources(&src, &mut files);
        assert!(files.len() > 5, "found the sources: {files:?}");
        let mut found = Vec::new();
        for file in files.iter().filter(|f| !f.starts_with(&printer)) {
            let text = std::fs::read_to_string(file).expect("source");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                for word in FORBIDDEN {
                    if code.contains(word) {
                        found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                    }
                }
            }
        }
        assert!(
            found.is_empty(),
            "print through the printer instead:\n{}",
            found.join("\n")
        );
    }
}
