//! promptfoo's JSON output (`docs/promptfoo.md#results`), written when `agentv eval` is given
//! `--out <name>.json`: the rows of a promptfoo config, each with its `testIdx`, `promptIdx`,
//! `provider`, `vars`, `success`, `score`, `namedScores` and `gradingResult`, in promptfoo's
//! order, so scripts that read promptfoo's file keep working. Records of AgentV files have no
//! row keys and are left out.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::sink::{Row, Sink};
use crate::derived_metrics::{Accumulator, DerivedMetric};
use crate::model::{EvaluationRecord, EvaluatorResult, ExecutionStatus, Verdict};

/// The sink writing promptfoo's JSON file at the end of the run.
pub struct PromptfooJson {
    path: PathBuf,
    /// Sorted by (testIdx, promptIdx) when written.
    rows: Vec<HeldRow>,
    /// The rows' text, in the order they came, until the file is written: a run of many rows
    /// holds none of them in memory.
    spill: Option<io::BufWriter<std::fs::File>>,
    spilled: u64,
    description: Option<String>,
    /// promptIdx → the prompt's entry in `results.prompts`, its metrics filled in at the end.
    prompts: BTreeMap<u64, PromptEntry>,
}

/// One (provider, prompt) pair of `results.prompts`.
struct PromptEntry {
    raw: Value,
    label: Value,
    provider: String,
    /// `derivedMetrics` of the config, as `[{name, value}]`.
    derived: Vec<DerivedMetric>,
    /// (testIdx, the row's named scores), in promptfoo's order once sorted.
    rows: Vec<(u64, Vec<NamedSum>)>,
}

/// A row until the end: where its JSON text is in the spill file, and what the prompts'
/// metrics and the stats count.
struct HeldRow {
    test_idx: u64,
    prompt_idx: u64,
    success: bool,
    errored: bool,
    score: f64,
    latency_ms: f64,
    cost: f64,
    /// The row pretty-printed (as it appears in the file less its indentation): its offset
    /// and length in the spill file.
    at: u64,
    len: usize,
}

impl HeldRow {
    fn new(test_idx: u64, prompt_idx: u64, row: &Value, at: u64, len: usize) -> Self {
        Self {
            test_idx,
            prompt_idx,
            success: row["success"] == Value::Bool(true),
            errored: row["failureReason"] == json!(2),
            score: row["score"].as_f64().unwrap_or(0.0),
            latency_ms: row["latencyMs"].as_f64().unwrap_or(0.0),
            cost: row["cost"].as_f64().unwrap_or(0.0),
            at,
            len,
        }
    }
}

impl PromptfooJson {
    /// The rows it is given are already redacted (`report::sink::Row`).
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            rows: Vec::new(),
            spill: None,
            spilled: 0,
            description: None,
            prompts: BTreeMap::new(),
        }
    }

    /// Appends a row's text to the spill file (made on the first row, deleted when dropped).
    fn spill(&mut self, text: &str) -> io::Result<u64> {
        let spill = match &mut self.spill {
            Some(spill) => spill,
            None => self.spill.insert(io::BufWriter::new(tempfile::tempfile()?)),
        };
        spill.write_all(text.as_bytes())?;
        let at = self.spilled;
        self.spilled += text.len() as u64;
        Ok(at)
    }

    /// The spilled rows' text, read back in the rows' (sorted) order, each written by `each`.
    fn read_back(&mut self, mut each: impl FnMut(usize, &str) -> io::Result<()>) -> io::Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        let Some(spill) = self.spill.take() else {
            return Ok(());
        };
        let mut file = spill.into_inner().map_err(io::IntoInnerError::into_error)?;
        let mut buf = Vec::new();
        for (i, row) in self.rows.iter().enumerate() {
            buf.resize(row.len, 0);
            file.seek(SeekFrom::Start(row.at))?;
            file.read_exact(&mut buf)?;
            each(i, std::str::from_utf8(&buf).map_err(io::Error::other)?)?;
        }
        Ok(())
    }
}

/// The row keys a promptfoo case carries in its metadata.
fn keys(record: &EvaluationRecord) -> Option<&Map<String, Value>> {
    record.v4.metadata.as_ref()?.get("promptfoo")?.as_object()
}

