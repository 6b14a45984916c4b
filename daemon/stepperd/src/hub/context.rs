//! A session's stored context: the exact messages each turn gave and got from the model
//! (tool calls, results and signatures included), so a session resumes after a restart
//! exactly where it was.
//!
//! *The model context is stored, not rebuilt*: each turn appends its messages (the input, assistant
//! messages with tool calls and signatures, tool results) to the `context` table (per layer) before
//! `TurnFinished`, so a session resumes after a crash with exactly what the model saw. A message
//! cut short keeps its text but not tool calls that never got results.

use stepper_engine::{ChatMessage, ContentPart};
use stepper_store::{ContextRows, Store, StoreError};

/// The context of the turn's answering agent: the session's conversation.
pub(crate) const MAIN_LAYER: &str = stepper_engine::orchestrator::MAIN;

/// Why the context could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "the session's stored context is unreadable ({0}) — fork the session before the \
         damaged turn, or start a new one"
    )]
    Unreadable(serde_json::Error),
}

/// The row that starts a compacted context: what comes before it is no longer read (it
/// stays, so a rewind to before the compaction finds the turns it replaced).
pub(crate) const COMPACTED: &str = r#"{"compacted":true}"#;

/// A turn's messages as the rows of a layer's stored context; `replace`: they are the whole
/// context from now on (a compaction), not an addition to it.
pub(crate) fn context_rows(
    turn: u32,
    layer: &str,
    messages: &[ChatMessage],
    replace: bool,
) -> ContextRows {
    let marker = replace.then(|| COMPACTED.to_string());
    ContextRows {
        layer: layer.to_string(),
        turn,
        messages: marker
            .into_iter()
            .chain(
                messages
                    .iter()
                    .filter_map(|m| serde_json::to_string(m).ok()),
            )
            .collect(),
    }
}

/// Add a turn's messages to the session's stored context (a failure is logged: the turn's
/// events stay, and its context is what a restart can rebuild from them).
pub(crate) async fn store_context(
    store: &Store,
    session_id: &str,
    turn: u32,
    messages: &[ChatMessage],
) {
    let json: Vec<String> = messages
        .iter()
        .filter_map(|m| serde_json::to_string(m).ok())
        .collect();
    if let Err(e) = store
        .append_context(session_id, MAIN_LAYER, turn, &json)
        .await
    {
        tracing::error!(session = %session_id, turn, error = %e, "cannot store the turn's context");
    }
}

/// A layer's conversation so far (`MAIN_LAYER`: the session's), as the model saw it.
pub(crate) async fn history(
    store: &Store,
    session_id: &str,
    layer: &str,
) -> Result<Vec<ChatMessage>, ContextError> {
    let rows = store.context(session_id, layer).await?;
    // Only what follows the last compaction counts.
    let from = rows
        .iter()
        .rposition(|r| r == COMPACTED)
        .map_or(0, |i| i + 1);
    rows[from..]
        .iter()
        .map(|json| serde_json::from_str::<ChatMessage>(json).map_err(ContextError::Unreadable))
        .collect()
}

/// The bytes of the attachments `messages` name (a context is stored without them), from the
/// session's store. One the store has lost becomes a line saying so, not a request a
/// provider would refuse.
pub(crate) async fn load_media(store: &Store, session_id: &str, messages: &mut [ChatMessage]) {
    let hashes: Vec<String> = messages
        .iter()
        .flat_map(ChatMessage::media)
        .filter(|m| m.needs_bytes())
        .map(|m| m.about.sha256.clone())
        .collect();
    if hashes.is_empty() {
        return;
    }
    let wanted: Vec<&str> = hashes.iter().map(String::as_str).collect();
    let found = match store.attachment_bytes(session_id, &wanted).await {
        Ok(found) => found,
        Err(e) => {
            tracing::error!(session = %session_id, error = %e, "cannot read the context's attachments");
            Default::default()
        }
    };
    for message in messages.iter_mut() {
        for media in message.media_mut() {
            if media.needs_bytes() {
                media.data = found.get(&media.about.sha256).cloned();
            }
        }
        for part in message.content.iter_mut() {
            let lost = match part {
                ContentPart::Attachment { media } if media.needs_bytes() => {
                    format!("{} (no longer stored)", media.about.label())
                }
                ContentPart::ToolResult { media, .. } => {
                    media.retain(|m| !m.needs_bytes());
                    continue;
                }
                _ => continue,
            };
            *part = ContentPart::Text { text: lost };
        }
    }
}
