//! The agent loop: stream from the provider and turn what arrives into session events.
//!
//! For now a turn is one model call producing text; tool calls, the gate and layers grow
//! here. Cancellation is observed at every await; what streamed before a cancel or a broken
//! stream is kept as a completed (partial) message.

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use stepper_protocol::{AppEvent, TurnStatus, Usage};
use tokio_util::sync::CancellationToken;

use crate::accumulator::MessageAccumulator;
use crate::catalogue::ModelInfo;
use crate::provider::{ChatEvent, ChatMessage, ChatRequest, LlmProvider, ProviderError};

/// Where a turn's events go. The daemon's implementation persists, then publishes.
pub trait EventSink: Send + Sync {
    /// Record an event of the running turn. An error means it could not be recorded; the
    /// turn stops, since nothing it does afterwards could be seen or resumed.
    fn emit(&self, event: AppEvent) -> impl Future<Output = Result<(), SinkError>> + Send;
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot record the session's events: {0}")]
pub struct SinkError(pub String);

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub status: TurnStatus,
    /// The assistant text (possibly partial).
    pub text: String,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    /// Why the turn failed, for the user.
    pub error: Option<String>,
    /// The whole assistant message (reasoning, text, tool calls), for the context.
    pub message: Option<ChatMessage>,
}

pub struct AgentLoop {
    provider: Arc<dyn LlmProvider>,
    model: ModelInfo,
}

impl AgentLoop {
    pub fn new(provider: Arc<dyn LlmProvider>) -> AgentLoop {
        AgentLoop {
            provider,
            model: ModelInfo::default(),
        }
    }

    /// Price usage (and later size compaction) by what is known of the model.
    pub fn with_model_info(mut self, model: ModelInfo) -> AgentLoop {
        self.model = model;
        self
    }

    /// Run one model call to its end, emitting deltas, usage and the final message.
    pub async fn run(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
        sink: &impl EventSink,
    ) -> TurnOutcome {
        let mut stream = self.provider.chat_stream(request, cancel.clone());
        let mut acc = MessageAccumulator::new();
        let mut status = TurnStatus::Completed;
        let mut error: Option<String> = None;

        loop {
            let item = tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    status = TurnStatus::Interrupted;
                    break;
                }
                item = stream.next() => item,
            };
            let event = match item {
                None => break,
                Some(Ok(event)) => event,
                Some(Err(e)) => {
                    status = TurnStatus::Failed;
                    error = Some(describe(&e, self.provider.name()));
                    break;
                }
            };
            if let Err(e) = acc.push(&event) {
                status = TurnStatus::Failed;
                error = Some(describe(&e, self.provider.name()));
                break;
            }
            let emitted = match event {
                ChatEvent::TextDelta(text) => sink.emit(AppEvent::TextDelta { text }).await,
                ChatEvent::ReasoningDelta(text) => {
                    sink.emit(AppEvent::ReasoningDelta { text }).await
                }
                ChatEvent::Usage(_) => {
                    let usage = acc.usage();
                    let cost_usd = self.model.cost(&usage);
                    sink.emit(AppEvent::UsageUpdated { usage, cost_usd }).await
                }
                ChatEvent::Notice(message) => sink.emit(AppEvent::Notice { message }).await,
                // Signatures, opaque reasoning and tool-call plumbing live in the message, not
                // in the event log; tool calls reach clients when tools run them.
                ChatEvent::ThinkingSignature(_)
                | ChatEvent::ReasoningPart(_)
                | ChatEvent::ToolCallStart { .. }
                | ChatEvent::ToolCallDelta { .. }
                | ChatEvent::ToolCallEnd { .. }
                | ChatEvent::Stop { .. } => Ok(()),
            };
            if let Err(e) = emitted {
                status = TurnStatus::Failed;
                error = Some(e.to_string());
                break;
            }
        }
        drop(stream);

        let text = acc.text();
        let usage = acc.usage();
        let finished = match acc.finish() {
            Ok(done) => Some(done),
            Err(e) => {
                status = TurnStatus::Failed;
                error.get_or_insert(describe(&e, self.provider.name()));
                None
            }
        };
        if status == TurnStatus::Completed && finished.as_ref().is_some_and(|f| f.stop.is_none()) {
            status = TurnStatus::Failed;
            error = Some(format!(
                "{}: the answer ended before the model finished",
                self.provider.name()
            ));
        }
        if !text.is_empty() || status == TurnStatus::Completed {
            let stop_reason = match status {
                TurnStatus::Completed => finished
                    .as_ref()
                    .and_then(|f| f.stop.as_ref())
                    .map(|s| s.as_str().to_string()),
                TurnStatus::Interrupted => Some("interrupted".into()),
                TurnStatus::Failed => Some("error".into()),
            };
            let done = AppEvent::MessageCompleted {
                text: text.clone(),
                stop_reason,
            };
            if let Err(e) = sink.emit(done).await {
                status = TurnStatus::Failed;
                error.get_or_insert(e.to_string());
            }
        }
        let cost_usd = self.model.cost(&usage);
        TurnOutcome {
            status,
            text,
            usage,
            cost_usd,
            error,
            message: finished.map(|f| f.message),
        }
    }
}

