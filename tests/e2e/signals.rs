//! The kill test: however agentv is stopped mid-run, the results file holds only whole lines;
//! SIGINT and SIGTERM also keep every result, print the summary and exit 130 / 143
//! (`docs/architecture.md#exit-codes`).

use std::time::{Duration, Instant};

use agentv_testkit::process::{send_signal, wait_until};
use agentv_testkit::terminal::Session;
use agentv_testkit::{Project, Run, Spawned};

const CASES: usize = 40;

/// A slow mock (each answer takes 300 ms) and `CASES` cases, run with 4 workers.
fn slow_project() -> Project {
    let targets = "targets:\n  - name: default\n    provider: mock\n    response: done\n    delay_ms: 300\n";
    let mut yaml =
        String::from("execution:\n  evaluators: [{name: kw, type: keywords, expected: [done]}]\nevalcases:\n");
    for i in 0..CASES {
        yaml.push_str(&format!(
            "  - {{id: c{i}, expected_outcome: x, input_messages: [{{role: user, content: q{i}}}]}}\n"
        ));
    }
    Project::new().file("targets.yaml", targets).file("e.yaml", &yaml)
}

/// Starts the run and returns once its first result line is written.
fn start_and_wait_for_a_result(p: &Project) -> Spawned {
    let child = p.spawn(&["eval", "e.yaml", "--out", "r.jsonl", "--workers", "4"]);
    let results = p.path().join("r.jsonl");
    wait_until("no result", || {
        std::fs::read_to_string(&results).is_ok_and(|t| t.contains('\n'))
    });
    child
}

/// Every line of the results file is one whole JSON record.
fn whole_lines(p: &Project) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(p.path().join("r.jsonl")).expect("results");
    assert!(text.is_empty() || text.ends_with('\n'), "a partial last line: {text:?}");
    p.results("r.jsonl")
}

#[test]
fn kill_9_mid_run_leaves_only_whole_lines() {
    let p = slow_project();
    let child = start_and_wait_for_a_result(&p);
    send_signal(child.pid(), "KILL");
    let run = child.wait();
    assert_eq!(run.code, -1, "killed by the signal");
    let written = whole_lines(&p);
    assert!(
        !written.is_empty() && written.len() < CASES,
        "{} results",
        written.len()
    );
}

/// Stops a run with `signal`; checks what every stop signal must keep.
fn stop_with(signal: &str, code: i32) -> Run {
    let p = slow_project();
    let child = start_and_wait_for_a_result(&p);
    send_signal(child.pid(), signal);
    let run = child.wait();
    run.code(code)
        .stderr_has("interrupted: no new cases will start")
        .stderr_has("case(s) did not run")
        .stdout_has("EVALUATION SUMMARY");
    let written = whole_lines(&p);
    assert!(written.len() < CASES, "scheduling stopped: {} results", written.len());
    assert!(
        written.iter().all(|r| r["score"] == 1.0),
        "in-flight cases finished within the grace period"
    );
    run.stdout_has(&format!("Total eval cases: {}", written.len()));
    run
}

#[test]
fn sigint_keeps_results_prints_the_summary_and_exits_130() {
    stop_with("INT", 130).stderr_has("Interrupted: ");
}

#[test]
fn sigterm_keeps_results_prints_the_summary_and_exits_143() {
    stop_with("TERM", 143).stderr_has("Terminated (SIGTERM): ");
}

/// Waits until `marker` exists in the project (a command of the run has started).
pub(crate) fn wait_for_file(p: &Project, marker: &str) {
    agentv_testkit::process::wait_for_file(&p.path().join(marker));
}

/// What agentv prints when a first stop signal has stopped scheduling.
pub(crate) const STOPPED: &str = "interrupted: no new cases will start";

/// Sends the first stop signal, waits until agentv has taken it (it says so), then until the
/// window in which a program's second signal counts as the same stop has passed
/// (`src/signals.rs`: one second from when agentv took the first), and sends the second, which
/// must cancel the running cases.
pub(crate) fn stop_then_cancel(child: &mut Spawned, signal: &str) {
    send_signal(child.pid(), signal);
    let taken = child.wait_for_stderr(STOPPED);
    // The rule is about time, so the wait is on a deadline: the window measured from a moment
    // no earlier than agentv's own.
    let past_the_window = taken + Duration::from_millis(1200);
    std::thread::sleep(past_the_window.saturating_duration_since(Instant::now()));
    send_signal(child.pid(), signal);
}

