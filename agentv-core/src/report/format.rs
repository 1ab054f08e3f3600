//! The report formats of `eval --report` and `report --report`, as a table: each format's module
//! declares one [`FormatEntry`] (`pub(crate) static FORMAT`) and the table in `report/mod.rs`
//! lists the module, so a new format is one file and one line
//! (`docs/architecture.md#add-a-report-format`). The command line parses a format name with
//! [`clap::ValueEnum`] over the same table.

use std::fmt;
use std::io;
use std::path::Path;

use clap::builder::PossibleValue;

use super::sink::Sink;
use crate::redact::Secrets;

/// One report format: its names, its default file name, and how a sink for it is opened.
#[derive(Debug)]
pub struct FormatEntry {
    /// The name `--report` takes (`junit`).
    pub name: &'static str,
    /// Other names it accepts (`xml`).
    pub aliases: &'static [&'static str],
    /// How messages name it (`JUnit`: "JUnit report written to …").
    pub label: &'static str,
    /// What follows the results file's stem in the default file name (`junit.xml`).
    pub extension: &'static str,
    /// One line for `--help`.
    pub doc: &'static str,
    /// Opens the sink that writes the report.
    pub open: fn(&ReportTarget<'_>) -> io::Result<Box<dyn Sink>>,
}

/// Where a report goes and what it says about itself.
#[derive(Debug, Clone, Copy)]
pub struct ReportTarget<'a> {
    pub path: &'a Path,
    /// The report's title (the results file's name by default).
    pub title: &'a str,
    /// The run's secrets: records reach a sink redacted already, but a format that writes text
    /// of its own (a title) masks that too.
    pub secrets: &'a Secrets,
}

/// A report format of the table.
#[derive(Clone, Copy)]
pub struct ReportFormat(&'static FormatEntry);

impl ReportFormat {
    /// JUnit XML, for CI systems.
    pub const JUNIT: Self = Self(&super::junit::FORMAT);
    /// Markdown, for a pull-request comment.
    pub const MARKDOWN: Self = Self(&super::markdown::FORMAT);
    /// One self-contained HTML page (also what `report --compare` writes).
    pub const HTML: Self = Self(&super::html::FORMAT);

    pub(crate) const fn of(entry: &'static FormatEntry) -> Self {
        Self(entry)
    }

    /// Every format, in table order.
    pub fn all() -> &'static [Self] {
        super::FORMATS
    }

    /// The format `name` names (its name or an alias, in any letter case).
    pub fn find(name: &str) -> Option<Self> {
        let name = name.trim();
        Self::all().iter().copied().find(|f| {
            std::iter::once(f.0.name)
                .chain(f.0.aliases.iter().copied())
                .any(|n| n.eq_ignore_ascii_case(name))
        })
    }

    /// The formats for messages: "junit, markdown or html".
    pub fn known() -> String {
        let names: Vec<&str> = Self::all().iter().map(|f| f.name()).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }

    pub fn name(self) -> &'static str {
        self.0.name
    }

    pub fn label(self) -> &'static str {
        self.0.label
    }

    pub fn extension(self) -> &'static str {
        self.0.extension
    }

    /// Opens the sink that writes this report to `target.path`.
    pub fn open(self, target: &ReportTarget<'_>) -> io::Result<Box<dyn Sink>> {
        (self.0.open)(target)
    }
}

impl PartialEq for ReportFormat {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for ReportFormat {}

impl fmt::Debug for ReportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl fmt::Display for ReportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl clap::ValueEnum for ReportFormat {
    fn value_variants<'a>() -> &'a [Self] {
        Self::all()
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(
            PossibleValue::new(self.0.name)
                .aliases(self.0.aliases.iter().copied())
                .help(self.0.doc),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_found_by_each_of_its_names_in_any_case() {
        for format in ReportFormat::all() {
            for name in std::iter::once(format.name()).chain(format.0.aliases.iter().copied()) {
                assert_eq!(ReportFormat::find(name), Some(*format), "{name}");
                assert_eq!(ReportFormat::find(&name.to_ascii_uppercase()), Some(*format), "{name}");
            }
        }
        assert_eq!(ReportFormat::find("pdf"), None);
        assert_eq!(ReportFormat::known(), "junit, markdown or html");
    }

    #[test]
    fn names_aliases_and_extensions_are_unique() {
        let mut names = std::collections::HashSet::new();
        let mut extensions = std::collections::HashSet::new();
        for format in ReportFormat::all() {
            for name in std::iter::once(format.name()).chain(format.0.aliases.iter().copied()) {
                assert!(names.insert(name.to_ascii_lowercase()), "two formats are named {name}");
            }
            assert!(
                extensions.insert(format.extension()),
                "two formats write .{}",
                format.extension()
            );
        }
    }

    #[test]
    fn clap_parses_the_table() {
        use clap::ValueEnum;
        assert_eq!(ReportFormat::from_str("md", true), Ok(ReportFormat::MARKDOWN));
        assert_eq!(ReportFormat::from_str("JUnit", true), Ok(ReportFormat::JUNIT));
        assert!(ReportFormat::from_str("pdf", true).is_err());
    }
}