fn describe(e: &ProviderError, provider: &str) -> String {
    match e {
        ProviderError::Transport(m) => format!("{provider}: {m}"),
        ProviderError::Protocol(m) => format!("{provider} sent a stream stepper cannot read: {m}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ChatStream, LlmProvider};
    use std::sync::Mutex;

    struct Scripted(Vec<Result<ChatEvent, ProviderError>>);

    impl LlmProvider for Scripted {
        fn name(&self) -> &str {
            "scripted"
        }
        fn chat_stream(&self, _: ChatRequest, _: CancellationToken) -> ChatStream {
            futures::stream::iter(self.0.clone()).boxed()
        }
    }

    #[derive(Default)]
    struct Recorder(Mutex<Vec<AppEvent>>);

    impl EventSink for Recorder {
        async fn emit(&self, event: AppEvent) -> Result<(), SinkError> {
            self.0.lock().unwrap().push(event);
            Ok(())
        }
    }

    fn request() -> ChatRequest {
        ChatRequest::new("m", vec![])
    }

    #[tokio::test]
    async fn text_usage_and_completion() {
        let provider = Scripted(vec![
            Ok(ChatEvent::Usage(Usage {
                input_tokens: 5,
                ..Usage::default()
            })),
            Ok(ChatEvent::TextDelta("Hel".into())),
            Ok(ChatEvent::TextDelta("lo".into())),
            Ok(ChatEvent::Usage(Usage {
                output_tokens: 2,
                ..Usage::default()
            })),
            Ok(ChatEvent::Stop {
                reason: crate::provider::StopReason::EndTurn,
            }),
        ]);
        let sink = Recorder::default();
        let out = AgentLoop::new(Arc::new(provider))
            .run(request(), CancellationToken::new(), &sink)
            .await;
        assert_eq!(out.status, TurnStatus::Completed);
        assert_eq!(out.text, "Hello");
        assert_eq!((out.usage.input_tokens, out.usage.output_tokens), (5, 2));
        let events = sink.0.lock().unwrap();
        assert_eq!(
            events.last(),
            Some(&AppEvent::MessageCompleted {
                text: "Hello".into(),
                stop_reason: Some("end_turn".into())
            })
        );
    }

    #[tokio::test]
    async fn a_broken_stream_keeps_the_partial_text() {
        let provider = Scripted(vec![
            Ok(ChatEvent::TextDelta("part".into())),
            Err(ProviderError::Transport("connection reset".into())),
        ]);
        let sink = Recorder::default();
        let out = AgentLoop::new(Arc::new(provider))
            .run(request(), CancellationToken::new(), &sink)
            .await;
        assert_eq!(out.status, TurnStatus::Failed);
        assert!(out.error.unwrap().contains("connection reset"));
        let events = sink.0.lock().unwrap();
        assert_eq!(
            events.last(),
            Some(&AppEvent::MessageCompleted {
                text: "part".into(),
                stop_reason: Some("error".into())
            })
        );
    }

    #[tokio::test]
    async fn cancel_interrupts() {
        let provider = Scripted(vec![Ok(ChatEvent::TextDelta("x".into()))]);
        let cancel = CancellationToken::new();
        cancel.cancel();
        let sink = Recorder::default();
        let out = AgentLoop::new(Arc::new(provider))
            .run(request(), cancel, &sink)
            .await;
        assert_eq!(out.status, TurnStatus::Interrupted);
        assert!(
            sink.0.lock().unwrap().is_empty(),
            "nothing streamed, so no message"
        );
    }
}
