//! Compaction: a context that reaches a share of the model's window is made smaller before
//! the next model call. Old tool outputs are pruned first (they are most of a long
//! session); if that is not enough, the messages before the last [`KEEP`] are replaced by a
//! summary a model writes, and the last ones are kept verbatim. A summary that fails leaves
//! the pruned context: compaction never fails a turn.
//!
//! After compacting, the loop returns the whole context (`TurnOutcome.compacted`) and the daemon
//! stores it after a `{"compacted":true}` row, which the history is read from; the rows before it
//! stay, so a rewind across a compaction works.

use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::accumulator::MessageAccumulator;
use crate::media_tokens::Accounting;
use crate::provider::{ChatMessage, ChatRequest, ContentPart, LlmProvider, Role, StopReason};
use stepper_protocol::Usage;

/// Messages kept verbatim at the end of a compacted context.
pub const KEEP: usize = 6;
/// The share of the window at which a context is compacted, unless settings say otherwise.
pub const DEFAULT_THRESHOLD: f64 = 0.70;
/// A tool output longer than this, before the kept messages, is pruned.
const PRUNE_OVER: usize = 400;
/// What of each old message the summariser reads, at most.
const SUMMARY_INPUT_PER_MESSAGE: usize = 4000;
/// The longest summary asked for.
const SUMMARY_TOKENS: u32 = 4096;

/// The first message of a compacted context starts with this.
pub const SUMMARY_HEADING: &str =
    "(This conversation was compacted. A summary of what came before:)";

/// When and with what a loop compacts.
#[derive(Clone)]
pub struct CompactionPlan {
    /// The share of `window` that triggers it.
    pub threshold: f64,
    /// The model's context window, in tokens.
    pub window: u64,
    /// The summariser when it is not the loop's own model: its provider and model id.
    pub summarizer: Option<(Arc<dyn LlmProvider>, String)>,
}

impl CompactionPlan {
    /// The size, in tokens, above which the context is compacted.
    pub fn limit(&self) -> u64 {
        (self.window as f64 * self.threshold.clamp(0.05, 1.0)) as u64
    }
}

/// What compaction did.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    pub messages: Vec<ChatMessage>,
    pub before: u64,
    pub after: u64,
    pub pruned: u32,
    pub summarized: u32,
    pub error: Option<String>,
    /// What the summary's model call used.
    pub usage: Usage,
}

impl Compacted {
    /// Whether the context changed.
    pub fn changed(&self) -> bool {
        self.pruned > 0 || self.summarized > 0
    }
}

/// Bytes of a request's JSON per estimated token: the one unit of every size stepper
/// estimates — compaction's threshold and its before and after figures, manual or
/// automatic, and what `session/context` (`/context`) reports.
pub const BYTES_PER_TOKEN: usize = 4;

/// `bytes` of a request, in estimated tokens.
pub fn tokens(bytes: usize) -> u64 {
    (bytes / BYTES_PER_TOKEN) as u64
}

/// The estimated size of a request, in tokens: its system prompt, its tools' definitions
/// and its messages, images and PDFs counted as its model's vendor counts them.
pub fn estimate(request: &ChatRequest) -> u64 {
    tokens(
        request.system.as_deref().map_or(0, str::len)
            + serde_json::to_string(&request.tools).map_or(0, |s| s.len()),
    ) + messages_tokens(Accounting::of_model(&request.model), &request.messages)
}

/// The bytes of messages as JSON (an attachment's name and size, never its bytes).
pub fn messages_bytes(messages: &[ChatMessage]) -> usize {
    messages
        .iter()
        .map(|m| serde_json::to_string(m).map_or(0, |s| s.len()))
        .sum()
}

/// Messages in estimated tokens: their JSON, and each image and PDF by `accounting`
/// ([`Accounting::of`] a provider kind, or [`Accounting::of_model`]).
pub fn messages_tokens(accounting: Accounting, messages: &[ChatMessage]) -> u64 {
    tokens(messages_bytes(messages))
        + messages
            .iter()
            .flat_map(ChatMessage::media)
            .map(|m| accounting.tokens(&m.about))
            .sum::<u64>()
}

