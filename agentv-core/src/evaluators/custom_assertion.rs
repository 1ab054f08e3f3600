//! AgentV 4.x custom assertion types: a `type` that names a file `.agentv/assertions/<type>.ts`
//! (or `.js`, `.mts`, `.mjs`; also under `graders/` and `judges/`) in the eval file's directory
//! or an ancestor is a program written with `defineAssertion` / `defineCodeGrader` of
//! `@agentv/sdk` (`docs/judges.md#custom-assertion-types`). It runs as a 4.x code grader, under
//! `bun` or `node`, with a small stand-in for `@agentv/sdk` when the project has not installed
//! the package (the files beside this module), and with the entry's other keys as `config`.
//! A user's `NODE_PATH` is kept ahead of the stand-in.
//!
//! Which runtime: for JavaScript, `node` (≥ 20.6, which has module hooks), else `bun`; for
//! TypeScript, `bun` (as AgentV 4.x runs them), else `node` ≥ 22.6 with
//! `--experimental-strip-types`, else `tsx`; with none of them, a grader error that says what
//! to install. The runtime is looked for when the grader first grades, so `validate` needs none.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::code_grader::{CodeGrader, snake_case_keys};
use super::{Grade, GradeContext, GradeVerdict, Grader, GraderEntry, ParseContext};
use crate::config::{Fields, KeyTable};

/// What results call a custom assertion's grader (its own name is the entry's `name`).
pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "custom-assertion",
    names: super::Names::NONE,
    doc: "An AgentV 4.x custom assertion type (`.agentv/assertions/<type>.ts`), run under bun or node.",
    keys: &KEYS,
    parse: |_, _| None,
};
static KEYS: KeyTable = KeyTable::new("a custom assertion", "Any keys: they reach it as `config`.", &[]).open();

/// The stand-in module, the hooks that make node resolve `@agentv/sdk` to it, and the same
/// module as packages under `node_modules/` for bun, which finds them through `NODE_PATH`
/// (after the project's own `node_modules`, so an installed package wins).
const SDK: &str = include_str!("custom_assertion/sdk.mjs");
const SHIM_FILES: &[(&str, &str)] = &[
    ("sdk.mjs", SDK),
    ("node_hooks.mjs", include_str!("custom_assertion/node_hooks.mjs")),
    ("node_register.mjs", include_str!("custom_assertion/node_register.mjs")),
    ("node_modules/@agentv/sdk/index.mjs", SDK),
    ("node_modules/@agentv/sdk/package.json", PACKAGE_JSON),
    ("node_modules/@agentv/eval/index.mjs", SDK),
    ("node_modules/@agentv/eval/package.json", PACKAGE_JSON),
];
const PACKAGE_JSON: &str = "{\"type\": \"module\", \"main\": \"index.mjs\", \"exports\": \"./index.mjs\"}\n";

/// A custom assertion type as an entry configures it.
#[derive(Debug)]
pub struct CustomAssertion {
    file: PathBuf,
    cwd: PathBuf,
    config: Map<String, Value>,
    /// The grader it runs as, once the runtime is found (or why none is), and the directory of
    /// the shim files it names (removed with the grader).
    ready: OnceLock<Result<(CodeGrader, Arc<tempfile::TempDir>), String>>,
}

/// Reads the entry's other keys (its `config`) for the assertion in `file`.
pub(crate) fn parse(file: PathBuf, f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Arc<dyn Grader> {
    let mut config: Map<String, Value> = f
        .take_rest()
        .into_iter()
        .map(|(k, v)| (k.key_text(), v.to_json()))
        .collect();
    if let Some(Value::Object(explicit)) = config.remove("config") {
        config.extend(explicit);
    }
    Arc::new(CustomAssertion {
        file,
        cwd: cx.eval_dir.to_path_buf(),
        config: snake_case_keys(config),
        ready: OnceLock::new(),
    })
}

impl Grader for CustomAssertion {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            match self.ready.get_or_init(|| self.prepare(&Runtimes::on_path())) {
                Ok((grader, _shim)) => grader.grade(ctx).await,
                Err(why) => Grade {
                    crashed: true,
                    ..Grade::failed_with(format!("Code evaluator failed: {why}")).with_verdict(GradeVerdict::Fail)
                },
            }
        })
    }
}

