//! `agentv convert`: rewrites an eval file (or a JSONL dataset's sidecar) from one AgentV
//! generation to the other (`docs/convert.md`).
//!
//! The conversion edits the source text at the positions of the parsed tree ([`edit`]) instead
//! of serialising a new tree, so comments, blank lines, quoting and key order survive. Each
//! construct is mapped as `reference/agentv-4.md` §8 says; one with no equivalent in the
//! target generation is an error at its line and column (nothing is written), or a warning
//! when dropping it cannot change a score.

mod edit;
mod from_promptfoo;
mod to_promptfoo;
mod to_v2;
mod to_v4;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use crate::config::node::parse_yaml;
use crate::config::{Diagnostic, Diagnostics, Node, Pos};
pub use crate::evaluators::Generation;

/// What kind of YAML file is converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// An eval suite: top-level keys and cases.
    Suite,
    /// The sidecar `<name>.yaml` of a JSONL dataset: suite keys only.
    Sidecar,
}

/// A converted file.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The converted text (the input itself when it already was `to`).
    pub text: String,
    /// The generation the input was written for.
    pub from: Generation,
    /// Warnings: constructs dropped or kept with a changed meaning.
    pub warnings: Vec<Diagnostic>,
}

/// The generation of a suite or sidecar tree, decided by the loader's own rule
/// ([`crate::load::generation`]), so a converted file always loads as the generation it was
/// converted to.
pub fn detect(root: &Node, part: Part) -> Generation {
    match part {
        Part::Suite => crate::load::generation::of_suite(root),
        Part::Sidecar => crate::load::generation::of_dataset_part(root),
    }
}

/// Whether `text` (the file `file`) is a promptfoo config, by the loader's rule; `false` for
/// text that is not YAML.
pub fn is_promptfoo(text: &str, file: &Path) -> bool {
    parse_yaml(text).is_ok_and(|root| crate::load::generation::is_promptfoo_config(file, &root))
}

/// Converts the promptfoo config `text` of `file` to an AgentV 4.x suite
/// (`docs/convert.md#from-promptfoo`). Errors: every construct that has no exact equivalent,
/// each with its position, or the config's own errors.
pub fn promptfoo_to_v4(text: &str, file: &Path, dir: &Path) -> Result<Converted, Vec<Diagnostic>> {
    from_promptfoo::convert(text, file, dir)
}

/// Converts the AgentV 4.x suite `file` to a promptfoo config
/// (`docs/convert.md#to-promptfoo`); its target is read from `targets`, else from the targets
/// file `agentv eval` finds. Errors: every construct without an exact promptfoo equivalent,
/// each with its position, or the suite's own errors.
pub fn v4_to_promptfoo(
    file: &Path,
    targets: Option<&Path>,
    ws: &crate::paths::Workspace,
) -> Result<Converted, Vec<Diagnostic>> {
    to_promptfoo::convert(file, targets, ws)
}

/// Converts the YAML `text` of `file` to generation `to`. `dir` is the directory relative
/// file names in the file resolve against (prompt files). Errors: every construct that has
/// no equivalent, each with its position, or the YAML syntax errors.
pub fn convert(text: &str, file: &Path, dir: &Path, part: Part, to: Generation) -> Result<Converted, Vec<Diagnostic>> {
    let (root, mut diags) = parse(text, file)?;
    if root.as_map().is_none() {
        diags.error(
            root.pos,
            "an eval file is a mapping of keys (`evalcases`, `tests`, `execution`, …)",
            None,
        );
        return Err(diags.into_vec());
    }
    let from = detect(&root, part);
    if from == to {
        return Ok(Converted {
            text: text.to_owned(),
            from,
            warnings: Vec::new(),
        });
    }
    let (converted, diags) = pass(text, &root, diags, dir, part, |root, cx| match to {
        Generation::V2 => to_v2::suite(root, cx),
        // A promptfoo config is not an AgentV target generation (`convert_to_v4` is the way).
        Generation::V4 | Generation::Promptfoo => to_v4::suite(root, cx),
    })?;
    let (converted, diags) = if to == Generation::V2 {
        let root = parse_yaml(&converted).map_err(|_| only_errors(diags.clone()))?;
        pass(&converted, &root, diags, dir, part, to_v2::move_suite_list_pass)?
    } else {
        (converted, diags)
    };
    Ok(Converted {
        text: converted,
        from,
        warnings: diags.into_vec(),
    })
}

