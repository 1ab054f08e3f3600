//! Expands the paths and globs given on the command line into eval files.

use std::path::{Path, PathBuf};

use globset::GlobBuilder;
use walkdir::WalkDir;

use super::targets::is_targets_file_name;
use crate::paths::{Workspace, normalize};

/// Extensions of eval files.
pub const EVAL_EXTENSIONS: &[&str] = &["yaml", "yml", "jsonl"];

/// Why the arguments name no usable file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoverError {
    #[error("an empty path names no file: pass `.` for the current directory")]
    Empty,
    #[error("no such file: {0}")]
    Missing(String),
    #[error("pattern `{pattern}` matched no {}", purpose.wanted())]
    NoMatch { pattern: String, purpose: Purpose },
    #[error("{dir}: no {} in this directory", purpose.wanted())]
    EmptyDir { dir: String, purpose: Purpose },
    #[error("invalid glob `{pattern}`: {message}")]
    BadGlob { pattern: String, message: String },
    #[error("{0} is not an eval file: use .yaml, .yml or .jsonl")]
    NotEval(String),
    #[error("{0} is not an eval file (.yaml, .yml, .jsonl) or a targets file")]
    NotEvalOrTargets(String),
    #[error("{0} is a targets file, not an eval file: pass it with --targets")]
    TargetsFile(String),
    #[error("{arg} holds results of a run, not eval cases{}", if *purpose == Purpose::Check { " or targets" } else { "" })]
    ResultsFile { arg: String, purpose: Purpose },
}

/// What the files named on the command line are wanted for. `eval` and `validate` find files
/// with the same rules ([`discover`]); only what they accept differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// `agentv eval`: eval files only; a targets file is passed with `--targets`.
    Run,
    /// `agentv validate`: eval files, targets files and results files.
    Check,
}

impl Purpose {
    /// What a directory or a glob must hold, for messages.
    fn wanted(self) -> &'static str {
        match self {
            Self::Run => "eval files (.yaml, .yml, .jsonl)",
            Self::Check => "eval files (.yaml, .yml, .jsonl), targets files or results files",
        }
    }

    /// Whether a file of `kind` found in a directory or by a glob is wanted.
    fn wants(self, kind: FileKind) -> bool {
        match self {
            Self::Run => kind == FileKind::Eval,
            Self::Check => matches!(kind, FileKind::Eval | FileKind::Targets | FileKind::Results),
        }
    }
}

fn is_glob(arg: &str) -> bool {
    arg.contains(['*', '?', '[', '{'])
}

/// What a file is to agentv. The one place that decides it, for `eval` (which runs eval
/// files) and `validate` (which also checks targets files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// An eval suite (`.yaml`, `.yml`) or dataset (`.jsonl`).
    Eval,
    /// The suite keys of the `.jsonl` dataset of the same name beside it.
    Sidecar,
    /// A targets file (`targets.yaml`, `<name>.targets.yaml`, ...).
    Targets,
    /// agentv's own state and configuration: `.agentv.yaml`, anything under `.agentv/`.
    Internal,
    /// Results written by `agentv eval` (`*.baseline.jsonl`, or JSONL whose first record is a
    /// result): data to compare against, not a dataset.
    Results,
    /// Anything else.
    Other,
}

/// What `path` (relative to the working directory, or absolute) is.
pub fn classify(path: &Path, ws: &Workspace) -> FileKind {
    if is_targets_file_name(path) {
        return FileKind::Targets;
    }
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    if name.starts_with(".agentv") || path.components().any(|c| c.as_os_str() == ".agentv") {
        return FileKind::Internal;
    }
    if !has_eval_extension(path) {
        return FileKind::Other;
    }
    let full = ws.cwd.join(path);
    if path.extension().is_some_and(|e| e == "jsonl") {
        // A results file is told by its first record's keys, whatever the record's size.
        if name.ends_with(".baseline.jsonl") || crate::report::starts_with_a_result(&full) {
            return FileKind::Results;
        }
        return FileKind::Eval;
    }
    // Beside a dataset, a YAML file holds its suite keys; beside a results file (a run's
    // `--out suite.json` writes `suite.jsonl` next to the suite) it is the suite itself.
    let beside = full.with_extension("jsonl");
    if beside.is_file() && !crate::report::starts_with_a_result(&beside) {
        return FileKind::Sidecar;
    }
    FileKind::Eval
}

