//! The engine: what a turn does, independent of sockets, storage and wire formats.
//!
//! It owns the `LlmProvider` trait (HTTP-free: providers implement it elsewhere), the shared
//! accumulator every provider's stream folds into, the model reference syntax, and the agent
//! loop that turns a provider's stream into session events.

pub mod accumulator;
pub mod agent;
pub mod capability;
pub mod catalogue;
pub mod compaction;
pub mod config;
pub mod dialect;
pub mod gate;
pub mod hooks;
pub mod interrupt;
pub mod model;
pub mod orchestrator;
pub mod prompt;
pub mod provider;
pub mod recipe;
pub mod recovery;
pub mod redact;
pub mod tool;

pub use accumulator::{Accumulated, MessageAccumulator};
pub use agent::{AgentLoop, EventSink, TurnOutcome};
pub use model::ModelRef;
pub use provider::{
    ChatEvent, ChatMessage, ChatRequest, ChatStream, ContentPart, HostedTool, LlmProvider,
    ProviderError, ReasoningEffort, Role, StopReason, ToolSpec,
};
