//! Workspace costs (`docs/workspaces.md`), in process with the release build:
//!
//! 1. a per-case workspace from a 5 000-file, 50 MB template, made by 8 workers at once: wall
//!    per workspace (total wall / workspaces), and the method (clone or copy);
//! 2. `file_changes` of a 5-file edit in such a workspace;
//! 3. 200 cases through the workspace runtime with a small template and an agent that edits one
//!    file: agentv's own CPU per case (this process, without git's) and git's, and the disk left
//!    behind.
//!
//! Usage: `workspace-bench [DIR]` (default: a temporary directory; use one on the file system
//! the workspaces will live on).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentv_core::model::EvalCase;
use agentv_core::model::workspace::{CaseWorkspace, Isolation, WorkspaceConfig};
use agentv_core::workspace::{Among, Git, Runtime, Template, WorkspaceOptions, changed_paths, remove_tree, settle};

const FILES: usize = 5000;
const FILE_BYTES: usize = 10 * 1024;
const WORKERS: usize = 8;
const COPIES: usize = 24;

fn main() {
    let base = std::env::args().nth(1).map(PathBuf::from);
    let tmp = match &base {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .expect("a temporary directory");
    let root = tmp.path();
    let template = root.join("template");
    make_template(&template, FILES, FILE_BYTES);
    println!("template: {FILES} files, {} MB", FILES * FILE_BYTES / 1_000_000);

    let tree = Arc::new(Template::scan(&template).expect("scan"));
    let copies = root.join("copies");
    std::fs::create_dir_all(&copies).expect("dir");
    let cpu0 = cpu();
    let started = Instant::now();
    let methods = on_workers(|i| tree.copy_to(&copies.join(format!("ws-{i}"))).expect("copy"));
    let wall = started.elapsed();
    let cpu_copy = cpu() - cpu0;
    let cpu1 = cpu();
    let removed = Instant::now();
    on_workers(|i| remove_tree(&copies.join(format!("ws-{i}"))).expect("remove"));
    let remove_wall = removed.elapsed();
    let cpu_remove = cpu() - cpu1;
    let per = wall / COPIES as u32;
    let per_removal = remove_wall / COPIES as u32;
    println!(
        "per_test workspace ({WORKERS} workers, {COPIES} workspaces, by {}): copy {:.1} ms wall per workspace (target ≤ 30 ms: {}), {:.1} ms CPU each; removal (off the case's path) {:.1} ms wall, {:.1} ms CPU each; copy + removal {:.1} ms wall per workspace",
        methods.last().map_or("?", |m| m.name()),
        ms(per),
        verdict(per <= Duration::from_millis(30)),
        ms(cpu_copy) / COPIES as f64,
        ms(per_removal),
        ms(cpu_remove) / COPIES as f64,
        ms(per + per_removal),
    );

    yardstick(&template, &copies);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        diff_cost(root, &tree).await;
        suite_cost(root).await;
    });
}