/// The tree of `text` and the diagnostics of `file` (its source set), or the YAML errors.
fn parse(text: &str, file: &Path) -> Result<(Node, Diagnostics), Vec<Diagnostic>> {
    let mut diags = Diagnostics::new(file);
    diags.set_source(text);
    match parse_yaml(text) {
        Ok(root) => Ok((root, diags)),
        Err(errors) => {
            diags.yaml_syntax(&errors);
            Err(diags.into_vec())
        }
    }
}

/// One pass over the tree of `text`: `step` collects edits, which are applied and checked to
/// give valid YAML. Problems accumulate in `diags` across passes.
fn pass(
    text: &str,
    root: &Node,
    diags: Diagnostics,
    dir: &Path,
    part: Part,
    step: impl FnOnce(&Node, &mut Context<'_>),
) -> Result<(String, Diagnostics), Vec<Diagnostic>> {
    let mut cx = Context {
        editor: edit::Editor::new(text),
        diags,
        dir: dir.to_path_buf(),
        part,
    };
    step(root, &mut cx);
    let Context { editor, mut diags, .. } = cx;
    if diags.error_count() > 0 {
        return Err(only_errors(diags));
    }
    let converted = match editor.finish(root.pos) {
        Ok(converted) => converted,
        Err(e) => {
            diags.error(e.pos, e.message, None);
            return Err(only_errors(diags));
        }
    };
    if let Err(errors) = parse_yaml(&converted) {
        let first = errors.first().map_or(Pos::default(), |e| e.pos);
        diags.error(
            first,
            "the converted text is not valid YAML (an unusual layout here); convert this part by hand",
            errors.first().map(|e| e.message.clone()),
        );
        return Err(only_errors(diags));
    }
    Ok((converted, diags))
}

fn only_errors(diags: Diagnostics) -> Vec<Diagnostic> {
    diags
        .into_vec()
        .into_iter()
        .filter(|d| d.severity == crate::config::Severity::Error)
        .collect()
}

/// The sidecar of a JSONL dataset: `<stem>.yaml` (or `.yml`) beside it.
pub fn sidecar_of(jsonl: &Path) -> Option<PathBuf> {
    ["yaml", "yml"]
        .iter()
        .map(|ext| jsonl.with_extension(ext))
        .find(|p| p.is_file())
}

/// What a conversion step needs: the edits, the problems, where relative files are.
struct Context<'t> {
    editor: edit::Editor<'t>,
    diags: Diagnostics,
    dir: PathBuf,
    part: Part,
}

impl Context<'_> {
    fn rename(&mut self, key: &Node, new: &str) {
        if let Err(e) = self.editor.replace_scalar(key, new) {
            self.diags.error(e.pos, e.message, None);
        }
    }

    /// Replaces the string scalar `node` by the YAML text `raw`.
    fn replace_raw(&mut self, node: &Node, raw: &str) {
        if let Err(e) = self.editor.replace_scalar_raw(node, raw) {
            self.diags.error(e.pos, e.message, None);
        }
    }

    fn error(&mut self, pos: Pos, message: impl Into<String>, help: Option<&str>) {
        self.diags.error(pos, message, help.map(str::to_owned));
    }

    fn warn(&mut self, pos: Pos, message: impl Into<String>) {
        self.diags.warn(pos, message, None);
    }

    /// Deletes the entry of `key` from the mapping `map`: up to the next key when there is
    /// one (so a first key after `- ` or inside `{…}` goes cleanly), else its lines.
    fn delete_in(&mut self, map: &Node, key: &Node) {
        let keys: Vec<&Node> = entries(map).iter().map(|(k, _)| k).collect();
        let next = keys.iter().position(|k| k.pos == key.pos).and_then(|i| keys.get(i + 1));
        let result = match next {
            Some(next) => self.editor.delete_between(key, next),
            None => self.editor.delete_entry(key),
        };
        if let Err(e) = result {
            self.diags.error(e.pos, e.message, None);
        }
    }

    fn insert_before(&mut self, key: &Node, entry: &str) {
        if let Err(e) = self.editor.insert_before_key(key, entry) {
            self.diags.error(e.pos, e.message, None);
        }
    }
}

/// The key node and value of entry `name` of a mapping node.
fn entry<'n>(map: &'n Node, name: &str) -> Option<(&'n Node, &'n Node)> {
    map.as_map()?
        .iter()
        .find(|(k, _)| k.as_str() == Some(name))
        .map(|(k, v)| (k, v))
}

/// The entries of a mapping node (empty for other nodes).
fn entries(map: &Node) -> &[(Node, Node)] {
    map.as_map().unwrap_or_default()
}
