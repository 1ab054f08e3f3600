//! Fitting text into terminal columns: display widths, ellipses, paths relative to the working
//! directory, number formats, and the few colours the summary uses for its own words.
//!
//! Widths are display columns (`unicode-width`), not bytes or characters: `é` is one column,
//! `界` two. Everything here works on text that is already redacted and escaped, so it holds no
//! control characters.

use std::path::Path;
use std::time::Duration;

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Display columns of `text`.
pub fn width(text: &str) -> usize {
    text.width()
}

/// `text` cut to at most `max` columns, with `…` at the end when cut: for messages, whose start
/// says the most.
pub fn cut_end(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_owned();
    }
    let mut out = take_columns(text.chars(), max.saturating_sub(1));
    out.push('…');
    out
}

/// `text` cut to at most `max` columns by replacing its middle with `…`: for ids and paths,
/// whose start and end both tell them apart (`suite-a/…/case-17`).
pub fn cut_middle(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let room = max - 1;
    let head = take_columns(text.chars(), room.div_ceil(2));
    let tail: String = take_columns(text.chars().rev(), room / 2).chars().rev().collect();
    format!("{head}…{tail}")
}

/// The longest run of `chars` that fits in `max` columns.
fn take_columns(chars: impl Iterator<Item = char>, max: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for c in chars {
        let w = c.width().unwrap_or(0);
        if used + w > max {
            break;
        }
        used += w;
        out.push(c);
    }
    out
}

/// `text` padded with spaces to `columns` on the right (left-aligned).
pub fn pad_right(text: &str, columns: usize) -> String {
    format!("{text}{}", " ".repeat(columns.saturating_sub(width(text))))
}

/// `text` padded with spaces to `columns` on the left (right-aligned).
pub fn pad_left(text: &str, columns: usize) -> String {
    format!("{}{text}", " ".repeat(columns.saturating_sub(width(text))))
}

/// `path` as the user would type it from `cwd`: relative when it is below `cwd`, as given
/// otherwise.
pub fn relative_path(path: &Path, cwd: Option<&Path>) -> String {
    match cwd.and_then(|cwd| path.strip_prefix(cwd).ok()) {
        Some(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Some(rel) => rel.display().to_string(),
        None => path.display().to_string(),
    }
}

/// A wall time a person reads at a glance: `850ms`, `12.3s`, `4m 05s`, `1h 02m 03s`.
pub fn duration(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1000.0 {
        return format!("{}ms", ms.round() as u64);
    }
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        return format!("{secs:.1}s");
    }
    let whole = d.as_secs();
    let (h, m, s) = (whole / 3600, whole / 60 % 60, whole % 60);
    if h == 0 {
        format!("{m}m {s:02}s")
    } else {
        format!("{h}h {m:02}m {s:02}s")
    }
}

/// A count with thousands separators: `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count in at most five columns for a table cell: `950`, `12.3k`, `4.5M`, `18.4E`.
pub fn compact_count(n: u64) -> String {
    let units = [
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
    ];
    let value = n as f64;
    for (size, unit) in units {
        if value >= size {
            let scaled = value / size;
            return if scaled >= 100.0 {
                format!("{scaled:.0}{unit}")
            } else {
                format!("{scaled:.1}{unit}")
            };
        }
    }
    n.to_string()
}

/// Dollars: four decimals below $1 (model calls cost fractions of a cent), two up to a
/// million, then in scientific notation so that no amount outgrows its column.
pub fn dollars(usd: f64) -> String {
    if usd.abs() < 1.0 {
        format!("${usd:.4}")
    } else if usd.abs() < 1e6 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.2e}")
    }
}

/// Our own words in colour, when colour is on; user text is never painted (it is escaped
/// before it gets here, and painting it would not change that).
#[derive(Debug, Clone, Copy)]
pub struct Paint {
    pub on: bool,
}

/// SGR codes of the summary's few styles.
#[derive(Debug, Clone, Copy)]
pub enum Tone {
    Heading,
    Good,
    SoSo,
    Bad,
    Dim,
}

impl Paint {
    pub fn tone(self, tone: Tone, text: &str) -> String {
        if !self.on || text.is_empty() {
            return text.to_owned();
        }
        let sgr = match tone {
            Tone::Heading => "1",
            Tone::Good => "32",
            Tone::SoSo => "33",
            Tone::Bad => "31",
            Tone::Dim => "2",
        };
        format!("\u{1b}[{sgr}m{text}\u{1b}[0m")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_count_columns_not_bytes() {
        let cases = [
            ("short", 10, "short", "short"),
            ("abcdefghij", 10, "abcdefghij", "abcdefghij"),
            ("abcdefghijk", 10, "abcdefghi…", "abcde…hijk"),
            ("ééééééé", 4, "ééé…", "éé…é"),
            ("界界界界", 5, "界界…", "界…界"),
            ("abc", 1, "…", "…"),
            ("abc", 0, "…", ""),
        ];
        for (text, max, end, middle) in cases {
            assert_eq!(cut_end(text, max), end, "end {text:?} {max}");
            assert_eq!(cut_middle(text, max), middle, "middle {text:?} {max}");
            if max > 0 {
                assert!(width(&cut_middle(text, max)) <= max);
                assert!(width(&cut_end(text, max)) <= max);
            }
        }
    }

    #[test]
    fn paths_below_the_working_directory_are_relative() {
        let cwd = Path::new("/home/u/project");
        let cases = [
            ("/home/u/project/.agentv/results/r.jsonl", ".agentv/results/r.jsonl"),
            ("/home/u/project", "."),
            ("/tmp/r.jsonl", "/tmp/r.jsonl"),
            ("r.jsonl", "r.jsonl"),
        ];
        for (path, want) in cases {
            assert_eq!(relative_path(Path::new(path), Some(cwd)), want, "{path}");
        }
        assert_eq!(relative_path(Path::new("/a/b"), None), "/a/b");
    }

    #[test]
    fn numbers_read_at_a_glance() {
        let cases = [
            (Duration::from_millis(0), "0ms"),
            (Duration::from_millis(850), "850ms"),
            (Duration::from_millis(12_340), "12.3s"),
            (Duration::from_secs(245), "4m 05s"),
            (Duration::from_secs(3723), "1h 02m 03s"),
        ];
        for (d, want) in cases {
            assert_eq!(duration(d), want);
        }
        assert_eq!(count(0), "0");
        assert_eq!(count(1234), "1,234");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(compact_count(950), "950");
        assert_eq!(compact_count(12_345), "12.3k");
        assert_eq!(compact_count(123_456), "123k");
        assert_eq!(compact_count(4_500_000), "4.5M");
        assert_eq!(compact_count(u64::MAX), "18.4E");
        assert_eq!(dollars(0.0123), "$0.0123");
        assert_eq!(dollars(12.5), "$12.50");
        assert_eq!(dollars(1e300), "$1.00e300");
    }

    #[test]
    fn paint_is_off_unless_asked() {
        assert_eq!(Paint { on: false }.tone(Tone::Bad, "x"), "x");
        assert_eq!(Paint { on: true }.tone(Tone::Bad, "x"), "\u{1b}[31mx\u{1b}[0m");
    }
}