/// `promptIdx`: promptfoo numbers each (provider, prompt) pair, providers outermost.
pub(crate) fn prompt_idx(keys: &Map<String, Value>, target: &str) -> (u64, Value) {
    let prompt_index = keys.get("prompt_index").and_then(Value::as_u64).unwrap_or(0);
    let count = keys.get("prompt_count").and_then(Value::as_u64).unwrap_or(1);
    let providers: &[Value] = keys
        .get("providers")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let position = providers
        .iter()
        .position(|p| p.get("target").and_then(Value::as_str) == Some(target));
    let provider = match position.and_then(|i| providers.get(i)) {
        Some(p) => json!({
            "id": p.get("id").cloned().unwrap_or(Value::Null),
            "label": p.get("label").and_then(Value::as_str).unwrap_or(""),
        }),
        None => json!({"id": target, "label": ""}),
    };
    // A provider with `prompts` numbers only the prompts it runs (`prompt_indices`).
    let runs = |p: &Value| -> Option<Vec<u64>> {
        let list = p.get("prompt_indices")?.as_array()?;
        Some(list.iter().filter_map(Value::as_u64).collect())
    };
    let before: u64 = providers
        .iter()
        .take(position.unwrap_or(0))
        .map(|p| runs(p).map_or(count, |l| l.len() as u64))
        .sum();
    let own = match position.and_then(|i| providers.get(i)).and_then(runs) {
        Some(list) => list.iter().position(|i| *i == prompt_index).unwrap_or(0) as u64,
        None => prompt_index,
    };
    (before + own, provider)
}

/// promptfoo's named scores of a row: per `metric`, the weighted mean of its assertions'
/// scores.
pub fn named_scores(results: &[EvaluatorResult]) -> Map<String, Value> {
    let mut sums: Vec<(String, f64, f64)> = Vec::new();
    for r in results {
        let Some(metric) = r.details.as_ref().and_then(|d| d.get("metric")).and_then(Value::as_str) else {
            continue;
        };
        match sums.iter_mut().find(|(m, _, _)| m == metric) {
            Some(slot) => {
                slot.1 += r.score * r.weight;
                slot.2 += r.weight;
            }
            None => sums.push((metric.to_owned(), r.score * r.weight, r.weight)),
        }
    }
    sums.into_iter()
        .map(|(m, sum, weight)| (m, json!(if weight > 0.0 { sum / weight } else { 0.0 })))
        .collect()
}

/// What a row adds to its prompt's named scores in promptfoo: per `metric`, the sum of its
/// assertions' weighted scores, and how many assertions carry it.
struct NamedSum {
    metric: String,
    weighted: f64,
    count: u64,
}

fn weighted_named_sums(results: &[EvaluatorResult]) -> Vec<NamedSum> {
    let mut sums: Vec<NamedSum> = Vec::new();
    for r in results {
        let Some(metric) = r.details.as_ref().and_then(|d| d.get("metric")).and_then(Value::as_str) else {
            continue;
        };
        match sums.iter_mut().find(|s| s.metric == metric) {
            Some(slot) => {
                slot.weighted += r.score * r.weight;
                slot.count += 1;
            }
            None => sums.push(NamedSum {
                metric: metric.to_owned(),
                weighted: r.score * r.weight,
                count: 1,
            }),
        }
    }
    sums
}

/// The config's `derivedMetrics` a row carries; they were checked at load.
fn derived_of(keys: &Map<String, Value>) -> Vec<DerivedMetric> {
    let Some(list) = keys.get("derived_metrics").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|m| {
            let name = m.get("name")?.as_str()?.to_owned();
            let expr = crate::derived_metrics::parse(m.get("value")?.as_str()?).ok()?;
            Some(DerivedMetric { name, expr })
        })
        .collect()
}

