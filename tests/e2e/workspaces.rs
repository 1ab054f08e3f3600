//! Workspaces (`docs/workspaces.md`): per-case and shared directories made from a template,
//! hooks, file_changes, the command grader, pooled resets, isolation between concurrent cases,
//! and cleanup after an interrupt or a `kill -9`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentv_testkit::process::send_signal;
use agentv_testkit::{Project, Run};

/// A project whose `cli` target `agent` runs `agent.sh PROMPT OUTPUT_FILE` (an absolute path:
/// the agent runs inside its workspace), with `files` and the eval file `e.yaml`.
fn project(agent: &str, eval: &str, files: &[(&str, &str)]) -> Project {
    let p = Project::new();
    let dir = p.path().to_path_buf();
    let targets = format!(
        "targets:\n  - name: agent\n    provider: cli\n    command_template: {}/agent.sh {{PROMPT}} {{OUTPUT_FILE}}\n",
        dir.display()
    );
    let mut p = p
        .file("agent.sh", &format!("#!/bin/sh\n{agent}"))
        .file("targets.yaml", &targets)
        .file("e.yaml", eval);
    for (rel, text) in files {
        p = p.file(rel, text);
    }
    p
}

/// `agentv args` with the workspaces under the project's `data/`.
fn run(p: &Project, args: &[&str]) -> Run {
    let mut cmd = p.command(args);
    cmd.env("AGENTV_DATA_DIR", p.path().join("data"));
    p.output(&mut cmd)
}

/// Every file under `dir` (empty when it does not exist).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    agentv_testkit::walk(dir).into_iter().filter(|p| p.is_file()).collect()
}

fn workspace_files(p: &Project) -> Vec<PathBuf> {
    files_under(&p.path().join("data/workspaces"))
}

#[test]
fn per_test_cases_with_eight_workers_never_see_each_others_files() {
    // Each case writes `result.txt` holding its own id, then lists the workspace.
    let agent = r#"id=$(printf %s "$1" | sed 's/.*case=\([a-z0-9]*\).*/\1/')
sleep 0.2
echo "$id" > result.txt
ls > listing.txt
echo "$id $(cat template.txt) $(ls | tr '\n' ' ')" > "$2"
"#;
    let mut eval =
        String::from("workspace: {template: ./tpl, isolation: per_test}\nexecution: {target: agent}\ntests:\n");
    for i in 0..16 {
        eval.push_str(&format!(
            "  - {{id: c{i}, criteria: x, input: 'case=c{i}', assertions: [{{type: contains, value: 'c{i} pristine'}}]}}\n"
        ));
    }
    let p = project(agent, &eval, &[("tpl/template.txt", "pristine")]);
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl", "--workers", "8"]).code(0);
    let results = p.results("r.jsonl");
    assert_eq!(results.len(), 16);
    for r in &results {
        let id = r["eval_id"].as_str().expect("id");
        assert_eq!(r["score"], 1.0, "{r}");
        let answer = r["candidate_answer"].as_str().expect("answer");
        assert_eq!(
            answer.trim(),
            format!("{id} pristine listing.txt result.txt template.txt"),
            "only its own files"
        );
        let diff = r["workspace"]["file_changes"].as_str().expect("diff");
        assert!(
            diff.contains(&format!("+++ b/result.txt\n@@ -0,0 +1 @@\n+{id}")),
            "{diff}"
        );
        assert_eq!(r["workspace"]["files_created"], 2, "{r}");
        assert!(
            r.get("workspace_path").is_none(),
            "a passing case's workspace is removed"
        );
    }
    assert!(
        workspace_files(&p).is_empty(),
        "every workspace removed: {:?}",
        workspace_files(&p)
    );
    assert_eq!(
        std::fs::read_to_string(p.path().join("tpl/template.txt")).expect("tpl"),
        "pristine"
    );
}

#[test]
fn a_failing_before_each_hook_fails_its_case_and_the_others_run() {
    let eval = r#"workspace:
  template: ./tpl
  isolation: per_test
  hooks:
    before_each:
      command: [sh, -c, 'if grep -q bad; then echo "setup exploded" >&2; exit 7; fi']
execution: {target: agent}
tests:
  - {id: good, criteria: x, input: fine, assertions: [{type: contains, value: done}]}
  - {id: bad, criteria: x, input: bad, assertions: [{type: contains, value: done}]}
"#;
    let p = project("echo done > \"$2\"\n", eval, &[("tpl/a.txt", "a")]);
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl"]).code(3);
    let bad = p.result("r.jsonl", "bad");
    assert_eq!(bad["execution_status"], "execution_error");
    assert_eq!(bad["failure_reason_code"], "script_error");
    let error = bad["error"].as_str().expect("error");
    assert!(
        error.contains("before_each hook failed with exit code 7: setup exploded"),
        "the hook's name, exit code and stderr: {error}"
    );
    let good = p.result("r.jsonl", "good");
    assert_eq!(good["score"], 1.0);
    let hooks = good["workspace"]["hooks"].as_array().expect("hooks");
    assert_eq!(hooks[0]["hook"], "before_each");
    assert_eq!(hooks[0]["ok"], true);
    assert!(workspace_files(&p).is_empty(), "{:?}", workspace_files(&p));
}

#[test]
fn an_after_each_failure_is_recorded_and_never_changes_the_score() {
    let eval = r#"workspace:
  template: ./tpl
  isolation: per_test
  hooks:
    after_each: {command: [sh, -c, 'echo teardown broke >&2; exit 1']}
execution: {target: agent}
tests:
  - {id: a, criteria: x, input: q, assertions: [{type: contains, value: done}]}
"#;
    let p = project("echo done > \"$2\"\n", eval, &[("tpl/a.txt", "a")]);
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    let a = p.result("r.jsonl", "a");
    assert_eq!(a["score"], 1.0);
    assert_eq!(a["execution_status"], "ok");
    let warnings = a["workspace"]["warnings"].as_array().expect("warnings");
    assert!(
        warnings[0]
            .as_str()
            .expect("w")
            .contains("after_each hook failed with exit code 1: teardown broke")
    );
}

