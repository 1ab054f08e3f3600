//! `echo`: answers with the prompt it was sent, as promptfoo's `echo` provider does
//! (`docs/promptfoo.md#providers`). No external calls; useful to check prompts and assertions
//! offline.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderFuture, ProviderKind, ProviderRequest,
    ProviderResponse, TargetSettings,
};
use crate::config::KeyTable;

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&ENTRY];

pub(crate) static ENTRY: ProviderEntry = ProviderEntry {
    name: "echo",
    aliases: &[],
    doc: "Answers with the prompt it was sent; calls nothing.",
    class: ProviderClass::Mock,
    batch: false,
    // Its answers cost nothing to make again.
    cacheable: false,
    executable: None,
    container: false,
    keys: &KEYS,
    build,
};

const KEYS: KeyTable = KeyTable::new("echo", "Settings of an `echo` target (it has none).", &[]);

/// A provider whose answer is its prompt.
#[derive(Debug, Clone)]
pub struct EchoProvider {
    name: String,
}

impl Provider for EchoProvider {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(&ENTRY)
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move { Ok(ProviderResponse::text(prompt_text(request))) })
    }

    fn public_settings(&self) -> Value {
        json!({})
    }
}

/// The prompt as sent: a chat prompt as its JSON messages, else the question.
fn prompt_text(request: &ProviderRequest) -> String {
    match &request.chat_prompt {
        Some(messages) if messages.len() > 1 => serde_json::to_string(messages).unwrap_or_default(),
        _ => request.question.clone(),
    }
}

fn build(_: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    Some(Arc::new(EchoProvider {
        name: ctx.target.to_owned(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn echo_answers_with_the_prompt_it_was_sent() {
        let p = EchoProvider { name: "echo".into() };
        let request = ProviderRequest {
            question: "Say hi to Bob".into(),
            ..ProviderRequest::default()
        };
        let answer = p.invoke(&request).await.expect("answer");
        assert_eq!(answer.output_messages.len(), 1);
        assert_eq!(answer.output_messages[0].text().as_deref(), Some("Say hi to Bob"));
    }
}
