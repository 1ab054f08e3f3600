//! Everything the user sees goes through here: progress, the summary, warnings, errors,
//! diagnostics, notes and logs. The level (`--quiet`, `--verbose`) and colour (`--color`,
//! `NO_COLOR`, `CLICOLOR_FORCE`, whether the stream is a terminal) are decided once, in
//! [`Printer::new`], and nothing else in the binary writes to stdout or stderr (a test and
//! clippy's `disallowed_macros` hold it to that).
//!
//! Every write passes through the process's redaction layer (D18): [`secrets`] is the registry
//! resolution fills, and both streams, logs included, are redacted with it, even for values
//! registered after printing began. User text (ids, messages, provider output) is escaped before
//! it is printed, so it can neither recolour the terminal nor forge a line (D20); colour is added
//! after escaping, so only our own escapes reach the terminal.
//!
//! Nothing here panics on a closed stream: a reader that goes away (`agentv eval … | head -1`)
//! ends output quietly, as ripgrep does.

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
    /// Colour on stderr (progress, problems, notes, logs). The summary on stdout is plain:
    /// it is what scripts and CI logs keep.
    color: bool,
}

impl Printer {
    pub fn new(level: Level, color: ColorChoice) -> Self {
        Self {
            level,
            color: color.for_stream(&std::io::stderr()),
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

    /// Problems found in files; `--quiet` shows only the errors. The message and help are
    /// escaped onto their own line each, so an id quoted in them cannot forge another line.
    pub fn diagnostics(self, items: &[Diagnostic]) {
        for d in items {
            if d.severity == Severity::Warning && !self.shows(Level::Default) {
                continue;
            }
            let shown = Diagnostic {
                message: escape_line(&redacted(&d.message)).into_owned(),
                help: d.help.as_deref().map(|h| escape_line(&redacted(h)).into_owned()),
                ..d.clone()
            };
            let text = escape_text(&shown.to_string()).into_owned();
            to_stderr(&format!("{}\n", self.color_severity(&text, d.severity)));
        }
    }

    /// `file:line:col: error: …` with its severity word coloured.
    fn color_severity(self, text: &str, severity: Severity) -> String {
        let (word, style) = match severity {
            Severity::Error => ("error:", styles::ERROR),
            Severity::Warning => ("warning:", styles::WARNING),
        };
        if !self.color {
            return text.to_owned();
        }
        match text.split_once(&format!(" {word} ")) {
            Some((place, rest)) => format!("{place} {} {rest}", self.paint(style, word)),
            None => text.to_owned(),
        }
    }

    /// The result of the command on stdout: shown at every level (`--quiet` callers pass the
    /// one-line form). A closed pipe is not an error: the reader has what it wanted.
    pub fn result(self, text: &str) {
        to_stdout(text);
    }

    /// The writer of logs: stderr behind the redaction layer, at the level's verbosity.
    pub fn log_writer() -> RedactingWriter<std::io::Stderr> {
        RedactingWriter::new(std::io::stderr(), secrets())
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

/// User text redacted and escaped onto one line, ready to sit in a line of ours.
fn clean_line(text: &str) -> String {
    escape_line(&redacted(text)).into_owned()
}

fn to_stdout(text: &str) {
    let text = redacted(text);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => to_stderr(&format!("error: cannot write to stdout: {e}\n")),
    }
}

/// One write per message (stderr is unbuffered), errors ignored: there is nowhere left to
/// report them.
fn to_stderr(text: &str) {
    let _ = std::io::stderr().lock().write_all(redacted(text).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_from_quiet_to_verbose() {
        let at = |level| Printer { level, color: false };
        assert!(!at(Level::Quiet).shows(Level::Default));
        assert!(at(Level::Default).shows(Level::Default));
        assert!(!at(Level::Default).shows(Level::Verbose));
        assert!(at(Level::Verbose).shows(Level::Default));
    }

    #[test]
    fn colour_is_added_around_our_words_only() {
        let on = Printer {
            level: Level::Default,
            color: true,
        };
        let text = "e.yaml:3:5: error: id `a\\u{1b}[31m` is taken";
        let painted = on.color_severity(text, Severity::Error);
        assert_eq!(
            painted,
            "e.yaml:3:5: \u{1b}[1m\u{1b}[31merror:\u{1b}[0m id `a\\u{1b}[31m` is taken"
        );
        let off = Printer { color: false, ..on };
        assert_eq!(off.color_severity(text, Severity::Error), text);
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
