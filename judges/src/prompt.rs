//! The pieces every prompt is made of: a task paragraph, data in tagged blocks, and the exact
//! JSON shape of the reply.
//!
//! Data sits between `<tag>` and `</tag>` lines (`<question>`, `<context>` holding `<passage
//! n="1">` blocks, `<chunk rank="1">`, `<claim n="1">`, `<statement n="1">`), so the model
//! can tell instructions from data and the items apart. A config `instructions` (or
//! `extract_instructions`) replaces only the task paragraph: the blocks and the reply format
//! are what the judge parses, so they stay.

/// `<tag>\ntext\n</tag>`.
pub fn block(tag: &str, text: &str) -> String {
    format!("<{tag}>\n{}\n</{tag}>", text.trim())
}

/// `<tag attr="n">\ntext\n</tag>`, numbered from 1.
pub fn numbered(tag: &str, attr: &str, n: usize, text: &str) -> String {
    format!("<{tag} {attr}=\"{n}\">\n{}\n</{tag}>", text.trim())
}

/// The retrieved context as one `<context>` block of numbered `<passage>` blocks.
pub fn context_block(chunks: &[String]) -> String {
    let passages: Vec<String> = chunks
        .iter()
        .enumerate()
        .map(|(i, c)| numbered("passage", "n", i + 1, c))
        .collect();
    format!("<context>\n{}\n</context>", passages.join("\n"))
}

/// A whole prompt: the task (or its override), the data blocks, then the reply format.
pub fn assemble(task: &str, instructions: Option<&str>, blocks: &[String], reply: &str) -> String {
    let mut parts = vec![instructions.unwrap_or(task).trim().to_owned()];
    parts.extend(blocks.iter().filter(|b| !b.is_empty()).cloned());
    parts.push(reply.to_owned());
    parts.join("\n\n")
}

/// `, "reason": "<one sentence>"` when reasons are asked for, else nothing.
pub fn reason_field(include_reason: bool) -> &'static str {
    if include_reason {
        ", \"reason\": \"<one sentence>\""
    } else {
        ""
    }
}

/// The reply format of a batch of yes/no verdicts, one per item, in order.
pub fn verdicts_reply(noun: &str, include_reason: bool) -> String {
    format!(
        "Reply with only a JSON object holding one verdict per {noun}, in the order given:\n\
         {{\"verdicts\": [{{\"verdict\": \"yes\" or \"no\"{}}}]}}",
        reason_field(include_reason)
    )
}

/// The reply format of one yes/no verdict.
pub fn verdict_reply(include_reason: bool) -> String {
    format!(
        "Reply with only a JSON object:\n{{\"verdict\": \"yes\" or \"no\"{}}}",
        reason_field(include_reason)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_reply_formats() {
        assert_eq!(block("question", " Why? \n"), "<question>\nWhy?\n</question>");
        assert_eq!(
            numbered("chunk", "rank", 2, "text"),
            "<chunk rank=\"2\">\ntext\n</chunk>"
        );
        assert_eq!(
            context_block(&["a".to_owned(), "b".to_owned()]),
            "<context>\n<passage n=\"1\">\na\n</passage>\n<passage n=\"2\">\nb\n</passage>\n</context>"
        );
        assert_eq!(
            verdicts_reply("claim", false),
            "Reply with only a JSON object holding one verdict per claim, in the order given:\n\
             {\"verdicts\": [{\"verdict\": \"yes\" or \"no\"}]}"
        );
        assert_eq!(
            verdict_reply(true),
            "Reply with only a JSON object:\n{\"verdict\": \"yes\" or \"no\", \"reason\": \"<one sentence>\"}"
        );
        assert_eq!(
            assemble("Task.", Some(" Mine. "), &["<a>\nx\n</a>".to_owned()], "Reply."),
            "Mine.\n\n<a>\nx\n</a>\n\nReply."
        );
    }
}