/// Compact `request`'s messages: prune, then (when `manual`, or still over `target`
/// tokens) summarise all but the last [`KEEP`] with `provider`'s `model`.
/// `instructions` are the user's words on what the summary should keep.
pub async fn compact(
    request: &ChatRequest,
    provider: &dyn LlmProvider,
    model: &str,
    target: u64,
    manual: bool,
    instructions: Option<&str>,
    cancel: &CancellationToken,
) -> Compacted {
    let before = estimate(request);
    let mut messages = request.messages.clone();
    let keep_from = messages.len().saturating_sub(KEEP);
    let mut pruned = 0;
    for message in &mut messages[..keep_from] {
        pruned += drop_media(message);
        for part in &mut message.content {
            if let ContentPart::ToolResult { content, .. } = part
                && content.len() > PRUNE_OVER
            {
                let first: String = content
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(120)
                    .collect();
                *content = format!(
                    "[output pruned to save context: {} bytes; it began: {first}]",
                    content.len()
                );
                pruned += 1;
            }
        }
    }
    let mut out = Compacted {
        before,
        after: 0,
        pruned,
        summarized: 0,
        error: None,
        messages: Vec::new(),
        usage: Usage::default(),
    };
    let pruned_request = ChatRequest {
        messages: messages.clone(),
        ..request.clone()
    };
    let split = split_point(&messages);
    if (!manual && estimate(&pruned_request) <= target) || split == 0 {
        out.after = estimate(&pruned_request);
        out.messages = messages;
        return out;
    }
    match summarise(&messages[..split], provider, model, instructions, cancel).await {
        Ok((summary, usage)) => {
            let mut compacted = vec![ChatMessage::user(format!("{SUMMARY_HEADING}\n\n{summary}"))];
            compacted.extend(messages[split..].iter().cloned());
            out.summarized = u32::try_from(split).unwrap_or(u32::MAX);
            out.messages = compacted;
            out.usage = usage;
        }
        Err((e, usage)) => {
            out.error = Some(e);
            out.messages = messages;
            out.usage = usage;
        }
    }
    out.after = estimate(&ChatRequest {
        messages: out.messages.clone(),
        ..request.clone()
    });
    out
}

/// Whether compaction can make `messages` smaller: there is something before the kept
/// messages to summarise, or an old tool output or image to prune.
pub fn can_compact(messages: &[ChatMessage]) -> bool {
    let keep_from = messages.len().saturating_sub(KEEP);
    split_point(messages) > 0
        || messages[..keep_from].iter().any(|m| {
            m.media().next().is_some()
                || m.content.iter().any(
            |p| matches!(p, ContentPart::ToolResult { content, .. } if content.len() > PRUNE_OVER),
        )
        })
}

/// An old message's images and PDFs become their labels (`[image: shot.png 120 KB]`), so a
/// compacted context does not send them again on every call. Returns how many went.
fn drop_media(message: &mut ChatMessage) -> u32 {
    let mut dropped = 0;
    for part in &mut message.content {
        match part {
            ContentPart::Attachment { media } => {
                *part = ContentPart::Text {
                    text: format!("{} (no longer shown, to save context)", media.about.label()),
                };
                dropped += 1;
            }
            ContentPart::ToolResult { content, media, .. } if !media.is_empty() => {
                for m in media.drain(..) {
                    content.push_str(&format!(
                        "\n{} (no longer shown, to save context)",
                        m.about.label()
                    ));
                    dropped += 1;
                }
            }
            _ => {}
        }
    }
    dropped
}

/// Where the kept messages start: the last assistant message at or before `len - KEEP`
/// (so the summary, a user message, is followed by an assistant one, and no tool result is
/// parted from its call). 0 when there is nothing to summarise.
fn split_point(messages: &[ChatMessage]) -> usize {
    let latest = messages.len().saturating_sub(KEEP);
    (1..=latest)
        .rev()
        .find(|&i| messages[i].role == Role::Assistant)
        .unwrap_or(0)
}