#[test]
fn code_judges_and_the_command_grader_run_in_the_workspace() {
    let eval = r#"workspace: {template: ./tpl, isolation: per_test}
execution: {target: agent}
tests:
  - id: fixed
    criteria: x
    input: fix
    assertions:
      - {name: tests, type: command, command: [sh, test.sh]}
      - {name: judge, type: code-grader, command: [python3, judges/check.py]}
  - id: broken
    criteria: x
    input: break
    assertions:
      - {name: tests, type: command, command: [sh, test.sh]}
      - {name: judge, type: code-grader, command: [python3, judges/check.py]}
"#;
    let agent = "case \"$1\" in *fix*) echo 'good' > value.txt;; *) echo 'bad' > value.txt;; esac\necho ok > \"$2\"\n";
    let check = r#"import json, os, sys
p = json.load(sys.stdin)
ok = p["workspace_path"] == os.getcwd() == os.environ["AGENTV_WORKSPACE_PATH"] and "+good" in (p["file_changes"] or "")
print(json.dumps({"score": 1 if ok else 0}))
"#;
    let p = project(
        agent,
        eval,
        &[
            ("tpl/value.txt", "unset\n"),
            (
                "tpl/test.sh",
                "grep -q good value.txt || { echo 'value is not good' >&2; exit 1; }\n",
            ),
            ("judges/check.py", check),
        ],
    );
    // `judges/check.py` is relative to the eval file, as without a workspace.
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl"]).code(0);
    let fixed = p.result("r.jsonl", "fixed");
    assert_eq!(fixed["score"], 1.0, "{fixed}");
    let broken = p.result("r.jsonl", "broken");
    assert_eq!(broken["score"], 0.0, "{broken}");
    let tests = &broken["evaluator_results"][0];
    assert!(
        tests["misses"][0]
            .as_str()
            .expect("miss")
            .contains("exited with code 1 (expected 0)"),
        "{tests}"
    );
    assert_eq!(tests["assertions"][0]["evidence"], "value is not good");
    let kept = broken["workspace_path"]
        .as_str()
        .expect("a failed case's workspace is kept");
    assert_eq!(
        std::fs::read_to_string(Path::new(kept).join("value.txt")).expect("kept"),
        "bad\n"
    );
}

#[test]
fn keep_workspaces_keeps_passing_ones_and_names_them() {
    let eval = "workspace: {template: ./tpl, isolation: per_test}\nexecution: {target: agent}\ntests:\n  - {id: a, criteria: x, input: q, assertions: [{type: contains, value: done}]}\n";
    let p = project("echo done > \"$2\"\n", eval, &[("tpl/a.txt", "a")]);
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl", "--keep-workspaces"])
        .code(0)
        .stderr_has("Preserved workspaces:");
    let a = p.result("r.jsonl", "a");
    let kept = a["workspace_path"].as_str().expect("named");
    assert!(Path::new(kept).join("a.txt").is_file());
    assert!(
        !Path::new(kept).parent().expect("run dir").join(".agentv-run").exists(),
        "no owner marker left"
    );
}

#[test]
fn a_template_symlink_is_copied_as_a_link_and_an_escaping_path_is_an_error() {
    let p = project(
        "ls -l > \"$2\"\n",
        "workspace: {template: ./tpl, isolation: per_test}\nexecution: {target: agent}\ntests:\n  - {id: a, criteria: x, input: q, assertions: [{type: contains, value: secret-link}]}\n",
        &[("tpl/a.txt", "a"), ("outside/secret.txt", "do not copy")],
    );
    std::os::unix::fs::symlink(p.path().join("outside"), p.path().join("tpl/secret-link")).expect("link");
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl", "--keep-workspaces"]).code(0);
    let kept = PathBuf::from(p.result("r.jsonl", "a")["workspace_path"].as_str().expect("kept"));
    let link = kept.join("secret-link");
    assert!(
        std::fs::symlink_metadata(&link).expect("link").is_symlink(),
        "copied as a link, not followed"
    );
    assert_eq!(std::fs::read_link(&link).expect("target"), p.path().join("outside"));

    let escaping = project(
        "echo x > \"$2\"\n",
        "workspace: {template: ../../../../etc}\nexecution: {target: agent}\ntests:\n  - {id: a, criteria: x, input: q, assertions: [{type: contains, value: x}]}\n",
        &[],
    );
    run(&escaping, &["eval", "e.yaml", "--out", "r.jsonl"])
        .code(2)
        .stderr_has("leaves the suite's directory");
}

#[test]
fn a_shared_workspace_carries_changes_from_case_to_case() {
    let eval = r#"workspace: {template: ./tpl}
execution: {target: agent}
tests:
  - {id: first, criteria: x, input: q, assertions: [{type: contains, value: '1'}]}
  - {id: second, criteria: x, input: q, assertions: [{type: contains, value: '2'}]}
"#;
    let agent = "echo x >> log.txt\nwc -l < log.txt | tr -d ' ' > \"$2\"\n";
    let p = project(agent, eval, &[("tpl/keep.txt", "k")]);
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl", "--workers", "1"]).code(0);
    assert_eq!(p.result("r.jsonl", "second")["candidate_answer"], "2");
    let diff = p.result("r.jsonl", "second")["workspace"]["file_changes"]
        .as_str()
        .expect("diff")
        .to_owned();
    assert!(
        diff.contains("+x\n+x"),
        "diffs accumulate in a shared workspace (AgentV 4.x): {diff}"
    );
    assert!(workspace_files(&p).is_empty());
}

