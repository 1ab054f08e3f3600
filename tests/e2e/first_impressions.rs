//! What a new user sees first: the quick start's one deliberate failure and its reason, each
//! trial of a repeated case, cases not run counted apart, a sidecar named for its dataset, and
//! documentation that shows every command and flag the help has.

use agentv_testkit::{Project, Run, agentv, mock_targets, repo_root};

/// The `agentv eval …` of the README's first command, run from the repository.
#[test]
fn quick_start_shows_one_deliberate_failure_with_its_own_reason() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("readme");
    let command = readme
        .lines()
        .find(|l| l.contains("agentv eval"))
        .and_then(|l| l.split("&& ").nth(1))
        .expect("the quick start command");
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    assert_eq!(args[0], "eval", "{command}");
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("r.jsonl");
    let mut cmd = agentv(&repo_root(), &args);
    cmd.arg("--out").arg(&out);
    let run = Run::of(&mut cmd);
    run.code(0)
        .stdout_has("FAILURES (1 of 6 cases)\n  ✘ capital-of-australia [default]  0.500 fail\n      miss: does not mention Canberra\n\n")
        .stderr_has("✘ capital-of-australia [default]  0.500 fail  (")
        .stderr_has("      miss: does not mention Canberra\n");
    // The weight-0 grader's misses are in the record, never given as the reason.
    for noise in ["missing Paris", "missing Tokyo", "contains forbidden Sydney"] {
        assert!(!run.stdout.contains(noise), "stdout shows {noise:?}:\n{}", run.stdout);
        assert!(!run.stderr.contains(noise), "stderr shows {noise:?}:\n{}", run.stderr);
    }
    let text = std::fs::read_to_string(&out).expect("results");
    assert!(text.contains("missing Paris"), "the record keeps every grader's misses");
}

#[test]
fn repeat_lists_each_trial_once_with_its_number() {
    let p = Project::new()
        .file("targets.yaml", &mock_targets("nope"))
        .file(
            "e.yaml",
            "execution:\n  evaluators: [{name: kw, type: keywords, expected: [done]}]\nevalcases:\n  - {id: only, input_messages: [{role: user, content: q}]}\n",
        );
    let run = p.run(&["eval", "e.yaml", "--repeat", "3", "--out", "r.jsonl"]);
    run.code(0);
    for trial in 1..=3 {
        let label = format!("only (trial {trial})");
        assert_eq!(
            run.stderr.matches(&format!("✘ {label}  0.000 fail")).count(),
            1,
            "{}",
            run.stderr
        );
        assert_eq!(
            run.stdout.matches(&format!("✘ {label}  0.000 fail")).count(),
            1,
            "{}",
            run.stdout
        );
    }
}

#[test]
fn not_run_cases_are_counted_apart_on_the_console_as_in_the_summary_file() {
    // An agent that answers `done` and reports $1 a case.
    let targets = "targets:\n  - name: default\n    provider: cli\n    command_template: sh agent.sh {OUTPUT_FILE}\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file(
            "agent.sh",
            "printf '{\"text\": \"done\", \"cost_usd\": 1.0}' > \"$1\"\n",
        )
        .file("e.yaml", &agentv_testkit::keyword_cases(4));
    let run = p.run(&["eval", "e.yaml", "--budget-usd", "1", "--out", "r.jsonl"]);
    run.code(3)
        .stdout_has("  Graded: 1   Execution errors: 0   Grader errors: 0\n  Invalid: 0   Not run: 3\n");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join("r.summary.json")).expect("summary"))
            .expect("json");
    assert_eq!(summary["by_status"]["not_run"], 3);
    assert_eq!(summary["by_status"]["execution_error"], 0);
    p.run(&["eval", "e.yaml", "--budget-usd", "1", "--out", "q.jsonl", "-q"])
        .code(3)
        .stdout_has("4 case(s): 1 pass, 0 borderline, 0 fail, 0 error(s), 3 not run;");
}

#[test]
fn eval_of_a_sidecar_says_so_and_names_its_dataset() {
    let p = Project::new()
        .file("targets.yaml", &mock_targets("hello"))
        .file(
            "data.jsonl",
            "{\"id\": \"a\", \"input\": \"hi\", \"expected_output\": \"hello\"}\n",
        )
        .file(
            "data.yaml",
            "dataset: greetings\nexecution:\n  evaluators: [{name: kw, type: keywords, expected: [hello]}]\n",
        );
    p.run(&["eval", "data.yaml", "--out", "r.jsonl"])
        .code(0)
        .stderr_has("data.yaml is the sidecar of the dataset data.jsonl `greetings` (it holds the dataset's suite keys): running the dataset");
    assert_eq!(p.result("r.jsonl", "a")["dataset"], "greetings");
}

