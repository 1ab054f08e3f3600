//! Which attached files are guidelines: `guideline_patterns` of the project config file, or the
//! defaults (`docs/architecture.md#guidelines`).

use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::config::node::{Node, Pos, parse_yaml};
use crate::config::{Diagnostic, Diagnostics, Fields, Key, KeyTable, Kind, describe};
use crate::paths::Workspace;

/// Guideline patterns used when no `.agentv.yaml` sets `guideline_patterns`.
pub const DEFAULT_GUIDELINE_PATTERNS: &[&str] = &[
    "**/*.instructions.md",
    "**/instructions/**",
    "**/*.prompt.md",
    "**/prompts/**",
];

const CONFIG_KEYS: &[Key] = &[
    Key::new("$schema", Kind::Str, "A JSON Schema for editors; not read."),
    Key::new(
        "guideline_patterns",
        Kind::List(&Kind::Str),
        "Globs (relative to the repository root) of attached files that are guidelines.",
    ),
];

/// The keys of `.agentv.yaml`.
pub const CONFIG_FILE: KeyTable = KeyTable::new(
    "the config file",
    "Project configuration (`.agentv.yaml`).",
    &[CONFIG_KEYS],
);

/// Decides which attached files are guidelines.
#[derive(Debug, Clone)]
pub struct GuidelineMatcher {
    set: GlobSet,
}

impl GuidelineMatcher {
    /// A matcher for `patterns`, each with the position it was written at (for the warning
    /// when it is not a valid glob).
    pub fn new(patterns: &[(String, Pos)], diags: &mut Diagnostics) -> Self {
        let mut builder = GlobSetBuilder::new();
        for (pattern, pos) in patterns {
            match GlobBuilder::new(pattern).literal_separator(true).build() {
                Ok(glob) => {
                    builder.add(glob);
                }
                Err(e) => diags.warn(
                    *pos,
                    format!("invalid guideline pattern `{pattern}`: {}; it is ignored", e.kind()),
                    None,
                ),
            }
        }
        let set = builder.build().unwrap_or_else(|_| GlobSet::empty());
        Self { set }
    }

    pub fn is_guideline(&self, repo_relative: &str) -> bool {
        self.set.is_match(repo_relative)
    }

    /// Reads `guideline_patterns` from the nearest `.agentv.yaml` or `.agentv/config.yaml`
    /// between `eval_dir` and the repository root; the defaults apply when there is none, or
    /// when it cannot be read (after reporting why).
    pub fn for_dir(ws: &Workspace, eval_dir: &Path, warnings: &mut Vec<Diagnostic>) -> Self {
        for dir in ws.ancestors_to_root(eval_dir) {
            for name in CONFIG_FILE_NAMES {
                let path = dir.join(name);
                if path.is_file() {
                    let mut diags = Diagnostics::new(&path);
                    let patterns = crate::config::source::read_text(&path, "config file", &mut diags)
                        .and_then(|text| read_patterns(&text, &mut diags));
                    let matcher = Self::new(&patterns.unwrap_or_else(default_patterns), &mut diags);
                    warnings.extend(diags.into_vec());
                    return matcher;
                }
            }
        }
        let mut diags = Diagnostics::new(Path::new("<defaults>"));
        Self::new(&default_patterns(), &mut diags)
    }
}

/// Names of the project config file, in the order they are looked for in each directory.
pub const CONFIG_FILE_NAMES: &[&str] = &[
    ".agentv.yaml",
    ".agentv.yml",
    ".agentv/config.yaml",
    ".agentv/config.yml",
];

fn default_patterns() -> Vec<(String, Pos)> {
    DEFAULT_GUIDELINE_PATTERNS
        .iter()
        .map(|p| ((*p).to_owned(), Pos::default()))
        .collect()
}

/// The `guideline_patterns` of a config file; `None` when it sets none (the defaults apply).
fn read_patterns(text: &str, diags: &mut Diagnostics) -> Option<Vec<(String, Pos)>> {
    let root: Node = match parse_yaml(text) {
        Ok(root) => root,
        Err(e) => {
            diags.yaml_syntax(&e);
            return None;
        }
    };
    if root.is_null() {
        return None;
    }
    let mut f = Fields::of(&root, &CONFIG_FILE, diags)?;
    let _ = f.take("$schema");
    let list = f.take("guideline_patterns");
    f.warn_unknown(diags);
    let list = list?;
    let Some(items) = list.as_seq() else {
        diags.error(
            list.pos,
            format!(
                "`guideline_patterns` must be a list of globs, found {}",
                list.type_name()
            ),
            Some("for example `guideline_patterns: ['**/*.instructions.md']`".to_owned()),
        );
        return None;
    };
    let mut patterns = Vec::new();
    for item in items {
        match item.as_str() {
            Some(p) => patterns.push((p.to_owned(), item.pos)),
            None => diags.warn(
                item.pos,
                format!(
                    "a guideline pattern must be a string, found {}; it is ignored",
                    describe(item)
                ),
                None,
            ),
        }
    }
    Some(patterns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_patterns_match_like_the_spec() {
        let mut diags = Diagnostics::new(Path::new("x"));
        let m = GuidelineMatcher::new(&default_patterns(), &mut diags);
        let cases = [
            ("docs/python.instructions.md", true),
            ("a/instructions/style.md", true),
            ("x.prompt.md", true),
            ("prompts/deep/a.txt", true),
            ("src/main.py", false),
            ("docs/instructions.txt", false),
        ];
        for (path, want) in cases {
            assert_eq!(m.is_guideline(path), want, "{path}");
        }
    }
}
