//! Where finished records go: the results file and every report format are sinks, fed one
//! record at a time as cases finish (or as a results file is read back), so none of them has
//! to hold a run in memory.

use std::borrow::Cow;
use std::io;

use crate::model::EvaluationRecord;
use crate::redact::Secrets;

/// One record as a sink sees it: redacted (`docs/architecture.md#secrets`). The only way to
/// make one is [`Row::redact`], so a sink (a new report format included) cannot be handed a
/// secret, and none has to remember to redact. Its full trace, when it has one, is the record's
/// `trace`.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    record: Cow<'a, EvaluationRecord>,
    /// The record as JSON, when redacting it produced that text (it is then the record's
    /// serialization), so the results file does not serialize it again.
    json: Option<Vec<u8>>,
}

impl<'a> Row<'a> {
    /// `record` with every secret of `secrets` replaced. Formats whose escaping (XML, HTML,
    /// Markdown) is not among the forms the redaction layer searches are safe too: the record
    /// is redacted as JSON, where it is, before any sink escapes it. Borrowed when nothing
    /// needed replacing.
    pub fn redact(record: &'a EvaluationRecord, secrets: &Secrets) -> Self {
        if secrets.is_empty() {
            return Self {
                record: Cow::Borrowed(record),
                json: None,
            };
        }
        let Ok(json) = serde_json::to_vec(record) else {
            return Self {
                record: Cow::Owned(masked(record)),
                json: None,
            };
        };
        match secrets.redact_json(&json) {
            Cow::Borrowed(_) => Self {
                record: Cow::Borrowed(record),
                json: Some(json),
            },
            Cow::Owned(bytes) => match serde_json::from_slice(&bytes) {
                Ok(clean) => Self {
                    record: Cow::Owned(clean),
                    json: Some(bytes),
                },
                // Redaction keeps the JSON valid, but a mask can still change a key the record
                // needs (a secret that is also a field name): drop the text rather than leak it.
                Err(_) => Self {
                    record: Cow::Owned(masked(record)),
                    json: None,
                },
            },
        }
    }

    /// The redacted record.
    pub fn record(&self) -> &EvaluationRecord {
        &self.record
    }

    /// The redacted record as one line of JSON (without the newline).
    pub fn json(&self) -> serde_json::Result<Cow<'_, [u8]>> {
        match &self.json {
            Some(json) => Ok(Cow::Borrowed(json)),
            None => serde_json::to_vec(self.record.as_ref()).map(Cow::Owned),
        }
    }
}

/// `record` with every text that could hold a secret dropped.
fn masked(record: &EvaluationRecord) -> EvaluationRecord {
    EvaluationRecord {
        candidate_answer: "***".into(),
        hits: Vec::new(),
        misses: Vec::new(),
        reasoning: None,
        lm_provider_request: None,
        agent_provider_request: None,
        evaluator_results: Vec::new(),
        error: record.error.as_ref().map(|_| "***".into()),
        output_messages: None,
        trace: None,
        ..record.clone()
    }
}

/// A destination for records: the JSONL results file, a JUnit, Markdown or HTML report, or a
/// test's vector.
pub trait Sink {
    /// Takes one finished record, redacted. Called in completion order, once per record.
    fn write(&mut self, row: &Row<'_>) -> io::Result<()>;

    /// Called once after the last record (also after an interrupted run, so a report shows what
    /// ran): formats with a footer, totals in a header or a final rename do that here.
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// What this sink writes, for messages (`results file out.jsonl`, `JUnit report r.xml`).
    fn describe(&self) -> String;
}

/// A temporary file in `dir` that becomes a report by an atomic rename at the end (a killed
/// run leaves no half-written report behind), readable like any file the user creates
/// (mode 0666 less the umask, not the 0600 of temporary files).
pub(crate) fn output_file(dir: &std::path::Path) -> io::Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(".agentv-report-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    builder.tempfile_in(dir)
}

/// [`output_file`] in the directory of `path` (created when missing): the report at `path`
/// is then written by `crate::paths::persist`.
pub(crate) fn output_file_for(path: &std::path::Path) -> io::Result<tempfile::NamedTempFile> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    output_file(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacted_records_mask_secrets_in_every_field() {
        let secrets = Secrets::default();
        secrets.add(r#"sk-<b>"q"&"#);
        let record: EvaluationRecord = serde_json::from_value(serde_json::json!({
            "timestamp": "t", "eval_id": "id sk-<b>\"q\"&", "dataset": "d", "target": "t",
            "attempt": 1, "execution_status": "ok", "score": 1.0, "verdict": "pass",
            "hits": ["saw sk-<b>\"q\"&"], "misses": [], "candidate_answer": "key: sk-<b>\"q\"&",
            "evaluator_results": []
        }))
        .expect("record");
        let row = Row::redact(&record, &secrets);
        let text = serde_json::to_string(row.record()).expect("json");
        assert!(!text.contains("sk-"), "{text}");
        let json = String::from_utf8(row.json().expect("json").into_owned()).expect("utf-8");
        assert_eq!(json, text);
        assert_eq!(row.record().candidate_answer, "key: ***");
        assert_eq!(row.record().eval_id, "id ***");
        let untouched = Row::redact(&record, &Secrets::default());
        assert!(matches!(untouched.record, Cow::Borrowed(_)));
    }
}
