//! `agentv schema eval|targets` prints the schemas committed under `schema/`.

use agentv_testkit::{Project, repo_root};

#[test]
fn schema_prints_the_committed_schemas() {
    let p = Project::new();
    for kind in ["eval", "targets"] {
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
