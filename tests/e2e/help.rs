//! `--help` of agentv and of every command it lists, snapshotted at 80 columns. A new command
//! gets a snapshot to review the first time it is listed.

use agentv_testkit::{Project, Run, assert_run_snapshot};

fn help(p: &Project, args: &[&str]) -> Run {
    let run = p.output(p.command(args).env("COLUMNS", "80"));
    run.code(0);
    run
}

/// The commands `agentv --help` lists, except `help` itself. A command's line starts with two
/// spaces; a description wrapped onto the next line starts with more.
fn commands(top: &str) -> Vec<String> {
    top.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn help_of_every_command() {
    let p = Project::new();
    let top = help(&p, &["--help"]);
    assert_run_snapshot!("help", None, top);
    let listed = commands(&top.stdout);
    assert!(
        listed.contains(&"eval".to_owned()) && listed.contains(&"validate".to_owned()),
        "{listed:?}"
    );
    for command in &listed {
        let run = help(&p, &[command, "--help"]);
        for line in run.stdout.lines() {
            assert!(
                line.chars().count() <= 80,
                "`{command} --help` line over 80 columns: {line:?}"
            );
        }
        assert_run_snapshot!(format!("help_{command}"), None, run);
    }
}
