//! The engine: what a turn does, independent of sockets, storage and wire formats.
//!
//! It owns the boundaries the daemon plugs into — the `LlmProvider` trait (`provider`, HTTP-free:
//! providers implement it elsewhere), the `Tool` trait and `ToolCx` (`tool`) — and what runs
//! between them: the shared `accumulator` every provider's stream folds into, the `agent` loop, the
//! `orchestrator` of a turn's layers and subagents behind `AgentHost`, an agent's `recipe`,
//! `compaction`, the permission `gate`, `hooks`, the `prompt` and tool `dialect`s a model is given,
//! `config` (settings, layers, memory, commands, skills, trust), the model `catalogue`, and the
//! `recovery` of a turn that died with the daemon.

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
pub mod media_tokens;
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
    ChatEvent, ChatMessage, ChatRequest, ChatStream, ContentPart, HostedTool, LlmProvider, Media,
    ProviderError, ReasoningEffort, Role, StopReason, ToolSpec,
};