/// A YAML file beside a `.jsonl` of the same name holds that dataset's suite keys.
pub fn is_sidecar(path: &Path, ws: &Workspace) -> bool {
    classify(path, ws) == FileKind::Sidecar
}

fn has_eval_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EVAL_EXTENSIONS.contains(&e))
}

/// Files (kept as given), directories (searched recursively) and globs (`*` stays within one
/// directory, `**` crosses them), in argument order without duplicates. A YAML file next to a
/// matched `.jsonl` of the same name is its sidecar, not a suite.
pub fn expand_paths(args: &[String], ws: &Workspace) -> Result<Vec<PathBuf>, DiscoverError> {
    discover(args, ws, Purpose::Run)
        .map(|found| found.into_iter().map(|(path, _)| path).collect())
        .map_err(|mut problems| problems.swap_remove(0))
}

/// The files `args` name for `purpose`, each once, in argument order, with their kind:
/// files as given, directories searched recursively, globs (`*` stays within one directory,
/// `**` crosses them) matched below their longest literal prefix. Every argument that names
/// nothing usable is reported, not just the first.
pub fn discover(
    args: &[String],
    ws: &Workspace,
    purpose: Purpose,
) -> Result<Vec<(PathBuf, FileKind)>, Vec<DiscoverError>> {
    let mut out: Vec<(PathBuf, FileKind)> = Vec::new();
    let mut problems = Vec::new();
    for arg in args {
        match discover_one(arg, ws, purpose) {
            Ok(found) => {
                for entry in found {
                    if !out.contains(&entry) {
                        out.push(entry);
                    }
                }
            }
            Err(problem) => problems.push(problem),
        }
    }
    if problems.is_empty() { Ok(out) } else { Err(problems) }
}

fn discover_one(arg: &str, ws: &Workspace, purpose: Purpose) -> Result<Vec<(PathBuf, FileKind)>, DiscoverError> {
    // Joined to the working directory, `''` would name it, and run everything below it.
    if arg.is_empty() {
        return Err(DiscoverError::Empty);
    }
    if is_glob(arg) {
        return expand_glob(arg, ws, purpose);
    }
    let path = PathBuf::from(arg);
    let full = ws.cwd.join(&path);
    if full.is_dir() {
        let found: Vec<(PathBuf, FileKind)> = walk(&path, ws)
            .into_iter()
            .map(|p| {
                let kind = classify(&p, ws);
                (p, kind)
            })
            .filter(|(_, kind)| purpose.wants(*kind))
            .collect();
        if found.is_empty() {
            return Err(DiscoverError::EmptyDir {
                dir: arg.to_owned(),
                purpose,
            });
        }
        return Ok(found);
    }
    if !full.is_file() {
        return Err(DiscoverError::Missing(arg.to_owned()));
    }
    match (classify(&path, ws), purpose) {
        (FileKind::Eval, _) => Ok(vec![(path, FileKind::Eval)]),
        // A sidecar named on its own stands for its dataset: the dataset is run (the caller says
        // so) and checked.
        (FileKind::Sidecar, Purpose::Run) => Ok(vec![(path.with_extension("jsonl"), FileKind::Eval)]),
        (FileKind::Sidecar, Purpose::Check) => Ok(vec![(path.with_extension("jsonl"), FileKind::Eval)]),
        (FileKind::Targets, Purpose::Check) => Ok(vec![(path, FileKind::Targets)]),
        (FileKind::Targets, Purpose::Run) => Err(DiscoverError::TargetsFile(arg.to_owned())),
        (FileKind::Results, Purpose::Check) => Ok(vec![(path, FileKind::Results)]),
        (FileKind::Results, Purpose::Run) => Err(DiscoverError::ResultsFile {
            arg: arg.to_owned(),
            purpose,
        }),
        (FileKind::Internal | FileKind::Other, Purpose::Run) => Err(DiscoverError::NotEval(arg.to_owned())),
        (FileKind::Internal | FileKind::Other, Purpose::Check) => Err(DiscoverError::NotEvalOrTargets(arg.to_owned())),
    }
}

