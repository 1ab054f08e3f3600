//! What the user sees: the console summary, diagnostics, `--quiet`, `--verbose` and colour,
//! pinned by snapshots (reviewed as a user reads them) and by assertions on the printer's rules.

use agentv_testkit::terminal::run_with_stderr_on_terminal;
use agentv_testkit::{Project, Run, assert_run_snapshot, mock_targets};

/// A target that answers per case, so one run shows every kind of line.
const TARGETS: &str = "targets:\n  - name: default\n    provider: mock\n    judge_target: judge\n    responses:\n      capital: Paris is the capital of France.\n      close: The capital is Paris, I think, or Lyon.\n      wrong: Berlin.\n  - name: judge\n    provider: mock\n    response: '{\"score\": 0.9, \"hits\": [\"h\"], \"misses\": [], \"reasoning\": \"r\"}'\n  - name: broken\n    provider: cli\n    command_template: echo 'agent crashed' >&2; exit 1\n";

const SUITE: &str = "execution:\n  evaluators:\n    - {name: kw, type: keywords, expected: [Paris, France], forbidden: [Lyon, Berlin]}\nevalcases:\n  - id: capital\n    expected_outcome: Names Paris.\n    input_messages: [{role: user, content: Capital of France?}]\n  - id: close\n    expected_outcome: Names Paris.\n    input_messages: [{role: user, content: Capital of France?}]\n  - id: wrong\n    expected_outcome: Names Paris.\n    input_messages: [{role: user, content: Capital of France?}]\n";

const BROKEN_SUITE: &str = "execution:\n  target: broken\n  evaluators: [{name: kw, type: keywords, expected: [x]}]\nevalcases:\n  - id: crashes\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n";

fn project() -> Project {
    Project::new()
        .file("targets.yaml", TARGETS)
        .file("evals/capitals.yaml", SUITE)
        .file("evals/broken.yaml", BROKEN_SUITE)
}

#[test]
fn console_summary_of_a_mixed_run() {
    let p = project();
    let run = p.run(&["eval", "evals/capitals.yaml", "evals/broken.yaml", "--out", "r.jsonl"]);
    assert_run_snapshot!("console_summary_of_a_mixed_run", Some(p.path()), run);
}

#[test]
fn quiet_prints_errors_and_the_summary_line_wherever_the_flag_is() {
    let p = project();
    let before = p.run(&[
        "--quiet",
        "eval",
        "evals/capitals.yaml",
        "evals/broken.yaml",
        "--out",
        "r.jsonl",
    ]);
    let after = p.run(&[
        "eval",
        "evals/capitals.yaml",
        "evals/broken.yaml",
        "--out",
        "r.jsonl",
        "-q",
    ]);
    assert_eq!((before.code, &before.stdout), (after.code, &after.stdout));
    assert_run_snapshot!("quiet_run", Some(p.path()), before);
}

#[test]
fn quiet_validate_keeps_errors_and_the_count() {
    let p = Project::new().file("targets.yaml", &mock_targets("x")).file(
        "e.yaml",
        "evalcases:\n  - id: a\n    expected_outcom: typo\n    input_messages: [{role: robot, content: q}]\n",
    );
    let run = p.run(&["validate", "e.yaml", "--quiet"]);
    run.code(1)
        .stderr_has("e.yaml:4:29: error: unknown message role `robot`")
        .stderr_has("1 file(s) checked, 1 invalid");
    assert!(!run.stderr.contains("warning:"), "{}", run.stderr);
    assert!(!run.stderr.contains("✘ e.yaml"), "{}", run.stderr);
}

#[test]
fn validate_diagnostics() {
    let p = Project::new()
        .file("targets.yaml", "targets:\n  - {name: default, provider: mock}\n  - name: c\n    provider: cli\n    command_template: run {NOPE}\n")
        .file(
            "evals/cases.yaml",
            "evalcases:\n  - id: one\n    expected_outcom: typo\n    input_messages: [{role: user, content: q}]\n  - id: two\n    expected_outcome: x\n    input_messages: [{role: robot, content: q}]\n    evaluators:\n      - {name: t, type: tool_trajectory, mode: sideways}\n",
        )
        .file("evals/broken.yaml", "evalcases:\n  - id: a\n    expected_outcome: [unclosed\n")
        .file("evals/fine.yaml", "evalcases:\n  - id: fine\n    expected_outcome: x\n    input_messages: [{role: user, content: q}]\n");
    let run = p.run(&["validate", "evals", "targets.yaml"]);
    assert_run_snapshot!("validate_diagnostics", Some(p.path()), run);
}