impl CustomAssertion {
    fn prepare(&self, runtimes: &Runtimes) -> Result<(CodeGrader, Arc<tempfile::TempDir>), String> {
        let shim = write_shim().map_err(|e| format!("cannot write the @agentv/sdk stand-in: {e}"))?;
        let command = command_for(&self.file, shim.path(), runtimes)?;
        let grader = CodeGrader {
            command,
            cwd: self.cwd.clone(),
            timeout: None,
            proxy: None,
            persistent: None,
            config: self.config.clone(),
        };
        Ok((grader, Arc::new(shim)))
    }
}

fn write_shim() -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix("agentv-sdk-").tempdir()?;
    for (name, text) in SHIM_FILES {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    Ok(dir)
}

/// The JavaScript runtimes found, with node's version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Runtimes {
    pub bun: Option<PathBuf>,
    pub node: Option<(PathBuf, (u32, u32))>,
    pub tsx: Option<PathBuf>,
    /// `NODE_PATH` as agentv got it: kept ahead of the stand-in's directory.
    pub node_path: Option<String>,
}

impl Runtimes {
    fn on_path() -> Self {
        let node = find("node").and_then(|path| {
            let out = std::process::Command::new(&path).arg("--version").output().ok()?;
            let version = node_version(&String::from_utf8_lossy(&out.stdout))?;
            Some((path, version))
        });
        Self {
            bun: find("bun"),
            node,
            tsx: find("tsx"),
            node_path: std::env::var("NODE_PATH").ok(),
        }
    }
}

/// `v22.6.1` → (22, 6).
fn node_version(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.trim().trim_start_matches('v').split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// `program` in a directory of `PATH`.
fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// The argv that runs `file` with `@agentv/sdk` resolvable (`shim` holds the stand-in), or what
/// to install.
pub(crate) fn command_for(file: &Path, shim: &Path, runtimes: &Runtimes) -> Result<Vec<String>, String> {
    let typescript = matches!(file.extension().and_then(|e| e.to_str()), Some("ts" | "mts" | "cts"));
    let text = |p: &Path| p.display().to_string();
    let file_arg = text(file);
    let register = text(&shim.join("node_register.mjs"));
    let with_node = |node: &Path, extra: &[&str]| -> Vec<String> {
        let mut argv = vec![text(node)];
        argv.extend(extra.iter().map(|s| (*s).to_owned()));
        argv.extend(["--import".to_owned(), register.clone(), file_arg.clone()]);
        argv
    };
    // `--no-install`: bun would otherwise fetch a missing package from the network.
    let bun = |bun: &Path| {
        let modules = text(&shim.join("node_modules"));
        let node_path = match &runtimes.node_path {
            Some(theirs) if !theirs.is_empty() => format!("{theirs}:{modules}"),
            _ => modules,
        };
        vec![
            "env".to_owned(),
            format!("NODE_PATH={node_path}"),
            text(bun),
            "--no-install".to_owned(),
            file_arg.clone(),
        ]
    };
    let node_hooks = runtimes.node.as_ref().filter(|(_, v)| *v >= (20, 6));
    if !typescript {
        return match (node_hooks, &runtimes.bun) {
            (Some((node, _)), _) => Ok(with_node(node, &[])),
            (None, Some(b)) => Ok(bun(b)),
            (None, None) => Err(format!(
                "cannot run the custom assertion {}: it needs node ≥ 20.6 or bun on PATH{}",
                file.display(),
                found_node(runtimes)
            )),
        };
    }
    if let Some(b) = &runtimes.bun {
        return Ok(bun(b));
    }
    if let Some((node, _)) = runtimes.node.as_ref().filter(|(_, v)| *v >= (22, 6)) {
        return Ok(with_node(node, &["--experimental-strip-types", "--no-warnings"]));
    }
    if let (Some(tsx), Some(_)) = (&runtimes.tsx, node_hooks) {
        let mut argv = vec![text(tsx), "--import".to_owned(), register];
        argv.push(file_arg);
        return Ok(argv);
    }
    Err(format!(
        "cannot run the TypeScript assertion {}: it needs bun (`npm install -g bun`), node ≥ 22.6, or tsx (`npm install -g tsx`) on PATH{}",
        file.display(),
        found_node(runtimes)
    ))
}

fn found_node(runtimes: &Runtimes) -> String {
    match &runtimes.node {
        Some((_, (major, minor))) => format!(" (found node {major}.{minor})"),
        None => String::new(),
    }
}

#[cfg(test)]
#[allow(
    clippy::too_many_lines,
    reason = "a table-driven test keeps its rows and checks in one place"
)]
mod tests {
    use super::*;

