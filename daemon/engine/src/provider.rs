//! The provider boundary: one normalised request and one normalised stream of events, so
//! nothing above a provider knows its wire format. No HTTP here.
//!
//! A provider's decoder turns its wire deltas into [`ChatEvent`]s; the shared
//! [`MessageAccumulator`](crate::accumulator::MessageAccumulator) folds them into the final
//! assistant message, whatever the format.
//!
//! *Usage is normalised the Anthropic way*: `inputTokens` excludes cache reads, which OpenAI counts
//! inside its input tokens; cost and cache-hit rate then read alike.
//!
//! A [`ChatRequest`] holds [`ChatMessage`]s made of [`ContentPart`]s — text, signed thinking,
//! redacted thinking, OpenAI reasoning items, tool calls and results — all serializable, so a
//! context is stored as it is and sent again unchanged.

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use stepper_protocol::{Attachment, AttachmentKind, Usage};
use tokio_util::sync::CancellationToken;

/// A wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    Anthropic,
    /// OpenAI's Responses API.
    Openai,
    /// Chat Completions: OpenAI-compatible servers.
    OpenaiChat,
    /// ChatGPT sign-in, Responses format to the Codex back end.
    Codex,
    /// A recorded exchange played back.
    Replay,
    /// An installed Claude Code driven over stream-json: the CLI runs the turn with its
    /// own tools, its approvals asked through stepper's gate.
    ClaudeCode,
    /// An installed Codex CLI driven as a back-end.
    CodexCli,
}

impl ProviderKind {
    /// Whether this kind drives another agent CLI rather than speak to a model.
    pub fn is_cli(self) -> bool {
        matches!(self, ProviderKind::ClaudeCode | ProviderKind::CodexCli)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One part of a message. Serializable, so a session's context can be stored as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    /// Visible reasoning (Anthropic thinking). The signature proves it to the API and must go
    /// back unchanged with the block on the next request.
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Anthropic's redacted thinking: opaque, passed back as it came.
    RedactedThinking {
        data: String,
    },
    /// An OpenAI reasoning item: its encrypted content is passed back so the model keeps its
    /// reasoning across calls without the server storing it.
    Reasoning {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        summary: Vec<String>,
    },
    /// A tool call the model made.
    ToolCall {
        id: String,
        name: String,
        arguments: serde_json::Value,
    },
    /// The result of a tool call, sent back in a user message.
    ToolResult {
        call_id: String,
        content: String,
        #[serde(default)]
        is_error: bool,
        /// Images and documents the tool gave the model to see (`read` of a picture).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        media: Vec<Media>,
    },
    /// An image or document the user attached.
    Attachment {
        media: Media,
    },
}

/// An image or document with its bytes: what a provider sends. The bytes are stored once in
/// the session, not in a context's JSON (which holds the [`Attachment`] alone); a context read
/// back from the store gets them again before it is sent ([`Media::needs_bytes`]).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "Attachment", into = "Attachment")]
pub struct Media {
    pub about: Attachment,
    pub data: Option<std::sync::Arc<[u8]>>,
}

impl Media {
    pub fn new(about: Attachment, data: std::sync::Arc<[u8]>) -> Media {
        Media {
            about,
            data: Some(data),
        }
    }

    /// Its bytes, base64, as every provider's wire format takes them; empty when they
    /// were not loaded (a provider refuses such a request before it is sent).
    pub fn base64(&self) -> String {
        use base64::Engine as _;
        self.data
            .as_deref()
            .map(|d| base64::engine::general_purpose::STANDARD.encode(d))
            .unwrap_or_default()
    }

    /// Whether its bytes are still to be loaded.
    pub fn needs_bytes(&self) -> bool {
        self.data.is_none()
    }

    pub fn is_image(&self) -> bool {
        self.about.kind == AttachmentKind::Image
    }
}

/// A picture or PDF as it is on disk, before it was fitted to what models take: Claude Code's
/// `PostToolUse` hooks are told both sizes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MediaOrigin {
    /// Bytes on disk.
    pub size: u64,
    /// Pixels, for a picture.
    pub width: Option<u32>,
    pub height: Option<u32>,
}

impl std::fmt::Debug for Media {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the bytes: a debug print of a context stays readable.
        f.debug_struct("Media")
            .field("about", &self.about)
            .field("loaded", &self.data.is_some())
            .finish()
    }
}

