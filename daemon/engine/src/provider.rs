//! The provider boundary: one normalised request and one normalised stream of events, so
//! nothing above a provider knows its wire format. No HTTP here.

use futures::stream::BoxStream;
use stepper_protocol::Usage;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    pub role: Role,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The model id within its provider (no `provider/` prefix).
    pub model: String,
    pub system: Option<String>,
    pub messages: Vec<ChatMessage>,
    pub max_tokens: u32,
    /// Mark prompt-cache breakpoints where the provider supports them.
    pub cache: bool,
}

/// One normalised piece of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// Usage so far; later values replace earlier ones field by field where non-zero.
    Usage(Usage),
    /// The model stopped, and why (`end_turn`, `max_tokens`, ...).
    Stop {
        reason: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// Missing or unusable configuration (no key, bad base URL); the message says what to set.
    #[error("{0}")]
    Config(String),
    /// The provider answered with an error status.
    #[error("{provider} answered {status}: {message}")]
    Http {
        provider: String,
        status: u16,
        message: String,
    },
    /// The connection failed or the stream broke off.
    #[error("{0}")]
    Transport(String),
    /// The stream carried something that is not the provider's format.
    #[error("{0}")]
    Protocol(String),
    /// The provider reported an error inside the stream.
    #[error("{provider} reported an error: {message}")]
    Stream { provider: String, message: String },
}

pub type ChatStream = BoxStream<'static, Result<ChatEvent, ProviderError>>;

/// A model back end.
pub trait LlmProvider: Send + Sync {
    /// A short name for messages (`anthropic`).
    fn name(&self) -> &str;

    /// Stream an answer. The stream ends after `Stop` or an error; cancelling `cancel` ends
    /// it early (the caller keeps what it already received).
    fn chat_stream(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream;
}