#[test]
fn verbose_adds_debug_logs_through_the_redacting_printer() {
    let targets = "targets:\n  - name: default\n    provider: mock\n    provider_batching: true\n    response: ${{ AGENTV_E2E_VERBOSE_ANSWER }}\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("e.yaml", &agentv_testkit::keyword_cases(1));
    let secret = "done-zq7secret-value";
    let plain = p.output(
        p.command(&["eval", "e.yaml", "--out", "r.jsonl"])
            .env("AGENTV_E2E_VERBOSE_ANSWER", secret),
    );
    plain.code(0);
    assert!(!plain.stderr.contains("cannot batch"), "{}", plain.stderr);
    let verbose = p.output(
        p.command(&["--verbose", "eval", "e.yaml", "--out", "r.jsonl"])
            .env("AGENTV_E2E_VERBOSE_ANSWER", secret),
    );
    verbose
        .code(0)
        .stderr_has("sets provider_batching but provider `mock` cannot batch");
    for run in [&plain, &verbose] {
        assert!(!run.stderr.contains("zq7secret") && !run.stdout.contains("zq7secret"));
    }
    let quiet = p.output(
        p.command(&["eval", "e.yaml", "--out", "r.jsonl", "--quiet"])
            .env("AGENTV_E2E_VERBOSE_ANSWER", secret),
    );
    assert_eq!(quiet.stderr, "", "nothing but errors on stderr");
    assert_eq!(quiet.stdout.lines().count(), 1, "{}", quiet.stdout);
    let both = p.run(&["-q", "eval", "e.yaml", "--verbose"]);
    both.code(2).stderr_has("--quiet and --verbose cannot be used together");
}

/// A colour case: its name, the flags, the environment, whether stderr is coloured.
type ColourCase = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    bool,
);

fn colored(run: &Run) -> bool {
    run.stderr.contains("\u{1b}[")
}

#[test]
fn colour_is_decided_once_from_the_flag_the_environment_and_the_stream() {
    let p = project();
    let eval = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["eval", "evals/capitals.yaml", "--out", "r.jsonl"];
        all.extend_from_slice(args);
        let mut cmd = p.command(&all);
        cmd.env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("CLICOLOR");
        for (k, v) in env {
            cmd.env(k, v);
        }
        p.output(&mut cmd)
    };
    let cases: &[ColourCase] = &[
        ("a pipe is not a terminal", &[], &[], false),
        ("auto in a pipe", &["--color", "auto"], &[], false),
        ("CLICOLOR_FORCE colours a pipe", &[], &[("CLICOLOR_FORCE", "1")], true),
        (
            "NO_COLOR wins over CLICOLOR_FORCE",
            &[],
            &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
            false,
        ),
        ("always", &["--color", "always"], &[], true),
        (
            "always wins over NO_COLOR",
            &["--color=always"],
            &[("NO_COLOR", "1")],
            true,
        ),
        (
            "never wins over CLICOLOR_FORCE",
            &["--color", "never"],
            &[("CLICOLOR_FORCE", "1")],
            false,
        ),
    ];
    for (name, args, env, want) in cases {
        let run = eval(args, env);
        run.code(0);
        assert_eq!(colored(&run), *want, "{name}:\n{}", run.stderr);
        // stdout is a pipe too: the summary takes colour exactly when forced.
        assert_eq!(run.stdout.contains('\u{1b}'), *want, "{name}:\n{}", run.stdout);
    }
    let before = p.run(&["--color", "always", "eval", "evals/capitals.yaml", "--out", "r.jsonl"]);
    assert!(colored(&before), "--color before the command");
}

