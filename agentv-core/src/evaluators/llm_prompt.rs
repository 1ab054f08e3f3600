//! What a 4.x LLM grader shows its model (reference §2.5.1, §4.1, §4.2, §4.6): the template
//! variables, the default prompt, the free-form system prompt and the delegate prompt, byte for
//! byte, so a recorded or cached grader answers the same.

use serde_json::Value;

use super::GradeContext;
use crate::model::OutputMessage;
use crate::template;

/// The default user prompt (`DEFAULT_GRADER_TEMPLATE`).
pub const DEFAULT_TEMPLATE: &str = "You are an expert grader. Your goal is to grade the answer based on how well it achieves the criteria for the original task.

Use the reference_answer as a gold standard for a high-quality response (if provided). The reference_answer may be a simple text response, or it may contain a sequence of expected agent messages including tool calls. When it contains multiple messages, the last message represents the final expected answer. The answer does not need to match it verbatim, but should capture the key points and follow the same spirit.

Be concise and focused in your evaluation. Provide succinct, specific feedback rather than verbose explanations.

[[ ## criteria ## ]]
{{criteria}}

[[ ## question ## ]]
{{input}}

[[ ## reference_answer ## ]]
{{expected_output}}

[[ ## answer ## ]]
{{output}}";

/// The free-form system prompt: the reply's schema.
pub const FREEFORM_SYSTEM: &str = "You must respond with a single JSON object matching this schema:

{
  \"score\": <number between 0.0 and 1.0>,
  \"assertions\": [
    {
      \"text\": \"<brief description of what was checked>\",
      \"passed\": <boolean>,
      \"evidence\": \"<concise evidence, 1-2 sentences, optional>\"
    }
  ],
  \"details\": {<optional object with domain-specific structured metrics>}
}";

/// The first line of the prompt an agent grader (delegate mode) receives.
pub const DELEGATE_HEADER: &str = "You are an expert grader. Investigate the workspace to verify the criteria are met.";

/// The variables a 4.x template may use as `{{ name }}`.
pub const VARIABLES: &[&str] = &[
    "input",
    "output",
    "expected_output",
    "criteria",
    "metadata",
    "metadata_json",
    "rubrics",
    "rubrics_json",
    "file_changes",
    "tool_calls",
];

/// 2.x names 4.x leaves as written, with the name that replaced each.
pub const DEPRECATED_VARIABLES: &[(&str, &str)] = &[
    ("candidate_answer", "output"),
    ("question", "input"),
    ("expected_outcome", "criteria"),
    ("reference_answer", "expected_output"),
    ("expected_messages", "expected_output"),
    ("input_messages", "input"),
    ("output_messages", "output"),
];

/// Whether `text` uses a 4.x variable: an inline prompt that does is a whole template, one
/// that does not replaces the criteria inside the default template (quirk 1).
pub fn uses_known_variable(text: &str) -> bool {
    template::variables(text).any(|v| VARIABLES.contains(&v))
}

/// What the prompts are filled with, as the case and the answer give it; values are kept
/// untrimmed (the checklist prompts insert them so) and trimmed where variables are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inputs {
    /// The question as the target received it.
    pub question: String,
    pub criteria: String,
    /// The reference answer: the last expected message.
    pub reference: String,
    pub candidate: String,
    pub metadata: Option<Value>,
    /// The workspace diff (`docs/workspaces.md#file-changes`); empty without one.
    pub file_changes: String,
    /// The answer's tool calls, one line each ([`format_tool_calls`]).
    pub tool_calls: String,
    /// The grader's rubric items as JSON, pretty and compact, when it has some (rendered by
    /// the rubric module, which keeps 4.x's key order).
    pub rubrics: Option<(String, String)>,
}

impl Inputs {
    /// The inputs of the case and answer in `ctx`.
    pub fn of(ctx: &GradeContext<'_>) -> Self {
        let case = ctx.case;
        let question = crate::prompt::build(case, ctx.target.provider.prompt_mode()).question;
        Self {
            question: if question.trim().is_empty() {
                case.question.clone()
            } else {
                question
            },
            criteria: case.expected_outcome.clone(),
            reference: case.reference_answer.clone(),
            candidate: ctx.candidate_answer.to_owned(),
            metadata: case_metadata(ctx),
            file_changes: ctx.workspace.and_then(|w| w.file_changes.clone()).unwrap_or_default(),
            tool_calls: format_tool_calls(ctx.output_messages),
            rubrics: None,
        }
    }

    /// The value of `{{ name }}` (reference §2.5.1); `None` leaves it as written.
    pub fn variable(&self, name: &str) -> Option<String> {
        let pretty = |v: &Option<Value>| {
            v.as_ref()
                .map(|v| serde_json::to_string_pretty(v).unwrap_or_default())
                .unwrap_or_default()
        };
        let compact = |v: &Option<Value>| v.as_ref().map(Value::to_string).unwrap_or_default();
        Some(match name {
            "input" => self.question.trim().to_owned(),
            "output" => self.candidate.trim().to_owned(),
            "expected_output" => self.reference.trim().to_owned(),
            "criteria" => self.criteria.trim().to_owned(),
            "metadata" => pretty(&self.metadata),
            "metadata_json" => compact(&self.metadata),
            "rubrics" => self.rubrics.as_ref().map(|r| r.0.clone()).unwrap_or_default(),
            "rubrics_json" => self.rubrics.as_ref().map(|r| r.1.clone()).unwrap_or_default(),
            "file_changes" => self.file_changes.clone(),
            "tool_calls" => self.tool_calls.clone(),
            _ => return None,
        })
    }

    /// `template` with its variables substituted; unknown names stay as written.
    pub fn render(&self, template: &str) -> String {
        template::substitute_with(template, |name| self.variable(name))
    }

    /// The default free-form prompt: the template, then the workspace diff and the tool calls
    /// when there are any.
    pub fn default_prompt(&self) -> String {
        let mut prompt = self.render(DEFAULT_TEMPLATE);
        self.append_workspace_blocks(&mut prompt);
        prompt
    }

    fn append_workspace_blocks(&self, prompt: &mut String) {
        if !self.file_changes.is_empty() {
            prompt.push_str(&format!("\n\n[[ ## file_changes ## ]]\n{}", self.file_changes));
        }
        if !self.tool_calls.is_empty() {
            prompt.push_str(&format!("\n\n[[ ## tool_calls ## ]]\n{}", self.tool_calls));
        }
    }

    /// The case blocks every built-in prompt shares, as lines: question, criteria, the
    /// reference when there is one, the answer, then the diff and the tool calls when present.
    /// Values are inserted untrimmed.
    pub fn case_lines(&self) -> Vec<String> {
        let mut lines = vec![
            "[[ ## question ## ]]".to_owned(),
            self.question.clone(),
            String::new(),
            "[[ ## criteria ## ]]".to_owned(),
            self.criteria.clone(),
            String::new(),
        ];
        if !self.reference.trim().is_empty() {
            lines.extend([
                "[[ ## reference_answer ## ]]".to_owned(),
                self.reference.clone(),
                String::new(),
            ]);
        }
        lines.extend(["[[ ## answer ## ]]".to_owned(), self.candidate.clone(), String::new()]);
        if !self.file_changes.is_empty() {
            lines.extend([
                "[[ ## file_changes ## ]]".to_owned(),
                self.file_changes.clone(),
                String::new(),
            ]);
        }
        if !self.tool_calls.is_empty() {
            lines.extend([
                "[[ ## tool_calls ## ]]".to_owned(),
                self.tool_calls.clone(),
                String::new(),
            ]);
        }
        lines
    }
}

/// The case's metadata (a 4.x file's suite and case `metadata`, merged), for `{{ metadata }}`;
/// a case without any renders empty, as in 4.x.
fn case_metadata(ctx: &GradeContext<'_>) -> Option<Value> {
    ctx.case.metadata.clone().map(Value::Object)
}

/// Tools whose one telling argument is shown (`format-tool-calls.ts`); other tools show their
/// first short string argument.
const KEY_ARGUMENTS: &[(&str, &str)] = &[
    ("Skill", "skill"),
    ("Read", "file_path"),
    ("Write", "file_path"),
    ("Edit", "file_path"),
    ("Bash", "command"),
    ("Grep", "pattern"),
    ("Glob", "pattern"),
];

/// Longest argument shown before it is cut with `…`.
const MAX_ARGUMENT_CHARS: usize = 120;

/// The answer's tool calls for `{{ tool_calls }}`: `- Tool: detail` per call, or `""` when
/// there are none.
pub fn format_tool_calls(messages: &[OutputMessage]) -> String {
    let lines: Vec<String> = messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|call| match key_detail(&call.tool, call.input.as_ref()) {
            Some(detail) => format!("- {}: {detail}", call.tool),
            None => format!("- {}", call.tool),
        })
        .collect();
    lines.join("\n")
}

fn key_detail(tool: &str, input: Option<&Value>) -> Option<String> {
    let args = input?.as_object()?;
    let known = KEY_ARGUMENTS
        .iter()
        .filter(|(t, _)| *t == tool)
        .find_map(|(_, field)| args.get(*field).and_then(Value::as_str).filter(|s| !s.is_empty()));
    let value = known.or_else(|| {
        args.values()
            .filter_map(Value::as_str)
            .find(|s| !s.is_empty() && s.chars().count() <= MAX_ARGUMENT_CHARS)
    })?;
    Some(if value.chars().count() <= MAX_ARGUMENT_CHARS {
        value.to_owned()
    } else {
        format!("{}…", value.chars().take(MAX_ARGUMENT_CHARS).collect::<String>())
    })
}

/// `n` as JavaScript writes it into JSON: whole numbers without a fraction (`1`, not `1.0`),
/// so prompts holding numbers read as 4.x's do.
pub fn js_number(n: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if n.is_finite() && n.fract() == 0.0 && n.abs() < EXACT {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn inputs() -> Inputs {
        Inputs {
            question: "  Q?  ".into(),
            criteria: " C ".into(),
            reference: "R\n".into(),
            candidate: " A ".into(),
            ..Inputs::default()
        }
    }

    #[test]
    fn the_default_prompt_is_4x_byte_for_byte() {
        let want = "You are an expert grader. Your goal is to grade the answer based on how well it achieves the criteria for the original task.\n\nUse the reference_answer as a gold standard for a high-quality response (if provided). The reference_answer may be a simple text response, or it may contain a sequence of expected agent messages including tool calls. When it contains multiple messages, the last message represents the final expected answer. The answer does not need to match it verbatim, but should capture the key points and follow the same spirit.\n\nBe concise and focused in your evaluation. Provide succinct, specific feedback rather than verbose explanations.\n\n[[ ## criteria ## ]]\nC\n\n[[ ## question ## ]]\nQ?\n\n[[ ## reference_answer ## ]]\nR\n\n[[ ## answer ## ]]\nA";
        assert_eq!(inputs().default_prompt(), want);
        let with_calls = Inputs {
            tool_calls: "- Read: /a".into(),
            file_changes: "diff".into(),
            ..inputs()
        };
        assert_eq!(
            with_calls.default_prompt(),
            format!("{want}\n\n[[ ## file_changes ## ]]\ndiff\n\n[[ ## tool_calls ## ]]\n- Read: /a")
        );
        assert_eq!(
            FREEFORM_SYSTEM,
            "You must respond with a single JSON object matching this schema:\n\n{\n  \"score\": <number between 0.0 and 1.0>,\n  \"assertions\": [\n    {\n      \"text\": \"<brief description of what was checked>\",\n      \"passed\": <boolean>,\n      \"evidence\": \"<concise evidence, 1-2 sentences, optional>\"\n    }\n  ],\n  \"details\": {<optional object with domain-specific structured metrics>}\n}"
        );
    }

    #[test]
    fn variables_follow_4x_and_leave_2x_names_verbatim() {
        let i = Inputs {
            metadata: Some(json!({"topic": "geo", "n": 2})),
            rubrics: Some(("[\n  {\"id\": \"r1\"}\n]".into(), "[{\"id\":\"r1\"}]".into())),
            ..inputs()
        };
        let rendered = i.render(
            "{{input}}|{{ output }}|{{expected_output}}|{{criteria}}|{{metadata_json}}|{{rubrics_json}}|{{file_changes}}|{{candidate_answer}}|{{ question }}|{{nope}}",
        );
        assert_eq!(
            rendered,
            "Q?|A|R|C|{\"n\":2,\"topic\":\"geo\"}|[{\"id\":\"r1\"}]||{{candidate_answer}}|{{ question }}|{{nope}}"
        );
        assert_eq!(i.render("{{metadata}}"), "{\n  \"n\": 2,\n  \"topic\": \"geo\"\n}");
        assert_eq!(inputs().render("[{{metadata}}]"), "[]", "no metadata renders empty");
        for (text, known) in [
            ("Grade {{ output }}", true),
            ("Names {{rubrics_json}}", true),
            ("Grade {{ candidate_answer }}", false),
            ("Names PARIS", false),
            ("./graders/x.md", false),
        ] {
            assert_eq!(uses_known_variable(text), known, "{text}");
        }
    }

    #[test]
    fn tool_calls_show_one_telling_argument() {
        let call = |tool: &str, input: Value| {
            let mut m = OutputMessage::assistant("");
            m.tool_calls
                .push(serde_json::from_value(json!({"tool": tool, "input": input})).expect("call"));
            m
        };
        let long = "x".repeat(130);
        let messages = [
            call("Read", json!({"file_path": "/a.md", "limit": 5})),
            call("Bash", json!({"command": long})),
            call("search", json!({"limit": 5, "query": "refund"})),
            call("noop", json!({"n": 1})),
            call("Grep", json!(null)),
        ];
        assert_eq!(
            format_tool_calls(&messages),
            format!(
                "- Read: /a.md\n- Bash: {}…\n- search: refund\n- noop\n- Grep",
                "x".repeat(120)
            )
        );
        assert_eq!(format_tool_calls(&[OutputMessage::assistant("hi")]), "");
    }

    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        for (n, want) in [
            (1.0, "1"),
            (0.5, "0.5"),
            (-3.0, "-3"),
            (1e300, "1e+300"),
            (f64::NAN, "null"),
        ] {
            assert_eq!(js_number(n).to_string(), want, "{n}");
        }
    }
}
