//! Sinks are only ever handed redacted records (`docs/architecture.md#secrets`): a sink written
//! here, that redacts nothing itself, sees no secret of a run, whatever a new report format
//! would forget.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentv_core::report::{Row, Sink};
use agentv_core::{Interrupt, LoadOptions, PlanOptions, RunObserver, RunOptions, Secrets, Workspace};

const SECRET: &str = "sk-sink-secret-7f3a";

/// Keeps everything it is given, as text.
struct Throwaway(Arc<Mutex<Vec<String>>>);

impl Sink for Throwaway {
    fn write(&mut self, row: &Row<'_>) -> std::io::Result<()> {
        let json = String::from_utf8_lossy(&row.json()?).into_owned();
        let debug = format!("{:?}", row.record());
        self.0.lock().expect("unpoisoned").extend([json, debug]);
        Ok(())
    }

    fn describe(&self) -> String {
        "throwaway sink".to_owned()
    }
}

struct Quiet;

impl RunObserver for Quiet {
    fn case_finished(&mut self, _: &agentv_core::model::EvaluationRecord, _: Duration, _: usize, _: usize) {}
}

#[tokio::test]
async fn a_throwaway_sink_sees_no_secret() {
    let dir = tempfile::tempdir().expect("tmp");
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
    write(".env", &format!("AGENTV_SINK_SECRET={SECRET}\n"));
    // The target answers with the secret, and a grader quotes it in its hits.
    write(
        "targets.yaml",
        "targets:\n  - name: default\n    provider: mock\n    response: ${{ AGENTV_SINK_SECRET }}\n",
    );
    write(
        "e.yaml",
        &format!(
            "evalcases:\n  - id: leak\n    expected_outcome: x\n    input_messages: [{{role: user, content: tell me}}]\n    evaluators: [{{name: kw, type: keywords, expected: [{SECRET}, nothing like this]}}]\n"
        ),
    );
    let ws = Workspace::from_cwd(dir.path().to_path_buf());
    let loaded = agentv_core::load(
        &ws,
        &LoadOptions {
            paths: vec![dir.path().join("e.yaml").display().to_string()],
            ..LoadOptions::default()
        },
    )
    .expect("loaded");
    let secrets = Secrets::default();
    let options = PlanOptions {
        out: Some(dir.path().join("r.jsonl")),
        secrets: secrets.clone(),
        ..PlanOptions::default()
    };
    let plan = agentv_core::plan(&ws, loaded, &options).expect("planned");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut sink = Throwaway(seen.clone());
    let run = RunOptions {
        max_retries: 0,
        timeout: Duration::from_secs(30),
        grace: Duration::from_secs(1),
        exploration_tools: Vec::new(),
        dump_prompts: false,
        threshold: None,
        strict: false,
        workspaces: Default::default(),
        batch: Default::default(),
    };
    let finished = agentv_core::run(&ws, plan, &run, &mut Quiet, &mut [&mut sink], &Interrupt::default()).await;
    assert_eq!(finished.run.summary.total, 1);
    let seen = seen.lock().expect("unpoisoned");
    assert_eq!(seen.len(), 2, "one record, as JSON and as Debug");
    assert!(
        seen[0].contains(r#""candidate_answer":"***""#) && seen[0].contains(r#""hits":["contains ***"]"#),
        "the answer and the hit reached the sink, redacted: {}",
        seen[0]
    );
    for text in seen.iter() {
        assert!(!text.contains(SECRET), "the sink saw the secret: {text}");
    }
    let results = std::fs::read_to_string(dir.path().join("r.jsonl")).expect("results");
    assert!(!results.contains(SECRET) && results.contains("***"), "{results}");
}
