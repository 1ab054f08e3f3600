//! Builds what providers see from a case: the question, the guidelines block and, for
//! multi-turn inputs to LLM providers, a chat prompt.

use crate::model::{Content, EvalCase, Message, Role, Segment};
use crate::providers::{ChatMessage, PromptMode};

/// Heading of the guidelines block.
pub const GUIDELINES_HEADING: &str = "[[ ## Guidelines ## ]]";

/// The prompt parts of one case for one provider.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptInputs {
    pub question: String,
    /// Guideline files' contents as a block; empty when the case has none.
    pub guidelines: String,
    /// Set when role markers are needed and the provider takes chat messages.
    pub chat_prompt: Option<Vec<ChatMessage>>,
}

/// Builds the prompt parts of `case` for a provider of `mode`.
pub fn build(case: &EvalCase, mode: PromptMode) -> PromptInputs {
    let guidelines = guidelines_block(case);
    let visible: Vec<&Message> = case.input_messages.iter().filter(|m| m.has_visible_content()).collect();
    let multi_turn = case
        .input_messages
        .iter()
        .any(|m| matches!(m.role, Role::Assistant | Role::Tool))
        || visible.len() > 1;
    if !multi_turn {
        let question = visible
            .iter()
            .map(|m| render_content(m, mode))
            .collect::<Vec<_>>()
            .join("\n\n");
        return PromptInputs {
            question,
            guidelines,
            chat_prompt: None,
        };
    }
    let question = visible
        .iter()
        .map(|m| format!("{}\n{}", m.role.marker(), render_content(m, mode)))
        .collect::<Vec<_>>()
        .join("\n\n");
    let chat_prompt = (mode == PromptMode::Lm).then(|| chat_prompt(&visible, &guidelines, mode));
    PromptInputs {
        question,
        guidelines,
        chat_prompt,
    }
}

/// `[[ ## Guidelines ## ]]` followed by each guideline file as `<file path="name">…</file>`.
pub fn guidelines_block(case: &EvalCase) -> String {
    if case.guidelines.is_empty() {
        return String::new();
    }
    let mut out = String::from(GUIDELINES_HEADING);
    for file in &case.guidelines {
        let name = file
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.value.clone());
        out.push_str(&format!(
            "\n\n<file path=\"{name}\">\n{}\n</file>",
            file.text.trim_end()
        ));
    }
    out
}

/// One message's content: text as-is, objects as pretty JSON, files embedded (LM) or
/// referenced by path (agents), parts separated by blank lines.
pub fn render_content(message: &Message, mode: PromptMode) -> String {
    match &message.content {
        Content::Empty => String::new(),
        Content::Text(t) => t.clone(),
        Content::Json(v) => crate::model::pretty_json(v),
        Content::Segments(segments) => segments
            .iter()
            .filter_map(|s| match s {
                Segment::Text(t) => Some(t.clone()),
                Segment::File(f) => Some(match mode {
                    PromptMode::Lm => format!("<file path=\"{}\">\n{}\n</file>", f.value, f.text.trim_end()),
                    PromptMode::Agent => format!("<file: path=\"{}\">", f.path.display()),
                }),
                Segment::Other(_) => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
    }
}

/// Leading system messages (plus guidelines) become one system message; later system and tool
/// messages become assistant messages marked `@[System]:` / `@[Tool]:`.
fn chat_prompt(messages: &[&Message], guidelines: &str, mode: PromptMode) -> Vec<ChatMessage> {
    let leading = messages.iter().take_while(|m| m.role == Role::System).count();
    let mut system_parts: Vec<String> = messages[..leading].iter().map(|m| render_content(m, mode)).collect();
    if !guidelines.is_empty() {
        system_parts.push(guidelines.to_owned());
    }
    let mut out = Vec::new();
    if !system_parts.is_empty() {
        out.push(ChatMessage {
            role: "system".to_owned(),
            content: system_parts.join("\n\n"),
        });
    }
    for m in &messages[leading..] {
        let content = render_content(m, mode);
        let (role, content) = match m.role {
            Role::User => ("user", content),
            Role::Assistant => ("assistant", content),
            Role::System | Role::Tool => ("assistant", format!("{}\n{content}", m.role.marker())),
        };
        out.push(ChatMessage {
            role: role.to_owned(),
            content,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use super::*;
    use crate::model::{FileRef, SourceRef};

    fn msg(role: Role, content: Content) -> Message {
        Message {
            role,
            content,
            name: None,
            tool_calls: None,
        }
    }

    fn case(messages: Vec<Message>) -> EvalCase {
        EvalCase {
            id: "c".into(),
            dataset: Arc::from("d"),
            conversation_id: None,
            expected_outcome: "x".into(),
            input_messages: messages,
            raw_input_messages: Vec::new(),
            expected_messages: Vec::new(),
            guidelines: Vec::new(),
            input_files: Vec::new(),
            question: String::new(),
            reference_answer: String::new(),
            suite_target: None,
            source: SourceRef {
                file: Arc::from(Path::new("e.yaml")),
                line: 1,
            },
            ..EvalCase::default()
        }
    }

    fn file(value: &str, text: &str) -> FileRef {
        FileRef {
            value: value.into(),
            path: PathBuf::from("/repo").join(value),
            text: Arc::from(text),
        }
    }

    #[test]
    fn single_message_is_flat_and_files_depend_on_mode() {
        let c = case(vec![msg(
            Role::User,
            Content::Segments(vec![
                Segment::Text("Review:".into()),
                Segment::File(file("a.py", "print(1)\n")),
            ]),
        )]);
        let lm = build(&c, PromptMode::Lm);
        assert_eq!(lm.question, "Review:\n\n<file path=\"a.py\">\nprint(1)\n</file>");
        assert!(lm.chat_prompt.is_none());
        let agent = build(&c, PromptMode::Agent);
        assert_eq!(agent.question, "Review:\n\n<file: path=\"/repo/a.py\">");
    }

    #[test]
    fn multi_turn_uses_role_markers_and_a_chat_prompt() {
        let mut c = case(vec![
            msg(Role::System, Content::Text("Be terse.".into())),
            msg(Role::User, Content::Text("Hi".into())),
            msg(Role::Assistant, Content::Text("Hello".into())),
            msg(Role::Tool, Content::Text("result".into())),
            msg(Role::User, Content::Text("Again".into())),
        ]);
        c.guidelines.push(file("style.instructions.md", "Use tabs."));
        let p = build(&c, PromptMode::Lm);
        assert_eq!(
            p.question,
            "@[System]:\nBe terse.\n\n@[User]:\nHi\n\n@[Assistant]:\nHello\n\n@[Tool]:\nresult\n\n@[User]:\nAgain"
        );
        let chat = p.chat_prompt.expect("chat prompt");
        let roles: Vec<&str> = chat.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "assistant", "user"]);
        assert_eq!(
            chat[0].content,
            "Be terse.\n\n[[ ## Guidelines ## ]]\n\n<file path=\"style.instructions.md\">\nUse tabs.\n</file>"
        );
        assert_eq!(chat[3].content, "@[Tool]:\nresult");
        assert!(
            build(&c, PromptMode::Agent).chat_prompt.is_none(),
            "agents get the flattened question"
        );
    }
}