/// A local git repository with one commit: `tracked.txt` and a `.gitignore` of `*.log`.
fn local_repo(p: &Project) -> PathBuf {
    let repo = p.path().join("upstream");
    std::fs::create_dir_all(&repo).expect("repo");
    std::fs::write(repo.join("tracked.txt"), "original\n").expect("tracked");
    std::fs::write(repo.join(".gitignore"), "*.log\n").expect("ignore");
    for args in [
        vec!["init", "-q", "-b", "main"],
        vec!["add", "-A"],
        vec!["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
    ] {
        let ok = std::process::Command::new("git")
            .args(&args)
            .current_dir(&repo)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .expect("git")
            .success();
        assert!(ok, "git {args:?}");
    }
    repo
}

fn pooled(reset: &str) -> (Project, Run) {
    let eval = format!(
        r#"workspace:
  mode: pooled
  repos: [{{path: app, repo: ./upstream, commit: main}}]
  hooks:
    after_each: {{reset: {reset}}}
execution: {{target: agent}}
tests:
  - {{id: first, criteria: x, input: write, assertions: [{{type: contains, value: seen}}]}}
  - {{id: second, criteria: x, input: look, assertions: [{{type: contains, value: seen}}]}}
"#
    );
    let agent = r#"case "$1" in
  *write*) echo changed > app/tracked.txt; echo new > app/new.txt; echo log > app/build.log; echo note > note.txt;;
esac
echo "seen $(cat app/tracked.txt) $(ls app | tr '\n' ' ') $(ls | tr '\n' ' ')" > "$2"
"#;
    let p = project(agent, &eval, &[]);
    local_repo(&p);
    let run = run(&p, &["eval", "e.yaml", "--out", "r.jsonl", "--workers", "1"]);
    (p, run)
}

#[test]
fn pooled_reset_modes_between_cases() {
    if which("git").is_none() {
        return;
    }
    let (p, r) = pooled("fast");
    r.code(0);
    let second = p.result("r.jsonl", "second")["candidate_answer"]
        .as_str()
        .expect("answer")
        .to_owned();
    assert!(second.starts_with("seen original"), "tracked files restored: {second}");
    assert!(
        !second.contains("new.txt") && !second.contains("note.txt"),
        "new files removed: {second}"
    );
    assert!(second.contains("build.log"), "fast keeps ignored files: {second}");
    let first = p.result("r.jsonl", "first");
    let diff = first["workspace"]["file_changes"].as_str().expect("diff");
    assert!(
        diff.contains("Submodule app contains modified content") || diff.contains("app/tracked.txt"),
        "{diff}"
    );
    assert!(diff.contains("+++ b/note.txt"), "{diff}");

    let (p, r) = pooled("strict");
    r.code(0);
    let second = p.result("r.jsonl", "second")["candidate_answer"]
        .as_str()
        .expect("answer")
        .to_owned();
    assert!(!second.contains("build.log"), "strict removes ignored files: {second}");

    let (p, r) = pooled("none");
    r.code(0);
    let second = p.result("r.jsonl", "second")["candidate_answer"]
        .as_str()
        .expect("answer")
        .to_owned();
    assert!(
        second.starts_with("seen changed") && second.contains("note.txt"),
        "no reset: {second}"
    );
    let slots = p.path().join("data/workspace-pool");
    assert!(slots.is_dir(), "pool slots stay for the next run");
}

fn which(program: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "{program} is required under CI");
        eprintln!("skipped: {program} is not installed");
    }
    found
}

#[test]
fn a_missing_required_command_stops_the_run_before_any_case() {
    let eval = "workspace:\n  template: ./tpl\n  env: {required_commands: [agentv-no-such-tool, sh]}\nexecution: {target: agent}\ntests:\n  - {id: a, criteria: x, input: q, assertions: [{type: contains, value: x}]}\n";
    let p = project("touch ran; echo x > \"$2\"\n", eval, &[("tpl/a.txt", "a")]);
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl"])
        .code(2)
        .stderr_has("command: agentv-no-such-tool");
    assert!(!p.path().join("ran").exists());
}

/// Starts a run whose only case sleeps in its workspace, and returns once the agent started.
#[test]
fn a_reused_pool_slot_gets_no_template_file_under_a_repository_directory() {
    if which("git").is_none() {
        assert!(std::env::var("CI").is_err(), "git is needed under CI");
        eprintln!("skipped: git is not installed");
        return;
    }
    // `docs/app` is named like the repository `app`: a reused slot's copy leaves it alone, with
    // everything under it (AgentV 4.x's rule), so the agent's deletion does not break the copy.
    let eval = r#"workspace:
  template: ./tpl
  mode: pooled
  repos: [{path: app, repo: ./upstream, commit: main}]
execution: {target: agent}
tests:
  - {id: look, criteria: x, input: look, assertions: [{type: contains, value: seen}]}
"#;
    let agent = r#"echo "seen $(cat readme.txt) $(cat app/tracked.txt) [$(ls docs | tr '\n' ' ')]" > "$2"
echo changed > readme.txt
echo changed > app/tracked.txt
rm -rf docs/app
"#;
    let p = project(
        agent,
        eval,
        &[
            ("tpl/readme.txt", "pristine\n"),
            ("tpl/docs/app/notes.txt", "notes\n"),
            ("tpl/docs/index.txt", "i\n"),
        ],
    );
    local_repo(&p);
    run(&p, &["eval", "e.yaml", "--out", "r1.jsonl"]).code(0);
    let first = p.result("r1.jsonl", "look");
    assert_eq!(
        first["candidate_answer"].as_str().map(str::trim),
        Some("seen pristine original [app index.txt ]")
    );
    run(&p, &["eval", "e.yaml", "--out", "r2.jsonl"]).code(0);
    let second = p.result("r2.jsonl", "look");
    assert_eq!(
        second["candidate_answer"].as_str().map(str::trim),
        Some("seen pristine original [index.txt ]"),
        "{second}"
    );
}