/// A prompt's `metrics`: its rows' outcomes, and its named scores summed over its rows with the
/// derived metrics computed after each (`docs/promptfoo.md#derived-metrics`).
fn prompt_metrics(entry: &mut PromptEntry, rows: &[HeldRow], idx: u64) -> Value {
    entry.rows.sort_by_key(|(t, _)| *t);
    let mut acc = Accumulator::default();
    let mut counts: Map<String, Value> = Map::new();
    for (_, sums) in &entry.rows {
        acc.row(sums.iter().map(|s| (s.metric.as_str(), s.weighted)), &entry.derived);
        for s in sums {
            let total = counts.get(&s.metric).and_then(Value::as_u64).unwrap_or(0) + s.count;
            counts.insert(s.metric.clone(), json!(total));
        }
    }
    let named: Map<String, Value> = acc
        .order
        .iter()
        .map(|name| {
            let v = acc.scores.get(name).copied().unwrap_or(0.0);
            // JSON has no infinity: promptfoo's file holds `null` for it.
            (name.clone(), if v.is_finite() { json!(v) } else { Value::Null })
        })
        .collect();
    let own: Vec<&HeldRow> = rows.iter().filter(|r| r.prompt_idx == idx).collect();
    let (passed, errors) = outcomes(own.iter().copied());
    let sum = |of: fn(&HeldRow) -> f64| own.iter().map(|r| of(r)).sum::<f64>();
    json!({
        "score": sum(|r| r.score),
        "testPassCount": passed,
        "testFailCount": own.len() - passed - errors,
        "testErrorCount": errors,
        "namedScores": named,
        "namedScoresCount": counts,
        "totalLatencyMs": sum(|r| r.latency_ms),
        "cost": sum(|r| r.cost),
    })
}

/// How many of `rows` passed, and how many errored.
fn outcomes<'a>(rows: impl Iterator<Item = &'a HeldRow>) -> (usize, usize) {
    rows.fold((0, 0), |(passed, errors), r| {
        (passed + usize::from(r.success), errors + usize::from(r.errored))
    })
}

/// The grading result's named scores: the row's, and over them those an assertion sets itself
/// (`max-score`), which promptfoo keeps out of the row's own `namedScores`.
fn grading_named_scores(results: &[EvaluatorResult]) -> Map<String, Value> {
    let mut named = named_scores(results);
    for r in results {
        if let Some(Value::Object(own)) = r.details.as_ref().and_then(|d| d.get("named_scores")) {
            named.extend(own.clone());
        }
    }
    named
}

/// What the assertions concluded, as promptfoo lists component results: an `assert-set` as one
/// result holding its members', then its members again, one by one.
fn components(results: &[EvaluatorResult]) -> Vec<Value> {
    let mut out = Vec::new();
    for r in results {
        let members: Vec<EvaluatorResult> = r
            .details
            .as_ref()
            .and_then(|d| d.get("members"))
            .and_then(|m| <Vec<EvaluatorResult> as serde::Deserialize>::deserialize(m).ok())
            .unwrap_or_default();
        if members.is_empty() {
            out.push(component(r));
            continue;
        }
        let inner = components(&members);
        let mut set = component(r);
        if let Some(obj) = set.as_object_mut() {
            obj.remove("assertion");
            obj.insert("componentResults".into(), Value::Array(inner.clone()));
            let threshold = r.details.as_ref().and_then(|d| d.get("threshold")).cloned();
            obj.insert(
                "metadata".into(),
                json!({"assertionSet": {"type": r.name, "assertionCount": members.len(), "threshold": threshold}}),
            );
        }
        out.push(set);
        out.extend(inner);
    }
    out
}

/// What an assertion concluded, as promptfoo words a component result.
fn component(r: &EvaluatorResult) -> Value {
    let pass = r.verdict == Verdict::Pass;
    let reason = match (&r.error, pass) {
        (Some(e), _) => e.clone(),
        // promptfoo keeps a passing assertion's own reason (a grading model's, a comparison's).
        (None, true) => r.reasoning.clone().unwrap_or_else(|| "Assertion passed".to_owned()),
        (None, false) => failing_reason(r),
    };
    let mut assertion = Map::new();
    assertion.insert("type".into(), Value::from(r.name.clone()));
    if let Some(metric) = r.details.as_ref().and_then(|d| d.get("metric")) {
        assertion.insert("metric".into(), metric.clone());
    }
    if r.weight != 1.0 {
        assertion.insert("weight".into(), json!(r.weight));
    }
    json!({"pass": pass, "score": r.score, "reason": reason, "assertion": assertion})
}

/// Why an assertion failed, in full: its failing assertions when it has them (its `misses`
/// are then capped in the record, `docs/results.md#evidence-is-stored-once`), else its misses.
fn failing_reason(r: &EvaluatorResult) -> String {
    if r.assertions.is_empty() {
        return r.misses.join("; ");
    }
    let failing: Vec<&str> = r
        .assertions
        .iter()
        .filter(|a| !a.passed)
        .map(|a| a.text.as_str())
        .collect();
    failing.join("; ")
}

