//! `agentv schema eval|targets|compare` prints the schemas committed under `schema/`.

use agentv_testkit::{Project, repo_root};

#[test]
fn schema_prints_the_committed_schemas() {
    let p = Project::new();
    for kind in ["eval", "targets", "compare"] {
        let run = p.run(&["schema", kind]);
        let committed =
            std::fs::read_to_string(repo_root().join(format!("schema/{kind}.schema.json"))).expect("committed schema");
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stdout, committed, "agentv schema {kind}");
        assert!(run.stderr.is_empty(), "{}", run.stderr);
    }
    p.run(&["schema", "results"])
        .code(2)
        .stderr_has("invalid value 'results'");
}

/// Output lost to a stdout that refuses it (a full disk) is not a success; a closed pipe
/// (`| head -1`) still ends quietly with 0.
#[test]
fn a_stdout_that_refuses_output_is_not_a_success() {
    let full = std::path::Path::new("/dev/full");
    if !full.exists() {
        agentv_testkit::toolchains::skip_or_fail("this system has no /dev/full");
        return;
    }
    let sink = std::fs::OpenOptions::new()
        .write(true)
        .open(full)
        .expect("open /dev/full");
    let out = std::process::Command::new(agentv_testkit::agentv_bin())
        .args(["schema", "eval"])
        .stdout(sink)
        .output()
        .expect("agentv runs");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write to stdout"));
}