fn start_sleeping_case(p: &Project) -> (agentv_testkit::Spawned, String) {
    let mut cmd = p.command(&["eval", "e.yaml", "--out", "r.jsonl"]);
    cmd.env("AGENTV_DATA_DIR", p.path().join("data"));
    let child = p.spawn_command(&mut cmd);
    let pid_file = p.path().join("agent.pid");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n')) {
        assert!(Instant::now() < deadline, "the agent did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = std::fs::read_to_string(&pid_file).expect("pid").trim().to_owned();
    (child, pid)
}

/// One case whose agent starts a 30 s child, writes its pid to `agent.pid` and waits for it.
fn sleeping_project() -> Project {
    let p = Project::new();
    let dir = p.path().to_path_buf();
    let agent = format!(
        "#!/bin/sh\necho busy > work.txt\nsleep 30 &\necho $! > {}/agent.pid\nwait\necho done > \"$2\"\n",
        dir.display()
    );
    let targets = format!(
        "targets:\n  - name: agent\n    provider: cli\n    command_template: {}/agent.sh {{PROMPT}} {{OUTPUT_FILE}}\n",
        dir.display()
    );
    p.file("agent.sh", &agent)
        .file("targets.yaml", &targets)
        .file("tpl/a.txt", "a")
        .file(
            "e.yaml",
            "workspace: {template: ./tpl, isolation: per_test}\nexecution: {target: agent}\ntests:\n  - {id: a, criteria: x, input: q, assertions: [{type: contains, value: done}]}\n",
        )
}

#[test]
fn ctrl_c_mid_case_leaves_no_workspace_and_no_process() {
    let p = sleeping_project();
    let (child, agent_pid) = start_sleeping_case(&p);
    assert!(
        !workspace_files(&p).is_empty(),
        "the workspace exists while the case runs"
    );
    send_signal(child.pid(), "INT");
    std::thread::sleep(Duration::from_millis(1500));
    send_signal(child.pid(), "INT");
    let run = child.wait();
    run.code(130);
    agentv_testkit::process::gone_soon(&agent_pid).expect("the agent's process group is killed");
    assert!(
        workspace_files(&p).is_empty(),
        "no workspace left: {:?}",
        workspace_files(&p)
    );
}

#[test]
fn after_kill_9_the_next_run_removes_the_orphaned_workspace() {
    let p = sleeping_project();
    let (child, agent_pid) = start_sleeping_case(&p);
    send_signal(child.pid(), "KILL");
    let _ = child.wait();
    agentv_testkit::process::kill_tree(agent_pid.parse().expect("pid"));
    let orphans = workspace_files(&p);
    assert!(
        orphans.iter().any(|f| f.ends_with("work.txt")),
        "left behind by kill -9: {orphans:?}"
    );
    let quick = "workspace: {template: ./tpl, isolation: per_test}\nexecution: {target: agent}\ntests:\n  - {id: b, criteria: x, input: q, assertions: [{type: contains, value: x}]}\n";
    let p = p.file("e.yaml", quick).file("agent.sh", "#!/bin/sh\necho x > \"$2\"\n");
    run(&p, &["eval", "e.yaml", "--out", "r2.jsonl"]).code(0);
    assert!(
        workspace_files(&p).is_empty(),
        "the orphan is gone: {:?}",
        workspace_files(&p)
    );
}

#[test]
fn the_workspace_example_grades_what_the_agent_did_in_both_formats() {
    let data = tempfile::tempdir().expect("data");
    for suite in ["bugfix.yaml", "bugfix.eval.yaml"] {
        let out = data.path().join(format!("{suite}.jsonl"));
        let mut cmd = agentv_testkit::agentv(
            &agentv_testkit::repo_root(),
            &["eval", &format!("examples/workspaces/evals/{suite}"), "--out"],
        );
        cmd.arg(&out).env("AGENTV_DATA_DIR", data.path().join("data"));
        Run::of(&mut cmd).code(0);
        let records: Vec<serde_json::Value> = std::fs::read_to_string(&out)
            .expect("results")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        let score = |id: &str| {
            let r = records.iter().find(|r| r["eval_id"] == id).expect("case");
            r["score"].as_f64().expect("score")
        };
        // (tests + diff + 0.5 × review 0.8) / 2.5
        for (id, want) in [
            ("fixes-the-bug", 0.96),
            ("cheats-on-the-tests", 0.56),
            ("rewrites-badly", 0.36),
            ("does-nothing", 0.36),
        ] {
            assert!((score(id) - want).abs() < 1e-9, "{suite} {id}: {}", score(id));
        }
    }
    let project = agentv_testkit::repo_root().join("examples/workspaces/project/calc.py");
    assert!(
        std::fs::read_to_string(project)
            .expect("template")
            .contains("return a - b"),
        "the template is untouched"
    );
}

#[test]
fn depends_on_runs_cases_in_waves_and_a_failed_dependency_skips_fails_or_runs_its_dependants() {
    // `write` is slow and `read` needs its file in the shared workspace: only waves make it pass.
    let agent = r#"echo "$1" >> "$(dirname "$0")/calls.log"
case "$1" in
  do=write) sleep 0.5; echo written > x.txt; echo ok > "$2" ;;
  do=read) cat x.txt > "$2" ;;
  do=crash) exit 1 ;;
  *) echo ran > "$2" ;;
esac
"#;
    let eval = r#"workspace: {template: ./tpl}
execution: {target: agent}
tests:
  - {id: read, criteria: x, input: do=read, depends_on: [write], assertions: [{type: contains, value: written}]}
  - {id: skipped, criteria: x, input: do=skipped, depends_on: [crash, write], assertions: [{type: contains, value: ran}]}
  - {id: failed, criteria: x, input: do=failed, depends_on: [crash], on_dependency_failure: fail, assertions: [{type: contains, value: ran}]}
  - {id: runs-anyway, criteria: x, input: do=anyway, depends_on: [crash], on_dependency_failure: run, assertions: [{type: contains, value: ran}]}
  - {id: after-skipped, criteria: x, input: do=after, depends_on: [skipped], assertions: [{type: contains, value: ran}]}
  - {id: write, criteria: x, input: do=write, assertions: [{type: contains, value: ok}]}
  - {id: crash, criteria: x, input: do=crash, assertions: [{type: contains, value: ok}]}