/// One row in promptfoo's shape.
fn row(record: &EvaluationRecord, keys: &Map<String, Value>, provider: Value, prompt_idx: u64) -> Value {
    let components = components(&record.evaluator_results);
    let named = named_scores(&record.evaluator_results);
    let errored = record.execution_status != ExecutionStatus::Ok;
    let success = record.verdict == Verdict::Pass && !errored;
    let reason = match (&record.error, success) {
        (Some(e), _) => e.clone(),
        (None, true) => "All assertions passed".to_owned(),
        (None, false) => components
            .iter()
            .filter(|c| c["pass"] == Value::Bool(false))
            .filter_map(|c| c["reason"].as_str())
            .collect::<Vec<_>>()
            .join("; "),
    };
    let failure_reason = match (success, errored) {
        (true, _) => 0,
        (false, false) => 1,
        (false, true) => 2,
    };
    let metrics = record.execution_metrics.as_ref();
    let mut out = json!({
        "testIdx": keys.get("test_index").cloned().unwrap_or(json!(0)),
        "promptIdx": prompt_idx,
        "provider": provider,
        "prompt": {
            "raw": keys.get("prompt_rendered").cloned().unwrap_or(Value::Null),
            "label": keys.get("prompt").cloned().unwrap_or(Value::Null),
        },
        "vars": keys.get("vars").cloned().unwrap_or(json!({})),
        "response": {"output": record.candidate_answer},
        "success": success,
        "score": record.score,
        "namedScores": named,
        "latencyMs": metrics.and_then(|m| m.duration_ms).unwrap_or(0.0),
        "cost": metrics.and_then(|m| m.cost_usd).unwrap_or(0.0),
        "gradingResult": {
            "pass": success,
            "score": record.score,
            "reason": reason,
            "namedScores": grading_named_scores(&record.evaluator_results),
            "componentResults": components,
        },
        "testCase": {
            "description": keys.get("description").cloned().unwrap_or(Value::Null),
            "vars": keys.get("vars").cloned().unwrap_or(json!({})),
        },
        "failureReason": failure_reason,
    });
    if let (Some(e), Some(obj)) = (&record.error, out.as_object_mut()) {
        obj.insert("error".into(), Value::from(e.clone()));
    }
    out
}

