//! Record and replay: a session's provider exchanges written to a JSON-lines file, and a
//! provider (`replay/<file>`) that plays such a file back — for demos, bug reports and tests.
//!
//! What is recorded is the normalised exchange (the request's messages and the `ChatEvent`s
//! that answered it), not HTTP: no header, so no key, ever reaches the file, and a recording
//! made against one vendor replays the same whatever the format. Secrets the caller knows of
//! (the keys in use) are also scrubbed from the text, in case a prompt quoted one.
//!
//! *Replay picks the exchange by position*: the Nth model call of a session (the number of
//! assistant messages in the request) gets the Nth recorded exchange — stateless, and it will hold
//! for tool loops.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::stream::StreamExt;
use serde::{Deserialize, Serialize};
use stepper_engine::{
    ChatEvent, ChatMessage, ChatRequest, ChatStream, ContentPart, LlmProvider, ProviderError, Role,
    StopReason,
};
use stepper_protocol::Usage;
use tokio_util::sync::CancellationToken;

pub const FORMAT_VERSION: u32 = 1;

/// One model call and its answer: a line of the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Exchange {
    pub version: u32,
    pub provider: String,
    pub model: String,
    pub request: RecordedRequest,
    pub events: Vec<RecordedEvent>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    pub messages: Vec<ChatMessage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

/// `ChatEvent`, in a stable on-disk shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum RecordedEvent {
    Text {
        text: String,
    },
    Reasoning {
        text: String,
    },
    Signature {
        signature: String,
    },
    ReasoningPart {
        part: ContentPart,
    },
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallDelta {
        index: usize,
        arguments: String,
    },
    ToolCallEnd {
        index: usize,
    },
    Usage {
        usage: Usage,
    },
    Notice {
        message: String,
    },
    Stop {
        reason: String,
    },
    /// The call failed here; replay fails the same way.
    Error {
        message: String,
    },
}

impl From<&ChatEvent> for RecordedEvent {
    fn from(e: &ChatEvent) -> RecordedEvent {
        match e.clone() {
            ChatEvent::TextDelta(text) => RecordedEvent::Text { text },
            ChatEvent::ReasoningDelta(text) => RecordedEvent::Reasoning { text },
            ChatEvent::ThinkingSignature(signature) => RecordedEvent::Signature { signature },
            ChatEvent::ReasoningPart(part) => RecordedEvent::ReasoningPart { part },
            ChatEvent::ToolCallStart { index, id, name } => {
                RecordedEvent::ToolCallStart { index, id, name }
            }
            ChatEvent::ToolCallDelta { index, arguments } => {
                RecordedEvent::ToolCallDelta { index, arguments }
            }
            ChatEvent::ToolCallEnd { index } => RecordedEvent::ToolCallEnd { index },
            ChatEvent::Usage(usage) => RecordedEvent::Usage { usage },
            ChatEvent::Notice(message) => RecordedEvent::Notice { message },
            ChatEvent::Stop { reason } => RecordedEvent::Stop {
                reason: reason.as_str().to_string(),
            },
        }
    }
}

impl RecordedEvent {
    fn into_chat(self) -> Result<ChatEvent, ProviderError> {
        Ok(match self {
            RecordedEvent::Text { text } => ChatEvent::TextDelta(text),
            RecordedEvent::Reasoning { text } => ChatEvent::ReasoningDelta(text),
            RecordedEvent::Signature { signature } => ChatEvent::ThinkingSignature(signature),
            RecordedEvent::ReasoningPart { part } => ChatEvent::ReasoningPart(part),
            RecordedEvent::ToolCallStart { index, id, name } => {
                ChatEvent::ToolCallStart { index, id, name }
            }
            RecordedEvent::ToolCallDelta { index, arguments } => {
                ChatEvent::ToolCallDelta { index, arguments }
            }
            RecordedEvent::ToolCallEnd { index } => ChatEvent::ToolCallEnd { index },
            RecordedEvent::Usage { usage } => ChatEvent::Usage(usage),
            RecordedEvent::Notice { message } => ChatEvent::Notice(message),
            RecordedEvent::Stop { reason } => ChatEvent::Stop {
                reason: StopReason::parse(&reason),
            },
            RecordedEvent::Error { message } => {
                return Err(ProviderError::Stream {
                    provider: "replay".into(),
                    message,
                });
            }
        })
    }
}

/// Plays a recording back: the Nth model call of a session gets the Nth exchange.
pub struct Replay {
    path: PathBuf,
    exchanges: Vec<Exchange>,
}

impl Replay {
    pub fn open(path: &Path) -> Result<Replay, ProviderError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ProviderError::Config(format!("cannot read the recording {}: {e}", path.display()))
        })?;
        let mut exchanges = Vec::new();
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let exchange: Exchange = serde_json::from_str(line).map_err(|e| {
                ProviderError::Config(format!(
                    "{}:{}: not a stepper recording ({e}) — record one with 'stepper ask --record FILE'",
                    path.display(),
                    n + 1
                ))
            })?;
            exchanges.push(exchange);
        }
        Ok(Replay {
            path: path.to_path_buf(),
            exchanges,
        })
    }
}

impl LlmProvider for Replay {
    fn name(&self) -> &str {
        "replay"
    }

    fn chat_stream(&self, request: ChatRequest, _cancel: CancellationToken) -> ChatStream {
        // Each earlier call left one assistant message in the history.
        let n = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        match self.exchanges.get(n) {
            Some(exchange) => {
                let events: Vec<_> = exchange
                    .events
                    .iter()
                    .cloned()
                    .map(RecordedEvent::into_chat)
                    .collect();
                futures::stream::iter(events).boxed()
            }
            None => {
                let e = ProviderError::Config(format!(
                    "the recording {} holds {} model call(s); this is call {}",
                    self.path.display(),
                    self.exchanges.len(),
                    n + 1
                ));
                futures::stream::iter([Err(e)]).boxed()
            }
        }
    }
}

