//! `workspace.docker` with a real container engine (`docs/workspaces.md#containers`): podman
//! running an image imported from a tarball of the host's static busybox, no registry. The
//! engine's settings come from a `containers.conf` the test writes (the `runc` runtime, fixed
//! limits, no network), so the test does not depend on the machine's defaults.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agentv_testkit::Project;

const IMAGE: &str = "localhost/agentv-e2e-busybox:latest";

/// The busybox applets the image offers.
const APPLETS: &[&str] = &["sh", "sleep", "cat", "echo", "grep", "tr", "ls", "rm", "mkdir", "true"];

const CONTAINERS_CONF: &str = r#"[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1000:1000"]
netns = "none"

[engine]
runtime = "runc"
"#;

/// Why no engine can run the image here: a missing program, or the engine's own error.
fn why_not(programs: &[&str]) -> Option<String> {
    for program in programs {
        let found = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
            .iter()
            .any(|dir| Path::new(dir).join(program).is_file());
        if !found {
            return Some(format!("`{program}` is not installed"));
        }
    }
    None
}

/// Runs `podman args` with the test's settings; its stdout, or why it failed.
fn podman(conf: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("/usr/bin/podman")
        .args(args)
        .env("CONTAINERS_CONF", conf)
        .output()
        .map_err(|e| format!("cannot run podman: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "podman {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Builds the image from the host's busybox and checks a container of it runs; the path of
/// the settings file. `Err` says why not.
fn image(dir: &Path) -> Result<PathBuf, String> {
    if let Some(why) = why_not(&["podman", "runc", "busybox", "tar"]) {
        return Err(why);
    }
    let conf = dir.join("containers.conf");
    std::fs::write(&conf, CONTAINERS_CONF).map_err(|e| e.to_string())?;
    let root = dir.join("rootfs");
    std::fs::create_dir_all(root.join("bin")).map_err(|e| e.to_string())?;
    let busybox = ["/usr/bin/busybox", "/bin/busybox"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .ok_or("no busybox binary")?;
    std::fs::copy(busybox, root.join("bin/busybox")).map_err(|e| e.to_string())?;
    for applet in APPLETS {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).map_err(|e| e.to_string())?;
    }
    let tar = dir.join("rootfs.tar");
    let made = Command::new("tar")
        .arg("-C")
        .arg(&root)
        .arg("-cf")
        .arg(&tar)
        .arg(".")
        .status()
        .map_err(|e| e.to_string())?;
    if !made.success() {
        return Err("tar failed".to_owned());
    }
    podman(&conf, &["import", &tar.display().to_string(), IMAGE])?;
    let said = podman(&conf, &["run", "--rm", IMAGE, "sh", "-c", "echo ready"])?;
    if said.trim() != "ready" {
        return Err(format!("a container of the image said {said:?}"));
    }
    Ok(conf)
}

/// The pids of processes whose command line is `argv`.
fn processes(argv: &[&str]) -> Vec<String> {
    let want = argv.join("\0");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).trim_end_matches('\0') == want {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

#[test]
fn docker_agent_runs_in_a_real_podman_container_and_a_timeout_stops_what_runs_inside() {
    let scratch = tempfile::tempdir().expect("tmp");
    let conf = match image(scratch.path()) {
        Ok(conf) => conf,
        Err(why) if std::env::var("CI").is_err() => {
            eprintln!("skipped: no container engine can run a local image here: {why}");
            return;
        }
        Err(why) => panic!("no container engine can run a local image under CI: {why}"),
    };
    // The agent writes into the workspace and answers with the container's first process
    // (`sleep infinity`, not this machine's init); `slow` outlives its timeout.
    let targets = r#"targets:
  - name: agent
    provider: cli
    timeout_seconds: 3
    command_template: "case {PROMPT} in *slow*) sleep 317 ;; esac; echo good > value.txt; tr '\\0' ' ' < /proc/1/cmdline > {OUTPUT_FILE}"
"#;
    let eval = format!(
        r#"workspace: {{template: ./tpl, isolation: per_test, docker: {{image: "{IMAGE}", agent: true}}}}
execution: {{target: agent}}
tests:
  - id: fast
    criteria: x
    input: fast
    assertions:
      - {{type: contains, value: sleep infinity}}
      - {{name: tests, type: command, command: [sh, test.sh]}}
  - {{id: slow, criteria: x, input: slow, assertions: [{{type: contains, value: x}}]}}
"#
    );
    let p = Project::new()
        .file("targets.yaml", targets)
        .file("e.yaml", &eval)
        .file("tpl/value.txt", "unset\n")
        .file("tpl/test.sh", "grep -q good value.txt\n");
    let mut cmd = p.command(&["eval", "e.yaml", "--out", "r.jsonl", "--max-retries", "0"]);
    // No `docker` client of /usr/local/bin: the podman of /usr/bin answers.
    cmd.env("AGENTV_DATA_DIR", p.path().join("data"))
        .env("CONTAINERS_CONF", &conf)
        .env("PATH", "/usr/bin:/bin");
    p.output(&mut cmd).code(3);
    let fast = p.result("r.jsonl", "fast");
    assert_eq!(fast["score"], 1.0, "{fast}");
    assert_eq!(
        fast["candidate_answer"].as_str().map(str::trim),
        Some("sleep infinity"),
        "{fast}"
    );
    assert!(
        fast["workspace"]["file_changes"]
            .as_str()
            .is_some_and(|d| d.contains("+good")),
        "{fast}"
    );
    let slow = p.result("r.jsonl", "slow");
    assert!(
        slow["error"].as_str().is_some_and(|e| e.contains("timed out")),
        "{slow}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !processes(&["sleep", "317"]).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the agent's process in the container is still running"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = podman(&conf, &["ps", "-a", "-q", "--filter", &format!("ancestor={IMAGE}")]).expect("ps");
    assert_eq!(left.trim(), "", "every container is removed");
}