impl Sink for PromptfooJson {
    fn write(&mut self, row_in: &Row<'_>) -> io::Result<()> {
        let record = row_in.record();
        let Some(keys) = keys(record) else {
            return Ok(());
        };
        if self.description.is_none() {
            self.description = keys
                .get("config_description")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        let test_idx = keys.get("test_index").and_then(Value::as_u64).unwrap_or(0);
        let (idx, provider) = prompt_idx(keys, &record.target);
        let entry = self.prompts.entry(idx).or_insert_with(|| PromptEntry {
            raw: keys.get("prompt_raw").cloned().unwrap_or(Value::Null),
            label: keys.get("prompt").cloned().unwrap_or(Value::Null),
            provider: match provider["label"].as_str().filter(|l| !l.is_empty()) {
                Some(label) => label.to_owned(),
                None => provider["id"].as_str().unwrap_or(&record.target).to_owned(),
            },
            derived: derived_of(keys),
            rows: Vec::new(),
        });
        entry
            .rows
            .push((test_idx, weighted_named_sums(&record.evaluator_results)));
        let row = row(record, keys, provider, idx);
        let text = serde_json::to_string_pretty(&row)?;
        let at = self.spill(&text)?;
        self.rows.push(HeldRow::new(test_idx, idx, &row, at, text.len()));
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.rows.sort_by_key(|r| (r.test_idx, r.prompt_idx));
        let rows = &self.rows;
        let count = rows.len();
        let (successes, errors) = outcomes(rows.iter());
        let prompts: Vec<Value> = self
            .prompts
            .iter_mut()
            .map(|(idx, entry)| {
                json!({
                    "raw": entry.raw,
                    "label": entry.label,
                    "provider": entry.provider,
                    "metrics": prompt_metrics(entry, rows, *idx),
                })
            })
            .collect();
        let now = jiff::Timestamp::now().to_string();
        let stats = json!({"successes": successes, "failures": count - successes - errors, "errors": errors});
        let mut out = super::sink::output_file_for(&self.path)?;
        let mut w = io::BufWriter::new(out.as_file_mut());
        // The document's keys in sorted order, as the rest of agentv's JSON is written.
        write!(w, "{{\n  \"config\": ")?;
        pretty_at(&mut w, &json!({"description": self.description}), 2)?;
        write!(
            w,
            ",\n  \"evalId\": {},\n  \"metadata\": ",
            json!(format!("eval-agentv-{now}"))
        )?;
        pretty_at(
            &mut w,
            &json!({"agentvVersion": env!("CARGO_PKG_VERSION"), "exportedAt": now}),
            2,
        )?;
        write!(w, ",\n  \"results\": {{\n    \"prompts\": ")?;
        pretty_at(&mut w, &Value::Array(prompts), 4)?;
        write!(w, ",\n    \"results\": [")?;
        self.read_back(|i, text| {
            w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
            indented(&mut w, text, 6, true)
        })?;
        w.write_all(if count == 0 { b"]" } else { b"\n    ]" })?;
        write!(w, ",\n    \"stats\": ")?;
        pretty_at(&mut w, &stats, 4)?;
        write!(
            w,
            ",\n    \"timestamp\": {},\n    \"version\": 3\n  }}\n}}\n",
            json!(now)
        )?;
        w.flush()?;
        drop(w);
        crate::paths::persist(out, &self.path)?;
        Ok(())
    }

    fn describe(&self) -> String {
        format!("promptfoo JSON output {}", self.path.display())
    }
}

/// Writes `value` pretty-printed as it stands `indent` spaces deep in the document.
fn pretty_at(w: &mut impl Write, value: &Value, indent: usize) -> io::Result<()> {
    indented(w, &serde_json::to_string_pretty(value)?, indent, false)
}

/// Writes pretty-printed JSON `text` with every line after the first (and the first too, when
/// `first`) indented by `indent` spaces. JSON text holds no raw newline inside a string, so
/// its lines are its structure's.
fn indented(w: &mut impl Write, text: &str, indent: usize, first: bool) -> io::Result<()> {
    let pad = " ".repeat(indent);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            w.write_all(b"\n")?;
        }
        if i > 0 || first {
            w.write_all(pad.as_bytes())?;
        }
        w.write_all(line.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str, score: f64, weight: f64, metric: Option<&str>) -> EvaluatorResult {
        let mut r = EvaluatorResult::failed(name, "contains", 1.0, "x");
        r.error = None;
        r.score = score;
        r.weight = weight;
        r.details = metric.map(|m| {
            let mut d = Map::new();
            d.insert("metric".into(), Value::from(m));
            d
        });
        r
    }

    fn record(test_index: u64, verdict: Verdict, answer: &str) -> EvaluationRecord {
        let mut record: EvaluationRecord = serde_json::from_value(json!({
            "timestamp": "t", "eval_id": format!("test-{test_index}"), "dataset": "d", "target": "echo",
            "attempt": 1, "execution_status": "ok", "score": 1.0, "verdict": "pass",
            "hits": [], "misses": [], "candidate_answer": answer, "evaluator_results": [],
        }))
        .expect("record");
        record.verdict = verdict;
        record.score = if verdict == Verdict::Pass { 1.0 } else { 0.0 };
        record.v4.metadata = json!({"promptfoo": {
            "test_index": test_index, "prompt": "p", "prompt_rendered": "line one\nline \"two\"",
            "vars": {"n": test_index, "list": [1, {"deep": []}]}, "prompt_index": 0, "prompt_count": 1,
            "providers": [{"id": "echo", "label": null, "target": "echo"}],
        }})
        .as_object()
        .cloned();
        record
    }

    /// Finishes `sink` and reads back its file, which must be exactly the pretty-printed
    /// document it holds.
    fn finished_document(mut sink: PromptfooJson, path: &Path) -> Value {
        sink.finish().expect("finish");
        let text = std::fs::read_to_string(path).expect("read");
        let doc: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(
            text,
            format!("{}\n", serde_json::to_string_pretty(&doc).expect("pretty"))
        );
        doc
    }