fn expand_glob(pattern: &str, ws: &Workspace, purpose: Purpose) -> Result<Vec<(PathBuf, FileKind)>, DiscoverError> {
    let glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| DiscoverError::BadGlob {
            pattern: pattern.to_owned(),
            message: e.kind().to_string(),
        })?
        .compile_matcher();
    // Walk from the longest directory prefix without glob characters.
    let base: PathBuf = Path::new(pattern)
        .components()
        .take_while(|c| !is_glob(&c.as_os_str().to_string_lossy()))
        .collect();
    let base = if base.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        base
    };
    let mut found: Vec<(PathBuf, FileKind)> = walk(&base, ws)
        .into_iter()
        .filter(|p| {
            let shown = p.strip_prefix(".").unwrap_or(p);
            glob.is_match(shown) || glob.is_match(p)
        })
        .map(|p| {
            let kind = classify(&p, ws);
            (p, kind)
        })
        .filter(|(_, kind)| purpose.wants(*kind))
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    if found.is_empty() {
        return Err(DiscoverError::NoMatch {
            pattern: pattern.to_owned(),
            purpose,
        });
    }
    Ok(found)
}

/// Files under `dir` (relative paths as the user would write them), sorted, skipping hidden
/// directories and build output.
pub fn walk(dir: &Path, ws: &Workspace) -> Vec<PathBuf> {
    let root = ws.cwd.join(dir);
    WalkDir::new(&root)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0 || {
                let name = e.file_name().to_string_lossy();
                !(e.file_type().is_dir() && (name.starts_with('.') || name == "target" || name == "node_modules"))
            }
        })
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.path().strip_prefix(&root).ok().map(|rel| normalize(&dir.join(rel))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Workspace) {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        for f in [
            "evals/a.yaml",
            "evals/sub/b.yml",
            "evals/data.jsonl",
            "evals/data.yaml",
            "evals/targets.yaml",
            "evals/notes.md",
            "evals/openai.targets.yaml",
            "evals/run.baseline.jsonl",
            "evals/.agentv/results/eval_1.jsonl",
        ] {
            let path = root.join(f);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
            std::fs::write(path, "x").expect("file");
        }
        let ws = Workspace::from_cwd(root.to_path_buf());
        (tmp, ws)
    }

    fn strings(paths: Vec<PathBuf>) -> Vec<String> {
        paths.iter().map(|p| p.display().to_string()).collect()
    }

    #[test]
    fn star_stays_in_its_directory_and_double_star_crosses() {
        let (_t, ws) = setup();
        let one = expand_paths(&["evals/*.yaml".into()], &ws).expect("matches");
        assert_eq!(strings(one), ["evals/a.yaml"]);
        let all = expand_paths(&["evals/**/*.y*ml".into()], &ws).expect("matches");
        assert_eq!(strings(all), ["evals/a.yaml", "evals/sub/b.yml"]);
    }

    #[test]
    fn directories_skip_config_and_sidecars() {
        let (_t, ws) = setup();
        let found = expand_paths(&["evals".into()], &ws).expect("matches");
        assert_eq!(strings(found), ["evals/a.yaml", "evals/data.jsonl", "evals/sub/b.yml"]);
    }

    #[test]
    fn directories_reached_through_dot_dot_keep_their_files() {
        let (t, ws) = setup();
        // Climbs above the working directory and back: the relative paths keep their `..`.
        let name = t.path().file_name().expect("name").to_string_lossy().into_owned();
        let arg = format!("evals/../../{name}/evals/sub");
        let found = expand_paths(&[arg], &ws).expect("matches");
        assert_eq!(strings(found), [format!("../{name}/evals/sub/b.yml")]);
    }

    #[test]
    fn errors_name_the_argument_and_an_empty_one_is_refused() {
        let (_t, ws) = setup();
        let cases = [
            ("nope.yaml", "no such file: nope.yaml"),
            ("", "an empty path names no file: pass `.` for the current directory"),
            (
                "evals/*.toml",
                "pattern `evals/*.toml` matched no eval files (.yaml, .yml, .jsonl)",
            ),
            (
                "evals/notes.md",
                "evals/notes.md is not an eval file: use .yaml, .yml or .jsonl",
            ),
        ];
        for (arg, want) in cases {
            let err = expand_paths(&[arg.into()], &ws).expect_err(arg);
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn directories_skip_results_files_by_name_and_by_content() {
        let (t, ws) = setup();
        std::fs::write(
            t.path().join("evals/last-run.jsonl"),
            "{\"eval_id\":\"a\",\"score\":1.0,\"verdict\":\"pass\"}\n",
        )
        .expect("write");
        std::fs::write(
            t.path().join("evals/graded.jsonl"),
            "{\"eval_id\":\"a\",\"evaluator_results\":[]}\n",
        )
        .expect("write");
        let found = expand_paths(&["evals".into()], &ws).expect("matches");
        assert_eq!(strings(found), ["evals/a.yaml", "evals/data.jsonl", "evals/sub/b.yml"]);
        let globbed = expand_paths(&["evals/*.jsonl".into()], &ws).expect("matches");
        assert_eq!(strings(globbed), ["evals/data.jsonl"]);
    }

    #[test]
    fn every_kind_of_file_is_told_apart() {
        let (t, ws) = setup();
        std::fs::write(t.path().join("evals/cases.jsonl"), "{\"id\":\"a\",\"score\":1}\n").expect("write");
        for (path, want) in [
            ("evals/a.yaml", FileKind::Eval),
            ("evals/cases.jsonl", FileKind::Eval),
            ("evals/data.yaml", FileKind::Sidecar),
            ("evals/targets.yaml", FileKind::Targets),
            ("evals/openai.targets.yaml", FileKind::Targets),
            ("evals/run.baseline.jsonl", FileKind::Results),
            ("evals/.agentv/results/eval_1.jsonl", FileKind::Internal),
            (".agentv.yaml", FileKind::Internal),
            ("evals/notes.md", FileKind::Other),
        ] {
            assert_eq!(classify(Path::new(path), &ws), want, "{path}");
        }
    }

    #[test]
    fn eval_and_validate_find_files_by_the_same_rules() {
        let (t, ws) = setup();
        std::fs::create_dir_all(t.path().join("empty")).expect("dir");
        let found = |args: &[&str], purpose| {
            let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
            discover(&args, &ws, purpose).map(|f| {
                f.into_iter()
                    .map(|(p, kind)| format!("{} {kind:?}", p.display()))
                    .collect::<Vec<_>>()
            })
        };
        let messages = |result: Result<Vec<String>, Vec<DiscoverError>>| {
            result
                .expect_err("problems")
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            found(&["evals"], Purpose::Check).expect("files"),
            [
                "evals/a.yaml Eval",
                "evals/data.jsonl Eval",
                "evals/openai.targets.yaml Targets",
                "evals/run.baseline.jsonl Results",
                "evals/sub/b.yml Eval",
                "evals/targets.yaml Targets"
            ]
        );
        assert_eq!(
            found(&["evals/*.yaml"], Purpose::Check).expect("files"),
            [
                "evals/a.yaml Eval",
                "evals/openai.targets.yaml Targets",
                "evals/targets.yaml Targets"
            ]
        );
        assert_eq!(
            found(&["evals/data.yaml"], Purpose::Check).expect("files"),
            ["evals/data.jsonl Eval"],
            "a sidecar is checked with its dataset"
        );
        assert_eq!(
            found(&["evals/data.yaml"], Purpose::Run).expect("files"),
            ["evals/data.jsonl Eval"],
            "a sidecar named on its own runs its dataset"
        );
        assert_eq!(
            messages(found(&["nope.yaml", "evals/notes.md", "empty"], Purpose::Check)),
            [
                "no such file: nope.yaml",
                "evals/notes.md is not an eval file (.yaml, .yml, .jsonl) or a targets file",
                "empty: no eval files (.yaml, .yml, .jsonl), targets files or results files in this directory",
            ],
            "every problem is reported"
        );
        assert_eq!(
            messages(found(&["empty", "evals/targets.yaml"], Purpose::Run)),
            [
                "empty: no eval files (.yaml, .yml, .jsonl) in this directory",
                "evals/targets.yaml is a targets file, not an eval file: pass it with --targets",
            ]
        );
    }

    #[test]
    fn a_targets_or_results_file_named_to_eval_says_what_it_is() {
        let (_t, ws) = setup();
        for (arg, want) in [
            (
                "evals/openai.targets.yaml",
                "evals/openai.targets.yaml is a targets file, not an eval file: pass it with --targets",
            ),
            (
                "evals/run.baseline.jsonl",
                "evals/run.baseline.jsonl holds results of a run, not eval cases",
            ),
        ] {
            let err = expand_paths(&[arg.into()], &ws).expect_err(arg);
            assert_eq!(err.to_string(), want);
        }
    }
}
