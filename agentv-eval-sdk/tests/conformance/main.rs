//! The Rust SDK's runner of the judge SDK conformance suite (sdk/conformance/README.md).
//!
//! `cargo test -p agentv-eval-sdk --test conformance [-- SECTION_OR_CASE_SUBSTRING ...]` runs
//! every case of sdk/conformance/cases against this SDK, with the suite's Python fake proxy,
//! prints one line per case and `rust: N passed, N failed, N skipped`, and fails on any failure.
//! Without python3 it says so and skips everything.
//!
//! The same binary is the conformance judge (and the judge of docs/judges.md): the runner
//! starts itself with `AGENTV_CONFORMANCE_ROLE` set.

mod fake_proxy;
mod judge;
mod matchers;
mod sections;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use fake_proxy::FakeProxy;
use matchers::Failure;

/// Set in the environment of the judge processes the runner starts.
const ROLE_ENV: &str = "AGENTV_CONFORMANCE_ROLE";

fn main() -> ExitCode {
    match std::env::var(ROLE_ENV).as_deref() {
        Ok("judge") => return judge::main(),
        Ok("docs-judge") => return docs_judge(),
        _ => {}
    }
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    run(&filters)
}

/// The Rust judge of docs/judges.md, exactly as printed there (the runner checks that the
/// text matches).
mod docs_judge_program {
    include!("docs_judge.rs");

    pub fn run() -> ExitCode {
        main()
    }
}

fn docs_judge() -> ExitCode {
    docs_judge_program::run()
}

/// `sdk/conformance` in this repository.
fn conformance_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk/conformance")
}

fn python3_available() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether the suite runs in CI (`CI` set to anything but `false` or `0`).
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

fn run(filters: &[String]) -> ExitCode {
    if !python3_available() {
        let why = "python3 is not installed, and the suite's fake proxy (sdk/conformance/fake_proxy.py) needs it";
        // Under CI (`.ci/run` installs python3) a suite that did not run is a failure, never a pass.
        if in_ci() {
            println!("FAIL  rust conformance: {why}");
            println!("rust: 0 passed, 1 failed, 0 skipped");
            return ExitCode::FAILURE;
        }
        println!("skip  rust conformance: {why}");
        println!("rust: 0 passed, 0 failed, 1 skipped");
        return ExitCode::SUCCESS;
    }
    let dir = conformance_dir();
    let proxy = match FakeProxy::start(&dir.join("fake_proxy.py")) {
        Ok(proxy) => proxy,
        Err(e) => {
            println!("FAIL  rust conformance: {e}");
            println!("rust: 0 passed, 1 failed, 0 skipped");
            return ExitCode::FAILURE;
        }
    };
    let ctx = sections::Context::new(proxy, dir);
    let plan = match sections::plan(&ctx) {
        Ok(plan) => plan,
        Err(Failure(e)) => {
            println!("FAIL  rust conformance: {e}");
            println!("rust: 0 passed, 1 failed, 0 skipped");
            return ExitCode::FAILURE;
        }
    };
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for case in plan {
        let label = format!("{}/{}", case.section, case.name);
        if !filters.is_empty() && !filters.iter().any(|f| label.contains(f.as_str())) {
            continue;
        }
        if let Some(reason) = &case.skip {
            skipped += 1;
            println!("skip  rust {label}: {reason}");
            continue;
        }
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (case.run)(&ctx))) {
            Ok(Ok(())) => {
                passed += 1;
                println!("ok    rust {label}");
            }
            Ok(Err(Failure(reason))) => {
                failed += 1;
                println!("FAIL  rust {label}: {reason}");
            }
            Err(_) => {
                failed += 1;
                println!("FAIL  rust {label}: the runner panicked (see above)");
            }
        }
    }
    println!("rust: {passed} passed, {failed} failed, {skipped} skipped");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