async fn summarise(
    messages: &[ChatMessage],
    provider: &dyn LlmProvider,
    model: &str,
    instructions: Option<&str>,
    cancel: &CancellationToken,
) -> Result<(String, Usage), (String, Usage)> {
    let mut transcript = String::new();
    for message in messages {
        for part in &message.content {
            let (who, text) = match part {
                ContentPart::Text { text } => match message.role {
                    Role::User => ("User", text.clone()),
                    Role::Assistant => ("Assistant", text.clone()),
                },
                ContentPart::ToolCall {
                    name, arguments, ..
                } => ("Tool call", format!("{name} {arguments}")),
                // Images and PDFs by their labels: the summariser is sent text alone.
                ContentPart::ToolResult { content, media, .. } => {
                    // Labels first: a long output is cut below.
                    let mut text: String = media.iter().map(|m| m.about.label() + "\n").collect();
                    text.push_str(content);
                    ("Tool result", text)
                }
                ContentPart::Attachment { media } => match message.role {
                    Role::User => ("User", media.about.label()),
                    Role::Assistant => ("Assistant", media.about.label()),
                },
                _ => continue,
            };
            let text: String = text.chars().take(SUMMARY_INPUT_PER_MESSAGE).collect();
            transcript.push_str(&format!("{who}: {text}\n\n"));
        }
    }
    let mut ask = format!(
        "Summarise this conversation between a user and a coding agent so that the agent \
         can continue the work from the summary alone. Keep: what the user asked for and \
         decided, the files and commands involved, what was changed, what was found, what \
         is left to do, and any constraints the user gave. Be concise; use short sections.\n\n\
         <conversation>\n{transcript}</conversation>"
    );
    if let Some(extra) = instructions.filter(|t| !t.trim().is_empty()) {
        ask.push_str(&format!("\n\nThe user asks the summary to: {extra}"));
    }
    let mut request = ChatRequest::new(model, vec![ChatMessage::user(ask)]);
    request.system = Some("You write summaries of coding sessions.".into());
    request.max_tokens = SUMMARY_TOKENS;
    let mut stream = provider.chat_stream(request, cancel.clone());
    let mut acc = MessageAccumulator::new();
    while let Some(event) = stream.next().await {
        let event = event.map_err(|e| (format!("the summary failed: {e}"), acc.usage()))?;
        acc.push(&event)
            .map_err(|e| (format!("the summary failed: {e}"), acc.usage()))?;
    }
    let text = acc.text();
    let usage = acc.usage();
    // Only a whole summary replaces the conversation: one cut by an interrupt, a broken
    // stream or the length limit would lose what it did not reach.
    if cancel.is_cancelled() {
        return Err(("interrupted before the summary was done".into(), usage));
    }
    match acc.finish().map(|done| done.stop) {
        Ok(Some(StopReason::EndTurn | StopReason::StopSequence)) => {}
        Ok(Some(StopReason::MaxTokens)) => {
            return Err(("the summary was cut at its length limit".into(), usage));
        }
        Ok(_) => return Err(("the summary ended before the model finished".into(), usage)),
        Err(e) => return Err((format!("the summary failed: {e}"), usage)),
    }
    if text.trim().is_empty() {
        return Err(("the summary came back empty".into(), usage));
    }
    Ok((text, usage))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content: vec![ContentPart::ToolCall {
                id: id.into(),
                name: "read".into(),
                arguments: serde_json::json!({"path": "a"}),
            }],
        }
    }

    fn result(id: &str, size: usize) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: vec![ContentPart::ToolResult {
                media: Vec::new(),
                call_id: id.into(),
                content: "x".repeat(size),
                is_error: false,
            }],
        }
    }

    #[test]
    fn the_split_keeps_calls_with_their_results_and_starts_on_the_assistant() {
        let mut messages = vec![ChatMessage::user("hi")];
        for i in 0..5 {
            messages.push(call(&i.to_string()));
            messages.push(result(&i.to_string(), 10));
        }
        // 11 messages: the last 6 start at index 5, a call; with one more the start is a
        // result, and the split moves back to its call.
        let split = split_point(&messages);
        assert_eq!(split, 5);
        messages.push(call("5"));
        assert_eq!(split_point(&messages), 5);
        assert_eq!(messages[split].role, Role::Assistant);
        assert!(messages.len() - split >= KEEP);
        assert_eq!(split_point(&messages[..4]), 0);
    }

    /// A summariser that streams `text`, then stops with `stop` (or is cut without one).
    struct Says(&'static str, Option<StopReason>);

    impl LlmProvider for Says {
        fn name(&self) -> &str {
            "says"
        }
        fn chat_stream(&self, _: ChatRequest, _: CancellationToken) -> crate::provider::ChatStream {
            use crate::provider::ChatEvent;
            let mut events = vec![Ok(ChatEvent::TextDelta(self.0.to_string()))];
            if let Some(reason) = self.1.clone() {
                events.push(Ok(ChatEvent::Stop { reason }));
            }
            Box::pin(futures::stream::iter(events))
        }
    }

    fn long_session() -> ChatRequest {
        let mut messages = vec![ChatMessage::user("start")];
        for i in 0..8 {
            messages.push(ChatMessage::assistant(format!("answer {i}")));
            messages.push(ChatMessage::user(format!("question {i}")));
        }
        ChatRequest::new("m", messages)
    }

    #[tokio::test]
    async fn a_whole_summary_replaces_the_start_and_a_cut_one_is_refused() {
        let request = long_session();
        let cancel = CancellationToken::new();
        let whole = Says("SUMMARY", Some(StopReason::EndTurn));
        let done = compact(&request, &whole, "m", 0, true, None, &cancel).await;
        assert_eq!(done.error, None);
        assert!(done.changed());
        assert!(done.messages[0].text().contains("SUMMARY"));
        assert_eq!(done.messages[0].role, Role::User);
        assert_eq!(done.messages[1].role, Role::Assistant);
        assert!(done.messages.len() > KEEP);
        for cut in [None, Some(StopReason::MaxTokens)] {
            let done = compact(&request, &Says("HALF", cut), "m", 0, true, None, &cancel).await;
            assert!(done.error.is_some(), "{done:?}");
            assert!(!done.changed());
            assert_eq!(done.messages, request.messages);
        }
        cancel.cancel();
        let done = compact(&request, &whole, "m", 0, true, None, &cancel).await;
        assert!(done.error.unwrap().contains("interrupted"));
    }

    fn shot(width: u32, height: u32) -> crate::provider::Media {
        let about = stepper_protocol::Attachment {
            kind: stepper_protocol::AttachmentKind::Image,
            media_type: "image/png".into(),
            name: "shot.png".into(),
            size: 120 * 1024,
            sha256: "ab".into(),
            width: Some(width),
            height: Some(height),
            pages: None,
        };
        crate::provider::Media::new(about, std::sync::Arc::from(&b"PNG-BYTES"[..]))
    }

    fn with_attachment(text: &str) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: vec![
                ContentPart::Attachment {
                    media: shot(1000, 1000),
                },
                ContentPart::Text { text: text.into() },
            ],
        }
    }

    fn shown(id: &str) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: vec![ContentPart::ToolResult {
                media: vec![shot(1024, 1024)],
                call_id: id.into(),
                content: "read shot.png".into(),
                is_error: false,
            }],
        }
    }

    #[test]
    fn an_image_counts_as_its_model_counts_it() {
        let text_only = ChatRequest::new("claude-sonnet-4-5", vec![ChatMessage::user("look")]);
        let with = ChatRequest::new("claude-sonnet-4-5", vec![with_attachment("look")]);
        // 1000 × 1000 is 1334 tokens to Anthropic, 765 (four tiles) to OpenAI; the
        // attachment's name in the JSON adds a few dozen.
        let anthropic = estimate(&with) - estimate(&text_only);
        assert!((1334..1334 + 80).contains(&anthropic), "{anthropic}");
        let openai = estimate(&ChatRequest {
            model: "gpt-5".into(),
            ..with.clone()
        }) - estimate(&text_only);
        assert!((765..765 + 80).contains(&openai), "{openai}");
        let shown = messages_tokens(
            Accounting::of(crate::provider::ProviderKind::Openai),
            &[call("1"), shown("1")],
        );
        assert!(shown >= 765, "{shown}");
    }

    /// A summariser that keeps what it was asked, and answers `SUMMARY`.
    struct Keeps(std::sync::Mutex<Vec<ChatRequest>>);

    impl LlmProvider for Keeps {
        fn name(&self) -> &str {
            "keeps"
        }
        fn chat_stream(&self, r: ChatRequest, c: CancellationToken) -> crate::provider::ChatStream {
            self.0.lock().unwrap().push(r.clone());
            Says("SUMMARY", Some(StopReason::EndTurn)).chat_stream(r, c)
        }
    }

    /// A session that was shown pictures early, and one at its end.
    fn session_with_pictures() -> ChatRequest {
        let mut messages = vec![with_attachment("what is wrong here?")];
        messages.push(call("1"));
        messages.push(shown("1"));
        for i in 0..6 {
            messages.push(ChatMessage::assistant(format!("answer {i}")));
            messages.push(ChatMessage::user(format!("question {i}")));
        }
        messages.push(ChatMessage::assistant("and now?"));
        messages.push(with_attachment("and this one?"));
        ChatRequest::new("claude-sonnet-4-5", messages)
    }

    #[tokio::test]
    async fn the_summariser_reads_labels_and_old_pictures_are_not_sent_again() {
        let request = session_with_pictures();
        let keeps = Keeps(Default::default());
        let done = compact(
            &request,
            &keeps,
            "m",
            0,
            true,
            None,
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(done.error, None);
        let asked = keeps.0.lock().unwrap().pop().unwrap();
        assert!(
            asked.messages.iter().all(|m| m.media().next().is_none()),
            "the summariser is sent text alone: {asked:?}"
        );
        let ask = asked.messages[0].text();
        assert!(ask.contains("User: [image: shot.png 120 KB]"), "{ask}");
        assert!(
            ask.contains("Tool result: read shot.png\n[image: shot.png 120 KB]"),
            "{ask}"
        );
        assert!(!ask.contains("UE5HLUJZVEVT") && !ask.contains("PNG-BYTES"));
        // Only the last message, kept verbatim, still shows its picture, bytes and all.
        let pictures: Vec<_> = done.messages.iter().flat_map(ChatMessage::media).collect();
        assert_eq!(pictures.len(), 1, "{:?}", done.messages);
        assert!(!pictures[0].needs_bytes());
        assert_eq!(done.messages.last(), request.messages.last());
        assert!(done.after < done.before);
    }

    #[tokio::test]
    async fn pruning_alone_turns_old_pictures_into_their_labels() {
        let request = session_with_pictures();
        struct Never;
        impl LlmProvider for Never {
            fn name(&self) -> &str {
                "never"
            }
            fn chat_stream(
                &self,
                _: ChatRequest,
                _: CancellationToken,
            ) -> crate::provider::ChatStream {
                panic!("pruning was enough: no summary is asked for")
            }
        }
        assert!(can_compact(&request.messages[..8]));
        let done = compact(
            &request,
            &Never,
            "m",
            estimate(&request),
            false,
            None,
            &CancellationToken::new(),
        )
        .await;
        assert_eq!((done.pruned, done.summarized), (2, 0));
        assert_eq!(
            done.messages[0].content[0],
            ContentPart::Text {
                text: "[image: shot.png 120 KB] (no longer shown, to save context)".into()
            }
        );
        assert!(matches!(
            &done.messages[2].content[0],
            ContentPart::ToolResult { media, content, .. }
                if media.is_empty() && content.ends_with("\n[image: shot.png 120 KB] (no longer shown, to save context)")
        ));
        assert_eq!(done.messages.iter().flat_map(ChatMessage::media).count(), 1);
        assert!(done.after + 2000 < done.before, "{done:?}");
    }

    #[tokio::test]
    async fn pruning_alone_when_it_is_enough() {
        let mut messages = vec![ChatMessage::user("hi")];
        for i in 0..6 {
            messages.push(call(&i.to_string()));
            messages.push(result(&i.to_string(), 5000));
        }
        let request = ChatRequest::new("m", messages);
        let before = estimate(&request);
        struct Never;
        impl LlmProvider for Never {
            fn name(&self) -> &str {
                "never"
            }
            fn chat_stream(
                &self,
                _: ChatRequest,
                _: CancellationToken,
            ) -> crate::provider::ChatStream {
                panic!("pruning was enough: no summary is asked for")
            }
        }
        let done = compact(
            &request,
            &Never,
            "m",
            before,
            false,
            None,
            &CancellationToken::new(),
        )
        .await;
        assert!(done.pruned >= 3, "{done:?}");
        assert_eq!(done.summarized, 0);
        assert!(done.after < before);
        assert_eq!(done.messages.len(), request.messages.len());
    }
}
