//! What `agentv validate` prints: each file's problems, a line per file, a count.

use agentv_core::Validation;

use super::{Level, Printer, clean_line, styles};

impl Printer {
    /// Every problem, file by file; `--quiet` keeps the errors and the closing count.
    pub fn validation(self, validation: &Validation) {
        self.diagnostics(&validation.preamble);
        for file in &validation.files {
            self.diagnostics(&file.diagnostics);
            let path = clean_line(&file.path.display().to_string());
            if file.errors > 0 {
                let mark = self.mark(styles::BAD, "✘");
                self.line(Level::Default, &format!("{mark} {path} ({} error(s))", file.errors));
            } else {
                let mark = self.mark(styles::GOOD, "✔");
                self.line(Level::Default, &format!("{mark} {path}"));
            }
        }
        let line = format!(
            "{} file(s) checked, {} invalid",
            validation.files.len(),
            validation.invalid()
        );
        self.line(Level::Quiet, &line);
    }
}