#[test]
fn ctrl_c_during_a_healthcheck_exits_130() {
    let targets = "targets:\n  - name: default\n    provider: cli\n    command_template: echo hi > {OUTPUT_FILE}\n    healthcheck: {type: command, command_template: 'touch hc-started; sleep 60'}\n";
    // The race it guards is between the interrupt and the end of a run with nothing to do, so
    // it is tried a few times.
    for _ in 0..3 {
        let p = Project::new()
            .file("targets.yaml", targets)
            .file("e.yaml", &agentv_testkit::keyword_cases(2));
        let child = p.spawn(&["eval", "e.yaml", "--out", "r.jsonl"]);
        wait_for_file(&p, "hc-started");
        send_signal(child.pid(), "INT");
        let run = child.wait();
        run.code(130)
            .stderr_has("interrupted: no new cases will start")
            .stderr_has("Interrupted: 2 case(s) did not run");
    }
}

/// A cli target that answers every case in one batch call, started (`batch-started`) before it
/// sleeps `secs`.
fn batching_project(secs: u32) -> Project {
    let targets = "targets:\n  - name: default\n    provider: cli\n    provider_batching: true\n    command_template: sh agent.sh {OUTPUT_FILE}\n";
    let agent = format!(
        "touch batch-started\nsleep {secs}\nprintf '%s\\n' '{{\"id\":\"c0\",\"text\":\"done\"}}' '{{\"id\":\"c1\",\"text\":\"done\"}}' > \"$1\"\n"
    );
    Project::new()
        .file("targets.yaml", targets)
        .file("agent.sh", &agent)
        .file("e.yaml", &agentv_testkit::keyword_cases(2))
}

#[test]
fn ctrl_c_during_a_provider_batch_lets_it_finish_within_the_grace_period() {
    let p = batching_project(2);
    let child = p.spawn(&["eval", "e.yaml", "--out", "r.jsonl"]);
    wait_for_file(&p, "batch-started");
    send_signal(child.pid(), "INT");
    let run = child.wait();
    run.code(130).stderr_has("interrupted: no new cases will start");
    let written = whole_lines(&p);
    assert_eq!(written.len(), 2, "the batch's cases were in flight: graded and written");
    assert!(written.iter().all(|r| r["score"] == 1.0), "{written:?}");
}

#[test]
fn a_second_ctrl_c_cancels_a_provider_batch() {
    let p = batching_project(60);
    let mut child = p.spawn(&["eval", "e.yaml", "--out", "r.jsonl"]);
    wait_for_file(&p, "batch-started");
    stop_then_cancel(&mut child, "INT");
    let run = child.wait();
    run.code(130)
        .stderr_has("interrupted again: cancelling the running cases")
        .stderr_has("Interrupted: 2 case(s) did not run");
    assert!(whole_lines(&p).is_empty());
}

#[test]
fn two_sigterms_at_once_keep_the_grace_period() {
    // GNU `timeout` signals agentv and its process group: the same stop, twice.
    let targets = "targets:\n  - name: default\n    provider: cli\n    command_template: 'touch case-started; sleep 2; echo done > {OUTPUT_FILE}'\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("e.yaml", &agentv_testkit::keyword_cases(1));
    let child = p.spawn(&["eval", "e.yaml", "--out", "r.jsonl"]);
    wait_for_file(&p, "case-started");
    send_signal(child.pid(), "TERM");
    send_signal(child.pid(), "TERM");
    let run = child.wait();
    run.code(143);
    assert!(!run.stderr.contains("cancelling"), "{}", run.stderr);
    let written = whole_lines(&p);
    assert_eq!(written.len(), 1, "the running case finished within the grace period");
    assert_eq!(written[0]["score"], 1.0);
}

/// A second Ctrl-C typed on the terminal is honoured however soon after the first it comes:
/// the running cases are cancelled at once, and agentv says so.
#[test]
fn a_second_ctrl_c_within_the_first_second_is_not_lost() {
    let targets = "targets:\n  - name: default\n    provider: cli\n    command_template: 'touch case-started; sleep 600; echo done > {OUTPUT_FILE}'\n";
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("e.yaml", &agentv_testkit::keyword_cases(1));
    let mut cmd = p.command(&["eval", "e.yaml", "--out", "r.jsonl"]);
    let mut session = Session::start(&mut cmd, 200, 40);
    wait_for_file(&p, "case-started");
    session.type_keys(b"\x03");
    session.wait_for("interrupt again to cancel them");
    session.type_keys(b"\x03");
    let run = session.wait();
    run.code(130)
        .stderr_has("interrupted again: cancelling the running cases")
        .stderr_has("Interrupted: 1 case(s) did not run");
    assert!(whole_lines(&p).is_empty(), "the cancelled case wrote nothing");
}
