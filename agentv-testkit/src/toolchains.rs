//! The judge languages' toolchains, for tests that run judges written in them: whether one is
//! installed, and Rust judge crates built offline into one shared target directory, so their
//! dependencies compile once for every test (and every later run).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::project::agentv_bin;

/// Whether `program` runs (`program --version` exits 0).
pub fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether a test may use `program`, which it needs for `purpose`: true when it is installed.
/// When it is not, the test is skipped with a note written straight to the terminal (test
/// output capture swallows `eprintln!`), except under `CI=true` (`.ci/run` sets it and installs
/// every tool), where a missing tool fails the test: a check that did not run never passes.
#[track_caller]
pub fn require(program: &str, purpose: &str) -> bool {
    if installed(program) {
        return true;
    }
    skip_or_fail(&format!("`{program}` is not installed, so {purpose} cannot run"));
    false
}

/// Skips the calling test with `reason` (a note on the terminal), or fails it under `CI=true`.
#[track_caller]
pub fn skip_or_fail(reason: &str) {
    if in_ci() {
        panic!("{reason}; CI must run this check (.ci/run installs what the tests need)");
    }
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

/// Whether the tests run in CI (`CI` set to anything but `false` or `0`, as CI services do).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The target directory Rust judge crates share: `e2e-judges/` in the build's target
/// directory, beside the `agentv` under test.
pub fn judge_target_dir() -> PathBuf {
    let bin = agentv_bin();
    let profile = bin.parent().expect("the binary sits in target/<profile>");
    profile.parent().unwrap_or(profile).join("e2e-judges")
}

/// Sets what a `cargo` run by agentv (a judge's `cargo run`) needs in tests: the shared target
/// directory, and no network.
pub fn rust_judge_env(cmd: &mut Command) -> &mut Command {
    cmd.env("CARGO_TARGET_DIR", judge_target_dir())
        .env("CARGO_NET_OFFLINE", "true")
}

/// Builds the crate of `manifest` offline into [`judge_target_dir`], panicking with cargo's
/// output when it fails. No deadline: the first build compiles the SDK's dependencies.
#[track_caller]
pub fn cargo_build(manifest: &Path) {
    let out = rust_judge_env(
        Command::new("cargo")
            .args(["build", "--quiet", "--manifest-path"])
            .arg(manifest),
    )
    .stdin(Stdio::null())
    .output()
    .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo build --manifest-path {} failed\n{}",
        manifest.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}