/// Wraps a provider and appends each exchange to a file.
pub struct Recorder {
    inner: Arc<dyn LlmProvider>,
    path: PathBuf,
    model: String,
    /// Strings scrubbed from what is written (the keys in use).
    secrets: Vec<String>,
}

impl Recorder {
    pub fn new(
        inner: Arc<dyn LlmProvider>,
        path: PathBuf,
        model: String,
        secrets: Vec<String>,
    ) -> Recorder {
        Recorder {
            inner,
            path,
            model,
            secrets: secrets.into_iter().filter(|s| s.len() >= 8).collect(),
        }
    }
}

impl LlmProvider for Recorder {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn chat_stream(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let writer = Arc::new(PendingExchange {
            path: self.path.clone(),
            secrets: self.secrets.clone(),
            exchange: std::sync::Mutex::new(Some(Exchange {
                version: FORMAT_VERSION,
                provider: self.inner.name().to_string(),
                model: self.model.clone(),
                request: RecordedRequest {
                    system: request.system.clone(),
                    messages: request.messages.clone(),
                    tools: request.tools.iter().map(|t| t.name.clone()).collect(),
                },
                events: Vec::new(),
            })),
        });
        let stream = self.inner.chat_stream(request, cancel);
        let on_item = Arc::clone(&writer);
        stream
            .inspect(move |item| {
                let recorded = match item {
                    Ok(e) => RecordedEvent::from(e),
                    Err(e) => RecordedEvent::Error {
                        message: e.to_string(),
                    },
                };
                on_item.push(recorded);
            })
            .map(Some)
            .chain(futures::stream::once(async move {
                writer.write();
                None
            }))
            .filter_map(|x| async move { x })
            .boxed()
    }
}

/// The exchange being recorded; written when the stream ends, or when it is dropped early.
struct PendingExchange {
    path: PathBuf,
    secrets: Vec<String>,
    exchange: std::sync::Mutex<Option<Exchange>>,
}

impl PendingExchange {
    fn push(&self, event: RecordedEvent) {
        if let Some(x) = self
            .exchange
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            x.events.push(event);
        }
    }

    fn write(&self) {
        let Some(exchange) = self
            .exchange
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return;
        };
        let mut line = match serde_json::to_string(&exchange) {
            Ok(l) => l,
            Err(e) => return tracing::error!(error = %e, "cannot serialize an exchange to record"),
        };
        for secret in &self.secrets {
            line = line.replace(secret.as_str(), "[redacted]");
        }
        line.push('\n');
        // A few kilobytes appended once per model call: blocking here is cheaper than a task.
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            tracing::error!(path = %self.path.display(), error = %e, "cannot write the recording");
        }
    }
}

impl Drop for PendingExchange {
    fn drop(&mut self) {
        // Cancelled mid-stream: keep what came, as a call that ended there.
        self.write();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Vec<ChatEvent>);
    impl LlmProvider for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }
        fn chat_stream(&self, _: ChatRequest, _: CancellationToken) -> ChatStream {
            futures::stream::iter(self.0.clone().into_iter().map(Ok)).boxed()
        }
    }

    #[tokio::test]
    async fn a_recording_replays_call_by_call_without_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        let answer = |t: &str| {
            vec![
                ChatEvent::TextDelta(t.into()),
                ChatEvent::Usage(Usage {
                    input_tokens: 3,
                    output_tokens: 1,
                    ..Default::default()
                }),
                ChatEvent::Stop {
                    reason: StopReason::EndTurn,
                },
            ]
        };
        for (i, text) in ["first", "second sk-secret-12345"].iter().enumerate() {
            let rec = Recorder::new(
                Arc::new(Fixed(answer(text))),
                path.clone(),
                "m".into(),
                vec!["sk-secret-12345".into()],
            );
            let mut messages = vec![ChatMessage::user("hi")];
            if i == 1 {
                messages.push(ChatMessage::assistant("first"));
                messages.push(ChatMessage::user("again"));
            }
            let got: Vec<_> = rec
                .chat_stream(ChatRequest::new("m", messages), CancellationToken::new())
                .collect()
                .await;
            assert_eq!(got.len(), 3);
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(!text.contains("sk-secret-12345"));

        let replay = Replay::open(&path).unwrap();
        let second = ChatRequest::new(
            "m",
            vec![
                ChatMessage::user("hi"),
                ChatMessage::assistant("first"),
                ChatMessage::user("again"),
            ],
        );
        let events: Vec<_> = replay
            .chat_stream(second, CancellationToken::new())
            .collect()
            .await;
        assert_eq!(
            events[0],
            Ok(ChatEvent::TextDelta("second [redacted]".into()))
        );
        let third = ChatRequest::new(
            "m",
            vec![ChatMessage::assistant("a"), ChatMessage::assistant("b")],
        );
        let events: Vec<_> = replay
            .chat_stream(third, CancellationToken::new())
            .collect()
            .await;
        assert!(
            matches!(&events[..], [Err(ProviderError::Config(m))] if m.contains("holds 2 model call(s)"))
        );
    }

    #[test]
    fn a_broken_recording_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.jsonl");
        std::fs::write(&path, "{}\n").unwrap();
        let err = Replay::open(&path).err().unwrap().to_string();
        assert!(err.contains("bad.jsonl:1"), "{err}");
        assert!(Replay::open(&dir.path().join("missing")).is_err());
    }
}