    fn runtimes(bun: bool, node: Option<(u32, u32)>, tsx: bool) -> Runtimes {
        Runtimes {
            bun: bun.then(|| PathBuf::from("/bin/bun")),
            node: node.map(|v| (PathBuf::from("/bin/node"), v)),
            tsx: tsx.then(|| PathBuf::from("/bin/tsx")),
            node_path: None,
        }
    }

    /// (file, bun?, node version, tsx?, the argv's head or the error's start)
    #[test]
    fn custom_assertion_runs_under_the_runtime_it_can() {
        let shim = Path::new("/tmp/shim");
        type Case<'a> = (&'a str, bool, Option<(u32, u32)>, bool, Result<&'a [&'a str], &'a str>);
        let cases: &[Case<'_>] = &[
            (
                "a.js",
                false,
                Some((20, 20)),
                false,
                Ok(&["/bin/node", "--import", "/tmp/shim/node_register.mjs", "a.js"]),
            ),
            ("a.mjs", true, Some((20, 20)), false, Ok(&["/bin/node", "--import"])),
            (
                "a.js",
                true,
                Some((18, 0)),
                false,
                Ok(&[
                    "env",
                    "NODE_PATH=/tmp/shim/node_modules",
                    "/bin/bun",
                    "--no-install",
                    "a.js",
                ]),
            ),
            (
                "a.js",
                false,
                Some((18, 0)),
                false,
                Err("cannot run the custom assertion a.js: it needs node ≥ 20.6 or bun on PATH (found node 18.0)"),
            ),
            (
                "a.ts",
                true,
                Some((22, 6)),
                true,
                Ok(&["env", "NODE_PATH=/tmp/shim/node_modules", "/bin/bun"]),
            ),
            (
                "a.ts",
                false,
                Some((22, 6)),
                false,
                Ok(&["/bin/node", "--experimental-strip-types", "--no-warnings", "--import"]),
            ),
            (
                "a.mts",
                false,
                Some((24, 0)),
                false,
                Ok(&["/bin/node", "--experimental-strip-types"]),
            ),
            (
                "a.ts",
                false,
                Some((20, 20)),
                true,
                Ok(&["/bin/tsx", "--import", "/tmp/shim/node_register.mjs", "a.ts"]),
            ),
            (
                "a.ts",
                false,
                Some((20, 20)),
                false,
                Err(
                    "cannot run the TypeScript assertion a.ts: it needs bun (`npm install -g bun`), node ≥ 22.6, or tsx (`npm install -g tsx`) on PATH (found node 20.20)",
                ),
            ),
            (
                "a.ts",
                false,
                None,
                false,
                Err("cannot run the TypeScript assertion a.ts: it needs bun"),
            ),
        ];
        for (file, bun, node, tsx, want) in cases {
            let got = command_for(Path::new(file), shim, &runtimes(*bun, *node, *tsx));
            match want {
                Ok(head) => {
                    let argv = got.unwrap_or_else(|e| panic!("{file}: {e}"));
                    assert_eq!(&argv[..head.len()], *head, "{file} {bun} {node:?} {tsx}");
                }
                Err(start) => {
                    let e = got.expect_err(file);
                    assert!(e.starts_with(start), "{file}: {e}");
                }
            }
        }
    }

    #[test]
    fn node_versions_are_read() {
        assert_eq!(node_version("v22.6.1\n"), Some((22, 6)));
        assert_eq!(node_version("20.20.2"), Some((20, 20)));
        assert_eq!(node_version("bun"), None);
    }
}