"#;
    let p = project(agent, eval, &[("tpl/keep.txt", "k")]);
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl", "--workers", "4"]).code(3);
    assert_eq!(p.result("r.jsonl", "read")["score"], 1.0, "read ran after write");
    assert_eq!(p.result("r.jsonl", "runs-anyway")["score"], 1.0);
    for (id, error) in [
        ("skipped", "Skipped: dependency failed (crash)"),
        ("failed", "Failed: dependency failed (crash)"),
        ("after-skipped", "Skipped: dependency failed (skipped)"),
    ] {
        let r = p.result("r.jsonl", id);
        assert_eq!(r["execution_status"], "execution_error", "{r}");
        assert_eq!(r["error"], error, "{r}");
        assert_eq!(r["failure_reason_code"], "dependency_failed", "{r}");
        assert_eq!(r["score"], 0.0, "{r}");
    }
    let calls = std::fs::read_to_string(p.path().join("calls.log")).expect("calls");
    let calls: Vec<&str> = calls.lines().collect();
    for never in ["do=skipped", "do=failed", "do=after"] {
        assert!(!calls.contains(&never), "{never} was not run: {calls:?}");
    }
    let at = |input: &str| calls.iter().position(|c| *c == input).expect(input);
    // Wave 0 (write, crash) ends before wave 1 (read, runs-anyway) starts.
    assert!(
        at("do=read") > at("do=write") && at("do=read") > at("do=crash"),
        "{calls:?}"
    );
    assert!(at("do=anyway") > at("do=write"), "{calls:?}");
}

#[test]
fn a_dependency_cycle_or_an_unknown_id_is_an_error_before_any_case_runs() {
    for (cases, message) in [
        (
            "  - {id: a, criteria: x, input: q, depends_on: [b]}\n  - {id: b, criteria: x, input: q, depends_on: [a]}\n",
            "circular dependency: a → b → a",
        ),
        (
            "  - {id: a, criteria: x, input: q, depends_on: [nope]}\n",
            "case `a` depends on `nope`, but the suite has no case with that id",
        ),
    ] {
        let eval = format!("execution: {{target: agent}}\ntests:\n{cases}");
        let p = project(
            "echo called > \"$(dirname \"$0\")/called\"\necho x > \"$2\"\n",
            &eval,
            &[],
        );
        run(&p, &["eval", "e.yaml", "--out", "r.jsonl"])
            .code(2)
            .stderr_has(message);
        assert!(!p.path().join("called").exists(), "no case ran: {cases}");
    }
    // A dependency left out by the selection is named as such.
    let p = project(
        "echo x > \"$2\"\n",
        "execution: {target: agent}\ntests:\n  - {id: a, criteria: x, input: q}\n  - {id: b, criteria: x, input: q, depends_on: [a]}\n",
        &[],
    );
    run(&p, &["eval", "e.yaml", "--out", "r.jsonl", "--eval-id", "b"])
        .code(2)
        .stderr_has("which the case selection leaves out of this run");
}

/// A stand-in container engine: logs each call's argv to `docker.log` beside it (one line a
/// call, a newline in an argument written `|`) and behaves
/// as `docker` would for the calls agentv makes; `exec` runs the program here, in the `-w`
/// directory with the `-e` variables. Images: `local/img` is present, `remote/img` pulls, any
/// other fails to pull. A container made for the agent (it mounts a `.io-` directory) is
/// `a9e17`, any other `c0ffee`.
const STAND_IN_DOCKER: &str = r#"#!/bin/sh
here=$(dirname "$0")
printf '%s' "$*" | tr '\n' '|' >> "$here/../docker.log"
echo >> "$here/../docker.log"
case "$1" in
  version) echo 27.1.1 ;;
  image) [ "$3" = local/img ] ;;
  pull) [ "$2" = remote/img ] || { echo "pull access denied for $2" >&2; exit 1; } ;;
  create) case "$*" in *"/.io-"*) echo a9e17 ;; *) echo c0ffee ;; esac ;;
  start|rm) ;;
  exec)
    shift
    while [ $# -gt 0 ]; do
      case "$1" in
        -i) shift ;;
        -e) export "$2"; shift 2 ;;
        -w) cd "$2" || exit 126; shift 2 ;;
        *) shift; break ;;
      esac
    done
    exec "$@" ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"#;

fn with_stand_in_engine(p: &Project, engine: &str) -> String {
    let bin = p.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let path = bin.join(engine);
    std::fs::write(&path, STAND_IN_DOCKER).expect("engine");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // Only the system directories besides: an engine installed elsewhere (a `docker` client
    // in /usr/local/bin) must not answer instead.
    format!("{}:/usr/bin:/bin", bin.display())
}

/// `eval e.yaml --out r.jsonl` and `args`, with the stand-in `engine` first on `PATH`.
fn engine_eval(p: &Project, engine: &str, args: &[&str]) -> std::process::Command {
    let path = with_stand_in_engine(p, engine);
    let mut cmd = p.command(&[&["eval", "e.yaml", "--out", "r.jsonl"], args].concat());
    cmd.env("AGENTV_DATA_DIR", p.path().join("data")).env("PATH", &path);
    cmd
}

