//! `skill-trigger` (4.x, reference §2.11): did the agent use a skill (or, with
//! `should_trigger: false`, stay away from it)?
//!
//! A skill counts as triggered by the first tool call, in order over all output messages,
//! that is a `Skill` call whose `input.skill` contains the name, a `Read` call whose
//! `input.file_path` (else `input.path`) contains `skills/<name>/`, or any call whose output
//! mentions `skills/<name>/`. Tool names are compared ignoring case; agent providers report
//! `Skill`/`Read`, a `cli` target whatever its agent wrote.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, Key, KeyTable, Kind};
use crate::model::ToolCall;

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "skill-trigger",
    names: Names {
        v2: &[],
        v4: &["skill-trigger"],
        promptfoo: &[],
    },
    doc: "Passes when the agent used the skill `skill` (or, with `should_trigger: false`, did not).",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[
    Key::new("skill", Kind::Str, "The skill's name (its directory under `skills/`).").required(),
    Key::new("should_trigger", Kind::Bool, "Whether the skill should be used (default true)."),
];
const KEYS: KeyTable = KeyTable::new("skill-trigger", "A skill-use check.", &[OWN]);

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let what = f.what().to_owned();
    let skill = match f.take("skill").filter(|n| !n.is_null()) {
        None => {
            cx.diags.error(
                f.pos,
                format!("{what} is missing the required key `skill`"),
                Some("add `skill: <name>` to it".to_owned()),
            );
            None
        }
        Some(node) => match node.as_str() {
            Some(s) if !s.is_empty() => Some(s.to_owned()),
            _ => {
                cx.diags.error(
                    node.pos,
                    format!("`skill` of {what} must be a skill name, found {}", crate::config::describe(node)),
                    None,
                );
                None
            }
        },
    };
    let should_trigger = match f.take("should_trigger") {
        Some(_) => f.boolean("should_trigger", cx.diags)?,
        None => true,
    };
    Some(Arc::new(SkillTrigger {
        skill: skill?,
        should_trigger,
    }))
}

/// A `skill-trigger` check as configured.
#[derive(Debug, Clone)]
pub struct SkillTrigger {
    pub skill: String,
    pub should_trigger: bool,
}

impl Grader for SkillTrigger {
    fn default_name(&self) -> Option<String> {
        Some(format!("skill-trigger-{}", self.skill))
    }

    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let calls: Vec<&ToolCall> = ctx.output_messages.iter().flat_map(|m| &m.tool_calls).collect();
            grade(self, &calls)
        })
    }
}

/// Score 1 when the skill was triggered exactly when it should be; one assertion saying how.
pub fn grade(check: &SkillTrigger, calls: &[&ToolCall]) -> Grade {
    let skill = &check.skill;
    let evidence = calls.iter().find_map(|c| trigger(skill, c));
    match (evidence, check.should_trigger) {
        (Some(how), true) => Grade::check(true, how),
        (None, false) => Grade::check(true, format!("Skill \"{skill}\" correctly did not trigger")),
        (Some(how), false) => Grade::check(false, how),
        (None, true) if calls.is_empty() => Grade::check(false, "No tool calls recorded"),
        (None, true) => Grade::check(
            false,
            format!("Skill \"{skill}\" not found in {} tool call(s)", calls.len()),
        ),
    }
}

/// How `call` triggered `skill`, if it did.
fn trigger(skill: &str, call: &ToolCall) -> Option<String> {
    let path = format!("skills/{skill}/");
    let input = call.input.as_ref();
    let field = |name: &str| input.and_then(|i| i.get(name)).filter(|v| !v.is_null());
    match call.tool.to_lowercase().as_str() {
        "skill" => {
            let arg = field("skill").map(super::js::string_of).unwrap_or_default();
            if arg.contains(skill) {
                return Some(format!("Skill tool invoked with skill=\"{arg}\""));
            }
        }
        "read" => {
            let file = field("file_path").or_else(|| field("path")).map(super::js::string_of).unwrap_or_default();
            if file.contains(&path) {
                return Some(format!("Read tool loaded skill file: {file}"));
            }
        }
        _ => {}
    }
    let output = call.output.as_ref().filter(|o| !o.is_null())?;
    let text = match output {
        Value::String(s) => s.clone(),
        other => super::js::stringify(other),
    };
    text.contains(&path)
        .then(|| format!("Tool \"{}\" output referenced skill file for \"{skill}\"", call.tool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluators::string_check::testing::{check_grades, parse_one, problems};
    use serde_json::json;

    fn call(tool: &str, input: Value, output: Option<Value>) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            input: Some(input),
            output,
            ..ToolCall::default()
        }
    }

    fn check(should_trigger: bool) -> SkillTrigger {
        SkillTrigger {
            skill: "pdf".into(),
            should_trigger,
        }
    }

    #[test]
    fn the_three_trigger_rules_and_every_text() {
        let skill_call = call("Skill", json!({"skill": "pdf-tools"}), None);
        let read_call = call("read", json!({"file_path": null, "path": "/repo/skills/pdf/SKILL.md"}), None);
        let output_call = call("Bash", json!({"cmd": "ls"}), Some(json!({"files": ["skills/pdf/x.py"]})));
        let other = call("Bash", json!({"cmd": "ls"}), Some(json!("nothing here")));
        let cases: Vec<(Vec<&ToolCall>, bool, bool, &str)> = vec![
            (vec![&other, &skill_call], true, true, "Skill tool invoked with skill=\"pdf-tools\""),
            (vec![&read_call], true, true, "Read tool loaded skill file: /repo/skills/pdf/SKILL.md"),
            (vec![&output_call], true, true, "Tool \"Bash\" output referenced skill file for \"pdf\""),
            (vec![&other], false, true, "Skill \"pdf\" correctly did not trigger"),
            (vec![], false, true, "Skill \"pdf\" correctly did not trigger"),
            (vec![&other, &other], true, false, "Skill \"pdf\" not found in 2 tool call(s)"),
            (vec![], true, false, "No tool calls recorded"),
            (vec![&skill_call], false, false, "Skill tool invoked with skill=\"pdf-tools\""),
        ];
        check_grades(cases.into_iter().map(|(calls, should, passed, text)| (grade(&check(should), &calls), passed, text)));
    }

    #[test]
    fn a_skill_call_for_another_skill_can_still_trigger_by_its_output() {
        let c = call("skill", json!({"skill": 7}), Some(json!("loaded skills/pdf/SKILL.md")));
        assert_eq!(trigger("pdf", &c).as_deref(), Some("Tool \"skill\" output referenced skill file for \"pdf\""));
    }

    #[test]
    fn skill_trigger_is_named_after_its_skill_and_checked_at_load() {
        let (grader, shown) = parse_one("{type: skill-trigger, skill: pdf, should_trigger: false}");
        assert!(shown.is_empty(), "{shown:?}");
        assert_eq!(grader.map(|g| g.name), Some("skill-trigger-pdf".to_owned()));
        assert_eq!(problems("{type: skill-trigger}"), ["e.yaml:1:3: error: skill-trigger is missing the required key `skill`"]);
        assert_eq!(
            problems("{type: skill-trigger, skill: pdf, should_trigger: maybe}"),
            ["e.yaml:1:53: error: `should_trigger` must be true or false, found \"maybe\""]
        );
    }
}