impl From<Attachment> for Media {
    fn from(about: Attachment) -> Media {
        Media { about, data: None }
    }
}

impl From<Media> for Attachment {
    fn from(media: Media) -> Attachment {
        media.about
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: Vec<ContentPart>,
}

impl ChatMessage {
    pub fn user(text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }

    pub fn assistant(text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }

    /// Every image and document in the message: attached, or given back by a tool.
    pub fn media(&self) -> impl Iterator<Item = &Media> {
        self.content.iter().flat_map(|p| match p {
            ContentPart::Attachment { media } => std::slice::from_ref(media),
            ContentPart::ToolResult { media, .. } => media.as_slice(),
            _ => &[],
        })
    }

    /// The same, to fill in their bytes.
    pub fn media_mut(&mut self) -> impl Iterator<Item = &mut Media> {
        self.content.iter_mut().flat_map(|p| match p {
            ContentPart::Attachment { media } => std::slice::from_mut(media),
            ContentPart::ToolResult { media, .. } => media.as_mut_slice(),
            _ => &mut [],
        })
    }

    /// The message's visible text, parts joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls the message makes.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &serde_json::Value)> {
        self.content.iter().filter_map(|p| match p {
            ContentPart::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.as_str(), name.as_str(), arguments)),
            _ => None,
        })
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: serde_json::Value,
}

/// How hard the model should think, where it can.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    /// A thinking budget for formats that take tokens rather than an effort.
    pub fn budget_tokens(self) -> u32 {
        match self {
            ReasoningEffort::Low => 2048,
            ReasoningEffort::Medium => 8192,
            ReasoningEffort::High => 24576,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

/// A tool the provider runs itself, in its own way: nothing of it runs here, so it is only
/// offered where the user's rules allow it without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostedTool {
    /// The provider's web search (Anthropic's `web_search` server tool, OpenAI's
    /// `web_search`): `WebSearch` to rules, hooks and agents.
    WebSearch,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The model id within its provider (no `provider/` prefix).
    pub model: String,
    pub system: Option<String>,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    /// Tools the provider runs (where it has them; a provider without one leaves it out).
    pub hosted: Vec<HostedTool>,
    pub max_tokens: u32,
    /// Mark prompt-cache breakpoints where the provider supports them.
    pub cache: bool,
    /// Ask for reasoning (thinking) where the model supports it.
    pub reasoning: Option<ReasoningEffort>,
}

impl ChatRequest {
    /// A plain request: no tools, no reasoning, caching on.
    pub fn new(model: impl Into<String>, messages: Vec<ChatMessage>) -> ChatRequest {
        ChatRequest {
            model: model.into(),
            system: None,
            messages,
            tools: Vec::new(),
            hosted: Vec::new(),
            max_tokens: 8192,
            cache: true,
            reasoning: None,
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    /// The provider refused or filtered the content.
    Refusal,
    Other(String),
}

impl StopReason {
    /// From the names Anthropic uses (which `as_str` gives back).
    pub fn parse(s: &str) -> StopReason {
        match s {
            "end_turn" => StopReason::EndTurn,
            "tool_use" => StopReason::ToolUse,
            "max_tokens" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "refusal" => StopReason::Refusal,
            other => StopReason::Other(other.into()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::Refusal => "refusal",
            StopReason::Other(s) => s,
        }
    }
}

/// One normalised piece of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEvent {
    TextDelta(String),
    /// Reasoning text (thinking, or a reasoning summary) as it streams.
    ReasoningDelta(String),
    /// The signature that closes the current thinking block (Anthropic).
    ThinkingSignature(String),
    /// An opaque reasoning part complete in one piece: redacted thinking, or an OpenAI
    /// reasoning item with its encrypted content.
    ReasoningPart(ContentPart),
    /// A tool call begins; `index` tells its deltas apart from other calls'.
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// A piece of the call's JSON arguments.
    ToolCallDelta {
        index: usize,
        arguments: String,
    },
    /// The call's arguments are complete.
    ToolCallEnd {
        index: usize,
    },
    /// Usage so far; later values replace earlier ones field by field where non-zero.
    Usage(Usage),
    /// Something the user should know that is not an error (a retry, a fallback).
    Notice(String),
    /// The model stopped.
    Stop {
        reason: StopReason,
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
