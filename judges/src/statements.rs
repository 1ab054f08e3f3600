//! Breaking a text into the statements (or claims) a metric judges one by one: with one model
//! call (`split: model`, the default) or locally into sentences (`split: sentences`, no call).

use agentv_eval_sdk::extract_json_object;
use serde_json::Value;

use crate::Error;
use crate::model::{Session, Verdict, VerdictRequest, Verdicts, ask_verdicts, parse_verdict, quoted};
use crate::outcome::{Outcome, excerpt};
use crate::prompt::{assemble, numbered, verdict_reply, verdicts_reply};
use crate::settings::{ModelSettings, Split, SplitSettings};

/// The stage name of the extraction call in `details.model_calls`.
pub const STAGE: &str = "extract";

/// The statements of `text`: split locally, or listed by the model in reply to
/// `prompt(instructions)` under `key` (`{"statements": ["…"]}`).
pub fn statements_of(
    session: &mut Session<'_>,
    settings: &SplitSettings,
    text: &str,
    key: &str,
    prompt: impl FnOnce(Option<&str>) -> String,
) -> Result<Vec<String>, Error> {
    match settings.split {
        Split::Sentences => Ok(split_sentences(text)),
        // Nothing to ask about an empty text.
        Split::Model if text.trim().is_empty() => Ok(Vec::new()),
        Split::Model => {
            let reply = session.ask(STAGE, prompt(settings.instructions.as_deref()))?;
            parse_statements(&reply, key).map_err(|message| session.bad_reply(message))
        }
    }
}

/// A statement-based metric: the text to break up and how to judge each piece.
pub struct StatementTask<'a> {
    /// What a piece is: `claim` or `statement` (also its prompt tag).
    pub noun: &'static str,
    /// The list key of the extraction reply: `claims` or `statements`.
    pub key: &'static str,
    /// The text to break into pieces.
    pub text: &'a str,
    /// The extraction prompt, given the `extract_instructions` override.
    pub extract_prompt: &'a dyn Fn(Option<&str>) -> String,
    /// The task paragraph of the verdict prompts.
    pub verdict_task: &'a str,
    /// What every verdict prompt shows before the pieces (question, context, …).
    pub blocks: Vec<String>,
}

/// The pieces of a text and the verdict on each (`None` where left out).
pub struct Judged {
    pub pieces: Vec<String>,
    pub verdicts: Verdicts<Verdict>,
}

/// Breaks the task's text into pieces, then asks for a yes/no verdict on each: at most two
/// proxy round trips (none for the split with `split: sentences`, none for the verdicts when
/// there are no pieces).
pub fn judge_statements(
    session: &mut Session<'_>,
    split: &SplitSettings,
    model: &ModelSettings,
    include_reason: bool,
    task: &StatementTask<'_>,
) -> Result<Judged, Error> {
    if split.split == Split::Model && !task.text.trim().is_empty() {
        // Check before the first call that the verdicts can follow it.
        session.reserve(
            2,
            format!("1 to list the {}s and 1 or more for their verdicts", task.noun),
        )?;
    }
    let pieces = statements_of(session, split, task.text, task.key, task.extract_prompt)?;
    let instructions = model.instructions.as_deref();
    let batch = || {
        let mut blocks = task.blocks.clone();
        blocks.extend(
            pieces
                .iter()
                .enumerate()
                .map(|(i, p)| numbered(task.noun, "n", i + 1, p)),
        );
        assemble(
            task.verdict_task,
            instructions,
            &blocks,
            &verdicts_reply(task.noun, include_reason),
        )
    };
    let item = |i: usize| {
        let mut blocks = task.blocks.clone();
        blocks.push(numbered(task.noun, "n", i + 1, &pieces[i]));
        assemble(task.verdict_task, instructions, &blocks, &verdict_reply(include_reason))
    };
    let request = VerdictRequest {
        stage: "verdicts",
        noun: task.noun,
        list_key: "verdicts",
        batch_prompt: &batch,
        item_prompt: &item,
        parse: &|v: &Value| parse_verdict(v),
    };
    let verdicts = ask_verdicts(session, model.on_item_error, pieces.len(), &request)?;
    Ok(Judged { pieces, verdicts })
}

/// A hit or a miss per statement the model judged: `<item> <n>: <yes or no>: <its start>`.
pub fn check_each(out: &mut Outcome, judged: &Judged, item: &str, (yes, no): (&str, &str)) {
    for (i, (text, verdict)) in judged.pieces.iter().zip(&judged.verdicts.items).enumerate() {
        if let Some(v) = verdict {
            let label = if v.yes { yes } else { no };
            out.check(v.yes, format!("{item} {}: {label}: {}", i + 1, excerpt(text, 80)));
        }
    }
}

