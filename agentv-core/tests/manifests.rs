//! Build hygiene, held by the manifests themselves: every crate of the workspace takes the
//! workspace's lints, and a dependency two crates share (or the workspace declares) is declared
//! once, in `[workspace.dependencies]`, so its version and features cannot drift apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use toml::{Table, Value};

/// Every dependency table of a manifest, with its name (`dependencies`,
/// `target.'cfg(unix)'.dev-dependencies`, ...).
fn dependency_tables(manifest: &Table) -> Vec<(String, &Table)> {
    const KINDS: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut out = Vec::new();
    for kind in KINDS {
        if let Some(Value::Table(t)) = manifest.get(kind) {
            out.push((kind.to_owned(), t));
        }
    }
    for (cfg, target) in manifest.get("target").and_then(Value::as_table).into_iter().flatten() {
        for kind in KINDS {
            if let Some(Value::Table(t)) = target.get(kind) {
                out.push((format!("target.'{cfg}'.{kind}"), t));
            }
        }
    }
    out
}

/// What is wrong with `manifests` (file name and text; the first is the workspace root's).
fn problems(manifests: &[(String, String)]) -> Vec<String> {
    let parsed: Vec<(&str, Table)> = manifests
        .iter()
        .map(|(name, text)| {
            (
                name.as_str(),
                text.parse::<Table>().unwrap_or_else(|e| panic!("{name}: {e}")),
            )
        })
        .collect();
    let declared: BTreeSet<&String> = parsed[0]
        .1
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(Value::as_table)
        .map(|t| t.keys().collect())
        .unwrap_or_default();
    let mut users: BTreeMap<&String, BTreeSet<&str>> = BTreeMap::new();
    for (name, manifest) in &parsed {
        for (_, table) in dependency_tables(manifest) {
            for dep in table.keys() {
                users.entry(dep).or_default().insert(name);
            }
        }
    }
    let mut found = Vec::new();
    for (name, manifest) in &parsed {
        if manifest.get("package").is_some()
            && manifest
                .get("lints")
                .and_then(|l| l.get("workspace"))
                .and_then(Value::as_bool)
                != Some(true)
        {
            found.push(format!("{name}: no `[lints] workspace = true`"));
        }
        for (kind, table) in dependency_tables(manifest) {
            for (dep, spec) in table {
                let shared = declared.contains(dep) || users[dep].len() > 1;
                let inherited = spec.get("workspace").and_then(Value::as_bool) == Some(true);
                if shared && !inherited {
                    found.push(format!(
                        "{name}: [{kind}] `{dep}` is declared here (shared: give it to [workspace.dependencies] and write `{dep}.workspace = true`)"
                    ));
                }
            }
        }
    }
    found
}

#[test]
fn shared_dependencies_are_declared_once_and_every_crate_takes_the_workspace_lints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |rel: &str| {
        let path = root.join(rel).join("Cargo.toml");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        (format!("{rel}/Cargo.toml"), text)
    };
    let workspace = read(".");
    let members: Vec<String> = workspace
        .1
        .parse::<Table>()
        .expect("the root manifest")
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(Value::as_array)
        .expect("members")
        .iter()
        .filter_map(|m| m.as_str().map(str::to_owned))
        .collect();
    assert!(members.len() >= 6, "{members:?}");
    let mut manifests = vec![workspace];
    manifests.extend(members.iter().map(|m| read(m)));
    let found = problems(&manifests);
    assert!(found.is_empty(), "the manifests:\n  {}", found.join("\n  "));
}

#[test]
fn a_member_declaring_a_shared_dependency_itself_is_found() {
    let root = "[workspace]\nmembers = [\"a\", \"b\"]\n[workspace.dependencies]\nserde = \"1\"\n[workspace.lints.clippy]\ntodo = \"deny\"\n";
    let a = "[package]\nname = \"a\"\n[lints]\nworkspace = true\n[dependencies]\nserde = \"1\"\nlibc = \"0.2\"\nown = \"1\"\n";
    let b = "[package]\nname = \"b\"\n[target.'cfg(unix)'.dev-dependencies]\nlibc.workspace = true\n";
    let manifests =
        [("Cargo.toml", root), ("a/Cargo.toml", a), ("b/Cargo.toml", b)].map(|(n, t)| (n.to_owned(), t.to_owned()));
    let found = problems(&manifests);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].starts_with("a/Cargo.toml: [dependencies] `libc`"),
        "{found:#?}"
    );
    assert!(
        found[1].starts_with("a/Cargo.toml: [dependencies] `serde`"),
        "{found:#?}"
    );
    assert_eq!(found[2], "b/Cargo.toml: no `[lints] workspace = true`");
}