/// `file_changes` of a 5-file edit in a copy of the big template, as a case takes it (a stat
/// walk against the template, then git on the paths it found), and with git looking at the
/// whole tree (what a workspace that is not a plain copy costs).
async fn diff_cost(root: &Path, tree: &Template) {
    let git = Git::new(root.join("baseline.git"));
    let first = root.join("first");
    tree.copy_to(&first).expect("copy");
    let baseline = git
        .snapshot(&first, None, &root.join("first.index"))
        .await
        .expect("baseline");
    let tracked = git.tracked(&first, &baseline).await.expect("tracked");
    let (mut walks, mut among, mut whole) = (Vec::new(), Vec::new(), Vec::new());
    let (mut own, mut git_cpu) = (Duration::ZERO, Duration::ZERO);
    for round in 0..7 {
        let ws = root.join(format!("diff-{round}"));
        tree.copy_to(&ws).expect("copy");
        let copied = settle();
        for d in 0..5 {
            let file = ws.join(format!("d{d}/f{round}.txt"));
            let mut text = std::fs::read_to_string(&file).expect("read");
            text.push_str("\nedited\n");
            std::fs::write(&file, text).expect("edit");
        }
        let (self0, children0) = (cpu(), children_cpu());
        let started = Instant::now();
        let walk = changed_paths(tree, &ws, copied).expect("walk");
        walks.push(started.elapsed());
        let scratch = root.join(format!("diff-{round}.scratch"));
        let Among::Diff(Some(diff)) = git
            .changes_among(&ws, &baseline, &tracked, &walk, &scratch)
            .await
            .expect("diff")
        else {
            panic!("a diff of the changed paths");
        };
        among.push(started.elapsed());
        own += cpu() - self0;
        git_cpu += children_cpu() - children0;
        assert_eq!(diff.matches("diff --git").count(), 5, "{diff}");
        let index = root.join(format!("diff-{round}.index"));
        std::fs::copy(&baseline.index, &index).expect("index");
        let started = Instant::now();
        let full = git
            .changes(&ws, &baseline, &index)
            .await
            .expect("diff")
            .expect("changed");
        whole.push(started.elapsed());
        assert_eq!(full, diff, "the same text either way");
        remove_tree(&ws).expect("remove");
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (walk, among, whole) = (median(&mut walks), median(&mut among), median(&mut whole));
    println!(
        "file_changes of a 5-file edit in the {FILES}-file tree: {:.1} ms wall median of 7 (target ≤ 20 ms: {}), {:.1} ms CPU (stat walk {:.1} ms wall, {:.1} ms CPU; git on the changed paths {:.1} ms CPU); git on the whole tree instead: {:.1} ms wall",
        ms(among),
        verdict(among <= Duration::from_millis(20)),
        ms(own + git_cpu) / 7.0,
        ms(walk),
        ms(own) / 7.0,
        ms(git_cpu) / 7.0,
        ms(whole),
    );
}

/// 200 per_test cases through the runtime: open (copy, baseline), an agent edit, the diff,
/// finish (removal).
async fn suite_cost(root: &Path) {
    const CASES: usize = 200;
    let template = root.join("small");
    make_template(&template, 20, 2048);
    let eval = root.join("e.yaml");
    std::fs::write(&eval, "").expect("eval");
    let data = root.join("data");
    let spec = Arc::new(CaseWorkspace {
        config: Some(WorkspaceConfig {
            template: Some(template),
            isolation: Some(Isolation::PerTest),
            ..WorkspaceConfig::default()
        }),
        suite_file: Arc::from(eval.as_path()),
        target_hooks: Arc::from(Vec::new()),
    });
    let options = WorkspaceOptions {
        data_dir: Some(data.clone()),
        ..WorkspaceOptions::default()
    };
    let rt = Arc::new(Runtime::new(options, Arc::from(Vec::new()), Default::default()));
    let (self0, children0) = (cpu(), children_cpu());
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let gate = Arc::new(tokio::sync::Semaphore::new(WORKERS));
    for i in 0..CASES {
        let rt = rt.clone();
        let spec = spec.clone();
        let gate = gate.clone();
        tasks.spawn(async move {
            let _slot = gate.acquire().await.expect("gate");
            let case = EvalCase {
                id: format!("case-{i}"),
                workspace: Some(spec),
                ..EvalCase::default()
            };
            let mut session = rt.open(&case, "agent").await.expect("open").expect("a workspace");
            std::fs::write(session.path().join("d0/f0.txt"), format!("edited by {i}\n")).expect("agent edit");
            let view = session.after_agent().await;
            assert!(view.file_changes.is_some());
            let mut record: agentv_core::model::EvaluationRecord = serde_json::from_value(serde_json::json!({
                "timestamp": "", "eval_id": case.id, "dataset": "d", "target": "agent", "attempt": 1,
                "execution_status": "ok", "score": 1.0, "verdict": "pass", "hits": [], "misses": [],
                "candidate_answer": "", "evaluator_results": []
            }))
            .expect("record");
            session.finish(&mut record);
        });
    }
    while tasks.join_next().await.is_some() {}
    let kept = rt.finish().await;
    let wall = started.elapsed();
    let own = cpu() - self0;
    let git = children_cpu() - children0;
    let left = du(&data.join("workspaces"));
    println!(
        "{CASES} per_test cases (20-file template, one edit each, {WORKERS} workers): {:.2} ms of agentv's own CPU per case (target ≤ 5 ms: {}), {:.2} ms of git's, {:.1} ms wall per case; {} kept, {left} bytes left under workspaces/ (target 0: {})",
        ms(own) / CASES as f64,
        verdict(own / CASES as u32 <= Duration::from_millis(5)),
        ms(git) / CASES as f64,
        ms(wall) / CASES as f64,
        kept.len(),
        verdict(left == 0),
    );
}

/// The same template copied by `cp -a` and removed by `rm -rf`, one at a time: what the file
/// system charges for creating and deleting its files, whoever does it.
fn yardstick(template: &Path, copies: &Path) {
    let run = |argv: &[&str]| {
        let children0 = children_cpu();
        let started = Instant::now();
        let ok = std::process::Command::new(argv[0])
            .args(&argv[1..])
            .status()
            .is_ok_and(|s| s.success());
        (ok, started.elapsed(), children_cpu() - children0)
    };
    let dest = copies.join("cp-a");
    let dest = dest.to_string_lossy();
    let template = template.to_string_lossy();
    let (mut copy, mut remove) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let (ok, wall, cpu) = run(&["cp", "-a", &template, &dest]);
        if !ok {
            println!("cp -a: cannot run it here");
            return;
        }
        copy.push((wall, cpu));
        let (_, wall, cpu) = run(&["rm", "-rf", &dest]);
        remove.push((wall, cpu));
    }
    copy.sort();
    remove.sort();
    println!(
        "yardstick, one at a time: cp -a of the template {:.1} ms wall, {:.1} ms CPU; rm -rf {:.1} ms wall, {:.1} ms CPU (medians of 3)",
        ms(copy[1].0),
        ms(copy[1].1),
        ms(remove[1].0),
        ms(remove[1].1),
    );
}

/// Runs `job(i)` for i in 0..COPIES on `WORKERS` threads, as many cases at once as a run with
/// `--workers 8` has; returns the results in no particular order.
fn on_workers<T: Send>(job: impl Fn(usize) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|w| {
                let job = &job;
                s.spawn(move || (w..COPIES).step_by(WORKERS).map(job).collect::<Vec<T>>())
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).flatten().collect()
    })
}

fn make_template(dir: &Path, files: usize, bytes: usize) {
    let per_dir = 50;
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..files {
        let sub = dir.join(format!("d{}", i / per_dir));
        std::fs::create_dir_all(&sub).expect("dir");
        let mut text = String::with_capacity(bytes);
        while text.len() < bytes {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            text.push_str(&format!("line {seed:016x}\n"));
        }
        std::fs::write(sub.join(format!("f{}.txt", i % per_dir)), &text[..bytes]).expect("file");
    }
}

/// This process's CPU time (user + system).
fn cpu() -> Duration {
    rusage(libc::RUSAGE_SELF)
}

/// CPU time of the children this process waited for (git).
fn children_cpu() -> Duration {
    rusage(libc::RUSAGE_CHILDREN)
}

fn rusage(who: libc::c_int) -> Duration {
    // SAFETY: `rusage` is plain integers, for which all zeros is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own, valid for the call.
    unsafe { libc::getrusage(who, &mut usage) };
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Bytes of files under `dir`.
fn du(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => du(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}
