//! `agentv batch list|cancel RESULTS`: a run's provider batch jobs (`docs/batch.md#jobs`).

use agentv_core::{JobsAction, Workspace};

use crate::cli::BatchCommand;
use crate::exit::ExitStatus;
use crate::printer::{self, Printer};

pub fn run(command: BatchCommand, ws: &Workspace, printer: Printer) -> ExitStatus {
    let (action, args) = match command {
        BatchCommand::List(args) => (JobsAction::List, args),
        BatchCommand::Cancel(args) => (JobsAction::Cancel, args),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            printer.error(&format!("cannot start the async runtime: {e}"));
            return ExitStatus::Config;
        }
    };
    let secrets = printer::secrets();
    let jobs = runtime.block_on(agentv_core::batch_jobs(
        ws,
        &args.results,
        args.targets.as_deref(),
        action,
        &secrets,
    ));
    let jobs = match jobs {
        Ok(jobs) => jobs,
        Err(e) => {
            printer.error(&e.to_string());
            return ExitStatus::Config;
        }
    };
    let mut failed = false;
    for job in &jobs {
        let state = match &job.state {
            Ok(s) => s.clone(),
            Err(e) => {
                failed = true;
                format!("cannot ask: {}", secrets.redact(&e.to_string()))
            }
        };
        let cancel = match &job.cancel {
            None => String::new(),
            Some(Ok(())) => "; cancel requested".to_owned(),
            Some(Err(e)) => {
                failed = true;
                format!("; cannot cancel: {}", secrets.redact(&e.to_string()))
            }
        };
        printer.result(&format!(
            "{}  {}  {} request(s)  submitted {}  {state}{cancel}\n",
            agentv_core::escape_line(&job.target),
            agentv_core::escape_line(&job.id),
            job.requests,
            job.submitted_at
        ));
    }
    if jobs.is_empty() {
        printer.note("the run submitted no batch jobs");
    }
    if failed {
        ExitStatus::Incomplete
    } else {
        ExitStatus::Success
    }
}