#[test]
fn workspace_docker_runs_code_graders_and_command_checks_in_a_container_with_the_workspace_mounted() {
    let eval = r#"workspace: {template: ./tpl, isolation: per_test, docker: {image: local/img, memory: 512m, cpus: 1.5}}
execution: {target: agent}
tests:
  - id: fixed
    criteria: x
    input: fix
    assertions:
      - {name: tests, type: command, command: [sh, test.sh]}
      - {name: judge, type: code-grader, command: [sh, check.sh]}
"#;
    let check = "cat > /dev/null\nif grep -q good value.txt && [ \"$AGENTV_WORKSPACE_PATH\" = \"$(pwd)\" ]; then echo '{\"score\": 1}'; else echo '{\"score\": 0}'; fi\n";
    for engine in ["docker", "podman"] {
        let p = project(
            "echo good > value.txt\necho ok > \"$2\"\n",
            eval,
            &[
                ("tpl/value.txt", "unset\n"),
                ("tpl/test.sh", "grep -q good value.txt\n"),
                ("tpl/check.sh", check),
            ],
        );
        p.output(&mut engine_eval(&p, engine, &["--keep-workspaces"])).code(0);
        let r = p.result("r.jsonl", "fixed");
        assert_eq!(r["score"], 1.0, "{engine}: {r}");
        let ws = r["workspace_path"].as_str().expect("kept");
        let log = std::fs::read_to_string(p.path().join("docker.log")).expect("log");
        let want = [
            "version --format {{.Server.Version}}".to_owned(),
            "image inspect local/img".to_owned(),
            format!("create --memory=512m --cpus=1.5 -v {ws}:{ws} --stop-timeout=0 -w {ws} local/img sleep infinity"),
            "start c0ffee".to_owned(),
            format!("exec -i -e AGENTV_WORKSPACE_PATH={ws} -w {ws} c0ffee sh test.sh"),
            format!("exec -i -e AGENTV_WORKSPACE_PATH={ws} -w {ws} c0ffee sh check.sh"),
            "rm -f c0ffee".to_owned(),
        ];
        assert_eq!(log.lines().collect::<Vec<_>>(), want, "{engine}");
    }
}

/// `docker.log`'s lines.
fn engine_log(p: &Project) -> Vec<String> {
    let log = std::fs::read_to_string(p.path().join("docker.log")).expect("log");
    log.lines().map(str::to_owned).collect()
}

/// The directory mounted after the workspace in a `create` line: the agent's file directory.
fn io_dir_of(create: &str, ws: &str) -> String {
    let rest = create
        .strip_prefix(&format!("create -v {ws}:{ws} -v "))
        .unwrap_or_else(|| panic!("{create}"));
    let mount = rest.split(' ').next().expect("mount");
    let (io, same) = mount.split_once(':').expect("host:container");
    assert_eq!(io, same, "mounted at its own path: {create}");
    assert!(io.contains("/.io-"), "{create}");
    io.to_owned()
}

#[test]
fn docker_agent_runs_the_cli_command_in_a_container_by_default_in_agentv_files() {
    // An agentv (2.x) file: the agent runs in a container of its own, its variables passed by
    // name, its output file and input file mounted; graders get their own container.
    let eval = r#"description: d
workspace: {template: ./tpl, isolation: per_test, docker: {image: local/img}}
execution:
  target: agent
  evaluators:
    - {name: tests, type: command, command: [sh, test.sh]}
evalcases:
  - id: fixed
    expected_outcome: x
    input_messages:
      - role: user
        content: [{type: text, value: fix}, {type: file, value: spec.md}]
"#;
    let agent = "echo good > value.txt\necho \"token=${#AGENT_TOKEN} $(cat value.txt)\" > \"$2\"\n";
    let p = project(
        agent,
        eval,
        &[
            ("tpl/value.txt", "unset\n"),
            ("tpl/test.sh", "grep -q good value.txt\n"),
            ("spec.md", "the spec\n"),
            (".env", "AGENT_TOKEN=s3cr3t-token\n"),
        ],
    );
    p.output(&mut engine_eval(&p, "docker", &["--keep-workspaces"])).code(0);
    let r = p.result("r.jsonl", "fixed");
    assert_eq!(r["score"], 1.0, "{r}");
    assert_eq!(
        r["candidate_answer"].as_str().map(str::trim),
        Some("token=12 good"),
        "{r}"
    );
    let ws = r["workspace_path"].as_str().expect("kept").to_owned();
    assert_eq!(
        std::fs::read_to_string(Path::new(&ws).join("value.txt")).expect("edit"),
        "good\n",
        "the agent's edit is in the mounted workspace"
    );
    let log = engine_log(&p);
    assert_eq!(log.len(), 10, "{log:#?}");
    let io = io_dir_of(&log[2], &ws);
    let spec = p.path().join("spec.md").display().to_string();
    assert_eq!(
        log[2],
        format!(
            "create -v {ws}:{ws} -v {io}:{io} -v {spec}:{spec}:ro --stop-timeout=0 -w {ws} local/img sleep infinity"
        )
    );
    assert_eq!(log[3], "start a9e17");
    // The output file's name ends in six random characters.
    let exec = format!(
        "exec -i -w {ws} -e AGENT_TOKEN a9e17 sh -c {}/agent.sh 'fix||<file: path=\"{spec}\">' '{io}/agentv-fixed-",
        p.path().display()
    );
    let name = log[4].strip_prefix(&exec).unwrap_or_else(|| panic!("{}", log[4]));
    assert_eq!(name.len(), 6 + ".json'".len(), "{}", log[4]);
    assert!(name.ends_with(".json'"), "{}", log[4]);
    assert_eq!(log[5], "rm -f a9e17");
    assert_eq!(
        log[6..],
        [
            format!("create -v {ws}:{ws} --stop-timeout=0 -w {ws} local/img sleep infinity"),
            "start c0ffee".to_owned(),
            format!("exec -i -e AGENTV_WORKSPACE_PATH={ws} -w {ws} c0ffee sh test.sh"),
            "rm -f c0ffee".to_owned(),
        ]
    );
    let text = log.join("\n");
    assert!(!text.contains("s3cr3t"), "no value in any argv: {text}");
    assert!(!Path::new(&io).exists(), "the agent's file directory is removed");
}