/// The pieces as `details` lists them, with the verdict under `verdict_key` (`supported`, …).
pub fn listed(judged: &Judged, verdict_key: &str, include_reason: bool) -> Vec<Value> {
    judged
        .pieces
        .iter()
        .zip(&judged.verdicts.items)
        .enumerate()
        .map(|(i, (text, verdict))| {
            let mut entry = serde_json::json!({"n": i + 1, "text": text});
            match verdict {
                Some(v) => {
                    entry[verdict_key] = Value::Bool(v.yes);
                    if include_reason {
                        entry["reason"] = serde_json::json!(v.reason);
                    }
                }
                None => entry["skipped"] = Value::Bool(true),
            }
            entry
        })
        .collect()
}

/// (yes, judged): how many verdicts are yes, and how many pieces were judged (not skipped).
pub fn tally(judged: &Judged) -> (usize, usize) {
    let judged_items: Vec<&Verdict> = judged.verdicts.items.iter().flatten().collect();
    (judged_items.iter().filter(|v| v.yes).count(), judged_items.len())
}

/// Reads `{"<key>": ["…", …]}`; blank entries are dropped, the others trimmed.
pub fn parse_statements(reply: &str, key: &str) -> Result<Vec<String>, String> {
    let object = extract_json_object(reply).ok_or_else(|| {
        format!(
            "the reply to the {STAGE} prompt holds no JSON object: {}",
            quoted(reply)
        )
    })?;
    let Some(Value::Array(items)) = object.get(key) else {
        return Err(format!(
            "the reply to the {STAGE} prompt has no `{key}` list: {}",
            quoted(reply)
        ));
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match item {
            Value::String(s) if s.trim().is_empty() => None,
            Value::String(s) => Some(Ok(s.trim().to_owned())),
            other => Some(Err(format!(
                "entry {} of `{key}` in the reply to the {STAGE} prompt is not a string: {}",
                i + 1,
                crate::config::describe(other)
            ))),
        })
        .collect()
}

/// Sentences of `text`: split after `.`, `!` or `?` followed by white space, and at line
/// breaks; list markers (`-`, `*`, `•`, `1.`) are dropped. A full stop inside a number
/// (`3.5`) does not split; an abbreviation followed by a space (`e.g. this`) does.
pub fn split_sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = strip_list_marker(line.trim());
        let mut start = 0;
        let mut chars = line.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let ends = matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|(_, next)| next.is_whitespace());
            if ends {
                push_sentence(&mut out, &line[start..i + c.len_utf8()]);
                start = i + c.len_utf8();
            }
        }
        push_sentence(&mut out, &line[start..]);
    }
    out
}

fn push_sentence(out: &mut Vec<String>, text: &str) {
    let text = text.trim();
    if text.chars().any(char::is_alphanumeric) {
        out.push(text.to_owned());
    }
}

fn strip_list_marker(line: &str) -> &str {
    for marker in ["- ", "* ", "• "] {
        if let Some(rest) = line.strip_prefix(marker) {
            return rest;
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    match line[digits..]
        .strip_prefix(". ")
        .or_else(|| line[digits..].strip_prefix(") "))
    {
        Some(rest) if digits > 0 => rest,
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences() {
        let cases: &[(&str, &[&str])] = &[
            ("One. Two! Three?", &["One.", "Two!", "Three?"]),
            (
                "Costs 3.5 dollars. Ships in 2 days",
                &["Costs 3.5 dollars.", "Ships in 2 days"],
            ),
            (
                "- first item\n- second item.\n\n1. third",
                &["first item", "second item.", "third"],
            ),
            ("Line one\r\nLine two", &["Line one", "Line two"]),
            ("e.g. this splits", &["e.g.", "this splits"]),
            ("  ...  \n", &[]),
            ("", &[]),
            ("Ünïcödé ends here. Déjà vu", &["Ünïcödé ends here.", "Déjà vu"]),
        ];
        for (text, want) in cases {
            assert_eq!(split_sentences(text), *want, "{text:?}");
        }
    }

    #[test]
    fn statement_replies() {
        assert_eq!(
            parse_statements("```json\n{\"claims\": [\" A. \", \"\", \"B.\"]}\n```", "claims"),
            Ok(vec!["A.".to_owned(), "B.".to_owned()])
        );
        assert_eq!(parse_statements("{\"claims\": []}", "claims"), Ok(vec![]));
        assert_eq!(
            parse_statements("{\"statements\": [\"A\"]}", "claims"),
            Err(
                "the reply to the extract prompt has no `claims` list: \u{201c}{\"statements\": [\"A\"]}\u{201d}"
                    .to_owned()
            )
        );
        assert_eq!(
            parse_statements("{\"claims\": [\"A\", 2]}", "claims"),
            Err("entry 2 of `claims` in the reply to the extract prompt is not a string: 2".to_owned())
        );
        assert!(parse_statements("no", "claims").is_err());
    }
}
