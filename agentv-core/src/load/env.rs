//! Environment variables: the process environment plus `.env` files, and `${{ VAR }}` values.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use regex::Regex;

use super::diagnostics::{Diagnostic, Diagnostics};
use super::node::Pos;
use super::paths::Workspace;
/// Secrets live in their own module; re-exported here, where they were first defined.
pub use crate::redact::Secrets;

static ENV_REF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\$\{\{\s*([A-Za-z0-9_]+)\s*\}\}$").expect("static regex"));

/// The variable named by a `${{ VAR }}` value (the whole trimmed value must be the reference).
pub fn env_reference(value: &str) -> Option<&str> {
    ENV_REF
        .captures(value.trim())
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
}

/// Variables visible to the run: the process environment wins over `.env` files, and the `.env`
/// nearest to the eval file wins over outer ones (D5).
#[derive(Clone, Default)]
pub struct Env {
    /// Variables from `.env` files that the process environment does not set.
    dotenv: HashMap<String, String>,
}

/// Names only: `.env` values are often credentials.
impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.dotenv.keys().collect();
        names.sort();
        f.debug_struct("Env").field("dotenv_names", &names).finish()
    }
}

impl Env {
    /// Reads `.env` files from each eval directory and its ancestors up to the repository root,
    /// then the repository root and the working directory.
    pub fn load(eval_dirs: &[PathBuf], ws: &Workspace) -> (Self, Vec<Diagnostic>) {
        let mut files: Vec<PathBuf> = Vec::new();
        for dir in eval_dirs {
            for d in ws.ancestors_to_root(dir) {
                files.push(d.join(".env"));
            }
        }
        files.push(ws.repo_root.join(".env"));
        files.push(ws.cwd.join(".env"));
        let mut env = Self::default();
        let mut diagnostics = Vec::new();
        let mut seen = Vec::new();
        for file in files {
            if seen.contains(&file) || !file.is_file() {
                continue;
            }
            seen.push(file.clone());
            env.read_file(&file, &mut diagnostics);
        }
        (env, diagnostics)
    }

    fn read_file(&mut self, file: &Path, diagnostics: &mut Vec<Diagnostic>) {
        let iter = match dotenvy::from_path_iter(file) {
            Ok(iter) => iter,
            Err(e) => {
                let mut d = Diagnostics::new(file);
                d.warn(Pos::default(), format!("cannot read .env file: {e}"), None);
                diagnostics.extend(d.into_vec());
                return;
            }
        };
        for item in iter {
            match item {
                Ok((key, value)) => {
                    if std::env::var_os(&key).is_none() {
                        self.dotenv.entry(key).or_insert(value);
                    }
                }
                Err(e) => {
                    let mut d = Diagnostics::new(file);
                    d.warn(Pos::default(), format!("skipped a malformed .env line: {e}"), None);
                    diagnostics.extend(d.into_vec());
                }
            }
        }
    }

    /// An environment built from explicit pairs (tests).
    pub fn from_pairs<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        Self {
            dotenv: pairs.into_iter().collect(),
        }
    }

    /// The value of `name`; empty values count as unset.
    pub fn get(&self, name: &str) -> Option<String> {
        std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .or_else(|| self.dotenv.get(name).filter(|v| !v.is_empty()).cloned())
    }

    /// Variables child processes must receive on top of the inherited environment.
    pub fn child_env(&self) -> Arc<[(String, String)]> {
        self.dotenv.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_reference_needs_the_whole_value() {
        let cases = [
            ("${{ OPENAI_KEY }}", Some("OPENAI_KEY")),
            ("  ${{KEY_2}} ", Some("KEY_2")),
            ("${{ lower_ok }}", Some("lower_ok")),
            ("prefix-${{ KEY }}", None),
            ("${ KEY }", None),
            ("plain", None),
        ];
        for (value, want) in cases {
            assert_eq!(env_reference(value), want, "{value}");
        }
    }

    #[test]
    fn nearest_dotenv_wins_and_process_env_wins_over_files() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".git")).expect("git");
        std::fs::create_dir_all(root.join("evals")).expect("dir");
        std::fs::write(root.join(".env"), "AGENTV_T_A=outer\nAGENTV_T_B=outer\nPATH=nope\n").expect("env");
        std::fs::write(root.join("evals/.env"), "AGENTV_T_A=inner\n").expect("env");
        let ws = Workspace::from_cwd(root.to_path_buf());
        let (env, diags) = Env::load(&[root.join("evals")], &ws);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(env.get("AGENTV_T_A").as_deref(), Some("inner"));
        assert_eq!(env.get("AGENTV_T_B").as_deref(), Some("outer"));
        assert_ne!(env.get("PATH").as_deref(), Some("nope"), "the process environment wins");
    }
}