#[test]
fn docker_agent_true_runs_claude_code_in_the_container_and_false_keeps_it_here() {
    // A 4.x file keeps its agent on this machine unless `agent: true` says otherwise.
    let claude = "#!/bin/sh\ncat > /dev/null\necho edited > edited.txt\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\"}'\n";
    for agent in [Some(true), Some(false), None] {
        let key = agent.map(|a| format!(", agent: {a}")).unwrap_or_default();
        let eval = format!(
            "workspace: {{template: ./tpl, isolation: per_test, docker: {{image: local/img{key}}}}}\nexecution: {{target: agent}}\ntests:\n  - {{id: a, criteria: x, input: edit, assertions: [{{type: contains, value: done}}]}}\n"
        );
        let p = project("", &eval, &[("tpl/a.txt", "a")]).file(
            "targets.yaml",
            "targets:\n  - {name: agent, provider: claude-code, executable: claude}\n",
        );
        let mut cmd = engine_eval(&p, "docker", &["--keep-workspaces"]);
        let bin = p.path().join("bin/claude");
        std::fs::write(&bin, claude).expect("claude");
        agentv_testkit::make_executable(&bin);
        cmd.env("ANTHROPIC_API_KEY", "sk-ant-s3cr3t")
            .env_remove("ANTHROPIC_AUTH_TOKEN")
            .env_remove("ANTHROPIC_BASE_URL");
        p.output(&mut cmd).code(0);
        let r = p.result("r.jsonl", "a");
        assert_eq!(r["score"], 1.0, "{agent:?}: {r}");
        let ws = r["workspace_path"].as_str().expect("kept").to_owned();
        assert!(
            Path::new(&ws).join("edited.txt").is_file(),
            "{agent:?}: edited in the workspace"
        );
        let log = engine_log(&p);
        let execs: Vec<&String> = log.iter().filter(|l| l.starts_with("exec")).collect();
        if agent == Some(true) {
            assert_eq!(
                *execs[0],
                format!("exec -i -w {ws} -e ANTHROPIC_API_KEY a9e17 claude -p --output-format stream-json --verbose")
            );
            assert!(log.contains(&"rm -f a9e17".to_owned()), "{log:#?}");
            assert!(!log.join("\n").contains("s3cr3t"), "{log:#?}");
        } else {
            assert!(execs.is_empty(), "{agent:?}: the agent ran here: {log:#?}");
        }
    }
}

#[test]
fn docker_agent_attempt_that_times_out_has_its_container_removed_and_the_retry_gets_a_new_one() {
    let eval = r#"description: d
workspace: {template: ./tpl, isolation: per_test, docker: {image: local/img}}
execution: {target: agent}
evalcases:
  - id: slow
    expected_outcome: x
    input_messages: [{role: user, content: wait}]
"#;
    let p = project("sleep 30\necho late > \"$2\"\n", eval, &[("tpl/a.txt", "a")]);
    let targets = format!(
        "targets:\n  - name: agent\n    provider: cli\n    timeout_seconds: 1\n    command_template: {}/agent.sh {{PROMPT}} {{OUTPUT_FILE}}\n",
        p.path().display()
    );
    let p = p.file("targets.yaml", &targets);
    p.output(&mut engine_eval(&p, "docker", &["--max-retries", "1"]))
        .code(3);
    let r = p.result("r.jsonl", "slow");
    assert!(r["error"].as_str().is_some_and(|e| e.contains("timed out")), "{r}");
    let calls: Vec<String> = engine_log(&p)
        .into_iter()
        .filter(|l| !l.starts_with("version") && !l.starts_with("image"))
        .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        calls,
        [
            "create -v",
            "start a9e17",
            "exec -i",
            "rm -f",
            "create -v",
            "start a9e17",
            "exec -i",
            "rm -f"
        ],
        "each attempt in a container of its own, removed when it ends"
    );
    assert!(workspace_files(&p).is_empty(), "{:?}", workspace_files(&p));
}

#[test]
fn workspace_docker_uses_podman_when_the_docker_daemon_does_not_answer() {
    let eval = "workspace: {template: ./tpl, docker: {image: local/img}}\nexecution: {target: agent}\ntests:\n  - {id: a, criteria: x, input: q, assertions: [{type: contains, value: x}]}\n";
    let p = project("echo x > \"$2\"\n", eval, &[("tpl/a.txt", "a")]);
    let path = with_stand_in_engine(&p, "podman");
    let docker = p.path().join("bin/docker");
    std::fs::write(
        &docker,
        "#!/bin/sh\necho \"docker $*\" >> \"$(dirname \"$0\")/../docker.log\"\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n",
    )
    .expect("docker");
    agentv_testkit::make_executable(&docker);
    let mut cmd = p.command(&["eval", "e.yaml", "--out", "r.jsonl"]);
    cmd.env("AGENTV_DATA_DIR", p.path().join("data")).env("PATH", &path);
    p.output(&mut cmd).code(0);
    let log = engine_log(&p);
    assert_eq!(log[0], "docker version --format {{.Server.Version}}", "{log:#?}");
    assert_eq!(log[1], "version --format {{.Server.Version}}", "then podman: {log:#?}");
    assert!(log[2..].iter().all(|l| !l.starts_with("docker ")), "{log:#?}");
    assert!(log.contains(&"rm -f c0ffee".to_owned()), "{log:#?}");

    // Neither answering: the first engine's message.
    std::fs::write(p.path().join("bin/podman"), "#!/bin/sh\nexit 1\n").expect("podman");
    let mut cmd = p.command(&["eval", "e.yaml", "--out", "r2.jsonl"]);
    cmd.env("AGENTV_DATA_DIR", p.path().join("data")).env("PATH", &path);
    p.output(&mut cmd)
        .code(2)
        .stderr_has("docker version` failed: exit 1: Cannot connect to the Docker daemon: is the engine running?");
}