#[test]
fn colour_never_reaches_user_text() {
    // An id holding an escape sequence stays escaped when our own words are coloured.
    let p = Project::new().file("targets.yaml", &mock_targets("done")).file(
        "e.yaml",
        "execution:\n  evaluators: [{name: kw, type: keywords, expected: [done]}]\nevalcases:\n  - {id: \"red\\e[31mid\", expected_outcome: x, input_messages: [{role: user, content: q}]}\n",
    );
    let run = p.run(&["eval", "e.yaml", "--out", "r.jsonl", "--color", "always"]);
    run.code(0).stderr_has("red\\u{1b}[31mid");
    assert!(!run.stderr.contains("red\u{1b}[31mid"), "{}", run.stderr);
}

/// Two cases, one slow enough to be seen running: `slow` answers through a shell command.
fn bar_project() -> Project {
    let targets = "targets:\n  - {name: default, provider: mock, response: done}\n  - name: slow\n    provider: cli\n    command_template: sleep 1; echo done > {OUTPUT_FILE}\n";
    let suite = "execution:\n  evaluators: [{name: kw, type: keywords, expected: [done]}]\nevalcases:\n  - {id: quick, expected_outcome: x, input_messages: [{role: user, content: q}]}\n";
    let slow = "execution:\n  target: slow\n  evaluators: [{name: kw, type: keywords, expected: [done]}]\nevalcases:\n  - {id: slow-case, expected_outcome: x, input_messages: [{role: user, content: q}]}\n";
    Project::new()
        .file("targets.yaml", targets)
        .file("evals/quick.yaml", suite)
        .file("evals/slow.yaml", slow)
}

/// Whether a live bar was drawn: its clock and the line of running cases.
fn drew_a_bar(stderr: &str) -> bool {
    stderr.contains("elapsed, ETA") || stderr.contains("running:")
}

#[test]
fn progress_bar_is_drawn_on_a_terminal_and_not_in_a_pipe() {
    let p = bar_project();
    let eval = |extra: &[&str], ci: Option<&str>| {
        let mut args = vec!["eval", "evals/quick.yaml", "evals/slow.yaml", "--out", "r.jsonl"];
        args.extend_from_slice(extra);
        let mut cmd = p.command(&args);
        cmd.env_remove("CI").env("TERM", "xterm-256color");
        if let Some(ci) = ci {
            cmd.env("CI", ci);
        }
        cmd
    };

    let live = run_with_stderr_on_terminal(&mut eval(&[], None), 80, 24);
    live.code(0);
    assert!(live.stderr.contains("elapsed, ETA"), "the clock:\n{}", live.stderr);
    assert!(
        live.stderr.contains("running: slow-case"),
        "the running case:\n{}",
        live.stderr
    );
    assert!(live.stderr.contains("2/2"), "done/total:\n{}", live.stderr);
    assert!(
        !live.stderr.contains("[1/2]"),
        "passing cases leave no line above the bar:\n{}",
        live.stderr
    );
    assert!(live.stdout.contains("EVALUATION SUMMARY"), "{}", live.stdout);
    assert!(
        !drew_a_bar(&live.stdout),
        "the bar never reaches stdout:\n{}",
        live.stdout
    );

    let piped = p.output(&mut eval(&[], None));
    piped.code(0).stderr_has("[1/2] ✔").stderr_has("[2/2] ✔");
    assert!(!drew_a_bar(&piped.stderr), "{}", piped.stderr);

    let ci = run_with_stderr_on_terminal(&mut eval(&[], Some("true")), 80, 24);
    ci.code(0).stderr_has("[2/2] ").stderr_has("slow-case [slow]");
    assert!(!drew_a_bar(&ci.stderr), "CI keeps plain lines:\n{}", ci.stderr);

    let quiet = run_with_stderr_on_terminal(&mut eval(&["--quiet"], None), 80, 24);
    quiet.code(0);
    assert_eq!(quiet.stderr, "", "--quiet prints nothing but errors");
    assert_eq!(quiet.stdout.lines().count(), 1, "{}", quiet.stdout);
}