/// The commands `agentv --help` lists, and the long flags of `agentv <command> --help`.
fn commands_and_flags() -> Vec<(String, Vec<String>)> {
    let help = |args: &[&str]| {
        let run = Run::of(&mut agentv(&repo_root(), args));
        run.code(0);
        run.stdout
    };
    let top = help(&["--help"]);
    top.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(|command| {
            let flags = help(&[command, "--help"])
                .lines()
                .filter_map(|l| {
                    let l = l.trim_start();
                    let l = l
                        .strip_prefix("-")
                        .filter(|_| !l.starts_with("--"))
                        .map_or(l, |rest| rest.split_once(", ").map_or(l, |(_, long)| long));
                    l.strip_prefix("--").map(|f| {
                        format!(
                            "--{}",
                            f.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                                .next()
                                .unwrap_or("")
                        )
                    })
                })
                .collect();
            (command.to_owned(), flags)
        })
        .collect()
}

/// The text of `doc` from the heading `start` to the next heading of the same level.
fn section<'a>(doc: &'a str, start: &str) -> &'a str {
    let from = doc.find(start).unwrap_or_else(|| panic!("no section {start:?}"));
    let level = start.chars().take_while(|c| *c == '#').count();
    let rest = &doc[from + start.len()..];
    let end = rest
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|&i| {
            let hashes = rest[i..].chars().take_while(|c| *c == '#').count();
            (1..=level).contains(&hashes) && rest[i..].chars().nth(hashes) == Some(' ')
        })
        .unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn readme_and_running_md_show_every_command_and_flag_of_help() {
    const GLOBAL: [&str; 5] = ["--help", "--version", "--verbose", "--quiet", "--color"];
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("readme");
    let running = std::fs::read_to_string(repo_root().join("docs/running.md")).expect("running.md");
    let synopsis = section(&readme, "## Running");
    let synopsis = synopsis.split("```").nth(1).expect("the synopsis block");
    let reference = section(&running, "## Command reference");
    let every = section(reference, "### Every command");
    let mut missing = Vec::new();
    for flag in GLOBAL {
        if !every.contains(&format!("`{flag}")) {
            missing.push(format!("docs/running.md, every command: {flag}"));
        }
        if !readme.contains(flag) {
            missing.push(format!("README.md: {flag}"));
        }
    }
    let listed = commands_and_flags();
    assert!(listed.len() >= 8, "{listed:?}");
    for (command, flags) in &listed {
        let lines: String = synopsis
            .lines()
            .skip_while(|l| !l.starts_with(&format!("agentv {command}")))
            .take_while(|l| l.starts_with(&format!("agentv {command}")) || l.starts_with(' '))
            .collect::<Vec<_>>()
            .join("\n");
        if lines.is_empty() {
            missing.push(format!("README.md synopsis: agentv {command}"));
        }
        let own = section(reference, &format!("### `agentv {command}"));
        for flag in flags.iter().filter(|f| !GLOBAL.contains(&f.as_str())) {
            if !lines.contains(flag.as_str()) {
                missing.push(format!("README.md synopsis: agentv {command} {flag}"));
            }
            if !own.contains(&format!("`{flag}")) {
                missing.push(format!("docs/running.md: agentv {command} {flag}"));
            }
        }
    }
    assert!(missing.is_empty(), "not documented:\n{}", missing.join("\n"));
}

/// The long flags of the subcommands of `command` (`agentv batch list --help`, ...).
fn subcommand_flags(command: &str) -> Vec<String> {
    let help = |args: &[&str]| Run::of(&mut agentv(&repo_root(), args)).stdout;
    help(&[command, "--help"])
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|sub| sub != "help")
        .flat_map(|sub| {
            help(&[command, &sub, "--help"])
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .filter(|w| w.starts_with("--") && w.len() > 2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The other way round: the README's synopsis shows no command `agentv --help` lacks, and no
/// flag that the command's `--help` lacks.
#[test]
fn readme_synopsis_shows_only_commands_and_flags_of_help() {
    const GLOBAL: [&str; 5] = ["--help", "--version", "--verbose", "--quiet", "--color"];
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("readme");
    let synopsis = section(&readme, "## Running");
    let synopsis = synopsis.split("```").nth(1).expect("the synopsis block");
    let listed = commands_and_flags();
    let mut unknown = Vec::new();
    let mut command = None;
    for line in synopsis.lines() {
        if let Some(rest) = line.strip_prefix("agentv ") {
            let name = rest.split_whitespace().next().unwrap_or_default();
            command = listed.iter().find(|(c, _)| c == name);
            if command.is_none() && !name.starts_with('[') {
                unknown.push(format!("agentv {name}"));
            }
        }
        let flags = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| w.starts_with("--") && w.len() > 2);
        for flag in flags {
            let known = GLOBAL.contains(&flag)
                || command.is_some_and(|(name, own)| {
                    own.iter().any(|f| f == flag) || subcommand_flags(name).iter().any(|f| f == flag)
                });
            if !known {
                let name = command.map_or("", |(c, _)| c.as_str());
                unknown.push(format!("agentv {name} {flag}"));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "the README synopsis shows what --help does not:\n{}",
        unknown.join("\n")
    );
}