#[test]
fn workspace_docker_without_an_engine_or_its_image_is_an_error_before_any_case_runs() {
    let eval = |image: &str| {
        format!(
            "workspace: {{template: ./tpl, docker: {{image: {image}}}}}\nexecution: {{target: agent}}\ntests:\n  - {{id: a, criteria: x, input: q, assertions: [{{type: contains, value: x}}]}}\n"
        )
    };
    let agent = "echo called > \"$(dirname \"$0\")/called\"\necho x > \"$2\"\n";
    let p = project(agent, &eval("local/img"), &[("tpl/a.txt", "a")]);
    let empty = p.path().join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let mut cmd = p.command(&["eval", "e.yaml", "--out", "r.jsonl"]);
    cmd.env("AGENTV_DATA_DIR", p.path().join("data")).env("PATH", &empty);
    p.output(&mut cmd)
        .code(2)
        .stderr_has("neither `docker` nor `podman` is on PATH");
    assert!(!p.path().join("called").exists());

    for (image, code, message) in [
        (
            "missing/img",
            2,
            "pull missing/img` failed: exit 1: pull access denied for missing/img",
        ),
        ("remote/img", 0, ""),
    ] {
        let p = project(agent, &eval(image), &[("tpl/a.txt", "a")]);
        p.output(&mut engine_eval(&p, "docker", &[]))
            .code(code)
            .stderr_has(message);
        assert_eq!(p.path().join("called").exists(), code == 0, "{image}");
    }
}

const EXPLORING_JUDGE: &str = r#"
- when: "fix the bug"
  steps: [{text: unused}]
  judge_steps:
    - calls: [{name: list_files, arguments: {}}]
    - calls: [{name: read_file, arguments: {path: calc.py}}, {name: read_file, arguments: {path: ../secret.txt}}]
    - calls: [{name: search_files, arguments: {pattern: "return a \\+ b"}}]
    - text: '{"score": 1, "assertions": [{"text": "calc.py adds", "passed": true}]}'
"#;

#[tokio::test]
async fn an_llm_grader_with_max_steps_reads_the_workspace_with_tools_and_never_leaves_it() {
    let fake = agentv_testkit::llm::FakeLlm::builder()
        .script(agentv_testkit::llm::Script::parse(EXPLORING_JUDGE).expect("script"))
        .start()
        .await;
    let p = Project::new();
    let dir = p.path().to_path_buf();
    let targets = format!(
        "targets:\n  - name: agent\n    provider: cli\n    command_template: {}/agent.sh {{PROMPT}} {{OUTPUT_FILE}}\n    judge_target: judge\n{}",
        dir.display(),
        agentv_testkit::llm::Api::OpenAi.target("judge", &fake.uri(), "sk-test")
    );
    let eval = "workspace: {template: ./tpl, isolation: per_test}\nexecution: {target: agent}\ntests:\n  - {id: fixed, criteria: calc adds, input: fix the bug, assertions: [{type: llm-grader, max_steps: 4}]}\n";
    let p = p
        .file(
            "agent.sh",
            "#!/bin/sh\nsed -i 's/a - b/a + b/' calc.py\necho fixed > \"$2\"\n",
        )
        .file("targets.yaml", &targets)
        .file("e.yaml", eval)
        .file("tpl/calc.py", "def add(a, b):\n    return a - b\n")
        .file("secret.txt", "do not read");
    let mut cmd = p.command(&["eval", "e.yaml", "--out", "r.jsonl"]);
    cmd.env("AGENTV_DATA_DIR", p.path().join("data"));
    p.output_async(cmd).await.code(0);
    let r = p.result("r.jsonl", "fixed");
    assert_eq!(r["score"], 1.0, "{r}");
    let details = &r["evaluator_results"][0]["details"];
    assert_eq!(details["mode"], "built-in", "{r}");
    assert_eq!(details["steps"], 4, "{r}");
    let calls = details["tool_calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 4, "{details}");
    assert_eq!(
        calls[0]["output"],
        serde_json::json!([{"name": "calc.py", "type": "file"}])
    );
    assert_eq!(calls[1]["output"]["content"], "def add(a, b):\n    return a + b\n");
    assert_eq!(calls[2]["output"], "Path '../secret.txt' is outside the workspace");
    assert_eq!(calls[3]["output"][0]["text"], "    return a + b");
    // Each step sent the earlier calls and their results back, as the API requires.
    let judge_requests: Vec<serde_json::Value> = fake
        .requests()
        .await
        .iter()
        .filter_map(|r| serde_json::from_slice(&r.body).ok())
        .filter(|b: &serde_json::Value| b.get("tools").is_some())
        .collect();
    assert_eq!(judge_requests.len(), 4);
    let last = judge_requests[3].to_string();
    assert!(
        last.contains("outside the workspace") && last.contains("list_files"),
        "{last}"
    );
    assert_eq!(judge_requests[2].get("tool_choice"), None);
    assert_eq!(
        judge_requests[3]["tool_choice"], "none",
        "the last allowed step must answer"
    );

    // Without a workspace the grader cannot explore: a grader error that says why.
    let bare = Project::new()
        .file("agent.sh", "#!/bin/sh\necho fixed > \"$2\"\n")
        .file("targets.yaml", &targets)
        .file(
            "e.yaml",
            "execution: {target: agent}\ntests:\n  - {id: bare, criteria: x, input: fix the bug, assertions: [{type: llm-grader, max_steps: 5}]}\n",
        );
    let mut cmd = bare.command(&["eval", "e.yaml", "--out", "r.jsonl"]);
    cmd.env("AGENTV_DATA_DIR", bare.path().join("data"));
    bare.output_async(cmd).await;
    let r = bare.result("r.jsonl", "bare");
    assert!(
        r["evaluator_results"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("reads the case's workspace, and this case has none")),
        "{r}"
    );
}