    /// The rows are held as text and the document is written piece by piece: the file must be
    /// exactly the pretty-printed document, rows in promptfoo's order, whatever order they came.
    #[test]
    fn the_file_is_the_pretty_printed_document_with_rows_in_order() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("out.json");
        let mut sink = PromptfooJson::new(&path);
        let secrets = crate::redact::Secrets::default();
        for (i, verdict, answer) in [
            (2, Verdict::Pass, "b\n{\"x\": 1}"),
            (0, Verdict::Fail, "a"),
            (1, Verdict::Pass, ""),
        ] {
            let record = record(i, verdict, answer);
            sink.write(&Row::redact(&record, &secrets)).expect("write");
        }
        let doc = finished_document(sink, &path);
        let rows = doc["results"]["results"].as_array().expect("rows");
        let order: Vec<_> = rows.iter().map(|r| r["testIdx"].as_u64()).collect();
        assert_eq!(order, [Some(0), Some(1), Some(2)]);
        assert_eq!(rows[2]["response"]["output"], json!("b\n{\"x\": 1}"));
        assert_eq!(
            doc["results"]["stats"],
            json!({"successes": 2, "failures": 1, "errors": 0})
        );
        assert_eq!(doc["results"]["prompts"][0]["metrics"]["testPassCount"], json!(2));
        assert_eq!(doc["results"]["version"], json!(3));
    }

    #[test]
    fn an_empty_run_writes_an_empty_document() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("out.json");
        let doc = finished_document(PromptfooJson::new(&path), &path);
        assert_eq!(doc["results"]["results"], json!([]));
    }

    /// A long failing reason is written whole, even when the record's misses are capped.
    #[test]
    fn a_long_failing_reason_is_written_whole() {
        let reason = format!("Custom function returned false\n{}", "x".repeat(40_000));
        let mut r = result("js", 0.0, 1.0, None);
        r.verdict = Verdict::Fail;
        r.misses = vec![reason.clone()];
        r.assertions = vec![agentv_eval_sdk::Assertion::new(reason.clone(), false)];
        let mut record = record(0, Verdict::Fail, "x");
        record.evaluator_results = vec![r];
        record.keep_evidence_once();
        assert_ne!(
            record.evaluator_results[0].misses.first(),
            Some(&reason),
            "the record's misses are capped"
        );
        assert_eq!(component(&record.evaluator_results[0])["reason"], json!(reason));
    }

    #[test]
    fn named_scores_are_the_weighted_mean_of_each_metric() {
        let results = [
            result("a", 1.0, 1.0, Some("tone")),
            result("b", 0.0, 3.0, Some("tone")),
            result("c", 0.5, 1.0, Some("len")),
            result("d", 0.0, 1.0, None),
        ];
        let named = named_scores(&results);
        assert_eq!(Value::Object(named), json!({"tone": 0.25, "len": 0.5}));
    }

    #[test]
    fn max_score_named_scores_reach_the_grading_result_only() {
        let mut max = result("m", 1.0, 0.0, None);
        max.details = Some(
            json!({"named_scores": {"maxScore": 0.5, "assertionCount": 2}})
                .as_object()
                .cloned()
                .expect("object"),
        );
        let results = [result("a", 1.0, 1.0, Some("tone")), max];
        assert_eq!(Value::Object(named_scores(&results)), json!({"tone": 1.0}));
        assert_eq!(
            Value::Object(grading_named_scores(&results)),
            json!({"tone": 1.0, "maxScore": 0.5, "assertionCount": 2})
        );
    }

    #[test]
    fn prompt_idx_counts_providers_outermost() {
        let keys = json!({
            "prompt_index": 1, "prompt_count": 2,
            "providers": [{"id": "echo", "label": null, "target": "echo"}, {"id": "echo", "label": "e2", "target": "e2"}]
        });
        let keys = keys.as_object().expect("object");
        assert_eq!(prompt_idx(keys, "e2"), (3, json!({"id": "echo", "label": "e2"})));
        assert_eq!(prompt_idx(keys, "echo"), (1, json!({"id": "echo", "label": ""})));
    }

    #[test]
    fn prompt_idx_counts_only_the_prompts_a_provider_runs() {
        // Three prompts; `a` runs prompts 0 and 2, `b` all of them.
        let keys = |prompt_index: u64| {
            json!({
                "prompt_index": prompt_index, "prompt_count": 3,
                "providers": [{"id": "echo", "label": "a", "target": "a", "prompt_indices": [0, 2]},
                              {"id": "echo", "label": "b", "target": "b"}]
            })
        };
        let idx = |i: u64, target: &str| prompt_idx(keys(i).as_object().expect("object"), target).0;
        assert_eq!((idx(0, "a"), idx(2, "a")), (0, 1));
        assert_eq!((idx(0, "b"), idx(1, "b"), idx(2, "b")), (2, 3, 4));
    }
}
